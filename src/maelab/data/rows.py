"""Rows of a fetched dataset: the part of ``mnist`` / ``fashion_mnist`` / ``cifar_dogcat`` that named loads read.

Why: a lent GPU machine receives the working tree and what is carried with it, 64 MiB in all (``maelab.device``),
and Fashion-MNIST alone is 25 MiB xz-compressed, while a gpu page reads a seeded subset of it (``zhang_umae``: 8,000
training and 2,000 test images, 3.6 MiB). A *rows file* carries those rows and nothing else.

**Format.** ``<data dir>/<name>.rows.npz`` (uncompressed npz, no pickles) holds ``sha256`` (the SHA-256 of the whole
fetched dataset the rows were cut from, :func:`maelab.data.packaged.arrays_sha256`, checked when the file was made),
and per split ``{split}_total`` (the split's length), ``{split}_index`` (the carried row numbers, int64, strictly
increasing), ``{split}_images`` (uint8, one row per index) and ``{split}_labels`` (int64); ``rows_sha256`` is the
SHA-256 of all of that (:func:`rows_sha256`), re-checked at every read, as the whole file's hash is.

**Loading.** :func:`maelab.data.packaged.load_packaged` reads the whole file when it is there and this one
otherwise. A request (split, ``n``, seed) picks the rows ``maelab.data._common.seeded_subset`` picks from the
whole split; when all of them are carried, the images, labels and meta (indices, ``sha256``) are exactly those of
the whole file, so a record computed from a rows file has the config, provenance and numbers it would have had;
otherwise :class:`RowsNotCarried`, one line naming the request and what was carried.

**Which rows.** :func:`needed_rows` takes the loads a run made, as :func:`maelab.data.packaged.on_read` reports
them (``maelab.device.pack --trim`` traces them in a gpu dry run here), and returns their union per split.
"""

from __future__ import annotations

import functools
import hashlib
import io
from pathlib import Path

import numpy as np

from .._validate import ParameterError
from ._common import SPLITS, seeded_subset

SUFFIX = ".rows.npz"


class RowsNotCarried(ParameterError):
    """A load asks for rows that the rows file of its dataset does not carry (one line: the request, what is
    carried, and that a pack without ``--trim``, or traced with this load, carries them)."""

    def __init__(self, name: str, split: str, n, seed: int, carried: int, total: int):
        super().__init__(
            f"dataset {name!r}",
            f"a load of the rows that {name}{SUFFIX} carries ({carried} of the {total} {split} rows; pack again "
            "with a dry run that makes this load, or without --trim)",
            f"split {split!r}, n={n}, seed={seed}",
        )


def _spec(name: str):
    from .packaged import SPECS

    if name not in SPECS:
        raise ParameterError("name", "one of " + ", ".join(repr(s) for s in SPECS), name)
    return SPECS[name]


def _totals(name: str) -> dict[str, int]:
    return dict(zip(SPLITS, _spec(name).counts))


def needed_rows(name: str, reads: list[dict]) -> dict[str, np.ndarray]:
    """``{split: sorted row numbers}``: the union of the rows that ``reads`` (``{"name", "split", "n", "seed"}``
    each, as :func:`maelab.data.packaged.on_read` reports them; other datasets' reads are skipped) take from
    dataset ``name``; a split no read touches gets no rows."""
    totals = _totals(name)
    out = {split: np.zeros(0, np.int64) for split in SPLITS}
    for r in reads:
        if r.get("name") != name:
            continue
        split = r.get("split")
        if split not in totals:
            raise ParameterError("read split", "one of " + ", ".join(SPLITS), split)
        keep = seeded_subset(totals[split], r.get("n"), r.get("seed", 0))
        out[split] = np.union1d(out[split], keep).astype(np.int64)
    return out


