"""``cifar10`` and ``imagefolder``: datasets read from files the user already has. Nothing is ever downloaded.

**cifar10** reads the official "CIFAR-10 python version" (Krizhevsky 2009): a folder ``cifar-10-batches-py/``
with ``data_batch_1`` ... ``data_batch_5`` (train, 50,000 images) and ``test_batch`` (10,000), each a pickled
dict with ``b"data"`` (uint8 (N, 3072): 1024 red, then 1024 green, then 1024 blue values, each a row-major 32x32
plane) and ``b"labels"`` (N ints in 0..9); ``batches.meta`` (optional) gives ``b"label_names"``. Pass
``data_root=`` the folder itself or its parent.

A pickle can run arbitrary code when loaded, so these files are read with :class:`SafeUnpickler`, which resolves
only the four globals a numpy array needs (``numpy.core.multiarray._reconstruct`` under its numpy 1 and 2 names,
``numpy.ndarray``, ``numpy.dtype``, and ``_codecs.encode`` restricted to latin-1, which Python 3 protocol-2 pickles
use for bytes). Anything else -- ``os.system``, ``builtins.eval``, ... -- raises before it can run; object arrays
are refused too.

**imagefolder** reads a torchvision-style tree: one sub-folder per class holding image files (any format PIL
reads; classes sorted by name, as ``torchvision.datasets.ImageFolder``). If ``data_root`` has a ``train`` /
``test`` (or ``val``) sub-folder, the split picks it; otherwise ``data_root`` itself is the train split. Images are
converted to RGB (or grey with ``channels=1``), the shorter side is resized to ``size`` (PIL bilinear with
antialiasing) and the centre ``size`` x ``size`` square is cropped, which is the standard evaluation transform.
"""

from __future__ import annotations

import io
import os
import pickle
from pathlib import Path

import numpy as np
import torch

from .._validate import ParameterError
from ._common import Dataset, check_channels, check_options, check_size, resize, seeded_subset, to_channels

CIFAR_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
CIFAR_FILES = {"train": tuple(f"data_batch_{i}" for i in range(1, 6)), "test": ("test_batch",)}
CIFAR_OPTIONS = {"data_root": None, "size": 32, "channels": 3}
FOLDER_OPTIONS = {"data_root": None, "size": 64, "channels": 3}
IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def _latin1_encode(obj, encoding="latin1"):
    import codecs

    if not isinstance(obj, str) or codecs.lookup(encoding).name != "iso8859-1":
        raise pickle.UnpicklingError(f"refused _codecs.encode({type(obj).__name__}, {encoding!r})")
    return obj.encode("latin1")


def _allowed_globals() -> dict[tuple[str, str], object]:
    from numpy._core.multiarray import _reconstruct

    return {
        ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
        ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
        ("_codecs", "encode"): _latin1_encode,
    }


class SafeUnpickler(pickle.Unpickler):
    """Unpickler that resolves only the globals needed to rebuild plain numpy arrays (see module docstring)."""

    def find_class(self, module: str, name: str):
        obj = _allowed_globals().get((module, name))
        if obj is None:
            raise pickle.UnpicklingError(f"refused global {module}.{name} (only numpy array reconstruction allowed)")
        return obj


def safe_pickle_load(path: str | os.PathLike, what: str = "pickle file"):
    """Load a pickle through :class:`SafeUnpickler` (``encoding="bytes"``, as the CIFAR-10 python files need).
    Any failure -- refused global, truncated or garbled data, object array -- raises one ParameterError naming
    the file."""
    path = Path(path)
    try:
        data = path.read_bytes()
        obj = SafeUnpickler(io.BytesIO(data), encoding="bytes").load()
    except Exception as exc:  # noqa: BLE001 -- every failure becomes one clear error naming the file
        raise ParameterError(what, f"a readable, safe pickle ({type(exc).__name__}: {exc})", str(path)) from None
    _refuse_objects(obj, path, what)
    return obj


