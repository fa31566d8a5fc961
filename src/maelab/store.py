"""Results as data: ``load_or_compute(name, config, fn)``.

Every expensive computation in the book goes through :func:`load_or_compute`. A result is one *record* under
``<root>/<notebook>/``:

* ``<name>.<profile>.json`` -- the record: JSON-able values returned by ``fn`` (``data``) plus provenance (full
  config and its hash, git commit and dirty flag, package versions, device name, seeds, wall time, timestamp,
  profile), the name and SHA-256 of each side file, the record format (``schema``) and ``sha256``: the SHA-256 of
  the canonical JSON of everything else in the record (values, side-file checksums, provenance);
* ``<name>.<profile>.<key>.<digest>.csv`` -- one CSV per pandas DataFrame value;
* ``<name>.<profile>.<digest>.npz`` -- all numpy-array / tensor values (loaded with ``allow_pickle=False``).

``<digest>`` is the first 12 hex digits of the side file's own SHA-256, so every version of a record has its own
side files.

Guarantees (tested in ``tests/test_store.py`` and ``tests/test_faults.py``):

* **All or nothing.** A writer builds the whole record (side files and JSON) in a temp folder
  ``.maelab-tmp-store.*`` next to it, checksums and re-reads it there, then publishes: side files first (new names,
  which no published record references yet), the JSON last by one ``os.replace``. A reader sees the old record or
  the new one, never a mix; a writer killed at any point leaves the old record intact (and at most gitignored temp
  files, or unreferenced side files, both removed by the next write of that result).
* **One writer per result.** Writers hold ``fcntl.flock`` on ``.maelab-lock.<name>.<profile>``. A second process
  asking for the same result waits, then finds the fresh result instead of computing it again.
* **Integrity.** One verification (``maelab._records.verify``) serves :func:`load` (hence :func:`load_or_compute`
  and :func:`read`), the writer checking its own record before publishing it, and ``python -m maelab.store check``
  and ``migrate``: the record's ``sha256``, every side file's SHA-256, its shape and its place. A record is bound to
  the notebook, name and profile its provenance names, so one copied or renamed to another folder, name or profile
  file is refused, as are symbolic links, non-plain files and non-strict JSON. An untrusted record:
  :class:`RecordError` (one line) from :func:`load`; :func:`load_or_compute` reports it in one line and
  recomputes. A checksum is not a signature: a value edited together with a recomputed SHA-256 is accepted.
* **Exact values.** NaN and +-inf in JSON values are stored as ``{"__float__": "nan"}`` (``"inf"``, ``"-inf"``) and
  come back as floats.
* **Fail before computing.** When a result must be computed, the results folder is checked first (creatable,
  writable, lockable, some free space): a problem is a one-line :class:`StoreError`, not an ``OSError`` after
  hours of work. Reading needs no write permission: a render-only run works on a read-only results folder.
* **Run modes never leak into results.** The run mode comes with the run's options (``options``:
  :class:`maelab.options.RunOptions`, which the book's context passes; no environment variable): a dry run stores
  only under its scratch folder and ``no_compute="record"`` stores nothing (:func:`check_mode_allows_writing`,
  one-line :class:`StoreError` before computing).
* **Formats and maintenance.** Records written before the value checksum (schema 1) are not trusted by the loader:
  loading one raises :class:`OldSchemaError` naming ``python -m maelab.store migrate ROOT``; that command,
  ``check`` and ``import`` are :mod:`maelab.store_admin`'s.

Root (:func:`results_root`): the ``root`` argument; else the run options' ``results_root`` (``python -m maelab.book
run --results-dir``; a dry run: its scratch folder's ``results``); else ``<repo>/data/results`` -- except for the
``smoke`` profile, whose results go to ``<repo>/.cache/results-smoke`` (gitignored): smoke runs never write into
``data/results``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from . import _records, parts, paths
from ._records import SCHEMA
from ._records import canonical as _canonical
from ._records import sha256_file as _sha256_file  # noqa: F401 - used as store._sha256_file by the tests
from ._util import TMP_PREFIX, _owner
from ._validate import ParameterError, one_of
from .options import RunOptions
from .profiles import PROFILE_NAMES, PROFILE_ORDER, profile_record
from .provenance import device_description, git_state, package_versions

LOCK_PREFIX = ".maelab-lock"  # per-result lock files (gitignored)
MIN_FREE_BYTES = 64 << 20  # refuse to start a computation with less free space than this in the results folder


class StoreError(RuntimeError):
    """The results store cannot do what was asked (permissions, disk, lock). The message is one line."""


class RecordError(StoreError):
    """A stored record that cannot be trusted: unreadable, tampered with, or with a missing/changed side file."""


class OldSchemaError(RecordError):
    """A record in an older format; ``python -m maelab.store migrate`` upgrades it."""


def results_root(profile: str | None = None, options: RunOptions | None = None) -> Path:
    """The folder results are stored under: the run options' ``results_root`` when set; in a dry run its scratch
    folder's ``results``; else ``.cache/results-smoke`` for the ``smoke`` profile and ``data/results`` otherwise
    (:func:`maelab.paths.smoke_results`, :func:`maelab.paths.committed_results`)."""
    if options is not None and options.results_root is not None:
        return Path(options.results_root)
    if options is not None and options.dry_run is not None:
        return options.dry_run.scratch_dir / "results"
    if profile in PROFILE_NAMES and not profile_record(profile).committed:
        return paths.smoke_results()
    return paths.committed_results()


# ----------------------------------------------------------------------------------------------- hashing
def config_hash(config: dict) -> str:
    """SHA-256 (first 16 hex digits) of the canonical JSON of ``config``."""
    return _records.config_hash(config)


def record_checksum(record: dict) -> str:
    """SHA-256 of the canonical JSON of a record without its ``sha256`` field (values, side-file sums, provenance)."""
    return _records.record_checksum(record)


# ----------------------------------------------------------------------------------------------- result
@dataclasses.dataclass
class Result:
    """What :func:`load_or_compute` returns: the values and their provenance."""

    name: str
    data: dict
    provenance: dict
    from_store: bool
    path: Path

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __contains__(self, key: str) -> bool:
        return key in self.data

    @property
    def label(self) -> str:
        p = self.provenance
        commit = p.get("git", {}).get("commit", "unknown")[:10]
        dirty = "+dirty" if p.get("git", {}).get("dirty") else ""
        return (
            f"profile {p.get('profile')} · {p.get('device')} · commit {commit}{dirty} · seeds "
            f"{p.get('seeds')} · {p.get('wall_time_s', 0):.1f} s · {p.get('timestamp', '')[:19]}"
        )


def record_path(root: str | os.PathLike, notebook: str, name: str, profile: str) -> Path:
    """Where the JSON of record (notebook, name, profile) lives under ``root``."""
    return Path(root) / notebook / f"{name}.{profile}.json"


# ----------------------------------------------------------------------------------------------- reading
def _read(json_path: Path, where: tuple[str, str, str] | None = None, *, migrating: bool = False) -> tuple[dict, dict]:
    """Read and verify a record (``maelab._records.verify``, the one verification of every reader); (values,
    provenance), or :class:`RecordError` / :class:`OldSchemaError` (one line) when it cannot be trusted."""
    record, data = _verified(json_path, where, migrating=migrating)
    return data, record["provenance"]


def _verified(json_path: Path, where=None, *, migrating: bool = False) -> tuple[dict, dict]:
    """``maelab._records.verify`` with its failures raised as this module's errors: (record, values)."""
    try:
        return _records.verify(json_path, where, migrating=migrating)
    except _records.Untrusted as e:
        raise (OldSchemaError if e.old_format else RecordError)(str(e)) from None


