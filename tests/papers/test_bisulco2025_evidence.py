"""maelab.papers.bisulco2025.evidence: the evidence of Bisulco et al.'s claim rows.

Two kinds of test. Small synthetic inputs whose answers are computed by hand (in the comments), with the cases
where a learning check fails and the evidence carries ``unmet``. And regressions: each function applied to a
page's committed results reproduces the evidence in that page's committed claims record (values, samples and
series within 1e-9 relative; notes exactly) -- moving the derivation out of the notebooks changed nothing but the
new ``y_n``.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from maelab import store, zoo
from maelab._validate import ParameterError
from maelab.claims import LearnedCheck, ReconstructionCheck, verdict
from maelab.papers.bisulco2025 import evidence as ev
from maelab.papers.bisulco2025 import sweeps_evidence as sev
from maelab.papers.bisulco2025.claims import CLAIMS

ROWS = {c.id: c for c in CLAIMS}
ROOT = Path(__file__).resolve().parents[2]
S3 = 1 / math.sqrt(3)


def approx(v, rel=1e-12, abs=1e-12):
    return pytest.approx(v, rel=rel, abs=abs)


# ------------------------------------------------------------------------------------------------ shared
def test_mean_se_is_mean_sem_with_zero_spread_for_one_sample():
    assert ev.mean_se([1.0, 2.0, 3.0]) == approx((2.0, S3))  # std 1 over 3 samples
    assert ev.mean_se([5.0]) == (5.0, 0.0)  # one sample: no error bar (maelab.metrics.mean_sem gives NaN)
    mean, se = ev.mean_se([[1.0, 10.0], [3.0, 10.0]])
    assert mean == approx([2.0, 10.0]) and se == approx([1.0, 0.0])  # std sqrt(2) / sqrt(2)
    mean, se = ev.mean_se([[4.0, 6.0]])
    assert mean == approx([4.0, 6.0]) and se == approx([0.0, 0.0])
    with pytest.raises(ParameterError, match="values"):
        ev.mean_se([])


# ------------------------------------------------------------------------------------------------ masking
def test_sinc_identity_takes_the_largest_error_of_each_formula():
    out = ev.sinc_identity_evidence({"max_err": [1e-15, 3e-14, 2e-15], "max_err_printed": [0.5, 1.25, 0.1]})
    assert out["bisulco.eq19_21_sinc"].value == 3e-14
    assert out["bisulco.eq19_as_printed"].value == 1.25
    assert verdict(ROWS["bisulco.eq19_21_sinc"], out["bisulco.eq19_21_sinc"])[0] == "supported"
    assert verdict(ROWS["bisulco.eq19_as_printed"], out["bisulco.eq19_as_printed"])[0] == "not supported"


def test_fig22_mean_and_se_over_crops_with_their_count():
    hf = [[0.3, 0.2], [0.5, 0.1], [0.4, 0.15]]  # 3 crops x patch sizes 4, 8
    out = ev.fig22_evidence({"hf_fraction": np.array(hf), "patch_sizes": [4, 8], "grating_max": np.array([1e-30, 0])})
    s = out["bisulco.fig22_smoothing"]
    assert s.x == (4.0, 8.0) and s.y == approx((0.4, 0.15))
    assert s.y_err == approx((0.1 * S3, 0.05 * S3))  # column std 0.1 and 0.05 over sqrt(3)
    assert s.y_n == (3, 3)
    assert out["bisulco.fig22_grating_zeros"].value == 1e-30
    with pytest.raises(ParameterError, match="hf_fraction"):
        ev.fig22_evidence({"hf_fraction": np.zeros((3, 3)), "patch_sizes": [4, 8], "grating_max": [0.0]})


# ------------------------------------------------------------------------------------------------ bisulco_linear_mae
def test_lemma1_and_lemma6_take_the_largest_absolute_z():
    e1 = ev.lemma1_evidence(pd.DataFrame({"z": [-1.5, 0.3, 2.5]}), 500)
    assert e1.value == 2.5 and e1.note == "3 (m, p) pairs, 500 mask draws each"
    e6 = ev.lemma6_evidence(pd.DataFrame({"z": [0.5, -3.0]}))
    assert e6.value == 3.0 and e6.note == "2 mask ratios, p = 4"
    assert verdict(ROWS["bisulco.lemma6_mean_variance"], e6)[0] == "supported"  # |z| < 4, judged without spread
    with pytest.raises(ParameterError, match="table"):
        ev.lemma1_evidence(pd.DataFrame({"zz": [1.0]}), 500)


def test_theorem1_worst_case_per_seed_over_the_masked_configurations():
    nan = float("nan")
    t = pd.DataFrame(
        [  # seed, m, gap_sgd, angle_polish, angle_pca; the m = 0 rows' gaps and angles must not count
            (1, 0.0, 0.5, 9.0, 0.02),
            (1, 0.25, 0.001, 0.1, nan),
            (1, 0.5, 0.003, 0.05, nan),
            (0, 0.0, 0.5, 9.0, 0.04),
            (0, 0.25, 0.002, 0.3, nan),
            (0, 0.5, 0.0005, 0.2, nan),
        ],
        columns=["seed", "m", "gap_sgd", "angle_polish", "angle_pca"],
    )
    out = ev.theorem1_evidence(t)
    assert out["bisulco.thm1_sgd_loss_gap"].samples == (0.002, 0.003)  # seeds sorted: 0 then 1
    assert out["bisulco.thm1_subspace"].samples == (0.3, 0.1)
    assert out["bisulco.thm1_m0_pca"].samples == (0.02, 0.04)  # m = 0 rows in table order
    assert {e.looks for e in out.values()} == {1}
    assert {e.looks for e in ev.theorem1_evidence(t, looks=2).values()} == {2}  # seeds added after a first look


def test_lemma4_relative_error_with_the_monte_carlo_draws_behind_each_point():
    t = pd.DataFrame({"m": [0.1, 0.5], "mc": [2.0, 4.0], "mc_se": [0.02, 0.08], "lemma4": [2.5, 3.0]})
    e = ev.lemma4_evidence(t, 200)
    assert e.x == (0.1, 0.5) and e.y == approx((0.25, 0.25)) and e.y_err == approx((0.01, 0.02))
    assert e.y_n == (200, 200)


# ------------------------------------------------------------------------------------------------ bisulco_ising
ISING = SimpleNamespace(
    L=8, rank_fracs=[0.25, 1.0], seeds=[0, 1], mask_ratios=[0.1, 0.5, 0.9], p_for_m=2, m_for_p=0.5,
    patch_sizes=[2, 4], dae_sigma=0.5, looks=1,
)  # fmt: skip


def _ising_table():
    ell = {  # (model, m, p): decay length per seed (0, 1)
        ("MAE", 0.1, 2): (2.0, 2.2),
        ("MAE", 0.5, 2): (3.0, 3.4),
        ("MAE", 0.9, 2): (5.0, 5.0),
        ("MAE", 0.5, 4): (4.0, 4.6),
        ("MAE", 0.9, 4): (6.0, 7.0),
        ("AE", 0.0, 1): (1.0, 1.5),
        ("DAE", 0.5, 0): (1.2, 1.1),
    }
    rows = []
    for k in (16, 64):
        for (model, m, p), v in ell.items():
            for s in (0, 1):
                x = v[s]
                if k == 64 and model == "AE":
                    x = float("nan")  # the full-rank AE is the identity: no decay length
                if k == 64 and model == "DAE":
                    x = (1.1, 1.0)[s]
                rows.append({"seed": s, "k": k, "model": model, "m": m, "p": p, "decay_length": x})
    return pd.DataFrame(rows)


def test_ising_settings_helpers():
    assert ev.ising_ranks(ISING) == [16, 64]
    assert ev.ising_figure_configs(ISING) == ([(0.5, 4), (0.5, 2)], [(0.9, 4), (0.1, 2)])


def test_ising_series_pairs_and_baselines_by_hand():
    out = ev.ising_evidence(_ising_table(), ISING)  # the claims' rank, 16
    m = out["bisulco.fig21_scale_grows_with_m"]
    assert m.x == (0.1, 0.5, 0.9) and m.y == approx((2.1, 3.2, 5.0))
    assert m.y_err == approx((0.1, 0.2, 0.0))  # two seeds: s.e. = |a - b| / 2
    assert m.y_n == (2, 2, 2) and m.note == "p = 2, rank 16, 2 sample sets"
    p = out["bisulco.fig20_scale_grows_with_p"]
    assert p.x == (2.0, 4.0) and p.y == approx((3.2, 4.3)) and p.y_err == approx((0.2, 0.3)) and p.y_n == (2, 2)
    assert out["bisulco.fig21_high_vs_low_m"].samples == approx((4.0, 4.8))  # (0.9, 4) - (0.1, 2)
    # min over (0.5, 4), (0.5, 2), (0.9, 4): 3.0, 3.4; max(AE, DAE): 1.2, 1.5
    assert out["bisulco.fig1_ae_dae_shortest"].samples == approx((1.8, 1.9))
    # at full rank the AE has no decay length: the baseline is the DAE alone (fmax), not NaN
    full = ev.ising_evidence(_ising_table(), ISING, k=64)
    assert full["bisulco.fig1_ae_dae_shortest"].samples == approx((1.9, 2.4))
    # sample sets added after a first look: every row (series and paired) tested at ALPHA / 2
    two = ev.ising_evidence(_ising_table(), SimpleNamespace(**{**vars(ISING), "looks": 2}))
    assert {e.looks for e in out.values()} == {1} and {e.looks for e in two.values()} == {2}


def test_ising_y_n_makes_each_step_a_t_test_of_the_seeds():
    """Two seeds: each step has 1 degree of freedom. 2.1 -> 3.2 (s.e. 0.224, t = 4.9) and 3.2 -> 5.0 (t = 9) are
    p = 0.064 and 0.035 one-sided with t(1): not significant, where the normal would call both steps certain."""
    m = ev.ising_evidence(_ising_table(), ISING)["bisulco.fig21_scale_grows_with_m"]
    row = ROWS["bisulco.fig21_scale_grows_with_m"]
    assert verdict(row, m)[0] == "inconclusive"
    import dataclasses

    assert verdict(row, dataclasses.replace(m, y_n=None))[0] == "supported"


# ------------------------------------------------------------------------------------------------ bisulco_jacobians
LINEAR = SimpleNamespace(
    lin_size=4, lin_rank_frac=0.25, lin_patch_sizes=[2, 4], lin_mask_ratios=[0.5, 0.8], patch_size=8, mask_ratio=0.8
)


def test_linear_choice_falls_back_to_the_largest_grid_value():
    # patch 8 is not in the grid -> the largest, 4; mask 0.8 is -> itself; k = 0.25 * 16
    assert ev.linear_choice(LINEAR) == {"K": 4, "p": 4, "m": 0.8, "ip": 1, "im": 1}


def test_linear_spreads_by_hand():
    lin = {
        "spread_mae": np.array([[[3.0, 4.0], [5.0, 6.0]], [[3.2, 4.4], [5.4, 6.2]]]),  # seeds x p (2, 4) x m
        "spread_ae": np.array([3.5, 3.0]),
    }
    out = ev.linear_spread_evidence(lin, LINEAR)
    m = out["bisulco.jac_linear_spread_vs_m"]  # at p = 4: seed rows (5, 6) and (5.4, 6.2)
    assert m.x == (0.5, 0.8) and m.y == approx((5.2, 6.1)) and m.y_err == approx((0.2, 0.1)) and m.y_n == (2, 2)
    assert m.note == "p = 4, k = 4, mean ± s.e. over 2 data seeds"
    p = out["bisulco.jac_linear_spread_vs_p"]  # at m = 0.8: seed rows (4, 6) and (4.4, 6.2)
    assert p.x == (2.0, 4.0) and p.y == approx((4.2, 6.1)) and p.y_err == approx((0.2, 0.1))
    gap = out["bisulco.jac_linear_ae_most_local"]  # min MAE per seed 3.0, 3.2 minus AE 3.5, 3.0
    assert gap.samples == approx((-0.5, 0.2)) and gap.value == approx(-0.15)
    with pytest.raises(ParameterError, match="spread_mae"):
        ev.linear_spread_evidence({"spread_mae": np.zeros((2, 3, 2)), "spread_ae": np.zeros(2)}, LINEAR)


def test_seed_summary_over_images_or_over_seeds():
    assert ev.seed_summary({0: {"spread": [2.0, 3.0, 4.0]}}) == approx((3.0, S3, 3))
    # two seeds: the per-seed means 2 and 6, s.e. of the two = |6 - 2| / 2
    assert ev.seed_summary({0: {"spread": [1.0, 3.0]}, 1: {"spread": [5.0, 7.0]}}) == approx((4.0, 2.0, 2))


def _run(spread, last_loss):
    return {"spread": np.asarray(spread, dtype=float), "loss": [1.0, last_loss]}


def _nonlinear(mae_loss_05=0.5, ae_loss=0.1, mae_loss_01=0.5):
    by_m = {
        0.05: {0: _run([1, 1, 1], 0.5)},  # below 0.1: outside the claims, although the most local
        0.1: {0: _run([2, 3, 4], mae_loss_01)},
        0.5: {0: _run([4, 5, 6], mae_loss_05)},
        0.8: {0: _run([6, 8, 10], 0.5)},
    }
    by_p = {4: {0: _run([3, 3, 6], 0.5)}, 8: by_m[0.8], 16: {0: _run([9, 10, 11], 0.5)}}
    ae = {0: _run([1, 2, 0], ae_loss)}
    trivial = {k: 1.0 for k in ("m0.05_p8", "m0.1_p8", "m0.5_p8", "m0.8_p8", "m0.8_p4", "m0.8_p16", "m0_p8")}
    checks = ev.reconstruction_checks(by_m, by_p, ae, trivial, 0.8, 8)
    return ev.nonlinear_spread_evidence(by_m, by_p, ae, checks, 0.8, 8), checks, by_m


def test_nonlinear_spreads_by_hand_when_every_model_learned():
    out, checks, by_m = _nonlinear()
    assert checks["by_p"][8] is checks["by_m"][0.8] and all(c.met for c in checks["by_m"].values())
    assert checks["ae"].what == "ViT AE, m = 0, p = 8" and checks["ae"].ratios == approx((0.1,))
    assert set(out) == {"bisulco.jac_mae_spread_vs_p", "bisulco.jac_mae_ae_most_local"}  # m: the zoo's row
    p = out["bisulco.jac_mae_spread_vs_p"]
    assert p.x == (4.0, 8.0, 16.0) and p.y == approx((4.0, 8.0, 10.0)) and p.y_err == approx((1.0, 2 * S3, S3))
    assert ev.claim_mask_ratios(by_m) == [0.1, 0.5, 0.8] and ev.most_local_mask_ratio(by_m) == 0.1
    d = out["bisulco.jac_mae_ae_most_local"]  # m = 0.1 minus the AE, per test image: (2-1, 3-2, 4-0)
    assert d.samples == approx((1.0, 1.0, 4.0)) and d.note == "most local MAE: m = 0.1; paired over test images"


def test_nonlinear_rows_carry_the_failed_reconstruction_checks():
    out, checks, _ = _nonlinear(mae_loss_05=0.9)  # m = 0.5: 0.9 x the visible-mean loss > 0.8, in no row
    assert not checks["by_m"][0.5].met and "ratio 0.90" in checks["by_m"][0.5].unmet
    assert not out["bisulco.jac_mae_spread_vs_p"].unmet and not out["bisulco.jac_mae_ae_most_local"].unmet
    out, checks, _ = _nonlinear(mae_loss_01=0.9)  # the most local MAE (m = 0.1) did not learn: the AE row waits
    d = out["bisulco.jac_mae_ae_most_local"]
    assert d.unmet == checks["by_m"][0.1].unmet and "ViT MAE, m = 0.1, p = 8" in d.unmet
    assert verdict(ROWS["bisulco.jac_mae_ae_most_local"], d)[0] == "inconclusive"
    out, checks, _ = _nonlinear(ae_loss=0.85)  # the AE did not learn: only the AE comparison is gated
    assert out["bisulco.jac_mae_ae_most_local"].unmet == checks["ae"].unmet != ""
    assert not out["bisulco.jac_mae_spread_vs_p"].unmet


def test_nonlinear_pairs_per_seed_with_several_seeds():
    by_m = {0.1: {0: _run([2, 4], 0.5), 1: _run([3, 3], 0.5)}, 0.8: {0: _run([8, 8], 0.5), 1: _run([9, 9], 0.5)}}
    ae = {0: _run([1, 1], 0.1), 1: _run([0, 2], 0.1)}
    trivial = {"m0.1_p8": 1.0, "m0.8_p8": 1.0, "m0_p8": 1.0}
    checks = ev.reconstruction_checks(by_m, {8: by_m[0.8]}, ae, trivial, 0.8, 8)
    out = ev.nonlinear_spread_evidence(by_m, {8: by_m[0.8]}, ae, checks, 0.8, 8)
    assert out["bisulco.jac_mae_ae_most_local"].samples == approx((2.0, 2.0))  # per-seed means 3 - 1, 3 - 1
    p = out["bisulco.jac_mae_spread_vs_p"]  # patch 8 only: per-seed means 8 and 9
    assert p.y == approx((8.5,)) and p.y_err == approx((0.5,)) and p.y_n == (2,)
    assert p.note == "m = 0.8; s.e. over seeds"
    assert p.looks == out["bisulco.jac_mae_ae_most_local"].looks == 1  # the default: a first analysis
    again = ev.nonlinear_spread_evidence(by_m, {8: by_m[0.8]}, ae, checks, 0.8, 8, looks=2)
    assert {e.looks for e in again.values()} == {2}  # the settings' nonlinear_looks reaches both rows


def _zoo_spreads(loss_r05_seed1=0.3):
    """Two seeds of the zoo at ratios 0.1, 0.5, 0.9 (unit 1): the Jacobian spreads of their checkpoints, each with
    the checkpoint's own masked-patch losses (maelab.zoo.measure_checkpoints)."""
    spread = {0.1: (3.0, 3.4), 0.5: (4.0, 4.6), 0.9: (6.0, 5.0)}
    spreads = []
    for seed in (0, 1):
        for r in (0.1, 0.5, 0.9):
            loss = loss_r05_seed1 if (r, seed) == (0.5, 1) else 0.3
            spreads.append({"model": f"r{r:g} u1", "ratio": r, "seed": seed, "spread": spread[r][seed],
                            "n_images": 50, "loss": loss, "reference_loss": 2.0, "patch_mean_loss": 1.0})  # fmt: skip
    spreads.append({"model": "r0.75 u2", "ratio": 0.75, "seed": 0, "spread": 99.0, "n_images": 50, "loss": 9.0,
                    "reference_loss": 2.0, "patch_mean_loss": 1.0})  # fmt: skip  # not read (fails its check)
    return pd.DataFrame(spreads)


