"""Faults on purpose: writers killed mid-write, two writers racing, records tampered with, notebooks failing.

Each test names the guarantee it shows (README, section Reliability). Writers run in child processes; a child
replaces ``maelab.store._fault`` (a no-op seam at each step of the write protocol) to SIGKILL itself or to pause
at a chosen step, so interleavings are forced, not hoped for.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from maelab import book, paths, store, store_admin
from maelab._util import atomic_path
from maelab._validate import ParameterError
from maelab.book import builder
from maelab.claims import Evidence
from maelab.options import DryRunLimits, RunOptions

SRC = str(Path(store.__file__).resolve().parents[1])
ROOT = paths.repo_root()

PREAMBLE = textwrap.dedent("""
    import os, pathlib, signal, sys, time
    import numpy as np, pandas as pd
    from maelab import store, store_admin
    FLAGS = pathlib.Path(os.environ["FLAGS"])
    def fault(point):
        if point == os.environ.get("KILL_AT"):
            os.kill(os.getpid(), signal.SIGKILL)
        if point == os.environ.get("PAUSE_AT"):
            (FLAGS / "paused").write_text(point)
            while not (FLAGS / "go").exists():
                time.sleep(0.01)
    store._fault = fault
    def flush_print(*a):
        print(*a, flush=True)
""")


_CHILDREN: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _reap_children():
    """A child still waiting for a flag when its test failed is killed (never left running)."""
    yield
    while _CHILDREN:
        p = _CHILDREN.pop()
        if p.poll() is None:
            p.kill()
            p.wait()


def _values(tag: str, n: int) -> dict:
    return {"tag": tag, "arr": np.full(4, float(n)), "table": pd.DataFrame({"n": [n, n + 1]})}


def _child(code: str, tmp: Path, **env) -> subprocess.Popen:
    (tmp / "flags").mkdir(exist_ok=True)
    out = open(tmp / f"child-{time.monotonic_ns()}.out", "w+")
    p = subprocess.Popen(
        [sys.executable, "-c", PREAMBLE + textwrap.dedent(code)],
        stdout=out,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1", "FLAGS": str(tmp / "flags"), **env},
    )
    p.out_path = out.name  # type: ignore[attr-defined]
    _CHILDREN.append(p)
    return p


def _output(p) -> str:
    return Path(p.out_path).read_text()


def _wait_for(cond, what: str, timeout: float = 30.0) -> None:
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _git(repo: Path, *args) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def _repo_with_record(tmp: Path) -> Path:
    """A git repo (with the project's .gitignore) holding one committed record nb/res.cpu (tag 'old')."""
    repo = tmp / "repo"
    repo.mkdir()
    shutil.copy(ROOT / ".gitignore", repo / ".gitignore")
    store.load_or_compute(
        "res", {"v": 0}, lambda: _values("old", 0), notebook="nb", profile="cpu", root=repo / "results", log=None
    )
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    return repo


WRITE_NEW = """
    store.load_or_compute("res", {"v": 1}, lambda: {"tag": "new", "arr": np.full(4, 1.0),
                          "table": pd.DataFrame({"n": [1, 2]})}, notebook="nb", profile="cpu",
                          root=os.environ["RESULTS"], log=None)
"""


# ----------------------------------------------------------------------------------------------- kills
@pytest.mark.parametrize(
    "point, expect", [("before-publish", "old"), ("side-files-published", "old"), ("json-published", "new")]
)
def test_writer_killed_mid_write_leaves_a_whole_record(tmp_path, point, expect):
    """All or nothing: a SIGKILL at any step leaves the old record or the new one, each whole and verified."""
    repo = _repo_with_record(tmp_path)
    results = repo / "results"
    p = _child(WRITE_NEW, tmp_path, KILL_AT=point, RESULTS=str(results))
    assert p.wait(timeout=120) == -9, _output(p)
    r = store.load("nb", "res", "cpu", root=results)
    assert r["tag"] == expect and r["arr"].tolist() == [float(expect == "new")] * 4
    assert r["table"]["n"].tolist() == ([1, 2] if expect == "new" else [0, 1])
    status = _git(repo, "status", "--porcelain", "--untracked-files=all").splitlines()
    if point == "before-publish":
        assert status == []  # the half-written record lies in a gitignored temp folder only
    else:
        # the window between publishing the new side files and the JSON: unreferenced side files (listed by
        # `python -m maelab.store check`), never a JSON pointing at missing or foreign files
        assert all(
            line.startswith("??") and line.endswith((".csv", ".npz")) or line.endswith("res.cpu.json")
            for line in status
        ), status
    # the next write of that result removes every leftover of the killed writer
    store.load_or_compute(
        "res", {"v": 2}, lambda: _values("next", 2), notebook="nb", profile="cpu", root=results, log=None
    )
    assert store_admin.check(results, log=lambda s: None) == 0
    assert not [q for q in results.rglob("*") if q.name.startswith(".maelab-tmp")]


def test_killed_atomic_write_leaves_only_an_ignored_temp_file_that_is_cleaned_up(tmp_path):
    """Stray temp files: recognisable names, ignored by git, removed by the next write of the same target."""
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(ROOT / ".gitignore", repo / ".gitignore")
    _git(repo, "init", "-q")
    target = repo / "out" / "ckpt.pt"
    p = _child(
        f"""
        from maelab._util import atomic_path
        with atomic_path({str(target)!r}) as tmp:
            tmp.write_bytes(b"half")
            os.kill(os.getpid(), signal.SIGKILL)
    """,
        tmp_path,
    )
    assert p.wait(timeout=60) == -9
    left = [q.name for q in target.parent.iterdir()]
    assert len(left) == 1 and left[0].startswith(".maelab-tmp.ckpt.pt.")
    assert _git(repo, "status", "--porcelain", "--untracked-files=all").strip() == "?? .gitignore"
    with atomic_path(target) as tmp:
        tmp.write_bytes(b"whole")
    assert [q.name for q in target.parent.iterdir()] == ["ckpt.pt"] and target.read_bytes() == b"whole"


# ----------------------------------------------------------------------------------------------- races
def test_second_writer_waits_for_the_lock_and_reuses_the_fresh_result(tmp_path):
    """Per-result lock: B asks for the result while A computes it; B waits, then loads A's result (no recompute)."""
    results = tmp_path / "results"
    a = _child(
        """
        def slow():
            (FLAGS / "a_started").write_text("1")
            while not (FLAGS / "go").exists():
                time.sleep(0.01)
            return {"tag": "A", "arr": np.full(3, 1.0)}
        r = store.load_or_compute("res", {"v": 1}, slow, notebook="nb", profile="cpu", root=os.environ["RESULTS"],
                                  log=flush_print)
        print("A got", r["tag"], flush=True)
    """,
        tmp_path,
        RESULTS=str(results),
    )
    _wait_for(lambda: (tmp_path / "flags" / "a_started").exists(), "writer A to start computing")
    b = _child(
        """
        def fast():
            (FLAGS / "b_called").write_text("1")
            return {"tag": "B", "arr": np.full(3, 2.0)}
        r = store.load_or_compute("res", {"v": 1}, fast, notebook="nb", profile="cpu", root=os.environ["RESULTS"],
                                  log=flush_print)
        print("B got", r["tag"], r.from_store, flush=True)
    """,
        tmp_path,
        RESULTS=str(results),
    )
    _wait_for(lambda: "waiting for it" in _output(b), "writer B to wait for the lock")
    (tmp_path / "flags" / "go").write_text("1")
    assert a.wait(timeout=120) == 0 and b.wait(timeout=120) == 0, _output(a) + _output(b)
    assert "B got A True" in _output(b) and not (tmp_path / "flags" / "b_called").exists()
    r = store.load("nb", "res", "cpu", root=results)
    assert r["tag"] == "A" and r["arr"].tolist() == [1.0] * 3
    assert store_admin.check(results, log=lambda s: None) == 0


def test_racing_recomputes_never_mix_and_a_reader_sees_old_or_new(tmp_path):
    """Two writers forced to overlap (A paused after publishing its side files, B queued on the lock): a reader in
    between sees the old record whole; the end state is B's JSON with B's arrays."""
    repo = _repo_with_record(tmp_path)
    results = repo / "results"
    code = """
        tag = os.environ["TAG"]
        store.load_or_compute("res", {"v": 1}, lambda: {"tag": tag, "arr": np.full(4, float(len(tag)))},
                              notebook="nb", profile="cpu", root=os.environ["RESULTS"], recompute=True,
                              log=flush_print)
    """
    a = _child(code, tmp_path, TAG="A", PAUSE_AT="side-files-published", RESULTS=str(results))
    _wait_for(lambda: (tmp_path / "flags" / "paused").exists(), "writer A to pause mid-publish")
    b = _child(code, tmp_path, TAG="BB", RESULTS=str(results))
    _wait_for(lambda: "waiting for it" in _output(b), "writer B to queue on the lock")
    mid = store.load("nb", "res", "cpu", root=results)
    assert mid["tag"] == "old" and mid["arr"].tolist() == [0.0] * 4
    (tmp_path / "flags" / "go").write_text("1")
    assert a.wait(timeout=120) == 0 and b.wait(timeout=120) == 0, _output(a) + _output(b)
    end = store.load("nb", "res", "cpu", root=results)
    assert end["tag"] == "BB" and end["arr"].tolist() == [2.0] * 4
    assert store_admin.check(results, log=lambda s: None) == 0


# ----------------------------------------------------------------------------------------------- tampering
def _two_records(tmp_path):
    roots = tmp_path / "a", tmp_path / "b"
    for root, n in zip(roots, (1, 2)):
        store.load_or_compute(
            "res", {"v": 1}, lambda n=n: _values(f"w{n}", n), notebook="nb", profile="cpu", root=root, log=None
        )
    return roots


def test_one_writers_json_with_the_others_arrays_is_rejected(tmp_path):
    a, b = _two_records(tmp_path)
    (npz_a,) = (a / "nb").glob("*.npz")
    (npz_b,) = (b / "nb").glob("*.npz")
    npz_a.write_bytes(npz_b.read_bytes())  # the mix the issue saw accepted as valid
    with pytest.raises(store.RecordError, match="was changed"):
        store.load("nb", "res", "cpu", root=a)


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda t: t[: len(t) // 2], "unreadable"),
        (lambda t: "", "unreadable"),
        (lambda t: t.replace('"tag": "w1"', '"tag": "w9"'), "tampered"),
        (lambda t: t.replace('"v": 1', '"v": 7'), "tampered"),  # provenance is covered too
    ],
)
def test_edited_or_truncated_record_is_detected(tmp_path, edit, match):
    a, _ = _two_records(tmp_path)
    path = store.record_path(a, "nb", "res", "cpu")
    path.write_text(edit(path.read_text()))
    with pytest.raises(store.RecordError, match=match):
        store.load("nb", "res", "cpu", root=a)
    r = store.load_or_compute("res", {"v": 1}, lambda: _values("w1", 1), notebook="nb", profile="cpu", root=a, log=None)
    assert not r.from_store and store.load("nb", "res", "cpu", root=a)["tag"] == "w1"


