"""What the parts of :mod:`maelab.device` share: limits, names, checksums, the code fingerprint and the machine."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
from pathlib import Path

from .._records import sha256_file  # noqa: F401  (re-exported: the device modules hash files with it)

PACK_DIR = ".device"  # the carried folder, relative to the repository root (gitignored)
PACK_FORMAT = 1
ARCHIVE_FORMAT = 1
#: The working tree plus the carried folder must stay under this (the lent machine's limit is 64 MiB in all; the
#: margin covers files created between the pack and the call).
LIMIT_BYTES = 60 << 20
#: What a file that comes back from the lent machine may be called (the device tool's rule).
SAFE_FILE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
#: A results folder (a notebook's, or ``plan``): what :func:`maelab.store.load_or_compute` accepts as a notebook.
SAFE_FOLDER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]*$")
#: Store folders that any notebook may write besides its own: the shared zoo's (:data:`maelab.zoo.NOTEBOOK`), whose
#: entries a gpu installment computes for whichever page asks first. A run watches them and archives their new
#: records; an import accepts them.
SHARED_FOLDERS = ("zoo",)


class DeviceError(RuntimeError):
    """A pack, run or archive that cannot be used as asked. The message is one line saying why and what to do."""


def sha256_bytes(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def code_fingerprint(repo: Path) -> str:
    """SHA-256 over every ``src/maelab/**/*.py`` (relative path and content, sorted): the library a run executes.

    Why not the git commit alone: the lent machine gets a copy of the working tree without ``.git``, so the run
    cannot ask git; the fingerprint taken at pack time and again there says whether the code is the packed code."""
    h = hashlib.sha256()
    src = repo / "src" / "maelab"
    for p in sorted(src.rglob("*.py")):
        if "__pycache__" in p.parts:
            continue
        h.update(p.relative_to(repo).as_posix().encode() + b"\0" + sha256_file(p).encode() + b"\n")
    return h.hexdigest()


def machine(device: str = "auto") -> dict:
    """The machine a run computes on: the run's device (``device`` resolved: its name as the records' provenance
    writes it, and its type), the GPU it has (if any), torch / CUDA / Python versions, host. ``cuda`` is the CUDA
    version torch was built with (also on a machine without a GPU)."""
    import torch

    from .._util import device_name, resolve_device
    from ..store import package_versions

    dev = resolve_device(device)
    return {
        "device": device_name(dev),
        "device_type": dev.type,
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "",
        "torch": package_versions().get("torch", torch.__version__),  # as the records' provenance names it
        "torch_build": torch.__version__,
        "cuda": torch.version.cuda or "",
        "python": platform.python_version(),
        "host": platform.node(),
        "cpus": os.cpu_count(),
    }


def read_json(path: Path, what: str) -> dict:
    """A JSON object from ``path``; :class:`DeviceError` in one line when it is missing or not an object."""
    try:
        obj = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise DeviceError(f"{what}: no file {path}") from None
    except (OSError, ValueError) as e:
        raise DeviceError(f"{what}: {path} is unreadable ({type(e).__name__})") from None
    if not isinstance(obj, dict):
        raise DeviceError(f"{what}: {path} is not a JSON object")
    return obj


def write_json(path: Path, obj: dict) -> None:
    from .._util import atomic_path

    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=1, sort_keys=True) + "\n")
