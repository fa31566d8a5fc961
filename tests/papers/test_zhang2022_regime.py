"""maelab.papers.zhang2022.regime: the learned-margin precondition and the snapshot learning curves (tiny sizes)."""

import pandas as pd
import pytest
import torch

from maelab import evaluate, paths, result_keys
from maelab import experiments as E
from maelab._validate import ParameterError
from maelab.papers.zhang2022 import regime as R


def test_learned_margin_needs_every_seed_above_the_margin():
    # gains 0.10, 0.07, 0.06 (hand-computed): all > 0.05 -> met; > 0.065 fails at the third seed
    assert R.learned_margin([0.80, 0.77, 0.76], [0.70, 0.70, 0.70], 0.05) == ""
    why = R.learned_margin([0.80, 0.77, 0.76], [0.70, 0.70, 0.70], 0.065)
    assert "+6.0 points" in why and "seed #2" in why and "76.0 % vs 70.0 %" in why
    # a large mean gain does not hide one seed that did not learn
    assert R.learned_margin([0.95, 0.95, 0.71], [0.70, 0.70, 0.70], 0.05) != ""
    # the margin is strict: a gain exactly equal to it (and a tie at margin 0, e.g. epoch 0) is not learning
    assert R.learned_margin([0.75], [0.50], 0.25) != ""
    assert R.learned_margin([0.5, 0.6], [0.5, 0.6], 0.0) != ""
    assert R.learned_margin([0.5, 0.6], [0.4, 0.59], 0.0) == ""


@pytest.mark.parametrize(
    "args, name",
    [
        (([0.8], [0.7, 0.7], 0.05), "random_acc"),
        (([], [], 0.05), "mae_acc"),
        (([0.8], [0.7], -0.01), "margin"),
        (([float("nan")], [0.7], 0.0), "mae_acc"),
        (([0.8], [0.7], "5"), "margin"),
    ],
)
def test_learned_margin_rejects_bad_input(args, name):
    with pytest.raises(ParameterError, match=name):
        R.learned_margin(*args)


def _curves():
    rows = [
        ("random", 0, 0, 0, 0.70),
        ("random", 1, 0, 0, 0.72),
        ("mae", 0, 1, 100, 0.69),
        ("mae", 1, 1, 100, 0.80),  # seed 0 below random: not learned
        ("mae", 0, 2, 200, 0.76),
        ("mae", 1, 2, 200, 0.78),  # gains 0.06, 0.06: learned at margin 0.05
        ("mae", 0, 3, 300, 0.90),
    ]  # seed 1 missing: never counts
    return pd.DataFrame(rows, columns=["variant", "seed", "epoch", "images_seen", "linear_acc"])


def test_first_learned_is_the_first_snapshot_where_every_seed_clears_the_margin():
    c = _curves()
    assert R.first_learned(c, 0.05) == (200, 2)
    assert R.first_learned(c, 0.07) is None  # 0.06 < 0.07 and epoch 3 lacks seed 1
    assert R.first_learned(c, 0.0, variant="umae") is None
    with pytest.raises(ParameterError, match="curves"):
        R.first_learned(c.drop(columns="images_seen"), 0.05)
    with pytest.raises(ParameterError, match="curves"):
        R.first_learned(c[c.variant != "random"], 0.05)


def test_probe_subset_is_seeded_without_replacement():
    a, b, c = R.probe_subset(100, 30, 1), R.probe_subset(100, 30, 1), R.probe_subset(100, 30, 2)
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert len(set(a.tolist())) == 30 and a.tolist() == sorted(a.tolist()) and int(a.max()) < 100
    assert torch.equal(R.probe_subset(10, None, 0), torch.arange(10))
    assert torch.equal(R.probe_subset(10, 50, 0), torch.arange(10))


def _spec(**kw):
    base = dict(
        dataset="shapes",
        n_train=192,
        n_test=96,
        img_size=16,
        channels=1,
        model="mae",
        size="micro",
        epochs=2,
        batch_size=64,
    )
    base.update(kw)
    return E.PretrainSpec(**base)


