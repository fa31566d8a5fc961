"""The archive a run brings back, and its import here (``python -m maelab.store import ARCHIVE``).

**Archive** (one zip file, :func:`write_archive`): ``manifest.json`` and the new records as ``<folder>/<file>``
(the record's JSON and its side files, byte for byte as the store wrote them). The manifest names the machine
(device, CUDA or not, torch / CUDA / Python versions), the pack (commit, dirty flag, code fingerprint, profile,
notebooks), the run (budget, dry run, each notebook's outcome and the records it asked for), the folders the
archive may write to, and the SHA-256 of every other member. The notebooks' output is written beside it as
``<archive>.log`` (the last :data:`maelab.device.runner.LOG_TAIL_BYTES` of each), never imported.

**Import** (:func:`import_archive`) trusts nothing in the file: no member is executed or unpickled (JSON, CSV
and npz with ``allow_pickle=False``, through the store's own reader), and every check passes before anything is
written. One-line :class:`ArchiveError` when

* the zip or its manifest is unreadable, of another format, or larger than :data:`MAX_BYTES` unpacked;
* a member is not ``<folder>/<file>`` with ``<folder>`` among the manifest's folders (each a notebook of the pack,
  ``plan`` for a calibration, or a shared folder, ``SHARED_FOLDERS``: the zoo's entries) and a plain file name, or
  is not listed, or its SHA-256 differs from the listed one;
* a record does not verify (:func:`maelab.store.load`: its checksum, its side files), a side file is named by no
  record, or the record's provenance does not match the manifest (notebook, name, profile, device, torch version,
  the pack's commit);
* the pack's commit is not in this repository's history (``git merge-base --is-ancestor COMMIT HEAD``);
* the target is the committed ``data/results`` and the archive is a dry run, was made from a dirty tree (unless
  ``allow_dirty``), or holds gpu results computed without CUDA;
* a record is already stored with other bytes (unless ``replace``).

Then each record is installed as the store publishes one (under its lock: side files first, the JSON last, each
by an atomic rename), and verified where it landed. A record stored with the same bytes is left as it is. Last,
the parts of the records now stored (``<record>__<run>``, :mod:`maelab.parts`, kept by earlier installments) are
removed from the folders the archive wrote to, where they belong to the stored record's config
(:func:`maelab.parts.prune`).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from datetime import UTC, datetime
from pathlib import Path

from .. import parts, paths
from ._common import ARCHIVE_FORMAT, SAFE_FILE, SAFE_FOLDER, SHARED_FOLDERS, DeviceError, sha256_bytes, sha256_file

MAX_BYTES = 1 << 30  # an archive never unpacks to more than this (the lent machine returns at most 64 MiB)
MANIFEST = "manifest.json"


class ArchiveError(DeviceError):
    """An archive that cannot be imported; the message is one line saying why. Nothing was written."""


# ----------------------------------------------------------------------------------------------- writing
def archive_name(profile: str, when: datetime | None = None) -> str:
    when = when or datetime.now(UTC)
    return f"maelab-{profile}-{when.strftime('%Y%m%dT%H%M%SZ')}.zip"


def write_archive(
    out: Path, root: Path, records: list[dict], *, machine: dict, pack: dict, run: dict, logs=()
) -> tuple[Path, dict]:
    """Zip ``records`` (``{"folder", "json", "sides"}`` under ``root``) with their manifest into ``out``; returns
    (archive path, manifest). The zip is written to a temp name and renamed when complete."""
    from .._util import atomic_path

    shared = {r["folder"] for r in records} & set(SHARED_FOLDERS)  # the shared folders it holds records of
    folders = sorted(set(pack["notebooks"]) | shared | ({"plan"} if "plan" in run["notebooks"] else set()))
    files = {}
    for r in records:
        for fname in [*r["sides"], r["json"]]:
            files[f"{r['folder']}/{fname}"] = sha256_file(root / r["folder"] / fname)
    manifest = {
        "format": ARCHIVE_FORMAT,
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine,
        "pack": {
            **{k: pack[k] for k in ("commit", "dirty", "code_sha256", "profile", "notebooks", "created_utc")},
            # what data travelled: whole datasets, or the rows a trimmed pack carried (their counts and hash)
            "datasets": {n: {k: v for k, v in e.items() if k != "file"} for n, e in pack.get("datasets", {}).items()},
        },
        "run": run,
        "folders": folders,
        "records": [f"{r['folder']}/{r['json']}" for r in records],
        "files": files,
    }
    out.mkdir(parents=True, exist_ok=True)
    path = out / archive_name(pack["profile"])
    with atomic_path(path) as tmp:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
            z.writestr(MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
            for rel in files:
                z.write(root / rel, rel)
        os.chmod(tmp, 0o644)
    from .runner import LOG_TAIL_BYTES

    with atomic_path(path.with_suffix(".log")) as tmp:
        with open(tmp, "wb") as f:
            for nb, p in logs:
                f.write(f"==== {nb} ====\n".encode())
                f.write(p.read_bytes()[-LOG_TAIL_BYTES:] if p.exists() else b"(no output)\n")
        os.chmod(tmp, 0o644)
    return path, manifest


# ----------------------------------------------------------------------------------------------- reading
def _read_zip(path: Path) -> tuple[dict, dict[str, bytes]]:
    """(manifest, {member: bytes}) of an archive, after the checks on names, sizes and checksums."""
    try:
        z = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as e:
        raise ArchiveError(f"{path}: not a readable zip archive ({type(e).__name__})") from None
    with z:
        infos = z.infolist()
        if sum(i.file_size for i in infos) > MAX_BYTES:
            raise ArchiveError(f"{path}: unpacks to more than {MAX_BYTES >> 20} MiB; refused")
        names = [i.filename for i in infos]
        if len(set(names)) != len(names):
            raise ArchiveError(f"{path}: a member name appears twice")
        if MANIFEST not in names:
            raise ArchiveError(f"{path}: no {MANIFEST}; not an archive of maelab.device")
        try:
            manifest = json.loads(z.read(MANIFEST))
            members = {i.filename: z.read(i) for i in infos if i.filename != MANIFEST}
        except (ValueError, zipfile.BadZipFile, OSError) as e:
            raise ArchiveError(f"{path}: unreadable ({type(e).__name__})") from None
    _check_manifest(path, manifest)
    for name in members:
        _check_member(path, name, manifest["folders"])
    listed = manifest["files"]
    if set(members) != set(listed):
        extra = sorted(set(members) ^ set(listed))
        raise ArchiveError(f"{path}: members and the manifest's file list differ ({', '.join(extra[:3])})")
    for name, b in members.items():
        if sha256_bytes(b) != listed[name]:
            raise ArchiveError(f"{path}: {name} was changed (SHA-256 differs from the manifest's)")
    return manifest, members


def _check_manifest(path: Path, m) -> None:
    if not isinstance(m, dict) or m.get("format") != ARCHIVE_FORMAT:
        raise ArchiveError(f"{path}: archive format {m.get('format') if isinstance(m, dict) else m!r} is not 1")
    need = {"machine": dict, "pack": dict, "run": dict, "folders": list, "records": list, "files": dict}
    for key, kind in need.items():
        if not isinstance(m.get(key), kind):
            raise ArchiveError(f"{path}: manifest field {key!r} is missing or not a {kind.__name__}")
    allowed = set(m["pack"].get("notebooks") or []) | {"plan", *SHARED_FOLDERS}
    for f in m["folders"]:
        if not isinstance(f, str) or not SAFE_FOLDER.match(f) or f not in allowed:
            raise ArchiveError(f"{path}: folder {f!r} is not a notebook of the pack (or plan, or a shared folder)")
    commit = m["pack"].get("commit")
    if not isinstance(commit, str) or not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise ArchiveError(f"{path}: the pack's commit {commit!r} is not a git commit id")


def _check_member(path: Path, name: str, folders: list[str]) -> None:
    parts = name.split("/")
    if (
        len(parts) != 2
        or parts[0] not in folders
        or not SAFE_FILE.match(parts[1])
        or parts[1] in (".", "..")
        or "\\" in name
    ):
        raise ArchiveError(f"{path}: member {name!r} is not <folder>/<file> in the archive's folders; refused")


def _check_commit(path: Path, commit: str, repo: Path) -> None:
    try:
        r = subprocess.run(
            ["git", "merge-base", "--is-ancestor", commit, "HEAD"], cwd=repo, capture_output=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        raise ArchiveError(f"{path}: cannot ask git whether commit {commit[:10]} is in this history") from None
    if r.returncode != 0:
        raise ArchiveError(f"{path}: the pack's commit {commit[:10]} is not in this repository's history (HEAD)")


def _check_records(path: Path, manifest: dict, stage: Path) -> list[tuple[str, str, list[str]]]:
    """Verify every staged record and its provenance; (folder, json name, side files) each."""
    from .. import store

    out, named = [], set()
    mach, pack = manifest["machine"], manifest["pack"]
    for rel in manifest["records"]:
        if not isinstance(rel, str) or rel not in manifest["files"] or not rel.endswith(".json"):
            raise ArchiveError(f"{path}: record {rel!r} is not a JSON member of the archive")
        folder, fname = rel.split("/", 1)
        name, _, profile = fname[: -len(".json")].rpartition(".")
        try:
            res = store.load(folder, name, profile, root=stage)
        except (store.RecordError, ValueError) as e:
            raise ArchiveError(f"{path}: {rel} does not verify ({str(e).split(': ', 1)[-1]})") from None
        p = res.provenance
        want = {
            "notebook": folder,
            "name": name,
            "profile": pack["profile"],
            "device": mach.get("device"),
            "torch": mach.get("torch"),
            "commit": pack["commit"],
        }
        got = {
            "notebook": p.get("notebook"),
            "name": p.get("name"),
            "profile": p.get("profile"),
            "device": p.get("device"),
            "torch": (p.get("versions") or {}).get("torch"),
            "commit": (p.get("git") or {}).get("commit"),
        }
        if mach.get("device_type") == "cpu":  # a pool's one-thread workers ran on the archive's machine
            got["device"], want["device"] = _cpu_machine(got["device"]), _cpu_machine(want["device"])
        for key in want:
            if got[key] != want[key]:
                raise ArchiveError(f"{path}: {rel}: provenance {key} {got[key]!r} is not the archive's {want[key]!r}")
        rec = json.loads((stage / rel).read_text())
        sides = [m["file"] for m in (rec.get("frames") or {}).values()] + (
            [rec["arrays"]["file"]] if rec.get("arrays") else []
        )
        named |= {f"{folder}/{s}" for s in sides} | {rel}
        out.append((folder, fname, sides))
    stray = sorted(set(manifest["files"]) - named)
    if stray:
        raise ArchiveError(f"{path}: {stray[0]} is named by no record of the archive")
    return out


def _cpu_machine(device):
    """A CPU device's name (:func:`maelab._util.device_name`: ``cpu (<processor>, <n> cores, <t> threads)``) without
    its thread count: the records a CPU run's pool computed name their one-thread workers, the archive the main
    process; the machine (processor, cores) must still be the archive's."""
    return re.sub(r", \d+ threads\)$", ")", device) if isinstance(device, str) else device