def load(notebook: str, name: str, profile: str, root: str | os.PathLike | None = None) -> Result | None:
    """Read a stored result without computing anything (None when there is none).

    Raises :class:`RecordError` when a record exists but cannot be trusted (one-line message saying why; among
    the reasons: it was written for another notebook, name or profile), :class:`maelab.ParameterError` for a name
    that is not identifier-like (no path can lead outside ``root``). Needs only read permission.
    """
    _check_names(name, notebook, profile)
    root = Path(root) if root is not None else results_root(profile)
    json_path = record_path(root, notebook, name, profile)
    if not os.path.lexists(json_path):
        return None
    data, prov = _read(json_path)
    return Result(name, data, prov, True, json_path)


# ----------------------------------------------------------------------------------------------- writing
def _fault(point: str) -> None:
    """Test seam: tests/test_faults.py replaces this to kill or pause a writer at a named point. No-op here."""


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def check_writable(folder: Path) -> None:
    """Fail in one line (:class:`StoreError`) unless ``folder`` can be created and written, with some free space."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=f"{TMP_PREFIX}-probe.")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise StoreError(
            f"results folder {folder} is not writable ({e.strerror or e}); nothing was computed: "
            "fix its permissions or choose another results root (--results-dir)"
        ) from None
    free = shutil.disk_usage(folder).free
    if free < MIN_FREE_BYTES:
        raise StoreError(
            f"results folder {folder} has only {free >> 20} MiB free (at least {MIN_FREE_BYTES >> 20} "
            "MiB needed); nothing was computed"
        )


@contextlib.contextmanager
def lock(folder: Path, stem: str, log: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the per-result lock ``folder/.maelab-lock.<stem>`` (exclusive ``flock``); waits for another holder."""
    path = folder / f"{LOCK_PREFIX}.{stem}"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise StoreError(f"cannot take the lock {path} ({e.strerror or e}); nothing was computed") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if log:
                log(f"[store] {stem}: another process is writing this result; waiting for it")
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _write_side(tmpdir: Path, fname: str, b: bytes) -> None:
    with open(tmpdir / fname, "wb") as f:
        f.write(b)
        f.flush()
        os.fsync(f.fileno())


