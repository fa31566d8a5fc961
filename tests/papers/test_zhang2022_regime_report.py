"""The zhang_regime page's tables and sentences (maelab.papers.zhang2022.regime_report), on a small synthetic
set of learning curves whose crossings, gains and gaps are worked out by hand; the throughput on the smoke data."""

import numpy as np
import pandas as pd
import pytest

from maelab import profiles
from maelab._validate import ParameterError
from maelab.papers.zhang2022 import regime, regime_report

# the smoke profile: 512 images of batch 128 per epoch (512 images seen per epoch), seeds 0 and 1, epochs 0..2
S = profiles.settings("zhang_regime", "smoke", margin=0.05)

# (variant, seed, epoch): (accuracy of every probe, effective rank)
POINTS = {
    ("random", 0, 0): (0.50, 10.0),
    ("random", 1, 0): (0.60, 12.0),
    ("mae", 0, 1): (0.52, 8.0),
    ("mae", 1, 1): (0.63, 9.0),
    ("mae", 0, 2): (0.60, 11.0),
    ("mae", 1, 2): (0.70, 13.0),
    ("umae", 0, 1): (0.54, 9.0),
    ("umae", 1, 1): (0.63, 9.0),
    ("umae", 0, 2): (0.62, 12.0),
    ("umae", 1, 2): (0.69, 15.0),
}
CURVES = pd.DataFrame(
    [
        {
            "variant": v,
            "seed": s,
            "epoch": e,
            "images_seen": 512 * e,
            "linear_acc": acc,
            "linear_acc_mean": acc,
            "knn_acc": acc,
            "knn_acc_mean": acc,
            "effective_rank": rank,
        }
        for (v, s, e), (acc, rank) in POINTS.items()
    ]
)
VARIANTS = regime.variants(S)


def test_first_crossing_in_words():
    assert regime_report.first_crossing(CURVES, 0.0) == "after 512 images seen (epoch 1)"
    assert regime_report.first_crossing(CURVES, 0.05) == "after 1,024 images seen (epoch 2)"
    assert regime_report.first_crossing(CURVES, 0.2) == "not within this budget"


def test_gain_table_against_random_init():
    tab = regime_report.gain_table(CURVES, S)
    assert list(tab["MAE's"])[0] == "linear probe, [CLS]" and len(tab) == 4
    row = tab.iloc[0]
    assert row["random init (%)"] == "55.0" and row["MAE at 1,024 images (%)"] == "65.0"
    assert row["gain per seed (points)"] == "+10.0, +10.0"
    assert row["first above random init"] == "after 512 images seen (epoch 1)"
    assert row["first above by > 5 points"] == "after 1,024 images seen (epoch 2)"


def test_learning_answer_reads_the_crossings_and_the_rank():
    text = regime_report.learning_answer(CURVES, S, "")
    assert text == (
        "MAE's [CLS] probe is above its random init in every seed from 512 images seen (epoch 1) on; by more than "
        "the 5-point margin from 1,024 images seen (epoch 2). At the last snapshot the precondition holds. MAE's "
        "[CLS] effective rank (mean over seeds) is 11.0 at init, 8.5 at its lowest (epoch 1) and 12.0 at the end."
    )
    assert "does not hold (seed #1 short)" in regime_report.learning_answer(CURVES, S, "seed #1 short")


def test_gap_table_and_gap_at_crossing_pair_by_seed():
    tab = regime_report.gap_table(CURVES, VARIANTS)
    assert list(tab["images seen"]) == ["512", "1,024"]
    # epoch 1: probe +2 and 0 points, rank +1 and 0; epoch 2: probe +2 and -1, rank +1 and +2
    assert list(tab["probe [CLS]"]) == [f"+1.0 ± {np.sqrt(2):.1f}", f"+0.5 ± {np.std([2, -1], ddof=1):.1f}"]
    assert list(tab["rank [CLS]"]) == [f"+0.5 ± {np.sqrt(0.5):.1f}", f"+1.5 ± {np.sqrt(0.5):.1f}"]
    text = regime_report.gap_at_crossing(CURVES, VARIANTS)
    assert text == (
        "Where MAE's [CLS] probe first rises above random init in every seed (512 images), "
        f"U-MAE − MAE is +1.0 ± {np.sqrt(2):.1f} points."
    )
    never = CURVES[~((CURVES.variant == "mae") & (CURVES.seed == 0))].copy()
    never.loc[never.variant == "random", "linear_acc"] = 0.99
    assert regime_report.gap_at_crossing(never, VARIANTS).startswith("MAE's [CLS] probe never rises")


