"""maelab.store: results as data with provenance; config mismatch recomputes, never reuses silently."""

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from maelab import paths, store, store_admin
from maelab._validate import ParameterError


def _fn(counter, value=1.0):
    def fn():
        counter.append(1)
        return {
            "acc": value,
            "curve": np.arange(5.0) * value,
            "table": pd.DataFrame({"m": [0.1, 0.5], "y": [1, 2]}),
            "meta": {"note": "x", "list": [1, 2]},
        }

    return fn


def test_stores_all_kinds_and_reloads_identically(tmp_path):
    calls = []
    r1 = store.load_or_compute(
        "res", {"a": 1, "b": [1, 2]}, _fn(calls), notebook="nb", profile="cpu", seeds=[3], root=tmp_path, log=None
    )
    assert not r1.from_store and len(calls) == 1
    r2 = store.load_or_compute(
        "res", {"b": [1, 2], "a": 1}, _fn(calls), notebook="nb", profile="cpu", seeds=[3], root=tmp_path, log=None
    )  # key order does not matter
    assert r2.from_store and len(calls) == 1
    assert r2["acc"] == 1.0 and r2["meta"] == {"note": "x", "list": [1, 2]}
    np.testing.assert_array_equal(r2["curve"], np.arange(5.0))
    pd.testing.assert_frame_equal(r2["table"], pd.DataFrame({"m": [0.1, 0.5], "y": [1, 2]}))
    files = sorted(p.name for p in (tmp_path / "nb").iterdir())
    # side files carry the first 12 hex digits of their own SHA-256; the lock file is hidden and gitignored
    assert [re.sub(r"\.[0-9a-f]{12}\.", ".H.", f) for f in files] == [
        ".maelab-lock.res.cpu",
        "res.cpu.H.npz",
        "res.cpu.json",
        "res.cpu.table.H.csv",
    ]


def test_provenance_fields(tmp_path):
    r = store.load_or_compute(
        "res", {"a": 1}, _fn([]), notebook="nb", profile="gpu", seeds=[0, 1], root=tmp_path, log=None
    )
    p = json.loads((tmp_path / "nb" / "res.gpu.json").read_text())["provenance"]
    for key in ("config", "config_hash", "git", "versions", "device", "seeds", "wall_time_s", "timestamp", "profile"):
        assert key in p, key
    assert p["config"] == {"a": 1} and p["seeds"] == [0, 1] and p["profile"] == "gpu"
    assert p["config_hash"] == store.config_hash({"a": 1})
    assert {"commit", "dirty"} <= set(p["git"]) and "torch" in p["versions"]
    assert r.provenance == p


def test_different_config_hash_is_recomputed(tmp_path):
    calls = []
    store.load_or_compute("res", {"lr": 0.1}, _fn(calls, 1.0), notebook="nb", profile="cpu", root=tmp_path, log=None)
    msgs = []
    r = store.load_or_compute(
        "res", {"lr": 0.2}, _fn(calls, 2.0), notebook="nb", profile="cpu", root=tmp_path, log=msgs.append
    )
    assert len(calls) == 2 and not r.from_store and r["acc"] == 2.0
    assert any("config hash" in m and "recomputing" in m for m in msgs)
    # the stored record now carries the new config
    again = store.load("nb", "res", "cpu", root=tmp_path)
    assert again.provenance["config"] == {"lr": 0.2} and again["acc"] == 2.0


def test_recompute_flag_forces(tmp_path):
    calls = []
    for _ in range(2):
        store.load_or_compute("res", {"x": 1}, _fn(calls), notebook="nb", profile="cpu", root=tmp_path, log=None)
    store.load_or_compute(
        "res", {"x": 1}, _fn(calls), notebook="nb", profile="cpu", root=tmp_path, recompute=True, log=None
    )
    assert len(calls) == 2


