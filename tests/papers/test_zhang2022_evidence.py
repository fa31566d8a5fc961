"""maelab.papers.zhang2022.evidence: the evidence of Zhang et al.'s rows, from stored results.

Synthetic cases with answers worked out by hand, and regression cases: from the committed results, the functions
give the evidence stored in the committed claims records (the move out of the notebooks changed nothing)."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from maelab import profiles, store
from maelab._validate import ParameterError
from maelab.claims import Evidence
from maelab.papers.zhang2022 import evidence as E

ROOT = Path(__file__).resolve().parents[2]


def _committed_evidence(notebook: str) -> dict:
    f = ROOT / "data" / "results" / notebook / "claims.cpu.json"
    return {k: v["evidence"] for k, v in json.loads(f.read_text())["data"]["claims"].items()}


def test_series_gives_mean_standard_error_and_seeds_per_point():
    ev = Evidence.from_series([0.0, 0.5], [[1.0, 4.0], [3.0, 8.0]])
    # means 2 and 6; s.d. sqrt(2) and sqrt(8); s.e. = s.d. / sqrt(2) = 1 and 2
    assert ev.y == pytest.approx((2.0, 6.0)) and ev.y_err == pytest.approx((1.0, 2.0)) and ev.y_n == (2, 2)
    with pytest.raises(ParameterError, match="samples"):
        Evidence.from_series([0.0, 0.5], [[1.0]])


def test_distance_trends_pick_the_claim_grid():
    rhos = [0.0, 0.1, 0.2]
    intra = np.array([[3.0, 2.0, 1.0], [5.0, 2.0, 3.0]])
    ev = E.distance_trends(rhos, intra, intra + 1, [0.0, 0.2])
    assert ev["intra"].x == (0.0, 0.2) and ev["intra"].y == pytest.approx((4.0, 2.0))
    assert ev["inter"].y == pytest.approx((5.0, 3.0)) and ev["intra"].y_err == pytest.approx((1.0, 1.0))
    assert ev["intra"].looks == 1 and E.distance_trends(rhos, intra, intra, [0.0, 0.2], looks=2)["inter"].looks == 2
    with pytest.raises(ParameterError, match="grid"):
        E.distance_trends(rhos, intra, intra, [0.3])


def _umae_result():
    runs = pd.DataFrame(
        [
            ("mae", 0, 0.80, 0.90, 10.0),
            ("mae", 1, 0.82, 0.91, 12.0),
            ("umae", 0, 0.83, 0.92, 15.0),
            ("umae", 1, 0.81, 0.93, 13.0),
            ("random", 0, 0.60, None, 5.0),
            ("random", 1, 0.61, None, 6.0),
        ],
        columns=["variant", "seed", "linear_acc", "finetune_acc", "effective_rank"],
    )
    ranks = pd.DataFrame(
        [("mae", 0, 0, 20.0), ("mae", 0, 4, 15.0), ("mae", 1, 0, 22.0), ("mae", 1, 4, 21.0)],
        columns=["variant", "seed", "epoch", "effective_rank"],
    )
    curves = pd.DataFrame(
        [
            (v, s, e, a)
            for v, d in (("mae", 0.0), ("umae", 0.01))
            for s in (0, 1)
            for e, a in ((1, 0.5 + d), (2, 0.6 + d))
        ],
        columns=["variant", "seed", "epoch", "eval_online_acc"],
    )
    return {"runs": runs, "ranks": ranks, "curves": curves}


def test_umae_rows_by_hand():
    ev, learned = E.umae_rows("mnist", "MNIST", _umae_result())
    assert learned.met and learned.gains == pytest.approx((0.20, 0.21))
    assert ev["zhang.table1_linear_mnist"].samples == pytest.approx((0.03, -0.01))
    assert ev["zhang.table1_linear_size_mnist"].samples == ev["zhang.table1_linear_mnist"].samples
    assert ev["zhang.table1_finetune_mnist"].samples == pytest.approx((0.02, 0.02))
    assert not ev["zhang.table1_finetune_mnist"].unmet  # fine-tuning (0.905, 0.925) beats the probes (0.81, 0.82)
    assert ev["zhang.fig1b_rank_mnist"].samples == pytest.approx((5.0, 1.0))
    assert ev["zhang.fig1c_mae_collapse_mnist"].samples == pytest.approx((5.0, 1.0))
    assert ev["zhang.fig3b_online_mnist"].samples == pytest.approx((0.01, 0.01))


def test_umae_rows_are_gated_on_mae_having_learned():
    r = _umae_result()
    r["runs"].loc[r["runs"].variant == "random", "linear_acc"] = [0.79, 0.80]
    ev, learned = E.umae_rows("mnist", "MNIST", r)
    assert not learned.met and all(e.unmet for e in ev.values())


def test_ablation_rows_by_hand():
    S = profiles.settings("zhang_ablations", "cpu", seeds=[0, 1])
    sweep = pd.DataFrame(
        [(v, s, a) for s in (0, 1) for v, a in (("lam_0", 0.8 + s / 100), ("lam_0p01", 0.78), ("lam_0p1", 0.7))]
        + [("random", s, 0.6) for s in (0, 1)],
        columns=["variant", "seed", "linear_acc"],
    )
    sim = pd.DataFrame(
        [("simmim", 0, 0.7), ("simmim", 1, 0.71), ("usimmim", 0, 0.72), ("usimmim", 1, 0.70)]
        + [("random", s, 0.68) for s in (0, 1)],
        columns=["variant", "seed", "linear_acc"],
    )
    nomask = pd.DataFrame([("mask_0", 0, 0.5), ("mask_0", 1, 0.55)], columns=["variant", "seed", "linear_acc"])
    ev, checks = E.ablation_rows(S, sweep, sim, nomask)
    assert checks["mae"].met and not checks["simmim"].met
    assert ev["zhang.table3_lambda_helps"].samples == pytest.approx((-0.02, -0.03))
    assert ev["zhang.table3_lambda_best"].samples == pytest.approx((-0.02, -0.03))  # the best other is lambda 0
    assert ev["zhang.table3_large_lambda_hurts"].samples == pytest.approx((0.08, 0.08))
    assert ev["zhang.table3_large_lambda_below_mae"].samples == pytest.approx((0.10, 0.11))
    assert ev["zhang.table2_usimmim"].samples == pytest.approx((0.02, -0.01)) and ev["zhang.table2_usimmim"].unmet
    assert ev["zhang.sec32_no_mask"].samples == pytest.approx((0.30, 0.26))


def _close(a, b) -> bool:
    for k in ("value", "samples", "y", "y_err"):
        x, y = a.get(k), b.get(k)
        if (x is None) != (y is None):
            return False
        if x is not None and not np.allclose(np.asarray(x, float), np.asarray(y, float), rtol=1e-9, atol=1e-12):
            return False
    return (a.get("unmet", "") == "") == (b.get("unmet", "") == "")


@pytest.mark.parametrize("ds", ["fashion_mnist", "mnist", "cifar_dogcat"])
def test_umae_rows_reproduce_the_committed_evidence(ds):
    from maelab.papers.zhang2022 import umae as U
    from maelab.papers.zhang2022 import umae_report as R

    res = store.load("zhang_umae", f"compare_{ds}", "cpu")
    if res is None:
        pytest.skip(f"no committed compare_{ds} result")
    S = profiles.settings("zhang_umae", "cpu")
    if R.added_seeds(S, ds):  # seeds added after a first look: their own record, read with the first (as the page)
        res = U.merge_compare(res, store.load("zhang_umae", f"compare_{ds}_added", "cpu"))
    ev, _ = E.umae_rows(ds, ds, res, looks=R.looks(S, ds))
    stored = _committed_evidence("zhang_umae")
    for cid, e in ev.items():
        assert _close(e.to_dict(), stored[cid]) and e.looks == stored[cid].get("looks", 1), cid


def test_ablation_rows_reproduce_the_committed_evidence():
    S = profiles.settings("zhang_ablations", "cpu")
    sweep, sim, nomask = (store.load("zhang_ablations", n, "cpu") for n in ("lambda_sweep", "simmim", "no_mask"))
    ev, _ = E.ablation_rows(S, sweep["runs"], sim["runs"], nomask["runs"][lambda d: d.variant != "random"])
    stored = _committed_evidence("zhang_ablations")
    for cid, e in ev.items():
        assert _close(e.to_dict(), stored[cid]), cid


def test_collapse_rows_reproduce_the_committed_evidence():
    """Theorem 3.6's rows from the committed collapse_floor and zoo_floor records and the committed zoo."""
    from maelab import zoo

    col = store.load("zhang_mask_graph", "collapse_floor", "cpu")
    floor = store.load("zhang_mask_graph", "zoo_floor", "cpu")
    if col is None or floor is None:
        pytest.skip("no committed collapse_floor / zoo_floor result")
    ZS = zoo.ZooSettings.for_profile("cpu")
    entries = zoo.load_entries(ZS, "cpu")["entries"]
    learned = E.zoo_learned(entries, zoo.label(0.75, 1), ZS.seeds)
    ev = {
        "zhang.thm36_collapse_floor": E.collapse_floor(col["fits"]["test_loss"], float(col["var_x2"])),
        "zhang.thm36_mae_avoids_collapse": E.zoo_collapse_avoidance(
            entries, float(floor["var_x2"]), zoo.label(0.75, 1), ZS.seeds, learned
        ),
    }
    stored = _committed_evidence("zhang_mask_graph")
    for cid, e in ev.items():
        assert _close(e.to_dict(), stored[cid]), cid
    assert len(ev["zhang.thm36_mae_avoids_collapse"].samples) == len(ZS.seeds)  # one sample per training seed
