"""Theorem 5.1 (a) of Cao, Xu & Clifton (2022), computed exactly: softmax attention with W^V = I as a normalised,
translation-invariant, symmetric integral kernel acting on a feature map sampled on an n x n grid.

The setting (paper Sec. 4.1, eq. (10)-(15), Thm. 5.1 and Assumption A.1)
------------------------------------------------------------------------
Patch i sits at x_i on the grid X = {0, 1/n, ..., (n-1)/n}^2 of the unit square (we use the cell centres
(i + 1/2)/n of the same cells, so that grids of n and 3n points nest, see :func:`grid_points`). With the symmetric,
translation-invariant kernel of eq. (11)/(13), kappa(x, x') = K(x - x'), and W^V = I, one attention layer maps the
feature map v (values v(x_i) in R^d) to

    v^{t+1}(x_i) = sum_j A_ij v^t(x_j),   A_ij = K(x_i - x_j) / alpha(x_i),   alpha(x_i) = sum_j K(x_i - x_j)

(row-normalised: the softmax of the logits log K(x_i - x_j); eq. (6), (15)). Theorem 5.1 states
``||v^{t+1} - v^t||_V <= C(gamma, d) / n * (||v^t||_V + |v^t|_BV)`` with V a subset of (L^2(omega, mu))^d.

Which kernel scaling the theorem needs (our reading of the proof, Appendix A)
-----------------------------------------------------------------------------
Assumption (B_3) bounds K(xi) <= C_gamma exp(-gamma ||xi||) with gamma fixed, i.e. a kernel of **fixed width in the
continuum coordinates** of the unit square. Under that scaling the discrete operator converges, as n grows, to the
continuum operator v -> alpha^{-1} int K(x - x') v(x') dx', and ||v^{t+1} - v^t|| converges to the non-zero
||alpha^{-1} K v - v|| of a fixed smoothing: it does **not** decay like 1/n (its log-log slope against n tends to 0).
The proof's step (35) bounds the tail ``int_{||xi|| >= delta/n} |K| 2||v||_inf`` by C/n, which needs the kernel's mass
to sit within O(1/n) of the origin: the 1/n rate holds when the kernel's width is **fixed in grid units** (one
width = a fixed number of patches, i.e. gamma proportional to n for exp(-gamma ||xi||) or to n^2 for the Gaussian).
Then, for a Lipschitz v, ``|v^{t+1}(x) - v^t(x)| <= Lip(v) * sum_j A_ij |x_i - x_j| = O(1/n)`` (first moment of the
kernel), attained at the boundary, where the truncated kernel is not symmetric; in the interior the symmetric kernel
cancels the first-order term and the change is O(1/n^2). Both scalings are implemented (``scaling="grid"`` /
``"continuum"``) so the notebook can show which one gives 1/n. For a discontinuous BV map (an indicator) the change
is O(1) on a band of width O(1/n) around the jump, so the L^2 rate drops to 1/2 and the sup norm does not decay.

Kernels: ``"gaussian"`` K(xi) = exp(-||xi||^2 / (2 w^2)) (the RBF of Sec. 4.1) and ``"laplace"``
K(xi) = exp(-||xi||_1 / w) (the exponential decay of (B_3); the l1 norm keeps it separable and satisfies (B_3)
because ||xi||_1 >= ||xi||_2). Both factorise over the two axes and so does the row normalisation, hence the 2-D
attention matrix is the Kronecker product A = A_1 (x) A_1 of a 1-D one and is applied without forming it. The
``normalisation="none"`` variant drops alpha^{-1} (the unnormalised exp kernel of Thm. 5.1 (b)) and keeps the
quadrature weight 1/n^2 of the integral over the unit square.

Norms (``norms``): ``"l2"``: L^2(omega) with omega the unit square and mu Lebesgue, i.e. sqrt(mean over the grid of
||v(x)||^2); ``"sup"``: max over grid points of ||v(x)||; ``"l1"``: mean of ||v(x)||; ``"l2_interior"``: the L^2
norm over the grid points in the central square [1/4, 3/4]^2 (away from the boundary layer).
"""

from __future__ import annotations

import math

import numpy as np

from maelab._validate import ParameterError, in_range, one_of, positive_int

SCALINGS = ("grid", "continuum")
KERNELS = ("gaussian", "laplace")
NORMALISATIONS = ("softmax", "none")
NORMS = ("l2", "sup", "l1", "l2_interior")
MAP_KINDS = ("smooth", "ramp", "constant", "disk")


def grid_points(n: int) -> np.ndarray:
    """Cell centres (i + 1/2) / n, i = 0..n-1, of the paper's cells [i/n, (i+1)/n) (float64, shape (n,))."""
    positive_int("n", n)
    return (np.arange(n, dtype=np.float64) + 0.5) / n


