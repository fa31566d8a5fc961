"""The synthesis page's evidence (hand values, the pretext gate) and geometry (hand-computed distances)."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from maelab import claims, models
from maelab._validate import ParameterError
from maelab.papers.synthesis import evidence as sev
from maelab.papers.synthesis import geometry
from maelab.papers.synthesis.claims import CLAIMS, PREDICTIONS

RATIOS, UNITS = (0.1, 0.5, 0.75, 0.9), (1, 2)


def _frames(r09_loss=0.5, r09_checkpoint_loss=0.5):
    """Two seeds; ratios 0.1 / 0.5 / 0.75 / 0.9 at unit 1 and 0.75 at unit 2, and the geometry of the unit-1
    checkpoints with their own losses; values chosen by hand."""
    acc = {0.1: (0.80, 0.82), 0.5: (0.86, 0.88), 0.75: (0.87, 0.86), 0.9: (0.83, 0.84)}
    rank = {0.1: (10, 12), 0.5: (20, 22), 0.75: (21, 18), 0.9: (15, 16)}
    psnr = {0.1: (20.0, 21.0), 0.5: (18.0, 19.0), 0.75: (16.0, 16.5), 0.9: (17.0, 17.0)}
    spread = {0.1: (3.0, 3.2), 0.5: (4.0, 4.1), 0.75: (5.0, 5.2), 0.9: (6.0, 6.1)}
    entries, geo = [], []
    for seed in (0, 1):
        for r in RATIOS:
            m = f"r{r:g} u1"
            entries.append(
                {
                    "model": m,
                    "ratio": r,
                    "unit": 1,
                    "seed": seed,
                    "linear_acc_cls": acc[r][seed],
                    "effective_rank_cls": rank[r][seed],
                    "psnr": psnr[r][seed],
                    "loss": r09_loss if r == 0.9 else 0.3,
                    "reference_loss": 2.0,
                    "patch_mean_loss": 1.0,
                }
            )
            own = {"loss": r09_checkpoint_loss if r == 0.9 else 0.3, "reference_loss": 2.0, "patch_mean_loss": 1.0}
            geo.append({"model": m, "seed": seed, "jac_spread": spread[r][seed], "attn_distance": 2 + r, **own})
        entries.append(
            {
                "model": "r0.75 u2",
                "ratio": 0.75,
                "unit": 2,
                "seed": seed,
                "linear_acc_cls": (0.90, 0.87)[seed],
                "effective_rank_cls": 19,
                "psnr": 15.0,
                "loss": 0.3,
                "reference_loss": 2.0,
                "patch_mean_loss": 1.0,
            }
        )
    return pd.DataFrame(entries), pd.DataFrame(geo)


def test_rows_hand_values():
    rows, checks = sev.synthesis_rows(*_frames(), RATIOS, UNITS, 0.75, (0, 1), 0.05)
    assert set(rows) == {c.id for c in CLAIMS} == set(PREDICTIONS)
    # interior (0.5, 0.75) minus extremes (0.1, 0.9): (0.865 - 0.815, 0.87 - 0.83)
    np.testing.assert_allclose(rows["synth.probe_interior"].samples, [0.05, 0.04], atol=1e-12)
    # seed 0: rank order 10 < 15 < 20 < 21 vs accuracy 0.80 < 0.83 < 0.86 < 0.87: rho 1; seed 1: ranks 12, 22, 18,
    # 16 vs accuracies 0.82, 0.88, 0.86, 0.84: same order, rho 1
    np.testing.assert_allclose(rows["synth.rank_tracks_probe"].samples, [1.0, 1.0])
    ev = rows["synth.psnr_falls_ratio"]
    assert ev.x == (0.1, 0.5, 0.75) and ev.y == pytest.approx((20.5, 18.5, 16.25)) and ev.y_n == (2, 2, 2)
    np.testing.assert_allclose(rows["synth.unit_raises_probe"].samples, [0.03, 0.01], atol=1e-12)
    assert rows["synth.jacobian_spread_ratio"].y == pytest.approx((3.1, 4.05, 5.1, 6.05))
    assert all(e.unmet == "" for e in rows.values()) and all(c.met for c in checks)
    verdicts = {cid: claims.verdict(claims.REGISTRY[cid], e)[0] for cid, e in rows.items()}
    # each PSNR step falls by >= 2 dB, but with 2 seeds per point a step's t (2 / sqrt(0.5^2 + 0.5^2) = 2.8) has
    # ~2 degrees of freedom: p ~ 0.1, so the trend stays inconclusive -- two seeds decide nothing
    assert verdicts["synth.psnr_falls_ratio"] == claims.INCONCLUSIVE


def test_a_model_that_did_not_learn_withholds_the_ratio_rows_only():
    rows, checks = sev.synthesis_rows(*_frames(r09_loss=0.99), RATIOS, UNITS, 0.75, (0, 1), 0.05)
    assert "r0.9 u1" in rows["synth.probe_interior"].unmet and "r0.9 u1" in rows["synth.psnr_falls_ratio"].unmet
    assert rows["synth.unit_raises_probe"].unmet == ""  # compares 0.75 at units 1 and 2 only
    # the geometry rows read the checkpoints, gated by the checks measured on them, not by the records'
    assert rows["synth.jacobian_spread_ratio"].unmet == rows["synth.attention_distance_ratio"].unmet == ""
    # five record checks (four ratios and unit 2), then the four checkpoints' own
    assert len(checks) == 9 and [c.met for c in checks].count(False) == 1
    assert checks[-1].what == "MAE r0.9 u1, masked-patch test loss, its checkpoint measured here"


def test_a_checkpoint_that_did_not_learn_withholds_the_geometry_rows_only():
    rows, checks = sev.synthesis_rows(*_frames(r09_checkpoint_loss=0.99), RATIOS, UNITS, 0.75, (0, 1), 0.05)
    for cid in ("synth.jacobian_spread_ratio", "synth.attention_distance_ratio"):
        assert "r0.9 u1, masked-patch test loss, its checkpoint measured here" in rows[cid].unmet
    assert all(rows[cid].unmet == "" for cid in rows if cid not in ("synth.jacobian_spread_ratio",
                                                                     "synth.attention_distance_ratio"))  # fmt: skip


def test_per_seed_refuses_missing_values():
    entries, _ = _frames()
    with pytest.raises(ParameterError, match="^frame must be linear_acc_cls for every model and seed"):
        sev.per_seed(entries, "linear_acc_cls", ["r0.1 u1", "r0.3 u1"], [0, 1])


def test_attention_distance_uniform_reference_by_hand():
    """On a 2 x 2 token grid the mean distance between tokens (self included) is (0 + 1 + 1 + sqrt 2) / 4."""
    m = models.create("mae", "micro", img_size=8, seed=0).eval()
    d = geometry.attention_distance(m, torch.rand(3, 3, 8, 8, generator=torch.Generator().manual_seed(0)))
    assert d["attn_distance_uniform"] == pytest.approx((2 + math.sqrt(2)) / 4)
    assert 0 <= d["attn_distance"] <= math.sqrt(2)


def test_jacobian_spread_is_a_radius_on_the_image():
    m = models.create("mae", "micro", seed=0).eval()
    x = torch.rand(2, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    a = geometry.jacobian_spread(m, x, 0.75, 2, seed=3)
    b = geometry.jacobian_spread(m, x, 0.75, 2, seed=3)
    assert a == b  # the same seeded masks and pixels
    assert 0 < a["jac_spread"] <= 32 * math.sqrt(2) and 0 < a["jac_spread_uniform"] <= 32 * math.sqrt(2)


def test_geometry_row_measures_where_the_model_is(monkeypatch):
    """The Jacobians and the attention run on the model's device and leave the model there: the code moved the model
    to the CPU before, in place, which put both measurements on the lent machine's CPU at gpu (that move refused)."""
    from maelab import profiles

    S = profiles.settings("synthesis", "smoke")
    m = models.create("mae", "micro", seed=0).eval()
    x = torch.rand(4, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    want = geometry.geometry_row(m, x, S, seed=2)

    def refuse(self):
        raise AssertionError("the model was moved to the CPU")

    monkeypatch.setattr(torch.nn.Module, "cpu", refuse)
    assert geometry.geometry_row(m, x, S, seed=2) == want


def test_geometry_is_stored_seed_by_seed_and_equals_one_computed_in_one_go(cache, tmp_path):
    """report.measure_geometry in parts (one per measured seed, as an installment stores them: a lent machine
    re-trains the checkpoints, too long for one installment at gpu size) gives the record computed without parts."""
    from maelab import profiles, store
    from maelab.options import RunOptions
    from maelab.papers.synthesis import report

    S = profiles.settings("synthesis", "smoke")

    def record(root, on):
        kw = dict(notebook="synthesis", profile="smoke", root=root, log=None, options=RunOptions(store_parts=on))
        return store.load_or_compute("geometry", report.geometry_config(S), lambda: report.measure_geometry(S), **kw)

    with_parts = record(tmp_path / "a", True)
    # every trained row holds the learning check of the checkpoint it measured; the random-init rows have none
    g = with_parts["geometry"]
    trained = g[g.model != "random init"]
    assert trained[["loss", "reference_loss", "patch_mean_loss"]].notna().all().all()
    assert g[g.model == "random init"]["loss"].isna().all()
    stored = sorted(p.name for p in (tmp_path / "a" / "synthesis").glob("geometry__*.smoke.json"))
    assert stored == [f"geometry__s{s}.smoke.json" for s in S.measured_seeds]
    plain = record(tmp_path / "b", False)
    assert sorted(set(plain["geometry"].seed)) == sorted(S.measured_seeds)
    pd.testing.assert_frame_equal(with_parts["geometry"], plain["geometry"], check_exact=True)
