"""The kong_theory page's computations and tables (maelab.papers.kong2023.theory_report): the configs find the
committed records, Figure 4's panels are the hand-solved ones, and the tables match hand-computed values."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from maelab import profiles, store
from maelab._validate import ParameterError
from maelab.papers.kong2023 import theory_report as report

ROOT = Path(__file__).resolve().parents[2]
CPU = profiles.settings("kong_theory", "cpu")


def stored_hash(name: str) -> str:
    record = ROOT / "data" / "results" / "kong_theory" / f"{name}.cpu.json"
    return json.loads(record.read_text())["provenance"]["config_hash"]


def test_configs_find_the_committed_records():
    def cpu_hash(config):
        return store.config_hash({"profile": "cpu", **config})

    assert cpu_hash(report.figure4_config()) == stored_hash("figure4")
    assert cpu_hash(report.level_table_config(CPU)) == stored_hash("level_table")
    assert cpu_hash(report.shapes_table_config(CPU)) == stored_hash("shapes_table")
    assert cpu_hash(report.theorem2_config(CPU)) == stored_hash("theorem2")


def test_figure4_panels_are_the_hand_solved_ones():
    # z1 -> z2, z3 -> z4..z7 -> x1..x8. One pixel masked: its parent z4 also sits above the visible x2, and no
    # child of z4 is shared, so c = {z4}. z2's subtree masked: only the root is above both parts. One pixel (x8)
    # visible: its parent z7 is above the masked x7.
    f4 = report.figure4()
    assert f4["low"] == {"c": ["z4"], "shared": ["z1", "z2", "z4"], "masked": ["x1"], "min_level": 2}
    assert f4["moderate"]["c"] == ["z1"] and f4["moderate"]["min_level"] == 0
    assert f4["moderate"]["masked"] == ["x1", "x2", "x3", "x4"]
    assert f4["extreme"]["c"] == ["z7"] and f4["extreme"]["shared"] == ["z1", "z3", "z7"]


def test_level_markdown_means_over_seeds_and_marks_infeasible_cells():
    S = profiles.settings("kong_theory", "smoke", mask_ratios=[0.1, 0.75, 0.9], units=[1, 2])
    rows = []
    for seed, (lvl, nc) in enumerate(((1.0, 2.0), (2.0, 4.0))):
        for r in S.mask_ratios:
            for u in S.units:
                infeasible = r == 0.9 and u == 2
                rows.append(
                    {"seed": seed, "mask_ratio": r, "unit": u, "mean_level": np.nan if infeasible else lvl + u,
                     "n_c": np.nan if infeasible else nc}
                )  # fmt: skip
    text = report.level_markdown(pd.DataFrame(rows), S)
    lines = text.splitlines()
    # an 8 x 8 patch grid: the root above 8 x 8 patches (level 0), then 4 x 4 blocks, then 2 x 2 blocks (level 2)
    assert "bottom latents at level 2" in lines[0]
    assert lines[2] == "| mask ratio | unit 1 | unit 2 |"
    assert lines[4] == "| 0.1 | 2.50 (3.0) | 3.50 (3.0) |"  # level 1 + u and 2 + u averaged; n_c (2 + 4) / 2
    assert lines[6] == "| 0.9 | 2.50 (3.0) | — |"
    with pytest.raises(ParameterError, match="table"):
        report.level_markdown(pd.DataFrame({"mask_ratio": [0.1]}), S)


def test_theorem2_markdown_takes_the_worst_case_per_fit():
    t = pd.DataFrame(
        {
            "model": ["tree"] * 4,
            "fit": ["population", "population", "sampled", "sampled"],
            "n_samples": [0, 0, 200, 200],  # as stored: 0 for the exact fit
            "min_cc_c": [1.0, 0.9999999999, 0.9, 0.8],
            "max_cc_s_mc": [1e-12, 3e-12, 0.1, 0.05],
        }
    )
    lines = report.theorem2_markdown(t).splitlines()
    assert lines[-2] == "| tree | exact covariances | 0.9999999999 | 3.00e-12 |"
    assert lines[-1] == "| tree | 200 samples | 0.8000000000 | 1.00e-01 |"
    with pytest.raises(ParameterError, match="table"):
        report.theorem2_markdown(t.drop(columns="fit"))


def test_other_settings_are_refused_in_one_line():
    other = profiles.settings("kong_reconstruction", "smoke")
    for fn in (report.level_table_config, report.shapes_table_config, report.theorem2_config, report.level_table):
        with pytest.raises(ParameterError, match="KongTheorySettings"):
            fn(other)
