"""Re-time the training configurations of the committed cpu results against the cost model's per-step prediction.

Issue 13, item 2: ``scripts/check_cost_model.py`` found the cost model's CPU minutes off by more than x1.5 for some
committed cpu results (zhang_ablations' ``simmim``, bisulco_sweeps' ``depth_grid``, zhang_regime's curves). This
script asks, per configuration, whether that is the model or the machine: it rebuilds the exact planned run of a
committed result (through the check script's own recovery of the stored config), and times on this machine, a few
steps each, interleaved over ``--rounds`` rounds so that a burst of load elsewhere does not fall on one
configuration's whole measurement:

* **bare**: the model's own step (forward + backward + AdamW, float32, as :func:`maelab.cost.calibrate_cpu` times
  its workloads), ``--steps`` steps after 2 warm-up steps: the fastest wall time and the median process CPU time
  (all threads) per step;
* **trainer**: :func:`maelab.train.train` for 2 epochs of ``--steps`` steps on random images of the run's shape
  (online probe on when the committed run had one, as the book runs it); the second epoch's step-loop wall time
  (the trainer's own ``seconds``, the quantity the committed ``train_seconds`` sum) and the process CPU time of
  that epoch, per step.

Each configuration is compared with the model's prediction (:func:`maelab.cost.predict` on the cached calibration)
and, to cancel the machine's load, with the ``micro`` MAE reference step (the calibration's first workload: batch
128, 3 x 32 x 32) timed in the same rounds: if the model is right, ``measured / reference`` equals
``predicted / predicted reference`` whatever the load. It also lists the committed runs' own seconds per step
(median over the runs of that configuration, and their minimum).

On a machine shared with other jobs, time it on one thread (``--threads 1``): a 2-thread step is stalled whenever
another job holds a core (each parallel op waits for the descheduled thread; its wall *and* CPU time grow many-fold),
while one thread on the free core is not; the model's relative predictions are then compared with relative times
measured at one thread, and the absolute times are those of one core.

Results go to ``benchmarks/results/cost_configs-cpu-<utc>.json`` (atomically) with provenance. On a 2-core machine
the default plan takes ~2-3 min of CPU.

Usage::

    PYTHONPATH=src python benchmarks/cost_configs.py [--threads 1] [--rounds 2] [--steps 8] [--configs NAME ...]
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

import maelab
from maelab import cost, paths
from maelab._util import atomic_path
from maelab.train import TrainConfig, train

ROOT = Path(__file__).resolve().parents[1]
RESULTS = paths.committed_results()

#: name -> (notebook, committed result, label of one of its runs): the configurations to re-time.
CONFIGS = {
    "mae_micro": ("zhang_umae", "compare_fashion_mnist", "umae s1"),
    "simmim": ("zhang_ablations", "simmim", "simmim m0.6 {'lambda_unif': 0.0} s0"),
    "usimmim": ("zhang_ablations", "simmim", "usimmim m0.6 {'lambda_unif': 0.01} s0"),
    "depth_enc1_dec8": ("bisulco_sweeps", "depth_grid", "enc1 dec8 p4 m0.75 s0"),
    "depth_enc2_dec4": ("bisulco_sweeps", "depth_grid", "enc2 dec4 p4 m0.75 s0"),
    "depth_enc4_dec8": ("bisulco_sweeps", "depth_grid", "enc4 dec8 p4 m0.75 s0"),
    "depth_enc2_dec1": ("bisulco_sweeps", "depth_grid", "enc2 dec1 p4 m0.75 s0"),
    "patch_p8_m075": ("bisulco_sweeps", "patch_mask_grid", "enc2 dec2 p8 m0.75 s0"),
    "regime_mae": ("zhang_regime", "curves_s0", "mae s0"),
    "jacobians_m080_p8": ("bisulco_jacobians", "mae_m080_p8_s0", "mae_m080_p8_s0"),
}
#: results whose training had no online probe (unlabelled data)
NO_PROBE = {"bisulco_jacobians"}


def _check_module():
    spec = importlib.util.spec_from_file_location("check_cost_model", ROOT / "scripts" / "check_cost_model.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _config(label: str) -> str:
    return label.rsplit(" s", 1)[0]


def planned(check, nb: str, result: str, label: str) -> tuple[cost.PlannedRun, list[float]]:
    """The planned run ``label`` of a committed result, and the committed seconds per step of every run of the same
    configuration (all seeds)."""
    runs, measured = check.RESULTS[nb][0](RESULTS, result)[:2]
    pairs = [(r, m) for r, m in zip(runs, measured) if m is not None]
    run = next(r for r, _ in pairs if r.label == label)
    same = [m / r.steps for r, m in pairs if _config(r.label) == _config(label) and r.steps]
    return run, same


class _Data:
    def __init__(self, n: int, chans: int, size: int, seed: int = 0):
        g = torch.Generator().manual_seed(seed)
        self.images = torch.rand(n, chans, size, size, generator=g)
        self.labels = torch.randint(0, 10, (n,), generator=g)
        self.num_classes = 10


def time_bare(run: cost.PlannedRun, steps: int) -> dict:
    m = run.build().train()
    x = torch.rand(run.batch_size, run.channels, run.img_size, run.img_size, generator=torch.Generator().manual_seed(0))
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(0)

    def step():
        opt.zero_grad(set_to_none=True)
        m(x, mask_ratio=run.mask_ratio, generator=g)["loss"].backward()
        opt.step()

    best, med, cpu = cost.calibration._time_steps(step, 2, steps)
    return {"wall_min_s": best, "wall_median_s": med, "cpu_median_s": cpu}


def time_trainer(run: cost.PlannedRun, steps: int, probe: bool) -> dict:
    marks: list[tuple[float, float]] = []
    cfg = TrainConfig(
        epochs=2, batch_size=run.batch_size, warmup_epochs=0, mask_ratio=run.mask_ratio, online_probe=probe, seed=0
    )
    data = _Data(run.batch_size * steps, run.channels, run.img_size)
    res = train(
        run.build(),
        data,
        cfg,
        device="cpu",
        progress=False,
        callbacks=[lambda epoch, model: marks.append(time.process_time())],
    )
    wall = res.history[-1]["seconds"] / steps
    cpu = (marks[-1] - marks[-2]) / steps
    return {"wall_s": wall, "cpu_s": cpu}


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or None
    except Exception:  # noqa: BLE001
        return None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--configs", nargs="*", default=list(CONFIGS), choices=list(CONFIGS))
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--steps", type=int, default=8, help="timed steps per measurement")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    cal = cost.calibrate_cpu()  # before changing the thread count, which is part of the calibration's key
    if args.threads:
        torch.set_num_threads(args.threads)
    names = ["mae_micro"] + [n for n in args.configs if n != "mae_micro"]
    check = _check_module()
    device = cost.cpu_device(cal)
    runs = {n: planned(check, *CONFIGS[n]) for n in names}
    w0, c0, load0 = time.perf_counter(), time.process_time(), os.getloadavg()[0]
    times: dict[str, dict[str, list[dict]]] = {n: {"bare": [], "trainer": []} for n in names}
    for _ in range(args.rounds):
        for n in names:
            run, _ = runs[n]
            times[n]["bare"].append(time_bare(run, args.steps))
            times[n]["trainer"].append(time_trainer(run, args.steps, CONFIGS[n][0] not in NO_PROBE))
    load1 = os.getloadavg()[0]
    rows = {}
    for n in names:
        run, committed = runs[n]
        c = cost.planning._costs(run)["pre"]
        b, t = times[n]["bare"], times[n]["trainer"]
        rows[n] = {
            "result": "/".join(CONFIGS[n][:2]),
            "run": run.label,
            "model": run.model,
            "size": run.size,
            "overrides": [list(kv) for kv in run.overrides],
            "image": [run.channels, run.img_size, run.img_size],
            "batch_size": run.batch_size,
            "mask_ratio": run.mask_ratio,
            "gflop_per_step": c.flops / 1e9,
            "ops_per_step": c.ops,
            "predicted_s": device.seconds(c.flops, c.ops, "train"),
            "predicted_flop_s": c.flops / device.throughput(c.flops, "train"),
            "predicted_op_floor_s": c.ops * device.op_overhead_s,
            "bare_wall_min_s": min(x["wall_min_s"] for x in b),
            "bare_cpu_median_s": statistics.median(x["cpu_median_s"] for x in b),
            "trainer_wall_min_s": min(x["wall_s"] for x in t),
            "trainer_cpu_median_s": statistics.median(x["cpu_s"] for x in t),
            "committed_median_s": statistics.median(committed),
            "committed_min_s": min(committed),
            "committed_runs": len(committed),
        }
    ref = rows["mae_micro"]
    for r in rows.values():
        for k in ("predicted_s", "bare_wall_min_s", "bare_cpu_median_s", "trainer_wall_min_s", "trainer_cpu_median_s"):
            r[f"{k}_rel"] = r[k] / ref[k]
        r["committed_median_s_rel"] = r["committed_median_s"] / ref["committed_median_s"]
    now = dt.datetime.now(dt.UTC)
    out = {
        "benchmark": "cost_configs",
        "provenance": {
            "date_utc": now.isoformat(timespec="seconds"),
            "cpu": cost.cpu_key(),
            "torch_threads": torch.get_num_threads(),
            "calibration": cal.date_utc,
            "torch": torch.__version__,
            "maelab": maelab.__version__,
            "python": platform.python_version(),
            "git_commit": _git_commit(),
            "argv": sys.argv[1:] if argv is None else list(argv),
            "rounds": args.rounds,
            "steps": args.steps,
            "loadavg": [load0, load1],
            "wall_s": time.perf_counter() - w0,
            "cpu_s": time.process_time() - c0,
        },
        "units": "seconds per training step; *_rel: divided by the same column of mae_micro (the reference step); "
        "committed_*: the committed runs' train_seconds / steps on the machine that computed them",
        "results": rows,
    }
    default = ROOT / "benchmarks" / "results" / f"cost_configs-cpu-{now:%Y%m%dT%H%M%SZ}.json"
    path = Path(args.out) if args.out else default
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(out, indent=1) + "\n")
    cols = [
        "gflop_per_step",
        "ops_per_step",
        "predicted_s",
        "bare_wall_min_s",
        "bare_cpu_median_s",
        "trainer_wall_min_s",
        "trainer_cpu_median_s",
        "committed_median_s",
        "committed_min_s",
    ]
    print(
        f"load average {load0:.2f} -> {load1:.2f}; {out['provenance']['wall_s']:.0f} s wall, "
        f"{out['provenance']['cpu_s']:.0f} s CPU; ms per step (rel: / mae_micro)"
    )
    print(f"{'config':20s} " + " ".join(f"{c[:18]:>18s}" for c in cols))
    for n, r in rows.items():
        vals = []
        for c in cols:
            v = r[c]
            if c.endswith("_s"):
                rel = r.get(f"{c}_rel")
                vals.append(f"{1e3 * v:8.1f}" + (f" ({rel:4.2f})" if rel is not None else "       "))
            else:
                vals.append(f"{v:15.3g}   ")
        print(f"{n:20s} " + " ".join(f"{v:>18s}" for v in vals))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
