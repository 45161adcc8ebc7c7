"""Recommendations for a collection of papers: which method, how good, how fast, for libraries as researchers keep them.

    .venv/bin/python -m benchmarks.recommend --index DIR [--corpus IJCAI.jsonl] [--seeds 3]
        [--million 1000000 --work DIR] [--large-index /tmp/million/index] [--json benchmarks/recommend.json]

DIR is an index of the labelled corpus (``shared/evaldata``: IJCAI 2021-2024, each paper's area,
``label``, and its sub-areas, ``keywords`` such as "Machine Learning: ML: Federated Learning",
compared as area + last part, in lower case, so that the years' spellings agree). Collections,
once per seed, of three kinds and sizes 3, 10 and 30:

- **area**: random papers of one area (every area with at least size + 20 papers);
- **sub-topic**: random papers sharing one sub-area (every sub-area with at least size + 20);
- **mixed**: half from one sub-area, half from a sub-area of another area (25 pairs; 10 and 30).

Each again with 5 papers to avoid (``--not``): of the nearest other area (area), of the nearest
other sub-area of the same area (sub-topic), of a third sub-area (mixed). The 20 recommendations
(members excluded) are scored by area (P@20: of the collection's area; mixed: of either), by
sub-area (of the collection's sub-area, or either), and for mixed by "both": 2 x the smaller of
the two areas' shares (1: served evenly, 0: from one only). Each seed's value is the mean over
its collections; the table gives the mean over seeds ± the spread over seeds (std), and the
paired gain over ``similar(ids)`` (mean over seeds of the difference on the same collections).

Methods: ``similar(ids)`` (Rocchio, hybrid); the SVM alone, as recommend() ranked before #40 (the
margin of arxiv-sanity-lite's linear SVM per collection on the smoothed vectors and TF-IDF, over
the same candidates); what ships, ``recommend()`` (similar's score + 0.3 x tanh(margin), a
collection of two clear parts served from each); and its variants: another share of the
classifier (0.2, 0.5), without the parts. Times: p50 per recommendation.

--million N: ``recommend`` and ``similar`` on a synthetic index of N papers (each a copy of a
paper of DIR: its vector and smoothed vector plus Gaussian noise (sd 0.02 a dimension),
renormalised, its keyword row; HNSW32 with efSearch tuned as a build tunes it), built once into
--work and reused; --large-index: the same timings on an index built by ``benchmarks.million``,
its files read once before (in the page cache, as a service's index is after a while).
Prints Markdown tables and writes JSON.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import statistics
import time
from pathlib import Path

import numpy as np
import scipy.sparse

from benchmarks.common import parser as common_parser
from benchmarks.common import ranker_of, report
from benchmarks.scale import EVALDATA
from paperscope.index.search import recommend as recommending

K = 20
SIZES = (3, 10, 30)
NEGATIVES = 5
MIXED_PAIRS = 25
TODAY = "similar(ids): Rocchio, hybrid"
SHIPPED = "recommend(): similar + 0.3 tanh(SVM), parts"
VARIANTS = {  # name: (the classifier's share, the parts' cosine)
    "SVM alone (recommend() before #40)": (1000.0, -1.0),
    SHIPPED: (recommending.CLASSIFIER_SHARE, recommending.GROUP_BETWEEN),
    "similar + 0.2 tanh(SVM), parts": (0.2, recommending.GROUP_BETWEEN),
    "similar + 0.5 tanh(SVM), parts": (0.5, recommending.GROUP_BETWEEN),
    "similar + 0.3 tanh(SVM), one part": (recommending.CLASSIFIER_SHARE, -1.0),
}


@contextlib.contextmanager
def variant(share: float, between: float):
    """recommend() with another share of the classifier and parts' threshold (its public settings)."""
    saved = recommending.CLASSIFIER_SHARE, recommending.GROUP_BETWEEN
    recommending.CLASSIFIER_SHARE, recommending.GROUP_BETWEEN = share, between
    try:
        yield
    finally:
        recommending.CLASSIFIER_SHARE, recommending.GROUP_BETWEEN = saved


