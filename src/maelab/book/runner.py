"""The runner: every notebook executed through papermill, with its parameters checked first.

``python -m maelab.book run --profile auto [--only NAME ...] [--recompute] [-p NAME=VALUE] [--no-compute]`` (see
:mod:`maelab.book`). The command line becomes one :class:`maelab.options.RunOptions` (made once, frozen); each
kernel gets it as one papermill parameter, ``run_options`` (:meth:`~maelab.options.RunOptions.to_param`, a plain
dict), with the notebook's profile in it: ``--profile auto`` runs each notebook with the best profile that has
committed results (gpu > cpu), else cpu. ``--dry-run`` (``run_dry``) executes the notebooks with the profile's
exact models, data and code paths under the dry-run caps (``RunOptions.dry_run``, :class:`maelab.options.DryRunLimits`):
every training run capped at a couple of optimiser steps and every evaluation at a few images; results and
checkpoints go to a temp folder, claims are not scored. ``--profile gpu`` on a machine without CUDA is refused with
the predicted duration on this CPU unless ``--force-cpu`` is given (``allow_cpu``). No environment variable carries
a run option: an exported ``MAELAB_DRY_RUN`` (the old switch) does nothing, and the store refuses to write a dry
run's results outside its temp folder whatever the caller does.

Each kernel gets the paper registry from the code the installed registry gives (the ``bootstrap`` of
:class:`maelab.registry.PaperRegistry`), injected as a code cell right after the parameters (tagged
``injected-registry`` and ``remove-cell``: kept in the executed notebook, hidden on the page, as papermill's
cell of injected parameters is). papermill and nbformat are imported only when a notebook is executed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from .. import paths, store
from .._util import TMP_PREFIX, resolve_device
from .._validate import ParameterError, folder_path, positive_int
from ..options import DryRunLimits, RunOptions
from ..profiles import COMMITTED_PROFILES, CORE_PARAMS, settings_class, validate_core
from ..registry import installed
from . import freshness
from .context import GpuUnavailable
from .plan import gpu_on_cpu_message
from .toc import LAST, NotebookFailed, notebook_parameters, notebooks_in_order

REGISTRY_TAG = "injected-registry"  # the tag of the cell that installs the paper registry in a kernel


def choose_profile(notebook: str, requested: str, options: RunOptions | None = None) -> str:
    """``requested``, or for "auto" the best profile with committed results for ``notebook`` (gpu > cpu) in the
    results folder of ``options`` (default ``data/results``), else cpu. A gpu result set counts only when it is
    complete (:func:`complete`): installments store a notebook's gpu results one by one, and the book never shows a
    page half on one profile; its claims record is written here, by a run of the page at gpu once every result is
    imported (``python -m maelab.book run --profile gpu --only NAME --no-compute``)."""
    if requested != "auto":
        return requested
    root = store.results_root("cpu", options)
    found = [p for p in store.stored_profiles(notebook, root) if p in COMMITTED_PROFILES]
    return next((p for p in found if p == "cpu" or complete(notebook, p, root)), "cpu")


def complete(notebook: str, profile: str, root: Path) -> bool:
    """Whether the notebook's ``profile`` result set is complete: its claims record is stored (a run of the notebook
    reached its end, here or on a lent machine) and every result that record cites is stored under the config hash
    it cites (a page without claims: every result its run used, :func:`maelab.book.context.used_results`)."""
    try:
        claims = store.load(notebook, "claims", profile, root=root)
        if claims is None:
            return False
        cited = [src for rec in claims["claims"].values() for src in rec.get("sources", [])]
        for src in cited + list(claims.data.get("results", [])):
            nb, _, name = src["name"].rpartition("/")
            got = store.load(nb or notebook, name, profile, root=root)
            if got is None or got.provenance.get("config_hash") != src["config_hash"]:
                return False
    except (store.RecordError, KeyError, TypeError, AttributeError):
        return False
    return True


RUN_OPTIONS = "run_options"  # the one papermill parameter that carries the run options (RunOptions.to_param)
RUNNER_FLAGS = (RUN_OPTIONS, *CORE_PARAMS)  # set by the runner's own options (--profile, --seed, ...), not by -p


def check_parameters(
    name: str, profile: str, params: dict[str, Any], root: Path | None = None, caps: DryRunLimits | None = None
) -> None:
    """Reject, before papermill starts, a parameter that notebook ``name`` does not declare or a bad value.

    Allowed: the names of its ``parameters`` cell other than the run options (``run_options``, set by the
    runner's own options). Values: by the notebook's settings class for ``profile`` (so ``mask_ratio=0`` on the
    masking page fails here, in one line), cut as a dry run with ``caps`` would cut them.
    """
    allowed = [n for n in notebook_parameters(name, root) if n not in RUNNER_FLAGS]
    for k, v in params.items():
        if k not in allowed:
            raise ParameterError(k, f"a parameter of notebook {name!r} (" + ", ".join(allowed) + ")", v)
    settings_class(name).for_profile(profile, caps=caps, **{k: v for k, v in params.items() if v is not None})


def parse_parameter(text: str) -> tuple[str, Any]:
    """``NAME=VALUE`` -> (name, value); VALUE is a Python literal (``ast.literal_eval``), else the plain string."""
    import ast

    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise ParameterError("-p", "NAME=VALUE with NAME an identifier, e.g. -p mask_ratio=0.3", text)
    try:
        return name, ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError):
        return name, raw.strip()


def _options(options: RunOptions | str | None) -> RunOptions:
    """``options`` as a :class:`RunOptions`: a profile's name is ``RunOptions(profile=name)``."""
    if isinstance(options, str):
        return RunOptions(profile=options)
    if options is None:
        return RunOptions()
    if not isinstance(options, RunOptions):
        raise ParameterError("options", "a maelab.options.RunOptions or a profile's name", options)
    return options


def run_notebook(
    name: str,
    options: RunOptions | str,
    out_dir: Path,
    *,
    extra: dict | None = None,
    root: Path | None = None,
) -> Path:
    """Execute notebooks/NAME.md through papermill into out_dir/NAME.ipynb; NotebookFailed names the cell.

    ``options``: the run options the kernel gets as its ``run_options`` parameter (a profile's name: the defaults
    with that profile; not "auto"); ``extra``: the notebook's own parameters. The kernel installs the paper registry
    first (``inject_registry``). The notebook executes into a temp file
    that replaces NAME.ipynb only on success: a failed run keeps the last good executed notebook, leaves its own
    output in NAME.failed.ipynb, and ``stage`` (:mod:`maelab.book.builder`) refuses to build the book until a later run
    of NAME succeeds (which removes NAME.failed.ipynb).
    """
    import jupytext
    import nbformat
    import papermill as pm

    options = _options(options)
    validate_core({"profile": options.profile})
    profile = options.profile
    root = root or paths.repo_root()
    src = root / "notebooks" / f"{name}.md"
    if not src.exists():
        raise ParameterError("notebook", "one of " + ", ".join(notebooks_in_order(root)), name)
    out_dir.mkdir(parents=True, exist_ok=True)
    nb = inject_registry(jupytext.read(src))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    # where this run reads and writes its results: what `build` compares the executed notebook's age against
    results = store.results_root(profile, options).resolve()
    nb.metadata["maelab"] = {"profile": profile, "results_root": str(results)}
    out, failed = out_dir / f"{name}.ipynb", out_dir / f"{name}.failed.ipynb"
    params = {RUN_OPTIONS: options.to_param(), **(extra or {})}
    # a dry run, --recompute and the no-compute "record" mode (which logs what each page reads) always execute
    fresh_ok = not options.recompute and options.dry_run is None and options.no_compute != "record"
    if fresh_ok and out.exists() and not failed.exists():  # unchanged since its last run: not re-executed
        key, ran_with = freshness.recorded_key(out)
        if key is not None and ran_with == params and key == freshness.inputs_key(name, params, results, root):
            print(
                f"[book] {name}: unchanged since its last execution (same source, library, results and "
                f"parameters), not re-executed -> {out}",
                flush=True,
            )
            return out
    inp = out_dir / f"{TMP_PREFIX}.{name}.{os.getpid()}.input.ipynb"
    tmp = out_dir / f"{TMP_PREFIX}.{name}.{os.getpid()}.output.ipynb"
    nbformat.write(nb, inp)
    t0 = time.perf_counter()
    try:
        pm.execute_notebook(
            str(inp),
            str(tmp),
            parameters=params,
            kernel_name="python3",
            cwd=str(root / "notebooks"),
            progress_bar=False,
            log_output=False,
            report_mode=False,
        )
    except Exception as e:
        if tmp.exists():
            os.replace(tmp, failed)
        else:
            failed.write_text("{}\n")  # the marker alone: this notebook's last run failed
        if isinstance(e, pm.PapermillExecutionError):
            evalue = str(e.evalue).splitlines()[0] if str(e.evalue) else ""
            first = next((ln.strip() for ln in (e.source or "").splitlines() if ln.strip()), "")
            first = first if len(first) <= 60 else first[:57] + "..."
            raise NotebookFailed(
                f"notebook {name} (notebooks/{name}.md) failed in cell {e.cell_index} "
                f"(execution count {e.exec_count}, `{first}`): {e.ename}: {evalue}"
            ) from None
        line = str(e).splitlines()[0] if str(e) else ""
        raise NotebookFailed(
            f"notebook {name} (notebooks/{name}.md) could not be executed: {type(e).__name__}: {line}"
        ) from None
    else:
        done = nbformat.read(tmp, as_version=4)  # what it was computed from, after the run wrote its results
        done.metadata.setdefault("maelab", {}).update(
            {freshness.KEY: freshness.inputs_key(name, params, results, root), "params": params}
        )
        nbformat.write(done, tmp)
        os.replace(tmp, out)
        failed.unlink(missing_ok=True)
    finally:
        inp.unlink(missing_ok=True)
        tmp.unlink(missing_ok=True)  # only left after an interrupt (KeyboardInterrupt)
    print(f"[book] {name}: executed with profile={profile} in {time.perf_counter() - t0:.1f} s -> {out}", flush=True)
    return out


def inject_registry(nb):
    """``nb`` with a code cell that installs the paper registry in its kernel (the installed registry's
    ``bootstrap``) right after its ``parameters`` cell (first when it has none),
    tagged :data:`REGISTRY_TAG` and ``remove-cell`` (hidden on the page). A :class:`maelab.registry.RegistryError`
    when no registry is installed in this process: the kernel could not get one either."""
    import nbformat

    cell = nbformat.v4.new_code_cell(installed().bootstrap, metadata={"tags": [REGISTRY_TAG, "remove-cell"]})
    tagged = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])]
    nb.cells.insert(tagged[0] + 1 if tagged else 0, cell)
    return nb


