"""Small shared helpers: seeding, device resolution, the BLAS thread limit, progress bars, atomic file writes, the
strict reading of maelab's on/off environment variables (:func:`env_flag`) and the dry-run switch
(:func:`dry_run_limits`)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ._validate import ParameterError, positive_int


def seed_everything(seed: int) -> None:
    """Seed python, numpy and torch (CPU and CUDA)."""
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def resolve_device(device: str = "auto"):
    """'auto' -> cuda if available else cpu; 'cpu', 'cuda', 'cuda:N' are checked."""
    import torch

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if not isinstance(device, str) or not (device == "cpu" or device == "cuda" or device.startswith("cuda:")):
        raise ParameterError("device", "one of 'auto', 'cpu', 'cuda', 'cuda:N'", device)
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ParameterError("device", "'auto' or 'cpu' on a machine without CUDA", device)
    return torch.device(device)


FLAG_VALUES = "unset, '', '0', '1', 'false' or 'true' (any case)"


def env_flag(name: str, default: bool = False) -> bool:
    """An on/off environment variable of maelab (``MAELAB_DRY_RUN``, ``MAELAB_NO_COMPUTE``, ``MAELAB_ALLOW_CPU``,
    ``MAELAB_PROGRESS``), read strictly: ``"1"`` / ``"true"`` on, ``"0"`` / ``"false"`` off (any case, surrounding
    spaces ignored), unset or ``""`` ``default``; anything else (``"yes"``, ``"2"``, ``"off"``) is a one-line
    :class:`ParameterError` naming the variable, never a guess."""
    raw = os.environ.get(name)
    v = "" if raw is None else raw.strip().lower()
    if v == "":
        return default
    if v in ("1", "true"):
        return True
    if v in ("0", "false"):
        return False
    raise ParameterError(name, FLAG_VALUES, raw)


DRY_RUN_ENV = "MAELAB_DRY_RUN"
DRY_RUN_DIR_ENV = "MAELAB_DRY_RUN_DIR"


@dataclasses.dataclass(frozen=True)
class DryRunLimits:
    """What a dry run (``$MAELAB_DRY_RUN=1``, ``python -m maelab.book run --dry-run``) caps; everything else (models,
    image shapes, batch sizes, data sets, code paths) is exactly the profile's.

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
            read it (:func:`maelab.papers.zhang2022.mask_graph.distance_curves`).
        repeats: repetitions per loop of a notebook: every settings field declared ``repeats=True`` (seeds, mask
            draws, random images or maps per estimate; every field named ``seeds``) is cut to its first
            ``repeats`` values (a number: at most ``repeats``) by
            :meth:`maelab.profiles.NotebookSettings.for_profile`, after the profile's own values have passed their
            checks. Loops over such settings then run ``repeats`` times wherever they are written, in the library
            or in a notebook, and every later reader of the setting sees the same, shorter list.
    """

    train_steps: int = 2
    train_batch: int = 4
    eval_images: int = 4
    probe_examples: int = 64
    probe_iters: int = 2
    probe_grid: int = 2
    mc_samples: int = 8
    repeats: int = 2


def dry_run_limits() -> DryRunLimits | None:
    """The dry-run caps when ``$MAELAB_DRY_RUN`` is on (``1``; set by ``python -m maelab.book run --dry-run`` and
    inherited by the notebook kernels), else None (read by :func:`env_flag`: a value other than unset, ``0``,
    ``1``, ``false``, ``true`` is a one-line error). The one switch the trainer and the evaluation loops read.

    A dry run never stores a result outside its scratch folder (:func:`dry_run_dir`): :mod:`maelab.store` refuses,
    so a dry run cannot leave capped results under the keys of real ones."""
    return DryRunLimits() if env_flag(DRY_RUN_ENV) else None


def dry_cap(n: int, what: str = "mc_samples") -> int:
    """``n`` outside a dry run; in a dry run ``min(n, <the cap named what>)`` (a field of :class:`DryRunLimits`,
    e.g. ``"mc_samples"``, ``"train_steps"``). How a library loop honours the dry-run switch in one line."""
    dry = dry_run_limits()
    if dry is None:
        return n
    if what not in {f.name for f in dataclasses.fields(DryRunLimits)}:
        raise ParameterError("what", "a field of DryRunLimits (" + ", ".join(DryRunLimits.__annotations__) + ")", what)
    return min(n, getattr(dry, what))


def dry_run_dir() -> Path:
    """Scratch folder of a dry run (checkpoints): ``$MAELAB_DRY_RUN_DIR``, else ``<tmp>/maelab-dry-run``."""
    env = os.environ.get(DRY_RUN_DIR_ENV)
    return Path(env) if env else Path(tempfile.gettempdir()) / "maelab-dry-run"


def blas_limit(threads: int | None):
    """Context manager limiting the BLAS thread pool to ``threads`` (``threadpoolctl``, ``user_api="blas"``; the
    previous limits come back on exit); ``None``: a no-op.

    The one place maelab limits BLAS threads. Why limit at all: numpy/scipy/scikit-learn run on OpenBLAS, whose
    spinning worker threads make small problems (the logistic-regression probe's L-BFGS, eigendecompositions of
    d <= ~1000 matrices) 10-30x slower on a machine shared by several processes; torch does not use this pool. The
    thread count can change the last bits of a result, so a stored result records the limit it was computed under
    (e.g. :func:`maelab.evaluate.linear_probe`'s ``blas_threads``).
    """
    if threads is None:
        return contextlib.nullcontext()
    positive_int("blas_threads", threads)
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=threads, user_api="blas")


def device_name(device) -> str:
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    import platform

    return (
        f"cpu ({platform.processor() or platform.machine()}, {os.cpu_count()} cores, {torch.get_num_threads()} threads)"
    )


def progress_enabled(progress: bool | None = None) -> bool:
    """Progress bars are on unless asked off, or running in CI (env CI set) or ``MAELAB_PROGRESS=0`` (read by
    :func:`env_flag`: ``0``/``false`` off, ``1``/``true`` on, anything else a one-line error)."""
    if progress is not None:
        return bool(progress)
    return env_flag("MAELAB_PROGRESS", default=not os.environ.get("CI"))


def pbar(iterable=None, *, progress: bool | None = None, **kwargs):
    """A plain-text tqdm bar (``tqdm.std``), silenced in CI (see :func:`progress_enabled`).

    Text bars, not ``tqdm.auto``: notebooks run headless through papermill, without ipywidgets, where the widget
    bar only warns (``TqdmWarning: IProgress not found``). Text bars go to stderr, which the book does not render.
    """
    from tqdm.std import tqdm

    return tqdm(iterable, disable=not progress_enabled(progress), **kwargs)


def _preview(items: list[str], k: int) -> str:
    return ", ".join(items[:k]) + (f", ... (+{len(items) - k})" if len(items) > k else "")


def state_dict_mismatch(own: dict, given: dict, *, strict: bool = True, k: int = 3) -> str:
    """ "" when the state dict ``given`` fits a module whose state dict is ``own`` (same keys unless not
    ``strict``, same shapes), else one line saying how it does not: the number and the first ``k`` of the shape
    mismatches (``key (given shape) vs model (own shape)``), missing and unexpected keys -- instead of torch's
    multi-line ``Error(s) in loading state_dict``."""
    missing = sorted(set(own) - set(given))
    unexpected = sorted(set(given) - set(own))
    shapes = sorted(
        key
        for key in set(own) & set(given)
        if hasattr(own[key], "shape") and tuple(getattr(given[key], "shape", ())) != tuple(own[key].shape)
    )
    problems = []
    if shapes:
        problems.append(
            f"{len(shapes)} shape mismatches: "
            + _preview(
                [f"{key} {tuple(getattr(given[key], 'shape', ()))} vs model {tuple(own[key].shape)}" for key in shapes],
                k,
            )
        )
    if strict and missing:
        problems.append(f"{len(missing)} missing keys: {_preview(missing, k + 1)}")
    if strict and unexpected:
        problems.append(f"{len(unexpected)} unexpected keys: {_preview(unexpected, k + 1)}")
    return "; ".join(problems)


TMP_PREFIX = ".maelab-tmp"  # every temp file maelab writes starts with this; .gitignore ignores it


def _owner() -> str:
    """host-pid of this process (host sanitised to letters, digits and -)."""
    import platform
    import re

    return re.sub(r"[^A-Za-z0-9-]", "-", platform.node() or "host") + f"-{os.getpid()}"


def _remove_dead_leftovers(folder: Path, target: str) -> None:
    """Remove temp files for ``target`` left by writers on this host whose process no longer exists."""
    me = _owner()
    host = me.rsplit("-", 1)[0]
    for p in folder.glob(f"{TMP_PREFIX}.{target}.{host}-*"):
        m = p.name[len(f"{TMP_PREFIX}.{target}.{host}-") :].split(".", 1)[0]
        if not m.isdigit() or int(m) == os.getpid():
            continue
        try:
            os.kill(int(m), 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                p.unlink()
        except PermissionError:  # alive, another user's
            pass


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str | None = None) -> Iterator[Path]:
    """Yield a temp path in the target's folder; on success rename it onto ``path`` (atomic on POSIX).

    On error the temp file is removed and ``path`` is untouched: nothing half-written is left behind. The temp
    name is ``.maelab-tmp.<name>.<host>-<pid>.<random><suffix>`` (gitignored); a writer killed before it could
    clean up leaves one, which the next :func:`atomic_path` for the same target on that host removes.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_dead_leftovers(path.parent, path.name)
    fd, tmp = tempfile.mkstemp(
        dir=path.parent, prefix=f"{TMP_PREFIX}.{path.name}.{_owner()}.", suffix=suffix or path.suffix or ".tmp"
    )
    os.close(fd)
    tmp = Path(tmp)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
