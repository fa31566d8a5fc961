"""Pack, here: everything a lent GPU machine lacks for the named notebooks, in one gitignored folder (``.device/``).

What goes in (``python -m maelab.device pack NOTEBOOK... [--profile gpu] [--datasets NAME...]``):

* ``programs/<notebook>.json``: the notebook's code cells, read with jupytext *here* (the lent machine has no
  jupytext, papermill or Jupyter kernel), and the index of its ``parameters`` cell. :mod:`maelab.device.runner`
  makes a plain Python program of them there, parameters injected as papermill injects them, so the results are
  stored under the same names and config hashes as the notebook run here would store them.
* ``datasets/<name>.npz.xz``: each fetched dataset (:mod:`maelab.data.packaged`) the notebooks' settings name, as an
  uncompressed npz compressed with xz (LZMA preset 9e: 38.5 MiB for the three datasets against 46 MiB as fetched);
  the run unpacks it to a temp data dir, where the loader checks the arrays' SHA-256 as always. Compressing is slow
  (~1.5 min for Fashion-MNIST), so the result is cached in ``.cache/device/``.
  With ``--trim``, a dataset travels as the rows the notebooks read (:mod:`maelab.data.rows`; ``zhang_umae``'s
  Fashion-MNIST: 3.6 MiB instead of 25.2): the pack first runs their gpu dry run here through the device runner,
  every repeat of every loop, logging each load (:func:`traced_reads`), and carries the union of the rows those
  loads take; on the lent machine a load outside them stops its notebook with ``RowsNotCarried``, one line.
* ``wheels/``: Python 3.12 wheels of the packages the run imports that the machine lacks (:data:`WHEELS`, at the
  versions pinned in ``requirements.lock``), downloaded once with ``pip download`` into ``.cache/device/wheels``,
  with ``requirements.txt`` naming them.
* ``manifest.json``: the commit the pack was made at and whether the tree was dirty, the code fingerprint
  (:func:`maelab.device._common.code_fingerprint`), the notebooks and their sources' SHA-256, the profile, and the
  SHA-256 of every file in the folder.

The working tree (tracked and untracked-not-ignored files, as the device tool sends it) plus the folder must stay
under :data:`maelab.device._common.LIMIT_BYTES` (60 MiB): otherwise a one-line :class:`DeviceError` and the old
folder is kept. The folder is built beside the old one and swapped in when complete.
"""

from __future__ import annotations

import contextlib
import io
import json
import lzma
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from .. import paths
from .._validate import ParameterError, folder_path, one_of
from ..profiles import COMMITTED_PROFILES
from ._common import (
    LIMIT_BYTES,
    PACK_DIR,
    PACK_FORMAT,
    DeviceError,
    code_fingerprint,
    sha256_file,
    write_json,
)

#: Packages the run imports that the lent machine's image lacks (KINDS.md's list): wheels travel in the pack.
WHEELS = ("piq",)
DEVICE_PYTHON = "3.12"  # the lent machine's Python (the wheels are chosen for it)
XZ_PRESET = 9 | lzma.PRESET_EXTREME


# ----------------------------------------------------------------------------------------------- notebooks
def computing_notebooks(repo: Path) -> list[str]:
    """The notebooks a pack may name: the book's (``_toc.yml`` order, :func:`maelab.book.notebooks_in_order`) less
    those that only read other notebooks' results (:data:`maelab.book.LAST`, the scoreboard)."""
    from .. import book

    return [n for n in book.notebooks_in_order(repo) if n not in book.LAST]


def convert(src: Path) -> dict:
    """The code cells of a jupytext MyST notebook (``source``, ``tags``) and the index of its ``parameters`` cell."""
    import jupytext

    cells = [
        {"source": c.source, "tags": list(c.metadata.get("tags", []))}
        for c in jupytext.read(src).cells
        if c.cell_type == "code"
    ]
    params = [i for i, c in enumerate(cells) if "parameters" in c["tags"]]
    if not params:
        raise DeviceError(f"{src}: no code cell tagged 'parameters' (papermill and maelab.device inject after it)")
    return {"cells": cells, "parameters_cell": params[0]}