def test_tampered_side_file_is_recomputed(tmp_path):
    calls = []
    store.load_or_compute("res", {"x": 1}, _fn(calls), notebook="nb", profile="cpu", root=tmp_path, log=None)
    (csv,) = (tmp_path / "nb").glob("res.cpu.table.*.csv")
    csv.write_text(csv.read_text().replace("0.5", "0.7"))
    with pytest.raises(store.RecordError, match="side file .* was changed"):
        store.load("nb", "res", "cpu", root=tmp_path)
    r = store.load_or_compute("res", {"x": 1}, _fn(calls), notebook="nb", profile="cpu", root=tmp_path, log=None)
    assert len(calls) == 2 and not r.from_store
    assert store.load("nb", "res", "cpu", root=tmp_path)["table"]["m"].tolist() == [0.1, 0.5]


def test_failure_leaves_nothing_behind(tmp_path):
    def boom():
        raise RuntimeError("fail")

    with pytest.raises(RuntimeError):
        store.load_or_compute("res", {"x": 1}, boom, notebook="nb", profile="cpu", root=tmp_path, log=None)
    assert not (tmp_path / "nb").exists() or [p.name for p in (tmp_path / "nb").iterdir()] == [".maelab-lock.res.cpu"]

    # a value that cannot be stored fails before any record is written
    with pytest.raises(ParameterError, match="fn result"):
        store.load_or_compute(
            "res", {"x": 1}, lambda: {"obj": object()}, notebook="nb", profile="cpu", root=tmp_path, log=None
        )
    assert not list(tmp_path.rglob("*.json"))
    assert [p.name for p in tmp_path.rglob(".*")] == [".maelab-lock.res.cpu"]


def test_profiles_are_separate_files(tmp_path):
    store.load_or_compute("res", {"x": 1}, _fn([], 1.0), notebook="nb", profile="cpu", root=tmp_path, log=None)
    store.load_or_compute("res", {"x": 1}, _fn([], 3.0), notebook="nb", profile="gpu", root=tmp_path, log=None)
    assert store.load("nb", "res", "cpu", root=tmp_path)["acc"] == 1.0
    assert store.load("nb", "res", "gpu", root=tmp_path)["acc"] == 3.0
    assert store.stored_profiles("nb", root=tmp_path) == ["gpu", "cpu"]


def test_smoke_results_never_go_to_data_results(tmp_path):
    from maelab.options import DryRunLimits, RunOptions

    assert store.results_root("smoke") != store.results_root("cpu")
    assert store.results_root("cpu") == paths.committed_results()
    assert ".cache" in store.results_root("smoke").parts
    # the run options' results folder, given or a dry run's, decides where the options say nothing else
    given = RunOptions(results_root=str(tmp_path / "r"))
    assert store.results_root("smoke", given) == store.results_root("cpu", given) == tmp_path / "r"
    dry = RunOptions(dry_run=DryRunLimits(scratch=str(tmp_path / "s")))
    assert store.results_root("cpu", dry) == tmp_path / "s" / "results"
    assert store.results_root("smoke", RunOptions()) == store.results_root("smoke")


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"profile": "huge"}, "profile"),
        ({"notebook": "../etc"}, "notebook"),
    ],
)
def test_bad_arguments(tmp_path, kwargs, name):
    args = {"notebook": "nb", "profile": "cpu", **kwargs}
    with pytest.raises(ParameterError, match=name):
        store.load_or_compute("res", {}, lambda: {}, root=tmp_path, log=None, **args)


def test_config_hash_distinguishes_and_rejects_unhashable():
    assert store.config_hash({"a": 1}) != store.config_hash({"a": 2})
    assert store.config_hash({"a": (1, 2)}) == store.config_hash({"a": [1, 2]})
    with pytest.raises(ParameterError, match="config"):
        store.config_hash({"a": object()})
    with pytest.raises(ParameterError, match="config"):
        store.config_hash({"a": float("nan")})


