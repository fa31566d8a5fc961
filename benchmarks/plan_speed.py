"""Wall time of the plan command, ``python -m maelab.book plan --profile P``, with and without the counts cache.

Issue 23 asks for the gpu plan in at most 30 s on 2 cores. A plan prices every notebook's planned runs; its time is
the counting of FLOPs, ops and memory per model shape (:mod:`maelab.cost.cache`), which is cached in the process and
in ``.cache/cost/counts-<fingerprint>.json``. For each profile the command runs twice in a fresh process:

* **cold**: a fresh cache folder (``MAELAB_CACHE`` pointing at a temp folder) holding only a copy of this machine's
  CPU calibration, so every count is made (what the first plan after a change to a model or to the counting code
  costs);
* **warm**: the same folder again, every count read from the counts file (every later plan).

Each run is timed end to end (wall seconds and the child's user + system CPU seconds, which the machine's other jobs
disturb less), and the two outputs are compared: a warm plan must print the same table as a cold one. The real
``.cache`` is not touched. Needs the CPU calibration cached (``python -m maelab.cost calibrate``).

Results are printed and written (atomically) to ``benchmarks/results/plan_speed-cpu-<utc>.json`` with provenance.

Usage::

    python benchmarks/plan_speed.py                       # smoke, cpu and gpu
    python benchmarks/plan_speed.py --profiles gpu
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

import maelab
from maelab import cost
from maelab._util import atomic_path, device_name
from maelab.profiles import PROFILE_NAMES

ROOT = Path(__file__).resolve().parent
REPO = ROOT.parent


def _git_commit():
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def timed_plan(profile: str, cache_root: Path) -> dict:
    """One ``python -m maelab.book plan --profile profile`` in a fresh process with ``MAELAB_CACHE=cache_root``:
    wall and child CPU seconds, exit code and output."""
    env = {**os.environ, "MAELAB_CACHE": str(cache_root)}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "maelab.book", "plan", "--profile", profile],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "rc": proc.returncode, "out": proc.stdout + proc.stderr}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profiles", nargs="+", default=list(PROFILE_NAMES), choices=PROFILE_NAMES)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    calibration = cost.calibration_path()
    if not calibration.exists():
        print(f"no cached CPU calibration at {calibration}: run python -m maelab.cost calibrate first", file=sys.stderr)
        return 2
    result = {
        "benchmark": "plan_speed",
        "provenance": {
            "date_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "device": device_name("cpu"),
            "cpu_count": os.cpu_count(),
            "torch": torch.__version__,
            "maelab": maelab.__version__,
            "python": platform.python_version(),
            "git_commit": _git_commit(),
            "argv": sys.argv[1:],
            "load_average_before": os.getloadavg(),
            "counts_fingerprint": cost.cache.fingerprint(),
        },
        "results": [],
    }
    for profile in args.profiles:
        with tempfile.TemporaryDirectory(prefix="plan_speed-") as tmp:
            (Path(tmp) / "cost").mkdir()
            shutil.copy2(calibration, Path(tmp) / "cost" / calibration.name)
            cold = timed_plan(profile, Path(tmp))
            warm = timed_plan(profile, Path(tmp))
        row = {
            "profile": profile,
            "cold_wall_s": cold["wall_s"],
            "cold_cpu_s": cold["cpu_s"],
            "warm_wall_s": warm["wall_s"],
            "warm_cpu_s": warm["cpu_s"],
            "ok": cold["rc"] == 0 and warm["rc"] == 0,
            "same_output": cold["out"] == warm["out"],
        }
        if not row["ok"]:
            row["error"] = (cold["out"] if cold["rc"] else warm["out"])[-2000:]
        result["results"].append(row)
        print(
            f"{profile:5s} cold {row['cold_wall_s']:6.1f} s wall ({row['cold_cpu_s']:5.1f} s CPU)   "
            f"warm {row['warm_wall_s']:6.1f} s wall ({row['warm_cpu_s']:5.1f} s CPU)   "
            f"{'ok' if row['ok'] else 'FAILED'}, {'same output' if row['same_output'] else 'OUTPUT DIFFERS'}",
            flush=True,
        )
    result["provenance"]["load_average_after"] = os.getloadavg()
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = Path(args.out) if args.out else ROOT / "results" / f"plan_speed-cpu-{stamp}.json"
    with atomic_path(out) as tmp:
        tmp.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(f"wrote {out}")
    return 0 if all(r["ok"] for r in result["results"]) else 1


if __name__ == "__main__":
    sys.exit(main())
