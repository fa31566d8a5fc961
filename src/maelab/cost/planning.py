"""Plans: planned runs (:class:`~maelab.cost.PlannedRun`, made from a spec's workload), their predicted cost on a device
(:func:`~maelab.cost.predict`), plan tables (:func:`~maelab.cost.format_plan_table`, :func:`~maelab.cost.plan`) and
every notebook's plan, handed down by the installed paper registry (:func:`~maelab.cost.notebook_plans`)."""

from __future__ import annotations

import dataclasses
import functools
import json
import multiprocessing
import os
from collections.abc import Sequence
from pathlib import Path

import torch.nn as nn

from .._validate import ParameterError, in_range, one_of, positive_int
from ..profiles import PROFILE_NAMES
from ..registry import installed
from . import cache
from .calibration import CpuCalibration, cpu_device
from .counting import StepCost
from .devices import H100, Device, gpu_device
from .probes import EvalJob, probe_seconds


@dataclasses.dataclass(frozen=True)
class PlannedRun:
    """One planned pre-training run (and what is computed with it), repeated ``repeats`` times (e.g. seeds).

    ``model``/``size``/``overrides`` are passed to :func:`maelab.models.create` (with ``img_size`` and ``in_chans``
    = ``channels``); ``steps`` optimiser steps at ``batch_size`` and ``mask_ratio`` (None: the model's own);
    ``eval_images``: images through an unmasked no-grad forward (online-probe evaluation, feature extraction for
    probes, k-NN and ranks); ``finetune_steps`` at ``finetune_batch`` with ``num_classes`` classes; ``data_images``:
    images kept on the device (memory only); ``jobs``: the probes and k-NN on the extracted features
    (:class:`EvalJob`, per repeat); ``pool``: how many runs (these repeats and others) the page hands
    :mod:`maelab.prefetch` together, which on a device with a measured pool speed-up
    (:meth:`maelab.cost.Device.pool_factor`) pre-train side by side (0: one after another).
    """

    label: str
    model: str = "mae"
    size: str = "micro"
    overrides: tuple = ()
    img_size: int = 32
    channels: int = 3
    batch_size: int = 128
    steps: int = 0
    mask_ratio: float | None = None
    eval_images: int = 0
    finetune_steps: int = 0
    finetune_batch: int = 128
    num_classes: int = 10
    data_images: int = 0
    repeats: int = 1
    jobs: tuple = ()
    pool: int = 0

    def __post_init__(self):
        for name in ("img_size", "channels", "batch_size", "finetune_batch", "repeats"):
            positive_int(name, getattr(self, name))
        for name in ("steps", "eval_images", "finetune_steps", "data_images", "pool"):
            positive_int(name, getattr(self, name), minimum=0)
        positive_int("num_classes", self.num_classes, minimum=2)
        if self.mask_ratio is not None:
            in_range("mask_ratio", self.mask_ratio, 0.0, 1.0, high_open=True)
        if not isinstance(self.overrides, tuple):
            raise ParameterError("overrides", "a tuple of (key, value) pairs", self.overrides)
        if not isinstance(self.jobs, tuple) or not all(isinstance(j, EvalJob) for j in self.jobs):
            raise ParameterError("jobs", "a tuple of maelab.cost.EvalJob", self.jobs)

    @property
    def shape(self) -> cache.ModelShape:
        """The model shape of this run, what its counts depend on (:mod:`maelab.cost.cache`)."""
        return cache.ModelShape(self.model, self.size, tuple(self.overrides), self.img_size, self.channels)

    def build(self) -> nn.Module:
        """The model of this run (on the CPU, seed 0)."""
        return self.shape.build()

    @classmethod
    def from_spec(
        cls,
        spec,
        *,
        label: str | None = None,
        repeats: int = 1,
        extra_eval_images: int = 0,
        finetune_epochs: int | None = None,
        online_eval: bool = True,
        pools: int = 1,
        pipeline_eval: bool = True,
        jobs: tuple = (),
        probe_fits: int = 0,
        probe_kind: str = "logreg",
        probe_on_device: bool = False,
        pool: int = 0,
    ) -> PlannedRun:
        """The run :func:`maelab.experiments.pretrain_and_evaluate` makes of a ``PretrainSpec``, as the pipeline
        describes it (:func:`maelab.experiments.workload`, which the run configures itself from): its pre-training
        steps and batch; as evaluation images the online probe's test passes (when ``online_eval``), the test
        features at every rank epoch, the features of train + test and the test reconstruction loss (counted as an
        unmasked pass: an over-count) and the test pass after every fine-tuning epoch; fine-tuning
        ``finetune_epochs`` (default ``spec.finetune_epochs``) at the pipeline's batch. ``extra_eval_images`` adds
        the caller's own feature passes (e.g. a second pooling).

        The pipeline's evaluation of the final model (``pipeline_eval``; False for a caller that evaluates snapshots
        itself, e.g. :func:`maelab.experiments.pretrain`) is, per pooling (``pools``), a scikit-learn linear probe
        and a k-NN on the train / test features (:class:`EvalJob`, ``probe_fits`` fits per probe: see there; the
        probe's ``probe_kind``: "logreg" or "logreg_torch", fitted on the device with ``probe_on_device``); ``jobs``
        adds the caller's own. ``pool``: see the class."""
        from .. import experiments

        if finetune_epochs is not None:
            spec = dataclasses.replace(spec, finetune_epochs=finetune_epochs)
        w = experiments.workload(spec, online_eval=online_eval)
        positive_int("pools", pools)
        if pipeline_eval and w.n_test:
            lp = EvalJob(probe_kind, w.n_train, w.n_test, count=pools, fits=probe_fits, on_device=probe_on_device)
            jobs = (lp, EvalJob("knn", w.n_train, w.n_test, count=pools), *jobs)
        return cls(
            label=label or spec.key,
            model=spec.model,
            size=spec.size,
            overrides=tuple(sorted((k, v) for k, v in spec.model_overrides)),
            img_size=spec.img_size,
            channels=spec.channels,
            batch_size=w.batch_size,
            steps=w.steps,
            mask_ratio=spec.mask_ratio,
            eval_images=w.eval_images(final=pipeline_eval) + extra_eval_images,
            finetune_steps=w.finetune_steps,
            finetune_batch=w.finetune_batch,
            data_images=w.n_train + w.n_test,
            repeats=repeats,
            jobs=tuple(jobs),
            pool=pool,
        )


