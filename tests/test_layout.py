"""The library's layout, checked on the source with ``ast``: general modules at the top of ``src/maelab``, one
package per paper in ``src/maelab/papers`` (each declaring itself), no core module reaching a paper by any means
(static or dynamic import, ``pkgutil`` walk, module name in a string), no module over 600 lines, no function over
100 lines, no ``assert`` used for validation, and at most two ``MAELAB_`` environment variables, each read where its
docstring says why (run options travel as arguments: :class:`maelab.options.RunOptions`)."""

from __future__ import annotations

import ast
import re
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
    "attention",
    "book",
    "claims",
    "cost",
    "data",
    "device",
    "evaluate",
    "experiments",
    "parts",
    "prefetch",
    "linear_mae",
    "logreg",
    "masking",
    "metrics",
    "models",
    "options",
    "papers",
    "paths",
    "plotting",
    "profiles",
    "provenance",
    "reconstruction",
    "registry",
    "result_keys",
    "spectra",
    "store",
    "store_admin",
    "train",
    "zoo",
}
MAX_FUNCTION_LINES = 100
MAX_MODULE_LINES = 600


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


def test_every_general_module_has_a_line_in_the_readme_module_map():
    """README.md's module map names each module of GENERAL in the first cell of a table row (``| `name` | what |``;
    one row may name two, as ``_util``, ``_validate``)."""
    readme = (SRC.parents[1] / "README.md").read_text()
    named = {n for row in re.findall(r"^\| ([^|]+) \|", readme, flags=re.M) for n in re.findall(r"`([\w.]+)`", row)}
    assert GENERAL - {"__init__"} - named == set(), "README.md's module map lacks a line for these modules"


def _declared_key(init: Path) -> str | None:
    """The ``key=`` of the ``PAPER = Paper(...)`` record in a paper package's ``__init__.py`` (None: no record)."""
    for node in ast.parse(init.read_text()).body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == ["PAPER"]
            and isinstance(node.value, ast.Call)
            and getattr(node.value.func, "id", None) == "Paper"
        ):
            return next((k.value.value for k in node.value.keywords if k.arg == "key"), None)
    return None


def test_every_paper_package_declares_itself():
    """A paper package is found by its ``PAPER`` record (maelab.papers.registry), not by a list kept elsewhere."""
    folders = sorted(p for p in PAPERS.iterdir() if (p / "__init__.py").exists())
    assert folders, "no paper package"
    for folder in folders:
        want = f"PAPER = Paper(key={folder.name!r}, citation=..., title=..., order=...)"
        assert _declared_key(folder / "__init__.py") == folder.name, f"{folder.name}/__init__.py must declare {want}"


# ----------------------------------------------------------------------------------------------- core -> papers
#: calls that import a module named by their first argument
_IMPORT_CALLS = {"import_module", "__import__", "find_spec", "run_module", "spec_from_file_location", "resolve_name"}
#: pkgutil's walks over a package's modules (the core has no package of its own to walk)
_WALKS = {"iter_modules", "walk_packages"}
#: a module of the paper packages, spelled absolutely or relatively
_PAPER_MODULE = re.compile(r"(maelab\.papers|\.+papers)(\.\w+)*")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of a module and its classes and functions (prose, not names the code uses)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _names_papers(node: ast.AST | None) -> bool:
    """Whether an expression spells a paper module: a string or an f-string starting like one."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _PAPER_MODULE.fullmatch(node.value) is not None
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return re.match(r"(maelab\.papers|\.+papers)(\.|$)", str(node.values[0].value)) is not None
    return False


def _dynamic_reaches(path: Path) -> list[str]:
    """Where ``path`` reaches a paper package other than by an import statement: an import call
    (``importlib.import_module``, ``__import__``, ``find_spec``, ...) whose module is not a literal naming a module
    outside the papers, a ``pkgutil`` walk, ``maelab.papers`` as an attribute or a ``getattr``, a module name of the
    papers spelled in a string or f-string (docstrings excepted)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    prose = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        where = f"line {getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Call):
            func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            args = list(node.args) + [k.value for k in node.keywords if k.arg in ("name", "package", "path")]
            if func in _IMPORT_CALLS and (
                not args or not isinstance(args[0], ast.Constant) or any(_names_papers(a) for a in args)
            ):
                found.append(f"{where}: {func}() of a module that is not a literal outside the papers")
            elif func in _WALKS:
                found.append(f"{where}: pkgutil.{func}() (a walk over packages)")
            elif func == "getattr" and len(node.args) > 1 and getattr(node.args[1], "value", None) == "papers":
                found.append(f"{where}: getattr(..., 'papers')")
        elif isinstance(node, ast.Attribute) and node.attr == "papers" and getattr(node.value, "id", "") == "maelab":
            found.append(f"{where}: maelab.papers")
        elif isinstance(node, (ast.Constant, ast.JoinedStr)) and id(node) not in prose and _names_papers(node):
            found.append(f"{where}: the module name {ast.unparse(node)}")
    return found


