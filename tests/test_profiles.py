"""Notebook parameters: validated, one-line errors naming the parameter and the allowed values."""
import pytest

from maelab import book
from maelab._validate import ParameterError
from maelab.profiles import NOTEBOOKS, PROFILE_NAMES, validate_params


def test_profiles_have_the_same_keys_per_notebook():
    assert PROFILE_NAMES == ("smoke", "cpu", "gpu")
    for nb, per in NOTEBOOKS.items():
        assert set(per) == set(PROFILE_NAMES), nb
        keys = {p: set(v) for p, v in per.items()}
        assert keys["smoke"] == keys["cpu"] == keys["gpu"], nb


@pytest.mark.parametrize("params, name, allowed", [
    ({"profile": "huge"}, "profile", "one of 'smoke', 'cpu', 'gpu'"),
    ({"mask_ratio": 1.5}, "mask_ratio", "[0.0, 1.0)"),
    ({"seed": -1}, "seed", "integer >= 0"),
    ({"device": "tpu"}, "device", "'auto', 'cpu'"),
    ({"recompute": "yes"}, "recompute", "True or False"),
    ({"mask_ratios": [0.5, 1.0]}, "mask_ratios[1]", "(0.0, 1.0)"),
    ({"bogus": 1}, "parameter name", "one of"),
])
def test_bad_parameters_fail_with_one_line(params, name, allowed):
    with pytest.raises(ParameterError) as e:
        validate_params(params)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(name) and allowed in msg


def test_setup_validates_and_applies_overrides():
    ctx = book.setup("masking", profile="smoke", seed=1, device="cpu", mask_ratio=0.25)
    assert ctx.settings["mask_ratio"] == 0.25 and ctx.profile == "smoke" and str(ctx.device) == "cpu"
    assert book.setup("masking", profile="smoke").settings["mask_ratio"] == NOTEBOOKS["masking"]["smoke"]["mask_ratio"]
    with pytest.raises(ParameterError, match="^profile must be one of"):
        book.setup("masking", profile="huge")
    with pytest.raises(ParameterError, match="^mask_ratio must be"):
        book.setup("masking", profile="cpu", mask_ratio=1.5)
    with pytest.raises(ParameterError, match="^notebook"):
        book.setup("nope", profile="cpu")
    with pytest.raises(ParameterError, match="^patch_size must be a setting"):
        book.setup("masking", profile="cpu", patch_size=4)


def test_none_keeps_the_profile_value_for_notebook_parameters():
    assert validate_params({"seeds": None, "epochs": None, "mask_ratio": None}) == {
        "seeds": None, "epochs": None, "mask_ratio": None}
    with pytest.raises(ParameterError, match="^profile"):
        validate_params({"profile": None})
    with pytest.raises(ParameterError, match="^recompute"):
        validate_params({"recompute": None})
