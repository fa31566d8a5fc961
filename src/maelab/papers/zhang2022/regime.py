"""Where does MAE learn on 2 CPU cores? The learning curves behind the ``zhang_regime`` notebook (issue 15).

**Paper-specific:** the pilot that chooses the schedule on which ``zhang_umae``'s MAE vs U-MAE comparison is
re-run, and the precondition every claim about a trained representation needs: MAE must beat the same
architecture at random initialisation by a stated margin (:func:`learned_margin`, the book's
:class:`maelab.claims.LearnedCheck` with :data:`maelab.claims.LEARNED_MARGIN`). :func:`margin_extrapolation` and
:func:`training_minutes` ask whether the cpu budget can reach that margin. The configs of the notebook's stored
results (:func:`curves_config`, :func:`throughput_config`) live here, so that ``zhang_umae`` reads them through the
store (:meth:`maelab.book.Context.read`) without computing or copying them.

One pre-training run per (variant, seed) by :func:`maelab.experiments.pretrain` (checkpoints cached, exact
resume) keeps weight snapshots at chosen epochs; each snapshot is evaluated frozen on the [CLS] token and on the
mean of the patch tokens (logistic-regression probe ``method="logreg_torch"``, 20-NN, effective rank) by
:func:`maelab.experiments.evaluate_snapshots`. The random-init reference of a seed is its epoch-0 snapshot: MAE
and U-MAE built with the same seed start from the same weights (``tests/papers/test_zhang2022_umae.py``), so it is
evaluated once, as variant ``"random"``. The probe trains on a random subset of the pre-training images drawn by
the seed (:func:`probe_subset`); the raw-pixel reference (:func:`raw_pixel_row`) uses the same subset.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from maelab import evaluate, experiments, metrics, result_keys
from maelab._util import resolve_device
from maelab._validate import ParameterError, positive_int
from maelab.claims import LearnedCheck
from maelab.options import DryRunLimits
from maelab.prefetch import prefetch

POOLS = ("cls", "mean")
#: per-snapshot numbers (suffix ``_mean``: mean-pooled patch tokens)
METRICS = ("linear_acc", "knn_acc", "effective_rank", "linear_acc_mean", "knn_acc_mean", "effective_rank_mean")
KNN_K = 20


def _as_array(name: str, values) -> np.ndarray:
    arr = np.asarray(values, dtype=float).reshape(-1)
    if arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ParameterError(name, "a non-empty sequence of finite numbers (one per seed)", values)
    return arr


def learned_margin(mae_acc: Sequence[float], random_acc: Sequence[float], margin: float) -> str:
    """The precondition "MAE demonstrably learned" (:class:`maelab.claims.LearnedCheck`, whose default margin
    :data:`maelab.claims.LEARNED_MARGIN` is justified there): for *every* seed, MAE's accuracy exceeds the accuracy
    of the same architecture at random initialisation (same seed, so the same initial weights) by more than
    ``margin``.

    ``mae_acc`` and ``random_acc`` are accuracies in [0, 1], paired by position (one per seed); ``margin`` >= 0 is
    in the same unit (0.05 = 5 points). Every seed must clear it (not only the mean), so one seed that did not learn
    is enough to withhold the verdict. Returns "" when the precondition holds, else a one-line reason (for
    :class:`maelab.claims.Evidence` ``unmet``).
    """
    a, b = _as_array("mae_acc", mae_acc), _as_array("random_acc", random_acc)
    if a.shape != b.shape:
        raise ParameterError("random_acc", f"{a.size} values, one per seed like mae_acc", list(np.asarray(random_acc)))
    if not (isinstance(margin, (int, float)) and np.isfinite(margin) and margin >= 0):
        raise ParameterError("margin", "a finite number >= 0 (accuracy units: 0.05 = 5 points)", margin)
    seeds = tuple(f"#{i}" for i in range(a.size))
    return LearnedCheck("MAE's probe", tuple(a), tuple(b), seeds=seeds, margin=float(margin)).unmet


def first_learned(curves, margin: float, metric: str = "linear_acc", variant: str = "mae"):
    """The first snapshot (smallest ``images_seen``) at which :func:`learned_margin` holds for ``variant``'s
    ``metric`` against the seed's random-init row; ``None`` if none does.

    ``curves``: the table of :func:`seed_curves` (columns variant, seed, epoch, images_seen and the metrics), all
    seeds concatenated; a snapshot counts only when every seed that has a random-init row was evaluated there.
    Returns ``(images_seen, epoch)``.
    """
    need = ("variant", "seed", "epoch", "images_seen", metric)
    if any(c not in curves.columns for c in need):
        raise ParameterError("curves", "a table with columns " + ", ".join(need), list(curves.columns))
    rand = curves[curves.variant == "random"].set_index("seed")[metric]
    if rand.empty:
        raise ParameterError("curves", "random-init rows (variant 'random')", sorted(set(curves.variant)))
    seeds = sorted(rand.index)
    run = curves[curves.variant == variant]
    for (images, epoch), grp in run.groupby(["images_seen", "epoch"], sort=True):
        by_seed = grp.set_index("seed")[metric]
        if sorted(by_seed.index) != seeds:
            continue
        if not learned_margin([by_seed[s] for s in seeds], [rand[s] for s in seeds], margin):
            return int(images), int(epoch)
    return None


def margin_extrapolation(
    curves, margin: float, *, fit_points: int | None = None, metric: str = "linear_acc", variant: str = "mae"
):
    """Per seed, the images seen at which ``variant``'s gain over its random init would reach ``margin``, by a
    least-squares line of the gain against the logarithm of the images seen.

    ``curves``: the table of :func:`seed_curves` (variant, seed, epoch, images_seen, ``metric``; random-init rows
    as variant ``"random"``). ``fit_points``: the fit uses the seed's last ``fit_points`` snapshots of ``variant``
    (None: all its snapshots after initialisation; at least 2). A line in log(images) keeps rising without bound,
    so where a learning curve bends over (it saturates), the images it predicts are too *few*: the estimate is
    optimistic. A non-positive slope means the curve has flattened: no number of images is predicted (``inf``).

    Returns a DataFrame, one row per seed: ``seed``, ``points`` (snapshots fitted), ``slope_per_doubling`` (gain
    per doubling of the images seen, accuracy units), ``last_images`` and ``last_gain`` (the last snapshot),
    ``images_needed`` (``exp((margin - a) / b)`` for the fit ``gain = a + b ln(images)``; ``inf`` when ``b <= 0``).
    """
    import pandas as pd

    need = ("variant", "seed", "images_seen", metric)
    if any(c not in curves.columns for c in need):
        raise ParameterError("curves", "a table with columns " + ", ".join(need), list(curves.columns))
    if not (isinstance(margin, (int, float)) and np.isfinite(margin)):
        raise ParameterError("margin", "a finite number (accuracy units: 0.05 = 5 points)", margin)
    if fit_points is not None:
        positive_int("fit_points", fit_points, minimum=2)
    rand = curves[curves.variant == "random"].set_index("seed")[metric]
    run = curves[(curves.variant == variant) & (curves.images_seen > 0)]
    seeds = sorted(set(run.seed) & set(rand.index))
    if not seeds:
        raise ParameterError(
            "curves", f"{variant!r} snapshots and random-init rows of the same seeds", sorted(set(curves.variant))
        )
    rows = []
    for s in seeds:
        g = run[run.seed == s].sort_values("images_seen")
        if fit_points is not None:
            g = g.tail(fit_points)
        if len(g) < 2:
            raise ParameterError("curves", f"at least 2 snapshots after initialisation for seed {s}", len(g))
        x = np.log(g.images_seen.to_numpy(dtype=float))
        y = g[metric].to_numpy(dtype=float) - float(rand[s])
        b, a = np.polyfit(x, y, 1)
        needed = float(np.exp((margin - a) / b)) if b > 0 else float("inf")
        rows.append(
            {
                "seed": s,
                "points": len(g),
                "slope_per_doubling": float(b * np.log(2)),
                "last_images": int(g.images_seen.iloc[-1]),
                "last_gain": float(y[-1]),
                "images_needed": needed,
            }
        )
    return pd.DataFrame(rows)


def training_minutes(images: float, images_per_second: float, runs: int = 1) -> float:
    """Minutes of training for ``runs`` runs of ``images`` images each at ``images_per_second`` (``inf`` images:
    ``inf`` minutes)."""
    positive_int("runs", runs)
    if not (isinstance(images_per_second, (int, float)) and images_per_second > 0):
        raise ParameterError("images_per_second", "a number > 0", images_per_second)
    if not images >= 0:
        raise ParameterError("images", "a number >= 0 (or inf)", images)
    return runs * float(images) / float(images_per_second) / 60.0


def affordable_images(minutes: float, images_per_second: float, runs: int = 1) -> float:
    """Images per run that ``runs`` runs can train in ``minutes`` at ``images_per_second``: the inverse of
    :func:`training_minutes`."""
    positive_int("runs", runs)
    if not (isinstance(images_per_second, (int, float)) and images_per_second > 0):
        raise ParameterError("images_per_second", "a number > 0", images_per_second)
    if not (isinstance(minutes, (int, float)) and minutes >= 0):
        raise ParameterError("minutes", "a number >= 0", minutes)
    return float(minutes) * 60.0 * float(images_per_second) / runs


def images_per_run(S) -> int:
    """Training images one run of the ``zhang_regime`` settings ``S`` sees: ``epochs`` x the images of the full
    batches of an epoch (the trainer drops the last partial batch)."""
    return S.epochs * (S.n_train // S.batch_size) * S.batch_size


def trainer_images_per_second(timing, images: int) -> float:
    """Mean over runs of ``images`` (per run) / the training seconds the trainer logged (``timing`` of
    :func:`seed_curves`): the throughput of training with its online probe and evaluation included."""
    if "train_seconds" not in getattr(timing, "columns", ()) or not len(timing):
        raise ParameterError("timing", "the non-empty timing table of seed_curves", type(timing).__name__)
    return float((images / timing.train_seconds).mean())


def rerun_runs(S) -> int:
    """Training runs of the ``zhang_umae`` re-run the budget must pay for: MAE and U-MAE x every seed x every
    dataset in ``S.rerun_datasets`` (``S``: the ``zhang_regime`` settings)."""
    return len(variants(S)) * len(S.seeds) * len(S.rerun_datasets)


def base_spec(S, patch_size: int | None = None) -> experiments.PretrainSpec:
    """The pre-training run ``zhang_regime`` shares between MAE and U-MAE (method and seed set per run), with the
    official-code model choices (``maelab.result_keys.OFFICIAL_CHOICES``); ``S``: its settings."""
    patch = S.patch_size if patch_size is None else patch_size
    return experiments.PretrainSpec(
        dataset=S.dataset,
        n_train=S.n_train,
        n_test=S.n_test,
        img_size=28,
        channels=1,
        size=S.size,
        model_overrides=tuple(sorted({"patch_size": patch, **result_keys.OFFICIAL_CHOICES}.items())),
        epochs=S.epochs,
        batch_size=S.batch_size,
        blr=S.blr,
        warmup_epochs=S.warmup_epochs,
        mask_ratio=S.mask_ratio,
    )


def variants(S) -> dict[str, dict[str, Any]]:
    """MAE and U-MAE (lambda ``S.lam``) as fields replacing those of :func:`base_spec`."""
    over = {"patch_size": S.patch_size, **result_keys.OFFICIAL_CHOICES, "lambda_unif": S.lam}
    return {"mae": {"model": "mae"}, "umae": {"model": "umae", "model_overrides": tuple(sorted(over.items()))}}


def curves_config(S, seed: int) -> dict[str, Any]:
    """The config of ``zhang_regime``'s stored result ``curves_s<seed>`` (the profile is added by the store)."""
    return {
        "what": "MAE and U-MAE snapshots, paired by seed",
        "spec": base_spec(S).to_config(),
        "variants": {k: str(v) for k, v in variants(S).items()},
        "seed": seed,
        **S.pick("curve_epochs", "probe_n_train"),
    }


