"""maelab.papers.zhang2022.umae: paired MAE vs U-MAE runs (tiny sizes)."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

from maelab import evaluate, metrics
from maelab import experiments as E
from maelab._validate import ParameterError
from maelab.papers.zhang2022 import evidence as zev
from maelab.papers.zhang2022 import umae as U


def _spec(**kw):
    base = dict(dataset="shapes", n_train=192, n_test=96, model="mae", size="micro", epochs=2, batch_size=64)
    base.update(kw)
    return E.PretrainSpec(**base)


def test_evaluate_run_matches_independent_recomputation_and_survives_resume(cache, capsys):
    spec = _spec()
    r = U.evaluate_run(spec, rank_epochs=(0, 2), device="cpu", progress=False)
    # one stderr line per run: where its time went (a gpu installment's log), no fine-tuning phase without it
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith(f"[umae] mae seed 0 on {spec.dataset}: pre-training ") and "fine-tuning" not in line
    assert [p.rsplit(" ", 2)[0] for p in line.split(": ", 1)[1].split("; ")] == [
        "pre-training",
        "probes, 20-NN and ranks of both pools",
        "reconstruction loss and snapshot ranks",
    ]
    # epoch-0 rank = rank of a freshly built (untrained) model: the snapshot is the initial weights
    init = E.random_init_features(_spec(snapshot_epochs=(0, 2)), device="cpu")
    assert r["ranks"][0][0] == 0 and r["ranks"][0][1] == pytest.approx(init["effective_rank"], rel=1e-6)
    # final-epoch rank = rank of the returned test features; the probe equals a probe on re-extracted features
    f = torch.from_numpy(r["test_features"])
    assert r["ranks"][-1][1] == pytest.approx(metrics.effective_rank(f), rel=1e-5)
    assert r["row"]["effective_rank"] == pytest.approx(metrics.effective_rank(f), rel=1e-6)
    model, _, tr, te = E.pretrain(_spec(snapshot_epochs=(0, 2)), device="cpu", progress=False)
    ftr = evaluate.extract_features(model, tr.images, pool="mean", progress=False)
    fte = evaluate.extract_features(model, te.images, pool="mean", progress=False)
    lp = evaluate.linear_probe(ftr, tr.labels, fte, te.labels, method="logreg", seed=0)
    assert r["row"]["linear_acc_mean"] == pytest.approx(lp.test_acc)
    # a second call resumes the finished checkpoint (no training callbacks run) and still has every rank
    again = U.evaluate_run(spec, rank_epochs=(0, 2), device="cpu", progress=False)
    assert again["ranks"] == r["ranks"] and again["row"]["linear_acc"] == r["row"]["linear_acc"]


def test_umae_with_zero_lambda_is_mae_exactly(cache):
    """The pairing: same seed -> same init, data order and masks; only the loss differs."""
    out = U.compare(
        _spec(epochs=1),
        {"mae": {"model": "mae"}, "umae": {"model": "umae", "model_overrides": (("lambda_unif", 0.0),)}},
        seeds=[3],
        random_init=False,
    )
    runs = out["runs"].set_index("variant")
    for m in ("linear_acc", "knn_acc", "effective_rank", "rec_loss"):
        assert runs.loc["umae", m] == runs.loc["mae", m], m
    assert U.paired(out["runs"], "rec_loss") == [0.0]


def test_probe_on_device_reaches_every_probe_and_changes_no_number_on_a_cpu(cache, monkeypatch):
    """``probe_on_device`` fits every logreg_torch probe of compare (trained and random-init runs, both pools) on
    the model's device (zhang_ablations at gpu: the card); off, on the CPU (zhang_umae). On a CPU both are the same."""
    kw = dict(seeds=[3], probe_method="logreg_torch", device="cpu")
    probe, devices = U.evaluate.linear_probe, []

    def spy(*args, **k):
        devices.append(k.get("device"))
        return probe(*args, **k)

    monkeypatch.setattr(U.evaluate, "linear_probe", spy)
    on = U.compare(_spec(epochs=1), {"mae": {"model": "mae"}}, probe_on_device=True, **kw)
    assert devices == [torch.device("cpu")] * 4  # 2 pools x (the trained run, the random init)
    devices.clear()
    off = U.compare(_spec(epochs=1), {"mae": {"model": "mae"}}, **kw)
    assert devices == [None] * 4
    pd.testing.assert_frame_equal(on["runs"].drop(columns="train_seconds"), off["runs"].drop(columns="train_seconds"))
    devices.clear()  # the raw pixels: only where the probe goes (a 3,072-wide probe on shapes takes ~40 s)
    monkeypatch.setattr(
        U.evaluate, "linear_probe", lambda *a, **k: devices.append(k.get("device")) or SimpleNamespace(test_acc=0.5)
    )
    assert (
        U.raw_pixel_probe(_spec(), probe_method="logreg_torch", probe_on_device=True, device="cpu")["linear_acc"] == 0.5
    )
    assert devices == [torch.device("cpu")]


