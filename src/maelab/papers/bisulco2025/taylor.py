"""Bisulco et al. (2025), supplement §B: Lemma 6 (function-space view) and Lemmas 4-5 (Taylor approximations of a
nonlinear autoencoder), with the tanh autoencoder the notebook ``bisulco_linear_mae`` evaluates them on.

**Paper-specific:** these are the steps of Bisulco et al.'s argument from the linear to the nonlinear MAE, not a
model other papers use; the linear MAE itself (Lemma 1, Theorem 1) is general and lives in
:mod:`maelab.linear_mae`, whose conventions (rows of ``X`` are samples, keep-masks ``R``, Bernoulli patch masks,
losses summed over samples) apply here unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from maelab._validate import in_range, positive_int

# linear_mae's input checks (private there): these lemmas take exactly the linear MAE's inputs
from maelab.linear_mae import _data, _factors, _patches, _ratio, expected_loss, sample_masks, second_moment
from maelab.metrics import mean_sem

__all__ = ["TanhAutoencoder", "lemma4_loss", "lemma5_loss", "lemma6_terms", "nonlinear_sampled_loss"]


def lemma6_terms(X: Any, A: Any, B: Any, m: float, patches: Any) -> dict[str, float]:
    """The three terms of Lemma 6 for the linear f(x) = x A B and Bernoulli masks, summed over samples, exactly.

    ``mean_fit`` = ||X - f(mu)||^2 with mu = E[r*x] = (1-m) x (the mean masked image); ``mean_norm`` =
    ||f(mu)||^2; ``second`` = E_R ||f(R*X)||^2; ``variance`` = second - mean_norm = E_R ||f(R*X) - f(mu)||^2 (the
    variance of the predictions over masks); ``total`` = mean_fit - mean_norm + second (Lemma 6), which should
    equal the expected loss E_R ||X - f(R*X)||^2 (:func:`maelab.linear_mae.expected_loss`).
    """
    X = _data(X)
    A, B = _factors(A, B, X.shape[1])
    W = A @ B
    f_mu = (1 - _ratio(m)) * X @ W
    M2 = second_moment(X, m, patches)
    second = float(np.trace(W.T @ M2 @ W))
    mean_fit, mean_norm = float(((X - f_mu) ** 2).sum()), float((f_mu**2).sum())
    return {
        "mean_fit": mean_fit,
        "mean_norm": mean_norm,
        "second": second,
        "variance": second - mean_norm,
        "total": mean_fit - mean_norm + second,
    }


@dataclass
class TanhAutoencoder:
    """A non-linear autoencoder without biases, f(x) = tanh(x A / s) B s (so f(0) = 0 and grad f(0)^T = A B).

    ``A`` (d, k), ``B`` (k, d), ``s`` > 0 sets how far into the non-linearity typical inputs go (large s: nearly
    linear). Rows of ``x`` are samples. :meth:`jacobian` gives the per-sample Jacobian d f / d x (n, d_out, d_in)
    in closed form, B^T diag(1 - tanh^2(x A / s)) A^T.
    """

    A: np.ndarray
    B: np.ndarray
    s: float = 1.0

    def __post_init__(self):
        self.A, self.B = _factors(self.A, self.B, np.asarray(self.A).shape[0])
        self.s = in_range("s", self.s, 0.0, None, low_open=True)

    def __call__(self, x: Any) -> np.ndarray:
        return np.tanh(np.asarray(x, dtype=np.float64) @ self.A / self.s) @ self.B * self.s

    def jacobian(self, x: Any) -> np.ndarray:
        """Per-sample Jacobian d f / d x (n, d_out, d_in) at the rows of ``x``."""
        h = 1.0 - np.tanh(np.asarray(x, dtype=np.float64) @ self.A / self.s) ** 2  # (n, k)
        return np.einsum("kj,nk,ik->nji", self.B, h, self.A)


def nonlinear_sampled_loss(
    X: Any, f: Any, m: float, patches: Any, *, draws: int = 200, rng: np.random.Generator | int | None = 0
) -> tuple[float, float]:
    """Monte-Carlo E_R ||X - f(R*X)||_F^2 (Bernoulli patch masks) for any callable f on (n, d) arrays:
    (mean over ``draws``, standard error)."""
    X = _data(X)
    positive_int("draws", draws)
    R = sample_masks(X.shape[0], patches, m, d=X.shape[1], rng=rng, draws=draws)
    per = np.array([((X - f(r * X)) ** 2).sum() for r in R])
    return mean_sem(per)


def lemma4_loss(X: Any, f: TanhAutoencoder, m: float, patches: Any) -> float:
    """Lemma 4: the MAE loss of f under f(x_R) ~ x_R grad f(0)^T, i.e. ||X - (1-m) X J^T||^2 + m(1-m)||G J^T||^2
    with J = grad f(0) (for :class:`TanhAutoencoder`, J^T = A B)."""
    X = _data(X)
    J0 = f.jacobian(np.zeros((1, X.shape[1])))[0]  # (d_out, d_in)
    return expected_loss(X, J0.T, np.eye(X.shape[1]), m, patches)


def lemma5_loss(X: Any, f: TanhAutoencoder, m: float, patches: Any) -> float:
    """Lemma 5 summed over samples: sum_x ||x - f(x_mu)||^2 + m(1-m) Tr(F_x Blkdiag(x^T x)), x_mu = (1-m) x and
    F_x = J^T J with J = grad f(x_mu). Tr(F_x Blkdiag(x^T x)) = sum over patches P of ||J[:, P] x_P||^2."""
    X = _data(X)
    m = _ratio(m)
    ids, num = _patches(patches, X.shape[1])
    mu = (1 - m) * X
    J = f.jacobian(mu)  # (n, d_out, d_in)
    fit = float(((X - f(mu)) ** 2).sum())
    onehot = (ids[:, None] == np.arange(num)[None, :]).astype(np.float64)  # (d, P)
    # J[:, :, P] x_P for every patch P: (n, d_out, P)
    per_patch = np.einsum("noi,ni,ip->nop", J, X, onehot)
    return fit + m * (1 - m) * float((per_patch**2).sum())
