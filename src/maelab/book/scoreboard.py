"""The scoreboard as data: every registered claim with the evidence of its notebook's stored claims record.

:func:`maelab.book.collect_claims` gathers the board (one row per claim, verdicts recomputed from the stored evidence
and judged under the book's multiplicity policy); :func:`maelab.book.verdict_counts` and
:func:`maelab.book.kind_counts` count it. The HTML and the
figure drawn from it are :mod:`maelab.book.render`'s. The papers come from the installed paper registry
(:func:`maelab.book.papers`, :mod:`maelab.registry`), the claim rows from :data:`maelab.claims.REGISTRY`.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

from .. import claims as claims_mod
from .. import paths, registry, store
from .._validate import ParameterError, one_of
from ..profiles import PROFILE_ORDER

RECORD_ERROR = "record error"  # scoreboard verdict of a claim whose stored claims record cannot be trusted
NOT_MEASURED = "not yet measured"  # scoreboard verdict of a claim with no stored evidence
IDENTITY = "identity"  # scoreboard verdict of a row of kind "identity" whose check holds: shown, not support
PAPER_VALUE = "paper's value"  # column of collect_claims
#: The verdicts a claim can show, in the order the scoreboard counts and colours them.
VERDICT_ORDER = (
    claims_mod.SUPPORTED,
    claims_mod.NOT_SUPPORTED,
    claims_mod.INCONCLUSIVE,
    IDENTITY,
    NOT_MEASURED,
    RECORD_ERROR,
)


def papers() -> dict[str, registry.Paper]:
    """``{key: Paper}`` of the book's papers in book order (the installed paper registry, :mod:`maelab.registry`)."""
    return registry.papers()


def paper_label(paper: str) -> str:
    """Short name of a paper: ``"Zhang, Wang & Wang (NeurIPS 2022)"``, the ``citation`` of its
    :class:`maelab.registry.Paper` (an unknown key is shown as it is)."""
    found = registry.papers().get(paper)
    return found.citation if found is not None else paper


def format_value(ev: claims_mod.Evidence, unit: str = "") -> str:
    """Our value in words: ``mean ± s.e. (n=...)`` over seeds, a series ``[y1, ...] (±max s.e.)``, or the value;
    in ``unit`` (:data:`maelab.claims.UNITS`: "points" shows accuracy fractions x 100, as the papers do)."""
    one_of("unit", unit, claims_mod.UNITS)
    k, suffix = claims_mod.UNITS[unit]
    if ev.y is not None:
        pts = ", ".join(f"{k * y:.3g}" for y in ev.y)
        return f"[{pts}]{suffix}" + (f" (±{k * max(ev.y_err):.2g} s.e.)" if ev.y_err else "")
    if ev.value is None:
        return "—"
    if not unit:
        return f"{ev.value:.3g}" + (f" ± {ev.sem:.2g} s.e. (n={ev.n})" if ev.std is not None else "")
    s = f"{k * ev.value:+.3g}" + (f" ± {k * ev.sem:.2g}" if ev.std is not None else "") + suffix
    return s + (f" (mean ± s.e., n={ev.n})" if ev.std is not None else "")


def sensitivity(ev: claims_mod.Evidence, unit: str = "") -> str:
    """What a row decided from samples could have detected: the smallest true mean that its ``n`` samples, with
    their standard deviation, detect with 80 % power by a two-sided t-test at 0.05 / looks (the row's level,
    :data:`maelab.claims.POLICY`) before the Holm adjustment (:func:`maelab.claims.minimum_detectable_effect`), in
    ``unit``; "" for exact values and series (no
    samples, or fewer than two). A design quantity at the observed spread, not a post-hoc power of the observed
    effect: it says how far from the criterion's reference a true effect must lie for these seeds to see it. "" too
    when a sample is not finite (a smoke run's NaN)."""
    one_of("unit", unit, claims_mod.UNITS)
    if ev.y is not None or ev.std is None or not math.isfinite(ev.std):  # NaN samples (a smoke run): no estimate
        return ""
    k, suffix = claims_mod.UNITS[unit]
    mde = claims_mod.minimum_detectable_effect(float(ev.std), int(ev.n), alpha=claims_mod.ALPHA / ev.looks)
    return f"{k * mde:.2g}{suffix} with n = {ev.n} (sd {k * ev.std:.2g}{suffix})"


