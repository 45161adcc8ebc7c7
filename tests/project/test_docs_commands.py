"""The docs are tests: every command line of the fenced shell blocks of README.md and docs/*.md runs
here, in document order, on a small real index, and must exit 0 with an answer; a line that cannot
run here says so in the docs (``# not run by the tests: WHY``, CONTRIBUTING.md "The docs are tests").

How a line is made concrete (the rules CONTRIBUTING.md states): a bracketed part (``[--json]``,
``[ID …]``) is dropped, the first of ``a|b|c`` is kept, a lone ``…`` is dropped; the placeholders
(``myindex``, ``DIR``, ``PAPER_ID``, ``ID1``, ``"topic A"`` …) are filled from ``PLACEHOLDERS`` and
the index's own topics; numbers sized for a big corpus (``--topics 30``) from ``SCALED``.
``paperscope`` lines run in this process (``cli.main``), ``app`` and ``serve`` as servers on a free
port, waited for, stopped at the end of their file (``curl localhost:8000`` reaches the one
started for port 8000); a line with ``&&``, ``|``, ``>`` or ``$``, or another of ``PROGRAMS``, runs
in bash; a line running a program not in ``PROGRAMS`` must be marked.
Each file runs in a fresh folder holding the corpus files its lines name and, at each ``--index``
folder it names, a copy of one index built once."""

from __future__ import annotations

import csv
import gzip
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import NamedTuple

import pytest

from paperscope.ui.launch import wait_until_healthy
from tests.conftest import PAPERSCOPE, ROOT, copy_index, paperscope
from tests.support.servers import HEALTH_CHECKS, free_port

DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
SHELLS = ("bash", "sh", "shell", "console")
MARK = "not run by the tests:"

# A placeholder of the docs and what the test puts in its place (whole words).
PLACEHOLDERS = {
    "<paper-id>": "p0",
    "PAPER_ID": "p5",
    "ID1": "p0",
    "ID2": "p1",
    "ID3": "p2",
    "NAME": "mine",
    "FILE": "mine",
    "DIR": "myindex",
    "/srv/lab-index": "myindex",
    "/etc/paperscope/tokens": "tokens",
}
# Numbers the docs size for a corpus of thousands, scaled to the test's 35 papers (4 fine clusters).
SCALED = {
    "--topics 30": "--topics 3",
    "--topics 8": "--topics 3",
    "topics-8": "topics-3",
    "--min-topic-size 20": "--min-topic-size 3",
}
# The docs' example topic names, filled with the index's own when the line runs: (level, rank by size).
TOPICS = {
    '"topic A"': ("coarse", 0),
    '"topic B"': ("coarse", 1),
    '"image generation"': ("coarse", 0),
    '"security"': ("fine", 2),
    '"LLM security"': ("fine", 0),
}
# Commands whose answer is their log (on stderr) and what they wrote, not lines on stdout.
LOGGED = (
    "build", "add", "verify", "remap", "maps use", "maps delete", "topics rename", "topics merge", "topics split",
    "topics move", "collection create", "collection add", "collection remove", "collection dismiss",
    "collection undismiss", "collection delete", "collection mark-shown", "collection embed", "collection restore",
    "watch add", "watch show", "watch mark-shown", "watch remove",  # watch show: none new is a note on stderr
)  # fmt: skip
# The programs a line may run here; one with any other (an installer, a set-up script) must be marked.
PROGRAMS = ("paperscope", "curl", "printf", "echo", "cat", "head")
SERVERS = {"serve": 8000, "app": 8501}  # the port each listens on when not told
TOKEN = "q3Vx0yG9C1m0H5c6l3bJk2Yw8pXfR4tN7uEoA1sDzQ"  # docs/serving.md's example


class Line(NamedTuple):
    """A command line of a doc: where it starts, and its text (continuation lines joined)."""

    doc: Path
    number: int
    text: str

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.number}"


def command_lines(doc: Path) -> list[Line]:
    """The command lines of ``doc``'s fenced shell blocks, a line ending in ``\\`` joined to the
    next; blank lines and comment lines left out."""
    lines, shell, fence, pending = [], False, None, None
    for number, raw in enumerate(doc.read_text().splitlines(), 1):
        opening = re.match(r"\s*(```+|~~~+)\s*(\w*)", raw)
        if fence is None and opening:
            fence, shell = opening.group(1), opening.group(2) in SHELLS
            continue
        if fence is not None and raw.strip() == fence:
            fence = None
            continue
        if fence is None or not shell:
            continue
        if pending is not None:
            pending = Line(doc, pending.number, pending.text[:-1].rstrip() + " " + raw.strip())
        elif raw.strip() and not raw.lstrip().startswith("#"):
            pending = Line(doc, number, raw.strip())
        if pending is not None and not pending.text.endswith("\\"):
            lines.append(pending)
            pending = None
    return lines


