"""Planned runs of the Bisulco et al. (2025) notebooks, for :mod:`maelab.cost` (``plans(profile)``).

Built from each profile's settings exactly as the notebooks build their ``PretrainSpec`` s (references: the
notebooks and ``scripts/check_cost_model.py``, which checks the model against the committed cpu results):

* ``bisulco_jacobians``: one unlabelled MAE (no online probe) per training seed at every mask ratio of the sweep,
  ``mask_ratio`` and 0 (the AE) with ``patch_size``, and at every patch size of the sweep with ``mask_ratio``. The
  Jacobians (``n_images`` x ``n_pixels`` backward passes per model) and the linear part's closed forms are not
  modelled.
* ``bisulco_sweeps``: the encoder x decoder depth grid (seeds[0]), the key column for the other seeds (snapshots;
  fine-tuning of seeds[0]) and the mask x patch grid (identical cells run once), each
  :func:`maelab.experiments.pretrain_and_evaluate` (with its probe and k-NN); the per-step timings (``cost_reps``
  steps per grid configuration), the snapshot probes and the CKA features are not modelled (each well under a
  minute on a GPU).
* ``masking``, ``bisulco_linear_mae``, ``bisulco_ising``: no neural network is trained (numpy / small torch linear
  algebra on the CPU): no planned runs, "negligible" in the plan tables; their measured cpu wall times are in the
  committed results' provenance.
"""

from __future__ import annotations

from ...cost import PlannedRun
from ...experiments import PretrainSpec
from ...profiles import settings
from ...result_keys import choice_set


def jacobian_runs(profile: str) -> list[PlannedRun]:
    S = settings("bisulco_jacobians", profile)
    configs = [(m, S.patch_size) for m in sorted({0.0, S.mask_ratio, *S.mask_ratios})]
    configs += [(S.mask_ratio, p) for p in sorted(set(S.patch_sizes) - {S.patch_size})]
    runs = []
    for m, p in configs:
        spec = PretrainSpec(
            dataset="natural",
            n_train=S.n_train,
            n_test=S.n_images,
            img_size=S.img_size,
            channels=1,
            model="mae",
            size=S.model_size,
            model_overrides=(("norm_pix_loss", False), ("patch_size", p), *sorted(choice_set(S.model_choices).items())),
            epochs=S.epochs,
            batch_size=S.batch_size,
            blr=S.blr,
            warmup_epochs=S.warmup_epochs,
            mask_ratio=m,
        )
        run = PlannedRun.from_spec(
            spec,
            label=f"MAE m={m:g} p={p}",
            repeats=len(S.seeds),
            online_eval=False,
            pipeline_eval=False,
            pool=len(configs) * len(S.seeds),  # NonlinearRuns.sweeps hands maelab.prefetch every model
        )
        runs.append(PlannedRun(**{**{f: getattr(run, f) for f in run.__dataclass_fields__}, "eval_images": 0}))
    return runs


def sweep_runs(profile: str) -> list[PlannedRun]:
    S = settings("bisulco_sweeps", profile)
    seeds, e = list(S.seeds), S.epochs
    snaps = tuple(sorted({x for x in S.snapshot_epochs if x <= e} | {e}))
    cells = [
        (enc, dec, S.patch_size, S.mask_ratio, seeds[0])
        for enc in sorted(S.encoder_depths)
        for dec in sorted(S.decoder_depths)
    ]
    cells += [
        (enc, S.key_decoder_depth, S.patch_size, S.mask_ratio, s) for s in seeds[1:] for enc in sorted(S.encoder_depths)
    ]
    n_depth = len(cells)  # the depth grid's record and the patch x mask grid's: one prefetch call each
    n_grid = len(S.patch_sizes) * len(S.mask_ratios)
    cells += [
        c
        for c in (
            (S.grid_depth, S.grid_decoder_depth, p, m, seeds[0])
            for p in sorted(S.patch_sizes)
            for m in sorted(S.mask_ratios)
        )
        if c not in cells
    ]
    runs = []
    for i, (enc, dec, patch, mask, seed) in enumerate(cells):
        key = dec == S.key_decoder_depth and patch == S.patch_size and mask == S.mask_ratio
        spec = PretrainSpec(
            dataset=S.dataset,
            n_train=S.n_train,
            n_test=S.n_test,
            img_size=S.img_size,
            channels=1,
            model="mae",
            size=S.size,
            model_overrides=(
                ("decoder_depth", dec),
                ("depth", enc),
                ("patch_size", patch),
                *sorted(choice_set(S.model_choices).items()),
            ),
            epochs=e,
            batch_size=S.batch_size,
            blr=S.blr,
            warmup_epochs=1.0,
            mask_ratio=mask,
            seed=seed,
            snapshot_epochs=snaps if key else (),
            finetune_epochs=S.finetune_epochs if key and seed == seeds[0] else 0,
        )
        label = f"enc{enc} dec{dec} p{patch} m{mask:g} s{seed}"
        runs.append(PlannedRun.from_spec(spec, label=label, pool=n_depth if i < n_depth else n_grid))
    return runs


def plans(profile: str) -> dict[str, list[PlannedRun]]:
    """``{notebook: planned runs}`` of this paper's notebooks in ``profile`` (empty: no network trained)."""
    return {
        "masking": [],
        "bisulco_linear_mae": [],
        "bisulco_ising": [],
        "bisulco_jacobians": jacobian_runs(profile),
        "bisulco_sweeps": sweep_runs(profile),
    }
