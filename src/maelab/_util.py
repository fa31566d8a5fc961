"""Small shared helpers: seeding, device resolution, progress bars, atomic file writes."""
from __future__ import annotations

import contextlib
import os
import random
import tempfile
from pathlib import Path
from typing import Iterator

import numpy as np

from ._validate import ParameterError


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


def device_name(device) -> str:
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    import platform

    return f"cpu ({platform.processor() or platform.machine()}, {os.cpu_count()} cores, {torch.get_num_threads()} threads)"


def progress_enabled(progress: bool | None = None) -> bool:
    """Progress bars are on unless asked off, or running in CI (env CI set) or MAELAB_PROGRESS=0."""
    if progress is not None:
        return bool(progress)
    if os.environ.get("MAELAB_PROGRESS") is not None:
        return os.environ["MAELAB_PROGRESS"] not in ("0", "false", "False", "")
    return not os.environ.get("CI")


def pbar(iterable=None, *, progress: bool | None = None, **kwargs):
    """A plain-text tqdm bar (``tqdm.std``), silenced in CI (see :func:`progress_enabled`).

    Text bars, not ``tqdm.auto``: notebooks run headless through papermill, without ipywidgets, where the widget
    bar only warns (``TqdmWarning: IProgress not found``). Text bars go to stderr, which the book does not render.
    """
    from tqdm.std import tqdm

    return tqdm(iterable, disable=not progress_enabled(progress), **kwargs)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str | None = None) -> Iterator[Path]:
    """Yield a temp path in the target's folder; on success rename it onto ``path`` (atomic on POSIX).

    On error the temp file is removed and ``path`` is untouched: nothing half-written is left behind.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix or path.suffix or ".tmp")
    os.close(fd)
    tmp = Path(tmp)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
