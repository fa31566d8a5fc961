"""The trainer's fast path, tested where a CPU allows (issue 13, item 4): the bf16 step under CPU autocast, the step
loop's host syncs counted, the deferred NaN stop, fused AdamW chosen only on CUDA, and the dry-run step cap."""

import sys
from types import SimpleNamespace

import pytest
import torch

from maelab import models
from maelab.train import FineTuneConfig, NonFiniteLossError, TrainConfig, fine_tune, train
from maelab.train.distributed import _Runtime

SYNCS = ("item", "tolist", "cpu", "numpy", "__bool__", "__float__", "__int__")


def data(n=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return SimpleNamespace(
        images=torch.rand(n, 1, 16, 16, generator=g), labels=torch.randint(0, 3, (n,), generator=g), num_classes=3
    )


def model():
    return models.create("mae", "micro", img_size=16, in_chans=1, patch_size=4, seed=0)


def cfg(**kw):
    base = dict(epochs=2, batch_size=8, blr=1e-3, warmup_epochs=1, seed=0)
    return TrainConfig(**{**base, **kw})


class SyncCounter:
    """Counts Tensor -> host read-backs (what would block on a GPU) issued from maelab's own code."""

    def __init__(self, monkeypatch):
        self.calls = []
        for name in SYNCS:
            orig = getattr(torch.Tensor, name)

            def wrapper(t, *a, _orig=orig, _name=name, **kw):
                caller = sys._getframe(1).f_globals.get("__name__", "")
                if caller.startswith("maelab"):
                    self.calls.append((_name, caller))
                return _orig(t, *a, **kw)

            monkeypatch.setattr(torch.Tensor, name, wrapper)


def test_host_syncs_per_epoch_do_not_grow_with_steps(monkeypatch):
    """The step loop (maelab.train.loop) reads back twice per epoch whatever its length when ``log_every`` exceeds
    the steps of an epoch: the loss sums (one ``tolist``) and the online probe's counts (one ``tolist``); with
    ``log_every=k`` once per k steps instead of the first. (Set-up reads a few values once per run: the data
    fingerprint, the drop-path schedule.)"""
    counts = {}
    for n, every in ((64, 1000), (256, 1000), (256, 8)):
        counter = SyncCounter(monkeypatch)
        train(model(), data(n), cfg(log_every=every), device="cpu", progress=False)
        counts[(n, every)] = sum(1 for _, where in counter.calls if where == "maelab.train.loop")
        monkeypatch.undo()
    steps_small, steps_large = 64 // 8, 256 // 8  # 8 and 32 steps per epoch, 2 epochs
    assert counts[(64, 1000)] == 2 * 2, counts
    assert counts[(256, 1000)] == counts[(64, 1000)], counts  # independent of the number of steps
    assert counts[(256, 8)] == 2 * (1 + steps_large // 8), counts  # one loss read-back per 8 steps
    assert steps_small < steps_large


def test_per_step_log_is_the_default_on_cpu_and_numbers_do_not_depend_on_log_every():
    a = train(model(), data(), cfg(), device="cpu", progress=False)
    b = train(model(), data(), cfg(log_every=5), device="cpu", progress=False)
    strip = [{k: v for k, v in h.items() if k not in ("seconds", "images_per_s")} for h in a.history]
    assert strip == [{k: v for k, v in h.items() if k not in ("seconds", "images_per_s")} for h in b.history]
    for (k, x), y in zip(a.model.state_dict().items(), b.model.state_dict().values()):
        assert torch.equal(x, y), k


class NanAt(torch.nn.Module):
    """Wraps a model; the loss becomes NaN from call ``at`` on (1-based)."""

    def __init__(self, inner, at):
        super().__init__()
        self.inner, self.at, self.calls = inner, at, 0
        self.embed_dim = inner.embed_dim

    def forward(self, x, **kw):
        self.calls += 1
        out = self.inner(x, **kw)
        if self.calls >= self.at:
            out = {**out, "loss": out["loss"] * float("nan")}
        return out

    def forward_features(self, x, pool="cls"):
        return self.inner.forward_features(x, pool=pool)


def test_deferred_nan_stop_names_the_first_bad_step():
    # 8 steps per epoch; NaN from step 11 (epoch 2, iteration 3); read back every 4 steps -> raised at step 12
    m = NanAt(model(), 11)
    with pytest.raises(NonFiniteLossError, match=r"nan at epoch 2/2, iteration 3/8 \(global step 11\)"):
        train(m, data(), cfg(log_every=4, online_probe=False), device="cpu", progress=False)
    assert m.calls == 12


def test_bf16_step_runs_under_cpu_autocast():
    seen = []
    m = model()
    m.register_forward_pre_hook(
        lambda mod, args: seen.append((torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")))
    )
    res = train(m, data(), cfg(amp="bf16", epochs=1), device="cpu", progress=False)
    assert seen and all(on and dt == torch.bfloat16 for on, dt in seen[:8])
    assert all(torch.isfinite(torch.tensor(h["loss"])) for h in res.history)
    ft_cfg = FineTuneConfig(epochs=1, batch_size=8, warmup_epochs=1, amp="bf16")
    ft = fine_tune(res.model, data(), data(32, seed=1), ft_cfg, device="cpu", progress=False)
    assert 0.0 <= ft.test_acc <= 1.0


def test_fused_adamw_only_on_cuda():
    p = [torch.nn.Parameter(torch.zeros(3))]
    cpu = _Runtime(torch.device("cpu"), 0, 1, None).adamw(p, lr=1e-3)
    assert not cpu.defaults.get("fused")
    cuda = _Runtime(torch.device("cuda"), 0, 1, None)
    captured = {}
    orig = torch.optim.AdamW

    class Spy(orig):
        def __init__(self, params, **kw):
            captured.update(kw)
            super().__init__(params, **{k: v for k, v in kw.items() if k != "fused"})

    torch.optim.AdamW = Spy
    try:
        cuda.adamw(p, lr=1e-3)
    finally:
        torch.optim.AdamW = orig
    assert captured.get("fused") is True


def test_dry_run_caps_optimiser_steps(tmp_path):
    from maelab.options import DryRunLimits

    caps = DryRunLimits(scratch=str(tmp_path))
    m = NanAt(model(), 10**9)
    res = train(m, data(), cfg(epochs=3, snapshot_epochs=(0, 3)), device="cpu", progress=False, caps=caps)
    assert m.calls == 2  # 2 optimiser steps in all, over 3 epochs of 8
    assert [h["epoch"] for h in res.history] == [1, 2, 3] and set(res.snapshots) == {0, 3}
    # the step-less epochs carry the last measured losses (code reading "the last epoch's loss" runs as in a real
    # run), and say they made no step: no learning rate, no throughput
    h = res.history
    assert all(x == x for x in (h[0]["loss"], h[0]["loss_rec"])) and h[0]["loss"] > 0
    assert [e["loss"] for e in h[1:]] == [h[0]["loss"]] * 2 and h[2]["loss_rec"] == h[0]["loss_rec"]
    assert h[2]["lr"] != h[2]["lr"]
    ft_cfg = FineTuneConfig(epochs=2, batch_size=8, warmup_epochs=1)
    ft = fine_tune(res.model, data(), data(32, seed=1), ft_cfg, device="cpu", progress=False, caps=caps)
    full = NanAt(model(), 10**9)
    train(full, data(), cfg(epochs=3), device="cpu", progress=False)
    assert full.calls == 3 * 8  # without caps: every step of every epoch
    assert len(ft.history) == 2 and ft.history[0]["loss"] > 0 and ft.history[1]["loss"] == ft.history[0]["loss"]
    assert ft.history[1]["lr"] != ft.history[1]["lr"]


def test_compile_flag_is_validated():
    with pytest.raises(ValueError, match="compile"):
        TrainConfig(compile="yes")
    with pytest.raises(ValueError, match="log_every"):
        TrainConfig(log_every=0)
