"""Run, on the lent machine: the named notebooks' pending results until a time budget, then one archive of them.

``python -m maelab.device run [NOTEBOOK...] --profile gpu --budget-min 8 --out DIR [--device auto] [--dry-run]
[--calibrate]`` reads the carried folder (``.device/``, :mod:`maelab.device.pack`), checks that it is complete and
that the code and notebooks are the packed ones, prints the device and versions, unpacks the carried datasets to a
temp data dir, and then, notebook by notebook in the order given, runs the notebook's program: its code cells in
order with the run options injected after its ``parameters`` cell as the book's runner injects them (one parameter,
``run_options``: :meth:`maelab.options.RunOptions.to_param` of the profile, ``device``, the results folder, the
pack's commit, the dry run's caps), in a child process started in ``notebooks/`` whose first line installs the
compute-only kernel (:mod:`maelab.device.kernel`, told where to log the records the notebook asks for). The one
environment variable the child gets from maelab is ``MAELAB_DATA_DIR``: the carried datasets. Its run options also
set ``train_workers``, the pool that pre-trains a page's runs side by side (:mod:`maelab.prefetch`;
``--train-workers``, default :data:`TRAIN_WORKERS` on CUDA, 0 on a CPU), and ``store_parts``: the runs of a record
are stored as its parts (:mod:`maelab.parts`), so that a record cut off by the budget keeps its finished runs,
which travel back in the archive and are loaded by the next installment. The store loads
what is stored and computes what is not (:func:`maelab.store.load_or_compute`): the *pending* results, each
published all or nothing.

**Budget.** The children share one deadline (``--budget-min`` from the start). A child still running then gets
SIGTERM (the kernel turns it into ``KeyboardInterrupt``: the store's writer removes its temp folder and releases
its lock), then SIGKILL after a grace period; afterwards the results folders are cleaned of temp folders, lock
files and side files that no record names (a writer killed between publishing its side files and its JSON).
Every record left is complete and verified; the one being computed is lost and computed again by the next
installment, from the parts it had finished (:mod:`maelab.parts`).

**Output.** The new or changed records (JSON and side files; claims records are left out: they are derived from
the others and recomputed here by the book, :data:`maelab.store.NO_COMPUTE_EXEMPT`) go into one zip archive in
``--out`` with a manifest (:mod:`maelab.device.archive`): device, torch / CUDA / Python versions, the pack's commit,
each notebook's outcome (finished, stopped by the budget, failed with its last error line, not started) and the
records it asked for. The notebooks' output goes to ``<archive>.log`` beside it. No further notebook starts once
the new records reach :data:`ARCHIVE_FULL_BYTES` (the archive must come back as one file of at most 16 MiB).

A gpu run on a machine without CUDA is refused (a dry run excepted): this module never makes a gpu result on a CPU.
``--dry-run`` runs under the dry-run caps (:class:`maelab.options.DryRunLimits`, in the run options) with its
results in a temp folder, as ``python -m maelab.book run --dry-run`` does.
"""

from __future__ import annotations

import contextlib
import json
import lzma
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .. import paths
from .._validate import ParameterError, folder_path, one_of
from ..options import DryRunLimits, RunOptions
from ..prefetch import DEFAULT_GPU_WORKERS
from ..registry import installed
from ._common import SHARED_FOLDERS, DeviceError, code_fingerprint, machine, sha256_file
from .pack import PACK_DIR, load_manifest

GRACE_S = 20.0  # seconds between SIGTERM and SIGKILL at the budget
POLL_S = 1.0  # how often a running notebook's budget is checked
RETURN_LIMIT_BYTES = 16 << 20  # the largest file the lent machine gives back
#: No further notebook starts once the new records reach this: the archive (zip of mostly compressed npz) must come
#: back as one file of at most RETURN_LIMIT_BYTES.
ARCHIVE_FULL_BYTES = 12 << 20
#: The notebooks' pre-training pool on CUDA (:mod:`maelab.prefetch`).
TRAIN_WORKERS = DEFAULT_GPU_WORKERS
LOG_TAIL_BYTES = 4 << 20  # the run's log beside the archive keeps at most this much per notebook (its end)
#: A dry run that traces the loads runs every repeat of every loop (DryRunLimits.repeats): a page whose data rows
#: follow its seeds reads them all, as the gpu run will.
EVERY_REPEAT = 1 << 30


