"""GPU results by installments (issue 25), on the CPU: pack -> run (dry run, ``--device cpu``) -> import, a run
stopped by its budget leaving only complete records, the pack's size limit, the import's refusals, the carried
datasets, the calibration and the cost model, the progress helper. No test computes or stores a GPU result."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import stand_in_dogcat

from maelab import cost, paths, store, store_admin
from maelab._validate import ParameterError
from maelab.device import ArchiveError, DeviceError, import_archive, read_manifest
from maelab.device import archive as arch
from maelab.device import pack as pk
from maelab.device import runner as rn
from maelab.device._common import LIMIT_BYTES, sha256_bytes, sha256_file
from maelab.options import DryRunLimits, RunOptions

ROOT = paths.repo_root()


def _quiet(*args, **kwargs):
    pass


@pytest.fixture(scope="module")
def dry(tmp_path_factory):
    """One pack of ``masking`` (no wheels) and its gpu dry run on this CPU: (pack folder, archive, manifest)."""
    tmp = tmp_path_factory.mktemp("device")
    pack_dir = pk.pack(["masking"], out=tmp / "pack", wheels=False, log=_quiet)
    archive, manifest = rn.run(
        ["masking"], out=tmp / "out", pack_dir=pack_dir, budget_min=5, device="cpu", dry_run=True, log=_quiet
    )
    return pack_dir, archive, manifest


# ----------------------------------------------------------------------------------------------- round trip
def test_pack_run_import_round_trip(dry, tmp_path):
    pack_dir, archive, manifest = dry
    m = json.loads((pack_dir / "manifest.json").read_text())
    assert m["notebooks"] == ["masking"] and m["profile"] == "gpu" and len(m["commit"]) == 40
    assert pk.tree_bytes(ROOT) + pk.folder_bytes(pack_dir) <= LIMIT_BYTES
    outcome = manifest["run"]["notebooks"]["masking"]
    assert outcome["status"] == "finished", outcome
    assert manifest["run"]["dry_run"] and manifest["machine"]["device_type"] == "cpu"
    assert manifest["run"]["train_workers"] == 0  # no pre-training pool on a CPU (maelab.prefetch)
    names = sorted(Path(r).name for r in manifest["records"])
    assert names == ["identity_1d.gpu.json", "spectra_2d.gpu.json"]  # claims records stay behind (derived)
    assert archive.with_suffix(".log").read_text().startswith("==== masking ====")
    root = tmp_path / "results"
    installed = import_archive(archive, root=root, log=_quiet)
    assert sorted(installed) == [f"masking/{n}" for n in names]
    for n in names:
        got = store.load("masking", n.split(".")[0], "gpu", root=root)
        assert (
            got.provenance["git"]["commit"] == m["commit"] and got.provenance["device"] == manifest["machine"]["device"]
        )
    assert store_admin.check(root, log=_quiet) == 0
    # parts (maelab.parts) of an installed record are redundant once it is stored under their config: pruned
    h = store.load("masking", "identity_1d", "gpu", root=root).provenance["config_hash"]
    for key, rec_h in (("a", h), ("b", "0" * 16)):
        cfg = {"part of": "identity_1d", "record config": rec_h}
        store.save(f"identity_1d__{key}", cfg, {"x": 1}, notebook="masking", profile="gpu", root=root)
    assert import_archive(archive, root=root, log=_quiet) == []  # the same bytes: nothing to do
    parts_left = sorted(p.name for p in (root / "masking").glob("*__*.json"))
    assert parts_left == ["identity_1d__b.gpu.json"]  # another config's part stays


def test_a_shared_zoo_record_is_archived_and_imported(tmp_path):
    """A page's installment computes the shared zoo's entries (folder ``zoo``, not the page's own): the run watches
    the shared folders, the archive holds their records and the import installs them (found with the gpu zoo's
    first device dry run, whose archive had left its 16 entries behind)."""
    import subprocess

    from maelab import zoo
    from maelab.device._common import SHARED_FOLDERS, machine

    assert SHARED_FOLDERS == (zoo.NOTEBOOK,)
    there = tmp_path / "there"
    store.save(
        "r0p75_u1_s0", {"what": "zoo entry"}, {"loss": 0.5}, notebook="zoo", profile="gpu", root=there, device="cpu"
    )
    records = rn.new_records(there, ["kong_reconstruction", *SHARED_FOLDERS], {})
    assert [(r["folder"], r["json"]) for r in records] == [("zoo", "r0p75_u1_s0.gpu.json")]
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    pack = {
        "commit": head,
        "dirty": False,
        "code_sha256": "0" * 64,
        "profile": "gpu",
        "notebooks": ["kong_reconstruction"],
        "created_utc": "2026-11-27T00:00:00+00:00",
    }
    run = {"dry_run": True, "notebooks": {"kong_reconstruction": {"status": "finished", "records": []}}}
    archive, manifest = arch.write_archive(tmp_path / "out", there, records, machine=machine("cpu"), pack=pack, run=run)
    assert manifest["folders"] == ["kong_reconstruction", "zoo"]
    assert import_archive(archive, root=tmp_path / "here", log=_quiet) == ["zoo/r0p75_u1_s0.gpu.json"]
    assert store.load("zoo", "r0p75_u1_s0", "gpu", root=tmp_path / "here")["loss"] == 0.5
    bad = _rewrite(archive, tmp_path / "b.zip", lambda m: m["manifest.json"]["folders"].append("elsewhere"))
    with pytest.raises(ArchiveError, match="folder 'elsewhere' is not a notebook of the pack"):
        read_manifest(bad)


@pytest.mark.book
def test_program_stores_what_the_notebook_stores(dry, tmp_path, monkeypatch):
    """The plain program and the papermill notebook store the same records: same config hashes, same values."""
    import tempfile

    from maelab import book

    _, archive, _ = dry
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    book.run_dry(RunOptions(profile="gpu", device="cpu"), ["masking"], keep=True)
    nb_root = next(tmp_path.glob("maelab-dry-run-*")) / "results"
    ours = tmp_path / "ours"
    import_archive(archive, root=ours, log=_quiet)
    names = sorted(p.name for p in (ours / "masking").glob("*.json"))
    assert names == sorted(p.name for p in (nb_root / "masking").glob("*.json") if not p.name.startswith("claims"))
    for name in names:
        a, b = (json.loads((r / "masking" / name).read_text()) for r in (ours, nb_root))
        assert a["provenance"]["config_hash"] == b["provenance"]["config_hash"], name
        assert a["provenance"]["config"] == b["provenance"]["config"], name
        # the same numbers: plain values equal, side files byte for byte (their SHA-256)
        assert a["data"] == b["data"], name
        assert {k: v["sha256"] for k, v in a["frames"].items()} == {k: v["sha256"] for k, v in b["frames"].items()}
        assert (a["arrays"] or {}).get("sha256") == (b["arrays"] or {}).get("sha256"), name


# ----------------------------------------------------------------------------------------------- budget
_SLOW = [
    {
        "source": 'run_options = {"profile": "gpu"}',
        "tags": ["parameters"],
    },
    {
        "source": "import signal, time\n"
        "from maelab import store\n"
        "from maelab._util import atomic_path\n"
        "from maelab.options import RunOptions\n"
        "opts = RunOptions.from_param(run_options)  # what the runner injected: profile, results folder, ...\n"
        "store.load_or_compute('first', {'k': 1}, lambda: {'x': 1.5, 'a': __import__('numpy').arange(3)},\n"
        "                      notebook='masking', profile=opts.profile, options=opts)\n"
        "def slow():\n"
        "    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # only SIGKILL stops it: nothing cleans up after it\n"
        "    with atomic_path(store.results_root(opts.profile, opts) / 'masking' / 'half.txt') as tmp:\n"
        "        tmp.write_text('half written')\n"
        "        time.sleep(600)\n"
        "store.load_or_compute('second', {'k': 2}, slow, notebook='masking', profile=opts.profile, options=opts)\n",
        "tags": [],
    },
]


def _replace_program(pack_dir: Path, notebook: str, cells: list[dict]) -> None:
    """Give a pack another program for ``notebook`` (its manifest's checksum updated to match)."""
    prog = pack_dir / "programs" / f"{notebook}.json"
    prog.write_text(json.dumps({"cells": cells, "parameters_cell": 0}))
    m = json.loads((pack_dir / "manifest.json").read_text())
    m["files"][f"programs/{notebook}.json"] = sha256_file(prog)
    (pack_dir / "manifest.json").write_text(json.dumps(m))


def test_a_run_stopped_by_its_budget_leaves_only_complete_records(tmp_path, monkeypatch):
    """The budget ends while the second record is being computed by a writer that ignores SIGTERM (so SIGKILL ends
    it, and nothing of it cleans up): the first record stays, complete; nothing of the second is left."""
    pack_dir = pk.pack(["masking"], profile="cpu", out=tmp_path / "pack", wheels=False, log=_quiet)
    _replace_program(pack_dir, "masking", _SLOW)
    results = tmp_path / "results"

    def budget_left(deadline):  # the budget ends once the second record's writer has its temp file open
        return 0.0 if list((results / "masking").glob(".maelab-tmp.half.txt.*")) else 60.0

    monkeypatch.setattr(rn, "_budget_left", budget_left)
    lines = []
    archive, manifest = rn.run(
        out=tmp_path / "out", pack_dir=pack_dir, profile="cpu", budget_min=10, device="cpu",
        results_dir=results, grace_s=1.0, log=lines.append,
    )  # fmt: skip
    outcome = manifest["run"]["notebooks"]["masking"]
    assert outcome["status"] == "stopped"
    assert [r["name"] for r in outcome["records"] if r["event"] == "unfinished"] == ["second"]
    assert "cut off while computing second; cleaned" in lines[-2]
    left = {p.name for p in (results / "masking").iterdir()}
    assert left == {"first.cpu.json", next(n for n in left if n.startswith("first.cpu.") and n.endswith(".npz"))}
    assert store.load("masking", "first", "cpu", root=results)["x"] == 1.5
    assert store_admin.check(results, log=_quiet) == 0
    assert manifest["records"] == ["masking/first.cpu.json"]
    assert sorted(zipfile.ZipFile(archive).namelist()) == sorted(["manifest.json", *manifest["files"]])


def test_clean_removes_what_a_killed_writer_leaves(tmp_path):
    root = tmp_path / "r"
    store.save("kept", {"k": 1}, {"a": np.arange(3)}, notebook="nb", profile="cpu", root=root)
    folder = root / "nb"
    (folder / "old.cpu.1234567890ab.npz").write_bytes(b"stray, but there before the run")
    before = rn.snapshot(root, ["nb"])
    (folder / "new.cpu.abcdefabcdef.npz").write_bytes(b"published side file of an unpublished record")
    (folder / ".maelab-tmp-store.new.cpu.host-1.x").mkdir()
    (folder / ".maelab-lock.new.cpu").write_text("")
    removed = rn.clean(root, ["nb"], before)
    stale = ["nb/new.cpu.abcdefabcdef.npz", "nb/.maelab-tmp-store.new.cpu.host-1.x", "nb/.maelab-lock.new.cpu"]
    assert sorted(removed) == sorted([*stale, "nb/.maelab-lock.kept.cpu"])  # lock files go, the writers are gone
    assert (folder / "old.cpu.1234567890ab.npz").exists() and store.load("nb", "kept", "cpu", root=root) is not None


def test_program_injects_the_run_options_after_the_parameters_cell(tmp_path):
    cells = [{"source": "import x", "tags": []}, {"source": "run_options = None", "tags": ["parameters"]}]
    cells.append({"source": "print(run_options)", "tags": []})
    manifest = {"profile": "gpu", "commit": "ab" * 20, "dirty": False}
    opts = rn.run_options(manifest, "cuda", tmp_path / "results", tmp_path / "scratch", train_workers=8)
    assert opts == RunOptions(
        profile="gpu",
        device="cuda",
        progress=False,
        results_root=str(tmp_path / "results"),
        dry_run=DryRunLimits(scratch=str(tmp_path / "scratch")),
        git=("ab" * 20, False),
        train_workers=8,  # maelab.prefetch's pool
        store_parts=True,  # a record cut off by the budget keeps its finished runs (maelab.parts)
    )  # the one parameter: everything the program needs that the environment used to carry
    assert rn.run_options({**manifest, "commit": "unknown"}, "cpu", tmp_path, None).git is None
    text = rn.program(cells, 1, {"run_options": opts.to_param()}, "nb", record_log=str(tmp_path / "log.jsonl"))
    body = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    assert body[:2] == [
        "from maelab.device.kernel import install as _maelab_device_install",
        f"_maelab_device_install(record_log={str(tmp_path / 'log.jsonl')!r}, reads_log=None)",
    ]
    # after the parameters, the installed paper registry's bootstrap, as the book's runner injects it into a kernel
    install = "papers.install()  # the paper registry (maelab.registry), from the runner"
    assert body[2:] == ["import x", "run_options = None", f"run_options = {opts.to_param()!r}",
                        "from maelab import papers", install, "print(run_options)"]  # fmt: skip


def test_the_kernel_draws_no_findings_box():
    """``Context.finish`` redraws the page's box through ``maelab.book.context.refresh_findings`` and the page calls
    ``book.show_findings``: the compute-only kernel silences both (drawing needs jupytext, blocked there)."""
    code = (
        "from maelab.device.kernel import install; install()\n"
        "from maelab import book\nfrom maelab.book import context, render\n"
        "class Handle:\n    def update(self, *a):\n        raise SystemExit('redrawn')\n"
        "render._FINDINGS_VIEWS[('masking', 'cpu')] = Handle()\n"
        "context.refresh_findings('masking', 'cpu')\nbook.show_findings('masking', 'cpu')\nprint('silent')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.strip() == "silent", r.stderr[-2000:]


# ----------------------------------------------------------------------------------------------- pack
def test_pack_refuses_what_does_not_fit_and_keeps_the_old_folder(dry, tmp_path):
    pack_dir = pk.pack(["masking"], out=tmp_path / "pack", wheels=False, log=_quiet)
    before = (pack_dir / "manifest.json").read_bytes()
    with pytest.raises(DeviceError, match=r"exceed 1\.0 MiB; --trim, or carry fewer datasets") as e:
        pk.pack(["masking"], out=pack_dir, wheels=False, limit_bytes=1 << 20, log=_quiet)
    assert "\n" not in str(e.value)
    assert (pack_dir / "manifest.json").read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".maelab-tmp")]


def test_pack_refuses_unknown_notebooks_and_datasets(tmp_path):
    with pytest.raises(ParameterError, match="notebook must be one of"):
        pk.pack(["scoreboard"], out=tmp_path / "p", wheels=False, log=_quiet)
    with pytest.raises(ParameterError, match="dataset must be one of"):
        pk.pack(["masking"], out=tmp_path / "p", wheels=False, datasets=["imagenet"], log=_quiet)


def test_datasets_named_by_the_gpu_settings():
    assert pk.datasets_named(["zhang_umae"], "gpu") == ["mnist", "cifar_dogcat", "fashion_mnist"]
    assert pk.datasets_named(["masking"], "gpu") == []


def test_run_refuses_a_changed_tree_and_a_gpu_run_without_cuda(dry, tmp_path):
    pack_dir, _, _ = dry
    with pytest.raises(DeviceError, match="gpu results are never computed on a CPU"):
        rn.run(out=tmp_path, pack_dir=pack_dir, device="cpu", log=_quiet)
    with pytest.raises(ParameterError, match="--profile must be the pack's profile 'gpu'"):
        rn.run(out=tmp_path, pack_dir=pack_dir, profile="cpu", device="cpu", dry_run=True, log=_quiet)
    with pytest.raises(ParameterError, match="--train-workers must be a whole number"):
        rn.run(out=tmp_path, pack_dir=pack_dir, device="cpu", dry_run=True, train_workers=-1, log=_quiet)
    copy = tmp_path / "pack"
    shutil.copytree(pack_dir, copy)
    (copy / "programs" / "masking.json").write_text("{}")
    with pytest.raises(DeviceError, match="programs/masking.json is missing or changed since the pack"):
        rn.run(out=tmp_path, pack_dir=copy, device="cpu", dry_run=True, log=_quiet)
    m = json.loads((pack_dir / "manifest.json").read_text())
    m["code_sha256"] = "0" * 64
    shutil.copytree(pack_dir, copy, dirs_exist_ok=True)
    (copy / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(DeviceError, match="not the packed code"):
        rn.run(out=tmp_path, pack_dir=copy, device="cpu", dry_run=True, log=_quiet)


def test_carried_dataset_round_trip(tmp_path, monkeypatch):
    """A fetched dataset travels xz-compressed and comes back through the loader's hash check; a damaged one does
    not (a small stand-in for cifar_dogcat, so that no real dataset is needed)."""
    import lzma

    from maelab.data import packaged

    arrays, _ = stand_in_dogcat(tmp_path / "fetched", monkeypatch, n_train=4, n_test=2)
    monkeypatch.setenv("MAELAB_CACHE", str(tmp_path / "cache"))
    xz = pk.compressed_dataset("cifar_dogcat", ROOT, log=_quiet)
    assert xz.parent == tmp_path / "cache" / "device" / "datasets"
    (tmp_path / "pack" / "datasets").mkdir(parents=True)
    shutil.copyfile(xz, tmp_path / "pack" / "datasets" / "cifar_dogcat.npz.xz")
    manifest = {"datasets": {"cifar_dogcat": {"file": "datasets/cifar_dogcat.npz.xz"}}}
    dest = rn.unpack_datasets(tmp_path / "pack", manifest, tmp_path / "data", log=_quiet)
    back = packaged.read_arrays("cifar_dogcat", dest)
    assert all(np.array_equal(back[k], arrays[k]) for k in arrays)
    raw = bytearray(lzma.decompress(xz.read_bytes()))
    raw[-200] ^= 0xFF  # a pixel changed
    (tmp_path / "pack" / "datasets" / "cifar_dogcat.npz.xz").write_bytes(lzma.compress(bytes(raw)))
    with pytest.raises(DeviceError, match="carried dataset cifar_dogcat does not check"):
        rn.unpack_datasets(tmp_path / "pack", manifest, tmp_path / "data2", log=_quiet)


def _stand_in_dogcat(tmp_path, monkeypatch) -> str:
    """The stand-in cifar_dogcat (:func:`conftest.stand_in_dogcat`) fetched into ``tmp_path/fetched``, the cache in
    ``tmp_path/cache``; returns the source of a program cell that patches SPECS the same way in a notebook
    program's own process."""
    from maelab.data import packaged

    stand_in_dogcat(tmp_path / "fetched", monkeypatch)
    monkeypatch.setenv("MAELAB_CACHE", str(tmp_path / "cache"))
    spec = packaged.SPECS["cifar_dogcat"]
    return (
        "import dataclasses\nfrom maelab.data import packaged\n"
        "packaged.SPECS['cifar_dogcat'] = dataclasses.replace(packaged.SPECS['cifar_dogcat'], "
        f"counts={spec.counts!r}, sha256={spec.sha256!r})\n"
    )


def _loading(patch: str, loads: str) -> dict:
    """A notebook program (for :func:`maelab.device.pack.convert`) whose one cell after the parameters loads
    ``loads`` (``split, n, seed`` tuples, one per line) of the stand-in and prints a checksum of each."""
    body = patch + "from maelab import data\nfor split, n, seed in [" + loads + "]:\n"
    body += "    ds = data.load('cifar_dogcat', split, n=n, seed=seed)\n"
    body += "    print('LOADED', split, n, seed, float(ds.images.sum()), ds.meta['indices'])\n"
    return {"cells": [{"source": "run_options = None", "tags": ["parameters"]}, {"source": body, "tags": []}],
            "parameters_cell": 0}  # fmt: skip


def test_a_trimmed_pack_carries_the_rows_its_dry_run_reads(tmp_path, monkeypatch):
    """``pack --trim``: the notebook's dry run (the runner's, here) is traced, the dataset travels as the rows it
    read, and on the run the same loads get the same images as from the whole file here; a load outside them stops
    the notebook in one line."""
    from maelab import data
    from maelab.data import rows

    patch = _stand_in_dogcat(tmp_path, monkeypatch)
    loads = [("train", 12, 0), ("train", 4, 2), ("test", 6, 0)]
    monkeypatch.setattr(pk, "convert", lambda src: _loading(patch, ", ".join(map(repr, loads))))
    lines = []
    full_at = rn.ARCHIVE_FULL_BYTES
    monkeypatch.setattr(rn, "ARCHIVE_FULL_BYTES", -1)  # a run would start no notebook; the trace runs them all
    pack_dir = pk.pack(
        ["masking"], out=tmp_path / "pack", datasets=["cifar_dogcat"], wheels=False, trim=True, log=lines.append
    )
    monkeypatch.setattr(rn, "ARCHIVE_FULL_BYTES", full_at)
    entry = json.loads((pack_dir / "manifest.json").read_text())["datasets"]["cifar_dogcat"]
    reads = [{"name": "cifar_dogcat", "split": s, "n": n, "seed": k} for s, n, k in loads]
    n_train = len(rows.needed_rows("cifar_dogcat", reads)["train"])
    assert entry["rows"] == {"train": n_train, "test": 6} and entry["file"].endswith(rows.SUFFIX + ".xz")
    assert f"[pack] cifar_dogcat: train {n_train}, test 6 rows (masking: train {n_train}, test 6)" in lines
    assert "(rows read)" in lines[-1]
    whole = pk.compressed_dataset("cifar_dogcat", ROOT, log=_quiet)
    assert (pack_dir / entry["file"]).stat().st_size < whole.stat().st_size
    _, man = rn.run(out=tmp_path / "out", pack_dir=pack_dir, budget_min=5, device="cpu", dry_run=True, log=_quiet)
    assert man["run"]["notebooks"]["masking"]["status"] == "finished", man["run"]["notebooks"]
    assert man["pack"]["datasets"]["cifar_dogcat"]["rows"] == entry["rows"]  # the archive says what data travelled
    log = next((tmp_path / "out").glob("*.log")).read_text().splitlines()
    want = []
    for split, n, seed in loads:  # the same loads, here, from the whole file
        ds = data.load("cifar_dogcat", split, n=n, seed=seed)
        want.append(f"LOADED {split} {n} {seed} {float(ds.images.sum())} {ds.meta['indices']}")
    assert [ln for ln in log if ln.startswith("LOADED")] == want  # the same rows, the same pixels
    _replace_program(pack_dir, "masking", _loading(patch, "('train', 30, 0)")["cells"])
    _, man = rn.run(out=tmp_path / "out-more", pack_dir=pack_dir, budget_min=5, device="cpu", dry_run=True, log=_quiet)
    outcome = man["run"]["notebooks"]["masking"]
    assert outcome["status"] == "failed" and "RowsNotCarried" in outcome["error"]
    assert "without --trim" in outcome["error"]


def test_a_trim_whose_dry_run_fails_packs_nothing(tmp_path, monkeypatch):
    """A page that fails in the traced dry run (not at a dataset left behind) stops the pack in one line; the old
    folder stays. A dataset the dry run does not read stays behind."""
    patch = _stand_in_dogcat(tmp_path, monkeypatch)
    monkeypatch.setattr(pk, "convert", lambda src: _loading(patch, ""))
    pack_dir = pk.pack(["masking"], out=tmp_path / "pack", datasets=["cifar_dogcat"], wheels=False, trim=True,
                       log=_quiet)  # fmt: skip
    assert json.loads((pack_dir / "manifest.json").read_text())["datasets"] == {}
    before = (pack_dir / "manifest.json").read_text()
    monkeypatch.setattr(pk, "convert", lambda src: _loading(patch + "raise RuntimeError('broken page')\n", ""))
    with pytest.raises(DeviceError, match="did not finish masking .*broken page.*pack without --trim"):
        pk.pack(["masking"], out=pack_dir, datasets=["cifar_dogcat"], wheels=False, trim=True, log=_quiet)
    assert (pack_dir / "manifest.json").read_text() == before


def test_run_refuses_a_reads_log_outside_a_dry_run(dry, tmp_path):
    pack_dir, _, _ = dry
    with pytest.raises(ParameterError, match="reads_log"):
        rn.run(out=tmp_path, pack_dir=pack_dir, device="cpu", reads_log=tmp_path / "r.jsonl", log=_quiet)


# ----------------------------------------------------------------------------------------------- import refusals
def _rewrite(src: Path, dst: Path, edit) -> Path:
    """A copy of archive ``src`` whose members pass through ``edit(members: dict) -> None`` (the manifest as a
    dict under "manifest.json")."""
    with zipfile.ZipFile(src) as z:
        members = {n: z.read(n) for n in z.namelist()}
    members["manifest.json"] = json.loads(members["manifest.json"])
    edit(members)
    with zipfile.ZipFile(dst, "w") as z:
        for n, b in members.items():
            z.writestr(n, json.dumps(b) if n == "manifest.json" else b)
    return dst


def test_import_refuses_a_tampered_member(dry, tmp_path):
    def edit(m):
        name = "masking/identity_1d.gpu.json"
        m[name] = m[name].replace(b'"profile"', b'"profile" ', 1)

    bad = _rewrite(dry[1], tmp_path / "a.zip", edit)
    with pytest.raises(ArchiveError, match="identity_1d.gpu.json was changed"):
        import_archive(bad, root=tmp_path / "r", log=_quiet)
    assert not (tmp_path / "r").exists()


def test_import_refuses_a_record_with_a_wrong_checksum(dry, tmp_path):
    def edit(m):
        name = "masking/identity_1d.gpu.json"
        rec = json.loads(m[name])
        rec["provenance"]["wall_time_s"] = 0.001  # the manifest is kept consistent, the record's own sum is not
        m[name] = json.dumps(rec).encode()
        m["manifest.json"]["files"][name] = sha256_bytes(m[name])

    bad = _rewrite(dry[1], tmp_path / "a.zip", edit)
    with pytest.raises(ArchiveError, match="identity_1d.gpu.json does not verify .*tampered"):
        import_archive(bad, root=tmp_path / "r", log=_quiet)
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("name", ["../evil.json", "masking/../../evil.json", "/tmp/evil.json", "other/x.json"])
def test_import_refuses_a_path_outside_the_archive_folders(dry, tmp_path, name):
    def edit(m):
        m[name] = b"{}"
        m["manifest.json"]["files"][name] = sha256_bytes(b"{}")

    bad = _rewrite(dry[1], tmp_path / "a.zip", edit)
    with pytest.raises(ArchiveError, match="is not <folder>/<file> in the archive's folders"):
        import_archive(bad, root=tmp_path / "r", log=_quiet)
    assert not (tmp_path / "r").exists() and not (tmp_path / "evil.json").exists()


def test_import_refuses_a_folder_outside_the_pack_and_a_stray_file(dry, tmp_path):
    bad = _rewrite(dry[1], tmp_path / "a.zip", lambda m: m["manifest.json"]["folders"].append("zhang_umae"))
    with pytest.raises(ArchiveError, match="folder 'zhang_umae' is not a notebook of the pack"):
        read_manifest(bad)

    def stray(m):
        m["masking/extra.gpu.abcdefabcdef.npz"] = b"x"
        m["manifest.json"]["files"]["masking/extra.gpu.abcdefabcdef.npz"] = sha256_bytes(b"x")

    bad = _rewrite(dry[1], tmp_path / "b.zip", stray)
    with pytest.raises(ArchiveError, match="extra.gpu.abcdefabcdef.npz is named by no record"):
        import_archive(bad, root=tmp_path / "r", log=_quiet)


def test_import_refuses_provenance_it_cannot_vouch_for(dry, tmp_path):
    bad = _rewrite(dry[1], tmp_path / "a.zip", lambda m: m["manifest.json"]["pack"].update(commit="f" * 40))
    with pytest.raises(ArchiveError, match="commit ffffffffff is not in this repository's history"):
        import_archive(bad, root=tmp_path / "r", log=_quiet)
    bad = _rewrite(dry[1], tmp_path / "b.zip", lambda m: m["manifest.json"]["machine"].update(device="NVIDIA H100"))
    with pytest.raises(ArchiveError, match="provenance device .* is not the archive's 'NVIDIA H100'"):
        import_archive(bad, root=tmp_path / "r", log=_quiet)
    manifest = read_manifest(dry[1])
    committed = tmp_path / "committed"
    with pytest.raises(ArchiveError, match="a dry run's results .* never go into"):
        arch._check_target(dry[1], manifest, committed, committed, allow_dirty=False)
    real = {**manifest, "run": {**manifest["run"], "dry_run": False}, "pack": {**manifest["pack"], "dirty": False}}
    with pytest.raises(ArchiveError, match="gpu results computed on .*not on a CUDA device"):
        arch._check_target(dry[1], real, committed, committed, allow_dirty=False)
    arch._check_target(dry[1], manifest, tmp_path / "elsewhere", committed, allow_dirty=False)  # other roots: fine


def test_import_takes_a_cpu_pool_s_thread_count_but_not_another_cpu(dry, tmp_path):
    """A CPU run's pool: its records name one-thread workers, its archive the main process (issue 25's CPU
    archives); the thread count may differ, the processor and cores may not."""
    import re

    dev = read_manifest(dry[1])["machine"]["device"]
    assert re.fullmatch(r"cpu \(.*, \d+ cores, \d+ threads\)", dev), dev
    threads = re.sub(r", \d+ threads\)$", ", 97 threads)", dev)
    ok = _rewrite(dry[1], tmp_path / "a.zip", lambda m: m["manifest.json"]["machine"].update(device=threads))
    installed = import_archive(ok, root=tmp_path / "r", log=_quiet)
    assert "masking/identity_1d.gpu.json" in installed
    assert store.load("masking", "identity_1d", "gpu", root=tmp_path / "r") is not None
    cores = re.sub(r", \d+ cores, ", ", 97 cores, ", dev)
    bad = _rewrite(dry[1], tmp_path / "b.zip", lambda m: m["manifest.json"]["machine"].update(device=cores))
    with pytest.raises(ArchiveError, match="provenance device .* is not the archive's .*97 cores"):
        import_archive(bad, root=tmp_path / "r2", log=_quiet)


def test_import_refuses_to_overwrite_other_values_unless_asked(dry, tmp_path):
    root = tmp_path / "r"
    store.save("identity_1d", {"other": 1}, {"x": 1}, notebook="masking", profile="gpu", root=root)
    with pytest.raises(ArchiveError, match="identity_1d.gpu.json is stored with other values; --replace"):
        import_archive(dry[1], root=root, log=_quiet)
    assert store.load("masking", "identity_1d", "gpu", root=root)["x"] == 1
    import_archive(dry[1], root=root, replace=True, log=_quiet)
    assert store.load("masking", "identity_1d", "gpu", root=root).provenance["config"] != {"other": 1}
    assert store_admin.check(root, log=_quiet) == 0  # the replaced record's side files went with it


def test_store_cli_import_errors_in_one_line(tmp_path):
    (tmp_path / "x.zip").write_bytes(b"not a zip")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    r = subprocess.run(
        [sys.executable, "-m", "maelab.store", "import", str(tmp_path / "x.zip"), "--results-dir", str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert r.returncode == 1 and r.stderr.strip().count("\n") == 0 and "not a readable zip archive" in r.stderr


# ----------------------------------------------------------------------------------------------- calibration, cost
def test_calibration_is_stored_and_used_only_when_measured_on_cuda(tmp_path):
    from maelab.device.calibrate import calibrate

    run = cost.PlannedRun("tiny", size="micro", img_size=16, channels=1, batch_size=8, steps=10)
    with pytest.raises(ParameterError, match="device must be a CUDA device to store a GPU calibration"):
        calibrate(device="cpu", runs=[run], iters=2, log=_quiet)  # not into data/results, and not without allow_cpu
    res = calibrate(device="cpu", runs=[run], iters=2, root=tmp_path, allow_cpu=True, log=_quiet)
    pts = res["points"]
    assert list(pts["batch_size"]) == [8] and res["device_type"] == "cpu"
    assert pts["images_per_s"][0] == pytest.approx(8 / pts["seconds_per_step"][0])
    assert pts["flops_per_step"][0] == cost.step_flops(run.build(), 8).flops
    assert cost.gpu_device(tmp_path) is cost.H100  # measured on a CPU: never a GPU model
    measured = cost.measured_device(pts, "test")
    # a measured workload is predicted at its measured time per step
    assert cost.predict(run, measured)["train_s"] == pytest.approx(10 * pts["seconds_per_step"][0], rel=1e-9)
    assert measured.name == cost.H100.name  # plan tables keep their column


def test_a_calibration_of_this_device_for_this_plan_is_kept(tmp_path, monkeypatch):
    """run --calibrate times the steps only where the stored calibration is not this device's for today's plan:
    another device, other workloads or iterations, or a record that does not verify, is measured again."""
    import maelab._util
    from maelab.device import calibrate as cal
    from maelab.options import RunOptions

    run = cost.PlannedRun("tiny", size="micro", img_size=16, channels=1, batch_size=8, steps=10)
    assert cal.current(device="cpu", root=tmp_path, runs=[run], iters=2) is None  # none stored
    res = cal.calibrate(device="cpu", runs=[run], iters=2, root=tmp_path, allow_cpu=True, log=_quiet)
    assert cal.current(device="cpu", root=tmp_path, runs=[run], iters=2).path == res.path
    assert cal.current(device="cpu", root=tmp_path, runs=[run], iters=3) is None
    assert cal.current(device="cpu", root=tmp_path, runs=[dataclasses.replace(run, batch_size=16)], iters=2) is None
    with monkeypatch.context() as m:
        m.setattr(maelab._util, "device_name", lambda dev: "NVIDIA H200")
        assert cal.current(device="cpu", root=tmp_path, runs=[run], iters=2) is None  # another device's
    js = json.loads(res.path.read_text())
    js["data"]["torch"] = "0.0"  # edited by hand (device and config still this plan's): its checksum fails
    res.path.write_text(json.dumps(js))
    assert cal.current(device="cpu", root=tmp_path, runs=[run], iters=2) is None
    # the runner's --calibrate: a current calibration is kept (nothing timed, nothing archived), else measured
    timed = []
    monkeypatch.setattr(cal, "calibrate", lambda **kw: timed.append(kw) or res)
    monkeypatch.setattr(cal, "current", lambda **kw: res)
    kept = rn._calibrate(tmp_path, RunOptions(device="cpu"), time.monotonic() + 60, _quiet)
    assert kept["status"] == "kept" and kept["records"] == [] and timed == []
    monkeypatch.setattr(cal, "current", lambda **kw: None)
    assert rn._calibrate(tmp_path, RunOptions(device="cpu"), time.monotonic() + 60, _quiet)["status"] == "finished"
    assert len(timed) == 1


def test_runs_side_by_side_are_measured_and_priced(tmp_path, monkeypatch):
    """The calibration's pool table (processes side by side, maelab.prefetch) and what the cost model makes of it:
    a run in a pool of n trains pool_factor(n) times faster, interpolated between the measured counts."""
    from maelab.cost import devices
    from maelab.device.calibrate import calibrate

    run = cost.PlannedRun("tiny", size="micro", img_size=16, channels=1, batch_size=8, steps=10)
    # one spawned process keeps the test short; the speed-ups of more are a measurement (benchmarks/gpu_concurrency)
    res = calibrate(device="cpu", runs=[run], iters=2, root=tmp_path, allow_cpu=True, pool_procs=(1,), log=_quiet)
    pool = res["pool"]
    assert list(pool["procs"]) == [1] and pool["speedup"][0] == 1.0 and pool["images_per_s_wall"][0] > 0
    assert res.provenance["config"]["pool_procs"] == [1]
    points, where = devices.pool_points(res)
    assert points == ((1, 1.0),) and where == "the calibration's pool table"
    d = dataclasses.replace(cost.H100, pool=((1, 1.0), (4, 2.5), (8, 3.5)), pool_workers=8)
    assert [d.pool_factor(n) for n in (0, 1, 2, 4, 6, 8, 20)] == pytest.approx([1, 1, 1.5, 2.5, 3.0, 3.5, 3.5])
    assert dataclasses.replace(d, pool_workers=4).pool_factor(20) == pytest.approx(2.5)  # no more than the workers
    alone, pooled = (cost.predict(dataclasses.replace(run, pool=n), d) for n in (0, 4))
    assert pooled["train_s"] == pytest.approx(alone["train_s"] / 2.5) and pooled["eval_s"] == alone["eval_s"]
    # before calibrations measured the pool: the newest benchmarks/gpu_concurrency result, by the wall clock
    bench = tmp_path / "repo" / "benchmarks" / "results"
    bench.mkdir(parents=True)
    rows = [
        {"procs": 1, "images_per_s_wall": 100.0},
        {"procs": 8, "images_per_s_wall": 340.0},
        {"procs": 4, "error": "x"},
    ]
    (bench / "gpu_concurrency-cuda-20260101T000000Z.json").write_text(
        json.dumps({"provenance": {"device": "GPU X"}, "results": rows})
    )
    monkeypatch.setattr(devices.paths, "repo_root", lambda: tmp_path / "repo")
    points, where = devices.pool_points(None)
    assert points == ((1, 1.0), (8, 3.4)) and "gpu_concurrency-cuda-20260101T000000Z.json (GPU X)" in where


# ----------------------------------------------------------------------------------------------- progress
def test_progress_counts_stored_results_and_completeness(tmp_path):
    from maelab.book.runner import choose_profile
    from maelab.device.progress import progress

    run = cost.PlannedRun("r", size="micro", batch_size=8, steps=100_000, repeats=3)
    plans = {"masking": [run], "kong_theory": []}
    predicted = (
        3 * 100_000 * cost.H100.seconds(cost.step_flops(run.build(), 8).flops, cost.step_flops(run.build(), 8).ops)
    )
    rec = store.save("a", {"k": 1}, {"x": 1}, notebook="masking", profile="gpu", root=tmp_path)
    store.save("b", {"k": 1}, {"x": 1}, notebook="masking", profile="cpu", root=tmp_path)  # another profile
    t = progress("gpu", root=tmp_path, plans=plans, device=cost.H100).set_index("notebook")
    assert t.loc["masking", "planned runs"] == 3 and t.loc["masking", "results stored"] == 1
    assert t.loc["masking", "predicted min"] == pytest.approx(round(predicted / 60, 1))
    assert not t.loc["masking", "complete"] and t.loc["masking", "min spent"] == 0  # computed on a CPU
    assert t.loc["masking", "predicted min left"] == t.loc["masking", "predicted min"]
    assert t.loc["kong_theory", "planned runs"] == 0 and t.loc["kong_theory", "results stored"] == 0
    # a part of a record not yet stored (maelab.parts) is progress, not a result
    store.save("c__run_s0", {"k": 1}, {"x": 1}, notebook="masking", profile="gpu", root=tmp_path)
    t = progress("gpu", root=tmp_path, plans=plans, device=cost.H100).set_index("notebook")
    assert t.loc["masking", "results stored"] == 1 and t.loc["masking", "parts stored"] == 1
    # the book ("--profile auto") shows a gpu result set only once it is complete: until then the cpu one
    options = RunOptions(profile="auto", results_root=str(tmp_path))
    assert choose_profile("masking", "auto", options) == "cpu"
    claims = {"c": {"sources": [{"name": "a", "config_hash": rec.provenance["config_hash"]}]}}
    store.save("claims", {"k": 0}, {"claims": claims}, notebook="masking", profile="gpu", root=tmp_path)
    t = progress("gpu", root=tmp_path, plans=plans, device=cost.H100).set_index("notebook")
    assert t.loc["masking", "complete"] and t.loc["masking", "predicted min left"] == 0
    assert choose_profile("masking", "auto", options) == "gpu" and choose_profile("masking", "cpu", options) == "cpu"
    assert t.loc["masking", "results stored"] == 1  # the claims record is not a result
    # a result of another folder that the claims record cites (the shared zoo's entries) counts for the page
    zoo_rec = store.save("e", {"k": 2}, {"x": 2}, notebook="zoo", profile="gpu", root=tmp_path)
    cited = {**claims, "z": {"sources": [{"name": "zoo/e", "config_hash": zoo_rec.provenance["config_hash"]}]}}
    store.save("claims", {"k": 0}, {"claims": cited}, notebook="masking", profile="gpu", root=tmp_path)
    t = progress("gpu", root=tmp_path, plans=plans, device=cost.H100).set_index("notebook")
    assert t.loc["masking", "results stored"] == 2 and t.loc["masking", "complete"]
    claims["c"]["sources"][0]["config_hash"] = "0" * 16
    store.save("claims", {"k": 0}, {"claims": claims}, notebook="masking", profile="gpu", root=tmp_path)
    assert (
        not progress("gpu", root=tmp_path, plans=plans, device=cost.H100)
        .set_index("notebook")
        .loc["masking", "complete"]
    )
    assert choose_profile("masking", "auto", options) == "cpu"  # a cited result under another config: incomplete


def test_re_run_page_progress_table_reads_the_stored_gpu_plan(tmp_path):
    """book/rerun.md's installment table: the stored gpu plan's runs and H100 minutes ("negligible" read as 0), the
    results and parts stored of each page; without a stored plan, one row saying how to make it."""
    import pandas as pd

    from maelab.book.plan import _stage_gpu_progress
    from maelab.device.progress import planned_from_table

    results, out = tmp_path / "results", tmp_path / "staged"
    out.mkdir()
    _stage_gpu_progress(results, out)
    assert pd.read_csv(out / "gpu-progress.csv").to_dict("records") == [
        {"plan": "not stored: run python -m maelab.book plan --profile gpu --write"}
    ]
    table = pd.DataFrame({"notebook": ["masking", "zhang_umae"], "runs": [0, 5], "H100 min": ["negligible", "2.5"]})
    assert planned_from_table(table) == {"masking": (0, 0.0), "zhang_umae": (5, 2.5)}
    store.save("notebooks", {"k": 1}, {"table": table}, notebook="plan", profile="gpu", root=results)
    store.save("compare_mnist__mae_s0", {"k": 1}, {"x": 1}, notebook="zhang_umae", profile="gpu", root=results)
    _stage_gpu_progress(results, out)
    got = pd.read_csv(out / "gpu-progress.csv").set_index("notebook")
    assert list(got.index) == ["masking", "zhang_umae"]
    row = got.loc["zhang_umae"]
    assert (row["planned runs"], row["predicted H100 min"]) == (5, 2.5)
    assert (row["results stored"], row["parts stored"]) == (0, 1)
    assert row["complete"] == "no" and row["device min spent"] == 0  # a part saved here, on a CPU: not gpu minutes
    assert row["predicted min left"] == 2.5


def test_runs_side_by_side_count_their_device_minutes_once():
    """An installment's pool computes parts side by side: the device minutes spent are the union of the records'
    compute intervals, not the sum of their wall times (8 parts of ~290 s each in one ~5-minute wave)."""
    from types import SimpleNamespace

    from maelab.device.progress import device_minutes

    def rec(end: str, wall: float | None, stamp: bool = True):
        prov = {"wall_time_s": wall} | ({"timestamp": f"2026-11-28T05:{end}+00:00"} if stamp else {})
        return SimpleNamespace(provenance=prov)

    side_by_side = [rec("10:00", 300.0), rec("09:50", 290.0), rec("10:00", 300.0)]  # one wave: 05:05:00-05:10:00
    assert device_minutes(side_by_side) == pytest.approx(5.0)
    later = rec("20:00", 120.0)  # 05:18:00-05:20:00, after a gap the device did not spend on these records
    assert device_minutes([*side_by_side, later]) == pytest.approx(7.0)
    overlapping = rec("11:00", 120.0)  # 05:09:00-05:11:00: one minute beyond the wave
    assert device_minutes([*side_by_side, overlapping]) == pytest.approx(6.0)
    assert device_minutes([rec("", 60.0, stamp=False), later]) == pytest.approx(3.0)  # no timestamp: on its own
    assert device_minutes([]) == 0


# ----------------------------------------------------------------------------------------------- provenance
def test_git_state_from_the_pack_where_git_cannot_answer(tmp_path):
    """The lent machine's copy of the tree has no ``.git``: the runner hands the pack's commit to every program in
    its run options (``git``), which the store's provenance takes only where git cannot answer."""
    packed = RunOptions(git={"commit": "a" * 40, "dirty": True})
    assert store.git_state(tmp_path, packed) == {"commit": "a" * 40, "dirty": True}  # tmp_path: no git repository
    assert store.git_state(tmp_path) == {"commit": "unknown", "dirty": False}
    assert store.git_state(ROOT, packed)["commit"] != "a" * 40  # git answers: the option is not read
    r = store.save("r", {"k": 1}, {"v": 1}, notebook="nb", profile="cpu", root=tmp_path, options=packed)
    assert r.provenance["git"]["commit"] != "a" * 40  # this tree has git: its own commit is recorded
    with pytest.raises(ParameterError, match="^git must be None or"):
        RunOptions(git={"commit": "HEAD", "dirty": False})


def test_archive_zip_is_readable_without_the_repository(dry):
    manifest = read_manifest(dry[1])
    assert set(manifest["files"]) == set(zipfile.ZipFile(io.BytesIO(dry[1].read_bytes())).namelist()) - {
        "manifest.json"
    }
    assert arch.summary(manifest).startswith("masking: finished")
