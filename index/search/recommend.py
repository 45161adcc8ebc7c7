"""Recommendations for a collection of papers: one linear SVM per collection, in numpy.

arxiv-sanity-lite's method (a linear SVM per tag, members against the other papers) on the
smoothed vectors and the keyword TF-IDF rows side by side: closer to a collection's area than
``similar(ids)`` from 20 papers on, as fast at a million papers as at a thousand (measured:
docs/recommend.md and docs/benchmarks.md).

So that it costs the same at a million papers as at a thousand (p50 ≤ 50 ms for 20 papers):

- the classifier learns the members (and any papers from outside the index, by their vectors)
  against a fixed random sample of ``SAMPLE`` other papers, and the papers to avoid, each
  weighted as a member;
- it scores only candidates: each member's ``PER_MEMBER`` nearest papers (FAISS), the nearest to
  the collection's mean, and the keyword candidates of the members' terms;
- the solver is LinearSVC's own objective (squared hinge, L2, balanced class weights, bias
  regularised) minimised by a few Newton steps with conjugate gradients: no scikit-learn on the
  query path (importing it costs 1-2 s).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import numpy as np

from paperscope.errors import UserError
from paperscope.index.common.kmeans import kmeans
from paperscope.index.common.smoothed import smoothed
from paperscope.index.search.ranking import Ranking, Reason
from paperscope.settings import QuerySettings

if TYPE_CHECKING:  # imported where a classifier is fitted: loading the collections' code imports no scipy (0.2 s)
    import scipy.sparse

C = 0.1  # LinearSVC's C, as arxiv-sanity-lite sets it
SAMPLE = 1000  # other papers the classifier learns against (fixed: rows of a seeded sample)
PER_MEMBER = 20  # each member's nearest papers among the candidates
KEYWORD_CANDIDATES = 200  # the papers of the members' heaviest terms among the candidates
SCORE_ALL = 5000  # a filter keeping at most this many papers: all of them are scored
CENTRAL = 50  # the nearest papers to the members' mean among the candidates (at least k, and the members)
CLASSIFIER_SHARE = 0.3  # score = similarity to the collection + 0.3 x tanh(margin)
GROUP_BETWEEN = 0.45  # a collection whose 2-means halves' centroids are less alike than this is served from each
GROUP_MIN = 2  # members of each half, at least
NEWTON_STEPS = 2  # and CG_STEPS: the fewest that rank as more steps do (docs/recommend.md)
CG_STEPS = 8


def fit_svm(
    dense: np.ndarray, sparse: scipy.sparse.csr_matrix, labels: np.ndarray, weights: np.ndarray, c: float = C
) -> tuple[np.ndarray, np.ndarray, float]:
    """A linear classifier of rows ``[dense | sparse]`` with ``labels`` ±1: the weights of the dense
    and sparse columns and the bias minimising LinearSVC's objective, ½‖w‖² + ½b² + ``c`` Σ
    ``weights``ᵢ max(0, 1 - yᵢ(xᵢ·w + b))², by finite Newton steps (Keerthi & DeCoste 2005): each
    solves the least squares of the rows inside the margin by conjugate gradients, then an exact
    line search."""
    import scipy.sparse

    terms = sparse.shape[1]
    used = np.flatnonzero(np.bincount(sparse.indices, minlength=terms))  # w is 0 on terms no row uses
    sparse = scipy.sparse.csr_matrix(sparse[:, used], dtype=np.float32)
    dense = np.asarray(dense, dtype=np.float32)
    width = dense.shape[1]
    y, weights = labels.astype(np.float32), weights.astype(np.float32)

    def times(w):  # X w
        return dense @ w[:width] + sparse @ w[width:-1] + w[-1]

    sparse_t = sparse.T.tocsr()

    def times_t(r):  # Xᵀ r
        return np.concatenate([dense.T @ r, sparse_t @ r, [r.sum()]], dtype=np.float32)

    w = np.zeros(width + sparse.shape[1] + 1, np.float32)
    f = np.zeros(len(y), np.float32)
    active = None
    for _ in range(NEWTON_STEPS):
        inside = y * f < 1
        if active is not None and np.array_equal(inside, active):
            break
        active = inside
        cw = 2 * c * weights * inside

        def hessian(v, cw=cw):
            return v + times_t(cw * times(v))

        residual = times_t(cw * y) - hessian(w)  # conjugate gradients on (I + Xᵀ D X) w = Xᵀ D y
        target, direction = w.copy(), residual.copy()
        size = residual @ residual
        for _ in range(CG_STEPS):
            if size < 1e-10:
                break
            product = hessian(direction)
            step = size / (direction @ product)
            target += step * direction
            residual -= step * product
            size, before = residual @ residual, size
            direction = residual + (size / before) * direction
        move = target - w
        if move @ move < 1e-12:
            break
        change = times(move)
        t = 1.0
        for _ in range(10):  # Newton on the line's piecewise-quadratic objective
            margin = y * (f + t * change) < 1
            slope = w @ move + t * (move @ move) + 2 * c * np.sum((weights * margin) * (f + t * change - y) * change)
            curve = move @ move + 2 * c * np.sum(weights * margin * change * change)
            t_next = t - slope / curve
            if abs(t_next - t) < 1e-6:
                break
            t = t_next
        w += t * move
        f += t * change
    sparse_weights = np.zeros(terms, np.float32)
    sparse_weights[used] = w[width:-1]
    return w[:width], sparse_weights, float(w[-1])


_samples: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a Ranker's sample rows and features


def training_sample(ranker) -> tuple[np.ndarray, np.ndarray, scipy.sparse.csr_matrix]:
    """The rows the classifier learns against (``SAMPLE`` rows drawn once with a fixed seed; every
    row of a smaller index), sorted, and their dense and keyword features: read once per index."""
    if ranker not in _samples:
        count = len(ranker)
        rows = np.arange(count) if count <= SAMPLE else np.sort(np.random.default_rng(0).choice(count, SAMPLE, False))
        documents = ranker.documents
        _samples[ranker] = rows, np.asarray(documents[rows], np.float32), ranker.keyword.matrix[rows]
    return _samples[ranker]


def _as_documents(ranker, vectors: np.ndarray) -> np.ndarray:
    """Vectors of papers outside the index as the index's papers are ranked: smoothed (plus the
    index's smoothing weight x the mean of their nearest papers, renormalised) when the index is."""
    smoothing = ranker.search_info.smoothing
    if ranker.smoothed is None or not smoothing or not len(vectors):
        return vectors
    near = ranker.faiss_search(vectors, min(smoothing.k, len(ranker)))[1]
    return smoothed(vectors, np.asarray(ranker.vectors)[near], smoothing.weight)


