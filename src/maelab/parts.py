"""Parts of a record: a result's units of work (one run of a comparison, say) stored on their own while it is
computed, so that a computation stopped midway keeps what it finished.

Why. A store record is all or nothing (:func:`maelab.store.load_or_compute`), which is right for what the book
reads, but a gpu installment (``maelab.device``) has 8 minutes: a record of fifteen runs that takes twelve would
be cut off in every installment and never stored. Its finished runs should survive the cut.

How. A compute function wraps each unit in ``part(key, config, fn)``. Inside the ``fn`` of a
:func:`~maelab.store.load_or_compute` that is computing a record ``<name>`` (the store opens a :func:`scope`) with
run options whose ``store_parts`` is on (:class:`maelab.options.RunOptions`), the unit becomes a record of its own,
``<name>__<key>`` in the same notebook folder and profile, under a config that holds the record's name, the hash of
the record's config and ``config`` (what the unit reads): loaded when stored, else computed and stored like any
record (complete and verified, or nothing). :func:`stored` says beforehand which units are stored, so that only
the others are handed to :mod:`maelab.prefetch`. Anywhere else -- no record being computed, or ``store_parts``
off, as in every cpu run and the book -- ``part`` just returns ``fn()``. The device runner turns it on for the
notebooks it runs, so an installment's finished parts travel back in its archive, are imported and committed,
travel with the tree to the next installment and are loaded there: the record is assembled once every part
exists. A part can also be computed in a worker process (:func:`maelab.prefetch.compute_parts`, on a lent GPU):
the worker opens the same scope (:func:`record_scope`) and calls ``part`` itself, so the part is the same record
whoever computed it, and the page's own ``part`` loads it. Once the record is stored, its parts are redundant:
:func:`prune` removes those of a record stored under the config they were computed for (``python -m maelab.store
import`` calls it for the folders it installs into, so that an installment's parts do not stay in the tree).

What does not change: the record. A part's values go through the store's exact round trip (JSON floats, npz
arrays), so a record assembled from stored parts equals one computed in one go (a test checks it). ``fn`` must
return what the store can hold: a flat dict of JSON values, arrays and DataFrames.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from . import _records
from ._validate import ParameterError

SEPARATOR = "__"  # <record name>__<part key>

_scope: contextvars.ContextVar[dict | None] = contextvars.ContextVar("maelab_parts_scope", default=None)


def current_options():
    """The run options (:class:`maelab.options.RunOptions`) of the record being computed, or None outside one (or
    where it was computed without options)."""
    where = _scope.get()
    return None if where is None else where.get("options")


class Task(NamedTuple):
    """One part to compute: ``part(key, config, fn, seeds=seeds)``. For :func:`maelab.prefetch.compute_parts`,
    ``fn`` must pickle (a module-level function, or a ``functools.partial`` of one)."""

    key: str
    config: dict
    fn: Callable[[], dict]
    seeds: Any = None

    def __call__(self) -> dict:
        return part(self.key, self.config, self.fn, seeds=self.seeds)


def record_scope() -> dict | None:
    """The scope of the record being computed (see :func:`scope`) where parts are on, else None: what a worker
    process needs to compute one of its parts (:func:`maelab.prefetch.compute_parts`)."""
    where = _scope.get()
    if where is None or where.get("options") is None or not where["options"].store_parts:
        return None
    return dict(where)


def is_part(name: str) -> bool:
    """Whether a store name is a part's (``<record>__<key>``)."""
    return SEPARATOR in name


@contextlib.contextmanager
def scope(**where: Any) -> Iterator[None]:
    """The record being computed (``name``, ``config_hash``, ``notebook``, ``profile``, ``root``, ``device``,
    ``recompute``, ``options``): :func:`maelab.store.load_or_compute` opens it around its ``fn``."""
    token = _scope.set(where)
    try:
        yield
    finally:
        _scope.reset(token)


def _active(key: str, config: dict):
    """(the record being computed, the part's store name, its full config), or None where parts are off."""
    if not isinstance(key, str) or not _records.is_name(key) or SEPARATOR in key:
        raise ParameterError("key", f"an identifier-like string without {SEPARATOR!r}", key)
    where = record_scope()
    if where is None:
        return None
    full = {"part of": where["name"], "record config": where["config_hash"], **config}
    return where, f"{where['name']}{SEPARATOR}{key}", full


