"""Proposition 3.1 of Cao, Xu & Clifton (2022): rank-r images and a semi-random selection of one patch per
patch-row, computed exactly.

The statement (Sec. 3)
----------------------
An image u in R^{N x N} is cut into an n x n grid of patches of side N_c = N / n. If u has a rank-r approximation
with error eps and r < N_c, and one patch is chosen at random from each patch-row so that the chosen patches'
columns form a permutation (we read the paper's "permutation of {1, ..., n^2}" as a permutation of the n
patch-columns: p = n patches, one in every patch-row and every patch-column), then some embedding y in R^{p x d} of
those p tokens and a rank-preserving reconstruction R satisfy ||u - R(y)||_BV < C(r, N_c, p) eps.

What we compute
---------------
Write the rank-r image as u = A B^T (A, B in R^{N x r}) and a patch as u_IJ = A_I B_J^T (A_I, B_J: the N_c rows of
A, B in patch-row I, patch-column J). A set of selected patches is a bipartite graph between patch-rows and
patch-columns (an edge per selected patch).

* **From the selected patches alone** (the MAE reading: the encoder only sees those patches). A block CUR / skeleton
  formula recovers patch (I, J) exactly from a path I - J_0 - I_1 - J_1 - ... - I_k - J in that graph,
  u_IJ = u_{I J_0} u_{I_1 J_0}^+ u_{I_1 J_1} ... u_{I_k J}, whenever r <= N_c (each link block then has rank r;
  :func:`block_cur`). Conversely a patch whose row and column lie in different connected components is **not
  determined** by the selected patches: scaling A on one component by s and B by 1/s changes it and nothing selected
  (:func:`nonunique_witness`); the selected patches leave (c - 1) r^2 directions of the rank-r manifold free when
  every patch-row and -column is covered by c components (:func:`identifiability_deficiency`, computed as the rank
  of the observation map on the tangent space). A permutation selection has c = n components of one patch each: it
  determines exactly its own n patches, a fraction 1/n of the image, for every r >= 1. A uniformly random selection of
  the same count generally has fewer, larger components but leaves patch-rows uncovered. Two interleaved
  permutations (2n patches, :func:`two_permutation_selection`) form one cycle and determine the whole rank-r image.
* **With an embedding computed from the whole image** (the existence reading): storing A_I and B_{pi(I)} in the
  token of patch (I, pi(I)) needs 2 r N_c <= d = N_c^2 numbers, i.e. r <= N_c / 2, and reconstructs the best rank-r
  approximation exactly (:func:`factor_embedding` / :func:`factor_reconstruct`); the permutation is what gives every
  patch-row and every patch-column one token. The constant C is then 1 in any norm.

Unrecoverable patches are filled with the mean of the selected pixels (stated where errors are reported).
"""

from __future__ import annotations

from collections import deque

import numpy as np

from maelab._validate import ParameterError, positive_int

#: How the visible patches are selected (see :func:`selection`).
SELECTIONS = ("permutation", "uniform", "two_permutations")


# ------------------------------------------------------------------------------------------------------- images
def low_rank_image(size: int, r: int, seed: int = 0, kind: str = "random", modes: int = 16) -> np.ndarray:
    """An exactly rank-r (size x size) float64 image with unit RMS, u = F G^T with F, G in R^{size x r}.

    ``kind="random"``: iid Gaussian factors (every N_c x N_c block generically well conditioned at rank r <= N_c);
    ``"smooth"``: each factor column a smooth random trigonometric polynomial of ``modes`` terms with 1/(1+k)
    decaying coefficients (a BV image; its blocks become ill-conditioned when r approaches ``modes``).
    """
    positive_int("size", size)
    positive_int("r", r)
    if kind not in ("random", "smooth"):
        raise ParameterError("kind", "'random' or 'smooth'", kind)
    if r > size:
        raise ParameterError("r", f"at most size={size}", r)
    rng = np.random.default_rng([seed, r, size])
    t = (np.arange(size) + 0.5) / size
    k = np.arange(modes)

    def factor():
        if kind == "random":
            return rng.standard_normal((size, r))
        c = rng.standard_normal((r, modes)) / (1.0 + k)
        ph = rng.uniform(0, 2 * np.pi, (r, modes))
        return (c[:, :, None] * np.cos(np.pi * k[None, :, None] * t + ph[:, :, None])).sum(1).T

    u = factor() @ factor().T
    return u / np.sqrt((u**2).mean())


