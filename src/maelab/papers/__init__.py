"""One subpackage per paper: its analyses, its notebooks' typed settings and its claim rows; and the paper registry.

The general library (``maelab.data``, ``models``, ``train``, ``evaluate``, ``metrics``, ``masking``, ``store``,
``claims``, ``profiles``, ``cost``, ``book``, ...) never imports from here, by any means; a paper package may import
the general library.

**The registry.** Each paper package declares itself in its ``__init__.py`` with a :class:`maelab.registry.Paper`
record (``PAPER = Paper(key=..., citation=..., title=..., order=...)``) and may have three modules the book reads:
``claims.py`` (``CLAIMS``: its claim rows), ``settings.py`` (``NOTEBOOKS``: ``{notebook: settings class}``) and
``plan.py`` (``plans(profile)``: ``{notebook: planned runs}`` for the cost model). :func:`registry` is the one place
that finds them: it walks this package's subpackages once, orders them by ``PAPER.order`` and gathers the three on
first use. :func:`install` hands it to the core (:mod:`maelab.registry`), which reads it from there.

Who installs: the entry points, i.e. the top of each program -- ``python -m maelab.book`` (``maelab/book/__main__.py``),
every notebook kernel the book's runner starts (its injected first cell runs :data:`BOOTSTRAP`), the book's Sphinx
build (``book/_ext/maelab_html.py``), ``tests/conftest.py`` and the scripts that read settings or claims. Why the
core does not simply import this package: see :mod:`maelab.registry`.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable

from ..registry import Paper, PaperRegistry, RegistryError
from ..registry import install as _install_in_core

#: the code a notebook kernel runs before anything else to install the registry (injected by the book's runner)
BOOTSTRAP = "from maelab import papers\n\npapers.install()  # the paper registry (maelab.registry), from the runner"

__all__ = ["BOOTSTRAP", "install", "registry"]


def _packages() -> list[tuple[str, Paper]]:
    """(module name, PAPER) of every subpackage, in book order; one without a ``PAPER`` record is an error."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        if not info.ispkg:
            continue
        name = f"{__name__}.{info.name}"
        paper = getattr(importlib.import_module(name), "PAPER", None)
        if not isinstance(paper, Paper):
            raise RegistryError(f"{name} must declare PAPER = maelab.registry.Paper(...) in its __init__.py")
        if paper.key != info.name:
            raise RegistryError(f"{name}.PAPER.key must be its package name {info.name!r}; got {paper.key!r}")
        found.append((name, paper))
    return sorted(found, key=lambda item: (item[1].order, item[1].key))


def _declared(packages: list[tuple[str, Paper]], module: str, attr: str) -> dict[str, tuple[str, object]]:
    """``{paper key: (module name, its attribute)}`` of each package's ``module`` (a package without it: left out;
    the attribute missing: ``None``, which the core reports)."""
    out = {}
    for name, paper in packages:
        full = f"{name}.{module}"
        try:
            mod = importlib.import_module(full)
        except ModuleNotFoundError as err:
            if err.name != full:  # a missing import *inside* the module is a real error
                raise
            continue
        out[paper.key] = (full, getattr(mod, attr, None))
    return out


def _plans(packages: list[tuple[str, Paper]], profile: str) -> dict[str, list]:
    """``{notebook: planned runs}`` of every paper's ``plan.plans(profile)``, in book order."""
    out: dict[str, list] = {}
    for _, (full, fn) in _declared(packages, "plan", "plans").items():
        if not callable(fn):
            raise RegistryError(f"{full}.plans must be a function profile -> {{notebook: [PlannedRun, ...]}}")
        out.update(fn(profile))
    return out


@functools.cache
def registry() -> PaperRegistry:
    """The registry of every paper package (built once per process; claims, settings and plans gathered lazily)."""
    packages = _packages()
    claims: Callable[[], dict] = functools.cache(lambda: _declared(packages, "claims", "CLAIMS"))
    settings: Callable[[], dict] = functools.cache(lambda: _declared(packages, "settings", "NOTEBOOKS"))
    return PaperRegistry(
        papers=tuple(p for _, p in packages),
        claims=claims,
        settings=settings,
        plans=lambda profile: _plans(packages, profile),
        bootstrap=BOOTSTRAP,
    )


def install() -> None:
    """Hand :func:`registry` to the core (:func:`maelab.registry.install`); calling it again is harmless (the same
    registry). Returns nothing, so that the kernel cell running :data:`BOOTSTRAP` displays nothing."""
    _install_in_core(registry())
