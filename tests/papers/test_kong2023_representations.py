"""Representation utilities on tiny hand-made inputs and a few shapes images (no training)."""

import math

import numpy as np
import pytest
import torch

from maelab import data, models
from maelab._validate import ParameterError
from maelab.papers.kong2023 import representations as rp


def test_factor_targets_and_linear_decoding_of_known_features():
    tr = data.load("shapes", "train", n=600, seed=0)
    te = data.load("shapes", "test", n=300, seed=0)
    ttr, tte = rp.factor_targets(tr.latents), rp.factor_targets(te.latents)
    assert ttr["position"].shape == (600, 2) and ttr["class"].dtype == np.int64
    np.testing.assert_allclose((ttr["rotation"] ** 2).sum(1), 1.0, atol=1e-6)

    # features that hold position, scale and a one-hot class (+ noise columns): those decode, the phase does not
    def feats(t, seed):
        rng = np.random.default_rng(seed)
        return np.hstack([t["position"], t["scale"], np.eye(10)[t["class"]], rng.standard_normal((len(t["class"]), 5))])

    sub = ("position", "scale", "class", "texture_phase")
    out = rp.decode_factors(feats(ttr, 0), {k: ttr[k] for k in sub}, feats(tte, 1), {k: tte[k] for k in sub})
    assert out["position"] > 0.99 and out["scale"] > 0.99 and out["class"] == 1.0 and out["texture_phase"] < 0.05
    knn = rp.decode_factors(
        feats(ttr, 0), {k: ttr[k] for k in sub}, feats(tte, 1), {k: tte[k] for k in sub}, method="knn", k=5
    )
    assert knn["class"] > 0.9 and knn["texture_phase"] < 0.1


def test_shape_bias_hand_example_and_errors():
    r = rp.shape_bias([0, 1, 2, 3], [0, 1, 5, 6], [9, 2, 2, 7])
    assert r["shape_bias"] == pytest.approx(2 / 3) and r["shape_fraction"] == 0.5 and r["texture_fraction"] == 0.25
    assert math.isnan(rp.shape_bias([4], [0], [1])["shape_bias"])
    with pytest.raises(ParameterError, match="cue-conflict"):
        rp.shape_bias([0], [1], [1])


def test_object_fraction_and_silhouette_mass_by_hand():
    sil = torch.zeros(1, 1, 4, 4)
    sil[0, 0, :2, :2] = 1.0
    sil[0, 0, 2, 2] = 1.0
    f = rp.token_object_fraction(sil, 2)
    assert torch.equal(f, torch.tensor([[[1.0, 0.0], [0.0, 0.25]]]))
    att = torch.tensor([[[1.0, 0.0], [float("nan"), 1.0]]])
    r = rp.silhouette_mass(att, f)
    assert r["mass"].item() == pytest.approx((1 + 0.25) / 2)
    assert r["chance"].item() == pytest.approx((1 + 0 + 0.25) / 3)  # the NaN (masked) token is left out


def test_cls_attention_maps_shape_and_mass():
    model = models.create("mae", "micro", seed=0)
    imgs = torch.rand(4, 3, 32, 32)
    a = rp.cls_attention_maps(model, imgs, batch_size=3)
    assert a.shape == (4, 8, 8) and (a >= 0).all() and (a.sum(dim=(1, 2)) <= 1 + 1e-5).all()
    assert model.training  # mode restored


def test_token_silhouette_probe_separates_informative_tokens():
    rng = np.random.default_rng(0)
    frac = rng.uniform(size=(40, 16))
    tok = rng.standard_normal((40, 16, 6))
    tok[..., 0] += 4 * (frac > 0.5)
    r = rp.token_silhouette_probe(tok[:30], frac[:30], tok[30:], frac[30:])
    assert r["accuracy"] > 0.95 and r["balanced_accuracy"] > 0.95
    noise = rp.token_silhouette_probe(
        rng.standard_normal((30, 16, 6)), frac[:30], rng.standard_normal((10, 16, 6)), frac[30:]
    )
    assert abs(noise["balanced_accuracy"] - 0.5) < 0.15
