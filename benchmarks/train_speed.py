"""Training throughput (images/s) of maelab's MAE against the MAE built from the ``lightly`` package, same trainer.

Three configurations (all with the official decoder shape for the size and mask ratio 0.75, norm-pix targets):

* ``micro32``      maelab ``create("mae", "micro")``: 32 px, patch 4, 64-d, 2 layers, decoder 64/1/2.
* ``vit_tiny32``   ``create("mae", "vit_tiny", patch_size=4)``: 32 px, patch 4, ViT-Tiny 192-d / 12 layers / 3 heads,
  decoder 192/4/3.
* ``vit_base224``  ``create("mae", "vit_base")``: the official mae_vit_base_patch16 (224 px, decoder 512/8/16).

For each configuration and each model (``maelab`` and the ``lightly`` peer with identical dimensions) two numbers:

* ``trainer``: :func:`maelab.train.train` for 2 epochs on synthetic data (``batch_size * iters`` random images and
  labels, online probe on, as the book runs it); the second epoch's ``images_per_s`` (the first is warm-up). This
  includes the trainer's per-step loss all-reduce/``.item()`` (needed for the NaN check) and the probe update.
* ``bare``: a minimal loop (AdamW step, same autocast) timed with CUDA synchronisation after ``warmup`` steps:
  the model's own speed, so ``bare - trainer`` is the trainer's overhead.

On CUDA: bf16 autocast (``amp="auto"``), TF32 matmuls, timm's fused attention (``scaled_dot_product_attention``;
both models use timm ``Block``s). ``--device cuda`` on a machine without CUDA stops with one line.

Model-FLOPs utilisation: each model's FLOPs per training step are counted with :func:`maelab.cost.step_flops`
(forward + backward, the optimizer excluded, attention counted as its matrix products) and turned into achieved
FLOP/s = FLOPs per step / batch x images/s, and MFU = achieved / peak, with peak = the H100 SXM's dense bf16 peak
(:data:`maelab.cost.H100_PEAK_BF16_FLOPS`, 989 TFLOP/s; on another GPU read MFU relative to that H100 number) on
CUDA, and this CPU's measured float32 GEMM throughput on CPU.

Results go to ``benchmarks/results/train_speed-<device>-<utc>.json`` (atomically)
with provenance. ``lightly`` is optional: run with an interpreter that has it (see ``benchmarks/README.md``); without
it the peer is recorded as skipped.

Usage::

    python benchmarks/train_speed.py --quick                 # a few iterations (CPU: ViT-Base 2 iterations)
    python benchmarks/train_speed.py --configs micro32 vit_tiny32 --iters 50
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

import maelab
from maelab import cost, models
from maelab._util import atomic_path, device_name, resolve_device
from maelab.train import TrainConfig, param_groups, train
from maelab.train.distributed import _Runtime

ROOT = Path(__file__).resolve().parent

CONFIGS = {
    "micro32": dict(name="mae", size="micro", overrides={}),
    "vit_tiny32": dict(name="mae", size="vit_tiny", overrides={"patch_size": 4}),
    "vit_base224": dict(name="mae", size="vit_base", overrides={}),
}
# (batch size, iterations) per device kind and mode
PLAN = {
    ("cuda", False): {"micro32": (1024, 40), "vit_tiny32": (512, 40), "vit_base224": (256, 20)},
    ("cuda", True): {"micro32": (1024, 10), "vit_tiny32": (512, 10), "vit_base224": (256, 5)},
    ("cpu", False): {"micro32": (128, 20), "vit_tiny32": (64, 10), "vit_base224": (8, 3)},
    ("cpu", True): {"micro32": (128, 4), "vit_tiny32": (32, 3), "vit_base224": (4, 2)},
}


class LightlyMAE(nn.Module):
    """MAE assembled from lightly 1.6 modules (``MaskedVisionTransformerTIMM`` around a timm ``VisionTransformer``,
    ``MaskedVisionTransformerDecoderTIMM``) the way lightly's MAE examples do, wrapped in maelab's model interface
    (forward -> dict with ``loss`` and ``features``) so the same trainer drives it. Norm-pix targets, loss on masked
    patches only, as the maelab model. lightly draws masks from the global RNG (``generator`` is ignored)."""

    def __init__(
        self,
        img_size,
        patch_size,
        in_chans,
        embed_dim,
        depth,
        num_heads,
        decoder_embed_dim,
        decoder_depth,
        decoder_num_heads,
        mask_ratio=0.75,
        mlp_ratio=4.0,
    ):
        super().__init__()
        from lightly.models.modules import MaskedVisionTransformerDecoderTIMM, MaskedVisionTransformerTIMM
        from timm.models.vision_transformer import VisionTransformer

        vit = VisionTransformer(
            img_size=img_size,
            patch_size=patch_size,
            in_chans=in_chans,
            embed_dim=embed_dim,
            depth=depth,
            num_heads=num_heads,
            mlp_ratio=mlp_ratio,
            qkv_bias=True,
            num_classes=0,
            norm_layer=partial(nn.LayerNorm, eps=1e-6),
        )
        self.img_size, self.patch_size, self.in_chans, self.embed_dim = img_size, patch_size, in_chans, embed_dim
        self.mask_ratio = mask_ratio
        self.backbone = MaskedVisionTransformerTIMM(vit=vit)
        self.sequence_length = self.backbone.sequence_length
        self.decoder_embed = nn.Linear(embed_dim, decoder_embed_dim)
        self.decoder = MaskedVisionTransformerDecoderTIMM(
            num_patches=vit.patch_embed.num_patches,
            embed_dim=decoder_embed_dim,
            depth=decoder_depth,
            num_heads=decoder_num_heads,
            mlp_ratio=mlp_ratio,
        )
        self.decoder_pred = nn.Linear(decoder_embed_dim, patch_size**2 * in_chans)

    def forward(self, imgs, mask_ratio=None, generator=None):
        from lightly.models import utils

        b = imgs.shape[0]
        mr = self.mask_ratio if mask_ratio is None else mask_ratio
        idx_keep, idx_mask = utils.random_token_mask((b, self.sequence_length), mask_ratio=mr, device=imgs.device)
        latent = self.backbone.encode(imgs, idx_keep=idx_keep)
        x = self.decoder_embed(latent)
        full = utils.repeat_token(self.decoder.mask_token, (b, self.sequence_length))
        full = utils.set_at_index(full, idx_keep, x.type_as(full))
        dec = self.decoder(full)
        pred = self.decoder_pred(utils.get_at_index(dec, idx_mask))
        target = utils.get_at_index(utils.patchify(imgs, self.patch_size), idx_mask - 1)
        mean, var = target.mean(-1, keepdim=True), target.var(-1, keepdim=True)
        target = (target - mean) / (var + 1e-6) ** 0.5
        loss = F.mse_loss(pred.float(), target.float())
        return {"loss": loss, "loss_rec": loss, "loss_unif": torch.zeros_like(loss), "features": latent[:, 0]}

    def forward_features(self, imgs, pool="cls"):
        latent = self.backbone.encode(imgs)
        return latent[:, 0] if pool == "cls" else latent[:, 1:].mean(1)


def _maelab_model(spec):
    return models.create(spec["name"], spec["size"], seed=0, **spec["overrides"])


def _lightly_model(m):
    c = m.config
    torch.manual_seed(0)
    return LightlyMAE(
        c["img_size"],
        c["patch_size"],
        c["in_chans"],
        c["embed_dim"],
        c["depth"],
        c["num_heads"],
        c["decoder_embed_dim"],
        c["decoder_depth"],
        c["decoder_num_heads"],
        c["mask_ratio"],
    )


class _Data:
    def __init__(self, n, chans, size, device, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.images = torch.rand(n, chans, size, size, generator=g).to(device)
        self.labels = torch.randint(0, 10, (n,), generator=g).to(device)
        self.num_classes = 10


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def bench_trainer(model, data, batch, device) -> float:
    cfg = TrainConfig(epochs=2, batch_size=batch, warmup_epochs=0, amp="auto", online_probe=True)
    res = train(model, data, cfg, device=str(device), progress=False)
    return res.history[-1]["images_per_s"]


def bench_bare(model, data, batch, iters, warmup, device) -> float:
    rt = _Runtime.create(device, "auto")
    model.to(device).train()
    opt = torch.optim.AdamW(param_groups(model, 0.05), lr=1e-4, betas=(0.9, 0.95))
    x = data.images[:batch]

    def step():
        with rt.autocast():
            out = model(x)
        out["loss"].backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(warmup):
        step()
    _sync(device)
    t0 = time.perf_counter()
    for _ in range(iters):
        step()
    _sync(device)
    return batch * iters / (time.perf_counter() - t0)


def achieved_flops_per_s(flops_per_step: float, batch: int, images_per_s: float) -> float:
    """FLOP/s achieved by a training loop doing ``flops_per_step`` per batch of ``batch`` at ``images_per_s``."""
    return flops_per_step / batch * images_per_s


def mfu(flops_per_step: float, batch: int, images_per_s: float, peak_flops_per_s: float) -> float:
    """Model-FLOPs utilisation: achieved FLOP/s (:func:`achieved_flops_per_s`) / ``peak_flops_per_s``."""
    return achieved_flops_per_s(flops_per_step, batch, images_per_s) / peak_flops_per_s


def peak_for(device) -> tuple[float, str]:
    """(peak FLOP/s, where it comes from) for the MFU denominator on ``device``."""
    if device.type == "cuda":
        return cost.H100_PEAK_BF16_FLOPS, "H100 SXM dense bf16 peak, NVIDIA datasheet (maelab.cost)"
    gemm, _ = cost.calibration._matmul()
    return gemm, "this CPU's float32 1024^3 GEMM, best of 20 (maelab.cost)"


def _flops_per_step(model, batch) -> int | None:
    try:
        return cost.step_flops(model, batch).flops
    except Exception:  # noqa: BLE001 - the peer may not run on the meta device; MFU is then left out
        return None


def cuda_missing(device_arg: str) -> str | None:
    """The one-line message when ``device_arg`` asks for CUDA on a machine without it, else None."""
    if str(device_arg).startswith("cuda") and not torch.cuda.is_available():
        return (
            f"train_speed: --device {device_arg} needs a CUDA GPU, but torch.cuda.is_available() is False on "
            "this machine; run with --device cpu (or on a machine with a GPU)"
        )
    return None


def _git_commit():
    try:
        return (
            subprocess.run(
                ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10
            ).stdout.strip()
            or None
        )
    except Exception:  # noqa: BLE001
        return None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="few iterations (smoke run / CPU)")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    p.add_argument("--configs", nargs="*", default=list(CONFIGS), choices=list(CONFIGS))
    p.add_argument("--iters", type=int, default=None, help="override iterations per measurement")
    p.add_argument("--batch-size", type=int, default=None, help="override batch size for every config")
    p.add_argument("--no-lightly", action="store_true")
    p.add_argument("--out", default=None, help="output JSON (default benchmarks/results/train_speed-...json)")
    args = p.parse_args(argv)

    missing = cuda_missing(args.device)
    if missing:
        print(missing, file=sys.stderr)
        return 2
    device = resolve_device(args.device)
    peak, peak_source = peak_for(device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    import timm
    from timm.layers import use_fused_attn

    try:
        from importlib.metadata import version as _v

        import lightly  # noqa: F401

        lightly_version = None if args.no_lightly else _v("lightly")
    except ImportError:
        lightly_version = None
    plan = PLAN[(device.type, args.quick)]
    now = dt.datetime.now(dt.UTC)
    result = {
        "benchmark": "train_speed",
        "provenance": {
            "date_utc": now.isoformat(timespec="seconds"),
            "device": device_name(device),
            "device_type": device.type,
            "torch": torch.__version__,
            "timm": timm.__version__,
            "maelab": maelab.__version__,
            "lightly": lightly_version,
            "python": platform.python_version(),
            "platform": platform.platform(),
            "torch_threads": torch.get_num_threads(),
            "cuda": torch.version.cuda if device.type == "cuda" else None,
            "git_commit": _git_commit(),
            "argv": sys.argv[1:] if argv is None else list(argv),
            "quick": args.quick,
            "amp": "bf16 autocast" if device.type == "cuda" else "off (float32)",
            "fused_attention": bool(use_fused_attn()),
            "tf32": device.type == "cuda",
            "peak_flops_per_s": peak,
            "peak_source": peak_source,
        },
        "units": "images per second (training: forward + backward + AdamW step); mfu = model FLOPs (forward + "
        "backward, maelab.cost.step_flops) per second / peak_flops_per_s",
        "results": {},
    }
    for name in args.configs:
        spec = CONFIGS[name]
        batch, iters = plan[name]
        batch = args.batch_size or batch
        iters = args.iters or iters
        row = {"batch_size": batch, "iters": iters}
        m = _maelab_model(spec)
        row["image"] = [m.in_chans, m.img_size, m.img_size]
        row["patch_size"] = m.patch_size
        data = _Data(batch * iters, m.in_chans, m.img_size, device)
        entries = {"maelab": lambda spec=spec: _maelab_model(spec)}
        if lightly_version:
            entries["lightly"] = lambda spec=spec: _lightly_model(_maelab_model(spec))
        else:
            row["lightly"] = "skipped: lightly not importable (see benchmarks/README.md)"
        for who, make in entries.items():
            mod = make()
            row.setdefault("params", {})[who] = sum(q.numel() for q in mod.parameters() if q.requires_grad)
            t_tr = bench_trainer(mod, data, batch, device)
            t_bare = bench_bare(make(), data, batch, iters, max(1, min(3, iters)), device)
            fl = _flops_per_step(make(), batch)
            row[who] = {
                "trainer_images_per_s": round(t_tr, 2),
                "bare_images_per_s": round(t_bare, 2),
                "flops_per_step": fl,
                "trainer_mfu": None if fl is None else mfu(fl, batch, t_tr, peak),
                "bare_mfu": None if fl is None else mfu(fl, batch, t_bare, peak),
            }
            shown = (
                ""
                if fl is None
                else f"   MFU trainer {100 * row[who]['trainer_mfu']:.2f} % bare {100 * row[who]['bare_mfu']:.2f} %"
            )
            print(
                f"{name:12s} {who:8s} B={batch:<5d} trainer {t_tr:10.1f} img/s   bare {t_bare:10.1f} img/s{shown}",
                flush=True,
            )
            del mod
            if device.type == "cuda":
                torch.cuda.empty_cache()
        if "lightly" in row and isinstance(row["lightly"], dict):
            row["maelab_over_lightly_trainer"] = round(
                row["maelab"]["trainer_images_per_s"] / row["lightly"]["trainer_images_per_s"], 3
            )
        result["results"][name] = row
    out = (
        Path(args.out)
        if args.out
        else ROOT
        / "results"
        / (f"train_speed-{device.type}{'-quick' if args.quick else ''}-{now.strftime('%Y%m%dT%H%M%SZ')}.json")
    )
    with atomic_path(out) as tmp:
        Path(tmp).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