def _claim_roots(root: str | os.PathLike | None = None) -> list[Path]:
    """Where the scoreboard looks for claims records: ``root`` (a run's results folder, ``--results-dir``), else
    the committed results and the smoke cache."""
    if root is not None:
        return [Path(root)]
    return [paths.committed_results(), paths.smoke_results()]


def _claims_record(root: Path, notebook: str, profile: str) -> tuple[str, dict | None, dict | None, str]:
    """(profile, claim rows, provenance, "") of a stored claims record, or (profile, None, None, why) when it cannot
    be trusted (tampered, unreadable, old format): the scoreboard then shows an error, never another profile."""
    try:
        r = store.load(notebook, "claims", profile, root=root)
        return profile, r["claims"], r.provenance, ""
    except (store.RecordError, KeyError, TypeError) as e:
        why = str(e) if isinstance(e, store.RecordError) else f"claims record of {notebook} ({profile}) is malformed"
        print(f"[scoreboard] {why}", file=sys.stderr, flush=True)
        return profile, None, None, why


def _best_claims_records(
    notebooks: list[str] | None = None, profile: str | None = None, root: str | os.PathLike | None = None
) -> dict[str, tuple[str, dict | None, dict | None, str]]:
    """notebook -> (profile, claim rows, provenance, error) of the claims record a page or the scoreboard shows.

    ``profile=None``: the best profile stored for each notebook (gpu > cpu > smoke) over the claim roots;
    a profile: that profile's record in its results root (where :meth:`maelab.book.Context.finish` stores it).
    ``root``: the results folder to read (None: the default ones, :func:`_claim_roots`).
    """
    best: dict[str, tuple[str, dict | None, dict | None, str]] = {}
    if profile is not None:
        one_of("profile", profile, PROFILE_ORDER)
        root = Path(root) if root is not None else store.results_root(profile)
        names = (
            notebooks
            if notebooks is not None
            else (sorted(p.name for p in root.iterdir() if p.is_dir()) if root.exists() else [])
        )
        for name in names:
            if store.record_path(root, name, "claims", profile).exists():
                best[name] = _claims_record(root, name, profile)
        return best
    for where in _claim_roots(root):
        if not where.exists():
            continue
        for folder in sorted(p for p in where.iterdir() if p.is_dir()):
            if notebooks is not None and folder.name not in notebooks:
                continue
            for prof in PROFILE_ORDER:
                if not store.record_path(where, folder.name, "claims", prof).exists():
                    continue
                cur = best.get(folder.name)
                if cur is None or PROFILE_ORDER.index(prof) < PROFILE_ORDER.index(cur[0]):
                    best[folder.name] = _claims_record(where, folder.name, prof)
                break
    return best


_NO_SOURCE = {"device": "", "commit": "", "recorded": ""}  # a row without stored evidence


def _row(c: claims_mod.Claim, found: tuple | None, measured: dict) -> dict:
    """One board row of claim ``c`` from its notebook's record ``found`` (see :func:`_best_claims_records`); a
    measured claim is added to ``measured`` (id -> (claim, evidence)) for the multiplicity policy."""
    row = {
        "id": c.id,
        "paper": c.paper,
        "where": c.where,
        "claim": c.statement,
        PAPER_VALUE: c.paper_value,
        "measure": c.measure,
        "criterion": c.criterion.text,
        "notebook": c.notebook,
        "kind": c.kind,
        "view_of": c.view_of,
    }
    rec = found[1].get(c.id) if found and found[1] is not None else None
    if found is not None and found[3]:
        return {**row, "ours": "—", "verdict": RECORD_ERROR, "reason": found[3], "profile": found[0], **_NO_SOURCE}
    if rec is None:
        return {**row, "ours": "—", "verdict": NOT_MEASURED, "reason": "", "profile": "", **_NO_SOURCE}
    ev = claims_mod.Evidence.from_dict(rec["evidence"])
    measured[c.id] = (c, ev)
    v, why = claims_mod.verdict(c, ev)
    src = rec["sources"][0] if rec["sources"] else {"device": found[2]["device"], "commit": found[2]["git"]["commit"]}
    return {
        **row,
        "ours": format_value(ev, c.unit),
        "sensitivity": sensitivity(ev, c.unit),
        "verdict": v,
        "reason": why,
        "profile": found[0],
        "device": src["device"],
        "commit": src["commit"][:10],
        "recorded": str(found[2].get("timestamp", ""))[:10],
    }