def test_a_forged_checksum_cannot_point_outside_the_record(tmp_path):
    a, _ = _two_records(tmp_path)
    (tmp_path / "secret.csv").write_text("n\n5\n")
    path = store.record_path(a, "nb", "res", "cpu")
    rec = json.loads(path.read_text())
    rec["frames"]["table"] = {"file": "../../secret.csv", "sha256": store._sha256_file(tmp_path / "secret.csv")}
    rec["sha256"] = store.record_checksum(rec)
    path.write_text(json.dumps(rec))
    with pytest.raises(store.RecordError, match="not one of this record's"):
        store.load("nb", "res", "cpu", root=a)


def _claims_record(root, profile, value):
    ctx = book.setup("masking", RunOptions(profile=profile, results_root=str(root)))
    res = ctx.load_or_compute("identity_1d", {"n": 3}, lambda: {"err": 1.0})
    ctx.claim("bisulco.eq19_as_printed", Evidence(value=value), res)
    return ctx.finish()


def test_tampered_cpu_claims_record_is_an_error_on_the_scoreboard_not_a_fallback(tmp_path):
    _claims_record(tmp_path, "smoke", 0.0)  # smoke: "supported" (value < 1e-9)
    cpu = _claims_record(tmp_path, "cpu", 1.24)  # cpu: "not supported"
    board = book.collect_claims(root=tmp_path).set_index("id")
    assert board.loc["bisulco.eq19_as_printed", "verdict"] == "not supported"
    # flip the verdict by hand-editing the committed evidence
    cpu.path.write_text(cpu.path.read_text().replace("1.24", "1e-12"))
    board = book.collect_claims(root=tmp_path).set_index("id")
    row = board.loc["bisulco.eq19_as_printed"]
    assert row["verdict"] == book.RECORD_ERROR and row["profile"] == "cpu" and "tampered" in row["reason"]
    # a corrupt (unparsable) record says so too
    cpu.path.write_text("{")
    row = book.collect_claims(root=tmp_path).set_index("id").loc["bisulco.eq19_as_printed"]
    assert row["verdict"] == book.RECORD_ERROR and "claims.cpu.json: unreadable (JSONDecodeError" in row["reason"]
    # re-running the notebook restores the computed evidence: the edit does not survive
    again = _claims_record(tmp_path, "cpu", 1.24)
    assert (
        not again.from_store
        and book.collect_claims(root=tmp_path).set_index("id").loc["bisulco.eq19_as_printed", "verdict"]
        == "not supported"
    )