# ----------------------------------------------------------------------------------------------- programs
def program(
    cells: list[dict],
    parameters_cell: int,
    params: dict,
    notebook: str,
    record_log: str | None = None,
    reads_log: str | None = None,
) -> str:
    """The plain Python program of a notebook: the compute-only kernel (logging the records the notebook asks for
    to ``record_log`` and, if given, its loads of fetched datasets to ``reads_log``; JSON lines), then its code
    cells in order with ``params`` assigned right after the ``parameters`` cell (papermill's cell of injected
    parameters: ``run_options``, as the book's runner passes them) and, after them, the installed paper
    registry's ``bootstrap`` (what the book's runner injects into a kernel,
    :func:`maelab.book.runner.inject_registry`: the program's pages need every paper's settings and claim rows)."""
    lines = [
        f"# notebooks/{notebook}.md as a plain program (maelab.device): code cells in order, parameters injected",
        "from maelab.device.kernel import install as _maelab_device_install",
        "_maelab_device_install(record_log={!r}, reads_log={!r})".format(
            *(None if p is None else str(p) for p in (record_log, reads_log))
        ),
    ]
    for i, cell in enumerate(cells):
        lines += [f"# %% cell {i}" + (f" [{', '.join(cell['tags'])}]" if cell["tags"] else ""), cell["source"]]
        if i == parameters_cell:
            lines += ["# %% injected parameters (as papermill injects them)"]
            lines += [f"{k} = {v!r}" for k, v in params.items()]
            lines += ["# %% injected paper registry (as the book's runner injects it)", installed().bootstrap]
    return "\n".join(lines) + "\n"


def _check_tree(repo: Path, manifest: dict, notebooks: list[str]) -> None:
    if code_fingerprint(repo) != manifest["code_sha256"]:
        raise DeviceError(f"the code under {repo / 'src'} is not the packed code (fingerprint differs); pack again")
    for nb in notebooks:
        src = repo / "notebooks" / f"{nb}.md"
        if not src.is_file() or sha256_file(src) != manifest["programs"][nb]["source_sha256"]:
            raise DeviceError(f"notebooks/{nb}.md is missing or changed since the pack; pack again")


def unpack_datasets(pack_dir: Path, manifest: dict, dest: Path, log=print) -> Path:
    """Decompress the carried datasets into ``dest`` (a data dir for ``$MAELAB_DATA_DIR``), each checked by the
    loader's own hash check (:func:`maelab.data.packaged.read_arrays`; a dataset carried as rows,
    :mod:`maelab.data.rows`, by :func:`~maelab.data.rows.read_rows` and against the rows hash the pack wrote);
    returns ``dest``."""
    from ..data import packaged, rows

    dest.mkdir(parents=True, exist_ok=True)
    for name, entry in manifest.get("datasets", {}).items():
        one_of("carried dataset", name, packaged.NAMES)
        t0 = time.perf_counter()
        target = dest / (f"{name}{rows.SUFFIX}" if entry.get("rows") else f"{name}.npz")
        target.write_bytes(lzma.decompress((pack_dir / entry["file"]).read_bytes()))
        try:
            if entry.get("rows"):
                part = rows.read_rows(name, target)
                if str(part["rows_sha256"]) != entry.get("rows_sha256"):
                    raise ParameterError(f"{name} rows", "the rows the pack made", "other rows")
            else:
                packaged.read_arrays(name, dest)
        except ParameterError as e:
            raise DeviceError(f"carried dataset {name} does not check ({e}); pack again") from None
        rows_of = entry.get("rows")
        what = ", ".join(f"{k} {rows_of[k]}" for k in ("train", "test")) + " rows" if rows_of else "whole"
        log(f"[run] dataset {name} ({what}) unpacked and checked in {time.perf_counter() - t0:.1f} s")
    return dest


