"""Recommendations for a collection of papers: which method, how good (P@20 by area), how fast.

    .venv/bin/python -m benchmarks.recommend --index DIR [--corpus IJCAI.jsonl] [--seeds 10]
        [--million 1000000 --work DIR] [--large-index /tmp/million/index] [--json benchmarks/recommend.json]

DIR is an index of the labelled corpus (the IJCAI areas: ``shared/evaldata``). For every area with
at least size + 20 papers, a collection of ``size`` (5 and 20) random papers of that area, once
per seed; the 20 recommendations (members excluded) count as right when they are papers of the
collection's area (P@20). "With negatives": the same collections with 5 random papers, as a
``--not`` collection, from the area nearest to the collection's (by the cosine of the areas'
mean vectors). Each seed's P@20 is the mean over areas; the table gives the mean over seeds, the
spread over seeds (std, min-max), and the paired gain over ``similar(ids)`` (mean and std over
seeds of the difference of the two methods on the same collections).

Methods: ``PaperIndex.similar(ids)`` (Rocchio, the index's default mode: hybrid); the centroid
(Rocchio, dense); the best cosine to any member (minus 0.5 x the best to any paper to avoid);
arxiv-sanity-lite's linear SVM per collection (scikit-learn ``LinearSVC(C=0.1,
class_weight="balanced")``, members against every other paper; a paper to avoid weighs as a
member) on the vectors, the smoothed vectors, the keyword TF-IDF rows and side by side; the
same SVM solved in numpy (``index.search.recommend.fit_svm``) on every paper; and what ships,
``PaperIndex.recommend`` (that SVM against a fixed sample of other papers, scoring candidates).
Times: p50 per recommendation at this size (scikit-learn's import excluded).

--million N: ``recommend`` and ``similar`` on a synthetic index of N papers (each a copy of a
paper of DIR: its vector and smoothed vector plus Gaussian noise (sd 0.02 a dimension),
renormalised, its keyword row; HNSW32 with efSearch tuned as a build tunes it), built once into
--work and reused; --large-index: the same timings on an index built by ``benchmarks.million``,
its files read once before (in the page cache, as a service's index is after a while).
Prints Markdown tables and writes JSON.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse

from benchmarks.common import parser as common_parser
from benchmarks.common import ranker_of, report
from benchmarks.scale import EVALDATA
from paperscope.index.analysis.evaluation import labels_by_id

K = 20
SIZES = (5, 20)
NEGATIVES = 5
C = 0.1
TODAY = "similar(ids): Rocchio, hybrid (today)"
REFERENCE = "LinearSVC, smoothed + TF-IDF"
NUMPY = "numpy SVM, smoothed + TF-IDF, every paper"
SHIPPED = "recommend(): numpy SVM, smoothed + TF-IDF, sample + candidates"


def top(scores: np.ndarray, exclude: np.ndarray, k: int = K) -> np.ndarray:
    """The ``k`` best rows by ``scores``, ``exclude`` left out."""
    scores = np.array(scores, dtype=np.float64)
    scores[exclude] = -np.inf
    return np.argsort(-scores, kind="stable")[:k]


def svm_labels(count: int, positive: np.ndarray, negative: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Labels (members 1, the rest -1) and the sample weights that make a paper to avoid weigh as a
    member under balanced class weights (the others weigh as a balanced class)."""
    labels = -np.ones(count)
    labels[positive] = 1
    weights = np.ones(count)
    weights[negative] = (count - len(positive)) / len(positive)
    return labels, weights


