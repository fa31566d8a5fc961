"""Command line: ``python -m maelab.train`` (also under ``torchrun --nproc_per_node=K -m maelab.train``).

Loads a dataset with :func:`maelab.data.load`, builds a model with :func:`maelab.models.create`, initialises
``torch.distributed`` from the environment when launched by ``torchrun`` and pre-trains with
:func:`maelab.train.train`; rank 0 prints the last history records and optionally writes the history as JSON.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

from .._util import atomic_path
from .._validate import ParameterError
from .checkpoint import default_checkpoint_dir
from .config import AMP_CHOICES, TrainConfig
from .distributed import _dist_active, _init_distributed_from_env, is_main_process
from .pretrain import train


def _parse_overrides(items: Sequence[str]) -> dict:
    out = {}
    for item in items or ():
        if "=" not in item:
            raise ParameterError("--set", "KEY=VALUE", item)
        k, v = item.split("=", 1)
        try:
            out[k] = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            out[k] = v
    return out


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m maelab.train``."""
    p = argparse.ArgumentParser(
        prog="python -m maelab.train",
        description="Pre-train a maelab model (MAE, U-MAE, SimMIM, U-SimMIM) with the official MAE recipe. "
        "Works on CPU, one GPU, or several through `torchrun --nproc_per_node=K -m maelab.train ...` "
        "(batch size is per process).",
    )
    p.add_argument("--dataset", required=True, help="name for maelab.data.load (e.g. cifar10)")
    p.add_argument("--num-train", type=int, default=None, help="training images (data.load n=; default all)")
    p.add_argument("--num-eval", type=int, default=None, help="test images for the online probe (default all)")
    p.add_argument("--no-eval", action="store_true", help="skip the online probe's test evaluation")
    p.add_argument("--model", default="mae", help="mae | umae | simmim | usimmim")
    p.add_argument("--size", default="micro", help="micro | small | vit_tiny | vit_base")
    p.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="model overrides for maelab.models.create, e.g. --set patch_size=4 lambda_unif=0.01",
    )
    p.add_argument("--epochs", type=int, default=TrainConfig.epochs)
    p.add_argument("--batch-size", type=int, default=TrainConfig.batch_size, help="per process")
    p.add_argument("--blr", type=float, default=TrainConfig.blr)
    p.add_argument("--lr", type=float, default=None, help="absolute peak lr (overrides --blr)")
    p.add_argument("--min-lr", type=float, default=TrainConfig.min_lr)
    p.add_argument("--warmup-epochs", type=float, default=TrainConfig.warmup_epochs)
    p.add_argument("--weight-decay", type=float, default=TrainConfig.weight_decay)
    p.add_argument("--clip-grad", type=float, default=None)
    p.add_argument("--mask-ratio", type=float, default=None, help="default: the model's")
    p.add_argument("--amp", default="auto", choices=AMP_CHOICES)
    p.add_argument("--augment", action="store_true", help="random resized crop + flip")
    p.add_argument("--no-probe", action="store_true", help="disable the online linear probe")
    p.add_argument("--probe-bn", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto")
    p.add_argument("--checkpoint-dir", default=None, help="folder for last.pt")
    p.add_argument("--name", default=None, help="checkpoint folder default_checkpoint_dir(NAME)")
    p.add_argument("--checkpoint-every", type=int, default=1)
    p.add_argument("--checkpoint-every-iters", type=int, default=None)
    p.add_argument("--no-resume", action="store_true")
    p.add_argument("--history-out", default=None, help="write the history as JSON here (rank 0, atomically)")
    p.add_argument("--no-progress", action="store_true")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return _main(args)
    except ParameterError as exc:  # bad input, or a checkpoint of another model / configuration: one line
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _main(args: argparse.Namespace) -> int:
    started = _init_distributed_from_env(args.device)
    try:
        from .. import data as mdata
        from .. import models as mmodels

        cfg = TrainConfig(
            epochs=args.epochs,
            batch_size=args.batch_size,
            blr=args.blr,
            lr=args.lr,
            min_lr=args.min_lr,
            warmup_epochs=args.warmup_epochs,
            weight_decay=args.weight_decay,
            clip_grad=args.clip_grad,
            amp=args.amp,
            mask_ratio=args.mask_ratio,
            seed=args.seed,
            augment=args.augment,
            online_probe=False if args.no_probe else None,
            probe_bn=args.probe_bn,
            checkpoint_every=args.checkpoint_every,
            checkpoint_every_iters=args.checkpoint_every_iters,
        )
        train_set = mdata.load(args.dataset, "train", n=args.num_train, seed=args.seed)
        eval_set = None
        if not args.no_eval and not args.no_probe and train_set.labels is not None:
            eval_set = mdata.load(args.dataset, "test", n=args.num_eval, seed=args.seed)
        overrides = _parse_overrides(args.set)
        overrides.setdefault("img_size", int(train_set.images.shape[-1]))
        overrides.setdefault("in_chans", int(train_set.images.shape[1]))
        overrides.setdefault("seed", args.seed)  # reproducible initialisation, identical on every rank
        model = mmodels.create(args.model, args.size, **overrides)
        ckdir = args.checkpoint_dir or (default_checkpoint_dir(args.name) if args.name else None)
        res = train(
            model,
            train_set,
            cfg,
            eval_data=eval_set,
            checkpoint_dir=ckdir,
            resume=not args.no_resume,
            device=args.device,
            progress=False if args.no_progress else None,
        )
        if is_main_process():
            for h in res.history[-3:]:
                print(json.dumps(h))
            if args.history_out:
                with atomic_path(args.history_out) as tmp:
                    Path(tmp).write_text(
                        json.dumps(
                            {
                                "config": cfg.to_dict(),
                                "history": res.history,
                                "world_size": torch.distributed.get_world_size() if _dist_active() else 1,
                            },
                            indent=1,
                        )
                    )
    finally:
        if started:
            torch.distributed.destroy_process_group()
    return 0
