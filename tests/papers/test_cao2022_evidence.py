"""cao2022.evidence: every claim family on small hand-made tables with hand-computed answers (the learning gate of the
trained-model rows failing included), and the committed results of ``cao_theory`` and ``cao_decoder`` reproducing
the evidence of their committed claims records (the move of the derivation from the notebooks changed nothing)."""

import json
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from maelab import paths, profiles, store
from maelab._validate import ParameterError
from maelab.claims import Evidence, Precondition, ReconstructionCheck, RunStopped, verdict
from maelab.papers.cao2022 import evidence as E
from maelab.papers.cao2022 import trained
from maelab.papers.cao2022.claims import CLAIMS

THEORY = SimpleNamespace(
    n_maps=2, ns=[8, 16, 32], kernel="gaussian", width_grid=1.0, width_continuum=0.1, claim_n=32, claim_beta=0.01,
    tik_seeds=2, lr_n=4, lr_patch_sides=[2, 4],
)  # fmt: skip
DECODER = SimpleNamespace(
    kernel="exp", skip_scale=0.5, margin=0.2, ref_margin=0.05, depth=2, decoder_depth=3, patch_size=4
)  # fmt: skip


def _verdict(cid, ev):
    """The verdict of Cao's row ``cid`` on ``ev`` (the rows of this paper, not the whole registry)."""
    return verdict(next(c for c in CLAIMS if c.id == cid), ev)[0]


# ------------------------------------------------------------------------------------------------ cao_theory
def test_thm51_rates_reads_the_l2_slopes_of_each_variant_in_map_order():
    rows = []
    for i, v in enumerate(E.RATE_VARIANTS.values()):
        for m, s in enumerate((-1.0 - i, -1.5 - i)):
            rows += [
                {"variant": v, "norm": "l2", "map": m, "slope": s},
                {"variant": v, "norm": "sup", "map": m, "slope": 9.0},
            ]
    ev = E.thm51_rates(pd.DataFrame(rows), THEORY)
    assert list(ev) == list(E.RATE_VARIANTS)
    g = ev["cao.thm51_rate_grid_width"]
    assert g.samples == (-1.0, -1.5) and g.value == -1.25 and not g.unmet
    assert g.note == "2 maps, n = 8..32, gaussian kernel, width 1.0 patches"
    assert ev["cao.thm51_rate_fixed_gamma"].samples == (-2.0, -2.5)
    assert ev["cao.thm51_rate_fixed_gamma"].note.endswith(", width 0.1")
    assert ev["cao.thm51_rate_bv_jump"].samples == (-3.0, -3.5)
    assert ev["cao.thm51_normalisation_needed"].samples == (-4.0, -4.5)
    assert ev["cao.thm51_normalisation_needed"].note.endswith(", unnormalised")
    with pytest.raises(ParameterError, match="fixed gamma"):
        E.thm51_rates(pd.DataFrame([r for r in rows if not r["variant"].startswith("fixed")]), THEORY)


def _cond(ns, conds, betas=(0.0, 0.1), ratio=0.5):
    rows = []
    for n, c in zip(ns, conds):
        for b in betas:
            bound = (1 + b) / b if b else float("inf")
            rows.append({"n": n, "beta": b, "cond_2": c if b == 0 else 11.0,
                         "cond_alpha": ratio * bound if b else c, "bound_alpha": bound})  # fmt: skip
    return pd.DataFrame(rows)


