"""Tests for maelab.evaluate with small stand-in models (no dependency on maelab.models, except one optional
integration test)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from maelab import evaluate as E
from maelab._validate import ParameterError


class StandIn(nn.Module):
    """forward_features: 'cls' = a fixed linear map of the flattened image, 'mean' = per-channel means - 0.5.
    A dropout layer makes train mode non-deterministic, so eval mode is observable."""

    def __init__(self, in_dim: int, d: int = 5):
        super().__init__()
        self.proj = nn.Linear(in_dim, d)
        self.drop = nn.Dropout(0.5)

    def forward_features(self, imgs, pool="cls"):
        if pool == "mean":
            return imgs.mean(dim=(2, 3)) - 0.5
        return self.drop(self.proj(imgs.flatten(1)))


def _blobs(n_per_class: int, num_classes: int, d: int, sep: float, seed: int):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(num_classes, d)) * sep
    x = np.concatenate([c + rng.normal(size=(n_per_class, d)) for c in centres])
    y = np.repeat(np.arange(num_classes), n_per_class)
    perm = rng.permutation(len(y))
    return torch.from_numpy(x[perm]).float(), torch.from_numpy(y[perm])


# ------------------------------------------------------------------------------------------------ features
def test_extract_features_batched_eval_mode_no_grad():
    torch.manual_seed(0)
    model = StandIn(3 * 4 * 4).train()
    imgs = torch.rand(7, 3, 4, 4)
    feats = E.extract_features(model, imgs, pool="cls", batch_size=3)
    with torch.no_grad():
        expected = model.proj(imgs.flatten(1))  # dropout off = eval mode
    torch.testing.assert_close(feats, expected)
    assert model.training  # mode restored
    assert not feats.requires_grad and feats.dtype == torch.float32
    torch.testing.assert_close(E.extract_features(model, imgs, pool="mean", batch_size=2), imgs.mean(dim=(2, 3)) - 0.5)

    class DS:  # a Dataset-like object
        images = imgs

    torch.testing.assert_close(E.extract_features(model, DS(), batch_size=100), expected)
    torch.testing.assert_close(E.extract_features(lambda x: x[:, 0, 0], imgs), imgs[:, 0, 0])


def test_extract_features_bad_inputs():
    model = StandIn(16)
    with pytest.raises(ParameterError, match="pool"):
        E.extract_features(model, torch.rand(2, 1, 4, 4), pool="max")
    with pytest.raises(ParameterError, match="images"):
        E.extract_features(model, torch.rand(2, 16))
    with pytest.raises(ParameterError, match="batch_size"):
        E.extract_features(model, torch.rand(2, 1, 4, 4), batch_size=0)
    with pytest.raises(ParameterError, match="model"):
        E.extract_features(lambda x: x, torch.rand(2, 1, 4, 4))  # returns 4-D "features"


# ------------------------------------------------------------------------------------------------ linear probe
def test_logreg_probe_matches_direct_scikit_learn_and_separates_blobs():
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    xtr, ytr = _blobs(40, 3, 8, sep=3.0, seed=1)
    xte, yte = xtr + 0.3 * torch.randn(xtr.shape, generator=torch.Generator().manual_seed(2)), ytr
    res = E.linear_probe(xtr, ytr, xte, yte, C=0.5)
    assert res.method == "logreg" and res.C == 0.5 and res.val_acc == {}
    scaler = StandardScaler().fit(xtr.double().numpy())
    ref = LogisticRegression(C=0.5, max_iter=1000).fit(scaler.transform(xtr.double().numpy()), ytr.numpy())
    ref_pred = ref.predict(scaler.transform(xte.double().numpy()))
    np.testing.assert_array_equal(res.predict(xte).numpy(), ref_pred)
    assert res.test_acc == pytest.approx(float((ref_pred == yte.numpy()).mean()))
    assert res.train_acc >= 0.95 and res.test_acc >= 0.9


def test_logreg_probe_chooses_C_on_validation_split():
    xtr, ytr = _blobs(30, 4, 6, sep=1.0, seed=3)
    res = E.linear_probe(xtr, ytr, method="logreg", Cs=(1e-4, 1e-2, 1.0), seed=0)
    assert set(res.val_acc) == {1e-4, 1e-2, 1.0}
    best = max(res.val_acc.values())
    assert res.C == min(c for c, a in res.val_acc.items() if a == best)
    assert res.test_acc is None and 0 <= res.train_acc <= 1
    # same seed -> same choice and predictions
    res2 = E.linear_probe(xtr, ytr, method="logreg", Cs=(1e-4, 1e-2, 1.0), seed=0)
    assert res2.val_acc == res.val_acc and torch.equal(res2.predict(xtr), res.predict(xtr))


def test_sgd_probe_official_head_learns_and_is_deterministic():
    xtr, ytr = _blobs(50, 3, 10, sep=2.0, seed=4)
    xte, yte = _blobs(20, 3, 10, sep=2.0, seed=4)
    r1 = E.linear_probe(xtr, ytr, xte[:30], yte[:30], method="sgd", epochs=15, batch_size=32, seed=1)
    r2 = E.linear_probe(xtr, ytr, xte[:30], yte[:30], method="sgd", epochs=15, batch_size=32, seed=1)
    assert r1.method == "sgd" and r1.train_acc >= 0.95
    assert r1.history == r2.history and len(r1.history) == 15
    torch.testing.assert_close(r1.classifier[1].weight, r2.classifier[1].weight, rtol=0, atol=0)
    bn = r1.classifier[0]
    assert isinstance(bn, nn.BatchNorm1d) and not bn.affine and bn.eps == 1e-6
    assert r1.history[-1]["loss"] < r1.history[0]["loss"]
    # the learning rate ends near zero (cosine) after the warm-up
    assert r1.history[-1]["lr"] < 0.05 * 0.1


def test_logreg_torch_fits_on_the_device_it_is_given(monkeypatch):
    """``device`` reaches maelab.logreg's fits (the zoo's probes run on the card at gpu); without one they run on the
    CPU. Here a spy records the device and fits on the CPU, so the result equals a plain CPU probe's."""
    from maelab import logreg

    seen = []

    class Spy(logreg.LogRegPath):
        def __init__(self, tol=1e-9, device="cpu"):
            seen.append(torch.device(device))
            super().__init__(tol=tol, device="cpu")

    xtr, ytr = _blobs(30, 3, 4, sep=2.0, seed=5)
    xte, yte = _blobs(10, 3, 4, sep=2.0, seed=6)
    want = E.linear_probe(xtr, ytr, xte, yte, method="logreg_torch", Cs=(0.1, 1.0), seed=0)
    monkeypatch.setattr(logreg, "LogRegPath", Spy)
    got = E.linear_probe(xtr, ytr, xte, yte, method="logreg_torch", Cs=(0.1, 1.0), seed=0, device=torch.device("meta"))
    default = E.linear_probe(xtr, ytr, xte, yte, method="logreg_torch", Cs=(0.1, 1.0), seed=0)
    assert seen == [torch.device("meta"), torch.device("cpu")]
    assert (
        (got.C, got.val_acc, got.test_acc)
        == (want.C, want.val_acc, want.test_acc)
        == (
            default.C,
            default.val_acc,
            default.test_acc,
        )
    )


