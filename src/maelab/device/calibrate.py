"""Calibrate the GPU: the measured training throughput of the gpu profile's models, stored for the cost model.

``python -m maelab.device calibrate`` (or ``run --calibrate``, first thing of an installment) times, on this
machine's CUDA device, one workload per model shape the gpu plan trains (:func:`workloads`: model size, image side,
channels and batch size of the planned runs, :func:`maelab.cost.notebook_plans`; the first planned run of each
shape gives the model kind, its options and mask ratio). Each is timed with the real trainer
(:func:`maelab.train.train`: bf16 autocast, fused AdamW, the online probe, as the notebooks train) on random images
held on the device, for two epochs of ``iters`` steps; the second epoch's images per second is the measurement (the
first one warms up kernels and the allocator). Its model FLOPs per step are counted as the cost model counts them
(:func:`maelab.cost.step_flops`), so ``flops_per_s`` is the throughput the cost model needs.

The record is ``plan/gpu_calibration.gpu`` (:data:`~maelab.cost.devices.GPU_CALIBRATION`): a ``points`` table (one row
per workload: images/s, seconds and FLOPs per step, achieved FLOP/s, the fraction of the H100's dense bf16 peak) with
the device name and torch / CUDA versions. :func:`maelab.cost.gpu_device` reads it instead of the assumed 5 % MFU when
it was measured on CUDA. Storing a calibration measured without CUDA under ``data/results`` is refused in one line (a
test stores a CPU one elsewhere, where the cost model ignores it).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

from .. import paths
from .._validate import ParameterError, positive_int

ITERS = 30  # optimiser steps per timed epoch on a GPU


def workloads(profile: str = "gpu", plans: dict | None = None) -> list:
    """One :class:`maelab.cost.PlannedRun` per trained model shape of the ``profile`` plan (size, image side,
    channels, batch size), the first planned run of each shape, in plan order."""
    from .. import cost

    plans = cost.notebook_plans(profile) if plans is None else plans
    seen: dict[tuple, object] = {}
    for runs in plans.values():
        for r in runs:
            if r.steps:
                seen.setdefault((r.size, r.img_size, r.channels, r.batch_size), r)
    return list(seen.values())


def _describe(r) -> dict:
    return {
        "label": r.label,
        "model": r.model,
        "size": r.size,
        "overrides": [list(kv) for kv in r.overrides],
        "img_size": r.img_size,
        "channels": r.channels,
        "batch_size": r.batch_size,
        "mask_ratio": r.mask_ratio,
    }


def train_timed(run, model, *, device, iters: int = ITERS, caps=None, compile: bool = False):
    """Train ``model`` (built by ``run.build()``) as the calibration times it: the real trainer
    (:func:`maelab.train.train`) for two epochs of ``iters`` steps at ``run``'s batch size and mask ratio, on random
    images (seed 0); returns its :class:`~maelab.train.TrainResult`. ``caps``: a dry run's
    :class:`maelab.options.DryRunLimits`, handed to the trainer; ``compile``: the trainer's ``TrainConfig.compile``,
    off as in every notebook, on in ``benchmarks/gpu_compile.py``'s comparison."""
    import torch

    from .. import train
    from ..data._common import Dataset

    positive_int("iters", iters)
    g = torch.Generator().manual_seed(0)
    n = run.batch_size * iters
    images = torch.rand(n, run.channels, run.img_size, run.img_size, generator=g)
    data = Dataset(images, torch.randint(0, 10, (n,), generator=g), None, "calibration")
    cfg = train.TrainConfig(
        epochs=2, batch_size=run.batch_size, warmup_epochs=0, mask_ratio=run.mask_ratio, seed=0, compile=compile
    )
    return train.train(model, data, cfg, device=device, progress=False, caps=caps)