def _entry_point(path: Path) -> bool:
    """``__main__`` modules are the top of a program, not the core: they may install the paper registry."""
    return path.name == "__main__.py"


CORE = [p for p in _modules() if PAPERS not in p.parents]  # the papers and their registry (papers/__init__.py) excepted


@pytest.mark.parametrize("path", [p for p in CORE if not _entry_point(p)], ids=lambda p: _name(p))
def test_core_never_reaches_a_paper_package(path):
    bad = sorted(n for n in _imported(path) if n == "maelab.papers" or n.startswith("maelab.papers."))
    assert not bad, f"{_name(path)} imports {bad}: the core must not depend on a paper (see maelab.registry)"
    dynamic = _dynamic_reaches(path)
    assert not dynamic, f"{_name(path)} reaches the papers: {dynamic} (the core receives them: maelab.registry)"


def test_no_module_imports_an_entry_point():
    """The exemption above holds only because nothing imports a ``__main__`` module."""
    bad = [(_name(p), n) for p in _modules() for n in _imported(p) if n.endswith(".__main__")]
    assert not bad, bad


def test_the_import_check_sees_relative_and_absolute_imports(tmp_path):
    """The check above can fail: it resolves ``from ..papers import x`` and ``from maelab import papers``."""
    src = tmp_path / "maelab"
    (src / "data").mkdir(parents=True)
    (src / "data" / "x.py").write_text("from ..papers import zhang2022\nimport numpy\n")
    (src / "y.py").write_text("from maelab import papers\nfrom .papers.kong2023 import theory\n")
    assert "maelab.papers.zhang2022" in _imported(src / "data" / "x.py", src)
    assert {"maelab.papers", "maelab.papers.kong2023.theory"} <= _imported(src / "y.py", src)


@pytest.mark.parametrize(
    "code",
    [
        "import importlib\nm = importlib.import_module('maelab.papers')",
        "import importlib\nm = importlib.import_module(f'maelab.papers.{p}.claims')",
        "import importlib\nm = importlib.import_module('.papers', 'maelab')",
        "import importlib\nm = importlib.import_module(NAME)",
        "from importlib import import_module\nm = import_module(name=NAME)",
        "m = __import__('maelab.papers.zhang2022', fromlist=['claims'])",
        "import importlib.util\ns = importlib.util.find_spec(f'{PKG}.settings')",
        "import pkgutil\nnames = [m.name for m in pkgutil.iter_modules(pkg.__path__)]",
        "import pkgutil\nnames = list(pkgutil.walk_packages(path))",
        "import sys\nm = sys.modules['maelab.papers.kong2023.claims']",
        "PACKAGE = 'maelab.papers'",
        "import maelab\nm = maelab.papers",
        "import maelab\nm = getattr(maelab, 'papers')",
    ],
)
def test_the_check_sees_dynamic_reaches(tmp_path, code):
    """Each way of reaching a paper without an import statement is caught (so the check above can fail)."""
    f = tmp_path / "x.py"
    f.write_text(code + "\n")
    assert _dynamic_reaches(f), code


def test_the_check_leaves_prose_and_other_modules_alone(tmp_path):
    f = tmp_path / "x.py"
    f.write_text(
        '"""Reads ``maelab.papers.zhang2022.claims`` rows from the installed registry."""\n'
        "import importlib\nm = importlib.import_module('numpy')\n"
        "msg = 'call `from maelab import papers; papers.install()` first'\n"
        "key = 'papers'\n"
    )
    assert _dynamic_reaches(f) == []


