"""Helpers for architecture and hyper-parameter sweeps (Bisulco et al. 2025, supplement §D, Figs. 14-19).

**Paper-specific:** the measurements of the ``bisulco_sweeps`` notebook (step cost in FLOPs for Figs. 14 and 16,
probe accuracy per snapshot for Fig. 18, per-block CKA for Fig. 19). The pre-training and evaluation they build on
is the general :mod:`maelab.experiments` pipeline.

The sweeps themselves are :func:`maelab.experiments.pretrain_and_evaluate` runs; this module adds what those runs do
not measure:

* :func:`step_cost` -- the cost of one pre-training step (forward + backward + AdamW update) of a spec's model:
  floating-point operations counted by the cost model's counting (:func:`maelab.cost.step_flops`: the flop
  counter on a meta copy, attention through the math backend of ``scaled_dot_product_attention`` so that it is
  counted as its matrix products; deterministic) and the *minimum* over repetitions of the wall time and of the
  process CPU time, measured here on the real model (the page shows them). Wall time on a shared machine is
  noisy; the minimum over repetitions and the CPU time are less so, and the FLOP count not at all.
* :func:`snapshot_probe_accuracy` -- linear-probe accuracy (the same logistic-regression probe as
  ``pretrain_and_evaluate``) of the weights saved at ``spec.snapshot_epochs`` (Fig. 18: probe accuracy against
  pre-training epoch).
* :func:`evaluate_specs` -- ``pretrain_and_evaluate`` for many specs.
* :func:`finetune_vs_probe` -- for every fine-tuned run, fine-tuned test accuracy against the frozen linear probe
  of the same run (fine-tuning that does not beat the frozen probe has not learned).
* :func:`layer_features` and :func:`cka_matrix` -- per-block encoder representations of unmasked images and the
  matrix of linear CKA (:func:`maelab.metrics.linear_cka`) between the blocks of two encoders (Fig. 19).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence

import numpy as np
import torch

from maelab import cost, evaluate, experiments, metrics
from maelab._util import resolve_device
from maelab._validate import ParameterError, one_of, positive_int
from maelab.claims import FineTuneCheck
from maelab.options import DryRunLimits, cap
from maelab.parts import Task, stored
from maelab.prefetch import compute_parts, prefetch

__all__ = [
    "step_cost",
    "snapshot_probe_accuracy",
    "layer_features",
    "cka_matrix",
    "run_cell",
    "RUN",
    "evaluate_specs",
    "finetune_vs_probe",
]


def _one_step(model, opt, x, mask_ratio, generator):
    opt.zero_grad(set_to_none=True)
    out = model(x, mask_ratio=mask_ratio, generator=generator)
    out["loss"].backward()
    opt.step()


def step_cost(
    spec: experiments.PretrainSpec,
    *,
    batch_size: int | None = None,
    reps: int = 3,
    warmup: int = 1,
    caps: DryRunLimits | None = None,
) -> dict:
    """Cost of one pre-training step of ``spec``'s model on a batch of random images (CPU, float32).

    Returns ``flops`` (forward + backward, counted once by :func:`maelab.cost.step_flops`; the optimiser update is
    not counted), ``wall_s`` and ``cpu_s`` (minimum over ``reps`` timed steps after ``warmup`` untimed ones;
    ``cpu_s`` is this process's CPU time, summed over its threads), ``batch_size``. The model is freshly initialised
    from the spec (training state does not change the cost). A dry run (``caps``: its
    :class:`maelab.options.DryRunLimits`) counts and times one step of ``train_batch`` images.
    """
    batch_size = positive_int("batch_size", spec.batch_size if batch_size is None else batch_size)
    positive_int("reps", reps)
    positive_int("warmup", warmup, minimum=0)
    dry = caps
    if dry is not None:  # dry run: one step on the first train_batch images of the batch, counted and timed once
        batch_size = min(batch_size, dry.train_batch)
        warmup, reps = 0, 1
    model = experiments.build_model(spec).train()
    flops = cost.step_flops(model, batch_size, mask_ratio=spec.mask_ratio).flops  # on a meta copy of the model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(spec.seed)
    x = torch.rand(batch_size, spec.channels, spec.img_size, spec.img_size, generator=g)
    for _ in range(warmup):
        _one_step(model, opt, x, spec.mask_ratio, g)
    walls, cpus = [], []
    for _ in range(reps):
        w0, c0 = time.perf_counter(), time.process_time()
        _one_step(model, opt, x, spec.mask_ratio, g)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return {"flops": flops, "wall_s": float(min(walls)), "cpu_s": float(min(cpus)), "batch_size": batch_size}


@torch.no_grad()
def layer_features(
    model, images: torch.Tensor, *, pool: str = "mean", batch_size: int = 256, caps: DryRunLimits | None = None
) -> list[torch.Tensor]:
    """Representation of each encoder block for the *unmasked* ``images``: a list (one per block, input to output
    order) of (N, D) float tensors on the CPU. ``pool="mean"``: mean over the patch tokens of the block's output
    (before the final norm); ``"cls"``: the [CLS] token; ``"tokens"``: all patch tokens flattened, (N, L*D).
    ``caps``: a dry run's (the first ``eval_images`` images)."""
    one_of("pool", pool, ("mean", "cls", "tokens"))
    positive_int("batch_size", batch_size)
    if not isinstance(images, torch.Tensor) or images.ndim != 4:
        raise ParameterError("images", "a (N, C, H, W) tensor", tuple(getattr(images, "shape", ())))
    images = images[: cap(len(images), caps, "eval_images")]  # a dry run: a few images
    was_training = model.training
    model.eval()
    dev = next(model.parameters()).device
    chunks: list[list[torch.Tensor]] = []
    for i in range(0, len(images), batch_size):
        toks = model.encode(images[i : i + batch_size].to(dev), mask_ratio=0.0, return_tokens=True)["tokens"]
        if pool == "mean":
            per = [t[:, 1:].mean(dim=1) for t in toks]
        elif pool == "cls":
            per = [t[:, 0] for t in toks]
        else:
            per = [t[:, 1:].flatten(1) for t in toks]
        chunks.append([p.float().cpu() for p in per])
    model.train(was_training)
    return [torch.cat([c[j] for c in chunks]) for j in range(len(chunks[0]))]


def cka_matrix(feats_a: Sequence, feats_b: Sequence) -> np.ndarray:
    """(len(feats_a), len(feats_b)) matrix of linear CKA between every pair of (N, d) feature matrices."""
    if not len(feats_a) or not len(feats_b):
        raise ParameterError(
            "feats_a", "two non-empty sequences of (N, d) feature matrices", (len(feats_a), len(feats_b))
        )
    return np.array([[metrics.linear_cka(a, b) for b in feats_b] for a in feats_a], dtype=np.float64)


def snapshot_probe_accuracy(
    spec: experiments.PretrainSpec,
    *,
    device: str = "auto",
    progress: bool | None = None,
    caps: DryRunLimits | None = None,
) -> dict:
    """Linear-probe test accuracy of the weights at each of ``spec.snapshot_epochs``.

    Pre-trains ``spec`` with :func:`maelab.experiments.pretrain` (instant when its checkpoint is cached: the
    snapshots are kept in it) and evaluates every snapshot as ``pretrain_and_evaluate`` evaluates the final model
    (logistic regression on standardised pooled features, C chosen on a validation split). Returns ``epochs`` and
    ``linear_acc`` (lists, in epoch order). ``caps``: a dry run's, to the training and every probe.
    """
    if not spec.snapshot_epochs:
        raise ParameterError("snapshot_epochs", "a non-empty tuple of epochs in the spec", spec.snapshot_epochs)
    dev = resolve_device(device)
    model, res, tr, te = experiments.pretrain(spec, device=str(dev), progress=progress, caps=caps)
    if tr.labels is None:
        raise ParameterError("dataset", "a labelled dataset", spec.dataset)

    def probe(m) -> float:
        ftr = evaluate.extract_features(m, tr.images, pool=spec.pool, progress=False, caps=caps)
        fte = evaluate.extract_features(m, te.images, pool=spec.pool, progress=False, caps=caps)
        return float(
            evaluate.linear_probe(
                ftr, tr.labels, fte, te.labels, method="logreg", seed=spec.seed, blas_threads=1, caps=caps
            ).test_acc
        )  # as pretrain_and_evaluate

    epochs = sorted(res.snapshots)
    accs = experiments.evaluate_snapshots(
        spec, model, res.snapshots, epochs, probe, reseed=True
    )  # as the stored bisulco_sweeps results were computed
    return {"epochs": [int(e) for e in epochs], "linear_acc": accs}


def run_cell(
    spec: experiments.PretrainSpec,
    *,
    device: str = "auto",
    progress: bool | None = None,
    caps: DryRunLimits | None = None,
) -> dict:
    """One run of the sweeps: :func:`maelab.experiments.pretrain_and_evaluate` of ``spec`` plus its pretext check's
    numbers (:func:`maelab.reconstruction.masked_patch_losses` on the test images, mask seed = the spec's seed):
    ``pretext_loss`` (the trained model's masked-patch loss), ``random_init_loss`` (its initial weights') and
    ``patch_mean_loss`` (every masked patch predicted by its own mean), all under the same masks. The trained
    model is the finished checkpoint (:func:`maelab.experiments.pretrain` resumes it without a step)."""
    from maelab.reconstruction import masked_patch_losses

    out = experiments.pretrain_and_evaluate(spec, device=device, progress=progress, caps=caps)
    model, _, _, te = experiments.pretrain(spec, device=str(resolve_device(device)), progress=False, caps=caps)
    init = experiments.build_model(spec).to(next(model.parameters()).device)
    images = te.images[: cap(len(te.images), caps, "eval_images")]
    ratio = model.mask_ratio if spec.mask_ratio is None else spec.mask_ratio  # None: the model's own default
    losses = masked_patch_losses(model, init, images, ratio, seed=spec.seed)
    names = {"loss": "pretext_loss", "reference_loss": "random_init_loss", "patch_mean_loss": "patch_mean_loss"}
    return {**out, **{names[k]: float(v) for k, v in losses.items()}}


#: What a run of the sweeps computes beyond its spec (:func:`run_cell`), in the configs of its parts and records.
RUN = "pretrain_and_evaluate + masked_patch_losses (test images, mask seed = spec seed)"


def evaluate_specs(
    specs: Sequence[experiments.PretrainSpec],
    *,
    device: str = "auto",
    progress: bool | None = None,
    caps: DryRunLimits | None = None,
) -> list[dict]:
    """:func:`run_cell` for each spec, in order (the pipeline's probe with one BLAS thread, as the stored sweeps
    were computed; ``caps``: a dry run's). On a lent GPU a pool of workers computes the runs side
    by side (:mod:`maelab.prefetch`): whole runs where they are stored as parts, else their pre-training while the
    loop evaluates."""
    # each run stored on its own where an installment computes the record (maelab.parts); the callers read the
    # trainer's history by key, so its JSON round trip (sorted keys) changes nothing they see
    tasks = [
        Task(
            spec.key,
            {"spec": spec.to_config(), "run": RUN},
            functools.partial(run_cell, spec, device=device, progress=progress, caps=caps),
            seeds=[spec.seed],
        )
        for spec in specs
    ]
    dev = str(resolve_device(device))
    if not compute_parts(tasks, device=dev, caps=caps):
        ahead = [experiments.training_spec(s) for s, t in zip(specs, tasks) if not stored(t.key, t.config)]
        prefetch(ahead, device=dev, caps=caps)
    return [task() for task in tasks]


def finetune_vs_probe(runs, by: str = "enc"):
    """Fine-tuned against frozen-probe test accuracy of every fine-tuned run of ``runs`` (a table with columns
    ``by``, ``linear_acc`` and ``finetune_acc``; runs without fine-tuning carry NaN there and are left out).

    Returns a DataFrame indexed by ``by`` (sorted) with ``linear_acc``, ``finetune_acc``, ``gain`` (fine-tuned minus
    probe) and ``beats`` (gain > 0), and the one-line reason fine-tuning "did not learn" ("" when every fine-tuned
    run beats its own frozen probe: the book's :class:`maelab.claims.FineTuneCheck`, one entry per run).
    Fine-tuning at chance ties with a weak probe for a trivial reason, so a statement about fine-tuning needs
    ``beats`` first.
    """
    import pandas as pd

    for col in (by, "linear_acc", "finetune_acc"):
        if col not in getattr(runs, "columns", ()):
            raise ParameterError("runs", f"a table with a {col!r} column", list(getattr(runs, "columns", ())))
    ft = runs[pd.to_numeric(runs.finetune_acc, errors="coerce").notna()]
    if ft.empty:
        raise ParameterError("runs", "at least one fine-tuned run (a finite finetune_acc)", len(runs))
    if ft[by].duplicated().any():
        raise ParameterError(by, "one fine-tuned run per value", sorted(ft[by][ft[by].duplicated()].tolist()))
    out = ft.set_index(by)[["linear_acc", "finetune_acc"]].astype(float).sort_index()
    out["gain"] = out.finetune_acc - out.linear_acc
    out["beats"] = out.gain > 0
    check = FineTuneCheck(
        "fine-tuned accuracy",
        tuple(out.finetune_acc),
        tuple(out.linear_acc),
        runs=tuple(f"{by} {i}" for i in out.index),
    )
    return out, check.unmet
