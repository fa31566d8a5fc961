"""``natural``: random crops of photographs bundled with scikit-image, scikit-learn and matplotlib (unlabelled).

Every photo ships inside an installed wheel, so nothing is ever downloaded (scikit-image datasets that need a
``pooch`` download -- e.g. ``eagle``, ``lily``, ``kidney``, ``cells3d`` -- are deliberately not used). The split
is by *source photo*: the ``test`` crops come from photos never seen in ``train``.

- train (12): astronaut, camera, coffee, chelsea (= ``skimage.data.cat``), rocket, hubble_deep_field,
  immunohistochemistry, brick, grass, gravel, motorcycle (left view of ``stereo_motorcycle``) [scikit-image] and
  china [scikit-learn];
- test (4, held out): flower [scikit-learn], grace_hopper [matplotlib], moon and coins [scikit-image].

Licences (all public domain, CC0 or CC BY 2.0 except where noted) are listed in ``data/README.md``; the photos
are read from the installed packages and never copied into this repository.

Not used: ``retina`` (a fifth of the frame is a constant black surround), synthetic or document images (text,
page, checkerboard, logo, colorwheel, horse silhouette, clock with synthetic motion blur) and the near-duplicate
right view of the motorcycle pair.

Sampling: each crop picks a photo uniformly at random (photos are weighted equally, not by area) and a crop
position uniformly among all ``size`` x ``size`` windows of that photo after it has been downscaled by ``scale``
(default 0.5; PIL Lanczos resampling, an antialiasing filter; the result is kept as 8-bit values). Grey photos give
three equal channels when ``channels=3``; colour photos give BT.601 luma (PIL mode "L") when ``channels=1``.
``latents`` holds ``photo`` (index into ``meta["photos"]``), ``top`` and ``left`` (the crop's corner in the
downscaled photo). Randomness is drawn per fixed chunk of 512 crops from (seed, split, chunk) as in ``shapes``, so
crop i depends only on (seed, split, scale, size, i).
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from .._validate import ParameterError, in_range
from ._common import Dataset, check_channels, check_options, check_size, chunk_generator

CHUNK = 512
DATASET_ID = 2
DEFAULT_N = {"train": 10_000, "test": 2_000}
OPTIONS = {"size": 32, "channels": 3, "scale": 0.5}

#: Source photos per split (names; see :data:`SOURCES` and ``_load_photo`` for where each comes from).
PHOTOS = {
    "train": (
        "astronaut",
        "camera",
        "coffee",
        "chelsea",
        "rocket",
        "hubble_deep_field",
        "immunohistochemistry",
        "brick",
        "grass",
        "gravel",
        "motorcycle",
        "china",
    ),
    "test": ("flower", "grace_hopper", "moon", "coins"),
}
#: Photos that are not loaded as ``skimage.data.<name>()``, name -> package and call.
SOURCES = {
    "china": "scikit-learn sklearn.datasets.load_sample_images (china.jpg)",
    "flower": "scikit-learn sklearn.datasets.load_sample_images (flower.jpg)",
    "grace_hopper": "matplotlib sample_data/grace_hopper.jpg",
    "motorcycle": "scikit-image skimage.data.stereo_motorcycle()[0]",
}


def _load_photo(name: str) -> np.ndarray:
    """uint8 (H, W) grey or (H, W, 3) RGB array of one bundled photo."""
    if name in ("china", "flower"):
        from sklearn.datasets import load_sample_image

        return np.asarray(load_sample_image(f"{name}.jpg"))
    if name == "grace_hopper":
        from matplotlib import cbook
        from PIL import Image

        with cbook.get_sample_data("grace_hopper.jpg") as fh:
            return np.asarray(Image.open(fh).convert("RGB"))
    import skimage.data

    if name == "motorcycle":
        return np.asarray(skimage.data.stereo_motorcycle()[0])
    return np.asarray(getattr(skimage.data, name)())


@functools.lru_cache(maxsize=64)
def _photo_u8(name: str, scale: float, channels: int | None) -> np.ndarray:
    """Photo downscaled by ``scale`` (PIL Lanczos) and converted to ``channels`` (None: native): uint8, read-only."""
    from PIL import Image

    arr = _load_photo(name)
    img = Image.fromarray(arr)
    if img.mode not in ("L", "RGB"):
        img = img.convert("RGB")
    if channels == 1 and img.mode != "L":
        img = img.convert("L")
    if scale != 1.0:
        w, h = img.size
        img = img.resize((max(1, round(w * scale)), max(1, round(h * scale))), Image.Resampling.LANCZOS)
    out = np.asarray(img)
    if channels == 3 and out.ndim == 2:
        out = np.repeat(out[:, :, None], 3, axis=2)
    out = np.ascontiguousarray(out)
    out.setflags(write=False)
    return out


def natural_photos(split: str = "train", *, scale: float = 1.0, channels: int | None = None) -> dict[str, np.ndarray]:
    """Whole source photos of a split: ``{name: float32 array in [0, 1]}``, (H, W) for grey or (H, W, 3) for
    colour photos (``channels`` 1 or 3 forces one of them), downscaled by ``scale`` exactly as :func:`load` does
    before cropping."""
    from ._common import SPLITS

    if split not in SPLITS:
        raise ParameterError("split", "one of 'train', 'test'", split)
    scale = in_range("scale", scale, 0.0, 1.0, low_open=True)
    if channels is not None:
        check_channels(channels)
    return {name: _photo_u8(name, scale, channels).astype(np.float32) / 255.0 for name in PHOTOS[split]}


def generate(split: str, n: int | None, seed: int, options: dict, progress: bool | None = None) -> Dataset:
    o = check_options("natural", options, OPTIONS)
    size, channels = check_size(o["size"]), check_channels(o["channels"])
    scale = in_range("scale", o["scale"], 0.0, 1.0, low_open=True)
    n = DEFAULT_N[split] if n is None else n
    names = PHOTOS[split]
    photos = [torch.from_numpy(np.array(_photo_u8(nm, scale, channels))) for nm in names]
    photos = [p if p.ndim == 3 else p.unsqueeze(-1) for p in photos]  # (H, W, C)
    smallest = min(min(p.shape[0], p.shape[1]) for p in photos)
    if size > smallest:
        raise ParameterError(
            "size", f"at most {smallest} (the smallest {split} photo at scale={scale}; raise scale or lower size)", size
        )

    from .._util import pbar

    n_chunks = -(-n // CHUNK)
    images = torch.empty(n, channels, size, size, dtype=torch.uint8)
    photo_idx = torch.empty(n, dtype=torch.long)
    tops, lefts = torch.empty(n, dtype=torch.long), torch.empty(n, dtype=torch.long)
    ar = torch.arange(size)
    for ch in pbar(range(n_chunks), progress=progress, desc="natural", leave=False):
        uni = torch.rand(CHUNK, 3, generator=chunk_generator(seed, DATASET_ID, split, 0, ch), dtype=torch.float64)
        lo, keep = ch * CHUNK, min(CHUNK, n - ch * CHUNK)
        uni = uni[:keep]
        pid = (uni[:, 0] * len(names)).long().clamp_(max=len(names) - 1)
        hs = torch.tensor([p.shape[0] for p in photos])[pid]
        ws = torch.tensor([p.shape[1] for p in photos])[pid]
        top = (uni[:, 1] * (hs - size + 1)).long().clamp_(max=hs - size)
        left = (uni[:, 2] * (ws - size + 1)).long().clamp_(max=ws - size)
        for k in range(len(names)):
            sel = (pid == k).nonzero().flatten()
            if sel.numel() == 0:
                continue
            rows = (top[sel].view(-1, 1) + ar).view(-1, size, 1)
            cols = (left[sel].view(-1, 1) + ar).view(-1, 1, size)
            crops = photos[k][rows, cols]  # (m, size, size, C)
            images[lo + sel] = crops.permute(0, 3, 1, 2)
        photo_idx[lo : lo + keep], tops[lo : lo + keep], lefts[lo : lo + keep] = pid, top, left
    meta = {
        "split": split,
        "seed": seed,
        "n": n,
        "options": {"size": size, "channels": channels, "scale": scale},
        "photos": list(names),
        "sources": {nm: SOURCES.get(nm, f"scikit-image skimage.data.{nm}()") for nm in names},
        "num_classes": None,
        "value_range": (0.0, 1.0),
        "licence": "see data/README.md (scikit-image, scikit-learn and matplotlib sample images)",
    }
    latents = {"photo": photo_idx, "top": tops, "left": lefts}
    return Dataset(images=images.float().div_(255.0), labels=None, latents=latents, name="natural", meta=meta)
