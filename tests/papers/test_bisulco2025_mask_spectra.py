"""The masking page's computations (maelab.papers.bisulco2025.mask_spectra): the closed form is exact and the
printed one is not, the grating is zero, the masks keep the official count, and the configs find the committed
records."""

import json
from pathlib import Path

import numpy as np
import pytest

from maelab import profiles, store
from maelab._validate import ParameterError
from maelab.papers.bisulco2025 import mask_spectra

ROOT = Path(__file__).resolve().parents[2]


def small(**over):
    params = {"D": 32, "patch_sizes_1d": [2, 4, 8], "n_masks_1d": 6, "crop": 32, "n_crops": 2, "n_mask_draws": 2}
    params.update(over)
    return profiles.settings("masking", "smoke", **{**params, "patch_sizes_2d": [4, 8]})


def test_identity_1d_corrected_form_is_exact_and_printed_form_is_not():
    rows = mask_spectra.identity_1d(small(), seed=3)
    assert rows["p"] == [2, 4, 8]
    assert max(rows["max_err"]) < 1e-12  # the DFT identity holds exactly (floating point only)
    assert min(rows["max_err_printed"]) > 1e-3  # without /D the phase is always 1: a different function


def test_identity_1d_same_seed_same_numbers():
    assert mask_spectra.identity_1d(small(), 5) == mask_spectra.identity_1d(small(), 5)


def test_identity_table_formats_each_row():
    table = mask_spectra.identity_table({"p": [2, 8], "max_err": [1e-16, 2.5e-15], "max_err_printed": [0.5, 1.0]})
    lines = table.splitlines()
    assert len(lines) == 4
    assert lines[2] == "| 2 | 1.00e-16 | 5.00e-01 |"
    assert lines[3] == "| 8 | 2.50e-15 | 1.00e+00 |"
    with pytest.raises(ParameterError, match="^ident must be"):
        mask_spectra.identity_table({"p": [2], "max_err": []})


def test_spectra_2d_grating_is_zero_and_masks_keep_the_official_count():
    S = small(mask_ratio=0.5)
    out = mask_spectra.spectra_2d(S, seed=1)
    assert out["patch_sizes"] == [4, 8]
    assert out["hf_fraction"].shape == (2, 2) and np.all((out["hf_fraction"] >= 0) & (out["hf_fraction"] <= 1))
    assert np.all(out["grating_max"] < 1e-20)
    assert out["mean_psd"].shape == (3, 32, 32) and out["example_mask"].shape == (2, 32, 32)
    for j, p in enumerate([4, 8]):
        L = (32 // p) ** 2
        assert out["example_mask"][j].mean() == pytest.approx(int(L * 0.5) / L)  # int(L(1-m)) of L kept


@pytest.mark.parametrize(
    "name, config_of",
    [("identity_1d", mask_spectra.identity_config), ("spectra_2d", mask_spectra.spectra_config)],
)
@pytest.mark.parametrize("profile", ["cpu", "gpu"])
def test_configs_find_the_committed_records(name, config_of, profile):
    record = ROOT / "data" / "results" / "masking" / f"{name}.{profile}.json"
    stored = json.loads(record.read_text())["provenance"]["config_hash"]
    S = profiles.settings("masking", profile)
    assert store.config_hash({"profile": profile, **config_of(S, 0)}) == stored


def test_mask_examples_keep_the_official_count_and_restore_in_place():
    photos = {"flat": np.full((40, 48), 0.2), "colour": np.full((32, 32, 3), 0.8)}
    rows = mask_spectra.mask_examples(photos, (0.25, 0.75), (1, 2), seed=0, patch=8, side=32)
    assert [(r["name"], r["unit"]) for r in rows] == [("flat", 1), ("flat", 2), ("colour", 1), ("colour", 2)]
    for r in rows:
        value = 0.2 if r["name"] == "flat" else 0.8
        assert r["image"].shape == (32, 32, 3)
        for panel, m in zip(r["panels"], (0.25, 0.75)):
            units = 16 // r["unit"] ** 2
            assert panel["total"] == 16 and panel["kept"] == int(units * (1 - m)) * r["unit"] ** 2
            shown = np.asarray(panel["image"])
            assert np.isclose(shown, value).sum() == panel["kept"] * 8 * 8 * 3  # kept patches back in place
            assert np.isclose(shown, 0.5).sum() == (16 - panel["kept"]) * 8 * 8 * 3  # the rest grey


@pytest.mark.parametrize(
    "call, start",
    [
        (lambda: mask_spectra.identity_1d({"D": 32}, 0), "settings must be the masking page's MaskingSettings"),
        (lambda: mask_spectra.spectra_config(small(), 0.5), "seed must be an int"),
        (lambda: mask_spectra.mask_examples({}, (0.5,), (1,), 0), "photos must be a non-empty mapping"),
        (lambda: mask_spectra.mask_examples({"a": np.zeros((32, 32))}, (0.5,), (3,), 0, side=32), "units must be"),
        (lambda: mask_spectra.mask_examples({"a": np.zeros((32, 32))}, (1.0,), (1,), 0, side=32), "ratios must be"),
        (lambda: mask_spectra.mask_examples({"a": np.zeros((32, 32))}, (0.5,), (1,), 0, side=30), "side must be"),
        (lambda: mask_spectra.mask_examples({"a": np.zeros((16, 16))}, (0.5,), (1,), 0, side=32), "photos['a']"),
    ],
)
def test_bad_input_is_one_line(call, start):
    with pytest.raises(ParameterError) as e:
        call()
    assert str(e.value).startswith(start) and "\n" not in str(e.value)