def methods(index) -> dict:
    """Each method: (positive rows, negative rows) -> the K recommended rows."""
    ranker = ranker_of(index)
    from sklearn.svm import LinearSVC

    from paperscope.index.search.recommend import fit_svm

    ids = np.array(index.ids())
    vectors, smoothed = np.asarray(index.vectors), np.asarray(ranker.smoothed)
    terms = ranker.keyword.matrix.tocsr()
    features = {
        "vectors": vectors,
        "smoothed vectors": smoothed,
        "TF-IDF": terms,
        "vectors + TF-IDF": scipy.sparse.hstack([scipy.sparse.csr_matrix(vectors), terms], format="csr"),
        "smoothed + TF-IDF": scipy.sparse.hstack([scipy.sparse.csr_matrix(smoothed), terms], format="csr"),
    }

    def similar(mode):
        def ranked(positive, negative):
            return index.similar(ids[positive].tolist(), k=K, mode=mode, negative=ids[negative].tolist()).rows

        return ranked

    def best_member(positive, negative):
        scores = (vectors @ vectors[positive].T).max(axis=1)
        if len(negative):
            scores = scores - 0.5 * (vectors @ vectors[negative].T).max(axis=1)
        return top(scores, np.r_[positive, negative])

    def linear_svc(matrix):
        def ranked(positive, negative):
            labels, weights = svm_labels(matrix.shape[0], positive, negative)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # liblinear's "did not converge" at its default tolerance
                model = LinearSVC(C=C, class_weight="balanced").fit(matrix, labels, sample_weight=weights)
            return top(model.decision_function(matrix), np.r_[positive, negative])

        return ranked

    def numpy_svm(positive, negative):
        labels, weights = svm_labels(len(vectors), positive, negative)
        share = len(labels) / 2 / np.bincount(labels > 0)  # balanced class weights
        dense, sparse, bias = fit_svm(smoothed, terms, labels, weights * share[(labels > 0).astype(int)])
        return top(smoothed @ dense + terms @ sparse + bias, np.r_[positive, negative])

    def shipped(positive, negative):
        return index.recommend(ids[positive].tolist(), ids[negative].tolist(), k=K).rows

    return {
        TODAY: similar(None),
        "centroid (Rocchio), dense": similar("dense"),
        "best cosine to any member, dense": best_member,
        **{f"LinearSVC, {name}": linear_svc(matrix) for name, matrix in features.items()},
        NUMPY: numpy_svm,
        SHIPPED: shipped,
    }


def collections(labels: np.ndarray, vectors: np.ndarray, seeds: int):
    """(seed, size, with negatives, area, positive rows, negative rows, negative area) of every
    collection; the same collection with and without negatives."""
    areas = {area: np.flatnonzero(labels == area) for area in np.unique(labels)}
    means = {area: vectors[rows].mean(axis=0) for area, rows in areas.items()}
    means = {area: mean / np.linalg.norm(mean) for area, mean in means.items()}
    nearest = {
        area: max((other for other in areas if other != area and len(areas[other]) >= NEGATIVES),
                  key=lambda other: means[area] @ means[other])
        for area in areas
    }  # fmt: skip
    for seed in range(seeds):
        for size in SIZES:
            rng = np.random.default_rng([seed, size])
            for area, rows in areas.items():
                if len(rows) < size + K:
                    continue
                positive = rng.choice(rows, size, replace=False)
                negative = rng.choice(areas[nearest[area]], NEGATIVES, replace=False)
                yield seed, size, False, area, positive, negative[:0], nearest[area]
                yield seed, size, True, area, positive, negative, nearest[area]


def quality(index, labels: np.ndarray, seeds: int) -> dict:
    """P@20 per method, size and negatives, by seed; p50 time per method and size; how many of
    LinearSVC's 20 the numpy SVM (same features, same papers) also recommends."""
    ranked = methods(index)
    precision, times, negative_areas, overlap = {}, {}, {}, []
    for seed, size, negatives, area, positive, negative, near in collections(labels, np.asarray(index.vectors), seeds):
        negative_areas[area] = near
        for name, method in ranked.items():
            start = time.perf_counter()
            rows = method(positive, negative)
            elapsed = (time.perf_counter() - start) * 1000
            assert not np.isin(rows, np.r_[positive, negative]).any(), name
            key = (name, size, negatives)
            precision.setdefault(key, {}).setdefault(seed, []).append(float(np.sum(labels[rows] == area)) / K)
            times.setdefault((name, size), []).append(elapsed)
            if name in (REFERENCE, NUMPY):
                overlap.append(set(rows.tolist()))
        overlap[-2:] = [len(overlap[-2] & overlap[-1]) / K]
    results = {}
    for (name, size, negatives), by_seed in precision.items():
        means = np.array([np.mean(by_seed[seed]) for seed in sorted(by_seed)])
        today = precision[(TODAY, size, negatives)]
        gains = means - np.array([np.mean(today[seed]) for seed in sorted(today)])
        results.setdefault(name, {})[f"size {size}{', negatives' if negatives else ''}"] = {
            "P@20": float(means.mean()),
            "std": float(means.std(ddof=1)),
            "min": float(means.min()),
            "max": float(means.max()),
            "gain": float(gains.mean()),
            "gain_std": float(gains.std(ddof=1)),
            "collections": int(sum(len(values) for values in by_seed.values())),
        }
    for (name, size), values in times.items():
        results[name][f"p50_ms size {size}"] = statistics.median(values)
    return {
        "methods": results,
        "numpy_svm_top20_overlap_with_linearsvc": float(np.mean(overlap)),
        "negative_areas": negative_areas,
        "seeds": seeds,
    }


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
    grown = KeywordIndex(replicate_rows(keyword.matrix, count), keyword.terms, keyword.idf, sorted(keyword.stop_words))
    grown.__dict__["by_term"] = replicate_by_term(keyword.by_term, base, count)
    search = dataclasses.replace(index.manifest.search, ef_search=int(tuned_path.read_text()))
    return Ranker(arrays["vectors"], arrays["smoothed"], faiss.read_index(str(faiss_path)), grown, search)


