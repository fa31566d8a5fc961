"""The zhang_mask_graph page's computations and display (maelab.papers.zhang2022.mask_graph_report): the configs
find the committed records, and the statistics and tables match hand-computed values."""

import json
from pathlib import Path

import numpy as np
import pytest

from maelab import profiles, store, zoo
from maelab._validate import ParameterError
from maelab.papers.zhang2022 import mask_graph_report as report

ROOT = Path(__file__).resolve().parents[2]
CPU = profiles.settings("zhang_mask_graph", "cpu")


def stored_hash(name: str) -> str:
    record = ROOT / "data" / "results" / "zhang_mask_graph" / f"{name}.cpu.json"
    return json.loads(record.read_text())["provenance"]["config_hash"]


def cpu_hash(config: dict) -> str:
    return store.config_hash({"profile": "cpu", **config})


def test_configs_find_the_committed_records():
    for name in ("mnist10k", "shapes"):
        assert cpu_hash(report.distances_config(CPU, name, 0)) == stored_hash(f"distances_{name}")
    assert cpu_hash(report.exact_graphs_config(CPU)) == stored_hash("exact_graph")
    spec = report.collapse_spec(CPU, 0)
    assert cpu_hash(report.collapse_config(CPU, spec)) == stored_hash("collapse_floor")
    assert cpu_hash(report.learned_config(spec)) == stored_hash("mae_learned")
    zs = zoo.ZooSettings.for_profile("cpu")
    assert cpu_hash(report.zoo_floor_config(zs)) == stored_hash("zoo_floor")


def test_cifar10_joins_only_with_a_data_root():
    assert report.datasets(CPU) == ["mnist10k", "shapes"]
    S = profiles.settings("zhang_mask_graph", "smoke", data_root="/nowhere")
    assert report.datasets(S) == ["mnist10k", "shapes", "cifar10"]
    assert report.distances_config(S, "cifar10", 0)["data_root"] == "/nowhere"
    assert "data_root" not in report.distances_config(S, "shapes", 0)


def test_sem_by_hand():
    x = np.array([[1.0, 2.0], [3.0, 2.0]])
    np.testing.assert_allclose(report.sem(x), [1.0, 0.0])  # sample std sqrt(2) over sqrt(2); constant column
    np.testing.assert_allclose(report.sem(np.array([[1.0, 5.0]])), [0.0, 0.0])  # one sample: no error bar
    with pytest.raises(ParameterError, match="x"):
        report.sem(np.ones(3))


def result(intra, inter):
    """A distances() result whose four readings all have the same (seeds, rhos) curves."""
    out = {}
    for reading in report.READINGS:
        for kind in ("exact", "mc"):
            out[f"{reading}__{kind}_intra"], out[f"{reading}__{kind}_inter"] = np.array(intra), np.array(inter)
    return out


def test_intra_inter_and_the_distance_table():
    # two seeds over rho 0, 0.7, 0.9: ratios (1.0, 0.5, 0.8) and (0.9, 0.6, 0.3)
    res = result([[2.0, 1.0, 1.6], [1.8, 1.2, 0.6]], [[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]])
    np.testing.assert_allclose(report.intra_inter(res, "zero_all"), [[1.0, 0.5, 0.8], [0.9, 0.6, 0.3]])
    t = report.distance_table({"mnist10k": res}, [0.0, 0.7, 0.9])
    assert len(t) == 4 and t.reading.tolist()[1] == "zero-filled, every pair (main)"
    row = t.iloc[1]
    assert row["ratio at ρ=0"] == "0.9500" and row["ratio at ρ=0.7"] == "0.5500" and row["ratio at ρ=0.9"] == "0.5500"
    assert row["argmin per seed, exact"] == "0.7, 0.9"
    with pytest.raises(ParameterError, match="reading"):
        report.intra_inter(res, "zero_everything")
    with pytest.raises(ParameterError, match="mask_ratios"):
        report.distance_table({"mnist10k": res}, [0.0, 0.5])


