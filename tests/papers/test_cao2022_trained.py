"""cao2022.trained: variant recipes, the claim summaries on hand-made arrays, one tiny run end to end (its numbers
checked against the library's own building blocks called independently), divergence, and the checkpoint path."""

import numpy as np
import pandas as pd
import pytest
import torch

from maelab import experiments, models, profiles
from maelab._validate import ParameterError
from maelab.papers.cao2022 import decoder, evidence, plan, trained
from maelab.train import loop


def test_variant_overrides_are_the_official_block_or_one_option():
    assert trained.variant_overrides("softmax") == {}
    assert trained.variant_overrides("exp", kernel="linear") == {"attn_norm": "linear"}
    assert trained.variant_overrides("skip", skip_scale=0.25) == {"skip_scale": 0.25}
    with pytest.raises(ParameterError, match=r"^variant must be one of 'softmax', 'exp', 'skip'; got 'relu'$"):
        trained.variant_overrides("relu")


def test_spec_for_keeps_everything_but_the_variant_the_same():
    S = profiles.settings("cao_decoder", "smoke")
    a, b, c = (trained.spec_for(S, v, 3) for v in ("softmax", "exp", "skip"))
    da, db = dict(a.model_overrides), dict(b.model_overrides)
    assert db.pop("attn_norm") == "exp" and da == db
    assert dict(c.model_overrides)["skip_scale"] == 0.5
    assert da["patch_embed_bias"] == "conv_default" and da["decoder_depth"] == S.decoder_depth
    assert a.seed == 3 and a.snapshot_epochs == tuple(range(S.epochs + 1)) and a.key != b.key
    # the variants have the same parameters, so the same seed gives the same initial weights (pairing by seed)
    sa, sb = experiments.build_model(a).state_dict(), experiments.build_model(b).state_dict()
    assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_diverged_at_reads_the_trainers_message():
    with pytest.raises(loop.NonFiniteLossError) as e:
        loop._check_loss([float("nan")], epoch=2, epochs=5, it=7, iters=10, lr=1e-3)
    assert trained.diverged_at(str(e.value)) == 3  # 1-based epoch 3 of 5
    assert trained.diverged_at("something else") is None


def test_intermediate_gain_by_hand():
    psnr = np.array([[10.0, 12.0], [14.0, 11.0], [13.0, 15.0], [20.0, 20.0]])  # input, block 1, block 2, prediction
    # worst intermediate (blocks 1-2): [13, 11]; minus the decoder input [10, 12]
    np.testing.assert_array_equal(trained.intermediate_gain(psnr), [3.0, -1.0])
    with pytest.raises(ParameterError, match=r"^psnr must be an array \(T >= 3 read-outs"):
        trained.intermediate_gain(psnr[:2])


