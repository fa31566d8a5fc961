"""Compute a page's independent runs side by side on one GPU: ``prefetch(specs)`` (their pre-training),
``compute_parts(tasks)`` (whole runs stored as parts) or ``compute_records(calls)`` (whole records, e.g. the shared
zoo's entries) before a sequential loop.

Why. On the lent H100 the book's models are far too small to fill the card: the first calibration measured
zhang_umae's ViT-Tiny step at 46 ms, about 26 microseconds per kernel and 0.55 % of the bf16 peak, a step bound by
the host's Python dispatch. N processes, each dispatching its own model, share the card with little loss each:
``benchmarks/gpu_concurrency.py`` measured 3.2x the images per second at 4 processes and 4.8x at 8 (3.4x at 8 by
the conservative wall clock). A page's compute functions train their runs one after another (one seed, one
variant at a time), each record all or nothing, so one record of ten runs outlasted a whole 8-minute installment.

How. A compute function that is about to pre-train a list of runs with :func:`maelab.experiments.pretrain` (data
from the spec, no callbacks) first calls ``prefetch(specs, device=..., caps=...)`` with the same specs. Where the
run options' ``train_workers`` (:class:`maelab.options.RunOptions`: given as ``workers``, else those of the record
being computed, :func:`maelab.parts.current_options`) is 2 or more, the specs go, in order, to a pool of that many
spawned worker processes (one torch thread each, started on the first call, daemonic: they end with the page);
each worker takes the next spec whose checkpoint no one is training, pre-trains it into the checkpoint cache
(:func:`maelab.experiments.pretrain`) and takes the next. The page's own loop goes on as before: its
``pretrain(spec)`` waits on the checkpoint folder's lock (``maelab.train.checkpoint.checkpoint_lock``) while a
worker trains that spec, then resumes the finished checkpoint, which takes no step; a spec no worker has reached is
trained by the loop itself (the workers skip a locked folder). Otherwise (0 or 1: the book's own runs, every test
but the pool's own) ``prefetch`` does nothing, so the cpu profile trains exactly as before. The same pool serves a
long cpu computation on a 2-core machine (the device runner with ``--device cpu --train-workers 2``): two one-thread
processes train about 1.6x the images of one two-thread process (``benchmarks/threading_speed.py``); a worker's
single thread may round differently from two, so such records are reproduced with the same pool.

What does not change: the numbers. A worker runs the same :func:`~maelab.experiments.pretrain` of the same spec on
the same device as the loop would, and the checkpoint resumes exactly (:mod:`maelab.train.checkpoint`); the record's
config is the spec's, whoever trained it. A worker's error is printed (one line, the spec's key) and left for the
loop, which trains the spec itself and meets the error there. The device runner
(``maelab.device.runner``) sets ``train_workers`` for the notebooks it runs on CUDA (``--train-workers``, default
:data:`DEFAULT_GPU_WORKERS`).

Whole parts. Pre-training is not all of a run: on the lent H200 (installment 2) ``compare_fashion_mnist``'s first
eight runs pre-trained side by side in 222 s, then the loop evaluated its runs one after another, 24-45 s each
(probes, fine-tuning, effective ranks) -- half the installment. Where the record's runs are stored as parts
(:mod:`maelab.parts`, on in every installment), a compute function therefore hands the parts themselves to the
pool, :func:`compute_parts`, which waits for them; its own loop then loads each part. A part is the same record
whoever computed it (same config, same code, the store's lock), so the numbers do not change here either.

Whole records. A page whose results are independent records (``cao_decoder``'s runs, ``zhang_regime``'s seeds, the
shared zoo's entries) hands the pending ones to :func:`compute_records`: a page through
:meth:`maelab.book.Context.load_or_compute_many`, the zoo through ``maelab.zoo``. A worker stores the record as the
page would, with run options whose ``train_workers`` is 0 (no pool inside the pool), and the page then loads it.

A worker that dies. A worker killed mid-job (for memory on a lent machine, a crash in a compiled kernel) or at its
start (a program whose children cannot import it) stores nothing, since a record or a part is written whole or not
at all, and it releases its locks with its process. Waiting for the pool (:func:`compute_parts`,
:func:`compute_records`, :func:`join`) therefore never waits on a dead worker: each worker reports when it is ready,
takes a job and finishes one, on a pipe of its own, which closes when it dies; a wait counts a dead worker's job as
ended and prints one line (and checks the workers' liveness every ``POLL_S`` seconds without news). The caller
then meets that job as it meets one a worker failed on: it computes it itself. A pool that lost a worker is retired
after the wait (a worker killed while it waited on the job queue can leave the queue's lock held), and the next
call starts a fresh pool.
"""

from __future__ import annotations

import atexit
import multiprocessing as mp
import sys
from collections.abc import Iterable
from multiprocessing import connection

from . import parts
from ._util import resolve_device

#: The pool on a lent GPU (``maelab.device.runner``'s default): ``benchmarks/gpu_concurrency.py`` measured 4.8x
#: one process's images per second at 8 processes on the lent H100 and 5.3x at 14.
DEFAULT_GPU_WORKERS = 8

