"""Theorem 5.2 of Cao, Xu & Clifton (2022), computed exactly: the skip connection turns the first-kind equation
alpha^{-1} K u = z into the second-kind equation beta u + alpha^{-1} K u = z (eq. (20)-(23)).

Discretisation
--------------
K is the attention kernel of eq. (13) (Gaussian K(x - x') = exp(-||x - x'||^2 / (2 w^2)), or the Laplace kernel of
(B_3)) on the grid of :mod:`.kernels` in one or two dimensions, with the quadrature weight of the unit interval /
square. The normalised operator alpha^{-1} K is then exactly the row-normalised attention matrix
A = D^{-1} K_h (D = diag(alpha), alpha_i = sum_j K_h[i, j]): the weights cancel in the ratio. A is not symmetric,
but it is self-adjoint and positive semi-definite in the alpha-weighted inner product <u, v>_alpha = u^T D v, the
discrete L^2(alpha dmu): D A = K_h is symmetric PSD (the Gaussian and Laplace kernels are positive definite). Its
eigenvalues are those of S = D^{1/2} A D^{-1/2} = D^{-1/2} K_h D^{-1/2}, real in [0, 1] (A is row-stochastic).

What we measure
---------------
* Condition numbers of M = beta I + A for beta = 0 (first kind) and beta > 0 (second kind), in the Euclidean
  2-norm (singular values of M) and in the alpha-norm (eigenvalues beta + lambda_i(S)). In the alpha-norm the bound
  cond(M) <= (beta + ||A||_alpha) / beta follows by hand from lambda_i(S) in [0, ||A||_alpha]; in the 2-norm,
  M = D^{-1/2} (beta I + S) D^{1/2} gives cond_2(M) <= (alpha_max / alpha_min) (beta + ||A||_alpha) / beta.
* Noise amplification: for z + e with e ~ N(0, sigma^2 I), the solution error is M^{-1} e and
  E||M^{-1} e||^2 = sigma^2 sum_i s_i(M)^{-2} (s_i the singular values), so the RMS amplification per unit of noise
  is sqrt(mean_i s_i^{-2}); the worst case is 1 / s_min.
* Recovery of a smooth u* from z = A u* + e by solving the second-kind equation: the error splits into a bias
  (beta I + A)^{-1} A u* - u* that grows with beta and a noise term that shrinks with beta.

Vocabulary: beta u + A u = z with A self-adjoint PSD is what numerical analysis calls Lavrentiev regularisation of
A u = z; Tikhonov's normal-equation form is (beta I + A* A) u = A* z. The paper's (22) uses the K-induced norm
<K v, v> as the penalty, and its Euler-Lagrange equation (23) is the Lavrentiev form; either way the stability
constant is 1 / beta, which is what the table shows.
"""

from __future__ import annotations

import numpy as np

from maelab._validate import ParameterError, in_range, one_of, positive_int

from .kernels import KERNELS, SCALINGS, feature_map, kernel_1d

MAX_SIZE = 4096


