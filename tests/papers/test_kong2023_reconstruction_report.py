"""The kong_reconstruction page's stored examples and display (maelab.papers.kong2023.reconstruction_report): the
config finds the committed record, and the table and sentences match hand-computed values."""

import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from maelab import profiles, store
from maelab._validate import ParameterError
from maelab.papers.kong2023 import reconstruction_report as report

ROOT = Path(__file__).resolve().parents[2]


def test_examples_config_finds_the_committed_record():
    record = ROOT / "data" / "results" / "kong_reconstruction" / "example_originals.cpu.json"
    stored = json.loads(record.read_text())["provenance"]["config_hash"]
    cpu = profiles.settings("kong_reconstruction", "cpu")
    assert store.config_hash({"profile": "cpu", **report.examples_config(cpu)}) == stored


def trained():
    # two models (first seen: r0.1 u1), two seeds each
    return pd.DataFrame(
        {
            "model": ["r0.1 u1", "r0.1 u1", "r0.75 u1", "r0.75 u1"],
            "seed": [0, 1, 0, 1],
            "loss": [0.5, 0.7, 0.2, 0.2],
            "reference_loss": [1.0, 1.2, 1.0, 1.0],
            "patch_mean_loss": [0.9, 0.9, 0.8, 0.6],
            "train_loss": [0.4, 0.6, 0.1, 0.1],
        }
    )


def test_loss_table_in_the_order_the_models_appear():
    checks = [SimpleNamespace(ratios=(0.80, 0.90)), SimpleNamespace(ratios=(0.25, 0.5))]
    t = report.loss_table(trained(), checks)
    assert list(t.index) == ["r0.1 u1", "r0.75 u1"]
    # mean 0.6, sample std of (0.5, 0.7) = 0.1414
    assert t.loc["r0.1 u1", "masked-patch loss"] == "0.600 ± 0.141"
    assert t.loc["r0.75 u1", "masked-patch loss"] == "0.200 ± 0.000"
    assert t.loc["r0.1 u1", "random init"] == "1.100"
    assert t.loc["r0.75 u1", "patch-mean predictor"] == "0.700"
    # the smallest drop over seeds: 1 - the largest ratio
    assert list(t["drop below the better reference (%)"]) == ["10.0", "50.0"]


def test_loss_table_refuses_bad_input_in_one_line():
    with pytest.raises(ParameterError, match="checks"):
        report.loss_table(trained(), [SimpleNamespace(ratios=(0.5,))])
    with pytest.raises(ParameterError, match="trained"):
        report.loss_table(trained().drop(columns="patch_mean_loss"), [])


def test_series_text_means_over_seeds():
    frame = pd.DataFrame({"ratio": [0.75, 0.1, 0.1, 0.75], "ssim": [0.4, 0.5, 0.6, 0.5]})
    assert report.series_text(frame, "ratio", "ssim", 3) == "0.1: 0.550, 0.75: 0.450"
    assert report.series_text(frame, "ratio", "ssim", 0) == "0.1: 1, 0.75: 0"
    with pytest.raises(ParameterError, match="digits"):
        report.series_text(frame, "ratio", "ssim", -1)


def test_other_settings_are_refused_in_one_line():
    with pytest.raises(ParameterError, match="KongReconstructionSettings"):
        report.examples_config(profiles.settings("kong_theory", "smoke"))