def test_zoo_spread_row_is_over_seeds_and_gated_by_the_check_of_the_checkpoints_measured():
    spreads = _zoo_spreads()
    ev_, checks = ev.zoo_spread_evidence(spreads, [0.9, 0.1, 0.5], [0, 1])
    # sorted ratios; per ratio the mean of the two seeds' values and its s.e. |a - b| / 2
    assert ev_.x == (0.1, 0.5, 0.9) and ev_.y == approx((3.2, 4.3, 5.5)) and ev_.y_err == approx((0.2, 0.3, 0.5))
    assert ev_.y_n == (2, 2, 2) and not ev_.unmet and "50 test images" in ev_.note and "2 seeds" in ev_.note
    want = [f"MAE r{r:g} u1, masked-patch test loss, its checkpoint measured here" for r in (0.1, 0.5, 0.9)]
    assert [c.what for c in checks] == want
    assert checks[0].ratios == approx((0.3, 0.3))  # 0.3 / min(2.0, 1.0)
    # steps 1.1 (s.e. 0.36) and 1.2 (s.e. 0.58) with 1 degree of freedom: not significant, none the other way
    assert verdict(ROWS["bisulco.jac_mae_spread_vs_m"], ev_)[0] == "inconclusive"
    bad, checks = ev.zoo_spread_evidence(_zoo_spreads(0.96), [0.1, 0.5, 0.9], [0, 1])  # 0.96 > 0.95 x 1.0
    assert bad.unmet == checks[1].unmet and "MAE r0.5 u1" in bad.unmet and "run seed 1" in bad.unmet
    assert verdict(ROWS["bisulco.jac_mae_spread_vs_m"], bad)[1].startswith("precondition not met")
    with pytest.raises(ParameterError, match="^spreads must be a spread for every model"):
        ev.zoo_spread_evidence(spreads, [0.1, 0.5, 0.9], [0, 1, 2])
    for column in ("n_images", "patch_mean_loss"):
        with pytest.raises(ParameterError, match="^spreads must be a table with columns"):
            ev.zoo_spread_evidence(spreads.drop(columns=column), [0.1, 0.5, 0.9], [0, 1])