# ----------------------------------------------------------------------------------------------- results folders
def snapshot(root: Path, folders: list[str]) -> dict[str, str]:
    """``{folder/file: SHA-256}`` of the files of ``folders`` under ``root`` (temp and lock files left out)."""
    out = {}
    for f in folders:
        for p in sorted((root / f).glob("*")) if (root / f).is_dir() else ():
            if p.is_file() and not p.name.startswith("."):
                out[f"{f}/{p.name}"] = sha256_file(p)
    return out


def clean(root: Path, folders: list[str], before: dict[str, str]) -> list[str]:
    """Remove what a stopped writer can leave in ``folders``: temp files and folders, lock files, and side files
    that appeared since ``before`` and that no record names. Returns what was removed (relative paths)."""
    from .._util import TMP_PREFIX
    from ..store import LOCK_PREFIX

    removed = []
    for f in folders:
        folder = root / f
        if not folder.is_dir():
            continue
        named = set()
        for j in folder.glob("*.json"):
            with contextlib.suppress(OSError, ValueError, AttributeError, TypeError):
                rec = json.loads(j.read_text())
                named |= {m["file"] for m in (rec.get("frames") or {}).values()}
                named |= {rec["arrays"]["file"]} if rec.get("arrays") else set()
        for p in sorted(folder.iterdir()):
            rel = f"{f}/{p.name}"
            stray_side = p.suffix in (".csv", ".npz") and p.name not in named and rel not in before
            if p.name.startswith((TMP_PREFIX, LOCK_PREFIX)) or stray_side:
                shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
                removed.append(rel)
    return removed


def new_records(root: Path, folders: list[str], before: dict[str, str]) -> list[dict]:
    """The records of ``folders`` that are new or changed since ``before``, verified (:func:`maelab.store.load`):
    ``{"folder", "json", "sides"}`` each; claims records (derived, :data:`maelab.store.NO_COMPUTE_EXEMPT`) left out."""
    from .. import store

    out = []
    now = snapshot(root, folders)
    for rel in sorted(r for r in now if r.endswith(".json") and before.get(r) != now[r]):
        folder, fname = rel.split("/", 1)
        name, profile = fname[: -len(".json")].rsplit(".", 1)
        if name in store.NO_COMPUTE_EXEMPT:
            continue
        store.load(folder, name, profile, root=root)  # RecordError if it does not verify
        rec = json.loads((root / rel).read_text())
        sides = [m["file"] for m in (rec.get("frames") or {}).values()]
        sides += [rec["arrays"]["file"]] if rec.get("arrays") else []
        out.append({"folder": folder, "json": fname, "sides": sides})
    return out


