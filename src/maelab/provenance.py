"""Provenance of a stored result: the code's git state, the package versions and the device, in words.

What every record of :mod:`maelab.store` carries beside its values (the store writes them; ``maelab.device`` packs
the git state for a machine whose copy has no ``.git``).
"""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from . import paths
from .options import RunOptions

__all__ = ["git_state", "package_versions", "device_description"]


def git_state(root: Path | None = None, options: RunOptions | None = None) -> dict:
    """``{"commit", "dirty"}`` of the tree at ``root`` (stored results themselves do not make it dirty); where git
    cannot answer (the lent GPU machine's copy has no ``.git``) the run options' ``git`` (what
    ``maelab.device`` packed), else commit "unknown"."""
    if root is None:
        root = paths.repo_root()
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        # stored results themselves do not make the code dirty
        dirty = bool(
            subprocess.run(
                ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)data/results"],
                cwd=root,
                capture_output=True,
                text=True,
                timeout=10,
            ).stdout.strip()
        )
    except (OSError, subprocess.SubprocessError):
        commit, dirty = "", False
    if not commit and options is not None and options.git is not None:
        return {"commit": options.git[0], "dirty": options.git[1]}
    return {"commit": commit or "unknown", "dirty": dirty}


def package_versions() -> dict:
    """Versions of Python and of the packages a result depends on (those installed)."""
    from importlib import metadata

    names = [
        "maelab",
        "torch",
        "torchvision",
        "timm",
        "numpy",
        "scipy",
        "scikit-learn",
        "scikit-image",
        "piq",
        "pandas",
    ]
    out = {"python": platform.python_version()}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            pass
    return out


def device_description(device: Any = None) -> str:
    """The device a result was computed on, in words (None: this machine's CPU)."""
    if device is None:
        return f"cpu ({platform.machine()}, {os.cpu_count()} cores)"
    try:
        from ._util import device_name

        return device_name(device)
    except Exception:  # noqa: BLE001 - provenance must not break a run
        return str(device)
