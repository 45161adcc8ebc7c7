"""The keyword side of hybrid ranking: TF-IDF cosine against BM25, convex blending against RRF.

    .venv/bin/python -m benchmarks.keyword_side --index DIR [--corpus IJCAI.jsonl] [--sample 1000]

DIR is an index of the labelled corpus. Every paper is scored against every other (exactly, no
candidates) so that only the keyword side and the fusion differ:
- keyword sides: the index's TF-IDF rows (cosine), and BM25 (k1 1.5, b 0.75, Lucene's IDF) over
  the same terms (``paperscope.embed.terms``: words and two-word phrases), counted here; the BM25
  score of a paper for a query is the sum over the query's distinct terms, divided by the query's
  best score so that it blends with a cosine;
- fusion: ``w x dense + (1 - w) x keyword`` for several w, and reciprocal-rank fusion (1 / (60 + rank)
  summed over the dense and keyword rankings);
- dense: the index's smoothed vectors (the default ranking's), or raw where it has none.
Papers as queries (leave-one-out same-label P@10, as ``similar``) and titles as queries (MRR@10 of
the paper itself, same-label P@10 with it left out; as ``search``). Prints a Markdown table and writes JSON.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse

from benchmarks.common import parser as common_parser
from benchmarks.common import ranker_of, report
from benchmarks.scale import EVALDATA
from paperscope.index.analysis.evaluation import labels_by_id

K1, B, RRF_K = 1.5, 0.75, 60
WEIGHTS = (0.5, 0.6, 0.7, 0.8, 0.9)


def bm25_matrix(texts: list[str], index) -> scipy.sparse.csr_matrix:
    """BM25 weight of each (paper, term) over the index's vocabulary and terms."""
    ranker = ranker_of(index)
    from sklearn.feature_extraction.text import CountVectorizer

    from paperscope.index.common.keyword import analyzer

    counts = CountVectorizer(analyzer=analyzer(ranker.keyword.stop_words), vocabulary=ranker.keyword.terms)
    tf = counts.transform(texts).tocsr().astype(np.float64)
    lengths = np.asarray(tf.sum(axis=1)).ravel()
    df = np.bincount(tf.indices, minlength=tf.shape[1])
    idf = np.log(1 + (len(texts) - df + 0.5) / (df + 0.5))
    rows = np.repeat(np.arange(tf.shape[0]), np.diff(tf.indptr))
    norm = K1 * (1 - B + B * lengths[rows] / lengths.mean())
    tf.data = idf[tf.indices] * tf.data * (K1 + 1) / (tf.data + norm)
    return tf


def fused(dense: np.ndarray, keyword: np.ndarray, how: str) -> np.ndarray:
    """Scores of each row's candidates (query x paper) fused by ``how``: "w=0.7" or "rrf"."""
    if how == "rrf":
        ranks = [np.argsort(np.argsort(-scores, axis=1), axis=1) for scores in (dense, keyword)]
        return sum(1 / (RRF_K + 1 + rank) for rank in ranks)
    weight = float(how.split("=")[1])
    return weight * dense + (1 - weight) * keyword


def precision(scores: np.ndarray, labels: np.ndarray, own: np.ndarray, k: int = 10) -> tuple[float, float, float]:
    """Same-label P@k (own paper left out), macro P@k and MRR@k of the own paper."""
    ordered = np.argsort(-scores, axis=1)
    reciprocal, hits = [], []
    for query, row in enumerate(ordered):
        position = np.flatnonzero(row[:k] == own[query])
        reciprocal.append(1 / (position[0] + 1) if len(position) else 0.0)
        others = row[row != own[query]][:k]
        hits.append(np.mean(labels[others] == labels[own[query]]))
    by_label = {}
    for query, value in enumerate(hits):
        by_label.setdefault(labels[own[query]], []).append(value)
    return float(np.mean(hits)), float(np.mean([np.mean(v) for v in by_label.values()])), float(np.mean(reciprocal))


def main() -> None:
    """Score every variant and print the table."""
    parser = common_parser(__doc__, "keyword_side")
    parser.add_argument("--index", required=True)
    parser.add_argument("--corpus", default=str(EVALDATA))
    parser.add_argument("--sample", type=int, default=1000)
    args = parser.parse_args()
    from paperscope import PaperIndex
    from paperscope.embed.text import embedding_texts
    from paperscope.index.common.keyword import analyzer

    index = PaperIndex.load(args.index)
    ranker = ranker_of(index)
    label_of = labels_by_id(args.corpus)
    labels = np.array([label_of[i] for i in index.papers["id"]])
    texts = embedding_texts(index.papers)
    documents = np.asarray(ranker.documents)
    tfidf = ranker.keyword.matrix
    bm25 = bm25_matrix(texts, index)
    terms_of = analyzer(ranker.keyword.stop_words)
    column = {term: i for i, term in enumerate(ranker.keyword.terms)}

    def bm25_scores(queries: list[str]) -> np.ndarray:
        rows = [sorted({column[t] for t in terms_of(text) if t in column}) for text in queries]
        presence = scipy.sparse.csr_matrix(
            (np.ones(sum(map(len, rows))), np.concatenate([r for r in rows if r] or [[]]).astype(int),
             np.concatenate([[0], np.cumsum([len(r) for r in rows])])),
            shape=(len(queries), bm25.shape[1]),
        )  # fmt: skip
        scores = (presence @ bm25.T).toarray()
        return scores / np.maximum(scores.max(axis=1, keepdims=True), 1e-12)

    sample = np.random.default_rng(0).choice(len(index), min(args.sample, len(index)), replace=False)
    titles = index.papers["title"].to_numpy()[sample].tolist()
    kinds = {
        "papers as queries (similar)": (
            documents[sample] @ documents.T,
            {"tf-idf": (tfidf[sample] @ tfidf.T).toarray(), "bm25": bm25_scores([texts[i] for i in sample])},
        ),
        "titles as queries (search)": (
            index.embed_texts(titles) @ documents.T,
            {"tf-idf": (ranker.keyword.transform(titles) @ tfidf.T).toarray(), "bm25": bm25_scores(titles)},
        ),
    }
    results, table = {}, []
    for kind, (dense, keyword_sides) in kinds.items():
        for side, keyword in keyword_sides.items():
            for how in [*(f"w={w}" for w in WEIGHTS), "rrf"]:
                scores = fused(dense, keyword, how)
                if kind.startswith("papers"):
                    scores[np.arange(len(sample)), sample] = -np.inf  # leave-one-out
                p10, macro, mrr = precision(scores, labels, sample)
                name = f"{kind}: {side}, {how}"
                results[name] = {"P@10": p10, "macro P@10": macro, "MRR@10": mrr}
                table.append([name, f"{p10:.3f}", f"{macro:.3f}", f"{mrr:.3f}" if kind.startswith("titles") else "—"])
    report(
        [f"{len(index)} papers, {len(sample)} queries", "P@10", "macro P@10", "self MRR@10"], table, results, args.json
    )


if __name__ == "__main__":
    main()