def collect_claims(
    notebooks: list[str] | None = None, profile: str | None = None, *, root: str | os.PathLike | None = None
):
    """Every registered claim with the evidence of the best profile stored for its notebook (gpu > cpu > smoke).

    Verdicts are recomputed here from the stored evidence with the registry's criterion, then judged under the
    book's multiplicity policy (:data:`maelab.claims.POLICY`, :func:`maelab.claims.adjust`: Holm within each
    paper's stochastic rows). The family of a row is taken from every notebook's record of the same selection
    (the best stored profile, or ``profile``'s records), whatever ``notebooks`` keeps. When the best stored claims
    record of a notebook cannot be trusted (checksum mismatch, unreadable, old format), its claims get the verdict
    ``RECORD_ERROR`` with the reason -- the scoreboard never falls back silently to a lower profile.

    Args:
        notebooks: only the claims of these notebooks (default: every registered claim).
        profile: read this profile's record (where a page run with it stores its claims) instead of the best one.
        root: the results folder to read (a run's ``--results-dir``: the scoreboard page passes
            ``ctx.options.results_root``); None: the committed results and the smoke cache.

    Returns:
        ``pandas.DataFrame``, one row per claim in registry order: id, paper, where, claim, paper's value, measure,
        criterion, notebook, ours (mean ± s.e., n), verdict, reason, profile, device, commit, recorded (date),
        raw verdict (the row's own test), p (its two-sided p; None without a test), p_adj (Holm-adjusted), kind
        (:data:`maelab.claims.KINDS`) and view_of. A row of kind "identity" whose check holds shows ``IDENTITY``.
    """
    import pandas as pd

    best = _best_claims_records(None, profile, root)  # every notebook: the policy's families span the paper
    measured: dict = {}
    rows = [_row(c, best.get(c.notebook), measured) for c in claims_mod.REGISTRY.values()]
    decided = claims_mod.adjust(measured)
    for row in rows:
        d = decided.get(row["id"])
        row["raw verdict"] = d.raw_verdict if d else row["verdict"]
        row["p"], row["p_adj"] = (d.p, d.p_adj) if d else (None, None)
        if d:
            row["verdict"], row["reason"] = d.verdict, d.reason
            if row["kind"] == "identity" and d.verdict == claims_mod.SUPPORTED:
                row["verdict"] = IDENTITY  # holds by construction: shown, never counted as support
    board = pd.DataFrame(rows)
    if notebooks is not None:
        board = board[board["notebook"].isin(notebooks)].reset_index(drop=True)
    return board


def verdict_counts(board):
    """Claims per paper (rows, in book order: :func:`papers`) and verdict (columns, :data:`VERDICT_ORDER`).

    Args:
        board: :func:`collect_claims` (or a subset of its rows).

    Returns:
        ``pandas.DataFrame`` of ints; a verdict outside :data:`VERDICT_ORDER` is an error.
    """
    import pandas as pd

    bad = sorted(set(board["verdict"]) - set(VERDICT_ORDER)) if len(board) else []
    if bad:
        raise ParameterError("board verdicts", "among " + ", ".join(repr(v) for v in VERDICT_ORDER), bad[0])
    present = set(board["paper"]) if len(board) else set()
    order = list(registry.papers())
    keys = [p for p in order if p in present] + sorted(present - set(order))
    counts = pd.DataFrame(0, index=pd.Index(keys, name="paper"), columns=list(VERDICT_ORDER), dtype=int)
    for (paper, v), n in board.groupby(["paper", "verdict"]).size().items() if len(board) else ():
        counts.loc[paper, v] = int(n)
    return counts


def kind_counts(board):
    """Rows per kind (:data:`maelab.claims.KINDS`) and verdict, each counted once as a finding: a row that is a
    view of another (``view_of``) is left out. ``pandas.DataFrame`` of ints, kinds as rows."""
    import pandas as pd

    own = board[board["view_of"].fillna("") == ""] if len(board) else board
    counts = pd.DataFrame(0, index=pd.Index(list(claims_mod.KINDS), name="kind"), columns=list(VERDICT_ORDER))
    for (kind, v), n in own.groupby(["kind", "verdict"]).size().items() if len(own) else ():
        counts.loc[kind, v] = int(n)
    return counts