def _publish(json_path: Path, plain: dict, frames: dict, arrays: dict, provenance: dict) -> tuple[dict, dict]:
    """Write a whole record into a temp folder, verify it there, then publish it (JSON last); caller holds the lock.

    Returns what a later :func:`load` returns.
    """
    folder, stem = json_path.parent, json_path.name[: -len(".json")]
    _cleanup(folder, stem, keep=None)  # leftovers of writers killed earlier (we hold the lock: none is alive)
    tmpdir = Path(tempfile.mkdtemp(dir=folder, prefix=f"{TMP_PREFIX}-store.{stem}.{_owner()}."))
    try:
        frames_meta, arrays_meta, sides = {}, None, []
        for key, df in frames.items():
            b = df.to_csv(index=False).encode()
            digest = hashlib.sha256(b).hexdigest()
            fname = f"{stem}.{key}.{digest[:12]}.csv"
            _write_side(tmpdir, fname, b)
            frames_meta[key], sides = {"file": fname, "sha256": digest}, sides + [fname]
        if arrays:
            buf = io.BytesIO()
            np.savez_compressed(buf, **arrays)
            b = buf.getvalue()
            digest = hashlib.sha256(b).hexdigest()
            fname = f"{stem}.{digest[:12]}.npz"
            _write_side(tmpdir, fname, b)
            arrays_meta, sides = {"file": fname, "keys": sorted(arrays), "sha256": digest}, sides + [fname]
        record = {
            "schema": SCHEMA,
            "provenance": provenance,
            "data": plain,
            "frames": frames_meta,
            "arrays": arrays_meta,
        }
        record["sha256"] = record_checksum(record)
        _write_side(
            tmpdir, json_path.name, (json.dumps(record, indent=1, sort_keys=True, allow_nan=False) + "\n").encode()
        )
        where = (folder.name, *stem.split("."))  # the temp folder is not the notebook's: bind it explicitly
        got = _read(tmpdir / json_path.name, where)  # verify what is on disk before anyone can see it
        _fault("before-publish")
        for fname in sides:
            os.replace(tmpdir / fname, folder / fname)
        _fault("side-files-published")
        os.replace(tmpdir / json_path.name, json_path)
        _fsync_dir(folder)
        _fault("json-published")
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    _cleanup(folder, stem, keep=set(sides))
    return got