def truncate_rank(img: np.ndarray, r: int) -> tuple[np.ndarray, float]:
    """(best rank-r approximation, relative Frobenius error eps) via the SVD."""
    img = _image(img)
    positive_int("r", r)
    u, s, vt = np.linalg.svd(img)
    out = (u[:, :r] * s[:r]) @ vt[:r]
    return out, float(np.linalg.norm(img - out) / np.linalg.norm(img))


def _image(img) -> np.ndarray:
    img = np.asarray(img, dtype=np.float64)
    if img.ndim != 2 or img.shape[0] != img.shape[1]:
        raise ParameterError("img", "a square 2-D array (N, N)", img.shape)
    return img


# --------------------------------------------------------------------------------------------------- selections
def permutation_selection(n: int, seed: int = 0) -> np.ndarray:
    """(n, n) bool patch mask with one selected patch per patch-row, whose columns are a random permutation."""
    positive_int("n", n)
    sel = np.zeros((n, n), dtype=bool)
    sel[np.arange(n), np.random.default_rng([seed, 1]).permutation(n)] = True
    return sel


def uniform_selection(n: int, count: int, seed: int = 0) -> np.ndarray:
    """(n, n) bool mask of ``count`` patches drawn uniformly without replacement."""
    positive_int("n", n)
    positive_int("count", count)
    if count > n * n:
        raise ParameterError("count", f"at most n^2={n * n}", count)
    sel = np.zeros(n * n, dtype=bool)
    sel[np.random.default_rng([seed, 2]).choice(n * n, count, replace=False)] = True
    return sel.reshape(n, n)


def two_permutation_selection(n: int, seed: int = 0) -> np.ndarray:
    """Patches (I, pi(I)) and (I, pi(I + 1 mod n)): two interleaved permutations, 2n patches (n >= 2) forming one
    cycle through every patch-row and -column."""
    positive_int("n", n)
    perm = np.random.default_rng([seed, 1]).permutation(n)
    sel = np.zeros((n, n), dtype=bool)
    sel[np.arange(n), perm] = True
    sel[np.arange(n), perm[(np.arange(n) + 1) % n]] = True
    return sel


def selection(kind: str, n: int, seed: int = 0, count: int | None = None) -> np.ndarray:
    """``kind`` in :data:`SELECTIONS`; ``uniform`` draws ``count`` patches (default n, as many as a permutation)."""
    if kind == "permutation":
        return permutation_selection(n, seed)
    if kind == "uniform":
        return uniform_selection(n, n if count is None else count, seed)
    if kind == "two_permutations":
        return two_permutation_selection(n, seed)
    raise ParameterError("kind", "one of " + ", ".join(map(repr, SELECTIONS)), kind)


def _check_sel(sel) -> np.ndarray:
    sel = np.asarray(sel)
    if sel.ndim != 2 or sel.shape[0] != sel.shape[1] or sel.dtype != bool or not sel.any():
        raise ParameterError("sel", "a square boolean patch mask with at least one True", getattr(sel, "shape", sel))
    return sel