def _classifier(ranker, positive, positive_vectors, negative, negative_vectors):
    """The collection's linear SVM (dense weights, term weights, bias): members (+1) against the
    papers to avoid, each weighing as a member, and the sample (-1), classes balanced."""
    import scipy.sparse

    documents = ranker.documents
    matrix = ranker.keyword.matrix
    sample, sample_dense, sample_terms = training_sample(ranker)
    keep = ~np.isin(sample, np.concatenate([positive, negative]))
    if not keep.all():  # a member is one of the sample: it only counts as a member
        sample_dense, sample_terms = sample_dense[keep], sample_terms[keep]

    def no_terms(count: int):  # papers from outside have no keyword row: their vectors steer alone
        return scipy.sparse.csr_matrix((count, matrix.shape[1]), dtype=np.float32)

    groups = [  # dense features, keyword features
        (documents[positive], matrix[positive]),
        (_as_documents(ranker, positive_vectors), no_terms(len(positive_vectors))),
        (documents[negative], matrix[negative]),
        (_as_documents(ranker, negative_vectors), no_terms(len(negative_vectors))),
        (sample_dense, sample_terms),
    ]
    dense = np.concatenate([np.asarray(features, np.float32) for features, _ in groups])
    terms = scipy.sparse.vstack([features for _, features in groups], format="csr")
    wanted, avoided = len(positive) + len(positive_vectors), len(negative) + len(negative_vectors)
    labels = -np.ones(len(dense))
    labels[:wanted] = 1
    weights = np.full(len(dense), len(dense) / (2 * max(len(dense) - wanted, 1)))
    weights[: wanted + avoided] = len(dense) / (2 * wanted)
    return fit_svm(dense, terms, labels, weights)


