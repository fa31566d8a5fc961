"""The book's pages and their structure: notebook order (``_toc.yml``), which notebooks are pages, the section of a
page that records each claim, the names a page's ``parameters`` cell declares.

Read from the sources only (``_toc.yml``, ``notebooks/NAME.md`` through jupytext); nothing here executes a notebook,
and jupytext and yaml are imported only when a function needs them.
"""

from __future__ import annotations

import re
from pathlib import Path

from .. import claims as claims_mod
from .. import paths
from .._validate import ParameterError

LAST = ("scoreboard",)  # notebooks that read other notebooks' results run last


class NotebookFailed(RuntimeError):
    """A notebook cannot be executed or published (failed, shows an error, stale, not executed): one line naming it."""


def notebooks_in_order(root: Path | None = None) -> list[str]:
    """Notebook names in _toc.yml order, those in LAST at the end; notebooks/ files missing from the toc after."""
    import yaml

    root = root or paths.repo_root()
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    names: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            f = node.get("file")
            if isinstance(f, str) and f.startswith("notebooks/"):
                names.append(Path(f).stem)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(toc)
    on_disk = sorted(p.stem for p in (root / "notebooks").glob("*.md"))
    names += [n for n in on_disk if n not in names]
    names = [n for n in names if n in on_disk]
    return [n for n in names if n not in LAST] + [n for n in LAST if n in names]


def in_toc(notebook: str, root: Path | None = None) -> bool:
    """Whether notebooks/NOTEBOOK is a page of the book (listed in _toc.yml; the book builds only listed files)."""
    toc = ((root or paths.repo_root()) / "_toc.yml").read_text()
    return re.search(rf"^\s*-?\s*file:\s*notebooks/{re.escape(notebook)}\s*$", toc, flags=re.M) is not None


def _heading_anchor(text: str) -> str:
    """The id Sphinx gives a MyST heading: docutils' ``make_id`` of its text (maths as its source, no markup)."""
    from docutils.nodes import make_id

    plain = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return make_id(re.sub(r"[`*$]", "", plain))


def _string_patterns(source: str) -> list:
    """Regexes of the string literals of a code cell: constants literally, f-strings with ``.+`` for each field
    (only f-strings whose literal text holds a dot, as claim ids do: ``f"{cid}"`` would match any id)."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(re.compile(re.escape(node.value)))
        elif isinstance(node, ast.JoinedStr) and any(
            isinstance(v, ast.Constant) and "." in v.value for v in node.values
        ):  # "paper.name" ids spell the dot
            out.append(
                re.compile("".join(re.escape(v.value) if isinstance(v, ast.Constant) else ".+" for v in node.values))
            )
    return out


def claim_sections(notebook: str, root: Path | None = None) -> dict[str, tuple[str, str]]:
    """Claim id -> (heading, anchor) of the section of notebooks/NOTEBOOK.md whose cell records it.

    A claim is placed in the first code cell calling ``ctx.claim(`` whose string literals (f-strings as patterns)
    spell its id, under the last ``##`` (or deeper) heading before that cell. Claims recorded elsewhere (an id held
    in a variable only) are left out: a link then goes to the page alone.
    """
    import jupytext

    root = root or paths.repo_root()
    src = root / "notebooks" / f"{notebook}.md"
    if not src.exists():
        raise ParameterError(
            "notebook", "one of " + ", ".join(sorted(p.stem for p in src.parent.glob("*.md"))), notebook
        )
    ids = [c.id for c in claims_mod.REGISTRY.values() if c.notebook == notebook]
    heading, out = None, {}
    for cell in jupytext.read(src).cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                m = re.match(r"^#{2,6}\s+(.+?)\s*$", line)
                if m:
                    heading = m.group(1)
        elif cell.cell_type == "code" and heading and "ctx.claim(" in cell.source:
            patterns = _string_patterns(cell.source)
            for cid in ids:
                if cid not in out and any(p.fullmatch(cid) for p in patterns):
                    out[cid] = (heading, _heading_anchor(heading))
    return out


def notebook_parameters(name: str, root: Path | None = None) -> tuple[str, ...]:
    """Names assigned in the code cell tagged ``parameters`` of notebooks/NAME.md (what papermill may inject)."""
    import ast

    import jupytext

    root = root or paths.repo_root()
    src = root / "notebooks" / f"{name}.md"
    if not src.exists():
        raise ParameterError("notebook", "one of " + ", ".join(notebooks_in_order(root)), name)
    for cell in jupytext.read(src).cells:
        if cell.cell_type == "code" and "parameters" in cell.metadata.get("tags", []):
            names: list[str] = []
            for node in ast.parse(cell.source).body:
                targets = (
                    node.targets
                    if isinstance(node, ast.Assign)
                    else ([node.target] if isinstance(node, ast.AnnAssign) else [])
                )
                for t in targets:
                    names += [e.id for e in (t.elts if isinstance(t, ast.Tuple) else [t]) if isinstance(e, ast.Name)]
            return tuple(dict.fromkeys(names))
    raise NotebookFailed(f"notebook {name} (notebooks/{name}.md) has no code cell tagged 'parameters'")
