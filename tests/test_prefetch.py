"""maelab.prefetch: a page's runs pre-trained by a pool of worker processes, then resumed by the page's own loop
with the same numbers; the checkpoint lock that keeps two writers off one checkpoint."""

import fcntl
import json

import numpy as np
import pytest
import torch

from maelab import experiments as E
from maelab import prefetch
from maelab._validate import ParameterError
from maelab.train.checkpoint import LOCK_NAME, checkpoint_lock, default_checkpoint_dir


def _spec(seed):
    return E.PretrainSpec(dataset="shapes", n_train=64, n_test=32, size="micro", epochs=2, batch_size=32, seed=seed)


@pytest.fixture()
def pool():
    yield
    prefetch.shutdown()


def test_prefetched_runs_resume_with_the_numbers_of_the_loop_s_own_training(cache, tmp_path, monkeypatch, pool):
    specs = [_spec(0), _spec(1)]
    assert prefetch.prefetch(specs + [specs[0]], device="cpu", workers=2) == 2  # each spec once
    prefetch.join()
    got = [E.pretrain(s, device="cpu", progress=False) for s in specs]
    # the workers trained both: the loop's call resumed a finished checkpoint and took no step
    assert [r[1].resumed_from for r in got] == [(2, 0), (2, 0)]
    # the same specs trained by the loop itself, one thread as the workers, in a fresh cache
    monkeypatch.setenv("MAELAB_CACHE", str(tmp_path / "own"))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        own = [E.pretrain(s, device="cpu", progress=False) for s in specs]
    finally:
        torch.set_num_threads(threads)
    for (m1, r1, _, _), (m2, r2, _, _) in zip(got, own):
        assert r2.resumed_from is None
        assert [h["loss"] for h in r1.history] == [h["loss"] for h in r2.history]
        for (k, a), b in zip(m1.state_dict().items(), m2.state_dict().values()):
            assert torch.equal(a, b), k


def test_no_pool_unless_asked_for_two_or_more_workers(cache, tmp_path):
    from maelab import store
    from maelab.options import RunOptions

    assert prefetch.prefetch([_spec(0)], device="cpu") == 0  # outside a record: no run options, no pool
    assert prefetch.prefetch([_spec(0)], device="cpu", workers=1) == 0
    assert not default_checkpoint_dir(_spec(0).key).exists()  # nothing was trained
    # inside a record being computed, the pool size is its run options' train_workers
    seen = []

    def fn():
        seen.append(prefetch.pool_size())
        return {"x": 1}

    for n in (0, 3):
        kw = dict(notebook="nb", profile="cpu", root=tmp_path / str(n), log=None)
        store.load_or_compute("r", {}, fn, options=RunOptions(train_workers=n), **kw)
    assert seen == [0, 3]
    with pytest.raises(ParameterError, match="train_workers must be a whole number"):
        RunOptions(train_workers=-1)


def test_a_checkpoint_held_by_another_writer_is_skipped_or_waited_for(tmp_path):
    folder = tmp_path / "ck"
    with checkpoint_lock(folder) as mine:
        assert mine
        with checkpoint_lock(folder, blocking=False) as again:  # re-entrant in the holding process
            assert again
    # another writer (another open file description, as another process has) holds the folder
    folder.mkdir(exist_ok=True)
    with open(folder / LOCK_NAME, "a") as other:
        fcntl.flock(other, fcntl.LOCK_EX)
        with checkpoint_lock(folder, blocking=False) as mine:
            assert not mine
        fcntl.flock(other, fcntl.LOCK_UN)
    with checkpoint_lock(folder, blocking=False) as mine:
        assert mine


