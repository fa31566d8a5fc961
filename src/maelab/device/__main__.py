"""``python -m maelab.device pack | run | calibrate | progress`` (see :mod:`maelab.device`; the import is
``python -m maelab.store import ARCHIVE``).

An entry point, as ``python -m maelab.book`` is: it installs the paper registry (``papers.install()``, see
:mod:`maelab.registry`) that pack (the notebooks' settings), run (each program's injected registry cell), calibrate
and progress (the planned runs) read.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from maelab import papers

from .. import store
from .._validate import ParameterError
from ..profiles import COMMITTED_PROFILES
from ._common import PACK_DIR, DeviceError


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m maelab.device", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack", help="fill the carried folder (here)")
    p.add_argument("notebooks", nargs="+", metavar="NOTEBOOK")
    p.add_argument("--profile", default="gpu", choices=COMMITTED_PROFILES)
    p.add_argument("--out", type=Path, default=None, help=f"the carried folder (default {PACK_DIR}/)")
    p.add_argument("--datasets", nargs="*", default=None, help="fetched datasets to carry (default: all named)")
    p.add_argument("--no-wheels", action="store_true", help="carry no wheels (a dry run here needs none)")
    p.add_argument(
        "--trim", action="store_true", help="carry only the rows of each dataset the notebooks read (traced here first)"
    )
    r = sub.add_parser("run", help="compute pending results until the budget, archive them (on the lent machine)")
    r.add_argument("notebooks", nargs="*", metavar="NOTEBOOK", help="default: the pack's, in its order")
    r.add_argument("--profile", default="gpu", choices=COMMITTED_PROFILES)
    r.add_argument("--budget-min", type=float, default=8.0, help="minutes of computing (default 8)")
    r.add_argument("--out", type=Path, required=True, help="folder for the archive and its log")
    r.add_argument("--pack", type=Path, default=None, help=f"the carried folder (default {PACK_DIR}/)")
    r.add_argument("--device", default="auto")
    r.add_argument("--dry-run", action="store_true", help="the dry-run caps, results in a temp folder")
    r.add_argument(
        "--calibrate",
        action="store_true",
        help="first time the gpu profile's training steps (unless a stored calibration is this device's for this plan)",
    )
    r.add_argument("--results-dir", type=Path, default=None, help="results root (default data/results)")
    r.add_argument(
        "--train-workers", type=int, default=None, help="pre-training processes (maelab.prefetch; default 8 on CUDA)"
    )
    c = sub.add_parser("calibrate", help="time the gpu profile's training steps, store the throughput")
    c.add_argument("--device", default="auto")
    c.add_argument("--iters", type=int, default=None, help="steps per timed epoch (default 30)")
    c.add_argument("--results-dir", type=Path, default=None, help="results root (default data/results)")
    g = sub.add_parser("progress", help="per notebook: results stored, complete or not, minutes left")
    g.add_argument("--profile", default="gpu", choices=COMMITTED_PROFILES)
    g.add_argument("--only", nargs="*", default=None)
    g.add_argument("--results-dir", type=Path, default=None)
    return ap


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    try:
        if a.cmd == "pack":
            from .pack import pack

            pack(a.notebooks, profile=a.profile, out=a.out, datasets=a.datasets, wheels=not a.no_wheels, trim=a.trim)
        elif a.cmd == "run":
            from .archive import summary
            from .runner import run

            _, manifest = run(
                a.notebooks,
                out=a.out,
                pack_dir=a.pack,
                profile=a.profile,
                budget_min=a.budget_min,
                device=a.device,
                dry_run=a.dry_run,
                calibrate=a.calibrate,
                results_dir=a.results_dir,
                train_workers=a.train_workers,
            )
            print(summary(manifest), end="", flush=True)
            return 1 if any(o["status"] == "failed" for o in manifest["run"]["notebooks"].values()) else 0
        elif a.cmd == "calibrate":
            from .calibrate import ITERS, calibrate

            res = calibrate(device=a.device, iters=a.iters or ITERS, root=a.results_dir)
            print(f"[calibrate] stored {res.path}")
        else:
            import pandas as pd

            from .progress import progress

            with pd.option_context("display.width", 200, "display.max_columns", 20):
                print(progress(a.profile, notebooks=a.only, root=a.results_dir).to_string(index=False))
    except (DeviceError, ParameterError, store.StoreError) as e:
        print(f"error: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    papers.install()
    sys.exit(main())
