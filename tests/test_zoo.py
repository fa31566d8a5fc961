"""The shared zoo (maelab.zoo): its grid, its specs (pairing, reuse), its settings' checks, the store round trip at
smoke size (config mismatch = missing), and the gpu guard."""

import numpy as np
import pandas as pd
import pytest
import torch

from maelab import models, result_keys, zoo
from maelab._validate import ParameterError
from maelab.options import RunOptions


def test_grid_names_and_specs():
    S = zoo.ZooSettings.for_profile("cpu")
    assert zoo.configs(S) == [(0.1, 1), (0.25, 1), (0.5, 1), (0.75, 1), (0.9, 1), (0.75, 2), (0.75, 4)]
    assert zoo.entry_name(0.75, 2, 1) == "r0p75_u2_s1" and zoo.label(0.75, 2) == "r0.75 u2"
    s1, s4 = zoo.spec(S, 0.75, 1, 0), zoo.spec(S, 0.75, 4, 0)
    assert "mask_unit" not in dict(s1.model_overrides)  # unit 1: the model's default, so a plain MAE's spec
    assert dict(s4.model_overrides)["mask_unit"] == 4 and dict(s4.model_overrides)["norm_pix_loss"] is True
    assert (s1.dataset, s1.img_size, s1.channels, s1.mask_ratio) == ("mnist", 32, 1, 0.75)
    assert S.grid_side == 8
    jobs = list(zoo.entries._jobs(S))
    assert len(jobs) == 6 * (1 + 7) + 1 and jobs[-1][0] == "raw"  # six seeds
    names = [zoo.entries._job_key(S, j)[0] for j in jobs]
    assert len(set(names)) == len(names)
    with pytest.raises(ParameterError, match=r"^ratio, unit must be a pair of the zoo"):
        zoo.spec(S, 0.5, 2, 0)