def _refuse_objects(obj, path, what, depth=0):
    if depth > 10:
        raise ParameterError(what, "a pickle of plain dicts, lists and numpy arrays (nested too deeply)", str(path))
    if isinstance(obj, np.ndarray) and obj.dtype.hasobject:
        raise ParameterError(what, "a pickle without object arrays", str(path))
    if isinstance(obj, dict):
        for v in obj.values():
            _refuse_objects(v, path, what, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _refuse_objects(v, path, what, depth + 1)


def _missing_root(hint: str) -> ParameterError:
    return ParameterError(
        "data_root",
        f"the folder holding {hint} (this dataset is never downloaded here; "
        f"put the files there and pass data_root=...)",
        None,
    )


def _key(d: dict, key: str):
    for k in (key.encode(), key):
        if k in d:
            return d[k]
    raise KeyError(key)


def load_cifar10(split: str, n: int | None, seed: int, options: dict, progress: bool | None = None) -> Dataset:
    o = check_options("cifar10", options, CIFAR_OPTIONS)
    size, channels = check_size(o["size"]), check_channels(o["channels"])
    if o["data_root"] is None:
        raise _missing_root(
            "cifar-10-batches-py/ (data_batch_1..5, test_batch) from https://www.cs.toronto.edu/~kriz/cifar.html"
        )
    root = Path(o["data_root"]).expanduser()
    folder = root / "cifar-10-batches-py" if (root / "cifar-10-batches-py").is_dir() else root
    files = [folder / f for f in CIFAR_FILES[split]]
    for f in files:
        if not f.is_file():
            raise ParameterError(
                "data_root",
                f"a folder containing cifar-10-batches-py/{f.name} "
                "(CIFAR-10 is never downloaded here; put the python-version files there)",
                str(root),
            )
    datas, labels = [], []
    for f in files:
        batch = safe_pickle_load(f, "CIFAR-10 batch file")
        try:
            if not isinstance(batch, dict):
                raise TypeError("not a dict")
            x = np.asarray(_key(batch, "data"))
            y = np.asarray(_key(batch, "labels"), dtype=np.int64)
            if x.dtype != np.uint8 or x.ndim != 2 or x.shape[1] != 3072 or y.shape != (x.shape[0],):
                raise ValueError(f"data {x.dtype} {x.shape}, labels {y.shape}")
            if y.size and (y.min() < 0 or y.max() > 9):
                raise ValueError("labels outside 0..9")
        except (KeyError, TypeError, ValueError) as exc:
            raise ParameterError(
                "CIFAR-10 batch file",
                f"a dict with uint8 data (N, 3072) and N labels in 0..9 ({type(exc).__name__}: {exc})",
                str(f),
            ) from None
        datas.append(x)
        labels.append(y)
    x, y = np.concatenate(datas), np.concatenate(labels)
    from ._common import check_n

    keep = seeded_subset(len(y), check_n(n, len(y)), seed)
    images = torch.from_numpy(x[keep].reshape(-1, 3, 32, 32).copy()).float().div_(255.0)
    images = to_channels(resize(images, size), channels)
    classes = list(CIFAR_CLASSES)
    meta_file = folder / "batches.meta"
    if meta_file.is_file():
        try:
            classes = [
                c.decode() if isinstance(c, bytes) else str(c)
                for c in _key(safe_pickle_load(meta_file, "CIFAR-10 batches.meta"), "label_names")
            ]
        except (KeyError, TypeError):  # an unexpected but safe meta file: keep the standard class names
            classes = list(CIFAR_CLASSES)
    meta = {
        "split": split,
        "seed": seed,
        "n": len(keep),
        "options": {"data_root": str(root), "size": size, "channels": channels},
        "num_classes": 10,
        "classes": classes,
        "files": [str(f) for f in files],
        "indices": keep.tolist(),
        "source": "CIFAR-10 python version (Krizhevsky 2009), read from local files",
        "value_range": (0.0, 1.0),
    }
    return Dataset(images=images, labels=torch.from_numpy(y[keep].copy()), latents=None, name="cifar10", meta=meta)


def _folder_for_split(root: Path, split: str) -> Path:
    names = ("train",) if split == "train" else ("test", "val")
    for nm in names:
        if (root / nm).is_dir():
            return root / nm
    if split == "train":
        return root
    raise ParameterError("split", f"'train' for {root} (it has no test/ or val/ sub-folder)", split)


def load_imagefolder(split: str, n: int | None, seed: int, options: dict, progress: bool | None = None) -> Dataset:
    o = check_options("imagefolder", options, FOLDER_OPTIONS)
    size, channels = check_size(o["size"]), check_channels(o["channels"])
    if o["data_root"] is None:
        raise _missing_root("one sub-folder of images per class")
    root = Path(o["data_root"]).expanduser()
    if not root.is_dir():
        raise ParameterError(
            "data_root",
            "an existing folder with one sub-folder of images per class (nothing is downloaded here)",
            str(root),
        )
    folder = _folder_for_split(root, split)
    classes = sorted(e.name for e in os.scandir(folder) if e.is_dir() and not e.name.startswith("."))
    samples = []
    for ci, c in enumerate(classes):
        for dirpath, _, filenames in sorted(os.walk(folder / c, followlinks=True)):
            for fn in sorted(filenames):
                if fn.lower().endswith(IMG_EXTENSIONS):
                    samples.append((Path(dirpath) / fn, ci))
    if not samples:
        raise ParameterError(
            "data_root", f"a folder whose class sub-folders hold images ({', '.join(IMG_EXTENSIONS)})", str(folder)
        )
    from PIL import Image

    from .._util import pbar
    from ._common import check_n

    keep = seeded_subset(len(samples), check_n(n, len(samples)), seed)
    mode = "L" if channels == 1 else "RGB"
    images = torch.empty(len(keep), channels, size, size)
    for j, i in enumerate(pbar(keep, progress=progress, desc="imagefolder", leave=False)):
        path = samples[i][0]
        try:
            with Image.open(path) as im:
                im = im.convert(mode)
                w, h = im.size
                s = size / min(w, h)
                nw, nh = max(size, round(w * s)), max(size, round(h * s))
                if (nw, nh) != (w, h):
                    im = im.resize((nw, nh), Image.Resampling.BILINEAR)
                left, top = (nw - size) // 2, (nh - size) // 2
                arr = np.asarray(im.crop((left, top, left + size, top + size)), dtype=np.uint8)
        except Exception as exc:  # noqa: BLE001 -- decoders of damaged files raise many types
            raise ParameterError("image file", f"an image PIL can read ({type(exc).__name__})", str(path)) from None
        t = torch.from_numpy(arr.copy())
        images[j] = (t.unsqueeze(0) if t.ndim == 2 else t.permute(2, 0, 1)).float().div_(255.0)
    labels = torch.tensor([samples[i][1] for i in keep], dtype=torch.long)
    meta = {
        "split": split,
        "seed": seed,
        "n": len(keep),
        "options": {"data_root": str(root), "size": size, "channels": channels},
        "num_classes": len(classes),
        "classes": classes,
        "files": [str(samples[i][0]) for i in keep],
        "source": f"image folder {folder}",
        "value_range": (0.0, 1.0),
    }
    return Dataset(images=images, labels=labels, latents=None, name="imagefolder", meta=meta)
