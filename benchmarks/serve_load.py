"""Load on `paperscope serve`: requests/s and latency of `similar` and `search`, memory, a rebuild under load.

    .venv/bin/python -m benchmarks.serve_load [--index DIR --corpus FILE...] [--workers N]
        [--clients 20] [--similar 10000] [--search 2000] [--json benchmarks/serve_load.json]

A copy of the index (default: the bundled sample's) is served by a fresh `paperscope serve`
process; this script drives it over loopback from the same machine (asyncio, one process,
keep-alive connections). ``similar`` requests are GET /papers/{id}/similar?k=10, ids in a random
order; ``search`` requests are POST /search, k=10, each text a different span of 4–12 words of
the papers' abstracts (no query is asked twice: none is answered from the query memory).
Phases, one after the other:

- closed loop: ``--clients`` connections, each sending its next request when the last is
  answered: the most requests per second the server answers; latency then is mostly the wait
  behind the other clients' requests (20 in flight);
- open loop at the targets' rates (300 similar/s, 30 searches/s, for ``--seconds``): latency
  at that load, counted from when each request was due;
- a rebuild: similar requests at 300/s while ``paperscope build`` rebuilds the served folder
  from ``--corpus`` (default: the bundled sample's files), until the server answers from the
  new generation: failed requests, answers from each generation, the worst p99 of any 2 s.

Memory: the server's resident and private (USS) memory after each phase, worker processes
included. Prints a Markdown table and writes JSON.
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from benchmarks.common import parser as common_parser
from benchmarks.common import report
from tests.support.servers import paperscope_server

SEED = 7
TARGET_RATE = {"similar": 300, "search": 30}  # requests/s of the open-loop phases: the targets
CLIENTS_OPEN = 20  # connections the open-loop phases may use (a request waits when all are busy)


async def _drive(url: str, requests: list[tuple[str, str, bytes]], clients: int, rate: float | None = None) -> dict:
    """Send ``requests`` (method, path, JSON body) over ``clients`` keep-alive connections, each
    as soon as a connection is free (closed loop: the most the server answers), or with ``rate``
    the i-th at i / rate seconds (open loop: latency at that load, counted from when the request
    was due, so a server falling behind shows). The latency of each in ms, the failures, and
    the count of answers from each generation."""
    host, port = url.removeprefix("http://").split(":")
    queue = enumerate(requests)
    latencies, failures, generations = [], [], {}
    start = time.perf_counter()

    async def client() -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        for number, (method, path, body) in queue:
            due = start + number / rate if rate else time.perf_counter()
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            head = f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {len(body)}\r\n"
            head += "Content-Type: application/json\r\n\r\n" if body else "\r\n"
            try:
                writer.write(head.encode() + body)
                status = int((await reader.readline()).split()[1])
                headers = {}
                while (line := await reader.readline()) not in (b"\r\n", b""):
                    name, _, value = line.decode().partition(":")
                    headers[name.strip().lower()] = value.strip()
                await reader.readexactly(int(headers["content-length"]))
            except (OSError, IndexError, ValueError, KeyError, asyncio.IncompleteReadError) as exc:
                failures.append(f"{path}: {exc!r}")
                writer.close()
                reader, writer = await asyncio.open_connection(host, int(port))
                continue
            latencies.append((time.perf_counter() - due) * 1000)
            if status != 200:
                failures.append(f"{path}: HTTP {status}")
            generation = headers.get("x-paperscope-generation", "")
            generations[generation] = generations.get(generation, 0) + 1
        writer.close()

    await asyncio.gather(*(client() for _ in range(clients)))
    elapsed = time.perf_counter() - start
    ordered = sorted(latencies)
    return {
        "requests": len(requests),
        "failed": len(failures),
        "first_failures": failures[:5],
        "seconds": round(elapsed, 2),
        "requests_per_s": round(len(requests) / elapsed, 1),
        "p50_ms": round(statistics.median(ordered), 2),
        "p99_ms": round(ordered[int(0.99 * (len(ordered) - 1))], 2),
        "max_ms": round(ordered[-1], 2),
        "generations": generations,
    }


def _memory(process: psutil.Process) -> dict:
    """Resident and private memory of the server and its worker processes, together."""
    infos = [member.memory_full_info() for member in [process, *process.children(recursive=True)]]
    return {"rss_mb": round(sum(i.rss for i in infos) / 2**20), "private_mb": round(sum(i.uss for i in infos) / 2**20)}


def _similar_requests(ids: list[str], count: int, rng: random.Random) -> list[tuple[str, str, bytes]]:
    from urllib.parse import quote

    return [("GET", f"/papers/{quote(rng.choice(ids), safe='')}/similar?k=10", b"") for _ in range(count)]


def _search_requests(abstracts: list[str], count: int, rng: random.Random) -> list[tuple[str, str, bytes]]:
    """``count`` different spans of 4–12 words of the abstracts, as POST /search bodies."""
    words = [abstract.split() for abstract in abstracts]
    texts: set[str] = set()
    while len(texts) < count:
        chosen = rng.choice(words)
        length = rng.randint(4, 12)
        start = rng.randrange(max(1, len(chosen) - length))
        texts.add(" ".join(chosen[start : start + length]))
    return [("POST", "/search", json.dumps({"text": text, "k": 10}).encode()) for text in sorted(texts)]


def _rebuild_under_load(url: str, served: Path, corpus: list[str], ids: list[str], rate: float, rng) -> dict:
    """``similar`` requests at ``rate`` while ``paperscope build`` rebuilds the served folder, until
    the build is done and the server answers from the new generation."""
    build = subprocess.Popen(
        [sys.executable, "-m", "paperscope.ui.cli", "build", *corpus, "-o", str(served)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    rebuild = {"requests": 0, "failed": 0, "first_failures": [], "generations": {}, "p99_ms": 0.0}
    while build.poll() is None or len(rebuild["generations"]) < 2:
        part = asyncio.run(_drive(url, _similar_requests(ids, int(rate) * 2, rng), CLIENTS_OPEN, rate))
        rebuild["requests"] += part["requests"]
        rebuild["failed"] += part["failed"]
        rebuild["first_failures"] += part["first_failures"]
        rebuild["p99_ms"] = max(rebuild["p99_ms"], part["p99_ms"])  # the worst 2 s of the rebuild
        for generation, answers in part["generations"].items():
            rebuild["generations"][generation] = rebuild["generations"].get(generation, 0) + answers
        if build.poll() is not None and (build.returncode != 0 or rebuild["requests"] > 20 * rate):
            break  # the build failed, or the server did not switch within 20 s: both are reported
    return rebuild | {"build_exit": build.returncode}


def main() -> None:
    """Measure and print the table."""
    parser = common_parser(__doc__, "serve_load")
    parser.add_argument("--index", help="index folder (default: the bundled sample's); a copy is served")
    parser.add_argument("--corpus", nargs="+", help="files to rebuild the copy from (default: the bundled sample's)")
    parser.add_argument("--workers", type=int, help="paperscope serve --workers (default: its default, one per core)")
    parser.add_argument("--clients", type=int, default=20, help="connections of the closed-loop phases")
    parser.add_argument("--similar", type=int, default=10_000, help="similar requests, closed loop")
    parser.add_argument("--search", type=int, default=2_000, help="search requests, closed loop")
    parser.add_argument("--seconds", type=int, default=20, help="length of each open-loop phase")
    args = parser.parse_args()
    from paperscope import PaperIndex, locations, sample_index
    from paperscope.ui.service import default_workers

    folder = Path(args.index or sample_index())
    corpus = args.corpus or [str(path) for path in locations.bundled_corpus()]
    index = PaperIndex.load(folder)
    ids = index.ids()
    abstracts = index.table(columns=["abstract"]).to_pandas()["abstract"].tolist()
    rng = random.Random(SEED)
    search_count = args.search + TARGET_RATE["search"] * args.seconds
    search_requests = _search_requests(abstracts, search_count, rng)
    rng.shuffle(search_requests)
    phases = [
        ("similar, closed loop", _similar_requests(ids, args.similar, rng), args.clients, None),
        (
            "similar at 300/s",
            _similar_requests(ids, TARGET_RATE["similar"] * args.seconds, rng),
            CLIENTS_OPEN,
            TARGET_RATE["similar"],
        ),
        ("search, closed loop", search_requests[: args.search], args.clients, None),
        ("search at 30/s", search_requests[args.search :], CLIENTS_OPEN, TARGET_RATE["search"]),
    ]
    workers = args.workers or default_workers()
    results = {"index": str(folder), "papers": len(index), "workers": workers, "phases": {}}
    with tempfile.TemporaryDirectory() as scratch:
        served = Path(scratch) / "index"
        shutil.copytree(folder, served)
        log = Path(scratch) / "server.log"
        with paperscope_server("serve", served, ("--workers", str(workers)), stderr=open(log, "w")) as (url, process):
            server = psutil.Process(process.pid)
            results["memory_after_start"] = _memory(server)
            for name, requests, clients, rate in phases:
                results["phases"][name] = asyncio.run(_drive(url, requests, clients, rate)) | _memory(server)
            rebuild = _rebuild_under_load(url, served, corpus, ids, TARGET_RATE["similar"], rng)
            results["phases"]["similar at 300/s, rebuilding"] = rebuild | _memory(server)
        lines = log.read_text().splitlines()
        results["server_log_errors"] = [line for line in lines if "ERROR" in line or "Traceback" in line]
        results["server_log_switches"] = [line for line in lines if "serving" in line]
    rows = [
        [name, phase["requests"], phase["failed"], phase.get("requests_per_s", ""), phase.get("p50_ms", ""),
         phase["p99_ms"], phase["rss_mb"], phase["private_mb"]]
        for name, phase in results["phases"].items()
    ]  # fmt: skip
    print(
        f"{results['papers']:,} papers, {workers} worker(s); rebuild: build exit {rebuild['build_exit']}, "
        f"answers by generation {list(rebuild['generations'].values())}; server log errors: "
        f"{len(results['server_log_errors'])}"
    )
    report(
        ["phase", "requests", "failed", "requests/s", "p50 ms", "p99 ms", "server RSS MB", "server private MB"],
        rows,
        results,
        args.json,
    )


if __name__ == "__main__":
    main()
