"""Pre-train a page's independent runs side by side on one GPU: ``prefetch(specs)`` before a sequential loop.

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
trained by the loop itself (the workers skip a locked folder). Otherwise (0 or 1: every CPU run, every test but the
pool's own) ``prefetch`` does nothing, so the cpu profile trains exactly as before.

What does not change: the numbers. A worker runs the same :func:`~maelab.experiments.pretrain` of the same spec on
the same device as the loop would, and the checkpoint resumes exactly (:mod:`maelab.train.checkpoint`); the record's
config is the spec's, whoever trained it. A worker's error is printed (one line, the spec's key) and left for the
loop, which trains the spec itself and meets the error there. The device runner
(``maelab.device.runner``) sets ``train_workers`` for the notebooks it runs on CUDA (``--train-workers``, default
:data:`DEFAULT_GPU_WORKERS`).
"""

from __future__ import annotations

import atexit
import multiprocessing as mp
import sys
from collections.abc import Iterable

from . import parts

#: The pool on a lent GPU (``maelab.device.runner``'s default): ``benchmarks/gpu_concurrency.py`` measured 4.8x
#: one process's images per second at 8 processes on the lent H100 and 5.3x at 14.
DEFAULT_GPU_WORKERS = 8

EXIT_WAIT_S = 2.0  # at exit, seconds a worker may take to finish before it is ended
_pools: dict[tuple, tuple] = {}  # (device, caps) -> (queue, processes)


def pool_size(given: int | None = None) -> int:
    """The pool size: ``given``, else the ``train_workers`` of the run options of the record being computed
    (:func:`maelab.parts.current_options`), else 0."""
    if given is not None:
        return int(given)
    options = parts.current_options()
    return 0 if options is None else int(options.train_workers)


def _worker(queue, device: str, caps) -> None:
    import torch

    torch.set_num_threads(1)
    from . import experiments
    from .train.checkpoint import checkpoint_lock, default_checkpoint_dir

    while True:
        spec = queue.get()
        try:
            if spec is None:
                return
            with checkpoint_lock(default_checkpoint_dir(spec.key, caps), blocking=False) as mine:
                if mine:  # else someone (the page's loop) is training it: the next one
                    experiments.pretrain(spec, device=device, progress=False, caps=caps)
        except Exception as e:  # left for the page's loop, which trains the spec and meets the error itself
            print(f"[prefetch] {spec.key}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        finally:
            queue.task_done()


def prefetch(specs: Iterable, *, device: str, caps=None, workers: int | None = None) -> int:
    """Hand ``specs`` (:class:`maelab.experiments.PretrainSpec`, in the order the caller will train them) to the
    worker pool, where the pool size (``workers``, see :func:`pool_size`) is 2 or more; returns how many were handed
    over (0: no pool). ``device``: the device the caller trains on; ``caps``: its dry-run caps (the checkpoints then
    go to the dry run's scratch folder, as the caller's do)."""
    n = pool_size(workers)
    specs = list(dict.fromkeys(specs))  # each once, in order
    if n < 2 or not specs:
        return 0
    key = (str(device), caps)
    if key not in _pools:
        ctx = mp.get_context("spawn")  # CUDA cannot be used in a forked child
        queue = ctx.JoinableQueue()
        procs = [ctx.Process(target=_worker, args=(queue, str(device), caps), daemon=True) for _ in range(n)]
        for p in procs:
            p.start()
        if not _pools:
            atexit.register(shutdown, EXIT_WAIT_S)
        _pools[key] = (queue, procs)
    queue = _pools[key][0]
    for s in specs:
        queue.put(s)
    return len(specs)


def join() -> None:
    """Wait until every pool has worked through what it was handed (tests; a caller that wants the checkpoints
    before it goes on)."""
    for queue, _ in _pools.values():
        queue.join()


def shutdown(timeout: float | None = None) -> None:
    """End every pool's workers after what they were handed (``timeout``: seconds to wait for each before ending it
    at once) and forget the pools. Registered to run, with a short timeout, when the process exits."""
    for queue, procs in _pools.values():
        for _ in procs:
            queue.put(None)
        for p in procs:
            p.join(timeout)
            if p.is_alive():
                p.terminate()
                p.join()
        queue.close()
        queue.join_thread()
    _pools.clear()
