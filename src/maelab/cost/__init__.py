"""Cost model: FLOPs, peak memory and predicted minutes of planned training runs, before running them.

minutes = FLOPs / achieved throughput, with a per-op floor: FLOPs and ops are counted on the real model (a meta copy,
attention as its matrix products), the throughput is the H100 assumption or a measured GPU, or this machine's
measured CPU. A planned run (:class:`PlannedRun`) is made from a spec by what the pipeline says it does
(:func:`maelab.experiments.workload`, which the run itself is configured from), so the plans read the pipeline
instead of copying it. Only FLOP-bearing work is modelled, with the logistic-regression probes and k-NN scaled from
calibrated workloads; t-SNE, Jacobians and other analysis code are not (``scripts/check_cost_model.py`` says how
close the model gets on the committed cpu results).

Layout (one concern per module; this package re-exports the public API, so ``maelab.cost.plan(...)``,
``maelab.cost.PlannedRun`` and the rest work as before the split):

* :mod:`~maelab.cost.counting`: FLOPs and ops of a training step, a fine-tuning step, a feature pass
  (:func:`step_flops`, :func:`finetune_step_flops`, :func:`eval_flops`, :func:`count_flops`).
* :mod:`~maelab.cost.memory`: peak memory of a step (:func:`peak_memory_bytes`).
* :mod:`~maelab.cost.cache`: those counts once per model shape (:class:`ModelShape`), in the process and in
  ``.cache/cost/``, so a plan takes seconds.
* :mod:`~maelab.cost.devices`: device models (:class:`Device`), the H100 assumption, a measured GPU
  (:func:`gpu_device`).
* :mod:`~maelab.cost.calibration`: the measured CPU (:func:`calibrate_cpu`, :func:`cpu_device`).
* :mod:`~maelab.cost.probes`: probes and k-NN on features (:class:`EvalJob`, :func:`probe_seconds`).
* :mod:`~maelab.cost.planning`: planned runs, their predicted cost and the plan tables (:class:`PlannedRun`,
  :func:`predict`, :func:`format_plan_table`, :func:`plan`, :func:`notebook_plans`, :func:`read_runs`).
* :mod:`~maelab.cost.check`: the model against measured runs (what ``scripts/check_cost_model.py`` prints).
* :mod:`~maelab.cost.cli`: ``python -m maelab.cost calibrate`` (:func:`main`); the plan command is
  ``python -m maelab.book plan``.

The planning module is not called ``plan`` so that ``maelab.cost.plan`` is always the function.
"""

from __future__ import annotations

from .cache import ModelShape
from .calibration import PROBE_WORKLOADS, CpuCalibration, calibrate_cpu, calibration_path, cpu_device, cpu_key
from .cli import main
from .counting import StepCost, count_flops, eval_flops, finetune_step_flops, step_flops
from .devices import (
    GPU_CALIBRATION,
    H100,
    H100_MEMORY_BYTES,
    H100_MFU,
    H100_OP_OVERHEAD_S,
    H100_PEAK_BF16_FLOPS,
    H100_SOURCE,
    Device,
    gpu_device,
    measured_device,
)
from .memory import MemoryEstimate, peak_memory_bytes
from .planning import PLAN_COLUMNS, PlannedRun, format_plan_table, notebook_plans, plan, predict, read_runs
from .probes import EVAL_KINDS, GRID_FITS, EvalJob, probe_seconds

__all__ = [
    "H100",
    "H100_MFU",
    "H100_OP_OVERHEAD_S",
    "H100_PEAK_BF16_FLOPS",
    "H100_MEMORY_BYTES",
    "H100_SOURCE",
    "GPU_CALIBRATION",
    "gpu_device",
    "measured_device",
    "CpuCalibration",
    "Device",
    "EvalJob",
    "EVAL_KINDS",
    "GRID_FITS",
    "MemoryEstimate",
    "ModelShape",
    "PlannedRun",
    "PROBE_WORKLOADS",
    "StepCost",
    "calibrate_cpu",
    "calibration_path",
    "count_flops",
    "cpu_device",
    "cpu_key",
    "eval_flops",
    "finetune_step_flops",
    "format_plan_table",
    "main",
    "notebook_plans",
    "plan",
    "read_runs",
    "PLAN_COLUMNS",
    "peak_memory_bytes",
    "predict",
    "probe_seconds",
    "step_flops",
]