REASON_MEMBERS = 2  # the members named as a recommendation's closest
REASON_TERMS = 4  # the terms named as shared with them


def reasons(ranker, rows: np.ndarray, positive: np.ndarray, outside_vectors=None, outside_texts=()) -> list[Reason]:
    """Why each of ``rows`` is recommended for a collection of ``positive`` rows and of members
    outside the index (their ``outside_vectors`` and ``outside_texts``, title and abstract): the
    ``REASON_MEMBERS`` members it is closest to, of either kind ("members": (row, cosine) pairs,
    "outside": (member number, cosine) pairs, closest first), and the terms it shares with the
    collection ("terms": the heaviest in both its TF-IDF row and the members', first)."""
    outside = np.zeros((0, ranker.vectors.shape[1]), np.float32) if outside_vectors is None else outside_vectors
    if not len(rows) or not len(positive) + len(outside):
        return [Reason(members=[], terms=[]) for _ in rows]
    found = np.asarray(ranker.vectors[rows])
    cosines = np.hstack([found @ np.asarray(ranker.vectors[positive]).T, found @ np.asarray(outside).T])
    closest = np.argsort(-cosines, axis=1, kind="stable")[:, :REASON_MEMBERS]
    matrix = ranker.keyword.matrix
    profile = np.asarray(matrix[positive].sum(axis=0)).ravel()  # the members' weight of each term
    if len(outside_texts):
        profile += np.asarray(ranker.keyword.transform(list(outside_texts)).sum(axis=0)).ravel()
    picked = matrix[rows]
    shared = picked.data * profile[picked.indices]  # each of the rows' terms, weighed by both
    found_reasons: list[Reason] = []
    for i in range(len(rows)):
        start, end = picked.indptr[i], picked.indptr[i + 1]
        order = np.argsort(-shared[start:end], kind="stable")
        terms = picked.indices[start:end][order[shared[start:end][order] > 0]]
        count = len(positive)
        reason: Reason = {
            "members": [(int(positive[j]), float(cosines[i, j])) for j in closest[i] if j < count],
            "terms": [ranker.keyword.terms[term] for term in terms[:REASON_TERMS]],
        }
        if len(outside):
            reason["outside"] = [(int(j - count), float(cosines[i, j])) for j in closest[i] if j >= count]
        found_reasons.append(reason)
    return found_reasons


def above(ranker, vector: np.ndarray, threshold: float, k: int, *, within=None, positive=(), text=None) -> Ranking:
    """A saved search's matches: the papers (at most ``k``, among the mask ``within`` when given)
    whose cosine with ``vector`` (the query's, in the raw vectors' space) is at least
    ``threshold``, best first, the ``positive`` rows (a search by papers: those papers) left out.
    A narrow mask (new papers) is scored whole, else FAISS finds the nearest. Score columns:
    "score" (that cosine); reasons as a recommendation's (:func:`reasons`): the query's papers
    each is closest to, or the query text itself ("outside": [(0, cosine)]), and shared terms."""
    positive = np.asarray(positive, np.int64)
    vector = np.asarray(vector, np.float32).reshape(-1)
    if within is not None and np.count_nonzero(within) <= SCORE_ALL:
        rows = np.flatnonzero(within)
        scores = np.asarray(ranker.vectors[rows]) @ vector
    else:
        found_scores, found_rows = ranker.faiss_search(vector, min(k + len(positive), len(ranker)), within)
        rows, scores = found_rows[0], found_scores[0]
    keep = (rows >= 0) & (scores >= threshold) & ~np.isin(rows, positive)
    rows, scores = rows[keep], scores[keep]
    order = np.argsort(-scores, kind="stable")[:k]
    rows, scores = rows[order].astype(np.int64), scores[order].astype(np.float32)
    outside = (vector[None], [text]) if text is not None else (None, ())
    return Ranking(rows, {"score": scores}, reasons=reasons(ranker, rows, positive, *outside))


