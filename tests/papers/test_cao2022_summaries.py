"""The cao_decoder page's runs and display tables (maelab.papers.cao2022.summaries): the configs find the committed
records, and the aggregates match hand-computed values on small synthetic runs."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from maelab import profiles, store
from maelab._validate import ParameterError
from maelab.papers.cao2022 import summaries

ROOT = Path(__file__).resolve().parents[2]
CPU = profiles.settings("cao_decoder", "cpu")


def stored_hash(name: str) -> str:
    record = ROOT / "data" / "results" / "cao_decoder" / f"{name}.cpu.json"
    return json.loads(record.read_text())["provenance"]["config_hash"]


@pytest.mark.parametrize("variant", ["softmax", "exp", "skip"])
@pytest.mark.parametrize("seed", [0, 2])
def test_run_config_finds_the_committed_run(variant, seed):
    cfg = {"profile": "cpu", **summaries.run_config(CPU, variant, seed)}
    assert store.config_hash(cfg) == stored_hash(f"run_{variant}_s{seed}")


def test_mean_predictor_config_finds_the_committed_record():
    cfg = {"profile": "cpu", **summaries.mean_predictor_config(CPU)}
    assert store.config_hash(cfg) == stored_hash("mean_predictor")


def changes(values):
    """A changes frame: values[part][block - 1] = per-image changes."""
    rows = [
        {"part": part, "block": b + 1, "image": i, "change": c}
        for part, blocks in values.items()
        for b, cs in enumerate(blocks)
        for i, c in enumerate(cs)
    ]
    return pd.DataFrame(rows)


RUNS = {
    ("softmax", 0): {"changes": changes({"encoder": [[1.0, 3.0], [0.5, 0.5]], "decoder": [[0.2, 0.4]]})},
    ("softmax", 1): {"changes": changes({"encoder": [[3.0, 5.0], [0.5, 1.5]], "decoder": [[0.2, 0.2]]})},
}


def test_per_layer_means_over_seeds_and_spread_over_images():
    out = summaries.per_layer(RUNS, {"softmax": [0, 1], "exp": []}, "changes", "block", "change", part="encoder")
    assert list(out) == ["softmax"]  # no learned seed: left out
    x, m, se, sd = out["softmax"]
    assert list(x) == [1, 2]
    # block 1: seed means 2 and 4 -> mean 3, s.e. sqrt(2)/sqrt(2) = 1; images 1, 3, 3, 5 -> s.d. sqrt(8/3)
    assert m == pytest.approx([3.0, 0.75])
    assert se == pytest.approx([1.0, 0.25])
    assert sd == pytest.approx([np.sqrt(8 / 3), np.std([0.5, 0.5, 0.5, 1.5], ddof=1)])
    one = summaries.per_layer(RUNS, {"softmax": [1]}, "changes", "block", "change", part="decoder")["softmax"]
    assert one[1] == pytest.approx([0.2]) and np.isnan(one[2]).all()


def test_top_block_names_the_largest_mean_change():
    text = summaries.top_block(RUNS, [0, 1])
    # pooled means: encoder 1: 3.0, encoder 2: 0.75, decoder 1: 0.25
    assert text == "encoder block 1 (mean change 3.00); the other blocks range from 0.25 to 0.75"
    assert summaries.top_block(RUNS, []) == "no softmax run learned"


def test_change_table_rows_per_variant():
    tab = summaries.change_table(RUNS, {"softmax": [0, 1], "exp": []}, {"softmax": "soft", "exp": "unnorm"})
    assert list(tab.variant) == ["soft", "unnorm"]
    assert list(tab["seeds that learned"]) == [2, 0]
    # per-image max over blocks: seed 0 -> (1.0, 3.0) mean 2; seed 1 -> (3.0, 5.0) mean 4
    assert tab.iloc[0, 2] == f"3.00 ± {np.std([2.0, 4.0], ddof=1):.2f}"
    assert tab.iloc[1, 2] == "—" and tab.iloc[1, 3] == "—"


def test_run_table_formats_drops_and_divergence():
    summary = pd.DataFrame(
        {
            "variant": ["softmax", "exp"],
            "seed": [0, 0],
            "init_loss": [2.0, 2.0],
            "final_loss": [0.5, float("nan")],
            "learned": [True, False],
            "init_probe_acc": [0.1, 0.1],
            "probe_acc": [0.8, float("nan")],
            "diverged": ["", "NonFiniteLossError: loss nan at epoch 3/5, step 7"],
            "train_seconds": [12.4, 3.0],
        }
    )
    tab = summaries.run_table(summary, 1.0, {"softmax": "soft", "exp": "unnorm"})
    assert list(tab.iloc[0]) == ["soft", 0, "2.000", "0.500", "75 %", "50.0 %", "yes", "10.0", "80.0", "no", "12"]
    assert list(tab.iloc[1, 4:]) == ["—", "—", "no", "10.0", "—", "epoch 3", "3"]
    with pytest.raises(ParameterError, match="^summary must be a table with columns") as e:
        summaries.run_table(summary.drop(columns="learned"), 1.0, {})
    assert "\n" not in str(e.value)


def test_attention_display_mean_and_spread_per_variant():
    att = pd.DataFrame(
        {
            "variant": ["softmax", "softmax", "skip"],
            "seed": [0, 1, 0],
            "visible": [0.2, 0.4, 0.5],
            "masked": [0.7, 0.5, 0.4],
            "cls": [0.1, 0.1, 0.1],
            "far_fraction": [0.6, 0.6, 0.3],
            "r2": [0.9, 0.7, 0.8],
            "r2_chance": [0.25, 0.25, 0.25],
        }
    )
    tab = summaries.attention_display(att, ["softmax", "exp", "skip"], {"softmax": "S", "skip": "K"}, 0.8125)
    assert list(tab.index) == ["S", "K", "uniform attention (reference)"]
    assert tab.loc["S", "mass on visible"] == f"0.300 ± {np.std([0.2, 0.4], ddof=1):.3f}"
    assert tab.loc["K", "R² on visible values"] == "0.800"
    assert tab.loc["uniform attention (reference)", "visible mass beyond 8 neighbours"] == "0.812"


def test_distance_profile_normalises_by_total_mass():
    attention = pd.DataFrame({"visible": [0.5, 1.0], "masked": [0.25, 0.5], "cls": [0.25, 0.5]})
    by_distance = np.array([[9.0, 0.2, np.nan], [9.0, 0.6, 0.4]])  # images x distances 0..2
    runs = {("exp", 3): {"attention": attention, "by_distance": by_distance}}
    prof = summaries.distance_profile(runs, "exp", [3])
    # totals 1 and 2: distance 1 -> mean(0.2, 0.3); distance 2 -> nanmean(nan, 0.2)
    assert prof.shape == (1, 2) and prof[0] == pytest.approx([0.25, 0.2])


@pytest.mark.parametrize(
    "call, start",
    [
        (lambda: summaries.run_config({"seeds": [0]}, "softmax", 0), "settings must be the cao_decoder page's"),
        (lambda: summaries.mean_predictor(profiles.settings("cao_theory", "smoke")), "settings must be"),
        (lambda: summaries.top_block(RUNS, [0, 7]), "runs must be a stored run for every"),
        (lambda: summaries.distance_profile(RUNS, "exp", [0]), "runs must be a stored run for every"),
        (lambda: summaries.attention_display(pd.DataFrame({"variant": []}), [], {}, 0.5), "att must be"),
    ],
)
def test_bad_input_is_one_line(call, start):
    with pytest.raises(ParameterError) as e:
        call()
    assert str(e.value).startswith(start) and "\n" not in str(e.value)
