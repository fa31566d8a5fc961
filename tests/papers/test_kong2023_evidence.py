"""The evidence of Kong et al.'s claim rows (maelab.papers.kong2023.evidence): every function on small hand-made
tables with answers computed by hand (a failed precondition included), then each page's committed results against
its committed claims record (the move of the derivations out of the notebooks changed no number)."""

import math
import types

import numpy as np
import pandas as pd
import pytest

from maelab import claims, paths, profiles, store, zoo
from maelab._validate import ParameterError
from maelab.papers.kong2023 import evidence as kev
from maelab.papers.kong2023.representations import LOW_LEVEL_CONTINUOUS

SE3 = 1 / math.sqrt(3)


def test_series_stats_by_hand():
    # x = 1: 1, 2, 4 (mean 7/3, s.d. sqrt(7/3)); x = 2: one value, s.e. 0; x = 3: a NaN is not counted
    frame = pd.DataFrame({"x": [2, 1, 1, 1, 3, 3], "y": [5.0, 1.0, 2.0, 4.0, 6.0, math.nan]})
    st = kev.series_stats(frame, "x", "y")
    assert list(st.index) == [1, 2, 3] and list(st["n"]) == [3, 1, 1]
    assert st["mean"].tolist() == pytest.approx([7 / 3, 5.0, 6.0])
    assert st["sem"].tolist() == pytest.approx([math.sqrt(7 / 3) / math.sqrt(3), 0.0, 0.0])
    with pytest.raises(ParameterError, match="^frame must be"):
        kev.series_stats(frame, "x", "z")


# ------------------------------------------------------------------------------------------------- kong_theory
def test_fig4_levels_are_the_min_levels_of_the_three_panels():
    ev = kev.fig4_levels({"low": {"min_level": 2}, "moderate": {"min_level": 0}, "extreme": {"min_level": 1}})
    assert {k: (e.value, e.samples, e.note) for k, e in ev.items()} == {
        "kong.fig4_low": (2.0, None, "exact"),
        "kong.fig4_moderate": (0.0, None, "exact"),
        "kong.fig4_extreme": (1.0, None, "exact"),
    }
    with pytest.raises(ParameterError, match="^figure4 must be"):
        kev.fig4_levels({"low": {"min_level": 2}, "moderate": {"min_level": 0}})


def _sweep_table():
    rows = []
    # unit 1: levels 3.0, 3.2, 3.4 over seeds; unit 2: 2.0 in every seed; unit 4: 1.0, 1.5 and an infeasible NaN
    for seed, (l1, l4) in enumerate(((3.0, 1.0), (3.2, 1.5), (3.4, math.nan))):
        for u, lv in ((1, l1), (2, 2.0), (4, l4)):
            rows.append({"seed": seed, "mask_ratio": 0.75, "unit": u, "mean_level": lv})
    return pd.DataFrame(rows)


def test_unit_level_trend_has_the_seeds_behind_each_point():
    ev = kev.unit_level_trend(_sweep_table(), 0.75, 16)
    assert ev.x == (1.0, 2.0, 4.0) and ev.y_n == (3, 3, 2) and ev.note == "quadtree 16, ratio 0.75"
    np.testing.assert_allclose(ev.y, [3.2, 2.0, 1.25], rtol=1e-12)
    # std 0.2 over 3 seeds; no spread; std of (1.0, 1.5) = sqrt(0.125) over 2 seeds -> 0.25
    np.testing.assert_allclose(ev.y_err, [0.2 * SE3, 0.0, 0.25], rtol=1e-12, atol=1e-15)
    # the criterion reads y_n: step 2 -> 4 is 0.75 / 0.25 = 3 s.e. with min(3, 2) - 1 = 1 d.f.: not significant
    assert claims.Monotone("decreasing").decide(ev)[0] == claims.INCONCLUSIVE
    assert claims.Monotone("decreasing").decide(claims.Evidence(x=ev.x, y=ev.y, y_err=ev.y_err))[0] == claims.SUPPORTED
    with pytest.raises(ParameterError, match="^mask_ratio"):
        kev.unit_level_trend(_sweep_table(), 0.5, 16)