def test_budget_table_and_sentence():
    fits = {None: pd.DataFrame({"images_needed": [1000.0, 2000.0]}), 2: pd.DataFrame({"images_needed": [np.inf, 3.0]})}
    tab, text = regime_report.budget_table(fits, S, step_ips=10.0, trainer_ips=5.0)
    # 2 methods x 2 seeds x 2 datasets = 8 runs; this page's runs: 2 epochs x 512 images
    assert list(tab["fit"]) == ["all 2 snapshots", "last 2 snapshots"]
    assert list(tab["images per run (every seed)"]) == ["2,000", "never (flat)"]
    assert tab.iloc[0]["8 runs, min at 5 img/s (trainer)"] == f"{8 * 2000 / 5 / 60:,.0f}"
    assert tab.iloc[0]["8 runs, min at 10 img/s (steps)"] == f"{8 * 2000 / 10 / 60:,.0f}"
    assert tab.iloc[0]["× images of this page's runs (1,024)"] == f"{2000 / 1024:.1f}"
    assert list(tab["within 120 min"]) == ["yes", "no"]
    assert text.startswith("By the fit over all snapshots, every seed clears the margin after about 2,000 images")
    assert "within the 120-min budget" in text and "ranges from 2,000 to 2,000 images" in text
    with pytest.raises(ParameterError, match="^fits must be"):
        regime_report.budget_table({2: fits[2]}, S, 10.0, 5.0)


def test_fit_table_formats_the_extrapolation():
    fit = regime.margin_extrapolation(CURVES, 0.05)
    tab = regime_report.fit_table(fit)
    assert list(tab.seed) == [0, 1] and list(tab["snapshots fitted"]) == [2, 2]
    # seed 0: gain +2 points at 512 images, +10 at 1,024: 8 points per doubling
    assert tab.iloc[0]["slope (points per doubling of images)"] == "+8.00"
    assert tab.iloc[0]["gain at 1,024 images (points)"] == "+10.0"


def test_throughput_measured_and_tabled():
    thr = regime_report.measure_throughput(S)
    assert sorted(thr) == ["patch4", "patch7"] and all(v > 0 for v in thr.values())
    tab = regime_report.throughput_table(S, {"patch4": 100.4, "patch7": 250.6})
    assert list(tab.tokens) == [49, 16] and list(tab["visible tokens"]) == [12, 4]
    assert list(tab["training images / s"]) == [100, 251]


@pytest.mark.parametrize(
    "call, start",
    [
        (lambda: regime_report.gain_table(CURVES, profiles.settings("zhang_umae", "smoke")), "S must be"),
        (lambda: regime_report.gain_table(CURVES.drop(columns="knn_acc"), S), "curves must be a seed_curves table"),
        (lambda: regime_report.throughput_table(S, {"patch4": 1.0}), "thr must be measure_throughput's result"),
        (lambda: regime_report.fit_table(pd.DataFrame({"seed": [0]})), "fit must be a margin_extrapolation table"),
    ],
)
def test_bad_input_is_one_line(call, start):
    with pytest.raises(ParameterError) as e:
        call()
    assert str(e.value).startswith(start) and "\n" not in str(e.value)


def test_recipe_states_the_schedule_and_the_verdict():
    timing = pd.DataFrame({"train_seconds": [60.0, 180.0], "eval_seconds": [30.0, 30.0], "snapshots": [3, 3]})
    text = regime_report.recipe(S, timing, "")
    assert text.startswith("**Recipe.** `zhang_umae` on mnist10k (28 px, 1 channel): `micro` ViT, patch 7,")
    assert "512 images × 2 epochs = 1,024 images seen per run" in text
    assert "the [CLS] precondition fails" not in text
    assert "Measured here: 2.0 min of training per run of 1,024 images (mean over the 2 runs) and 0.2 min" in text
    assert "the [CLS] precondition fails" in regime_report.recipe(S, timing, "seed #0 short")
