"""``python -m maelab.zoo run|status``: compute the whole grid one record at a time, or list what is stored."""

from __future__ import annotations

import argparse
import time

from ..options import RunOptions
from ..profiles import PROFILE_NAMES
from .entries import _jobs, _run, load_entries
from .grid import ZooSettings


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m maelab.zoo", description="Compute or list the shared zoo.")
    ap.add_argument("command", choices=("run", "status"))
    ap.add_argument("--profile", choices=PROFILE_NAMES, default="cpu")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--recompute", action="store_true")
    ap.add_argument("--results-dir", default=None, help="results root (default: the profile's)")
    a = ap.parse_args(argv)
    options = RunOptions(profile=a.profile, device=a.device, recompute=a.recompute, results_root=a.results_dir)
    S = ZooSettings.for_profile(a.profile)
    if a.command == "status":
        got = load_entries(S, a.profile, root=a.results_dir)
        e = got["entries"]
        hours = float(e["train_seconds"].sum()) / 3600 if len(e) else 0.0
        print(
            f"{len(e)} entries stored ({hours:.1f} h of training in all, as each record states it); "
            f"missing: {', '.join(got['missing']) or 'none'}"
        )
        return 0
    for job in _jobs(S):
        t = time.time()
        r = _run(job, S, options)
        print(f"[zoo] {r.name}: {'stored' if r.from_store else 'computed'} ({time.time() - t:.0f} s)", flush=True)
    return 0