# ------------------------------------------------------------------------------------------------ bisulco_sweeps
SWEEPS = SimpleNamespace(
    seeds=[0, 1], encoder_depths=[2, 1], decoder_depths=[1, 2], key_decoder_depth=2, patch_size=4, mask_ratio=0.75,
    patch_sizes=[2, 4], mask_ratios=[0.5, 0.75], grid_depth=1, grid_decoder_depth=2, cost_reps=5, epochs=4,
    snapshot_epochs=[1, 2], cka_images=100,
)  # fmt: skip


def _sweeps_tables():
    runs = pd.DataFrame(
        [  # enc, dec, seed, linear_acc, rec_loss: the depth grid (seed 0) and the key column (decoder 2, seed 1)
            (1, 1, 0, 0.60, 0.30),
            (1, 2, 0, 0.70, 0.20),
            (2, 1, 0, 0.65, 0.25),
            (2, 2, 0, 0.80, 0.10),
            (1, 2, 1, 0.72, 0.21),
            (2, 2, 1, 0.84, 0.11),
        ],
        columns=["enc", "dec", "seed", "linear_acc", "rec_loss"],
    ).assign(patch=4, mask=0.75, random_init_loss=1.0, patch_mean_loss=0.5)
    # the pretext check: loss / min(1.0, 0.5); encoder 1 of seed 1 at 0.96 of the patch mean (0.95 allowed)
    runs["pretext_loss"] = [0.30, 0.20, 0.25, 0.10, 0.48, 0.11]
    rand = pd.DataFrame(
        [(1, 1, 4, 0, 0.5), (1, 2, 4, 0, 0.5), (2, 1, 4, 0, 0.5), (2, 2, 4, 0, 0.5), (1, 2, 4, 1, 0.70),
         (2, 2, 4, 1, 0.5), (1, 2, 2, 0, 0.5)],
        columns=["enc", "dec", "patch", "seed", "linear_acc"],
    )  # fmt: skip
    pm = pd.DataFrame(
        [(2, 0.5, 0.66), (2, 0.75, 0.68), (4, 0.5, 0.53), (4, 0.75, 0.70)], columns=["patch", "mask", "linear_acc"]
    ).assign(enc=1, dec=2, seed=0, random_init_loss=0.4, patch_mean_loss=0.6, pretext_loss=[0.3, 0.3, 0.3, 0.39])
    cost = []  # flops = 100 + 10 enc + 30 dec, step time 1 + 0.1 enc + 0.2 dec on the depth grid
    for e in (1, 2):
        for d in (1, 2):
            cost.append((e, d, 4, 0.75, 100 + 10 * e + 30 * d, 1 + 0.1 * e + 0.2 * d))
    cost += [(1, 2, 2, 0.5, 400, 2.0), (1, 2, 2, 0.75, 300, 1.8), (1, 2, 4, 0.5, 200, 1.6)]
    costs = pd.DataFrame(cost, columns=["enc", "dec", "patch", "mask", "flops", "step_wall_s"])
    return runs, rand, pm, costs


