"""Findings boxes and the scoreboard's pieces, from claims records stored in a temp results folder.

Expected verdicts are worked out by hand from the registry's criteria (``bisulco.eq19_as_printed`` and
``bisulco.eq19_21_sinc`` are ``Below(1e-9)``: 1.24 is not supported, 0.0 is supported); expected counts are
counted by hand from the fixture rows.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from maelab import book, paths
from maelab._validate import ParameterError
from maelab.book import toc
from maelab.claims import Evidence

MASKING_IDS = [
    "bisulco.eq19_21_sinc",
    "bisulco.eq19_as_printed",
    "bisulco.fig22_grating_zeros",
    "bisulco.fig22_smoothing",
]


class _Table(HTMLParser):
    """Rows of every table as lists of cell texts; badges (text, style) and links (href) seen, ids of rows."""

    def __init__(self):
        super().__init__()
        self.rows, self.badges, self.links, self.row_ids, self.text = [], [], [], [], ""
        self._cell, self._badge = None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr":
            self.rows.append([])
            if "id" in a:
                self.row_ids.append(a["id"])
        elif tag in ("td", "th"):
            self._cell = ""
        elif tag == "span" and a.get("class") == "maelab-badge":
            self._badge = ["", a.get("style", "")]
        elif tag == "a":
            self.links.append(a.get("href"))

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(self._cell.strip())
            self._cell = None
        elif tag == "span" and self._badge is not None:
            self.badges.append(tuple(self._badge))
            self._badge = None

    def handle_data(self, data):
        self.text += data
        if self._cell is not None:
            self._cell += data
        if self._badge is not None:
            self._badge[0] += data


def _parse(html: str) -> _Table:
    p = _Table()
    p.feed(html)
    return p


def _options(root: Path, profile: str = "cpu") -> dict:
    """The ``run_options`` parameter of a page run with ``profile`` and the results folder ``root``."""
    return book.RunOptions(profile=profile, results_root=str(root)).to_param()


def _store_claims(values: dict[str, float], root: Path, profile: str = "cpu"):
    """Run the masking page's claims step for ``values`` (claim id -> value), as a notebook would."""
    ctx = book.setup("masking", _options(root, profile))
    res = ctx.load_or_compute("identity_1d", {"n": 3}, lambda: {"err": 1.0})
    for cid, v in values.items():
        ctx.claim(cid, Evidence(value=v), res)
    return ctx


@pytest.fixture
def results(tmp_path, monkeypatch) -> Path:
    monkeypatch.setattr("maelab.book.render._FINDINGS_VIEWS", {})
    return tmp_path / "results"


def _verdicts(html: str) -> dict[str, tuple[str, str]]:
    """Claim text -> (ours, verdict) from a findings box."""
    from maelab.claims import REGISTRY

    by_text = {REGISTRY[c].statement: c for c in MASKING_IDS}
    return {by_text[r[0]]: (r[3], r[4]) for r in _parse(html).rows if r and r[0] in by_text}


def test_findings_box_shows_stored_verdicts_with_badges_and_section_links(results):
    _store_claims({"bisulco.eq19_as_printed": 1.24, "bisulco.eq19_21_sinc": 0.0}, results).finish()
    html = book.findings("masking", "cpu", root=results)._repr_html_()
    got = _verdicts(html)
    assert got == {
        "bisulco.eq19_21_sinc": ("0", "identity"),  # holds by construction: shown apart, not as support
        "bisulco.eq19_as_printed": ("1.24", "not supported"),
        "bisulco.fig22_grating_zeros": ("—", "not yet measured"),
        "bisulco.fig22_smoothing": ("—", "not yet measured"),
    }
    p = _parse(html)
    # badges carry their verdict's colour; the counts line: 1 not supported, 1 identity, 2 not yet measured
    assert ("not supported", "background:#b84a00;color:#ffffff") in p.badges
    assert "4 claims: 1 not supported 1 identity 2 not yet measured" in " ".join(p.text.split())
    # each claim links to the section of notebooks/masking.md whose cell records it (headings of that file)
    assert set(p.links) == {"#the-dft-of-a-mask-eq-1521", "#masked-photographs-in-the-fourier-domain-fig-22"}
    assert "profile cpu" in p.text and "stored claims record" in p.text
    # another profile has no record: nothing is borrowed from cpu
    assert set(v for _, v in _verdicts(book.findings("masking", "smoke", root=results)._repr_html_()).values()) == {
        "not yet measured"
    }