def _check_target(path: Path, manifest: dict, root: Path, committed: Path, allow_dirty: bool) -> None:
    if Path(root).resolve() != Path(committed).resolve():
        return
    run, pack, mach = manifest["run"], manifest["pack"], manifest["machine"]
    if run.get("dry_run"):
        raise ArchiveError(f"{path}: a dry run's results (capped steps) never go into {committed}")
    if pack.get("dirty") and not allow_dirty:
        raise ArchiveError(
            f"{path}: packed from a dirty tree (code not in commit {pack['commit'][:10]}); --allow-dirty to import"
        )
    if pack.get("profile") == "gpu" and mach.get("device_type") != "cuda":
        raise ArchiveError(f"{path}: gpu results computed on {mach.get('device')!r}, not on a CUDA device; refused")


# ----------------------------------------------------------------------------------------------- import
def import_archive(
    path: str | os.PathLike,
    *,
    root: str | os.PathLike | None = None,
    replace: bool = False,
    allow_dirty: bool = False,
    repo: Path | None = None,
    log=print,
) -> list[str]:
    """Check and install an archive's records into ``root`` (default :func:`maelab.store.results_root`, i.e.
    ``data/results``); returns the records installed (``folder/file``). See the module docstring."""
    from .. import store

    path = Path(path)
    repo = Path(repo) if repo is not None else paths.repo_root()
    root = Path(root) if root is not None else store.results_root(None)
    manifest, members = _read_zip(path)
    _check_commit(path, manifest["pack"]["commit"], repo)
    _check_target(path, manifest, root, paths.committed_results(repo), allow_dirty)
    stage = Path(tempfile.mkdtemp(prefix="maelab-import-"))
    try:
        for name, b in members.items():
            (stage / name).parent.mkdir(parents=True, exist_ok=True)
            (stage / name).write_bytes(b)
        records = _check_records(path, manifest, stage)
        todo = []
        for folder, fname, sides in records:
            target = root / folder / fname
            if target.exists() and target.read_bytes() == members[f"{folder}/{fname}"]:
                log(f"[import] {folder}/{fname}: already stored, the same bytes")
                continue
            if target.exists() and not replace:
                raise ArchiveError(f"{path}: {folder}/{fname} is stored with other values; --replace to overwrite it")
            todo.append((folder, fname, sides))
        for folder, fname, sides in todo:
            _install(stage, root, folder, fname, sides)
            log(f"[import] {folder}/{fname}: installed")
        for folder in sorted({f for f, _, _ in records}):  # parts whose record is now stored are redundant
            parts.prune(root / folder, log=log)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    m, commit = manifest["machine"], manifest["pack"]["commit"][:10]
    log(
        f"[import] {path.name}: {len(todo)} of {len(records)} records installed into {root} (computed on "
        f"{m.get('device')}, torch {m.get('torch')}, CUDA {m.get('cuda') or '-'}, pack {commit})"
    )
    return [f"{f}/{j}" for f, j, _ in todo]


def _install(stage: Path, root: Path, folder: str, fname: str, sides: list[str]) -> None:
    """Publish one verified record as the store does: under its lock, side files first, the JSON last."""
    from .. import store
    from .._util import atomic_path

    dest = root / folder
    store.check_writable(dest)
    stem = fname[: -len(".json")]
    with store.lock(dest, stem):
        for s in [*sides, fname]:
            with atomic_path(dest / s) as tmp:
                shutil.copyfile(stage / folder / s, tmp)
        store._cleanup(dest, stem, keep=set(sides))
    name, _, profile = stem.rpartition(".")
    store.load(folder, name, profile, root=root)  # verify where it landed


def read_manifest(path: str | os.PathLike) -> dict:
    """The manifest of an archive, after every check of :func:`import_archive` that needs no repository."""
    return _read_zip(Path(path))[0]


def summary(manifest: dict) -> str:
    """One line per notebook of a run: its outcome."""
    buf = io.StringIO()
    for nb, o in manifest["run"]["notebooks"].items():
        buf.write(f"{nb}: {o.get('status')} ({o.get('seconds')} s){'; ' + o['error'] if o.get('error') else ''}\n")
    return buf.getvalue()