EXIT_WAIT_S = 2.0  # at exit, seconds a worker may take to finish before it is ended
POLL_S = 1.0  # a wait checks the workers' liveness after this many seconds without news from them
_READY, _TOOK, _DONE = "ready", "took", "done"  # what a worker reports
_pools: dict[tuple, _Pool] = {}  # (device, caps) -> its pool


def pool_size(given: int | None = None) -> int:
    """The pool size: ``given``, else the ``train_workers`` of the run options of the record being computed
    (:func:`maelab.parts.current_options`), else 0."""
    if given is not None:
        return int(given)
    options = parts.current_options()
    return 0 if options is None else int(options.train_workers)


class _RecordJob:
    """A whole record to compute and store in a worker: ``fn()`` (picklable) calls the store itself."""

    def __init__(self, key: str, fn) -> None:
        self.key, self.fn = key, fn


class _PartJob:
    """A part (:class:`maelab.parts.Task`) to compute in a worker, inside its record's scope."""

    def __init__(self, task: parts.Task, where: dict) -> None:
        self.task, self.where = task, where

    @property
    def key(self) -> str:
        return f"{self.where['name']}{parts.SEPARATOR}{self.task.key}"


def _run(job, device: str, caps) -> None:
    from . import experiments
    from .train.checkpoint import checkpoint_lock, default_checkpoint_dir

    if isinstance(job, _PartJob):  # stored by the store, under its lock: the page's part() loads it
        with parts.scope(**job.where):
            job.task()
    elif isinstance(job, _RecordJob):  # likewise: the page's own load_or_compute then loads it
        job.fn()
    else:
        with checkpoint_lock(default_checkpoint_dir(job.key, caps), blocking=False) as mine:
            if mine:  # else someone (the page's loop) is training it: the next one
                experiments.pretrain(job, device=device, progress=False, caps=caps)


def _worker(jobs, report, device: str, caps) -> None:
    import torch

    torch.set_num_threads(1)
    resolve_device(device)  # on CUDA the process's float32 policy (_util.cuda_precision), before any job
    report.send(_READY)  # a pipe of its own: sent at once, no feeder thread that could die with the process
    while True:
        job = jobs.get()
        if job is None:
            return
        report.send(_TOOK)
        try:
            _run(job, device, caps)
        except Exception as e:  # left for the page's loop, which computes it and meets the error itself
            print(f"[prefetch] {job.key}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        finally:
            report.send(_DONE)


class _Pool:
    """``n`` spawned workers (CUDA cannot be used in a forked child) sharing one job queue, each reporting on a pipe
    of its own; the parent counts the jobs handed over and ended, and knows from the reports which worker is busy. A
    pool that lost a worker is retired once its wait is over (a worker killed while it waited on the queue may hold
    the queue's lock): the next call starts a fresh one."""

    def __init__(self, device: str, caps, n: int) -> None:
        ctx = mp.get_context("spawn")
        self.jobs = ctx.Queue()
        self.procs: dict[int, mp.process.BaseProcess] = {}
        self.reports: dict[int, object] = {}  # worker number -> the parent's end of its pipe
        self.state: dict[int, str] = {}  # worker number -> its last report (absent: not ready yet)
        self.handed = self.ended = 0
        self.lost = False  # a worker died
        for k in range(n):
            mine, theirs = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_worker, args=(self.jobs, theirs, str(device), caps), daemon=True)
            p.start()
            theirs.close()  # the child's copy is its own: its death closes the pipe
            self.procs[k], self.reports[k] = p, mine

    def put(self, job) -> None:
        self.jobs.put(job)
        self.handed += 1

    def _dead(self, k: int) -> None:
        p = self.procs.pop(k)
        p.join(EXIT_WAIT_S)
        self.reports.pop(k).close()
        busy = self.state.pop(k, None) == _TOOK
        self.ended += busy
        self.lost = True
        what = "its job is left to the page" if busy else "it held no job"
        print(f"[prefetch] worker {k} ended (exit code {p.exitcode}): {what}", file=sys.stderr, flush=True)

    def _poll(self, timeout: float) -> bool:
        """Read the workers' reports (waiting up to ``timeout`` for one); a closed pipe is a dead worker. True if
        anything was read."""
        ready = connection.wait(list(self.reports.values()), timeout)
        for k in [k for k, r in self.reports.items() if r in ready]:
            try:
                what = self.reports[k].recv()
            except (EOFError, OSError):
                self._dead(k)
                continue
            self.ended += what == _DONE
            self.state[k] = what
        for k in [k for k, p in self.procs.items() if not p.is_alive() and k not in self.state]:
            self._dead(k)  # ended before it was ready and its pipe has not closed yet
        return bool(ready)

    def wait(self) -> None:
        """Until every job handed over has ended, or has no live worker left to end it."""
        while self.ended < self.handed:
            if self._poll(POLL_S):
                continue
            live_idle = self.procs and all(self.state.get(k) in (_READY, _DONE) for k in self.procs)
            if not self.procs or (self.lost and live_idle):
                # no worker left; or the live ones wait on the queue after a worker died holding a job it had not
                # yet reported (or holding the queue's lock): what is left is the page's
                left = self.handed - self.ended
                print(f"[prefetch] {left} job(s) left to the page: no live worker holds them", file=sys.stderr)
                self.ended = self.handed

    def healthy(self) -> bool:
        """No worker has died (reports read without waiting)."""
        if self.procs:
            self._poll(0)
        return not self.lost

    def shutdown(self, timeout: float | None) -> None:
        for _ in self.procs:
            self.jobs.put(None)
        for p in self.procs.values():
            p.join(timeout)
            if p.is_alive():
                p.terminate()
                p.join()
        for r in self.reports.values():
            r.close()
        self.jobs.cancel_join_thread()  # jobs no live worker will read are dropped, not flushed forever
        self.jobs.close()
        self.jobs.join_thread()


