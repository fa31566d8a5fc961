"""The book package's shape (issue 23): what a kernel imports, the names it re-exports, the style sheet as package
data, the paper registry handed down from the top (and injected into every kernel), the one plan command."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import synthetic_calibration

from maelab import book, cost, papers, registry
from maelab._validate import ParameterError
from maelab.book import builder, cli, render, runner, toc

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
RUNNER_MODULES = ("papermill", "nbformat", "argparse")


def _python(code: str, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """``code`` (or ``-m``/script ``args``) in a fresh interpreter on this tree's sources."""
    cmd = [sys.executable, *(args or ("-c", code))]
    env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin", "CI": "1"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


def test_a_kernel_importing_the_book_loads_no_runner():
    """``import maelab.book`` (what every notebook does) adds no papermill, nbformat or argparse to the kernel, and
    none of the command side (runner, plan, build, command line). The core modules it uses are imported first, so
    that an import of theirs (``maelab.store`` has a command line) is not counted against the book."""
    code = (
        "import json, sys\n"
        "import maelab._util, maelab._validate, maelab.claims, maelab.profiles, maelab.registry, maelab.store\n"
        "before = set(sys.modules)\n"
        "import maelab.book\n"
        "print(json.dumps({'new': sorted(set(sys.modules) - before), 'all': sorted(sys.modules)}))\n"
    )
    p = _python(code)
    assert p.returncode == 0, p.stderr[-2000:]
    mods = json.loads(p.stdout.strip().splitlines()[-1])
    new, loaded = set(mods["new"]), set(mods["all"])
    assert not {"papermill", "nbformat"} & loaded, sorted({"papermill", "nbformat"} & loaded)
    assert not set(RUNNER_MODULES) & new, sorted(set(RUNNER_MODULES) & new)
    tools = {f"maelab.book.{m}" for m in ("runner", "plan", "builder", "cli", "__main__")}
    assert not tools & new, sorted(tools & new)
    assert {"maelab.book.context", "maelab.book.scoreboard", "maelab.book.render", "maelab.book.toc"} <= new


