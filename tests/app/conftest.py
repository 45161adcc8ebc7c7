"""The app's tests' shared fixture: the sample's index where the app opens one by default."""

from __future__ import annotations

import shutil

import pytest

from paperscope import PaperIndex, locations
from tests.conftest import copy_index


@pytest.fixture(scope="module")
def default_index(sample_index_dir):
    """The bundled sample's index at the default location the app opens (a copy of the session's)."""
    folder = locations.default_index_dir()
    shutil.rmtree(folder, ignore_errors=True)
    copy_index(sample_index_dir, folder)
    return PaperIndex.load(folder)