def _pool(device: str, caps, n: int) -> _Pool:
    """The pool of ``n`` workers for (``device``, ``caps``), started on first use and again after it lost one."""
    key = (str(device), caps)
    if key in _pools and not _pools[key].healthy():
        _pools.pop(key).shutdown(EXIT_WAIT_S)
    if key not in _pools:
        if not _pools:
            atexit.register(shutdown, EXIT_WAIT_S)
        _pools[key] = _Pool(str(device), caps, n)
    return _pools[key]


def prefetch(specs: Iterable, *, device: str, caps=None, workers: int | None = None) -> int:
    """Hand ``specs`` (:class:`maelab.experiments.PretrainSpec`, in the order the caller will train them) to the
    worker pool, where the pool size (``workers``, see :func:`pool_size`) is 2 or more; returns how many were handed
    over (0: no pool). ``device``: the device the caller trains on; ``caps``: its dry-run caps (the checkpoints then
    go to the dry run's scratch folder, as the caller's do)."""
    n = pool_size(workers)
    specs = list(dict.fromkeys(specs))  # each once, in order
    if n < 2 or not specs:
        return 0
    pool = _pool(device, caps, n)
    for s in specs:
        pool.put(s)
    return len(specs)


def compute_parts(tasks: Iterable, *, device: str, caps=None, workers: int | None = None) -> int:
    """Compute the parts ``tasks`` (:class:`maelab.parts.Task`, picklable) of the record being computed in the
    worker pool and wait for them, where parts are on (:func:`maelab.parts.record_scope`) and the pool size
    (``workers``, see :func:`pool_size`) is 2 or more; returns how many were handed over (0: none, and the caller
    trains as before -- e.g. :func:`prefetch` its pre-training only). Each worker computes a whole part, training
    and evaluation, inside the record's scope: it is stored as the part the caller's own ``part`` call then loads
    (a part already stored is not handed over; one a worker failed on, or died computing, is computed by the
    caller, which meets the error itself). ``device``, ``caps``: as :func:`prefetch`'s."""
    where = parts.record_scope()
    n = pool_size(workers)
    tasks = [t for t in tasks if not parts.stored(t.key, t.config)] if where is not None and n >= 2 else []
    if not tasks:
        return 0
    pool = _pool(device, caps, n)
    for t in tasks:
        pool.put(_PartJob(t, where))
    join()
    return len(tasks)


def compute_records(calls: dict, *, device: str, caps=None, workers: int | None = None) -> int:
    """Compute whole store records in the worker pool and wait for them, where the pool size (``workers``, see
    :func:`pool_size`) is 2 or more; returns how many were handed over (0: none). ``calls``: ``{key: fn}``, each
    ``fn`` a picklable call that loads or computes and stores one record (e.g. a ``functools.partial`` of a
    module-level function around :func:`maelab.store.load_or_compute`): the records the caller then loads, as
    :func:`compute_parts` does for parts (a record a worker failed on, or died computing, is computed by the caller,
    which meets the error itself). ``device``, ``caps``: as :func:`prefetch`'s."""
    n = pool_size(workers)
    if n < 2 or not calls:
        return 0
    pool = _pool(device, caps, n)
    for key, fn in calls.items():
        pool.put(_RecordJob(key, fn))
    join()
    return len(calls)


def join() -> None:
    """Wait until every pool has worked through what it was handed, or has no live worker left for it (tests; a
    caller that wants the checkpoints before it goes on)."""
    for key, pool in list(_pools.items()):
        pool.wait()
        if pool.lost:  # retired: its queue may be jammed by a worker killed while it waited on it
            _pools.pop(key).shutdown(EXIT_WAIT_S)


def shutdown(timeout: float | None = None) -> None:
    """End every pool's workers after what they were handed (``timeout``: seconds to wait for each before ending it
    at once) and forget the pools. Registered to run, with a short timeout, when the process exits."""
    for pool in _pools.values():
        pool.shutdown(timeout)
    _pools.clear()