def _cleanup(folder: Path, stem: str, keep: set[str] | None) -> None:
    """Remove this record's temp folders; with ``keep``, also its side files that the record no longer names."""
    for p in folder.glob(f"{TMP_PREFIX}-store.{stem}.*"):
        shutil.rmtree(p, ignore_errors=True)
    if keep is None:
        return
    for p in folder.glob(f"{stem}.*"):
        if p.name not in keep and p.suffix in (".csv", ".npz") and p.is_file():
            with contextlib.suppress(FileNotFoundError):
                p.unlink()


def _provenance(
    notebook: str,
    name: str,
    profile: str,
    config: dict,
    seeds: Any,
    device: Any,
    wall: float,
    datasets: dict | None = None,
    options: RunOptions | None = None,
) -> dict:
    if isinstance(seeds, int):
        seeds = [seeds]
    return {
        "schema": SCHEMA,
        "notebook": notebook,
        "name": name,
        "profile": profile,
        "config": _canonical(config),
        "config_hash": config_hash(config),
        "git": git_state(options=options),
        "versions": package_versions(),
        "device": device_description(device),
        "seeds": list(seeds) if seeds is not None else None,
        "wall_time_s": round(wall, 3),
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "datasets": dict(sorted((datasets or {}).items())),  # {name: SHA-256} of the hashed datasets fn loaded
    }


def _check_names(name: str, notebook: str, profile: str) -> None:
    for pname, val in (("name", name), ("notebook", notebook)):
        if not _records.is_name(val):
            raise ParameterError(pname, "a non-empty identifier-like string (letters, digits, _ or -)", val)
    one_of("profile", profile, PROFILE_ORDER)


def save(
    name: str,
    config: dict,
    data: dict,
    *,
    notebook: str,
    profile: str,
    seeds: list[int] | int | None = None,
    device: Any = None,
    root: str | os.PathLike | None = None,
    wall_time_s: float = 0.0,
    options: RunOptions | None = None,
) -> Result:
    """Store ``data`` as record (notebook, name, profile) unconditionally (checked, locked, all or nothing).
    ``options``: the run's (its root, its mode: :func:`check_mode_allows_writing`; None: a plain run)."""
    _check_names(name, notebook, profile)
    root = Path(root) if root is not None else results_root(profile, options)
    json_path = record_path(root, notebook, name, profile)
    plain, frames, arrays = _records.split_values(data)
    prov = _provenance(notebook, name, profile, config, seeds, device, wall_time_s, options=options)
    check_mode_allows_writing(root, options)
    check_writable(json_path.parent)
    with lock(json_path.parent, f"{name}.{profile}"):
        got = _publish(json_path, plain, frames, arrays, prov)
    return Result(name, got[0], got[1], False, json_path)


def _stored(json_path: Path, h: str, say: Callable[[str], None], quiet: bool = False) -> Result | None:
    """The stored record if trustworthy and computed from config hash ``h``; reports why not in one line."""
    if not os.path.lexists(json_path):
        return None
    try:
        data, prov = _read(json_path)
    except OldSchemaError:
        raise
    except RecordError as e:
        if not quiet:  # never silent, even with log=None (quiet: the re-check under the lock, already reported)
            print(f"[store] {e} -> recomputing", file=sys.stderr, flush=True)
        return None
    if prov.get("config_hash") != h:
        if not quiet:
            say(f"[store] {json_path.name}: config hash {prov.get('config_hash')} != requested {h} -> recomputing")
        return None
    if not quiet:
        say(f"[store] {json_path.name}: found a stored result with the same config ({h}); loading it")
    return Result(json_path.name.split(".")[0], data, prov, True, json_path)


# ----------------------------------------------------------------------------------------------- no-compute mode
NO_COMPUTE_EXEMPT = ("claims",)  # derived from other results and cheap: rewritten even in no-compute mode