def test_git_state_ignores_changes_to_stored_results(tmp_path):
    import subprocess

    def git(*a):
        subprocess.run(["git", *a], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "code.py").write_text("x = 1\n")
    (tmp_path / "data" / "results").mkdir(parents=True)
    (tmp_path / "data" / "results" / "r.json").write_text("{}\n")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    assert store.git_state(tmp_path)["dirty"] is False
    (tmp_path / "data" / "results" / "r.json").write_text('{"a": 1}\n')
    assert store.git_state(tmp_path)["dirty"] is False
    (tmp_path / "code.py").write_text("x = 2\n")
    assert store.git_state(tmp_path)["dirty"] is True


# ----------------------------------------------------------------------------------------------- issue 10
def _record(tmp_path, notebook="nb", name="res", profile="cpu") -> Path:
    return tmp_path / notebook / f"{name}.{profile}.json"


def test_nan_and_inf_round_trip_exactly(tmp_path):
    vals = {
        "nan": float("nan"),
        "list": [float("inf"), -math.inf, 1.5, None, "inf"],
        "nested": {"x": np.float64("nan")},
    }
    r1 = store.load_or_compute("res", {"x": 1}, lambda: vals, notebook="nb", profile="cpu", root=tmp_path, log=None)
    r2 = store.load("nb", "res", "cpu", root=tmp_path)
    for r in (r1, r2):
        assert isinstance(r["nan"], float) and math.isnan(r["nan"])
        assert r["list"][:2] == [math.inf, -math.inf] and r["list"][2:] == [1.5, None, "inf"]  # the string stays
        assert math.isnan(r["nested"]["x"])
    text = _record(tmp_path).read_text()
    assert "NaN" not in text and "Infinity" not in text  # strict JSON on disk
    with pytest.raises(ParameterError, match="reserved"):
        store.load_or_compute(
            "res2", {}, lambda: {"a": {"__float__": "nan"}}, notebook="nb", profile="cpu", root=tmp_path, log=None
        )


def test_edited_value_is_tampering_and_is_recomputed(tmp_path, capsys):
    calls = []
    store.load_or_compute("res", {"x": 1}, _fn(calls, 1.0), notebook="nb", profile="cpu", root=tmp_path, log=None)
    path = _record(tmp_path)
    rec = json.loads(path.read_text())
    rec["data"]["acc"] = 0.99  # a plausible hand edit, valid JSON
    path.write_text(json.dumps(rec, indent=1, sort_keys=True))
    with pytest.raises(store.RecordError, match="tampered") as e:
        store.load("nb", "res", "cpu", root=tmp_path)
    assert "\n" not in str(e.value)
    r = store.load_or_compute("res", {"x": 1}, _fn(calls, 1.0), notebook="nb", profile="cpu", root=tmp_path, log=None)
    assert len(calls) == 2 and r["acc"] == 1.0 and store.load("nb", "res", "cpu", root=tmp_path)["acc"] == 1.0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "tampered" in err[0] and "recomputing" in err[0]


def test_a_record_stripped_to_the_old_format_is_not_trusted(tmp_path):
    """Removing the checksum and the schema (a 'downgrade') must not skip the check: old records need `migrate`."""
    calls = []
    store.load_or_compute("res", {"x": 1}, _fn(calls), notebook="nb", profile="cpu", root=tmp_path, log=None)
    path = _record(tmp_path)
    rec = json.loads(path.read_text())
    rec["data"]["acc"] = 0.5
    del rec["sha256"], rec["schema"]
    rec["provenance"]["schema"] = 1
    path.write_text(json.dumps(rec))
    with pytest.raises(store.OldSchemaError, match="maelab.store migrate"):
        store.load("nb", "res", "cpu", root=tmp_path)
    with pytest.raises(store.OldSchemaError):
        store.load_or_compute("res", {"x": 1}, _fn(calls), notebook="nb", profile="cpu", root=tmp_path, log=None)
    assert len(calls) == 1