def test_the_check_above_sees_a_runner_import():
    """The same check, on a kernel that does import the runner, finds it (so the test above can fail)."""
    p = _python(
        "import json, sys\nimport maelab.store\nbefore = set(sys.modules)\n"
        "import maelab.book.cli\nprint(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert "maelab.book.runner" in json.loads(p.stdout.strip().splitlines()[-1])


def test_the_command_side_names_are_the_submodules_functions():
    assert book.run is runner.run and book.run_notebook is runner.run_notebook
    assert book.build is builder.build and callable(book.build)  # the function, never the submodule
    assert book.stage is builder.stage and book.main is cli.main
    assert book.parse_parameter("mask_ratio=0.3") == ("mask_ratio", 0.3)
    assert book.LAST == toc.LAST and book.PLAN_PROFILES == ("cpu", "gpu")
    for name in book.__all__:
        assert getattr(book, name) is not None, name
    assert {"run", "build", "claims_difference"} <= set(dir(book))
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        book.nope  # noqa: B018


def test_the_style_sheet_is_package_data_read_at_render_time(monkeypatch, tmp_path):
    sheet = (SRC / "maelab" / "book" / render.CSS_FILE).read_text()
    assert "div.maelab-findings{" in sheet and "/*" in sheet  # a CSS file with its comment
    css = render.css()
    assert css.startswith("<style>\n") and css.endswith("</style>") and "/*" not in css
    assert "span.maelab-badge{" in css and "<style>" not in sheet
    # shipped with the package (pyproject's package data), so an installed maelab renders the same boxes
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["maelab"]
    assert "book/static/*.css" in data
    # read when a box is rendered: another sheet in the package folder is what the next box carries
    pkg = tmp_path / "pkg"
    (pkg / "static").mkdir(parents=True)
    (pkg / "static" / "findings.css").write_text("/* note */\np{color:red}\n")
    monkeypatch.setattr(render, "__package__", None)
    monkeypatch.setattr(render.resources, "files", lambda _: pkg)
    assert render.css() == "<style>\np{color:red}\n</style>"


def test_the_registry_is_gathered_from_the_packages_declarations():
    reg = papers.registry()
    assert papers.install() is None and registry.installed() is reg and papers.registry() is reg
    assert [p.key for p in reg.papers] == ["bisulco2025", "zhang2022", "cao2022", "kong2023", "synthesis"]
    assert [p.order for p in reg.papers] == sorted(p.order for p in reg.papers)
    zhang = registry.papers()["zhang2022"]
    assert zhang.full == "Zhang, Wang & Wang (NeurIPS 2022), How Mask Matters (U-MAE)"
    assert book.paper_label("cao2022") == "Cao, Xu & Clifton (arXiv 2202.03670, 2022)"
    assert set(reg.settings()) == {p.key for p in reg.papers}  # every paper has notebook settings
    assert {"zhang_umae", "kong_reconstruction"} <= set(cost.notebook_plans("smoke"))


def test_a_paper_declaration_and_a_registry_are_checked():
    with pytest.raises(ParameterError, match="^Paper.key must be"):
        registry.Paper(key="not a key", citation="A (2020)", title="T", order=1)
    with pytest.raises(ParameterError, match="^Paper.title must be a non-empty one-line string"):
        registry.Paper(key="a2020", citation="A (2020)", title="two\nlines", order=1)
    a = registry.Paper(key="a2020", citation="A (2020)", title="T", order=2)
    b = registry.Paper(key="b2021", citation="B (2021)", title="U", order=1)
    with pytest.raises(registry.RegistryError, match="book order"):
        registry.PaperRegistry(papers=(a, b), claims=dict, settings=dict, plans=lambda p: {})
    with pytest.raises(registry.RegistryError, match="unique"):
        registry.PaperRegistry(papers=(b, b), claims=dict, settings=dict, plans=lambda p: {})


def test_without_an_installed_registry_the_core_says_what_to_call(monkeypatch):
    monkeypatch.setattr(registry, "_INSTALLED", None)
    for call in (
        book.collect_claims,
        lambda: book.setup("masking", profile="smoke"),
        lambda: cost.notebook_plans("cpu"),
    ):
        with pytest.raises(registry.RegistryError) as e:
            call()
        assert "\n" not in str(e.value) and "papers.install()" in str(e.value)
    # the runner cannot give a kernel what it has not got: refused before a kernel starts
    with pytest.raises(registry.RegistryError):
        runner.inject_registry(_masking_source())


def test_another_installed_registry_is_what_the_core_reads(monkeypatch):
    """The core caches what it checked per installed registry: installing another one is read at once."""
    real = papers.registry()
    only = real.papers[1:2]  # zhang2022 alone
    fake = registry.PaperRegistry(
        papers=only,
        claims=lambda: {k: v for k, v in real.claims().items() if k == "zhang2022"},
        settings=lambda: {k: v for k, v in real.settings().items() if k == "zhang2022"},
        plans=lambda profile: {},
    )
    monkeypatch.setattr(registry, "_INSTALLED", fake)
    from maelab import claims, profiles

    assert {c.paper for c in claims.REGISTRY.values()} == {"zhang2022"}
    assert "masking" not in profiles.registry() and "zhang_umae" in profiles.registry()
    assert cost.notebook_plans("gpu") == {} and list(book.papers()) == ["zhang2022"]
    monkeypatch.setattr(registry, "_INSTALLED", real)
    assert len({c.paper for c in claims.REGISTRY.values()}) == 5 and "masking" in profiles.registry()


def _masking_source():
    import jupytext

    return jupytext.read(ROOT / "notebooks" / "masking.md")


def test_the_runner_gives_every_kernel_the_registry_in_its_first_cell_after_the_parameters():
    nb = runner.inject_registry(_masking_source())
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata["tags"]
    assert code[1].source == papers.BOOTSTRAP and code[1].metadata["tags"] == [runner.REGISTRY_TAG, "remove-cell"]
    assert sum(runner.REGISTRY_TAG in c.metadata.get("tags", []) for c in nb.cells) == 1
    # the bootstrap installs the registry in a fresh interpreter, and the core then reads it
    p = _python(papers.BOOTSTRAP + "\nfrom maelab import claims\nprint(len(claims.REGISTRY))\n")
    assert p.returncode == 0 and int(p.stdout.split()[-1]) == len(book.collect_claims()), p.stderr[-2000:]


def test_python_m_maelab_book_installs_the_registry():
    """The entry point hands the registry down: a notebook parameter is checked against the page's settings class
    (which only the registry knows), before any notebook runs, in one line."""
    p = _python("", "-m", "maelab.book", "run", "--only", "masking", "-p", "nope=1")
    err = p.stderr.strip().splitlines()
    assert p.returncode == 1 and len(err) == 1, p.stderr[-2000:]
    assert err[0].startswith("error: nope must be a parameter of notebook 'masking'"), err[0]


def test_one_plan_command(tmp_path, capsys):
    """``plan`` lives in the book's command line (``python -m maelab.cost`` only calibrates); ``--runs`` prices a
    JSON file of runs, and a bad file or ``--write`` with it fails in one line before anything is measured."""
    with pytest.raises(SystemExit):
        cost.main(["plan", "--profile", "gpu"])
    capsys.readouterr()
    bad = tmp_path / "runs.json"
    bad.write_text('{"label": "x"}')
    assert book.main(["plan", "--profile", "smoke", "--runs", str(bad)]) == 1
    assert book.main(["plan", "--profile", "cpu", "--write", "--runs", str(bad)]) == 1
    errs = [ln for ln in capsys.readouterr().err.splitlines() if ln]
    assert len(errs) == 2 and errs[0].startswith("error: --runs must be a JSON list of objects")
    assert errs[1].startswith("error: --write must be used without --runs")
    good = tmp_path / "good.json"
    good.write_text(json.dumps([{"label": "tiny", "size": "micro", "steps": 10, "repeats": 2}]))
    typo = tmp_path / "typo.json"
    typo.write_text(json.dumps([{"label": "tiny", "step": 10}]))
    with pytest.raises(ParameterError, match=r"^--runs field \(in .*typo.json\) must be one of 'label', .*'step'$"):
        cost.read_runs(typo)
    runs = cost.read_runs(good)
    assert runs == [cost.PlannedRun(label="tiny", size="micro", steps=10, repeats=2)]
    table = cost.plan("smoke", plans={"file": runs}, calibration=synthetic_calibration(), memory=False)
    assert list(table["run"]) == ["tiny", "total"] and set(table["notebook"]) == {"file"}
