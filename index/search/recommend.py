"""Recommendations for a collection of papers: one linear SVM per collection, in numpy.

arxiv-sanity-lite's method (a linear SVM per tag, members against every other paper) on the
smoothed vectors and the keyword TF-IDF rows side by side, chosen by ``benchmarks/recommend.py``
on the IJCAI corpus (2,690 papers, 14 areas, 10 seeds; docs/recommend.md): P@20 from the
collection's area, members excluded, 0.60 for 5 papers and 0.67 for 20 against 0.55 and 0.61 for
``similar(ids)`` (Rocchio, hybrid), a gain of 3-4 times the spread over seeds of the paired difference.

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

import numpy as np
import scipy.sparse

C = 0.1  # LinearSVC's C, as arxiv-sanity-lite sets it
SAMPLE = 1000  # other papers the classifier learns against (fixed: rows of a seeded sample)
PER_MEMBER = 50  # each member's nearest papers among the candidates
KEYWORD_CANDIDATES = 200  # papers of the members' heaviest terms among the candidates
NEWTON_STEPS = 8
CG_STEPS = 20


def fit_svm(
    dense: np.ndarray, sparse: scipy.sparse.csr_matrix, labels: np.ndarray, weights: np.ndarray, c: float = C
) -> tuple[np.ndarray, np.ndarray, float]:
    """A linear classifier of rows ``[dense | sparse]`` with ``labels`` ±1: the weights of the dense
    and sparse columns and the bias minimising LinearSVC's objective, ½‖w‖² + ½b² + ``c`` Σ
    ``weights``ᵢ max(0, 1 - yᵢ(xᵢ·w + b))², by finite Newton steps (Keerthi & DeCoste 2005): each
    solves the least squares of the rows inside the margin by conjugate gradients, then an exact
    line search."""
    terms, used = sparse.shape[1], np.unique(sparse.indices)  # zero on terms no training row uses
    sparse = scipy.sparse.csr_matrix(sparse[:, used], dtype=np.float64)
    dense = np.asarray(dense, dtype=np.float64)
    width = dense.shape[1]
    y = labels.astype(np.float64)

    def times(w):  # X w
        return dense @ w[:width] + sparse @ w[width:-1] + w[-1]

    def times_t(r):  # Xᵀ r
        return np.concatenate([dense.T @ r, sparse.T @ r, [r.sum()]])

    w = np.zeros(width + sparse.shape[1] + 1)
    f = np.zeros(len(y))
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
    sparse_weights = np.zeros(terms)
    sparse_weights[used] = w[width:-1]
    return w[:width], sparse_weights, float(w[-1])