# ----------------------------------------------------------------------------------------------- runner
def test_only_without_names_is_an_error(monkeypatch, capsys):
    ran = []
    monkeypatch.setattr("maelab.book.runner.run_notebook", lambda name, *a, **k: ran.append(name))
    assert book.main(["run", "--only"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: only must be one or more notebook names") and "\n" not in err and not ran


def _fake_runs(monkeypatch, delays: dict, fail: set):
    """``run_notebook`` replaced by a sleep of ``delays[name]`` s that fails for the names in ``fail``; returns the
    log of (event, name, time) it keeps."""
    import threading

    log, guard = [], threading.Lock()

    def fake(name, options, out_dir, *, extra=None, root=None):
        with guard:
            log.append(("start", name, time.perf_counter()))
        time.sleep(delays.get(name, 0.0))
        with guard:
            log.append(("end", name, time.perf_counter()))
        if name in fail:
            raise book.NotebookFailed(f"notebook {name} failed")
        return Path(out_dir) / f"{name}.ipynb"

    monkeypatch.setattr("maelab.book.runner.run_notebook", fake)
    return log


def test_jobs_run_pages_side_by_side_and_the_scoreboard_after_them(monkeypatch, tmp_path):
    from maelab.book import runner

    names = ["a", "b", "c", "d", "scoreboard"]
    log = _fake_runs(monkeypatch, {"a": 0.3, "b": 0.1, "c": 0.1, "d": 0.1}, set())
    plan = [(n, book.RunOptions(profile="smoke")) for n in names]
    outs = runner._execute(plan, tmp_path, None, tmp_path, jobs=2)
    assert [p.stem for p in outs] == names  # plan order, whatever order they ended in
    t = {(e, n): x for e, n, x in log}
    assert t[("start", "b")] < t[("end", "a")]  # side by side
    running = max(  # never more than jobs at once
        sum(t[("start", m)] <= t[("start", n)] < t[("end", m)] for m in names) for n in names
    )
    assert running == 2
    assert t[("start", "scoreboard")] >= max(t[("end", n)] for n in "abcd")  # LAST after every other page
    with pytest.raises(ParameterError, match=r"^jobs \(--jobs\) must be"):
        book.run("smoke", only=["masking"], out_dir=tmp_path, jobs=0)


def test_a_failure_among_jobs_raises_the_first_failed_page_and_skips_the_scoreboard(monkeypatch, tmp_path):
    from maelab.book import runner

    # c fails first (at 0.05 s), a later (at 0.3 s): the error is a's, the first failed page in plan order
    log = _fake_runs(monkeypatch, {"a": 0.3, "c": 0.05, "e": 0.05, "f": 0.05, "g": 0.05}, {"a", "c"})
    plan = [(n, book.RunOptions(profile="smoke")) for n in ["a", "b", "c", "e", "f", "g", "scoreboard"]]
    with pytest.raises(book.NotebookFailed, match=r"^notebook a failed$"):
        runner._execute(plan, tmp_path, None, tmp_path, jobs=2)
    started = [n for e, n, _ in log if e == "start"]
    ended = [n for e, n, _ in log if e == "end"]
    assert "scoreboard" not in started and sorted(started) == sorted(ended)  # nothing left running
    assert "g" not in started  # the failure of c stopped the start of the rest


DEMO = """---
jupytext:
  text_representation: {extension: .md, format_name: myst}
kernelspec: {display_name: Python 3, language: python, name: python3}
---
# demo

```{code-cell} ipython3
:tags: [parameters]
run_options = None
fail = False
```

```{code-cell} ipython3
if fail:
    raise RuntimeError("boom")
print("fine")
```
"""


def _demo_root(tmp_path) -> Path:
    root = tmp_path / "site"
    (root / "notebooks").mkdir(parents=True)
    (root / "book").mkdir()
    (root / "notebooks" / "demo.md").write_text(DEMO)
    (root / "book" / "intro.md").write_text("# intro\n")
    (root / "_config.yml").write_text("title: demo\n")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n- file: notebooks/demo\n")
    return root


def test_failed_run_keeps_the_last_good_notebook_and_blocks_the_build(tmp_path):
    root, out = _demo_root(tmp_path), tmp_path / "executed"
    good = book.run_notebook("demo", "smoke", out, root=root)
    good_bytes = good.read_bytes()
    with pytest.raises(book.NotebookFailed, match="RuntimeError: boom"):
        book.run_notebook("demo", "smoke", out, root=root, extra={"fail": True})
    assert good.read_bytes() == good_bytes  # the last good executed notebook is untouched
    assert (out / "demo.failed.ipynb").exists()
    assert not [q for q in out.iterdir() if q.name.startswith(".maelab-tmp")]
    with pytest.raises(book.NotebookFailed, match="refusing to build .* demo \\(its last run failed"):
        book.stage(out, tmp_path / "stage", root=root)
    book.run_notebook("demo", "smoke", out, root=root)  # fixed: the build goes ahead
    assert not (out / "demo.failed.ipynb").exists()
    assert (book.stage(out, tmp_path / "stage", root=root) / "notebooks" / "demo.ipynb").exists()


def test_build_refuses_an_executed_notebook_showing_a_traceback(tmp_path):
    import nbformat

    root, out = _demo_root(tmp_path), tmp_path / "executed"
    out.mkdir()
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                "1/0",
                outputs=[
                    nbformat.v4.new_output("error", ename="ZeroDivisionError", evalue="division by zero", traceback=[])
                ],
            )
        ]
    )
    nbformat.write(nb, out / "demo.ipynb")
    with pytest.raises(book.NotebookFailed, match="demo \\(cell 0 shows ZeroDivisionError\\)"):
        book.stage(out, tmp_path / "stage", root=root)