def test_learned_check_pairs_each_seed_with_its_random_init():
    runs, rand, _, _ = _sweeps_tables()
    c = sev.learned_check(runs[(runs.enc == 1) & (runs.dec == 2)], rand, "encoder 1")
    assert isinstance(c, LearnedCheck) and c.trained == (0.70, 0.72) and c.random_init == (0.5, 0.70)
    assert c.seeds == (0, 1) and not c.met  # seed 1 gains 2 points only
    with pytest.raises(ParameterError, match="trained"):
        sev.learned_check(runs.drop(columns="patch"), rand, "x")


def test_pretext_check_against_the_better_reference_at_95_percent():
    runs, _, _, _ = _sweeps_tables()
    c = sev.pretext_check(runs[(runs.enc == 1) & (runs.dec == 2)], "encoder 1")
    assert isinstance(c, ReconstructionCheck) and c.loss == (0.20, 0.48) and c.reference == (0.5, 0.5)
    assert c.runs == ("seed 0", "seed 1") and c.max_ratio == 0.95 and not c.met  # seed 1: 0.96
    assert "seed 1" in c.unmet and "patch-mean" in c.unmet
    edge = runs.iloc[[0]].assign(pretext_loss=0.95 * 0.5)
    assert sev.pretext_check(edge, "x").met  # exactly at the margin passes (the engine's <=)
    with pytest.raises(ParameterError, match="trained"):
        sev.pretext_check(runs.drop(columns="patch_mean_loss"), "x")