def test_thm52_conditioning_by_hand():
    one = _cond([4, 8, 16, 32], [10.0, 1000.0, 1e12, 1e14], ratio=0.5)
    two = _cond([6], [50.0], ratio=0.75)
    rec = pd.DataFrame([  # seed, beta, total: log10 gains 2 and 4
        {"seed": 1, "beta": 0.0, "total": 100.0}, {"seed": 0, "beta": 0.0, "total": 0.1},
        {"seed": 0, "beta": 0.01, "total": 0.001}, {"seed": 1, "beta": 0.01, "total": 0.01},
    ])  # fmt: skip
    ev = E.thm52_conditioning(one, two, rec, THEORY)
    b = ev["cao.thm52_second_kind_bound"]
    assert b.value == pytest.approx(0.75) and b.note == "5 (n, beta, dim) cases"
    s = ev["cao.thm52_first_kind_ill_posed"]  # 1e14 is beyond float64's resolution: left out
    assert s.x == (4.0, 8.0, 16.0) and s.y == pytest.approx((1.0, 3.0, 12.0)) and s.y_err is None and s.y_n is None
    assert s.note == "1-D, cond_2 < 1e13" and _verdict("cao.thm52_first_kind_ill_posed", s) == "supported"
    g = ev["cao.thm52_noise_stability"]
    assert g.samples == pytest.approx((2.0, 4.0)) and g.note == "n = 32, beta = 0.01, 2 noise draws"
    # a bound exceeded, a first-kind series that falls: the rows' verdicts follow
    bad = E.thm52_conditioning(_cond([4, 8], [1e3, 10.0], ratio=1.5), two, rec, THEORY)
    assert _verdict("cao.thm52_second_kind_bound", bad["cao.thm52_second_kind_bound"]) == "not supported"
    assert _verdict("cao.thm52_first_kind_ill_posed", bad["cao.thm52_first_kind_ill_posed"]) == "not supported"
    with pytest.raises(ParameterError, match="recovery"):
        E.thm52_conditioning(one, two, rec[rec.beta == 0], THEORY)


def test_prop31_selection_by_hand():
    rows = []
    # natural crop 0: (N_c 2, r 1) uniform 0.5, 0.7 over two draws, permutation 0.2, 0.2 -> +0.4; (N_c 4, r 2): +0.1
    for img, nc, r, unif, perm in ((0, 2, 1, (0.5, 0.7), (0.2, 0.2)), (0, 4, 2, (0.3, 0.3), (0.2, 0.2)),
                                   (1, 2, 1, (0.1, 0.1), (0.3, 0.3)), (1, 4, 8, (9.0, 9.0), (0.0, 0.0))):  # fmt: skip
        for d in range(2):
            rows.append({"images": "natural", "image": img, "N_c": nc, "r": r, "selection": "uniform", "draw": d,
                         "recoverable": 0.5, "err_all": unif[d]})  # fmt: skip
            rows.append({"images": "natural", "image": img, "N_c": nc, "r": r, "selection": "permutation", "draw": d,
                         "recoverable": 0.25 if r <= nc else 0.0, "err_all": perm[d]})  # fmt: skip
    rows.append({"images": "synthetic", "image": 0, "N_c": 2, "r": 1, "selection": "uniform", "draw": 0,
                 "recoverable": 1.0, "err_all": 100.0})  # fmt: skip
    study = pd.DataFrame(rows)
    ex = pd.DataFrame({"ratio": [0.5, 1.0 - 1e-12, 0.75]})
    ev = E.prop31_selection(study, ex, THEORY)
    assert ev["cao.prop31_patches_alone"].value == 0.25  # the r > N_c row (0.0) is outside the proposition
    assert ev["cao.prop31_patches_alone"].note == "n = 4, N_c in [2, 4]"
    assert ev["cao.prop31_embedding_exists"].value == 1.0 - 1e-12
    assert ev["cao.prop31_embedding_exists"].note == "3 (crop, N_c, r <= N_c/2) cases"
    # crop 0: mean(+0.4, +0.1) = 0.25; crop 1: -0.2 (its r = 8 > N_c = 4 row is left out); synthetic rows ignored
    assert ev["cao.prop31_semirandom_vs_uniform"].samples == pytest.approx((0.25, -0.2))
    assert E.prop31_selection(study, ex.iloc[:0], THEORY)["cao.prop31_embedding_exists"].value is None