def test_entries_of_a_seed_start_from_the_same_weights():
    S = zoo.ZooSettings.for_profile("smoke")
    a, b, c = zoo.random_init(S, 1, unit=1), zoo.random_init(S, 1, unit=2), zoo.random_init(S, 0)
    built = models.create("mae", S.size, seed=1, **result_keys.OFFICIAL_CHOICES)
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) and torch.equal(sa[k], built.state_dict()[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)
    assert (a.mask_unit, b.mask_unit) == (1, 2)


@pytest.mark.parametrize(
    "params, start",
    [
        ({"units": [1, 3]}, "units must be divisors of the token grid side 8"),
        ({"units": [2, 4]}, "units must be a list starting at 1"),
        ({"mask_ratios": [0.1, 0.5, 0.9]}, "mask_ratios must be a list holding unit_ratio=0.75"),
        ({"img_size": 30}, "img_size must be a multiple of size 'micro'"),
        ({"dataset": "imagenet"}, "dataset must be one of"),
        ({"batch_size": 40000}, "batch_size must be at most n_train=30000"),
    ],
)
def test_degenerate_settings_are_rejected_in_one_line(params, start):
    with pytest.raises(ParameterError) as e:
        zoo.ZooSettings.for_profile("cpu", **params)
    assert str(e.value).startswith(start) and "\n" not in str(e.value)


def test_smoke_zoo_round_trip(tmp_path, capsys):
    S = zoo.ZooSettings.for_profile("smoke", seeds=[0], mask_ratios=[0.1, 0.75, 0.9], units=[1, 2])
    options = RunOptions(profile="smoke", device="cpu", results_root=str(tmp_path))
    # what a pool would pre-train (maelab.prefetch): every trained entry, then, once stored, none
    assert [s.key for s in zoo.pending_specs(S, options)] == [zoo.spec(S, r, u, 0).key for r, u in zoo.configs(S)]
    got = zoo.compute(S, options)
    assert list(got) == ["random_s0", "r0p1_u1_s0", "r0p75_u1_s0", "r0p9_u1_s0", "r0p75_u2_s0"]
    assert not any(r.from_store for r in got.values())
    # one stderr line per computed record: where its time went (a gpu installment's log)
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("[zoo] ")]
    assert [x.split(":")[0] for x in lines] == [f"[zoo] {n}" for n in got]
    phases = [[p.rsplit(" ", 2)[0] for p in x.split(": ", 1)[1].split("; ")] for x in lines]
    measured = ["probes, 20-NN and ranks of both pools", "reconstruction scores, losses and examples"]
    assert phases == [measured] + [["pre-training", *measured]] * 4
    assert zoo.pending_specs(S, options) == [] and len(zoo.pending_specs(S, options.replace(recompute=True))) == 4
    again = zoo.compute(S, options)
    assert all(r.from_store for r in again.values())  # stored: read, not recomputed
    assert "[zoo] " not in capsys.readouterr().err
    # a page run with --recompute recomputes its own results, not the shared zoo; the zoo's own flag does
    assert all(r.from_store for r in zoo.compute(S, options.replace(recompute=True)).values())
    assert not any(r.from_store for r in zoo.compute(S, options, recompute=True).values())
    read = zoo.load_entries(S, "smoke", root=tmp_path)
    assert read["missing"] == ["raw_pixels"] and read["raw_pixels"] is None
    e = read["entries"].set_index("model")
    assert list(e.index) == ["random init", "r0.1 u1", "r0.75 u1", "r0.9 u1", "r0.75 u2"]
    # the random-init entry is its own reference: same weights, same masks, same loss
    assert e.loc["random init", "loss"] == pytest.approx(e.loc["random init", "reference_loss"], rel=1e-6)
    # a trained entry's reference is the random init of its seed and unit: the unit-1 reference loss at 0.75 is the
    # random-init entry's own loss (same weights, masks drawn from the same seed)
    assert e.loc["r0.75 u1", "reference_loss"] == pytest.approx(e.loc["random init", "loss"], rel=1e-6)
    for col in ("linear_acc_cls", "linear_acc_mean", "knn_acc_cls", "ssim", "psnr", "patch_mean_loss"):
        assert np.isfinite(e[col]).all(), col
    ex = read["examples"][("r0.75 u2", 0)]
    assert ex["examples_pred"].shape == ex["examples_pasted"].shape == (zoo.N_EXAMPLES, 3, 32, 32)
    # a page's measurement of the same checkpoints on the same machine stores each model's own check: equal to the
    # entry's (same checkpoint, test images and masks); the random-init row has none
    m = zoo.measure_checkpoints(S, "t", lambda model, r, s, tr, te: {"r": r}, "cpu", with_random=True)["t"]
    m = m.set_index("model")
    for col in ("loss", "reference_loss", "patch_mean_loss"):
        for name in ("r0.1 u1", "r0.75 u1", "r0.9 u1"):
            assert m.loc[name, col] == pytest.approx(e.loc[name, col], rel=1e-5), (name, col)
        assert np.isnan(m.loc["random init", col])
    # a setting the records depend on changed: every record is missing, never silently reused
    other = zoo.ZooSettings.for_profile("smoke", seeds=[0], mask_ratios=[0.1, 0.75, 0.9], units=[1, 2], n_score=16)
    assert len(zoo.load_entries(other, "smoke", root=tmp_path)["missing"]) == 6


def test_an_entry_is_measured_where_its_model_is(monkeypatch):
    """Probes (forward passes and logreg_torch fits), reconstruction scores and losses run on the model's device and
    never move it: the models were moved to the CPU before scoring, and the probes fitted there, which at gpu put the
    scoring's 4 x n_score ViT-Tiny passes and the probes' Hessians on a pool worker's CPU thread (here refused)."""
    S = zoo.ZooSettings.for_profile("smoke", n_score=8)
    tr, te = zoo.data(S)
    model, reference = zoo.random_init(S, 0), zoo.random_init(S, 1)
    want = zoo.measure_entry(model, reference, tr, te, S, 0.75, 0)

    def refuse(self):
        raise AssertionError("a model was moved to the CPU")

    probe, devices = zoo.entries.evaluate.linear_probe, []

    def spy(*args, **kw):  # the probes are fitted where the model is (logreg_torch; on the CPU before)
        devices.append(kw.get("device"))
        return probe(*args, **kw)

    monkeypatch.setattr(torch.nn.Module, "cpu", refuse)
    monkeypatch.setattr(zoo.entries.evaluate, "linear_probe", spy)
    got = zoo.measure_entry(model, reference, tr, te, S, 0.75, 0)
    assert devices == [next(model.parameters()).device] * len(zoo.POOLS)
    assert got.keys() == want.keys() and {"ssim", "fsim", "loss", "reference_loss"} <= got.keys()
    for k, v in want.items():
        np.testing.assert_array_equal(got[k], v, err_msg=k)


