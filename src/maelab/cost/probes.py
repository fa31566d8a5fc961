"""Work on extracted features that is not a forward pass: the logistic-regression probes and k-NN
(:class:`~maelab.cost.EvalJob`), priced by scaling the calibrated CPU's measured probe workloads
(:func:`~maelab.cost.probe_seconds`)."""

from __future__ import annotations

import dataclasses
import math

from .._validate import ParameterError, one_of, positive_int
from .devices import Device

#: The kinds of :class:`EvalJob`.
EVAL_KINDS = ("logreg", "logreg_torch", "knn")
#: Logistic-regression fits of a probe with the default C grid, one per C of ``maelab.evaluate.DEFAULT_CS`` (6) on the
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
    split, then the final one; 1 with a fixed C). ``on_device``: a "logreg_torch" probe fitted on the run's device
    (``linear_probe``'s ``device``, as the zoo's), priced there like k-NN, not on the host CPU."""

    kind: str
    n_train: int
    n_test: int
    dim: int = 0
    count: int = 1
    classes: int = 10
    fits: int = 0
    on_device: bool = False

    def __post_init__(self):
        one_of("kind", self.kind, EVAL_KINDS)
        if self.on_device and self.kind != "logreg_torch":
            raise ParameterError(
                "on_device", "False unless kind is 'logreg_torch' (the probe that runs on a device)", True
            )
        for name in ("n_train", "n_test", "count"):
            positive_int(name, getattr(self, name))
        positive_int("dim", self.dim, minimum=0)
        positive_int("fits", self.fits, minimum=0)
        positive_int("classes", self.classes, minimum=2)


def _newton(dim: int, classes: int = 10) -> bool:
    return classes * (dim + 1) <= _NEWTON_MAX_PARAMS


def _torch_solver(job: EvalJob) -> tuple[bool, int]:
    """(Newton?, its width in features) of ``maelab.logreg`` for a "logreg_torch" job: Newton on ``dim`` features,
    or on the ``n_train``-dimensional row space when there are fewer examples than features and that fits; else
    the whitened L-BFGS (width ``dim``)."""
    if _newton(job.dim, job.classes):
        return True, job.dim
    if job.n_train < job.dim and _newton(job.n_train, job.classes):
        return True, job.n_train
    return False, job.dim


def probe_seconds(job: EvalJob, device: Device) -> float:
    """Seconds of one ``job`` (``dim`` resolved) on ``device``, scaled from the device's measured probe workload of
    the same kind and solver (``PROBE_WORKLOADS``) by the work the solver does per iteration:

    * k-NN: the distance matrix, ``n_train * n_test * dim``;
    * scikit-learn logistic regression (L-BFGS): gradients, ``n_train * dim``;
    * torch logistic regression: Newton's Hessian, ``n_train * (dim + 1)^2`` (up to 3,000 parameters; with fewer
      examples than features, ``dim`` is ``n_train``, the row space Newton runs in where that fits), else the
      whitening of the whitened L-BFGS, ``n_train * dim * min(dim, n_train)``.

    The iteration counts are taken as those of the reference (synthetic, well-separated features): real features
    that are worse conditioned take more. A device without measured probes (the H100 model) runs k-NN as its
    FLOPs (``2 n_train n_test dim``) and an ``on_device`` probe as the FLOPs of one data Hessian per fit
    (``2 n_train P^2`` for Newton's ``P = classes (dim + 1)`` parameters, else the whitening's
    ``2 n_train dim min(dim, n_train)``);
    other probes have no time there (they run on the host CPU: see :func:`predict`).
    """
    if job.dim <= 0:
        raise ParameterError("job.dim", "a resolved feature dimension (> 0)", job.dim)
    newton, dim = _torch_solver(job) if job.kind == "logreg_torch" else (False, job.dim)
    side = min(job.dim, job.n_train)  # the whitened L-BFGS decomposes the smaller of covariance and Gram matrix
    if not device.probes:
        if job.kind == "knn":
            return device.seconds(2.0 * job.n_train * job.n_test * job.dim, 0, "eval")
        if job.on_device:
            work = job.n_train * (job.classes * (dim + 1)) ** 2 if newton else job.n_train * job.dim * side
            return device.seconds((job.fits or GRID_FITS) * 2.0 * work, 0, "eval")
        return 0.0
    refs = [p for p in device.probes if p["kind"] == job.kind]
    if job.kind == "logreg_torch":
        refs = [p for p in refs if _newton(p["dim"]) == newton] or refs
    if not refs:
        raise ParameterError("device", f"a calibration with a {job.kind!r} probe workload", device.name)
    r = min(refs, key=lambda p: abs(math.log(p["dim"] / dim)))
    n = job.n_train / r["n_train"]
    if job.kind == "knn":
        scale = n * (job.n_test / r["n_test"]) * (job.dim / r["dim"])
    elif job.kind == "logreg":
        scale = n * job.dim / r["dim"]
    elif newton:
        scale = n * ((dim + 1) / (r["dim"] + 1)) ** 2
    else:
        scale = n * job.dim * side / r["dim"] ** 2
    if job.kind != "knn":
        scale *= (job.fits or GRID_FITS) / GRID_FITS
    return r["seconds"] * scale