def test_depth_rows_by_hand_with_one_encoder_that_did_not_learn():
    runs, rand, _, costs = _sweeps_tables()
    checks = sev.depth_checks(runs, SWEEPS)  # the gate: the pretext task
    assert list(checks["key"]) == [1, 2] and not checks["key"][1].met and checks["key"][2].met
    assert checks["key"][1].what == "encoder 1, decoder 2, patch 4, mask 0.75 (seeds [0, 1])"
    assert len(checks["grid"]) == 4 and all(c.met for c in checks["grid"])  # seed 0: 0.2 to 0.6 of the patch mean
    assert all(isinstance(c, ReconstructionCheck) for c in [*checks["key"].values(), *checks["grid"]])
    probe = sev.depth_checks(runs, SWEEPS, rand)  # context: the probe against random init
    assert all(isinstance(c, LearnedCheck) for c in [*probe["key"].values(), *probe["grid"]])
    assert not probe["key"][1].met and all(c.met for c in probe["grid"])  # seed 0: gains 10 to 30 points
    out = sev.depth_evidence(runs, checks, SWEEPS)
    d = out["bisulco.fig15_encoder_depth"]
    assert d.x == (1.0, 2.0) and d.y == approx((0.71, 0.82)) and d.y_err == approx((0.01, 0.02)) and d.y_n == (2, 2)
    assert d.unmet == checks["key"][1].unmet and "seed 1" in d.unmet
    assert verdict(ROWS["bisulco.fig15_encoder_depth"], d)[0] == "inconclusive"
    b = out["bisulco.fig15_best_decoder"]  # decoder 1: (0.60 + 0.65) / 2, decoder 2: (0.70 + 0.80) / 2
    assert b.value == 2.0 and b.note.endswith("{1: 0.625, 2: 0.75}") and not b.unmet
    r = out["bisulco.fig14_loss_not_proxy"]  # loss falls exactly as accuracy rises over the four grid runs
    assert r.value == approx(-1.0) and r.note.startswith("Spearman over 4 grid runs") and not r.unmet
    t = sev.decoder_time_evidence(costs, SWEEPS)  # 30 / 10 FLOPs, 0.2 / 0.1 s per layer
    assert t.value == approx(3.0, rel=1e-9) and "step-time ratio 2.00 (0.2 s vs 0.1 s per layer" in t.note
    assert t.unmet == ""


