"""Device models: minutes = FLOPs / achieved throughput, with a per-op floor; the H100 assumption and a measured GPU.

* **H100 (bf16)**: peak dense bf16 tensor-core throughput of the H100 SXM is 989 TFLOP/s (NVIDIA H100 datasheet;
  1,979 with sparsity). Small ViTs reach a small fraction of it in eager PyTorch: NVIDIA's BioNeMo benchmark of a
  22 M-parameter ViT-Small (224 px, batch 256, bf16, one H100 SXM) measured 4.6 % MFU in eager mode (6.6 % after
  optimisation, 22 % with ``torch.compile``; https://nvidia-bionemo.github.io/nvSubquadratic/benchmarks.html).
  Our models are smaller still (64-768-d, 17-257 tokens), so we assume :data:`H100_MFU` = 5 %, i.e.
  ~49 TFLOP/s achieved, an optimistic figure for the smallest models, which the op floor then bounds: each step
  costs at least ``ops * H100_OP_OVERHEAD_S`` with 10 us per op (host-side dispatch + launch of one eager op is
  ~5-25 us, e.g. https://jiahuanglin.xyz/all_lessons/gpu_kernel_serving/18_pytorch_to_kernel.html). Neither number
  has been measured by this project: ``benchmarks/train_speed.py --device cuda`` reports the achieved MFU on a real
  GPU, and a calibration stored by ``python -m maelab.device calibrate`` on a lent GPU replaces both in the plans
  (:func:`~maelab.cost.gpu_device`: measured FLOP/s per FLOPs per step, as for the CPU).
* **CPU**: measured, not assumed (:mod:`maelab.cost.calibration`).
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path

from .. import paths
from .._validate import ParameterError

#: NVIDIA H100 SXM peak dense BF16 tensor-core throughput in FLOP/s (datasheet 989 TFLOPS; 1,979 with sparsity).
H100_PEAK_BF16_FLOPS = 989e12
#: Assumed model-FLOPs utilisation of eager bf16 training of these small ViTs on one H100 (see the module docstring:
#: 4.6-6.6 % measured for a 22 M-parameter ViT-S/16 in eager mode by NVIDIA BioNeMo).
H100_MFU = 0.05
#: Assumed host-side cost of one eager ATen op (dispatch + kernel launch) in seconds, the floor of a tiny model's step.
H100_OP_OVERHEAD_S = 10e-6
#: Memory of an H100 SXM (80 GB HBM3), bytes.
H100_MEMORY_BYTES = 80 * 10**9
#: Where the H100 numbers come from, in one line (printed with every plan).
H100_SOURCE = (
    "989 TFLOP/s dense bf16 (NVIDIA H100 SXM datasheet) x MFU 5 % (eager ViT-S/16 on one H100: 4.6-6.6 %, "
    "nvidia-bionemo.github.io/nvSubquadratic/benchmarks.html), floor 10 us per eager op"
)


@dataclasses.dataclass(frozen=True)
class Device:
    """A device model: ``seconds(flops, ops, kind)`` for one step of ``flops`` FLOPs dispatching ``ops`` ops.

    ``flops_per_s``: achieved FLOP/s (a constant); ``op_overhead_s``: floor per op; ``curve``: optional
    {kind: ((flops_per_step, achieved FLOP/s), ...)} measured points (kind "train" or "eval"), interpolated
    log-log in FLOPs per step and clamped at the ends (used instead of ``flops_per_s`` when given); ``probes``:
    the measured probe workloads of a CPU calibration (``PROBE_WORKLOADS``), which :func:`probe_seconds` scales;
    ``pool``, ``pool_workers``: the measured speed-up of runs trained side by side and the pool size
    (:meth:`pool_factor`).
    """

    name: str
    flops_per_s: float
    op_overhead_s: float = 0.0
    source: str = ""
    curve: tuple = ()
    memory_bytes: int | None = None
    probes: tuple = ()
    pool: tuple = ()
    pool_workers: int = 0

    def pool_factor(self, runs: int) -> float:
        """How many times faster ``runs`` runs train side by side (:mod:`maelab.prefetch`, at most ``pool_workers``
        at once) than one after another: the measured ``pool`` speed-up ((processes, speed-up) points, linear in
        between, the last point beyond it) at min(``runs``, ``pool_workers``); 1 below two runs or unmeasured."""
        k = min(int(runs), self.pool_workers)
        pts = sorted({1: 1.0, **dict(self.pool)}.items())
        if k < 2 or len(pts) < 2:
            return 1.0
        for (n0, s0), (n1, s1) in zip(pts, pts[1:]):
            if n0 <= k <= n1:
                return s0 + (k - n0) * (s1 - s0) / (n1 - n0)
        return pts[-1][1]

    def throughput(self, flops_per_step: float, kind: str = "train") -> float:
        pts = sorted(dict(self.curve).get(kind) or dict(self.curve).get("train") or ())
        if not pts:
            return self.flops_per_s
        if flops_per_step <= pts[0][0]:
            return pts[0][1]
        if flops_per_step >= pts[-1][0]:
            return pts[-1][1]
        for (f0, t0), (f1, t1) in zip(pts, pts[1:]):
            if f0 <= flops_per_step <= f1:
                w = (math.log(flops_per_step) - math.log(f0)) / (math.log(f1) - math.log(f0))
                return math.exp(math.log(t0) + w * (math.log(t1) - math.log(t0)))
        return pts[-1][1]  # pragma: no cover - unreachable

    def seconds(self, flops: float, ops: int = 0, kind: str = "train") -> float:
        """Seconds of one step (or batch): max(flops / throughput, ops * op_overhead_s)."""
        if flops <= 0:
            return ops * self.op_overhead_s
        return max(flops / self.throughput(flops, kind), ops * self.op_overhead_s)


#: One H100 SXM, bf16 autocast, eager PyTorch (989 TFLOP/s x 5 % MFU, 10 us per op).
H100 = Device(
    name="H100 (bf16)",
    flops_per_s=H100_PEAK_BF16_FLOPS * H100_MFU,
    op_overhead_s=H100_OP_OVERHEAD_S,
    source=H100_SOURCE,
    memory_bytes=H100_MEMORY_BYTES,
)


#: Where ``maelab.device.calibrate`` stores a GPU's measured training throughput: (folder, name, profile) under the
#: results root. :func:`~maelab.cost.gpu_device` uses it instead of the assumed :data:`H100_MFU` when it was measured on
#: CUDA.
GPU_CALIBRATION = ("plan", "gpu_calibration", "gpu")


#: Where ``benchmarks/gpu_concurrency.py`` writes its measurements (the pool speed-up of a calibration stored before
#: calibrations measured it: :func:`~maelab.cost.gpu_device`).
POOL_BENCHMARKS = "benchmarks/results/gpu_concurrency-cuda-*.json"


def pool_points(rec) -> tuple[tuple, str]:
    """The measured pool speed-up ((processes, speed-up), ...) and its source: the calibration record's ``pool``
    table (``rec``, a :class:`maelab.store.Result` or None) when it has one, else the newest
    :data:`POOL_BENCHMARKS` file (its wall-clock images per second over its one-process row's); ((), "") when
    neither exists."""
    import json

    if rec is not None and "pool" in rec.data:
        t = rec["pool"]
        return tuple((int(n), float(v)) for n, v in zip(t["procs"], t["speedup"])), "the calibration's pool table"
    files = sorted(paths.repo_root().glob(POOL_BENCHMARKS))
    if not files:
        return (), ""
    got = json.loads(files[-1].read_text())
    rows = {int(r["procs"]): float(r["images_per_s_wall"]) for r in got["results"] if "error" not in r}
    if 1 not in rows:
        return (), ""
    where = f"{files[-1].relative_to(paths.repo_root())} ({got['provenance']['device']})"
    return tuple(sorted((n, v / rows[1]) for n, v in rows.items())), where


def measured_device(points, source: str) -> Device:
    """The GPU :class:`Device` of measured training steps (``points``: rows with ``flops_per_step``, ``flops_per_s``,
    ``seconds_per_step``, ``ops_per_step``; a DataFrame or a list of dicts): the "train" curve of achieved FLOP/s
    against FLOPs per step, interpolated log-log as a CPU calibration's, and an op floor no larger than any measured
    step's time per op. Named as :data:`~maelab.cost.devices.H100` so that plan tables keep their columns; ``source``
    says what measured it."""
    rows = points.to_dict("records") if hasattr(points, "to_dict") else list(points)
    if not rows:
        raise ParameterError("points", "at least one measured training step", rows)
    curve = tuple(sorted((float(r["flops_per_step"]), float(r["flops_per_s"])) for r in rows))
    floor = min(float(r["seconds_per_step"]) / max(int(r["ops_per_step"]), 1) for r in rows)
    return Device(
        name=H100.name,
        flops_per_s=max(f for _, f in curve),
        op_overhead_s=floor,
        source=source,
        curve=(("train", curve),),
        memory_bytes=H100_MEMORY_BYTES,
    )


def gpu_device(root: str | os.PathLike | None = None) -> Device:
    """The GPU device model of the plans: the stored GPU calibration (:data:`~maelab.cost.devices.GPU_CALIBRATION` under
    ``root``, default the committed ``data/results``) when one measured on CUDA is stored, else
    :data:`~maelab.cost.devices.H100` (5 % MFU assumed). A stored calibration that does not verify is reported in one
    line on stderr and not used."""
    import sys

    from .. import store

    root = Path(root) if root is not None else paths.committed_results()
    notebook, name, profile = GPU_CALIBRATION
    try:
        rec = store.load(notebook, name, profile, root=root)
    except store.RecordError as e:
        print(f"[cost] {e}; using the assumed {H100_SOURCE}", file=sys.stderr, flush=True)
        return H100
    if rec is None or rec.data.get("device_type") != "cuda":
        return H100
    when = str(rec.provenance.get("timestamp", ""))[:10]
    src = f"measured on {rec['device_name']} (torch {rec['torch']}, CUDA {rec['cuda']}), {when}: {notebook}/{name}"
    from ..prefetch import DEFAULT_GPU_WORKERS

    pool, where = pool_points(rec)
    if pool:
        src += f"; runs side by side: {DEFAULT_GPU_WORKERS} processes, speed-up from {where}"
    return dataclasses.replace(measured_device(rec["points"], src), pool=pool, pool_workers=DEFAULT_GPU_WORKERS)
