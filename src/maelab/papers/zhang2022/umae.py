"""MAE vs U-MAE, paired by seed: the runs behind the ``zhang_umae`` notebook (Zhang et al. 2022, Table 1,
Figs. 1b, 1c, 3a, 3b).

**Paper-specific:** the paired MAE / U-MAE comparison of Zhang et al. (variants, both poolings, claim
preconditions). Pre-training, the probes and the snapshot loop are the general :mod:`maelab.experiments` and
:mod:`maelab.evaluate`.

Every run is pre-trained by :func:`maelab.experiments.pretrain` (checkpoints cached, exact resume), then evaluated
here. Why not :func:`maelab.experiments.pretrain_and_evaluate`? Three needs it does not cover without retraining:

* **both poolings from one run.** The linear probe, k-NN and effective rank are measured on the [CLS] token (the
  feature U-MAE's uniformity term acts on, and MAE's default linear-probe feature) *and* on the mean of the patch
  tokens, from the same trained weights (the pooling of ``PretrainSpec.pool`` is part of the checkpoint key);
* **effective rank during training that survives a resume.** ``rank_every`` computes ranks in a training
  callback, which does not run again when a finished checkpoint is resumed; here the weights at the tracked epochs
  are kept as ``snapshot_epochs`` (stored in the checkpoint) and the ranks are computed from them afterwards;
* **test features of one seed** for t-SNE, without ``keep_features`` (also part of the checkpoint key).

Pairing: ``mae`` and ``umae`` models of the same size and seed start from the *same* weights (``create(...,
seed=s)``), see the same data order and the same masks (dedicated generators), so per-seed differences isolate
the uniformity term (``tests/papers/test_zhang2022_umae.py`` checks that U-MAE with lambda = 0 reproduces MAE
exactly).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from maelab import evaluate, experiments, metrics, result_keys, train
from maelab._util import Phases, resolve_device
from maelab._validate import ParameterError
from maelab.claims import FineTuneCheck
from maelab.options import DryRunLimits
from maelab.parts import Task, stored
from maelab.prefetch import compute_parts, prefetch

POOLS = ("cls", "mean")
#: per-run numbers in :func:`compare`'s ``runs`` table (suffix ``_mean`` for mean-pooled patch tokens)
METRICS = (
    "linear_acc",
    "knn_acc",
    "effective_rank",
    "linear_acc_mean",
    "knn_acc_mean",
    "effective_rank_mean",
    "finetune_acc",
    "rec_loss",
    "train_seconds",
)


def _features(model, images, pool, caps: DryRunLimits | None = None):
    return evaluate.extract_features(model, images, pool=pool, progress=False, caps=caps)


def _probe_kwargs(probe_cs) -> dict:
    if probe_cs is None:
        return {}
    cs = [float(c) for c in probe_cs] if isinstance(probe_cs, (list, tuple)) else None
    if not cs or any(not c > 0 for c in cs):
        raise ParameterError("probe_cs", "None or a non-empty list of positive numbers", probe_cs)
    return {"C": cs[0]} if len(cs) == 1 else {"Cs": tuple(cs)}


PROBE_METHODS = ("logreg", "logreg_torch")
#: datasets of 28 x 28 grey images; the others are 32 px (mnist10k grey, the rest RGB)
GREY28 = ("fashion_mnist", "mnist")


def image_geometry(dataset: str) -> tuple[int, int]:
    """(image side, channels) of a dataset as the Zhang pages load it: 28 px grey for ``GREY28``, 32 px grey for
    mnist10k, 32 px RGB otherwise."""
    return (28 if dataset in GREY28 else 32), (1 if dataset in (*GREY28, "mnist10k") else 3)


def per_dataset(settings, key: str, dataset: str):
    """A ``zhang_umae`` setting that may differ per dataset: ``{dataset: value}`` in a profile, one value for all
    otherwise (a notebook parameter such as ``epochs=`` sets one for every dataset)."""
    v = getattr(settings, key)
    return v[dataset] if isinstance(v, Mapping) else v


def base_spec(settings, dataset: str) -> experiments.PretrainSpec:
    """The pre-training run that MAE and U-MAE share on ``dataset`` under ``zhang_umae`` settings (method and seed
    are set per run): the image geometry of the dataset, the settings' official-code model choices under their
    ``model_overrides`` and per-dataset ``patch_size`` (None: the size's own). The notebook and the cost plan
    (:func:`maelab.papers.zhang2022.plan.umae_runs`) both build their runs from it."""
    S = settings
    patch = per_dataset(S, "patch_size", dataset)
    over = {**result_keys.choice_set(S.model_choices), **S.model_overrides}
    if patch is not None:
        over["patch_size"] = patch
    return experiments.PretrainSpec(
        dataset=dataset,
        n_train=per_dataset(S, "n_train", dataset),
        n_test=per_dataset(S, "n_test", dataset),
        img_size=image_geometry(dataset)[0],
        channels=image_geometry(dataset)[1],
        data_options=(("data_root", S.data_root),) if dataset == "cifar10" else (),
        size=S.size,
        model_overrides=tuple(sorted(over.items())),
        epochs=per_dataset(S, "epochs", dataset),
        batch_size=S.batch_size,
        blr=S.blr,
        warmup_epochs=S.warmup_epochs,
        mask_ratio=S.mask_ratio,
        finetune_blr=S.finetune_blr,
    )


def _pool_metrics(
    model,
    tr,
    te,
    seed: int,
    probe_cs=None,
    probe_method: str = "logreg",
    caps: DryRunLimits | None = None,
    probe_on_device: bool = False,
) -> tuple[dict, dict, dict]:
    """Linear probe (logreg), k-NN, effective rank and singular values of the test features, for both pools; the
    ``logreg_torch`` probe is fitted on the model's device with ``probe_on_device``, else on the CPU."""
    kw = _probe_kwargs(probe_cs)
    if probe_on_device:
        kw["device"] = next(model.parameters()).device
    if probe_method not in PROBE_METHODS:
        raise ParameterError("probe_method", " | ".join(PROBE_METHODS), probe_method)
    row, sv, feats = {}, {}, {}
    for pool in POOLS:
        sfx = "" if pool == "cls" else "_mean"
        ftr, fte = _features(model, tr.images, pool, caps), _features(model, te.images, pool, caps)
        lp = evaluate.linear_probe(
            ftr, tr.labels, fte, te.labels, method=probe_method, seed=seed, blas_threads=1, caps=caps, **kw
        )
        row["linear_acc" + sfx] = float(lp.test_acc)
        row["knn_acc" + sfx] = float(evaluate.knn_accuracy(ftr, tr.labels, fte, te.labels, caps=caps))
        row["effective_rank" + sfx] = float(metrics.effective_rank(fte))
        sv[pool] = metrics.singular_values(fte).numpy()
        feats[pool] = fte
    return row, sv, feats


def trained_spec(spec: experiments.PretrainSpec, rank_epochs: Sequence[int] = ()) -> experiments.PretrainSpec:
    """The spec :func:`evaluate_run` pre-trains for ``spec``: weight snapshots at ``rank_epochs`` (completed epochs,
    0 = initial weights), no rank tracking, features or fine-tuning inside the pipeline (this module does those)."""
    epochs = sorted({int(e) for e in rank_epochs})
    if any(e < 0 or e > spec.epochs for e in epochs):
        raise ParameterError("rank_epochs", f"epochs in [0, {spec.epochs}]", list(rank_epochs))
    return dataclasses.replace(
        spec, snapshot_epochs=tuple(epochs), rank_every=0, keep_features=False, finetune_epochs=0
    )


def evaluate_run(
    spec: experiments.PretrainSpec,
    *,
    rank_epochs: Sequence[int] = (),
    finetune_epochs: int = 0,
    probe_cs: Sequence[float] | None = None,
    probe_method: str = "logreg",
    probe_on_device: bool = False,
    device: str = "auto",
    progress: bool | None = None,
    caps: DryRunLimits | None = None,
) -> dict[str, Any]:
    """Pre-train ``spec`` (cached) and evaluate it (``caps``: a dry run's, to every step).

    ``rank_epochs``: completed epochs (0 = initial weights) at which the effective rank of the test features is
    measured (from weight snapshots; they become ``spec.snapshot_epochs``, so they are part of the checkpoint key).
    ``finetune_epochs`` > 0: end-to-end fine-tuning of a copy of the encoder with ``spec.finetune_blr`` (the
    recipe of :func:`maelab.experiments.pretrain_and_evaluate`). ``probe_cs``: inverse regularisations of the
    logistic-regression probe (chosen on a 20 % validation split of the training features; one value: used as
    is; None: :data:`maelab.evaluate.DEFAULT_CS`, six values, about twice the probe cost of three).
    ``probe_method``: "logreg" (scikit-learn, the default: the first committed results used it) or "logreg_torch"
    (the same fit by L-BFGS in torch, :func:`maelab.evaluate.linear_probe`), fitted on ``device`` with
    ``probe_on_device`` (float64; a pre-run choice of a page: ``zhang_ablations`` at gpu), else on the CPU
    (``zhang_umae``, whose first gpu records were computed so).

    Returns ``row`` (the numbers of :data:`METRICS`), ``history`` (trainer history), ``ranks`` (list of
    [epoch, rank cls, rank mean]), ``sv`` ({pool: singular values of the test features}), ``test_features``
    (cls, float32 array) and ``test_labels``.
    """
    spec, epochs = trained_spec(spec, rank_epochs), sorted({int(e) for e in rank_epochs})
    _probe_kwargs(probe_cs)
    dev = resolve_device(device)
    clock = Phases()
    model, res, tr, te = experiments.pretrain(spec, device=str(dev), progress=progress, caps=caps)
    clock.mark("pre-training")
    if tr.labels is None or te.labels is None:
        raise ParameterError("dataset", "a labelled dataset (mnist10k, shapes, cifar10, imagefolder)", spec.dataset)
    row, sv, feats = _pool_metrics(model, tr, te, spec.seed, probe_cs, probe_method, caps, probe_on_device)
    clock.mark("probes, 20-NN and ranks of both pools")
    row["rec_loss"] = experiments.reconstruction_loss(model, te.images, spec.mask_ratio, seed=spec.seed, caps=caps)
    row["train_seconds"] = float(sum(h["seconds"] for h in res.history))
    ranks = [
        [e, *r]
        for e, r in zip(
            epochs,
            experiments.evaluate_snapshots(
                spec,
                model,
                res.snapshots,
                epochs,
                reseed=True,  # reseed: as the stored zhang_umae runs were computed
                measure=lambda m: [float(metrics.effective_rank(_features(m, te.images, p, caps))) for p in POOLS],
            ),
        )
    ]
    clock.mark("reconstruction loss and snapshot ranks")
    row["finetune_acc"] = None
    if finetune_epochs:
        cfg = experiments.finetune_config(spec, len(tr), epochs=finetune_epochs)  # the pipeline's recipe
        ft = train.fine_tune(model, tr, te, cfg, device=str(dev), progress=progress, caps=caps)
        row["finetune_acc"] = float(ft.test_acc)
        clock.mark("fine-tuning")
    clock.report(f"[umae] {spec.model} seed {spec.seed} on {spec.dataset}")
    return {
        "row": row,
        "history": res.history,
        "ranks": ranks,
        "sv": sv,
        "test_features": feats["cls"].numpy(),
        "test_labels": te.labels.cpu().numpy(),
    }


def random_init_run(
    spec: experiments.PretrainSpec,
    *,
    probe_cs: Sequence[float] | None = None,
    probe_method: str = "logreg",
    probe_on_device: bool = False,
    device: str = "auto",
    caps: DryRunLimits | None = None,
) -> dict[str, Any]:
    """The untrained model of ``spec`` evaluated like a trained one (no fine-tuning): ``row`` and ``sv``."""
    dev = resolve_device(device)
    tr, te = experiments.load_data(spec, dev, progress=False)
    model = experiments.build_model(spec).to(dev)
    row, sv, _ = _pool_metrics(model, tr, te, spec.seed, probe_cs, probe_method, caps, probe_on_device)
    return {"row": row, "sv": sv}


def raw_pixel_probe(
    spec: experiments.PretrainSpec,
    *,
    probe_cs=None,
    probe_method: str = "logreg",
    probe_on_device: bool = False,
    device: str = "auto",
    caps: DryRunLimits | None = None,
) -> dict:
    """The raw-pixel reference of a spec's data: the same probe (``probe_cs``, ``probe_method``, seed 0; fitted on
    ``device`` with ``probe_on_device``) and 20-NN on the flattened training / test images, no encoder. A
    representation worth learning should beat it; the random-init reference only says the encoder moved. Returns
    ``linear_acc``, ``knn_acc``."""
    kw = _probe_kwargs(probe_cs)
    if probe_on_device:
        kw["device"] = resolve_device(device)
    if probe_method not in PROBE_METHODS:
        raise ParameterError("probe_method", " | ".join(PROBE_METHODS), probe_method)
    tr, te = experiments.load_data(spec, resolve_device(device), progress=False)
    if tr.labels is None or te.labels is None:
        raise ParameterError("dataset", "a labelled dataset", spec.dataset)
    ftr, fte = tr.images.reshape(len(tr.images), -1), te.images.reshape(len(te.images), -1)
    lp = evaluate.linear_probe(
        ftr, tr.labels, fte, te.labels, method=probe_method, seed=0, blas_threads=1, caps=caps, **kw
    )
    knn = evaluate.knn_accuracy(ftr, tr.labels, fte, te.labels, caps=caps)
    return {"linear_acc": float(lp.test_acc), "knn_acc": float(knn)}


def _part_config(spec, rank_epochs, finetune_epochs: int, keep: bool) -> dict[str, Any]:
    """What one run of :func:`compare` reads beyond the record's config: its part's config (:mod:`maelab.parts`)."""
    return {"spec": trained_spec(spec, rank_epochs).to_config(), "finetune_epochs": finetune_epochs, "features": keep}


def _compute_run(spec, rank_epochs, finetune_epochs: int, keep: bool, run: dict) -> dict[str, Any]:
    """:func:`evaluate_run` of one run of :func:`compare` as its part holds it (module level: a worker process may
    compute it, :func:`maelab.prefetch.compute_parts`). Its row and history travel as tables, which keep their
    column order through the store (JSON objects come back with sorted keys); the test features only where
    ``keep``."""
    import pandas as pd

    r = evaluate_run(spec, rank_epochs=rank_epochs, finetune_epochs=finetune_epochs, **run)
    tables = {"row": pd.DataFrame([r["row"]]), "history": pd.DataFrame(r["history"])}
    drop = ("sv", "row", "history") + (() if keep else ("test_features", "test_labels"))
    rest = {k: v for k, v in r.items() if k not in drop}
    return {**tables, **rest, **{f"sv_{p}": v for p, v in r["sv"].items()}}


def _run_task(key: str, spec, rank_epochs, finetune_epochs: int, keep: bool, run: dict):
    """One run of :func:`compare` as a part (:class:`maelab.parts.Task`) of the record being computed."""
    cfg = _part_config(spec, rank_epochs, finetune_epochs, keep)
    return Task(key, cfg, functools.partial(_compute_run, spec, rank_epochs, finetune_epochs, keep, run))


def _run_as_part(task) -> dict[str, Any]:
    """A run of :func:`compare` (its :func:`_run_task`), stored on its own where an installment computes the record
    (:func:`maelab.parts.part`), back in :func:`evaluate_run`'s form."""
    r = task()
    r["sv"] = {k[3:]: v for k, v in r.items() if k.startswith("sv_")}
    r["row"], r["history"] = r["row"].to_dict("records")[0], r["history"].to_dict("records")
    return r


def _compute_random(spec, probe_cs, probe_method: str, device: str, caps, probe_on_device=False) -> dict[str, Any]:
    """:func:`random_init_run` of one seed of :func:`compare` as its part holds it (module level, as
    :func:`_compute_run`): its row as a table, its singular values as arrays."""
    import pandas as pd

    r = random_init_run(
        spec, probe_cs=probe_cs, probe_method=probe_method, probe_on_device=probe_on_device, device=device, caps=caps
    )
    return {"row": pd.DataFrame([r["row"]]), **{f"sv_{p}": v for p, v in r["sv"].items()}}


def _random_task(spec, run: dict) -> Task:
    """The random-init evaluation of one seed of :func:`compare` as a part (key ``random_s<seed>``, which no variant
    can take). Why a part: in an installment the pool then evaluates the untrained encoders side by side with the
    last trained runs, instead of the page's loop evaluating them one after another once every run is done (the
    assembly of ``compare_mnist`` at gpu: five evaluations in a row, cut off by the budget in installment 3)."""
    fn = functools.partial(
        _compute_random, spec, run["probe_cs"], run["probe_method"], run["device"], run["caps"], run["probe_on_device"]
    )
    return Task(f"random_s{spec.seed}", {"spec": spec.to_config(), "random_init": True}, fn)


def compare(
    base: experiments.PretrainSpec,
    variants: Mapping[str, Mapping[str, Any]],
    seeds: Sequence[int],
    *,
    rank_epochs: Sequence[int] = (),
    finetune_variants: Sequence[str] = (),
    finetune_epochs: int = 0,
    random_init: bool = True,
    features_seed: int | None = None,
    probe_cs: Sequence[float] | None = None,
    probe_method: str = "logreg",
    probe_on_device: bool = False,
    device: str = "auto",
    progress: bool | None = None,
    caps: DryRunLimits | None = None,
) -> dict[str, Any]:
    """Run every variant at every seed and collect store-ready tables (``caps``: a dry run's, to every run).

    ``variants``: name -> PretrainSpec fields replacing those of ``base`` (e.g. ``{"mae": {"model": "mae"},
    "umae": {"model": "umae", "model_overrides": (("lambda_unif", 0.01),)}}``); ``seed`` is set per run.
    ``finetune_variants``: the variants that are also fine-tuned (``finetune_epochs``). ``random_init``: add rows
    of variant ``"random"`` (the untrained model of the first variant; where parts are on, each seed's evaluation
    is a part ``random_s<seed>``, handed to the pool after the trained runs). ``features_seed``: keep the test features
    (cls) of this seed for every variant (``features_<name>``, ``labels``). ``probe_cs``, ``probe_method``,
    ``probe_on_device``: the probe of :func:`evaluate_run`.

    Returns ``runs`` (DataFrame: variant, seed, :data:`METRICS`), ``curves`` (variant, seed and the trainer's
    per-epoch history), ``ranks`` (variant, seed, epoch, effective_rank, effective_rank_mean) and arrays
    ``sv_<name>`` (seeds x min(n_test, dim) singular values of the cls test features, seeds in order).
    """
    import pandas as pd

    if not variants:
        raise ParameterError("variants", "a non-empty mapping name -> spec fields", variants)
    for name in variants:
        if not isinstance(name, str) or not name.replace("_", "a").isalnum() or name == "random":
            raise ParameterError("variant name", "an identifier-like string other than 'random'", name)
    if probe_method not in PROBE_METHODS:
        raise ParameterError("probe_method", " | ".join(PROBE_METHODS), probe_method)
    unknown = [v for v in finetune_variants if v not in variants]
    if unknown:
        raise ParameterError("finetune_variants", "names among the variants", unknown[0])
    seeds = [int(s) for s in seeds]
    if not seeds or len(set(seeds)) != len(seeds):
        raise ParameterError("seeds", "a non-empty list of distinct integers", seeds)
    rows, curves, ranks, out = [], [], [], {}
    sv: dict[str, list] = {}
    # (variant, seed, spec, fine-tuning epochs, test features kept: of features_seed only), in the loop's order
    todo = [
        (name, s, dataclasses.replace(base, **dict(f), seed=s), finetune_epochs if name in finetune_variants else 0)
        for name, f in variants.items()
        for s in seeds
    ]
    todo = [(*t, features_seed is not None and t[1] == features_seed) for t in todo]
    run = dict(
        probe_cs=probe_cs,
        probe_method=probe_method,
        probe_on_device=bool(probe_on_device),
        device=device,
        progress=progress,
        caps=caps,
    )
    tasks = [_run_task(f"{name}_s{s}", spec, rank_epochs, ft, keep, run) for name, s, spec, ft, keep in todo]
    first = next(iter(variants.values()))
    randoms = [_random_task(dataclasses.replace(base, **dict(first), seed=s), run) for s in seeds if random_init]
    # on a lent GPU, the runs not stored yet are computed side by side by a pool of workers (maelab.prefetch):
    # whole runs (and the random-init evaluations, after them) where they are stored as parts, else their
    # pre-training while this loop evaluates
    dev = str(resolve_device(device))
    if not compute_parts(tasks + randoms, device=dev, caps=caps):
        pending = [t for t, task in zip(todo, tasks) if not stored(task.key, task.config)]
        prefetch([trained_spec(t[2], rank_epochs) for t in pending], device=dev, caps=caps)
    for (name, s, _spec, _ft, keep), task in zip(todo, tasks):
        r = _run_as_part(task)
        rows.append({"variant": name, "seed": s, **r["row"]})
        curves += [{"variant": name, "seed": s, **h} for h in r["history"]]
        ranks += [
            {"variant": name, "seed": s, "epoch": e, "effective_rank": a, "effective_rank_mean": b}
            for e, a, b in r["ranks"]
        ]
        sv.setdefault(name, []).append(r["sv"]["cls"])
        if keep:
            out[f"features_{name}"] = r["test_features"]
            out["labels"] = r["test_labels"]
    for s, task in zip(seeds, randoms):
        r = task()
        row = r["row"].to_dict("records")[0]
        rows.append(
            {"variant": "random", "seed": s, **row, "finetune_acc": None, "rec_loss": None, "train_seconds": 0.0}
        )
        sv.setdefault("random", []).append(r["sv_cls"])
    out["runs"] = pd.DataFrame(rows, columns=["variant", "seed", *METRICS])
    out["curves"] = pd.DataFrame(curves)
    out["ranks"] = pd.DataFrame(ranks, columns=["variant", "seed", "epoch", "effective_rank", "effective_rank_mean"])
    for name, arrs in sv.items():
        out[f"sv_{name}"] = np.stack(arrs)
    return out


def merge_compare(first: Mapping[str, Any], added: Mapping[str, Any]) -> dict[str, Any]:
    """One :func:`compare` result from two over disjoint seeds of the same runs (``added``: seeds added after a
    first analysis of ``first``): what :func:`compare` returns for the seeds of ``first`` then those of ``added``.
    The tables are concatenated and ordered by variant (as in ``first``), then by that seed order; ``sv_<name>``
    stacked; the kept test features (``features_<name>``, ``labels``) are ``first``'s. Either may be the stored
    :class:`maelab.store.Result` of one."""
    import pandas as pd

    first, added = (getattr(r, "data", r) for r in (first, added))
    seeds = {k: list(dict.fromkeys(int(s) for s in r["runs"].seed)) for k, r in (("first", first), ("added", added))}
    if set(seeds["first"]) & set(seeds["added"]):
        raise ParameterError("added", "runs at seeds not in first " + str(seeds["first"]), seeds["added"])
    names = list(dict.fromkeys(first["runs"].variant))
    if names != list(dict.fromkeys(added["runs"].variant)) or {k for k in first if k.startswith("sv_")} != {
        k for k in added if k.startswith("sv_")
    }:
        raise ParameterError("added", "a compare result of the same variants " + str(names), sorted(added))
    v_rank, s_rank = {v: i for i, v in enumerate(names)}, {s: i for i, s in enumerate(seeds["first"] + seeds["added"])}

    def cat(key: str):
        t = pd.concat([first[key], added[key]], ignore_index=True)
        order = sorted(range(len(t)), key=lambda i: (v_rank[t.variant.iloc[i]], s_rank[int(t.seed.iloc[i])]))
        return t.iloc[order].reset_index(drop=True)

    out = {k: v for k, v in first.items() if k.startswith("features_") or k == "labels"}
    out |= {k: cat(k) for k in ("runs", "curves", "ranks")}
    out |= {k: np.concatenate([first[k], added[k]]) for k in first if k.startswith("sv_")}
    return out


def paired(runs, metric: str, a: str = "umae", b: str = "mae") -> list[float]:
    """Per-seed differences ``metric(a) - metric(b)`` (seeds in increasing order; only seeds present in both)."""
    for col in ("variant", "seed", metric):
        if col not in runs.columns:
            raise ParameterError("runs", f"a table with a {col!r} column", list(runs.columns))
    x = runs[runs.variant == a].set_index("seed")[metric]
    y = runs[runs.variant == b].set_index("seed")[metric]
    common = sorted(set(x.index) & set(y.index))
    if not common:
        raise ParameterError("runs", f"seeds run with both {a!r} and {b!r}", sorted(set(runs.variant)))
    return [float(x[s]) - float(y[s]) for s in common]


def summary(
    runs,
    metrics_: Sequence[str] = ("linear_acc", "knn_acc", "finetune_acc", "effective_rank"),
    order: Sequence[str] | None = None,
):
    """``mean ± std`` (sample std, ddof = 1, over seeds) per variant: a DataFrame of strings, one row per variant,
    plus numeric columns ``<metric>`` (mean) and ``<metric>_std``."""
    import pandas as pd

    order = list(order) if order is not None else list(dict.fromkeys(runs.variant))
    out = []
    for v in order:
        sub = runs[runs.variant == v]
        if sub.empty:
            continue
        rec: dict[str, Any] = {"variant": v, "seeds": len(sub)}
        for m in metrics_:
            vals = pd.to_numeric(sub[m], errors="coerce").dropna().to_numpy(dtype=float)
            mean = float(vals.mean()) if len(vals) else float("nan")
            std = float(vals.std(ddof=1)) if len(vals) > 1 else float("nan")
            rec[m], rec[m + "_std"] = mean, std
        out.append(rec)
    return pd.DataFrame(out)


def finetune_unmet(runs, variants: Sequence[str] = ("mae", "umae")) -> str:
    """The precondition of a fine-tuning comparison: fine-tuning must have *learned*, i.e. for every variant the
    mean fine-tuned test accuracy exceeds the mean linear-probe accuracy of the same frozen encoder ([CLS]): the
    book's :class:`maelab.claims.FineTuneCheck` with one entry per variant (the means over its seeds).

    Two runs that both stay at chance agree "within tolerance" for a trivial reason; such a tie must not count as
    support for "fine-tuning is unchanged". Returns "" when the precondition holds, else a one-line reason (for
    :class:`maelab.claims.Evidence` ``unmet``).
    """
    for col in ("variant", "finetune_acc", "linear_acc"):
        if col not in runs.columns:
            raise ParameterError("runs", f"a table with a {col!r} column", list(runs.columns))
    finetuned, probe = [], []
    for v in variants:
        sub = runs[runs.variant == v]
        ft = sub.finetune_acc.astype(float).dropna()
        if sub.empty or ft.empty:
            raise ParameterError("variants", f"variants fine-tuned in runs {sorted(set(runs.variant))}", v)
        finetuned.append(float(ft.mean()))
        probe.append(float(sub.linear_acc.astype(float).mean()))
    return FineTuneCheck("mean fine-tuned accuracy", tuple(finetuned), tuple(probe), runs=tuple(variants)).unmet


def per_seed_curve_gap(curves, column: str = "eval_online_acc", a: str = "umae", b: str = "mae") -> list[float]:
    """Per seed, the mean over the evaluated epochs of ``column(a) - column(b)`` (epochs where both were
    evaluated); seeds in increasing order."""
    need = ("variant", "seed", "epoch", column)
    if any(c not in curves.columns for c in need):
        raise ParameterError("curves", "a table with columns " + ", ".join(need), list(curves.columns))
    c = curves.dropna(subset=[column])
    x = c[c.variant == a].set_index(["seed", "epoch"])[column]
    y = c[c.variant == b].set_index(["seed", "epoch"])[column]
    both = x.index.intersection(y.index)
    if len(both) == 0:
        raise ParameterError("curves", f"epochs evaluated for both {a!r} and {b!r}", sorted(set(curves.variant)))
    d = (x.loc[both] - y.loc[both]).groupby(level=0).mean()
    return [float(d[s]) for s in sorted(d.index)]


__all__ = [
    "METRICS",
    "POOLS",
    "compare",
    "evaluate_run",
    "finetune_unmet",
    "merge_compare",
    "paired",
    "per_seed_curve_gap",
    "random_init_run",
    "raw_pixel_probe",
    "summary",
]