# ------------------------------------------------------------------------------------------------ cao_decoder
def _summary(rows):
    return pd.DataFrame(
        [{"variant": v, "seed": s, "init_loss": i, "final_loss": f, "diverged": d} for v, s, i, f, d in rows]
    )


LEARNED = [
    ("softmax", 0, 2.0, 0.5, ""),
    ("softmax", 1, 2.0, 0.6, ""),
    ("exp", 0, 3.0, 0.4, ""),
    ("exp", 1, 3.0, 0.5, ""),
]


def test_run_gates_are_the_two_loss_margins_and_divergence():
    # reference loss 1.0: learned means final <= 0.8 x init and final <= 0.95
    s = _summary(
        [("softmax", 0, 2.0, 0.9, ""), ("softmax", 1, 1.0, 0.85, ""), ("softmax", 2, 2.0, 0.96, ""),
         ("exp", 0, 2.0, float("nan"), "non-finite loss at epoch 2/4; lr 1e-3"), ("skip", 0, 2.0, 0.5, "")]
    )  # fmt: skip
    gates = E.run_gates(s, 1.0, DECODER)
    assert [g.learned for g in gates] == [True, False, False, False, True]
    assert all(isinstance(c, ReconstructionCheck) for i in (0, 1, 2, 4) for c in gates[i].checks)
    assert [type(c) for c in gates[3].checks] == [RunStopped] and not gates[3].checks[0].met  # diverged: no loss
    assert all(isinstance(g, Precondition) for g in gates)  # a gate is a check of the book's family itself
    assert gates[0].checks[0].max_ratio == pytest.approx(0.8) and gates[0].checks[1].max_ratio == pytest.approx(0.95)
    assert "softmax (official) seed 1" in gates[1].unmet and "untrained model" in gates[1].unmet  # 0.85 > 0.8 x 1.0
    assert "mean" not in gates[1].unmet
    assert "predicting each patch's mean" in gates[2].unmet and "untrained" not in gates[2].unmet  # 0.96 > 0.95
    assert gates[3].unmet == "unnormalised (exp) seed 0: diverged: non-finite loss at epoch 2/4"
    assert E.learned_seeds(gates, "softmax") == [0] and E.learned_seeds(gates, "skip") == [0]
    assert E.variants_unmet(gates, "skip") == ""
    assert E.variants_unmet(gates, "softmax", "exp") == "; ".join(g.unmet for g in gates[1:4])


def _readout(psnr):
    """A run's readout frame from psnr (layers, images)."""
    p = np.asarray(psnr, dtype=float)
    return pd.DataFrame(
        [{"layer": t, "image": i, "psnr_masked": p[t, i]} for t in range(p.shape[0]) for i in range(p.shape[1])]
    )


def test_fig3_readout_by_hand_and_gated():
    # layers 0 (decoder input), 1, 2 (intermediate), 3 (prediction); per image min(layer 1, 2) - layer 0
    runs = {
        ("softmax", 0): {"readout": _readout([[10, 20], [12, 25], [11, 30], [40, 40]])},  # gains 1, 5 -> 3
        ("softmax", 1): {"readout": _readout([[10, 10], [9, 12], [13, 11], [0, 0]])},  # gains -1, 1 -> 0
    }
    gates = E.run_gates(_summary(LEARNED), 1.0, DECODER)
    ev = E.fig3_readout(runs, gates, DECODER)
    assert ev.samples == (3.0, 0.0) and ev.note == "softmax, 2 seeds; dB, worst of blocks 1..2" and not ev.unmet
    # seed 1 did not learn: its gain is left out and the row is inconclusive whatever the numbers
    bad = E.run_gates(_summary([LEARNED[0], ("softmax", 1, 2.0, 1.9, "")]), 1.0, DECODER)
    ev = E.fig3_readout(runs, bad, DECODER)
    assert ev.samples == (3.0,) and "softmax (official) seed 1" in ev.unmet
    assert _verdict("cao.fig3_intermediate_readout", ev) == "inconclusive"
    # none learned: one NaN sample, still gated
    none = E.run_gates(_summary([("softmax", 0, 2.0, 1.9, "")]), 1.0, DECODER)
    ev = E.fig3_readout(runs, none, DECODER)
    assert math.isnan(ev.value) and ev.note.startswith("softmax, 0 seeds") and ev.unmet


