"""Decoder analyses (Fig. 3, Thm. 5.1 on models, Lemma 6.1) on tiny randomly initialised MAEs, and the attention
normalisation / scaled-skip model options."""

import math

import pytest
import torch
from timm.models.vision_transformer import Block

from maelab import metrics, models
from maelab._validate import ParameterError
from maelab.models._kernel_block import KernelBlock
from maelab.models._layers import attention_weights, norm_layer
from maelab.papers.cao2022 import decoder as D


def _imgs(n=3, seed=0):
    return torch.rand(n, 3, 32, 32, generator=torch.Generator().manual_seed(seed))


def test_last_readout_is_the_models_prediction():
    model = models.create("mae", "micro", seed=0, decoder_depth=2).eval()
    imgs = _imgs()
    ro = D.layer_readouts(model, imgs, generator=torch.Generator().manual_seed(5))
    ref = model.reconstruct(imgs, generator=torch.Generator().manual_seed(5))
    assert ro["readouts"].shape == (3, 3, 3, 32, 32)
    assert torch.allclose(ro["readouts"][-1], ref["pred"], atol=1e-6)
    assert torch.equal(ro["mask"], ref["mask"])
    m = D.readout_metrics(ro["readouts"], imgs, ro["mask"])
    assert m["psnr"].shape == (3, 3)
    assert torch.allclose(m["psnr"][-1], metrics.psnr(ref["pred"].clamp(0, 1), imgs, reduction="none").double())


def test_layer_changes_match_metrics_relative_change():
    model = models.create("mae", "micro", seed=1, decoder_depth=2).eval()
    imgs = _imgs(seed=1)
    ch = D.layer_changes(model, imgs, generator=torch.Generator().manual_seed(2))
    assert ch["encoder"].shape == (2, 3) and ch["decoder"].shape == (2, 3)
    ro = D.layer_readouts(model, imgs, generator=torch.Generator().manual_seed(2))
    ref = metrics.relative_layer_change(ro["decoder_states"])  # same token count per image: mean of means
    assert torch.allclose(ch["decoder"].mean(1), ref, atol=1e-12)
    again = D.layer_changes(model, imgs, readouts=ro)  # the read-outs of the same masks: no second forward pass
    assert all(torch.equal(again[k], ch[k]) for k in ch)


def test_relative_change_by_hand():
    a = torch.tensor([[[3.0, 4.0], [1.0, 0.0]]])
    b = torch.tensor([[[3.0, 4.0], [1.0, 1.0]]])
    assert D.relative_change_per_image([a, b]).item() == pytest.approx((0 + 1) / 2)


def test_span_r2_by_hand():
    basis = torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])
    z = torch.tensor([[2.0, -1.0, 0.0], [0.0, 0.0, 5.0], [1.0, 0.0, 1.0]])
    assert torch.allclose(D.span_r2(z, basis), torch.tensor([1.0, 0.0, 0.5], dtype=torch.float64))


def test_attention_split_uniform_by_hand():
    # 3 x 3 grid + [CLS] = 10 tokens, uniform attention 1/10; centre patch 4 and corner 0 masked
    attn = torch.full((1, 2, 10, 10), 0.1)
    mask = torch.zeros(1, 9)
    mask[0, [0, 4]] = 1
    out = D.attention_split(attn, mask, (3, 3))
    assert out["visible"].item() == pytest.approx(0.7) and out["masked"].item() == pytest.approx(0.2)
    assert out["cls"].item() == pytest.approx(0.1)
    # visible keys: 1,2,3,5,6,7,8. From centre 4: all within distance 1 -> 0 far. From corner 0: far = 2,5,6,7,8 -> 5/7
    assert out["far_fraction"].item() == pytest.approx((0 + 5 / 7) / 2)
    assert out["by_distance"][0, 0].isnan() and out["by_distance"][0, 1].item() == pytest.approx(0.1)


def test_decoder_attention_on_random_model():
    model = models.create("mae", "micro", seed=0).eval()
    out = D.decoder_attention(model, _imgs(), generator=torch.Generator().manual_seed(0))
    total = out["visible"] + out["masked"] + out["cls"]
    assert torch.allclose(total, torch.ones_like(total), atol=1e-6)
    assert ((out["r2"] > 0) & (out["r2"] <= 1 + 1e-9)).all()
    assert out["r2_chance"] == pytest.approx(16 / 32)


