"""The Jupyter Book build: the executed notebooks checked and staged with the prose pages, then built to HTML.

``python -m maelab.book build [--strict]``. ``stage`` refuses failed notebooks, notebooks showing an error, and
stale ones: an executed notebook older than its source ``notebooks/NAME.md``, its settings module or a file of the
results folder it read (modification times; the scoreboard: every claims record), in one line naming each notebook
and what is newer -- unless the notebook records the content key of its inputs (:mod:`maelab.book.freshness`) and
that key still holds, so a newer modification time over the same contents is not staleness. The build runs with
execution off (the pages are executed by :mod:`maelab.book.runner`).

The module is ``builder``, not ``build``: a submodule named ``build`` would replace the function ``maelab.book.build``
as an attribute of the package as soon as it is imported.
"""

from __future__ import annotations

import inspect
import shutil
import subprocess
import sys
from pathlib import Path

from .. import paths, store
from .._validate import folder_path
from ..profiles import PROFILE_NAMES, registry
from . import freshness
from .plan import stage_plan_tables
from .toc import LAST, NotebookFailed, notebooks_in_order


def stage(executed: Path, stage_dir: Path, root: Path | None = None) -> Path:
    """Assemble a Jupyter Book source tree: config, toc, prose pages and the executed notebooks."""
    root = root or paths.repo_root()
    if stage_dir.exists():
        shutil.rmtree(stage_dir)
    stage_dir.mkdir(parents=True)
    for f in ("_config.yml", "_toc.yml"):
        shutil.copy2(root / f, stage_dir / f)
    shutil.copytree(root / "book", stage_dir / "book")
    stage_plan_tables(paths.committed_results(root), stage_dir / "book" / "_plan")
    nbdir = stage_dir / "notebooks"
    nbdir.mkdir()
    missing, failed, stale = [], [], []
    for name in notebooks_in_order(root):
        p = Path(executed) / f"{name}.ipynb"
        if (Path(executed) / f"{name}.failed.ipynb").exists():
            failed.append(f"{name} (its last run failed: see {name}.failed.ipynb)")
        elif not p.exists():
            missing.append(name)
        else:
            err = _error_output(p)
            if err:
                failed.append(f"{name} ({err})")
            newer = _newer_inputs(name, p, root)
            if newer and not _same_key(name, p, root):  # a newer file with the same contents is not staleness
                stale.append((name, newer))
            _hide_injected_parameters(p, nbdir / p.name)
    if failed:
        raise NotebookFailed(
            "refusing to build a book with failed notebooks: "
            + "; ".join(failed)
            + " (fix them and run `python -m maelab.book run --only NAME`)"
        )
    if stale:
        names = " ".join(n for n, _ in stale)
        raise NotebookFailed(
            "refusing to build stale pages: "
            + "; ".join(f"{n} ({what} newer than its executed notebook)" for n, what in stale)
            + f" (re-run them: `python -m maelab.book run --only {names}`)"
        )
    if missing:
        raise NotebookFailed("not executed yet: " + ", ".join(missing) + " (run `python -m maelab.book run` first)")
    return stage_dir


def _notebook_inputs(name: str, executed: Path, root: Path) -> list[Path]:
    """What the executed notebook ``executed`` of ``name`` was computed from: its source ``notebooks/NAME.md``, its
    settings module (``maelab/papers/<paper>/settings.py``) and the results it read -- the files of the profile it
    ran with in its own folder of the results root it ran with (both recorded by :func:`run_notebook`; else the
    profile papermill injected, in its ``run_options``, and its default root), and for the notebooks that read
    every notebook's claims (``LAST``, the scoreboard) every claims record there."""
    import nbformat

    files = [root / "notebooks" / f"{name}.md"]
    klass = registry().get(name)
    if klass is not None:
        files.append(Path(inspect.getfile(klass)))  # its settings module
    try:
        meta = nbformat.read(executed, as_version=4).metadata
    except Exception:  # noqa: BLE001 - an unreadable notebook is reported by _error_output
        return files
    recorded = (meta.get("maelab") or {}).get("results_root")
    injected = (meta.get("papermill") or {}).get("parameters", {})
    options = injected.get("run_options") if isinstance(injected.get("run_options"), dict) else injected
    profile = (meta.get("maelab") or {}).get("profile") or options.get("profile")
    if recorded:
        results = Path(recorded)
    elif profile in PROFILE_NAMES:
        results = store.results_root(profile)
    else:
        return files
    own = results / name
    if own.is_dir():  # its records and side files of the profile it ran with (<result>.<profile>.*)
        files += [
            f
            for f in own.iterdir()
            if not f.name.startswith(".") and f.name.split(".")[1:2] == [profile] and f.is_file()
        ]
    if name in LAST and results.is_dir():
        files += [f for f in results.glob("*/claims.*.json") if f.is_file()]
    return files


