"""Cost model: FLOPs, peak memory and predicted minutes of planned training runs, before running them.

What is counted, and how
------------------------
* **FLOPs** (:func:`step_flops`, :func:`eval_flops`, :func:`finetune_step_flops`) are counted by
  ``torch.utils.flop_counter.FlopCounterMode`` on the real model (built by :func:`maelab.models.create`), with the
  real input shape and mask ratio, on a ``meta``-device copy (no memory, no arithmetic; counting ViT-Base at batch
  256 is instant). Attention is routed through the *math* backend of ``scaled_dot_product_attention`` so that it is
  counted as the matrix products it is, on every device (the fused CPU kernel is not counted by the flop counter).
  Only matrix products and convolutions are counted (the flop counter's convention, "model FLOPs"): one multiply-add
  is 2 FLOPs; a Linear layer costs 2 B in out forward and 4 B in out backward (input and weight gradients). A
  training step is forward + backward; the **AdamW update is excluded** from the FLOPs (it is ~12 element-wise
  FLOPs per parameter, reported separately as ``optimizer_flops``; below 1 % of a step for every model here) but its
  kernels count in the op total.
* **Ops**: the number of non-view ATen operations one step dispatches (counted on the meta copy with a
  ``TorchDispatchMode``). On a GPU in eager mode every op costs a few microseconds of host-side dispatch and kernel
  launch, whatever its size, which is what bounds tiny models (:data:`H100_OP_OVERHEAD_S`).
* **Peak memory** (:func:`peak_memory_bytes`): parameters + gradients + the two AdamW moment buffers (float32) +
  activations saved for the backward pass + the dataset when it is resident on the device. Activations are
  *measured*: on CUDA with ``torch.cuda.max_memory_allocated`` over one real step; elsewhere by summing the distinct
  storages that autograd saves (``torch.autograd.graph.saved_tensors_hooks``) during the forward at the real batch
  size, run on fake CPU tensors (``FakeTensorMode``: exact shapes, dtypes and storage sharing, no memory; under CPU
  bf16 autocast when ``amp="bf16"``, whose casting lists are close to, not identical with, CUDA's). This misses
  the transient gradient buffers of the backward pass, allocator rounding and the CUDA context (~0.5 GB), so read it
  as a lower estimate; it is exact in what it counts.

Device models
-------------
minutes = FLOPs / achieved throughput (with a per-op floor on the GPU):

* **H100 (bf16)**: peak dense bf16 tensor-core throughput of the H100 SXM is 989 TFLOP/s (NVIDIA H100 datasheet;
  1,979 with sparsity). Small ViTs reach a small fraction of it in eager PyTorch: NVIDIA's BioNeMo benchmark of a
  22 M-parameter ViT-Small (224 px, batch 256, bf16, one H100 SXM) measured 4.6 % MFU in eager mode (6.6 % after
  optimisation, 22 % with ``torch.compile``; https://nvidia-bionemo.github.io/nvSubquadratic/benchmarks.html).
  Our models are smaller still (64-768-d, 17-257 tokens), so we assume :data:`H100_MFU` = 5 %, i.e. ~49 TFLOP/s
  achieved, an optimistic figure for the smallest models, which the op floor then bounds: each step costs at least
  ``ops * H100_OP_OVERHEAD_S`` with 10 us per op (host-side dispatch + launch of one eager op is ~5-25 us, e.g.
  https://jiahuanglin.xyz/all_lessons/gpu_kernel_serving/18_pytorch_to_kernel.html). Neither number has been
  measured by this project: ``benchmarks/train_speed.py --device cuda`` reports the achieved MFU on a real GPU, and
  a calibration stored by ``python -m maelab.device calibrate`` on a lent GPU replaces both in the plans
  (:func:`gpu_device`: measured FLOP/s per FLOPs per step, as for the CPU).
* **CPU**: measured, not assumed. :func:`calibrate_cpu` times a few training steps (forward + backward + AdamW,
  float32, one process) of the ``micro`` and ``small`` MAEs and a feature-extraction forward pass, plus a float32
  GEMM (the machine's practical matmul peak), each timed as the fastest of several repetitions (the
  least disturbed by other jobs on a shared machine, see :class:`CpuCalibration`), and caches the result in
  ``.cache/cost/`` keyed by CPU model name, core count, torch version and thread count. A run's step is converted
  with the achieved FLOP/s of the calibration point of similar work per step (log-log interpolation in FLOPs per
  step, clamped at the ends).

Only FLOP-bearing work is modelled: scikit-learn probes, k-NN, t-SNE, Jacobians and other analysis code are not
(``scripts/check_cost_model.py`` says how close the model gets on the committed cpu results).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import functools
import json
import math
import os
import platform
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from ._util import cache_root
from ._validate import ParameterError, in_range, one_of, positive_int
from .profiles import PROFILE_NAMES
from .registry import installed

__all__ = [
    "H100",
    "H100_MFU",
    "H100_OP_OVERHEAD_S",
    "H100_PEAK_BF16_FLOPS",
    "H100_MEMORY_BYTES",
    "GPU_CALIBRATION",
    "gpu_device",
    "measured_device",
    "CpuCalibration",
    "Device",
    "EvalJob",
    "MemoryEstimate",
    "PlannedRun",
    "StepCost",
    "calibrate_cpu",
    "count_flops",
    "cpu_device",
    "eval_flops",
    "finetune_step_flops",
    "format_plan_table",
    "notebook_plans",
    "plan",
    "read_runs",
    "PLAN_COLUMNS",
    "peak_memory_bytes",
    "predict",
    "probe_seconds",
    "step_flops",
]

#: NVIDIA H100 SXM peak dense BF16 tensor-core throughput in FLOP/s (datasheet 989 TFLOPS; 1,979 with sparsity).
H100_PEAK_BF16_FLOPS = 989e12
#: Assumed model-FLOPs utilisation of eager bf16 training of these small ViTs on one H100 (see the module docstring:
#: 4.6-6.6 % measured for a 22 M-parameter ViT-S/16 in eager mode by NVIDIA BioNeMo).
H100_MFU = 0.05
#: Assumed host-side cost of one eager ATen op (dispatch + kernel launch) in seconds, the floor of a tiny model's step.
H100_OP_OVERHEAD_S = 10e-6
#: Memory of an H100 SXM (80 GB HBM3), bytes.
H100_MEMORY_BYTES = 80 * 10**9
H100_SOURCE = (
    "989 TFLOP/s dense bf16 (NVIDIA H100 SXM datasheet) x MFU 5 % (eager ViT-S/16 on one H100: 4.6-6.6 %, "
    "nvidia-bionemo.github.io/nvSubquadratic/benchmarks.html), floor 10 us per eager op"
)

_ADAMW_FLOPS_PER_PARAM = 12
_CALIBRATION_FORMAT = 4


# ----------------------------------------------------------------------------------------------------------------
# counting
# ----------------------------------------------------------------------------------------------------------------
class _OpCounter(torch.utils._python_dispatch.TorchDispatchMode):
    """Counts dispatched non-view ATen ops (each launches at least one kernel on a GPU in eager mode)."""

    def __init__(self):
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not func.is_view and func not in (torch.ops.aten.detach.default, torch.ops.aten.lift_fresh.default):
            self.ops += 1
        return func(*args, **(kwargs or {}))


def count_flops(fn: Callable[[], Any]) -> tuple[int, int]:
    """Run ``fn()`` under ``FlopCounterMode`` with attention on the math backend; return (FLOPs, non-view ops)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    counter, ops = FlopCounterMode(display=False), _OpCounter()
    with sdpa_kernel(SDPBackend.MATH), counter, ops:
        fn()
    return int(counter.get_total_flops()), ops.ops


