"""The scoreboard and a page's findings drawn: findings boxes, scoreboard tables, the verdicts figure, settings tables.

Everything here draws what :mod:`maelab.book.scoreboard` gathers. The boxes and tables carry one small style sheet,
``static/findings.css`` (package data, read by ``css()`` when a box is rendered), repeated in each box because a
page may show a box alone. Verdict badges take their colours from ``VERDICT_COLORS``, which the figure shares.
"""

from __future__ import annotations

import dataclasses
import html
import re
from importlib import resources
from typing import Any

from .. import claims as claims_mod
from .._validate import ParameterError, one_of
from ..profiles import PROFILE_NAMES
from .scoreboard import (
    IDENTITY,
    NOT_MEASURED,
    PAPER_VALUE,
    RECORD_ERROR,
    VERDICT_ORDER,
    collect_claims,
    kind_counts,
    paper_label,
    papers,
    verdict_counts,
)
from .toc import claim_sections, in_toc, notebooks_in_order

#: background and text colour of each verdict's badge; the background is also its colour in the scoreboard figure
VERDICT_COLORS: dict[str, tuple[str, str]] = {
    claims_mod.SUPPORTED: ("#027a5c", "#ffffff"),
    claims_mod.NOT_SUPPORTED: ("#b84a00", "#ffffff"),
    claims_mod.INCONCLUSIVE: ("#ece133", "#1f1f1f"),
    IDENTITY: ("#56b4e9", "#1f1f1f"),
    NOT_MEASURED: ("#c8c8c8", "#1f1f1f"),
    RECORD_ERROR: ("#6a3d9a", "#ffffff"),
}
CSS_FILE = "static/findings.css"  # in this package (package data)
_FINDINGS_VIEWS: dict[tuple[str, str], Any] = {}  # (notebook, profile) -> display handle of its findings box
esc = html.escape


def css() -> str:
    """The ``<style>`` element of the boxes and tables: :data:`CSS_FILE`, read now, without its comments."""
    text = resources.files(__package__).joinpath(CSS_FILE).read_text(encoding="utf-8")
    return "<style>\n" + re.sub(r"/\*.*?\*/\s*", "", text, flags=re.S) + "</style>"


def verdict_badge(verdict: str) -> str:
    """HTML of a verdict's coloured badge (one of :data:`VERDICT_ORDER`)."""
    if verdict not in VERDICT_COLORS:
        raise ParameterError("verdict", "one of " + ", ".join(repr(v) for v in VERDICT_ORDER), verdict)
    bg, fg = VERDICT_COLORS[verdict]
    return f'<span class="maelab-badge" style="background:{bg};color:{fg}">{esc(verdict)}</span>'


def _claim_links(board, link_base: str, same_page: bool = False) -> dict[str, str]:
    """Claim id -> URL of the page (and section) that measured it, relative to the page showing the link; claims
    of a notebook that is not a page of the book (not in _toc.yml, or not written yet) get no link."""
    links: dict[str, str] = {}
    for nb in dict.fromkeys(board["notebook"]) if len(board) else ():
        if not same_page and not in_toc(nb):
            continue
        try:
            sections = claim_sections(nb)
        except ParameterError:  # a claim of a notebook that does not exist (yet): no link
            continue
        page = "" if same_page else f"{link_base}{nb}.html"
        for cid in board.loc[board["notebook"] == nb, "id"]:
            anchor = sections.get(cid, (None, ""))[1]
            if anchor or page:
                links[cid] = page + (f"#{anchor}" if anchor else "")
    return links


def _counts_line(board) -> str:
    counts = verdict_counts(board).sum()
    parts = [f"{int(counts[v])} {verdict_badge(v)}" for v in VERDICT_ORDER if counts[v]]
    return f"{len(board)} claim{'s' if len(board) != 1 else ''}: " + " ".join(parts)


def _findings_box(board, *, title: str, note: str, links: dict[str, str]) -> str:
    rows = []
    for _, d in board.iterrows():
        claim = esc(str(d["claim"]))
        if d["id"] in links:
            claim = f'<a href="{esc(links[d["id"]])}">{claim}</a>'
        rows.append(
            f"<tr><td>{claim}</td><td>{esc(str(d['where']))}</td><td>{esc(str(d[PAPER_VALUE]))}</td>"
            f"<td>{esc(str(d['ours']))}</td><td>{verdict_badge(d['verdict'])}</td></tr>"
        )
    body = (
        (
            '<table><colgroup><col style="width:35%"><col style="width:13%"><col style="width:17%">'
            '<col style="width:17%"><col style="width:18%"></colgroup><thead><tr><th>claim</th><th>where</th>'
            "<th>paper</th><th>ours</th><th>verdict</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
        )
        if rows
        else ""
    )
    counts = _counts_line(board) if rows else "no claims"
    return (
        f'{css()}<div class="maelab-findings"><p><b>{esc(title)}</b> · {counts}'
        f'</p>{body}<p class="maelab-note">{esc(note)}</p></div>'
    )