def stored(key: str, config: dict) -> bool:
    """Whether :func:`part` with ``key`` and ``config`` would load a stored part rather than compute (never where
    parts are off, or the record is recomputed): what a caller asks before it hands the run to
    :mod:`maelab.prefetch`."""
    got = _active(key, config)
    if got is None or got[0]["recompute"]:
        return False
    from . import store

    where, name, full = got
    return store.matches(where["notebook"], name, where["profile"], full, where["options"], root=where["root"])


def part(key: str, config: dict, fn: Callable[[], dict], *, seeds=None) -> dict:
    """``fn()``, stored as the part ``<record>__<key>`` of the record being computed where parts are on (see the
    module docstring), else computed. ``key``: identifier-like, unique within the record; ``config``: what ``fn``
    reads beyond the record's config (JSON-able); ``seeds``: provenance. Returns the values (a dict)."""
    got = _active(key, config)
    if got is None:
        return fn()
    from . import store

    where, name, full = got
    res = store.load_or_compute(
        name,
        full,
        fn,
        notebook=where["notebook"],
        profile=where["profile"],
        seeds=seeds,
        device=where["device"],
        recompute=where["recompute"],
        root=where["root"],
        options=where["options"],
    )
    if res.from_store:  # the record's provenance names the datasets its stored parts loaded
        from .data.packaged import record_dataset

        for dataset, sha in (res.provenance.get("datasets") or {}).items():
            record_dataset(dataset, sha)
    return dict(res.data)


def concat_frames(units, before: Callable[[dict], Any] | None = None) -> dict:
    """A record's tables computed unit by unit, each unit a part: ``units`` is a list of ``(key, config, fn)`` (as
    :func:`part` takes them; ``fn()`` returns ``{name: DataFrame}``, the same names for every unit). Returns ``{name:
    the units' frames concatenated in order, index 0..n-1}``, what one loop over the units would have built row by
    row. ``before(config)`` is called first for every unit that is not stored (e.g. to hand the unit's training runs
    to the pool, :func:`maelab.prefetch.prefetch`). Why: a record that trains models for each of its seeds (the
    shared zoo's measured checkpoints, which a lent machine does not have) is too long for one installment; one seed
    is not."""
    import pandas as pd

    out: dict[str, list] = {}
    for key, config, fn in units:
        if before is not None and not stored(key, config):
            before(config)
        for name, frame in part(key, config, fn).items():
            out.setdefault(name, []).append(frame)
    return {name: pd.concat(frames, ignore_index=True) for name, frames in out.items()}


def prune(folder, log=print) -> list[str]:
    """Remove from the store folder ``folder`` (``<results root>/<notebook>``) every part whose record is stored
    there, same profile, under the config the part was computed for (its ``record config`` hash): its JSON and its
    side files, under the part's lock. A part of a record not stored, or stored under another config, stays.
    Returns the removed parts' JSON names (``log``: where the one summary line goes; None: nowhere)."""
    from pathlib import Path

    from . import store

    folder = Path(folder)
    removed = []
    for js in sorted(folder.glob(f"*{SEPARATOR}*.*.json")):
        stem = js.name[: -len(".json")]  # <record>__<key>.<profile>
        name, _, profile = stem.rpartition(".")
        record = name.split(SEPARATOR)[0]
        if not (folder / f"{record}.{profile}.json").is_file():
            continue
        try:
            got = store.load(folder.name, name, profile, root=folder.parent)
            rec = store.load(folder.name, record, profile, root=folder.parent)
        except store.RecordError:  # one that does not verify is left for `python -m maelab.store check`
            continue
        if got is None or rec is None:
            continue
        if got.provenance["config"].get("record config") != rec.provenance["config_hash"]:
            continue
        with store.lock(folder, stem):
            for f in [*folder.glob(f"{stem}.*.csv"), *folder.glob(f"{stem}.*.npz"), js]:
                with contextlib.suppress(FileNotFoundError):
                    f.unlink()
        removed.append(js.name)
    if removed and log is not None:
        log(f"[parts] {folder.name}: {len(removed)} parts removed, their records are stored")
    return removed
