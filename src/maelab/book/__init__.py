"""The book: notebook context, findings boxes and the scoreboard, papermill runner, plan and Jupyter Book build.

In a notebook::

    # parameters cell (tagged "parameters"): the run options, which the runner replaces by one papermill parameter
    # (maelab.options.RunOptions as a dict), and the page's own parameters, which -p NAME=VALUE sets
    run_options = {"profile": "cpu", "seed": 0, "device": "auto", "recompute": False, "progress": None}
    mask_ratio = None
    # next cell (input removed): the page's findings box from its stored claims record, redrawn by ctx.finish()
    from maelab import book; book.show_findings("masking", run_options)
    # next cell
    ctx = maelab.book.setup("masking", run_options, mask_ratio=mask_ratio)  # one-line error for a bad value
    res = ctx.load_or_compute("spectra", config, fn)   # results as data, with provenance
    ctx.claim("bisulco.eq19_21_sinc", Evidence(...), res)
    ctx.finish()                                        # stores claim evidence, shows provenance

From the shell (``make book`` does both)::

    python -m maelab.book run --profile auto [--only masking] [--recompute] [--seed 0] [-p mask_ratio=0.3]
                              [--no-compute] [--results-dir DIR] [--device auto] [--progress auto|on|off]
    python -m maelab.book build [--strict]

``--profile auto`` runs each notebook with the best profile that has committed results (gpu > cpu), else cpu.

A GPU profile without a GPU::

    python -m maelab.book run --profile gpu --dry-run   # every notebook, the gpu settings, 2 steps per run, on CPU
    python -m maelab.book plan --profile gpu            # predicted H100 and CPU minutes per notebook

The command line becomes one frozen :class:`maelab.options.RunOptions` that each kernel receives as its
``run_options`` parameter; the page's :class:`Context` holds it and hands the library explicit arguments
(``ctx.caps``, ``ctx.root``). ``--dry-run`` (``RunOptions.dry_run``, :class:`maelab.options.DryRunLimits`) executes
the notebooks with the profile's exact models, data and code paths but caps every training run at a couple of
optimiser steps and every evaluation at a few images; results and checkpoints go to a temp folder, claims are not
scored. ``--profile gpu`` on a machine without CUDA is refused with the predicted duration on this CPU unless
``--force-cpu`` is given. No environment variable turns a run into a dry run, and the store never writes a dry
run's results outside its temp folder. ``plan`` is the one plan command (``python -m maelab.cost`` only
calibrates).

``build`` refuses failed notebooks, notebooks showing an error, and stale ones: an executed notebook older than its
source ``notebooks/NAME.md``, its settings module or a file of the results folder it read (modification times;
the scoreboard: every claims record), in one line naming each notebook and what is newer.

Layout (one concern per module, as :mod:`maelab.train`; this package re-exports the public API):

* :mod:`~maelab.book.context`: :class:`Context` and :func:`setup`, what every kernel imports; the claims record's
  tolerance (``claims_difference``) and :func:`page_provenance`.
* :mod:`~maelab.book.scoreboard`: the scoreboard as data (:func:`collect_claims`, :func:`verdict_counts`,
  :func:`kind_counts`, :func:`format_value`, the papers of the installed registry).
* :mod:`~maelab.book.render`: findings boxes, scoreboard tables, the verdicts figure and settings tables, as HTML;
  the style sheet is the package file ``static/findings.css``, read when a box is rendered.
* :mod:`~maelab.book.toc`: notebook order (``_toc.yml``), the section of a page that records each claim, a page's
  declared parameters.
* :mod:`~maelab.book.runner`: papermill (:func:`run`, :func:`run_notebook`, ``run_dry``).
* :mod:`~maelab.book.plan`: the plan (cost model per notebook) and the stored plan tables.
* :mod:`~maelab.book.builder`: the Jupyter Book build (``stage``, :func:`build`).
* :mod:`~maelab.book.cli` and ``__main__``: ``python -m maelab.book``.

A kernel imports only the first four: importing ``maelab.book`` loads no papermill, nbformat or argparse (the
runner's, build's, plan's and command line's names are attributes loaded on first use;
``tests/test_book_package.py`` checks it in a fresh interpreter).

The papers come from the paper registry installed at the top (:mod:`maelab.registry`): ``python -m maelab.book``
installs it in ``__main__``, and the runner gives every kernel a first cell that installs it there (tagged
``injected-registry``, hidden on the page). No other module of this package imports a paper.
"""

