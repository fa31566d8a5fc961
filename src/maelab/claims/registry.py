"""The registry of claim rows, gathered from the paper packages; the papers of the book.

The rows are data next to their paper: each paper package has a module ``maelab.papers.<paper>.claims`` exporting
``CLAIMS: list[Claim]``. :data:`~maelab.claims.REGISTRY` gathers them on first use by discovering those modules
(``pkgutil``, :func:`~maelab.claims.gather_claims`), so the core never imports a named paper and adding a paper adds
no line here. Every line that knows which papers there are (:data:`~maelab.claims.PAPERS`, ``PAPERS_PACKAGE``,
``_paper_packages``) lives in this module.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator, Mapping

from .rows import KINDS, UNITS, Claim

#: The papers of the book (package name -> citation), in the order of the claim registry.
PAPERS = {
    "bisulco2025": "Bisulco et al. (ICCV 2025), From Linearity to Non-Linearity (supplement)",
    "zhang2022": "Zhang, Wang & Wang (NeurIPS 2022), How Mask Matters (U-MAE)",
    "cao2022": "Cao, Xu & Clifton (arXiv 2202.03670, 2022), How to Understand Masked Autoencoders",
    "kong2023": "Kong et al. (CVPR 2023), Understanding MAE via Hierarchical Latent Variable Models",
    "synthesis": "Four theories, one zoo: cross-paper claims decided on the shared zoo (this book)",
}


PAPERS_PACKAGE = "maelab.papers"


class RegistryError(ValueError):
    """The claim rows of the paper packages do not form a registry (duplicate id, malformed ``CLAIMS``)."""


def _paper_packages() -> list[str]:
    """Names of the subpackages of ``maelab.papers``: those of :data:`PAPERS` in its order, then any other sorted."""
    pkg = importlib.import_module(PAPERS_PACKAGE)
    found = {m.name for m in pkgutil.iter_modules(pkg.__path__) if m.ispkg}
    return [p for p in PAPERS if p in found] + sorted(found - set(PAPERS))


def gather_claims() -> dict[str, Claim]:
    """Every claim row, id -> :class:`Claim`, from the ``CLAIMS`` list of each ``maelab.papers.<paper>.claims``
    module (a paper package without one contributes nothing). Raises :class:`RegistryError` on a duplicate id,
    a ``CLAIMS`` that is not a list of claims, or a row whose ``paper`` is not its package."""
    rows: dict[str, Claim] = {}
    origin: dict[str, str] = {}
    for paper in _paper_packages():
        name = f"{PAPERS_PACKAGE}.{paper}.claims"
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name != name:  # a missing import *inside* the module is a real error
                raise
            continue
        claims = getattr(module, "CLAIMS", None)
        if not isinstance(claims, list) or not all(isinstance(c, Claim) for c in claims):
            raise RegistryError(f"{name}.CLAIMS must be a list of maelab.claims.Claim rows")
        for c in claims:
            if c.paper != paper:
                raise RegistryError(
                    f"claim {c.id!r} in {name} has paper={c.paper!r}; rows of {name} need paper={paper!r}"
                )
            if c.id in rows:
                raise RegistryError(f"duplicate claim id {c.id!r}: defined in {origin[c.id]} and in {name}")
            if c.unit not in UNITS:
                raise RegistryError(f"claim {c.id!r} in {name}: unit must be one of {list(UNITS)}; got {c.unit!r}")
            if c.kind not in KINDS:
                raise RegistryError(f"claim {c.id!r} in {name}: kind must be one of {', '.join(KINDS)}; got {c.kind!r}")
            rows[c.id], origin[c.id] = c, name
    for c in rows.values():
        main = rows.get(c.view_of) if c.view_of else None
        if c.view_of and (main is None or main.notebook != c.notebook or main.view_of or main.id == c.id):
            raise RegistryError(
                f"claim {c.id!r}: view_of must name another row of notebook {c.notebook!r} that is no view itself; "
                f"got {c.view_of!r}"
            )
    return rows


class _Registry(Mapping[str, Claim]):
    """Read-only mapping claim id -> :class:`Claim`, gathered by :func:`gather_claims` on first use (lazily: the
    paper modules import this one for :class:`Claim` and the criteria)."""

    def __init__(self) -> None:
        self._rows: dict[str, Claim] | None = None

    def _load(self) -> dict[str, Claim]:
        if self._rows is None:
            self._rows = gather_claims()
        return self._rows

    def __getitem__(self, claim_id: str) -> Claim:
        return self._load()[claim_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())

    def __repr__(self) -> str:
        return f"<maelab.claims.REGISTRY: {len(self)} claims>"


#: every claim row, id -> Claim, in paper (:data:`PAPERS`) then row order
REGISTRY: Mapping[str, Claim] = _Registry()
