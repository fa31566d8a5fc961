"""Results as data: ``load_or_compute(name, config, fn)``.

Every expensive computation in the book goes through :func:`load_or_compute`. It writes, under
``<root>/<notebook>/``:

* ``<name>.<profile>.json`` -- the record: JSON-able values returned by ``fn`` plus provenance (full config and its
  hash, git commit and dirty flag, package versions, device name, seeds, wall time, timestamp, profile), and the
  SHA-256 of each side file;
* ``<name>.<profile>.<key>.csv`` -- one CSV per pandas DataFrame value;
* ``<name>.<profile>.npz`` -- all numpy-array / tensor values (loaded with ``allow_pickle=False``).

Side files are written first, the JSON record last, each atomically (temp file + rename), so a crash never leaves
a record pointing at half-written data. On load, a record whose config hash differs from the request's, or whose
side files are missing or changed, is recomputed -- never silently reused. ``recompute=True`` forces it.

Root: ``$MAELAB_RESULTS_DIR`` if set, else ``<repo>/data/results`` -- except for the ``smoke`` profile, whose
results go to ``<repo>/.cache/results-smoke`` (gitignored): smoke runs never write into ``data/results``.
"""
from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import math
import os
import platform
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ._util import atomic_path
from ._validate import ParameterError, one_of

PROFILE_ORDER = ("gpu", "cpu", "smoke")  # best first: the book shows the best profile that has results
SCHEMA = 1


def repo_root() -> Path:
    """The repository holding this package (walk up to pyproject.toml); falls back to the working directory."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").exists() and (parent / "src" / "maelab").exists():
            return parent
    return Path.cwd()


def results_root(profile: str | None = None) -> Path:
    env = os.environ.get("MAELAB_RESULTS_DIR")
    if env:
        return Path(env)
    if profile == "smoke":
        return repo_root() / ".cache" / "results-smoke"
    return repo_root() / "data" / "results"


# ----------------------------------------------------------------------------------------------- hashing
def _canonical(obj: Any) -> Any:
    """Make a config JSON-canonical: tuples -> lists, numpy scalars -> python, dataclasses -> dicts."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _canonical(dataclasses.asdict(obj))
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if not isinstance(k, str):
                raise ParameterError("config", "a dict with string keys", k)
            out[k] = _canonical(v)
        return out
    if isinstance(obj, (list, tuple)):
        return [_canonical(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        raise ParameterError("config", "JSON-able with finite floats", obj)
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise ParameterError("config", "JSON-able (dict/list/str/number/bool/None)", type(obj).__name__)


def config_hash(config: dict) -> str:
    """SHA-256 (first 16 hex digits) of the canonical JSON of ``config``."""
    text = json.dumps(_canonical(config), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ----------------------------------------------------------------------------------------------- provenance
def git_state(root: Path | None = None) -> dict:
    root = root or repo_root()
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                timeout=10).stdout.strip()
        # stored results themselves do not make the code dirty
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                     ":(exclude)data/results"], cwd=root, capture_output=True, text=True,
                                    timeout=10).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        commit, dirty = "", False
    return {"commit": commit or "unknown", "dirty": dirty}


def package_versions() -> dict:
    from importlib import metadata

    names = ["maelab", "torch", "torchvision", "timm", "numpy", "scipy", "scikit-learn", "scikit-image", "piq",
             "pandas"]
    out = {"python": platform.python_version()}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            pass
    return out


def device_description(device: Any = None) -> str:
    if device is None:
        return f"cpu ({platform.machine()}, {os.cpu_count()} cores)"
    try:
        from ._util import device_name

        return device_name(device)
    except Exception:  # noqa: BLE001 - provenance must not break a run
        return str(device)


# ----------------------------------------------------------------------------------------------- result
@dataclasses.dataclass
class Result:
    """What :func:`load_or_compute` returns: the values and their provenance."""

    name: str
    data: dict
    provenance: dict
    from_store: bool
    path: Path

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __contains__(self, key: str) -> bool:
        return key in self.data

    @property
    def label(self) -> str:
        p = self.provenance
        commit = p.get("git", {}).get("commit", "unknown")[:10]
        dirty = "+dirty" if p.get("git", {}).get("dirty") else ""
        return (f"profile {p.get('profile')} · {p.get('device')} · commit {commit}{dirty} · seeds "
                f"{p.get('seeds')} · {p.get('wall_time_s', 0):.1f} s · {p.get('timestamp', '')[:19]}")


def _paths(root: Path, notebook: str, name: str, profile: str) -> tuple[Path, Path]:
    folder = root / notebook
    return folder / f"{name}.{profile}.json", folder / f"{name}.{profile}.npz"


def _split(data: dict) -> tuple[dict, dict, dict]:
    """Split fn's output into JSON values, DataFrames and arrays."""
    import pandas as pd

    try:
        import torch
    except ImportError:  # pragma: no cover
        torch = None
    plain, frames, arrays = {}, {}, {}
    for k, v in data.items():
        if not isinstance(k, str) or not k.replace("_", "a").isalnum():
            raise ParameterError("fn result key", "an identifier-like string (letters, digits, _)", k)
        if isinstance(v, pd.DataFrame):
            frames[k] = v
        elif isinstance(v, np.ndarray):
            arrays[k] = v
        elif torch is not None and isinstance(v, torch.Tensor):
            arrays[k] = v.detach().cpu().numpy()
        else:
            plain[k] = _canonical_value(k, v)
    return plain, frames, arrays


def _canonical_value(key: str, v: Any) -> Any:
    if isinstance(v, dict):
        return {str(a): _canonical_value(key, b) for a, b in v.items()}
    if isinstance(v, (list, tuple)):
        return [_canonical_value(key, b) for b in v]
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise ParameterError(f"fn result[{key!r}]", "JSON-able, a pandas DataFrame or an array", type(v).__name__)