def test_ratio_extremes_per_seed_min_over_the_extremes():
    rows = []
    # per seed and ratio the mean level over units 1 and 2 (offset -0.5 / +0.5 cancels)
    means = {0: {0.1: 2.5, 0.75: 2.0, 0.9: 2.25}, 1: {0.1: 1.9, 0.75: 2.0, 0.9: 2.6}}
    for seed, by_r in means.items():
        for r, m in by_r.items():
            for u, du in ((1, -0.5), (2, 0.5)):
                rows.append({"seed": seed, "mask_ratio": r, "unit": u, "mean_level": m + du})
    ev = kev.ratio_extremes(pd.DataFrame(rows), 0.75)
    # seed 0: min(0.5, 0.25) = 0.25; seed 1: min(-0.1, 0.6) = -0.1
    np.testing.assert_allclose(ev.samples, [0.25, -0.1], rtol=1e-12)
    assert ev.value == pytest.approx(0.075) and ev.note == "levels, per seed"


def _theorem2_table():
    rows = [
        {"fit": "population", "n_samples": 0, "seed": 0, "min_cc_c": 1 - 1e-12, "max_cc_s_mc": 2e-13},
        {"fit": "population", "n_samples": 0, "seed": 1, "min_cc_c": 1 - 3e-12, "max_cc_s_mc": 5e-14},
        {"fit": "sampled", "n_samples": 100, "seed": 0, "min_cc_c": 0.5, "max_cc_s_mc": 0.9},
        {"fit": "sampled", "n_samples": 1000, "seed": 0, "min_cc_c": 0.995, "max_cc_s_mc": 0.1},
        {"fit": "sampled", "n_samples": 1000, "seed": 0, "min_cc_c": 0.99, "max_cc_s_mc": 0.1},
        {"fit": "sampled", "n_samples": 1000, "seed": 1, "min_cc_c": 0.98, "max_cc_s_mc": 0.1},
    ]
    return pd.DataFrame(rows)


def test_theorem2_rows_worst_cases_and_per_seed_minimum_at_the_largest_n():
    ev = kev.theorem2_rows(_theorem2_table())
    assert ev["kong.thm2_cc_c"].value == pytest.approx(3e-12, rel=1e-3)
    assert ev["kong.thm2_cc_s"].value == 2e-13
    assert ev["kong.thm2_sampled"].samples == (0.99, 0.98) and ev["kong.thm2_sampled"].note == "n = 1000"
    assert kev.theorem2_rows(_theorem2_table(), 100)["kong.thm2_sampled"].samples == (0.5,)
    with pytest.raises(ParameterError, match="^n_samples"):
        kev.theorem2_rows(_theorem2_table(), 500)


# ------------------------------------------------------------------------------------------ kong_reconstruction
def _scores(r09_loss=(0.9, 0.5)):
    """Two seeds; unit 1 at ratios 0.1, 0.75, 0.9, unit 2 at 0.75, and a random-init row per seed."""
    rows = []
    for seed in (0, 1):
        for (ratio, unit), ssim, psnr, mse, loss, ref in (
            ((0.1, 1), (0.30, 0.40)[seed], 20.0, 0.010, 0.5, 2.0),
            ((0.75, 1), (0.50, 0.60)[seed], (21.0, 22.0)[seed], (0.008, 0.006)[seed], 0.7, 0.8),
            ((0.9, 1), 0.9, (21.5, 21.0)[seed], (0.007, 0.0065)[seed], r09_loss[seed], 2.0),
            ((0.75, 2), (0.70, 0.72)[seed], 19.0, 0.012, 0.6, 2.0),
        ):
            rows.append(
                {
                    "model": f"r{ratio:g} u{unit}",
                    "ratio": ratio,
                    "unit": unit,
                    "seed": seed,
                    "ssim": ssim,
                    "psnr": psnr,
                    "neg_mse": -mse,
                    "mse": mse,
                    "loss": loss,
                    "reference_loss": ref,
                    "patch_mean_loss": 1.0,
                }
            )
        rows.append(
            {
                "model": "random init",
                "ratio": math.nan,
                "unit": 1,
                "seed": seed,
                "ssim": 0.0,
                "psnr": 5.0,
                "neg_mse": -1.0,
                "mse": 1.0,
                "loss": 2.0,
                "reference_loss": 2.0,
                "patch_mean_loss": 1.0,
            }
        )
    return pd.DataFrame(rows)


