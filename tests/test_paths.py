"""maelab.paths: the one module that says where the checkout, the cache, the datasets and the results are."""

import ast
from pathlib import Path

from maelab import paths

REPO = Path(__file__).resolve().parents[1]  # the checkout holding these tests (found without maelab.paths)
SRC = REPO / "src" / "maelab"


def test_repo_root_is_the_checkout_holding_the_package():
    assert paths.repo_root() == REPO


def test_repo_root_falls_back_to_the_working_directory_outside_a_checkout(tmp_path, monkeypatch):
    """An installed wheel has no pyproject.toml above it: the current directory stands in."""
    monkeypatch.setattr(paths, "__file__", str(tmp_path / "site-packages" / "maelab" / "paths.py"))
    monkeypatch.chdir(tmp_path)
    assert paths.repo_root() == tmp_path


def test_cache_root_precedence(tmp_path, monkeypatch):
    monkeypatch.delenv("MAELAB_CACHE", raising=False)
    assert paths.cache_root() == REPO / ".cache"
    assert paths.cache_root(tmp_path / "other") == tmp_path / "other" / ".cache"
    assert paths.cache_dir("cost") == REPO / ".cache" / "cost"
    assert paths.cache_dir("device", tmp_path) == tmp_path / ".cache" / "device"
    monkeypatch.setenv("MAELAB_CACHE", str(tmp_path / "c"))
    assert paths.cache_root() == tmp_path / "c" and paths.cache_root(tmp_path / "other") == tmp_path / "c"
    assert paths.cache_dir("checkpoints") == tmp_path / "c" / "checkpoints"
    monkeypatch.setenv("MAELAB_CACHE", "")  # empty: unset
    assert paths.cache_root() == REPO / ".cache"


def test_data_dir_precedence(tmp_path, monkeypatch):
    monkeypatch.delenv("MAELAB_DATA_DIR", raising=False)
    monkeypatch.delenv("MAELAB_CACHE", raising=False)
    assert paths.data_dir() == REPO / ".cache" / "datasets"
    monkeypatch.setenv("MAELAB_CACHE", str(tmp_path / "c"))
    assert paths.data_dir() == tmp_path / "c" / "datasets"
    monkeypatch.setenv("MAELAB_DATA_DIR", str(tmp_path / "d"))
    assert paths.data_dir() == tmp_path / "d" and paths.data_dir(tmp_path / "e") == tmp_path / "e"


def test_results_folders(tmp_path, monkeypatch):
    """The smoke folder stays in the checkout even when the cache is elsewhere (``make clean`` removes it there)."""
    monkeypatch.setenv("MAELAB_CACHE", str(tmp_path / "c"))
    assert paths.committed_results() == REPO / "data" / "results"
    assert paths.committed_results(tmp_path) == tmp_path / "data" / "results"
    assert paths.smoke_results() == REPO / ".cache" / "results-smoke"


def _code_strings(path: Path) -> list[tuple[int, str]]:
    """(line, value) of the string constants of ``path`` that are not docstrings."""
    tree = ast.parse(path.read_text())
    docs = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    return [
        (n.lineno, n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    ]


def _spelled_folders(path: Path) -> list[str]:
    """Where ``path`` spells one of the folders maelab.paths owns, or walks up from ``__file__`` to the checkout."""
    found = [
        f"{path.name}:{line} {value!r}"
        for line, value in _code_strings(path)
        if value in (".cache", "results-smoke", "pyproject.toml") or value.startswith(("data/results", ".cache/"))
    ]
    for node in ast.walk(ast.parse(path.read_text())):
        if (  # ... / "data" / "results"
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Div)
            and getattr(node.right, "value", None) == "results"
            and isinstance(node.left, ast.BinOp)
            and getattr(node.left.right, "value", None) == "data"
        ):
            found.append(f"{path.name}:{node.lineno} .../'data'/'results'")
        if isinstance(node, ast.Attribute) and node.attr == "parents" and "__file__" in ast.unparse(node):
            found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    return found


def test_only_maelab_paths_spells_the_folders():
    """Issue 23: the checkout, cache and results folders are spelled in maelab.paths alone (callers ask there)."""
    spelled = [s for p in sorted(SRC.rglob("*.py")) if p != SRC / "paths.py" for s in _spelled_folders(p)]
    assert not spelled, spelled


def test_the_folder_check_can_fail(tmp_path):
    f = tmp_path / "x.py"
    f.write_text(
        '"""Writes to data/results and .cache/ (prose)."""\n'
        "from pathlib import Path\n"
        'A = Path(__file__).resolve().parents[3] / "data" / "mnist.npz"\n'
        'B = root / "data" / "results"\n'
        'C = root / ".cache" / "results-smoke"\n'
        'D = (p / "pyproject.toml").exists()\n'
    )
    lines = sorted(int(s.split()[0].split(":")[1]) for s in _spelled_folders(f))
    assert lines == [3, 4, 5, 5, 6]  # parents of __file__; data/results; .cache and results-smoke; pyproject.toml