def methods(index) -> dict:
    """Each method: (positive rows, negative rows) -> the K recommended rows."""
    ids = np.array(index.ids())

    def similar(positive, negative):
        return index.similar(ids[positive].tolist(), k=K, negative=ids[negative].tolist()).rows

    def recommended(settings):
        def ranked(positive, negative):
            with variant(*settings):
                return index.recommend(ids[positive].tolist(), ids[negative].tolist(), k=K).rows

        return ranked

    return {TODAY: similar, **{name: recommended(settings) for name, settings in VARIANTS.items()}}


def sub_area(keyword: str) -> str:
    """A sub-area as compared: its area and its last part, lower case ("machine learning: federated learning")."""
    parts = [part.strip() for part in keyword.split(":")]
    return f"{parts[0]}: {parts[-1]}".lower()


def read_labels(corpus: str, ids: list[str]) -> tuple[np.ndarray, list[set[str]]]:
    """Each paper's area and sub-areas, in the index's order."""
    found = {}
    with open(corpus, encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            found[record["id"]] = (record["label"], {sub_area(keyword) for keyword in record.get("keywords") or []})
    return np.array([found[paper][0] for paper in ids]), [found[paper][1] for paper in ids]


@dataclasses.dataclass
class Collection:
    """One collection: its kind, size and seed, members and papers to avoid, and what counts as right."""

    kind: str
    size: int
    seed: int
    positive: np.ndarray
    negative: np.ndarray
    areas: tuple  # the areas a recommendation may be of
    subs: tuple  # the sub-areas it may have (none for an area's collection)


def _nearest(groups: dict, vectors: np.ndarray, among) -> dict:
    """For each group (name -> rows), the other group of ``among(name)`` whose mean vector is nearest."""
    means = {name: vectors[rows].mean(axis=0) for name, rows in groups.items()}
    means = {name: mean / np.linalg.norm(mean) for name, mean in means.items()}
    nearest = {}
    for name in groups:
        others = [other for other in among(name) if other != name and len(groups[other]) >= NEGATIVES]
        if others:
            nearest[name] = max(others, key=lambda other: float(means[name] @ means[other]))
    return nearest


def collections(area: np.ndarray, subs: list[set[str]], vectors: np.ndarray, seeds: int):
    """Every collection of every seed (see the module docstring), without and with papers to avoid."""
    areas = {name: np.flatnonzero(area == name) for name in np.unique(area)}
    by_sub: dict[str, list[int]] = {}
    for row, names in enumerate(subs):
        for name in sorted(names):
            by_sub.setdefault(name, []).append(row)
    by_sub = {name: np.array(rows) for name, rows in sorted(by_sub.items())}
    near_area = _nearest(areas, vectors, lambda name: areas)
    big = {name: rows for name, rows in by_sub.items() if len(rows) >= NEGATIVES}
    near_sub = _nearest(
        big, vectors, lambda name: [other for other in big if other.split(":")[0] == name.split(":")[0]]
    )
    for seed in range(seeds):
        for size in SIZES:
            rng = np.random.default_rng([seed, size])
            for name, rows in areas.items():
                if len(rows) >= size + K and name in near_area:
                    avoid = rng.choice(areas[near_area[name]], NEGATIVES, replace=False)
                    yield from _both(Collection("area", size, seed, rng.choice(rows, size, replace=False), avoid,
                                                (name,), ()))  # fmt: skip
            for name, rows in by_sub.items():
                if len(rows) >= size + K and name in near_sub:
                    positive = rng.choice(rows, size, replace=False)
                    pool = np.setdiff1d(by_sub[near_sub[name]], rows)  # the nearest sub-area's papers not of this one
                    avoid = rng.choice(pool, min(NEGATIVES, len(pool)), replace=False)
                    owner = area[positive[0]]
                    yield from _both(Collection("sub-topic", size, seed, positive, avoid, (owner,), (name,)))
            if size >= 10:
                yield from _mixed(by_sub, area, size, seed, rng)


def _mixed(by_sub: dict, area: np.ndarray, size: int, seed: int, rng) -> list:
    """MIXED_PAIRS collections of two sub-areas of two areas, half of each, with a third's papers to avoid."""
    half = size // 2
    names = [name for name, rows in by_sub.items() if len(rows) >= half + K]
    made = []
    while len(made) < 2 * MIXED_PAIRS:
        first, second, third = (names[i] for i in rng.choice(len(names), 3, replace=False))
        if first.split(":")[0] == second.split(":")[0]:
            continue
        one = rng.choice(by_sub[first], half, replace=False)
        two = rng.choice(np.setdiff1d(by_sub[second], one), size - half, replace=False)
        positive = np.concatenate([one, two])
        pool = np.setdiff1d(by_sub[third], np.concatenate([by_sub[first], by_sub[second]]))
        if len(pool) < NEGATIVES:
            continue
        avoid = rng.choice(pool, NEGATIVES, replace=False)
        areas = (area[one[0]], area[two[0]])
        made += _both(Collection("mixed", size, seed, positive, avoid, areas, (first, second)))
    return made


def _both(collection: Collection) -> list[Collection]:
    return [dataclasses.replace(collection, negative=collection.negative[:0]), collection]


def measures(collection: Collection, rows: np.ndarray, area: np.ndarray, subs: list[set[str]]) -> dict:
    """P@20 by area and by sub-area, and for a mixed collection how evenly both areas are served."""
    found = {"area": float(np.mean([area[row] in collection.areas for row in rows]))}
    if collection.subs:
        found["sub-area"] = float(np.mean([bool(subs[row] & set(collection.subs)) for row in rows]))
    if collection.kind == "mixed":
        shares = [np.mean([area[row] == name for row in rows]) for name in collection.areas]
        found["both"] = float(2 * min(shares))
    return found


def quality(index, area: np.ndarray, subs: list[set[str]], seeds: int) -> dict:
    """Each method's measures per kind, size and papers to avoid: mean over seeds, spread, gain over today."""
    ranked = methods(index)
    values, times = {}, {}
    for collection in collections(area, subs, np.asarray(index.vectors), seeds):
        for name, method in ranked.items():
            start = time.perf_counter()
            rows = method(collection.positive, collection.negative)
            times.setdefault((name, collection.size), []).append((time.perf_counter() - start) * 1000)
            assert not np.isin(rows, np.r_[collection.positive, collection.negative]).any(), name
            key = (collection.kind, collection.size, bool(len(collection.negative)))
            for measure, value in measures(collection, rows, area, subs).items():
                values.setdefault(key, {}).setdefault(measure, {}).setdefault(name, {}).setdefault(
                    collection.seed, []).append(value)  # fmt: skip
    rows = []
    for (kind, size, avoided), by_measure in sorted(values.items()):
        for measure, by_method in by_measure.items():
            today = np.array([np.mean(v) for _, v in sorted(by_method[TODAY].items())])
            for name, by_seed in by_method.items():
                means = np.array([np.mean(v) for _, v in sorted(by_seed.items())])
                rows.append({
                    "kind": kind, "size": size, "avoid": avoided, "measure": measure, "method": name,
                    "mean": float(means.mean()), "std": float(means.std(ddof=1)) if len(means) > 1 else 0.0,
                    "gain": float((means - today).mean()),
                    "gain_std": float((means - today).std(ddof=1)) if len(means) > 1 else 0.0,
                    "collections": int(sum(len(v) for v in by_seed.values())),
                })  # fmt: skip
    p50 = {f"{name}, {size}": statistics.median(found) for (name, size), found in times.items()}
    return {"rows": rows, "p50_ms": p50, "seeds": seeds}


def replicate_rows(matrix: scipy.sparse.csr_matrix, count: int) -> scipy.sparse.csr_matrix:
    """Rows 0..count-1 of ``matrix`` repeated (row i is row i mod n)."""
    n = matrix.shape[0]
    copies, rest = divmod(count, n)
    lengths = np.diff(matrix.indptr)
    indptr = np.concatenate([[0], np.cumsum(np.tile(lengths, copies + 1)[:count])]).astype(np.int64)
    used = matrix.indptr[rest]
    indices = np.concatenate([np.tile(matrix.indices, copies), matrix.indices[:used]])
    data = np.concatenate([np.tile(matrix.data, copies), matrix.data[:used]])
    return scipy.sparse.csr_matrix((data, indices, indptr), shape=(count, matrix.shape[1]))


def replicate_by_term(by_term: scipy.sparse.csc_matrix, n: int, count: int) -> scipy.sparse.csc_matrix:
    """The by-term (impact-ordered) postings of :func:`replicate_rows`: each posting of row r
    followed by its copies r + n, r + 2n, ... (the same weight, so the order stays by weight)."""
    copies = (count - by_term.indices + n - 1) // n  # copies of each posting's row below count
    data = np.repeat(by_term.data, copies)
    starts = np.cumsum(copies) - copies
    offsets = (np.arange(copies.sum()) - np.repeat(starts, copies)) * n
    indices = (np.repeat(by_term.indices.astype(np.int64), copies) + offsets).astype(np.int32)
    per_term = np.add.reduceat(copies, by_term.indptr[:-1]) * (np.diff(by_term.indptr) > 0)
    indptr = np.concatenate([[0], np.cumsum(per_term)]).astype(np.int64)
    return scipy.sparse.csc_matrix((data, indices, indptr), shape=(count, by_term.shape[1]))


def million_ranker(index, count: int, work: Path):
    """A Ranker over ``count`` synthetic papers (see the module docstring), its arrays in ``work``."""
    import faiss

    from paperscope.index.build import ann
    from paperscope.index.common.keyword import KeywordIndex
    from paperscope.index.search.ranking import Ranker

    ranker = ranker_of(index)
    work.mkdir(parents=True, exist_ok=True)
    base = len(index)
    arrays = {}
    for name, source in (("vectors", index.vectors), ("smoothed", ranker.smoothed)):
        path = work / f"{name}-{count}.npy"
        if not path.exists():
            rng = np.random.default_rng(0 if name == "vectors" else 1)
            out = np.lib.format.open_memmap(work / f"{name}.tmp.npy", "w+", np.float32, (count, source.shape[1]))
            for start in range(0, count, 100_000):
                block = np.asarray(source)[np.arange(start, min(start + 100_000, count)) % base]
                block = block + rng.normal(0, 0.02, block.shape).astype(np.float32)
                out[start : start + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
            out.flush()
            del out
            (work / f"{name}.tmp.npy").rename(path)
        arrays[name] = np.load(path, mmap_mode="r")
    faiss_path, tuned_path = work / f"hnsw-{count}.faiss", work / f"hnsw-{count}.ef"
    if not faiss_path.exists():
        start = time.perf_counter()
        built = ann.build_ann(np.ascontiguousarray(arrays["vectors"]), "HNSW32,Flat")
        tuned_path.write_text(str(ann.tune(built, arrays["vectors"])["ef_search"]))
        faiss.write_index(built, str(work / "hnsw.tmp"))
        (work / "hnsw.tmp").rename(faiss_path)
        print(f"built HNSW over {count} vectors in {time.perf_counter() - start:.0f} s")
    keyword = ranker.keyword
    postings = replicate_by_term(keyword.by_term, base, count)  # as a fit orders them, without sorting a million
    grown = KeywordIndex(
        replicate_rows(keyword.matrix, count), keyword.terms, keyword.idf, sorted(keyword.stop_words), postings
    )
    search = dataclasses.replace(index.manifest.search, ef_search=int(tuned_path.read_text()))
    return Ranker(arrays["vectors"], arrays["smoothed"], faiss.read_index(str(faiss_path)), grown, search)


def at_scale(ranker, what: str, queries: int = 40) -> dict:
    """p50/p99 of ``recommend`` (5 and 20 members: random papers, which split into two parts, and
    a paper with its nearest, one topic) and ``similar`` (20 members) on ``ranker``'s papers (the
    first 5 of each left out: the sample's features are read on the first), and the FAISS share
    of ``recommend`` (its candidate searches alone, one part)."""
    from paperscope.settings import QuerySettings

    count = len(ranker)
    none = np.zeros((0, ranker.vectors.shape[1]), np.float32)
    rng = np.random.default_rng(7)
    results = {"papers": count, "what": what, "ef_search": ranker.search_info.ef_search}
    for size, topical in ((5, False), (20, False), (20, True)):
        times, faiss_times = [], []
        for _ in range(queries):
            if topical:
                positive = np.sort(ranker.faiss_search(ranker.vectors[[int(rng.integers(count))]], size)[1][0])
            else:
                positive = np.sort(rng.choice(count, size, replace=False))
            start = time.perf_counter()
            recommending.recommend(ranker, positive, none, np.zeros(0, np.int64), none, K)
            times.append((time.perf_counter() - start) * 1000)
            members = np.asarray(ranker.vectors[positive])
            start = time.perf_counter()  # the same candidate searches again, alone
            ranker.faiss_search(members, recommending.PER_MEMBER)
            ranker.faiss_search(members.mean(axis=0), recommending.CENTRAL + size)
            faiss_times.append((time.perf_counter() - start) * 1000)
        results[f"recommend, {size} {'of one topic' if topical else 'random'} members"] = {
            "p50_ms": statistics.median(times[5:]),
            "p99_ms": float(np.percentile(times[5:], 99)),
            "faiss_p50_ms": statistics.median(faiss_times[5:]),
        }
    times = []
    for _ in range(queries):
        positive = rng.choice(count, 20, replace=False).tolist()
        start = time.perf_counter()
        ranker.similar(positive, [], K, QuerySettings())
        times.append((time.perf_counter() - start) * 1000)
    results["similar, 20 members"] = {
        "p50_ms": statistics.median(times[5:]),
        "p99_ms": float(np.percentile(times[5:], 99)),
    }
    return results


def warm(folder: Path) -> None:
    """Read every file of the index folder once, so that the page cache holds it as it holds the
    index of a service that has run a while (cold, lookups at a million papers wait on the disk)."""
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            with open(path, "rb") as handle:
                while handle.read(1 << 24):
                    pass


def main() -> None:
    """Measure every method on every kind of collection (and, with --million, the shipped one at
    scale) and print the tables."""
    parser = common_parser(__doc__, "recommend")
    parser.add_argument("--index", required=True, help="an index of the labelled corpus")
    parser.add_argument("--corpus", default=str(EVALDATA), help="the labelled corpus (JSON lines with label, keywords)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--million", type=int, default=0, help="papers of the synthetic index (0: skip)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/recommend-million"), help="its arrays, kept")
    parser.add_argument("--large-index", help="also time this index (one benchmarks.million built)")
    args = parser.parse_args()
    from paperscope import PaperIndex

    index = PaperIndex.load(args.index)
    area, subs = read_labels(args.corpus, index.ids())
    results = {"papers": len(index), **quality(index, area, subs, args.seeds)}
    results["at scale"] = []
    if args.million:
        results["at scale"].append(at_scale(million_ranker(index, args.million, args.work), "synthetic arrays"))
    if args.large_index:
        warm(Path(args.large_index))
        results["at scale"].append(at_scale(ranker_of(PaperIndex.load(args.large_index)), args.large_index))
    table = [
        [row["kind"], row["size"], "yes" if row["avoid"] else "", row["measure"], row["method"],
         f"{row['mean']:.3f} ± {row['std']:.3f}",
         "" if row["method"] == TODAY else f"{row['gain']:+.3f} ± {row['gain_std']:.3f}",
         row["collections"]]
        for row in results["rows"]
    ]  # fmt: skip
    header = ["kind", "size", "avoid", "measure", "method", f"mean ± std over {args.seeds} seeds", "gain", "n"]
    report(header, table, results, args.json)
    print("\np50 ms: " + ", ".join(f"{name}: {ms:.1f}" for name, ms in results["p50_ms"].items()))
    for scale in results["at scale"]:
        title = f"{scale['papers']} papers ({scale['what']}, efSearch {scale['ef_search']})"
        print(f"\n| {title} | p50 ms | p99 ms | FAISS p50 ms |")
        print("|---|---|---|---|")
        for name, values in scale.items():
            if isinstance(values, dict):
                faiss_ms = f"{values['faiss_p50_ms']:.1f}" if "faiss_p50_ms" in values else "–"
                print(f"| {name} | {values['p50_ms']:.1f} | {values['p99_ms']:.1f} | {faiss_ms} |")


if __name__ == "__main__":
    main()
