"""Tests for maelab.models (micro models; one vit_base construction for the official-checkpoint test).

Expected values come from independent computations: explicit numpy loops for patchify / losses / uniformity,
the closed-form sin-cos formula, and the official MAE parameter list written down by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from maelab import ParameterError, models, result_keys
from maelab.models import attention_map, attention_output, create, load_official_checkpoint, sincos_2d

NAMES = ("mae", "umae", "simmim", "usimmim")


def imgs(n=4, seed=0, size=32, chans=3):
    return torch.rand(n, chans, size, size, generator=torch.Generator().manual_seed(seed))


def gen(seed):
    return torch.Generator().manual_seed(seed)


def np_patchify(x: np.ndarray, p: int) -> np.ndarray:
    """Explicit loops: token (i, j) in raster order; inside a patch the order is (row, col, channel)."""
    n, c, h, w = x.shape
    out = np.zeros((n, (h // p) * (w // p), p * p * c))
    for i in range(h // p):
        for j in range(w // p):
            for r in range(p):
                for s in range(p):
                    for ch in range(c):
                        out[:, i * (w // p) + j, (r * p + s) * c + ch] = x[:, ch, i * p + r, j * p + s]
    return out


def np_unpatchify(t: np.ndarray, p: int, c: int, grid: int) -> np.ndarray:
    n = t.shape[0]
    out = np.zeros((n, c, grid * p, grid * p))
    for i in range(grid):
        for j in range(grid):
            for r in range(p):
                for s in range(p):
                    for ch in range(c):
                        out[:, ch, i * p + r, j * p + s] = t[:, i * grid + j, (r * p + s) * c + ch]
    return out


# ---------------------------------------------------------------------------------------------------------------
# construction and bad input
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_forward_shapes_and_keys(name):
    model = create(name, "micro", seed=0)
    assert (model.img_size, model.patch_size, model.in_chans, model.embed_dim) == (32, 4, 3, 64)
    out = model(imgs(), generator=gen(0))
    assert out["pred"].shape == (4, 64, 4 * 4 * 3)
    assert out["mask"].shape == (4, 64)
    assert out["features"].shape == (4, 64)
    for key in ("loss", "loss_rec", "loss_unif"):
        assert out[key].shape == () and torch.isfinite(out[key])
    if name in ("mae", "simmim"):
        assert out["loss_unif"].item() == 0.0
        assert out["loss"].item() == out["loss_rec"].item()
    else:
        assert out["loss_unif"].item() > 0
    assert model.forward_features(imgs(), pool="cls").shape == (4, 64)
    assert model.forward_features(imgs(), pool="mean").shape == (4, 64)


def test_defaults_per_name():
    assert create("mae").mask_ratio == 0.75 and create("mae").lambda_unif == 0.0
    assert create("umae").lambda_unif == 0.01 and create("usimmim").lambda_unif == 0.01
    assert create("simmim").mask_ratio == 0.6


@pytest.mark.parametrize(
    "kwargs, param",
    [
        (dict(name="bert"), "name"),
        (dict(name="mae", size="huge"), "size"),
        (dict(name="mae", patch_size=5), "patch_size"),
        (dict(name="mae", mask_ratio=1.0), "mask_ratio"),
        (dict(name="mae", mask_ratio=-0.1), "mask_ratio"),
        (dict(name="simmim", mask_ratio=1.5), "mask_ratio"),
        (dict(name="mae", mask_unit=3), "mask_unit"),
        (dict(name="mae", num_heads=3), "num_heads"),
        (dict(name="mae", decoder_num_heads=5), "decoder_num_heads"),
        (dict(name="mae", lambda_unif=-1.0), "lambda_unif"),
        (dict(name="umae", uniformity_feature="max"), "uniformity_feature"),
        (dict(name="mae", input_norm="imagenet", in_chans=1), "input_norm"),
        (dict(name="simmim", decoder_depth=2), "override"),
        (dict(name="mae", wrong_option=1), "override"),
    ],
)
def test_bad_parameters(kwargs, param):
    name = kwargs.pop("name")
    size = kwargs.pop("size", "micro")
    with pytest.raises(ParameterError) as err:
        create(name, size, **kwargs)
    assert err.value.name == param
    assert "\n" not in str(err.value)


def test_unknown_name_lists_allowed():
    with pytest.raises(ParameterError) as err:
        create("bert")
    for name in NAMES:
        assert repr(name) in str(err.value)
    with pytest.raises(ParameterError) as err:
        create("mae", "huge")
    for size in ("micro", "small", "vit_tiny", "vit_small", "vit_base"):
        assert repr(size) in str(err.value)


def test_bad_forward_inputs():
    model = create("mae", seed=0)
    with pytest.raises(ParameterError, match="imgs"):
        model(torch.rand(2, 3, 28, 28))
    with pytest.raises(ParameterError, match="imgs"):
        model(torch.rand(2, 1, 32, 32))
    with pytest.raises(ParameterError, match="mask_ratio"):
        model(imgs(), mask_ratio=1.0)
    with pytest.raises(ParameterError, match="pool"):
        model.forward_features(imgs(), pool="max")


# ---------------------------------------------------------------------------------------------------------------
# masking
# ---------------------------------------------------------------------------------------------------------------
# L = 64 tokens; kept = int(64 * (1 - m)) written out by hand
@pytest.mark.parametrize("ratio, kept", [(0.75, 16), (0.6, 25), (0.5, 32), (0.9, 6), (0.0, 64)])
def test_mask_counts(ratio, kept):
    for name in ("mae", "simmim"):
        model = create(name, seed=0)
        enc = model.encode(imgs(), mask_ratio=ratio, generator=gen(1))
        assert torch.equal(enc["mask"].sum(1), torch.full((4,), 64.0 - kept))
        assert set(enc["mask"].unique().tolist()) <= {0.0, 1.0}
        tokens = 1 + kept if name == "mae" else 1 + 64
        assert enc["latent"].shape == (4, tokens, 64)
    # MAE: ids_keep are exactly the unmasked positions
    enc = create("mae", seed=0).encode(imgs(), mask_ratio=ratio, generator=gen(1))
    for i in range(4):
        kept_pos = set(torch.nonzero(enc["mask"][i] == 0).flatten().tolist())
        assert set(enc["ids_keep"][i].tolist()) == kept_pos


def test_masks_differ_between_samples_and_seeds():
    model = create("mae", seed=0)
    m1 = model.encode(imgs(8), 0.75, gen(1))["mask"]
    m2 = model.encode(imgs(8), 0.75, gen(2))["mask"]
    assert not torch.equal(m1, m2)
    assert len({tuple(r.tolist()) for r in m1}) > 1


def test_mask_unit_blocks():
    # grid 8x8, unit 2 -> 16 units, keep int(16 * 0.25) = 4 units = 16 tokens
    model = create("mae", mask_unit=2, seed=0)
    mask = model.encode(imgs(), 0.75, gen(3))["mask"]
    assert torch.equal(mask.sum(1), torch.full((4,), 48.0))
    grid = mask.reshape(4, 4, 2, 4, 2)  # (n, unit-row, r, unit-col, c)
    assert torch.equal(grid, grid[:, :, :1, :, :1].expand_as(grid))
    sim = create("simmim", mask_unit=4, seed=0)  # 4 units, SimMIM ratio 0.6 -> keep int(1.6) = 1 unit
    mask = sim.encode(imgs(), generator=gen(3), mask_ratio=0.6)["mask"]
    assert torch.equal(mask.sum(1), torch.full((4,), 48.0))


def test_zero_mask_ratio_is_raster_order_autoencoder():
    model = create("mae", seed=0)
    out = model(imgs(), mask_ratio=0.0, generator=gen(0))
    assert out["mask"].sum().item() == 0
    assert torch.equal(out["ids_restore"][0], torch.arange(64))
    # loss is the mean over all patches (hand computation)
    err = ((out["pred"] - out["target"]) ** 2).detach().numpy()
    assert out["loss_rec"].item() == pytest.approx(err.mean(), rel=1e-5)


# ---------------------------------------------------------------------------------------------------------------
# losses against hand computations
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("norm_pix", [False, True])
def test_mae_loss_by_hand(norm_pix):
    model = create("mae", norm_pix_loss=norm_pix, seed=0)
    x = imgs(3)
    out = model(x, mask_ratio=0.75, generator=gen(5))
    t = np_patchify(x.numpy().astype(np.float64), 4)
    if norm_pix:
        t = (t - t.mean(-1, keepdims=True)) / np.sqrt(t.var(-1, ddof=1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(out["target"].numpy(), t, rtol=1e-5, atol=1e-5)
    pred = out["pred"].detach().numpy().astype(np.float64)
    mask = out["mask"].numpy()
    total, count = 0.0, 0
    for n in range(3):
        for token in range(64):
            if mask[n, token] == 1:
                total += np.mean((pred[n, token] - t[n, token]) ** 2)
                count += 1
    assert count == 3 * 48
    assert out["loss_rec"].item() == pytest.approx(total / count, rel=1e-5)


def test_mae_loss_ignores_visible_targets():
    model = create("mae", seed=0)
    out = model(imgs(), generator=gen(0))
    target = out["target"].clone()
    visible = out["mask"] == 0
    target[visible] = target[visible] + 100.0
    assert model.reconstruction_loss(out["pred"], target, out["mask"]).item() == pytest.approx(
        out["loss_rec"].item(), rel=1e-6
    )
    target[~visible] += 1.0
    assert model.reconstruction_loss(out["pred"], target, out["mask"]).item() != pytest.approx(
        out["loss_rec"].item(), rel=1e-3
    )


def test_simmim_loss_by_hand_in_pixel_space():
    model = create("simmim", seed=0)
    x = imgs(2)
    out = model(x, mask_ratio=0.6, generator=gen(2))
    pred_img = np_unpatchify(out["pred"].detach().numpy().astype(np.float64), 4, 3, 8)
    pix = np.repeat(np.repeat(out["mask"].numpy().reshape(2, 8, 8), 4, axis=1), 4, axis=2)[:, None]  # (N,1,H,W)
    l1 = np.abs(x.numpy().astype(np.float64) - pred_img)
    expected = (l1 * pix).sum() / (pix.sum() + 1e-5) / 3
    assert out["loss_rec"].item() == pytest.approx(expected, rel=1e-5)


def test_simmim_mask_token_replaces_removed_patches():
    # changing the pixels of a removed patch must not change SimMIM's encoder output
    model = create("simmim", seed=0).eval()
    x = imgs(1)
    enc = model.encode(x, 0.6, gen(4))
    removed = int(torch.nonzero(enc["mask"][0] == 1)[0])
    i, j = divmod(removed, 8)
    x2 = x.clone()
    x2[:, :, 4 * i : 4 * i + 4, 4 * j : 4 * j + 4] = 1.0 - x2[:, :, 4 * i : 4 * i + 4, 4 * j : 4 * j + 4]
    enc2 = model.encode(x2, 0.6, gen(4))
    torch.testing.assert_close(enc["latent"], enc2["latent"])
    kept = int(torch.nonzero(enc["mask"][0] == 0)[0])
    i, j = divmod(kept, 8)
    x3 = x.clone()
    x3[:, :, 4 * i : 4 * i + 4, 4 * j : 4 * j + 4] = 1.0 - x3[:, :, 4 * i : 4 * i + 4, 4 * j : 4 * j + 4]
    assert not torch.allclose(enc["latent"], model.encode(x3, 0.6, gen(4))["latent"])


@pytest.mark.parametrize("choices", ["official", "legacy"])
@pytest.mark.parametrize("name, feature", [("umae", "cls"), ("umae", "mean"), ("usimmim", "cls")])
def test_uniformity_loss_by_hand(name, feature, choices):
    model = create(name, uniformity_feature=feature, seed=0, **result_keys.choice_set(choices))
    out = model(imgs(5), generator=gen(1))
    lat = out["latent"].detach().numpy().astype(np.float64)
    f = lat[:, 0] if feature == "cls" else lat[:, 1:].mean(axis=1)
    if choices == "official":  # a second pass through the final norm ([CLS]) or the model's own fc_norm (mean)
        ln = model.norm if feature == "cls" else model.fc_norm
        f = np_layernorm(f, ln.weight.detach().numpy(), ln.bias.detach().numpy())
    np.testing.assert_allclose(out["features"].detach().numpy(), f, rtol=1e-5, atol=1e-6)
    total = 0.0
    for i in range(5):
        for j in range(5):
            cos = f[i] @ f[j] / (np.linalg.norm(f[i]) * np.linalg.norm(f[j]))
            total += cos**2
    assert out["loss_unif"].item() == pytest.approx(total / 25, rel=1e-5)
    assert out["loss"].item() == pytest.approx(out["loss_rec"].item() + 0.01 * total / 25, rel=1e-5)


def test_uniformity_gradient_reaches_encoder_not_decoder():
    model = create("umae", seed=0)
    out = model(imgs(6), generator=gen(0))
    out["loss_unif"].backward()
    for name in ("patch_embed.proj.weight", "blocks.0.attn.qkv.weight", "cls_token", "norm.weight"):
        grad = dict(model.named_parameters())[name].grad
        assert grad is not None and grad.abs().sum() > 0, name
    for name, p in model.named_parameters():
        if name.startswith("decoder") or name == "mask_token":
            assert p.grad is None or p.grad.abs().sum() == 0, name


# ---------------------------------------------------------------------------------------------------------------
# determinism, init, position embeddings
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["mae", "simmim"])
def test_seeded_init_and_masks_are_reproducible(name):
    state = torch.get_rng_state()
    a, b, c = create(name, seed=3), create(name, seed=3), create(name, seed=4)
    assert torch.equal(state, torch.get_rng_state())  # seeded init does not touch the global RNG
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)
    oa, ob = a(imgs(), generator=gen(9)), b(imgs(), generator=gen(9))
    assert torch.equal(oa["mask"], ob["mask"]) and torch.equal(oa["loss"], ob["loss"])
    torch.manual_seed(0)
    o1 = a(imgs())
    torch.manual_seed(0)
    o2 = a(imgs())
    assert torch.equal(o1["loss"], o2["loss"])


def test_official_initialisation():
    model = create("mae", seed=0)
    w = model.patch_embed.proj.weight  # (64, 3, 4, 4): xavier on the (64, 48) view
    bound = math.sqrt(6 / (48 + 64))
    assert w.abs().max() <= bound and w.abs().max() > 1 / math.sqrt(48)  # beyond torch's default conv bound
    qkv = model.blocks[0].attn.qkv
    bound = math.sqrt(6 / (64 + 192))
    assert qkv.weight.abs().max() <= bound and qkv.weight.abs().max() > 1 / math.sqrt(64)
    assert torch.all(qkv.bias == 0) and torch.all(model.norm.weight == 1) and torch.all(model.norm.bias == 0)
    assert 0 < model.mask_token.std() < 0.05 and 0 < model.cls_token.std() < 0.05
    assert not model.pos_embed.requires_grad and not model.decoder_pos_embed.requires_grad


def test_sincos_position_embedding_formula():
    dim, g = 16, 3
    emb = sincos_2d(dim, (g, g))
    assert emb.shape == (1 + g * g, dim) and np.all(emb[0] == 0)
    quarter = dim // 4
    for row in range(g):
        for col in range(g):
            v = emb[1 + row * g + col]
            for i in range(quarter):
                w = 1.0 / 10000 ** (i / quarter)
                assert v[i] == pytest.approx(math.sin(col * w), abs=1e-6)
                assert v[quarter + i] == pytest.approx(math.cos(col * w), abs=1e-6)
                assert v[2 * quarter + i] == pytest.approx(math.sin(row * w), abs=1e-6)
                assert v[3 * quarter + i] == pytest.approx(math.cos(row * w), abs=1e-6)
    model = create("mae", seed=0)
    np.testing.assert_array_equal(model.pos_embed[0].numpy(), sincos_2d(64, (8, 8)))


# ---------------------------------------------------------------------------------------------------------------
# tokens and attention maps
# ---------------------------------------------------------------------------------------------------------------
def test_recomputed_attention_reproduces_block_output():
    model = create("mae", seed=0).eval()
    x = torch.randn(2, 17, 64, generator=gen(0))
    blk = model.blocks[1]
    attn = attention_map(blk, x)
    assert attn.shape == (2, 2, 17, 17)
    torch.testing.assert_close(attn.sum(-1), torch.ones(2, 2, 17))
    torch.testing.assert_close(attention_output(blk, x, attn), blk.attn(blk.norm1(x)), rtol=1e-5, atol=1e-5)
    # and the whole block: x + attn-branch, then the MLP branch
    h = x + attention_output(blk, x, attn)
    torch.testing.assert_close(h + blk.mlp(blk.norm2(h)), blk(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["mae", "simmim"])
def test_encode_tokens_and_attn(name):
    model = create(name, "micro", depth=3, seed=0).eval()
    enc = model.encode(imgs(2), 0.75, gen(0), return_tokens=True, return_attn=True)
    t = enc["latent"].shape[1]
    assert len(enc["tokens"]) == 3 and len(enc["attn"]) == 3
    assert all(a.shape == (2, 2, t, t) for a in enc["attn"])
    torch.testing.assert_close(model.norm(enc["tokens"][-1]), enc["latent"])
    for i in (1, 2):  # attention of block i is computed on the output of block i-1
        torch.testing.assert_close(enc["attn"][i], attention_map(model.blocks[i], enc["tokens"][i - 1]))
    plain = model.encode(imgs(2), 0.75, gen(0))
    torch.testing.assert_close(plain["latent"], enc["latent"])
    assert "tokens" not in plain and "attn" not in plain


def test_decoder_tokens_and_attn():
    model = create("mae", "micro", decoder_depth=2, seed=0).eval()
    enc = model.encode(imgs(2), 0.75, gen(0))
    dec = model.decode(enc["latent"], enc["ids_restore"], return_tokens=True, return_attn=True)
    assert dec["pred"].shape == (2, 64, 48)
    assert len(dec["tokens"]) == 2 and dec["tokens"][0].shape == (2, 65, 64)
    assert dec["attn"][1].shape == (2, 2, 65, 65)
    torch.testing.assert_close(dec["attn"][1], attention_map(model.decoder_blocks[1], dec["tokens"][0]))


def test_forward_features_unmasked_and_deterministic():
    model = create("mae", seed=0).eval()
    x = imgs(3)
    torch.manual_seed(1)
    f1 = model.forward_features(x, "mean")
    torch.manual_seed(2)
    f2 = model.forward_features(x, "mean")
    assert torch.equal(f1, f2)
    lat = model.encode(x, 0.0)["latent"]
    assert lat.shape == (3, 65, 64)
    torch.testing.assert_close(model.forward_features(x, "cls"), lat[:, 0])


def test_input_norm_and_reconstruct():
    model = create("mae", input_norm="imagenet", norm_pix_loss=False, seed=0)
    x = imgs(2)
    mean = np.array([0.485, 0.456, 0.406])[None, :, None, None]
    std = np.array([0.229, 0.224, 0.225])[None, :, None, None]
    expected = np_patchify((x.numpy().astype(np.float64) - mean) / std, 4)
    np.testing.assert_allclose(model.target(x).numpy(), expected, rtol=1e-5, atol=1e-5)
    rec = model.reconstruct(x, generator=gen(0))
    visible = rec["mask"].expand_as(x) == 0
    torch.testing.assert_close(rec["pasted"][visible], x[visible])
    # pred is the network output mapped back to [0, 1] space: un-normalise by hand
    pred = np_unpatchify(rec["out"]["pred"].numpy().astype(np.float64), 4, 3, 8) * std + mean
    np.testing.assert_allclose(rec["pred"].numpy(), pred, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------------------------------------------
# classifier wrapper
# ---------------------------------------------------------------------------------------------------------------
def test_encoder_classifier():
    backbone = create("mae", seed=0)
    clf = models.create_encoder_classifier(backbone, num_classes=10, pool="mean", head_norm="batchnorm")
    logits = clf(imgs(4))
    assert logits.shape == (4, 10)
    logits.sum().backward()
    assert backbone.blocks[0].attn.qkv.weight.grad.abs().sum() > 0
    frozen = models.create_encoder_classifier(create("simmim", seed=0), 3, freeze_backbone=True)
    frozen(imgs(2)).sum().backward()
    assert all(p.grad is None for p in frozen.backbone.parameters())
    assert frozen.head.weight.grad is not None
    with pytest.raises(ParameterError, match="pool"):
        models.create_encoder_classifier(backbone, 10, pool="max")
    with pytest.raises(ParameterError, match="num_classes"):
        models.create_encoder_classifier(backbone, 1)


# ---------------------------------------------------------------------------------------------------------------
# official checkpoints
# ---------------------------------------------------------------------------------------------------------------
def official_vit_base_shapes() -> dict[str, tuple[int, ...]]:
    """Parameter names and shapes of facebookresearch/mae ``mae_vit_base_patch16_dec512d8b`` (written down from
    models_mae.py: 224 px, patch 16 -> 196 patches, encoder 768 x 12 blocks, decoder 512 x 8 blocks, mlp 4)."""
    shapes = {
        "cls_token": (1, 1, 768),
        "pos_embed": (1, 197, 768),
        "patch_embed.proj.weight": (768, 3, 16, 16),
        "patch_embed.proj.bias": (768,),
        "norm.weight": (768,),
        "norm.bias": (768,),
        "mask_token": (1, 1, 512),
        "decoder_pos_embed": (1, 197, 512),
        "decoder_embed.weight": (512, 768),
        "decoder_embed.bias": (512,),
        "decoder_norm.weight": (512,),
        "decoder_norm.bias": (512,),
        "decoder_pred.weight": (768, 512),
        "decoder_pred.bias": (768,),  # 16*16*3 = 768 pixels per patch
    }
    for prefix, depth, dim in (("blocks", 12, 768), ("decoder_blocks", 8, 512)):
        for i in range(depth):
            b = f"{prefix}.{i}."
            shapes.update(
                {
                    b + "norm1.weight": (dim,),
                    b + "norm1.bias": (dim,),
                    b + "attn.qkv.weight": (3 * dim, dim),
                    b + "attn.qkv.bias": (3 * dim,),
                    b + "attn.proj.weight": (dim, dim),
                    b + "attn.proj.bias": (dim,),
                    b + "norm2.weight": (dim,),
                    b + "norm2.bias": (dim,),
                    b + "mlp.fc1.weight": (4 * dim, dim),
                    b + "mlp.fc1.bias": (4 * dim,),
                    b + "mlp.fc2.weight": (dim, 4 * dim),
                    b + "mlp.fc2.bias": (dim,),
                }
            )
    return shapes


def test_vit_base_loads_official_layout(tmp_path):
    expected = official_vit_base_shapes()
    assert expected["blocks.0.attn.qkv.weight"] == (2304, 768)
    model = create("mae", "vit_base", norm_pix_loss=False, seed=0)
    own = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    assert own == expected
    # a checkpoint in the official layout: each tensor a constant (stored as a broadcast view: tiny file)
    values = {k: float(i + 1) / 1000 for i, k in enumerate(sorted(expected))}
    sd = {k: torch.tensor([values[k]]).expand(*shape) for k, shape in expected.items()}
    path = tmp_path / "mae_visualize_vit_base.pth"
    torch.save({"model": sd}, path)
    report = load_official_checkpoint(model, path)
    assert report == {"missing": [], "unexpected": []}
    for k, p in model.state_dict().items():
        assert torch.all(p == values[k]), k
    out = model(torch.rand(1, 3, 224, 224), generator=gen(0))
    assert out["pred"].shape == (1, 196, 768) and out["mask"].sum() == 196 - 49


def test_checkpoint_errors(tmp_path):
    model = create("mae", seed=0)
    sd = model.state_dict()
    torch.save(sd, tmp_path / "bare.pth")  # bare state dict is accepted too
    load_official_checkpoint(create("mae", seed=1), tmp_path / "bare.pth")
    bad = dict(sd)
    bad.pop("decoder_pred.bias")
    bad["head.weight"] = torch.zeros(10, 64)
    bad["pos_embed"] = torch.zeros(1, 197, 64)
    torch.save({"model": bad}, tmp_path / "bad.pth")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(ParameterError) as err:
        load_official_checkpoint(model, tmp_path / "bad.pth")
    msg = str(err.value)
    assert "\n" not in msg and "decoder_pred.bias" in msg and "head.weight" in msg and "pos_embed" in msg
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())  # nothing half-loaded
    with pytest.raises(ParameterError, match="path"):
        load_official_checkpoint(model, tmp_path / "missing.pth")


class _Evil:
    def __reduce__(self):
        return (print, ("code ran",))


def test_checkpoint_never_executes_code(tmp_path, capsys):
    torch.save({"model": _Evil()}, tmp_path / "evil.pth")
    with pytest.raises(ParameterError, match="weights-only"):
        load_official_checkpoint(create("mae"), tmp_path / "evil.pth")
    assert "code ran" not in capsys.readouterr().out


@pytest.mark.parametrize("name", NAMES)
def test_config_round_trip(name):
    model = create(name, "micro", mask_ratio=0.5, mask_unit=2, embed_dim=32, seed=7)
    again = create(**model.config)
    assert again.mask_ratio == 0.5 and again.mask_unit == 2 and again.embed_dim == 32
    sa, sb = model.state_dict(), again.state_dict()
    assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_simmim_zero_mask_ratio_loss_is_mean_l1():
    model = create("simmim", seed=0)
    out = model(imgs(2), mask_ratio=0.0)
    expected = np.abs(out["pred"].detach().numpy() - out["target"].numpy()).mean()
    assert out["loss_rec"].item() == pytest.approx(float(expected), rel=1e-5)


# ---------------------------------------------------------------------------------------------------------------
# official-code choices (issue 15): double norm, fc_norm, patch-embed bias; the official values are the default
# ---------------------------------------------------------------------------------------------------------------
def np_layernorm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """LayerNorm over the last axis by hand: (x - mean) / sqrt(biased var + eps) * w + b."""
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _perturb_norms(model, seed=0):
    """Non-trivial LayerNorm affine parameters, so a second norm is not a no-op by accident."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in (model.norm, getattr(model, "fc_norm", None)):
            if m is not None:
                m.weight.copy_(1 + 0.5 * torch.randn(m.weight.shape, generator=g))
                m.bias.copy_(0.3 * torch.randn(m.bias.shape, generator=g))