def at_scale(ranker, what: str, queries: int = 40) -> dict:
    """p50/p99 of ``recommend`` (5 and 20 members) and ``similar`` (20 members) on ``ranker``'s
    papers (the first 5 of each left out: the sample's features are read on the first), and the
    FAISS share of ``recommend`` (its candidate searches alone)."""
    from paperscope.index.search import recommend as recommending
    from paperscope.settings import QuerySettings

    count = len(ranker)
    none = np.zeros((0, ranker.vectors.shape[1]), np.float32)
    rng = np.random.default_rng(7)
    results = {"papers": count, "what": what, "ef_search": ranker.search_info.ef_search}
    for size in SIZES:
        times, faiss_times = [], []
        for _ in range(queries):
            positive = np.sort(rng.choice(count, size, replace=False))
            start = time.perf_counter()
            recommending.recommend(ranker, positive, none, np.zeros(0, np.int64), none, K)
            times.append((time.perf_counter() - start) * 1000)
            members = np.asarray(ranker.vectors[positive])
            start = time.perf_counter()  # the same candidate searches again, alone
            ranker.faiss_search(members, recommending.PER_MEMBER)
            ranker.faiss_search(members.mean(axis=0), recommending.CENTRAL + size)
            faiss_times.append((time.perf_counter() - start) * 1000)
        results[f"recommend, {size} members"] = {
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


def cell(values: dict, gain: bool) -> str:
    """A table cell: P@20 ± std (min–max), and the paired gain over today ± its std."""
    text = f"{values['P@20']:.3f} ± {values['std']:.3f} ({values['min']:.3f}–{values['max']:.3f})"
    return text + (f"; {values['gain']:+.3f} ± {values['gain_std']:.3f}" if gain else "")


def main() -> None:
    """Measure every method (and, with --million, the shipped one at scale) and print the tables."""
    parser = common_parser(__doc__, "recommend")
    parser.add_argument("--index", required=True, help="an index of the labelled corpus")
    parser.add_argument("--corpus", default=str(EVALDATA), help="the labelled corpus (JSON lines with label)")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--million", type=int, default=0, help="papers of the synthetic index (0: skip)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/recommend-million"), help="its arrays, kept")
    parser.add_argument("--large-index", help="also time this index (one benchmarks.million built)")
    args = parser.parse_args()
    from paperscope import PaperIndex

    index = PaperIndex.load(args.index)
    label_of = labels_by_id(args.corpus)
    labels = np.array([label_of[paper_id] for paper_id in index.ids()])
    results = {"papers": len(index), **quality(index, labels, args.seeds)}
    results["at scale"] = []
    if args.million:
        results["at scale"].append(at_scale(million_ranker(index, args.million, args.work), "synthetic arrays"))
    if args.large_index:
        warm(Path(args.large_index))
        results["at scale"].append(at_scale(ranker_of(PaperIndex.load(args.large_index)), args.large_index))
    columns = [f"size {size}{', negatives' if negatives else ''}" for negatives in (False, True) for size in SIZES]
    table = []
    for name, by_column in results["methods"].items():
        times = f"{by_column['p50_ms size 5']:.1f} / {by_column['p50_ms size 20']:.1f}"
        table.append([name, *(cell(by_column[column], name != TODAY) for column in columns), times])
    header = [f"{len(index)} papers, {args.seeds} seeds: P@20 ± std (min–max); gain over today ± std"]
    named = [column.replace("negatives", f"{NEGATIVES} negatives") for column in columns]
    report([*header, *named, "p50 ms (5 / 20)"], table, results, args.json)
    print(f"\nnumpy SVM against LinearSVC: {results['numpy_svm_top20_overlap_with_linearsvc']:.3f} of the 20 in common")
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
