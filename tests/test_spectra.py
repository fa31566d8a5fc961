"""maelab.spectra: Bisulco et al. §F closed forms against numpy's FFT."""

import numpy as np
import pytest

from maelab import spectra
from maelab._validate import ParameterError


@pytest.mark.parametrize("D, p", [(64, 4), (60, 5), (128, 16), (33, 1)])
def test_mask_dft_closed_form(D, p):
    rng = np.random.default_rng(0)
    for _ in range(5):
        starts = rng.integers(0, D, size=rng.integers(1, 6))
        m = spectra.pulse_train(D, p, starts)
        assert m.sum() == p * len(starts)
        np.testing.assert_allclose(spectra.pulse_train_dft(D, p, starts), np.fft.fft(m), atol=1e-9 * D)


def test_printed_eq19_is_wrong_for_nonzero_starts():
    D, p, starts = 64, 4, [8, 20]
    err = np.abs(spectra.pulse_train_dft(D, p, starts, as_printed=True) - np.fft.fft(spectra.pulse_train(D, p, starts)))
    assert err.max() > 1.0  # exp(-j 2 pi k a) = 1 for integer k, a: the shift is lost


def test_pulse_dft_zeros_and_dc():
    R = spectra.pulse_dft(64, 8)
    assert R[0] == 8
    assert np.abs(R[[8, 16, 24, 32]]).max() < 1e-12
    np.testing.assert_allclose(R, np.fft.fft(spectra.pulse_train(64, 8, [0])), atol=1e-12)


def test_grating_zeros_for_grid_masks_only():
    rng = np.random.default_rng(1)
    D, p = 32, 8
    keep = (rng.random((D // p, D // p)) < 0.5).astype(float)
    mask = np.kron(keep, np.ones((p, p)))
    assert spectra.grating_power_fraction(mask - mask.mean(), p) < 1e-25
    shifted = np.roll(mask, 3, axis=1)  # off-grid squares keep the zeros (shift = phase) ...
    assert spectra.grating_power_fraction(shifted - shifted.mean(), p) < 1e-25
    noise = rng.random((D, D))  # ... but an arbitrary mask does not
    assert spectra.grating_power_fraction(noise - noise.mean(), p) > 1e-6


def test_random_grid_starts_count_and_alignment():
    s = spectra.random_grid_starts(64, 8, 0.75, np.random.default_rng(0))
    assert len(s) == 8 - int(8 * 0.25) and (s % 8 == 0).all() and len(set(s)) == len(s)


def test_power_spectrum_parseval_and_hf_fraction():
    rng = np.random.default_rng(2)
    img = rng.random((16, 16))
    psd = spectra.power_spectrum(img)
    assert psd.sum() == pytest.approx(((img - img.mean()) ** 2).sum())
    # a constant-free checkerboard has all its power at Nyquist
    cb = np.indices((16, 16)).sum(0) % 2 * 1.0
    assert spectra.high_frequency_fraction(spectra.power_spectrum(cb), 0.25) == pytest.approx(1.0)
    smooth = np.outer(np.sin(2 * np.pi * np.arange(16) / 16), np.ones(16))
    assert spectra.high_frequency_fraction(spectra.power_spectrum(smooth), 0.25) == pytest.approx(0.0, abs=1e-20)


def test_bad_inputs():
    with pytest.raises(ParameterError, match="^p must"):
        spectra.random_grid_starts(64, 7, 0.5, np.random.default_rng(0))
    with pytest.raises(ParameterError, match="^img must"):
        spectra.power_spectrum(np.zeros(4))
    with pytest.raises(ParameterError, match="^p must"):
        spectra.pulse_train(8, 9, [0])
