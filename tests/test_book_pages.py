"""What a rendered page shows, without building the book: the settings table, the hidden injected-parameters cell,
and progress bars that do not need ipywidgets."""

import dataclasses
import warnings
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from maelab import _util, book, paths
from maelab._validate import ParameterError
from maelab.book import builder


class _Cells(HTMLParser):
    """Rows of an HTML table as lists of cell texts, plus the <summary> text."""

    def __init__(self):
        super().__init__()
        self.rows, self.summary, self._in, self._buf = [], "", None, ""

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th", "summary"):
            self._in, self._buf = tag, ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._in == tag:
            self.rows[-1].append(self._buf)
            self._in = None
        elif tag == "summary":
            self.summary, self._in = self._buf, None

    def handle_data(self, data):
        if self._in:
            self._buf += data


def _parse(html: str) -> _Cells:
    p = _Cells()
    p.feed(html)
    return p


def test_settings_table_from_a_dict_is_collapsible_and_escaped():
    prov = {"profile": "cpu", "device": "cpu (x86_64)", "commit": "abc1234567", "wall time": "3.0 s"}
    html = book.settings_table({"D": 64, "patch_sizes": (2, 4), "name": "<b>x</b>"}, prov)._repr_html_()
    assert html.startswith('<details class="maelab-settings">') and html.endswith("</details>")
    assert "<b>x</b>" not in html  # values are escaped, never injected as markup
    p = _parse(html)
    assert p.summary == "Settings: profile cpu · device cpu (x86_64)"
    assert p.rows[:4] == [
        ["profile", "cpu", ""],
        ["device", "cpu (x86_64)", ""],
        ["commit", "abc1234567", ""],
        ["wall time", "3.0 s", ""],
    ]
    assert p.rows[4:] == [["D", "64", ""], ["patch_sizes", "(2, 4)", ""], ["name", "'<b>x</b>'", ""]]


def test_settings_table_from_a_dataclass_shows_each_meaning():
    @dataclasses.dataclass(frozen=True)
    class S:
        n_seeds: int = dataclasses.field(default=3, metadata={"help": "seeds per point"})
        D: int = 64

    p = _parse(book.settings_table(S(), {"profile": "smoke"})._repr_html_())
    assert p.rows == [["profile", "smoke", ""], ["n_seeds", "3", "seeds per point"], ["D", "64", ""]]
    with pytest.raises(ParameterError, match="^settings must be a dict or a settings dataclass instance; got 'list'"):
        book.settings_table([1, 2])


def test_page_provenance_sums_wall_time_and_lists_devices_and_commits():
    def res(dev, commit, dirty, wall, stored):
        return SimpleNamespace(
            provenance={"device": dev, "git": {"commit": commit, "dirty": dirty}, "wall_time_s": wall},
            from_store=stored,
        )

    ctx = SimpleNamespace(
        profile="gpu",
        results=[
            res("NVIDIA H100", "0123456789abcdef", False, 1.25, True),
            res("NVIDIA H100", "0123456789abcdef", False, 2.5, False),
            res("cpu (x86_64)", "fedcba9876543210", True, 0.25, True),
        ],
    )
    assert book.page_provenance(ctx) == {
        "profile": "gpu",
        "device": "NVIDIA H100; cpu (x86_64)",
        "commit": "0123456789, fedcba9876+dirty",
        "wall time": "4.0 s over 3 results (2 loaded from the store)",
    }
    assert book.page_provenance(SimpleNamespace(profile="cpu", results=[]))["wall time"] == "—"


def test_staging_hides_the_injected_parameters_cell(tmp_path: Path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("profile = 'cpu'", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("# Parameters\nprofile = 'gpu'", metadata={"tags": ["injected-parameters"]}),
        nbformat.v4.new_code_cell("x = 1"),
    ]
    src, dst = tmp_path / "a.ipynb", tmp_path / "b.ipynb"
    nbformat.write(nb, src)
    builder._hide_injected_parameters(src, dst)
    tags = [c.metadata.get("tags", []) for c in nbformat.read(dst, as_version=4).cells]
    assert tags == [["parameters"], ["injected-parameters", "remove-cell"], []]


def test_progress_bars_are_text_bars_that_do_not_warn(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a TqdmWarning (IProgress not found) would raise here
        bar = _util.pbar(range(3), progress=True, desc="t")
        assert sum(bar) == 3
    assert type(bar).__module__ == "tqdm.std"
    assert "t: 100%" in capsys.readouterr().err  # text bars go to stderr, which the book does not render


def _figure_cells():
    import jupytext

    for path in sorted((paths.repo_root() / "notebooks").glob("*.md")):
        nb = jupytext.read(path)
        for i, cell in enumerate(nb.cells):
            src = cell.source if cell.cell_type == "code" else ""
            if "plt.subplots" in src or "panel_grid(" in src or "plt.figure(" in src:
                yield f"{path.stem}[{i}]", cell


def test_every_figure_cell_has_a_caption_naming_a_library_function_and_alt_text():
    import importlib
    import re

    names, problems = set(), []
    cells = list(_figure_cells())
    assert len(cells) >= 20, "figure cells not found"
    for where, cell in cells:
        meta = cell.metadata.get("mystnb", {})
        caption = meta.get("figure", {}).get("caption", "")
        name = meta.get("figure", {}).get("name", "")
        alt = meta.get("image", {}).get("alt", "")
        if not (caption and name and alt):
            problems.append(f"{where}: missing caption, name or alt")
            continue
        if name in names:
            problems.append(f"{where}: figure name {name} used twice")
        names.add(name)
        # named as a link to the API reference, {py:func}`maelab...` (the strict build checks that the target exists)
        funcs = re.findall(r"\{py:(?:func|class|meth)\}`~?(maelab(?:\.\w+)+)`", caption)
        if not funcs:
            problems.append(f"{where}: the caption names no maelab function with a {{py:func}} link")
        unlinked = re.findall(r"(?<![}\w])`(maelab(?:\.\w+)+)`", caption)
        if unlinked:
            problems.append(f"{where}: {', '.join(unlinked)} named without a {{py:func}} link")
        for dotted in funcs:  # each named function exists (catches captions left behind when code moves)
            module, _, attr = dotted.rpartition(".")
            try:
                ok = hasattr(importlib.import_module(module), attr)
            except ImportError:
                ok = False
            if not ok:
                problems.append(f"{where}: {dotted} does not exist")
        # one figure per cell: other displays in the cell would be wrapped in the same captioned figure
        if "display(" in cell.source.replace("settings_view", ""):
            problems.append(f"{where}: a figure cell also displays something else")
    assert not problems, "; ".join(problems)


def test_figure_cells_end_without_a_displayed_value():
    """A trailing expression (``ax.set_title(...)``) would print its value under the figure, inside its caption."""
    import ast

    bad = []
    for where, cell in _figure_cells():
        last = ast.parse(cell.source).body[-1]
        if isinstance(last, ast.Expr):
            f = last.value.func if isinstance(last.value, ast.Call) else None
            name = ast.unparse(f) if f is not None else ""
            if name not in ("plt.show", "display", "glue"):
                bad.append(f"{where}: ends with `{ast.unparse(last)[:50]}`")
    assert not bad, "; ".join(bad)