def _freeze(v):
    return tuple(_freeze(x) for x in v) if isinstance(v, (list, tuple)) else v


#: Images per feature pass in the plans (the cost of ``eval_images`` is counted per batch of this size).
EVAL_BATCH = 256


@functools.lru_cache(maxsize=256)
def _costs(run: PlannedRun) -> dict:
    """FLOPs/ops per pre-training step, fine-tuning step and eval batch of ``run``, the model's parameters and its
    jobs with their feature width resolved (the counts per model shape: :mod:`maelab.cost.cache`)."""
    shape = run.shape
    pre = cache.pretrain_step(shape, run.batch_size, run.mask_ratio) if run.steps else StepCost(0, 0, 0)
    ft = cache.finetune_step(shape, run.finetune_batch, run.num_classes) if run.finetune_steps else StepCost(0, 0, 0)
    ev = cache.eval_batch(shape, EVAL_BATCH) if run.eval_images else (0, 0)
    params, width = cache.model_facts(shape)
    return {
        "pre": pre,
        "ft": ft,
        "eval_batch": EVAL_BATCH,
        "eval": ev,
        "params": params,
        "jobs": tuple(j if j.dim else dataclasses.replace(j, dim=width) for j in run.jobs),
    }


@functools.lru_cache(maxsize=256)
def _memory(run: PlannedRun, amp: str) -> int:
    """Peak bytes of the larger of ``run``'s pre-training and fine-tuning steps with its data resident on the device
    (float32 images); 0 for a run that trains nothing."""
    shape, steps = run.shape, []
    if run.steps:
        steps.append(cache.train_memory(shape, "pretrain", run.batch_size, mask_ratio=run.mask_ratio, amp=amp))
    if run.finetune_steps:
        steps.append(cache.train_memory(shape, "finetune", run.finetune_batch, amp=amp, num_classes=run.num_classes))
    data = run.data_images * run.channels * run.img_size**2 * 4
    return max(s.total for s in steps) + data if steps else 0