def run(
    options: RunOptions | str = "auto",
    only: list[str] | None = None,
    out_dir: Path | None = None,
    extra: dict | None = None,
    *,
    jobs: int = 1,
) -> list[Path]:
    """Execute notebooks (see :mod:`maelab.book.runner`) with the run ``options`` (a
    :class:`maelab.options.RunOptions`, or a profile's name for the defaults with that profile; profile "auto":
    each notebook's best committed one), the notebooks ``only`` (default: all, in the book's order) into
    ``out_dir`` (default ``_build/executed``); ``extra``: notebook parameters (``-p``). Options with ``dry_run``
    set: ``run_dry``'s run (results in its scratch folder).

    ``jobs``: notebooks executed at once (default 1: one after another; pages other than the scoreboard side by
    side, each in its own kernel, the scoreboard after them; a failure raises the first failed page in plan order)."""
    options = _options(options)
    positive_int("jobs (--jobs)", jobs)
    root = paths.repo_root()
    out_dir = folder_path("out_dir (--out)", out_dir) if out_dir else root / "_build" / "executed"
    if (
        options.profile == "gpu"
        and options.dry_run is None
        and not options.allow_cpu
        and resolve_device(options.device).type != "cuda"
    ):
        raise GpuUnavailable(gpu_on_cpu_message(only or [n for n in notebooks_in_order(root) if n not in LAST]))
    names = notebooks_in_order(root)
    if only is not None and not only:
        raise ParameterError("only", "one or more notebook names (leave --only out to run every notebook)", only)
    if only:
        bad = [n for n in only if n not in names]
        if bad:
            raise ParameterError("only", "notebook names among " + ", ".join(names), bad[0])
        names = [n for n in names if n in only]
    plan = []
    for name in names:
        prof = "cpu" if (options.profile == "auto" and name in LAST) else choose_profile(name, options.profile, options)
        # every notebook checked before the first one runs
        check_parameters(name, prof, extra or {}, root, options.dry_run)
        plan.append((name, options.replace(profile=prof)))
    return _execute(plan, out_dir, extra, root, jobs)


