"""Does ``torch.compile`` buy the gpu installments device minutes? Eager against compiled training, 1 and N processes.

The question. The lent H100's calibration timed zhang_umae's ViT-Tiny MAE step (28 px, batch 256) at about 1,750
kernels of ~26 microseconds each, 0.55 % of the card's bf16 peak: a step bound by the host's kernel launches, not by
the GPU. The installments already train 8 runs side by side (:mod:`maelab.prefetch`, 4.8x one process on the H100,
``gpu_concurrency.py``). ``torch.compile`` fuses kernels (layer norms, GELUs, bias adds, the masking's gathers), so
fewer launches per step could raise both one process's and the pool's images per second. Whether it does, what the
compilation costs per process (every run of an installment is a fresh model in one of the pool's processes) and how
far the numbers move are measured here, not assumed. The trainer has the switch (``TrainConfig.compile``, off in
every notebook); nothing turns it on until this has been measured on a lent card.

What it measures, for each of the gpu plan's calibration workloads named by ``--label``
(:func:`maelab.device.calibrate.workloads`; default the one with the most planned optimiser steps, as the
calibration's pool table):

1. ``single``: in this process, eager then compiled, :func:`maelab.device.calibrate.train_timed` (the real trainer,
   bf16 autocast on CUDA, fused AdamW, the online probe; two epochs of ``--iters`` steps on the same random images,
   seed 0) on a model built afresh with the same seed each time: each epoch's seconds and images/s (the compiled
   first epoch includes the compilation), each epoch's mean loss, and then a second compiled model in the same
   process (what a pool worker's next run pays: a cache hit or a recompilation).
2. ``numerics``: how far the compiled run is from the eager one after the same steps: each epoch's loss difference
   and the largest absolute difference of any weight (rounding-level differences, which then grow with training as
   any change of kernels does).
3. ``pool``: :func:`maelab.device.calibrate.measure_pool` at ``--procs`` processes, eager then compiled (each
   process warms up, compiling where compiled, then all time a fresh model side by side).

Each measurement is written (atomically) to ``--out`` as soon as it is made, so a call stopped at its time limit
keeps what it measured; ``--budget-s`` skips the measurements that would start after that many seconds. A
measurement that fails (no C compiler for Triton, a graph break that errors) is stored as its one-line error.

Usage (on the lent machine, after an installment; maelab's imports need piq, carried as a wheel in ``.device``)::

    PYTHONPATH=/tmp/site:src python3 benchmarks/gpu_compile.py --label "mnist mae" --out $OUT/c.json --budget-s 120
    PYTHONPATH=src python benchmarks/gpu_compile.py --device cpu --iters 2 --procs 2   # a check here (~3 min)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
from gpu_concurrency import _start, _workload  # noqa: E402  (the same workload and provenance)


def _single(run, device, iters: int, compile: bool) -> tuple[dict, object]:
    import torch

    from maelab.device.calibrate import train_timed

    torch.manual_seed(0)
    model = run.build()
    t0 = time.perf_counter()
    result = train_timed(run, model, device=device, iters=iters, compile=compile)
    row = {
        "compile": compile,
        "seconds": time.perf_counter() - t0,
        "epoch_seconds": [float(h["seconds"]) for h in result.history],
        "images_per_s": [float(h["images_per_s"]) for h in result.history],
        "loss": [float(h["loss"]) for h in result.history],
    }
    return row, {k: v.detach().float().cpu() for k, v in result.model.state_dict().items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--label", nargs="*", help="calibration workloads, in order (default: the most planned steps)")
    p.add_argument("--iters", type=int, default=30, help="optimiser steps per epoch")
    p.add_argument("--procs", type=int, default=8, help="processes side by side in the pool measurement")
    p.add_argument("--device", default="cuda")
    p.add_argument("--budget-s", type=float, default=float("inf"), help="start no measurement after this")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    if args.iters < 2 or args.procs < 1:
        raise SystemExit(f"--iters: 2 or more, --procs: 1 or more; got {args.iters}, {args.procs}")
    os.environ["OMP_NUM_THREADS"] = "1"  # inherited by the spawned children before they import torch
    sys.path.insert(0, str(ROOT.parent / "src"))
    import torch

    from maelab._util import atomic_path
    from maelab.device.calibrate import measure_pool

    t_start = time.perf_counter()
    dev, out, result = _start("gpu_compile", args.device, args.out)
    result |= {
        "iters": args.iters,
        "procs": args.procs,
        "workloads": [],
        "skipped": [],
    }

    def write():
        with atomic_path(out) as tmp:
            tmp.write_text(json.dumps(result, indent=1) + "\n")

    def step(name: str, fn):
        """``fn()``'s value, or None where the budget is spent or it failed (either is written down)."""
        if time.perf_counter() - t_start > args.budget_s:
            result["skipped"].append(name)
            write()
            return None
        try:
            return fn()
        except Exception as e:  # a failure is a result here
            print(f"[gpu_compile] {name}: failed: {type(e).__name__}: {e}", flush=True)
            return {"failed": name, "error": f"{type(e).__name__}: {e}"[:2000]}

    print(f"[gpu_compile] {result['provenance']['device']} · torch {torch.__version__}", flush=True)
    for label in args.label or [None]:
        run = _workload(label)
        w = {"workload": run.label, "single": [], "numerics": None, "pool": []}
        result["workloads"].append(w)
        weights = {}
        for name, compile in (("eager", False), ("compiled", True), ("compiled again", True)):
            got = step(f"{run.label}: {name}", lambda c=compile, r=run: _single(r, str(dev), args.iters, c))
            if got is None:
                continue
            row, state = got if isinstance(got, tuple) else (got, None)
            w["single"].append({"run": name, **row})
            if state is not None:
                weights.setdefault(name, state)
                speed = ", ".join(f"{x:,.0f}" for x in row["images_per_s"])
                print(
                    f"[gpu_compile] {run.label}: {name}: images/s by epoch {speed}; {row['seconds']:.1f} s", flush=True
                )
            write()
        if "eager" in weights and "compiled" in weights:
            eager, comp = weights["eager"], weights["compiled"]
            by_run = {r["run"]: r["loss"] for r in w["single"] if "loss" in r}
            w["numerics"] = {
                "loss_eager": by_run["eager"],
                "loss_compiled": by_run["compiled"],
                "max_abs_weight_difference": max(float((eager[k] - comp[k]).abs().max()) for k in eager),
                "max_abs_weight": max(float(eager[k].abs().max()) for k in eager),
            }
            write()
        for name, compile in (("pool eager", False), ("pool compiled", True)):
            row = step(
                f"{run.label}: {name}",
                lambda c=compile, r=run: measure_pool(r, args.procs, device=str(dev), iters=args.iters, compile=c),
            )
            if row is None:
                continue
            w["pool"].append({"run": name, **row})
            if "error" not in row:
                print(f"[gpu_compile] {run.label}: {name}: {row['images_per_s_wall']:,.0f} images/s by wall clock")
            write()
    print(f"wrote {out} ({time.perf_counter() - t_start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
