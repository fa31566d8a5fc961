"""Fig. 5 utilities: norm-pix de-normalisation with each patch's own statistics, piq scores on tiny tensors."""

import pytest
import torch

from maelab import models
from maelab import reconstruction as rec
from maelab.masking import patchify, unpatchify


def _with_pred(model, make_pred):
    orig = model.forward

    def fwd(imgs, mask_ratio=None, generator=None):
        out = orig(imgs, mask_ratio, generator)
        return {**out, "pred": make_pred(imgs, out)}

    model.forward = fwd
    return model


@pytest.mark.parametrize("input_norm", ["none", "imagenet"])
def test_perfect_normalised_prediction_gives_the_image_back(input_norm):
    torch.manual_seed(0)
    imgs = torch.rand(3, 3, 32, 32)
    model = _with_pred(models.create("mae", "micro", seed=0, input_norm=input_norm), lambda x, o: o["target"])
    r = rec.reconstruct(model, imgs)
    assert torch.allclose(r["pred"], imgs, atol=1e-5) and r["mask"].sum() == 0
    s = rec.reconstruction_scores(model, imgs, fsim=True)
    assert s["ssim"] == pytest.approx(1.0, abs=1e-5) and s["fsim"] == pytest.approx(1.0, abs=1e-4)
    assert s["psnr"] > 79 and s["mse"] < 1e-9 and s["neg_mse"] == -s["mse"] and s["data_range"] == 1.0


def test_zero_normalised_prediction_is_each_patch_mean():
    """pred = 0 in normalised units -> every pixel of a patch becomes that patch's own mean (hand computed)."""
    torch.manual_seed(1)
    imgs = torch.rand(2, 3, 32, 32)
    model = _with_pred(models.create("mae", "micro", seed=0), lambda x, o: torch.zeros_like(o["target"]))
    r = rec.reconstruct(model, imgs, batch_size=1)
    p = patchify(imgs, 4)
    want = unpatchify(p.mean(-1, keepdim=True).expand_as(p), 4, 3)
    assert torch.allclose(r["pred"], want, atol=1e-6)


def test_masked_panel_scores_the_paste_image():
    torch.manual_seed(2)
    imgs = torch.rand(2, 3, 32, 32)
    model = _with_pred(models.create("mae", "micro", seed=0), lambda x, o: o["target"])
    g = torch.Generator().manual_seed(0)
    s = rec.reconstruction_scores(model, imgs, 0.75, fsim=False, generator=g)
    assert s["mse_masked"] < 1e-9 and s["ssim"] == pytest.approx(1.0, abs=1e-5) and s["mask_ratio"] == 0.75
    bad = _with_pred(models.create("mae", "micro", seed=0), lambda x, o: torch.zeros_like(o["target"]))
    s0 = rec.reconstruction_scores(bad, imgs, 0.0, fsim=False)
    assert s0["mse"] > 0.01 and s0["ssim"] < 0.9
