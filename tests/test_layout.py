"""The library's layout, checked on the source with ``ast``: general modules at the top of ``src/maelab``, one
package per paper in ``src/maelab/papers``, no core module importing a paper, no function over 100 lines, no
``assert`` used for validation."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "maelab"
PAPERS = SRC / "papers"

#: the general library: every module and package allowed at the top of src/maelab (one line each in README.md)
GENERAL = {
    "__init__",
    "_records",
    "_util",
    "_validate",
    "book",
    "claims",
    "cost",
    "data",
    "device",
    "evaluate",
    "experiments",
    "linear_mae",
    "logreg",
    "masking",
    "metrics",
    "models",
    "papers",
    "plotting",
    "profiles",
    "reconstruction",
    "spectra",
    "store",
    "train",
    "zoo",
}
PAPER_PACKAGES = {"bisulco2025", "cao2022", "kong2023", "zhang2022", "synthesis"}
MAX_FUNCTION_LINES = 100


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def _name(path: Path, src: Path = SRC) -> str:
    parts = path.relative_to(src.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path, src: Path = SRC) -> set[str]:
    """Absolute names of everything ``path`` imports (relative imports resolved; ``from a import b`` gives a.b)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = _name(path, src) if path.name == "__init__.py" else _name(path, src).rpartition(".")[0]
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names |= {base} | {f"{base}.{a.name}" for a in node.names}
    return names


def test_top_level_holds_only_the_general_library():
    top = {p.stem for p in SRC.glob("*.py")} | {p.name for p in SRC.iterdir() if (p / "__init__.py").exists()}
    assert top - GENERAL == set(), (
        "modules at the top of src/maelab that are not in the general list (a paper's "
        "analysis belongs in src/maelab/papers/<paper>/; a general module needs a line "
        "in README.md's module map and in GENERAL here)"
    )
    assert {p.name for p in PAPERS.iterdir() if (p / "__init__.py").exists()} == PAPER_PACKAGES


@pytest.mark.parametrize("path", [p for p in _modules() if PAPERS not in p.parents], ids=lambda p: _name(p))
def test_core_never_imports_a_paper_package(path):
    bad = sorted(n for n in _imported(path) if n == "maelab.papers" or n.startswith("maelab.papers."))
    assert not bad, f"{_name(path)} imports {bad}: the core must not depend on a paper (claims are discovered)"


def test_the_import_check_sees_relative_and_absolute_imports(tmp_path):
    """The check above can fail: it resolves ``from ..papers import x`` and ``from maelab import papers``."""
    src = tmp_path / "maelab"
    (src / "data").mkdir(parents=True)
    (src / "data" / "x.py").write_text("from ..papers import zhang2022\nimport numpy\n")
    (src / "y.py").write_text("from maelab import papers\nfrom .papers.kong2023 import theory\n")
    assert "maelab.papers.zhang2022" in _imported(src / "data" / "x.py", src)
    assert {"maelab.papers", "maelab.papers.kong2023.theory"} <= _imported(src / "y.py", src)


def _functions(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            yield node.name, node.end_lineno - first + 1


def test_no_function_longer_than_100_lines():
    long = []
    for path in _modules():
        long += [f"{_name(path)}.{name}: {n} lines" for name, n in _functions(path) if n > MAX_FUNCTION_LINES]
    assert not long, long


def test_no_assert_in_the_library():
    """Validation raises a real error (maelab._validate.ParameterError or a specific exception); ``python -O`` would
    silently drop an assert."""
    found = [
        f"{_name(p)}:{n.lineno}"
        for p in _modules()
        for n in ast.walk(ast.parse(p.read_text()))
        if isinstance(n, ast.Assert)
    ]
    assert not found, found