def test_a_page_without_claims_marks_its_result_set_complete_by_the_results_it_used(results):
    """zhang_regime records no claims: its claims record lists the results its run used, so that the book can tell
    when its gpu result set is complete (before, such a page was never complete and its gpu results never shown)."""
    from maelab.book.runner import complete

    def run(n: int):
        ctx = book.setup("masking", _options(results))
        a = ctx.load_or_compute("identity_1d", {"n": n}, lambda: {"err": 1.0})
        ctx.load_or_compute("identity_1d", {"n": n}, lambda: {"err": 1.0})  # used twice, listed once
        b = ctx.load_or_compute("other", {"k": 1}, lambda: {"v": 2.0})
        return ctx.finish(), a, b

    assert book.setup("masking", _options(results)).finish() is None  # nothing used: nothing to mark
    assert not complete("masking", "cpu", results)
    rec, a, b = run(3)
    assert rec["claims"] == {} and rec["results"] == [
        {"name": "identity_1d", "config_hash": a.provenance["config_hash"]},
        {"name": "other", "config_hash": b.provenance["config_hash"]},
    ]
    assert complete("masking", "cpu", results)
    assert run(3)[0].path.read_bytes() == rec.path.read_bytes()  # the same results: kept as it is
    book.setup("masking", _options(results)).load_or_compute("identity_1d", {"n": 4}, lambda: {"err": 0.5})
    assert not complete("masking", "cpu", results)  # a result it used was replaced under another config
    rec4 = run(4)[0]
    assert rec4["results"][0]["config_hash"] != rec["results"][0]["config_hash"] and complete("masking", "cpu", results)


def test_findings_box_of_a_page_without_claims_says_so(results):
    """zhang_regime registers no claim: its box says the page reports measurements only, not that a record is
    missing; a page with claims and no record says that none is stored yet."""
    from maelab.claims import REGISTRY

    assert not any(c.notebook == "zhang_regime" for c in REGISTRY.values())
    text = " ".join(_parse(book.findings("zhang_regime", "cpu", root=results)._repr_html_()).text.split())
    assert "records no claim of the papers" in text and "no claims record stored yet" not in text
    text = " ".join(_parse(book.findings("masking", "cpu", root=results)._repr_html_()).text.split())
    assert "no claims record stored yet" in text and "records no claim" not in text


def test_findings_box_shows_record_error_for_a_tampered_record(results):
    rec = _store_claims({"bisulco.eq19_as_printed": 1.24}, results).finish()
    rec.path.write_text(rec.path.read_text().replace("1.24", "1e-12"))  # would flip the verdict to supported
    html = book.findings("masking", root=results)._repr_html_()
    assert {v for _, v in _verdicts(html).values()} == {"record error"}
    p = _parse(html)
    assert ("record error", "background:#6a3d9a;color:#ffffff") in p.badges
    assert "4 claims: 4 record error" in " ".join(p.text.split())


class _Handle:
    def __init__(self, obj):
        self.shown = [obj]

    def update(self, obj):
        self.shown.append(obj)


def test_show_findings_is_redrawn_with_this_runs_verdicts_by_finish(results, monkeypatch):
    import IPython.display

    handles = []

    def fake_display(obj, display_id=False):
        assert display_id is True
        handles.append(_Handle(obj))
        return handles[-1]

    monkeypatch.setattr(IPython.display, "display", fake_display)
    _store_claims({"bisulco.eq19_as_printed": 0.0}, results).finish()  # the previous run: supported
    book.show_findings("masking", _options(results))  # what the page's findings cell passes: its run_options
    first = handles[0].shown[0]._repr_html_()
    assert _verdicts(first)["bisulco.eq19_as_printed"][1] == "supported" and "before this run" in first
    ctx = _store_claims({"bisulco.eq19_as_printed": 1.24}, results)  # this run measures 1.24
    assert len(handles[0].shown) == 1  # nothing redrawn before finish
    with pytest.warns(book.EvidenceChanged):  # same source, other evidence: said in one line, then rewritten
        ctx.finish()
    last = handles[0].shown[-1]._repr_html_()
    assert _verdicts(last)["bisulco.eq19_as_printed"] == ("1.24", "not supported") and "of this run" in last
    with pytest.raises(ParameterError, match="^profile must be one of 'smoke', 'cpu', 'gpu'; got 'huge'$"):
        book.show_findings("masking", "huge")
    with pytest.raises(ParameterError, match="^profile must be one of 'smoke', 'cpu', 'gpu'; got 'auto'$"):
        book.show_findings("masking", {"profile": "auto"})  # the runner's choice, never a page's
    with pytest.raises(ParameterError, match="^notebook must be one of .*; got 'nope'$"):
        book.findings("nope")