@dataclasses.dataclass(frozen=True)
class StepCost:
    """FLOPs and ops of one step: ``forward`` + ``backward`` = ``flops``; ``optimizer_flops`` (AdamW, estimated as
    12 per trainable parameter) is *not* part of ``flops``; ``ops`` counts forward, backward and optimizer ops."""

    forward: int
    backward: int
    ops: int
    optimizer_flops: int = 0

    @property
    def flops(self) -> int:
        return self.forward + self.backward


def _on_meta(model: nn.Module) -> nn.Module:
    if not isinstance(model, nn.Module):
        raise ParameterError("model", "a torch.nn.Module (e.g. from maelab.models.create)", type(model).__name__)
    meta = copy.deepcopy(model).to("meta")
    meta.train()
    return meta


def _input(model: nn.Module, batch_size: int, device="meta") -> torch.Tensor:
    base = getattr(model, "backbone", model)  # EncoderClassifier -> its self-supervised model
    c, s = getattr(base, "in_chans", None), getattr(base, "img_size", None)
    if not isinstance(c, int) or not isinstance(s, int):
        raise ParameterError(
            "model", "a model with integer in_chans and img_size (maelab.models)", type(model).__name__
        )
    return torch.zeros(batch_size, c, s, s, device=device)


def _trainable(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def _fwd_bwd(model: nn.Module, forward: Callable[[nn.Module], torch.Tensor]) -> StepCost:
    """Count forward and backward of ``forward(model)`` (a scalar loss), and AdamW's ops, on a meta copy."""
    meta = _on_meta(model)
    holder: dict[str, torch.Tensor] = {}
    f_flops, f_ops = count_flops(lambda: holder.update(loss=forward(meta)))
    b_flops, b_ops = count_flops(lambda: holder["loss"].backward())
    params = [p for p in meta.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4, foreach=True)
    _, o_ops = count_flops(opt.step)
    return StepCost(
        forward=f_flops,
        backward=b_flops,
        ops=f_ops + b_ops + o_ops,
        optimizer_flops=_ADAMW_FLOPS_PER_PARAM * _trainable(meta),
    )


def step_flops(model: nn.Module, batch_size: int, *, mask_ratio: float | None = None) -> StepCost:
    """FLOPs of one self-supervised training step of ``model`` (forward + backward of ``model(x)["loss"]``) on a batch
    of ``batch_size`` images of the model's own shape, at ``mask_ratio`` (None: the model's own)."""
    positive_int("batch_size", batch_size)
    if mask_ratio is not None:
        in_range("mask_ratio", mask_ratio, 0.0, 1.0, high_open=True)
    return _fwd_bwd(model, lambda m: m(_input(m, batch_size), mask_ratio=mask_ratio)["loss"])


def finetune_step_flops(model: nn.Module, batch_size: int, *, num_classes: int = 10, pool: str = "cls") -> StepCost:
    """FLOPs of one end-to-end fine-tuning step (:func:`maelab.train.fine_tune`): the unmasked encoder
    (``forward_features``) + a Linear head, cross-entropy, backward through encoder and head (the decoder is unused)."""
    from . import models

    positive_int("batch_size", batch_size)
    positive_int("num_classes", num_classes, minimum=2)
    clf = models.create_encoder_classifier(model, num_classes, pool=pool)

    def forward(m):
        x = _input(m, batch_size)
        return F.cross_entropy(m(x), torch.zeros(batch_size, dtype=torch.long, device=x.device))

    return _fwd_bwd(clf, forward)


def eval_flops(model: nn.Module, n_images: int, *, batch_size: int = 256, pool: str = "cls") -> tuple[int, int]:
    """(FLOPs, ops) of a no-grad ``forward_features`` pass (no masking: probes, k-NN, feature extraction) over
    ``n_images`` images in batches of ``batch_size`` (the last batch smaller)."""
    positive_int("n_images", n_images, minimum=0)
    positive_int("batch_size", batch_size)
    if n_images == 0:
        return 0, 0
    meta = _on_meta(model).eval()
    full, rest = divmod(n_images, batch_size)
    flops = ops = 0
    for b, times in ((batch_size, full), (rest, 1)):
        if b and times:
            with torch.no_grad():
                f, o = count_flops(lambda b=b: meta.forward_features(_input(meta, b), pool))
            flops, ops = flops + f * times, ops + o * times
    return flops, ops


# ----------------------------------------------------------------------------------------------------------------
# memory
# ----------------------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class MemoryEstimate:
    """Bytes: ``params`` (all), ``grads`` and ``optimizer`` (AdamW's two moments, trainable parameters, float32),
    ``activations`` (saved for backward), ``data`` (dataset resident on the device); ``method`` says how
    activations were obtained."""

    params: int
    grads: int
    optimizer: int
    activations: int
    data: int
    method: str

    @property
    def total(self) -> int:
        return self.params + self.grads + self.optimizer + self.activations + self.data


def _saved_bytes(
    model: nn.Module, batch_size: int, amp: str, step: Callable[[nn.Module, torch.Tensor], Any], fake: bool = True
) -> int:
    """Bytes of the distinct non-parameter storages autograd saves during one forward of ``step`` on the CPU (under
    CPU bf16 autocast when ``amp="bf16"``). ``fake=True`` runs it on fake tensors (``FakeTensorMode``: shapes,
    dtypes and storage sharing without memory or arithmetic, so any batch size is instant); ``fake=False`` runs it
    for real (the reference the fake measurement is tested against)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.func import functional_call

    seen: dict[int, int] = {}

    def pack(t):
        st = t.untyped_storage()
        seen[st._cdata] = max(seen.get(st._cdata, 0), st.nbytes())
        return t

    mode = FakeTensorMode() if fake else contextlib.nullcontext()
    with mode:
        conv = mode.from_tensor if fake else (lambda t: t)
        params = {k: nn.Parameter(conv(v), requires_grad=v.requires_grad) for k, v in model.named_parameters()}
        state = {**params, **{k: conv(v) for k, v in model.named_buffers()}}
        x = _input(model, batch_size, device="cpu")
        with (
            torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t),
            torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp == "bf16"),
        ):
            step(lambda *a, **kw: functional_call(model, state, a, kw), x)
    skip = {p.untyped_storage()._cdata for p in params.values()}
    return sum(v for k, v in seen.items() if k not in skip)


def _cuda_peak(model: nn.Module, batch_size: int, amp: str, step: Callable) -> int:
    dev = torch.device("cuda")
    m = copy.deepcopy(model).to(dev).train()
    opt = torch.optim.AdamW([p for p in m.parameters() if p.requires_grad], lr=1e-4)
    torch.cuda.synchronize(dev)
    torch.cuda.reset_peak_memory_stats(dev)
    base = torch.cuda.memory_allocated(dev)
    x = _input(m, batch_size, device=dev)
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp == "bf16"):
        loss = step(m, x)
    loss.backward()
    opt.step()
    torch.cuda.synchronize(dev)
    peak = torch.cuda.max_memory_allocated(dev) - base
    del m, opt, loss
    torch.cuda.empty_cache()
    return int(peak)


def _pretrain_loss(mask_ratio):
    return lambda call, x: call(x, mask_ratio=mask_ratio)["loss"]


def _finetune_loss(num_classes):
    def loss(call, x):
        return F.cross_entropy(call(x), torch.zeros(x.shape[0], dtype=torch.long, device=x.device))

    return loss


def peak_memory_bytes(
    model: nn.Module,
    batch_size: int,
    *,
    mask_ratio: float | None = None,
    amp: str = "bf16",
    kind: str = "pretrain",
    num_classes: int = 10,
    data_images: int = 0,
    measure_cuda: bool = True,
) -> MemoryEstimate:
    """Peak memory of one training step of ``model`` (``kind`` "pretrain" or "finetune") at ``batch_size``.

    ``amp``: "bf16" (the CUDA default) or "off" (float32). ``data_images``: images kept on the device (float32).
    With CUDA available and ``measure_cuda``, the whole step above the model's own memory is measured with
    ``torch.cuda.max_memory_allocated`` (``method="cuda max_memory_allocated"``; ``grads`` and ``optimizer`` are then
    inside ``activations``). Otherwise activations are the bytes autograd saves during the forward at
    ``batch_size``, run on fake CPU tensors (see the module docstring).
    """
    from . import models

    positive_int("batch_size", batch_size)
    positive_int("data_images", data_images, minimum=0)
    one_of("amp", amp, ("bf16", "off"))
    one_of("kind", kind, ("pretrain", "finetune"))
    net = models.create_encoder_classifier(model, num_classes) if kind == "finetune" else model
    step = _finetune_loss(num_classes) if kind == "finetune" else _pretrain_loss(mask_ratio)
    img = model.in_chans * model.img_size**2 * 4
    n_all = sum(p.numel() for p in net.parameters())
    n_tr = _trainable(net)
    params = n_all * 4
    if measure_cuda and torch.cuda.is_available():
        act = _cuda_peak(net, batch_size, amp, step)
        return MemoryEstimate(params, 0, 0, act, data_images * img, "cuda max_memory_allocated")
    act = _saved_bytes(copy.deepcopy(net).cpu().train(), batch_size, amp, step)
    return MemoryEstimate(
        params,
        n_tr * 4,
        2 * n_tr * 4,
        act,
        data_images * img,
        f"saved tensors on fake CPU tensors ({'bf16 autocast' if amp == 'bf16' else 'float32'})",
    )


# ----------------------------------------------------------------------------------------------------------------
# devices
# ----------------------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Device:
    """A device model: ``seconds(flops, ops, kind)`` for one step of ``flops`` FLOPs dispatching ``ops`` ops.

    ``flops_per_s``: achieved FLOP/s (a constant); ``op_overhead_s``: floor per op; ``curve``: optional
    {kind: ((flops_per_step, achieved FLOP/s), ...)} measured points (kind "train" or "eval"), interpolated
    log-log in FLOPs per step and clamped at the ends (used instead of ``flops_per_s`` when given); ``probes``:
    the measured probe workloads of a CPU calibration (``PROBE_WORKLOADS``), which :func:`probe_seconds` scales.
    """

    name: str
    flops_per_s: float
    op_overhead_s: float = 0.0
    source: str = ""
    curve: tuple = ()
    memory_bytes: int | None = None
    probes: tuple = ()

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


#: Where ``maelab.device.calibrate`` stores a GPU's measured training throughput: (folder, name, profile) under
#: the results root. :func:`gpu_device` uses it instead of the assumed :data:`H100_MFU` when it was measured on CUDA.
GPU_CALIBRATION = ("plan", "gpu_calibration", "gpu")


def measured_device(points, source: str) -> Device:
    """The GPU :class:`Device` of measured training steps (``points``: rows with ``flops_per_step``,
    ``flops_per_s``, ``seconds_per_step``, ``ops_per_step``; a DataFrame or a list of dicts): the "train" curve of
    achieved FLOP/s against FLOPs per step, interpolated log-log as a CPU calibration's, and an op floor no larger
    than any measured step's time per op. Named as :data:`H100` so that plan tables keep their columns; ``source``
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
    """The GPU device model of the plans: the stored GPU calibration (:data:`GPU_CALIBRATION` under ``root``,
    default the committed ``data/results``) when one measured on CUDA is stored, else :data:`H100` (5 % MFU
    assumed). A stored calibration that does not verify is reported in one line on stderr and not used."""
    import sys

    from . import store

    root = Path(root) if root is not None else store.repo_root() / "data" / "results"
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
    return measured_device(rec["points"], src)


@dataclasses.dataclass(frozen=True)
class CpuCalibration:
    """A measured CPU calibration. ``points``: per workload a dict (name, kind "train"/"eval", batch_size, flops per
    step, ``seconds`` = the *minimum* wall seconds per step over the repetitions, ``median_seconds``,
    ``cpu_seconds`` (median process CPU time, all threads), ``flops_per_s`` = flops / seconds and
    ``median_flops_per_s``); ``matmul_flops_per_s`` / ``matmul_median_flops_per_s``: float32 GEMM (best / median);
    ``key``: machine + torch + threads; ``loadavg``: 1-minute load average before and after; ``date_utc``.

    Why the minimum: on a shared machine a step's wall time measures the other jobs as much as this one (on this
    project's 2-core machine, shared by several sessions, the median wall time of the same micro step varied 10x
    between two calibrations minutes apart); the fastest repetition is the one least disturbed, the closest to an
    idle machine (the usual benchmarking rule, as in ``timeit``). Under sustained load it still errs on the slow side.
    """

    key: str
    points: tuple
    matmul_flops_per_s: float
    matmul_median_flops_per_s: float
    threads: int
    loadavg: tuple
    date_utc: str
    probes: tuple = ()
    probes_date_utc: str = ""
    op_seconds: float = 0.0

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> CpuCalibration:
        return cls(
            key=d["key"],
            points=tuple(d["points"]),
            matmul_flops_per_s=float(d["matmul_flops_per_s"]),
            matmul_median_flops_per_s=float(d["matmul_median_flops_per_s"]),
            threads=int(d["threads"]),
            loadavg=tuple(d["loadavg"]),
            date_utc=d["date_utc"],
            probes=tuple(d.get("probes", ())),
            probes_date_utc=d.get("probes_date_utc", ""),
            op_seconds=float(d.get("op_seconds", 0.0)),
        )

    def frame(self):
        """The calibration as a DataFrame: one row per workload plus the GEMM, GFLOP/s and % of the GEMM."""
        import pandas as pd

        rows = [
            {
                "workload": p["name"],
                "kind": p["kind"],
                "batch": p["batch_size"],
                "GFLOP/step": p["flops"] / 1e9,
                "ms/step (min)": 1e3 * p["seconds"],
                "ms/step (median)": 1e3 * p["median_seconds"],
                "GFLOP/s (min time)": p["flops_per_s"] / 1e9,
                "GFLOP/s (median time)": p["median_flops_per_s"] / 1e9,
                "% of GEMM": 100 * p["flops_per_s"] / self.matmul_flops_per_s,
            }
            for p in self.points
        ]
        rows += [
            {
                "workload": f"{p['kind']} probe, {p['n_train']} x {p['dim']} features",
                "kind": "probe",
                "ms/step (min)": 1e3 * p["seconds"],
            }
            for p in self.probes
        ]
        rows.append(
            {
                "workload": "float32 GEMM 1024^3",
                "kind": "matmul",
                "GFLOP/s (min time)": self.matmul_flops_per_s / 1e9,
                "GFLOP/s (median time)": self.matmul_median_flops_per_s / 1e9,
                "% of GEMM": 100.0,
            }
        )
        return pd.DataFrame(rows)


def cpu_key() -> str:
    """Calibration cache key: CPU model name, logical cores, torch version, torch threads."""
    name = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{name} | {os.cpu_count()} cores | torch {torch.__version__} | {torch.get_num_threads()} threads"


def _cache_dir() -> Path:
    return cache_root() / "cost"


def calibration_path(key: str | None = None) -> Path:
    """Where the calibration for ``key`` (default :func:`cpu_key`) is cached."""
    key = cpu_key() if key is None else key
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", key).strip("-")[:150]
    return _cache_dir() / f"cpu-calibration-{slug}.json"


def _time_steps(step: Callable[[], Any], warmup: int, reps: int) -> tuple[float, float, float]:
    """(minimum wall, median wall, median process CPU seconds over all threads) of ``step`` over ``reps`` calls."""
    for _ in range(warmup):
        step()
    walls, cpus = [], []
    for _ in range(reps):
        w0, c0 = time.perf_counter(), time.process_time()
        step()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    walls.sort()
    return walls[0], walls[len(walls) // 2], float(sorted(cpus)[len(cpus) // 2])


def _matmul(n: int = 1024, reps: int = 20) -> tuple[float, float]:
    """(best, median) FLOP/s of a float32 n x n x n GEMM over ``reps`` calls."""
    g = torch.Generator().manual_seed(0)
    a, b = torch.rand(n, n, generator=g), torch.rand(n, n, generator=g)
    best, med, _ = _time_steps(lambda: a @ b, 2, reps)
    return 2 * n**3 / best, 2 * n**3 / med


def _calibration_workload(size: str, kind: str, batch: int) -> tuple[int, Callable[[], None]]:
    """(FLOPs, step function) of one calibration workload: a training step (forward + backward + AdamW, float32)
    or a no-grad feature-extraction batch of the ``size`` MAE."""
    from . import models

    m = models.create("mae", size, seed=0)
    x = torch.rand(batch, m.in_chans, m.img_size, m.img_size, generator=torch.Generator().manual_seed(0))
    if kind == "train":
        opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
        g = torch.Generator().manual_seed(0)

        def step():
            opt.zero_grad(set_to_none=True)
            m(x, generator=g)["loss"].backward()
            opt.step()

        return step_flops(m, batch).flops, step

    m.eval()

    def fwd():
        with torch.no_grad():
            m.forward_features(x)

    return eval_flops(m, batch, batch_size=batch)[0], fwd


def _calibration_points(rounds: int, reps: int) -> tuple:
    """Interleaved timing of the workloads: ``rounds`` rounds, each timing every workload ``reps`` times, so that a
    burst of load elsewhere does not fall on one workload's whole measurement."""
    work = {
        (size, kind, batch): _calibration_workload(size, kind, batch)
        for size in ("micro", "small")
        for kind, batch in (("train", 128), ("eval", 256))
    }
    times: dict[tuple, list[tuple[float, float, float]]] = {k: [] for k in work}
    for r in range(rounds):
        for k, (_, step) in work.items():
            times[k].append(_time_steps(step, 2 if r == 0 else 0, reps))
    points = []
    for (size, kind, batch), (flops, _) in work.items():
        t = times[(size, kind, batch)]
        best = min(x[0] for x in t)
        med = sorted(x[1] for x in t)[len(t) // 2]
        cpu = sorted(x[2] for x in t)[len(t) // 2]
        points.append(
            {
                "name": f"{size} MAE {kind}",
                "kind": kind,
                "batch_size": batch,
                "flops": flops,
                "seconds": best,
                "median_seconds": med,
                "cpu_seconds": cpu,
                "flops_per_s": flops / best,
                "median_flops_per_s": flops / med,
            }
        )
    return tuple(points)


#: The probe workloads :func:`calibrate_cpu` times (``kind``, training examples, feature dimension), each on
#: synthetic 10-class Gaussian-cluster features (test set of the same size): the scikit-learn and torch logistic
#: regressions of :func:`maelab.evaluate.linear_probe` (C chosen from ``DEFAULT_CS`` on a validation split, one BLAS
#: thread as the notebooks run them), the torch one also above Newton's size limit (raw 28 x 28 pixels: the
#: whitened L-BFGS path), and k-NN (:func:`maelab.evaluate.knn_accuracy`).
PROBE_WORKLOADS = (("logreg", 2000, 64), ("logreg_torch", 2000, 64), ("logreg_torch", 2000, 784), ("knn", 2000, 64))


def _synthetic_features(n: int, dim: int, seed: int, classes: int = 10) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, classes, (n,), generator=g)
    centres = torch.randn(classes, dim, generator=g) * 0.7
    return centres[y] + torch.randn(n, dim, generator=g), y


def _op_seconds(batch: int = 2, reps: int = 10) -> float:
    """Seconds per op of an op-bound training step (the ``micro`` MAE at ``batch`` images: tiny tensors), the
    smaller of the fastest wall time and the median CPU time per step, divided by its op count: the CPU's floor per
    op (:attr:`Device.op_overhead_s`), which bounds steps far smaller than the calibration workloads."""
    from . import models

    m = models.create("mae", "micro", seed=0)
    x = torch.rand(batch, m.in_chans, m.img_size, m.img_size, generator=torch.Generator().manual_seed(0))
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)

    def step():
        opt.zero_grad(set_to_none=True)
        m(x)["loss"].backward()
        opt.step()

    best, _, cpu = _time_steps(step, 2, reps)
    return min(best, cpu) / step_flops(m, batch).ops


def _probe_points(reps: int = 2) -> tuple:
    """Seconds of each ``PROBE_WORKLOADS`` workload on this CPU: the smaller of its fastest wall time over
    ``reps`` runs and its median process CPU time (all threads). On a machine shared with other jobs a probe's wall
    time measures their load too, while its CPU time does not; on an idle machine a multi-threaded probe's wall
    time is the smaller."""
    from . import evaluate

    out = []
    for kind, n, dim in PROBE_WORKLOADS:
        xtr, ytr = _synthetic_features(n, dim, 0)
        xte, yte = _synthetic_features(n, dim, 1)
        if kind == "knn":
            step = functools.partial(evaluate.knn_accuracy, xtr, ytr, xte, yte)
        else:
            step = functools.partial(evaluate.linear_probe, xtr, ytr, xte, yte, method=kind, seed=0, blas_threads=1)
        best, _, cpu = _time_steps(step, 0, reps)
        out.append(
            {
                "kind": kind,
                "n_train": n,
                "n_test": n,
                "dim": dim,
                "seconds": min(best, cpu),
                "wall_seconds": best,
                "cpu_seconds": cpu,
            }
        )
    return tuple(out)


def calibrate_cpu(*, force: bool = False, rounds: int = 6, reps: int = 3) -> CpuCalibration:
    """Measure (or load from ``.cache/cost``) this machine's CPU calibration: training steps of the ``micro`` and
    ``small`` MAE at batch 128 and feature extraction at batch 256 (float32, this process, torch's thread count),
    and a 1024^3 float32 GEMM, each the fastest of ``rounds x reps`` repetitions, interleaved (see
    :class:`CpuCalibration`). Takes ~1-2 min on 2 cores; run it on a quiet machine (the load average is recorded)."""
    positive_int("rounds", rounds)
    positive_int("reps", reps)
    import datetime as dt

    path = calibration_path()
    if path.exists() and not force:
        d = json.loads(path.read_text())
        if d.get("format") == _CALIBRATION_FORMAT and d.get("key") == cpu_key():
            return CpuCalibration.from_dict(d)
        if d.get("format") == 3 and d.get("key") == cpu_key():  # training points kept; the probes are new in 4
            cal = dataclasses.replace(
                CpuCalibration.from_dict(d),
                probes=_probe_points(),
                op_seconds=_op_seconds(),
                probes_date_utc=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            )
            _write_calibration(path, cal)
            return cal
    load0 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    points = _calibration_points(rounds, reps)
    gemm, gemm_median = _matmul()
    probes = _probe_points()
    load1 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    cal = CpuCalibration(
        key=cpu_key(),
        points=points,
        matmul_flops_per_s=gemm,
        matmul_median_flops_per_s=gemm_median,
        threads=torch.get_num_threads(),
        loadavg=(load0, load1),
        date_utc=now,
        probes=probes,
        probes_date_utc=now,
        op_seconds=_op_seconds(),
    )
    _write_calibration(path, cal)
    return cal


def _write_calibration(path: Path, cal: CpuCalibration) -> None:
    from ._util import atomic_path

    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps({"format": _CALIBRATION_FORMAT, **cal.to_dict()}, indent=1) + "\n")


def cpu_device(calibration: CpuCalibration | None = None) -> Device:
    """The CPU :class:`Device` of a calibration (default: :func:`calibrate_cpu`, cached)."""
    cal = calibrate_cpu() if calibration is None else calibration
    curve = tuple(
        (kind, tuple((p["flops"], p["flops_per_s"]) for p in cal.points if p["kind"] == kind))
        for kind in ("train", "eval")
    )
    best = max(p["flops_per_s"] for p in cal.points)
    return Device(
        name="CPU (measured)",
        flops_per_s=best,
        op_overhead_s=cal.op_seconds,
        curve=curve,
        source=f"calibrate_cpu() on {cal.key}, {cal.date_utc}",
        probes=cal.probes,
    )


# ----------------------------------------------------------------------------------------------------------------
# evaluation on features: probes and k-NN
# ----------------------------------------------------------------------------------------------------------------
EVAL_KINDS = ("logreg", "logreg_torch", "knn")
#: Logistic-regression fits of a probe with the default C grid: one per C of ``maelab.evaluate.DEFAULT_CS`` (6) on the
#: validation split, then the final fit at the chosen C (the calibrated probe workloads are such probes).
GRID_FITS = 7
_NEWTON_MAX_PARAMS = 3000  # maelab.logreg: Newton up to K (d + 1) parameters, whitened L-BFGS above


@dataclasses.dataclass(frozen=True)
class EvalJob:
    """Work on extracted features that is not a forward pass, ``count`` times per repeat of its run: ``kind``
    "logreg" (:func:`maelab.evaluate.linear_probe` with scikit-learn, C from ``DEFAULT_CS`` on a validation
    split), "logreg_torch" (the same with :mod:`maelab.logreg`) or "knn" (:func:`maelab.evaluate.knn_accuracy`),
    on ``n_train`` / ``n_test`` examples of ``dim`` features (0: the run's model's embedding width). ``fits``: the
    logistic regressions one probe fits (default ``GRID_FITS``: one per C of the default grid on the validation
    split, then the final one; 1 with a fixed C)."""

    kind: str
    n_train: int
    n_test: int
    dim: int = 0
    count: int = 1
    classes: int = 10
    fits: int = 0

    def __post_init__(self):
        one_of("kind", self.kind, EVAL_KINDS)
        for name in ("n_train", "n_test", "count"):
            positive_int(name, getattr(self, name))
        positive_int("dim", self.dim, minimum=0)
        positive_int("fits", self.fits, minimum=0)
        positive_int("classes", self.classes, minimum=2)


def _newton(dim: int, classes: int = 10) -> bool:
    return classes * (dim + 1) <= _NEWTON_MAX_PARAMS


def probe_seconds(job: EvalJob, device: Device) -> float:
    """Seconds of one ``job`` (``dim`` resolved) on ``device``, scaled from the device's measured probe workload of
    the same kind and solver (``PROBE_WORKLOADS``) by the work the solver does per iteration:

    * k-NN: the distance matrix, ``n_train * n_test * dim``;
    * scikit-learn logistic regression (L-BFGS): gradients, ``n_train * dim``;
    * torch logistic regression: Newton's Hessian, ``n_train * (dim + 1)^2`` (up to 3,000 parameters), else the
      whitening of the whitened L-BFGS, ``n_train * dim^2``.

    The iteration counts are taken as those of the reference (synthetic, well-separated features): real features
    that are worse conditioned take more. A device without measured probes (the H100 model) runs k-NN as its
    FLOPs (``2 n_train n_test dim``) and has no probe time (the probes run on the host CPU: see :func:`predict`).
    """
    if job.dim <= 0:
        raise ParameterError("job.dim", "a resolved feature dimension (> 0)", job.dim)
    if not device.probes:
        if job.kind == "knn":
            return device.seconds(2.0 * job.n_train * job.n_test * job.dim, 0, "eval")
        return 0.0
    newton = _newton(job.dim, job.classes)
    refs = [p for p in device.probes if p["kind"] == job.kind]
    if job.kind == "logreg_torch":
        refs = [p for p in refs if _newton(p["dim"]) == newton] or refs
    if not refs:
        raise ParameterError("device", f"a calibration with a {job.kind!r} probe workload", device.name)
    r = min(refs, key=lambda p: abs(math.log(p["dim"] / job.dim)))
    n = job.n_train / r["n_train"]
    if job.kind == "knn":
        scale = n * (job.n_test / r["n_test"]) * (job.dim / r["dim"])
    elif job.kind == "logreg":
        scale = n * job.dim / r["dim"]
    elif newton:
        scale = n * ((job.dim + 1) / (r["dim"] + 1)) ** 2
    else:
        scale = n * (job.dim / r["dim"]) ** 2
    if job.kind != "knn":
        scale *= (job.fits or GRID_FITS) / GRID_FITS
    return r["seconds"] * scale


# ----------------------------------------------------------------------------------------------------------------
# plans
# ----------------------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class PlannedRun:
    """One planned pre-training run (and what is computed with it), repeated ``repeats`` times (e.g. seeds).

    ``model``/``size``/``overrides`` are passed to :func:`maelab.models.create` (with ``img_size`` and ``in_chans``
    = ``channels``); ``steps`` optimiser steps at ``batch_size`` and ``mask_ratio`` (None: the model's own);
    ``eval_images``: images through an unmasked no-grad forward (online-probe evaluation, feature extraction for
    probes, k-NN and ranks); ``finetune_steps`` at ``finetune_batch`` with ``num_classes`` classes; ``data_images``:
    images kept on the device (memory only); ``jobs``: the probes and k-NN on the extracted features
    (:class:`EvalJob`, per repeat).
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

    def __post_init__(self):
        for name in ("img_size", "channels", "batch_size", "finetune_batch", "repeats"):
            positive_int(name, getattr(self, name))
        for name in ("steps", "eval_images", "finetune_steps", "data_images"):
            positive_int(name, getattr(self, name), minimum=0)
        positive_int("num_classes", self.num_classes, minimum=2)
        if self.mask_ratio is not None:
            in_range("mask_ratio", self.mask_ratio, 0.0, 1.0, high_open=True)
        if not isinstance(self.overrides, tuple):
            raise ParameterError("overrides", "a tuple of (key, value) pairs", self.overrides)
        if not isinstance(self.jobs, tuple) or not all(isinstance(j, EvalJob) for j in self.jobs):
            raise ParameterError("jobs", "a tuple of maelab.cost.EvalJob", self.jobs)

    def build(self) -> nn.Module:
        """The model of this run (on the CPU, seed 0)."""
        from . import models

        return models.create(
            self.model, self.size, img_size=self.img_size, in_chans=self.channels, seed=0, **dict(self.overrides)
        )

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
    ) -> PlannedRun:
        """The run :func:`maelab.experiments.pretrain_and_evaluate` makes of a ``PretrainSpec``: ``epochs *
        (n_train // batch)`` steps; evaluation = online probe on ``n_test`` every ``max(1, epochs // 10)`` epochs
        (and the last) when ``online_eval``, features of train + test, ``n_test`` per rank epoch, the test
        reconstruction loss (counted as an unmasked pass: an over-count) and ``n_test`` per fine-tuning epoch;
        fine-tuning ``finetune_epochs`` (default ``spec.finetune_epochs``) x ``n_train // min(128, n_train)``
        steps. ``extra_eval_images`` adds the caller's own feature passes (e.g. a second pooling).

        The pipeline's evaluation of the final model (``pipeline_eval``; False for a caller that evaluates snapshots
        itself, e.g. :func:`maelab.experiments.pretrain`) is, per pooling (``pools``), a scikit-learn linear probe
        and a k-NN on the train / test features (:class:`EvalJob`, ``probe_fits`` fits per probe: see there; the
        probe's ``probe_kind``: "logreg" or "logreg_torch"); ``jobs`` adds the caller's own."""
        n_tr, n_te = int(spec.n_train), int(spec.n_test or 0)
        batch = min(spec.batch_size, n_tr)
        every = max(1, spec.epochs // 10)
        n_evals = sum(1 for e in range(1, spec.epochs + 1) if e % every == 0 or e == spec.epochs) if online_eval else 0
        n_ranks = (
            len({e for e in range(spec.epochs + 1) if e % spec.rank_every == 0 or e == spec.epochs})
            if spec.rank_every
            else 0
        )
        ft_epochs = spec.finetune_epochs if finetune_epochs is None else finetune_epochs
        ft_batch = min(128, n_tr)
        final = (n_tr + n_te + n_te) if pipeline_eval else 0  # features of train + test, test reconstruction loss
        evals = n_evals * n_te + final + n_ranks * n_te + ft_epochs * n_te + extra_eval_images
        positive_int("pools", pools)
        if pipeline_eval and n_te:
            lp = EvalJob(probe_kind, n_tr, n_te, count=pools, fits=probe_fits)
            jobs = (lp, EvalJob("knn", n_tr, n_te, count=pools), *jobs)
        return cls(
            label=label or spec.key,
            model=spec.model,
            size=spec.size,
            overrides=tuple(sorted((k, v) for k, v in spec.model_overrides)),
            img_size=spec.img_size,
            channels=spec.channels,
            batch_size=batch,
            steps=spec.epochs * (n_tr // batch),
            mask_ratio=spec.mask_ratio,
            eval_images=evals,
            finetune_steps=ft_epochs * (n_tr // ft_batch),
            finetune_batch=ft_batch,
            data_images=n_tr + n_te,
            repeats=repeats,
            jobs=tuple(jobs),
        )


def _freeze(v):
    return tuple(_freeze(x) for x in v) if isinstance(v, (list, tuple)) else v


@functools.lru_cache(maxsize=256)
def _costs(run: PlannedRun) -> dict:
    """FLOPs/ops per pre-training step, fine-tuning step and eval batch of ``run`` (cached per run)."""
    model = run.build()
    pre = step_flops(model, run.batch_size, mask_ratio=run.mask_ratio) if run.steps else StepCost(0, 0, 0)
    ft = (
        finetune_step_flops(model, run.finetune_batch, num_classes=run.num_classes)
        if run.finetune_steps
        else StepCost(0, 0, 0)
    )
    ev_batch = 256
    ev = eval_flops(model, ev_batch, batch_size=ev_batch) if run.eval_images else (0, 0)
    width = int(getattr(model, "embed_dim", 0))
    return {
        "pre": pre,
        "ft": ft,
        "eval_batch": ev_batch,
        "eval": ev,
        "params": sum(p.numel() for p in model.parameters()),
        "jobs": tuple(j if j.dim else dataclasses.replace(j, dim=width) for j in run.jobs),
    }


@functools.lru_cache(maxsize=256)
def _memory(run: PlannedRun, amp: str) -> int:
    model = run.build()
    pre = (
        peak_memory_bytes(
            model, run.batch_size, mask_ratio=run.mask_ratio, amp=amp, data_images=run.data_images, measure_cuda=False
        ).total
        if run.steps
        else 0
    )
    ft = (
        peak_memory_bytes(
            model,
            run.finetune_batch,
            amp=amp,
            kind="finetune",
            num_classes=run.num_classes,
            data_images=run.data_images,
            measure_cuda=False,
        ).total
        if run.finetune_steps
        else 0
    )
    return max(pre, ft)


def predict(run: PlannedRun, device: Device, host: Device | None = None) -> dict:
    """Predicted cost of ``run`` (all its repeats) on ``device``: FLOPs and seconds of pre-training, evaluation
    (forward passes), fine-tuning, k-NN (``knn_s``, on the device) and the probes (``probe_s``), and their total
    (``seconds``).

    The logistic-regression probes run on the CPU whatever the device (scikit-learn; :mod:`maelab.logreg` in
    float64 on the CPU): ``probe_s`` is their time on ``host`` (a calibrated CPU :class:`Device`; default:
    ``device`` when it is one, else no probe time)."""
    c = _costs(run)
    pre, ft = c["pre"], c["ft"]
    ev_f, ev_o = c["eval"]
    n_eval_batches = run.eval_images / c["eval_batch"]
    out = {
        "params": c["params"],
        "step_flops": pre.flops,
        "step_ops": pre.ops,
        "train_flops": run.repeats * run.steps * pre.flops,
        "train_s": run.repeats * run.steps * device.seconds(pre.flops, pre.ops, "train"),
        "finetune_flops": run.repeats * run.finetune_steps * ft.flops,
        "finetune_s": run.repeats * run.finetune_steps * device.seconds(ft.flops, ft.ops, "train"),
        "eval_flops": run.repeats * n_eval_batches * ev_f,
        "eval_s": run.repeats * n_eval_batches * device.seconds(ev_f, ev_o, "eval"),
    }
    host = host if host is not None else (device if device.probes else None)
    knn = [j for j in c["jobs"] if j.kind == "knn"]
    probes = [j for j in c["jobs"] if j.kind != "knn"]
    out["knn_flops"] = run.repeats * sum(2.0 * j.count * j.n_train * j.n_test * j.dim for j in knn)
    out["knn_s"] = run.repeats * sum(j.count * probe_seconds(j, device) for j in knn)
    out["probe_s"] = run.repeats * sum(j.count * probe_seconds(j, host) for j in probes) if host else 0.0
    out["flops"] = out["train_flops"] + out["finetune_flops"] + out["eval_flops"] + out["knn_flops"]
    out["seconds"] = out["train_s"] + out["finetune_s"] + out["eval_s"] + out["knn_s"] + out["probe_s"]
    return out


#: The columns of :func:`format_plan_table` before the per-device minutes.
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
    """A pandas DataFrame, one row per planned run: :data:`PLAN_COLUMNS` then ``"<device> min"`` per device
    (predicted minutes of the run with all its repeats). ``memory=False`` skips the (CPU-measured) peak-memory
    column (NaN), which needs two small real forward passes per run. "CPU probes min": the logistic-regression
    probes, which run on the CPU whatever the device, on the first calibrated CPU among ``devices`` (NaN without
    one); a device's minutes include them only when it is that CPU."""
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
    frames = []
    for nb, runs in plans.items():
        t = format_plan_table(runs, devices, memory=memory)
        total = {c: t[c].sum() for c in t.columns if c.endswith(" min") or c == "total TFLOP"}
        total.update({"run": "total", "peak memory (GiB)": t["peak memory (GiB)"].max()})
        t = pd.concat([t, pd.DataFrame([total])], ignore_index=True)
        t.insert(0, "notebook", nb)
        frames.append(t)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["notebook", *PLAN_COLUMNS])


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m maelab.cost calibrate [--force]``: measure (or show the cached) CPU calibration.

    The plan is one command, ``python -m maelab.book plan`` (every notebook's planned runs need the paper registry,
    which the book's entry point installs; ``--runs FILE`` plans the runs of a JSON file)."""
    import pandas as pd

    p = argparse.ArgumentParser(prog="python -m maelab.cost", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("calibrate", help="measure (or show the cached) CPU calibration")
    c.add_argument("--force", action="store_true", help="re-measure even when cached")
    args = p.parse_args(argv)
    with pd.option_context("display.width", 200, "display.max_columns", 30, "display.float_format", "{:.3g}".format):
        cal = calibrate_cpu(force=args.force)
        print(f"{cal.key}; {cal.date_utc}; load average {cal.loadavg[0]:.2f} -> {cal.loadavg[1]:.2f}")
        print(cal.frame().to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
