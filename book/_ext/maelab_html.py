"""Sphinx extension for the book's HTML: each page loads every script once.

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


def setup(app) -> dict:
    app.connect("html-page-context", _unique_scripts, priority=900)  # after the extensions that add scripts
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