def _record_note(board) -> str:
    """Where a box's verdicts come from: profile, commit and date of the stored claims records."""
    recs = sorted({(r["profile"], r["commit"], r["recorded"]) for _, r in board.iterrows() if r["profile"]})
    if not recs:
        return "no claims record stored yet"
    return "; ".join(
        f"profile {p}" + (f", commit {c}" if c else "") + (f", recorded {t}" if t else "") for p, c, t in recs
    )


def findings(notebook: str, profile: str | None = None, *, when: str = "stored", root=None):
    """The findings box of a notebook page: its claims, our value against the paper's, each verdict as a badge.

    Everything comes from the stored claims record (:func:`maelab.book.collect_claims`): verdicts are recomputed
    from the stored evidence with the registry's criteria, and a record that fails its checksum shows ``record
    error``.

    Args:
        notebook: the notebook's name (``notebooks/NAME.md``).
        profile: the profile whose record is shown (a page shows its own run's); ``None``: the best one stored.
        when: ``"stored"``, ``"before"`` (drawn before this run records its claims) or ``"after"`` (redrawn by
            :meth:`maelab.book.Context.finish`): only the note under the table differs.
        root: the results folder to read (None: the default ones, see :func:`maelab.book.collect_claims`).

    Returns:
        ``IPython.display.HTML``.
    """
    from IPython.display import HTML

    one_of("when", when, ("stored", "before", "after"))
    one_of("notebook", notebook, notebooks_in_order())
    board = collect_claims(notebooks=[notebook], profile=profile, root=root)
    note = {
        "stored": "Verdicts from the stored claims record",
        "before": "Verdicts stored before this run (this box is redrawn when the page has run)",
        "after": "Verdicts of this run, as stored in its claims record",
    }[when]
    note += f" ({_record_note(board)}), each computed by maelab.claims from the claim's stated criterion."
    if board.empty:  # no claim of the registry is this page's (zhang_regime, a pilot)
        note = "This page records no claim of the papers: it reports measurements only."
    return HTML(
        _findings_box(board, title="Findings of this page", note=note, links=_claim_links(board, "", same_page=True))
    )


def show_findings(notebook: str, options: Any) -> None:
    """Display a page's findings box (as stored before this run) and let :meth:`maelab.book.Context.finish` redraw
    it.

    The one-liner that opens each notebook page, before its setup cell::

        from maelab import book; book.show_findings("masking", run_options)

    ``options``: the page's run options (the ``run_options`` parameter: a dict or
    :class:`maelab.options.RunOptions`, whose profile and results folder are read), or a profile's name.
    """
    from IPython.display import display

    from .. import store
    from ..options import RunOptions

    if isinstance(options, str):
        one_of("profile", options, PROFILE_NAMES)
        profile, root = options, None
    else:
        opts = RunOptions.from_param(options)
        one_of("profile", opts.profile, PROFILE_NAMES)
        profile, root = opts.profile, store.results_root(opts.profile, opts)
    handle = display(findings(notebook, profile, when="before", root=root), display_id=True)
    if handle is not None:
        _FINDINGS_VIEWS[(notebook, profile)] = handle


def refresh_findings(notebook: str, profile: str, root=None) -> None:
    """Redraw the findings box :func:`show_findings` displayed for ``(notebook, profile)``, from the record stored
    now under ``root`` (the run's results folder; None: the profile's default); nothing when none was
    displayed."""
    handle = _FINDINGS_VIEWS.get((notebook, profile))
    if handle is not None:
        handle.update(findings(notebook, profile, when="after", root=root))


def paper_findings(paper: str, board=None, *, link_base: str = ""):
    """The findings box of a paper: its claims (best stored profile per notebook), each linked to its page.

    Args:
        paper: a paper's key (:func:`maelab.book.papers`).
        board: :func:`maelab.book.collect_claims` (computed when omitted).
        link_base: the notebooks folder relative to the page showing the box (``"../../notebooks/"`` for
            ``book/papers/*.md``; ``""`` on a notebook page).

    Returns:
        ``IPython.display.HTML``.
    """
    from IPython.display import HTML

    one_of("paper", paper, papers())
    board = collect_claims() if board is None else board
    part = board[board["paper"] == paper]
    note = (
        f"Verdicts from the stored claims records ({_record_note(part)}), computed by maelab.claims from "
        "each claim's stated criterion; criteria and reasons are on the claims scoreboard."
    )
    return HTML(_findings_box(part, title="Findings", note=note, links=_claim_links(part, link_base)))