def attention_operator(
    n: int, width: float, scaling: str = "continuum", kernel: str = "gaussian", dim: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """(A, alpha): the row-normalised kernel operator alpha^{-1} K (n^dim x n^dim, float64) and the row sums alpha of
    the quadrature-weighted kernel (weight n^-dim) on the n (x n) grid; 2-D operators are Kronecker products."""
    one_of("dim", dim, (1, 2))
    one_of("scaling", scaling, SCALINGS)
    one_of("kernel", kernel, KERNELS)
    positive_int("n", n)
    if n**dim > MAX_SIZE:
        raise ParameterError("n", f"at most {MAX_SIZE} grid points in all (n^dim); dense operators", n)
    k1 = kernel_1d(n, width, scaling, kernel) / n
    k = k1 if dim == 1 else np.kron(k1, k1)
    alpha = k.sum(axis=1)
    return k / alpha[:, None], alpha


def symmetrised(a: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """S = D^{1/2} A D^{-1/2} (symmetric; same eigenvalues as A; A's matrix in an alpha-orthonormal basis)."""
    r = np.sqrt(np.asarray(alpha, dtype=np.float64))
    s = r[:, None] * a / r[None, :]
    return 0.5 * (s + s.T)


def _beta(beta) -> float:
    return in_range("beta", beta, 0.0, None)


def conditioning(a: np.ndarray, alpha: np.ndarray, beta: float) -> dict[str, float]:
    """Condition numbers, the hand bounds and the noise amplification of M = beta I + A.

    Keys: ``cond_2`` (Euclidean), ``cond_alpha`` (alpha-norm), ``bound_alpha`` = (beta + ||A||_alpha) / beta
    (inf at beta = 0), ``bound_2`` = bound_alpha * alpha_max / alpha_min, ``norm_alpha`` = ||A||_alpha,
    ``amp_rms`` = sqrt(mean s_i^-2), ``amp_worst`` = 1 / s_min, ``lambda_min`` = smallest eigenvalue of S.
    """
    beta = _beta(beta)
    a = np.asarray(a, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or np.shape(alpha) != (a.shape[0],):
        raise ParameterError("a", "a square matrix with one alpha per row", a.shape)
    s = np.linalg.svd(beta * np.eye(a.shape[0]) + a, compute_uv=False)
    lam = np.linalg.eigvalsh(symmetrised(a, alpha))
    lam_max, lam_min = float(lam.max()), float(max(lam.min(), 0.0))
    bound = (beta + lam_max) / beta if beta > 0 else float("inf")
    with np.errstate(divide="ignore"):
        inv = 1.0 / s
    return {
        "cond_2": float(s[0] / s[-1]) if s[-1] > 0 else float("inf"),
        "cond_alpha": (beta + lam_max) / (beta + lam_min) if beta + lam_min > 0 else float("inf"),
        "bound_alpha": bound,
        "bound_2": bound * float(np.max(alpha) / np.min(alpha)),
        "norm_alpha": lam_max,
        "amp_rms": float(np.sqrt(np.mean(inv**2))),
        "amp_worst": float(inv.max()),
        "lambda_min": float(lam.min()),
    }


def noise_error_mc(m: np.ndarray, sigma: float = 1.0, draws: int = 1000, seed: int = 0) -> float:
    """Monte-Carlo RMS of ||M^{-1} e|| / sqrt(N) over ``draws`` e ~ N(0, sigma^2 I) (solved with LAPACK), to check
    the SVD formula ``amp_rms * sigma``."""
    in_range("sigma", sigma, 0.0, None, low_open=True)
    positive_int("draws", draws)
    e = np.random.default_rng(seed).standard_normal((m.shape[0], draws)) * sigma
    x = np.linalg.solve(m, e)
    return float(np.sqrt((x**2).sum(axis=0).mean() / m.shape[0]))


def recovery(a: np.ndarray, u_true: np.ndarray, beta: float, sigma: float, seed: int = 0) -> dict[str, float]:
    """Solve beta u + A u = z with z = A u* + e, e ~ N(0, sigma^2 I): relative errors of the solution (``total``),
    of the noise-free solution (``bias``: beta > 0 shrinks it towards the smooth part) and of the noise term."""
    beta = _beta(beta)
    u_true = np.asarray(u_true, dtype=np.float64).reshape(-1)
    m = beta * np.eye(a.shape[0]) + a
    e = np.random.default_rng(seed).standard_normal(u_true.shape) * sigma
    clean = np.linalg.solve(m, a @ u_true)
    noise = np.linalg.solve(m, e)
    nrm = np.linalg.norm(u_true)
    return {
        "total": float(np.linalg.norm(clean + noise - u_true) / nrm),
        "bias": float(np.linalg.norm(clean - u_true) / nrm),
        "noise": float(np.linalg.norm(noise) / nrm),
    }


def conditioning_study(
    ns,
    betas,
    *,
    width: float = 0.1,
    scaling: str = "continuum",
    kernel: str = "gaussian",
    dim: int = 1,
    sigma: float = 1e-3,
    seed: int = 0,
) -> list[dict]:
    """One row per (n, beta) (beta = 0 is the first kind): :func:`conditioning` plus :func:`recovery` of a smooth
    u* (:func:`maelab.papers.cao2022.kernels.feature_map` "smooth", one channel, the 1-D section for dim 1)."""
    rows = []
    for n in ns:
        a, alpha = attention_operator(int(n), width, scaling, kernel, dim)
        u = feature_map("smooth", int(n), d=1, seed=seed)[:, :, 0]
        u = u[:, int(n) // 2] if dim == 1 else u.reshape(-1)
        for beta in betas:
            row = {"n": int(n), "beta": float(beta), **conditioning(a, alpha, beta)}
            row.update({f"err_{k}": v for k, v in recovery(a, u, beta, sigma, seed=seed).items()})
            rows.append(row)
    return rows