@pytest.mark.parametrize("name", ["umae", "usimmim"])
def test_double_norm_feature_is_norm_of_norm_by_hand(name):
    model = create(name, uniformity_double_norm=True, seed=0)
    _perturb_norms(model)
    x = imgs(5)
    enc = model.encode(x, 0.75, gen(1), return_tokens=True)
    pre = enc["tokens"][-1].detach().numpy().astype(np.float64)  # last block output, before the final norm
    w, b = model.norm.weight.detach().numpy(), model.norm.bias.detach().numpy()
    expected = np_layernorm(np_layernorm(pre, w, b), w, b)[:, 0]
    out = model(x, mask_ratio=0.75, generator=gen(1))
    np.testing.assert_allclose(out["features"].detach().numpy(), expected, rtol=1e-4, atol=1e-5)
    once = np_layernorm(pre, w, b)[:, 0]
    assert np.abs(expected - once).max() > 1e-2  # the option changes the feature
    f = expected / np.linalg.norm(expected, axis=1, keepdims=True)
    assert out["loss_unif"].item() == pytest.approx(float(((f @ f.T) ** 2).mean()), rel=1e-5)


def test_fc_norm_mean_feature_by_hand_and_state_dict():
    model = create("umae", uniformity_feature="mean", uniformity_fc_norm=True, seed=0)
    assert "fc_norm.weight" in model.state_dict() and model.fc_norm.eps == 1e-6
    _perturb_norms(model, seed=1)
    x = imgs(4)
    out = model(x, generator=gen(2))
    lat = out["latent"].detach().numpy().astype(np.float64)
    expected = np_layernorm(
        lat[:, 1:].mean(axis=1), model.fc_norm.weight.detach().numpy(), model.fc_norm.bias.detach().numpy()
    )
    np.testing.assert_allclose(out["features"].detach().numpy(), expected, rtol=1e-4, atol=1e-5)
    # the uniformity gradient reaches fc_norm; without the option (or with the [CLS] feature) there is no fc_norm,
    # so official MAE checkpoints keep their exact key set
    out["loss_unif"].backward()
    assert model.fc_norm.weight.grad.abs().sum() > 0
    for kw in ({}, {"uniformity_fc_norm": True}, {"uniformity_feature": "mean", "uniformity_fc_norm": False}):
        assert not any(k.startswith("fc_norm") for k in create("umae", seed=0, **kw).state_dict())