#: the environment variables that set the math libraries' thread counts (torch's intra-op pool, OpenBLAS, MKL)
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


@contextlib.contextmanager
def _kernel_threads(jobs: int):
    """While inside, the kernels started get ``cores // jobs`` math threads (at least 1) through
    :data:`THREAD_VARIABLES`, each variable the caller's environment does not set already; restored after. Without
    it ``jobs`` kernels each start as many threads as there are cores and oversubscribe them: in ``make test``'s gpu
    dry run on 2 cores, ``zhang_umae`` took 516-629 s beside another page, 129 s with one thread each. A record
    computed this way has run on fewer threads, which may round differently from a run with ``jobs`` = 1."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    threads = str(max(1, cores // jobs))
    saved = {k: os.environ.get(k) for k in THREAD_VARIABLES}
    os.environ.update({k: threads for k, v in saved.items() if v is None})
    try:
        yield threads
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)


def _execute(plan: list[tuple[str, RunOptions]], out_dir: Path, extra, root: Path, jobs: int) -> list[Path]:
    """Run the ``(name, options)`` of ``plan`` (:func:`run_notebook`); returns the executed notebooks in plan order.

    With ``jobs`` > 1 the notebooks before those in ``LAST`` (which read the others' results) execute up to
    ``jobs`` at once, each in its own kernel; ``LAST`` then runs after all of them. What makes that safe: two pages
    that need the same result (the shared zoo, a checkpoint) meet at the store's per-result lock, where the second
    waits and loads what the first stored (:func:`maelab.store.load_or_compute`). What it is for: a notebook's kernel
    start and imports are one-thread work, so on the 2-core machine ``make test``'s three executions of every page
    (smoke, gpu dry run, committed book) take less wall time. A failure stops the start of further notebooks,
    lets the running ones end, and raises the failure of the first failed notebook in plan order (as a run of
    ``jobs`` = 1 would have). The kernels side by side share the cores (:func:`_kernel_threads`)."""
    if jobs == 1 or len(plan) < 2:
        return [run_notebook(name, opts, out_dir, extra=extra, root=root) for name, opts in plan]
    from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

    head = [p for p in plan if p[0] not in LAST]
    tail = [p for p in plan if p[0] in LAST]
    with _kernel_threads(jobs), ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(run_notebook, name, opts, out_dir, extra=extra, root=root) for name, opts in head]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        if any(f.exception() is not None for f in done):
            for g in futures:  # not started yet: never started; running: ends (the pool's exit waits for it)
                g.cancel()
    for f in futures:
        if not f.cancelled() and f.exception() is not None:
            raise f.exception()
    return [f.result() for f in futures] + [run_notebook(n, o, out_dir, extra=extra, root=root) for n, o in tail]


def run_dry(
    options: RunOptions | str = "gpu",
    only: list[str] | None = None,
    out_dir: Path | None = None,
    *,
    extra: dict | None = None,
    keep: bool = False,
    jobs: int = 1,
) -> list[Path]:
    """Execute the notebooks with ``options``' profile (default gpu; "auto" means gpu) and device under the dry-run
    caps (:class:`maelab.options.DryRunLimits`).

    Everything goes to a fresh temp folder, the caps' scratch folder (results, checkpoints and, unless ``out_dir``
    is given, the executed notebooks): never ``data/results``, the smoke cache or the checkpoint cache. The folder
    is removed after a successful run unless ``keep`` or ``out_dir`` (the executed notebooks stay there); after a
    failure it is kept and its path is printed. A setting that cannot run fails as :class:`NotebookFailed`, one
    line naming the notebook, the cell and the error. ``options`` with a results folder, ``no_compute`` or
    ``recompute`` are refused (a dry run computes everything, in its temp folder).
    """
    import tempfile

    options = _options(options)
    positive_int("jobs (--jobs)", jobs)
    if options.results_root is not None or options.no_compute is not None or options.recompute:
        raise ParameterError(
            "--dry-run",
            "used without --results-dir, --no-compute and --recompute (a dry run computes everything in a temp folder)",
            "--dry-run",
        )
    profile = "gpu" if options.profile == "auto" else options.profile
    scratch = Path(tempfile.mkdtemp(prefix="maelab-dry-run-"))
    dry = options.replace(
        profile=profile, dry_run=DryRunLimits(scratch=str(scratch)), results_root=str(scratch / "results")
    )
    ok = False
    try:
        outs = run(dry, only, Path(out_dir) if out_dir else scratch / "executed", extra, jobs=jobs)
        ok = True
        return outs
    finally:
        if ok and not keep:
            shutil.rmtree(scratch, ignore_errors=True)
        elif not ok:
            print(f"[book] dry run failed; its temp folder is kept: {scratch}", file=sys.stderr, flush=True)