# ----------------------------------------------------------------------------------------------- run modes (issue 24)
def _count_calls():
    calls = []

    def fn():
        calls.append(1)
        return {"v": 1.0}

    return fn, calls


def test_a_dry_run_never_stores_outside_its_scratch_folder(tmp_path):
    """A dry run's capped numbers are not part of a result's key: stored under a real root they would be loaded by
    the next plain run as real results. The store refuses, before computing; inside the scratch folder it works."""
    scratch = tmp_path / "scratch"
    dry = RunOptions(dry_run=DryRunLimits(scratch=str(scratch)))
    fn, calls = _count_calls()
    committed = paths.committed_results()
    for root in (tmp_path / "results", committed):
        kw = {"notebook": "nb", "profile": "cpu", "root": root, "options": dry}
        for write, args in ((store.load_or_compute, ("r", {"n": 1}, fn)), (store.save, ("r", {"n": 1}, {"v": 1.0}))):
            with pytest.raises(store.StoreError) as e:
                write(*args, **kw)
            msg = str(e.value)
            assert "\n" not in msg and "a dry run stores results only under its scratch folder" in msg
            assert "--dry-run" in msg
    assert not calls and not (tmp_path / "results").exists() and not (committed / "nb").exists()
    # without a root: the dry run's own (its scratch folder's results), where it may write
    r = store.load_or_compute("r", {"n": 1}, fn, notebook="nb", profile="cpu", options=dry)
    assert r["v"] == 1.0 and calls == [1] and r.path == scratch / "results" / "nb" / "r.cpu.json"
    # a scratch folder inside the committed results is refused too
    inside = RunOptions(dry_run=DryRunLimits(scratch=str(committed / "nb")))
    with pytest.raises(store.StoreError, match="a dry run stores results only under its scratch folder"):
        store.save("r", {"n": 1}, {"v": 1.0}, notebook="nb", profile="cpu", options=inside)
    assert not (committed / "nb").exists()


def test_record_mode_stores_nothing(tmp_path):
    record = RunOptions(no_compute="record", no_compute_log=str(tmp_path / "log.jsonl"))
    with pytest.raises(store.StoreError, match="^no_compute='record' stores nothing"):
        store.save("r", {"n": 1}, {"v": 1.0}, notebook="nb", profile="cpu", root=tmp_path, options=record)
    assert not (tmp_path / "nb").exists()


@pytest.mark.parametrize("var", ["MAELAB_DRY_RUN", "MAELAB_NO_COMPUTE", "MAELAB_ALLOW_CPU", "MAELAB_RESULTS_DIR"])
def test_a_run_mode_exported_by_hand_changes_nothing(var, monkeypatch, tmp_path):
    """Issue 24: ``MAELAB_DRY_RUN=1`` exported by hand used to turn a plain run into a dry run that stored capped
    numbers under real keys. Run options no longer travel by environment variables (issue 23): whatever is
    exported, ``python -m maelab.book run`` gives every kernel the options of its command line, and a plain store
    call is a plain run that computes and stores real results where it is told."""
    got = []
    monkeypatch.setattr("maelab.book.runner.run_notebook", lambda name, options, *a, **k: got.append(options))
    monkeypatch.setenv(var, {"MAELAB_RESULTS_DIR": str(tmp_path / "elsewhere")}.get(var, "1"))
    assert book.main(["run", "--profile", "cpu", "--only", "masking"]) == 0
    assert got == [RunOptions(profile="cpu")]
    fn, calls = _count_calls()
    r = store.load_or_compute("r", {"n": 1}, fn, notebook="nb", profile="cpu", root=tmp_path / "results", log=None)
    assert r["v"] == 1.0 and calls == [1] and r.path.is_relative_to(tmp_path / "results")
    assert not (tmp_path / "elsewhere").exists()


@pytest.mark.parametrize(
    "field, bad",
    [
        ("no_compute", "false"),  # issue 24: MAELAB_NO_COMPUTE=false was read as on
        ("no_compute", True),
        ("allow_cpu", "1"),
        ("allow_cpu", 1),
        ("progress", "0"),
        ("recompute", "yes"),
        ("seed", 2**70),
        ("seed", 1.0),
        ("profile", "huge"),
        ("device", "gpu"),
        ("dry_run", True),
        ("results_root", ""),
        ("git", {"commit": "abc", "dirty": False}),
    ],
)
def test_run_options_parse_strictly(field, bad):
    """Every run option is checked when the object is made: a bad value is one line naming the field, from the
    constructor and from the papermill parameter alike (never a guess)."""
    for make in (lambda: RunOptions(**{field: bad}), lambda: RunOptions.from_param({field: bad})):
        with pytest.raises(book.ParameterError) as e:
            make()
        assert _one_line(e.value, field).startswith(f"{field} must be "), str(e.value)


def test_run_options_round_trip_through_the_papermill_parameter():
    """What the runner injects (``to_param``: plain JSON) gives the same frozen object back in the kernel."""
    opts = RunOptions(
        profile="gpu",
        seed=7,
        device="cpu",
        progress=False,
        results_root="/tmp/r",
        dry_run=DryRunLimits(train_steps=3, scratch="/tmp/s"),
        allow_cpu=True,
        git=("0123456789abcdef0123456789abcdef01234567", True),
    )
    param = opts.to_param()
    assert json.loads(json.dumps(param)) == param  # a plain JSON value, as papermill writes it into the notebook
    assert RunOptions.from_param(param) == opts and RunOptions.from_param(opts) is opts
    assert RunOptions.from_param(None) == RunOptions() == RunOptions.from_param({})
    assert RunOptions.from_param({"profile": "smoke", "seed": 3}) == RunOptions(profile="smoke", seed=3)
    with pytest.raises(AttributeError):
        opts.seed = 1  # frozen
    for bad, name in (
        ({"sed": 1}, "run_options key"),
        ({"dry_run": {"steps": 1}}, "dry_run key"),
        ([1], "run_options"),
    ):
        with pytest.raises(book.ParameterError) as e:
            RunOptions.from_param(bad)
        assert _one_line(e.value, name).startswith(f"{name} must be ")
    with pytest.raises(book.ParameterError, match="^dry_run must be None with no_compute or recompute set"):
        RunOptions(dry_run=DryRunLimits(), no_compute="on")


