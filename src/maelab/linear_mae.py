"""Linear masked autoencoders and their closed form (Bisulco et al. 2025, supplement A and Lemma 1).

**General library, not a paper module:** the linear MAE, its exact expected loss and its closed-form optimum are
a model that several papers analyse (Bisulco et al.'s Theorem 1 here; the Kong et al. part uses the same closed
form on a different data model), and the linear DAE beside it is the standard baseline. What is specific to one
paper's argument (Bisulco's Lemmas 4-6, the Taylor and function-space views of a *nonlinear* autoencoder) lives in
:mod:`maelab.papers.bisulco2025.taylor`.

Model and conventions
---------------------
Data are the rows of ``X`` (n, d): each sample is a row vector ``x`` of dimension d. The pixels of x are grouped
into patches by an integer array ``patches`` (length d, ``patches[i]`` = patch id of pixel i); use
:func:`patch_index_1d` (contiguous blocks of p pixels) or :func:`patch_index_2d` (p x p blocks of an H x W image
flattened row-major). An ``int`` p is accepted everywhere as shorthand for ``patch_index_1d(d, p)``.

A mask ``R`` (n, d) has ``R[s, i] = 1`` when pixel i of sample s is **kept** (visible) and 0 when it is removed
(note: the opposite of the ``mask = 1 = removed`` convention of the ViT models, because here R multiplies the
input). All pixels of a patch share the patch's fate. The linear MAE predicts every pixel (masked and visible)
from the masked input::

    prediction = (R * X) @ A @ B        A: (d, k) encoder,  B: (k, d) decoder
    loss       = E_R || X - (R * X) A B ||_F^2          (a SUM over samples and pixels, as in the paper)

Two mask distributions are supported (``mask_mode``):

* ``"bernoulli"`` (the paper's Lemma 1): every patch of every sample is kept independently with probability 1-m.
* ``"fixed"`` (MAE-style): every sample keeps exactly K = int(P (1-m)) of its P patches, uniformly at random.

Closed form implemented here (derived below; it reduces exactly to the paper's statement for Bernoulli masks)
--------------------------------------------------------------------------------------------------------------
Let S = X^T X, Blk = Blkdiag_p(S) (S with entries between pixels of different patches set to zero),
q = P(a patch is kept) and rho = P(patch j kept | patch i kept), for i != j. Then
E[R*X] = q X and E[(R*X)^T (R*X)] = q (rho S + (1 - rho) Blk) = q V, with

    V = rho S + (1 - rho) Blk.

For Bernoulli masks q = rho = 1 - m, so V = (1-m) X^T X + m Blkdiag_p(X^T X): the paper's V, and the second moment
(1-m)^2 S + m(1-m) Blk of Lemma 1. For fixed-count masks q = K/P and rho = (K-1)/(P-1).

Expected loss (Lemma 1):  l(A, B) = Tr S - 2 q Tr(S A B) + q Tr(B^T A^T V A B).
Completing the square with W = AB:  l = Tr S - q Tr(C) + q || V^{1/2} W - V^{-1/2} S ||_F^2,  C = S V^{-1} S.
By Eckart-Young the best W of rank <= k keeps the top-k right singular directions of V^{-1/2} S, i.e. the top-k
eigenvectors U_k of the symmetric matrix C, so (Theorem 1, with the paper's D = I):

    C = X^T X V^{-1} X^T X,   B* = U_k^T (decoder rows span the top-k eigenvectors of C),
    A* = V^{-1} X^T X B*^T (B* B*^T)^{-1} = V^{-1} S U_k          (paper eq. 14),
    min loss = Tr(X^T X) - q * sum_{i <= k} lambda_i(C)          (q = 1 - m for Bernoulli masks).

This matches the supplement's statement (C = X^T X V^{-1} X^T X, loss Tr(X^T X) - (1-m) Tr[B C B^T (B B^T)^-1],
maximised by the top-k eigenvectors of the (C, I) generalised eigenproblem), so no correction is needed. Two
remarks: (i) the intermediate line of the paper's proof of Lemma 1 writes "(1-m)^2 X^T X" where it means
(1-m)^2 B^T A^T X^T X A B; the lemma's final expression is right. (ii) The lemma assumes *independent* Bernoulli
masks; for MAE's fixed-count masks the same theorem holds with q = K/P and V = rho S + (1-rho) Blk as above.
The optimum is unique only up to W = A B (any invertible k x k Q gives A Q, Q^-1 B); compare subspaces with
:func:`principal_angles`. With m = 0 (no masking) V = S, C = S^2 / S = S and the solution is PCA of X^T X.

V is inverted with a symmetric pseudo-inverse, which is exact when X^T X is invertible (n >= d, full column rank)
and still correct otherwise because range(S) lies in range(V).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ._util import blas_limit, pbar
from ._validate import ParameterError, in_range, is_bool, one_of, positive_int
from .metrics import mean_sem
from .options import DryRunLimits, cap

__all__ = [
    "ClosedForm",
    "LinearMAEFit",
    "blkdiag",
    "closed_form",
    "closed_forms",
    "dae_closed_form",
    "dae_closed_forms",
    "dae_expected_loss",
    "expected_loss",
    "mae_matrices",
    "mask_moments",
    "patch_index_1d",
    "patch_index_2d",
    "principal_angles",
    "sample_masks",
    "sampled_loss",
    "second_moment",
    "train_linear_mae",
]

MASK_MODES = ("bernoulli", "fixed")


# ----------------------------------------------------------------------------------------------------------------
# patches
# ----------------------------------------------------------------------------------------------------------------
def patch_index_1d(d: int, p: int) -> np.ndarray:
    """Patch id of each of the d pixels of a 1-D signal cut into contiguous patches of p pixels: ``i // p``."""
    positive_int("d", d)
    positive_int("p", p)
    if d % p:
        raise ParameterError("p", f"a positive divisor of d={d}", p)
    return np.arange(d) // p