from __future__ import annotations

from typing import Any

from . import scoreboard as _scoreboard
from .context import Context, EvidenceChanged, GpuUnavailable, page_provenance, setup
from .render import (
    findings,
    findings_summary,
    paper_findings,
    plot_verdict_counts,
    scoreboard_table,
    settings_table,
    show_findings,
)
from .scoreboard import (
    collect_claims,
    format_value,
    kind_counts,
    paper_label,
    papers,
    verdict_counts,
)
from .toc import NotebookFailed, notebooks_in_order

#: The verdicts a claim can show, in the order the scoreboard counts and colours them.
VERDICT_ORDER = _scoreboard.VERDICT_ORDER
#: The scoreboard's verdict of a row of kind "identity" whose check holds (shown, never counted as support).
IDENTITY = _scoreboard.IDENTITY
#: The scoreboard's verdict of a claim with no stored evidence.
NOT_MEASURED = _scoreboard.NOT_MEASURED
#: The scoreboard's verdict of a claim whose stored claims record cannot be trusted (checksum, format).
RECORD_ERROR = _scoreboard.RECORD_ERROR

_TOOL_MODULES = ("runner", "builder", "plan", "cli")  # the command side: never imported by a kernel
#: the other names of the submodules reachable here (``maelab.book.NAME``), loaded on first use by
#: :func:`__getattr__`: name -> submodule
_ELSEWHERE = {
    "ParameterError": "context",  # maelab.ParameterError, what every bad argument raises
    "claims_difference": "context",
    "CLAIMS_RTOL": "context",
    "CLAIMS_ATOL": "context",
    "DRY_RUN_VERDICT": "context",
    "RunOptions": "context",  # maelab.options.RunOptions, what setup and the runner take
    "verdict_badge": "render",
    "VERDICT_COLORS": "render",
    "PAPER_VALUE": "scoreboard",
    "LAST": "toc",
    "claim_sections": "toc",
    "notebook_parameters": "toc",
    "run": "runner",
    "run_dry": "runner",
    "run_notebook": "runner",
    "check_parameters": "runner",
    "parse_parameter": "runner",
    "choose_profile": "runner",
    "stage": "builder",
    "build": "builder",
    "plan_table": "plan",
    "plan_command": "plan",
    "predicted_minutes": "plan",
    "gpu_on_cpu_message": "plan",
    "PLAN_NOTEBOOK": "plan",
    "PLAN_PROFILES": "plan",
    "main": "cli",
}

__all__ = [
    # a page's context
    "setup",
    "Context",
    "page_provenance",
    "settings_table",
    "EvidenceChanged",
    "GpuUnavailable",
    # findings and the scoreboard
    "show_findings",
    "findings",
    "paper_findings",
    "findings_summary",
    "collect_claims",
    "verdict_counts",
    "kind_counts",
    "scoreboard_table",
    "plot_verdict_counts",
    "paper_label",
    "papers",
    "format_value",
    "VERDICT_ORDER",
    "IDENTITY",
    "NOT_MEASURED",
    "RECORD_ERROR",
    # the tools (python -m maelab.book)
    "notebooks_in_order",
    "run",
    "run_notebook",
    "build",
    "main",
    "NotebookFailed",
]


def _submodule(where: str):
    from . import context, render, scoreboard, toc

    if where in _TOOL_MODULES:
        from . import builder, cli, plan, runner

        return {"runner": runner, "builder": builder, "plan": plan, "cli": cli}[where]
    return {"context": context, "render": render, "scoreboard": scoreboard, "toc": toc}[where]


def __getattr__(name: str) -> Any:
    """The submodules' other names (:data:`_ELSEWHERE`); those of the command side (runner, plan, build, command
    line) are imported when first asked for, so that a notebook kernel importing this package never loads
    papermill, nbformat or argparse."""
    where = _ELSEWHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_submodule(where), name)


def __dir__() -> list[str]:
    """The names here and those loaded on first use (for completion)."""
    return sorted(set(globals()) | set(_ELSEWHERE))