def test_compare_tables_and_uniformity_changes_training(cache):
    out = U.compare(
        _spec(epochs=1),
        {"mae": {"model": "mae"}, "umae": {"model": "umae", "model_overrides": (("lambda_unif", 1.0),)}},
        seeds=[0, 1],
        rank_epochs=(0, 1),
        finetune_variants=("umae",),
        finetune_epochs=1,
        features_seed=1,
    )
    runs = out["runs"]
    assert sorted(zip(runs.variant, runs.seed)) == sorted([(v, s) for v in ("mae", "umae", "random") for s in (0, 1)])
    assert runs[runs.variant == "mae"].finetune_acc.isna().all()
    assert runs[runs.variant == "umae"].finetune_acc.notna().all()
    assert out["sv_mae"].shape == (2, 64) and out["features_umae"].shape == (96, 64) and out["labels"].shape == (96,)
    assert set(out["ranks"].epoch) == {0, 1} and len(out["curves"]) == 4
    # both variants start from the same weights: identical epoch-0 ranks, and the random-init rows agree with them
    r = out["ranks"].set_index(["variant", "seed", "epoch"]).effective_rank
    rnd = runs[runs.variant == "random"].set_index("seed").effective_rank
    for s in (0, 1):
        assert r[("mae", s, 0)] == r[("umae", s, 0)] == pytest.approx(rnd[s], rel=1e-6)
    # lambda = 1 changes the weights: U-MAE's loss has a uniformity term and its numbers differ from MAE's
    c = out["curves"]
    assert (c[c.variant == "umae"].loss_unif > 0).all() and (c[c.variant == "mae"].loss_unif == 0).all()
    assert U.paired(runs, "rec_loss") != [0.0, 0.0]


