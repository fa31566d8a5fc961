"""maelab.experiments: the shared pretrain -> evaluate pipeline (tiny sizes)."""

import numpy as np
import pytest
import torch

from maelab import evaluate, metrics, result_keys
from maelab import experiments as E
from maelab._validate import ParameterError


def _spec(**kw):
    base = dict(
        dataset="shapes", n_train=256, n_test=128, model="umae", size="micro", epochs=2, batch_size=128, rank_every=1
    )
    base.update(kw)
    return E.PretrainSpec(**base)


def test_pipeline_outputs_are_consistent_and_deterministic(cache):
    spec = _spec(keep_features=True)
    out = E.pretrain_and_evaluate(spec, device="cpu", progress=False)
    assert len(out["history"]) == 2 and [r[0] for r in out["rank_by_epoch"]] == [0, 1, 2]
    # the reported numbers are recomputable from the returned features
    f = torch.from_numpy(out["test_features"])
    assert out["effective_rank"] == pytest.approx(metrics.effective_rank(f), rel=1e-6)
    assert out["rank_by_epoch"][-1][1] == pytest.approx(out["effective_rank"], rel=1e-5)
    np.testing.assert_allclose(out["singular_values"], metrics.singular_values(f).numpy(), rtol=1e-5)
    assert 0.0 <= out["linear_acc"] <= 1.0 and 0.0 <= out["knn_acc"] <= 1.0 and out["rec_loss"] > 0
    # same spec, fresh cache -> identical numbers
    again = E.pretrain_and_evaluate(spec, device="cpu", progress=False)
    assert again["linear_acc"] == out["linear_acc"] and again["rec_loss"] == out["rec_loss"]


def test_rank_by_epoch_survives_a_resumed_run_and_equals_a_training_callback(cache, tmp_path, monkeypatch):
    spec = _spec(epochs=3, rank_every=2)
    seen = []
    probe = evaluate.linear_probe

    def spy(*a, **k):
        seen.append(k.get("blas_threads"))
        return probe(*a, **k)

    monkeypatch.setattr(evaluate, "linear_probe", spy)
    first = E.pretrain_and_evaluate(spec, device="cpu", progress=False)
    # the second call finds the finished checkpoint (snapshots at the rank epochs inside) and trains nothing
    assert (cache / "checkpoints" / E.training_spec(spec).key / "last.pt").exists()
    again = E.pretrain_and_evaluate(spec, device="cpu", progress=False)
    assert [r[0] for r in first["rank_by_epoch"]] == [0, 2, 3] == list(E.rank_epochs(spec))
    assert again["rank_by_epoch"] == first["rank_by_epoch"]
    assert again["linear_acc"] == first["linear_acc"] and seen == [1, 1]  # the probe runs on one BLAS thread
    # the same numbers as ranks measured by a training callback during an uninterrupted run (the old way)
    _, te = E.load_data(spec, "cpu", progress=False)
    ranks = []

    def track(epoch, model):
        if epoch % spec.rank_every == 0 or epoch == spec.epochs:
            ranks.append([epoch, metrics.effective_rank(evaluate.extract_features(model, te.images, progress=False))])

    monkeypatch.setenv("MAELAB_CACHE", str(tmp_path / "fresh"))
    _, res, _, _ = E.pretrain(spec, device="cpu", progress=False, callbacks=(track,))
    assert res.resumed_from is None and ranks == first["rank_by_epoch"]
    # rank_every = 0: the spec is pre-trained as is (same checkpoint key as before)
    plain = _spec(rank_every=0)
    assert E.training_spec(plain) is plain and E.rank_epochs(plain) == ()


def test_checkpoint_cache_makes_reruns_cheap_and_identical(cache):
    spec = _spec(rank_every=0)
    m1, r1, _, _ = E.pretrain(spec, device="cpu", progress=False)
    assert (cache / "checkpoints" / spec.key / "last.pt").exists()
    m2, r2, _, _ = E.pretrain(spec, device="cpu", progress=False)
    assert r2.resumed_from is not None
    for (k, a), (_, b) in zip(m1.state_dict().items(), m2.state_dict().items()):
        assert torch.equal(a, b), k


def test_spec_key_and_config_change_with_fields():
    a, b = _spec(), _spec(model_overrides=(("lambda_unif", 0.1),))
    assert a.key != b.key and a.to_config() != b.to_config()
    # the official-code choices of the (official) defaults are listed: tests/test_models.py checks the canonical form
    assert b.to_config()["model_overrides"] == {"lambda_unif": 0.1, **result_keys.OFFICIAL_CHOICES}


@pytest.mark.parametrize(
    "kw, name",
    [
        ({"dataset": "imagenet"}, "dataset"),
        ({"model": "vit"}, "model"),
        ({"pool": "max"}, "pool"),
        ({"epochs": 0}, "epochs"),
    ],
)
def test_bad_spec(kw, name):
    with pytest.raises(ParameterError, match=f"^{name}"):
        _spec(**kw)


def test_random_init_evaluate_is_the_untrained_start_of_pretraining(cache):
    spec = _spec()
    r = E.random_init_evaluate(spec, device="cpu")
    # pre-training starts from these weights: its epoch-0 rank (from the stored snapshot) is the random-init rank
    out = E.pretrain_and_evaluate(spec, device="cpu", progress=False)
    assert out["rank_by_epoch"][0][1] == pytest.approx(r["effective_rank"], rel=1e-6)
    # and the probe is the pipeline's: the same logistic regression on features of a freshly created model
    from maelab import models

    model = models.create("umae", "micro", img_size=32, in_chans=3, seed=spec.seed)
    tr, te = E.load_data(spec)
    ftr = evaluate.extract_features(model, tr.images, progress=False)
    fte = evaluate.extract_features(model, te.images, progress=False)
    lp = evaluate.linear_probe(ftr, tr.labels, fte, te.labels, method="logreg", seed=spec.seed, blas_threads=1)
    assert r["linear_acc"] == pytest.approx(float(lp.test_acc))
    assert r["knn_acc"] == pytest.approx(float(evaluate.knn_accuracy(ftr, tr.labels, fte, te.labels)))
    with pytest.raises(ParameterError, match="^dataset"):
        E.random_init_evaluate(_spec(dataset="natural", channels=1), device="cpu")


