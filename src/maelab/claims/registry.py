"""The registry of claim rows, gathered from the paper packages through the installed paper registry.

The rows are data next to their paper: each paper package has a module ``maelab.papers.<paper>.claims`` exporting
``CLAIMS: list[Claim]``. :data:`~maelab.claims.REGISTRY` gathers them on first use from the paper registry an entry
point installed (:mod:`maelab.registry`; :func:`~maelab.claims.gather_claims` checks what it hands down), so the core
never imports a paper and adding a paper adds no line here. Which papers there are, their citations and their order
are the papers' own declarations (``PAPER`` in each package, :func:`maelab.registry.papers`), not a list kept here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from .. import registry as _registry
from ..registry import RegistryError
from .rows import KINDS, UNITS, Claim


def gather_claims(declared: _registry.Declarations | None = None) -> dict[str, Claim]:
    """Every claim row, id -> :class:`Claim`, from the ``CLAIMS`` list of each ``maelab.papers.<paper>.claims``
    module as ``declared`` (default: the installed registry's, :func:`maelab.registry.installed`) hands them down (a
    paper package without one contributes nothing). Raises :class:`~maelab.registry.RegistryError` on a duplicate
    id, a ``CLAIMS`` that is not a list of claims, or a row whose ``paper`` is not its package."""
    rows: dict[str, Claim] = {}
    origin: dict[str, str] = {}
    for paper, (name, claims) in (_registry.installed().claims() if declared is None else declared).items():
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
        self._source: _registry.PaperRegistry | None = None  # the installed registry the rows came from

    def _load(self) -> dict[str, Claim]:
        if self._rows is None or self._source is not _registry.installed():
            self._source = _registry.installed()
            self._rows = gather_claims(self._source.claims())
        return self._rows

    def __getitem__(self, claim_id: str) -> Claim:
        return self._load()[claim_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())

    def __repr__(self) -> str:
        return f"<maelab.claims.REGISTRY: {len(self)} claims>"


#: every claim row, id -> Claim, in paper (``order`` of :class:`maelab.registry.Paper`) then row order
REGISTRY: Mapping[str, Claim] = _Registry()
