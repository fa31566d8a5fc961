"""Whether an executed notebook is still what running it again would give: the key of what it was computed from.

``make book`` twice with nothing changed should not execute 15 notebooks twice (issue 23: 6.6 min for nothing).
As jupyter-cache does for QuantEcon's lectures, a notebook is re-executed only when something it depends on
changed, here judged by content, not by modification times (a fresh clone or a ``touch`` changes those and
nothing else):

* its source ``notebooks/NAME.md``;
* the whole library (every file under ``src/maelab``, settings and static files included) and
  ``requirements.lock``: a changed function may change any page, and deciding which ones would need an import
  graph of the kernels' calls. Conservative: a library change re-executes every page;
* every result of the results root it ran with (``data/results`` or the smoke cache), not just its own folder:
  pages read the shared zoo, the plan tables and (the scoreboard, the synthesis page) other pages' claims. So a new
  result anywhere re-executes every page once, and a page whose run changed a result is re-executed by the next
  run (then nothing changes and the key settles);
* the parameters the runner passed (profile, device, recompute, and any ``-p NAME=VALUE``).

:func:`inputs_key` computes it; the runner stores it in the executed notebook's metadata (``maelab.inputs_key``,
:data:`KEY`) after a successful run and skips a later run whose key is equal (a plain run only: ``--recompute``
always executes). The builder accepts an executed notebook whose stored key equals the current one even when an
input's modification time is newer (:func:`recorded_key`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

__all__ = ["KEY", "inputs_key", "recorded_key"]

#: The entry of the executed notebook's ``metadata["maelab"]`` that holds the key.
KEY = "inputs_key"


def _tree(folder: Path, base: Path, h) -> None:
    """Feed every file under ``folder`` (sorted, relative path and contents) into the hash ``h``; hidden files,
    ``__pycache__`` and the runner's temp files are left out, and so is a file gone between the listing and the
    read (then the key differs from the settled one, and the next run executes the page once more)."""
    if not folder.is_dir():
        h.update(f"absent:{folder.name}\n".encode())
        return
    for f in sorted(folder.rglob("*")):
        rel = f.relative_to(base)
        if not f.is_file() or any(p.startswith(".") or p == "__pycache__" for p in rel.parts):
            continue
        try:
            data = f.read_bytes()
        except FileNotFoundError:  # removed since the listing (another page's store replaced it: --jobs)
            continue
        h.update(f"{rel.as_posix()}\n".encode())
        h.update(hashlib.sha256(data).digest())


def inputs_key(name: str, params: dict, results: Path, root: Path) -> str:
    """The key of notebook ``name`` run with ``params`` against the results root ``results`` in the repository
    ``root``: a SHA-256 over its source, the library, ``requirements.lock``, every file of ``results`` and the
    parameters (JSON, sorted keys; values that JSON cannot hold are written with ``repr``)."""
    h = hashlib.sha256()
    h.update(b"maelab-notebook-inputs-v1\n")
    src = root / "notebooks" / f"{name}.md"
    h.update(hashlib.sha256(src.read_bytes() if src.exists() else b"").digest())
    _tree(root / "src" / "maelab", root, h)
    lock = root / "requirements.lock"
    h.update(hashlib.sha256(lock.read_bytes() if lock.exists() else b"").digest())
    h.update(b"results\n")
    _tree(Path(results), Path(results), h)
    h.update(json.dumps(params, sort_keys=True, default=repr).encode())
    return h.hexdigest()


def recorded_key(executed: Path) -> tuple[str | None, dict]:
    """The key stored in an executed notebook and the parameters it ran with (``(None, {})`` when it has none or
    cannot be read)."""
    import nbformat

    try:
        nb = nbformat.read(executed, as_version=4)
    except Exception:  # noqa: BLE001 - an unreadable notebook is simply not fresh
        return None, {}
    meta = nb.metadata.get("maelab") or {}
    return meta.get(KEY), dict(meta.get("params") or {})