def test_patch_embed_bias_official_is_pytorch_conv_default():
    m = create("mae", embed_dim=256, num_heads=4, decoder_embed_dim=64, patch_embed_bias="conv_default", seed=5)
    bias = m.patch_embed.proj.bias.detach()
    fan_in = 3 * 4 * 4
    bound = 1 / math.sqrt(fan_in)  # PyTorch's Conv2d default: uniform(-1/sqrt(fan_in), 1/sqrt(fan_in))
    assert bias.abs().max() <= bound and bias.abs().max() > 0.9 * bound
    assert bias.std().item() == pytest.approx(bound / math.sqrt(3), rel=0.15)  # std of U(-a, a) is a / sqrt(3)
    # the very draw PyTorch makes: PatchEmbed's conv is the first module built under the seed
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(5)
        ref = torch.nn.Conv2d(3, 256, kernel_size=4, stride=4)
    assert torch.equal(bias, ref.bias.detach())
    # every other parameter is unchanged by the option (same random stream); the legacy choice zeroes the bias
    legacy = create("mae", embed_dim=256, num_heads=4, decoder_embed_dim=64, patch_embed_bias="zeros", seed=5)
    assert torch.all(legacy.patch_embed.proj.bias == 0)
    sa, sb = m.state_dict(), legacy.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa if k != "patch_embed.proj.bias")


