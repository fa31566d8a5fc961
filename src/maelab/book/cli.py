"""``python -m maelab.book run | plan | build | list``: the book's command line (see :mod:`maelab.book`).

:func:`maelab.book.main` expects the paper registry installed (:mod:`maelab.registry`); ``python -m maelab.book``
(``maelab/book/__main__.py``) installs it before calling it. Every error the commands expect is printed as one line
``error: ...`` with exit status 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import store
from .._validate import ParameterError
from ..options import RunOptions
from ..profiles import PROFILE_NAMES
from ..registry import RegistryError
from . import builder, plan, runner, toc
from .context import GpuUnavailable

DESCRIPTION = "The book: execute the notebooks (papermill), price them (plan), build the HTML (Jupyter Book)."


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m maelab.book`` parser: subcommands run, plan, build, list."""
    ap = argparse.ArgumentParser(prog="python -m maelab.book", description=DESCRIPTION)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="execute notebooks through papermill")
    r.add_argument("--profile", default="auto", help="auto (best committed, else cpu) | smoke | cpu | gpu")
    r.add_argument("--only", nargs="*", help="notebook names (leave out to run all; at least one if given)")
    r.add_argument("--recompute", action="store_true", help="ignore stored results")
    r.add_argument("--seed", type=int, default=0, help="the pages' seed (default 0)")
    r.add_argument(
        "--progress",
        choices=("auto", "on", "off"),
        default="auto",
        help="progress bars on stderr (auto: on unless the environment variable CI is set)",
    )
    r.add_argument(
        "-p",
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a notebook parameter (repeatable; VALUE a Python literal), checked before running",
    )
    r.add_argument(
        "--no-compute",
        action="store_true",
        help="fail (StoreMiss) instead of computing a result that is not stored (claims records excepted)",
    )
    r.add_argument("--device", default="auto")
    r.add_argument("--out", type=Path, help="folder for executed notebooks (default _build/executed)")
    r.add_argument("--results-dir", type=Path, help="results root (default data/results; smoke: .cache)")
    r.add_argument(
        "--dry-run",
        action="store_true",
        help="the profile's models, data and code paths on this machine, 2 optimiser steps per training "
        "run and a few images per evaluation; results in a temp folder, claims not scored",
    )
    r.add_argument("--force-cpu", action="store_true", help="let --profile gpu compute on a machine without CUDA")
    r.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="notebooks executed at once, each in its own kernel with cores / jobs math threads unless "
        "OMP_NUM_THREADS is set (default 1; the scoreboard always runs last)",
    )
    q = sub.add_parser("plan", help="predicted cost per notebook (H100 and this CPU; maelab.cost)")
    q.add_argument("--profile", default="gpu", choices=PROFILE_NAMES)
    q.add_argument("--no-memory", action="store_true", help="skip the peak-memory column")
    q.add_argument(
        "--write",
        action="store_true",
        help="also store the machine-independent table in data/results/plan/ (what book/rerun.md shows)",
    )
    q.add_argument("--runs", default=None, help="JSON list of PlannedRun fields instead of the notebooks' plans")
    b = sub.add_parser("build", help="build the HTML book from executed notebooks")
    b.add_argument("--executed", type=Path)
    b.add_argument("--out", type=Path, help="output root (html goes to OUT/_build/html)")
    b.add_argument("--strict", action="store_true", help="-W -n --keep-going")
    sub.add_parser("list", help="list notebooks in build order")
    return ap


def run_options(a: argparse.Namespace) -> RunOptions:
    """The one :class:`maelab.options.RunOptions` of a ``run`` command line (checked field by field: a bad value is
    a one-line error naming it). ``--dry-run`` adds its caps in ``maelab.book.runner.run_dry``."""
    return RunOptions(
        profile=a.profile,
        seed=a.seed,
        device=a.device,
        recompute=a.recompute,
        progress={"auto": None, "on": True, "off": False}[a.progress],
        results_root=str(a.results_dir.resolve()) if a.results_dir else None,
        no_compute="on" if a.no_compute else None,
        allow_cpu=a.force_cpu,
    )


def _run(a: argparse.Namespace) -> None:
    params = dict(runner.parse_parameter(t) for t in a.param)
    if a.dry_run and (a.results_dir or a.no_compute or a.recompute):
        raise ParameterError(
            "--dry-run",
            "used without --results-dir, --no-compute and --recompute (a dry run computes everything in a temp folder)",
            "--dry-run",
        )
    options = run_options(a)
    if a.dry_run:
        runner.run_dry(options, a.only, a.out, extra=params, jobs=a.jobs)
        print("[book] dry run passed", flush=True)
    else:
        runner.run(options, a.only, a.out, params, jobs=a.jobs)


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default: the command line) and run the command; 0 on success, 1 after a one-line error."""
    a = build_parser().parse_args(argv)
    try:
        if a.cmd == "run":
            _run(a)
        elif a.cmd == "plan":
            plan.plan_command(a.profile, memory=not a.no_memory, write=a.write, runs_file=a.runs)
        elif a.cmd == "build":
            builder.build(a.executed, a.out, a.strict)
        else:
            print("\n".join(toc.notebooks_in_order()))
    except (toc.NotebookFailed, GpuUnavailable, ParameterError, RegistryError, store.StoreError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0