def test_patch_mask_rows_by_hand_with_a_cell_that_did_not_learn():
    runs, rand, pm, costs = _sweeps_tables()
    pm_checks = sev.patch_mask_checks(pm, SWEEPS)  # the gate; patch 4 at 0.75: 0.39 > 0.95 x 0.4
    assert not pm_checks[4, 0.75].met and sum(c.met for c in pm_checks.values()) == 3
    probe = sev.patch_mask_checks(pm, SWEEPS, rand)  # context
    assert not probe[4, 0.5].met and sum(c.met for c in probe.values()) == 3  # 53 % vs 50 % at random init
    out = sev.patch_mask_evidence(pm, costs, pm_checks, SWEEPS)
    f = out["bisulco.fig16_patch_time"]  # FLOPs 400 / 200 and 300 / 170; times 2.0 / 1.6 and 1.8 / 1.5
    assert f.samples == approx((math.log(2.0), math.log(300 / 170)))
    assert f.note == "patch 2 vs 4, paired over mask ratios [0.5, 0.75]; step-time ratios [1.25, 1.2]"
    a = out["bisulco.fig17_patch_acc"]
    assert a.samples == approx((0.13, -0.02)) and a.unmet == pm_checks[4, 0.75].unmet
    assert verdict(ROWS["bisulco.fig17_patch_acc"], a)[0] == "inconclusive"
    m = out["bisulco.fig16_mask_time"]  # patch 4 (the base patch): 200 and 170 FLOPs
    assert m.x == (0.5, 0.75) and m.y == approx((2e-7, 1.7e-7)) and m.y_err is None and not m.unmet
    assert m.note == "GFLOP per step, patch 4; min step times over 5 repetitions: [1.6, 1.5] s"