def components(sel) -> list[tuple[list[int], list[int]]]:
    """Connected components (patch-rows, patch-columns) of the bipartite selection graph (rows/columns without a
    selected patch are left out)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    sel = _check_sel(sel)
    n = sel.shape[0]
    i, j = np.nonzero(sel)
    graph = csr_matrix((np.ones(len(i)), (i, n + j)), shape=(2 * n, 2 * n))
    _, lab = connected_components(graph, directed=False)
    out = []
    for c in np.unique(lab[np.r_[i, n + j]]):
        nodes = np.nonzero(lab == c)[0]
        out.append(([int(v) for v in nodes if v < n], [int(v) - n for v in nodes if v >= n]))
    return out


def recoverable_fraction(sel) -> float:
    """Fraction of patches determined by the selected ones for a generic rank-r image with r <= N_c:
    sum over components of ``|rows| * |columns|``, over n^2."""
    sel = _check_sel(sel)
    return sum(len(r) * len(c) for r, c in components(sel)) / sel.size


# ----------------------------------------------------------------------------------------------- reconstruction
def _block(u: np.ndarray, i: int, j: int, nc: int) -> np.ndarray:
    return u[i * nc : (i + 1) * nc, j * nc : (j + 1) * nc]


def _paths(sel: np.ndarray, start: int) -> dict[int, int]:
    """BFS predecessors from patch-row ``start`` in the bipartite graph (rows 0..n-1, columns n..2n-1)."""
    n = sel.shape[0]
    pred, queue = {start: -1}, deque([start])
    while queue:
        v = queue.popleft()
        nbrs = (n + np.nonzero(sel[v])[0]) if v < n else np.nonzero(sel[:, v - n])[0]
        for w in map(int, nbrs):
            if w not in pred:
                pred[w] = v
                queue.append(w)
    return pred


def block_cur(img, sel, patch: int, rank: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Reconstruct ``img`` from its selected patches alone by the block CUR formula along shortest paths.

    ``patch`` is N_c; ``rank`` truncates each link pseudo-inverse to that rank (None: numpy's default cut-off).
    Returns (reconstruction, known) with ``known`` the (n, n) bool mask of determined patches; undetermined patches
    are filled with the mean of the selected pixels.
    """
    img, sel = _image(img), _check_sel(sel)
    positive_int("patch", patch)
    n = sel.shape[0]
    if n * patch != img.shape[0]:
        raise ParameterError("patch", f"img side / n = {img.shape[0]} / {n}", patch)

    def pinv(m):
        if rank is None:
            return np.linalg.pinv(m)
        u, s, vt = np.linalg.svd(m)
        k = min(rank, int((s > s[0] * 1e-12).sum()))
        return (vt[:k].T / s[:k]) @ u[:, :k].T

    fill = float(np.mean([_block(img, i, j, patch).mean() for i, j in zip(*np.nonzero(sel))]))
    out = np.full_like(img, fill)
    known = np.zeros_like(sel)
    for i in range(n):
        pred = _paths(sel, i)
        for j in range(n):
            if n + j not in pred:
                continue
            nodes = [n + j]
            while nodes[-1] != i:
                nodes.append(pred[nodes[-1]])
            nodes = nodes[::-1]  # i, c0, r1, c1, ..., rk, ck = j (columns offset by n)
            m = _block(img, nodes[0], nodes[1] - n, patch)
            for a in range(2, len(nodes), 2):
                r_, c_prev, c_next = nodes[a], nodes[a - 1] - n, nodes[a + 1] - n
                m = m @ pinv(_block(img, r_, c_prev, patch)) @ _block(img, r_, c_next, patch)
            out[i * patch : (i + 1) * patch, j * patch : (j + 1) * patch] = m
            known[i, j] = True
    return out, known


def relative_errors(img, rec, known, patch: int) -> dict[str, float]:
    """Relative Frobenius errors: ``all`` (whole image), ``known`` (determined patches), ``unknown`` (the rest;
    nan when every patch is determined)."""
    img, rec = _image(img), _image(rec)
    pix = np.kron(np.asarray(known, dtype=bool), np.ones((patch, patch), dtype=bool))
    out = {"all": float(np.linalg.norm(rec - img) / np.linalg.norm(img))}
    for name, m in (("known", pix), ("unknown", ~pix)):
        out[name] = float(np.linalg.norm((rec - img)[m]) / np.linalg.norm(img[m])) if m.any() else float("nan")
    return out


def nonunique_witness(img, sel, patch: int, r: int, scale: float = 2.0) -> np.ndarray:
    """A second image of rank <= r equal to the rank-r ``img`` on every selected patch: A -> s A and B -> B / s on
    the patch-rows / -columns of the first component. It differs from ``img`` on patches linking that component to
    the rest, so no method can recover those from the selected patches."""
    img, sel = _image(img), _check_sel(sel)
    u, s, vt = np.linalg.svd(img)
    a, b = u[:, :r] * s[:r], vt[:r].T.copy()
    a = a.copy()
    rows, cols = components(sel)[0]
    for i in rows:
        a[i * patch : (i + 1) * patch] *= scale
    for j in cols:
        b[j * patch : (j + 1) * patch] /= scale
    return a @ b.T