def _groups(ranker, positive: np.ndarray, positive_vectors: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The collection as one group (rows, vectors of papers from outside), or as two when its
    members form two clear parts: the 2-means halves of their vectors, each of at least
    ``GROUP_MIN`` members, whose centroids' cosine is below ``GROUP_BETWEEN``."""
    whole = [(positive, positive_vectors)]
    count = len(positive) + len(positive_vectors)
    if count < 2 * GROUP_MIN:
        return whole
    points = np.concatenate([np.asarray(ranker.vectors[positive], np.float32), positive_vectors])
    part = kmeans(points, 2)
    if np.bincount(part, minlength=2).min() < GROUP_MIN:
        return whole
    centres = np.stack([points[part == half].mean(axis=0) for half in (0, 1)])
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    if centres[0] @ centres[1] >= GROUP_BETWEEN:
        return whole
    in_index = part[: len(positive)]
    return [(positive[in_index == half], positive_vectors[part[len(positive) :] == half]) for half in (0, 1)]


def _similarity(ranker, candidates, members: tuple, avoided: tuple, query) -> np.ndarray:
    """``similar(ids)``'s hybrid score of each candidate for a collection: the smoothed vectors'
    cosine with the Rocchio query (the members' mean minus half the mean of the papers to avoid)
    blended with the keyword cosine with the members' terms, by the index's hybrid weight."""
    documents = ranker.documents
    wanted = np.concatenate([np.asarray(documents[members[0]]), _as_documents(ranker, members[1])])
    vector = wanted.mean(axis=0)
    unwanted = np.concatenate([np.asarray(documents[avoided[0]]), _as_documents(ranker, avoided[1])])
    if len(unwanted):
        vector = vector - QuerySettings().negative * unwanted.mean(axis=0)
    vector /= max(np.linalg.norm(vector), 1e-12)
    weight = ranker.search_info.hybrid_weight
    keyword = 0.0 if query is None else ranker.keyword.row_scores(candidates, query)
    return weight * (np.asarray(documents[candidates]) @ vector) + (1 - weight) * keyword


def _ranked_group(ranker, members: tuple, avoided: tuple, k: int, within, *, classifier, excluded):
    """The ``k`` best rows for one group of members (rows, vectors) and their scores (see
    :func:`recommend`) by the collection's ``classifier`` (dense weights, term weights, bias),
    the rows ``excluded`` (every member, the papers to avoid) left out."""
    positive, positive_vectors = members
    dense_weights, term_weights, bias = classifier
    keyword = ranker.keyword
    raw = np.concatenate([np.asarray(ranker.vectors[positive]), positive_vectors])
    centre = raw.mean(axis=0)
    centre /= max(np.linalg.norm(centre), 1e-12)
    query = keyword.weighted_rows(positive.tolist(), [1 / len(positive)] * len(positive)) if len(positive) else None
    if within is not None and np.count_nonzero(within) <= SCORE_ALL:
        candidates = np.flatnonzero(within)  # a narrow filter (a feed of new papers): score them all
    else:
        near = ranker.faiss_search(raw, min(PER_MEMBER, len(ranker)), within)[1]
        central = ranker.faiss_search(centre, min(max(CENTRAL, k) + len(excluded), len(ranker)), within)[1]
        by_terms = np.zeros(0, np.int64) if query is None else keyword.candidates(query, KEYWORD_CANDIDATES)
        by_terms = by_terms if within is None else by_terms[within[by_terms]]
        candidates = np.union1d(np.union1d(near[near >= 0], central[central >= 0]), by_terms)
    candidates = np.setdiff1d(candidates, excluded)
    margin = np.asarray(ranker.documents[candidates]) @ dense_weights + keyword.matrix[candidates] @ term_weights
    score = _similarity(ranker, candidates, members, avoided, query) + CLASSIFIER_SHARE * np.tanh(margin + bias)
    top = np.argsort(-score, kind="stable")[:k]
    return candidates[top], score[top]


def _shared(lists: list[tuple[np.ndarray, np.ndarray]], sizes: list[int], k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` rows of several groups' rankings, each group taking its share by its members'
    count, best first within it; a row two groups found counts once, at its best score; the
    chosen rows then ordered by score."""
    quota = np.asarray(sizes, np.float64) / sum(sizes)
    taken, position = np.zeros(len(lists)), [0] * len(lists)
    chosen: dict[int, float] = {}
    while len(chosen) < k and any(position[g] < len(rows) for g, (rows, _) in enumerate(lists)):
        open_groups = [position[g] < len(rows) for g, (rows, _) in enumerate(lists)]
        group = int(np.argmin(np.where(open_groups, taken / quota, np.inf)))
        row, score = lists[group][0][position[group]], lists[group][1][position[group]]
        position[group] += 1
        if row not in chosen:
            taken[group] += 1
        chosen[row] = max(score, chosen.get(row, -np.inf))
    rows = np.array(list(chosen), np.int64)
    scores = np.array(list(chosen.values()), np.float32)
    order = np.argsort(-scores, kind="stable")
    return rows[order], scores[order]


def recommend(
    ranker,
    positive: np.ndarray,
    positive_vectors: np.ndarray,
    negative: np.ndarray,
    negative_vectors: np.ndarray,
    k: int,
    *,
    within: np.ndarray | None = None,
) -> Ranking:
    """The ``k`` papers of ``ranker``'s index most like a collection (rows ``positive``, and
    papers outside the index by their vectors ``positive_vectors``, (m, d), maybe empty) and
    least like the papers to avoid (``negative`` rows and ``negative_vectors``), members
    excluded, only among the rows of the mask ``within`` when given (see the module docstring).
    A collection of two clear parts (:func:`_groups`) is served from each, by its share.
    Score columns: "score" (what the papers are ranked by: their similarity to the collection as
    ``similar(ids)`` scores it, plus ``CLASSIFIER_SHARE`` x tanh of the classifier's margin:
    ±0.3 at most), "cosine" (with the mean of the members' vectors) and "keyword_score" (TF-IDF
    cosine with the members' terms); ``reasons``: the members each is closest to and the terms
    it shares with them."""
    dimension = ranker.vectors.shape[1]
    positive, negative = (np.asarray(rows, dtype=np.int64).reshape(-1) for rows in (positive, negative))
    positive_vectors, negative_vectors = (
        np.asarray(vectors, dtype=np.float32).reshape(-1, dimension) for vectors in (positive_vectors, negative_vectors)
    )
    if not len(positive) and not len(positive_vectors):
        raise UserError("a recommendation needs at least one paper of the collection")
    if within is not None and (np.shape(within) != (len(ranker),) or np.asarray(within).dtype != bool):
        raise UserError(f"within must be a boolean mask of the index's {len(ranker)} papers (see where())")
    avoided, groups = (negative, negative_vectors), _groups(ranker, positive, positive_vectors)
    shared = {  # one classifier for the whole collection; no member of any part recommended
        "classifier": _classifier(ranker, positive, positive_vectors, negative, negative_vectors),
        "excluded": np.union1d(positive, negative),
    }
    if len(groups) == 1:
        rows, score = _ranked_group(ranker, groups[0], avoided, k, within, **shared)
    else:
        lists = [_ranked_group(ranker, group, avoided, k, within, **shared) for group in groups]
        rows, score = _shared(lists, [len(rows) + len(vectors) for rows, vectors in groups], k)
    raw = np.concatenate([np.asarray(ranker.vectors[positive]), positive_vectors])
    centre = raw.mean(axis=0)
    centre /= max(np.linalg.norm(centre), 1e-12)
    keyword = ranker.keyword
    query = keyword.weighted_rows(positive.tolist(), [1 / len(positive)] * len(positive)) if len(positive) else None
    keyword_score = np.zeros(len(rows), np.float32) if query is None else keyword.row_scores(rows, query)
    scores = {"score": score.astype(np.float32), "cosine": np.asarray(ranker.vectors[rows]) @ centre,
              "keyword_score": keyword_score}  # fmt: skip
    return Ranking(rows, scores, reasons=reasons(ranker, rows, positive))