def test_executed_page_shows_this_runs_verdicts_in_its_first_output(results, tmp_path):
    """In a real kernel (nbclient, as papermill runs pages) the box of the first cell is replaced in place."""
    from nbclient import NotebookClient

    from maelab.papers import BOOTSTRAP

    _store_claims({"bisulco.eq19_as_printed": 0.0}, results).finish()  # stored before: supported
    opts = _options(results)
    cells = [  # the kernel installs the paper registry first, as the runner's injected cell does
        f"run_options = {opts!r}",
        BOOTSTRAP + "\nfrom maelab import book; book.show_findings('masking', run_options)",
        "from maelab.claims import Evidence\n"
        "ctx = book.setup('masking', run_options)\n"
        "res = ctx.load_or_compute('identity_1d', {'n': 3}, lambda: {'err': 1.0})\n"
        "_ = ctx.claim('bisulco.eq19_as_printed', Evidence(value=1.24), res)",
        "_ = ctx.finish()",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outs = nb.cells[1].outputs
    assert len(outs) == 1 and outs[0]["output_type"] == "display_data"
    html = outs[0]["data"]["text/html"]
    assert _verdicts(html)["bisulco.eq19_as_printed"] == ("1.24", "not supported") and "of this run" in html
    # the other cells display nothing (the finish cell may warn that the evidence changed, on stderr)
    assert all(o["output_type"] == "stream" for c in nb.cells[2:] for o in c.outputs)


def _board() -> pd.DataFrame:
    rows = [
        ("zhang2022", "supported"),
        ("zhang2022", "supported"),
        ("zhang2022", "record error"),
        ("bisulco2025", "not supported"),
        ("bisulco2025", "inconclusive"),
        ("kong2023", "not yet measured"),
    ]
    return pd.DataFrame(
        [
            {
                "id": f"{p}.c{i}",
                "paper": p,
                "where": f"Fig. {i}",
                "claim": f"claim <{i}>",
                "paper's value": "0.5",
                "measure": "m",
                "criterion": "value > 0",
                "notebook": "masking",
                "ours": "0.7 ± 0.01 s.e. (n=3)",
                "verdict": v,
                "reason": "r" if v != "record error" else "claims.cpu.json: tampered",
                "profile": "cpu",
                "device": "cpu (x86_64)",
                "commit": "0123456789",
                "recorded": "2026-01-01",
                "kind": "trained",
                "view_of": "",
            }
            for i, (p, v) in enumerate(rows)
        ]
    )


def test_verdict_counts_per_paper_in_papers_order():
    counts = book.verdict_counts(_board())
    assert list(counts.index) == ["bisulco2025", "zhang2022", "kong2023"]  # book order (maelab.registry.Paper.order)
    assert list(counts.columns) == list(book.VERDICT_ORDER)
    assert counts.loc["zhang2022"].tolist() == [2, 0, 0, 0, 0, 1]
    assert counts.loc["bisulco2025"].tolist() == [0, 1, 1, 0, 0, 0]
    assert counts.loc["kong2023"].tolist() == [0, 0, 0, 0, 1, 0]
    bad = _board().assign(verdict="maybe")
    with pytest.raises(ParameterError, match="^board verdicts must be among 'supported'.*; got 'maybe'$"):
        book.verdict_counts(bad)
    assert book.verdict_counts(_board().iloc[:0]).empty


def test_scoreboard_table_rows_details_and_record_error():
    html = book.scoreboard_table(_board(), "zhang2022")
    p = _parse(html)
    assert 'id="scoreboard-zhang2022"' in html
    main = [r for r in p.rows if len(r) == 5]
    assert [r[0] for r in main] == ["where", "Fig. 0", "Fig. 1", "Fig. 2"]
    assert main[1][1] == "claim <0>" and "claim <0>" not in html  # escaped, never markup
    assert [r[4] for r in main[1:]] == ["supported", "supported", "record error"]
    assert p.row_ids == ["claim-zhang2022-c0", "claim-zhang2022-c1", "claim-zhang2022-c2"]
    assert ("record error", "background:#6a3d9a;color:#ffffff") in p.badges
    details = [r for r in p.rows if len(r) == 1]
    assert len(details) == 3 and "claims.cpu.json: tampered" in details[2][0]
    assert "device cpu (x86_64), commit 0123456789" in details[0][0]
    assert "3 claims: 2 supported 1 record error" in " ".join(p.text.split())
    with pytest.raises(ParameterError, match="^paper must be one of"):
        book.scoreboard_table(_board(), "nobody2020")


def test_findings_summary_counts_and_links_each_paper_to_its_table():
    p = _parse(book.findings_summary(_board(), link_base="../notebooks/scoreboard.html")._repr_html_())
    table = [r for r in p.rows if r]
    assert table[0] == ["paper", *book.VERDICT_ORDER, "claims"]
    assert table[1:] == [
        ["Bisulco et al. (ICCV 2025)", "0", "1", "1", "0", "0", "0", "2"],
        ["Zhang, Wang & Wang (NeurIPS 2022)", "2", "0", "0", "0", "0", "1", "3"],
        ["Kong et al. (CVPR 2023)", "0", "0", "0", "0", "1", "0", "1"],
        ["all", "2", "1", "1", "0", "1", "1", "6"],
        # the same rows by kind, each independent finding once
        ["kind of row (findings)", *book.VERDICT_ORDER, "findings"],
        ["identity", "0", "0", "0", "0", "0", "0", "0"],
        ["computation", "0", "0", "0", "0", "0", "0", "0"],
        ["trained", "2", "1", "1", "0", "1", "1", "6"],
        ["all", "2", "1", "1", "0", "1", "1", "6"],
    ]
    assert p.links == [f"../notebooks/scoreboard.html#scoreboard-{k}" for k in ("bisulco2025", "zhang2022", "kong2023")]


def test_claim_sections_follow_headings_literals_and_fstrings(tmp_path):
    nb = tmp_path / "notebooks" / "masking.md"
    nb.parent.mkdir()
    nb.write_text("""# Title

```{code-cell} ipython3
_ = ctx.claim("bisulco.eq19_21_sinc", ev)
```

## The DFT of a mask (Eq. 15–21)

```{code-cell} ipython3
for cid in ids:
    _ = ctx.claim(f"{cid}", ev)
```

```{code-cell} ipython3
_ = ctx.claim("bisulco.eq19_as_printed", ev)
```

## Scale against $m$ and `p`

```{code-cell} ipython3
for kind in ("grating_zeros", "smoothing"):
    _ = ctx.claim(f"bisulco.fig22_{kind}", ev)
```
""")
    got = book.claim_sections("masking", root=tmp_path)
    # under the title only (no section) and the f"{cid}" cell place nothing
    assert got == {
        "bisulco.eq19_as_printed": ("The DFT of a mask (Eq. 15–21)", "the-dft-of-a-mask-eq-1521"),
        "bisulco.fig22_grating_zeros": ("Scale against $m$ and `p`", "scale-against-m-and-p"),
        "bisulco.fig22_smoothing": ("Scale against $m$ and `p`", "scale-against-m-and-p"),
    }
    with pytest.raises(ParameterError, match="^notebook must be one of"):
        book.claim_sections("nope", root=tmp_path)


def test_every_notebook_with_claims_opens_with_its_findings_cell():
    """The findings cell follows the parameters cell, names its own notebook, and the page calls ctx.finish()."""
    import jupytext

    from maelab.claims import REGISTRY

    root = paths.repo_root()
    for name in sorted({c.notebook for c in REGISTRY.values()}):
        if not (root / "notebooks" / f"{name}.md").exists():
            continue  # claims of a notebook not written yet ("not yet measured")
        code = [c for c in jupytext.read(root / "notebooks" / f"{name}.md").cells if c.cell_type == "code"]
        assert "parameters" in code[0].metadata.get("tags", []), name
        assert f'book.show_findings("{name}", run_options)' in code[1].source, name
        assert "remove-input" in code[1].metadata.get("tags", []), name
        assert any("ctx.finish()" in c.source for c in code[2:]), name


def test_pages_pasting_the_scoreboard_depend_on_it():
    """The landing page and the overviews paste glue from the scoreboard; the book's Sphinx extension notes the
    scoreboard as their dependency, so an incremental build re-reads them when the scoreboard changes."""
    import importlib.util
    from types import SimpleNamespace

    from docutils.utils import new_document
    from myst_nb.ext.glue.utils import PendingGlueReference

    spec = importlib.util.spec_from_file_location("maelab_html", paths.repo_root() / "book" / "_ext" / "maelab_html.py")
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)
    noted = []
    env = SimpleNamespace(docname="book/intro", doc2path=lambda d: f"/src/{d}.ipynb", note_dependency=noted.append)
    doc = new_document("intro")
    doc += PendingGlueReference(refdoc="notebooks/scoreboard", key="n_claims")
    doc += PendingGlueReference(refdoc="book/intro", key="local")  # a page's own glue: no dependency
    ext._note_glue_sources(SimpleNamespace(env=env), doc)
    assert noted == ["/src/notebooks/scoreboard.ipynb"]


