"""maelab.result_keys: the rules that keep committed results found, with expected values written out by hand."""

import dataclasses
import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from maelab import result_keys as rk
from maelab import store
from maelab._validate import ParameterError
from maelab.profiles import NotebookSettings, is_int, notebook_settings, setting

ROOT = Path(__file__).resolve().parents[1]
LEGACY = {"uniformity_double_norm": False, "uniformity_fc_norm": False, "patch_embed_bias": "zeros"}
OFFICIAL = {"uniformity_double_norm": True, "uniformity_fc_norm": True, "patch_embed_bias": "conv_default"}


def test_the_two_choice_sets_by_hand():
    assert rk.LEGACY_CHOICES == LEGACY and rk.OFFICIAL_CHOICES == OFFICIAL
    assert rk.CHOICE_DEFAULTS == OFFICIAL  # a model built without overrides is the official one
    assert rk.CHOICE_SETS == {"official": OFFICIAL, "legacy": LEGACY}
    assert rk.choice_set("legacy") == LEGACY
    got = rk.choice_set("official")
    got["patch_embed_bias"] = "zeros"  # a copy: the caller cannot change the set
    assert rk.OFFICIAL_CHOICES["patch_embed_bias"] == "conv_default"
    with pytest.raises(ParameterError, match="^model_choices must be one of 'official', 'legacy'") as e:
        rk.choice_set("new")
    assert "\n" not in str(e.value)


def test_a_legacy_choice_is_absent_from_a_canonical_config():
    assert rk.choices_config() == OFFICIAL  # defaults resolved: official, so listed
    assert rk.choices_config(LEGACY) == {}
    assert rk.choices_config({"uniformity_double_norm": False}) == {
        "uniformity_fc_norm": True,
        "patch_embed_bias": "conv_default",
    }
    assert rk.choices_config({**LEGACY, "uniformity_double_norm": True}) == {"uniformity_double_norm": True}
    assert rk.canonical_overrides({"patch_size": 7, **LEGACY}) == {"patch_size": 7}
    assert rk.canonical_overrides({"patch_size": 7}) == {
        "patch_size": 7,
        "uniformity_double_norm": True,
        "uniformity_fc_norm": True,
        "patch_embed_bias": "conv_default",
    }
    mixed = {"lambda_unif": 0.1, **LEGACY, "patch_embed_bias": "conv_default"}
    assert rk.canonical_overrides(mixed) == {"lambda_unif": 0.1, "patch_embed_bias": "conv_default"}
    # a model option that is not one of the choices is neither added nor dropped (rule 4)
    assert "uniformity_gather" not in rk.canonical_overrides({})
    assert rk.canonical_overrides({"uniformity_gather": "official", **LEGACY}) == {"uniformity_gather": "official"}


def test_a_legacy_pinned_config_hashes_as_the_json_written_by_hand():
    """The committed records' form: the canonical JSON of ``{"model_overrides": {"patch_size": 7}}`` (typed here, not
    produced by the code under test) hashed with SHA-256, first 16 hex digits."""
    text = '{"model_overrides":{"patch_size":7}}'
    expected = hashlib.sha256(text.encode()).hexdigest()[:16]
    config = {"model_overrides": rk.canonical_overrides({"patch_size": 7, **LEGACY})}
    assert store.config_hash(config) == expected
    official = {"model_overrides": rk.canonical_overrides({"patch_size": 7})}
    assert store.config_hash(official) != expected


@pytest.mark.parametrize("double", [False, True])
@pytest.mark.parametrize("fc", [False, True])
@pytest.mark.parametrize("bias", ["zeros", "conv_default"])
def test_round_trip_overrides_canonical_overrides(double, fc, bias):
    """Overrides naming every choice -> canonical -> overrides gives them back; canonical -> overrides ->
    canonical too. The canonical form lists exactly the non-legacy choices."""
    over = {"patch_size": 2, "uniformity_double_norm": double, "uniformity_fc_norm": fc, "patch_embed_bias": bias}
    canon = rk.canonical_overrides(over)
    listed = {k for k, v in over.items() if k == "patch_size" or v != LEGACY[k]}
    assert set(canon) == listed and all(canon[k] == over[k] for k in listed)
    assert rk.overrides_from_config(canon) == over
    assert rk.canonical_overrides(rk.overrides_from_config(canon)) == canon


def test_a_stored_config_rebuilds_the_model_it_was_computed_with():
    assert rk.overrides_from_config(None) == LEGACY  # absent = legacy, whatever today's default
    assert rk.overrides_from_config({"patch_size": 7}) == {"patch_size": 7, **LEGACY}
    assert rk.overrides_from_config({"uniformity_fc_norm": True}) == {**LEGACY, "uniformity_fc_norm": True}
    # the trap canonical_overrides' docstring warns of: a second canonical pass reads "absent" as official
    assert rk.canonical_overrides(rk.canonical_overrides(LEGACY)) == OFFICIAL


def test_overrides_that_are_not_a_dict_fail_in_one_line():
    with pytest.raises(ParameterError, match="^overrides must be a dict of model overrides or None") as e:
        rk.canonical_overrides([("patch_size", 7)])
    assert "\n" not in str(e.value)


@notebook_settings
class _Keyed(NotebookSettings):
    """A settings class with a field added later, left out of keys at its earlier behaviour."""

    n: int = setting(10, "how many", is_int())
    mode: str = setting("old", "a mode added later; 'old' is the behaviour before it existed", omit_at="old")
    model_choices: str = setting("legacy", "a model-choices field as the notebooks declare it", omit_at="legacy")


def test_settings_key_leaves_out_fields_at_their_omit_value():
    assert rk.settings_key(_Keyed.for_profile("cpu")) == {"n": 10}
    assert rk.settings_key(_Keyed.for_profile("cpu", mode="new")) == {"n": 10, "mode": "new"}
    both = _Keyed.for_profile("cpu", mode="new", model_choices="official")
    assert rk.settings_key(both) == {"n": 10, "mode": "new", "model_choices": "official"}
    # a field without omit_at is always listed, whatever its value
    assert rk.settings_key(_Keyed.for_profile("cpu", n=3)) == {"n": 3}
    assert dataclasses.fields(_Keyed)[1].metadata[rk.OMIT_AT] == "old"


def test_settings_key_refuses_what_is_not_a_settings_object():
    for bad in ({"n": 10}, _Keyed):
        with pytest.raises(ParameterError, match="^settings must be a settings object") as e:
            rk.settings_key(bad)
        assert "\n" not in str(e.value)


def test_the_model_choices_setting_takes_its_rules_from_here():
    from maelab.profiles import model_choices_setting

    f = model_choices_setting("legacy")
    assert f.metadata[rk.OMIT_AT] == rk.MODEL_CHOICES_OMITTED == "legacy"
    assert rk.LEGACY_PIN_REASON in f.metadata["doc"]
    assert rk.OMIT_AT in model_choices_setting("official").metadata
    assert rk.LEGACY_PIN_REASON not in model_choices_setting("official").metadata["doc"]


def test_importing_the_settings_engine_imports_no_torch():
    """``maelab.profiles`` imports this module; neither pulls in torch (a settings object is cheap to build)."""
    code = "import sys, maelab.profiles, maelab.result_keys; print('torch' in sys.modules)"
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() == "False"
