"""maelab.papers.bisulco2025.sweeps: step cost (FLOPs vs closed form), per-layer features, CKA matrices, snapshot
probes."""

import numpy as np
import pytest
import torch
from pytest import approx

from maelab import experiments as E
from maelab import masking
from maelab._validate import ParameterError
from maelab.papers.bisulco2025 import sweeps


def _spec(**kw):
    base = dict(dataset="shapes", n_train=256, n_test=128, model="mae", size="micro", epochs=2, batch_size=64)
    over = kw.pop("over", {})
    base.update(kw)
    return E.PretrainSpec(model_overrides=tuple(over.items()), **base)


def _block_flops(n: int, t: int, d: int) -> int:
    """Forward + backward FLOPs of one timm ViT block (mlp_ratio 4) on n sequences of t tokens of width d.

    Forward: qkv 2*3d^2, proj 2*d^2, MLP 2*(4d^2 + 4d^2) per token = 24 d^2 t; attention QK^T and AV 2 * 2 t^2 d.
    Backward of every matrix product costs twice its forward (gradients of both operands).
    """
    return 3 * n * (24 * d * d * t + 4 * t * t * d)


@pytest.mark.parametrize("ratio", [0.75, 0.5])
def test_flops_per_encoder_and_decoder_block_match_closed_form(ratio):
    n, d = 4, 64
    L = (32 // 4) ** 2
    keep = masking.num_keep(L, ratio)
    c = {
        k: sweeps.step_cost(
            _spec(mask_ratio=ratio, over=dict(depth=k, decoder_depth=1)), batch_size=n, reps=1, warmup=0
        )["flops"]
        for k in (1, 2, 4)
    }
    assert c[2] - c[1] == _block_flops(n, 1 + keep, d)
    assert c[4] - c[2] == 2 * _block_flops(n, 1 + keep, d)
    dec = {
        k: sweeps.step_cost(
            _spec(mask_ratio=ratio, over=dict(depth=1, decoder_depth=k, decoder_embed_dim=32)),
            batch_size=n,
            reps=1,
            warmup=0,
        )["flops"]
        for k in (1, 3)
    }
    assert dec[3] - dec[1] == 2 * _block_flops(n, 1 + L, 32)


def test_step_cost_times_are_positive_and_flops_deterministic():
    a = sweeps.step_cost(_spec(), batch_size=8, reps=2)
    b = sweeps.step_cost(_spec(), batch_size=8, reps=1)
    assert a["flops"] == b["flops"] > 0 and a["wall_s"] > 0 and a["cpu_s"] >= 0 and a["batch_size"] == 8


def test_layer_features_agree_with_forward_features():
    torch.manual_seed(0)
    model = E.build_model(_spec(over=dict(depth=3))).eval()
    x = torch.rand(10, 3, 32, 32)
    toks = sweeps.layer_features(model, x, pool="tokens", batch_size=4)
    assert len(toks) == 3 and toks[-1].shape == (10, 64 * 64)
    last = model.norm(toks[-1].reshape(10, 64, 64))
    torch.testing.assert_close(last.mean(1), model.forward_features(x, pool="mean"), rtol=1e-5, atol=1e-5)
    mean = sweeps.layer_features(model, x, pool="mean", batch_size=3)
    for m, t in zip(mean, toks):
        torch.testing.assert_close(m, t.reshape(10, 64, 64).mean(1), rtol=1e-5, atol=1e-6)
    cls = sweeps.layer_features(model, x, pool="cls")
    torch.testing.assert_close(model.norm(cls[-1]), model.forward_features(x, pool="cls"), rtol=1e-5, atol=1e-5)


def _cka_hsic(x: np.ndarray, y: np.ndarray) -> float:
    """Linear CKA through centred Gram matrices (Kornblith et al. 2019, Eq. 1-2), a different route from the
    feature-space formula of maelab.metrics."""
    n = len(x)
    h = np.eye(n) - 1.0 / n
    k, l_ = h @ x @ x.T @ h, h @ y @ y.T @ h
    return float(np.sum(k * l_) / np.sqrt(np.sum(k * k) * np.sum(l_ * l_)))


def test_cka_matrix_matches_gram_formula_and_is_one_on_the_diagonal():
    rng = np.random.default_rng(0)
    a = [torch.from_numpy(rng.normal(size=(30, d))) for d in (5, 8)]
    b = [
        a[0] @ torch.from_numpy(np.linalg.qr(rng.normal(size=(5, 5)))[0]) * 3.0,
        torch.from_numpy(rng.normal(size=(30, 4))),
    ]
    m = sweeps.cka_matrix(a, b)
    assert m.shape == (2, 2)
    assert m[0, 0] == pytest.approx(1.0, abs=1e-10)  # orthogonal transform + isotropic scaling
    for i in range(2):
        for j in range(2):
            assert m[i, j] == pytest.approx(_cka_hsic(a[i].numpy(), b[j].numpy()), rel=1e-9)
    with pytest.raises(ParameterError, match="^feats_a"):
        sweeps.cka_matrix([], b)


def test_snapshot_probe_of_last_epoch_equals_pipeline_probe(cache):
    spec = _spec(snapshot_epochs=(0, 1, 2))
    snap = sweeps.snapshot_probe_accuracy(spec, device="cpu", progress=False)
    assert snap["epochs"] == [0, 1, 2]
    out = E.pretrain_and_evaluate(spec, device="cpu", progress=False)
    assert snap["linear_acc"][-1] == out["linear_acc"]
    with pytest.raises(ParameterError, match="^snapshot_epochs"):
        sweeps.snapshot_probe_accuracy(_spec(), device="cpu")


@pytest.mark.parametrize("kw, name", [({"batch_size": 0}, "batch_size"), ({"reps": 0}, "reps")])
def test_step_cost_bad_input(kw, name):
    with pytest.raises(ParameterError, match=f"^{name}"):
        sweeps.step_cost(_spec(), **kw)


def test_layer_features_bad_input():
    model = E.build_model(_spec())
    with pytest.raises(ParameterError, match="^pool"):
        sweeps.layer_features(model, torch.rand(2, 3, 32, 32), pool="max")
    with pytest.raises(ParameterError, match="^images"):
        sweeps.layer_features(model, torch.rand(3, 32, 32))


def test_evaluate_specs_gives_the_pipeline_numbers(cache):
    spec = _spec(epochs=1, n_train=128, n_test=64)
    (a,) = sweeps.evaluate_specs([spec], device="cpu", progress=False)
    b = E.pretrain_and_evaluate(spec, device="cpu", progress=False)
    assert a["linear_acc"] == b["linear_acc"] and a["rec_loss"] == b["rec_loss"] and a["knn_acc"] == b["knn_acc"]
    # the pretext check's own loss is the trained model's test loss under the same masks (mask seed = spec seed)
    assert a["pretext_loss"] == approx(b["rec_loss"], rel=1e-6)
    init = E.reconstruction_loss(
        E.build_model(spec), E.load_data(spec, "cpu", progress=False)[1].images, None, spec.seed
    )
    assert a["random_init_loss"] == approx(init, rel=1e-6) and 0 < a["patch_mean_loss"] < init


def test_evaluate_specs_inside_an_installment_stores_each_run_and_reuses_it(cache, tmp_path, monkeypatch):
    """maelab.parts: in a record being computed with store_parts on, each run is its own stored part; computing the
    record again (as after a cut-off) trains and evaluates nothing and returns the same values."""
    from maelab import store
    from maelab.options import RunOptions

    specs = [_spec(epochs=1, n_train=128, n_test=64, seed=s) for s in (0, 1)]

    def record():
        outs = []

        def fn():
            outs.extend(sweeps.evaluate_specs(specs, device="cpu", progress=False))
            return {"acc": [o["linear_acc"] for o in outs]}

        kw = dict(notebook="nb", profile="smoke", root=tmp_path, log=None, options=RunOptions(store_parts=True))
        store.load_or_compute("grid", {"n": 2}, fn, **kw)
        return outs

    import pickle

    handed = []
    real = sweeps.compute_parts
    monkeypatch.setattr(sweeps, "compute_parts", lambda ts, **kw: (handed.extend(ts), real(ts, **kw))[1])
    first = record()
    assert len(list((tmp_path / "nb").glob("grid__*.smoke.json"))) == 2
    # what a pool would compute (maelab.prefetch.compute_parts): the same parts, in a worker's reach
    assert [t.key for t in handed] == [s.key for s in specs]
    assert [pickle.loads(pickle.dumps(t)).fn.args for t in handed] == [(s,) for s in specs]
    (tmp_path / "nb" / "grid.smoke.json").unlink()
    monkeypatch.setattr(E, "pretrain_and_evaluate", lambda *a, **k: pytest.fail("a stored part was computed again"))
    again = record()
    for a, b in zip(first, again):
        assert sorted(a) == sorted(b)
        for k in a:
            assert np.array_equal(a[k], b[k]) if isinstance(a[k], np.ndarray) else a[k] == b[k], k


def test_evaluate_specs_runs_the_pipeline_with_its_default_probe_blas_limit(monkeypatch):
    import inspect  # the pipeline's default is the one thread the stored sweeps were computed with

    assert inspect.signature(E.pretrain_and_evaluate).parameters["blas_threads"].default == 1
    calls = []
    monkeypatch.setattr(E, "pretrain_and_evaluate", lambda spec, **kw: calls.append((spec, kw)) or {"k": spec.seed})
    specs = [_spec(epochs=1, n_train=64, n_test=32, seed=s) for s in (1, 2)]
    assert [o["k"] for o in sweeps.evaluate_specs(specs, device="cpu", progress=False)] == [1, 2]
    assert [c[0] for c in calls] == specs and all("blas_threads" not in c[1] for c in calls)


def test_finetune_vs_probe_compares_each_fine_tuned_run_with_its_own_probe():
    import pandas as pd

    runs = pd.DataFrame(
        {
            "enc": [4, 1, 2, 1, 2],
            "seed": [0, 0, 0, 1, 1],
            "linear_acc": [0.80, 0.70, 0.75, 0.60, 0.61],
            "finetune_acc": [0.90, 0.65, 0.85, np.nan, np.nan],  # seed 1 not fine-tuned: left out
        }
    )
    out, reason = sweeps.finetune_vs_probe(runs)
    assert list(out.index) == [1, 2, 4]
    np.testing.assert_allclose(out.gain.to_numpy(), [-0.05, 0.10, 0.10])
    assert out.beats.tolist() == [False, True, True]
    assert reason == (
        "fine-tuning did not learn (fine-tuned accuracy not above the frozen linear probe: "
        "enc 1 65.0 % <= probe 70.0 %)"
    )
    ok, none = sweeps.finetune_vs_probe(runs[runs.enc != 1])
    assert none == "" and ok.beats.all()


def test_finetune_vs_probe_bad_input():
    import pandas as pd

    with pytest.raises(ParameterError, match="^runs must be a table with a 'finetune_acc' column"):
        sweeps.finetune_vs_probe(pd.DataFrame({"enc": [1], "linear_acc": [0.5]}))
    with pytest.raises(ParameterError, match="^runs must be at least one fine-tuned run"):
        sweeps.finetune_vs_probe(pd.DataFrame({"enc": [1], "linear_acc": [0.5], "finetune_acc": [np.nan]}))
    twice = pd.DataFrame({"enc": [1, 1], "linear_acc": [0.5, 0.6], "finetune_acc": [0.7, 0.8]})
    with pytest.raises(ParameterError, match="^enc must be one fine-tuned run per value"):
        sweeps.finetune_vs_probe(twice)
