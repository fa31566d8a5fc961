"""Settings of the Bisulco et al. notebooks: degenerate values that would make a claim vacuous are rejected."""

import pytest

from maelab import book
from maelab._validate import ParameterError


@pytest.mark.parametrize(
    "notebook, params, start",
    [
        # nothing masked: the "grating zeros" claim would be scored on unmasked images
        ("masking", {"mask_ratio": 0}, "mask_ratio must be a number in (0.0, 1.0); got 0"),
        ("masking", {"mask_ratio": 0.0}, "mask_ratio must be a number in (0.0, 1.0)"),
        # one patch size: the smoothing claim (Monotone) has no series
        ("masking", {"patch_sizes_2d": [8]}, "patch_sizes_2d must be a list of at least 2 items (the Monotone claim"),
        ("masking", {"patch_sizes_2d": [5, 8]}, "patch_sizes_2d[0] must be a divisor of crop=128; got 5"),
        ("bisulco_ising", {"mask_ratios": [0.5]}, "mask_ratios must be a list of at least 2 items"),
        ("bisulco_ising", {"patch_sizes": [3, 4]}, "patch_sizes[0] must be a divisor of L=32; got 3"),
        ("bisulco_ising", {"mask_ratios": [0.75, 0.25]}, "mask_ratios must be a strictly increasing list"),
        ("bisulco_linear_mae", {"taylor_ratios": [0.5]}, "taylor_ratios must be a list of at least 2 items"),
        ("bisulco_jacobians", {"mask_ratio": 0}, "mask_ratio must be a number in (0.0, 1.0)"),
        # with mask_ratio 0.8, only one mask ratio >= 0.1 would be left for the spread-vs-m claim
        ("bisulco_jacobians", {"mask_ratios": [0.05]}, "mask_ratios must be mask ratios giving >= 2 points"),
        ("bisulco_jacobians", {"lin_mask_ratios": [0.5]}, "lin_mask_ratios must be a list of at least 2 items"),
        ("bisulco_sweeps", {"encoder_depths": [2]}, "encoder_depths must be a list of at least 2 items"),
        ("bisulco_sweeps", {"decoder_depths": [1, 4]}, "key_decoder_depth must be one of decoder_depths [1, 4]; got 2"),
        ("bisulco_sweeps", {"patch_sizes": [4]}, "patch_sizes must be a list of at least 2 items (the claims compare"),
    ],
)
def test_degenerate_settings_are_rejected(notebook, params, start):
    with pytest.raises(ParameterError) as e:
        book.setup(notebook, profile="cpu", **params)
    assert str(e.value).startswith(start) and "\n" not in str(e.value)


def test_one_seed_is_allowed_for_smoke():
    # a paired test then says "inconclusive: needs >= 2 paired samples" -- honest, and documented in the field
    assert book.setup("bisulco_ising", profile="cpu", seeds=[0]).settings.seeds == (0,)
    assert "1 is allowed" in book.setup("bisulco_ising", profile="smoke").settings.docs()["seeds"]


def test_profiles_keep_their_documented_values():
    from maelab.profiles import settings

    assert settings("masking", "cpu").mask_ratio == 0.5 and settings("masking", "gpu").photo_scale == 1.0
    assert settings("bisulco_ising", "smoke").L == 16 and settings("bisulco_ising", "gpu").n == 8000
    assert settings("bisulco_linear_mae", "gpu").thm1_configs == ((0.25, 2), (0.5, 4), (0.75, 8))
    assert settings("bisulco_sweeps", "gpu").key_decoder_depth == 4
