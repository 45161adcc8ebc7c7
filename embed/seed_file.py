"""The file of seed topics a researcher names before the build (``paperscope build --topics-from FILE``),
read into a :class:`~paperscope.settings.TopicSeeds`; :mod:`paperscope.index.topics.seeds` builds the
topics around them.

The file holds one topic a line, ``NAME`` or ``NAME: a short description``; blank lines and lines
starting with ``#`` are skipped.
"""

from __future__ import annotations

from pathlib import Path

from paperscope.errors import UserError, shown
from paperscope.limits import MAX_NAME_CHARS
from paperscope.settings import SEED_SIMILARITY, SeedTopic, TopicSeeds

MAX_SEEDS = 200
FORMAT = "one topic a line: NAME or NAME: description"


def read_seed_topics(path: str | Path, similarity: float = SEED_SIMILARITY) -> TopicSeeds:
    """The seed topics of the file ``path`` (see the module's docstring); a file that cannot be
    read or a line that is not a topic is a UserError naming the file and line."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except FileNotFoundError:
        raise UserError(f"{path}: no such file (seed topics: {FORMAT})") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a folder, not a file of seed topics ({FORMAT})") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text (seed topics: {FORMAT})") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot be read ({exc.strerror})") from None
    topics: dict[str, tuple[int, SeedTopic]] = {}
    for number, line in enumerate(lines, start=1):
        text = " ".join(line.split())
        if not text or text.startswith("#"):
            continue
        name, _, description = (part.strip() for part in text.partition(":"))
        if not name:
            raise UserError(f"{path}:{number}: a seed topic needs a name before the ':' ({FORMAT})")
        if len(name) > MAX_NAME_CHARS:
            raise UserError(f"{path}:{number}: a topic name is at most {MAX_NAME_CHARS} characters, got {len(name)}")
        if name.casefold() in topics:
            first = topics[name.casefold()][0]
            raise UserError(f"{path}:{number}: repeats the topic '{shown(name)}' of line {first}")
        topics[name.casefold()] = (number, SeedTopic(name, description))
    if not topics:
        raise UserError(f"{path}: no seed topics in the file ({FORMAT})")
    if len(topics) > MAX_SEEDS:
        raise UserError(f"{path}: {len(topics)} seed topics; at most {MAX_SEEDS}")
    return TopicSeeds(tuple(topic for _, topic in topics.values()), similarity, str(path))
