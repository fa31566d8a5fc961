"""The synthesis page's geometry run and display (maelab.papers.synthesis.report): the config finds the committed
record, and the tables and the figure show hand-computed values of small synthetic zoo records."""

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from maelab import profiles, store  # noqa: E402
from maelab._validate import ParameterError  # noqa: E402
from maelab.papers.synthesis import report  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# smoke: ratios 0.1, 0.75, 0.9 at unit 1, and unit 2 at 0.75; seeds 0 and 1
SMOKE = profiles.settings("synthesis", "smoke")
MODELS = {"r0.1 u1": (0.1, 1), "r0.75 u1": (0.75, 1), "r0.9 u1": (0.9, 1), "r0.75 u2": (0.75, 2)}
# [CLS] probe per model and seed; the mean-pool probe is 0.1 above it; random init: 0.30 and 0.40
CLS = {"r0.1 u1": (0.50, 0.60), "r0.75 u1": (0.70, 0.70), "r0.9 u1": (0.55, 0.65), "r0.75 u2": (0.80, 0.90)}


def entries():
    rows = []
    for seed in (0, 1):
        for m, (r, u) in MODELS.items():
            a = CLS[m][seed]
            rows.append(
                {"model": m, "ratio": r, "unit": u, "seed": seed, "linear_acc_cls": a, "linear_acc_mean": a + 0.1,
                 "knn_acc_mean": 0.5, "effective_rank_cls": 10.0 + seed, "psnr": 20.0 - 10 * r}
            )  # fmt: skip
        a = (0.30, 0.40)[seed]
        rows.append(
            {"model": "random init", "ratio": np.nan, "unit": np.nan, "seed": seed, "linear_acc_cls": a,
             "linear_acc_mean": a, "knn_acc_mean": 0.2, "effective_rank_cls": 3.0, "psnr": 5.0}
        )  # fmt: skip
    return pd.DataFrame(rows)


def test_geometry_config_finds_the_committed_record():
    record = ROOT / "data" / "results" / "synthesis" / "geometry.cpu.json"
    stored = json.loads(record.read_text())["provenance"]["config_hash"]
    cpu = profiles.settings("synthesis", "cpu")
    assert store.config_hash({"profile": "cpu", **report.geometry_config(cpu)}) == stored


def test_encoder_table_in_the_zoos_order_with_percentages():
    t = report.encoder_table(entries().sample(frac=1, random_state=0), SMOKE)
    assert list(t.index) == ["r0.1 u1", "r0.75 u1", "r0.9 u1", "r0.75 u2", "random init"]
    assert list(t.columns) == [
        "[CLS] probe (%)",
        "mean-pool probe (%)",
        "20-NN, mean-pool (%)",
        "effective rank ([CLS])",
    ]
    assert t.loc["r0.1 u1", "[CLS] probe (%)"] == pytest.approx(55.0)
    assert t.loc["r0.75 u2", "mean-pool probe (%)"] == pytest.approx(95.0)
    assert t.loc["random init", "20-NN, mean-pool (%)"] == pytest.approx(20.0)
    assert t.loc["r0.9 u1", "effective rank ([CLS])"] == pytest.approx(10.5)  # a rank, not scaled
    with pytest.raises(ParameterError, match="entries"):
        report.encoder_table(entries()[entries().model != "r0.9 u1"], SMOKE)


def test_probe_gains_over_the_random_init_per_ratio():
    g = report.probe_gains(entries(), SMOKE)  # random init: 35 % on both probes
    assert list(g.index) == [0.1, 0.75, 0.9]  # unit 1 only: r0.75 u2 is not in the 0.75 row
    assert g.loc[0.1, "linear_acc_cls"] == pytest.approx(20.0)
    assert g.loc[0.75, "linear_acc_cls"] == pytest.approx(35.0)
    assert g.loc[0.9, "linear_acc_mean"] == pytest.approx(35.0)


def test_prediction_table_marks_silence_and_unmeasured_rows():
    preds = {"synth.probe_interior": {"Zhang": "yes", "Kong": ""}, "synth.psnr_falls_ratio": {"Zhang": "", "Kong": "y"}}
    t = report.prediction_table(preds, {"synth.probe_interior": "supported"})
    assert list(t.columns) == ["claim", "Zhang", "Kong", "the zoo"]
    assert t["the zoo"].tolist() == ["supported", "not measured"]
    assert t["Kong"].tolist() == ["—", "y"]
    assert t["claim"][0].startswith("The linear probe is better at intermediate mask ratios")
    with pytest.raises(ParameterError, match="predictions"):
        report.prediction_table({"synth.no_such_row": {}}, {})


def test_six_panels_draw_the_means_over_seeds():
    geo = pd.DataFrame(
        [
            {"model": m, "seed": s, "jac_spread": 2.0 + r + s, "jac_spread_uniform": 9.0, "attn_distance": 1.0 + r,
             "attn_distance_uniform": 3.0}
            for s in (0, 1) for m, (r, u) in MODELS.items() if u == 1
        ]
    )  # fmt: skip
    fig = report.six_panels(entries(), geo, {"linear_acc": 0.25, "knn_acc": 0.2}, SMOKE)
    try:
        axes = np.array(fig.axes).reshape(2, 3)
        # the first error bar of the probe panel: mean [CLS] probe per ratio, in percent
        np.testing.assert_allclose(np.asarray(axes[0, 0].containers[0].lines[0].get_ydata(), float), [55.0, 70.0, 60.0])
        assert [ln.get_ydata()[0] for ln in axes[0, 0].lines[-2:]] == pytest.approx([35.0, 25.0])  # random, raw
        np.testing.assert_allclose(
            np.asarray(axes[1, 0].containers[0].lines[0].get_ydata(), float), [2.6, 3.25, 3.4]
        )  # 2.5 + r
        np.testing.assert_allclose(np.asarray(axes[1, 2].containers[0].lines[0].get_xdata(), float), [1, 2])
        np.testing.assert_allclose(np.asarray(axes[1, 2].containers[0].lines[0].get_ydata(), float), [70.0, 85.0])
    finally:
        plt.close(fig)
    with pytest.raises(ParameterError, match="geometry"):
        report.six_panels(entries(), geo.drop(columns="attn_distance_uniform"), None, SMOKE)