def identifiability_deficiency(sel, patch: int, r: int, seed: int = 0) -> int:
    """Directions of the rank-r manifold at a random point u = A B^T that the selected pixels do not see:
    (2 N r - r^2) - rank of (dA, dB) -> (dA B^T + A dB^T) restricted to the selected pixels."""
    sel = _check_sel(sel)
    positive_int("r", r)
    size = sel.shape[0] * patch
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((size, r)), rng.standard_normal((size, r))
    pix = np.nonzero(np.kron(sel, np.ones((patch, patch), dtype=bool)).reshape(-1))[0]
    rows, cols = np.divmod(pix, size)
    jac = np.zeros((len(pix), 2 * size * r))
    for k in range(r):
        jac[np.arange(len(pix)), rows * r + k] = b[cols, k]  # d/dA[row, k]
        jac[np.arange(len(pix)), size * r + cols * r + k] = a[rows, k]  # d/dB[col, k]
    rank = np.linalg.matrix_rank(jac)
    return int(2 * size * r - r * r - rank)


# ------------------------------------------------------------------------------------------- existence reading
def factor_embedding(img, sel, patch: int, r: int) -> np.ndarray:
    """Tokens y (p, N_c^2) for a permutation selection: token of patch (I, pi(I)) stores A_I and B_pi(I) of the best
    rank-r factorisation (A = U S, B = V), zero-padded; needs 2 r <= N_c (``r`` columns each of N_c rows)."""
    img, sel = _image(img), _check_sel(sel)
    if not (sel.sum(0) == 1).all() or not (sel.sum(1) == 1).all():
        raise ParameterError("sel", "a permutation selection (one patch per patch-row and per patch-column)", sel.sum())
    if 2 * r > patch:
        raise ParameterError("r", f"at most N_c / 2 = {patch // 2} (2 r N_c numbers per token of N_c^2)", r)
    u, s, vt = np.linalg.svd(img)
    a, b = u[:, :r] * s[:r], vt[:r].T
    y = np.zeros((sel.shape[0], patch * patch))
    for i, j in zip(*np.nonzero(sel)):
        y[i, : patch * r] = a[i * patch : (i + 1) * patch].reshape(-1)
        y[i, patch * r : 2 * patch * r] = b[j * patch : (j + 1) * patch].reshape(-1)
    return y


def factor_reconstruct(y, sel, patch: int, r: int) -> np.ndarray:
    """R(y) = A B^T from the tokens of :func:`factor_embedding` (rank <= r by construction)."""
    sel = _check_sel(sel)
    n = sel.shape[0]
    a, b = np.zeros((n * patch, r)), np.zeros((n * patch, r))
    for i, j in zip(*np.nonzero(sel)):
        a[i * patch : (i + 1) * patch] = y[i, : patch * r].reshape(patch, r)
        b[j * patch : (j + 1) * patch] = y[i, patch * r : 2 * patch * r].reshape(patch, r)
    return a @ b.T


# ------------------------------------------------------------------------------------------------------ study
def selection_study(
    images: dict[str, list[np.ndarray]],
    n: int,
    ranks,
    kinds=SELECTIONS,
    draws: int = 4,
    seed: int = 0,
    truncate: bool = True,
) -> list[dict]:
    """For every image (dict: name -> list of (N, N) arrays, N = n N_c), rank r, selection kind and draw: the
    recoverable fraction and block-CUR errors (link pseudo-inverses truncated to rank r). ``truncate``: the image is
    first replaced by its best rank-r approximation (eps = 0 for the reconstruction target); False: the original
    image is reconstructed and compared with itself, so err / eps estimates C(r, N_c, p). One dict per row."""
    rows = []
    for name, imgs in images.items():
        for idx, img in enumerate(imgs):
            img = _image(img)
            patch = img.shape[0] // n
            for r in ranks:
                u, eps = truncate_rank(img, int(r))
                u = u if truncate else img
                for kind in kinds:
                    for d in range(draws):
                        sel = selection(kind, n, seed=seed + 1000 * idx + d)
                        rec, known = block_cur(u, sel, patch, rank=int(r))
                        err = relative_errors(u, rec, known, patch)
                        rows.append(
                            {
                                "images": name,
                                "image": idx,
                                "N_c": patch,
                                "r": int(r),
                                "eps": eps,
                                "truncated": truncate,
                                "selection": kind,
                                "draw": d,
                                "patches": int(sel.sum()),
                                "recoverable": recoverable_fraction(sel),
                                **{f"err_{k}": v for k, v in err.items()},
                            }
                        )
    return rows
