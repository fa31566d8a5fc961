"""Tests for maelab.train: schedule, parameter groups, determinism, exact resume, NaN stop, online probe, DDP,
augmentation, fine-tuning, CLI. A tiny model implementing the shared model interface keeps them fast; tests with
the real micro MAE / U-MAE run when ``maelab.models`` is importable."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import torch.nn as nn

from maelab import ParameterError
from maelab.masking import patchify, random_masking, restore
from maelab.train import (
    FineTuneConfig,
    NonFiniteLossError,
    TrainConfig,
    default_checkpoint_dir,
    fine_tune,
    load_checkpoint,
    lr_at,
    param_groups,
    random_resized_crop_flip,
    train,
)
from maelab.train.augment import _crop_resize, _sample_crop_boxes

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
TIMING = ("seconds", "images_per_s")


# ---------------------------------------------------------------------------------------------------------------
# a tiny model following the shared interface, and a stand-in dataset
# ---------------------------------------------------------------------------------------------------------------


class TinyMAE(nn.Module):
    """8x8 images, 4x4 patches (4 tokens), one token-mixing layer; ``mask_ratio=0`` makes it deterministic."""

    def __init__(self, img_size=8, patch_size=4, in_chans=1, embed_dim=8, mask_ratio=0.5, nan_at=None, crash_at=None):
        super().__init__()
        self.img_size, self.patch_size, self.in_chans, self.embed_dim = img_size, patch_size, in_chans, embed_dim
        self.mask_ratio = mask_ratio
        length, d, pd = (img_size // patch_size) ** 2, embed_dim, patch_size * patch_size * in_chans
        self.patch_embed = nn.Linear(pd, d)
        self.pos_embed = nn.Parameter(0.02 * torch.randn(1, length, d))
        self.cls_token = nn.Parameter(0.02 * torch.randn(1, 1, d))
        self.mask_token = nn.Parameter(0.02 * torch.randn(1, 1, d))
        self.fc = nn.Linear(d, d)
        self.mix = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)
        self.decoder_mix = nn.Linear(d, d)
        self.decoder_pred = nn.Linear(d, pd)
        self.calls, self.nan_at, self.crash_at = 0, nan_at, crash_at

    def _encode(self, imgs, mask_ratio, generator):
        x = self.patch_embed(patchify(imgs, self.patch_size)) + self.pos_embed
        if mask_ratio > 0:
            x, mask, ids = random_masking(x, mask_ratio, generator)
        else:
            mask = x.new_zeros(x.shape[:2])
            ids = torch.arange(x.shape[1], device=x.device).expand(x.shape[0], -1)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], 1)
        x = x + torch.nn.functional.gelu(self.fc(x))
        x = x + self.mix(x.mean(1, keepdim=True))
        return self.norm(x), mask, ids

    def forward(self, imgs, mask_ratio=None, generator=None):
        self.calls += 1
        if self.crash_at is not None and self.calls == self.crash_at:
            raise KeyboardInterrupt("simulated kill")
        mr = self.mask_ratio if mask_ratio is None else mask_ratio
        latent, mask, ids = self._encode(imgs, mr, generator)
        t = restore(latent[:, 1:], ids, self.mask_token.reshape(-1))
        pred = self.decoder_pred(t + self.decoder_mix(t.mean(1, keepdim=True)))
        per = ((pred - patchify(imgs, self.patch_size)) ** 2).mean(-1)
        loss = (per * mask).sum() / mask.sum() if mr > 0 else per.mean()
        if self.nan_at is not None and self.calls >= self.nan_at:
            loss = loss * float("nan")
        return {
            "loss": loss,
            "loss_rec": loss,
            "loss_unif": torch.zeros((), device=imgs.device),
            "pred": pred,
            "mask": mask,
            "features": latent[:, 0],
        }

    def forward_features(self, imgs, pool="cls"):
        latent, _, _ = self._encode(imgs, 0.0, None)
        return latent[:, 0] if pool == "cls" else latent[:, 1:].mean(1)


@dataclass
class ToyData:
    images: torch.Tensor
    labels: torch.Tensor | None
    num_classes: int = 2
    name: str = "toy"

    def __len__(self):
        return self.images.shape[0]


def toy(n=64, seed=0, labels=True):
    """Two separable classes: dark images (values in [0, .45]) and bright ones ([.55, 1])."""
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 2
    x = torch.rand(n, 1, 8, 8, generator=g) * 0.45 + 0.55 * y.view(-1, 1, 1, 1).float()
    return ToyData(x, y if labels else None)


def tiny(seed=0, **kw):
    torch.manual_seed(seed)
    return TinyMAE(**kw)


def cfg(**kw):
    base = dict(epochs=2, batch_size=16, blr=0.05, warmup_epochs=0.5, seed=0)
    base.update(kw)
    return TrainConfig(**base)


def strip(history):
    return [{k: v for k, v in h.items() if k not in TIMING} for h in history]


def assert_same_weights(a: nn.Module, b: nn.Module):
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for k in sa:
        assert torch.equal(sa[k], sb[k]), k


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("CI", "1")  # progress bars off (maelab._util.progress_enabled)


# ---------------------------------------------------------------------------------------------------------------
# schedule and parameter groups
# ---------------------------------------------------------------------------------------------------------------


def test_lr_at_closed_form():
    kw = dict(lr=1.0, min_lr=0.1, warmup_epochs=2, epochs=10)
    assert lr_at(0, **kw) == 0.0
    assert lr_at(1, **kw) == pytest.approx(0.5)  # half-way through warm-up
    assert lr_at(2, **kw) == pytest.approx(1.0)  # peak
    assert lr_at(6, **kw) == pytest.approx(0.55)  # cosine mid-point: (1 + 0.1) / 2
    assert lr_at(10, **kw) == pytest.approx(0.1)  # floor
    assert lr_at(4, **kw) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi / 4)))
    assert lr_at(0.5, lr=2.0, min_lr=0.0, warmup_epochs=0, epochs=1) == pytest.approx(1.0)


def test_history_lr_follows_schedule_with_blr_scaling():
    c = cfg(epochs=3, batch_size=16, blr=0.1, min_lr=0.001, warmup_epochs=1)
    res = train(tiny(), toy(64), c, device="cpu", progress=False)
    peak = 0.1 * 16 / 256  # lr = blr * B / 256
    iters = 64 // 16
    for h in res.history:
        e = h["epoch"] - 1
        expect = []
        for it in range(iters):
            t = e + it / iters
            if t < 1:
                expect.append(peak * t)
            else:
                expect.append(0.001 + (peak - 0.001) * 0.5 * (1 + math.cos(math.pi * (t - 1) / 2)))
        assert h["lr"] == pytest.approx(sum(expect) / iters, rel=1e-12)


def test_param_groups_no_decay_on_norms_biases_tokens():
    model = tiny()
    names = {id(p): n for n, p in model.named_parameters()}
    groups = param_groups(model, 0.05)
    decayed = sorted(names[id(p)] for g in groups if g["weight_decay"] == 0.05 for p in g["params"])
    assert decayed == ["decoder_mix.weight", "decoder_pred.weight", "fc.weight", "mix.weight", "patch_embed.weight"]
    flat = [names[id(p)] for g in groups for p in g["params"]]
    assert sorted(flat) == sorted(names.values())  # every trainable parameter exactly once


class _Blocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch_embed = nn.Linear(2, 2)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, 2))
        self.blocks = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
        self.decoder_blocks = nn.ModuleList([nn.Linear(2, 2)])
        self.norm = nn.LayerNorm(2)


def test_param_groups_layer_decay_official_ids():
    m = _Blocks()
    names = {id(p): n for n, p in m.named_parameters()}
    scale = {
        names[id(p)]: (g["lr_scale"], g["weight_decay"])
        for g in param_groups(m, 0.1, layer_decay=0.5)
        for p in g["params"]
    }
    # 3 blocks -> num_layers 4: embeddings 0.5**4, blocks.i 0.5**(3-i), the rest (norm, decoder) 1
    assert scale["patch_embed.weight"] == (0.0625, 0.1)
    assert scale["patch_embed.bias"] == (0.0625, 0.0)
    assert scale["cls_token"] == (0.0625, 0.0)
    assert scale["blocks.0.weight"] == (0.125, 0.1)
    assert scale["blocks.2.bias"] == (0.5, 0.0)
    assert scale["decoder_blocks.0.weight"] == (1.0, 0.1)
    assert scale["norm.weight"] == (1.0, 0.0)


# ---------------------------------------------------------------------------------------------------------------
# determinism, probe, resume
# ---------------------------------------------------------------------------------------------------------------


def test_same_seed_same_numbers_and_seed_matters():
    r1 = train(tiny(), toy(), cfg(augment=True), device="cpu")
    r2 = train(tiny(), toy(), cfg(augment=True), device="cpu")
    assert strip(r1.history) == strip(r2.history)
    assert_same_weights(r1.model, r2.model)
    assert_same_weights(r1.probe, r2.probe)
    r3 = train(tiny(), toy(), cfg(augment=True, seed=1), device="cpu")
    assert not torch.equal(r1.model.fc.weight, r3.model.fc.weight)
    assert all(math.isfinite(h["loss"]) for h in r1.history)
    assert r1.history[-1]["loss"] < r1.history[0]["loss"]


def test_grad_clipping_is_applied():
    # with every gradient clipped to norm 1e-12, Adam's eps (1e-8) dominates: updates shrink to ~1e-4 of normal
    init = tiny()
    free = train(tiny(), toy(), cfg(weight_decay=0.0), device="cpu")
    clipped = train(tiny(), toy(), cfg(weight_decay=0.0, clip_grad=1e-12), device="cpu")
    moved_free = (free.model.fc.weight - init.fc.weight).abs().max().item()
    moved_clipped = (clipped.model.fc.weight - init.fc.weight).abs().max().item()
    assert moved_free > 1e-3 and moved_clipped < 1e-3 * moved_free


def test_probe_is_detached_and_leaves_model_trajectory_alone():
    on = train(tiny(), toy(), cfg(online_probe=True, probe_bn=True), device="cpu")
    off = train(tiny(), toy(), cfg(online_probe=False), device="cpu")
    assert_same_weights(on.model, off.model)
    assert off.probe is None and off.history[0]["online_acc"] is None
    assert isinstance(on.probe[0], nn.BatchNorm1d) and not on.probe[0].affine


def test_online_probe_accuracy_and_eval_recomputed_independently():
    test = toy(40, seed=5)
    res = train(tiny(), toy(128), cfg(epochs=4, probe_blr=20.0, eval_every=2), eval_data=test, device="cpu")
    assert [h["eval_online_acc"] is None for h in res.history] == [True, False, True, False]
    with torch.no_grad():
        pred = res.probe(res.model.forward_features(test.images)).argmax(1)
    assert res.history[-1]["eval_online_acc"] == pytest.approx((pred == test.labels).float().mean().item())
    assert res.history[-1]["eval_online_acc"] >= 0.9  # trivially separable classes
    assert 0.5 < res.history[-1]["online_acc"] <= 1.0


def test_snapshots_and_callbacks():
    seen = []
    res = train(
        tiny(),
        toy(),
        cfg(epochs=3, snapshot_epochs=[0, 2]),
        device="cpu",
        callbacks=[lambda e, m: seen.append((e, m.fc.weight.detach().clone()))],
    )
    assert [e for e, _ in seen] == [0, 1, 2, 3]
    assert sorted(res.snapshots) == [0, 2]
    assert torch.equal(res.snapshots[0]["fc.weight"], seen[0][1])
    assert torch.equal(res.snapshots[2]["fc.weight"], seen[2][1])
    assert torch.equal(seen[3][1], res.model.fc.weight)
    assert not torch.equal(res.snapshots[0]["fc.weight"], res.snapshots[2]["fc.weight"])


RESUME_SCRIPT = textwrap.dedent("""
    import sys, torch
    sys.path.insert(0, {tests!r})
    import test_train as T
    from maelab.train import train
    torch.manual_seed(123)  # a different global state than the first process had: must not matter
    res = train(T.tiny(seed=99), T.toy(), T.cfg(epochs=3, augment=True, probe_bn=True), checkpoint_dir={ck!r},
                device="cpu", progress=False)
    torch.save({{"model": res.model.state_dict(), "probe": res.probe.state_dict(), "history": res.history,
                 "resumed_from": res.resumed_from}}, {out!r})
