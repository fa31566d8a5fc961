"""The results store's maintenance commands: ``python -m maelab.store migrate|check|import``.

Records written before the value checksum (schema 1) are not trusted by the loader (a record stripped down to
schema 1 would otherwise skip the check): :func:`migrate` (``python -m maelab.store migrate ROOT``) verifies them as
the loader does (all but the checksum they lack; one bearing marks of the current format is refused) and adds the
checksum (in place, under the record's lock, values untouched, idempotent). :func:`check` (``python -m maelab.store
check ROOT``) verifies every record as the loader does and lists everything else under ``ROOT`` (stray files and
folders, links, temp files). ``python -m maelab.store import ARCHIVE`` installs the records a lent GPU machine
computed (checked first: ``maelab.device.archive``). All three are exactly as strict as loading: one verification,
``maelab._records.verify``, serves them and :func:`maelab.store.load`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

from . import _records
from ._records import SCHEMA
from ._util import TMP_PREFIX, atomic_path
from ._validate import ParameterError
from .store import (
    LOCK_PREFIX,
    RecordError,
    StoreError,
    _read,
    _verified,
    check_mode_allows_writing,
    lock,
    record_checksum,
    results_root,
)

__all__ = ["migrate_record", "migrate", "check", "main"]


def _record_files(root: Path) -> list[Path]:
    return sorted(p for p in root.glob("*/*.json") if not p.name.startswith("."))


def migrate_record(json_path: Path) -> str:
    """Upgrade one schema-1 record in place (adds ``schema`` and ``sha256``; values and side files untouched).

    The record is verified as :func:`maelab.store.load` verifies it, all but the checksum it lacks (its place,
    shape, side files; one bearing marks of the current format is refused: see ``maelab._records``), then verified
    again and rewritten under its lock, so a writer cannot replace it in between. Returns ``"current"`` (already
    schema 2 and valid) or ``"upgraded"``; :class:`~maelab.store.RecordError` when it cannot be trusted (then
    nothing is written).
    """
    record, _ = _verified(json_path, migrating=True)
    if "schema" in record:
        return "current"
    _, name, profile = _records.location(json_path)
    check_mode_allows_writing(json_path.parent.parent)
    with lock(json_path.parent, f"{name}.{profile}"):
        record, _ = _verified(json_path, migrating=True)
        if "schema" in record:
            return "current"
        record["provenance"]["migrated_from_schema"] = 1
        record = {"schema": SCHEMA, **record}
        record["sha256"] = record_checksum(record)
        with atomic_path(json_path) as tmp:
            tmp.write_text(json.dumps(record, indent=1, sort_keys=True, allow_nan=False) + "\n")
    _read(json_path)
    return "upgraded"


def migrate(root: str | os.PathLike, log: Callable[[str], None] = print) -> dict[str, int]:
    """Upgrade every record under ``root`` to the current format (idempotent); counts by outcome."""
    counts = {"upgraded": 0, "current": 0, "failed": 0}
    for p in _record_files(Path(root)):
        try:
            outcome = migrate_record(p)
        except StoreError as e:  # an untrusted record (RecordError), or a folder it cannot lock or write
            outcome = "failed"
            log(f"[migrate] FAILED {e}")
        else:
            if outcome == "upgraded":
                log(f"[migrate] upgraded {p}")
        counts[outcome] += 1
    log(f"[migrate] {root}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return counts


def check(root: str | os.PathLike, log: Callable[[str], None] = print) -> int:
    """Verify every record under ``root`` as :func:`maelab.store.load` does and list everything else there; returns
    the number of problems.

    A results root holds notebook folders only; a notebook folder holds records, the side files its trusted
    records name and lock files. Anything else is listed: untrusted records, temp files of interrupted writers,
    side files no trusted record names (in this folder), other files, subfolders and symbolic links.
    """
    root, problems, n = Path(root), [], 0
    for folder in sorted(root.iterdir()):
        if folder.is_symlink() or not folder.is_dir():
            problems.append(f"stray: {folder} (a results root holds notebook folders only)")
            continue
        entries, named = sorted(folder.iterdir()), set()
        for p in entries:
            if p.suffix == ".json" and not p.name.startswith("."):
                n += 1
                try:
                    named |= set(_records.side_files(_verified(p)[0]))
                except RecordError as e:
                    problems.append(str(e))
        for p in entries:
            if (p.suffix == ".json" and not p.name.startswith(".")) or (p.name in named and not p.is_symlink()):
                continue
            if p.name.startswith(LOCK_PREFIX + ".") and p.is_file() and not p.is_symlink():
                continue
            temp = p.name.startswith(TMP_PREFIX)
            problems.append(
                f"stray: {p} ({'a temp file of an interrupted writer' if temp else 'no trusted record names it'})"
            )
    for line in problems:
        log(f"[check] {line}")
    log(f"[check] {root}: {n} records, {len(problems)} problems")
    return len(problems)


def main(argv: list[str] | None = None) -> int:
    """``python -m maelab.store migrate|check [ROOT]`` and ``import ARCHIVE``; the exit status."""
    ap = argparse.ArgumentParser(prog="python -m maelab.store", description="maintain a maelab results folder")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for cmd, text in (
        ("migrate", "upgrade old records in place (adds checksums; values untouched)"),
        ("check", "verify every record and list stray files"),
    ):
        p = sub.add_parser(cmd, help=text)
        p.add_argument("root", nargs="?", type=Path, default=None, help="results root (default data/results)")
    imp = sub.add_parser("import", help="install the records of a GPU installment's archive (maelab.device)")
    imp.add_argument("archive", type=Path)
    imp.add_argument("--results-dir", type=Path, default=None, help="results root (default data/results)")
    imp.add_argument("--replace", action="store_true", help="overwrite records stored with other values")
    imp.add_argument("--allow-dirty", action="store_true", help="accept an archive packed from a dirty tree")
    a = ap.parse_args(argv)
    if a.cmd == "import":
        from .device import DeviceError, import_archive

        try:
            import_archive(a.archive, root=a.results_dir, replace=a.replace, allow_dirty=a.allow_dirty)
        except (DeviceError, StoreError, ParameterError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        return 0
    root = a.root if a.root is not None else results_root()
    if not root.is_dir():
        print(f"error: results root {root} is not a folder", file=sys.stderr)
        return 1
    if a.cmd == "migrate":
        return 1 if migrate(root)["failed"] else 0
    return 1 if check(root) else 0


if __name__ == "__main__":
    sys.exit(main())
