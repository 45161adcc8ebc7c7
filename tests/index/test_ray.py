"""The Ray engine (local Ray, 2 CPUs) builds the same index as the local engine."""

from __future__ import annotations

import numpy as np
import pytest

from paperscope import BuildSettings, PaperIndex, UserError, build_index, locations
from tests.conftest import paperscope
from tests.support.corpora import read_corpus

pytestmark = [pytest.mark.ray, pytest.mark.slow]


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray of 2 CPUs, started as a notebook user starts theirs, for this module's builds in
    this process: a build uses the Ray it finds running instead of starting and stopping its own
    (10-25 s each here; the command line's build, which does, is the first test)."""
    import ray

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_AUTH_MODE", "disabled")
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="error")
        yield
        ray.shutdown()


def test_the_command_lines_ray_build_starts_its_own_ray_and_deduplicates_like_the_local_engine(tmp_path):
    first, second = locations.bundled_corpus()
    copy = tmp_path / "again.txt"
    copy.write_text(first.read_text())  # every abstract of part 1 again, after part 2
    done = paperscope("build", "--engine", "ray", "--workers", "2", first, second, copy, "-o", tmp_path / "ray")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Ray " in done.stderr and "local, 2 CPUs, 2 embedding actors" in done.stderr
    repeated, sample = len(read_corpus([first])[0]), len(read_corpus([first, second])[0])
    assert f"{repeated} duplicate abstracts kept once: again.txt:3 repeats {first.name}:3;" in done.stderr
    assert "Traceback" not in done.stderr
    index = PaperIndex.load(tmp_path / "ray")
    assert index.manifest.count == sample and index.manifest.engine["name"] == "ray"


@pytest.fixture(scope="module")
def ray_index_dir(tmp_path_factory, local_ray):
    from paperscope.index.build import ray_engine, shards

    folder = tmp_path_factory.mktemp("ray") / "index"
    with pytest.MonkeyPatch.context() as patch:  # small batches and shards, as a large corpus has many
        patch.setattr(ray_engine, "EMBED_BATCH", 8)
        patch.setattr(shards, "SHARD_ROWS", 16)
        build_index(locations.bundled_corpus(), folder, BuildSettings(engine="ray", workers=2))
    return folder


def test_ray_and_local_engines_give_identical_neighbours(ray_index_dir, sample_index):
    on_ray = PaperIndex.load(ray_index_dir)
    assert on_ray.manifest.engine == {
        "name": "ray",
        "address": "local",
        "actors": 2,
        "ray": on_ray.manifest.engine["ray"],
    }
    assert sample_index.manifest.engine == {"name": "local"}
    assert on_ray.manifest.search.faiss == sample_index.manifest.search.faiss == "Flat"
    assert on_ray.papers["id"].tolist() == sample_index.papers["id"].tolist()  # corpus order kept
    assert on_ray.papers.drop(columns=["x", "y", "cluster", "cluster_name", "map_trust", "added"]).equals(
        sample_index.papers.drop(columns=["x", "y", "cluster", "cluster_name", "map_trust", "added"])
    )
    np.testing.assert_allclose(on_ray.vectors, sample_index.vectors, atol=1e-5)
    for paper_id in sample_index.papers["id"]:
        assert (
            on_ray.similar(paper_id, k=10, mode="dense").to_pandas()["id"].tolist()
            == sample_index.similar(paper_id, k=10, mode="dense").to_pandas()["id"].tolist()
        )
        assert (
            on_ray.similar(paper_id, k=10).to_pandas()["id"].tolist()
            == sample_index.similar(paper_id, k=10).to_pandas()["id"].tolist()
        )
    query = "speculative decoding for diffusion transformers"
    assert (
        on_ray.search(query, k=5).to_pandas()["id"].tolist()
        == sample_index.search(query, k=5).to_pandas()["id"].tolist()
    )


def test_ray_engine_reports_bad_input_in_one_line_and_writes_nothing(tmp_path, local_ray):
    broken = tmp_path / "broken.csv"
    broken.write_text('id,abstract\n1,"an unfinished quote\n')
    with pytest.raises(UserError, match=r"broken.csv:2: malformed CSV"):
        build_index([broken], tmp_path / "index", BuildSettings(engine="ray", workers=2))
    assert not (tmp_path / "index").exists()
    result = paperscope("build", "--engine", "ray", tmp_path / "missing.jsonl", "-o", tmp_path / "index")
    assert result.returncode == 2 and result.stderr.startswith(
        f"paperscope: error: argument FILE: {tmp_path / 'missing.jsonl'}: no such file"
    )
    with pytest.raises(UserError, match="go with --engine ray"):
        build_index(locations.bundled_corpus(), tmp_path / "index", BuildSettings(workers=2))


def test_ray_engine_keeps_the_corpus_columns_and_reads_only_where(tmp_path, local_ray):
    """Own columns (a date, a list of text, a number) reach the index through Ray typed as the local
    engine keeps them, and --where leaves out the records that do not meet it."""
    import datetime
    import json

    first, _ = locations.bundled_corpus()
    abstracts = [block for block in first.read_text().split("\n\n")[1:] if block.strip()][:12]
    path = tmp_path / "columns.jsonl"
    rows = [
        {
            "id": f"p{i}",
            "abstract": abstract,
            "update_date": f"20{20 + i % 5}-03-0{1 + i % 9}",
            "versions": [{"version": "v1", "created": "Mon, 2 Apr 2007 19:18:42 GMT"}] * (1 + i % 2),
            "citations": i * 3,
        }
        for i, abstract in enumerate(abstracts)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    older = tmp_path / "older.jsonl"  # a file none of whose records meets the condition
    older.write_text("".join(json.dumps({**row, "id": f"old{i}", "update_date": "2019-01-01"}) + "\n"
                             for i, row in enumerate(rows)))  # fmt: skip
    settings = BuildSettings(engine="ray", workers=2, where=("update_date >= 2022-01-01",))
    build_index([older, path], tmp_path / "index", settings)
    index = PaperIndex.load(tmp_path / "index")
    columns = index.columns()
    assert {name: columns[name] for name in ("update_date", "versions", "citations")} == {
        "update_date": "date",
        "versions": "list",
        "citations": "number",
    }
    kept = [row for row in rows if row["update_date"] >= "2022-01-01"]
    assert index.papers["id"].tolist() == [row["id"] for row in kept]
    papers = index.papers
    assert papers["update_date"].tolist() == [datetime.date.fromisoformat(row["update_date"]) for row in kept]
    assert [list(value) for value in papers["versions"]] == [
        ["v1 Mon, 2 Apr 2007 19:18:42 GMT"] * len(row["versions"]) for row in kept
    ]