def patch_index_2d(height: int, width: int, p: int) -> np.ndarray:
    """Patch id of each pixel of an H x W image flattened row-major (pixel (r, c) is entry ``r * W + c``).

    Patches are p x p blocks numbered row-major: pixel (r, c) is in patch ``(r // p) * (W // p) + c // p``.
    """
    positive_int("height", height)
    positive_int("width", width)
    positive_int("p", p)
    if height % p or width % p:
        raise ParameterError("p", f"a positive divisor of height={height} and width={width}", p)
    r, c = np.divmod(np.arange(height * width), width)
    return (r // p) * (width // p) + c // p


def _patches(patches: Any, d: int) -> tuple[np.ndarray, int]:
    """Validate ``patches`` (int p or array of d patch ids); return (ids relabelled 0..P-1, P)."""
    if isinstance(patches, (int, np.integer)) and not isinstance(patches, bool):
        ids = patch_index_1d(d, int(patches))
    else:
        ids = np.asarray(patches)
        if ids.ndim != 1 or ids.shape[0] != d or not np.issubdtype(ids.dtype, np.integer):
            raise ParameterError(
                "patches", f"an int patch size or an integer array of length d={d}", getattr(ids, "shape", patches)
            )
    _, ids = np.unique(ids, return_inverse=True)
    return ids.reshape(-1), int(ids.max()) + 1


def _data(X: Any) -> np.ndarray:
    X = np.asarray(X.detach().cpu() if hasattr(X, "detach") else X, dtype=np.float64)
    if X.ndim != 2 or not np.all(np.isfinite(X)):
        raise ParameterError("X", "a finite 2-D array (n samples, d pixels)", getattr(X, "shape", X))
    return X


def _ratio(m: Any) -> float:
    return in_range("m", m, 0.0, 1.0, high_open=True)


def blkdiag(S: np.ndarray, patches: Any) -> np.ndarray:
    """Blkdiag_p(S): S with every entry between pixels of different patches set to 0."""
    S = np.asarray(S, dtype=np.float64)
    ids, _ = _patches(patches, S.shape[0])
    return S * (ids[:, None] == ids[None, :])


def mask_moments(m: float, num_patches: int, mask_mode: str = "bernoulli") -> tuple[float, float]:
    """(q, rho): q = P(a patch is kept), rho = P(patch j kept | patch i kept) for two different patches.

    Bernoulli: q = rho = 1 - m. Fixed count K = int(P (1 - m)): q = K / P, rho = (K - 1) / (P - 1).
    """
    m = _ratio(m)
    one_of("mask_mode", mask_mode, MASK_MODES)
    positive_int("num_patches", num_patches)
    if mask_mode == "bernoulli":
        return 1.0 - m, 1.0 - m
    keep = int(num_patches * (1 - m))
    if keep < 1:
        raise ParameterError("m", f"small enough that int(P*(1-m)) >= 1 patch is kept (P={num_patches})", m)
    rho = (keep - 1) / (num_patches - 1) if num_patches > 1 else 1.0
    return keep / num_patches, rho


def second_moment(X: Any, m: float, patches: Any, mask_mode: str = "bernoulli") -> np.ndarray:
    """E[(R*X)^T (R*X)] = q (rho X^T X + (1 - rho) Blkdiag_p(X^T X)); Bernoulli: (1-m)^2 S + m(1-m) Blk."""
    X = _data(X)
    ids, num = _patches(patches, X.shape[1])
    q, rho = mask_moments(m, num, mask_mode)
    S = X.T @ X
    return q * (rho * S + (1 - rho) * blkdiag(S, ids))


def expected_loss(X: Any, A: Any, B: Any, m: float, patches: Any, mask_mode: str = "bernoulli") -> float:
    """Lemma 1: E_R ||X - (R*X) A B||_F^2 = Tr S - 2 q Tr(S A B) + Tr(B^T A^T E[(R*X)^T(R*X)] A B).

    For Bernoulli masks this equals ||X - (1-m) X A B||^2 + m (1-m) ||G A B||^2 with G^T G = Blkdiag_p(X^T X).
    A: (d, k), B: (k, d). The loss is a sum over the n samples.
    """
    X = _data(X)
    A, B = _factors(A, B, X.shape[1])
    ids, num = _patches(patches, X.shape[1])
    q, _ = mask_moments(m, num, mask_mode)
    S = X.T @ X
    W = A @ B
    M2 = second_moment(X, m, ids, mask_mode)
    return float(np.trace(S) - 2 * q * np.trace(S @ W) + np.trace(W.T @ M2 @ W))


def _factors(A: Any, B: Any, d: int) -> tuple[np.ndarray, np.ndarray]:
    A = np.asarray(A.detach().cpu() if hasattr(A, "detach") else A, dtype=np.float64)
    B = np.asarray(B.detach().cpu() if hasattr(B, "detach") else B, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != d:
        raise ParameterError("A", f"a (d={d}, k) encoder matrix", A.shape)
    if B.ndim != 2 or B.shape != (A.shape[1], d):
        raise ParameterError("B", f"a (k={A.shape[1]}, d={d}) decoder matrix", B.shape)
    return A, B


def sample_masks(
    n: int,
    patches: Any,
    m: float,
    *,
    d: int | None = None,
    mask_mode: str = "bernoulli",
    rng: np.random.Generator | int | None = 0,
    draws: int | None = None,
) -> np.ndarray:
    """Keep-masks R (n, d) (or (draws, n, d)) with 1 = kept pixel; every pixel of a patch shares its fate.

    ``"bernoulli"``: each (sample, patch) kept independently with probability 1 - m. ``"fixed"``: each sample keeps
    exactly int(P (1 - m)) patches chosen uniformly (argsort of uniform noise, as in MAE).
    """
    positive_int("n", n)
    if d is None:
        if isinstance(patches, (int, np.integer)):
            raise ParameterError("d", "given when patches is an int patch size", d)
        d = len(patches)
    ids, num = _patches(patches, d)
    m = _ratio(m)
    one_of("mask_mode", mask_mode, MASK_MODES)
    rng = np.random.default_rng(rng)
    shape = (n, num) if draws is None else (positive_int("draws", draws), n, num)
    if mask_mode == "bernoulli":
        keep = rng.random(shape) < (1 - m)
    else:
        k = int(num * (1 - m))
        mask_moments(m, num, mask_mode)  # validates k >= 1
        ranks = np.argsort(np.argsort(rng.random(shape), axis=-1), axis=-1)
        keep = ranks < k
    return keep[..., ids].astype(np.float64)


def sampled_loss(
    X: Any,
    A: Any,
    B: Any,
    m: float,
    patches: Any,
    *,
    draws: int = 1,
    mask_mode: str = "bernoulli",
    rng: np.random.Generator | int | None = 0,
    return_se: bool = False,
):
    """Monte-Carlo estimate of E_R ||X - (R*X) A B||_F^2 from ``draws`` independent masks of all n samples.

    Returns the mean (and, with ``return_se=True``, its standard error over the draws).
    """
    X = _data(X)
    A, B = _factors(A, B, X.shape[1])
    is_bool("return_se", return_se)
    R = sample_masks(X.shape[0], patches, m, d=X.shape[1], mask_mode=mask_mode, rng=rng, draws=draws)
    W = A @ B
    per_draw = ((X[None] - (R * X[None]) @ W) ** 2).sum(axis=(1, 2))
    mean, se = mean_sem(per_draw)
    return (mean, se) if return_se else mean


# ----------------------------------------------------------------------------------------------------------------
# closed form
# ----------------------------------------------------------------------------------------------------------------
class ClosedForm(NamedTuple):
    """Optimal rank-k linear MAE, unpacks as ``A, B, min_loss, eigvals``: ``A`` (d, k) = V^+ S U_k, ``B`` (k, d) =
    U_k^T (orthonormal rows), ``min_loss`` = Tr S - q sum_{i<=k} eigvals[i], ``eigvals`` (d,) = eigenvalues of
    C = S V^+ S in descending order. V, C and q come from :func:`mae_matrices`."""

    A: np.ndarray
    B: np.ndarray
    min_loss: float
    eigvals: np.ndarray


def mae_matrices(X: Any, m: float, patches: Any, mask_mode: str = "bernoulli") -> dict[str, Any]:
    """The matrices of the closed form: S = X^T X, Blk = Blkdiag_p(S), q, rho (:func:`mask_moments`),
    V = rho S + (1 - rho) Blk (Bernoulli: (1-m) S + m Blk) and C = S V^+ S (symmetrised)."""
    X = _data(X)
    ids, num = _patches(patches, X.shape[1])
    q, rho = mask_moments(m, num, mask_mode)
    S = X.T @ X
    blk = blkdiag(S, ids)
    V = rho * S + (1 - rho) * blk
    V_pinv = np.linalg.pinv(V, hermitian=True)
    C = S @ V_pinv @ S
    return {"S": S, "Blk": blk, "q": q, "rho": rho, "V": V, "V_pinv": V_pinv, "C": (C + C.T) / 2}


def closed_form(X: Any, m: float, patches: Any, k: int, mask_mode: str = "bernoulli") -> ClosedForm:
    """Global minimiser of the expected linear-MAE loss over encoders A (d, k) and decoders B (k, d).

    See the module docstring for the statement and derivation. Returns ``(A, B, min_loss, eigvals)``.
    """
    return closed_forms(X, m, patches, [k], mask_mode)[0]


def closed_forms(X: Any, m: float, patches: Any, ks: Sequence[int], mask_mode: str = "bernoulli") -> list[ClosedForm]:
    """:func:`closed_form` at every rank in ``ks`` from one eigendecomposition (the rank only selects how many
    eigenvectors are kept): the same numbers as one :func:`closed_form` call per rank, at the cost of one."""
    X = _data(X)
    d = X.shape[1]
    ks = _ranks(ks, d)
    mats = mae_matrices(X, m, patches, mask_mode)
    evals, evecs = np.linalg.eigh(mats["C"])
    order = np.argsort(evals)[::-1]
    evals, evecs = evals[order], evecs[:, order]
    out = []
    for k in ks:
        U = evecs[:, :k]
        A = mats["V_pinv"] @ mats["S"] @ U
        B = U.T.copy()
        min_loss = float(np.trace(mats["S"]) - mats["q"] * evals[:k].sum())
        out.append(ClosedForm(A, B, min_loss, evals))
    return out


def _ranks(ks: Any, d: int) -> list[int]:
    if isinstance(ks, (str, bytes)) or not isinstance(ks, Sequence) or not ks:
        raise ParameterError("ks", "a non-empty sequence of ranks", ks)
    for k in ks:
        positive_int("k", k)
        if k > d:
            raise ParameterError("k", f"an integer in [1, d={d}]", k)
    return list(ks)


def principal_angles(U: Any, V: Any, degrees: bool = False) -> np.ndarray:
    """Principal angles between the column spans of U (d, a) and V (d, b), largest first (scipy)."""
    from scipy.linalg import subspace_angles

    U = np.asarray(U, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    if U.ndim != 2 or V.ndim != 2 or U.shape[0] != V.shape[0]:
        raise ParameterError("U, V", "2-D arrays with the same number of rows", (U.shape, V.shape))
    ang = subspace_angles(U, V)
    return np.degrees(ang) if degrees else ang


# ----------------------------------------------------------------------------------------------------------------
# training by gradient descent
# ----------------------------------------------------------------------------------------------------------------
@dataclass
class LinearMAEFit:
    """Result of :func:`train_linear_mae`: encoder A (d, k), decoder B (k, d), and ``history`` of
    {"step", "expected_loss"} dicts (the exact Lemma-1 loss of the current A, B, summed over samples)."""

    A: np.ndarray
    B: np.ndarray
    history: list[dict] = field(default_factory=list)

    @property
    def final_loss(self) -> float:
        return self.history[-1]["expected_loss"]


def train_linear_mae(
    X: Any,
    m: float,
    patches: Any,
    k: int,
    steps: int = 2000,
    lr: float = 1e-2,
    seed: int = 0,
    *,
    objective: str = "sampled",
    batch_size: int | None = None,
    mask_mode: str = "bernoulli",
    init_scale: float = 0.1,
    cosine: bool = True,
    record_every: int = 50,
    init: tuple[Any, Any] | None = None,
    progress: bool | None = None,
    caps: DryRunLimits | None = None,
) -> LinearMAEFit:
    """Fit A, B with Adam (float64, CPU) and return a :class:`LinearMAEFit`.

    ``objective="sampled"`` draws fresh masks every step for a minibatch (``batch_size`` rows, default all) and
    minimises the per-sample mean of ||x - (r*x) A B||^2; ``objective="expected"`` minimises the exact Lemma-1
    loss divided by n (full-batch gradient descent on the expectation). The learning rate follows a cosine decay
    to 0 when ``cosine``. Everything (init, masks, minibatches) is drawn from ``seed``. ``init=(A, B)`` starts
    from given factors instead of the random ``init_scale`` Gaussian (e.g. to polish a sampled-mask fit with the
    exact expected-loss gradient). In a dry run (``caps``: its :class:`maelab.options.DryRunLimits`) at most
    ``train_steps`` steps are made.
    """
    import torch

    X = _data(X)
    n, d = X.shape
    ids, num = _patches(patches, d)
    q, rho = mask_moments(m, num, mask_mode)
    positive_int("k", k)
    steps = cap(positive_int("steps", steps), caps, "train_steps")  # a dry run: a couple of steps
    in_range("lr", lr, 0.0, None, low_open=True)
    one_of("objective", objective, ("sampled", "expected"))
    positive_int("record_every", record_every)
    bs = n if batch_size is None else positive_int("batch_size", batch_size)
    if bs > n:
        raise ParameterError("batch_size", f"an integer in [1, n={n}]", batch_size)

    gen = torch.Generator().manual_seed(int(seed))
    rng = np.random.default_rng(seed)
    Xt = torch.as_tensor(X, dtype=torch.float64)
    S = Xt.T @ Xt
    idt = torch.as_tensor(ids)
    blk = S * (idt[:, None] == idt[None, :])
    V = rho * S + (1 - rho) * blk
    trS = torch.trace(S)

    A = init_scale * torch.randn(d, k, dtype=torch.float64, generator=gen)
    B = init_scale * torch.randn(k, d, dtype=torch.float64, generator=gen)
    if init is not None:
        if not isinstance(init, (tuple, list)) or len(init) != 2:
            raise ParameterError("init", "None or a pair (A, B)", type(init).__name__)
        A0, B0 = _factors(init[0], init[1], d)
        if A0.shape[1] != k:
            raise ParameterError("init", f"factors of rank k={k}", A0.shape)
        A, B = torch.as_tensor(A0.copy()), torch.as_tensor(B0.copy())
    A, B = A.requires_grad_(True), B.requires_grad_(True)
    opt = torch.optim.Adam([A, B], lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps) if cosine else None

    def exact(A_, B_):
        W = A_ @ B_
        return trS - 2 * q * torch.trace(S @ W) + q * torch.trace(W.T @ V @ W)

    history = []
    for step in pbar(range(steps), progress=progress, desc="linear MAE", leave=False):
        opt.zero_grad(set_to_none=True)
        if objective == "expected":
            loss = exact(A, B) / n
        else:
            rows = torch.as_tensor(rng.choice(n, size=bs, replace=False)) if bs < n else slice(None)
            xb = Xt[rows]
            R = torch.as_tensor(sample_masks(xb.shape[0], ids, m, d=d, mask_mode=mask_mode, rng=rng))
            loss = ((xb - (R * xb) @ A @ B) ** 2).sum() / xb.shape[0]
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if step % record_every == 0 or step == steps - 1:
            with torch.no_grad():
                history.append({"step": step + 1, "expected_loss": float(exact(A, B))})
    return LinearMAEFit(A.detach().numpy().copy(), B.detach().numpy().copy(), history)


# ----------------------------------------------------------------------------------------------------------------
# linear denoising autoencoder (Gaussian noise): the baseline beside the MAE
# ----------------------------------------------------------------------------------------------------------------
def dae_expected_loss(X: Any, A: Any, B: Any, sigma: float) -> float:
    """E_N ||X - (X + sigma N) A B||_F^2 with N i.i.d. standard normal (n, d) = ||X - XAB||^2 + n sigma^2 ||AB||^2."""
    X = _data(X)
    A, B = _factors(A, B, X.shape[1])
    sigma = in_range("sigma", sigma, 0.0)
    W = A @ B
    return float(((X - X @ W) ** 2).sum() + X.shape[0] * sigma**2 * (W**2).sum())


def dae_closed_form(X: Any, sigma: float, k: int) -> ClosedForm:
    """Global minimiser of :func:`dae_expected_loss` over rank-k A (d, k), B (k, d).

    The loss is Tr S - 2 Tr(S W) + Tr(W^T V W) with V = S + n sigma^2 I, the same form as the MAE's with q = 1, so
    the same completion of the square gives B = U_k^T (top-k eigenvectors of C = S V^-1 S), A = V^-1 S U_k and
    min loss = Tr S - sum_{i<=k} lambda_i(C). V commutes with S, so U_k are the top-k principal directions and
    W = AB = U_k diag(s_i / (s_i + n sigma^2)) U_k^T: PCA with Wiener shrinkage; with k = d, W = V^-1 S is ridge
    regression of X on itself. sigma = 0 is the plain AE (PCA) and needs X of full column rank (V = S invertible).

    Algorithm: V^-1 S by ``np.linalg.solve`` (an LU solve, no explicit inverse: the numerically better of the two
    versions this project had, see ``tests/test_linear_mae.py``), then ``eigh`` of the symmetrised C, with the
    BLAS pool limited to one thread (``maelab._util.blas_limit``; small eigendecompositions are much slower
    with several threads on a busy machine, and the stored results were computed so).
    """
    return dae_closed_forms(X, sigma, [k])[0]


def dae_closed_forms(X: Any, sigma: float, ks: Sequence[int]) -> list[ClosedForm]:
    """:func:`dae_closed_form` at every rank in ``ks`` from one eigendecomposition: the same numbers as one call
    per rank, at the cost of one."""
    X = _data(X)
    n, d = X.shape
    sigma = in_range("sigma", sigma, 0.0)
    ks = _ranks(ks, d)
    with blas_limit(1):
        if sigma == 0 and np.linalg.matrix_rank(X) < d:
            raise ParameterError("sigma", f"> 0 when X has rank < d={d} (X^T X is then singular)", sigma)
        S = X.T @ X
        V = S + n * sigma**2 * np.eye(d)
        VinvS = np.linalg.solve(V, S)
        C = S @ VinvS
        evals, evecs = np.linalg.eigh((C + C.T) / 2)
        order = np.argsort(evals)[::-1]
        evals = evals[order]
        out = []
        for k in ks:
            U = evecs[:, order[:k]]
            A = VinvS @ U
            out.append(ClosedForm(A, U.T.copy(), float(np.trace(S) - evals[:k].sum()), evals))
    return out