def test_fig5_trend_keeps_each_seeds_series_for_paired_steps():
    ev = kev.fig5_trend(_scores(), "ssim", "ratio", [0.1, 0.75], note="n", unmet="why", looks=2)
    assert ev.x == (0.1, 0.75) and ev.y_n == (2, 2) and (ev.note, ev.unmet, ev.looks) == ("n", "why", 2)
    sc = _scores()
    want = [[float(sc[(sc.seed == s) & (sc.model == m)].ssim.iloc[0]) for m in ("r0.1 u1", "r0.75 u1")] for s in (0, 1)]
    np.testing.assert_allclose(ev.y_samples, want, rtol=1e-12)  # seed 0's series, then seed 1's
    np.testing.assert_allclose(ev.y, np.mean(want, axis=0), rtol=1e-12)
    # along the unit: the ratio-0.75 models only (unit 1: 0.5, 0.6; unit 2: 0.70, 0.72)
    ev = kev.fig5_trend(_scores(), "ssim", "unit", [1, 2], unit_ratio=0.75)
    assert ev.x == (1.0, 2.0) and ev.y_n == (2, 2) and ev.looks == 1
    np.testing.assert_allclose(ev.y, [0.55, 0.71], rtol=1e-12)
    np.testing.assert_allclose(ev.y_err, [0.05, 0.01], rtol=1e-9)
    np.testing.assert_allclose(ev.y_samples, [[0.5, 0.70], [0.6, 0.72]], rtol=1e-12)
    # a seed without a point cannot be paired: one line naming it
    gap = sc[~((sc.seed == 1) & (sc.model == "r0.1 u1"))]
    with pytest.raises(ParameterError, match=r"^scores .* got \[1\]"):
        kev.fig5_trend(gap, "ssim", "ratio", [0.1, 0.75])
    with pytest.raises(ValueError, match="along"):
        kev.fig5_trend(_scores(), "ssim", "patch", [1])
    with pytest.raises(ParameterError, match="^xs"):
        kev.fig5_trend(_scores(), "ssim", "ratio", [0.3])


def test_fig5_high_ratio_paired_per_seed():
    ev = kev.fig5_high_ratio(_scores(), "psnr", 0.9, 0.75, note="dB")
    np.testing.assert_allclose(ev.samples, [0.5, -1.0], rtol=1e-12)  # 21.5 - 21.0, 21.0 - 22.0
    ev = kev.fig5_high_ratio(_scores(), "neg_mse", 0.9, 0.75)
    np.testing.assert_allclose(ev.samples, [0.001, -0.0005], rtol=1e-9)  # MSE(0.75) - MSE(0.9)
    with pytest.raises(ParameterError, match="^high, mid"):
        kev.fig5_high_ratio(_scores(), "psnr", 0.5, 0.75)


def _rec_settings(**kw):
    base = {
        "seeds": (0, 1),
        "n_score": 64,
        "mask_ratios": (0.1, 0.75, 0.9),
        "unit_ratio": 0.75,
        "units": (1, 2),
        "loss_margin": 0.05,
    }
    return types.SimpleNamespace(**{**base, **kw})


def test_reconstruction_rows_are_gated_by_every_model():
    rows, checks = kev.reconstruction_rows(_scores(), _rec_settings())
    assert list(rows) == [
        "kong.fig5_ssim_ratio",
        "kong.fig5_psnr_090",
        "kong.fig5_negmse_090",
        "kong.fig5_ssim_unit",
        "kong.fig5_psnr_unit",
    ]  # no FSIM column: no FSIM row
    assert len(checks) == 4 and not any(e.unmet for e in rows.values())
    assert (
        rows["kong.fig5_ssim_ratio"].x == (0.1, 0.75)
        and rows["kong.fig5_psnr_090"].note == "dB, 2 seeds, 64 unmasked test images"
    )
    rows, checks = kev.reconstruction_rows(_scores((0.96, 0.5)), _rec_settings())
    assert all(e.unmet == claims.unmet_of(*checks) != "" for e in rows.values())  # the engine: inconclusive


# ----------------------------------------------------------------------------------------- kong_representations
LOW_COLS = [f"lin_{f}" for f in LOW_LEVEL_CONTINUOUS]


