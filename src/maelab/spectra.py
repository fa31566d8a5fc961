"""Fourier view of MAE masking (Bisulco et al. supplement §F, Eq. 15-21, Fig. 22).

**General library:** the DFT of a patch mask (a train of rectangular pulses) and power spectra of images are
textbook signal processing that any Fourier analysis of masking uses (the book's Foundations page ``masking``
is built on them); Bisulco et al. state the 1-D case as Eq. 19-20. Only ``as_printed`` in
:func:`pulse_train_dft` reproduces that paper's misprint, to check it. The verdicts on Bisulco's §F claims are
paper-specific and their rows live in :mod:`maelab.papers.bisulco2025.claims`.

1-D: a mask made of N rectangular pulses of width p starting at a_i (Eq. 15-16),
``m[n] = sum_i r[n - a_i]``, ``r[n] = u[n] - u[n-p]``, has the DFT (Eq. 19-20, with the shift exponent written
correctly)::

    M[k] = R[k] * sum_i exp(-j 2 pi k a_i / D),   R[k] = exp(-j pi k (p-1) / D) sin(pi p k / D) / sin(pi k / D)

with ``R[0] = p``. The paper's Eq. 19 prints the phase without ``/D`` (then every term is 1 for integer k, a_i)
and Eq. 21 names the product ``|R[k]|`` where it is ``|M[k]|``; both are checked numerically in the masking
notebook. Shifts are circular (the DFT's time-shift property), so pulses may wrap around.

2-D: for p x p squares on the patch grid, the mask's DFT factorises along each axis, so it is zero wherever
``k_x`` or ``k_y`` is a non-zero multiple of ``D/p`` -- the "grating" of Fig. 22.
"""

from __future__ import annotations

import numpy as np

from ._validate import ParameterError, divides, in_range, positive_int


def pulse_train(D: int, p: int, starts) -> np.ndarray:
    """Eq. 16: m[n] = sum_i r[n - a_i] (circular), float64 of length D."""
    positive_int("D", D)
    positive_int("p", p)
    if p > D:
        raise ParameterError("p", f"an integer in [1, D={D}]", p)
    m = np.zeros(D)
    for a in np.asarray(starts, dtype=np.int64).ravel():
        m[(a + np.arange(p)) % D] += 1.0
    return m


def pulse_dft(D: int, p: int) -> np.ndarray:
    """Eq. 20: DFT of one rectangular pulse of width p starting at 0, for k = 0..D-1 (R[0] = p)."""
    k = np.arange(D)
    out = np.empty(D, dtype=np.complex128)
    nz = (k % D) != 0
    out[~nz] = p
    kk = k[nz]
    out[nz] = np.exp(-1j * np.pi * kk * (p - 1) / D) * np.sin(np.pi * p * kk / D) / np.sin(np.pi * kk / D)
    return out


def pulse_train_dft(D: int, p: int, starts, *, as_printed: bool = False) -> np.ndarray:
    """Eq. 19 times Eq. 20. ``as_printed=True`` uses the paper's phase exp(-j 2 pi k a_i) (no /D)."""
    k = np.arange(D)[:, None]
    a = np.asarray(starts, dtype=np.float64).ravel()[None, :]
    scale = 1.0 if as_printed else 1.0 / D
    phases = np.exp(-2j * np.pi * k * a * scale).sum(axis=1)
    return phases * pulse_dft(D, p)


def random_grid_starts(D: int, p: int, mask_ratio: float, rng: np.random.Generator) -> np.ndarray:
    """Starts of the masked patches: L = D/p grid patches, int(L*(1-m)) kept as in the official MAE, rest masked."""
    divides("p", p, D, "D")
    in_range("mask_ratio", mask_ratio, 0.0, 1.0, high_open=True)
    L = D // p
    keep = int(L * (1 - mask_ratio))
    order = rng.permutation(L)
    return np.sort(order[keep:]) * p


def power_spectrum(img: np.ndarray, *, remove_mean: bool = True) -> np.ndarray:
    """2-D power spectrum ``|F|^2 / (H W)`` of a (H, W) array, fftshifted (zero frequency at the centre)."""
    img = np.asarray(img, dtype=np.float64)
    if img.ndim != 2:
        raise ParameterError("img", "a 2-D (H, W) array", img.shape)
    if remove_mean:
        img = img - img.mean()
    f = np.fft.fft2(img)
    return np.fft.fftshift(np.abs(f) ** 2) / img.size


def radial_frequency(shape: tuple[int, int]) -> np.ndarray:
    """``|k|`` in cycles per pixel for an fftshifted spectrum of ``shape`` (Nyquist = 0.5)."""
    fy = np.fft.fftshift(np.fft.fftfreq(shape[0]))
    fx = np.fft.fftshift(np.fft.fftfreq(shape[1]))
    return np.hypot(fy[:, None], fx[None, :])


def high_frequency_fraction(psd: np.ndarray, cutoff: float = 0.25) -> float:
    """Fraction of the (non-DC) power at ``|k| > cutoff`` cycles/pixel in an fftshifted power spectrum."""
    in_range("cutoff", cutoff, 0.0, 0.5 * np.sqrt(2))
    r = radial_frequency(psd.shape)
    total = psd[r > 0].sum()
    return float(psd[r > cutoff].sum() / total) if total > 0 else 0.0


def grating_mask(D: int, p: int) -> np.ndarray:
    """Boolean (D, D) mask (unshifted DFT index order) of frequencies where k_x or k_y is a non-zero multiple of D/p."""
    divides("p", p, D, "D")
    k = np.arange(D)
    on = (k % (D // p) == 0) & (k != 0)
    return on[:, None] | on[None, :]


def grating_power_fraction(mask2d: np.ndarray, p: int) -> float:
    """Largest power of a (D, D) mask at the grating frequencies of patch size p, relative to its total power."""
    mask2d = np.asarray(mask2d, dtype=np.float64)
    if mask2d.ndim != 2 or mask2d.shape[0] != mask2d.shape[1]:
        raise ParameterError("mask2d", "a square 2-D array", mask2d.shape)
    power = np.abs(np.fft.fft2(mask2d)) ** 2
    total = power.sum()
    return float(power[grating_mask(mask2d.shape[0], p)].max() / total) if total > 0 else 0.0