def predict(run: PlannedRun, device: Device, host: Device | None = None) -> dict:
    """Predicted cost of ``run`` (all its repeats) on ``device``: FLOPs and seconds of pre-training, evaluation
    (forward passes), fine-tuning, k-NN (``knn_s``, on the device) and the probes (``probe_s``), and their total
    (``seconds``). Pre-training of a run in a prefetch pool (``run.pool``) is divided by the device's measured
    speed-up of runs trained side by side (:meth:`maelab.cost.Device.pool_factor`; the page's evaluation,
    which goes on meanwhile, is still added in full: an over-count).

    The logistic-regression probes run on the CPU whatever the device (scikit-learn; :mod:`maelab.logreg` in
    float64 on the CPU): ``probe_s`` is their time on ``host`` (a calibrated CPU :class:`Device`; default:
    ``device`` when it is one, else no probe time); those fitted on the run's device (``EvalJob.on_device``) are
    priced on ``device`` (``device_probe_s``)."""
    c = _costs(run)
    pre, ft = c["pre"], c["ft"]
    ev_f, ev_o = c["eval"]
    n_eval_batches = run.eval_images / c["eval_batch"]
    out = {
        "params": c["params"],
        "step_flops": pre.flops,
        "step_ops": pre.ops,
        "train_flops": run.repeats * run.steps * pre.flops,
        "train_s": run.repeats * run.steps * device.seconds(pre.flops, pre.ops, "train") / device.pool_factor(run.pool),
        "finetune_flops": run.repeats * run.finetune_steps * ft.flops,
        "finetune_s": run.repeats * run.finetune_steps * device.seconds(ft.flops, ft.ops, "train"),
        "eval_flops": run.repeats * n_eval_batches * ev_f,
        "eval_s": run.repeats * n_eval_batches * device.seconds(ev_f, ev_o, "eval"),
    }
    host = host if host is not None else (device if device.probes else None)
    knn = [j for j in c["jobs"] if j.kind == "knn"]
    on_device = [j for j in c["jobs"] if j.on_device]
    probes = [j for j in c["jobs"] if j.kind != "knn" and not j.on_device]
    out["knn_flops"] = run.repeats * sum(2.0 * j.count * j.n_train * j.n_test * j.dim for j in knn)
    out["knn_s"] = run.repeats * sum(j.count * probe_seconds(j, device) for j in knn)
    out["device_probe_s"] = run.repeats * sum(j.count * probe_seconds(j, device) for j in on_device)
    out["probe_s"] = run.repeats * sum(j.count * probe_seconds(j, host) for j in probes) if host else 0.0
    out["flops"] = out["train_flops"] + out["finetune_flops"] + out["eval_flops"] + out["knn_flops"]
    out["seconds"] = sum(out[k] for k in ("train_s", "finetune_s", "eval_s", "knn_s", "device_probe_s", "probe_s"))
    return out


#: The columns of :func:`~maelab.cost.format_plan_table` before the per-device minutes.
PLAN_COLUMNS = (
    "run",
    "model",
    "image",
    "batch",
    "steps",
    "repeats",
    "finetune steps",
    "eval images",
    "GFLOP/step",
    "total TFLOP",
    "peak memory (GiB)",
    "CPU probes min",
)


def format_plan_table(
    runs: Sequence[PlannedRun], devices: Sequence[Device] = (H100,), *, memory: bool = True, amp: str = "bf16"
):
    """A pandas DataFrame, one row per planned run: :data:`~maelab.cost.planning.PLAN_COLUMNS` then ``"<device> min"``
    per device (predicted minutes of the run with all its repeats). ``memory=False`` skips the (CPU-measured)
    peak-memory column (NaN), which needs two small real forward passes per run. "CPU probes min": the
    logistic-regression probes, which run on the CPU whatever the device, on the first calibrated CPU among ``devices``
    (NaN without one); a device's minutes include them only when it is that CPU."""
    import pandas as pd

    one_of("amp", amp, ("bf16", "off"))
    host = next((d for d in devices if d.probes), None)
    rows = []
    for r in runs:
        if not isinstance(r, PlannedRun):
            raise ParameterError("runs", "a sequence of maelab.cost.PlannedRun", type(r).__name__)
        base = predict(r, devices[0]) if devices else predict(r, H100)
        over = ", ".join(f"{k}={v}" for k, v in r.overrides)
        row = {
            "run": r.label,
            "model": f"{r.model}/{r.size}" + (f" ({over})" if over else ""),
            "image": f"{r.channels}x{r.img_size}x{r.img_size}",
            "batch": r.batch_size,
            "steps": r.steps,
            "repeats": r.repeats,
            "finetune steps": r.finetune_steps,
            "eval images": r.eval_images,
            "GFLOP/step": base["step_flops"] / 1e9,
            "total TFLOP": base["flops"] / 1e12,
            "peak memory (GiB)": _memory(r, amp) / 2**30 if memory else float("nan"),
            "CPU probes min": predict(r, host)["probe_s"] / 60 if host else float("nan"),
        }
        for d in devices:
            row[f"{d.name} min"] = predict(r, d)["seconds"] / 60
        rows.append(row)
    return pd.DataFrame(rows, columns=list(PLAN_COLUMNS) + [f"{d.name} min" for d in devices])