def _rep_rows(mid_acc=(0.5, 0.4), r05_loss=(0.4, 0.4)):
    """Two seeds; encoders at ratios 0.1, 0.5, 0.75, 0.9 (unit 1) and the random init. Masked-patch losses: 0.4
    (``r05_loss`` for ratio 0.5) against a random-init loss of 2.0 and a patch-mean loss of 1.0."""
    vals = {  # model: (class_acc per seed, shape_bias, knn_class, low-level R², attn_mass, token_acc)
        "r0.1 u1": ((0.3, 0.2), 0.2, 0.30, 0.6, 0.30, 0.80),
        "r0.5 u1": ((0.4, 0.3), 0.3, 0.50, 0.4, 0.40, 0.85),
        "r0.75 u1": (mid_acc, 0.4, 0.60, 0.3, 0.50, 0.90),
        "r0.9 u1": ((0.2, 0.25), 0.1, 0.20, 0.7, 0.20, 0.70),
        "random init": ((0.1, 0.2), 0.0, 0.10, 0.1, 0.25, 0.60),
    }
    rows = []
    for m, (acc, sb, knn, low, attn, tok) in vals.items():
        for s in (0, 1):
            d = 0.01 * s  # seed 1: every score but the class probe 0.01 higher
            trained = m != "random init"
            loss = (r05_loss[s] if m == "r0.5 u1" else 0.4) if trained else float("nan")
            rows.append(
                {
                    "model": m,
                    "ratio": float(m.split()[0][1:]) if trained else float("nan"),
                    "unit": 1,
                    "seed": s,
                    "loss": loss,
                    "reference_loss": 2.0 if trained else float("nan"),
                    "patch_mean_loss": 1.0 if trained else float("nan"),
                    "class_acc": acc[s],
                    "shift_a": acc[s] - 0.1,
                    "shift_b": acc[s] - 0.2,
                    "shape_bias": sb + d,
                    "knn_class": knn + d,
                    "attn_mass": attn + d,
                    "token_acc": tok + d,
                    **{c: low + d + 0.01 * i for i, c in enumerate(LOW_COLS)},
                }
            )
    return pd.DataFrame(rows)


def _rep_settings(**kw):
    base = {
        "seeds": (0, 1),
        "mask_ratios": (0.1, 0.5, 0.75, 0.9),
        "unit_ratio": 0.75,
        "margin": 0.05,
        "loss_margin": 0.05,
        "pool": "cls",
        "shifts": ("a", "b"),
        "knn_k": 5,
        "n_attention": 16,
    }
    return types.SimpleNamespace(**{**base, **kw})


def test_paired_gap_means_over_models_then_differences():
    rows = _rep_rows()
    np.testing.assert_allclose(kev.paired_gap(rows, "class_acc", ["r0.75 u1"], ["r0.1 u1"], [0, 1]), [0.2, 0.2])
    # mid 0.5, 0.6 vs the extremes' mean (0.30 + 0.20) / 2 = 0.25: +0.25 in both seeds (the seed offset cancels)
    np.testing.assert_allclose(
        kev.paired_gap(rows, "knn_class", ["r0.5 u1", "r0.75 u1"], ["r0.1 u1", "r0.9 u1"], [1, 0]), [0.3, 0.3]
    )
    # several columns: their mean first; shift_a/b of r0.75 u1 in seed 0: 0.4, 0.3 -> 0.35; of r0.1 u1: 0.15
    np.testing.assert_allclose(kev.paired_gap(rows, ["shift_a", "shift_b"], ["r0.75 u1"], ["r0.1 u1"], [0]), [0.2])
    with pytest.raises(ParameterError, match="^rows must be one row of 'r0.75 u1' for each seed"):
        kev.paired_gap(rows, "class_acc", ["r0.75 u1"], ["r0.1 u1"], [0, 2])
    with pytest.raises(ParameterError, match="^rows must be rows of model 'r0.25 u1'"):
        kev.paired_gap(rows, "class_acc", ["r0.25 u1"], ["r0.1 u1"], [0])
    with pytest.raises(ParameterError, match="^rows must be one row"):
        kev.paired_gap(pd.concat([rows, rows.iloc[:1]]), "class_acc", ["r0.1 u1"], ["r0.9 u1"], [0])


