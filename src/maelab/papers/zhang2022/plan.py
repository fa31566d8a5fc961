"""Planned runs of the Zhang, Wang & Wang (2022) notebooks, for :mod:`maelab.cost` (``plans(profile)``).

Built from each profile's settings exactly as the notebooks build their ``PretrainSpec`` s (the notebooks and
``scripts/check_cost_model.py``, which checks the model against the committed cpu results, are the references):

* ``zhang_umae``: per dataset, MAE and U-MAE for every seed (:func:`maelab.papers.zhang2022.umae.evaluate_run`:
  pre-training with online probe, features of train + test for both poolings, the test features at every rank
  epoch for both poolings, fine-tuning), plus the random-init features (both poolings) per seed, the same for the
  dataset's added seeds (``added_seeds``: a second compare() call), and the investigation's runs (no fine-tuning).
* ``zhang_ablations``: every run of Table 3 (lambda x seeds), Table 2 (SimMIM, U-SimMIM) and the no-mask ablation
  (:func:`maelab.papers.zhang2022.ablations.groups`) and the random-init references.
* ``zhang_mask_graph``: Theorem 3.6's collapsed decoders (``collapse_steps`` per mask ratio and seed, counted as
  full micro-MAE steps at batch 128: an over-count, the constant encoder output gets no encoder pass) and the
  normal micro MAE; Fig. 2b/c and the exact graphs are numpy on the CPU, not modelled (seconds to minutes).
"""

from __future__ import annotations

import dataclasses

from ...cost import EvalJob, PlannedRun
from ...experiments import PretrainSpec
from ...profiles import settings
from ...result_keys import choice_set
from . import ablations, mask_graph_report, umae
from .regime import POOLS


def _per_ds(v, ds):
    return v[ds] if isinstance(v, dict) else v


def _random_init_run(
    label: str, spec: PretrainSpec, repeats: int, probe_kind: str, fits: int = 0, on_device: bool = False
) -> PlannedRun:
    """The untrained encoder of ``spec`` probed as the trained ones are (both pools: features of train + test, a
    logistic-regression probe and a k-NN each; the probe fitted on the device with ``on_device``), no training."""
    n_tr, n_te = spec.n_train, spec.n_test
    return PlannedRun(
        label,
        model=spec.model,
        size=spec.size,
        overrides=spec.model_overrides,
        img_size=spec.img_size,
        channels=spec.channels,
        eval_images=2 * (n_tr + n_te),
        repeats=repeats,
        jobs=(
            EvalJob(probe_kind, n_tr, n_te, count=len(POOLS), fits=fits, on_device=on_device),
            EvalJob("knn", n_tr, n_te, count=len(POOLS)),
        ),
    )