def _read(json_path: Path, npz_path: Path) -> tuple[dict, dict] | None:
    """Read a stored record and its side files; None when anything is missing, unreadable or altered."""
    import pandas as pd

    try:
        record = json.loads(json_path.read_text())
        data = dict(record["data"])
        for key, meta in record.get("frames", {}).items():
            p = json_path.parent / meta["file"]
            if _sha256_file(p) != meta["sha256"]:
                return None
            data[key] = pd.read_csv(p)
        if record.get("arrays"):
            meta = record["arrays"]
            if _sha256_file(npz_path) != meta["sha256"]:
                return None
            with np.load(npz_path, allow_pickle=False) as z:
                for key in meta["keys"]:
                    data[key] = z[key]
        return data, record["provenance"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def load(notebook: str, name: str, profile: str, root: Path | None = None) -> Result | None:
    """Read a stored result without computing anything (None when there is none)."""
    root = Path(root) if root is not None else results_root(profile)
    json_path, npz_path = _paths(root, notebook, name, profile)
    if not json_path.exists():
        return None
    got = _read(json_path, npz_path)
    if got is None:
        return None
    return Result(name, got[0], got[1], True, json_path)


def load_or_compute(name: str, config: dict, fn: Callable[[], dict], *, notebook: str, profile: str,
                    seeds: list[int] | int | None = None, device: Any = None, recompute: bool = False,
                    root: str | os.PathLike | None = None, log: Callable[[str], None] | None = print) -> Result:
    """Return the stored result for (notebook, name, profile) if its config matches, else compute and store it.

    Args:
        name: result name (identifier-like; part of the file name).
        config: everything the result depends on (JSON-able). Its hash decides reuse.
        fn: ``() -> dict`` computing the result. Values: JSON-able, pandas DataFrames (-> CSV) or arrays/tensors
            (-> one npz).
        notebook, profile: where it goes (``<root>/<notebook>/<name>.<profile>.*``).
        seeds, device: provenance.
        recompute: compute even when a matching result is stored.
        root: results root (default :func:`results_root`).
    """
    for pname, val in (("name", name), ("notebook", notebook)):
        if not isinstance(val, str) or not val or not val.replace("_", "a").replace("-", "a").isalnum():
            raise ParameterError(pname, "a non-empty identifier-like string (letters, digits, _ or -)", val)
    one_of("profile", profile, PROFILE_ORDER)
    if not callable(fn):
        raise ParameterError("fn", "a callable returning a dict", fn)
    root = Path(root) if root is not None else results_root(profile)
    h = config_hash(config)
    json_path, npz_path = _paths(root, notebook, name, profile)
    say = log or (lambda s: None)

    if not recompute and json_path.exists():
        got = _read(json_path, npz_path)
        if got is None:
            say(f"[store] {json_path.name}: stored record unreadable or side files changed -> recomputing")
        elif got[1].get("config_hash") != h:
            say(f"[store] {json_path.name}: config hash {got[1].get('config_hash')} != requested {h} -> "
                "recomputing")
        else:
            say(f"[store] {json_path.name}: found a stored result with the same config ({h}); loading it")
            return Result(name, got[0], got[1], True, json_path)
    elif recompute:
        say(f"[store] {name}: recompute requested")

    from .data.packaged import datasets_used  # provenance: hashes of the datasets fn loads (issue 15)

    t0 = time.perf_counter()
    with datasets_used() as used_datasets:
        out = fn()
    wall = time.perf_counter() - t0
    if not isinstance(out, dict):
        raise ParameterError("fn", "a callable returning a dict", type(out).__name__)
    plain, frames, arrays = _split(out)

    frames_meta, arrays_meta = {}, None
    for key, df in frames.items():
        p = json_path.parent / f"{name}.{profile}.{key}.csv"
        with atomic_path(p) as tmp:
            df.to_csv(tmp, index=False)
        frames_meta[key] = {"file": p.name, "sha256": _sha256_file(p)}
    if arrays:
        with atomic_path(npz_path) as tmp:
            with open(tmp, "wb") as f:
                np.savez_compressed(f, **arrays)
        arrays_meta = {"file": npz_path.name, "keys": sorted(arrays), "sha256": _sha256_file(npz_path)}
    elif npz_path.exists():
        npz_path.unlink()

    if isinstance(seeds, int):
        seeds = [seeds]
    provenance = {
        "schema": SCHEMA,
        "notebook": notebook,
        "name": name,
        "profile": profile,
        "config": _canonical(config),
        "config_hash": h,
        "git": git_state(),
        "versions": package_versions(),
        "device": device_description(device),
        "seeds": list(seeds) if seeds is not None else None,
        "wall_time_s": round(wall, 3),
        "timestamp": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "datasets": dict(sorted(used_datasets.items())),  # {name: SHA-256} of hashed datasets loaded by fn
    }
    record = {"provenance": provenance, "data": plain, "frames": frames_meta, "arrays": arrays_meta}
    with atomic_path(json_path) as tmp:
        tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    say(f"[store] {json_path.name}: computed in {wall:.1f} s and stored")
    data = dict(plain)
    data.update(_read(json_path, npz_path)[0])  # return exactly what a later load returns
    return Result(name, data, provenance, False, json_path)


def stored_profiles(notebook: str, root: Path | None = None) -> list[str]:
    """Profiles with at least one stored record for ``notebook`` under the committed root, best first."""
    root = Path(root) if root is not None else results_root()
    folder = root / notebook
    found = {p.name.split(".")[-2] for p in folder.glob("*.json")} if folder.exists() else set()
    return [p for p in PROFILE_ORDER if p in found]
