"""The paper registry as the core receives it: installed once by an entry point, read by the core.

Why a slot the entry point fills, and not an import: the core library (every module at the top of ``src/maelab``
except ``papers/``) never imports a paper package by any means -- ``tests/test_layout.py`` checks static imports,
``importlib`` / ``__import__`` calls, ``pkgutil`` walks and module names spelled in strings. Yet three things need
every paper: the claims registry (:data:`maelab.claims.REGISTRY`, the scoreboard), every notebook's settings
(:func:`maelab.profiles.registry`) and the cost plan (:func:`maelab.cost.notebook_plans`). So the papers are
gathered once, at the top, by :mod:`maelab.papers` (the one module that knows its subpackages; each declares itself
with a :class:`Paper` record in its ``__init__.py``), and handed down: an entry point calls
``maelab.papers.install()``, which puts a :class:`PaperRegistry` here, and the core reads :func:`installed`.

The entry points are the book's command line (``python -m maelab.book``: its ``__main__`` module), every notebook
kernel the book's runner starts (its first code cell after the parameters, the registry's ``bootstrap``, injected
by the runner, tagged ``injected-registry`` and hidden on the page, as papermill's cell of injected parameters is),
the Sphinx build of the book (its extension ``book/_ext/maelab_html.py``: autodoc reads the registry), the tests
(``tests/conftest.py``) and the scripts. With nothing installed the core fails in one line naming the call
(:class:`RegistryError`). Passing the registry as an argument to every notebook call (``setup``, ``claim``, the
findings boxes) would change every page for nothing: a process has one registry, and a page names its notebook.

What is installed is lazy: :class:`PaperRegistry` holds the papers (cheap: each package's ``__init__``) and
functions that gather claim rows, settings classes and plans on first use, so a kernel that shows one findings box
does not import every paper's analysis code. The core checks what it receives (:func:`maelab.claims.gather_claims`,
:func:`maelab.profiles.registry`) and caches it per installed registry.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from ._validate import ParameterError


class RegistryError(ValueError):
    """The paper registry is missing or malformed (no registry installed, a duplicate claim id, a bad declaration)."""


@dataclasses.dataclass(frozen=True)
class Paper:
    """How a paper package declares itself (``PAPER = Paper(...)`` in ``maelab/papers/<key>/__init__.py``).

    ``key``: the package name, which claim rows name as their ``paper``; ``citation``: authors and venue, the
    paper's short name in the scoreboard (``"Zhang, Wang & Wang (NeurIPS 2022)"``); ``title``: the paper's title as
    the book cites it; ``order``: the paper's place in the book (claims registry, scoreboard, plan), smallest first.
    """

    key: str
    citation: str
    title: str
    order: int

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not self.key.isidentifier():
            raise ParameterError("Paper.key", "the paper package's name (a Python identifier)", self.key)
        for name in ("citation", "title"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v.strip() or "\n" in v:
                raise ParameterError(f"Paper.{name}", "a non-empty one-line string", v)
        if isinstance(self.order, bool) or not isinstance(self.order, int):
            raise ParameterError("Paper.order", "an integer (the paper's place in the book)", self.order)

    @property
    def full(self) -> str:
        """``"<citation>, <title>"``: how the book cites the paper in full."""
        return f"{self.citation}, {self.title}"


#: paper key -> (where it was declared, the declared object as found there), e.g. ``{"zhang2022":
#: ("maelab.papers.zhang2022.claims", [Claim, ...])}``; the core checks the objects (they come from outside it)
Declarations = Mapping[str, tuple[str, Any]]


@dataclasses.dataclass(frozen=True)
class PaperRegistry:
    """Every paper of the book and what it declares, gathered on first use.

    ``papers``: in book order (``Paper.order``). ``claims()``: each paper's claim rows (its ``CLAIMS``);
    ``settings()``: each paper's ``{notebook: settings class}`` (its ``NOTEBOOKS``); ``plans(profile)``: ``{notebook:
    planned runs}`` of every paper for a profile; ``bootstrap``: the code a notebook kernel runs to install this
    registry (the runner injects it).
    """

    papers: tuple[Paper, ...]
    claims: Callable[[], Declarations]
    settings: Callable[[], Declarations]
    plans: Callable[[str], Mapping[str, list]]
    bootstrap: str = ""

    def __post_init__(self) -> None:
        keys = [p.key for p in self.papers]
        if len(set(keys)) != len(keys):
            raise RegistryError(f"paper keys must be unique; got {keys}")
        if list(self.papers) != sorted(self.papers, key=lambda p: p.order):
            raise RegistryError(f"papers must be in book order (Paper.order); got {keys}")


_INSTALLED: PaperRegistry | None = None


def install(registry: PaperRegistry) -> None:
    """Hand ``registry`` to the core (an entry point does this once; installing again replaces it)."""
    global _INSTALLED
    if not isinstance(registry, PaperRegistry):
        raise ParameterError("registry", "a maelab.registry.PaperRegistry", type(registry).__name__)
    _INSTALLED = registry


def installed() -> PaperRegistry:
    """The registry an entry point installed; :class:`RegistryError` in one line when there is none."""
    if _INSTALLED is None:
        raise RegistryError(
            "no paper registry installed: call `from maelab import papers; papers.install()` first "
            "(python -m maelab.book does, and so does every notebook kernel its runner starts)"
        )
    return _INSTALLED


def papers() -> dict[str, Paper]:
    """``{key: Paper}`` of the installed registry, in book order."""
    return {p.key: p for p in installed().papers}