def code_of(text: str) -> str:
    """``text`` without its trailing comment (a ``#`` after a space, outside quotes)."""
    quote = None
    for at, char in enumerate(text):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (at == 0 or text[at - 1].isspace()):
            return text[:at].rstrip()
    return text


def concrete(code: str) -> str:
    """A synopsis made concrete: bracketed parts dropped, the first of ``a|b|c``, no lone ``…``;
    then the placeholders and the scaled numbers filled in."""
    code = re.sub(r"\s+\[[-A-Z<][^\]]*\]", "", code)  # not a JSON list: ["ID1"], [2023, 2024]
    code = re.sub(r"(?<=[^\s|])\|[^\s'\"]+", "", code)
    code = re.sub(r"\s+…(?=\s|$)", "", code)
    for name, value in PLACEHOLDERS.items():
        code = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", value, code)
    for written, scaled in SCALED.items():
        code = re.sub(rf"{re.escape(written)}(?!\d)", scaled, code)
    return code


def topic_names(code: str) -> str:
    """``code`` with the docs' example topic names replaced by the current topics of its index."""
    if not any(name in code for name in TOPICS):
        return code
    from paperscope import PaperIndex

    index = PaperIndex.load(shlex.split(code)[shlex.split(code).index("--index") + 1])
    for name, (level, rank) in TOPICS.items():
        table = index.topics.table(level=level).sort_values(["size", "cluster"], ascending=[False, True])
        code = code.replace(name, shlex.quote(str(table["name"].iloc[rank])))
    return code


def programs(code: str) -> set[str]:
    """The programs a command line runs (the first word of each part between ``&&``, ``|``, ``;``)."""
    return {part.split()[0] for part in re.split(r"&&|\|\|?|;", code) if part.strip()}


def written_file(argv: list[str]) -> Path | None:
    """The file a command writes (its ``-o``), where it names one."""
    return Path(argv[argv.index("-o") + 1]) if "-o" in argv else None


class Server(NamedTuple):
    """A server a line started, not yet known to answer."""

    line: Line
    process: subprocess.Popen
    url: str
    health: str
    log: Path