def test_status_counts_the_stored_entries_and_their_training_hours(tmp_path, monkeypatch, capsys):
    import pandas as pd

    from maelab.zoo import cli

    seen = {}

    def fake(S, profile, root=None):  # two trained models (0.5 h and 1.5 h) and the random init (no training)
        seen.update(profile=profile, root=root)
        frame = pd.DataFrame({"model": ["r0.5 u1", "r0.9 u1", zoo.RANDOM_INIT], "train_seconds": [1800.0, 5400.0, 0.0]})
        return {"entries": frame, "missing": ["raw_pixels"]}

    monkeypatch.setattr(cli, "load_entries", fake)
    assert cli.main(["status", "--profile", "smoke", "--results-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.strip()
    assert out == "3 entries stored (2.0 h of training in all, as each record states it); missing: raw_pixels"
    assert seen == {"profile": "smoke", "root": str(tmp_path)}


def test_gpu_profile_refuses_to_compute_on_a_cpu(tmp_path):
    S = zoo.ZooSettings.for_profile("gpu")
    with pytest.raises(ParameterError, match=r"^device must be a CUDA device for the gpu profile's zoo") as e:
        zoo.entry(S, 0.75, 1, 0, RunOptions(profile="gpu", device="cpu", results_root=str(tmp_path)))
    assert "\n" not in str(e.value)
    assert not list(tmp_path.rglob("*.json"))  # nothing half-written


def _entries(r09_seed0=0.9):
    """Two seeds of three trained models and the random init, losses chosen by hand (frame of load_entries)."""
    rows = []
    for seed in (0, 1):
        rows.append(
            {"model": zoo.RANDOM_INIT, "seed": seed, "loss": 2.0, "reference_loss": 2.0, "patch_mean_loss": 1.0}
        )
        # r0.1 u1: the patch-mean predictor (1.0) is the better reference; r0.75 u1: the random init (0.8)
        rows.append({"model": "r0.1 u1", "seed": seed, "loss": 0.5, "reference_loss": 2.0, "patch_mean_loss": 1.0})
        rows.append({"model": "r0.75 u1", "seed": seed, "loss": 0.7, "reference_loss": 0.8, "patch_mean_loss": 1.0})
        loss = r09_seed0 if seed == 0 else 0.5
        rows.append({"model": "r0.9 u1", "seed": seed, "loss": loss, "reference_loss": 2.0, "patch_mean_loss": 1.0})
    return pd.DataFrame(rows)


def test_reconstruction_checks_against_the_better_reference():
    from maelab import claims

    checks = zoo.reconstruction_checks(_entries())
    assert [c.what for c in checks] == [f"MAE {m}, masked-patch test loss" for m in ("r0.1 u1", "r0.75 u1", "r0.9 u1")]
    assert [c.runs for c in checks] == [("seed 0", "seed 1")] * 3 and checks[0].max_ratio == pytest.approx(0.95)
    by = {c.what.split(",")[0][4:]: c for c in checks}
    assert by["r0.1 u1"].ratios == pytest.approx((0.5, 0.5))  # 0.5 / min(2.0, 1.0)
    assert by["r0.75 u1"].ratios == pytest.approx((0.875, 0.875))  # 0.7 / min(0.8, 1.0)
    assert by["r0.9 u1"].ratios == pytest.approx((0.9, 0.5)) and all(c.met for c in checks)
    assert claims.unmet_of(*checks) == ""
    bad = zoo.reconstruction_checks(_entries(0.96))  # 0.96 > 0.95 in seed 0
    assert [c.met for c in bad] == [True, True, False]
    u = claims.unmet_of(*bad)
    assert u.startswith("MAE r0.9 u1, masked-patch test loss: loss not at most 0.95") and "run seed 0" in u
    assert all(c.met for c in zoo.reconstruction_checks(_entries(0.96), 0.02))  # 0.96 <= 0.98
    assert zoo.reconstruction_checks(_entries(0.95))[2].met  # exactly 1 - margin passes
    with pytest.raises(ParameterError, match="^margin must be"):
        zoo.reconstruction_checks(_entries(), 1.0)
    with pytest.raises(ParameterError, match="^entries must be a table with columns"):
        zoo.reconstruction_checks(_entries().drop(columns="patch_mean_loss"))
    with pytest.raises(ParameterError, match="^entries must be rows of at least one trained model"):
        zoo.reconstruction_checks(_entries().query("model == @zoo.RANDOM_INIT"))


def test_checkpoint_checks_read_the_named_models_and_seeds_in_the_given_order():
    t = _entries(0.96)  # r0.9 u1 fails in seed 0 only
    checks = zoo.checkpoint_checks(t, ["r0.9 u1", "r0.1 u1"], [1])  # the order given; seed 0 left out
    assert [c.what for c in checks] == [
        f"MAE {m}, masked-patch test loss, its checkpoint measured here" for m in ("r0.9 u1", "r0.1 u1")
    ]
    assert [c.runs for c in checks] == [("seed 1",)] * 2 and all(c.met for c in checks)
    assert [c.met for c in zoo.checkpoint_checks(t, ["r0.1 u1", "r0.9 u1"], [0, 1])] == [True, False]
    assert zoo.checkpoint_checks(t, ["r0.9 u1"], [0, 1], 0.02)[0].met  # the margin is passed on: 0.96 <= 0.98
    with pytest.raises(ParameterError, match="^table must be a table with columns"):
        zoo.checkpoint_checks(t.drop(columns="loss"), ["r0.1 u1"], [0])
    with pytest.raises(ParameterError, match=r"^table must be a row for every named model and seed.*r0.5 u1 seed 0"):
        zoo.checkpoint_checks(t, ["r0.1 u1", "r0.5 u1"], [0])  # a model that was not measured is not left ungated


def test_looks_counts_the_second_analysis_once_seeds_go_beyond_the_first():
    assert zoo.looks([0, 1, 2]) == 1 and zoo.looks((1,)) == 1
    assert zoo.looks([0, 1, 2, 3, 4, 5]) == 2 and zoo.looks([3]) == 2
    # the cpu and gpu zoos are read at their second look (gpu: planned so); smoke reads seeds of the first only
    assert zoo.looks(zoo.ZooSettings.for_profile("cpu").seeds) == 2
    assert zoo.looks(zoo.ZooSettings.for_profile("smoke").seeds) == 1
    assert zoo.looks(zoo.ZooSettings.for_profile("gpu").seeds) == 2  # 6 seeds: a pre-planned second look
    for bad in ([], None, ["a"]):
        with pytest.raises(ParameterError, match="^seeds"):
            zoo.looks(bad)


def test_measured_keeps_the_entries_and_cuts_the_seeds_to_those_measured():
    S = zoo.ZooSettings.for_profile("cpu", measured_seeds=[0, 1, 2])
    M = zoo.measured(S)
    assert M.seeds == (0, 1, 2) and set(M.seeds) < set(S.seeds)
    # at cpu every seed is measured (their checkpoints were re-made); at gpu, the seeds it trains
    assert zoo.measured(zoo.ZooSettings.for_profile("cpu")).seeds == zoo.ZooSettings.for_profile("cpu").seeds
    assert zoo.measured(zoo.ZooSettings.for_profile("gpu")).seeds == zoo.ZooSettings.for_profile("gpu").seeds
    # the same entries at the measured seeds: their store keys are the zoo's own
    assert zoo.fingerprint(M) == {k: v for k, v in zoo.fingerprint(S).items() if int(k.rsplit("_s", 1)[1]) in M.seeds}
    # a page that overrides its seeds alone measures the ones it shares with measured_seeds
    assert zoo.measured(zoo.ZooSettings.for_profile("cpu", seeds=[2, 4, 0], measured_seeds=[0, 1, 2])).seeds == (2, 0)
    assert zoo.measured(zoo.ZooSettings.for_profile("cpu", measured_seeds=[0, 9])).seeds == (0,)
    for bad in ([9], []):
        with pytest.raises(ParameterError, match="^measured_seeds"):
            zoo.ZooSettings.for_profile("cpu", measured_seeds=bad)
