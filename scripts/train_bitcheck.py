"""Check that a change to ``maelab.train`` keeps training bit-identical on CPU, against another source tree.

Trains a micro U-MAE on 256 ``shapes`` images for 4 epochs x 8 steps with a fixed seed, in two configurations
(plain; augmentation + gradient clipping + BatchNorm probe + absolute lr), each: uninterrupted, killed mid-epoch
and resumed in the same process with a fresh model and scrambled global generators, then fine-tuned for 2 epochs.
``run`` stores every parameter tensor and the history (timings removed); ``compare`` checks two such folders with
``torch.equal`` / ``==`` and also that each tree's resumed run equals its uninterrupted one.

Usage (the baseline from a commit, without touching the working tree)::

    mkdir -p /tmp/base && git archive main src | tar -x -C /tmp/base
    PYTHONPATH=/tmp/base/src python scripts/train_bitcheck.py run /tmp/bit-base
    PYTHONPATH=$PWD/src python scripts/train_bitcheck.py run /tmp/bit-new
    python scripts/train_bitcheck.py compare /tmp/bit-base /tmp/bit-new      # exit status 1 on any difference

About 15 s per ``run`` on one CPU core.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import torch

TIMING = ("seconds", "images_per_s")
CONFIGS = {"plain": {}, "aug_clip": dict(augment=True, clip_grad=1.0, probe_bn=True, lr=2e-3)}


class _Crash(Exception):
    pass


def _strip(history: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING} for r in history]


def _state(module: torch.nn.Module) -> dict:
    return {n: t.detach().cpu().clone() for n, t in module.state_dict().items()}


def _crashing(model: torch.nn.Module, at: int) -> torch.nn.Module:
    """Make the ``at``-th forward call raise (a kill between two checkpoints)."""
    orig, calls = model.forward, [0]

    def forward(*a, **k):
        calls[0] += 1
        if calls[0] == at:
            raise _Crash(f"crash at forward call {at}")
        return orig(*a, **k)

    model.forward = forward
    return model


def run(out: Path) -> None:
    from maelab import data, models
    from maelab import train as T

    out.mkdir(parents=True, exist_ok=True)
    tr, te = data.load("shapes", "train", n=256, seed=0), data.load("shapes", "test", n=64, seed=0)
    for name, kw in CONFIGS.items():
        cfg = T.TrainConfig(
            **{
                **dict(
                    epochs=4,
                    batch_size=32,
                    blr=1.5e-3,
                    warmup_epochs=1,
                    seed=7,
                    eval_every=2,
                    snapshot_epochs=(0, 2),
                    checkpoint_every_iters=3,
                ),
                **kw,
            }
        )
        with tempfile.TemporaryDirectory() as d:
            full = T.train(
                models.create("umae", "micro", seed=1),
                tr,
                cfg,
                eval_data=te,
                checkpoint_dir=d,
                device="cpu",
                progress=False,
            )
        with tempfile.TemporaryDirectory() as d:
            try:  # step 19 = epoch 3, iteration 3; the last checkpoint is at step 18
                T.train(
                    _crashing(models.create("umae", "micro", seed=1), 19),
                    tr,
                    cfg,
                    eval_data=te,
                    checkpoint_dir=d,
                    device="cpu",
                    progress=False,
                )
            except _Crash:
                pass
            torch.manual_seed(999)
            resumed = T.train(
                models.create("umae", "micro", seed=1),
                tr,
                cfg,
                eval_data=te,
                checkpoint_dir=d,
                device="cpu",
                progress=False,
            )
        assert resumed.resumed_from == (2, 2), resumed.resumed_from
        for kind, res in (("full", full), ("resumed", resumed)):
            torch.save(
                {
                    "model": _state(res.model),
                    "probe": _state(res.probe),
                    "history": _strip(res.history),
                    "snapshots": {str(k): v for k, v in res.snapshots.items()},
                },
                out / f"{name}_{kind}.pt",
            )
        ft = T.fine_tune(
            full.model,
            tr,
            te,
            T.FineTuneConfig(epochs=2, batch_size=32, warmup_epochs=1, seed=3, augment=True, label_smoothing=0.1),
            device="cpu",
            progress=False,
        )
        torch.save(
            {
                "model": _state(ft.model),
                "head": _state(ft.head),
                "history": _strip(ft.history),
                "test_acc": ft.test_acc,
            },
            out / f"{name}_finetune.pt",
        )
    print("wrote", sorted(p.name for p in out.glob("*.pt")))


def _same(a, b, where: str) -> int:
    """Number of tensors compared; raises AssertionError naming the first difference."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b), where
        return 1
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        return sum(_same(a[k], b[k], f"{where}.{k}") for k in a)
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), where
        return sum(_same(x, y, f"{where}[{i}]") for i, (x, y) in enumerate(zip(a, b)))
    assert a == b or (a != a and b != b), f"{where}: {a!r} != {b!r}"
    return 0


def compare(a_dir: Path, b_dir: Path) -> int:
    pairs = [(a_dir / f"{n}_{k}.pt", b_dir / f"{n}_{k}.pt") for n in CONFIGS for k in ("full", "resumed", "finetune")]
    pairs += [(d / f"{n}_full.pt", d / f"{n}_resumed.pt") for d in (a_dir, b_dir) for n in CONFIGS]
    bad = 0
    for pa, pb in pairs:
        try:
            n = _same(torch.load(pa, weights_only=True), torch.load(pb, weights_only=True), pa.stem)
            print(f"identical ({n} tensors, torch.equal): {pa} == {pb}")
        except AssertionError as e:
            bad += 1
            print(f"DIFFERENT at {e}: {pa} vs {pb}")
    print("ALL IDENTICAL" if not bad else f"{bad} DIFFERENT")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "run":
        run(Path(sys.argv[2]))
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        raise SystemExit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
    else:
        raise SystemExit(__doc__)