# ----------------------------------------------------------------------------------------------- one notebook
def _stop(proc: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM to the child's process group, SIGKILL after ``grace_s`` seconds if it is still there."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _budget_left(deadline: float) -> float:
    """Seconds left before ``deadline`` (``time.monotonic``). Test seam: tests/test_device.py replaces it to end the
    budget at a chosen point of a run instead of at a time that depends on the machine's speed."""
    return deadline - time.monotonic()


def run_program(script: Path, cwd: Path, env: dict, deadline: float, out_log: Path, grace_s: float) -> dict:
    """Run one notebook program until it ends or ``deadline`` (``time.monotonic``); its outcome."""
    t0 = time.monotonic()
    with open(out_log, "wb") as out:
        # run by path but not as __main__: a process the program spawns (maelab.prefetch's workers) would otherwise
        # import the main module, i.e. run the whole program again
        cmd = [sys.executable, "-c", "import runpy, sys; runpy.run_path(sys.argv[1], run_name='maelab_program')"]
        cmd.append(str(script))
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        while True:
            left = _budget_left(deadline)
            if left <= 0:
                _stop(proc, grace_s)
                return {"status": "stopped", "seconds": round(time.monotonic() - t0, 1), "returncode": proc.returncode}
            try:
                rc = proc.wait(timeout=min(left, POLL_S))
                break
            except subprocess.TimeoutExpired:
                continue
    status = "finished" if rc == 0 else "failed"
    outcome = {"status": status, "seconds": round(time.monotonic() - t0, 1), "returncode": rc}
    if rc:
        tail = out_log.read_bytes()[-4000:].decode(errors="replace").splitlines()
        outcome["error"] = next((ln.strip() for ln in reversed(tail) if ln.strip()), "")[:300]
        if "DatasetNotFetched" in outcome["error"]:  # on the lent machine nothing can be fetched: carry it
            outcome["error"] += " -- not carried: pack it (python -m maelab.device pack ... --datasets NAME)"
        elif "RowsNotCarried" in outcome["error"]:
            outcome["error"] += " -- pack it again (python -m maelab.device pack ... without --trim)"
    return outcome


def _records_asked(log_path: Path) -> list[dict]:
    if not log_path.exists():
        return []
    events = [json.loads(ln) for ln in log_path.read_text().splitlines() if ln.strip()]
    done = {(e["name"], e["config_hash"]) for e in events if e["event"] == "done"}
    out = [e for e in events if e["event"] == "done"]
    out += [
        {**e, "event": "unfinished"}
        for e in events
        if e["event"] == "start" and (e["name"], e["config_hash"]) not in done
    ]
    return out


# ----------------------------------------------------------------------------------------------- run
def _env(src: Path, data: Path) -> dict:
    """The children's environment: this one, with the code on ``PYTHONPATH``, unbuffered output, matplotlib's Agg
    backend and the carried datasets as the data dir (``MAELAB_DATA_DIR``, :func:`maelab.paths.data_dir`).
    Everything else a child needs travels in its run options."""
    env = dict(os.environ)
    env.update(
        {
            "PYTHONPATH": os.pathsep.join([str(src), *filter(None, [os.environ.get("PYTHONPATH")])]),
            "PYTHONUNBUFFERED": "1",
            "MPLBACKEND": "Agg",
            paths.DATA_DIR_ENV: str(data),
        }
    )
    return env


def run_options(
    manifest: dict, device: str, root: Path, scratch: Path | None, train_workers: int = 0, every_repeat: bool = False
) -> RunOptions:
    """The run options of every notebook program: the pack's profile, ``device``, no progress bars, the results
    folder ``root``, the pack's commit (the copy of the tree here has no ``.git``), in a dry run its caps with
    ``scratch`` as the scratch folder (``every_repeat``: with no cap on repeats, :data:`EVERY_REPEAT`, so that a
    trace of the loads sees every seed's), the pre-training pool (``train_workers``) and parts stored
    (``store_parts``)."""
    commit = str(manifest.get("commit", ""))
    git = (
        (commit, bool(manifest.get("dirty"))) if len(commit) == 40 and set(commit) <= set("0123456789abcdef") else None
    )
    return RunOptions(
        profile=manifest["profile"],
        device=device,
        progress=False,
        results_root=str(root),
        dry_run=(
            DryRunLimits(scratch=str(scratch), **({"repeats": EVERY_REPEAT} if every_repeat else {}))
            if scratch is not None
            else None
        ),
        git=git,
        train_workers=train_workers,
        store_parts=True,
    )


def _plan(pack_dir, notebooks, profile, device, dry_run, repo) -> tuple[dict, list[str], dict]:
    """Check the pack against the request and this machine; (pack manifest, notebooks, machine)."""
    manifest = load_manifest(pack_dir)
    if profile != manifest["profile"]:
        raise ParameterError("--profile", f"the pack's profile {manifest['profile']!r}", profile)
    notebooks = list(notebooks or manifest["notebooks"])
    for nb in notebooks:
        one_of("notebook", nb, manifest["notebooks"])
    _check_tree(repo, manifest, notebooks)
    here = machine(device)
    if profile == "gpu" and here["device_type"] != "cuda" and not dry_run:
        raise DeviceError(
            f"profile gpu needs a CUDA device and this run has {here['device']}: gpu results are never computed on "
            "a CPU; add --dry-run to check the gpu settings here"
        )
    if profile == "cpu" and here["device_type"] != "cpu":
        raise DeviceError(
            f"profile cpu computes on the CPU, as every cpu result does, and this run has {here['device']}; add "
            "--device cpu"
        )
    return manifest, notebooks, here


def run(
    notebooks: list[str] | None = None,
    *,
    out: str | os.PathLike,
    pack_dir: str | os.PathLike | None = None,
    profile: str = "gpu",
    budget_min: float = 8.0,
    device: str = "auto",
    dry_run: bool = False,
    calibrate: bool = False,
    results_dir: str | os.PathLike | None = None,
    train_workers: int | None = None,
    reads_log: str | os.PathLike | None = None,
    repo: Path | None = None,
    grace_s: float = GRACE_S,
    log=print,
) -> tuple[Path, dict]:
    """Compute the pending results of ``notebooks`` (default: the pack's) until ``budget_min`` minutes have passed;
    returns (the archive, its manifest). See the module docstring. ``results_dir``: the results root (default the
    store's, ``data/results``; a dry run always uses its temp folder); ``calibrate``: first time the gpu profile's
    training steps (:func:`maelab.device.calibrate.calibrate`) and archive the calibration record too;
    ``train_workers``: the notebooks' pre-training pool (:mod:`maelab.prefetch`; default :data:`TRAIN_WORKERS` on
    CUDA, none on a CPU); ``reads_log``: a dry run that logs every load of a fetched dataset to this file (JSON
    lines, :func:`maelab.device.kernel.install`, each with its notebook's name) and runs every repeat of every
    loop, what ``pack --trim`` reads (every notebook, however large its records: no archive travels)."""
    from .. import store
    from .archive import write_archive

    repo = Path(repo) if repo is not None else paths.repo_root()
    pack_dir = Path(pack_dir) if pack_dir is not None else repo / PACK_DIR
    if calibrate and profile != "gpu":
        raise ParameterError("--calibrate", "used with --profile gpu (a calibration is the gpu plan's)", profile)
    if not isinstance(budget_min, (int, float)) or not budget_min > 0:
        raise ParameterError("--budget-min", "a number of minutes > 0", budget_min)
    if reads_log is not None and not dry_run:
        raise ParameterError("reads_log", "used with a dry run (it traces a dry run's loads)", reads_log)
    out = folder_path("out (--out)", out)
    manifest, notebooks, here = _plan(pack_dir, notebooks, profile, device, dry_run, repo)
    if train_workers is None:
        train_workers = TRAIN_WORKERS if here["device_type"] == "cuda" else 0
    if not isinstance(train_workers, int) or isinstance(train_workers, bool) or train_workers < 0:
        raise ParameterError("--train-workers", "a whole number of processes >= 0", train_workers)
    t_start, deadline = time.time(), time.monotonic() + 60.0 * budget_min
    log(
        f"[run] {here['device']} ({here['device_type']}) · torch {here['torch']} · CUDA {here['cuda'] or '-'} · "
        f"Python {here['python']} · pack {manifest['commit'][:10]}{' (dirty)' if manifest['dirty'] else ''} · "
        f"budget {budget_min:g} min · {train_workers} pre-training workers{' · DRY RUN' if dry_run else ''}"
    )
    work = Path(tempfile.mkdtemp(prefix="maelab-device-run-"))
    try:
        data = unpack_datasets(pack_dir, manifest, work / "data", log)
        scratch = (work / "dry-run") if dry_run else None
        root = (scratch / "results") if dry_run else Path(results_dir or store.results_root(profile)).resolve()
        options = run_options(manifest, device, root, scratch, train_workers, every_repeat=reads_log is not None)
        folders = list(notebooks) + list(SHARED_FOLDERS) + (["plan"] if calibrate else [])
        before = snapshot(root, folders)
        outcomes: dict[str, dict] = {}
        if calibrate:
            outcomes["plan"] = _calibrate(root, options, deadline, log)
        env = _env(repo / "src", data)
        for nb in notebooks:
            if reads_log is None and _new_bytes(root, folders, before) > ARCHIVE_FULL_BYTES:  # a trace goes on
                outcomes[nb] = {"status": "not started", "seconds": 0.0, "records": [], "error": "archive full"}
                continue
            outcomes[nb] = _one(nb, pack_dir, manifest, repo, env, work, options, deadline, grace_s, reads_log)
            removed = clean(root, folders, before)
            _report(nb, outcomes[nb], removed, log)
        records = new_records(root, folders, before)
        run_info = {
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t_start)),
            "budget_min": budget_min,
            "seconds": round(time.time() - t_start, 1),
            "dry_run": dry_run,
            "device_arg": device,
            "train_workers": train_workers,
            "profile": profile,
            "notebooks": outcomes,
        }
        logs = [(nb, work / f"{nb}.out") for nb in notebooks]
        archive, amanifest = write_archive(out, root, records, machine=here, pack=manifest, run=run_info, logs=logs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    size = archive.stat().st_size
    log(f"[run] {len(records)} new records -> {archive} ({size / 2**20:.1f} MiB)")
    if size > RETURN_LIMIT_BYTES:
        log(f"[run] WARNING: the archive exceeds the {RETURN_LIMIT_BYTES >> 20} MiB a file may come back with")
    return archive, amanifest


def _new_bytes(root: Path, folders: list[str], before: dict[str, str]) -> int:
    """Bytes of the files of ``folders`` that are new or changed since ``before`` (what the archive will hold)."""
    now = snapshot(root, folders)
    return sum((root / rel).stat().st_size for rel, sha in now.items() if before.get(rel) != sha)


def _report(nb: str, outcome: dict, removed: list[str], log) -> None:
    computed = sum(1 for r in outcome["records"] if r["event"] == "done" and not r["from_store"])
    unfinished = [r["name"] for r in outcome["records"] if r["event"] == "unfinished"]
    line = f"[run] {nb}: {outcome['status']} after {outcome['seconds']} s, {computed} records computed"
    how = "cut off" if outcome["status"] == "stopped" else "failed"
    line += f"; {how} while computing {', '.join(unfinished)}" if unfinished else ""
    line += f"; cleaned {', '.join(removed)}" if removed else ""
    log(line + (f"; {outcome['error']}" if outcome.get("error") else ""))


def _one(nb, pack_dir, manifest, repo, env, work, options: RunOptions, deadline, grace_s, reads_log=None) -> dict:
    """Run notebook ``nb``'s program (or note that the budget is spent); its outcome with the records it asked for
    (its loads of fetched datasets appended to ``reads_log`` with the notebook's name, when given)."""
    if _budget_left(deadline) <= 0:
        return {"status": "not started", "seconds": 0.0, "records": []}
    prog = json.loads((pack_dir / manifest["programs"][nb]["file"]).read_text())
    params = {"run_options": options.to_param()}
    script, record_log, reads = work / f"{nb}.py", work / f"{nb}.records.jsonl", work / f"{nb}.reads.jsonl"
    script.write_text(program(prog["cells"], prog["parameters_cell"], params, nb, str(record_log),
                              None if reads_log is None else str(reads)))  # fmt: skip
    outcome = run_program(script, repo / "notebooks", env, deadline, work / f"{nb}.out", grace_s)
    outcome["records"] = _records_asked(record_log)
    if reads_log is not None and reads.exists():
        with open(reads_log, "a") as f:
            for ln in reads.read_text().splitlines():
                f.write(json.dumps({**json.loads(ln), "notebook": nb}) + "\n")
    return outcome


def _calibrate(root: Path, options: RunOptions, deadline: float, log) -> dict:
    """Time the profile's training steps in this process and store the calibration under ``root`` (in a dry run,
    under its scratch folder, where the store lets a dry run write; the caps go to the trainer). Not in a real run
    whose stored calibration is already this device's for today's plan (:func:`maelab.device.calibrate.current`):
    status "kept"."""
    from .calibrate import calibrate, current

    if _budget_left(deadline) <= 0:
        return {"status": "not started", "seconds": 0.0, "records": []}
    t0 = time.monotonic()
    dry = options.dry_run is not None
    got = None if dry else current(device=options.device, root=root)
    if got is not None:  # this kind is calibrated for today's plan: its minutes go to results
        log(f"[calibrate] kept: {got['device_name']} is calibrated for this plan ({got.provenance['timestamp']})")
        return {"status": "kept", "seconds": round(time.monotonic() - t0, 1), "records": []}
    res = calibrate(device=options.device, root=root, allow_cpu=dry, log=log, options=options)
    done = {"event": "done", "name": res.name, "config_hash": res.provenance["config_hash"], "from_store": False}
    return {"status": "finished", "seconds": round(time.monotonic() - t0, 1), "records": [done]}
