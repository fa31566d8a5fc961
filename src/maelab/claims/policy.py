"""The book's multiplicity policy (:data:`~maelab.claims.POLICY`) and its application to every measured row
(:func:`~maelab.claims.adjust`).

Why Holm within each paper rather than Benjamini-Hochberg across the book: our rows share models, seeds and data in
ways that cannot be stated, and Holm needs no assumption on that dependence; it also lets a reader take a paper's
verdicts one by one (family-wise error at most :data:`maelab.claims.ALPHA` per paper).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from .evidence import INCONCLUSIVE, Evidence
from .rows import Claim, verdict
from .statistics import ALPHA, holm

#: The book's multiplicity policy, fixed before the runs it judges (issue 21; maelab.claims.adjust applies it).
POLICY = (
    f"Holm's step-down procedure within each paper: the family is every stochastic row of that paper (a row "
    f"decided by a test over seeds, with its precondition met), and the probability of one or more wrong verdicts "
    f"among them is at most {ALPHA:g} under any dependence between the rows. A row whose runs were extended after "
    f"a first analysis (more seeds added because that analysis was inconclusive) is tested at {ALPHA:g} / looks "
    f"(its adjusted p must be below {ALPHA / 2:g} at the second of two looks: Bonferroni over the looks, because "
    f"the decision to add runs followed a look at the data)"
)


@dataclasses.dataclass(frozen=True)
class Decision:
    """A row's verdict under the multiplicity policy: ``verdict``/``reason`` (what the scoreboard shows),
    ``raw_verdict`` (the row's own test at level ALPHA), ``p`` (its two-sided p; None for a row decided without
    a test), ``p_adj`` (Holm-adjusted within its paper's family) and ``family`` (that family's size)."""

    verdict: str
    reason: str
    raw_verdict: str
    p: float | None = None
    p_adj: float | None = None
    family: int = 0


def adjust(rows: Mapping[str, tuple[Claim, Evidence]]) -> dict[str, Decision]:
    """The verdicts of ``rows`` (claim id -> (claim, evidence)) under :data:`POLICY`.

    Each row is first decided by its criterion (:func:`verdict`). The stochastic rows -- those whose criterion
    gives a p-value for the evidence, whose precondition is met and which are no identity -- form one family per
    paper; their p-values are Holm-adjusted within it. A decided row (supported / not supported) whose adjusted p
    is not below its level -- :data:`ALPHA` divided by the evidence's ``looks`` (1, or 2 where runs were added after
    a first analysis) -- becomes inconclusive, its reason saying so with both p-values. Other rows keep their
    verdict.

    A family holds the rows present in ``rows``: pass every measured row of the book (the scoreboard does), not
    one page's."""
    raw = {cid: verdict(c, ev) for cid, (c, ev) in rows.items()}
    pv: dict[str, float] = {}
    for cid, (c, ev) in rows.items():
        p = None if ev.unmet or c.kind == "identity" else c.criterion.p_value(ev)  # each row's test, computed once
        if p is not None:
            pv[cid] = p
    families: dict[str, list[str]] = {}
    for cid in pv:
        families.setdefault(rows[cid][0].paper, []).append(cid)
    adj: dict[str, tuple[float, int]] = {}
    for ids in families.values():
        for cid, q in zip(ids, holm([pv[i] for i in ids])):
            adj[cid] = (q, len(ids))
    out = {}
    for cid, (v, why) in raw.items():
        if cid not in adj:
            out[cid] = Decision(v, why, v)
            continue
        q, m = adj[cid]
        p = pv[cid]
        looks = rows[cid][1].looks
        level = ALPHA / looks
        tag = f"Holm over {m} stochastic rows of {rows[cid][0].paper}: p = {p:.2g}, adjusted {q:.2g}"
        if looks > 1:
            tag += f", level {level:g} ({looks} looks at its runs)"
        if v != INCONCLUSIVE and not q < level:
            out[cid] = Decision(INCONCLUSIVE, f"{why}; not significant after {tag} >= {level:g}", v, p, q, m)
        else:
            out[cid] = Decision(v, f"{why}; {tag}", v, p, q, m)
    return out