def test_learned_check_is_the_books_learned_check_every_seed():
    c = kev.learned_check(_rep_rows(), "r0.75 u1", [0, 1], 0.05)
    assert isinstance(c, claims.LearnedCheck) and c.what == "MAE r0.75 u1, shapes, [CLS] linear probe"
    assert c.gains == pytest.approx((0.4, 0.2)) and c.met and c.unmet == ""
    c = kev.learned_check(_rep_rows((0.5, 0.24)), "r0.75 u1", [0, 1], 0.05)  # seed 1: 0.24 - 0.2 = 4 points
    assert not c.met and "seed 1: 24.0 % vs 20.0 %" in c.unmet
    assert kev.learned_check(_rep_rows((0.5, 0.24)), "r0.75 u1", [0, 1], 0.03).met
    assert kev.learned_check(_rep_rows(), "r0.75 u1", [0], 0.05, pool="mean").what.endswith("mean-pooled linear probe")


def test_representation_rows_hand_values():
    rows, checks = kev.representation_rows(_rep_rows(), _rep_settings())
    assert all(c.met for c in checks) and not any(e.unmet for e in rows.values())
    # the gate: every compared model's reconstruction check (0.4 <= 0.95 x min(2.0, 1.0)), never the random init
    assert sorted(c.what for c in checks) == [
        f"MAE r{r} u1, masked-patch test loss" for r in ("0.1", "0.5", "0.75", "0.9")
    ]
    want = {
        "kong.tab1_probe_075_010": [0.2, 0.2],  # 0.5 - 0.3, 0.4 - 0.2
        "kong.tab1_probe_075_090": [0.3, 0.15],  # 0.5 - 0.2, 0.4 - 0.25
        "kong.tab1_shift_075_010": [0.2, 0.2],  # the shifts move both encoders alike
        "kong.tab2_shape_bias_010": [0.2, 0.2],
        "kong.tab2_shape_bias_090": [0.3, 0.3],
        "kong.latent_class_mid": [0.3, 0.3],  # (0.5 + 0.6) / 2 - (0.3 + 0.2) / 2
        "kong.latent_low_ext": [0.3, 0.3],  # (0.6 + 0.7) / 2 - (0.4 + 0.3) / 2 (the per-factor offsets cancel)
        "kong.fig6_cls_silhouette": [0.25, 0.25],  # 0.5 - (0.3 + 0.2) / 2
        "kong.tab3_token_silhouette": [0.1, 0.1],
    }
    assert list(rows) == list(want)
    for k, v in want.items():
        np.testing.assert_allclose(rows[k].samples, v, rtol=1e-9, err_msg=k)
    assert rows["kong.latent_class_mid"].note == "5-NN, mids ['r0.5 u1', 'r0.75 u1']"
    assert rows["kong.fig6_cls_silhouette"].note == "16 test images"
    assert rows["kong.latent_low_ext"].note == "linear R², " + ", ".join(LOW_LEVEL_CONTINUOUS)


def test_representation_rows_inconclusive_where_a_compared_model_did_not_reconstruct():
    # seed 1 of ratio 0.5 (an intermediate ratio of the latent row) at 0.96 of the patch-mean loss: above 0.95
    rows, checks = kev.representation_rows(_rep_rows(r05_loss=(0.4, 0.96)), _rep_settings())
    failed = [c for c in checks if not c.met]
    assert [c.what for c in failed] == ["MAE r0.5 u1, masked-patch test loss"]
    assert all(e.unmet == claims.unmet_of(*checks) != "" for e in rows.values())
    assert "r0.5 u1" in rows["kong.latent_class_mid"].unmet


def test_representation_rows_never_gate_on_the_class_probe():
    # the 0.75 model's class probe only 2 points above its random init in seed 1: the probe is context, not a gate
    rows, checks = kev.representation_rows(_rep_rows((0.5, 0.22)), _rep_settings(loss_margin=0.05))
    assert all(c.met for c in checks) and not any(e.unmet for e in rows.values())
    assert not kev.learned_check(_rep_rows((0.5, 0.22)), "r0.75 u1", [0, 1], 0.05).met
    # the numbers themselves do not depend on the gate (the engine reads a non-empty unmet as inconclusive)
    np.testing.assert_allclose(rows["kong.tab1_probe_075_010"].samples, [0.2, 0.02])