def test_seed_curves_rows_match_an_independent_evaluation(cache, monkeypatch):
    variants = {"mae": {"model": "mae"}, "umae": {"model": "umae", "model_overrides": (("lambda_unif", 1.0),)}}
    probe, devices = R.evaluate.linear_probe, []

    def spy(*args, **kw):  # every probe is fitted on the page's device (at gpu the card; the CPU before)
        devices.append(kw.get("device"))
        return probe(*args, **kw)

    monkeypatch.setattr(R.evaluate, "linear_probe", spy)
    # 8-pixel images: the raw-pixel probe is a Newton on 10 x 65 parameters (at 16 pixels, 10 x 257: ~17 s of LU)
    small = dict(img_size=8)
    out = R.seed_curves(
        _spec(**small), variants, seed=1, epochs=(0, 1, 2), probe_n_train=128, device="cpu", progress=False
    )
    monkeypatch.setattr(R.evaluate, "linear_probe", probe)
    assert devices == [torch.device("cpu")] * (5 * 2 + 1)  # 5 snapshots x 2 pools, and the raw pixels
    c = out["curves"]
    assert sorted(zip(c.variant, c.epoch)) == [("mae", 1), ("mae", 2), ("random", 0), ("umae", 1), ("umae", 2)]
    # 192 images, batch 64: 3 full steps = 192 images per epoch
    assert dict(zip(c.epoch, c.images_seen)) == {0: 0, 1: 192, 2: 384}
    assert len(out["history"]) == 4 and list(out["raw"].seed) == [1]
    # independent recomputation: the trained MAE (same spec, cached checkpoint) probed by hand on the same subset
    spec = _spec(seed=1, snapshot_epochs=(0, 1, 2), **small)
    model, _, tr, te = E.pretrain(spec, device="cpu", progress=False)
    idx = R.probe_subset(len(tr), 128, 1)
    ftr = evaluate.extract_features(model, tr.images[idx], pool="mean", progress=False)
    fte = evaluate.extract_features(model, te.images, pool="mean", progress=False)
    lp = evaluate.linear_probe(ftr, tr.labels[idx], fte, te.labels, method="logreg_torch", seed=1)
    last = c[(c.variant == "mae") & (c.epoch == 2)].iloc[0]
    assert last.linear_acc_mean == pytest.approx(lp.test_acc)
    assert last.knn_acc_mean == pytest.approx(evaluate.knn_accuracy(ftr, tr.labels[idx], fte, te.labels, k=20))
    # raw pixels: the probe on flattened images of the same subset
    raw = evaluate.linear_probe(
        tr.images[idx].flatten(1), tr.labels[idx], te.images.flatten(1), te.labels, method="logreg_torch", seed=1
    )
    assert out["raw"].linear_acc.iloc[0] == pytest.approx(raw.test_acc)
    # U-MAE with lambda = 1 trains differently from MAE
    mae = c[c.variant == "mae"].set_index("epoch")
    um = c[c.variant == "umae"].set_index("epoch")
    assert mae.loc[2, "effective_rank"] != um.loc[2, "effective_rank"]


def test_seed_curves_rejects_epochs_without_random_init(cache):
    with pytest.raises(ParameterError, match="epochs"):
        R.seed_curves(_spec(), {"mae": {"model": "mae"}}, seed=0, epochs=(1, 2), device="cpu")
    with pytest.raises(ParameterError, match="epochs"):
        R.seed_curves(_spec(), {"mae": {"model": "mae"}}, seed=0, epochs=(0, 3), device="cpu")
    with pytest.raises(ParameterError, match="variants"):
        R.seed_curves(_spec(), {"random": {"model": "mae"}}, seed=0, epochs=(0, 2), device="cpu")


def _log_curves(gains_by_seed, random=(0.70, 0.60)):
    """Snapshots at 1,000 * 2^k images with the given gains over each seed's random init."""
    rows = [("random", s, 0, 0, r) for s, r in enumerate(random)]
    for s, gains in enumerate(gains_by_seed):
        rows += [("mae", s, k + 1, 1000 * 2**k, random[s] + g) for k, g in enumerate(gains)]
    return pd.DataFrame(rows, columns=["variant", "seed", "epoch", "images_seen", "linear_acc"])


