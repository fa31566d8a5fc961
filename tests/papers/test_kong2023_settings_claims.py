"""Kong settings (engine conventions, degenerate values rejected) and claim rows (unique ids, one notebook each)."""

import pytest

from maelab import book, profiles
from maelab._validate import ParameterError
from maelab.claims import Claim, Criterion
from maelab.papers.kong2023 import claims, settings
from maelab.zoo import ZooSettings

TRAINED = {"kong_reconstruction", "kong_representations"}  # the trained-model notebooks


def test_every_notebook_has_settings_and_every_profile_builds():
    assert set(settings.NOTEBOOKS) == {"kong_theory"} | TRAINED
    # Fig. 5 reads the book's shared zoo; the representations page its own shapes zoo (known latents)
    assert issubclass(settings.NOTEBOOKS["kong_reconstruction"], ZooSettings)
    assert issubclass(settings.NOTEBOOKS["kong_representations"], settings.KongZooSettings)
    assert (
        profiles.registry()["kong_theory"] is settings.KongTheorySettings and "kong_theory" in profiles.notebook_names()
    )
    smoke, cpu, gpu = (profiles.settings("kong_theory", p) for p in profiles.PROFILE_NAMES)
    # the values the settings were written with (cpu defaults, smoke / gpu overrides)
    assert (cpu.quadtree_side, cpu.n_masks, cpu.seeds, cpu.units) == (16, 200, (0, 1, 2, 3, 4), (1, 2, 4))
    assert (smoke.quadtree_side, smoke.n_masks, smoke.lg_n_samples) == (8, 10, (200, 2000))
    assert gpu.n_masks == 1000 and len(gpu.seeds) == 10 and gpu.mask_ratios == cpu.mask_ratios


def test_misspelt_setting_fails_in_one_line():
    with pytest.raises(ParameterError) as e:
        book.setup("kong_theory", profile="smoke", n_mask=3)
    msg = str(e.value)
    assert msg.startswith("n_mask must be a setting of KongTheorySettings (") and "n_masks" in msg and "\n" not in msg


@pytest.mark.parametrize(
    "params, start",
    [
        # a Monotone trend over units needs >= 2 units
        ({"units": [2]}, "units must be a list of at least 2 items (the masking-unit claim is a trend over units)"),
        # the extremes claim compares 0.1 and 0.9 with claim_ratio: all three must be in the grid
        ({"mask_ratios": [0.25, 0.5, 0.75, 0.9]}, "mask_ratios must be a list holding 0.1, 0.9 and claim_ratio=0.75"),
        (
            {"claim_ratio": 0.5, "mask_ratios": [0.1, 0.75, 0.9]},
            "mask_ratios must be a list holding 0.1, 0.9 and claim_ratio=0.5",
        ),
        # claim_ratio = 0.9 compares 0.9 with itself: a gap of 0 by construction
        ({"claim_ratio": 0.9}, "claim_ratio must be a moderate ratio, not 0.1 or 0.9"),
        ({"quadtree_side": 12}, "quadtree_side must be a power of 2 >= 4; got 12"),
        ({"quadtree_side": 2}, "quadtree_side must be an integer >= 4; got 2"),
        ({"units": [1, 3]}, "units must be divisors of quadtree_side=16 and of the shapes grid side 8"),
        ({"units": [1, 16]}, "units must be divisors of quadtree_side=16 and of the shapes grid side 8"),
        # 4 x 4 grid, unit 4: one block, int(1 * 0.25) = 0 kept at ratio 0.75: the trend would have a hole
        ({"quadtree_side": 4, "units": [1, 4]}, "units must be units that keep >= 1 block at claim_ratio=0.75"),
        ({"shapes_patch": 5}, "shapes_patch must be a divisor of shapes_size=32"),
        ({"lg_side": 2, "lg_ratio": 0.9}, "lg_ratio must be a ratio that keeps >= 1 of the 4 patches"),
        ({"lg_n_samples": [2000, 200]}, "lg_n_samples must be a strictly increasing list"),
        ({"n_masks": 0}, "n_masks must be an integer >= 1; got 0"),
        ({"seeds": []}, "seeds must be a list of at least 1 items"),
    ],
)
def test_degenerate_settings_are_rejected(params, start):
    with pytest.raises(ParameterError) as e:
        book.setup("kong_theory", profile="cpu", **params)
    assert str(e.value).startswith(start) and "\n" not in str(e.value)


def test_claim_rows():
    ids = [c.id for c in claims.CLAIMS]
    assert len(ids) >= 12 and len(set(ids)) == len(ids)
    for c in claims.CLAIMS:
        assert isinstance(c, Claim) and isinstance(c.criterion, Criterion)
        assert c.id.startswith("kong.") and c.paper == "kong2023" and c.notebook in set(settings.NOTEBOOKS) | TRAINED
        assert c.statement and c.paper_value and c.measure and c.where
    per_nb = {nb: sum(c.notebook == nb for c in claims.CLAIMS) for nb in set(settings.NOTEBOOKS) | TRAINED}
    assert min(per_nb.values()) >= 4