def _unprivileged(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run python code in a child that obeys file permissions even when the tests run as root."""
    prefix = []
    if os.geteuid() == 0:
        import shutil

        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot drop CAP_DAC_OVERRIDE to test permissions")
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"]
    src = str(Path(store.__file__).resolve().parents[1])
    return subprocess.run(
        prefix + [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": src, "OMP_NUM_THREADS": "1", **(env or {})},
    )


def _chmod_tree(root: Path, writable: bool) -> None:
    for p in [root, *root.rglob("*")]:
        mode = p.stat().st_mode
        p.chmod(mode | 0o200 if writable else mode & ~0o222)


def test_read_only_results_folder_fails_before_computing(tmp_path):
    store.load_or_compute("old", {"x": 1}, _fn([]), notebook="nb", profile="cpu", root=tmp_path, log=None)
    marker = tmp_path.parent / f"{tmp_path.name}-computed"
    _chmod_tree(tmp_path, writable=False)
    try:
        p = _unprivileged(
            "import pathlib\nfrom maelab import store\n"
            f"r = store.load_or_compute('old', {{'x': 1}}, lambda: 1/0, notebook='nb', profile='cpu', "
            f"root={str(tmp_path)!r}, log=None)\nprint('render-only ok', r['acc'])\n"
            f"store.load_or_compute('new', {{'x': 1}}, lambda: pathlib.Path({str(marker)!r}).write_text('x') and {{}}, "
            f"notebook='nb', profile='cpu', root={str(tmp_path)!r}, log=None)\n"
        )
    finally:
        _chmod_tree(tmp_path, writable=True)
    assert "render-only ok 1.0" in p.stdout  # reading needs no write permission
    last = p.stderr.strip().splitlines()[-1]
    assert p.returncode != 0 and last.startswith("maelab.store.StoreError: results folder") and "not writable" in last
    assert not marker.exists()  # failed before computing


def _schema1_copy(dest):
    """A copy of the committed masking records in the schema-1 format they had before ``store migrate`` ran on
    them (migrate only adds ``schema``, ``sha256`` and ``provenance.migrated_from_schema``: removing them restores
    the old record byte for byte in content)."""
    import shutil

    shutil.copytree(paths.committed_results() / "masking", dest)
    for p in dest.glob("*.json"):
        rec = json.loads(p.read_text())
        if "migrated_from_schema" not in rec["provenance"]:  # written by today's store (claims records): not old
            p.unlink()
            continue
        rec.pop("schema", None), rec.pop("sha256", None), rec["provenance"].pop("migrated_from_schema", None)
        p.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")


def test_migrate_upgrades_committed_records_without_touching_values(tmp_path):
    _schema1_copy(tmp_path / "masking")
    old = {p.name: json.loads(p.read_text()) for p in (tmp_path / "masking").glob("*.json")}
    sides = {
        p.name: p.read_bytes()
        for p in (tmp_path / "masking").iterdir()
        if p.suffix != ".json" and not p.name.startswith(".")
    }
    assert old and all("sha256" not in r for r in old.values())  # the pre-migration format (schema 1)
    counts = store_admin.migrate(tmp_path, log=lambda s: None)
    assert counts == {"upgraded": len(old), "current": 0, "failed": 0}
    for name, rec in old.items():
        new = json.loads((tmp_path / "masking" / name).read_text())
        assert new["schema"] == store.SCHEMA and new["data"] == rec["data"] and new["arrays"] == rec["arrays"]
        notebook, (rname, profile) = "masking", name.split(".")[:2]
        assert store.load(notebook, rname, profile, root=tmp_path) is not None
    assert {
        p.name: p.read_bytes()
        for p in (tmp_path / "masking").iterdir()
        if p.suffix != ".json" and not p.name.startswith(".")
    } == sides
    before = {p.name: p.read_bytes() for p in (tmp_path / "masking").glob("*.json")}
    assert store_admin.migrate(tmp_path, log=lambda s: None) == {"upgraded": 0, "current": len(old), "failed": 0}
    assert {p.name: p.read_bytes() for p in (tmp_path / "masking").glob("*.json")} == before  # idempotent


def test_migrate_refuses_an_old_record_whose_side_file_changed(tmp_path):
    _schema1_copy(tmp_path / "masking")
    npz = tmp_path / "masking" / "spectra_2d.cpu.npz"
    npz.write_bytes(npz.read_bytes()[:-10] + b"0123456789")
    before = (tmp_path / "masking" / "spectra_2d.cpu.json").read_bytes()
    msgs = []
    counts = store_admin.migrate(tmp_path, log=msgs.append)
    assert counts["failed"] == 1 and any("spectra_2d.cpu.npz was changed" in m for m in msgs)
    assert (tmp_path / "masking" / "spectra_2d.cpu.json").read_bytes() == before
    assert store_admin.main(["migrate", str(tmp_path)]) == 1


# ----------------------------------------------------------------------------------------------- claims records
def _masking_claims(root, value, *, source_value=1.0):
    """One run of the masking notebook's bookkeeping: a stored source result and evidence derived from it."""
    from maelab import book
    from maelab.claims import Evidence

    ctx = book.setup("masking", book.RunOptions(profile="smoke", results_root=str(root)))
    res = ctx.load_or_compute("identity_1d", {"n": 3}, lambda: {"err": source_value})
    ctx.claim("bisulco.eq19_as_printed", Evidence(value=value, note="max over masks"), res)
    return ctx


def test_claims_record_is_not_rewritten_for_a_last_digit_difference(tmp_path):
    """The OPENBLAS case without OpenBLAS: evidence 1 ulp away (another BLAS kernel) keeps the stored record."""
    v = 1.2428489411147947
    first = _masking_claims(tmp_path, v).finish()
    path = first.path
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    again = _masking_claims(tmp_path, float(np.nextafter(v, 2.0))).finish()
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert again.from_store and again["claims"]["bisulco.eq19_as_printed"]["evidence"]["value"] == v


def test_claims_record_render_only_on_a_read_only_results_folder(tmp_path):
    code = (
        "import os, numpy as np\nfrom maelab import book, papers\nfrom maelab.claims import Evidence\n"
        "papers.install()\n"
        "ctx = book.setup('masking', book.RunOptions(profile='smoke', results_root=os.environ['RESULTS']))\n"
        "res = ctx.load_or_compute('identity_1d', {'n': 3}, lambda: {'err': 1.0})\n"
        "v = 1.2428489411147947\n"
        "v = v if os.environ.get('STEP') == '1' else float(np.nextafter(v, 2.0))\n"
        "ctx.claim('bisulco.eq19_as_printed', Evidence(value=v, note='max over masks'), res)\n"
        "ctx.finish()\nprint('finished')\n"
    )
    env = {"RESULTS": str(tmp_path)}
    assert _unprivileged(code, {**env, "STEP": "1"}).returncode == 0
    _chmod_tree(tmp_path, writable=False)
    try:
        p = _unprivileged(code, {**env, "STEP": "2"})
    finally:
        _chmod_tree(tmp_path, writable=True)
    assert p.returncode == 0 and "finished" in p.stdout, p.stderr[-500:]


def test_claims_evidence_changed_beyond_tolerance_warns_and_rewrites(tmp_path):
    from maelab import book

    first = _masking_claims(tmp_path, 0.5).finish()
    with pytest.warns(book.EvidenceChanged, match="evidence for bisulco.eq19_as_printed differs beyond rtol=1e-09"):
        second = _masking_claims(tmp_path, 0.5 * (1 + 1e-6)).finish()
    assert not second.from_store and second.path == first.path
    assert store.load("masking", "claims", "smoke", root=tmp_path)["claims"]["bisulco.eq19_as_printed"]["evidence"][
        "value"
    ] == 0.5 * (1 + 1e-6)


def test_claims_record_follows_its_sources(tmp_path):
    """A changed source (another config) re-keys the record: rewritten silently, no warning."""
    import warnings

    from maelab import book

    _masking_claims(tmp_path, 0.5).finish()
    ctx = book.setup("masking", book.RunOptions(profile="smoke", results_root=str(tmp_path)))
    from maelab.claims import Evidence

    res = ctx.load_or_compute("identity_1d", {"n": 4}, lambda: {"err": 2.0})
    ctx.claim("bisulco.eq19_as_printed", Evidence(value=0.7), res)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = ctx.finish()
    assert not out.from_store
    assert out["claims"]["bisulco.eq19_as_printed"]["sources"][0]["config_hash"] == res.provenance["config_hash"]


def test_claims_difference_tolerance():
    from maelab.book import claims_difference

    row = {"evidence": {"value": 1.0, "y": [1.0, float("nan")]}, "verdict": "supported", "sources": []}
    near = {"evidence": {"value": 1.0 + 5e-10, "y": [1.0, float("nan")]}, "verdict": "supported", "sources": []}
    far = {"evidence": {"value": 1.0 + 5e-9, "y": [1.0, float("nan")]}, "verdict": "supported", "sources": []}
    tiny = {"evidence": {"value": 0.0, "y": [1e-13, float("nan")]}, "verdict": "supported", "sources": []}
    assert claims_difference({"a": row}, {"a": near}) is None
    assert "beyond" in claims_difference({"a": row}, {"a": far})
    assert (
        claims_difference({"a": {**tiny, "evidence": {"value": 5e-13, "y": [0.0, float("nan")]}}}, {"a": tiny}) is None
    )  # atol
    assert "verdict" in claims_difference({"a": row}, {"a": {**near, "verdict": "inconclusive"}})
    assert "claims" in claims_difference({"a": row}, {"b": row})


def test_read_takes_only_the_stored_config_and_never_computes(tmp_path):
    calls = []
    r = store.load_or_compute("res", {"a": 1}, _fn(calls), notebook="nb", profile="cpu", root=tmp_path, log=None)
    got = store.read("nb", "res", "cpu", {"a": 1}, root=tmp_path)
    assert got is not None and got.provenance["config_hash"] == r.provenance["config_hash"] and got["acc"] == 1.0
    assert store.read("nb", "other", "cpu", {"a": 1}, root=tmp_path) is None  # nothing stored: None
    with pytest.raises(store.StoreMiss, match=r"^nb/res.cpu: no stored result with config hash \w+ \(stored: \w+\)$"):
        store.read("nb", "res", "cpu", {"a": 2}, root=tmp_path)  # stored under another config: never taken
    assert len(calls) == 1  # read computed nothing


def test_matches_says_whether_load_or_compute_would_load(tmp_path):
    from maelab.options import RunOptions

    opts = RunOptions(results_root=str(tmp_path))
    assert not store.matches("nb", "res", "cpu", {"a": 1}, opts)  # nothing stored
    store.load_or_compute("res", {"a": 1}, _fn([]), notebook="nb", profile="cpu", options=opts, log=None)
    assert store.matches("nb", "res", "cpu", {"a": 1}, opts) and not store.matches("nb", "res", "cpu", {"a": 2}, opts)
    (tmp_path / "nb" / "res.cpu.json").write_text("{}")  # a record that does not verify is not a match
    assert not store.matches("nb", "res", "cpu", {"a": 1}, opts)


def test_claims_difference_sees_a_reworded_criterion():
    """A record whose reason is not what today's criterion says of its own evidence is stale wording: rewritten."""
    from maelab import claims as C
    from maelab.book import claims_difference

    cid = "zhang.table1_linear_size_fashion_mnist"  # criterion Above(0.031) on mean -/+ 2 s.e.
    ev = C.Evidence.from_samples([0.0021, 0.0053, -0.0078])
    v, why = C.verdict(C.REGISTRY[cid], ev)
    row = {"evidence": ev.to_dict(), "verdict": v, "reason": why, "sources": []}
    assert claims_difference({cid: row}, {cid: row}) is None
    old = {**row, "reason": "-0.000133 <= 0.031"}  # the wording before the bound was printed
    assert "reads differently" in claims_difference({cid: old}, {cid: row})