def umae_runs(profile: str) -> list[PlannedRun]:
    S = settings("zhang_umae", profile)
    runs = []
    fits = 1 if S.probe_cs is not None and len(S.probe_cs) == 1 else (len(S.probe_cs) + 1 if S.probe_cs else 0)
    datasets = S.run_datasets

    def base_spec(ds):
        return umae.base_spec(S, ds)

    def add(base, variants, label, finetune_epochs, n_seeds=None):
        n_seeds = len(S.seeds) if n_seeds is None else n_seeds
        n_tr, n_te, ep = base.n_train, base.n_test, base.epochs
        rank_eps = sorted({e for e in S.rank_epochs if e <= ep} | {0, ep})
        extra = (n_tr + n_te) + 2 * len(rank_eps) * n_te  # the second pooling; ranks (both pools)
        for name, over in variants.items():
            spec = dataclasses.replace(
                base,
                model="umae" if "lambda_unif" in over else "mae",
                model_overrides=tuple(sorted({**dict(base.model_overrides), **over}.items())),
            )
            runs.append(
                PlannedRun.from_spec(
                    spec,
                    label=f"{label} {name}",
                    repeats=n_seeds,
                    extra_eval_images=extra,
                    finetune_epochs=finetune_epochs,
                    pools=len(POOLS),
                    probe_fits=fits,
                    probe_kind=S.probe_method,
                    pool=len(variants) * n_seeds,  # one compare() call: maelab.prefetch
                )
            )

    for ds in datasets:
        base = base_spec(ds)
        pair = {"mae": {}, "umae": {"lambda_unif": S.lam}}
        add(base, pair, ds, S.finetune_epochs)
        runs.append(_random_init_run(f"{ds} random init", base, len(S.seeds), S.probe_method, fits))
        added = S.added_seeds.get(ds, ())
        if added:  # the second look's record (compare_<ds>_added): its own compare() call
            add(base, pair, f"{ds} added seeds", S.finetune_epochs, len(added))
            runs.append(_random_init_run(f"{ds} added seeds random init", base, len(added), S.probe_method, fits))
    # the investigation (no fine-tuning): lambda x lam_factor, the mean-feature term; shorter runs add their own
    # MAE / U-MAE references and, with the official choices, the same pair with the legacy ones
    ids = S.investigate_dataset
    base = base_spec(ids)
    inv_ep = base.epochs if S.investigate_epochs is None else min(S.investigate_epochs, base.epochs)
    variants = {"x": {"lambda_unif": S.lam * S.lam_factor}, "meanfeat": {"lambda_unif": S.lam}}
    if inv_ep < base.epochs:
        variants = {"mae": {}, "umae": {"lambda_unif": S.lam}, **variants}
        if S.model_choices == "official":
            legacy = choice_set("legacy")
            variants.update({"mae legacy": legacy, "umae legacy": {**legacy, "lambda_unif": S.lam}})
    add(dataclasses.replace(base, epochs=inv_ep), variants, f"{ids} investigation", 0)
    return runs


def ablation_runs(profile: str) -> list[PlannedRun]:
    """The runs of :func:`maelab.papers.zhang2022.ablations.groups`, evaluated as
    :func:`maelab.papers.zhang2022.umae.compare` evaluates them (both pools, no ranks, no fine-tuning; the
    logreg_torch probes on the page's device), and the random-init references of the groups that have one."""
    S = settings("zhang_ablations", profile)
    on_dev = S.probe_method == "logreg_torch"  # ablations_report: probe_on_device
    runs = []
    for name, (base, variants) in ablations.groups(S).items():
        n_tr, n_te = base.n_train, base.n_test
        for vname, fields in variants.items():
            spec = dataclasses.replace(base, **dict(fields))
            runs.append(
                PlannedRun.from_spec(
                    spec,
                    label=f"{name} {vname}",
                    repeats=len(S.seeds),
                    extra_eval_images=n_tr + n_te,  # the second pooling
                    finetune_epochs=0,
                    pools=len(POOLS),
                    probe_kind=S.probe_method,
                    probe_on_device=on_dev,
                    pool=len(variants) * len(S.seeds),  # one compare() call: maelab.prefetch
                )
            )
        if name != "no_mask":  # the untrained encoder of the group's first variant
            first = dataclasses.replace(base, **dict(next(iter(variants.values()))))
            runs.append(_random_init_run(f"{name} random init", first, len(S.seeds), S.probe_method, on_device=on_dev))
    # Table 1 at the effective lambda: only the runs Table 3 does not already hold (ablations.effective_groups)
    for name, (base, variants, seeds, random_init) in ablations.effective_groups(S).items():
        for vname, fields in variants.items():
            runs.append(
                PlannedRun.from_spec(
                    dataclasses.replace(base, **dict(fields)),
                    label=f"{name} {vname}",
                    repeats=len(seeds),
                    extra_eval_images=base.n_train + base.n_test,
                    finetune_epochs=0,
                    pools=len(POOLS),
                    probe_kind=S.probe_method,
                    probe_on_device=on_dev,
                    pool=len(variants) * len(seeds),  # one compare() call: maelab.prefetch
                )
            )
        if random_init:
            first = dataclasses.replace(base, **dict(next(iter(variants.values()))))
            runs.append(_random_init_run(f"{name} random init", first, len(seeds), S.probe_method, on_device=on_dev))
    return runs


