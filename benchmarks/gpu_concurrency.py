"""Aggregate training throughput of N trainer processes sharing one GPU.

The question it answers: can a gpu installment train several of a notebook's runs at once? The lent H100's first
calibration (``data/results/plan/gpu_calibration.gpu.json``, issue 25) timed ViT-Tiny at 28 px, batch 256, at
46 ms per optimiser step: 1,752 kernels, about 26 microseconds each, 0.55 % of the card's bf16 peak. The step is
bound by the host's Python dispatch, not by the GPU, so N processes, each dispatching its own model's steps, may
share the card with little loss each.

For each N in ``--procs`` (in the order given), :func:`maelab.device.calibrate.measure_pool`: N spawned processes
(one torch thread each) each time the same workload with the real trainer (:func:`maelab.device.calibrate.measure`:
bf16 autocast, fused AdamW, the online probe; two epochs of ``--iters`` steps on random images held on the device,
the second epoch timed). The workload
is the gpu plan's calibration workload whose label is ``--label`` (:func:`maelab.device.calibrate.workloads`). Each
process first runs a short warm-up measurement (CUDA context, kernels, allocator), then all meet at a barrier and
run the timed one. Reported per N: each process's images/s in its timed epoch, their sum (the aggregate while all
ran), and a conservative wall-clock aggregate (every image of the timed measurement, both epochs, over the span from
the barrier to the last process's end, model building included). ``speedup``: the sum over N=1's images/s. (The
run of 2026-11-27 also kept each process's images/s, ``images_per_s_each``; the library function now returns the
sum only.) An installment's ``--calibrate`` now makes the same measurement at 1 and 8 processes and stores it for
the cost model (the calibration's ``pool`` table).

Results are printed and written (atomically) after every N to ``--out`` (default
``benchmarks/results/gpu_concurrency-<device>-<utc>.json``), so a run stopped at its time limit keeps what it
measured.

Usage (on the lent machine; maelab's imports need piq, carried as a wheel)::

    PYTHONPATH=src python3 benchmarks/gpu_concurrency.py --procs 1 8 4 14 2 --out $OUT/gpu_concurrency.json
    PYTHONPATH=src python benchmarks/gpu_concurrency.py --device cpu --procs 1 2 --iters 2   # a check here
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def _workload(label: str | None):
    """The gpu plan's calibration workload labelled ``label``; None: the one with the most planned optimiser steps
    (the one ``maelab.device.calibrate.calibrate`` times side by side)."""
    from maelab import papers

    papers.install()
    from maelab.device.calibrate import workloads

    runs = workloads("gpu")
    if label is None:
        return max(runs, key=lambda r: r.steps * r.repeats)
    for r in runs:
        if r.label == label:
            return r
    raise SystemExit(f"--label: one of {[r.label for r in runs]}, got {label!r}")


def _git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def _start(name: str, device: str, out: str | None):
    """A GPU benchmark's device, output file (``out``, else ``results/<name>-<device type>-<UTC>.json``) and the
    head of its result: its name and provenance (this one's and ``gpu_compile.py``'s)."""
    import torch

    from maelab._util import device_name, resolve_device

    dev = resolve_device(device)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    path = Path(out) if out else ROOT / "results" / f"{name}-{dev.type}-{stamp}.json"
    provenance = {
        "date_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "device": device_name(dev),
        "torch": torch.__version__,
        "cuda": torch.version.cuda or "",
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "git_commit": _git_commit(),
        "argv": sys.argv[1:],
    }
    return dev, path, {"benchmark": name, "provenance": provenance}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--procs", type=int, nargs="+", default=[1, 8, 4, 14, 2])
    p.add_argument("--label", default=None, help="a calibration workload (default: the most planned steps)")
    p.add_argument("--iters", type=int, default=30, help="optimiser steps per timed epoch")
    p.add_argument("--device", default="cuda")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    if any(n < 1 for n in args.procs):
        raise SystemExit(f"--procs: positive process counts, got {args.procs}")
    os.environ["OMP_NUM_THREADS"] = "1"  # inherited by the spawned children before they import torch
    sys.path.insert(0, str(ROOT.parent / "src"))
    import torch

    from maelab._util import atomic_path
    from maelab.device.calibrate import measure_pool

    dev, out, result = _start("gpu_concurrency", args.device, args.out)
    result |= {
        "workload": None,
        "iters": args.iters,
        "results": [],
    }
    run, base = _workload(args.label), None  # resolved once here, handed to the children
    result["workload"] = run.label
    print(f"[gpu_concurrency] {result['provenance']['device']} · torch {torch.__version__} · {run.label}", flush=True)
    for n in args.procs:
        try:
            row = measure_pool(run, n, device=str(dev), iters=args.iters)
        except RuntimeError as e:
            row = {"procs": n, "error": str(e)}
        if "error" not in row:
            base = row["images_per_s_sum"] if n == 1 else base
            row["speedup"] = row["images_per_s_sum"] / base if base else None
            print(
                f"[gpu_concurrency] N={n:2d}: {row['images_per_s_sum']:9,.0f} images/s together "
                f"({row['images_per_s_wall']:9,.0f} by wall clock); {row['seconds']:.1f} s",
                flush=True,
            )
        else:
            print(f"[gpu_concurrency] N={n:2d}: failed: {row['error']}", flush=True)
        result["results"].append(row)
        with atomic_path(out) as tmp:
            tmp.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
