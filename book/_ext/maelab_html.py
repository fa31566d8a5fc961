"""Sphinx extension for the book's HTML: each page loads every script once; pasted findings stay current; the API
pages see the paper registry.

The Sphinx build is a program of its own (``jupyter-book build`` runs in a subprocess), so it is one of the tops
that hand the paper registry to the core (``maelab.registry``): autodoc of ``maelab.claims.REGISTRY``,
``maelab.profiles`` and ``maelab.cost`` reads it, and the core never imports the papers itself.

sphinx-thebe and sphinx-togglebutton add an inline script (``const THEBE_JS_URL = ...``, ``var
togglebuttonSelector = ...``) once as a registered file (filename ``""``) and once to the HTML builder (filename
``None``); Sphinx 7.4 emits both, and the second ``const`` fails in the browser with "SyntaxError: Identifier
'THEBE_JS_URL' has already been declared". Scripts equal up to that ``None``/``""`` are dropped per page.
"""
from __future__ import annotations

from typing import Any


def _key(js: Any) -> tuple:
    attrs = getattr(js, "attributes", {}) or {}
    return (str(getattr(js, "filename", js) or ""), getattr(js, "priority", 500), tuple(sorted(attrs.items())))


def _unique_scripts(app, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    scripts = context.get("script_files")
    if not isinstance(scripts, list):
        return
    seen, unique = set(), []
    for js in scripts:
        if _key(js) not in seen:
            seen.add(_key(js))
            unique.append(js)
    scripts[:] = unique


def _note_glue_sources(app, doctree: Any) -> None:
    """A page pasting glue from another document (``{glue:}`` with ``:doc:``, ``{glue:text}`path::key```: the
    landing page and the paper overviews paste the scoreboard's findings) depends on that document's source.

    myst-nb resolves such pastes when writing but records no dependency, so an incremental build (``make book``
    reuses ``_build/.doctrees``) would keep the old page after the scoreboard changed; with the dependency noted,
    Sphinx re-reads the page whenever the executed scoreboard notebook is newer.
    """
    try:
        from myst_nb.ext.glue.utils import PendingGlueReference
    except ImportError:  # pragma: no cover - myst-nb is a dependency of the book
        return
    env = app.env
    for node in doctree.findall(PendingGlueReference):
        if node.refdoc != env.docname:
            env.note_dependency(str(env.doc2path(node.refdoc)))


def setup(app) -> dict:
    from maelab import papers

    papers.install()  # this build is a top: the API pages read the registry (see the module docstring)
    app.connect("html-page-context", _unique_scripts, priority=900)  # after the extensions that add scripts
    app.connect("doctree-read", _note_glue_sources)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
