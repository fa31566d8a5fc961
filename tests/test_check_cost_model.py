"""The load-robust measured time and the summary of the cost model's check (maelab.cost.check, what
scripts/check_cost_model.py prints; no timings, no stored results)."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import load_repo_script

from maelab.cost import check


@pytest.fixture(scope="module")
def ccm():
    return check


def test_the_script_compares_with_the_library_s_check():
    """The script recovers the committed runs and leaves the comparison to maelab.cost.check (no copy of it)."""
    script = load_repo_script("scripts/check_cost_model.py")
    assert script.compare is check.compare and script.summary is check.summary


def test_robust_seconds_median_epoch_ignores_a_slowed_minority(ccm):
    # 25 identical epochs of ~2.2 s, three slowed by other jobs (the committed compare_shapes mae s0 looked like this)
    epochs = [2.2] * 22 + [56.0, 40.0, 30.0]
    t, basis = ccm.robust_seconds(sum(epochs), epochs, [sum(epochs), 55.0, 56.0])
    assert t == pytest.approx(2.2 * 25) and basis == "median epoch x epochs"


def test_robust_seconds_fastest_of_identical_runs_then_raw(ccm):
    t, basis = ccm.robust_seconds(771.0, None, [57.3, 135.7, 771.0])
    assert t == 57.3 and basis == "fastest of 3 runs"
    t, basis = ccm.robust_seconds(160.6, None, [160.6])
    assert t == 160.6 and basis == "one run (raw)"


def test_summary_names_the_comparisons_within_x1_5(ccm):
    df = pd.DataFrame(
        [
            {
                "notebook": "nb",
                "result": "r",
                "wall min (measured)": 20.0,
                "wall min (robust training)": 8.0,
                "total min (predicted)": 9.0,
                "note": "",
            }
        ]
    )
    pr = pd.DataFrame(
        {
            "notebook": ["nb"] * 3,
            "train s (measured)": [60.0, 60.0, 720.0],
            "train s (robust)": [60.0, 60.0, 60.0],
            "train s (predicted)": [70.0, 70.0, 70.0],
            "ratio": [70 / 60, 70 / 60, 70 / 720],
            "ratio (robust)": [70 / 60] * 3,
            "disturbed": [False, False, True],
        }
    )
    s = ccm.summary(df, pr).set_index("notebook")
    assert s.loc["nb", "wall ratio"] == 0.45 and s.loc["nb", "wall ratio (robust training)"] == 1.12
    assert s.loc["nb", "training ratio"] == 0.25 and s.loc["nb", "training ratio (robust)"] == 1.17
    assert s.loc["nb", "within x1.5"] == "wall (robust training), training (robust)"
    assert s.loc["nb", "runs within x1.5"] == "2/3" and s.loc["nb", "runs within x1.5 (robust)"] == "3/3"
    assert s.loc["nb", "disturbed runs"] == 1


def test_summary_leaves_out_results_computed_with_another_thread_count(ccm):
    """The prediction assumes the calibration's torch threads: a result computed with another count is counted but
    enters no ratio (its wall row is not 'fresh', its runs leave the training ratios)."""
    df = pd.DataFrame(
        [
            {"notebook": "nb", "result": "a", "wall min (measured)": 2.0, "wall min (robust training)": 2.0,
             "total min (predicted)": 2.0, "note": ""},
            {"notebook": "nb", "result": "b", "wall min (measured)": 9.0, "wall min (robust training)": 9.0,
             "total min (predicted)": 2.0, "note": "computed with 1 torch thread(s), calibration 2"},
        ]
    )  # fmt: skip
    pr = pd.DataFrame(
        {
            "notebook": ["nb", "nb"],
            "train s (measured)": [60.0, 500.0],
            "train s (robust)": [60.0, 500.0],
            "train s (predicted)": [60.0, 60.0],
            "ratio": [1.0, 0.12],
            "ratio (robust)": [1.0, 0.12],
            "disturbed": [False, False],
            "other threads": [False, True],
        }
    )
    s = ccm.summary(df, pr).set_index("notebook")
    assert s.loc["nb", "wall ratio"] == 1.0 and s.loc["nb", "training ratio"] == 1.0
    assert s.loc["nb", "results from scratch"] == "1/2" and s.loc["nb", "training runs"] == 1
    assert s.loc["nb", "other threads"] == 1 and s.loc["all", "other threads"] == 1