def test_seeds_added_later_merge_into_the_result_of_one_compare_over_all_seeds(cache):
    """A second look's runs (seeds added after a first analysis, their own record) merged with the first's equal
    one compare over all the seeds, timings aside; the added run starts from its own seed's weights."""
    # the torch probe: the merge is what is tested, and scikit-learn's L-BFGS took ~11 of the test's ~23 s
    kw = dict(rank_epochs=(0, 1), finetune_variants=("mae", "umae"), finetune_epochs=1, probe_method="logreg_torch")
    vs = {"mae": {"model": "mae"}, "umae": {"model": "umae", "model_overrides": (("lambda_unif", 1.0),)}}
    whole = U.compare(_spec(epochs=1), vs, seeds=[1, 0], features_seed=1, **kw)
    first = U.compare(_spec(epochs=1), vs, seeds=[1], features_seed=1, **kw)
    added = U.compare(_spec(epochs=1), vs, seeds=[0], **kw)
    merged = U.merge_compare(first, added)
    timing = ["train_seconds", "seconds", "images_per_s"]
    assert sorted(merged) == sorted(whole)
    for k in ("runs", "curves", "ranks"):
        a, b = (t.drop(columns=[c for c in timing if c in t.columns]) for t in (merged[k], whole[k]))
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert list(merged["runs"].seed[merged["runs"].variant == "mae"]) == [1, 0]
    for k in [k for k in whole if k.startswith(("sv_", "features_")) or k == "labels"]:
        np.testing.assert_array_equal(merged[k], whole[k])
    # the added seed's runs are not the first seed's: the seeds differ in the merged table
    m = merged["runs"].set_index(["variant", "seed"]).rec_loss
    assert m[("mae", 0)] != m[("mae", 1)]
    # the page's rows of the merged runs carry the two looks (tested at ALPHA / 2), over both seeds
    ev, _ = zev.umae_rows("mnist", "MNIST", merged, looks=2)
    assert len(ev) == 6 and all(e.looks == 2 and len(e.samples) == 2 for e in ev.values())
    with pytest.raises(ParameterError, match="^added must be runs at seeds not in first"):
        U.merge_compare(first, first)
    with pytest.raises(ParameterError, match="^added must be a compare result of the same variants"):
        U.merge_compare(first, {**added, "runs": added["runs"][added["runs"].variant != "umae"]})


def test_paired_summary_and_curve_gap_by_hand():
    runs = pd.DataFrame(
        {
            "variant": ["mae", "umae", "mae", "umae", "umae"],
            "seed": [0, 0, 1, 1, 2],
            "linear_acc": [0.5, 0.6, 0.4, 0.45, 0.9],
        }
    )
    assert U.paired(runs, "linear_acc") == pytest.approx([0.1, 0.05])  # seed 2 has no MAE partner
    s = U.summary(runs, ["linear_acc"], order=["umae", "mae"]).set_index("variant")
    assert s.loc["umae", "linear_acc"] == pytest.approx(np.mean([0.6, 0.45, 0.9]))
    assert s.loc["umae", "linear_acc_std"] == pytest.approx(np.std([0.6, 0.45, 0.9], ddof=1))
    assert s.loc["mae", "seeds"] == 2
    curves = pd.DataFrame(
        {
            "variant": ["mae"] * 3 + ["umae"] * 3,
            "seed": [0, 0, 0] * 2,
            "epoch": [1, 2, 3] * 2,
            "eval_online_acc": [0.1, None, 0.3, 0.2, 0.5, 0.6],
        }
    )
    assert U.per_seed_curve_gap(curves) == pytest.approx([((0.2 - 0.1) + (0.6 - 0.3)) / 2])


def test_finetune_precondition():
    def runs(ft_mae, ft_umae):
        return pd.DataFrame(
            {
                "variant": ["mae", "mae", "umae", "umae", "random"],
                "seed": [0, 1, 0, 1, 0],
                "linear_acc": [0.5, 0.75, 0.5, 0.75, 0.5],  # mean 0.625, exact in binary
                "finetune_acc": [ft_mae, ft_mae, ft_umae, ft_umae, None],
            }
        )

    assert U.finetune_unmet(runs(0.9, 0.91)) == ""
    why = U.finetune_unmet(runs(0.1, 0.9))  # MAE's fine-tuning stuck at chance: below its own linear probe
    assert why.startswith("fine-tuning did not learn") and "mae 10.0 % <= probe 62.5 %" in why and "umae" not in why
    assert "umae" in U.finetune_unmet(runs(0.9, 0.625))  # equal to the probe is not "learned" either
    with pytest.raises(ParameterError, match="^variants"):
        U.finetune_unmet(runs(0.9, 0.9), ("mae", "random"))  # random init is never fine-tuned


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: U.paired(pd.DataFrame({"variant": ["mae"], "seed": [0], "x": [1.0]}), "x"), "runs"),
        (lambda: U.paired(pd.DataFrame({"variant": ["mae"]}), "x"), "runs"),
        (lambda: U.compare(_spec(), {}, seeds=[0]), "variants"),
        (lambda: U.compare(_spec(), {"random": {}}, seeds=[0]), "variant name"),
        (lambda: U.compare(_spec(), {"mae": {}}, seeds=[0, 0]), "seeds"),
        (lambda: U.compare(_spec(), {"mae": {}}, seeds=[0], finetune_variants=("umae",)), "finetune_variants"),
        (lambda: U.evaluate_run(_spec(), rank_epochs=(5,)), "rank_epochs"),
        (lambda: U.compare(_spec(), {"mae": {}}, seeds=[0], probe_method="sgd"), "probe_method"),
    ],
)
def test_bad_input(call, name):
    with pytest.raises(ParameterError, match=f"^{name}"):
        call()