# ----------------------------------------------------------------------------------------------------------------
# notebook plans (handed down by the installed paper registry) and the calibration command
# ----------------------------------------------------------------------------------------------------------------
def notebook_plans(profile: str) -> dict[str, list[PlannedRun]]:
    """{notebook: planned runs} of every paper's ``maelab.papers.<paper>.plan.plans(profile)``, as the installed paper
    registry hands them down (:func:`maelab.registry.installed`; the core imports no paper)."""
    one_of("profile", profile, PROFILE_NAMES)
    plans = dict(installed().plans(profile))
    for nb, runs in plans.items():
        if not isinstance(runs, list) or not all(isinstance(r, PlannedRun) for r in runs):
            raise ParameterError(f"plan of notebook {nb!r}", "a list of maelab.cost.PlannedRun", type(runs).__name__)
    return plans


def read_runs(path: str | os.PathLike) -> list[PlannedRun]:
    """The planned runs listed in the JSON file ``path``: a list of :class:`PlannedRun` fields (plain data; nothing
    in the file is executed)."""
    try:
        items = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise ParameterError("--runs", "a readable JSON file holding a list of PlannedRun fields", str(path)) from e
    if not isinstance(items, list) or not all(isinstance(d, dict) for d in items):
        raise ParameterError("--runs", "a JSON list of objects (PlannedRun fields)", str(path))
    fields = [f.name for f in dataclasses.fields(PlannedRun)]
    for d in items:
        for k in d:
            one_of(f"--runs field (in {path})", k, fields)
    return [PlannedRun(**{k: _freeze(v) for k, v in d.items()}) for d in items]


def plan(
    profile: str,
    *,
    plans: dict[str, list[PlannedRun]] | None = None,
    calibration: CpuCalibration | None = None,
    memory: bool = True,
):
    """The plan table (:func:`format_plan_table`, H100 and measured-CPU minutes) of ``plans`` ({notebook: planned
    runs}; default: every notebook's planned runs in ``profile``, :func:`notebook_plans`), with a ``notebook``
    column and one "total" row per notebook. ``python -m maelab.book plan`` prints it."""
    import pandas as pd

    plans = notebook_plans(profile) if plans is None else plans
    devices = (gpu_device(), cpu_device(calibration))
    _count_in_two(list(plans.values()), devices, memory)
    frames = []
    for nb, runs in plans.items():
        t = format_plan_table(runs, devices, memory=memory)
        total = {c: t[c].sum() for c in t.columns if c.endswith(" min") or c == "total TFLOP"}
        total.update({"run": "total", "peak memory (GiB)": t["peak memory (GiB)"].max()})
        t = pd.concat([t, pd.DataFrame([total])], ignore_index=True)
        t.insert(0, "notebook", nb)
        frames.append(t)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["notebook", *PLAN_COLUMNS])


def _count_in_helper(groups, devices, memory: bool, conn) -> None:
    """In the helper process of :func:`_count_in_two`: price ``groups`` (counting what is not cached) and send the
    counts back; on any error send nothing (the parent then counts those itself)."""
    try:
        import torch

        torch.set_num_threads(1)
        cache.keep_in_memory()
        for runs in groups:
            format_plan_table(runs, devices, memory=memory)
        conn.send(cache.counted_here())
    except BaseException:  # the parent counts whatever is missing
        conn.send({})
    finally:
        conn.close()


def _count_in_two(groups: list, devices, memory: bool) -> None:
    """Make the counts of every group of planned runs in two processes where the machine has two cores or more.

    Why: a plan's time is its counting (single-threaded Python work, :mod:`maelab.cost.cache`), so a cold gpu plan
    took about 35 s on 2 idle cores in one process. A helper process prices every other group (largest groups first,
    alternating) while this process prices the rest; the helper's counts come back through a pipe and are added to
    this process and to the counts file (:func:`maelab.cost.cache.adopt`), so the table is then made from counts
    alone, identical to a one-process plan. The helper is *spawned*, not forked: a fork of a process whose torch
    has already run multi-threaded kernels can hang in the child (OpenMP is not fork-safe), which a test session
    does. Nothing happens on one core or where no process can be started; a helper that fails only costs the time of
    counting its groups here.
    """
    if len(groups) < 2 or (os.cpu_count() or 1) < 2:
        return
    ordered = sorted(groups, key=len, reverse=True)
    ctx = multiprocessing.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    helper = ctx.Process(target=_count_in_helper, args=(ordered[1::2], devices, memory, send), daemon=True)
    try:
        helper.start()
    except (OSError, AssertionError):  # no process to spare (e.g. inside a daemonic process): count here
        send.close()
        receive.close()
        return
    send.close()
    try:
        for runs in ordered[0::2]:
            format_plan_table(runs, devices, memory=memory)
        try:
            entries = receive.recv()
        except EOFError:  # the helper died before sending
            entries = {}
    finally:
        receive.close()
        helper.join()
    cache.adopt(entries)
