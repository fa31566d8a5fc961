"""maelab.store: results as data with provenance; config mismatch recomputes, never reuses silently."""
import json

import numpy as np
import pandas as pd
import pytest

from maelab import store
from maelab._validate import ParameterError


def _fn(counter, value=1.0):
    def fn():
        counter.append(1)
        return {"acc": value, "curve": np.arange(5.0) * value, "table": pd.DataFrame({"m": [0.1, 0.5], "y": [1, 2]}),
                "meta": {"note": "x", "list": [1, 2]}}
    return fn


def test_stores_all_kinds_and_reloads_identically(tmp_path):
    calls = []
    r1 = store.load_or_compute("res", {"a": 1, "b": [1, 2]}, _fn(calls), notebook="nb", profile="cpu", seeds=[3],
                               root=tmp_path, log=None)
    assert not r1.from_store and len(calls) == 1
    r2 = store.load_or_compute("res", {"b": [1, 2], "a": 1}, _fn(calls), notebook="nb", profile="cpu", seeds=[3],
                               root=tmp_path, log=None)  # key order does not matter
    assert r2.from_store and len(calls) == 1
    assert r2["acc"] == 1.0 and r2["meta"] == {"note": "x", "list": [1, 2]}
    np.testing.assert_array_equal(r2["curve"], np.arange(5.0))
    pd.testing.assert_frame_equal(r2["table"], pd.DataFrame({"m": [0.1, 0.5], "y": [1, 2]}))
    files = sorted(p.name for p in (tmp_path / "nb").iterdir())
    assert files == ["res.cpu.json", "res.cpu.npz", "res.cpu.table.csv"]


def test_provenance_fields(tmp_path):
    r = store.load_or_compute("res", {"a": 1}, _fn([]), notebook="nb", profile="gpu", seeds=[0, 1], root=tmp_path,
                              log=None)
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
    r = store.load_or_compute("res", {"lr": 0.2}, _fn(calls, 2.0), notebook="nb", profile="cpu", root=tmp_path,
                              log=msgs.append)
    assert len(calls) == 2 and not r.from_store and r["acc"] == 2.0
    assert any("config hash" in m and "recomputing" in m for m in msgs)
    # the stored record now carries the new config
    again = store.load("nb", "res", "cpu", root=tmp_path)
    assert again.provenance["config"] == {"lr": 0.2} and again["acc"] == 2.0


def test_recompute_flag_forces(tmp_path):
    calls = []
    for _ in range(2):
        store.load_or_compute("res", {"x": 1}, _fn(calls), notebook="nb", profile="cpu", root=tmp_path, log=None)
    store.load_or_compute("res", {"x": 1}, _fn(calls), notebook="nb", profile="cpu", root=tmp_path, recompute=True,
                          log=None)
    assert len(calls) == 2


def test_tampered_side_file_is_recomputed(tmp_path):
    calls = []
    store.load_or_compute("res", {"x": 1}, _fn(calls), notebook="nb", profile="cpu", root=tmp_path, log=None)
    csv = tmp_path / "nb" / "res.cpu.table.csv"
    csv.write_text(csv.read_text().replace("0.5", "0.7"))
    r = store.load_or_compute("res", {"x": 1}, _fn(calls), notebook="nb", profile="cpu", root=tmp_path, log=None)
    assert len(calls) == 2 and not r.from_store


def test_failure_leaves_nothing_behind(tmp_path):
    def boom():
        raise RuntimeError("fail")

    with pytest.raises(RuntimeError):
        store.load_or_compute("res", {"x": 1}, boom, notebook="nb", profile="cpu", root=tmp_path, log=None)
    assert not (tmp_path / "nb").exists() or not any((tmp_path / "nb").iterdir())

    # a value that cannot be stored fails before any record is written
    with pytest.raises(ParameterError, match="fn result"):
        store.load_or_compute("res", {"x": 1}, lambda: {"obj": object()}, notebook="nb", profile="cpu",
                              root=tmp_path, log=None)
    assert not list(tmp_path.rglob("*.json")) and not list(tmp_path.rglob(".*"))


def test_profiles_are_separate_files(tmp_path):
    store.load_or_compute("res", {"x": 1}, _fn([], 1.0), notebook="nb", profile="cpu", root=tmp_path, log=None)
    store.load_or_compute("res", {"x": 1}, _fn([], 3.0), notebook="nb", profile="gpu", root=tmp_path, log=None)
    assert store.load("nb", "res", "cpu", root=tmp_path)["acc"] == 1.0
    assert store.load("nb", "res", "gpu", root=tmp_path)["acc"] == 3.0
    assert store.stored_profiles("nb", root=tmp_path) == ["gpu", "cpu"]


def test_smoke_results_never_go_to_data_results(monkeypatch):
    monkeypatch.delenv("MAELAB_RESULTS_DIR", raising=False)
    assert store.results_root("smoke") != store.results_root("cpu")
    assert store.results_root("cpu") == store.repo_root() / "data" / "results"
    assert ".cache" in store.results_root("smoke").parts


@pytest.mark.parametrize("kwargs, name", [
    ({"profile": "huge"}, "profile"),
    ({"notebook": "../etc"}, "notebook"),
])
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