def test_max_change_by_hand():
    enc, dec = np.array([[0.1, 0.5], [0.3, 0.2]]), np.array([[0.2, 0.1]])
    np.testing.assert_array_equal(trained.max_change(enc, dec), [0.3, 0.5])
    with pytest.raises(ParameterError):
        trained.max_change()


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    import os

    S = profiles.settings(
        "cao_decoder", "smoke", n_train=128, n_test=64, epochs=2, batch_size=64, n_loss=32, n_eval=8, n_probe=64
    )
    spec = trained.spec_for(S, "softmax", 0)
    old = os.environ.get("MAELAB_CACHE")
    os.environ["MAELAB_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    try:
        out = trained.run_variant(spec, n_loss=32, n_eval=8, n_probe=64, n_examples=2, device="cpu", progress=False)
    finally:
        if old is None:
            os.environ.pop("MAELAB_CACHE")
        else:
            os.environ["MAELAB_CACHE"] = old
    return S, spec, out


def test_run_variant_numbers_match_the_building_blocks(tiny_run):
    S, spec, out = tiny_run
    s = out["summary"]
    assert s["diverged"] == "" and s["diverged_epoch"] is None
    # the init point: the untrained model's loss, computed here independently of run_variant
    _, te = experiments.load_data(spec)
    init = experiments.build_model(spec)
    want = experiments.reconstruction_loss(init, te.images[:32], spec.mask_ratio, seed=0)
    assert s["init_loss"] == pytest.approx(want, rel=1e-6)
    assert list(out["curve"].epoch) == [0, 1, 2] and out["curve"].test_loss.iloc[0] == pytest.approx(want, rel=1e-6)
    assert s["final_loss"] == out["curve"].test_loss.iloc[-1]
    # layers: decoder input + every block; blocks of both parts; attention per image
    assert sorted(out["readout"].layer.unique()) == list(range(S.decoder_depth + 1))
    enc = out["changes"].query("part == 'encoder'")
    assert sorted(enc.block.unique()) == list(range(1, S.depth + 1)) and len(out["attention"]) == 8
    # softmax attention: mass on visible + mask tokens + [CLS] is 1 for every image
    a = out["attention"]
    np.testing.assert_allclose(a.visible + a.masked + a.cls, 1.0, atol=1e-9)
    assert out["examples"].shape == (S.decoder_depth + 1, 2, 1, 28, 28)
    # 49 patches, int(49 * 0.25) = 12 visible values in R^32 (64-d decoder, 2 heads): chance R^2 = 12 / 32
    assert 0.0 <= s["probe_acc"] <= 1.0 and s["r2_chance"] == pytest.approx(12 / 32)


def test_a_diverged_run_is_reported_not_raised(monkeypatch, tmp_path):
    monkeypatch.setenv("MAELAB_CACHE", str(tmp_path))
    S = profiles.settings(
        "cao_decoder", "smoke", n_train=64, n_test=32, epochs=1, batch_size=32, n_loss=16, n_eval=4, n_probe=32
    )
    spec = trained.spec_for(S, "exp", 0)

    def boom(*a, **k):
        loop._check_loss([float("inf")], epoch=0, epochs=1, it=1, iters=2, lr=1e-3)

    monkeypatch.setattr(experiments, "pretrain", boom)
    out = trained.run_variant(spec, n_loss=16, n_eval=4, n_probe=32, device="cpu", progress=False)
    s = out["summary"]
    assert s["diverged"].startswith("non-finite training loss inf at epoch 1/1") and s["diverged_epoch"] == 1
    assert np.isnan(s["final_loss"]) and list(out["curve"].epoch) == [0] and "readout" not in out
    gate = evidence.run_gates(pd.DataFrame([{"variant": "exp", "seed": 0, **s}]), 1.0, S)[0]
    assert not gate.learned and gate.unmet.startswith(f"unnormalised ({S.kernel}) seed 0: diverged: non-finite")


def test_run_variant_needs_every_epoch_kept():
    S = profiles.settings("cao_decoder", "smoke")
    spec = trained.spec_for(S, "softmax", 0)
    import dataclasses

    bad = dataclasses.replace(spec, snapshot_epochs=(0,))
    with pytest.raises(ParameterError, match=r"^spec.snapshot_epochs must be every epoch 0\.\.2"):
        trained.run_variant(bad, n_loss=4, n_eval=4, n_probe=4)


def test_checkpoint_path_reads_out_the_saved_weights(tmp_path):
    """The official-checkpoint path on a tiny random MAE saved the way the official files are ({"model": sd}): the
    read-outs equal those of the in-memory model, computed with decoder.layer_readouts directly."""
    over = dict(img_size=32, in_chans=3, decoder_depth=3, input_norm="imagenet", seed=5)
    ref = models.create("mae", "micro", norm_pix_loss=False, **over).eval()
    path = tmp_path / "mae_visualize_tiny.pth"
    torch.save({"model": ref.state_dict()}, path)
    imgs = torch.rand(3, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    out = trained.checkpoint_readouts(path, imgs, size="micro", mask_seed=1, **over)
    want = decoder.layer_readouts(ref, imgs, generator=torch.Generator().manual_seed(1))
    np.testing.assert_allclose(out["examples"], want["readouts"].numpy(), rtol=1e-5, atol=1e-6)
    mets = decoder.readout_metrics(want["readouts"], imgs, want["mask"])
    got = out["readout"].pivot(index="layer", columns="image", values="psnr").to_numpy()
    np.testing.assert_allclose(got, mets["psnr"].numpy(), rtol=1e-6)
    with pytest.raises(ParameterError, match=r"^images must be \(N, 3, 32, 32\)"):
        trained.checkpoint_readouts(path, imgs[:, :, :16, :16], size="micro", **over)
    with pytest.raises(ParameterError, match=r"^checkpoint must be compatible with MaskedAutoencoderViT"):
        trained.checkpoint_readouts(path, imgs, size="micro", **{**over, "decoder_depth": 2})


def test_the_official_checkpoint_section_runs_on_the_cpu_profile(tmp_path):
    """Issue 24: ``-p checkpoint=PATH`` failed in the last cell (224 px crops asked of photos allowing 152). A randomly
    initialised ViT-B saved the way the official files are ({"model": state_dict}) goes through the page's section
    under the cpu settings: 224 px crops of the full-size test photos, read-outs equal to the in-memory model's."""
    ref = models.create("mae", "vit_base", norm_pix_loss=False, seed=0).eval()
    path = tmp_path / "mae_visualize_vit_base.pth"
    torch.save({"model": ref.state_dict()}, path)
    S = profiles.settings("cao_decoder", "cpu", checkpoint=str(path), n_photos=2)
    assert S.photo_size == 224 == profiles.settings("cao_decoder", "gpu").photo_size
    out = trained.checkpoint_section(S, seed=3)
    photos = trained.checkpoint_photos(2, 224, seed=3)
    assert photos.shape == (2, 3, 224, 224) and out["example_images"].shape == (2, 3, 224, 224)
    np.testing.assert_array_equal(out["example_images"], photos.numpy())
    assert out["examples"].shape == (1 + ref.decoder_depth, 2, 3, 224, 224) and np.isfinite(out["examples"]).all()
    assert sorted(out["readout"].layer.unique()) == list(range(1 + ref.decoder_depth))
    # the saved weights were read: the first-block attention (encoder, decoder embedding, block 1) equals the
    # in-memory model's with the same masks (the cheapest part of the analyses to recompute)
    want = decoder.decoder_attention(ref, photos, generator=torch.Generator().manual_seed(3))
    for k in ("visible", "masked", "cls", "far_fraction", "r2"):
        np.testing.assert_allclose(out["attention"][k].to_numpy(), want[k].numpy(), rtol=1e-5, atol=1e-7)


def test_a_checkpoint_the_section_cannot_read_fails_at_setup_in_one_line(tmp_path):
    """Before any training: a missing file, or crops the ViT-B cannot take; the smoke profile's crops fit too."""
    from maelab.papers.cao2022.settings import VIT_B_SIZE

    assert VIT_B_SIZE == models.SIZES["vit_base"]["img_size"]
    path = tmp_path / "ckpt.pth"
    with pytest.raises(ParameterError, match=r"^checkpoint must be an existing file .*; got '.*missing.pth'$"):
        profiles.settings("cao_decoder", "cpu", checkpoint=str(tmp_path / "missing.pth"))
    path.write_bytes(b"")
    with pytest.raises(ParameterError, match=r"^photo_size must be 224 when a checkpoint is given .*; got 152$"):
        profiles.settings("cao_decoder", "cpu", checkpoint=str(path), photo_size=152)
    assert profiles.settings("cao_decoder", "smoke", checkpoint=str(path)).photo_size == VIT_B_SIZE
    assert profiles.settings("cao_decoder", "cpu", photo_size=152).photo_size == 152  # no checkpoint: unused


def test_plan_has_one_row_per_variant_with_every_seed():
    runs = plan.plans("cpu")["cao_decoder"]
    S = profiles.settings("cao_decoder", "cpu")
    assert [r.label for r in runs] == ["MAE softmax", "MAE exp", "MAE skip"]
    assert all(r.repeats == len(S.seeds) and r.steps == S.epochs * (S.n_train // S.batch_size) for r in runs)


def test_mean_predictor_loss_by_hand():
    # 8 x 8 grey image, patch 4: four patches. Two constant patches (target 0 -> loss 0), two checkerboards of
    # 0 / 1 (16 values, unbiased variance 16 * 0.25 / 15 = 4/15; standardised squares average (15/16) v / (v + eps))
    img = torch.zeros(1, 1, 8, 8)
    img[0, 0, :4, 4:] = 0.3
    cb = (torch.arange(4)[:, None] + torch.arange(4)[None, :]) % 2
    img[0, 0, 4:, :4] = cb
    img[0, 0, 4:, 4:] = cb
    m = models.create("mae", "micro", img_size=8, in_chans=1, patch_size=4, seed=0)  # norm_pix_loss (MAE default)
    v = 4 / 15
    want = (0 + 0 + 2 * (15 / 16) * v / (v + 1e-6)) / 4
    assert trained.mean_predictor_loss(m, img) == pytest.approx(want, rel=1e-5)
    raw = models.create("mae", "micro", img_size=8, in_chans=1, patch_size=4, norm_pix_loss=False, seed=0)
    # without norm_pix_loss the target is the pixels: mean of x^2 over the image
    assert trained.mean_predictor_loss(raw, img) == pytest.approx(float((img**2).mean()), rel=1e-6)