def test_init_config_drops_only_the_training_fields():
    a = _spec()
    cfg = a.init_config()
    assert set(a.to_config()) - set(cfg) == set(E.TRAINING_FIELDS)
    assert _spec(epochs=9, blr=1.0, mask_ratio=0.5, batch_size=64).init_config() == cfg
    for kw in ({"seed": 1}, {"size": "tiny"}, {"model": "simmim"}, {"n_train": 128}, {"pool": "mean"}):
        assert _spec(**kw).init_config() != cfg, kw


def test_unlabelled_dataset_is_refused(cache):
    with pytest.raises(ParameterError, match="^dataset"):
        E.pretrain_and_evaluate(_spec(dataset="natural", channels=1), device="cpu", progress=False)


# ---------------------------------------------------------------------------------------------------------------
# the one snapshot loop against the three it replaced
# ---------------------------------------------------------------------------------------------------------------
def _rng_states(dev) -> list:
    states = [torch.random.get_rng_state()]
    if dev.type == "cuda":
        states += torch.cuda.get_rng_state_all()
    return states


def _reset_rngs(dev) -> None:
    torch.manual_seed(1234)  # also seeds CUDA


@pytest.mark.parametrize("device", ["cpu"] + (["cuda"] if torch.cuda.is_available() else []))
def test_evaluate_snapshots_reproduces_the_three_loops_it_replaced(cache, device):
    """The snapshot loops of pretrain_and_evaluate (ranks), umae_analysis.evaluate_run (ranks, both pools) and
    sweeps.snapshot_probe_accuracy (probe accuracy), copied verbatim from commit 583ce8e, give exactly the numbers
    of experiments.evaluate_snapshots with the re-seeding each used, and leave the generators (CPU; CUDA on a GPU)
    in the same state, so whatever runs next (fine-tuning, the reconstruction loss) draws the same numbers."""
    import copy

    from maelab._util import resolve_device

    dev = resolve_device(device)
    spec = _spec(model="mae", epochs=2, rank_every=0, snapshot_epochs=(0, 1, 2), n_train=192, n_test=96, batch_size=64)
    model, res, tr, te = E.pretrain(spec, device=device, progress=False)
    epochs = (0, 1, 2)
    feats = lambda m, imgs, pool: evaluate.extract_features(m, imgs, pool=pool, progress=False)

    def old_experiments():  # pretrain_and_evaluate, rank_every > 0
        ranks = []
        snap = copy.deepcopy(model)
        for e in epochs:
            snap.load_state_dict(res.snapshots[e])
            ranks.append([e, metrics.effective_rank(feats(snap, te.images, spec.pool))])
        return ranks

    def old_umae():  # umae_analysis.evaluate_run
        ranks = []
        for e in epochs:
            snap = E.build_model(spec).to(dev)
            snap.load_state_dict(res.snapshots[e])
            ranks.append([e] + [float(metrics.effective_rank(feats(snap, te.images, p))) for p in ("cls", "mean")])
        return ranks

    def probe(m):
        lp = evaluate.linear_probe(
            feats(m, tr.images, spec.pool),
            tr.labels,
            feats(m, te.images, spec.pool),
            te.labels,
            method="logreg",
            seed=spec.seed,
            blas_threads=1,
        )
        return float(lp.test_acc)

    def old_sweeps():  # sweeps.snapshot_probe_accuracy
        accs = []
        probe_model = E.build_model(spec).to(dev)
        for e in sorted(res.snapshots):
            probe_model.load_state_dict(res.snapshots[e])
            accs.append(probe(probe_model))
        return accs

    new = {
        "experiments": lambda: [
            [e, r]
            for e, r in zip(
                epochs,
                E.evaluate_snapshots(
                    spec,
                    model,
                    res.snapshots,
                    epochs,
                    reseed=False,
                    measure=lambda m: metrics.effective_rank(feats(m, te.images, spec.pool)),
                ),
            )
        ],
        "umae": lambda: [
            [e, *r]
            for e, r in zip(
                epochs,
                E.evaluate_snapshots(
                    spec,
                    model,
                    res.snapshots,
                    epochs,
                    reseed=True,
                    measure=lambda m: [float(metrics.effective_rank(feats(m, te.images, p))) for p in ("cls", "mean")],
                ),
            )
        ],
        "sweeps": lambda: E.evaluate_snapshots(spec, model, res.snapshots, sorted(res.snapshots), probe, reseed=True),
    }
    old = {"experiments": old_experiments, "umae": old_umae, "sweeps": old_sweeps}
    for name in old:
        _reset_rngs(dev)
        a, a_rng = old[name](), _rng_states(dev)
        _reset_rngs(dev)
        b, b_rng = new[name](), _rng_states(dev)
        assert a == b, name
        assert len(a) == 3 and all(torch.equal(x, y) for x, y in zip(a_rng, b_rng)), name
    # the epochs differ (the weights changed in training), so the comparison is not of three equal numbers
    assert len({r[1] for r in old_experiments()}) == 3
