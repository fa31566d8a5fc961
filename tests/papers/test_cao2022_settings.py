"""Cao settings follow the engine's conventions; degenerate values that would make a claim vacuous are rejected."""

import pytest

from maelab import book, profiles
from maelab._validate import ParameterError
from maelab.papers.cao2022 import claims, settings


def test_only_existing_notebooks_have_settings_and_every_profile_builds():
    assert set(settings.NOTEBOOKS) == {"cao_theory", "cao_decoder"}
    assert profiles.registry()["cao_decoder"] is settings.CaoDecoderSettings
    assert profiles.registry()["cao_theory"] is settings.CaoTheorySettings
    smoke, cpu, gpu = (profiles.settings("cao_theory", p) for p in profiles.PROFILE_NAMES)
    assert (cpu.ns, cpu.n_maps, cpu.tik_seeds, cpu.lr_patch_sides) == ((16, 24, 32, 48, 64, 96, 128), 8, 5, (4, 8, 16))
    assert (smoke.ns, smoke.n_maps, smoke.tik_ns_2d, smoke.lr_draws) == ((8, 16, 32), 2, (6, 8), 2)
    assert gpu.ns[-1] == 256 and gpu.n_maps == 16 and gpu.tik_betas == cpu.tik_betas
    assert {c.notebook for c in claims.CLAIMS} == {"cao_theory", "cao_decoder"}
    d_smoke, d_cpu = (profiles.settings("cao_decoder", p) for p in ("smoke", "cpu"))
    assert d_smoke.dataset == "mnist10k" and d_cpu.dataset == "fashion_mnist" and d_cpu.checkpoint is None
    assert len(d_cpu.seeds) >= 3 and d_cpu.decoder_depth >= 3


def test_misspelt_setting_fails_in_one_line():
    with pytest.raises(ParameterError) as e:
        book.setup("cao_theory", profile="smoke", n_map=3)
    msg = str(e.value)
    assert msg.startswith("n_map must be a setting of CaoTheorySettings (") and "n_maps" in msg and "\n" not in msg


@pytest.mark.parametrize(
    "params, start",
    [
        ({"ns": [16, 32]}, "ns must be a list of at least 3 items (the rate is a log-log fit over n)"),
        ({"ns": [32, 16, 64]}, "ns must be a strictly increasing list"),
        # one map: no error bar on the rate, the criterion's "mean + 2 s.e." would be the mean alone
        ({"n_maps": 1}, "n_maps must be an integer >= 2; got 1"),
        ({"kernel": "box"}, "kernel must be one of 'gaussian', 'laplace'; got 'box'"),
        ({"width_grid": 0.0}, "width_grid must be a number in (0.0, inf); got 0.0"),
        # no beta = 0: nothing to compare the second kind with; only beta = 0: no second kind
        ({"tik_betas": [0.01, 0.1]}, "tik_betas must be a list starting at 0.0"),
        ({"tik_betas": [0.0]}, "tik_betas must be a list of at least 2 items"),
        ({"tik_ns": [32]}, "tik_ns must be a list of at least 2 items (the ill-posedness claim is a trend over n)"),
        ({"tik_ns_2d": [8, 96]}, "tik_ns_2d must be sides <= 64"),
        ({"tik_seeds": 1}, "tik_seeds must be an integer >= 2; got 1"),
        ({"claim_beta": 0.0}, "claim_beta must be a number in (0.0, inf); got 0.0"),
        ({"lr_patch_sides": [16]}, "lr_patch_sides must be a smallest side N_c with lr_n * N_c <= 64"),
        ({"lr_patch_sides": [4], "lr_ranks": [4, 8]}, "lr_ranks must be a rank r with 2 r <= some N_c"),
        ({"lr_images": 1}, "lr_images must be an integer >= 2; got 1"),
    ],
)
def test_degenerate_settings_are_rejected(params, start):
    with pytest.raises(ParameterError) as e:
        book.setup("cao_theory", profile="cpu", **params)
    assert str(e.value).startswith(start) and "\n" not in str(e.value)


@pytest.mark.parametrize(
    "params, start",
    [
        # one seed: the paired claims would have no spread
        ({"seeds": [0]}, "seeds must be at least 2 distinct seeds"),
        ({"seeds": [1, 1]}, "seeds must be at least 2 distinct seeds"),
        # Fig. 3 needs an intermediate decoder block between the decoder input and the prediction
        ({"decoder_depth": 2}, "decoder_depth must be an integer >= 3; got 2"),
        ({"patch_size": 5}, "patch_size must be one of 4, 7, 14; got 5"),
        ({"n_eval": 5000}, "n_eval must be at most n_test = 1000; got 5000"),
        ({"n_probe": 10**6}, "n_probe must be at most n_train = 5000"),
        ({"kernel": "relu"}, "kernel must be one of 'exp', 'linear'; got 'relu'"),
        ({"skip_scale": 0.0}, "skip_scale must be a number in (0.0, inf); got 0.0"),
        ({"margin": 1.0}, "margin must be a number in (0.0, 1.0); got 1.0"),
        ({"checkpoint": ""}, "checkpoint must be a non-empty string"),
    ],
)
def test_degenerate_decoder_settings_are_rejected(params, start):
    with pytest.raises(ParameterError) as e:
        book.setup("cao_decoder", profile="cpu", **params)
    assert str(e.value).startswith(start) and "\n" not in str(e.value)