def test_late_gains_and_the_mid_epoch():
    assert sev.late_epochs(SWEEPS) == (2, 4)
    assert sev.late_epochs(SimpleNamespace(epochs=4, snapshot_epochs=[3, 8])) == (3, 4)  # none <= 2: the first
    runs, rand, _, _ = _sweeps_tables()
    checks = sev.depth_checks(runs, SWEEPS)
    sn = pd.DataFrame(
        [(2, 0, 2, 0.70), (2, 0, 4, 0.75), (2, 1, 2, 0.80), (2, 1, 4, 0.78), (1, 0, 2, 0.1), (1, 0, 4, 0.9)],
        columns=["enc", "seed", "epoch", "linear_acc"],
    )
    e = sev.late_gains_evidence(sn, checks["key"], SWEEPS)  # deepest (2): 0.75 - 0.70, 0.78 - 0.80
    assert e.samples == approx((0.05, -0.02)) and not e.unmet
    assert e.note == "encoder 2, epoch 4 minus epoch 2, seeds [0, 1]"
    # the deepest encoder not learned: the row is gated
    bad = {**checks["key"], 2: LearnedCheck("encoder 2", (0.52, 0.51), (0.5, 0.5))}
    assert sev.late_gains_evidence(sn, bad, SWEEPS).unmet == bad[2].unmet != ""


def test_cka_of_the_last_layers_by_hand():
    runs, rand, _, _ = _sweeps_tables()
    checks = sev.depth_checks(runs, SWEEPS)
    mats = np.full((2, 2, 2, 2), np.nan)  # seeds x depths (1, 2) x layer x layer of the deepest
    mats[0, 0, 0, -1], mats[0, 1, 1, -1], mats[1, 0, 0, -1], mats[1, 1, 1, -1] = 0.9, 0.95, 0.8, 0.97
    e = sev.cka_evidence(mats, checks["key"], SWEEPS)
    assert e.x == (1.0, 2.0) and e.y == approx((0.85, 0.96)) and e.y_err == approx((0.05, 0.01)) and e.y_n == (2, 2)
    assert e.unmet == checks["key"][1].unmet  # the one key-column encoder that did not learn
    with pytest.raises(ParameterError, match="cka"):
        sev.cka_evidence(mats[:1], checks["key"], SWEEPS)


# ------------------------------------------------------------------------------------------------ no Evidence in pages
NOTEBOOKS = ("masking", "bisulco_linear_mae", "bisulco_ising", "bisulco_jacobians", "bisulco_sweeps")


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_the_pages_build_no_evidence_themselves(notebook):
    text = (ROOT / "notebooks" / f"{notebook}.md").read_text()
    assert not re.search(r"\bEvidence\b|LearnedCheck\(|ReconstructionCheck\(|unmet_of", text), notebook


# ------------------------------------------------------------------------------------------------ regressions
def _load(notebook, name, profile="cpu"):
    r = store.load(notebook, name, profile)
    if r is None:
        pytest.skip(f"no committed {profile} result {notebook}/{name}")
    return r


def _same(got: dict, notebook: str, profile: str = "cpu") -> dict:
    """Every claim of the page's committed record reproduced (values, samples, series and seeds per point within 1e-9
    relative, notes and unmet reasons exactly); returns the evidence's y_n per claim."""
    rec = _load(notebook, "claims", profile)["claims"]
    assert set(got) == set(rec)
    for cid, e in got.items():
        old, new = rec[cid]["evidence"], e.to_dict()
        assert set(new) == set(old), cid
        for k, v in old.items():
            if isinstance(v, list) and v and isinstance(v[0], list):  # per-seed series (y_samples)
                assert len(new[k]) == len(v), (cid, k)
                for a, b in zip(new[k], v):
                    assert a == pytest.approx(b, rel=1e-9, abs=1e-15), (cid, k)
            elif isinstance(v, list):
                assert new[k] == pytest.approx(v, rel=1e-9, abs=1e-15), (cid, k)
            elif isinstance(v, float):
                assert new[k] == pytest.approx(v, rel=1e-9, abs=1e-15), (cid, k)
            else:
                assert new[k] == v, (cid, k)
    return {cid: e.y_n for cid, e in got.items()}


@pytest.mark.parametrize("profile", ["cpu", "gpu"])
def test_masking_reproduces_its_committed_claims(profile):
    from maelab.papers.bisulco2025.settings import MaskingSettings

    sp = _load("masking", "spectra_2d", profile)
    got = {**ev.sinc_identity_evidence(_load("masking", "identity_1d", profile)), **ev.fig22_evidence(sp)}
    y_n = _same(got, "masking", profile)
    n = MaskingSettings.for_profile(profile).n_crops
    assert y_n["bisulco.fig22_smoothing"] == (n,) * len(sp["patch_sizes"])