def test_the_kernel_gets_the_run_options_of_the_command_line(monkeypatch):
    """The command line becomes one RunOptions; each notebook gets it with its own profile."""
    got = []
    monkeypatch.setattr("maelab.book.runner.run_notebook", lambda name, options, *a, **k: got.append(options))
    argv = ["run", "--profile", "smoke", "--only", "masking", "scoreboard", "--seed", "5", "--progress", "off"]
    assert book.main([*argv, "--no-compute", "--recompute", "--results-dir", "/tmp/r", "--device", "cpu"]) == 0
    want = RunOptions(
        profile="smoke", seed=5, device="cpu", recompute=True, progress=False, results_root="/tmp/r", no_compute="on"
    )
    assert got == [want, want]


def test_no_compute_off_computes_and_on_refuses(tmp_path):
    fn, calls = _count_calls()
    r = store.load_or_compute("r", {"n": 1}, fn, notebook="nb", profile="cpu", root=tmp_path, options=RunOptions())
    assert r["v"] == 1.0 and calls == [1]
    with pytest.raises(store.StoreMiss):
        store.load_or_compute(
            "r", {"n": 2}, fn, notebook="nb", profile="cpu", root=tmp_path, options=RunOptions(no_compute="on")
        )
    assert calls == [1]


# ----------------------------------------------------------------------------------------------- checkpoints (issue 24)
def _micro(name="mae", seed=0, **over):
    from maelab import models

    return models.create(name, "micro", img_size=8, in_chans=1, seed=seed, **over)


@pytest.mark.parametrize(
    "name, over, keys",
    [
        ("umae", {}, ["model.lambda_unif", "model.name"]),
        ("mae", {"mask_ratio": 0.5}, ["model.mask_ratio"]),
        ("mae", {"norm_pix_loss": False}, ["model.norm_pix_loss"]),
    ],
)
def test_a_checkpoint_never_resumes_into_another_model(tmp_path, monkeypatch, name, over, keys):
    from test_train import cfg, toy

    from maelab import ParameterError, train

    ck = tmp_path / "ck"
    train.train(_micro(), toy(), cfg(epochs=1), checkpoint_dir=ck, device="cpu")
    with pytest.raises(ParameterError) as e:
        train.train(_micro(name, **over), toy(), cfg(epochs=1), checkpoint_dir=ck, device="cpu")
    msg = str(e.value)
    assert "\n" not in msg and e.value.name == "model" and str(ck / "last.pt") in msg and "resume=False" in msg
    assert [k for k in keys if k not in msg] == []
    # the same model resumes (a finished run returns at once); another init seed is the same model
    assert train.train(_micro(seed=3), toy(), cfg(epochs=1), checkpoint_dir=ck, device="cpu").resumed_from == (1, 0)


def test_a_checkpoint_without_the_model_description_is_refused_unless_its_folder_vouches(tmp_path, monkeypatch):
    """Checkpoints written before the model description was stored: refused in one line naming the file (delete it
    or resume=False); the book's PretrainSpec folders, whose names hash the model's spec, adopt theirs."""
    import torch
    from test_train import cfg, toy

    from maelab import train
    from maelab.train.checkpoint import adopt_legacy_checkpoint

    ck = tmp_path / "ck"
    train.train(_micro(), toy(), cfg(epochs=1), checkpoint_dir=ck, device="cpu")
    old = torch.load(ck / "last.pt", weights_only=True)
    old.pop("model_config", None)
    torch.save(old, ck / "last.pt")
    with pytest.raises(train.CheckpointError) as e:
        train.train(_micro(), toy(), cfg(epochs=1), checkpoint_dir=ck, device="cpu")
    msg = str(e.value)
    assert "\n" not in msg and str(ck / "last.pt") in msg and "delete it" in msg and "resume=False" in msg
    with pytest.raises(train.CheckpointError, match="holds a MaskedAutoencoderViT, not a TinyMAE"):
        from test_train import tiny

        adopt_legacy_checkpoint(ck, tiny())
    assert adopt_legacy_checkpoint(ck, _micro()) and not adopt_legacy_checkpoint(ck, _micro())
    assert train.train(_micro(), toy(), cfg(epochs=1), checkpoint_dir=ck, device="cpu").resumed_from == (1, 0)


def test_the_train_command_refuses_to_resume_another_model_in_one_line(tmp_path, monkeypatch, capsys):
    from maelab.train import cli

    monkeypatch.setenv("MAELAB_CACHE", str(tmp_path))
    common = "--dataset mnist10k --num-train 32 --num-eval 16 --epochs 1 --warmup-epochs 0 --batch-size 16".split()
    assert cli.main([*common, "--name", "X", "--model", "mae", "--no-progress"]) == 0
    capsys.readouterr()
    rc = cli.main([*common, "--name", "X", "--model", "umae", "--set", "lambda_unif=0.1", "--no-progress"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("error: model must be ") and "model.lambda_unif=0.0" in err and "--no-resume" in err


def test_checkpoint_cache_folder_names_are_unchanged():
    """The book's checkpoint folders (PretrainSpec.key) key cached training runs: the model description stored in
    checkpoints does not change them."""
    from maelab.experiments import PretrainSpec

    assert PretrainSpec().key == "mae-micro-shapes-s0-e3f346edae46"
    spec = PretrainSpec(
        model="umae",
        dataset="mnist10k",
        channels=1,
        model_overrides=(("lambda_unif", 0.1),),
        mask_ratio=0.5,
        snapshot_epochs=(0, 5),
    )
    assert spec.key == "umae-micro-mnist10k-s0-afcc19143747"


# ----------------------------------------------------------------------------------------------- stale pages (issue 24)
def test_build_refuses_an_executed_notebook_older_than_what_it_was_computed_from(tmp_path):
    import nbformat

    root, out = _demo_root(tmp_path), tmp_path / "executed"
    out.mkdir()
    results = tmp_path / "results"
    (results / "demo").mkdir(parents=True)
    record = results / "demo" / "r.smoke.json"
    record.write_text("{}\n")
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("print('fine')")],
        metadata={"maelab": {"profile": "smoke", "results_root": str(results)}},
    )
    executed = out / "demo.ipynb"
    nbformat.write(nb, executed)
    t = time.time()
    source = root / "notebooks" / "demo.md"
    for p, age in ((source, 100), (record, 100), (executed, 50)):
        os.utime(p, (t - age, t - age))
    assert (book.stage(out, tmp_path / "stage", root=root) / "notebooks" / "demo.ipynb").exists()  # fresh: builds
    for newer, shown in ((source, "notebooks/demo.md"), (record, str(record))):
        os.utime(newer, (t, t))
        with pytest.raises(book.NotebookFailed) as e:
            book.stage(out, tmp_path / "stage", root=root)
        msg = str(e.value)
        assert "\n" not in msg and msg.startswith("refusing to build stale pages: demo (") and shown in msg
        assert "--only demo" in msg
        os.utime(newer, (t - 100, t - 100))
    # a notebook's settings module counts too
    inputs = builder._notebook_inputs("masking", executed, ROOT)
    assert ROOT / "notebooks" / "masking.md" in inputs
    assert any(p.name == "settings.py" and p.parent.name == "bisulco2025" for p in inputs)


