"""The runner: every notebook executed through papermill, with its parameters checked first.

``python -m maelab.book run --profile auto [--only NAME ...] [--recompute] [-p NAME=VALUE] [--no-compute]`` (see
:mod:`maelab.book`). ``--profile auto`` runs each notebook with the best profile that has committed results
(gpu > cpu), else cpu. ``--dry-run`` (``run_dry``, ``maelab._util.dry_run_limits``) executes the notebooks with
the profile's exact models, data and code paths but caps every training run at a couple of optimiser steps and
every evaluation at a few images; results and checkpoints go to a temp folder, claims are not scored. ``--profile
gpu`` on a machine without CUDA is refused with the predicted duration on this CPU unless ``--force-cpu`` is given.
``MAELAB_DRY_RUN=1`` exported by hand does not turn a plain ``run`` into a dry run: it is refused in one line (and
the store never writes a dry run's results outside its temp folder).

Each kernel gets the paper registry from the code the installed registry gives (the ``bootstrap`` of
:class:`maelab.registry.PaperRegistry`), injected as a code cell right after the parameters (tagged
``injected-registry`` and ``remove-cell``: kept in the executed notebook, hidden on the page, as papermill's
``injected-parameters`` cell is). papermill and nbformat are imported only when a notebook is executed.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from .. import store
from .._util import DRY_RUN_DIR_ENV, DRY_RUN_ENV, TMP_PREFIX, dry_run_limits, env_flag, progress_enabled, resolve_device
from .._validate import ParameterError, folder_path
from ..profiles import CORE_PARAMS, PROFILE_NAMES, settings_class, validate_core
from ..registry import installed
from . import freshness
from .context import ALLOW_CPU_ENV, GpuUnavailable
from .plan import gpu_on_cpu_message
from .toc import LAST, NotebookFailed, notebook_parameters, notebooks_in_order

REGISTRY_TAG = "injected-registry"  # the tag of the cell that installs the paper registry in a kernel


def choose_profile(notebook: str, requested: str) -> str:
    """``requested``, or for "auto" the best profile with committed results for ``notebook`` (gpu > cpu), else cpu."""
    if requested != "auto":
        return requested
    found = [p for p in store.stored_profiles(notebook, store.results_root("cpu")) if p != "smoke"]
    return found[0] if found else "cpu"


RUNNER_FLAGS = ("profile", "recompute", "device")  # set by the runner's own options, not by -p


def check_parameters(name: str, profile: str, params: dict[str, Any], root: Path | None = None) -> None:
    """Reject, before papermill starts, a parameter that notebook ``name`` does not declare or a bad value.

    Allowed: the names of its ``parameters`` cell other than the runner's own options (profile, recompute,
    device). Values: core ones by :func:`maelab.profiles.validate_core`, the rest by the notebook's settings
    class for ``profile`` (so ``mask_ratio=0`` on the masking page fails here, in one line).
    """
    allowed = [n for n in notebook_parameters(name, root) if n not in RUNNER_FLAGS]
    for k, v in params.items():
        if k not in allowed:
            raise ParameterError(k, f"a parameter of notebook {name!r} (" + ", ".join(allowed) + ")", v)
    validate_core({k: v for k, v in params.items() if k in CORE_PARAMS})
    settings_class(name).for_profile(
        profile, **{k: v for k, v in params.items() if k not in CORE_PARAMS and v is not None}
    )


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


def run_notebook(
    name: str,
    profile: str,
    out_dir: Path,
    *,
    recompute: bool = False,
    device: str = "auto",
    extra: dict | None = None,
    root: Path | None = None,
) -> Path:
    """Execute notebooks/NAME.md through papermill into out_dir/NAME.ipynb; NotebookFailed names the cell.

    The kernel installs the paper registry first (``inject_registry``). The notebook executes into a temp file
    that replaces NAME.ipynb only on success: a failed run keeps the last good executed notebook, leaves its own
    output in NAME.failed.ipynb, and ``stage`` (:mod:`maelab.book.builder`) refuses to build the book until a later run
    of NAME succeeds (which removes NAME.failed.ipynb).
    """
    import jupytext
    import nbformat
    import papermill as pm

    root = root or store.repo_root()
    src = root / "notebooks" / f"{name}.md"
    if not src.exists():
        raise ParameterError("notebook", "one of " + ", ".join(notebooks_in_order(root)), name)
    out_dir.mkdir(parents=True, exist_ok=True)
    nb = inject_registry(jupytext.read(src))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    # where this run reads and writes its results: what `build` compares the executed notebook's age against
    results = store.results_root(profile).resolve()
    nb.metadata["maelab"] = {"profile": profile, "results_root": str(results)}
    out, failed = out_dir / f"{name}.ipynb", out_dir / f"{name}.failed.ipynb"
    params = {"profile": profile, "recompute": recompute, "device": device, **(extra or {})}
    if not recompute and out.exists() and not failed.exists():  # unchanged since its last run: not re-executed
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
    profile: str = "auto",
    only: list[str] | None = None,
    out_dir: Path | None = None,
    recompute: bool = False,
    device: str = "auto",
    extra: dict | None = None,
    *,
    dry_run: bool = False,
    force_cpu: bool = False,
) -> list[Path]:
    """Execute notebooks (see :mod:`maelab.book.runner`). ``dry_run``: see ``run_dry``; ``force_cpu``: let
    ``profile="gpu"`` compute on a machine without CUDA."""
    check_environment()
    if dry_run:
        return run_dry(profile, only, out_dir, device=device, extra=extra)
    if dry_run_limits() is not None:
        raise ParameterError(
            DRY_RUN_ENV,
            "unset (or 0) for a plain run: a dry run is `python -m maelab.book run --dry-run`, which keeps its "
            "capped results in a temp folder",
            os.environ.get(DRY_RUN_ENV),
        )
    return _run(profile, only, out_dir, recompute, device, extra, force_cpu=force_cpu)


def check_environment() -> None:
    """Read every on/off variable the notebook kernels inherit (``MAELAB_DRY_RUN``, ``MAELAB_NO_COMPUTE``,
    ``MAELAB_ALLOW_CPU``, ``MAELAB_PROGRESS``) strictly, so that a bad value fails in one line before the first
    notebook runs, not inside one (``maelab._util.env_flag``)."""
    dry_run_limits()
    store.no_compute_mode()
    env_flag(ALLOW_CPU_ENV)
    progress_enabled()


def _run(
    profile: str,
    only: list[str] | None,
    out_dir: Path | None,
    recompute: bool,
    device: str,
    extra: dict | None,
    *,
    force_cpu: bool = False,
) -> list[Path]:
    """:func:`run` without the dry-run switch (a plain run, or the one inside :func:`run_dry`)."""
    root = store.repo_root()
    out_dir = folder_path("out_dir (--out)", out_dir) if out_dir else root / "_build" / "executed"
    if profile != "auto" and profile not in PROFILE_NAMES:
        raise ParameterError("profile", "one of 'auto', " + ", ".join(repr(p) for p in PROFILE_NAMES), profile)
    if force_cpu:
        os.environ[ALLOW_CPU_ENV] = "1"  # inherited by the notebook kernels
    elif (
        profile == "gpu"
        and dry_run_limits() is None
        and not env_flag(ALLOW_CPU_ENV)
        and resolve_device(device).type != "cuda"
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
        prof = "cpu" if (profile == "auto" and name in LAST) else choose_profile(name, profile)
        if profile == "smoke":
            prof = "smoke"
        check_parameters(name, prof, extra or {}, root)  # every notebook checked before the first one runs
        plan.append((name, prof))
    return [
        run_notebook(name, prof, out_dir, recompute=recompute, device=device, extra=extra, root=root)
        for name, prof in plan
    ]


def run_dry(
    profile: str = "gpu",
    only: list[str] | None = None,
    out_dir: Path | None = None,
    *,
    device: str = "auto",
    extra: dict | None = None,
    keep: bool = False,
) -> list[Path]:
    """Execute the notebooks with ``profile``'s settings under the dry-run caps (``maelab._util.dry_run_limits``).

    Everything goes to a fresh temp folder (results, checkpoints and, unless ``out_dir`` is given, the executed
    notebooks): never ``data/results``, the smoke cache or the checkpoint cache. The folder is removed after a
    successful run unless ``keep`` or ``out_dir`` (the executed notebooks stay there); after a failure it is kept and
    its path is printed. A setting that cannot run fails as :class:`NotebookFailed`, one line naming the notebook,
    the cell and the error. The environment is restored afterwards.
    """
    import tempfile

    check_environment()
    scratch = Path(tempfile.mkdtemp(prefix="maelab-dry-run-"))
    saved = {k: os.environ.get(k) for k in (DRY_RUN_ENV, DRY_RUN_DIR_ENV, "MAELAB_RESULTS_DIR")}
    os.environ.update({DRY_RUN_ENV: "1", DRY_RUN_DIR_ENV: str(scratch), "MAELAB_RESULTS_DIR": str(scratch / "results")})
    ok = False
    try:
        outs = _run(profile, only, Path(out_dir) if out_dir else scratch / "executed", False, device, extra)
        ok = True
        return outs
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if ok and not keep:
            shutil.rmtree(scratch, ignore_errors=True)
        elif not ok:
            print(f"[book] dry run failed; its temp folder is kept: {scratch}", file=sys.stderr, flush=True)