def throughput_config(S) -> dict[str, Any]:
    """The config of ``zhang_regime``'s stored result ``throughput`` (the profile is added by the store)."""
    return {
        "what": "training images per second by patch size (a timing)",
        "official": dict(result_keys.OFFICIAL_CHOICES),
        **S.pick("dataset", "size", "batch_size", "mask_ratio", "timing_patches", "timing_steps"),
    }


def probe_subset(n_total: int, n: int | None, seed: int) -> torch.Tensor:
    """Sorted indices of ``n`` of ``n_total`` training images drawn without replacement by ``seed`` (all of them,
    in order, when ``n`` is None or >= ``n_total``): the probe's training set."""
    positive_int("n_total", n_total)
    if n is None or n >= n_total:
        return torch.arange(n_total)
    positive_int("probe_n_train", n, minimum=2)
    g = torch.Generator().manual_seed(int(seed))
    return torch.sort(torch.randperm(n_total, generator=g)[:n]).values


def _probe_pair(ftr, ytr, fte, yte, seed: int, caps: DryRunLimits | None = None, device="cpu") -> tuple[float, float]:
    lp = evaluate.linear_probe(ftr, ytr, fte, yte, method="logreg_torch", seed=seed, device=device, caps=caps)
    return float(lp.test_acc), float(evaluate.knn_accuracy(ftr, ytr, fte, yte, k=KNN_K, caps=caps))


