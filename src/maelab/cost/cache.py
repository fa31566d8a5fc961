"""Counts per model shape, made once: FLOPs and ops of a step or a feature pass, memory, parameters.

Why a cache: a plan prices about a hundred runs, and counting one model shape is Python shape work (about half a second
per count on this project's 2-core CPU, four counts per shape: pre-training step, fine-tuning step, feature pass,
memory), while the counts depend on nothing but the shape. So each count is made once per
:class:`~maelab.cost.ModelShape` and batch (and mask ratio, classes, precision where they matter):

* **in this process** (a dict), so the runs of a plan that share a shape (seeds, variants that differ only in what they
  evaluate, the notebooks that train the same model) count it once;
* **on disk**, in the gitignored ``.cache/cost/counts-<fingerprint>.json`` (``$MAELAB_CACHE/cost`` when set), so a
  second plan reads every count. The fingerprint hashes everything a count depends on: the source of
  :mod:`maelab.models`, :mod:`maelab.masking`, the counting and memory code and this module, and the torch and timm
  versions. A change to any of them starts a fresh file, so a count read back is the count the code would make.

The file is plain JSON read as data (lists of numbers under string keys, checked on reading); a file that does not
parse, or an entry of the wrong form, is ignored and counted again. A cache folder that cannot be written only costs
time (one line on stderr).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch.nn as nn

from .. import paths
from .._validate import ParameterError, one_of, positive_int
from . import counting, memory
from .counting import StepCost
from .memory import MemoryEstimate

_FORMAT = 1


@dataclasses.dataclass(frozen=True)
class ModelShape:
    """What a model's counts depend on: the arguments of :func:`maelab.models.create` but the seed (initial weights
    change no count). ``overrides``: (key, value) pairs, in any order (the key sorts them)."""

    model: str = "mae"
    size: str = "micro"
    overrides: tuple = ()
    img_size: int = 32
    channels: int = 3

    def __post_init__(self):
        if not isinstance(self.overrides, tuple):
            raise ParameterError("overrides", "a tuple of (key, value) pairs", self.overrides)
        object.__setattr__(self, "overrides", tuple(sorted(self.overrides, key=lambda kv: kv[0])))
        positive_int("img_size", self.img_size)
        positive_int("channels", self.channels)

    def build(self) -> nn.Module:
        """The model of this shape (on the CPU, seed 0)."""
        from .. import models

        over = dict(self.overrides)
        return models.create(self.model, self.size, img_size=self.img_size, in_chans=self.channels, seed=0, **over)

    def key(self) -> list:
        """The shape as JSON data (the cache key's first part)."""
        return [self.model, self.size, [list(kv) for kv in self.overrides], self.img_size, self.channels]


_MEMO: dict[str, list] = {}  # this process's counts, by key
_DISK: dict[str, Any] = {}  # {"path": Path, "entries": {key: value}} once read
_WARNED: list[str] = []
_WRITES = [True]  # False in a helper process of maelab.cost.plan (keep_in_memory)


def clear_memory() -> None:
    """Forget this process's counts (the disk cache stays): the next count reads the disk or counts again."""
    _MEMO.clear()
    _DISK.clear()


@functools.lru_cache(maxsize=1)
def fingerprint() -> str:
    """12 hex digits: the hash of the sources a count depends on and of the torch and timm versions."""
    import timm
    import torch

    pkg = Path(__file__).resolve().parent
    src = pkg.parent
    files = sorted((src / "models").glob("*.py")) + [
        src / "masking.py",
        pkg / "counting.py",
        pkg / "memory.py",
        pkg / "cache.py",
    ]
    h = hashlib.sha256(f"{_FORMAT} torch {torch.__version__} timm {timm.__version__}".encode())
    for f in files:
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def cache_path() -> Path:
    """The counts file of this code and these versions (:func:`fingerprint`)."""
    return paths.cache_dir("cost") / f"counts-{fingerprint()}.json"


def _read(path: Path) -> dict[str, list]:
    """The entries of the counts file at ``path``: only string keys holding lists of numbers and strings."""
    try:
        d = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    entries = d.get("entries") if isinstance(d, dict) and d.get("format") == _FORMAT else None
    if not isinstance(entries, dict):
        return {}
    ok = (int, str)
    return {
        k: v
        for k, v in entries.items()
        if isinstance(k, str) and isinstance(v, list) and all(isinstance(x, ok) and not isinstance(x, bool) for x in v)
    }


def _disk() -> dict[str, list]:
    path = cache_path()
    if _DISK.get("path") != path:
        _DISK.update(path=path, entries=_read(path))
    return _DISK["entries"]


def _write(new: dict[str, list]) -> None:
    """Add entries to the counts file: read it again (another process may have added entries), add, replace. Not in
    a helper process of :func:`maelab.cost.plan` (:func:`keep_in_memory`): it hands its counts back instead."""
    from .._util import atomic_path

    if not _WRITES[0]:
        return
    path = _DISK["path"]
    try:
        entries = {**_read(path), **new}
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            Path(tmp).write_text(json.dumps({"format": _FORMAT, "entries": entries}, sort_keys=True) + "\n")
    except OSError as e:
        if not _WARNED:
            _WARNED.append(str(e))
            print(f"[cost] counts not cached on disk ({e}); they are counted again next time", file=sys.stderr)
        return
    _DISK["entries"] = entries


def keep_in_memory() -> None:
    """Make this process keep its counts in memory only (a helper process of :func:`maelab.cost.plan`, which hands
    them back with :func:`counted_here`; two processes writing the one counts file would lose each other's
    entries)."""
    _WRITES[0] = False


def counted_here() -> dict[str, list]:
    """This process's counts, by key (what a helper process hands back to :func:`adopt`)."""
    return dict(_MEMO)


def adopt(entries: dict[str, list]) -> None:
    """Take the counts another process made (:func:`counted_here` there): keep them in this process and add them
    to the counts file in one write. Entries already known here are kept as they are."""
    if not isinstance(entries, dict):
        raise ParameterError("entries", "a dict of counts by key (counted_here)", type(entries).__name__)
    new = {k: v for k, v in entries.items() if k not in _MEMO and isinstance(k, str) and isinstance(v, list)}
    if not new:
        return
    _MEMO.update(new)
    _disk()
    _write(new)


def _counted(what: str, shape: ModelShape, args: list, count: Callable[[], list], form: Callable[[list], bool]) -> list:
    """The count ``what`` of ``shape`` with ``args``: from this process, else from the disk, else ``count()``
    (then kept in both). ``form``: whether a value read from the disk has the form ``count`` returns."""
    if not isinstance(shape, ModelShape):
        raise ParameterError("shape", "a maelab.cost.ModelShape", type(shape).__name__)
    key = json.dumps([what, shape.key(), *args], sort_keys=True)
    if key in _MEMO:
        return _MEMO[key]
    value = _disk().get(key)
    if value is None or not form(value):
        value = count()
        _write({key: value})
    _MEMO[key] = value
    return value


def _ints(n: int) -> Callable[[list], bool]:
    return lambda v: len(v) == n and all(isinstance(x, int) for x in v)


@functools.lru_cache(maxsize=2)
def _model(shape: ModelShape) -> nn.Module:
    """The model of ``shape``, built once for the counts of one shape (they are made one shape after another)."""
    return shape.build()


def model_facts(shape: ModelShape) -> tuple[int, int]:
    """(parameters, embedding width; 0 when the model has none) of ``shape``'s model."""

    def count():
        m = _model(shape)
        return [sum(p.numel() for p in m.parameters()), int(getattr(m, "embed_dim", 0))]

    return tuple(_counted("model", shape, [], count, _ints(2)))


def pretrain_step(shape: ModelShape, batch_size: int, mask_ratio: float | None) -> StepCost:
    """:func:`maelab.cost.step_flops` of ``shape``'s model at ``batch_size`` and ``mask_ratio``, counted once."""
    positive_int("batch_size", batch_size)

    def count():
        return list(dataclasses.astuple(counting.step_flops(_model(shape), batch_size, mask_ratio=mask_ratio)))

    return StepCost(*_counted("pretrain step", shape, [batch_size, mask_ratio], count, _ints(4)))


def finetune_step(shape: ModelShape, batch_size: int, num_classes: int) -> StepCost:
    """:func:`maelab.cost.finetune_step_flops` of ``shape``'s model, counted once."""
    positive_int("batch_size", batch_size)

    def count():
        c = counting.finetune_step_flops(_model(shape), batch_size, num_classes=num_classes)
        return list(dataclasses.astuple(c))

    return StepCost(*_counted("finetune step", shape, [batch_size, num_classes], count, _ints(4)))


def eval_batch(shape: ModelShape, batch_size: int) -> tuple[int, int]:
    """(FLOPs, ops) of one no-grad feature pass (:func:`maelab.cost.eval_flops`) of ``batch_size`` images."""
    positive_int("batch_size", batch_size)

    def count():
        return list(counting.eval_flops(_model(shape), batch_size, batch_size=batch_size))

    return tuple(_counted("eval batch", shape, [batch_size], count, _ints(2)))


def train_memory(
    shape: ModelShape, kind: str, batch_size: int, *, mask_ratio: float | None = None, amp: str, num_classes: int = 10
) -> MemoryEstimate:
    """:func:`maelab.cost.peak_memory_bytes` of a ``kind`` ("pretrain" / "finetune") step of ``shape``'s model
    without resident data (``data=0``; it adds ``data_images`` x the image's bytes) and without CUDA, counted once."""
    one_of("kind", kind, ("pretrain", "finetune"))
    one_of("amp", amp, ("bf16", "off"))
    args = [kind, batch_size, mask_ratio if kind == "pretrain" else None, amp, num_classes if kind == "finetune" else 0]

    def count():
        est = memory.peak_memory_bytes(
            _model(shape),
            batch_size,
            mask_ratio=mask_ratio,
            amp=amp,
            kind=kind,
            num_classes=num_classes,
            measure_cuda=False,
        )
        return [est.params, est.grads, est.optimizer, est.activations, est.method]

    def form(v):
        return len(v) == 5 and all(isinstance(x, int) for x in v[:4]) and isinstance(v[4], str)

    p, g, o, a, method = _counted("memory", shape, args, count, form)
    return MemoryEstimate(p, g, o, a, 0, method)