def test_graph_markdown_by_hand():
    graphs = {
        "rho": np.array([0.25, 0.75]),
        "pos_residual": np.array([[5.0, 1.5], [5.0, 0.25]]),  # ks (1, 2)
        "pos_components": np.array([4, 4]),
        "pos_alpha": np.array([0.1, 0.2]),
        "free_alpha": np.array([0.05, 0.15]),
    }
    lines = report.graph_markdown(graphs, (1, 2), 2).splitlines()
    assert lines[0] == "| ρ | 0.25 | 0.75 |"
    assert lines[2] == "| Σ_(i>2) λ_i², positional | 1.5 | 0.25 |"
    assert lines[3] == "| components of G_A, positional | 4 | 4 |"
    assert lines[5] == "| α, position-blind | 0.050 | 0.150 |"
    with pytest.raises(ParameterError, match="claim_k"):
        report.graph_markdown(graphs, (1, 2), 3)


def test_exact_graphs_of_a_two_by_two_world():
    # 4 patches: 3, 2 and 1 kept, so rho = 0.25, 0.5, 0.75; the residual sum at rho and 1 - rho agree (exact)
    S = profiles.settings("zhang_mask_graph", "smoke", graph_side=2, ks=[1, 2])
    g = report.exact_graphs(S)
    np.testing.assert_allclose(g["rho"], [0.25, 0.5, 0.75])
    np.testing.assert_allclose(g["pos_residual"], g["pos_residual"][::-1], atol=1e-9)
    # positional views: one connected component per mask, C(4, n1) masks
    assert g["pos_components"].tolist() == [4, 6, 4]


def test_other_settings_are_refused_in_one_line():
    with pytest.raises(ParameterError, match="ZhangMaskGraphSettings"):
        report.exact_graphs_config(profiles.settings("zhang_umae", "smoke"))
    with pytest.raises(ParameterError, match="ZS"):
        report.zoo_floor_config(CPU)
    with pytest.raises(ParameterError, match="spec"):
        report.learned_config({"dataset": "mnist"})


def test_collapse_assembled_from_parts_computed_by_the_pool_equals_one_computed_in_one_go(cache, tmp_path):
    """maelab.parts: in an installment each collapsed-decoder fit and the contrast MAE of Theorem 3.6 are parts, which
    the pool computes side by side (prefetch.compute_parts); the record assembled from them equals the record
    computed with parts off, one fit after another, value for value."""
    import pandas as pd
    import torch

    from maelab import prefetch
    from maelab.options import RunOptions

    S = profiles.settings("zhang_mask_graph", "smoke")
    spec = report.collapse_spec(S, 0)

    def record(root, **opts):
        fn = lambda: report.collapse(S, spec, device="cpu", progress=False)  # noqa: E731
        kw = dict(notebook="zhang_mask_graph", profile="smoke", root=root, log=None, options=RunOptions(**opts))
        return store.load_or_compute("collapse_floor", report.collapse_config(S, spec), fn, **kw)

    try:
        pooled = record(tmp_path / "pool", store_parts=True, train_workers=2)
    finally:
        prefetch.shutdown()
    names = sorted(p.name for p in (tmp_path / "pool" / "zhang_mask_graph").glob("collapse_floor__*.smoke.json"))
    want = [f"fit_r{r:g}_s{s}".replace(".", "p") for r in S.collapse_mask_ratios for s in S.collapse_seeds]
    assert names == sorted(f"collapse_floor__{k}.smoke.json" for k in [*want, "contrast_mae"])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as a worker computes
    try:
        plain = record(tmp_path / "plain")
    finally:
        torch.set_num_threads(threads)
    pd.testing.assert_frame_equal(pooled["fits"], plain["fits"], check_exact=True)
    for k in ("var_x2", "var_blind", "mae_loss"):
        assert pooled[k] == plain[k], k
