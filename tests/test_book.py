"""The book end to end: every notebook executes with profile=smoke (results in a temp folder only), a bad
parameter injected through papermill fails with one line, the committed book builds strictly, and headless Chromium
sees typeset maths on the built pages."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from maelab import book, paths, store

pytestmark = pytest.mark.book
ROOT = paths.repo_root()


def _snapshot(folder: Path):
    return {str(p): p.stat().st_mtime_ns for p in folder.rglob("*")} if folder.exists() else {}


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("smoke")
    committed = paths.committed_results()
    before = _snapshot(committed)
    outs = book.run(  # two pages at a time (as make test's other two executions of every page)
        book.RunOptions(profile="smoke", results_root=str(tmp / "results")), out_dir=tmp / "executed", jobs=2
    )
    assert _snapshot(committed) == before, "a smoke run wrote into data/results"
    return tmp, outs


def test_every_notebook_executes_with_smoke(smoke_run):
    import nbformat

    tmp, outs = smoke_run
    assert {p.stem for p in outs} == {p.stem for p in (ROOT / "notebooks").glob("*.md")}
    for p in outs:
        nb = nbformat.read(p, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert "parameters" in code[0].metadata.get("tags", []), f"{p.stem}: first code cell is not `parameters`"
        assert "injected-parameters" in code[1].metadata.get("tags", []), p.stem
        assert code[1].source.startswith('# Parameters\nrun_options = {"profile": "smoke", ') and (
            str(tmp / "results") in code[1].source
        )  # the one papermill parameter: the run options
        assert code[2].metadata.get("tags") == ["injected-registry", "remove-cell"], p.stem  # the paper registry
        errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
        assert not errors, f"{p.stem}: {errors[0]['ename']}"
    # the masking notebook stored its claims (with verdicts) in the temp results folder
    r = store.load("masking", "claims", "smoke", root=tmp / "results")
    assert r is not None and set(r["claims"]) >= {"bisulco.eq19_21_sinc", "bisulco.fig22_grating_zeros"}


def test_scoreboard_reads_stored_evidence(smoke_run):
    tmp, _ = smoke_run
    board = book.collect_claims(root=tmp / "results").set_index("id")
    assert board.loc["bisulco.eq19_21_sinc", "verdict"] == "identity"  # holds by construction: shown, not support
    assert board.loc["bisulco.eq19_as_printed", "verdict"] == "not supported"
    assert board.loc["bisulco.eq19_21_sinc", "profile"] == "smoke"


def test_bad_parameter_injected_by_papermill_fails_in_one_line(tmp_path):
    options = book.RunOptions(profile="smoke", results_root=str(tmp_path / "results"))
    # a bad run option never reaches a kernel: the options are checked when made, before papermill starts
    with pytest.raises(book.ParameterError, match="^profile must be one of 'smoke', 'cpu', 'gpu'"):
        book.run_notebook("masking", "huge", tmp_path)
    with pytest.raises(book.ParameterError, match="^profile must be one of 'smoke', 'cpu', 'gpu'; got 'auto'$"):
        book.run_notebook("masking", options.replace(profile="auto"), tmp_path)  # the runner resolves "auto"
    assert not list(tmp_path.iterdir())
    cell = "5 (execution count 5, `import numpy as np`): "
    expected = "ParameterError: mask_ratio must be a number in (0.0, 1.0); got 1.5"
    with pytest.raises(book.NotebookFailed) as e:
        book.run_notebook("masking", options, tmp_path, extra={"mask_ratio": 1.5})
    msg = str(e.value)
    assert "\n" not in msg
    # the cell is named: papermill's index (markdown cells count), its execution count and first line
    assert msg.startswith(f"notebook masking (notebooks/masking.md) failed in cell {cell}")
    assert msg.endswith(expected)
    assert not (tmp_path / "results").exists()  # failed before computing anything


@pytest.fixture(scope="session")
def site(committed_site):
    """The committed book built strictly (``tests/conftest.py``): what readers get. The smoke run's pages are
    executed above, not built: building them as well took another minute of make test and checked pages nobody
    publishes."""
    return committed_site


def test_strict_build_has_pages_and_local_mathjax(site):
    assert (site / "notebooks" / "masking.html").exists() and (site / "notebooks" / "scoreboard.html").exists()
    assert (site / "_static" / "mathjax" / "tex-chtml.js").exists()
    page = (site / "notebooks" / "masking.html").read_text()
    srcs = re.findall(r'<script[^>]+src="([^"]*mathjax[^"]*)"', page, flags=re.I)
    assert srcs and all(not s.startswith(("http:", "https:", "//")) for s in srcs), srcs
    # numbers in the prose are glued from the executed notebook: the sentence carries the computed values
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))
    assert re.search(r"largest error of \S*\d\.\de-\d+", text), "glued value missing from the prose"
    assert re.search(r"as printed misses by \S*\d+\.\d\d", text)


def _chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail("chromium is missing: `make test` installs Debian's chromium (apt-get install chromium)")
    return exe


@pytest.mark.parametrize("page", ["index.html", "notebooks/masking.html"])
def test_pages_load_and_maths_is_typeset_in_chromium(site, page, tmp_path):
    exe = _chromium()
    cmd = [
        exe,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        f"--user-data-dir={tmp_path}",
        "--allow-file-access-from-files",
        "--virtual-time-budget=15000",
        "--dump-dom",
        (site / page).resolve().as_uri(),
    ]
    dom = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
    assert "<title>" in dom and "maelab" in dom
    n = len(re.findall(r"<mjx-container", dom))
    assert n >= 1, f"{page}: no typeset maths (mjx-container) in the DOM"