def test_no_module_longer_than_600_lines():
    """Issue 23: no module over 600 lines (the last ones over it when the limit was set -- cost, store, metrics,
    Bisulco's evidence -- were split in session 9)."""
    long = {_name(p): len(p.read_text().splitlines()) for p in _modules()}
    over = sorted(f"{n}: {k} lines" for n, k in long.items() if k > MAX_MODULE_LINES)
    assert not over, over
    book = {n: k for n, k in long.items() if n == "maelab.book" or n.startswith("maelab.book.")}
    assert len(book) >= 8 and max(book.values()) <= MAX_MODULE_LINES, book


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


# ----------------------------------------------------------------------------------------------- environment variables
MAX_MAELAB_VARIABLES = 2  # issue 23: run options are arguments; variables only where a child process needs one
MAELAB_NAME = re.compile(r"MAELAB_[A-Z0-9_]+")


def _maelab_names_in_code(path: Path) -> set[str]:
    """The ``MAELAB_*`` names in the string constants of ``path`` (docstrings left out: prose may name a variable)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    docs = _docstrings(tree)
    return {
        m
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
        for m in MAELAB_NAME.findall(node.value)
    }


def _environment_reads(path: Path) -> list[tuple[str, str, str | None]]:
    """(variable, reading function, its docstring) of every ``os.environ.get(K)``, ``os.environ[K]``, ``os.getenv(K)``
    and ``K in os.environ`` of ``path`` whose key is a string, or a constant of the module holding one, starting
    MAELAB_ (a read through a name imported from elsewhere is not seen: then the name is in the code but never read,
    and the test below fails, asking for it to be read where it is defined)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    consts = {
        t.id: n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
        for t in n.targets
        if isinstance(t, ast.Name)
    }

    def key(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        return consts.get(node.id) if isinstance(node, ast.Name) else None

    def is_environ(node):
        return isinstance(node, ast.Attribute) and node.attr == "environ"

    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            k = None
            if isinstance(node, ast.Call) and node.args:
                f = node.func
                if isinstance(f, ast.Attribute) and (
                    (f.attr == "get" and is_environ(f.value))
                    or (f.attr == "getenv" and getattr(f.value, "id", "") == "os")
                ):
                    k = key(node.args[0])
            elif isinstance(node, ast.Subscript) and is_environ(node.value) and isinstance(node.ctx, ast.Load):
                k = key(node.slice)
            elif isinstance(node, ast.Compare) and any(is_environ(c) for c in node.comparators):
                k = key(node.left)
            if isinstance(k, str) and k.startswith("MAELAB_"):
                found.append((k, fn.name, ast.get_docstring(fn)))
    return found


def test_at_most_two_maelab_environment_variables_each_justified():
    """Issue 23: run options travel as one object and explicit arguments, not environment variables. At most two
    ``MAELAB_`` names appear in the library's code (strings, not prose), and every function reading one from the
    environment says in its docstring which and why."""
    names = set().union(*(_maelab_names_in_code(p) for p in _modules()))
    assert len(names) <= MAX_MAELAB_VARIABLES, sorted(names)
    reads = [(v, f"{_name(p)}.{fn}", doc) for p in _modules() for v, fn, doc in _environment_reads(p)]
    assert {v for v, _, _ in reads} == names, (sorted(names), reads)  # each name is read, and only there
    unjustified = [
        f"{fn} reads {v}" for v, fn, doc in reads if not doc or v not in doc or "environment variable" not in doc
    ]
    assert not unjustified, unjustified


def test_the_environment_read_check_sees_every_form(tmp_path):
    f = tmp_path / "x.py"
    f.write_text(
        'import os\nX_ENV = "MAELAB_X"\n'
        'def a():\n    """Reads the environment variable MAELAB_X: why."""\n    return os.environ.get(X_ENV)\n'
        "def b():\n    return os.environ['MAELAB_Y']\n"
        "def c():\n    return os.getenv('MAELAB_Z') or ('MAELAB_W' in os.environ)\n"
        "def d():\n    os.environ['MAELAB_SET'] = '1'\n    return os.environ.get('HOME')\n"
    )
    got = sorted((v, fn) for v, fn, _ in _environment_reads(f))
    assert got == [("MAELAB_W", "c"), ("MAELAB_X", "a"), ("MAELAB_Y", "b"), ("MAELAB_Z", "c")]
    assert _maelab_names_in_code(f) == {"MAELAB_X", "MAELAB_Y", "MAELAB_Z", "MAELAB_W", "MAELAB_SET"}