def snapshot_row(
    model, tr_images, tr_labels, te_images, te_labels, seed: int, caps: DryRunLimits | None = None, device="cpu"
) -> dict[str, float]:
    """The numbers of :data:`METRICS` for one frozen model: probe, 20-NN and effective rank (test features);
    ``caps``: a dry run's (:class:`maelab.options.DryRunLimits`); ``device``: where the probes are fitted
    (:func:`maelab.evaluate.linear_probe`'s ``logreg_torch``, float64; :func:`seed_curves` passes the page's)."""
    row = {}
    for pool in POOLS:
        sfx = "" if pool == "cls" else "_mean"
        ftr = evaluate.extract_features(model, tr_images, pool=pool, progress=False, caps=caps)
        fte = evaluate.extract_features(model, te_images, pool=pool, progress=False, caps=caps)
        row["linear_acc" + sfx], row["knn_acc" + sfx] = _probe_pair(ftr, tr_labels, fte, te_labels, seed, caps, device)
        row["effective_rank" + sfx] = float(metrics.effective_rank(fte))
    return row


def raw_pixel_row(
    tr_images, tr_labels, te_images, te_labels, seed: int, caps: DryRunLimits | None = None, device="cpu"
) -> dict[str, float]:
    """Probe and 20-NN on the raw pixels (flattened images), the reference a useful encoder should approach
    (``device``: as :func:`snapshot_row`'s)."""
    ftr, fte = tr_images.reshape(len(tr_images), -1), te_images.reshape(len(te_images), -1)
    acc, knn = _probe_pair(ftr, tr_labels, fte, te_labels, seed, caps, device)
    return {"linear_acc": acc, "knn_acc": knn}


