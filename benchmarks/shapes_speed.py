"""Generation speed of ``maelab.data.load("shapes")`` in images per second.

For each (size, channels) configuration the whole ``load`` call is timed (scene factors, rendering, noise,
quantisation, latents including the silhouette masks) for ``--n`` images, ``--repeats`` times after one warm-up;
the median and best are reported. Also timed: ``masks=False`` (no silhouette latent) at the first size. The
target set in the project brief is >= 20,000 images/s at 32x32 on 2 CPU cores.

Results are printed and written (atomically) to ``benchmarks/results/shapes_speed-<device>-<utc>.json`` with
provenance (versions, threads, git commit).

Usage::

    OMP_NUM_THREADS=2 python benchmarks/shapes_speed.py                  # 32x32 RGB and grey, 64x64 RGB
    python benchmarks/shapes_speed.py --threads 1 --sizes 32 --n 20000
"""

from __future__ import annotations

import argparse
import datetime as dt
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
from maelab._util import atomic_path, device_name
from maelab.data import load

ROOT = Path(__file__).resolve().parent


def _git_commit():
    try:
        return (
            subprocess.run(
                ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10
            ).stdout.strip()
            or None
        )
    except (OSError, subprocess.SubprocessError):
        return None


def _time(n: int, repeats: int, **options) -> dict:
    load("shapes", n=min(n, 2048), seed=123, progress=False, **options)  # warm-up
    times = []
    for r in range(repeats):
        t0 = time.perf_counter()
        ds = load("shapes", n=n, seed=r, progress=False, **options)
        times.append(time.perf_counter() - t0)
        assert len(ds) == n
    return {
        "n": n,
        "options": options,
        "seconds": [round(t, 4) for t in times],
        "images_per_s_median": round(n / statistics.median(times), 1),
        "images_per_s_best": round(n / min(times), 1),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=20480, help="images per timed call (default 20480)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--sizes", type=int, nargs="+", default=[32, 64])
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    p.add_argument("--out", default=None, help="output JSON (default benchmarks/results/shapes_speed-...json)")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    result = {
        "benchmark": "shapes_speed",
        "provenance": {
            "date_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "device": device_name("cpu"),
            "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "torch": torch.__version__,
            "maelab": maelab.__version__,
            "python": platform.python_version(),
            "platform": platform.platform(),
            "git_commit": _git_commit(),
            "argv": sys.argv[1:],
        },
        "units": "images per second (whole load('shapes') call, latents and masks included)",
        "target": ">= 20000 images/s at 32x32 on 2 CPU cores",
        "results": [],
    }
    configs = [dict(size=s, channels=3) for s in args.sizes]
    configs.insert(1, dict(size=args.sizes[0], channels=1))
    configs.insert(2, dict(size=args.sizes[0], channels=3, masks=False))
    for cfg in configs:
        n = args.n if cfg["size"] <= 32 else max(512, args.n * 1024 // (cfg["size"] ** 2))
        row = _time(n, args.repeats, **cfg)
        result["results"].append(row)
        print(
            f"size={cfg['size']:4d} channels={cfg['channels']} {'masks=False ' if 'masks' in cfg else ''}"
            f"n={n}: median {row['images_per_s_median']:,.0f} img/s, best {row['images_per_s_best']:,.0f} img/s"
        )
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = Path(args.out) if args.out else ROOT / "results" / f"shapes_speed-cpu-{stamp}.json"
    with atomic_path(out) as tmp:
        tmp.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