def _count_rows(counts, link=None) -> str:
    """Table rows of a counts frame (rows x :data:`VERDICT_ORDER`) with a total column; ``link(key)`` -> the cell."""
    return "".join(
        f"<tr><td>{link(k) if link else esc(k)}</td>"
        + "".join(f"<td>{int(counts.loc[k, v])}</td>" for v in VERDICT_ORDER)
        + f"<td>{int(counts.loc[k].sum())}</td></tr>"
        for k in counts.index
    )


def findings_summary(board=None, *, link_base: str = ""):
    """What the book found: claims per paper and verdict, each paper linked to its scoreboard table.

    Args:
        board: :func:`maelab.book.collect_claims` (computed when omitted).
        link_base: the scoreboard page relative to the page showing the table (``""`` on the scoreboard itself).

    Returns:
        ``IPython.display.HTML``.
    """
    from IPython.display import HTML

    board = collect_claims() if board is None else board
    counts = verdict_counts(board)
    head = "".join(f"<th>{verdict_badge(v)}</th>" for v in VERDICT_ORDER)
    rows = _count_rows(counts, lambda p: f'<a href="{esc(link_base)}#scoreboard-{p}">{esc(paper_label(p))}</a>')
    total = "".join(f"<td><b>{int(counts[v].sum())}</b></td>" for v in VERDICT_ORDER)
    cols = '<col style="width:26%">' + '<col style="width:12.5%">' * len(VERDICT_ORDER) + '<col style="width:11.5%">'
    table = (
        f"<table><colgroup>{cols}</colgroup><thead><tr><th>paper</th>{head}<th>claims</th></tr></thead>"
        f"<tbody>{rows}"
        f"<tr><td><b>all</b></td>{total}<td><b>{len(board)}</b></td></tr></tbody></table>"
    )
    kinds = kind_counts(board)
    ktable = (
        f"<table><colgroup>{cols}</colgroup><thead><tr><th>kind of row (findings)</th>{head}<th>findings</th></tr>"
        f"</thead><tbody>{_count_rows(kinds)}<tr><td><b>all</b></td>"
        + "".join(f"<td><b>{int(kinds[v].sum())}</b></td>" for v in VERDICT_ORDER)
        + f"<td><b>{int(kinds.values.sum())}</b></td></tr></tbody></table>"
    )
    return HTML(
        f'{css()}<div class="maelab-findings"><p><b>What the book found</b> · {_counts_line(board)}</p>'
        f"{table}<p>The same rows by kind, each independent finding once (a row that reads another row's samples "
        f"under a second criterion is left out): <i>identity</i> rows hold by construction and are never counted "
        f"as support, <i>computation</i> rows compute a theorem's quantity exactly, <i>trained</i> rows measure "
        f"models we trained.</p>{ktable}"
        '<p class="maelab-note">Verdicts computed by <code>maelab.claims</code> from the stored claims '
        "records (the best profile stored per notebook), after the multiplicity policy (Holm within each "
        "paper).</p></div>"
    )


def _p_text(r) -> str:
    """A row's p-values as the scoreboard prints them: raw and Holm-adjusted, or why there are none."""
    p = r.get("p")
    if p is None or p != p:  # None or NaN
        return "— (decided without a test: an exact value, or no spread over seeds)"
    return f"{p:.2g} raw, {r['p_adj']:.2g} adjusted (its own test says: {r['raw verdict']})"


def _scoreboard_row(r, links: dict[str, str]) -> str:
    """A claim's row and its collapsible detail row (criterion, reason, p-values, provenance)."""
    anchor = "claim-" + "-".join(filter(None, "".join(ch if ch.isalnum() else " " for ch in r["id"]).split()))
    claim = esc(r["claim"])
    if r["id"] in links:
        claim = f'<a href="{esc(links[r["id"]])}">{claim}</a>'
    prov = ", ".join(f"{k} {esc(str(r[k]))}" for k in ("profile", "device", "commit", "recorded") if r[k])
    detail = "".join(
        f"<dt>{k}</dt><dd>{esc(str(v))}</dd>"
        for k, v in (
            ("claim id", r["id"]),
            ("our measure", r["measure"]),
            ("criterion", r["criterion"]),
            ("reason", r["reason"] or "—"),
            ("p (Holm)", _p_text(r)),
            ("detectable (80 % power)", r.get("sensitivity") or "— (an exact value or a series)"),
            ("provenance", prov or "—"),
        )
    )
    return (
        f'<tr id="{anchor}"><td>{esc(r["where"])}</td><td>{claim}</td><td>{esc(r[PAPER_VALUE])}</td>'
        f"<td>{esc(r['ours'])}</td><td>{verdict_badge(r['verdict'])}</td></tr>"
        f'<tr class="maelab-detail"><td colspan="5"><details><summary>criterion, reason, provenance'
        f"</summary><dl>{detail}</dl></details></td></tr>"
    )