def _changes(enc, dec):
    """A run's changes frame from enc (blocks, images) and dec (blocks, images)."""
    rows = []
    for part, a in (("encoder", enc), ("decoder", dec)):
        for b, row in enumerate(a, start=1):
            rows += [{"part": part, "block": b, "image": i, "change": float(c)} for i, c in enumerate(row)]
    return pd.DataFrame(rows)


def test_layer_change_by_hand_and_gated():
    runs = {
        # max per image: 0.4, 0.6 -> 0.5; mean of all 10 entries 0.25
        ("softmax", 0): {"changes": _changes([[0.1, 0.2], [0.4, 0.3]], [[0.2, 0.6], [0.1, 0.1], [0.2, 0.3]])},
        # max 1.0, 1.0 -> 1.0; mean 0.5
        ("softmax", 1): {"changes": _changes([[1.0, 0.0], [0.0, 1.0]], [[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]])},
        ("exp", 0): {"changes": _changes([[1.0, 1.0], [1.0, 1.0]], [[1.0] * 2] * 3)},  # mean 1.0
        ("exp", 1): {"changes": _changes([[2.0, 2.0], [2.0, 2.0]], [[2.0] * 2] * 3)},  # mean 2.0
    }
    gates = E.run_gates(_summary(LEARNED), 1.0, DECODER)
    ev = E.layer_change(runs, gates, DECODER)
    small = ev["cao.thm51_trained_small_change"]
    assert (
        small.samples == pytest.approx((0.5, 1.0))
        and small.note == "softmax, 2 seeds; max over 2 encoder + 3 decoder blocks"
    )
    more = ev["cao.thm51b_softmax_more_stable"]
    assert more.samples == pytest.approx((0.75, 1.5)) and more.note == "2 seeds paired; mean block change"
    assert not small.unmet and not more.unmet
    # exp seed 1 diverged: only seed 0 is paired, the softmax row stays ungated, the paired row is gated
    gates = E.run_gates(_summary(LEARNED[:3] + [("exp", 1, 3.0, float("nan"), "boom")]), 1.0, DECODER)
    ev = E.layer_change(runs, gates, DECODER)
    assert not ev["cao.thm51_trained_small_change"].unmet
    assert ev["cao.thm51b_softmax_more_stable"].samples == pytest.approx((0.75,))
    assert ev["cao.thm51b_softmax_more_stable"].unmet == "unnormalised (exp) seed 1: diverged: boom"
    assert _verdict("cao.thm51b_softmax_more_stable", ev["cao.thm51b_softmax_more_stable"]) == "inconclusive"
    with pytest.raises(ParameterError, match="stat"):
        E.change_per_seed(runs, "softmax", [0], "median")