def test_only_pages_of_the_book_are_linked(tmp_path):
    (tmp_path / "_toc.yml").write_text(
        "parts:\n  - chapters:\n      - file: notebooks/masking\n"
        "        sections:\n          - file: notebooks/zhang_umae\n"
        "# - file: notebooks/kong_theory\n"
    )
    assert toc.in_toc("masking", tmp_path) and toc.in_toc("zhang_umae", tmp_path)
    assert not toc.in_toc("kong_theory", tmp_path) and not toc.in_toc("zhang", tmp_path)


def test_context_read_takes_another_notebooks_result_and_never_computes(tmp_path):
    from maelab import store

    config = {"what": "x", "n": 3}
    ctx = book.setup("masking", _options(tmp_path))
    with pytest.raises(
        store.StoreMiss,
        match=r"^zhang_regime/thing\.cpu: not stored; compute it first: python -m "
        r"maelab\.book run --profile cpu --only zhang_regime$",
    ):
        ctx.read("zhang_regime", "thing", config)
    assert ctx.read("zhang_regime", "thing", config, missing_ok=True) is None and not list(tmp_path.rglob("*.json"))
    store.load_or_compute(
        "thing", {"profile": "cpu", **config}, lambda: {"v": 1.5}, notebook="zhang_regime", profile="cpu", root=tmp_path
    )
    got = ctx.read("zhang_regime", "thing", config)
    assert got["v"] == 1.5 and got.name == "zhang_regime/thing" and ctx.results[-1] is got  # in the provenance
    with pytest.raises(store.StoreMiss, match="no stored result with config hash"):
        ctx.read("zhang_regime", "thing", {**config, "n": 4}, missing_ok=True)  # another config: never taken
    with pytest.raises(ParameterError, match="profile"):
        ctx.read("zhang_regime", "thing", {"profile": "cpu"})