class Session:
    """One doc's lines run in order in ``folder``: the servers they started, what failed."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.ports: dict[int, int] = {}  # the port a doc names -> the free port its server got
        self.servers: list[Server] = []
        self.starting: list[Server] = []
        self.failed: list[str] = []

    def run(self, line: Line) -> None:
        """Run ``line``; what went wrong, if anything, goes to ``failed``."""
        code = topic_names(concrete(code_of(line.text)))
        others = programs(code) - set(PROGRAMS)
        if others:
            self.fail(line, f"runs {', '.join(sorted(others))}: mark it '# {MARK} WHY' if it cannot run here")
        elif re.search(r"&&|\||>|\$|;", code) or not code.startswith("paperscope "):
            self.fail(line, self.shell(code))
        elif shlex.split(code)[1] in SERVERS:
            self.start(line, shlex.split(code)[1:])
        else:
            self.fail(line, answered(shlex.split(code)[1:]))

    def fail(self, line: Line, problem: str | None) -> None:
        if problem:
            self.failed.append(f"{line.where}: {line.text}\n    {problem}")

    def shell(self, code: str) -> str | None:
        """Run ``code`` in bash here, ``localhost:PORT`` pointed at the server started for PORT;
        curl fails on an HTTP error."""
        self.wait()
        for port in map(int, re.findall(r"localhost:(\d+)", code)):
            if port not in self.ports:
                return f"no server of the docs listens on {port}"
            code = code.replace(f"localhost:{port}", f"127.0.0.1:{self.ports[port]}")
        code = re.sub(r"(?:^|(?<=&& ))curl ", "curl --fail-with-body ", code)
        env = os.environ | {"TOKEN": TOKEN, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
        done = subprocess.run(["bash", "-c", code], cwd=self.folder, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            return f"exit {done.returncode}: {(done.stderr + done.stdout).strip()[-600:]}"
        written = re.search(r">\s*(\S+)\s*$", code)
        if done.stdout.strip() or (written and (self.folder / written.group(1)).stat().st_size):
            return None
        return "no answer"

    def start(self, line: Line, argv: list[str]) -> None:
        """Start ``paperscope serve`` or ``app`` on a free port (one worker unless the line asks for
        more: a start with several is the line's that says so); ``wait`` waits for its health check."""
        port = free_port()
        if "--port" in argv:
            at = argv.index("--port") + 1
            self.ports[int(argv[at])] = port
            argv[at] = str(port)
        else:
            self.ports[SERVERS[argv[0]]] = port
            argv += ["--port", str(port)]
        if argv[0] == "app" and "--headless" not in argv:
            argv.append("--headless")  # else Streamlit asks for an email address on its first run
        if argv[0] == "serve" and "--workers" not in argv:
            argv += ["--workers", "1"]
        log = self.folder / f"server-{port}.log"
        with open(log, "w") as output:
            process = subprocess.Popen([PAPERSCOPE, *argv], cwd=self.folder, stdout=output, stderr=output)
        self.servers.append(Server(line, process, f"http://127.0.0.1:{port}", HEALTH_CHECKS[argv[0]], log))
        self.starting.append(self.servers[-1])

    def wait(self) -> None:
        """Wait until the servers started answer their health check (a failure is their line's)."""
        for server in self.starting:
            if not wait_until_healthy(server.url, server.process, 120, health=server.health):
                self.fail(server.line, f"did not answer its health check: {server.log.read_text()[-600:]}")
        self.starting.clear()

    def close(self) -> None:
        """Stop the servers, once those still starting answered; a traceback in a server's log
        fails its line."""
        self.wait()
        for server in self.servers:
            server.process.terminate()
        for server in self.servers:
            server.process.wait(timeout=30)
            if "Traceback" in server.log.read_text():
                self.fail(server.line, f"a traceback in its log: {server.log.read_text()[-600:]}")


def answered(argv: list[str]) -> str | None:
    """Run ``paperscope ARGV`` here: None if it exits 0 with an answer (lines on stdout, the file
    or folder its ``-o`` names written, or for a command in ``LOGGED`` its log), else what went wrong."""
    written = written_file(argv)
    before = written.stat().st_mtime_ns if written and written.exists() else None
    try:
        done = paperscope(*argv, here=True)
    except Exception:  # a crash: its traceback is the answer, and the next lines still run
        return f"exit 1: {traceback.format_exc().strip()[-600:]}"
    status, out, err = done.returncode, done.stdout, done.stderr
    if status != 0 or "Traceback" in err:
        return f"exit {status}: {err.strip()[-600:]}"
    wrote = written and written.exists() and written.stat().st_mtime_ns != before
    if out.strip() or (wrote and (written.is_dir() or written.stat().st_size)):
        return None
    if any(" ".join(argv).startswith(command) for command in LOGGED) and err.strip():
        return None
    return f"no answer (stderr: {err.strip()[-300:]!r})"


def write_corpus(folder: Path) -> None:
    """The corpus files the docs' lines name, from the bundled sample's 38 abstracts (ids p0…p37):
    papers.csv (p0-p29 with year, published, venue, decision, categories and DOI, and p3's preprint,
    a near-duplicate), more.jsonl.gz (p30-p33), big.jsonl, corpus.jsonl and arxiv.json (both),
    more.jsonl, new-papers.csv and today.jsonl (p34-p37, new to the index), zotero.bib (2 papers by
    DOI, 1 by title, 1 outside the corpus), seeds.txt and tokens."""
    from paperscope import locations
    from tests.support.corpora import read_corpus

    sample, _ = read_corpus(locations.bundled_corpus())
    papers = [
        {
            "id": f"p{i}", "title": paper.title, "abstract": paper.abstract, "year": 2023 + i % 3,
            "published": f"{2023 + i % 3}-{1 + i % 12:02d}-15", "venue": ("ICML", "NeurIPS")[i % 2],
            "decision": ("poster", "spotlight", "oral")[i % 3], "categories": ("cs.LG", "cs.CV", "cs.CL")[i % 3],
            "doi": f"10.5555/docs.{i}",
        }
        for i, paper in enumerate(sample.itertuples())
    ]  # fmt: skip

    def write_csv(name: str, rows: list[dict]) -> None:
        with open(folder / name, "w", newline="") as file:
            writer = csv.DictWriter(file, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)

    def jsonl(rows: list[dict]) -> str:
        return "".join(json.dumps(row) + "\n" for row in rows)

    first = [*papers[:30], papers[3] | {"id": "p3-preprint", "abstract": "Preprint. " + papers[3]["abstract"]}]
    write_csv("papers.csv", first)
    (folder / "more.jsonl.gz").write_bytes(gzip.compress(jsonl(papers[30:34]).encode()))
    for name in ("big.jsonl", "corpus.jsonl"):
        (folder / name).write_text(jsonl(first + papers[30:34]))
    (folder / "arxiv.json").write_text(json.dumps(first + papers[30:34]))
    (folder / "more.jsonl").write_text(jsonl(papers[34:]))
    (folder / "today.jsonl").write_text(jsonl(papers[34:]))
    write_csv("new-papers.csv", papers[34:])
    (folder / "zotero.bib").write_text(
        f"@article{{a, title = {{Another title}}, doi = {{{papers[0]['doi']}}}}}\n"
        f"@article{{b, title = {{Yet another}}, doi = {{https://doi.org/{papers[1]['doi']}}}}}\n"
        f"@inproceedings{{c, title = {{{papers[2]['title']}}}}}\n"
        "@article{mine, title = {Pruning attention heads in vision transformers}, "
        "abstract = {We prune the attention heads of vision transformers with a learned gate and keep accuracy.}}\n"
    )
    (folder / "seeds.txt").write_text("diffusion models: faster sampling of diffusion models\ngraph neural networks\n")
    (folder / "tokens").write_text(f"ana {TOKEN} write\n")


@pytest.fixture(scope="module")
def docs_corpus(tmp_path_factory, data_home):
    """The corpus files, and an index of papers.csv and more.jsonl.gz built once."""
    from paperscope import build_index

    folder = tmp_path_factory.mktemp("docs-corpus")
    write_corpus(folder)
    build_index([folder / "papers.csv", folder / "more.jsonl.gz"], folder / "index")
    return folder


@pytest.fixture
def doc_home(tmp_path, data_home, monkeypatch) -> Path:
    """A data folder of the doc's own (its default index, collections, audit log: a backup of one
    doc's collections holds no other doc's) sharing the session's embedding cache and exported models."""
    home = tmp_path / "home"
    home.mkdir()
    for shared in ("embedding-cache", "onnx"):
        (data_home / shared).mkdir(exist_ok=True)
        (home / shared).symlink_to(data_home / shared)
    monkeypatch.setenv("PAPERSCOPE_HOME", str(home))
    return home


def test_every_marked_line_says_why():
    """A line the tests do not run says why, after the mark."""
    marked = [line for doc in DOCS for line in command_lines(doc) if MARK in line.text]
    assert marked, "no line is marked: the mark's wording changed?"
    assert [line.where for line in marked if not line.text.split(MARK, 1)[1].strip()] == []


def test_every_line_runs_here_or_says_why():
    """A line not marked runs only programs the test runs (no installer, no set-up script)."""
    lines = [line for doc in DOCS for line in command_lines(doc) if MARK not in line.text]
    assert [line.where for line in lines if programs(concrete(code_of(line.text))) - set(PROGRAMS)] == []


def test_synopses_are_made_concrete():
    """The rules that turn a synopsis into a command line (the docs' own lines)."""
    assert concrete("paperscope similar <paper-id> --index myindex -k 10 [--json] [--mode dense|keyword|hybrid]") == (
        "paperscope similar p0 --index myindex -k 10"
    )
    assert concrete("paperscope topics --by year|venue|COLUMN [--bins N|EDGES] --index DIR") == (
        "paperscope topics --by year --index myindex"
    )
    assert concrete("paperscope collection export NAME -o FILE.bib|.ris|.json [--prefer entry|corpus] --index DIR") == (
        "paperscope collection export mine -o mine.bib --index myindex"
    )
    assert concrete("paperscope collection remove NAME ID1 … --index DIR") == (
        "paperscope collection remove mine p0 --index myindex"
    )
    assert concrete("paperscope remap --topics 30 --index myindex") == "paperscope remap --topics 3 --index myindex"
    assert concrete("""curl -s localhost:8000/similar -d '{"ids": ["ID1", "ID2"]}'""") == (
        """curl -s localhost:8000/similar -d '{"ids": ["p0", "p1"]}'"""
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "doc", [doc for doc in DOCS if any(MARK not in line.text for line in command_lines(doc))], ids=lambda doc: doc.name
)
def test_doc_commands_answer(doc, docs_corpus, doc_home, tmp_path, monkeypatch):
    """Each command line of ``doc`` not marked runs, in order, exits 0 and answers."""
    lines, folder = command_lines(doc), tmp_path / "run"
    folder.mkdir()
    for name in sorted({*re.findall(r"--index (\S+)", concrete(" ".join(code_of(line.text) for line in lines)))}):
        copy_index(docs_corpus / "index", folder / name)
    for file in docs_corpus.iterdir():
        if file.is_file():
            shutil.copy(file, folder / file.name)
    monkeypatch.chdir(folder)
    session = Session(folder)
    try:
        for line in lines:
            if MARK not in line.text:
                started = time.monotonic()
                session.run(line)
                print(f"{time.monotonic() - started:5.1f} s  {line.where}")  # shown when the test fails
    finally:
        session.close()
    assert not session.failed, "\n".join(session.failed)