def continuum_width(n: int, width: float, scaling: str) -> float:
    """Kernel width in continuum units: ``width`` itself (``"continuum"``) or ``width / n`` (``"grid"``: ``width``
    counted in grid spacings, i.e. in patches)."""
    one_of("scaling", scaling, SCALINGS)
    in_range("width", width, 0.0, None, low_open=True)
    return float(width) if scaling == "continuum" else float(width) / n


def kernel_1d(n: int, width: float, scaling: str = "grid", kernel: str = "gaussian") -> np.ndarray:
    """Symmetric 1-D kernel matrix K1[i, j] = k((x_i - x_j) / w) on :func:`grid_points` (float64, (n, n))."""
    one_of("kernel", kernel, KERNELS)
    x = grid_points(n)
    w = continuum_width(n, width, scaling)
    d = (x[:, None] - x[None, :]) / w
    return np.exp(-0.5 * d**2) if kernel == "gaussian" else np.exp(-np.abs(d))


def attention_1d(
    n: int, width: float, scaling: str = "grid", kernel: str = "gaussian", normalisation: str = "softmax"
) -> np.ndarray:
    """The 1-D factor A1 of the 2-D attention matrix A = A1 (x) A1.

    ``"softmax"``: K1 row-normalised; row i is softmax_j(log k((x_i - x_j)/w)), i.e. attention with logits
    -||x_i - x_j||^2 / (2 w^2) (Gaussian, eq. (11) with q = k = x / w) or ``-|x_i - x_j| / w``.
    ``"none"``: K1 / n, so that A v is the quadrature of the unnormalised integral int K(x - x') v(x') dx' over
    the unit square (eq. (10) without alpha^{-1}; the 2-D weight 1/n^2 is the cell area).
    """
    one_of("normalisation", normalisation, NORMALISATIONS)
    k1 = kernel_1d(n, width, scaling, kernel)
    return k1 / k1.sum(axis=1, keepdims=True) if normalisation == "softmax" else k1 / n