def test_lr_schedule_closed_form():
    lr, total, warm = 0.4, 10.0, 2.0
    assert E._lr_at(1.0, total, warm, lr) == pytest.approx(0.2)  # halfway through the linear warm-up
    assert E._lr_at(2.0, total, warm, lr) == pytest.approx(lr)
    assert E._lr_at(6.0, total, warm, lr) == pytest.approx(lr / 2)  # half of the cosine
    assert E._lr_at(10.0, total, warm, lr) == pytest.approx(0.0, abs=1e-12)


def test_linear_probe_auto_method_and_bad_inputs(monkeypatch):
    xtr, ytr = _blobs(10, 2, 4, sep=3.0, seed=5)
    assert E.linear_probe(xtr, ytr, C=1.0).method == "logreg"
    monkeypatch.setattr(E, "LOGREG_MAX_TRAIN", 5)
    assert E.linear_probe(xtr, ytr, epochs=2, batch_size=8).method == "sgd"
    with pytest.raises(ParameterError, match="method"):
        E.linear_probe(xtr, ytr, method="svm")
    with pytest.raises(ParameterError, match="train_labels"):
        E.linear_probe(xtr, ytr[:-1])
    with pytest.raises(ParameterError, match="train_labels"):
        E.linear_probe(xtr, torch.zeros(len(xtr), dtype=torch.long))
    with pytest.raises(ParameterError, match="^C must"):
        E.linear_probe(xtr, ytr, method="logreg", C=0.0)
    with pytest.raises(ParameterError, match="test_features"):
        E.linear_probe(xtr, ytr, xtr[:, :2], ytr, C=1.0)