def test_a_device_program_s_workers_do_not_run_the_program_again(cache, tmp_path):
    """The device runner runs a notebook's program as a file; the pool's spawned workers must not import it as their
    main module (which would run the whole program once more per worker)."""
    import os
    import sys
    import time

    from maelab.device.runner import run_program

    marker = tmp_path / "ran"
    script = tmp_path / "program.py"
    script.write_text(
        "from maelab import experiments as E, prefetch\n"
        f"open({str(marker)!r}, 'a').write('x')\n"
        "spec = E.PretrainSpec(dataset='shapes', n_train=64, n_test=32, size='micro', epochs=1, batch_size=32)\n"
        "prefetch.prefetch([spec], device='cpu', workers=2)\n"
        "prefetch.join()\n"
        "print(E.pretrain(spec, device='cpu', progress=False)[1].resumed_from)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    out = run_program(script, tmp_path, env, time.monotonic() + 120, tmp_path / "log", grace_s=5)
    log = (tmp_path / "log").read_text()
    assert out["status"] == "finished", log
    assert marker.read_text() == "x" and log.strip().endswith("(1, 0)"), log  # run once; a worker trained it


def test_whole_parts_computed_by_the_pool_are_the_parts_the_loop_would_compute(cache, tmp_path, monkeypatch, pool):
    """compute_parts: inside a record with parts on, the workers compute and store each part (training and
    evaluation); the page's own part() then loads it; the values equal the part computed in this process."""
    import functools

    from maelab import parts, store
    from maelab.options import RunOptions

    specs = [_spec(0), _spec(1)]
    tasks = [
        parts.Task(f"run{s.seed}", {"spec": s.to_config()}, functools.partial(E.pretrain_and_evaluate, s, device="cpu"))
        for s in specs
    ]
    seen = {}

    def fn():
        seen["handed"] = prefetch.compute_parts(tasks, device="cpu")
        seen["stored"] = [parts.stored(t.key, t.config) for t in tasks]  # before the loop below computes any
        return {"acc": [t()["linear_acc"] for t in tasks], "loss": [t()["rec_loss"] for t in tasks]}

    def record(root, workers):
        kw = dict(notebook="nb", profile="smoke", root=root, log=None)
        options = RunOptions(store_parts=True, train_workers=workers)
        return store.load_or_compute("rec", {"n": 2}, fn, options=options, **kw)

    pooled = record(tmp_path / "pool", 2)
    assert seen == {"handed": 2, "stored": [True, True]}
    assert prefetch.compute_parts(tasks, device="cpu", workers=2) == 0  # outside a record: nothing handed
    monkeypatch.setenv("MAELAB_CACHE", str(tmp_path / "own-cache"))  # trained afresh, not resumed
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as a worker trains
    try:
        own = record(tmp_path / "own", 0)
    finally:
        torch.set_num_threads(threads)
    assert seen["handed"] == 0
    assert pooled.data == own.data


def _untimed(h):
    return {k: x for k, x in h.items() if k not in ("seconds", "images_per_s")} if isinstance(h, dict) else None


def test_zoo_entries_computed_whole_by_the_pool_equal_the_loop_s_own(cache, tmp_path, monkeypatch, pool):
    """zoo.compute with train_workers >= 2: the pool computes and stores every pending entry whole (training and
    measurement, prefetch.compute_records), the page's loop then loads each one; the records equal those the loop
    computes itself with one thread (as a worker) in a fresh cache."""
    from maelab import zoo
    from maelab.options import RunOptions

    S = zoo.ZooSettings.for_profile("smoke", seeds=[0], mask_ratios=[0.1, 0.75, 0.9], units=[1, 2])
    options = RunOptions(profile="smoke", device="cpu", results_root=str(tmp_path / "pool"), train_workers=2)
    pooled = zoo.compute(S, options)
    assert len(pooled) == 5 and all(r.from_store for r in pooled.values())  # every record stored by a worker
    assert prefetch.compute_records({}, device="cpu", workers=2) == 0  # nothing to hand over
    monkeypatch.setenv("MAELAB_CACHE", str(tmp_path / "own-cache"))  # trained afresh, not resumed
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as a worker computes
    try:
        own = zoo.compute(S, options.replace(results_root=str(tmp_path / "own"), train_workers=0))
    finally:
        torch.set_num_threads(threads)
    assert not any(r.from_store for r in own.values())
    for name, r in pooled.items():
        assert r.provenance["config_hash"] == own[name].provenance["config_hash"], name
        assert set(r.data) == set(own[name].data), name
        for k, v in r.data.items():
            w = own[name].data[k]
            if k == "train_seconds":  # wall clock
                continue
            if k == "history":  # its seconds and images per second are wall clock; nothing else in it may differ
                v, w = [_untimed(h) for h in v], [_untimed(h) for h in w]
            same = np.array_equal(v, w, equal_nan=True) if isinstance(v, np.ndarray) else json.dumps(v) == json.dumps(w)
            assert same, (name, k)


def test_a_page_s_independent_results_computed_by_the_pool_equal_its_own(cache, tmp_path, monkeypatch, pool):
    """Context.load_or_compute_many with train_workers >= 2: the pool computes and stores each pending result whole
    (prefetch.compute_records), the page then loads each; the records equal those the page computes one after
    another (train_workers 0, one thread as a worker) in a fresh cache. A stored one is not handed over, and the
    worker's own options start no pool inside the pool."""
    import functools

    from maelab import book

    def jobs():
        return {
            s.seed: (f"run_s{s.seed}", {"spec": s.to_config()}, functools.partial(E.pretrain_and_evaluate, s), [s.seed])
            for s in (_spec(0), _spec(1))
        }

    def ctx(root, workers):
        opts = book.RunOptions(profile="smoke", device="cpu", results_root=str(root), train_workers=workers)
        return book.setup("masking", opts.to_param())

    handed, real = [], prefetch.compute_records
    monkeypatch.setattr(
        prefetch, "compute_records", lambda calls, **kw: handed.append(dict(calls)) or real(calls, **kw)
    )
    pooled = ctx(tmp_path / "pool", 2).load_or_compute_many(jobs())
    assert [sorted(h) for h in handed] == [["run_s0", "run_s1"]] and all(r.from_store for r in pooled.values())
    assert [r.provenance["seeds"] for r in pooled.values()] == [[0], [1]]
    assert {call.args[-1].train_workers for call in handed[0].values()} == {0}  # no pool inside the pool
    again = ctx(tmp_path / "pool", 2).load_or_compute_many(jobs())  # all stored: nothing handed over
    assert handed[-1] == {} and all(a.path == b.path for a, b in zip(again.values(), pooled.values()))
    monkeypatch.setenv("MAELAB_CACHE", str(tmp_path / "own-cache"))  # trained afresh, not resumed
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as a worker computes
    try:
        own = ctx(tmp_path / "own", 0).load_or_compute_many(jobs())
    finally:
        torch.set_num_threads(threads)
    assert len(handed) == 2 and not any(r.from_store for r in own.values())
    for s, r in pooled.items():
        assert r.provenance["config_hash"] == own[s].provenance["config_hash"]
        for k, v in r.data.items():
            w = own[s].data[k]
            if k == "history":  # its seconds and images per second are wall clock; nothing else in it may differ
                v, w = [_untimed(h) for h in v], [_untimed(h) for h in w]
            if k != "train_seconds":  # wall clock
                same = (
                    np.array_equal(v, w, equal_nan=True)
                    if isinstance(v, np.ndarray)
                    else json.dumps(v) == json.dumps(w)
                )
                assert same, (s, k)
    with pytest.raises(ParameterError, match=r"jobs\[0\] must be a tuple \(name, config, fn, seeds\)"):
        ctx(tmp_path / "own", 0).load_or_compute_many({0: ("run_s0", {}, None)})
    # the gpu profile on a machine without CUDA: nothing handed over, and the page meets load_or_compute's refusal
    # (whose one line prices the page on this CPU: a synthetic calibration, not ~2 min of measuring in this cache)
    from conftest import synthetic_calibration

    from maelab.cost import calibration

    monkeypatch.setattr(calibration, "calibrate_cpu", lambda **_: synthetic_calibration())
    gpu = book.setup("masking", book.RunOptions(profile="gpu", device="cpu", results_root=str(tmp_path / "gpu"),
                                                train_workers=2).to_param())  # fmt: skip
    with pytest.raises(book.GpuUnavailable):
        gpu.load_or_compute_many(jobs())
    assert len(handed) == 2  # the pool was not asked
    bad = {0: ("run_s9", {"profile": "cpu"}, functools.partial(E.pretrain_and_evaluate, _spec(9)), [9])}
    with pytest.raises(ParameterError, match="config key must be not 'profile'"):
        ctx(tmp_path / "bad", 2).load_or_compute_many(bad)
    assert not (tmp_path / "bad").exists() or not list((tmp_path / "bad").rglob("run_s9*"))  # nothing stored


class _DiesWhenUnpickled:
    """As ``caps``: a worker's arguments that end the spawned worker before it is ready (as a program whose children
    cannot import it does)."""

    def __reduce__(self):
        import os

        return (os._exit, (5,))


def _within(seconds, fn):
    """``fn()``'s value, failing the test (rather than hanging it) if it has not returned within ``seconds``."""
    import threading

    out = {}
    t = threading.Thread(target=lambda: out.setdefault("value", fn()), daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still waiting after {seconds} s"
    return out["value"]


def test_a_worker_that_dies_holding_a_job_leaves_it_to_the_caller_and_the_pool_is_renewed(tmp_path, capfd, pool):
    import functools
    import os
    from pathlib import Path

    done = tmp_path / "done"
    calls = {"dies": functools.partial(os._exit, 3), "works": functools.partial(Path.write_text, done, "x")}
    assert _within(120, lambda: prefetch.compute_records(calls, device="cpu", workers=2)) == 2
    assert done.read_text() == "x"  # the live worker did its job
    assert "ended (exit code 3): its job is left to the page" in capfd.readouterr().err
    assert not prefetch._pools  # the pool that lost a worker is retired
    # the next call starts a fresh pool, whose two workers work
    again = {k: functools.partial(Path.write_text, tmp_path / k, k) for k in "ab"}
    assert _within(120, lambda: prefetch.compute_records(again, device="cpu", workers=2)) == 2
    assert [(tmp_path / k).read_text() for k in "ab"] == ["a", "b"]
    (p,) = prefetch._pools.values()
    assert len(p.procs) == 2 and all(w.is_alive() for w in p.procs.values()) and not p.lost


def test_a_pool_whose_workers_die_at_start_leaves_every_job_to_the_caller(tmp_path, capfd, pool):
    import functools
    from pathlib import Path

    calls = {k: functools.partial(Path.write_text, tmp_path / k, k) for k in "abc"}
    n = _within(120, lambda: prefetch.compute_records(calls, device="cpu", caps=_DiesWhenUnpickled(), workers=2))
    assert n == 3 and not any((tmp_path / k).exists() for k in "abc")  # handed over, done by no one
    err = capfd.readouterr().err
    assert err.count("(exit code 5): it held no job") == 2 and "3 job(s) left to the page" in err


@pytest.mark.parametrize("victim", [0, 1])
def test_a_worker_killed_while_it_waits_for_work_does_not_jam_the_next_call(tmp_path, capfd, pool, victim):
    """An idle worker waits on the job queue, one of them inside the queue's lock: killed there, it would leave the
    lock held and the other worker stuck. The next call finds the dead worker and starts a fresh pool."""
    import functools
    import time
    from pathlib import Path

    first = {"a": functools.partial(Path.write_text, tmp_path / "a", "a")}
    assert _within(120, lambda: prefetch.compute_records(first, device="cpu", workers=2)) == 1
    (p,) = prefetch._pools.values()
    deadline = time.monotonic() + 60
    while not all(p.state.get(k) in ("ready", "done") for k in p.procs) and time.monotonic() < deadline:
        p._poll(0.1)  # both workers are at the queue
    p.procs[victim].kill()
    p.procs[victim].join()
    again = {k: functools.partial(Path.write_text, tmp_path / k, k) for k in "bc"}
    assert _within(120, lambda: prefetch.compute_records(again, device="cpu", workers=2)) == 2
    assert [(tmp_path / k).read_text() for k in "bc"] == ["b", "c"]
    assert f"worker {victim} ended (exit code -9): it held no job" in capfd.readouterr().err