def test_linear_mae_reproduces_its_committed_claims():
    from maelab.papers.bisulco2025.settings import BisulcoLinearMAESettings

    S = BisulcoLinearMAESettings.for_profile("cpu")
    nb = "bisulco_linear_mae"
    got = {
        "bisulco.lemma1_monte_carlo": ev.lemma1_evidence(_load(nb, "lemma1")["table"], S.mc_draws),
        **ev.theorem1_evidence(_load(nb, "theorem1")["table"], looks=S.theorem1_looks),
        "bisulco.lemma6_mean_variance": ev.lemma6_evidence(_load(nb, "lemma6")["table"]),
        "bisulco.lemma4_small_m": ev.lemma4_evidence(_load(nb, "taylor")["table"], S.taylor_draws),
    }
    assert _same(got, nb)["bisulco.lemma4_small_m"] == (S.taylor_draws,) * len(S.taylor_ratios)


def test_ising_reproduces_its_committed_claims():
    from maelab.papers.bisulco2025.settings import BisulcoIsingSettings

    S = BisulcoIsingSettings.for_profile("cpu")
    y_n = _same(ev.ising_evidence(_load("bisulco_ising", "scales")["table"], S), "bisulco_ising")
    assert y_n["bisulco.fig21_scale_grows_with_m"] == (len(S.seeds),) * len(S.mask_ratios)
    assert y_n["bisulco.fig20_scale_grows_with_p"] == (len(S.seeds),) * len(S.patch_sizes)


def test_jacobians_reproduces_its_committed_claims():
    from maelab.papers.bisulco2025.settings import BisulcoJacobiansSettings

    S = BisulcoJacobiansSettings.for_profile("cpu")
    nb, P0, M0 = "bisulco_jacobians", S.patch_size, S.mask_ratio
    lin = _load(nb, "linear_models")
    nat = {key: lin[f"natural__{key}"] for key in ("spread_mae", "spread_ae")}

    def runs(m, p):
        return {s: _load(nb, f"mae_m{round(m * 100):03d}_p{p}_s{s}") for s in S.seeds}

    by_m = {m: runs(m, P0) for m in sorted(set(S.mask_ratios) | {M0})}
    by_p = {p: runs(M0, p) for p in sorted(set(S.patch_sizes) | {P0})}
    ae = runs(0.0, P0)
    checks = ev.reconstruction_checks(by_m, by_p, ae, _load(nb, "trivial_loss")["loss"], M0, P0)
    ZS = zoo.ZooSettings.for_profile("cpu")
    ZM = zoo.measured(ZS)  # the Jacobians are those of the measured seeds' checkpoints
    zoo_row, _ = ev.zoo_spread_evidence(_load(nb, "zoo_jacobians")["spreads"], ZS.mask_ratios, ZM.seeds)
    got = {
        **ev.linear_spread_evidence(nat, S),
        **ev.nonlinear_spread_evidence(by_m, by_p, ae, checks, M0, P0, looks=S.nonlinear_looks),
        "bisulco.jac_mae_spread_vs_m": zoo_row,
    }
    y_n = _same(got, nb)
    assert y_n["bisulco.jac_linear_spread_vs_m"] == (len(S.lin_seeds),) * len(S.lin_mask_ratios)
    assert y_n["bisulco.jac_mae_spread_vs_p"] == (len(S.seeds),) * len(by_p)  # over training seeds
    assert len(got["bisulco.jac_mae_ae_most_local"].samples) == len(S.seeds) > 1  # one difference per seed
    assert y_n["bisulco.jac_mae_spread_vs_m"] == (len(ZM.seeds),) * len(ZS.mask_ratios)  # the zoo: over seeds


def test_sweeps_reproduces_its_committed_claims():
    from maelab.papers.bisulco2025.settings import BisulcoSweepsSettings

    S = BisulcoSweepsSettings.for_profile("cpu")
    nb = "bisulco_sweeps"
    runs, pmr = _load(nb, "depth_grid")["runs"], _load(nb, "patch_mask_grid")["runs"]
    costs = _load(nb, "step_costs")["costs"]  # the rows no longer read random_init: it is context (not a gate)
    checks = sev.depth_checks(runs, S)
    got = {
        **sev.depth_evidence(runs, checks, S),
        "bisulco.fig14_decoder_time": sev.decoder_time_evidence(costs, S),
        **sev.patch_mask_evidence(pmr, costs, sev.patch_mask_checks(pmr, S), S),
        "bisulco.fig18_late_gains": sev.late_gains_evidence(
            _load(nb, "snapshot_probes")["snapshots"], checks["key"], S
        ),
        "bisulco.fig19_cka_last_layer": sev.cka_evidence(_load(nb, "cka")["cka"], checks["key"], S),
    }
    y_n = _same(got, nb)
    assert y_n["bisulco.fig15_encoder_depth"] == y_n["bisulco.fig19_cka_last_layer"] == (len(S.seeds),) * 3
