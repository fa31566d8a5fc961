"""The zhang_ablations page's runs and display (maelab.papers.zhang2022.ablations_report): the configs find the
committed records, and the tables and sentences match hand-computed values on small synthetic runs."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from maelab import profiles, store
from maelab._validate import ParameterError
from maelab.papers.zhang2022 import ablations_report as report

ROOT = Path(__file__).resolve().parents[2]
# cpu: lambdas 0, 0.01, 0.1; lam_eff 0.00125, lam_paper 0.01; patch 7, fine patch 4
CPU = profiles.settings("zhang_ablations", "cpu")


def stored_hash(name: str) -> str:
    record = ROOT / "data" / "results" / "zhang_ablations" / f"{name}.cpu.json"
    return json.loads(record.read_text())["provenance"]["config_hash"]


def cpu_hash(config: dict) -> str:
    return store.config_hash({"profile": "cpu", **config})


@pytest.mark.parametrize("name", ["lambda_sweep", "simmim", "no_mask"])
def test_group_configs_find_the_committed_records(name):
    assert cpu_hash(report.group_config(CPU, name)) == stored_hash(name)


@pytest.mark.parametrize("name", ["lam_eff_new_seeds", "lam_eff_table3_seeds", "lam_eff_fine_patch"])
def test_effective_configs_find_the_committed_records(name):
    assert cpu_hash(report.effective_config(CPU, name)) == stored_hash(name)


def test_raw_pixels_config_finds_the_committed_record():
    assert cpu_hash(report.raw_pixels_config(CPU)) == stored_hash("raw_pixels")


def test_bad_names_and_settings_are_refused_in_one_line():
    with pytest.raises(ParameterError, match="name"):
        report.group_config(CPU, "lam_eff_new_seeds")
    with pytest.raises(ParameterError, match="name"):
        report.effective_config(CPU, "lambda_sweep")
    with pytest.raises(ParameterError, match="ZhangAblationsSettings"):
        report.raw_pixels_config(profiles.settings("zhang_umae", "smoke"))


def sweep():
    """Three seeds at lambda 0, 0.01 and 0.1; the rank rises and the [CLS] probe falls with lambda in every seed."""
    rows = []
    for seed in (0, 1, 2):
        for k, lam in enumerate((0.0, 0.01, 0.1)):
            rows.append(
                {"variant": ["lam_0", "lam_0p01", "lam_0p1"][k], "lam": lam, "seed": seed,
                 "linear_acc": 0.60 - 0.02 * k - 0.01 * seed, "knn_acc": 0.5, "linear_acc_mean": 0.70 + 0.01 * k,
                 "effective_rank": 10.0 + 2 * k + seed}
            )  # fmt: skip
    return pd.DataFrame(rows)


def test_trained_runs_drop_the_random_init_and_add_lambda():
    runs = pd.DataFrame({"variant": ["random", "lam_0", "lam_0p01"], "seed": [0, 0, 0]})
    out = report.trained_runs({"runs": runs}, with_lambda=True)
    assert out.variant.tolist() == ["lam_0", "lam_0p01"] and out.lam.tolist() == [0.0, 0.01]
    assert "lam" not in report.trained_runs({"runs": runs}).columns


def test_mean_se_and_paired_gain_by_hand():
    m, se = report.mean_se(sweep(), "lam", "effective_rank")
    assert m[0.1] == pytest.approx(15.0)  # 14, 15, 16
    assert se[0.1] == pytest.approx(1 / np.sqrt(3))  # sample std 1 over sqrt(3)
    assert report.paired_gain(sweep(), "linear_acc", 0.1).tolist() == pytest.approx([-0.04, -0.04, -0.04])
    with pytest.raises(ParameterError, match="lam"):
        report.paired_gain(sweep(), "linear_acc", 0.5)


def test_runs_table_rows_and_the_papers_values():
    sw = sweep()
    sr = pd.DataFrame(
        {"variant": ["simmim", "simmim", "usimmim", "usimmim"], "seed": [0, 1, 0, 1],
         "linear_acc": [0.3, 0.5, 0.4, 0.4], "knn_acc": 0.2, "linear_acc_mean": 0.3, "effective_rank": 5.0}
    )  # fmt: skip
    nm = sw[sw.lam == 0].assign(variant="mask_0", linear_acc=0.9)
    t = report.runs_table(CPU, sw, sr, nm, {"linear_acc": 0.85, "knn_acc": 0.95}).set_index("setting")
    assert list(t.index) == [
        "λ = 0 (MAE)", "λ = 0.01", "λ = 0.1", "λ = 0", "λ = 0.01 (U-SimMIM)", "mask 0", "mask 0.75", "no encoder"
    ]  # fmt: skip
    assert t.loc["λ = 0.01", "paper (ImageNet-100, %)"] == "67.5"
    assert t.loc["λ = 0.1", "paper (ImageNet-100, %)"] == "45.1"
    # SimMIM's [CLS] probe: mean 0.4, sample std 0.1414 over sqrt(2) = 0.1
    assert t.loc["λ = 0", "linear probe [CLS]"] == "0.400 ± 0.100"
    assert t.loc["λ = 0 (MAE)", "effective rank [CLS]"] == "11.000 ± 0.577"  # 10, 11, 12
    assert t.loc["mask 0", "linear probe [CLS]"] == "0.900 ± 0.000"
    assert t.loc["no encoder", "k-NN [CLS]"] == "0.950" and t.loc["no encoder", "effective rank [CLS]"] == "—"


def test_effective_table_with_the_fine_patch_group():
    def runs(variants):
        return pd.DataFrame(
            [{"variant": v, "seed": s, "linear_acc": 0.5 + 0.1 * s, "linear_acc_mean": 0.6, "knn_acc": 0.4,
              "effective_rank": 8.0 + 2 * s} for v in variants for s in (0, 1)]
        )  # fmt: skip

    t = report.effective_table(
        CPU, runs(["lam_0", "lam_0p00125", "lam_0p01", "random"]), runs(["lam_0", "lam_0p00125", "random"]),
        {"linear_acc": 0.9, "knn_acc": 0.8},
    )  # fmt: skip
    assert t["patch"].tolist() == ["7"] * 4 + ["4"] * 3 + ["—"]
    assert t["variant"].tolist()[:4] == [
        "MAE (λ = 0)", "U-MAE, λ = 0.00125 (effective)", "U-MAE, λ = 0.01 (as written)", "random init (no training)"
    ]  # fmt: skip
    # 50 % and 60 %: mean 55.0, sample s.d. 7.1 points; rank 8 and 10: 9.0 ± 1.4
    assert t["linear probe [CLS] (%)"].iloc[0] == "55.0 ± 7.1"
    assert t["effective rank [CLS]"].iloc[4] == "9.0 ± 1.4"
    assert t.iloc[-1].tolist() == ["—", "raw pixels (no encoder)", 1, "90.0", "—", "80.0", "—"]
    assert len(report.effective_table(CPU, runs(["lam_0", "random"]), None, {"linear_acc": 0, "knn_acc": 0})) == 3


def test_mechanism_text_by_hand():
    text = report.mechanism_text(sweep(), learned=True)
    # rank +2 and +4 dimensions, [CLS] probe -2 and -4 points, mean pool +1 and +2 points
    assert "effective rank of the [CLS] features by +2.0 dimensions (λ = 0.01) and +4.0 dimensions (λ = 0.1)" in text
    assert "[CLS] linear probe by -2.0 points (λ = 0.01) and -4.0 points (λ = 0.1)" in text
    assert "mean of the patch tokens by +1.0 points (λ = 0.01) and +2.0 points (λ = 0.1)" in text
    assert "so the second step (higher rank, better linear probe) fails here." in text
    assert "fails here" not in report.mechanism_text(sweep(), learned=False)
    with pytest.raises(ParameterError, match="lams"):
        report.mechanism_text(sweep(), learned=True, lams=[0.0])


def test_the_page_fits_its_probes_on_its_device(monkeypatch):
    """zhang_ablations asks compare and the raw-pixel probe for its probes on the page's device (decided before any
    gpu record of the page: at gpu the card instead of the pool workers' CPU threads)."""
    seen = []
    monkeypatch.setattr(report.ua, "compare", lambda *a, **kw: seen.append(kw["probe_on_device"]))
    monkeypatch.setattr(report.ua, "raw_pixel_probe", lambda *a, **kw: seen.append(kw["probe_on_device"]))
    S = profiles.settings("zhang_ablations", "smoke")
    report.run_group(S, "lambda_sweep")
    report.run_effective(S, next(iter(report.abl.effective_groups(S))))
    report.raw_pixels(S)
    assert seen == [True, True, True]