def _check_map(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    if v.ndim == 2:
        v = v[:, :, None]
    if v.ndim != 3 or v.shape[0] != v.shape[1] or v.shape[0] < 1:
        raise ParameterError("v", "a feature map of shape (n, n) or (n, n, d)", v.shape)
    return v


def apply_attention(v: np.ndarray, a1: np.ndarray) -> np.ndarray:
    """v^{t+1} = (A1 (x) A1) v^t for a feature map ``v`` (n, n, d) (or (n, n)); returns (n, n, d) float64."""
    v = _check_map(v)
    a1 = np.asarray(a1, dtype=np.float64)
    if a1.shape != (v.shape[0], v.shape[0]):
        raise ParameterError("a1", f"an ({v.shape[0]}, {v.shape[0]}) matrix matching the map", a1.shape)
    return np.einsum("ia,jb,abc->ijc", a1, a1, v, optimize=True)


def field_norm(v: np.ndarray, norm: str = "l2") -> float:
    """Norm of a feature map (n, n, d) over the unit square (see the module docstring for ``norm``)."""
    one_of("norm", norm, NORMS)
    v = _check_map(v)
    pointwise = np.sqrt((v**2).sum(axis=2))
    if norm == "sup":
        return float(pointwise.max())
    if norm == "l1":
        return float(pointwise.mean())
    if norm == "l2_interior":
        x = grid_points(v.shape[0])
        inside = (x >= 0.25) & (x <= 0.75)
        pointwise = pointwise[np.ix_(inside, inside)]
        if pointwise.size == 0:
            raise ParameterError("v", "a grid with points in [1/4, 3/4] (n >= 2)", v.shape)
    return float(np.sqrt((pointwise**2).mean()))


def bv_seminorm(v: np.ndarray) -> float:
    """Discrete total variation approximating ``int |grad v|`` over the unit square (the paper's eq. (1) with the
    4-neighbour forward differences, weights 1/n^2 per point and 1/h^2 per squared difference):
    h * sum_x sqrt(sum_c (v(x + h e_1) - v(x))^2 + (v(x + h e_2) - v(x))^2), differences across the last row /
    column taken as 0. For v(x) = x_1 this is (n - 1) / n."""
    v = _check_map(v)
    n = v.shape[0]
    d1 = np.zeros_like(v)
    d2 = np.zeros_like(v)
    d1[:-1] = v[1:] - v[:-1]
    d2[:, :-1] = v[:, 1:] - v[:, :-1]
    return float(np.sqrt((d1**2 + d2**2).sum(axis=2)).sum() / n)


def feature_map(kind: str, n: int, d: int = 4, seed: int = 0, modes: int = 4) -> np.ndarray:
    """A feature map (n, n, d) sampled at :func:`grid_points`, the same continuum function for every n.

    ``"smooth"``: random trigonometric polynomial sum_{k1, k2 < modes} c_{k,c} cos(pi k1 x1 + phi) cos(pi k2 x2 +
    psi) / (1 + k1^2 + k2^2) (coefficients and phases from ``seed``); ``"ramp"``: v_c(x) = x_1 (all channels);
    ``"constant"``: v_c = 1 + c; ``"disk"``: the indicator of a disk of radius 0.3 around a random centre (BV but
    discontinuous), times a random unit vector.
    """
    one_of("kind", kind, MAP_KINDS)
    positive_int("d", d)
    positive_int("modes", modes)
    x = grid_points(n)
    x1, x2 = np.meshgrid(x, x, indexing="ij")
    if kind == "ramp":
        return np.repeat(x1[:, :, None], d, axis=2)
    if kind == "constant":
        return np.ones((n, n, d)) * (1.0 + np.arange(d))
    rng = np.random.default_rng([seed, MAP_KINDS.index(kind)])
    if kind == "disk":
        c = rng.uniform(0.35, 0.65, size=2)
        u = rng.standard_normal(d)
        return (((x1 - c[0]) ** 2 + (x2 - c[1]) ** 2) < 0.3**2)[:, :, None] * (u / np.linalg.norm(u))
    coef = rng.standard_normal((modes, modes, d))
    ph = rng.uniform(0, 2 * np.pi, size=(2, modes, modes, d))
    k = np.arange(modes)
    out = np.zeros((n, n, d))
    for a in k:
        for b in k:
            out += (
                coef[a, b]
                * np.cos(np.pi * a * x1[..., None] + ph[0, a, b])
                * np.cos(np.pi * b * x2[..., None] + ph[1, a, b])
            ) / (1.0 + a * a + b * b)
    return out


def layer_change(
    v: np.ndarray,
    width: float,
    scaling: str = "grid",
    kernel: str = "gaussian",
    normalisation: str = "softmax",
    norms=NORMS,
) -> dict[str, float]:
    """||v^{t+1} - v^t|| in each of ``norms`` for one attention layer on the map ``v`` (n, n, d), plus
    ``"norm_l2"`` (||v^t||_L2), ``"norm_sup"`` and ``"bv"`` (``|v^t|_BV``) for the right-hand side of (16)."""
    v = _check_map(v)
    a1 = attention_1d(v.shape[0], width, scaling, kernel, normalisation)
    delta = apply_attention(v, a1) - v
    out = {nm: field_norm(delta, nm) for nm in norms}
    out.update(norm_l2=field_norm(v, "l2"), norm_sup=field_norm(v, "sup"), bv=bv_seminorm(v))
    return out


def loglog_slope(ns, values) -> float:
    """Least-squares slope of log(values) against log(ns) (the rate: -1 means 1/n)."""
    ns, values = np.asarray(ns, dtype=np.float64), np.asarray(values, dtype=np.float64)
    if ns.shape != values.shape or ns.size < 2 or (values <= 0).any() or (ns <= 0).any():
        raise ParameterError("values", "positive numbers, one per n, at least 2", values.tolist())
    return float(np.polyfit(np.log(ns), np.log(values), 1)[0])


def mean_ci(samples, level: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): Student-t interval of the mean of ``samples`` (low = high = mean for one sample)."""
    from scipy import stats

    s = np.asarray(samples, dtype=np.float64)
    m = float(s.mean())
    if s.size < 2:
        return m, m, m
    half = float(stats.t.ppf(0.5 + level / 2, s.size - 1) * s.std(ddof=1) / math.sqrt(s.size))
    return m, m - half, m + half


def rate_study(
    ns,
    *,
    n_maps: int = 8,
    d: int = 4,
    width: float = 1.0,
    scaling: str = "grid",
    kernel: str = "gaussian",
    normalisation: str = "softmax",
    kind: str = "smooth",
    seed: int = 0,
    norms=NORMS,
) -> dict:
    """The layer change against n for ``n_maps`` random feature maps (seeds ``seed .. seed + n_maps - 1``).

    Returns ``ns``; ``change[norm]`` (n_maps, len(ns)); ``slope[norm]`` (n_maps,) per-map log-log slopes;
    ``rate[norm]`` = (mean, ci_low, ci_high) of the slope (95 % Student-t over maps); ``constant`` (n_maps,
    len(ns)) = ``n * ||delta||_L2 / (||v||_L2 + |v|_BV)``, the constant C of (16) if the rate were exactly 1/n.
    """
    ns = [positive_int("ns", int(n)) for n in ns]
    positive_int("n_maps", n_maps)
    change = {nm: np.zeros((n_maps, len(ns))) for nm in norms}
    const = np.zeros((n_maps, len(ns)))
    for m in range(n_maps):
        for j, n in enumerate(ns):
            v = feature_map(kind, n, d=d, seed=seed + m)
            r = layer_change(v, width, scaling, kernel, normalisation, norms)
            for nm in norms:
                change[nm][m, j] = r[nm]
            const[m, j] = n * r["l2"] / (r["norm_l2"] + r["bv"]) if "l2" in norms else float("nan")
    slope = {nm: np.array([loglog_slope(ns, change[nm][m]) for m in range(n_maps)]) for nm in norms}
    return {
        "ns": np.array(ns),
        "change": change,
        "slope": slope,
        "rate": {nm: mean_ci(slope[nm]) for nm in norms},
        "constant": const,
    }