def test_choice_defaults_are_official_and_enter_configs():
    model = create("umae", seed=0)
    assert (model.uniformity_double_norm, model.uniformity_fc_norm, model.patch_embed_bias) == (
        True,
        True,
        "conv_default",
    )
    assert {k: model.config[k] for k in result_keys.OFFICIAL_CHOICES} == result_keys.OFFICIAL_CHOICES
    # the canonical form of the choices in result configs is tested in tests/test_result_keys.py
    again = create(**create("umae", uniformity_double_norm=False, patch_embed_bias="zeros", seed=1).config)
    assert not again.uniformity_double_norm and again.patch_embed_bias == "zeros"
    with pytest.raises(ParameterError, match="patch_embed_bias"):
        create("mae", patch_embed_bias="normal")
    with pytest.raises(ParameterError, match="uniformity_double_norm"):
        create("umae", uniformity_double_norm=1)


def test_default_model_is_the_official_one_by_hand():
    """A model built with no override: the patch-embedding bias is PyTorch's Conv2d draw (not zeros), the [CLS]
    uniformity feature is norm(norm(x)) (checked by hand), and a legacy-pinned model differs in exactly those."""
    model, legacy = create("umae", seed=3), create("umae", seed=3, **result_keys.choice_set("legacy"))
    bias = model.patch_embed.proj.bias.detach()
    assert not torch.all(bias == 0) and torch.all(legacy.patch_embed.proj.bias == 0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        ref = torch.nn.Conv2d(3, 64, kernel_size=4, stride=4)  # PatchEmbed's conv is the first module built
    assert torch.equal(bias, ref.bias.detach())
    _perturb_norms(model)
    x = imgs(3)
    enc = model.encode(x, 0.75, gen(4), return_tokens=True)
    pre = enc["tokens"][-1].detach().numpy().astype(np.float64)
    w, b = model.norm.weight.detach().numpy(), model.norm.bias.detach().numpy()
    expected = np_layernorm(np_layernorm(pre, w, b), w, b)[:, 0]
    np.testing.assert_allclose(model(x, generator=gen(4))["features"].detach().numpy(), expected, rtol=1e-4, atol=1e-5)


# the hash of a PretrainSpec's config written out by hand: legacy choices absent (the committed results' form)
_LEGACY_CONFIG = {
    "dataset": "shapes",
    "n_train": 5000,
    "n_test": 1000,
    "img_size": 32,
    "channels": 3,
    "data_seed": 0,
    "data_options": {},
    "model": "umae",
    "size": "micro",
    "model_overrides": {"lambda_unif": 0.01},
    "epochs": 10,
    "batch_size": 128,
    "blr": 1.5e-4,
    "warmup_epochs": 1.0,
    "mask_ratio": None,
    "seed": 0,
    "pool": "cls",
    "rank_every": 0,
    "finetune_epochs": 0,
    "finetune_blr": 1e-3,
    "keep_features": False,
    "snapshot_epochs": [],
}


def test_spec_hash_legacy_pinned_kept_unpinned_changed_official_unchanged():
    from maelab import store
    from maelab.experiments import PretrainSpec, variant_config

    legacy_hash = store.config_hash(_LEGACY_CONFIG)
    pinned = PretrainSpec(
        model="umae", model_overrides=(("lambda_unif", 0.01), *result_keys.choice_set("legacy").items())
    )
    assert store.config_hash(pinned.to_config()) == legacy_hash  # (a) a legacy-pinned spec keeps its hash
    unpinned = PretrainSpec(model="umae", model_overrides=(("lambda_unif", 0.01),))
    assert store.config_hash(unpinned.to_config()) != legacy_hash  # (b) the old implicit default recomputes
    assert unpinned.to_config()["model_overrides"] == {"lambda_unif": 0.01, **result_keys.OFFICIAL_CHOICES}
    # (c) an explicitly official spec: the hash of its config written out by hand, with the official values present
    official = PretrainSpec(
        model="umae", model_overrides=(("lambda_unif", 0.01), *result_keys.OFFICIAL_CHOICES.items())
    )
    by_hand = {**_LEGACY_CONFIG, "model_overrides": {"lambda_unif": 0.01, **result_keys.OFFICIAL_CHOICES}}
    assert store.config_hash(official.to_config()) == store.config_hash(by_hand)
    assert official.key == unpinned.key and pinned.key != unpinned.key  # checkpoint folders follow the config
    # a mixed pin lists exactly its non-legacy choices
    mixed = PretrainSpec(
        model="umae", model_overrides=(*result_keys.choice_set("legacy").items(), ("patch_embed_bias", "conv_default"))
    )
    assert mixed.to_config()["model_overrides"] == {"patch_embed_bias": "conv_default"}
    # variants (fields replacing a base spec's) list their overrides in the same canonical form
    v = {"model": "umae", "model_overrides": tuple(sorted({"lambda_unif": 0.01, **result_keys.LEGACY_CHOICES}.items()))}
    assert str(variant_config(v)) == str({"model": "umae", "model_overrides": (("lambda_unif", 0.01),)})
    assert variant_config({"model": "mae"}) == {"model": "mae"}


def test_choices_setting_pins_legacy_for_cpu_only_and_is_left_out_of_keys():
    from maelab import profiles

    pinned: tuple[str, ...] = ()  # every notebook re-ran with the official choices (issue 15)
    for nb in profiles.registry():
        cls = profiles.settings_class(nb)
        if "model_choices" not in cls.field_names():
            continue
        S = {p: profiles.settings(nb, p) for p in profiles.PROFILE_NAMES}
        assert (S["smoke"].model_choices, S["gpu"].model_choices) == ("official", "official"), nb
        assert S["cpu"].model_choices == ("legacy" if nb in pinned else "official"), nb
        if S["cpu"].model_choices == "legacy":
            assert result_keys.LEGACY_PIN_REASON in cls.docs()["model_choices"], nb
        cpu_key = result_keys.settings_key(S["cpu"])
        assert "model_choices" not in cpu_key or S["cpu"].model_choices != "legacy"  # legacy: omitted
        assert result_keys.settings_key(S["gpu"])["model_choices"] == "official"
    assert {nb for nb in profiles.registry() if "model_choices" in profiles.settings_class(nb).field_names()} >= set(
        pinned
    )
    with pytest.raises(ParameterError, match="^model_choices must be one of 'official', 'legacy'"):
        profiles.settings("zhang_umae", "cpu", model_choices="new")


def test_timm_is_imported_when_a_model_is_built_not_with_the_library():
    """A page that reads stored results never builds a model; importing timm (which imports torchvision and
    torch._dynamo) cost its kernel ~4 s. The library's modules a page imports leave it out until ``create``."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import maelab.models, maelab.zoo, maelab.experiments, maelab.train, maelab.evaluate\n"
        "print('timm' in sys.modules)\n"
        "maelab.models.create('mae', 'micro', attn_norm='exp')\n"
        "print('timm' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True"]
