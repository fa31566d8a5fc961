"""The compute-only stand-in for a Jupyter kernel: what a notebook's program calls first on the lent machine.

:func:`install` makes a plain ``python`` process run a notebook's cells as papermill's kernel would, without what
renders a page, which the lent machine lacks (IPython, myst-nb, jupytext, papermill):

* ``IPython`` / ``IPython.display`` / ``myst_nb`` are stand-in modules: ``display``, ``Markdown``, ``HTML`` and
  ``glue`` accept their arguments and show nothing (``display(..., display_id=True)`` returns a handle whose
  ``update`` does nothing; ``get_ipython()`` is None, as outside a kernel).
* Rendering-only packages (:data:`BLOCKED`) cannot be imported, here as there: a compute path that needs one fails
  in the CPU tests of ``tests/test_device.py`` rather than on the lent machine.
* The page's findings box (:func:`maelab.book.show_findings`, redrawn by ``Context.finish``) is not drawn: it reads
  the notebook's source with jupytext to link each claim to its section.
* Figures go to matplotlib's Agg backend and ``plt.show()`` closes them.
* SIGTERM (the runner's budget stop) raises ``KeyboardInterrupt``, so the store's writer removes its temp folder
  and releases its lock on the way out (a SIGKILL after the grace period leaves them to the runner's clean-up).
* Every :func:`maelab.store.load_or_compute` call is logged as JSON lines (``start`` and ``done``: name, config
  hash, loaded or computed, seconds) to the file :func:`install` is given (``record_log``; the runner writes it
  into the program's first line): the runner reports which record a stopped notebook was computing and how long
  each took.
* Given ``reads_log``, every load of a fetched dataset is logged there too (JSON lines: name, split, n, seed;
  :func:`maelab.data.packaged.on_read`): ``python -m maelab.device pack --trim`` runs the notebooks' gpu dry run
  here with it and carries only the rows they read (:mod:`maelab.data.rows`). In this process only: a dry run on a
  CPU has no pre-training pool (:mod:`maelab.prefetch`), and the pool's runs load what the page itself then loads.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import types

#: Packages that only render or execute notebooks; absent on the lent machine, blocked in a compute-only run.
BLOCKED = ("jupytext", "nbformat", "nbclient", "papermill", "ipykernel", "docutils", "sphinx", "jupyter_book")


class _Handle:
    """What ``display(..., display_id=True)`` returns: a handle whose updates show nothing."""

    def update(self, *args, **kwargs) -> None:
        """Show nothing (there is no page)."""

    def display(self, *args, **kwargs) -> None:
        """Show nothing (there is no page)."""


def _display(*objs, display_id=None, **kwargs):
    """``IPython.display.display`` without a front end: nothing is shown."""
    return _Handle() if display_id else None


class _Shown:
    """``Markdown``, ``HTML``, ...: keeps its data, renders nowhere."""

    def __init__(self, data=None, *args, **kwargs):
        self.data = data


def _stub_modules() -> None:
    ipython = types.ModuleType("IPython", "maelab.device stand-in: no kernel, nothing rendered")
    ipython.get_ipython = lambda: None
    # matplotlib reads the version of an imported IPython to decide whether to patch its GUI hooks (a new enough
    # one needs none); the stand-in says it is new enough, so nothing is patched
    ipython.version_info, ipython.__version__ = (9, 0, 0, ""), "9.0.0"
    disp = types.ModuleType("IPython.display", "maelab.device stand-in: display shows nothing")
    disp.display = _display
    for name in ("Markdown", "HTML", "Image", "Latex", "Math", "JSON", "SVG"):
        setattr(disp, name, type(name, (_Shown,), {}))
    disp.clear_output = lambda *a, **k: None
    ipython.display = disp
    myst = types.ModuleType("myst_nb", "maelab.device stand-in: glue stores nothing")
    myst.glue = lambda name, variable, display=True: None
    sys.modules.update({"IPython": ipython, "IPython.display": disp, "myst_nb": myst})
    if not any(isinstance(f, _Blocker) for f in sys.meta_path):
        sys.meta_path.insert(0, _Blocker())


class _Blocker:
    """Import finder refusing :data:`BLOCKED` packages (``ModuleNotFoundError``). A finder rather than ``None`` in
    ``sys.modules``: libraries test ``"sphinx" in sys.modules`` to decide whether to import from it (scipy's
    docstring tools do), and a ``None`` entry would make them try."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(
                f"{name} is not available in a compute-only run (maelab.device.kernel)", name=name
            )
        return None


def _log(path: str | None, event: dict) -> None:
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(event) + "\n")


def _logged(load_or_compute, record_log: str | None):
    from .. import store

    def logged(name, config, fn, **kwargs):
        h = store.config_hash(config)
        t0 = time.perf_counter()
        _log(record_log, {"event": "start", "name": name, "config_hash": h, "notebook": kwargs.get("notebook")})
        res = load_or_compute(name, config, fn, **kwargs)
        _log(
            record_log,
            {
                "event": "done",
                "name": name,
                "config_hash": h,
                "notebook": kwargs.get("notebook"),
                "from_store": bool(res.from_store),
                "seconds": round(time.perf_counter() - t0, 3),
            },
        )
        return res

    logged.__wrapped__ = load_or_compute
    return logged


def _stop(signum, frame):
    raise KeyboardInterrupt(f"maelab.device: stopped at the time budget (signal {signum})")


def install(record_log: str | None = None, reads_log: str | None = None) -> None:
    """Turn this process into a compute-only notebook kernel (see the module docstring). Call it first.
    ``record_log``: the file the store's requests are logged to (JSON lines; None: not logged); ``reads_log``: the
    file the loads of fetched datasets are logged to (None: not logged)."""
    _stub_modules()
    signal.signal(signal.SIGTERM, _stop)
    os.environ.setdefault("MPLBACKEND", "Agg")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.show = lambda *args, **kwargs: plt.close("all")
    from .. import book, store
    from ..book import context

    book.show_findings = lambda notebook, options=None: None  # the page's call, ``book.show_findings(...)``
    context.refresh_findings = lambda *args, **kwargs: None  # ``Context.finish``'s redraw (bound in book.context)
    if not hasattr(store.load_or_compute, "__wrapped__"):
        store.load_or_compute = _logged(store.load_or_compute, record_log)
    if reads_log:
        from ..data import packaged

        packaged.on_read(lambda read: _log(reads_log, read))