# ---------------------------------------------------------------------------- the committed records, unchanged
ROOT = paths.committed_results()


def _load(nb, name):
    r = store.load(nb, name, "cpu", root=ROOT)
    if r is None:
        pytest.skip(f"no committed cpu result {nb}/{name}")
    return r


def _same(got: claims.Evidence, want: claims.Evidence, cid: str):
    for f in ("value", "samples", "x", "y", "y_err"):
        a, b = getattr(got, f), getattr(want, f)
        if b is None:
            assert a is None, (cid, f)
            continue
        np.testing.assert_allclose(np.atleast_1d(a), np.atleast_1d(b), rtol=1e-9, atol=0, err_msg=f"{cid}.{f}")
    assert got.note == want.note, cid


def _committed(nb, got: dict, n_seeds: int):
    rec = {k: claims.Evidence.from_dict(v["evidence"]) for k, v in _load(nb, "claims")["claims"].items()}
    assert set(got) == set(rec)
    for cid, ev in got.items():
        _same(ev, rec[cid], cid)
        assert bool(ev.unmet) == bool(rec[cid].unmet), cid  # the same rows gated
        if ev.y is not None:
            assert ev.y_n == (n_seeds,) * len(ev.y), cid
    return rec


def test_theory_page_reproduces_its_committed_claims_record():
    S = profiles.settings("kong_theory", "cpu")
    got = kev.theory_rows(
        _load("kong_theory", "figure4").data,
        _load("kong_theory", "level_table")["table"],
        _load("kong_theory", "theorem2")["table"],
        S,
    )
    rec = _committed("kong_theory", got, len(S.seeds))
    assert all(got[k].unmet == rec[k].unmet == "" for k in got)


def test_reconstruction_page_reproduces_its_committed_claims_record():
    S = profiles.settings("kong_reconstruction", "cpu")
    zoo_read = zoo.load_entries(S, "cpu")  # the shared zoo's committed records
    assert zoo_read["missing"] == []
    got, checks = kev.reconstruction_rows(zoo_read["entries"], S)
    rec = _committed("kong_reconstruction", got, len(S.seeds))
    assert all(got[k].unmet == rec[k].unmet for k in got)


def test_representations_page_reproduces_its_committed_claims_record():
    S = profiles.settings("kong_representations", "cpu")
    rows = pd.concat([_load("kong_representations", f"encoders_s{s}")["rows"] for s in S.seeds], ignore_index=True)
    got, checks = kev.representation_rows(rows, S)
    probe = kev.learned_check(rows, "r0.75 u1", list(S.seeds), S.margin, S.pool)  # shown beside the gate
    ZS = zoo.ZooSettings.for_profile("cpu")  # four rows are decided on the shared zoo, with its ink measurements
    zev, zchecks = kev.zoo_representation_rows(
        zoo.load_entries(ZS, "cpu")["entries"],
        _load("kong_representations", "zoo_ink")["marks"],
        ZS.mask_ratios,
        ZS.unit_ratio,
        ZS.seeds,
        S.loss_margin,
        mark_seeds=zoo.measured(ZS).seeds,  # the ink marks: the measured seeds' checkpoints
    )
    shapes_rows = set(got) - set(zev)
    got.update(zev)
    _committed("kong_representations", got, len(S.seeds))
    # the class probe of the 0.75 model (context, not a gate): its per-seed gain over the seed's random init, as the
    # rows give it, one value per seed of the 480k shapes zoo
    acc = rows.set_index(["model", "seed"])["class_acc"]
    direct = [acc["r0.75 u1", s] - acc["random init", s] for s in S.seeds]
    assert len(probe.gains) == len(S.seeds) == 6 and probe.gains == pytest.approx(direct, abs=1e-9)
    assert all(got[k].unmet == claims.unmet_of(*checks) for k in shapes_rows)
    assert all(c.met for c in zchecks) and all(e.unmet == "" for e in zev.values())


