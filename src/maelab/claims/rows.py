"""A claim row (:class:`~maelab.claims.Claim`), what kinds of row there are (:data:`~maelab.claims.KINDS`), the
display units of our value (:data:`~maelab.claims.UNITS`), and the verdict of one row on its evidence
(:func:`~maelab.claims.verdict`).
"""

from __future__ import annotations

import dataclasses

from .criteria import Criterion
from .evidence import INCONCLUSIVE, VERDICTS, Evidence


@dataclasses.dataclass(frozen=True)
class Claim:
    """One row of the scoreboard. ``kind`` (one of :data:`KINDS`) says what the row can tell: an ``identity`` holds
    by construction and is shown, never counted as support; ``computation`` computes a theorem's quantity on the
    objects it describes; ``trained`` measures models we trained. ``view_of``: the id of another row of the same
    notebook whose evidence (samples) this row reads under another criterion -- counted once as a finding.
    ``unit``: how the scoreboard shows our value beside the paper's (``UNITS``); the evidence stays as measured."""

    id: str
    paper: str
    where: str
    statement: str
    paper_value: str
    criterion: Criterion
    notebook: str
    measure: str  # what our value is, in words
    kind: str = ""
    view_of: str = ""
    unit: str = ""  # how "ours" is shown: "" as stored, "points" for accuracy fractions shown x 100 (paper's unit)


#: Display units of our value (``Claim.unit``), name -> (factor, suffix).
UNITS = {"": (1.0, ""), "points": (100.0, " points")}


#: What a claim row is (issue 21), i.e. how far its verdict can count as evidence for a paper.
KINDS = {
    "identity": "holds by construction or arithmetic whatever the data: it can fail only if the code is wrong, so it "
    "is shown as an identity and never counted as support",
    "computation": "an exact (or Monte-Carlo) computation of a theorem's quantity on the objects the theorem "
    "describes, without a trained model",
    "trained": "measured on models we trained: counts only where the models demonstrably learned",
}


def verdict(claim: Claim, evidence: Evidence) -> tuple[str, str]:
    """The verdict on ``claim`` and its reason: "inconclusive" when a precondition is unmet (``evidence.unmet``),
    else what the claim's criterion decides from ``evidence``."""
    if evidence.unmet:
        return INCONCLUSIVE, f"precondition not met: {evidence.unmet}"
    v, why = claim.criterion.decide(evidence)
    if v not in VERDICTS:
        raise ValueError(
            f"criterion {type(claim.criterion).__name__} of claim {claim.id!r} returned verdict {v!r}; "
            f"a criterion must return one of {VERDICTS}"
        )
    return v, why