def _same_key(name: str, executed: Path, root: Path) -> bool:
    """True when the executed notebook records the key of its inputs (:mod:`maelab.book.freshness`) and that key
    still holds: its inputs may carry newer modification times (a checkout, a ``touch``) but not new contents."""
    import nbformat

    key, params = freshness.recorded_key(executed)
    if key is None:
        return False
    try:
        results = (nbformat.read(executed, as_version=4).metadata.get("maelab") or {}).get("results_root")
    except Exception:  # noqa: BLE001 - unreadable: not the same
        return False
    return bool(results) and key == freshness.inputs_key(name, params, Path(results), root)


def _newer_inputs(name: str, executed: Path, root: Path) -> str:
    """ "" when the executed notebook is at least as new as everything it was computed from
    (:func:`_notebook_inputs`, by modification time), else the newest of those files (and how many more are
    newer), for :func:`stage`'s one-line refusal."""
    t = executed.stat().st_mtime_ns
    newer = sorted(
        (f for f in _notebook_inputs(name, executed, root) if f.exists() and f.stat().st_mtime_ns > t),
        key=lambda f: f.stat().st_mtime_ns,
        reverse=True,
    )
    if not newer:
        return ""

    def show(f: Path) -> str:
        try:
            return str(f.resolve().relative_to(root.resolve()))
        except ValueError:
            return str(f)

    return show(newer[0]) + (f" and {len(newer) - 1} more" if len(newer) > 1 else "")


def _error_output(path: Path) -> str:
    """ "" when the executed notebook shows no error, else which cell shows one (cells tagged raises-exception
    may show an error on purpose)."""
    import nbformat

    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as e:  # noqa: BLE001 - any unreadable notebook is a failed one
        return f"unreadable executed notebook: {type(e).__name__}"
    for i, cell in enumerate(nb.cells):
        if "raises-exception" in cell.get("metadata", {}).get("tags", []):
            continue
        for o in cell.get("outputs", []):
            if o.get("output_type") == "error":
                return f"cell {i} shows {o.get('ename', 'an error')}"
    return ""


def _hide_injected_parameters(src: Path, dst: Path) -> None:
    """Copy an executed notebook, tagging papermill's ``injected-parameters`` cell ``remove-cell``.

    The injected cell repeats the parameters cell with the values of the run; the page shows those values in its
    settings table instead, so myst-nb drops the cell from the rendered page (it stays in the executed notebook).
    """
    import nbformat

    nb = nbformat.read(src, as_version=4)
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            cell.metadata["tags"] = [*tags, "remove-cell"]
    nbformat.write(nb, dst)


def build(executed: Path | None = None, out: Path | None = None, strict: bool = False) -> Path:
    """Build the HTML book from executed notebooks (execution off); returns the html folder."""
    root = paths.repo_root()
    executed = folder_path("executed (--executed)", executed) if executed else root / "_build" / "executed"
    out = folder_path("out (--out)", out) if out else root
    src = stage(executed, out / "_build" / "src", root)
    jb = Path(sys.executable).parent / "jupyter-book"
    cmd = [
        str(jb) if jb.exists() else "jupyter-book",
        "build",
        str(src),
        "--path-output",
        str(out),
        "--builder",
        "html",
    ]
    if strict:
        cmd += ["-W", "-n", "--keep-going"]
    print("[book] " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd)
    if r.returncode != 0:
        raise NotebookFailed(f"jupyter-book build failed (exit {r.returncode})")
    html = out / "_build" / "html"
    print(f"[book] built {html / 'index.html'}", flush=True)
    return html
