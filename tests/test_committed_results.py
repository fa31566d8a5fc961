"""Every committed result is valid under the current code: its stored config hashes to its stored key, it loads
(side files intact), and the settings its config lists are today's settings for its profile -- so executing the
book with the committed profiles finds it instead of recomputing it. The end-to-end proof: every notebook executed
with ``--no-compute`` from a copy of ``data/results`` recomputes nothing and rewrites no record."""

import json
import shutil

import pytest

from maelab import book, parts, paths, profiles, store, zoo

ROOT = paths.committed_results()
RECORDS = sorted(ROOT.glob("*/*.json"))


def test_there_are_committed_records():
    assert len(RECORDS) >= 40


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_committed_record_hashes_to_its_key_and_loads(path):
    record = json.loads(path.read_text())
    prov = record["provenance"]
    notebook, (name, profile) = path.parent.name, path.name.split(".")[:2]
    assert (prov["notebook"], prov["name"], prov["profile"]) == (notebook, name, profile)
    assert store.config_hash(prov["config"]) == prov["config_hash"]
    assert store.load(notebook, name, profile, root=ROOT) is not None, "record unreadable or side files changed"
    if name == "claims" or notebook == book.PLAN_NOTEBOOK:  # plan tables: tests/test_dryrun.py
        return
    if parts.is_part(name):  # a finished run of a record an installment did not finish (maelab.parts)
        record = name.split(parts.SEPARATOR)[0]
        assert prov["config"]["part of"] == record and len(prov["config"]["record config"]) == 16
        # once its record is stored under the config it was computed for, the import prunes it (parts.prune)
        got = store.load(notebook, record, profile, root=ROOT)
        assert got is None or got.provenance["config_hash"] != prov["config"]["record config"], "a stale part"
        return  # that its record config is today's: the page's own test (tests/papers/test_zhang2022_umae_report.py)
    if notebook == zoo.NOTEBOOK:  # the shared zoo: no notebook; its record is the one today's zoo settings name
        S = zoo.ZooSettings.for_profile(profile)
        keys = dict(zoo.entries._job_key(S, j) for j in zoo.entries._jobs(S))
        assert store._canonical(keys[name]) == prov["config"], f"zoo/{name}: today's {profile} zoo settings differ"
        return
    assert prov["config"]["profile"] == profile
    assert "settings" not in prov["config"], "pre-migration key: run scripts/migrate_result_keys.py"
    # the settings a result lists are the ones the notebook has today for that profile
    current = store._canonical(profiles.settings(notebook, profile).as_dict())
    listed = {k: v for k, v in prov["config"].items() if k in current}
    assert listed == {k: current[k] for k in listed}


@pytest.mark.book
def test_no_compute_run_of_one_notebook(tmp_path, capsys):
    """``--no-compute`` executes a notebook from its committed results, and fails in one line on a miss."""
    shutil.copytree(ROOT / "bisulco_ising", tmp_path / "results" / "bisulco_ising")
    before = {p.name: p.read_bytes() for p in (tmp_path / "results" / "bisulco_ising").iterdir()}
    args = [
        "run",
        "--profile",
        "cpu",
        "--only",
        "bisulco_ising",
        "--no-compute",
        "--out",
        str(tmp_path / "ex"),
        "--results-dir",
        str(tmp_path / "results"),
    ]
    assert book.main(args) == 0
    assert {p.name: p.read_bytes() for p in (tmp_path / "results" / "bisulco_ising").iterdir()} == before
    capsys.readouterr()
    assert book.main(args + ["-p", "seeds=[0, 1]"]) == 1  # another key: would compute
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "StoreMiss: bisulco_ising/scales.cpu: no stored result with config hash" in err


@pytest.mark.book
def test_the_book_recomputes_no_committed_result(committed_book):
    """What ``make book`` runs (every notebook, ``--profile auto``) finds every result it needs among the committed
    ones: with ``--no-compute`` a miss fails the run (``StoreMiss``), and the claims records, which are rewritten
    when anything changed, come out byte-identical -- so ``make book`` leaves ``git status`` clean. (The run is the
    session fixture ``committed_book`` of ``tests/conftest.py``, shared with the page checks of ``test_html.py``.)"""
    _, _, before, after = committed_book
    assert sorted(after) == sorted(before), "files added or removed under data/results"
    assert [k for k in before if after[k] != before[k]] == [], "committed records rewritten"