def measure(run, *, device, iters: int = ITERS, caps=None, compile: bool = False) -> dict:
    """Time ``run``'s model with the real trainer on ``device`` (:func:`train_timed`): one row of the calibration
    table, from the second epoch (the first warms up kernels and the allocator, and compiles where ``compile``)."""
    from .. import cost

    positive_int("iters", iters)
    model = run.build()
    step = cost.step_flops(model, run.batch_size, mask_ratio=run.mask_ratio)
    hist = train_timed(run, model, device=device, iters=iters, caps=caps, compile=compile).history
    # the last epoch that took steps (a dry run's step cap can leave the second one empty)
    timed = [float(h["images_per_s"]) for h in hist if math.isfinite(h["images_per_s"]) and h["images_per_s"] > 0]
    if not timed:
        raise ParameterError("iters", "enough steps for a timed epoch", iters)
    ips = timed[-1]
    sec = run.batch_size / ips
    return {
        **{k: v for k, v in _describe(run).items() if k != "overrides"},
        "overrides": ", ".join(f"{k}={v}" for k, v in run.overrides),
        "flops_per_step": step.flops,
        "ops_per_step": step.ops,
        "seconds_per_step": sec,
        "images_per_s": ips,
        "flops_per_s": step.flops / sec,
        "fraction_of_h100_bf16_peak": step.flops / sec / cost.H100_PEAK_BF16_FLOPS,
    }


