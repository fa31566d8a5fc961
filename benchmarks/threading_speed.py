"""Training throughput under OpenMP wait policies, alone and with a competing process on the machine.

PyTorch's CPU kernels run on GNU OpenMP (libgomp), whose idle threads by default spin before sleeping. When
another process wants the same cores, spinning threads steal its time (and it theirs); ``OMP_WAIT_POLICY=PASSIVE``
makes idle threads sleep at once. libgomp reads the variable when it is loaded, i.e. at ``import torch``, so it
must be in the environment before that: :mod:`maelab` sets it (``os.environ.setdefault``) when it is imported
before torch, and child processes (papermill kernels of the book runner) inherit it.

Each measurement runs in a fresh child process: a bare training loop (forward, backward, AdamW) of
``create("mae", SIZE, img_size=28, in_chans=1)`` (default size ``small``: 128-d, 4 layers) on random 28x28 images,
batch ``--batch-size``, ``--steps`` timed steps after 2 warm-up steps, torch's default thread count. Variants:

* ``policy``: ``default`` (unset, torch imported before maelab, so libgomp's own default), ``PASSIVE``,
  ``ACTIVE`` (set in the child's environment before torch is imported); ``maelab-first``: unset, ``import maelab``
  before ``import torch`` (checks that the library's own default takes effect).
* ``competitor``: none, or one other process running the same loop (libgomp's default policy) for the whole
  measurement.

``--threads 2 1`` repeats every variant with the measured process and the competitor at that many torch threads
(``OMP_NUM_THREADS``): two 1-thread processes side by side against one 2-thread process, the question of how to
run two notebooks on a 2-core machine. ``--size micro --patch-size 7`` is the learning recipe's model.

Results are printed and written (atomically) to ``benchmarks/results/threading_speed-cpu-<utc>.json``.

Usage::

    python benchmarks/threading_speed.py                       # all variants, with and without a competitor
    python benchmarks/threading_speed.py --steps 10 --policies default PASSIVE
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent

CHILD = r"""
import os, sys, time
order = sys.argv[1]
if order == "torch-first":
    import torch, maelab
else:
    import maelab, torch
from maelab import models
size, batch, steps, patch = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
model = models.create("mae", size, img_size=28, in_chans=1, seed=0, **({"patch_size": patch} if patch else {}))
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.rand(batch, 1, 28, 28, generator=torch.Generator().manual_seed(0))
def step():
    out = model(x)
    opt.zero_grad()
    out["loss"].backward()
    opt.step()
for _ in range(2):
    step()
t0 = time.perf_counter()
n = 0
while n < steps or (steps == 0):
    step()
    n += 1
print(batch * n / (time.perf_counter() - t0), os.environ.get("OMP_WAIT_POLICY"), torch.get_num_threads())
"""


def _env(policy: str, threads: int | None = None) -> dict:
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    env.pop("OMP_NUM_THREADS", None)
    if policy in ("PASSIVE", "ACTIVE"):  # "default" and "maelab-first" leave it unset
        env["OMP_WAIT_POLICY"] = policy
    if threads:  # torch's intra-op threads (read at import); None: torch's default (the cores)
        env["OMP_NUM_THREADS"] = str(threads)
    return env


def measure(
    policy: str, competitor: bool, size: str, batch: int, steps: int, threads: int | None = None, patch: int = 0
) -> dict:
    """One measurement; ``threads`` sets the torch threads of the measured process and of the competitor alike."""
    order = "torch-first" if policy in ("default", "PASSIVE", "ACTIVE") else "maelab-first"
    comp = None
    if competitor:
        comp = subprocess.Popen(
            [sys.executable, "-c", CHILD, "torch-first", size, str(batch), "0", str(patch)],
            env=_env("default", threads),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(5)  # let it start training
    try:
        out = subprocess.run(
            [sys.executable, "-c", CHILD, order, size, str(batch), str(steps), str(patch)],
            env=_env(policy, threads),
            capture_output=True,
            text=True,
            check=True,
            timeout=1800,
        ).stdout.split()
    finally:
        if comp is not None:
            comp.terminate()
            comp.wait()
    return {
        "policy": policy,
        "competitor": competitor,
        "images_per_s": round(float(out[0]), 1),
        "child_OMP_WAIT_POLICY": out[1],
        "threads": int(out[2]),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--policies",
        nargs="+",
        default=["default", "PASSIVE", "ACTIVE", "maelab-first"],
        choices=["default", "PASSIVE", "ACTIVE", "maelab-first"],
    )
    p.add_argument("--size", default="small")
    p.add_argument("--patch-size", type=int, default=0, help="patch side on the 28 px images (0: the size's own)")
    p.add_argument(
        "--threads",
        type=int,
        nargs="+",
        default=[0],
        help="torch threads of the measured process and of the competitor (0: torch's default); one pass each",
    )
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    result = {
        "benchmark": "threading_speed",
        "provenance": {
            "date_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "cpu_count": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "argv": sys.argv[1:],
            "load_average_start": os.getloadavg(),
        },
        "results": [],
    }
    for r in range(args.repeats):
        for threads in args.threads:
            for competitor in (False, True):
                for policy in args.policies:
                    row = measure(
                        policy, competitor, args.size, args.batch_size, args.steps, threads or None, args.patch_size
                    )
                    row["repeat"] = r
                    result["results"].append(row)
                    print(
                        f"competitor={competitor!s:5s} policy={policy:12s} -> {row['images_per_s']:8.1f} img/s "
                        f"(child OMP_WAIT_POLICY={row['child_OMP_WAIT_POLICY']}, {row['threads']} threads)",
                        flush=True,
                    )
    result["provenance"]["load_average_end"] = os.getloadavg()
    sys.path.insert(0, str(ROOT.parent / "src"))
    from maelab._util import atomic_path

    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = Path(args.out) if args.out else ROOT / "results" / f"threading_speed-cpu-{stamp}.json"
    with atomic_path(out) as tmp:
        tmp.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