def seed_curves(
    base: experiments.PretrainSpec,
    variants: Mapping[str, Mapping[str, Any]],
    seed: int,
    epochs: Sequence[int],
    *,
    keep_epochs: Sequence[int] | None = None,
    probe_n_train: int | None = None,
    device: str = "auto",
    progress: bool | None = None,
    caps: DryRunLimits | None = None,
) -> dict[str, Any]:
    """Pre-train every variant at ``seed`` (cached) keeping snapshots and evaluate the snapshots at ``epochs``
    (``caps``: a dry run's, to the training and every evaluation).

    ``keep_epochs``: the snapshots kept in the checkpoint (part of its key; None: ``epochs``), a superset of
    ``epochs`` -- keeping every epoch is cheap and lets a later analysis probe other epochs without retraining.

    ``variants``: name -> PretrainSpec fields replacing those of ``base`` (as :func:`.umae.compare`); every
    variant must start from the same weights (same size and seed). Epoch 0 (which ``epochs`` must hold) is
    evaluated once, from the first variant, as variant ``"random"``. Returns ``curves`` (DataFrame: variant, seed,
    epoch, images_seen, :data:`METRICS`), ``raw`` (one row: the raw-pixel probe and 20-NN on the same probe
    subset), ``history`` (the trainers' per-epoch logs, with variant and seed) and ``timing`` (per variant: training
    seconds of the trainer's log -- of the run that trained it, not of a resume -- and snapshot-evaluation seconds).
    """
    import pandas as pd

    epochs = sorted({int(e) for e in epochs})
    if not epochs or epochs[0] != 0 or epochs[-1] > base.epochs:
        raise ParameterError("epochs", f"snapshot epochs in [0, {base.epochs}] holding 0 (random init)", epochs)
    keep = sorted({int(e) for e in (keep_epochs if keep_epochs is not None else epochs)})
    if not set(epochs) <= set(keep) or keep[-1] > base.epochs:
        raise ParameterError("keep_epochs", f"a superset of epochs {epochs} within [0, {base.epochs}]", keep)
    if not variants or "random" in variants:
        raise ParameterError("variants", "a non-empty mapping of names other than 'random'", list(variants))
    dev = resolve_device(device)
    tr, te = experiments.load_data(dataclasses.replace(base, seed=seed), dev, progress=False)
    if tr.labels is None or te.labels is None:
        raise ParameterError("dataset", "a labelled dataset", base.dataset)
    idx = probe_subset(len(tr), probe_n_train, seed).to(tr.images.device)
    ptr, ytr = tr.images[idx], tr.labels[idx]
    per_epoch = (len(tr) // min(base.batch_size, len(tr))) * min(base.batch_size, len(tr))
    rows, hist, timing = [], [], []
    specs = [dataclasses.replace(base, **dict(f), seed=seed, snapshot_epochs=tuple(keep)) for f in variants.values()]
    # on a lent GPU the page's seeds are computed side by side (Context.load_or_compute_many), each in a worker
    # with no pool of its own; a run with a pool here (train_workers >= 2) pre-trains the variants side by side
    prefetch(specs, device=str(dev), caps=caps)
    for i, (name, spec) in enumerate(zip(variants, specs)):
        model, res, _, _ = experiments.pretrain(
            spec, device=str(dev), progress=progress, train_data=tr, test_data=te, caps=caps
        )
        todo = epochs if i == 0 else epochs[1:]
        t0 = time.perf_counter()
        vals = experiments.evaluate_snapshots(
            spec,
            model,
            res.snapshots,
            todo,
            reseed=False,
            measure=lambda m: snapshot_row(m, ptr, ytr, te.images, te.labels, seed, caps, dev),
        )
        for e, v in zip(todo, vals):
            rows.append(
                {"variant": "random" if e == 0 else name, "seed": seed, "epoch": e, "images_seen": e * per_epoch, **v}
            )
        hist += [{"variant": name, "seed": seed, **h} for h in res.history]
        timing.append(
            {
                "variant": name,
                "seed": seed,
                "train_seconds": float(sum(h["seconds"] for h in res.history)),
                "eval_seconds": time.perf_counter() - t0,
                "snapshots": len(todo),
            }
        )
    raw = raw_pixel_row(ptr, ytr, te.images, te.labels, seed, caps, dev)
    return {
        "curves": pd.DataFrame(rows, columns=["variant", "seed", "epoch", "images_seen", *METRICS]),
        "raw": pd.DataFrame([{"seed": seed, **raw}]),
        "history": pd.DataFrame(hist),
        "timing": pd.DataFrame(timing),
    }


def step_throughput(model, images: torch.Tensor, batch_size: int, steps: int, warmup: int = 2) -> float:
    """Training images per second of ``model`` (forward, backward and an AdamW step on consecutive batches of
    ``images``, after ``warmup`` untimed steps): the short measurement that chooses the patch size. A timing, so it
    depends on the machine and its load; the model is changed by the steps."""
    positive_int("batch_size", batch_size)
    positive_int("steps", steps)
    positive_int("warmup", warmup, minimum=0)
    if len(images) < batch_size:
        raise ParameterError("images", f"at least batch_size = {batch_size} images", len(images))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model.train()
    n_batches = len(images) // batch_size
    t0 = 0.0
    for i in range(warmup + steps):
        if i == warmup:
            t0 = time.perf_counter()
        j = (i % n_batches) * batch_size
        loss = model(images[j : j + batch_size])["loss"]
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return steps * batch_size / (time.perf_counter() - t0)


__all__ = [
    "KNN_K",
    "METRICS",
    "POOLS",
    "affordable_images",
    "base_spec",
    "curves_config",
    "first_learned",
    "images_per_run",
    "learned_margin",
    "margin_extrapolation",
    "probe_subset",
    "raw_pixel_row",
    "rerun_runs",
    "seed_curves",
    "snapshot_row",
    "step_throughput",
    "throughput_config",
    "trainer_images_per_second",
    "training_minutes",
    "variants",
]
