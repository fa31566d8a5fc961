"""Spatial scale of linear maps on periodic images (Bisulco et al. 2025, supplement E, Figs. 20-21).

**Paper-specific:** the scale measures of the ``bisulco_ising`` claims (decay length and mass radius of receptive
fields on a torus, translation averaging of Ising data for the closed forms). The radial profile, mass radius and
decay-length fit they use are general and live in :mod:`maelab.metrics`.

A linear reconstruction map ``W`` (d, d) acts on images of shape (H, W) flattened row-major, with rows of the data
as samples: the prediction of output pixel j is ``sum_i x_i W[i, j]``, so **column j of W is the receptive field
of output pixel j** (its weights over the input pixels). On a torus (the Ising lattice), the distance between two
pixels is the minimum-image distance. :func:`centred_fields` rolls every receptive field so that its own output
pixel sits at the centre (H // 2, W // 2); the ordinary Euclidean distance from that centre then *is* the torus
distance, so :func:`maelab.metrics.radial_profile` and :func:`maelab.metrics.mass_radius` apply unchanged.

:func:`spatial_scale` turns "wider features" into two numbers per map:

* ``decay_length``: the fitted length ell of ``mean |W_ij| ~ a exp(-r / ell)`` against the torus distance r
  (:func:`maelab.metrics.decay_length`, log-linear least squares) over distances 1 <= r <= min(H, W) / 2 (the
  self-weight at r = 0 is left out: it is the copy of a visible pixel, not a spatial interaction; beyond half
  the side the distance bins are incomplete corners);
* ``mass_radius``: the torus radius holding a fraction q (default 0.9) of a receptive field's absolute weight
  (self-weight included), averaged over the d output pixels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from maelab import metrics
from maelab._validate import ParameterError, in_range, positive_int

__all__ = ["centred_fields", "torus_distance", "spatial_scale", "translation_averaged_data"]


def _shape(shape: Any) -> tuple[int, int]:
    if not isinstance(shape, (tuple, list)) or len(shape) != 2:
        raise ParameterError("shape", "an (H, W) pair of positive integers", shape)
    return positive_int("shape[0]", shape[0]), positive_int("shape[1]", shape[1])


def _matrix(W: Any, d: int) -> np.ndarray:
    W = np.asarray(W.detach().cpu() if hasattr(W, "detach") else W, dtype=np.float64)
    if W.ndim != 2 or W.shape[0] != d or not np.all(np.isfinite(W)):
        raise ParameterError("W", f"a finite (d={d}, n_out) matrix", getattr(W, "shape", W))
    return W


def torus_distance(shape: Any, a: int, b: int) -> float:
    """Minimum-image Euclidean distance between flat pixel indices a and b of an (H, W) torus."""
    H, Wd = _shape(shape)
    (ra, ca), (rb, cb) = divmod(int(a), Wd), divmod(int(b), Wd)
    dr, dc = abs(ra - rb) % H, abs(ca - cb) % Wd
    return float(np.hypot(min(dr, H - dr), min(dc, Wd - dc)))


def centred_fields(W: Any, shape: Any, outputs: Any = None) -> np.ndarray:
    """Receptive fields (columns of W) rolled on the torus so that output pixel j sits at (H // 2, W // 2).

    ``W`` (d, n_out) with d = H * W input pixels; ``outputs`` the output pixels (columns) to take (default all
    d columns, which requires n_out = d). Returns (len(outputs), H, W): entry [t, a, b] is the weight of input
    pixel ((r_j + a - H//2) mod H, (c_j + b - W//2) mod W) for output pixel j = outputs[t] at (r_j, c_j).
    """
    H, Wd = _shape(shape)
    W = _matrix(W, H * Wd)
    outs = np.arange(W.shape[1]) if outputs is None else np.asarray(outputs, dtype=np.int64).reshape(-1)
    if outputs is None and W.shape[1] != H * Wd:
        raise ParameterError("W", f"a square (d, d) matrix when outputs is None (d={H * Wd})", W.shape)
    if outs.size == 0 or outs.min() < 0 or outs.max() >= W.shape[1] or outs.max() >= H * Wd:
        raise ParameterError("outputs", f"pixel indices in [0, {min(W.shape[1], H * Wd)})", outputs)
    r, c = np.divmod(outs, Wd)
    a, b = np.arange(H) - H // 2, np.arange(Wd) - Wd // 2
    rows = (r[:, None, None] + a[None, :, None]) % H
    cols = (c[:, None, None] + b[None, None, :]) % Wd
    return W[rows * Wd + cols, outs[:, None, None]]


def translation_averaged_data(X: Any, shape: Any) -> np.ndarray:
    """A (d, d) stand-in for data X (n, d) on an (H, W) torus augmented with all H*W cyclic translations.

    The second-moment matrix of the augmented data is the translation average of S = X^T X / n,
    S_avg[i, j] = c(j - i) with c(delta) = mean_i S[i, i + delta] (2-D offsets taken modulo the torus): the
    circulant estimate of a translation-invariant covariance (the Ising model on a torus is exactly so). Returns
    Z (d, d) with Z^T Z = d * S_avg, i.e. the second moment of d "samples" with the per-sample scale of X, which
    is all the linear MAE / DAE closed forms depend on (their minimisers are unchanged by scaling S, and the
    DAE's n sigma^2 term keeps its per-sample meaning).
    """
    H, Wd = _shape(shape)
    d = H * Wd
    X = np.asarray(X.detach().cpu() if hasattr(X, "detach") else X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != d or not np.all(np.isfinite(X)):
        raise ParameterError("X", f"a finite (n, d={d}) array", getattr(X, "shape", X))
    imgs = X.reshape(-1, H, Wd)
    # c(delta) = mean over samples and positions of x[p] x[p + delta]: circular autocorrelation via FFT
    F = np.fft.fft2(imgs)
    c = np.real(np.fft.ifft2((np.abs(F) ** 2).mean(0))) / d  # c[dr, dc]
    r, col = np.divmod(np.arange(d), Wd)
    S_avg = c[(r[None, :] - r[:, None]) % H, (col[None, :] - col[:, None]) % Wd]
    S_avg = (S_avg + S_avg.T) / 2
    evals, evecs = np.linalg.eigh(S_avg)
    return (evecs * np.sqrt(np.clip(evals, 0.0, None) * d)).T


def spatial_scale(W: Any, shape: Any, *, q: float = 0.9, outputs: Any = None) -> dict[str, Any]:
    """Spatial scale of the receptive fields of a (d, d) linear map on an (H, W) torus (see the module docstring).

    Weights below 1e-10 of the largest are treated as 0 (floating-point round-off, not structure).
    Returns ``decay_length`` (fit to the mean ``|weight|`` profile over the fields; ``inf`` when it does not decay,
    ``nan`` when fewer than two distance bins in range are non-zero), ``mass_radius`` (mean over the
    fields of :func:`maelab.metrics.mass_radius` at fraction q) and ``mass_radius_sd`` (its spread over fields),
    ``radii`` / ``profile`` (mean ``|weight|`` against torus distance, un-normalised) for plots.
    """
    H, Wd = _shape(shape)
    q = in_range("q", q, 0.0, 1.0, low_open=True)
    F = np.abs(centred_fields(W, (H, Wd), outputs))
    F[F <= 1e-10 * F.max()] = 0.0  # round-off (e.g. the 1e-16 off-diagonals of an identity map) is not a weight
    centre = (H // 2, Wd // 2)
    radii, prof = metrics.radial_profile(F.mean(0), centre, normalize=None)
    sel = (radii >= 0.5) & (radii <= min(H, Wd) / 2)
    try:
        ell = metrics.decay_length(radii[sel], prof[sel])
    except ParameterError:  # fewer than two non-zero distance bins in range: nothing to fit
        ell = float("nan")
    radius = np.array([metrics.mass_radius(f, centre, q) for f in F])
    return {
        "decay_length": ell,
        "mass_radius": float(radius.mean()),
        "mass_radius_sd": float(radius.std()),
        "radii": radii,
        "profile": prof,
    }