def datasets_named(notebooks: list[str], profile: str) -> list[str]:
    """The fetched datasets (:data:`maelab.data.packaged.NAMES`) that the notebooks' ``profile`` settings name,
    anywhere in a value (a list of datasets, a ``{dataset: value}`` dict, a single name), in first-named order."""
    from ..data import packaged
    from ..profiles import settings

    def strings(v):
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            for k, x in v.items():
                yield from strings(k)
                yield from strings(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                yield from strings(x)

    named = [s for nb in notebooks for s in strings(settings(nb, profile).as_dict()) if s in packaged.NAMES]
    return list(dict.fromkeys(named))


# ----------------------------------------------------------------------------------------------- datasets, wheels
def compressed_dataset(name: str, repo: Path, log=print) -> Path:
    """``<cache>/datasets/<name>-<sha12>.npz.xz``: the fetched dataset as an uncompressed npz (its arrays, hash and
    source, as ``python -m maelab.data fetch`` stores them), xz-compressed; made once per dataset hash."""
    import numpy as np

    from .._util import atomic_path
    from ..data import packaged

    arrays = packaged.read_arrays(name)  # DatasetNotFetched: one line naming the fetch command
    sha = str(arrays["sha256"])
    out = paths.cache_dir("device", repo) / "datasets" / f"{name}-{sha[:12]}.npz.xz"
    if out.is_file():
        return out
    log(f"[pack] {name}: compressing for the trip (once; cached in {out.parent})")
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    with atomic_path(out) as tmp:
        tmp.write_bytes(lzma.compress(buf.getvalue(), preset=XZ_PRESET))
    return out


def compressed_rows(name: str, index: dict, repo: Path) -> tuple[Path, dict]:
    """``<cache>/datasets/<name>-<sha12>-rows-<rows12>.npz.xz``: the rows ``index`` (``{split: row numbers}``,
    :func:`maelab.data.rows.needed_rows`) of the fetched dataset as a rows file, xz-compressed; made once per rows
    file. Returns (the file, the rows file's arrays)."""
    from .._util import atomic_path
    from ..data import packaged, rows

    arrays = rows.make_rows(name, packaged.read_arrays(name), index)
    out = paths.cache_dir("device", repo) / "datasets"
    out = out / f"{name}-{str(arrays['sha256'])[:12]}-rows-{str(arrays['rows_sha256'])[:12]}.npz.xz"
    if not out.is_file():
        with atomic_path(out) as tmp:
            tmp.write_bytes(lzma.compress(rows.to_bytes(arrays), preset=XZ_PRESET))
    return out, arrays


def traced_reads(notebooks: list[str], profile: str, carry: list[str], repo: Path, log=print) -> list[dict]:
    """The loads of fetched datasets (``{"name", "split", "n", "seed"}``) that the notebooks' dry run at
    ``profile`` makes here on the CPU: a full pack of ``carry`` in a temp folder, run by the device runner as the
    lent machine runs it (:func:`maelab.device.runner.run` with ``reads_log``: every repeat of every loop, so every
    seed's rows are read). A notebook that stops at a dataset not carried is traced up to there, as the lent
    machine will run it; any other failure is a one-line :class:`DeviceError` (fix the page before packing)."""
    from . import runner

    with tempfile.TemporaryDirectory(prefix="maelab-trace-") as tmp:
        tmp = Path(tmp)
        full = pack(notebooks, profile=profile, out=tmp / "pack", datasets=carry, wheels=False, repo=repo,
                    limit_bytes=1 << 62, log=lambda *a: None)  # fmt: skip
        reads = tmp / "reads.jsonl"
        log(f"[pack] tracing the rows that the {profile} dry run of {', '.join(notebooks)} reads (here, on the CPU)")
        _, m = runner.run(notebooks, out=tmp / "out", pack_dir=full, profile=profile, budget_min=120, device="cpu",
                          dry_run=True, reads_log=reads, repo=repo, log=lambda *a: None)  # fmt: skip
        for nb, o in m["run"]["notebooks"].items():
            stopped_at_uncarried = o["status"] == "failed" and "DatasetNotFetched" in o.get("error", "")
            if o["status"] != "finished" and not stopped_at_uncarried:
                raise DeviceError(
                    f"the dry run that traces the rows to carry did not finish {nb} ({o['status']}: "
                    f"{o.get('error', '')[:200]}); fix it, or pack without --trim"
                )
            if stopped_at_uncarried:
                log(f"[pack] {nb} stops at a dataset not carried; its reads up to there are traced")
        return [json.loads(ln) for ln in reads.read_text().splitlines() if ln.strip()] if reads.exists() else []


def _rows_text(counts: dict) -> str:
    return ", ".join(f"{split} {counts[split]}" for split in ("train", "test"))


def _rows_by_notebook(name: str, reads: list[dict]) -> str:
    """What each notebook reads of dataset ``name``, e.g. ``zhang_umae: train 8000, test 2000``: which pages make a
    dataset's rows, for choosing what to pack together."""
    from ..data import rows

    out = []
    for nb in dict.fromkeys(r.get("notebook") for r in reads if r.get("name") == name):
        index = rows.needed_rows(name, [r for r in reads if r.get("notebook") == nb])
        out.append(f"{nb}: {_rows_text({k: len(v) for k, v in index.items()})}")
    return "; ".join(out)


def pinned_version(name: str, repo: Path) -> str:
    """The version of ``name`` pinned in ``requirements.lock`` (what the results here are computed with)."""
    norm = name.lower().replace("_", "-")
    for line in (repo / "requirements.lock").read_text().splitlines():
        pkg, sep, ver = line.strip().partition("==")
        if sep and pkg.strip().lower().replace("_", "-") == norm:
            return ver.strip()
    raise DeviceError(f"{name} is not pinned in requirements.lock; pin it there to carry it to the lent machine")


def wheel(name: str, version: str, repo: Path, log=print) -> Path:
    """The cached wheel of ``name==version`` for Python 3.12 on x86-64 Linux, downloaded once with pip."""
    folder = paths.cache_dir("device", repo) / "wheels"
    stem = name.replace("-", "_")
    found = sorted(folder.glob(f"{stem}-{version}-*.whl"))
    if found:
        return found[-1]
    folder.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version"]
    cmd += [DEVICE_PYTHON, "--implementation", "cp", "--platform", "manylinux_2_28_x86_64", "--platform"]
    cmd += ["manylinux2014_x86_64", "-d", str(folder), f"{name}=={version}"]
    log(f"[pack] downloading the wheel of {name}=={version} for Python {DEVICE_PYTHON} (once)")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    found = sorted(folder.glob(f"{stem}-{version}-*.whl"))
    if proc.returncode != 0 or not found:
        last = next((ln for ln in reversed((proc.stderr + proc.stdout).splitlines()) if ln.strip()), "")
        raise DeviceError(f"pip download {name}=={version} failed ({last.strip()[:160]}); put the wheel in {folder}")
    return found[-1]


# ----------------------------------------------------------------------------------------------- sizes
def tree_bytes(repo: Path) -> int:
    """Bytes of what the device tool sends of the working tree: tracked and untracked-not-ignored files (``git
    ls-files``), links counted as links."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=repo,
            capture_output=True,
            timeout=60,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        raise DeviceError(
            f"cannot list the working tree of {repo} with git (a pack is made in a git checkout)"
        ) from None
    total = 0
    for rel in {r for r in out.decode(errors="surrogateescape").split("\0") if r}:
        with contextlib.suppress(FileNotFoundError):
            total += (repo / rel).lstat().st_size
    return total


def folder_bytes(folder: Path) -> int:
    return sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file() or p.is_symlink())


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


# ----------------------------------------------------------------------------------------------- pack
def _fill(tmp: Path, repo: Path, names: list[str], carry: list[str], wheels: bool, log, reads=None) -> dict:
    """Write programs, datasets and wheels into ``tmp``; return the manifest's entries for them. ``reads``: the
    traced loads (:func:`traced_reads`): each dataset goes as the rows they read, or not at all when none reads it;
    None: whole datasets."""
    from ..data import packaged, rows

    (tmp / "programs").mkdir()
    programs = {}
    for nb in names:
        src = repo / "notebooks" / f"{nb}.md"
        write_json(tmp / "programs" / f"{nb}.json", convert(src))
        programs[nb] = {"file": f"programs/{nb}.json", "source_sha256": sha256_file(src)}
    (tmp / "datasets").mkdir()
    datasets = {}
    for name in carry:
        entry = {"file": f"datasets/{name}.npz.xz", "arrays_sha256": packaged.SPECS[name].sha256}
        if reads is None:
            xz = compressed_dataset(name, repo, log)
        else:
            index = rows.needed_rows(name, reads)
            if not any(len(v) for v in index.values()):
                log(f"[pack] {name}: not read by the notebooks' dry run, not carried")
                continue
            xz, part = compressed_rows(name, index, repo)
            entry["file"] = f"datasets/{name}{rows.SUFFIX}.xz"
            entry["rows"] = {split: int(len(v)) for split, v in index.items()}
            entry["rows_sha256"] = str(part["rows_sha256"])
            log(f"[pack] {name}: {_rows_text(entry['rows'])} rows ({_rows_by_notebook(name, reads)})")
        shutil.copyfile(xz, tmp / entry["file"])
        datasets[name] = entry
    (tmp / "wheels").mkdir()
    reqs = []
    for name in WHEELS if wheels else ():
        version = pinned_version(name, repo)
        whl = wheel(name, version, repo, log)
        shutil.copyfile(whl, tmp / "wheels" / whl.name)
        reqs.append(f"{name}=={version}")
    (tmp / "requirements.txt").write_text("".join(r + "\n" for r in reqs))
    return {"programs": programs, "datasets": datasets, "requirements": reqs}


def pack(
    notebooks: list[str],
    *,
    profile: str = "gpu",
    out: str | os.PathLike | None = None,
    datasets: list[str] | None = None,
    wheels: bool = True,
    trim: bool = False,
    repo: Path | None = None,
    limit_bytes: int = LIMIT_BYTES,
    log=print,
) -> Path:
    """Fill the carried folder (default ``<repo>/.device``) for ``notebooks`` at ``profile``; returns the folder.

    ``datasets``: the fetched datasets to carry (default: every one the notebooks' settings name,
    :func:`datasets_named`); a notebook reaching one that is not carried stops there, its earlier results stored,
    which is how a notebook whose datasets do not fit in one pack is computed over several. ``wheels=False``
    carries no wheels (a dry run here needs none). ``trim``: each dataset goes as the rows the notebooks' dry run
    reads (:func:`traced_reads`, which runs it here first; a dataset it does not read stays behind). One-line
    :class:`DeviceError` / :class:`ParameterError` when a
    notebook, dataset or profile is unknown, a dataset is not fetched, or the tree plus the folder exceed
    ``limit_bytes``; the previous folder is then left as it was."""
    from .. import store
    from ..data import packaged

    repo = Path(repo) if repo is not None else paths.repo_root()
    one_of("profile", profile, COMMITTED_PROFILES)  # smoke results never leave this machine
    allowed = computing_notebooks(repo)
    if not notebooks:
        raise ParameterError("notebooks", "one or more of " + ", ".join(allowed), notebooks)
    for nb in notebooks:
        one_of("notebook", nb, allowed)
    names = list(dict.fromkeys(notebooks))
    carry = datasets_named(names, profile) if datasets is None else list(dict.fromkeys(datasets))
    for name in carry:
        one_of("dataset", name, packaged.NAMES)
    out = folder_path("out (--out)", out if out is not None else repo / PACK_DIR)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=".maelab-tmp-devicepack."))
    try:
        reads = traced_reads(names, profile, carry, repo, log) if trim and carry else None
        entries = _fill(tmp, repo, names, carry, wheels, log, reads)
        git = store.git_state(repo)
        manifest = {
            "format": PACK_FORMAT,
            "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
            "commit": git["commit"],
            "dirty": git["dirty"],
            "code_sha256": code_fingerprint(repo),
            "profile": profile,
            "notebooks": names,
            "datasets_named": datasets_named(names, profile),
            **entries,
            "files": {p.relative_to(tmp).as_posix(): sha256_file(p) for p in sorted(tmp.rglob("*")) if p.is_file()},
        }
        write_json(tmp / "manifest.json", manifest)
        size, tree = folder_bytes(tmp), tree_bytes(repo)
        if size + tree > limit_bytes:
            rows_read, carry_less = (", rows read", "pack fewer notebooks") if reads is not None else ("", "--trim")
            raise DeviceError(
                f"the working tree ({_mib(tree)}) plus the pack ({_mib(size)}: datasets "
                f"{', '.join(entries['datasets']) or 'none'}{rows_read}) exceed {_mib(limit_bytes)}; {carry_less}, "
                "or carry fewer datasets (--datasets: a notebook stops at the first one not carried, its earlier "
                "results stored)"
            )
        _swap(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log(
        f"[pack] {out}: {', '.join(names)} at profile {profile}, commit {git['commit'][:10]}"
        f"{' (dirty tree)' if git['dirty'] else ''}; datasets {', '.join(entries['datasets']) or 'none'}"
        f"{' (rows read)' if reads is not None else ''}; wheels "
        f"{', '.join(entries['requirements']) or 'none'}; tree {_mib(tree)} + pack {_mib(size)} of {_mib(limit_bytes)}"
    )
    return out


def _swap(new: Path, out: Path) -> None:
    """Put the complete folder ``new`` at ``out`` (the old one, if any, removed only once the new one is in place)."""
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(dir=out.parent, prefix=".maelab-tmp-devicepack-old."))
        os.replace(out, old / "pack")
    os.replace(new, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def load_manifest(pack_dir: Path) -> dict:
    """The pack's manifest, every file checked against its SHA-256 (one-line :class:`DeviceError` otherwise)."""
    from ._common import read_json

    m = read_json(pack_dir / "manifest.json", "pack manifest")
    if m.get("format") != PACK_FORMAT:
        raise DeviceError(f"{pack_dir}: pack format {m.get('format')!r} is not {PACK_FORMAT}; pack again")
    for rel, sha in (m.get("files") or {}).items():
        p = pack_dir / rel
        if not p.is_file() or sha256_file(p) != sha:
            raise DeviceError(f"{pack_dir}: {rel} is missing or changed since the pack (SHA-256); pack again")
    return m


def describe(m: dict) -> str:
    """One line: what a pack holds."""
    return json.dumps({k: m[k] for k in ("commit", "dirty", "profile", "notebooks") if k in m})