# ----------------------------------------------------------------------------------------------- messages (issue 24)
def _one_line(err: Exception, *names: str) -> str:
    msg = str(err)
    assert "\n" not in msg, msg
    for n in names:
        assert n in msg, (n, msg)
    return msg


def test_a_huge_seed_is_refused_in_one_line():
    from maelab import ParameterError, profiles

    with pytest.raises(ParameterError) as e:
        profiles.validate_core({"seed": 2**70})
    assert _one_line(e.value, "seed").startswith("seed must be an integer >= 0 and <= 4294967295")
    profiles.validate_core({"seed": 2**32 - 1})


def test_book_out_naming_a_file_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    ran = []
    monkeypatch.setattr("maelab.book.runner.run_notebook", lambda name, *a, **k: ran.append(name))
    afile = tmp_path / "afile"
    afile.write_text("")
    for out in (afile, afile / "sub"):
        assert book.main(["run", "--only", "masking", "--out", str(out)]) == 1
        err = capsys.readouterr().err.strip()
        _one_line(err, "--out", "is a file", str(afile))
    assert not ran


def test_an_unbounded_range_is_written_open():
    import math

    from maelab import ParameterError
    from maelab.train import TrainConfig

    with pytest.raises(ParameterError) as e:
        TrainConfig(lr=math.inf)
    assert _one_line(e.value, "lr") == "lr must be a number in (0.0, inf); got inf"


def test_a_wrong_shape_checkpoint_names_the_shapes_in_one_line(tmp_path, monkeypatch):
    from test_train import cfg, tiny, toy

    from maelab import train

    ck = tmp_path / "ck"
    train.train(tiny(), toy(), cfg(epochs=1), checkpoint_dir=ck, device="cpu")
    other = tiny(embed_dim=16)
    other.embed_dim = 8  # describes itself as the stored model: only the weights' shapes differ
    with pytest.raises(train.CheckpointError) as e:
        train.train(other, toy(), cfg(epochs=1), checkpoint_dir=ck, device="cpu")
    msg = _one_line(e.value, str(ck / "last.pt"), "shape mismatches", "decoder_mix.weight (8, 8) vs model (16, 16)")
    assert "Error(s) in loading" not in msg


def test_fetch_with_a_data_dir_naming_a_file_or_a_garbage_archive_says_so_in_one_line(tmp_path, capsys):
    from maelab.data.__main__ import main

    afile, junk = tmp_path / "afile", tmp_path / "junk.tgz"
    afile.write_text("")
    junk.write_bytes(b"this is not an archive\n" * 10)
    assert main(["fetch", "mnist", "--data-dir", str(afile), "--from", str(junk)]) == 2
    _one_line(capsys.readouterr().err.strip(), "--data-dir", str(afile), "is a file")
    assert main(["fetch", "mnist", "--data-dir", str(tmp_path / "d"), "--from", str(junk)]) == 2
    err = _one_line(capsys.readouterr().err.strip(), "--from", str(junk), "train-images-idx3-ubyte")
    assert "maelab-mnist-" not in err  # not the temp folder, removed by now


def test_non_finite_pixels_are_named_as_bad_input_not_a_learning_rate(monkeypatch):
    from test_train import cfg, tiny, toy

    from maelab import ParameterError, train

    data = toy()
    data.images[5, 0, 3, 3] = float("nan")
    with pytest.raises(ParameterError) as e:
        train.train(tiny(), data, cfg(epochs=1), device="cpu")
    msg = _one_line(e.value, "data.images", "NaN or inf", "index 5")
    assert "blr" not in msg


# ------------------------------------------------------------------------------------ what the store trusts (issue 24)
def _two_in_one_folder(root: Path) -> None:
    """nb/res.cpu and nb/other.cpu (values, an npz and a CSV each) and nb/plain.cpu (JSON values only)."""
    for name, n in (("res", 1), ("other", 2)):
        store.load_or_compute(
            name, {"v": n}, lambda n=n: _values(f"w{n}", n), notebook="nb", profile="cpu", root=root, log=None
        )
    store.load_or_compute("plain", {"v": 0}, lambda: {"tag": "p"}, notebook="nb", profile="cpu", root=root, log=None)


def _side(root: Path, name: str, suffix: str, notebook: str = "nb") -> Path:
    (p,) = (root / notebook).glob(f"{name}.cpu.*{suffix}")
    return p


def _rewrite(path: Path, edit) -> None:
    """Edit a record's JSON and recompute its checksum: a forgery the checksum cannot see, caught elsewhere."""
    rec = json.loads(path.read_text())
    edit(rec)
    rec["sha256"] = store.record_checksum(rec)
    path.write_text(json.dumps(rec, indent=1))


def _swap(a: Path, b: Path) -> None:
    ba, bb = a.read_bytes(), b.read_bytes()
    a.write_bytes(bb), b.write_bytes(ba)


def _relink(path: Path, elsewhere: Path) -> None:
    """Move ``path`` to ``elsewhere`` and leave a symbolic link to it in its place (same bytes, seen through a link)."""
    elsewhere.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(path, elsewhere)
    path.symlink_to(elsewhere)


def _plain_text(root: Path, old: str, new: str) -> None:
    p = store.record_path(root, "nb", "plain", "cpu")
    p.write_text(p.read_text().replace(old, new))


