"""The measured CPU: a calibration of this machine's achieved FLOP/s, op floor and probe times, cached per machine.

:func:`~maelab.cost.calibrate_cpu` times a few training steps (forward + backward + AdamW, float32, one process) of the
``micro`` and ``small`` MAEs and a feature-extraction forward pass, plus a float32 GEMM (the machine's practical matmul
peak), each timed as the fastest of several repetitions (the least disturbed by other jobs on a shared machine, see
:class:`~maelab.cost.CpuCalibration`), and caches the result in ``.cache/cost/`` keyed by CPU model name, core count,
torch version and thread count. A run's step is converted with the achieved FLOP/s of the calibration point of similar
work per step (log-log interpolation in FLOPs per step, clamped at the ends: :func:`~maelab.cost.cpu_device`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from .. import paths
from .._util import cpu_model
from .._validate import positive_int
from .counting import eval_flops, step_flops
from .devices import Device

_CALIBRATION_FORMAT = 4


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
    return f"{cpu_model()} | {os.cpu_count()} cores | torch {torch.__version__} | {torch.get_num_threads()} threads"


def calibration_path(key: str | None = None) -> Path:
    """Where the calibration for ``key`` (default :func:`cpu_key`) is cached."""
    key = cpu_key() if key is None else key
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", key).strip("-")[:150]
    return paths.cache_dir("cost") / f"cpu-calibration-{slug}.json"


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
    from .. import models

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


#: The probe workloads :func:`~maelab.cost.calibrate_cpu` times (``kind``, training examples, feature dimension), each
#: on synthetic 10-class Gaussian-cluster features (test set of the same size): the scikit-learn and torch logistic
#: regressions of :func:`maelab.evaluate.linear_probe` (C chosen from ``DEFAULT_CS`` on a validation split, one BLAS
#: thread as the notebooks run them), the torch one also above Newton's size limit (raw 28 x 28 pixels: the whitened
#: L-BFGS path), and k-NN (:func:`maelab.evaluate.knn_accuracy`).
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
    from .. import models

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
    from .. import evaluate

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
    from .._util import atomic_path

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