def _pool_child(run, iters: int, device: str, barrier, queue, compile: bool = False) -> None:
    """One process of :func:`measure_pool`: a warm-up, the barrier, then the timed :func:`measure`."""
    import torch

    torch.set_num_threads(1)
    try:
        measure(run, device=device, iters=max(2, iters // 4), compile=compile)  # warm-up: context, kernels, allocator
        barrier.wait(timeout=300)
        t0 = time.time()
        row = measure(run, device=device, iters=iters, compile=compile)
        queue.put({"ok": True, "images_per_s": row["images_per_s"], "t0": t0, "t1": time.time()})
    except Exception as e:  # reported by the parent, never hidden
        barrier.abort()
        queue.put({"ok": False, "error": f"{type(e).__name__}: {e}"})


def measure_pool(run, procs: int, *, device, iters: int = ITERS, compile: bool = False) -> dict:
    """``procs`` spawned processes (one torch thread each, as :mod:`maelab.prefetch`'s workers) training ``run``
    side by side on ``device``: each warms up, all meet at a barrier, then each runs :func:`measure`. Returns
    ``procs``, ``images_per_s_sum`` (the sum of each process's images/s in its timed epoch), ``images_per_s_wall``
    (every image of the timed measurements, both epochs, over the span from the barrier to the last process's end,
    model building and uneven ends included: a lower bound) and ``seconds``. ``compile``: as :func:`measure`'s (the
    warm-up then compiles too)."""
    import multiprocessing as mp

    positive_int("procs", procs)
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(procs), ctx.Queue()
    workers = [
        ctx.Process(target=_pool_child, args=(run, iters, str(device), barrier, queue, compile)) for _ in range(procs)
    ]
    t_start = time.time()
    for w in workers:
        w.start()
    got = [queue.get(timeout=600) for _ in range(procs)]
    for w in workers:
        w.join(timeout=60)
    bad = [g["error"] for g in got if not g["ok"]]
    if bad:
        raise RuntimeError(f"measure_pool: a process failed: {bad[0]}")
    span = max(g["t1"] for g in got) - min(g["t0"] for g in got)
    return {
        "procs": procs,
        "images_per_s_sum": sum(g["images_per_s"] for g in got),
        "images_per_s_wall": procs * 2 * iters * run.batch_size / span,
        "seconds": time.time() - t_start,
    }


def _pool_procs(given, dev) -> list[int]:
    """The process counts :func:`calibrate` times side by side: ``given`` (None: 1 and the pool's size on CUDA, none
    elsewhere), with 1 (the reference) added, sorted; [] for none."""
    if given is None:
        from ..prefetch import DEFAULT_GPU_WORKERS

        given = (1, DEFAULT_GPU_WORKERS) if dev.type == "cuda" else ()
    return sorted({int(n) for n in given} | {1}) if given else []


def _config(runs, iters: int, pool_procs: list[int]) -> dict:
    """The calibration record's config: what was timed, and how."""
    config = {"workloads": [_describe(r) for r in runs], "iters": iters, "epochs": 2, "amp": "auto"}
    return config | ({"pool_procs": pool_procs} if pool_procs else {})


def current(*, device: str = "auto", root: str | Path | None = None, iters: int = ITERS, runs: list | None = None):
    """The stored calibration under ``root`` (default the committed ``data/results``) when it is this device's own
    for today's gpu plan -- measured on a device of this name (:func:`maelab._util.device_name`), with the config
    :func:`calibrate` would give it now (the plan's workloads or ``runs``, ``iters``, the pool's process counts) --
    else None.
    What ``run --calibrate`` asks first: a lent machine of a kind already calibrated for this plan then spends its
    minutes on results, not on timing the same steps again (about a minute with the pool's processes)."""
    from .. import cost, store
    from .._util import device_name, resolve_device

    dev = resolve_device(device)
    notebook, name, profile = cost.GPU_CALIBRATION
    try:
        got = store.load(notebook, name, profile, root=Path(root) if root is not None else paths.committed_results())
    except store.RecordError:  # one that does not verify is measured again, never trusted
        return None
    if got is None or got.data.get("device_name") != device_name(dev):
        return None
    runs = workloads("gpu") if runs is None else list(runs)
    want = store.config_hash(_config(runs, iters, _pool_procs(None, dev)))
    return got if got.provenance.get("config_hash") == want else None


def calibrate(
    *,
    device: str = "auto",
    iters: int = ITERS,
    root: str | Path | None = None,
    runs: list | None = None,
    allow_cpu: bool = False,
    pool_procs: tuple | None = None,
    log=print,
    options=None,
):
    """Measure every :func:`workloads` shape (or ``runs``) on ``device`` and store the calibration record under
    ``root`` (default the committed ``data/results``); returns the stored :class:`maelab.store.Result`.

    Without CUDA this refuses to run unless ``allow_cpu`` (tests; dry runs), and refuses ``root`` = the committed
    results whatever ``allow_cpu``: a CPU's numbers never pose as a GPU calibration there. ``options``: the run's
    :class:`maelab.options.RunOptions` (a dry run's caps go to the trainer and its mode to the store's guards).

    ``pool_procs``: process counts at which :func:`measure_pool` times the plan's largest workload (the most
    planned optimiser steps) trained side by side, stored as the ``pool`` table (``speedup``: images per second by
    the wall clock over one process's); default ``(1, maelab.prefetch.DEFAULT_GPU_WORKERS)`` on CUDA, none
    elsewhere. The cost model prices runs that :mod:`maelab.prefetch` trains side by side with it."""
    import pandas as pd

    from .. import cost, store
    from .._util import device_name, resolve_device

    dev = resolve_device(device)
    committed = paths.committed_results().resolve()
    root = Path(root) if root is not None else committed
    if dev.type != "cuda" and (not allow_cpu or root.resolve() == committed):
        raise ParameterError("device", f"a CUDA device to store a GPU calibration under {root}", str(dev))
    runs = workloads("gpu") if runs is None else list(runs)
    if not runs:
        raise ParameterError("runs", "at least one planned training run (the gpu plan trains no model)", runs)
    pool_procs = _pool_procs(pool_procs, dev)
    t0 = time.perf_counter()
    rows = []
    for r in runs:
        rows.append(measure(r, device=dev, iters=iters, caps=options.caps if options is not None else None))
        speed = f"{rows[-1]['images_per_s']:,.0f} images/s, {rows[-1]['flops_per_s'] / 1e12:.3f} TFLOP/s"
        log(f"[calibrate] {r.size} {r.channels}x{r.img_size}px batch {r.batch_size}: {speed}")
    pool = []
    if pool_procs:
        big = max(runs, key=lambda r: r.steps * r.repeats)
        for n in pool_procs:
            pool.append(measure_pool(big, n, device=dev, iters=iters))
            pool[-1]["speedup"] = pool[-1]["images_per_s_wall"] / pool[0]["images_per_s_wall"]
            log(f"[calibrate] {big.label}, {n} processes side by side: {pool[-1]['speedup']:.2f}x one process")
    import torch

    data = {
        "points": pd.DataFrame(rows),
        "device_type": dev.type,
        "device_name": device_name(dev),
        "torch": torch.__version__,
        "cuda": torch.version.cuda or "",
    }
    config = _config(runs, iters, pool_procs)
    if pool:
        data["pool"] = pd.DataFrame(pool)
    notebook, name, profile = cost.GPU_CALIBRATION
    return store.save(
        name,
        config,
        data,
        notebook=notebook,
        profile=profile,
        device=dev,
        root=root,
        wall_time_s=time.perf_counter() - t0,
        options=options,
    )