def test_sensitivity_is_what_the_seeds_could_detect_in_the_rows_unit():
    import numpy as np
    from scipy import stats

    from maelab.book import scoreboard

    samples = [0.01, 0.03, -0.02]
    sd = float(np.std(samples, ddof=1))
    text = scoreboard.sensitivity(Evidence.from_samples(samples), "points")
    mde = float(text.split()[0]) / 100  # printed to 2 significant digits, in points
    # independently: a true mean of that size gives a two-sided t-test at 0.05 with 3 samples about 80 % power
    crit = stats.t.ppf(0.975, 2)
    power = stats.nct.sf(crit, 2, mde / (sd / np.sqrt(3))) + stats.nct.cdf(-crit, 2, mde / (sd / np.sqrt(3)))
    assert power == pytest.approx(0.8, abs=0.02)
    assert text.endswith(f"points with n = 3 (sd {100 * sd:.2g} points)")
    # plain units; and nothing for a series, a single sample or an exact value
    assert float(scoreboard.sensitivity(Evidence.from_samples(samples)).split()[0]) == pytest.approx(mde, rel=0.05)
    assert scoreboard.sensitivity(Evidence.from_series([1, 2], [[0.1, 0.2], [0.2, 0.4]])) == ""
    assert scoreboard.sensitivity(Evidence.from_samples([0.3])) == ""
    assert scoreboard.sensitivity(Evidence(value=1.0)) == ""
    assert scoreboard.sensitivity(Evidence.from_samples([0.1, float("nan"), 0.2])) == ""  # a smoke run's NaN
    with pytest.raises(ParameterError, match="^unit"):
        scoreboard.sensitivity(Evidence.from_samples(samples), "percent")


def test_a_claim_names_a_result_of_another_folder_by_its_folder(tmp_path):
    from types import SimpleNamespace

    from maelab import store
    from maelab.book.context import Context

    here = SimpleNamespace(notebook="kong_reconstruction")
    zoo = store.save("r0p75_u1_s0", {"k": 1}, {"x": 1}, notebook="zoo", profile="cpu", root=tmp_path)
    own = store.save("scores", {"k": 1}, {"x": 1}, notebook="kong_reconstruction", profile="cpu", root=tmp_path)
    assert Context._source_name(here, zoo) == "zoo/r0p75_u1_s0"  # where store.load finds it
    assert store.load("zoo", "r0p75_u1_s0", "cpu", root=tmp_path) is not None
    assert Context._source_name(here, own) == "scores"
    read = type(zoo)(**{**zoo.__dict__, "name": "zoo/r0p75_u1_s0"})  # ctx.read already names it so
    assert Context._source_name(here, read) == "zoo/r0p75_u1_s0"