def scoreboard_table(board, paper: str) -> str:
    """One paper's scoreboard table (HTML): claim, where, paper's value, ours, verdict badge, and under each row a
    collapsible detail row with the criterion, reason and provenance; each claim links to the page (and section)
    that measured it. The table fits its container (fixed layout, long values wrap)."""
    one_of("paper", paper, papers())
    part = board[board["paper"] == paper]
    links = _claim_links(part, "")
    rows = "".join(_scoreboard_row(r, links) for _, r in part.iterrows())
    cols = "".join(f'<col style="width:{w}%">' for w in (12, 37, 16, 17, 18))  # a badge fits its column
    return (
        f'{css()}<div class="maelab-board"><table class="maelab-scoreboard" id="scoreboard-{paper}">'
        f"<caption>{esc(paper_label(paper))} · {_counts_line(part)}</caption><colgroup>{cols}</colgroup>"
        "<thead><tr><th>where</th><th>claim</th><th>paper</th><th>ours (mean ± s.e., n)</th><th>verdict</th></tr>"
        f"</thead><tbody>{rows}</tbody></table></div>"
    )


def plot_verdict_counts(board, ax=None):
    """Stacked horizontal bars: claims per paper, one segment per verdict in its badge colour (the book's style).

    Returns:
        the matplotlib Axes.
    """
    import matplotlib.pyplot as plt

    counts = verdict_counts(board)
    if ax is None:
        _, ax = plt.subplots(figsize=(7.2, 0.5 * max(1, len(counts)) + 1.2), layout="constrained")
    labels = [paper_label(p) for p in counts.index]
    left = [0] * len(counts)
    for v in VERDICT_ORDER:
        n = counts[v].tolist()
        bars = ax.barh(labels, n, left=left, color=VERDICT_COLORS[v][0], edgecolor="white", label=v)
        ax.bar_label(
            bars, labels=[str(k) if k else "" for k in n], label_type="center", fontsize=8, color=VERDICT_COLORS[v][1]
        )
        left = [a + b for a, b in zip(left, n)]
    ax.invert_yaxis()
    ax.set_xlabel("claims")
    ax.legend(ncol=len(VERDICT_ORDER), loc="lower left", bbox_to_anchor=(0.0, 1.0), fontsize=7.5)
    return ax


def settings_table(settings: Any, provenance: dict[str, Any] | None = None, *, title: str = "Settings"):
    """A collapsible HTML table of a notebook's settings, headed by its provenance (profile, device, commit, wall time).

    Args:
        settings: a plain dict of setting -> value, or a settings dataclass instance (a field's ``metadata["help"]``
            is shown as its meaning).
        provenance: e.g. :func:`maelab.book.page_provenance` of the notebook's context; shown in the summary line
            and first rows.
        title: the summary line's label.

    Returns:
        ``IPython.display.HTML`` (a ``<details>`` element, closed by default).
    """
    from IPython.display import HTML

    if dataclasses.is_dataclass(settings) and not isinstance(settings, type):
        rows = [(f.name, getattr(settings, f.name), f.metadata.get("help", "")) for f in dataclasses.fields(settings)]
    elif isinstance(settings, dict):
        rows = [(k, v, "") for k, v in settings.items()]
    else:
        raise ParameterError("settings", "a dict or a settings dataclass instance", type(settings).__name__)
    prov = dict(provenance or {})
    head = " · ".join(f"{esc(str(k))} <b>{esc(str(v))}</b>" for k, v in prov.items() if k in ("profile", "device"))
    cells = "".join(f"<tr><th>{esc(str(k))}</th><td>{esc(str(v))}</td><td></td></tr>" for k, v in prov.items())
    cells += "".join(
        f"<tr><th><code>{esc(str(k))}</code></th><td><code>{esc(repr(v))}</code></td><td>{esc(str(h))}</td></tr>"
        for k, v, h in rows
    )
    return HTML(
        f'<details class="maelab-settings"><summary>{esc(title)}: {head}</summary>'
        f'<table class="table"><tbody>{cells}</tbody></table></details>'
    )