# ------------------------------------------------------------------ the four rows on the shared zoo
def _zoo_frames(r01_loss=(0.5, 0.5), r01_checkpoint_loss=(0.5, 0.5)):
    """Two seeds of a zoo (unit 1 at 0.1, 0.75, 0.9) and ink measurements with the measured checkpoints' own losses;
    every value chosen by hand."""
    entries, marks = [], []
    for seed in (0, 1):
        for ratio, acc, attn, tok, loss in (
            (0.1, (0.80, 0.82)[seed], 0.30, (0.70, 0.72)[seed], r01_loss[seed]),
            (0.75, (0.86, 0.85)[seed], (0.50, 0.46)[seed], (0.78, 0.77)[seed], 0.4),
            (0.9, (0.83, 0.84)[seed], 0.40, 0.74, 0.6),
        ):
            name = f"r{ratio:g} u1"
            entries.append(
                {
                    "model": name,
                    "ratio": ratio,
                    "unit": 1,
                    "seed": seed,
                    "linear_acc_cls": acc,
                    "loss": loss,
                    "reference_loss": 2.0,
                    "patch_mean_loss": 1.0,
                }
            )
            own = r01_checkpoint_loss[seed] if ratio == 0.1 else loss
            marks.append(
                {
                    "model": name,
                    "seed": seed,
                    "attn_mass": attn,
                    "token_balanced_acc": tok,
                    "loss": own,
                    "reference_loss": 2.0,
                    "patch_mean_loss": 1.0,
                }
            )
        marks.append({"model": "random init", "seed": seed, "attn_mass": 0.2, "token_balanced_acc": 0.5})
    return pd.DataFrame(entries), pd.DataFrame(marks)


def test_zoo_representation_rows_hand_values_and_pretext_gate():
    entries, marks = _zoo_frames()
    rows, checks = kev.zoo_representation_rows(entries, marks, (0.1, 0.75, 0.9), 0.75, (0, 1), 0.05)
    want = {
        "kong.tab1_probe_075_010": [0.06, 0.03],  # 0.86 - 0.80, 0.85 - 0.82
        "kong.tab1_probe_075_090": [0.03, 0.01],  # 0.86 - 0.83, 0.85 - 0.84
        "kong.fig6_cls_silhouette": [0.15, 0.11],  # 0.50 - (0.30 + 0.40) / 2, 0.46 - 0.35
        "kong.tab3_token_silhouette": [0.08, 0.05],  # balanced token accuracy, 0.75 minus 0.1
    }
    assert list(rows) == list(want)
    for k, v in want.items():
        np.testing.assert_allclose(rows[k].samples, v, atol=1e-12, err_msg=k)
        assert rows[k].unmet == ""
    models = ["MAE r0.1 u1", "MAE r0.75 u1", "MAE r0.9 u1"]
    assert [c.what for c in checks] == [f"{m}, masked-patch test loss" for m in models] + [
        f"{m}, masked-patch test loss, its checkpoint measured here" for m in models
    ]
    # seed 1 of ratio 0.1 stays at 0.96 of the patch-mean loss in the zoo's record: above 0.95, the probe rows read
    # inconclusive with the reason; the attention and token rows read the checkpoints, gated by their own check
    probe_rows = ["kong.tab1_probe_075_010", "kong.tab1_probe_075_090"]
    mark_rows = ["kong.fig6_cls_silhouette", "kong.tab3_token_silhouette"]
    rows, checks = kev.zoo_representation_rows(*_zoo_frames((0.5, 0.96)), (0.1, 0.75, 0.9), 0.75, (0, 1), 0.05)
    assert [c.met for c in checks] == [False, True, True, True, True, True]
    assert all("r0.1 u1" in rows[k].unmet for k in probe_rows) and all(rows[k].unmet == "" for k in mark_rows)
    # and the other way round: a re-made checkpoint that fails its check gates only the rows that read it
    rows, checks = kev.zoo_representation_rows(
        *_zoo_frames((0.5, 0.5), (0.5, 0.96)), (0.1, 0.75, 0.9), 0.75, (0, 1), 0.05
    )
    assert [c.met for c in checks] == [True, True, True, False, True, True]
    assert "checkpoint measured here" in rows["kong.fig6_cls_silhouette"].unmet
    assert all("r0.1 u1" in rows[k].unmet for k in mark_rows) and all(rows[k].unmet == "" for k in probe_rows)
