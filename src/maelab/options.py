"""How a run is made: one frozen :class:`RunOptions` object and the dry run's caps (:class:`DryRunLimits`).

``python -m maelab.book run`` builds one :class:`RunOptions` from its command line and hands it to every notebook
kernel as one papermill parameter, ``run_options`` (a plain JSON-able dict, :meth:`RunOptions.to_param`);
:func:`maelab.book.setup` turns it back into the object (:meth:`RunOptions.from_param`) and the page's
:class:`maelab.book.Context` holds it. A notebook opened by hand gets the defaults of its own ``parameters`` cell.
From the context the library receives explicit arguments: the dry-run caps (``caps=ctx.caps``, down through
:func:`maelab.experiments.pretrain` into :func:`maelab.train.train`), the results root (``root=ctx.root``), whether
the gpu profile may compute on a CPU (``allow_cpu``); the store receives the whole object
(:func:`maelab.store.load_or_compute`'s ``options``), because its guards depend on the run mode.

The options are how a run is made, not what it computes: none of them enters a result's config, so a result's key
(config hash) is the same whatever options computed it. That is why a dry run or a no-compute run must never store
under a real key, and the store refuses (:func:`maelab.store.check_mode_allows_writing`).

No library module reads an environment variable for a run option. The two names maelab still reads are folders a
user may point elsewhere and a child process must inherit: ``MAELAB_CACHE`` (:func:`maelab.paths.cache_root`)
and ``MAELAB_DATA_DIR`` (:func:`maelab.paths.data_dir`).
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Any

from ._validate import ParameterError, is_bool, one_of, positive_int

__all__ = ["DryRunLimits", "RunOptions", "NO_COMPUTE_MODES", "cap"]


@dataclasses.dataclass(frozen=True)
class DryRunLimits:
    """What a dry run (``python -m maelab.book run --dry-run``) caps, and where it writes; everything else (models,
    image shapes, batch sizes, data sets, code paths) is exactly the profile's. A function that honours the dry run
    takes it as ``caps`` (None: a real run).

    Attributes:
        train_steps: optimiser steps per training run (:func:`maelab.train.train`, :func:`maelab.train.fine_tune`,
            :func:`maelab.linear_mae.train_linear_mae`), counted over the whole run; later epochs still end
            (evaluation, callbacks, snapshots) with no step.
        train_batch: images per optimiser step: a step takes the first ``train_batch`` images of its batch (the
            batch size itself, its learning-rate scaling and its fit to the data set are the profile's; the memory
            of a full gpu batch is what ``python -m maelab.book plan`` estimates, on fake tensors).
        eval_images: images per evaluation pass (the trainer's probe accuracy,
            :func:`maelab.evaluate.extract_features`, reconstruction losses); feature extraction computes the first
            ``eval_images`` images and repeats their rows to the full ``(N, D)`` shape, so every consumer sees the
            real shapes.
        probe_examples: training and test examples per linear probe (evenly spaced over the split), and training
            examples per k-NN (the first ``max(probe_examples, k)``; every test example is still classified).
        probe_iters: solver iterations per logistic-regression fit of a linear probe (its SGD variant: at most
            ``train_steps`` epochs), on one BLAS thread.
        probe_grid: regularisation values a linear probe chooses from on its validation split (the first ones of
            its ``Cs``; a probe with ``C`` given fits that one).
        mc_samples: Monte-Carlo samples (e.g. image pairs) per estimate of the library's analysis functions that
            take ``caps`` (:func:`maelab.papers.zhang2022.mask_graph.distance_curves`).
        repeats: repetitions per loop of a notebook: every settings field declared ``repeats=True`` (seeds, mask
            draws, random images or maps per estimate; every field named ``seeds``) is cut to its first
            ``repeats`` values (a number: at most ``repeats``) by
            :meth:`maelab.profiles.NotebookSettings.for_profile` (``caps=``), after the profile's own values have
            passed their checks. Loops over such settings then run ``repeats`` times wherever they are written, in
            the library or in a notebook, and every later reader of the setting sees the same, shorter list.
        scratch: the dry run's scratch folder ("": ``<tmp>/maelab-dry-run``): its checkpoints
            (:func:`maelab.train.default_checkpoint_dir`) and, unless told otherwise, its results. The store writes
            nothing of a dry run outside it.
    """

    train_steps: int = 2
    train_batch: int = 4
    eval_images: int = 4
    probe_examples: int = 64
    probe_iters: int = 2
    probe_grid: int = 2
    mc_samples: int = 8
    repeats: int = 2
    scratch: str = ""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            if f.name != "scratch":
                positive_int(f"dry_run.{f.name}", getattr(self, f.name))
        if not isinstance(self.scratch, str):
            raise ParameterError(
                "dry_run.scratch", "a folder path as a string ('' for <tmp>/maelab-dry-run)", self.scratch
            )

    @property
    def scratch_dir(self) -> Path:
        """The scratch folder as a path (``scratch``, else ``<tmp>/maelab-dry-run``)."""
        return Path(self.scratch) if self.scratch else Path(tempfile.gettempdir()) / "maelab-dry-run"

    @classmethod
    def cap_names(cls) -> tuple[str, ...]:
        """The names of the caps (every field but ``scratch``)."""
        return tuple(f.name for f in dataclasses.fields(cls) if f.name != "scratch")


def cap(n: int, caps: DryRunLimits | None, what: str = "mc_samples") -> int:
    """``n`` outside a dry run (``caps`` None); in a dry run ``min(n, <the cap named what>)`` (a field of
    :class:`DryRunLimits`, e.g. ``"mc_samples"``, ``"eval_images"``). How a library loop honours the dry run in one
    line."""
    if what not in DryRunLimits.cap_names():
        raise ParameterError("what", "a field of DryRunLimits (" + ", ".join(DryRunLimits.cap_names()) + ")", what)
    if caps is None:
        return n
    if not isinstance(caps, DryRunLimits):
        raise ParameterError("caps", "None or a maelab.options.DryRunLimits", type(caps).__name__)
    return min(n, getattr(caps, what))


#: ``RunOptions.no_compute``: None (compute what is missing), "on" (fail with ``StoreMiss`` instead of computing),
#: "record" (``scripts/migrate_result_keys.py``: hand a stored record on under the requested key and log it)
NO_COMPUTE_MODES = (None, "on", "record")
_HEX = set("0123456789abcdef")


def _optional_path(name: str, v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, Path):
        return str(v)
    if not isinstance(v, str) or not v:
        raise ParameterError(name, "None or a non-empty path", v)
    return v


def _git(v: Any) -> tuple[str, bool] | None:
    """None, or (40 lower-case hex digits, dirty flag); given as a tuple/list or a dict ``{"commit", "dirty"}``."""
    if v is None:
        return None
    if isinstance(v, dict) and set(v) == {"commit", "dirty"}:
        v = (v["commit"], v["dirty"])
    ok = isinstance(v, (tuple, list)) and len(v) == 2 and isinstance(v[0], str) and isinstance(v[1], bool)
    if not ok or len(v[0]) != 40 or not set(v[0]) <= _HEX:
        raise ParameterError("git", 'None or {"commit": "<40 hex digits>", "dirty": true|false}', v)
    return (v[0], v[1])


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How a run is made (see the module docstring): one frozen object, checked field by field when made (a bad
    value is a one-line :class:`maelab.ParameterError` naming the field).

    Attributes:
        profile: "smoke" | "cpu" | "gpu" (:mod:`maelab.profiles`); "auto" only for the runner, which replaces it by
            each notebook's best committed profile before the kernel sees it.
        seed: the page's seed (an integer in [0, 2**32 - 1]).
        device: "auto" | "cpu" | "cuda" | "cuda:N".
        recompute: compute every result again, ignoring stored ones.
        progress: tqdm bars on stderr (None: on unless the environment variable ``CI`` is set).
        results_root: the results folder (None: the store's default, ``data/results``; smoke ``.cache/results-smoke``;
            a dry run its scratch folder's ``results``).
        no_compute: one of :data:`NO_COMPUTE_MODES`.
        no_compute_log: where ``no_compute="record"`` appends the requests it handed a stored record to (JSON lines).
        dry_run: None (a real run) or the caps (:class:`DryRunLimits`) every training run and evaluation honours.
        allow_cpu: let the gpu profile compute on a machine without CUDA (``--force-cpu``).
        git: (commit, dirty) of the tree the code was packed from, for a machine whose copy has no ``.git`` (the
            lent GPU machine, ``maelab.device``); None: ask git.
        train_workers: processes that pre-train a page's independent runs side by side (:mod:`maelab.prefetch`;
            0 or 1: none). The device runner sets 8 on CUDA.
        store_parts: store the runs of a record being computed as its parts (:mod:`maelab.parts`), so that a
            computation stopped midway keeps them. The device runner sets it.
    """

    profile: str = "cpu"
    seed: int = 0
    device: str = "auto"
    recompute: bool = False
    progress: bool | None = None
    results_root: str | None = None
    no_compute: str | None = None
    no_compute_log: str | None = None
    dry_run: DryRunLimits | None = None
    allow_cpu: bool = False
    git: tuple[str, bool] | None = None
    train_workers: int = 0
    store_parts: bool = False

    def __post_init__(self) -> None:
        from .profiles import PROFILE_NAMES, validate_core

        if self.profile not in ("auto", *PROFILE_NAMES):
            raise ParameterError(
                "profile", "one of " + ", ".join(map(repr, PROFILE_NAMES)) + " ('auto': the runner's)", self.profile
            )
        validate_core({"seed": self.seed, "device": self.device, "recompute": self.recompute})
        validate_core({"progress": self.progress})
        set_ = object.__setattr__
        set_(self, "results_root", _optional_path("results_root", self.results_root))
        set_(self, "no_compute_log", _optional_path("no_compute_log", self.no_compute_log))
        one_of("no_compute", self.no_compute, NO_COMPUTE_MODES)
        if self.dry_run is not None and not isinstance(self.dry_run, DryRunLimits):
            raise ParameterError("dry_run", "None or a maelab.options.DryRunLimits", type(self.dry_run).__name__)
        is_bool("allow_cpu", self.allow_cpu)
        is_bool("store_parts", self.store_parts)
        tw = self.train_workers
        if not isinstance(tw, int) or isinstance(tw, bool) or not 0 <= tw <= 64:
            raise ParameterError("train_workers", "a whole number of processes in [0, 64]", tw)
        set_(self, "git", _git(self.git))
        if self.dry_run is not None and (self.no_compute is not None or self.recompute):
            raise ParameterError(
                "dry_run",
                "None with no_compute or recompute set (a dry run computes everything, in its scratch folder)",
                self.dry_run,
            )

    @property
    def caps(self) -> DryRunLimits | None:
        """The dry-run caps, or None in a real run; what the library's ``caps`` arguments take."""
        return self.dry_run

    def replace(self, **changes: Any) -> RunOptions:
        """A copy with ``changes`` (checked as a new object is)."""
        return dataclasses.replace(self, **changes)

    def to_param(self) -> dict[str, Any]:
        """The papermill parameter ``run_options``: a plain JSON-able dict (:meth:`from_param` gives the object
        back)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["dry_run"] = None if self.dry_run is None else dataclasses.asdict(self.dry_run)
        out["git"] = None if self.git is None else {"commit": self.git[0], "dirty": self.git[1]}
        return out

    @classmethod
    def from_param(cls, value: Any) -> RunOptions:
        """The object from a papermill parameter: None (the defaults), a :class:`RunOptions`, or a dict of its
        fields (what :meth:`to_param` gives, or a notebook's own ``parameters`` cell: any subset). An unknown key
        or a bad value is a one-line :class:`maelab.ParameterError` naming it."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            raise ParameterError("run_options", "None, a dict of RunOptions fields or a RunOptions", value)
        names = [f.name for f in dataclasses.fields(cls)]
        for k in value:
            if k not in names:
                raise ParameterError("run_options key", "a RunOptions field (" + ", ".join(names) + ")", k)
        given = dict(value)
        dry = given.get("dry_run")
        if isinstance(dry, dict):
            allowed = [f.name for f in dataclasses.fields(DryRunLimits)]
            for k in dry:
                if k not in allowed:
                    raise ParameterError("dry_run key", "a DryRunLimits field (" + ", ".join(allowed) + ")", k)
            given["dry_run"] = DryRunLimits(**dry)
        elif dry is not None and not isinstance(dry, DryRunLimits):
            raise ParameterError("dry_run", "None or a dict of DryRunLimits fields", dry)
        return cls(**given)