class StoreMiss(RuntimeError):
    """No stored result matches the request and the run's ``no_compute`` option forbids computing it."""


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def check_mode_allows_writing(root: Path, options: RunOptions | None = None) -> None:
    """Refuse (one-line :class:`StoreError`) to store anything under ``root`` in a run mode whose results are not
    real ones. Called before computing and before every write (:func:`load_or_compute`, :func:`save`).

    * Dry run (``options.dry_run`` set): only under the dry run's scratch folder
      (:attr:`maelab.options.DryRunLimits.scratch_dir`, where ``python -m maelab.book run --dry-run`` puts its
      results), and never under the committed ``data/results``. A dry run's capped numbers would otherwise be
      stored under the same record names and config hashes as the real results (the run options are not part of a
      result's config) and be loaded by the next plain run.
    * ``options.no_compute == "record"`` (``scripts/migrate_result_keys.py``): nowhere; the mode hands stored
      records on under requested keys, so nothing derived from them may be stored.
    """
    if options is None:
        return
    if options.dry_run is not None:
        scratch, target = options.dry_run.scratch_dir.resolve(), Path(root).resolve()
        committed = paths.committed_results().resolve()
        if not _within(target, scratch) or _within(target, committed):
            raise StoreError(
                f"a dry run stores results only under its scratch folder {scratch}, not under {target}; a dry run is "
                "`python -m maelab.book run --dry-run` (run options with dry_run=None for a real run)"
            )
    if options.no_compute == "record":
        raise StoreError(
            "no_compute='record' stores nothing (stored records are only handed on under the requested keys); "
            f"run without it to store results under {root}"
        )


def _no_compute(
    name: str, config: dict, h: str, notebook: str, profile: str, json_path: Path, options: RunOptions | None
) -> Result | None:
    """Called just before computing. ``options.no_compute`` None (or no options): None (compute). "on": raise a
    one-line :class:`StoreMiss`. "record" (used only by ``scripts/migrate_result_keys.py``): append the request to
    ``options.no_compute_log`` (JSON lines) and return the stored record as if stored under the requested key, so
    that one run lists every result whose key changed (and results keyed by their sources' hashes see the new
    ones)."""
    mode = options.no_compute if options is not None else None
    if mode is None or name in NO_COMPUTE_EXEMPT:
        return None
    try:
        got = _read(json_path) if os.path.lexists(json_path) else None
    except RecordError:
        got = None
    stored = got[1].get("config_hash") if got else None
    if mode == "record" and got is not None and options.no_compute_log:
        with open(options.no_compute_log, "a") as f:
            f.write(
                json.dumps(
                    {
                        "notebook": notebook,
                        "name": name,
                        "profile": profile,
                        "path": str(json_path),
                        "config": _canonical(config),
                        "config_hash": h,
                        "stored_hash": stored,
                    }
                )
                + "\n"
            )
        return Result(name, got[0], {**got[1], "config": _canonical(config), "config_hash": h}, True, json_path)
    raise StoreMiss(f"{notebook}/{name}.{profile}: no stored result with config hash {h} (stored: {stored})")


def read(notebook: str, name: str, profile: str, config: dict, root: str | os.PathLike | None = None) -> Result | None:
    """The stored result (notebook, name, profile) computed with ``config`` -- read, never computed.

    ``config``: the full config the result was stored under (what :func:`load_or_compute` hashed). None when nothing
    is stored; a stored record under another config raises :class:`StoreMiss` (one line, both hashes), as does an
    untrusted one (:class:`RecordError`, one line) -- a reader never takes a result computed under other settings.
    """
    _check_names(name, notebook, profile)
    h = config_hash(config)
    found = load(notebook, name, profile, root=root)
    if found is None:
        return None
    stored = found.provenance.get("config_hash")
    if stored != h:
        raise StoreMiss(f"{notebook}/{name}.{profile}: no stored result with config hash {h} (stored: {stored})")
    return found


def matches(notebook: str, name: str, profile: str, config: dict, options: RunOptions | None = None, root=None) -> bool:
    """Whether :func:`load_or_compute` would load rather than compute (a trustworthy record of ``config``'s hash
    under ``root``, default that of ``profile`` and ``options``): read, silent; asked before a run is prefetched."""
    path = record_path(Path(root) if root is not None else results_root(profile, options), notebook, name, profile)
    return _stored(path, config_hash(config), lambda line: None, quiet=True) is not None


def _log_stderr(line: str) -> None:
    """The store's default log: one line on stderr (the book does not render stderr; a terminal shows it)."""
    print(line, file=sys.stderr, flush=True)