# each case: what it does to a results root, the record it then asks for, a piece of the one-line refusal, and the
# path `check` must name
UNTRUSTED = {
    "renamed": (
        lambda r, t: (r / "nb" / "plain.cpu.json").rename(r / "nb" / "moved.cpu.json"),
        ("nb", "moved", "cpu"),
        "stands as nb/moved.cpu but was written as nb/plain.cpu",
    ),
    "copied to another profile": (
        lambda r, t: shutil.copy(r / "nb" / "plain.cpu.json", r / "nb" / "plain.gpu.json"),
        ("nb", "plain", "gpu"),
        "was written as nb/plain.cpu",
    ),
    "copied to another notebook folder": (
        lambda r, t: shutil.copytree(r / "nb", r / "nb2"),
        ("nb2", "res", "cpu"),
        "stands as nb2/res.cpu but was written as nb/res.cpu",
    ),
    "provenance names another notebook": (
        lambda r, t: _rewrite(
            store.record_path(r, "nb", "res", "cpu"), lambda rec: rec["provenance"].update(notebook="masking")
        ),
        ("nb", "res", "cpu"),
        "was written as masking/res.cpu",
    ),
    "side files swapped between records": (
        lambda r, t: _swap(_side(r, "res", ".npz"), _side(r, "other", ".npz")),
        ("nb", "res", "cpu"),
        "was changed (SHA-256 mismatch)",
    ),
    "side file missing": (lambda r, t: _side(r, "res", ".csv").unlink(), ("nb", "res", "cpu"), "is missing"),
    "record is a symbolic link": (
        lambda r, t: _relink(r / "nb" / "plain.cpu.json", t / "elsewhere" / "nb" / "plain.cpu.json"),
        ("nb", "plain", "cpu"),
        "record is a symbolic link",
    ),
    "side file is a symbolic link": (
        lambda r, t: _relink(_side(r, "res", ".npz"), t / "elsewhere" / "x.npz"),
        ("nb", "res", "cpu"),
        ".npz is a symbolic link",
    ),
    "notebook folder is a symbolic link": (
        lambda r, t: _relink(r / "nb", t / "elsewhere" / "nb"),
        ("nb", "res", "cpu"),
        "its folder is a symbolic link",
    ),
    "NaN literal": (lambda r, t: _plain_text(r, '"p"', "NaN"), ("nb", "plain", "cpu"), "NaN is not a JSON number"),
    "number overflowing a float": (
        lambda r, t: _plain_text(r, '"p"', "1e999"),
        ("nb", "plain", "cpu"),
        "number 1e999 overflows",
    ),
    "duplicate key (shows one value, loads another)": (
        lambda r, t: _plain_text(r, '"tag": "p"', '"tag": "FORGED", "tag": "p"'),
        ("nb", "plain", "cpu"),
        "duplicate key 'tag'",
    ),
}