# ------------------------------------------------------------------------------------ model options (Thm. 5.1 b)
def test_default_options_are_bit_identical():
    a = models.create("mae", "micro", seed=3)
    b = models.create("mae", "micro", seed=3, attn_norm="softmax", skip_scale=1.0)
    assert all(type(blk) is Block for blk in list(b.blocks) + list(b.decoder_blocks))
    assert a.config == {k: v for k, v in b.config.items() if k not in ("attn_norm", "skip_scale")}
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)
    imgs = _imgs()
    oa = a(imgs, generator=torch.Generator().manual_seed(1))
    ob = b(imgs, generator=torch.Generator().manual_seed(1))
    assert torch.equal(oa["loss"], ob["loss"]) and torch.equal(oa["pred"], ob["pred"])


def test_kernel_block_softmax_equals_timm_block():
    torch.manual_seed(0)
    ref = Block(16, 2, 4.0, qkv_bias=True, norm_layer=norm_layer)
    kb = KernelBlock(16, 2, 4.0, qkv_bias=True, norm_layer=norm_layer, attn_norm="softmax", skip_scale=1.0)
    kb.load_state_dict(ref.state_dict())
    x = torch.randn(2, 5, 16)
    assert torch.equal(kb(x), ref(x))


def test_exp_and_linear_attention_and_scaled_skip_by_hand():
    torch.manual_seed(0)
    for norm in ("exp", "linear"):
        kb = KernelBlock(8, 2, 2.0, qkv_bias=True, norm_layer=norm_layer, attn_norm=norm, skip_scale=0.5).eval()
        x = torch.randn(1, 4, 8)
        a = kb.attn
        h = kb.norm1(x)
        q, k, v = a.qkv(h).reshape(1, 4, 3, 2, 4).permute(2, 0, 3, 1, 4)
        s = q @ k.transpose(-2, -1) / math.sqrt(4)
        w = s.exp() / 4 if norm == "exp" else s / 4
        att = a.proj((w @ v).transpose(1, 2).reshape(1, 4, 8))
        y = 0.5 * x + att
        want = y + kb.mlp(kb.norm2(y))
        assert torch.allclose(kb(x), want, atol=1e-6)
        assert torch.allclose(models.attention_map(kb, x), w, atol=1e-6)


def test_model_options_build_and_validate():
    m = models.create("mae", "micro", seed=0, attn_norm="exp", skip_scale=0.5)
    assert all(isinstance(b, KernelBlock) for b in list(m.blocks) + list(m.decoder_blocks))
    assert m.config["attn_norm"] == "exp"
    ref = models.create("mae", "micro", seed=0)
    assert m.state_dict().keys() == ref.state_dict().keys()
    assert torch.isfinite(m(_imgs())["loss"])
    with pytest.raises(ParameterError, match="attn_norm"):
        models.create("mae", "micro", attn_norm="sigmoid")
    with pytest.raises(ParameterError, match="skip_scale"):
        models.create("mae", "micro", skip_scale=-1.0)
    with pytest.raises(ParameterError, match="attn_norm"):
        attention_weights(torch.zeros(2, 2), "relu")
    with pytest.raises(ParameterError, match="model"):
        D.layer_readouts(models.create("simmim", "micro"), _imgs())


def test_far_fraction_uniform_by_hand():
    # 3 x 3 grid, near = 1: a corner has 5 of 8 other patches at Chebyshev distance 2, an edge patch 3, the centre 0
    assert D.far_fraction_uniform((3, 3)) == pytest.approx((4 * 5 / 8 + 4 * 3 / 8 + 0) / 9)
    assert D.far_fraction_uniform((3, 3), near=2) == 0.0
    # 1 x 4 strip, near = 1: ends have 2 of 3 far, inner patches 1 of 3
    assert D.far_fraction_uniform((1, 4)) == pytest.approx((2 * 2 / 3 + 2 * 1 / 3) / 4)
    with pytest.raises(ParameterError, match="^grid must be at least 2 patches"):
        D.far_fraction_uniform((1, 1))


def test_far_fraction_uniform_is_the_mean_of_attention_split_over_random_masks():
    """Independent check: uniform attention over the visible keys, through attention_split, averaged over many
    random masks (1 visible and 2 masked per image on a 1 x 3 strip, so every case is enumerable)."""
    grid, rows = (1, 3), []
    for visible in range(3):  # the one visible patch; the two others are masked queries
        mask = torch.ones(1, 3)
        mask[0, visible] = 0
        attn = torch.zeros(1, 1, 4, 4)
        attn[0, 0, :, 1 + visible] = 1.0  # all mass on the single visible key
        rows.append(float(D.attention_split(attn, mask, grid)["far_fraction"][0]))
    # visible at an end: the other end (distance 2) is far, the middle is not -> 1/2; visible in the middle: 0
    assert rows == [0.5, 0.0, 0.5]
    assert sum(rows) / 3 == pytest.approx(D.far_fraction_uniform(grid))