def load_or_compute(
    name: str,
    config: dict,
    fn: Callable[[], dict],
    *,
    notebook: str,
    profile: str,
    seeds: list[int] | int | None = None,
    device: Any = None,
    recompute: bool = False,
    root: str | os.PathLike | None = None,
    log: Callable[[str], None] | None = _log_stderr,
    options: RunOptions | None = None,
) -> Result:
    """Return the stored result for (notebook, name, profile) if its config matches, else compute and store it.

    Args:
        name: result name (identifier-like; part of the file name).
        config: everything the result depends on (JSON-able). Its hash decides reuse.
        fn: ``() -> dict`` computing the result. Values: JSON-able (NaN/inf kept), pandas DataFrames (-> CSV) or
            arrays/tensors (-> one npz).
        notebook, profile: where it goes (``<root>/<notebook>/<name>.<profile>.*``).
        seeds, device: provenance.
        recompute: compute even when a matching result is stored.
        root: results root (default :func:`results_root` of ``profile`` and ``options``).
        log: where progress lines go (default: stderr, which the book does not render; ``None``: silent; a tampered
            record is reported on stderr regardless).
        options: the run's options (:class:`maelab.options.RunOptions`; None: a plain run): its results root and
            mode -- ``no_compute`` (fail, or hand on a stored record, instead of computing) and the dry run (store
            only under its scratch folder: :func:`check_mode_allows_writing`) -- and the git state where git cannot
            answer. Never part of the result's key.

    Raises:
        StoreError: the results folder is not writable / lockable / full -- before ``fn`` runs.
        OldSchemaError: the stored record predates the record checksum (run ``python -m maelab.store migrate``).
    """
    _check_names(name, notebook, profile)
    if not callable(fn):
        raise ParameterError("fn", "a callable returning a dict", fn)
    root = Path(root) if root is not None else results_root(profile, options)
    h = config_hash(config)
    json_path = record_path(root, notebook, name, profile)
    say = log or (lambda s: None)
    if recompute:
        say(f"[store] {name}: recompute requested")
    else:
        found = _stored(json_path, h, say)
        if found is not None:
            return found

    # ---- compute path: nothing usable is stored ----
    hit = _no_compute(name, config, h, notebook, profile, json_path, options)
    if hit is not None:
        return hit
    from .data.packaged import datasets_used

    check_mode_allows_writing(root, options)
    check_writable(json_path.parent)
    with lock(json_path.parent, f"{name}.{profile}", say):
        if not recompute:  # another process may have stored it while we waited for the lock
            found = _stored(json_path, h, say, quiet=True)
            if found is not None:
                say(f"[store] {json_path.name}: stored by another process meanwhile; loading it")
                return found
        t0 = time.perf_counter()
        where = {"name": name, "config_hash": h, "notebook": notebook, "profile": profile, "root": root}
        # provenance: hashes of the datasets fn loads; its units may be stored as parts of this record (maelab.parts)
        with (
            datasets_used() as used_datasets,
            parts.scope(**where, device=device, recompute=recompute, options=options),
        ):
            out = fn()
        wall = time.perf_counter() - t0
        if not isinstance(out, dict):
            raise ParameterError("fn", "a callable returning a dict", type(out).__name__)
        plain, frames, arrays = _records.split_values(out)
        prov = _provenance(notebook, name, profile, config, seeds, device, wall, used_datasets, options)
        got = _publish(json_path, plain, frames, arrays, prov)
    say(f"[store] {json_path.name}: computed in {wall:.1f} s and stored")
    return Result(name, got[0], got[1], False, json_path)


def stored_profiles(notebook: str, root: Path | None = None) -> list[str]:
    """Profiles with at least one stored record for ``notebook`` under the committed root, best first."""
    root = Path(root) if root is not None else results_root()
    folder = root / notebook
    found = (
        {p.name.split(".")[-2] for p in folder.glob("*.json") if not p.name.startswith(".")}
        if folder.exists()
        else set()
    )
    return [p for p in PROFILE_ORDER if p in found]


if __name__ == "__main__":  # python -m maelab.store: the admin commands (maelab.store_admin)
    from maelab.store_admin import main

    sys.exit(main())