def mask_graph_runs(profile: str) -> list[PlannedRun]:
    S = settings("zhang_mask_graph", profile)
    spec = mask_graph_report.collapse_spec(S, 0)  # the seed changes no cost
    # every fit and the contrast MAE are parts of one record, side by side in an installment's pool
    pool = len(S.collapse_mask_ratios) * len(S.collapse_seeds) + 1
    runs = [
        PlannedRun(
            f"collapsed decoder m={m:g}",
            size="micro",
            overrides=tuple(sorted(choice_set(S.model_choices).items())),
            img_size=28,
            channels=1,
            batch_size=128,
            steps=S.collapse_steps,
            mask_ratio=m,
            data_images=S.collapse_n_train + S.collapse_n_test,
            repeats=len(S.collapse_seeds),
            pool=pool,
        )
        for m in S.collapse_mask_ratios
    ]
    return runs + [PlannedRun.from_spec(spec, label="micro MAE (Theorem 3.6)", pool=pool)]


def regime_runs(profile: str) -> list[PlannedRun]:
    """``zhang_regime``: MAE and U-MAE per seed (official-code choices, the notebook's patch size), no fine-tuning;
    each evaluated snapshot extracts features of the probe's training images and of the test images for both
    poolings and fits a torch logistic-regression probe (on the page's device) and a 20-NN on each
    (:func:`.regime.snapshot_row`); the raw-pixel probe and 20-NN once per seed (:func:`.regime.raw_pixel_row`)."""
    S = settings("zhang_regime", profile)
    over = {"patch_size": S.patch_size}
    n_probe = S.probe_n_train if S.probe_n_train is not None else S.n_train
    runs = []
    for label, model, lam in (("MAE", "mae", 0.0), (f"U-MAE lambda={S.lam:g}", "umae", S.lam)):
        spec = PretrainSpec(
            dataset=S.dataset,
            n_train=S.n_train,
            n_test=S.n_test,
            img_size=28,
            channels=1,
            model=model,
            size=S.size,
            model_overrides=tuple(sorted({**over, "lambda_unif": float(lam)}.items())),
            epochs=S.epochs,
            batch_size=S.batch_size,
            blr=S.blr,
            warmup_epochs=S.warmup_epochs,
            mask_ratio=S.mask_ratio,
        )
        # snapshots evaluated: every curve epoch for MAE; U-MAE shares MAE's epoch 0 (the same initial weights)
        snaps = len(S.curve_epochs) - (model == "umae")
        per_pool = (
            EvalJob("logreg_torch", n_probe, S.n_test, count=snaps * len(POOLS), on_device=True),
            EvalJob("knn", n_probe, S.n_test, count=snaps * len(POOLS)),
        )
        raw = (
            EvalJob("logreg_torch", n_probe, S.n_test, dim=28 * 28, on_device=True),
            EvalJob("knn", n_probe, S.n_test, dim=28 * 28),
        )
        runs.append(
            PlannedRun.from_spec(
                spec,
                label=label,
                repeats=len(S.seeds),
                extra_eval_images=snaps * len(POOLS) * (n_probe + S.n_test),
                finetune_epochs=0,
                pipeline_eval=False,
                jobs=per_pool + (raw if model == "mae" else ()),
                # the seeds' records side by side, each training its MAE and U-MAE in turn (the page's
                # Context.load_or_compute_many: maelab.prefetch.compute_records)
                pool=len(S.seeds),
            )
        )
    return runs


def plans(profile: str) -> dict[str, list[PlannedRun]]:
    """``{notebook: planned runs}`` of this paper's notebooks in ``profile``."""
    return {
        "zhang_mask_graph": mask_graph_runs(profile),
        "zhang_regime": regime_runs(profile),
        "zhang_umae": umae_runs(profile),
        "zhang_ablations": ablation_runs(profile),
    }
