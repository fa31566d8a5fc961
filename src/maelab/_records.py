"""The record format of :mod:`maelab.store` and the one verification every reader of a record goes through.

:func:`verify` is used by ``store.load`` (hence ``load_or_compute``, ``read`` and the book), by the writer on its own
record before publishing it, and by the admin commands ``python -m maelab.store check`` and ``migrate`` -- so no
path trusts a record that another refuses. A record is trusted only when all of this holds:

1. **Where it stands.** ``<root>/<notebook>/<name>.<profile>.json`` with identifier-like names and a known profile;
   a plain file (not a symbolic link, FIFO or device) in a folder that is not a symbolic link; and its provenance
   names that same notebook, name and profile. A record copied or renamed to another notebook folder, name or
   profile is refused: its values were computed for the place its provenance names.
2. **Strict JSON.** No ``NaN`` / ``Infinity`` literals, no number that overflows to infinity, no duplicate keys (a
   duplicate would show one value to a reader of the file and load another).
3. **Its shape.** The top-level keys of its format; values under identifier-like keys; each side file named for
   this record and this key (``<name>.<profile>.<key>.<digest>.csv``, ``<name>.<profile>.<digest>.npz``, where
   ``<digest>`` starts the file's SHA-256; records migrated from schema 1 keep their names without digest); the
   ``config_hash`` is the hash of the stored ``config``.
4. **Its checksum** (schema 2): ``sha256`` is the SHA-256 of the record's canonical JSON. A schema-1 record (no
   checksum) is refused, except by ``migrate``, which refuses one that carries marks only the current store writes
   (digest side-file names, ``datasets`` or ``migrated_from_schema`` in its provenance, encoded NaN): a current
   record stripped down to the old format does not skip the checksum that way.
5. **Its side files.** Plain files in the record's folder, each with the recorded SHA-256; the npz holds exactly the
   listed arrays (``allow_pickle=False``), the CSVs parse.

A checksum is not a signature: it catches edits, corruption, truncation and mixed-up files, not someone who edits
a value and recomputes the SHA-256 (git history says who changed what).

Failures are :class:`Untrusted` with a one-line message; :mod:`maelab.store` raises them as its ``RecordError``
(``OldSchemaError`` for a schema-1 record outside ``migrate``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import math
import os
import re
import stat
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from ._validate import ParameterError
from .profiles import PROFILE_ORDER

SCHEMA = 2  # 1: no record checksum, NaN stored as null; 2: record sha256, versioned side files, NaN/inf encoded
FLOAT_KEY = "__float__"
_TOP_KEYS = {
    1: {"provenance", "data", "frames", "arrays"},
    2: {"schema", "provenance", "data", "frames", "arrays", "sha256"},
}
_HEX64 = re.compile(r"[0-9a-f]{64}")
_DIGEST_NAME = re.compile(r"\.[0-9a-f]{12}\.(csv|npz)$")  # side files named by their SHA-256: schema 2 only


class Untrusted(Exception):
    """A record that cannot be trusted (one-line message); ``old_format``: only because it is schema 1."""

    def __init__(self, message: str, old_format: bool = False):
        super().__init__(message)
        self.old_format = old_format


# ----------------------------------------------------------------------------------------------- names, hashing
def is_name(value: Any) -> bool:
    """A notebook or result name: a non-empty string of letters, digits, ``_`` and ``-`` (no dot, no slash)."""
    return isinstance(value, str) and bool(value) and value.replace("_", "a").replace("-", "a").isalnum()


def is_key(value: Any) -> bool:
    """A value key of a record: a non-empty string of letters, digits and ``_``."""
    return isinstance(value, str) and bool(value) and value.replace("_", "a").isalnum()


def canonical(obj: Any) -> Any:
    """Make a config JSON-canonical: tuples -> lists, numpy scalars -> python, dataclasses -> dicts."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return canonical(dataclasses.asdict(obj))
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if not isinstance(k, str):
                raise ParameterError("config", "a dict with string keys", k)
            out[k] = canonical(v)
        return out
    if isinstance(obj, (list, tuple)):
        return [canonical(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        raise ParameterError("config", "JSON-able with finite floats", obj)
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise ParameterError("config", "JSON-able (dict/list/str/number/bool/None)", type(obj).__name__)


def canonical_json(obj: Any) -> str:
    """Sorted keys, no spaces, ASCII, no NaN: the bytes every checksum of the store is taken over."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def config_hash(config: dict) -> str:
    """SHA-256 (first 16 hex digits) of the canonical JSON of ``config``."""
    return hashlib.sha256(canonical_json(canonical(config)).encode()).hexdigest()[:16]


def record_checksum(record: dict) -> str:
    """SHA-256 of the canonical JSON of a record without its ``sha256`` field (values, side-file sums, provenance)."""
    return hashlib.sha256(canonical_json({k: v for k, v in record.items() if k != "sha256"}).encode()).hexdigest()


def sha256_file(path: Path) -> str:
    """SHA-256 of a file's bytes (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def decode(v: Any) -> Any:
    """A stored JSON value back to Python: ``{"__float__": "nan" | "inf" | "-inf"}`` becomes the float."""
    if isinstance(v, dict):
        if set(v) == {FLOAT_KEY} and v[FLOAT_KEY] in ("nan", "inf", "-inf"):
            return float(v[FLOAT_KEY])
        return {a: decode(b) for a, b in v.items()}
    if isinstance(v, list):
        return [decode(b) for b in v]
    return v


# ----------------------------------------------------------------------------------------------- reading
def location(json_path: Path) -> tuple[str, str, str]:
    """(notebook, name, profile) of a record from where it stands: ``<notebook>/<name>.<profile>.json``."""
    parts = json_path.name.split(".")
    notebook = json_path.parent.name
    if len(parts) != 3 or parts[2] != "json" or not is_name(parts[0]) or parts[1] not in PROFILE_ORDER:
        raise Untrusted(
            f"{json_path}: not a record's place (<notebook>/<name>.<profile>.json, profile one of "
            f"{', '.join(PROFILE_ORDER)})"
        )
    if not is_name(notebook):
        raise Untrusted(f"{json_path}: not a record's place (notebook folder {notebook!r} is not a notebook name)")
    return notebook, parts[0], parts[1]


def plain_bytes(path: Path, json_path: Path, what: str) -> bytes:
    """The bytes of ``path`` (``what`` of record ``json_path``, for the message) if it is a plain file. A symbolic
    link (even to a valid record: its content is not what stands here), a FIFO (a read would block forever) or a
    device is :class:`Untrusted`; a missing file raises ``FileNotFoundError``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as e:
        if os.path.islink(path):
            raise Untrusted(
                f"{json_path}: {what} is a symbolic link (records and side files must be plain files)"
            ) from None
        raise Untrusted(f"{json_path}: {what} unreadable ({e.strerror or e})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Untrusted(f"{json_path}: {what} is not a plain file")
        with open(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"number {text[:20]} overflows a float")
    return v


def _unique(pairs: list[tuple[str, Any]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"duplicate key {dup!r}")
    return out


def strict_json(raw: bytes) -> Any:
    """Parse JSON strictly: ``ValueError`` on NaN / Infinity literals, overflowing numbers or duplicate keys."""
    return json.loads(raw, object_pairs_hook=_unique, parse_constant=_reject_constant, parse_float=_finite)


def _bad(json_path: Path, why: str) -> Untrusted:
    return Untrusted(f"{json_path}: malformed record ({why})")


def _side_meta(json_path: Path, stem: str, key: str | None, meta: Any) -> None:
    """Check the entry of one side file: its fields and its name (this record's, this key's, digest = SHA-256)."""
    fields = {"file", "sha256"} if key is not None else {"file", "keys", "sha256"}
    if not isinstance(meta, dict) or set(meta) != fields:
        raise _bad(json_path, f"side-file entry {key or 'arrays'!r} must have the fields {sorted(fields)}")
    fname, sha = meta["file"], meta["sha256"]
    if not isinstance(sha, str) or not _HEX64.fullmatch(sha):
        raise _bad(json_path, f"side-file entry {key or 'arrays'!r} has no SHA-256")
    base = re.escape(stem) + (rf"\.{re.escape(key)}" if key is not None else "")
    ext = "csv" if key is not None else "npz"
    m = re.fullmatch(rf"{base}(?:\.([0-9a-f]{{12}}))?\.{ext}", fname) if isinstance(fname, str) else None
    if m is None or (m.group(1) is not None and m.group(1) != sha[:12]):
        raise Untrusted(f"{json_path}: side file name {fname!r} is not one of this record's")


def _check_shape(json_path: Path, record: dict, where: tuple[str, str, str]) -> None:
    """Provenance bound to ``where``, config hash, value keys, side-file entries."""
    prov, data, frames, arrays = record["provenance"], record["data"], record["frames"], record["arrays"]
    stated = tuple(prov.get(k) for k in ("notebook", "name", "profile"))
    if stated != where:
        raise Untrusted(
            f"{json_path}: stands as {where[0]}/{where[1]}.{where[2]} but was written as "
            f"{stated[0]}/{stated[1]}.{stated[2]} (a record copied or renamed to another notebook, name or profile "
            "is not trusted)"
        )
    try:
        same_hash = isinstance(prov.get("config"), dict) and config_hash(prov["config"]) == prov.get("config_hash")
    except ParameterError:
        same_hash = False
    if not same_hash:
        raise _bad(json_path, "its config_hash is not the hash of its config")
    if not isinstance(data, dict) or not isinstance(frames, dict) or not (arrays is None or isinstance(arrays, dict)):
        raise _bad(json_path, "data and frames must be objects, arrays an object or null")
    stem = f"{where[1]}.{where[2]}"
    for key, meta in frames.items():
        _side_meta(json_path, stem, key, meta)
    keys = list(data) + list(frames)
    if arrays is not None:
        _side_meta(json_path, stem, None, arrays)
        if not isinstance(arrays["keys"], list):
            raise _bad(json_path, "arrays.keys must be a list")
        keys += arrays["keys"]
    bad = [k for k in keys if not is_key(k)]
    if bad or len(set(keys)) != len(keys):
        raise _bad(json_path, f"value keys must be distinct identifiers ({bad[:1] or 'a key is repeated'})")


def _stripped(json_path: Path, record: dict) -> None:
    """``migrate`` on a schema-1 record: refused when it bears marks that only the current store writes."""
    prov = record["provenance"]
    if prov.get("schema") != 1:
        raise Untrusted(f"{json_path}: unknown record format {prov.get('schema')!r}")
    marks = [k for k in ("datasets", "migrated_from_schema") if k in prov]
    if _has_float_key(record["data"]):
        marks.append(f"encoded {FLOAT_KEY} values")
    marks += [f"side file {f}" for f in side_files(record) if _DIGEST_NAME.search(f)]
    if marks:
        raise Untrusted(
            f"{json_path}: an old-format record with marks of the current format ({', '.join(marks)}): a current "
            "record stripped to the old format is not migrated (it would skip the checksum)"
        )


def _has_float_key(v: Any) -> bool:
    if isinstance(v, dict):
        return FLOAT_KEY in v or any(_has_float_key(b) for b in v.values())
    return isinstance(v, list) and any(_has_float_key(b) for b in v)


class _Moved(Exception):
    """A side file vanished while reading because a writer replaced the record: read it again."""


def _side_bytes(json_path: Path, meta: dict, raw: bytes) -> bytes:
    """The bytes of a side file named in ``meta``, checked against its SHA-256."""
    side = json_path.parent / meta["file"]
    try:
        b = plain_bytes(side, json_path, f"side file {meta['file']}")
    except FileNotFoundError:
        with contextlib.suppress(OSError, Untrusted):
            if plain_bytes(json_path, json_path, "record") != raw:
                raise _Moved() from None
        raise Untrusted(f"{json_path}: side file {meta['file']} is missing") from None
    if hashlib.sha256(b).hexdigest() != meta["sha256"]:
        raise Untrusted(f"{json_path}: side file {meta['file']} was changed (SHA-256 mismatch)")
    return b


def _unreadable(json_path: Path, e: BaseException) -> Untrusted:
    return Untrusted(f"{json_path}: unreadable ({type(e).__name__}: {(str(e).splitlines() or [''])[0][:80]})")


def _verify_once(json_path: Path, where: tuple[str, str, str], migrating: bool) -> tuple[dict, dict]:
    import pandas as pd

    if json_path.parent.is_symlink():
        raise Untrusted(f"{json_path}: its folder is a symbolic link (records must stand in their own folder)")
    try:
        raw = plain_bytes(json_path, json_path, "record")
        record = strict_json(raw)
    except (ValueError, RecursionError, FileNotFoundError) as e:
        raise _unreadable(json_path, e) from None
    if not isinstance(record, dict) or not isinstance(record.get("provenance"), dict):
        raise Untrusted(f"{json_path}: not a maelab record")
    schema = record.get("schema", 1)  # schema 1 had no "schema" field
    if "schema" in record and (type(schema) is not int or schema != SCHEMA):
        raise Untrusted(f"{json_path}: record format {schema!r} is not {SCHEMA} (written by another maelab)")
    if set(record) != _TOP_KEYS[schema]:
        raise _bad(json_path, f"top-level keys {sorted(record)} are not {sorted(_TOP_KEYS[schema])}")
    if schema == SCHEMA and record["sha256"] != record_checksum(record):
        raise Untrusted(f"{json_path}: tampered: the record's values or provenance were edited (SHA-256 mismatch)")
    if schema == 1 and not migrating:
        raise Untrusted(
            f"{json_path}: old record format (schema {record['provenance'].get('schema')}, no record checksum); "
            f"check it, then run `python -m maelab.store migrate {json_path.parent.parent}`",
            old_format=True,
        )
    _check_shape(json_path, record, where)
    if schema == 1:
        _stripped(json_path, record)
    try:
        data = decode(dict(record["data"]))
        for key, meta in record["frames"].items():
            data[key] = pd.read_csv(io.BytesIO(_side_bytes(json_path, meta, raw)))
        if record["arrays"] is not None:
            meta = record["arrays"]
            with np.load(io.BytesIO(_side_bytes(json_path, meta, raw)), allow_pickle=False) as z:
                if sorted(z.files) != sorted(meta["keys"]):
                    raise Untrusted(f"{json_path}: side file {meta['file']} does not hold exactly the listed arrays")
                for key in meta["keys"]:
                    data[key] = z[key]
    except (KeyError, TypeError, ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
        raise _unreadable(json_path, e) from None
    return record, data


def side_files(record: dict) -> list[str]:
    """The names of a verified record's side files."""
    arrays = [record["arrays"]["file"]] if record["arrays"] is not None else []
    return [m["file"] for m in record["frames"].values()] + arrays


def verify(json_path: Path, where: tuple[str, str, str] | None = None, *, migrating: bool = False) -> tuple[dict, dict]:
    """Read and verify the record ``json_path`` (all of the module docstring); returns (record, values).

    ``where``: the (notebook, name, profile) the record must be bound to; default: where it stands
    (:func:`location`). The writer passes it for its temp copy. ``migrating``: accept a schema-1 record (no
    checksum) that bears no marks of the current format (``migrate`` only). Raises :class:`Untrusted`.
    """
    json_path = Path(json_path)
    if where is None:
        where = location(json_path)
    elif json_path.name != f"{where[1]}.{where[2]}.json":
        raise Untrusted(f"{json_path}: not the file of record {where[0]}/{where[1]}.{where[2]}")
    for _ in range(5):
        try:
            return _verify_once(json_path, where, migrating)
        except _Moved:
            continue
    raise Untrusted(f"{json_path}: replaced by writers faster than it could be read")


# ----------------------------------------------------------------------------------------------- values
def split_values(data: dict) -> tuple[dict, dict, dict]:
    """Split a computation's output into JSON values (:func:`encode_value`), DataFrames and arrays (the store's
    record, CSV and npz parts)."""
    import pandas as pd

    try:
        import torch
    except ImportError:  # pragma: no cover
        torch = None
    plain, frames, arrays = {}, {}, {}
    for k, v in data.items():
        if not isinstance(k, str) or not k.replace("_", "a").isalnum():
            raise ParameterError("fn result key", "an identifier-like string (letters, digits, _)", k)
        if isinstance(v, pd.DataFrame):
            frames[k] = v
        elif isinstance(v, np.ndarray):
            arrays[k] = v
        elif torch is not None and isinstance(v, torch.Tensor):
            arrays[k] = v.detach().cpu().numpy()
        else:
            plain[k] = encode_value(k, v)
    return plain, frames, arrays


def encode_value(key: str, v: Any) -> Any:
    """A JSON value for ``v``: non-finite floats become ``{"__float__": "nan" | "inf" | "-inf"}``."""
    if isinstance(v, dict):
        if FLOAT_KEY in v:
            raise ParameterError(f"fn result[{key!r}]", f"free of the reserved dict key {FLOAT_KEY!r}", v)
        return {str(a): encode_value(key, b) for a, b in v.items()}
    if isinstance(v, (list, tuple)):
        return [encode_value(key, b) for b in v]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return {FLOAT_KEY: "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise ParameterError(f"fn result[{key!r}]", "JSON-able, a pandas DataFrame or an array", type(v).__name__)