def _blas_threads() -> set[int]:
    from threadpoolctl import threadpool_info

    return {d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas"}


def test_logreg_probe_limits_blas_threads_only_inside_and_restores_them(monkeypatch):
    """blas_threads=1: every LogisticRegression fit and predict sees one BLAS thread; the previous limit is back
    afterwards; the default (None) leaves the thread pool alone."""
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits

    seen: list[tuple[str, set[int]]] = []
    fit, predict = LogisticRegression.fit, LogisticRegression.predict

    def spy_fit(self, *a, **k):
        seen.append(("fit", _blas_threads()))
        return fit(self, *a, **k)

    def spy_predict(self, *a, **k):
        seen.append(("predict", _blas_threads()))
        return predict(self, *a, **k)

    monkeypatch.setattr(LogisticRegression, "fit", spy_fit)
    monkeypatch.setattr(LogisticRegression, "predict", spy_predict)
    xtr, ytr = _blobs(20, 3, 6, sep=2.0, seed=7)
    with threadpool_limits(limits=2, user_api="blas"):
        assert _blas_threads() == {2}
        r = E.linear_probe(xtr, ytr, xtr[:10], ytr[:10], method="logreg", Cs=(0.1, 1.0), blas_threads=1)
        assert _blas_threads() == {2}
        # C selection (2 fits + 2 predicts), the refit, train and test accuracy: all on one thread
        assert [k for k, _ in seen] == ["fit", "predict", "fit", "predict", "fit", "predict", "predict"]
        assert all(t == {1} for _, t in seen), seen
        seen.clear()
        ref = E.linear_probe(xtr, ytr, xtr[:10], ytr[:10], method="logreg", Cs=(0.1, 1.0))
        assert seen and all(t == {2} for _, t in seen), seen
        assert _blas_threads() == {2}
    assert r.C == ref.C and r.train_acc == ref.train_acc
    with pytest.raises(ParameterError, match="^blas_threads"):
        E.linear_probe(xtr, ytr, C=1.0, blas_threads=0)


def test_sgd_probe_ignores_blas_threads(monkeypatch):
    import threadpoolctl

    def boom(*a, **k):
        raise AssertionError("threadpool_limits called for the sgd probe")

    monkeypatch.setattr(threadpoolctl, "threadpool_limits", boom)
    xtr, ytr = _blobs(10, 2, 4, sep=3.0, seed=5)
    assert E.linear_probe(xtr, ytr, method="sgd", epochs=1, batch_size=8, blas_threads=1).method == "sgd"
    with pytest.raises(AssertionError, match="sgd probe"):
        E.linear_probe(xtr, ytr, method="logreg", C=1.0, blas_threads=1)


# ------------------------------------------------------------------------------------------------ k-NN
@pytest.mark.parametrize("k", [1, 4, 7])
def test_knn_majority_matches_scikit_learn(k):
    from sklearn.neighbors import KNeighborsClassifier

    rng = np.random.default_rng(k)
    xtr = torch.from_numpy(rng.normal(size=(80, 6)))
    ytr = torch.from_numpy(rng.integers(0, 5, size=80))
    xte = torch.from_numpy(rng.normal(size=(60, 6)))
    yte = torch.from_numpy(rng.integers(0, 5, size=60))
    ref = KNeighborsClassifier(n_neighbors=k, metric="cosine", algorithm="brute", weights="uniform")
    ref_pred = ref.fit(xtr.numpy(), ytr.numpy()).predict(xte.numpy())
    pred = E.knn_predict(xtr, ytr, xte, k=k, weighting="majority", batch_size=16)
    np.testing.assert_array_equal(pred.numpy(), ref_pred)
    assert E.knn_accuracy(xtr, ytr, xte, yte, k=k, weighting="majority") == pytest.approx(
        float((ref_pred == yte.numpy()).mean())
    )


def test_knn_dino_weighting_hand_example():
    # unit vectors at angles 0 (class 1), +-acos(0.8) (class 0), far away (class 2); query at angle 0 rotated a bit
    a = math.acos(0.8)
    train = torch.tensor([[1.0, 0.0], [math.cos(a), math.sin(a)], [math.cos(a), -math.sin(a)], [-1.0, 0.0]])
    labels = torch.tensor([1, 0, 0, 2])
    q = torch.tensor([[math.cos(0.05), math.sin(0.05)]]) * 3.0  # scale must not matter (cosine)
    sims = (train / train.norm(dim=1, keepdim=True)) @ (q[0] / q[0].norm())
    w = torch.exp(sims[:3] / 0.07)
    expected = 1 if w[0] > w[1] + w[2] else 0  # hand-computed DINO vote over the 3 nearest
    assert expected == 1
    assert int(E.knn_predict(train, labels, q, k=3, weighting="dino", temperature=0.07)[0]) == expected
    assert int(E.knn_predict(train, labels, q, k=3, weighting="majority")[0]) == 0  # 2 votes beat 1
    # a huge temperature makes the weights nearly equal: the majority wins again
    assert int(E.knn_predict(train, labels, q, k=3, weighting="dino", temperature=1e6)[0]) == 0


def test_knn_bad_inputs():
    x, y = torch.randn(5, 3), torch.tensor([0, 1, 0, 1, 0])
    with pytest.raises(ParameterError, match="^k must"):
        E.knn_predict(x, y, x, k=6)
    with pytest.raises(ParameterError, match="weighting"):
        E.knn_predict(x, y, x, weighting="distance")
    with pytest.raises(ParameterError, match="test_features"):
        E.knn_predict(x, y, x[:, :2])
    with pytest.raises(ParameterError, match="temperature"):
        E.knn_predict(x, y, x, k=2, temperature=0)


# ------------------------------------------------------------------------------------------------ end to end
def test_probe_with_stand_in_model():
    torch.manual_seed(6)
    n = 60
    labels = torch.arange(n) % 2
    imgs = torch.rand(n, 1, 4, 4) * 0.5
    imgs[labels == 1] += 0.5  # class 1 is brighter: the sign of the mean-pooled feature gives the class
    model = StandIn(16)
    out = E.probe(model, (imgs[:40], labels[:40]), (imgs[40:], labels[40:]), pool="mean", k=5, C=1.0)
    assert out["linear_method"] == "logreg" and out["feature_dim"] == 1 and out["pool"] == "mean"
    assert out["linear_test_acc"] == 1.0 and out["knn_acc"] == 1.0  # 1-D cosine similarity = sign agreement
    with pytest.raises(ParameterError, match="train"):
        E.probe(model, imgs, (imgs, labels))


def test_integration_with_maelab_models_if_available():
    models = pytest.importorskip("maelab.models")
    torch.manual_seed(0)
    try:
        model = models.create("mae", "micro")
    except Exception as err:  # pragma: no cover - depends on the state of maelab.models
        pytest.skip(f"maelab.models.create('mae', 'micro') not usable yet: {err}")
    imgs = torch.rand(6, model.in_chans, model.img_size, model.img_size)
    feats = E.extract_features(model, imgs, pool="cls", batch_size=4, device="cpu")
    assert feats.shape == (6, model.embed_dim) and torch.isfinite(feats).all()
    mean_feats = E.extract_features(model, imgs, pool="mean", batch_size=6, device="cpu")
    assert mean_feats.shape == (6, model.embed_dim)
    labels = torch.tensor([0, 1, 0, 1, 0, 1])
    res = E.linear_probe(feats, labels, C=1.0)
    assert 0.0 <= res.train_acc <= 1.0

    from maelab import attention as A
    from maelab import metrics as M

    model.eval()
    with torch.no_grad():
        enc = model.encode(
            imgs, mask_ratio=0.75, generator=torch.Generator().manual_seed(1), return_attn=True, return_tokens=True
        )
    gh = gw = model.img_size // model.patch_size
    cls_map = A.cls_attention(enc["attn"][-1], (gh, gw), ids_restore=enc["ids_restore"])
    assert cls_map.shape == (6, enc["attn"][-1].shape[1], gh, gw)
    masked = enc["mask"].bool().view(6, 1, gh, gw).expand_as(cls_map)
    assert torch.isnan(cls_map[masked]).all() and not torch.isnan(cls_map[~masked]).any()
    # softmax rows: attention to the visible patches + attention to [CLS] itself = 1
    total = cls_map.nan_to_num(0.0).sum(dim=(2, 3)) + enc["attn"][-1][:, :, 0, 0]
    torch.testing.assert_close(total, torch.ones_like(total), rtol=0, atol=1e-5)
    assert M.relative_layer_change(enc["tokens"]).shape == (len(enc["tokens"]) - 1,)

    rec = model.reconstruct(imgs, mask_ratio=0.75, generator=torch.Generator().manual_seed(1))
    scores = M.reconstruction_metrics(rec["pred"], imgs, rec["mask"], fsim_metric=model.in_chans in (1, 3))
    assert all(math.isfinite(v) for v in scores.values())

    def f(img):  # reconstruction of one image with a fixed mask (fresh generator, same seed, every call)
        out = model(img[None], mask_ratio=0.75, generator=torch.Generator().manual_seed(2))
        return model.unpatchify(out["pred"])[0]

    pix = (0, gh // 2 * model.patch_size, gw // 2 * model.patch_size)
    jac = M.pixel_jacobian(f, imgs[0], pix)
    x = imgs[0].clone().requires_grad_(True)
    (ref,) = torch.autograd.grad(f(x)[pix], x)
    torch.testing.assert_close(jac, ref)