def test_margin_extrapolation_on_exact_log_lines():
    # seed 0: gain = 0.01 * log2(images / 1000) -> 0.05 at 1000 * 2^5 = 32,000 images (hand-computed);
    # seed 1: 0.02 per doubling from 0.01 at 1,000 -> 0.05 at 1000 * 2^2 = 4,000 images
    c = _log_curves([(0.0, 0.01, 0.02, 0.03), (0.01, 0.03, 0.05, 0.07)])
    t = R.margin_extrapolation(c, 0.05).set_index("seed")
    assert t.loc[0, "images_needed"] == pytest.approx(32000, rel=1e-9)
    assert t.loc[1, "images_needed"] == pytest.approx(4000, rel=1e-9)
    assert t.loc[0, "slope_per_doubling"] == pytest.approx(0.01)
    assert t.loc[1, "slope_per_doubling"] == pytest.approx(0.02)
    assert t.loc[0, "last_images"] == 8000 and t.loc[0, "last_gain"] == pytest.approx(0.03)
    assert list(t.points) == [4, 4]


def test_margin_extrapolation_window_and_flat_curves():
    # a curve that fell and then rises: the last 2 points (0.00 -> 0.02 per doubling) predict 0.05 at
    # 4000 * 2^2.5 images; a curve that falls at the end has flattened: inf
    c = _log_curves([(0.04, -0.02, 0.00, 0.02), (0.00, 0.03, 0.04, 0.035)])
    t = R.margin_extrapolation(c, 0.05, fit_points=2).set_index("seed")
    assert t.loc[0, "images_needed"] == pytest.approx(4000 * 2**2.5, rel=1e-9)
    assert t.loc[1, "images_needed"] == float("inf")
    with pytest.raises(ParameterError, match="fit_points"):
        R.margin_extrapolation(c, 0.05, fit_points=1)
    with pytest.raises(ParameterError, match="curves"):
        R.margin_extrapolation(c[c.variant != "random"], 0.05)


def test_training_minutes():
    assert R.training_minutes(120_000, 1000.0, runs=3) == pytest.approx(6.0)  # 3 * 120 s
    assert R.training_minutes(float("inf"), 1000.0) == float("inf")
    with pytest.raises(ParameterError, match="images_per_second"):
        R.training_minutes(1.0, 0.0)
    with pytest.raises(ParameterError, match="runs"):
        R.training_minutes(1.0, 1.0, runs=0)


def test_affordable_images_inverts_training_minutes():
    assert R.affordable_images(6.0, 1000.0, runs=3) == pytest.approx(120_000)
    assert R.training_minutes(R.affordable_images(45.0, 321.5, runs=7), 321.5, runs=7) == pytest.approx(45.0)
    with pytest.raises(ParameterError, match="^minutes"):
        R.affordable_images(-1.0, 1.0)
    with pytest.raises(ParameterError, match="^images_per_second"):
        R.affordable_images(1.0, 0.0)
    with pytest.raises(ParameterError, match="^runs"):
        R.affordable_images(1.0, 1.0, runs=0)


def test_budget_helpers_by_hand():
    from maelab import profiles

    S = profiles.settings("zhang_regime", "cpu")
    assert R.images_per_run(S) == S.epochs * (S.n_train // S.batch_size) * S.batch_size
    assert R.rerun_runs(S) == 2 * len(S.seeds) * len(S.rerun_datasets)
    timing = pd.DataFrame({"train_seconds": [100.0, 50.0]})
    assert R.trainer_images_per_second(timing, 1000) == pytest.approx((10.0 + 20.0) / 2)
    with pytest.raises(ParameterError, match="^timing"):
        R.trainer_images_per_second(pd.DataFrame(), 1000)


def test_regime_configs_are_those_of_the_committed_results():
    """zhang_umae reads zhang_regime's results through these configs: they must hash to the committed records."""
    from maelab import profiles, store

    root = paths.committed_results()
    S = profiles.settings("zhang_regime", "cpu")
    for name, config in [("throughput", R.throughput_config(S))] + [
        (f"curves_s{s}", R.curves_config(S, s)) for s in S.seeds
    ]:
        rec = store.read("zhang_regime", name, "cpu", {"profile": "cpu", **config}, root=root)
        assert rec is not None, name
    # the official-code choices are explicit, so flipping the library default left these keys unchanged
    assert R.base_spec(S).to_config()["model_overrides"] == {"patch_size": S.patch_size, **result_keys.OFFICIAL_CHOICES}
