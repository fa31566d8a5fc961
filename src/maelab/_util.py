"""Small shared helpers: seeding, device resolution, the BLAS thread limit, progress bars and atomic file writes
(the folders: :mod:`maelab.paths`). Run options (the dry run's caps among them) are not read here: they travel
as arguments (:mod:`maelab.options`)."""

from __future__ import annotations

import contextlib
import os
import random
import sys
import tempfile
import time
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
    """'auto' -> cuda if available else cpu; 'cpu', 'cuda', 'cuda:N' (or a ``torch.device`` of these) are checked.
    A CUDA device sets the process's float32 policy (TF32 matmuls and convolutions, ``cuda_precision`` of
    ``maelab._util``) before anything runs on it."""
    import torch

    if isinstance(device, torch.device):
        device = str(device)
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if not isinstance(device, str) or not (device == "cpu" or device == "cuda" or device.startswith("cuda:")):
        raise ParameterError("device", "one of 'auto', 'cpu', 'cuda', 'cuda:N'", device)
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ParameterError("device", "'auto' or 'cpu' on a machine without CUDA", device)
        cuda_precision()
    return torch.device(device)


def cuda_precision() -> None:
    """maelab's one float32 policy on CUDA: TF32 tensor cores for the float32 matmuls and convolutions (PyTorch's
    "high"; under the trainer's bf16 autocast, for those left outside it). PyTorch holds this per process, so it is
    set wherever maelab resolves a CUDA device, not only where it trains: before, only the trainer set it, and an
    evaluation on the card (features for the probes, reconstructions, Jacobians) ran with TF32 in a process that
    had trained something earlier and in full float32 in one that had not (a pool worker's first job, a page that
    loads checkpoints), so the same record's rounding depended on what its process had done before."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True


class Phases:
    """The seconds of a computation's phases, printed as one stderr line (``"<what>: <phase> 1.2 s; ..."``): where a
    gpu installment's time went, since the lent machine's log is all of it that comes back. ``mark(name)`` ends the
    phase ``name`` (begun at the previous mark, or at creation); ``report(what)`` prints the line."""

    def __init__(self) -> None:
        self._t = time.perf_counter()
        self.done: list[tuple[str, float]] = []

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.done.append((name, now - self._t))
        self._t = now

    def report(self, what: str) -> None:
        print(f"{what}: " + "; ".join(f"{n} {s:.1f} s" for n, s in self.done), file=sys.stderr, flush=True)


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


def cpu_model() -> str:
    """The processor's model name (``/proc/cpuinfo``), else what :mod:`platform` knows (often just the machine)."""
    import platform
    from pathlib import Path

    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_name(device) -> str:
    """A device in words for a record's provenance: the GPU's name, or ``cpu (<processor model>, <n> cores, <t>
    threads)``. The processor matters: another CPU rounds differently, and training amplifies it."""
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"cpu ({cpu_model()}, {os.cpu_count()} cores, {torch.get_num_threads()} threads)"


def progress_enabled(progress: bool | None = None) -> bool:
    """Progress bars: ``progress`` when given (a run's ``RunOptions.progress``, a function's ``progress`` argument);
    None: on unless running in CI (the environment variable ``CI`` set, as CI services set it)."""
    if progress is not None:
        return bool(progress)
    return not os.environ.get("CI")


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
