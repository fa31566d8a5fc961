"""``python -m maelab.cost calibrate [--force]``: measure (or show the cached) CPU calibration.

The plan is one command, ``python -m maelab.book plan`` (every notebook's planned runs need the paper registry, which
the book's entry point installs; ``--runs FILE`` plans the runs of a JSON file).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from .calibration import calibrate_cpu


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m maelab.cost calibrate [--force]``: measure (or show the cached) CPU calibration."""
    import pandas as pd

    what = "Cost model: FLOPs, peak memory and predicted minutes of planned training runs, before running them."
    p = argparse.ArgumentParser(prog="python -m maelab.cost", description=what)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("calibrate", help="measure (or show the cached) CPU calibration")
    c.add_argument("--force", action="store_true", help="re-measure even when cached")
    args = p.parse_args(argv)
    with pd.option_context("display.width", 200, "display.max_columns", 30, "display.float_format", "{:.3g}".format):
        cal = calibrate_cpu(force=args.force)
        print(f"{cal.key}; {cal.date_utc}; load average {cal.loadavg[0]:.2f} -> {cal.loadavg[1]:.2f}")
        print(cal.frame().to_string(index=False))
    return 0