""")


def test_exact_resume_between_epochs_in_a_fresh_process(tmp_path):
    c = cfg(epochs=3, augment=True, probe_bn=True)
    full = train(tiny(), toy(), c, device="cpu")
    ck = tmp_path / "ck"
    with pytest.raises(KeyboardInterrupt):  # killed at the first step of epoch 2 (4 steps per epoch)
        train(tiny(crash_at=5), toy(), c, checkpoint_dir=ck, device="cpu")
    assert load_checkpoint(ck / "last.pt")["epoch"] == 1
    out = tmp_path / "out.pt"
    env = dict(os.environ, OMP_NUM_THREADS=str(torch.get_num_threads()), CI="1")
    subprocess.run(
        [sys.executable, "-c", RESUME_SCRIPT.format(tests=str(TESTS), ck=str(ck), out=str(out))],
        check=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )
    got = torch.load(out, weights_only=True)
    assert got["resumed_from"] == (1, 0)
    for k, v in full.model.state_dict().items():
        assert torch.equal(got["model"][k], v), k
    for k, v in full.probe.state_dict().items():
        assert torch.equal(got["probe"][k], v), k
    assert strip(got["history"]) == strip(full.history)
    # a finished run returns at once from its checkpoint
    again = train(tiny(seed=7), toy(), c, checkpoint_dir=ck, device="cpu")
    assert again.resumed_from == (3, 0)
    assert_same_weights(again.model, full.model)
    assert strip(again.history) == strip(full.history)


def test_exact_resume_after_kill_mid_epoch(tmp_path):
    c = cfg(epochs=2, augment=True, checkpoint_every_iters=3)
    full = train(tiny(), toy(), c, device="cpu")
    ck = tmp_path / "ck"
    with pytest.raises(KeyboardInterrupt):  # killed inside epoch 2, after the checkpoint at step 6
        train(tiny(crash_at=8), toy(), c, checkpoint_dir=ck, device="cpu")
    st = load_checkpoint(ck / "last.pt")
    assert (st["epoch"], st["iteration"]) == (1, 2)
    assert [p.name for p in ck.iterdir()] == ["last.pt"]  # no temporary files left behind
    torch.manual_seed(4321)  # scramble the global generators
    res = train(tiny(seed=3), toy(), c, checkpoint_dir=ck, device="cpu")
    assert res.resumed_from == (1, 2)
    assert_same_weights(res.model, full.model)
    assert_same_weights(res.probe, full.probe)
    assert strip(res.history) == strip(full.history)


def test_resume_refuses_other_config_or_data(tmp_path):
    ck = tmp_path / "ck"
    train(tiny(), toy(), cfg(epochs=1), checkpoint_dir=ck, device="cpu")
    with pytest.raises(ParameterError, match="blr") as e:
        train(tiny(), toy(), cfg(epochs=1, blr=0.01), checkpoint_dir=ck, device="cpu")
    assert e.value.name == "config"
    with pytest.raises(ParameterError) as e:
        train(tiny(), toy(seed=9), cfg(epochs=1), checkpoint_dir=ck, device="cpu")
    assert e.value.name == "data"
    res = train(tiny(), toy(seed=9), cfg(epochs=1), checkpoint_dir=ck, resume=False, device="cpu")
    assert res.resumed_from is None


def test_untrusted_checkpoint_is_not_executed(tmp_path):
    ck = tmp_path / "ck"
    ck.mkdir()
    torch.save({"format": "maelab.train/1", "payload": ToyData(torch.zeros(1, 1, 2, 2), None)}, ck / "last.pt")
    with pytest.raises(Exception, match="[Ww]eights only|weights_only|Unsupported global"):
        train(tiny(), toy(), cfg(epochs=1), checkpoint_dir=ck, device="cpu")


def test_nan_loss_stops_with_location(tmp_path):
    ck = tmp_path / "ck"
    with pytest.raises(NonFiniteLossError, match=r"nan at epoch 2/2, iteration 2/4 \(global step 6\)"):
        train(tiny(nan_at=6), toy(), cfg(), checkpoint_dir=ck, device="cpu")
    st = load_checkpoint(ck / "last.pt")  # only the healthy epoch-1 checkpoint exists
    assert st["epoch"] == 1 and all(torch.isfinite(v).all() for v in st["model"].values())


@pytest.mark.parametrize(
    "kw,name",
    [
        (dict(epochs=0), "epochs"),
        (dict(epochs=1.5), "epochs"),
        (dict(batch_size=0), "batch_size"),
        (dict(batch_size=True), "batch_size"),
        (dict(blr=0.0), "blr"),
        (dict(blr=-1e-3), "blr"),
        (dict(amp="fp32"), "amp"),
        (dict(warmup_epochs=5), "warmup_epochs"),
        (dict(mask_ratio=1.0), "mask_ratio"),
        (dict(snapshot_epochs=[3]), "snapshot_epochs"),
        (dict(seed=-1), "seed"),
        (dict(clip_grad=0), "clip_grad"),
    ],
)
def test_bad_config_raises_parameter_error(kw, name):
    with pytest.raises(ParameterError) as e:
        cfg(**kw)
    assert e.value.name == name and "\n" not in str(e.value)


def test_bad_train_inputs():
    with pytest.raises(ParameterError) as e:
        train(tiny(), toy(64), cfg(batch_size=65), device="cpu")
    assert e.value.name == "batch_size" and "at most 64" in str(e.value)
    with pytest.raises(ParameterError) as e:
        train(tiny(), toy(labels=False), cfg(online_probe=True), device="cpu")
    assert e.value.name == "data.labels"
    with pytest.raises(ParameterError) as e:
        train(tiny(), toy(), cfg(amp="fp16"), device="cpu")
    assert e.value.name == "amp"
    with pytest.raises(ParameterError) as e:
        train(tiny(), toy(), {"epochs": 1}, device="cpu")
    assert e.value.name == "config"
    res = train(tiny(), toy(labels=False), cfg(epochs=1), device="cpu")  # probe off automatically
    assert res.probe is None


def test_default_checkpoint_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("MAELAB_CACHE", str(tmp_path))
    assert default_checkpoint_dir("umae_cifar") == tmp_path / "checkpoints" / "umae_cifar"
    monkeypatch.delenv("MAELAB_CACHE")
    assert default_checkpoint_dir("x") == REPO / ".cache" / "checkpoints" / "x"
    for bad in ("", "../up", "a/b", 3):
        with pytest.raises(ParameterError):
            default_checkpoint_dir(bad)


# ---------------------------------------------------------------------------------------------------------------
# augmentation
# ---------------------------------------------------------------------------------------------------------------


def test_crop_resize_flip_matches_torchvision():
    from torchvision.transforms.v2 import InterpolationMode
    from torchvision.transforms.v2 import functional as TF

    g = torch.Generator().manual_seed(0)
    x = torch.rand(6, 3, 12, 10, generator=g)
    top = torch.tensor([0, 2, 5, 0, 3, 1])
    left = torch.tensor([0, 1, 4, 0, 2, 3])
    h = torch.tensor([12, 7, 7, 5, 9, 4])
    w = torch.tensor([10, 6, 6, 10, 3, 7])
    flip = torch.tensor([False, True, False, True, False, True])
    out = _crop_resize(x, top, left, h, w, flip, (12, 10))
    for i in range(6):
        ref = TF.resized_crop(
            x[i],
            int(top[i]),
            int(left[i]),
            int(h[i]),
            int(w[i]),
            [12, 10],
            interpolation=InterpolationMode.BILINEAR,
            antialias=False,
        )
        if flip[i]:
            ref = TF.horizontal_flip(ref)
        torch.testing.assert_close(out[i], ref, atol=1e-5, rtol=0)


def test_crop_box_sampling_respects_scale_and_ratio():
    g = torch.Generator().manual_seed(1)
    top, left, h, w = _sample_crop_boxes(4000, 32, 32, (0.2, 1.0), (3 / 4, 4 / 3), g)
    assert bool(((top >= 0) & (left >= 0) & (top + h <= 32) & (left + w <= 32)).all())
    area = (h * w).double() / 1024
    assert float(area.min()) > 0.17 and float(area.max()) <= 1.0  # rounding of h, w allows a little below 0.2
    assert float(area.mean()) == pytest.approx(0.6, abs=0.05)  # E[U(0.2, 1)] = 0.6 (few rejections)
    ratio = w.double() / h.double()
    assert float(ratio.min()) > 0.6 and float(ratio.max()) < 1.6  # 3/4..4/3 up to rounding of h, w
    y = random_resized_crop_flip(torch.rand(3, 3, 32, 32), torch.Generator().manual_seed(0))
    assert y.shape == (3, 3, 32, 32)


def test_identity_crop_is_identity():
    x = torch.rand(2, 1, 8, 8)
    y = random_resized_crop_flip(x, torch.Generator().manual_seed(0), scale=(1, 1), ratio=(1, 1), hflip=False)
    torch.testing.assert_close(y, x, atol=1e-6, rtol=0)


# ---------------------------------------------------------------------------------------------------------------
# fine-tuning
# ---------------------------------------------------------------------------------------------------------------


def test_fine_tune_learns_and_reports_true_test_accuracy():
    model = tiny()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    test = toy(40, seed=3)
    c = FineTuneConfig(epochs=3, batch_size=16, blr=0.5, warmup_epochs=1, layer_decay=0.75, seed=0)
    res = fine_tune(model, toy(128), test, c, device="cpu", progress=False)
    for k, v in model.state_dict().items():  # copy_model=True leaves the pre-trained model alone
        assert torch.equal(v, before[k])
    with torch.no_grad():
        pred = res.head(res.model.forward_features(test.images)).argmax(1)
    assert res.test_acc == pytest.approx((pred == test.labels).float().mean().item())
    assert res.test_acc >= 0.9
    assert [h["epoch"] for h in res.history] == [1, 2, 3]
    res2 = fine_tune(tiny(), toy(128), test, c, device="cpu", progress=False)
    assert [{k: h[k] for k in ("loss", "train_acc", "test_acc")} for h in res2.history] == [
        {k: h[k] for k in ("loss", "train_acc", "test_acc")} for h in res.history
    ]
    with pytest.raises(ParameterError) as e:
        fine_tune(tiny(), toy(labels=False), test, c, device="cpu")
    assert e.value.name == "train_data.labels"


# ---------------------------------------------------------------------------------------------------------------
# distributed (gloo, 2 CPU processes) and the command line
# ---------------------------------------------------------------------------------------------------------------


def _ddp_worker(rank, world, init_file, out_dir):
    torch.set_num_threads(1)
    torch.distributed.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        c = cfg(epochs=3, batch_size=8, blr=0.5, warmup_epochs=0, mask_ratio=0.0)
        res = train(
            tiny(mask_ratio=0.0),
            toy(64),
            c,
            eval_data=toy(16, seed=2),
            checkpoint_dir=Path(out_dir) / "ck",
            device="cpu",
            progress=False,
        )
        torch.save(
            {"model": res.model.state_dict(), "probe": res.probe.state_dict(), "history": res.history},
            Path(out_dir) / f"rank{rank}.pt",
        )
    finally:
        torch.distributed.destroy_process_group()


def test_ddp_two_ranks_match_single_process_with_doubled_batch(tmp_path):
    import torch.multiprocessing as mp

    mp.spawn(_ddp_worker, args=(2, str(tmp_path / "init"), str(tmp_path)), nprocs=2, join=True)
    r0 = torch.load(tmp_path / "rank0.pt", weights_only=True)
    r1 = torch.load(tmp_path / "rank1.pt", weights_only=True)
    for k in r0["model"]:
        assert torch.equal(r0["model"][k], r1["model"][k]), k
    for k in r0["probe"]:
        assert torch.equal(r0["probe"][k], r1["probe"][k]), k
    assert r0["history"][-1]["loss"] < r0["history"][0]["loss"]
    assert load_checkpoint(tmp_path / "ck" / "last.pt")["world_size"] == 2
    # the deterministic model (no masking) with per-sample-mean loss: DDP on 2 x 8 == one process on 16
    single = train(
        tiny(mask_ratio=0.0),
        toy(64),
        cfg(epochs=3, batch_size=16, blr=0.5, warmup_epochs=0, mask_ratio=0.0),
        device="cpu",
    )
    for k, v in single.model.state_dict().items():
        torch.testing.assert_close(r0["model"][k], v, rtol=1e-4, atol=1e-5)
    for a, b in zip(r0["history"], single.history):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-4)
        assert a["lr"] == pytest.approx(b["lr"], rel=1e-12)


def test_cli_help():
    out = subprocess.run(
        [sys.executable, "-m", "maelab.train", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        check=True,
    )
    assert "torchrun" in out.stdout and "--batch-size" in out.stdout


def test_torchrun_cli_two_ranks_on_shapes(tmp_path):
    try:
        from maelab import data

        data.load("shapes", "train", n=4)
    except Exception as exc:  # noqa: BLE001 - data module not there yet: reported as a skip
        pytest.skip(f"maelab.data.load('shapes') unavailable: {exc!r}")
    hist, ck = tmp_path / "hist.json", tmp_path / "ck"
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        "-m",
        "maelab.train",
        "--dataset",
        "shapes",
        "--num-train",
        "64",
        "--num-eval",
        "32",
        "--model",
        "umae",
        "--size",
        "micro",
        "--epochs",
        "2",
        "--batch-size",
        "16",
        "--warmup-epochs",
        "1",
        "--device",
        "cpu",
        "--no-progress",
        "--history-out",
        str(hist),
        "--checkpoint-dir",
        str(ck),
    ]
    subprocess.run(
        cmd, check=True, cwd=REPO, timeout=120, capture_output=True, env=dict(os.environ, OMP_NUM_THREADS="1")
    )
    import json

    out = json.loads(hist.read_text())
    assert out["world_size"] == 2 and [h["epoch"] for h in out["history"]] == [1, 2]
    assert all(math.isfinite(h["loss"]) and h["loss_unif"] != 0 for h in out["history"])
    assert out["history"][-1]["eval_online_acc"] is not None
    st = load_checkpoint(ck / "last.pt")
    assert st["world_size"] == 2 and st["epoch"] == 2


# ---------------------------------------------------------------------------------------------------------------
# real maelab models (once maelab.models exists)
# ---------------------------------------------------------------------------------------------------------------


def _models():
    try:
        from maelab import models

        models.create("mae", "micro")
    except Exception as exc:  # noqa: BLE001 - not there yet / broken: reported as a skip
        pytest.skip(f"maelab.models.create('mae', 'micro') unavailable: {exc!r}")
    return models


def _images(models, name, n=32, seed=0):
    m = models.create(name, "micro")
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, m.in_chans, m.img_size, m.img_size, generator=g)
    return ToyData(x, torch.arange(n) % 2)


@pytest.mark.parametrize("name", ["mae", "umae"])
def test_real_micro_models_train_resume_exactly(name, tmp_path):
    models = _models()
    data = _images(models, name)
    c = cfg(epochs=2, batch_size=8, blr=1.5e-3, checkpoint_every_iters=3)

    def make():
        torch.manual_seed(0)
        return models.create(name, "micro")

    full = train(make(), data, c, device="cpu")
    assert all(math.isfinite(h["loss"]) for h in full.history)
    assert full.history[-1]["loss"] < full.history[0]["loss"]
    if name == "umae":
        assert any(h["loss_unif"] != 0 for h in full.history)
    ck = tmp_path / "ck"
    model = make()
    calls = {"n": 0}
    orig = model.forward

    def crashing(*a, **k):
        calls["n"] += 1
        if calls["n"] == 7:
            raise KeyboardInterrupt
        return orig(*a, **k)

    model.forward = crashing
    with pytest.raises(KeyboardInterrupt):
        train(model, data, c, checkpoint_dir=ck, device="cpu")
    res = train(make(), data, c, checkpoint_dir=ck, device="cpu")
    assert res.resumed_from == (1, 2)
    assert_same_weights(res.model, full.model)
    assert strip(res.history) == strip(full.history)


def test_real_micro_fine_tune_layer_decay():
    models = _models()
    m = models.create("mae", "micro", seed=0)
    clf_names = {n for n, _ in m.named_parameters()}
    assert any(n.startswith("blocks.1.") for n in clf_names)  # the names the official lr ids rely on
    groups = param_groups(m, 0.05, layer_decay=0.5)
    by_name = {id(p): n for n, p in m.named_parameters()}
    scales = {by_name[id(p)]: g["lr_scale"] for g in groups for p in g["params"]}
    # depth 2 -> num_layers 3: patch_embed 0.5**3, blocks.0 0.5**2, blocks.1 0.5, final norm 1
    assert scales["patch_embed.proj.weight"] == 0.125 and scales["cls_token"] == 0.125
    assert scales["blocks.0.attn.qkv.weight"] == 0.25 and scales["blocks.1.mlp.fc2.bias"] == 0.5
    assert scales["norm.weight"] == 1.0
    train_set, test_set = _images(models, "mae", n=32), _images(models, "mae", n=16, seed=1)
    res = fine_tune(
        m, train_set, test_set, FineTuneConfig(epochs=1, batch_size=8, warmup_epochs=0), device="cpu", progress=False
    )
    with torch.no_grad():
        pred = res.head(res.model.forward_features(test_set.images, pool="cls")).argmax(1)
    assert res.test_acc == pytest.approx((pred == test_set.labels).float().mean().item())
    assert math.isfinite(res.history[0]["loss"])


def test_a_cuda_device_sets_the_float32_policy_wherever_it_is_resolved(monkeypatch):
    """TF32 on CUDA is set whenever a CUDA device is resolved (an evaluation's too), not only when the trainer runs:
    before, an evaluation on the card ran in TF32 in a process that had trained and in full float32 in one that had
    not. Checked with CUDA faked available (resolving a device creates nothing on it)."""
    from maelab._util import resolve_device

    flags = torch.backends.cuda.matmul, torch.backends.cudnn
    before = [f.allow_tf32 for f in flags]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    try:
        for name, want in (
            ("cpu", torch.device("cpu")),
            ("cuda:1", torch.device("cuda", 1)),
            ("auto", torch.device("cuda")),
            (torch.device("cuda", 2), torch.device("cuda", 2)),
        ):
            for f in flags:
                f.allow_tf32 = False
            assert resolve_device(name) == want
            assert [f.allow_tf32 for f in flags] == [want.type == "cuda"] * 2, name
    finally:
        for f, b in zip(flags, before):
            f.allow_tf32 = b