def test_first_block_attention_by_hand_and_gated():
    def att(visible, masked, cls, far, r2):
        return pd.DataFrame({"visible": visible, "masked": masked, "cls": cls, "far_fraction": far, "r2": r2})

    runs = {  # unnormalised rows (totals 2 and 4): shares are taken per image before the mean
        ("softmax", 0): {"attention": att([1.0, 2.0], [0.5, 1.0], [0.5, 1.0], [0.8, 0.9], [0.6, 0.7]),
                         "summary": {"r2_chance": 0.25}},
        ("softmax", 1): {"attention": att([0.6, 0.6], [0.4, 0.4], [0.0, 0.0], [0.7, 0.7], [0.5, 0.5]),
                         "summary": {"r2_chance": 0.5}},
    }  # fmt: skip
    gates = E.run_gates(_summary(LEARNED[:2]), 1.0, DECODER)
    table = E.attention_table(runs, gates)
    assert table.visible.tolist() == pytest.approx([0.5, 0.6]) and table.masked.tolist() == pytest.approx([0.25, 0.4])
    ev = E.first_block_attention(runs, gates, DECODER)
    span, far = ev["cao.lemma61_visible_span"], ev["cao.prop62_global_interpolation"]
    assert span.samples == pytest.approx((0.65, 0.5)) and span.note == "softmax, 2 seeds; chance 0.38"
    assert far.samples == pytest.approx((0.85, 0.7)) and far.note == "softmax, 2 seeds; 7 x 7 grid"
    assert E.first_block_attention(runs, gates, SimpleNamespace(patch_size=7))[
        "cao.prop62_global_interpolation"
    ].note.endswith("4 x 4 grid")
    bad = E.run_gates(_summary([LEARNED[0], ("softmax", 1, 2.0, 0.99, "")]), 1.0, DECODER)  # 0.99 > 0.95 x 1.0
    ev = E.first_block_attention(runs, bad, DECODER)
    assert ev["cao.lemma61_visible_span"].samples == pytest.approx((0.65,))
    assert all("seed 1" in e.unmet for e in ev.values())
    assert {_verdict(c, e) for c, e in ev.items()} == {"inconclusive"}


# ------------------------------------------------------------------------------------------------ committed results
def _record(notebook):
    path = paths.committed_results() / notebook / "claims.cpu.json"
    return {cid: Evidence.from_dict(c["evidence"]) for cid, c in json.loads(path.read_text())["data"]["claims"].items()}


def _same(got: dict, want: dict):
    assert set(got) == set(want)
    for cid, w in want.items():
        g = got[cid]
        assert (g.note, g.unmet) == (w.note, w.unmet), cid
        for field in ("value", "samples", "x", "y", "y_err"):
            a, b = getattr(g, field), getattr(w, field)
            if b is None:
                assert a is None, (cid, field)
            else:
                assert np.allclose(np.atleast_1d(a), np.atleast_1d(b), rtol=1e-9, atol=0), (cid, field, a, b)


def _load(notebook, name):
    r = store.load(notebook, name, "cpu", root=paths.committed_results())
    if r is None:
        pytest.skip(f"no committed {notebook}/{name}.cpu")
    return r


def test_committed_cao_theory_evidence_is_reproduced():
    S = profiles.settings("cao_theory", "cpu")
    rates, tik, lr = (_load("cao_theory", n) for n in ("thm51_rates", "thm52_conditioning", "prop31_selection"))
    got = {
        **E.thm51_rates(rates["slopes"], S),
        **E.thm52_conditioning(tik["cond_1d"], tik["cond_2d"], tik["recovery"], S),
        **E.prop31_selection(lr["study"], lr["existence"], S),
    }
    _same(got, _record("cao_theory"))


def test_committed_cao_decoder_evidence_is_reproduced():
    S = profiles.settings("cao_decoder", "cpu")
    runs = {(v, s): _load("cao_decoder", f"run_{v}_s{s}") for v in trained.VARIANT_NAMES for s in S.seeds}
    ref = float(_load("cao_decoder", "mean_predictor")["loss"])
    summary = pd.DataFrame([{"variant": v, "seed": s, **runs[v, s]["summary"]} for v, s in runs])
    gates = E.run_gates(summary, ref, S)
    got = {
        "cao.fig3_intermediate_readout": E.fig3_readout(runs, gates, S),
        **E.layer_change(runs, gates, S),
        **E.first_block_attention(runs, gates, S),
    }
    want = _record("cao_decoder")
    _same({k: got[k] for k in want}, want)