def _files(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


@pytest.mark.parametrize("case", UNTRUSTED)
def test_load_check_and_migrate_refuse_the_same_records(tmp_path, case, capsys):
    """What the store trusts: one verification for loading and for the admin commands. A record is bound to its
    notebook, name and profile; links, non-plain files and non-strict JSON are refused; each in one line, by
    ``load`` (hence ``load_or_compute``: it recomputes), by ``check`` and by ``migrate`` (which writes nothing)."""
    root = tmp_path / "results"
    _two_in_one_folder(root)
    tamper, (notebook, name, profile), why = UNTRUSTED[case]
    tamper(root, tmp_path)
    with pytest.raises(store.RecordError) as e:
        store.load(notebook, name, profile, root=root)
    msg = _one_line(e.value, why)
    target = store.record_path(root, notebook, name, profile)
    assert msg.startswith(f"{target}: ")
    logs: list[str] = []
    assert store_admin.check(root, log=logs.append) >= 1
    assert any(str(target) in line or line.startswith(f"[check] stray: {root / notebook} ") for line in logs), logs
    before = _files(tmp_path)
    logs.clear()
    counts = store_admin.migrate(root, log=logs.append)
    assert counts["failed"] >= 1 and counts["upgraded"] == 0 and _files(tmp_path) == before
    assert any(line.startswith("[migrate] FAILED ") and why in line for line in logs), logs
    assert store_admin.main(["check", str(root)]) == 1 and store_admin.main(["migrate", str(root)]) == 1
    assert _files(tmp_path) == before
    capsys.readouterr()


def test_a_fifo_in_place_of_a_side_file_is_refused_not_waited_on(tmp_path):
    """A read of a FIFO blocks until someone writes to it: the store opens only plain files."""
    root = tmp_path / "results"
    _two_in_one_folder(root)
    npz = _side(root, "res", ".npz")
    npz.unlink()
    os.mkfifo(npz)
    p = _child(
        """
        root = os.environ["RESULTS"]
        try:
            store.load("nb", "res", "cpu", root=root)
        except store.RecordError as e:
            print("refused:", e, flush=True)
        print("check problems:", store_admin.check(root, log=lambda s: None), flush=True)
        print("migrate failed:", store_admin.migrate(root, log=lambda s: None)["failed"], flush=True)
    """,
        tmp_path,
        RESULTS=str(root),
    )
    assert p.wait(timeout=60) == 0, _output(p)
    out = _output(p)
    assert f"refused: {root / 'nb' / 'res.cpu.json'}: side file {npz.name} is not a plain file" in out
    assert (
        "check problems: 3" in out
    )  # the record, and its side files (the FIFO, the CSV): no trusted record names them
    assert "migrate failed: 1" in out


@pytest.mark.parametrize(
    "notebook, name, profile, param",
    [
        ("../outside", "res", "cpu", "notebook"),
        ("nb", "../../outside/res", "cpu", "name"),
        ("nb", "res", "c/u", "profile"),
    ],
)
def test_a_name_cannot_lead_outside_the_results_root(tmp_path, notebook, name, profile, param):
    """A valid record stands where ``../`` in a name would lead: ``load`` refuses the name before any path is built."""
    store.load_or_compute("res", {"v": 1}, lambda: {"tag": "x"}, notebook="outside", profile="cpu", root=tmp_path)
    (tmp_path / "results" / "nb").mkdir(parents=True)
    with pytest.raises(book.ParameterError) as e:
        store.load(notebook, name, profile, root=tmp_path / "results")
    assert _one_line(e.value, param).startswith(f"{param} must be ")


def test_check_lists_everything_under_the_root_that_is_not_a_trusted_record(tmp_path):
    """``check`` passes only what the loader trusts, the side files those records name in their own folder and
    lock files; everything else is listed (it was blind to all but temp files and unnamed csv/npz, and took a side
    file named by a record of another notebook for a valid one)."""
    root = tmp_path / "results"
    _two_in_one_folder(root)
    store.load_or_compute("res", {"v": 3}, lambda: _values("w3", 3), notebook="nb2", profile="cpu", root=root, log=None)
    assert store_admin.check(root, log=lambda s: None) == 0
    npz = _side(root, "res", ".npz")
    strays = [
        root / "x.json",
        root / "nb" / "notes.txt",
        root / "nb" / "res.cpu.json.bak",
        root / "nb" / ".hidden.json",
        root / "nb" / "sub",
        root / "nb2" / npz.name,
        root / "nb" / ".maelab-tmp-store.res.cpu.killed",
    ]
    (root / "x.json").write_text("{}")
    (root / "nb" / "notes.txt").write_text("notes")
    shutil.copy(root / "nb" / "res.cpu.json", root / "nb" / "res.cpu.json.bak")
    (root / "nb" / ".hidden.json").write_text("{}")
    (root / "nb" / "sub").mkdir()
    (root / "nb" / "sub" / "y.csv").write_text("a\n1\n")
    shutil.copy(npz, root / "nb2" / npz.name)
    (root / "nb" / ".maelab-tmp-store.res.cpu.killed").mkdir()
    logs: list[str] = []
    n = store_admin.check(root, log=logs.append)
    listed = sorted(line.split()[2] for line in logs if line.startswith("[check] stray: "))
    assert listed == sorted(map(str, strays)) and n == len(strays), logs
    # a notebook folder given as the root is not a results root
    assert store_admin.check(root / "nb2", log=lambda s: None) > 0


def _schema1_record(root: Path, name: str) -> Path:
    return root / "masking" / f"{name}.cpu.json"


def _edit_json(path: Path, edit) -> None:
    rec = json.loads(path.read_text())
    edit(rec)
    path.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")


def _strip(rec: dict, value: str) -> None:
    """Tamper with a current record's value and strip it to the old format (no checksum to recompute)."""
    rec["data"]["tag"] = value
    del rec["schema"], rec["sha256"]
    rec["provenance"]["schema"] = 1


def _stripped_current(root: Path, sides: bool) -> Path:
    vals = _values("w1", 1) if sides else {"tag": "w1"}
    store.load_or_compute("fresh", {"v": 1}, lambda: vals, notebook="masking", profile="cpu", root=root, log=None)
    path = _schema1_record(root, "fresh")
    _edit_json(path, lambda rec: _strip(rec, "FORGED"))
    return path


MIGRATE_CASES = {
    # an old record moved to another notebook folder: the loader would refuse it once upgraded, migrate did not
    "moved to another notebook": (
        lambda r: shutil.move(_schema1_record(r, "identity_1d"), r / "other" / "identity_1d.cpu.json"),
        "written as masking/identity_1d.cpu",
    ),
    # a listed array missing from the npz: migrate rewrote the JSON, then found it unreadable
    "npz without a listed array": (
        lambda r: _edit_json(_schema1_record(r, "spectra_2d"), lambda rec: rec["arrays"]["keys"].append("gone")),
        "does not hold exactly the listed arrays",
    ),
    # a malformed side-file entry: migrate crashed with a TypeError traceback
    "malformed side-file entry": (
        lambda r: _edit_json(_schema1_record(r, "spectra_2d"), lambda rec: rec.update(arrays="x")),
        "malformed record",
    ),
    # a current record, edited and stripped to the old format: migrate blessed the edit with a fresh checksum
    "current record stripped (side files)": (
        lambda r: _stripped_current(r, sides=True),
        "marks of the current format",
    ),
    "current record stripped (values only)": (
        lambda r: _stripped_current(r, sides=False),
        "marks of the current format (datasets)",
    ),
}


@pytest.mark.parametrize("case", MIGRATE_CASES)
def test_migrate_is_as_strict_as_loading(tmp_path, case):
    """``migrate`` verifies an old record as the loader does, all but the checksum it lacks, and writes nothing
    unless all of it holds; the genuine old records beside it are upgraded."""
    from test_store import _schema1_copy

    _schema1_copy(tmp_path / "masking")
    (tmp_path / "other").mkdir()
    n_old = len(list((tmp_path / "masking").glob("*.json")))
    tamper, why = MIGRATE_CASES[case]
    tamper(tmp_path)
    bad = [p for p in tmp_path.glob("*/*.json") if p.name.startswith("fresh") or p.parent.name == "other"]
    bad = bad or [_schema1_record(tmp_path, "spectra_2d")]
    before = {p: p.read_bytes() for p in bad}
    logs: list[str] = []
    counts = store_admin.migrate(tmp_path, log=logs.append)
    assert counts["failed"] == 1 and counts["upgraded"] == n_old - (case == "moved to another notebook") - (
        case.startswith("npz") or case.startswith("malformed")
    ), (counts, logs)
    (failed,) = [line for line in logs if line.startswith("[migrate] FAILED ")]
    assert _one_line(failed, str(bad[0]), why)
    assert {p: p.read_bytes() for p in bad} == before
    assert store_admin.main(["migrate", str(tmp_path)]) == 1


def test_pages_side_by_side_share_the_cores_and_the_environment_is_restored(monkeypatch, tmp_path):
    from maelab.book import runner

    seen = {}

    def fake(name, options, out_dir, *, extra=None, root=None):  # what a kernel started now would inherit
        seen[name] = {k: os.environ.get(k) for k in runner.THREAD_VARIABLES}
        return Path(out_dir) / f"{name}.ipynb"

    monkeypatch.setattr("maelab.book.runner.run_notebook", fake)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(5)), raising=False)
    for k in runner.THREAD_VARIABLES:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "3")  # the caller's own setting is kept
    plan = [(n, book.RunOptions(profile="smoke")) for n in ["a", "b", "scoreboard"]]
    runner._execute(plan, tmp_path, None, tmp_path, jobs=2)
    want = {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "3", "OPENBLAS_NUM_THREADS": "2"}  # 5 cores // 2 jobs
    assert seen["a"] == seen["b"] == want
    assert seen["scoreboard"] == {"OMP_NUM_THREADS": None, "MKL_NUM_THREADS": "3", "OPENBLAS_NUM_THREADS": None}
    runner._execute(plan, tmp_path, None, tmp_path, jobs=1)  # one at a time: nothing set
    assert seen["a"]["OMP_NUM_THREADS"] is None
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    runner._execute(plan, tmp_path, None, tmp_path, jobs=3)
    assert seen["a"]["OMP_NUM_THREADS"] == "1"  # never 0