def rows_sha256(arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 of a rows file's content: the whole dataset's hash, then per split (train, test) its length, its
    index (little-endian int64), images (uint8) and labels (little-endian int64), each as C-contiguous bytes."""
    h = hashlib.sha256(str(arrays["sha256"]).encode() + b"\0")
    for split in SPLITS:
        h.update(np.asarray(arrays[f"{split}_total"], "<i8").tobytes())
        for key, dtype in (("index", "<i8"), ("images", np.uint8), ("labels", "<i8")):
            h.update(np.ascontiguousarray(arrays[f"{split}_{key}"], dtype=dtype).tobytes())
    return h.hexdigest()


def make_rows(name: str, whole: dict[str, np.ndarray], index: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The arrays of a rows file of dataset ``name``: the rows ``index`` (``{split: row numbers}``, as
    :func:`needed_rows` gives) of ``whole``, the checked arrays of the fetched dataset
    (:func:`maelab.data.packaged.read_arrays`)."""
    totals = _totals(name)
    out: dict[str, np.ndarray] = {"sha256": np.array(str(whole["sha256"]))}
    for split in SPLITS:
        idx = np.unique(np.asarray(index.get(split, ()), dtype=np.int64))
        if idx.size and (idx[0] < 0 or idx[-1] >= totals[split]):
            raise ParameterError(f"{split} rows", f"row numbers in 0..{totals[split] - 1}", f"{idx[0]}..{idx[-1]}")
        out[f"{split}_total"] = np.array(totals[split], np.int64)
        out[f"{split}_index"] = idx
        out[f"{split}_images"] = np.ascontiguousarray(whole[f"{split}_images"][idx])
        out[f"{split}_labels"] = np.ascontiguousarray(whole[f"{split}_labels"][idx].astype(np.int64))
    out["rows_sha256"] = np.array(rows_sha256(out))
    return out


def to_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """A rows file's bytes (uncompressed npz)."""
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _check(name: str, arrays: dict[str, np.ndarray], where: str) -> None:
    spec = _spec(name)
    bad = functools.partial(ParameterError, f"{name} rows file")
    missing = [f"{s}_{k}" for s in SPLITS for k in ("total", "index", "images", "labels") if f"{s}_{k}" not in arrays]
    missing += [k for k in ("sha256", "rows_sha256") if k not in arrays]
    if missing:
        raise bad(f"a file written by maelab.data.rows (no {', '.join(missing)})", where)
    if str(arrays["sha256"]) != spec.sha256:
        raise bad(f"rows of the published {name} (SHA-256 {spec.sha256[:12]}...)", f"{str(arrays['sha256'])[:12]}...")
    for split, total in _totals(name).items():
        idx, x, y = (arrays[f"{split}_{k}"] for k in ("index", "images", "labels"))
        if int(arrays[f"{split}_total"]) != total or idx.ndim != 1 or idx.dtype.kind not in "iu":
            raise bad(f"{split}: {total} rows in all and a 1-d integer index", where)
        if idx.size and (idx[0] < 0 or idx[-1] >= total or np.any(np.diff(idx) <= 0)):
            raise bad(f"{split}: strictly increasing row numbers in 0..{total - 1}", where)
        if x.dtype != np.uint8 or x.shape != (idx.size, *spec.shape) or y.shape != (idx.size,):
            raise bad(f"{split}: uint8 images of shape {(idx.size, *spec.shape)} and {idx.size} labels", where)
        if y.size and (y.min() < 0 or y.max() >= len(spec.classes)):
            raise bad(f"{split}: labels in 0..{len(spec.classes) - 1}", where)
    if rows_sha256(arrays) != str(arrays["rows_sha256"]):
        raise bad("rows whose SHA-256 is the one written with them (the file is damaged)", where)


@functools.lru_cache(maxsize=4)
def _read(name: str, path_str: str, mtime_ns: int) -> dict[str, np.ndarray]:
    try:
        with np.load(path_str, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except Exception as exc:  # noqa: BLE001 -- zipfile/npy parsing of a damaged file raise many types
        what = f"an npz of maelab.data.rows ({type(exc).__name__})"
        raise ParameterError(f"{name} rows file", what, path_str) from None
    _check(name, arrays, path_str)
    for a in arrays.values():
        a.setflags(write=False)
    return arrays


def read_rows(name: str, path: Path) -> dict[str, np.ndarray]:
    """The checked arrays of the rows file ``path`` of dataset ``name`` (read-only; cached per path and
    modification time). One-line :class:`~maelab.ParameterError` when it is damaged or not of that dataset."""
    path = Path(path)
    return _read(name, str(path.resolve()), path.stat().st_mtime_ns)


def select(name: str, arrays: dict[str, np.ndarray], split: str, keep: np.ndarray, n, seed: int):
    """(images, labels) of the rows ``keep`` of ``split`` from a rows file's ``arrays``; :class:`RowsNotCarried`
    when one of them is not carried (``n``, ``seed``: the request, for the message)."""
    idx = arrays[f"{split}_index"]
    pos = np.searchsorted(idx, keep)
    if keep.size and (pos[-1] >= idx.size or not np.array_equal(idx[np.minimum(pos, idx.size - 1)], keep)):
        raise RowsNotCarried(name, split, n, seed, idx.size, int(arrays[f"{split}_total"]))
    return arrays[f"{split}_images"][pos], arrays[f"{split}_labels"][pos]