def test_probe_method_logreg_torch_fits_the_same_probe(cache):
    """probe_method="logreg_torch" (the cpu profile's) is the scikit-learn probe's problem solved in torch: on the
    same run's features both choose a C and land within 1.5 points of each other (one C grid, 20 % validation)."""
    a = U.evaluate_run(_spec(), device="cpu", progress=False, probe_cs=[0.1, 1.0])
    b = U.evaluate_run(_spec(), device="cpu", progress=False, probe_cs=[0.1, 1.0], probe_method="logreg_torch")
    for m in ("linear_acc", "linear_acc_mean"):
        assert abs(a["row"][m] - b["row"][m]) <= 0.015, m
    assert a["row"]["knn_acc"] == b["row"]["knn_acc"]  # everything but the probe is the same run


@pytest.mark.parametrize(
    "over, name",
    [
        ({"datasets": ["fashion_mnist"], "investigate_dataset": "mnist"}, "investigate_dataset"),
        ({"patch_size": 5}, "patch_size"),  # 28 px: 5 does not divide it
        ({"patch_size": {"fashion_mnist": 8}}, "patch_size"),
        ({"n_test": {"fashion_mnist": 1}}, "n_test"),
        ({"epochs": {"mnist": 5}}, "epochs"),  # no value for fashion_mnist, a dataset of the profile
    ],
)
def test_umae_settings_refuse_what_cannot_run(over, name):
    from maelab import profiles

    with pytest.raises(ParameterError, match=f"^{name}"):
        profiles.settings("zhang_umae", "cpu", **over)


def test_base_spec_geometry_patch_and_choices_per_dataset():
    """The spec the notebook and the cost plan share: 28 px grey for (fashion_)mnist, 32 px RGB for cifar_dogcat,
    the per-dataset patch under the settings' model choices."""
    from maelab import profiles, result_keys

    S = profiles.settings("zhang_umae", "gpu", patch_size={"fashion_mnist": 7, "mnist": 7, "cifar_dogcat": 8})
    fm, dc = U.base_spec(S, "fashion_mnist"), U.base_spec(S, "cifar_dogcat")
    assert (fm.img_size, fm.channels, fm.n_train, fm.n_test) == (28, 1, 8000, 2000)
    assert (dc.img_size, dc.channels, dc.n_train, dc.n_test, dc.epochs) == (32, 3, 1600, 400, 200)
    assert dict(fm.model_overrides)["patch_size"] == 7 and dict(dc.model_overrides)["patch_size"] == 8
    assert {k: dict(fm.model_overrides)[k] for k in result_keys.OFFICIAL_CHOICES} == result_keys.OFFICIAL_CHOICES
    legacy = U.base_spec(profiles.settings("zhang_umae", "smoke", model_choices="legacy"), "mnist10k")
    assert (legacy.img_size, legacy.channels) == (32, 1) and "patch_size" not in dict(legacy.model_overrides)
    assert {k: dict(legacy.model_overrides)[k] for k in result_keys.LEGACY_CHOICES} == result_keys.LEGACY_CHOICES
