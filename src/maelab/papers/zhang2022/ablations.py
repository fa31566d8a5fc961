"""The runs of the ``zhang_ablations`` page: Table 3 (the uniformity coefficient), Table 2 (SimMIM and U-SimMIM) and
§3.2's MAE without masks, as three groups of paired comparisons.

**Paper-specific** (Zhang, Wang & Wang 2022). Each group is one call of :func:`maelab.papers.zhang2022.umae.compare`
(a base :class:`~maelab.experiments.PretrainSpec` and named variants, every variant run at every seed from the same
initial weights, data order and masks), so the runs are evaluated exactly as the U-MAE page's: the
logistic-regression probe, 20-NN and effective rank on the [CLS] token and on the mean of the patch tokens, and the
untrained encoder of a group's first variant probed the same way (its random-init reference).

:func:`groups` builds the three groups from the page's settings; the page and its cost plan
(``maelab.papers.zhang2022.plan.ablation_runs``) both call it, so the plan prices the runs the page makes.

:func:`effective_groups` and :func:`effective_runs`: Table 1 at the weight the official code gave the uniformity
term (issue 22). The official ``loss_func.uniformity_loss`` all-gathers the features of the 8 processes of
``pretrain.sh`` through a layer whose backward returns each process's own slice only, so after DDP's averaging the
term's gradient is 1/8 of the loss as written (:func:`maelab.models.gather_features`, ``"official"``): the paper's
lambda = 0.01 acted as 1.25e-3. maelab trains in one process, where lambda = 0.01 is the full weight.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

from maelab import experiments, result_keys
from maelab._validate import ParameterError

from .umae import image_geometry

__all__ = [
    "GROUPS",
    "EFFECTIVE",
    "lam_name",
    "lam_of",
    "base_spec",
    "groups",
    "effective_groups",
    "effective_runs",
]

#: The page's groups in order, each name with what it tests.
GROUPS = {
    "lambda_sweep": "Table 3: U-MAE against the uniformity coefficient (lambda 0 is plain MAE), mask 0.75",
    "simmim": "Table 2: SimMIM against U-SimMIM at SimMIM's mask ratio",
    "no_mask": "§3.2: MAE trained without masks (mask ratio 0), against the lambda-0 run of lambda_sweep",
}


def lam_name(lam: float) -> str:
    """The variant name of coefficient ``lam`` in the lambda sweep: ``lam_0``, ``lam_0p01``, ``lam_1em05``."""
    lam = float(lam)
    if not lam >= 0:
        raise ParameterError("lam", "a number >= 0", lam)
    return "lam_" + f"{lam:g}".replace(".", "p").replace("-", "m").replace("+", "")


def lam_of(name: str) -> float:
    """The coefficient of a lambda-sweep variant name (inverse of :func:`lam_name`)."""
    if not isinstance(name, str) or not name.startswith("lam_"):
        raise ParameterError("name", "a lambda-sweep variant name such as 'lam_0p01'", name)
    try:
        return float(name[4:].replace("p", ".").replace("m", "-"))
    except ValueError:
        raise ParameterError("name", "a lambda-sweep variant name such as 'lam_0p01'", name) from None


def base_spec(settings) -> experiments.PretrainSpec:
    """The MAE run every comparison of the page starts from (mask 0.75; method, mask and seed set per variant):
    the dataset's image geometry (28 px grey for Fashion-MNIST and MNIST, 32 px otherwise), the settings'
    official-code model choices and ``patch_size`` (None: the size's own)."""
    S = settings
    over = dict(result_keys.choice_set(S.model_choices))
    if S.patch_size is not None:
        over["patch_size"] = S.patch_size
    return experiments.PretrainSpec(
        dataset=S.dataset,
        n_train=S.n_train,
        n_test=S.n_test,
        img_size=image_geometry(S.dataset)[0],
        channels=image_geometry(S.dataset)[1],
        model="mae",
        size=S.size,
        model_overrides=tuple(sorted(over.items())),
        epochs=S.epochs,
        batch_size=S.batch_size,
        blr=S.blr,
        warmup_epochs=S.warmup_epochs,
        mask_ratio=0.75,
    )


def _with_lambda(base: experiments.PretrainSpec, model: str, lam: float) -> dict:
    over = {**dict(base.model_overrides), "lambda_unif": float(lam)}
    return {"model": model, "model_overrides": tuple(sorted(over.items()))}


def groups(settings) -> dict[str, tuple[experiments.PretrainSpec, dict[str, dict]]]:
    """``{group: (base spec, {variant: PretrainSpec fields})}`` for :func:`maelab.papers.zhang2022.umae.compare`,
    in the order of :data:`GROUPS`. The first variant of a group is its baseline, whose untrained encoder is the
    group's random-init reference: plain MAE (lambda 0, model "mae" as in the paper's Table 3) for the sweep,
    SimMIM for Table 2; the no-mask group has no reference of its own (its baseline is the sweep's lambda 0)."""
    S = settings
    base = base_spec(S)
    lams: Sequence[float] = sorted(float(v) for v in S.lams)
    sweep = {lam_name(lam): ({"model": "mae"} if lam == 0 else _with_lambda(base, "umae", lam)) for lam in lams}
    sim_base = dataclasses.replace(base, mask_ratio=float(S.simmim_mask_ratio))
    sim = {"simmim": {"model": "simmim"}, "usimmim": _with_lambda(base, "usimmim", S.simmim_lam)}
    return {
        "lambda_sweep": (base, sweep),
        "simmim": (sim_base, sim),
        "no_mask": (base, {"mask_0": {"model": "mae", "mask_ratio": 0.0}}),
    }


#: The runs of the effective-lambda comparison beyond Table 3's, each name with what it adds.
EFFECTIVE = {
    "lam_eff_new_seeds": "Table 1 at the effective lambda: lambda 0, lam_eff and lam_paper at the seeds Table 3 lacks",
    "lam_eff_table3_seeds": "Table 1 at the effective lambda: lam_eff at Table 3's seeds (its lambda 0 and lam_paper "
    "runs are reused)",
    "lam_eff_fine_patch": "Table 1 at the effective lambda with more tokens: lambda 0 and lam_eff at fine_patch_size",
}


def effective_groups(settings) -> dict[str, tuple[experiments.PretrainSpec, dict[str, dict], tuple[int, ...], bool]]:
    """``{name: (base spec, {variant: fields}, seeds, random_init)}`` of :data:`EFFECTIVE` (a group without seeds is
    left out), for :func:`maelab.papers.zhang2022.umae.compare`.

    The variants are built as :func:`groups` builds Table 3's (``lam_0`` plain MAE, ``lam_<x>`` U-MAE), so a run at
    a seed of ``settings.seeds`` with lambda 0 or ``lam_paper`` *is* the Table 3 run of that seed: it is not run
    again, :func:`effective_runs` takes it from the stored ``lambda_sweep`` table (checked there to have the same
    configuration)."""
    S = settings
    base = base_spec(S)
    lam_eff = float(S.lam_eff)
    mae = {"model": "mae"}
    eff = _with_lambda(base, "umae", lam_eff)
    paper = _with_lambda(base, "umae", S.lam_paper)
    old = tuple(s for s in S.eff_seeds if s in S.seeds)
    new = tuple(s for s in S.eff_seeds if s not in S.seeds)
    out = {}
    if new:
        variants = {lam_name(0.0): mae, lam_name(lam_eff): eff, lam_name(S.lam_paper): paper}
        out["lam_eff_new_seeds"] = (base, variants, new, True)
    if old:
        out["lam_eff_table3_seeds"] = (base, {lam_name(lam_eff): eff}, old, False)
    if S.fine_patch_size is not None and S.fine_patch_seeds:
        over = {**dict(base.model_overrides), "patch_size": int(S.fine_patch_size)}
        fine = dataclasses.replace(base, model_overrides=tuple(sorted(over.items())))
        variants = {lam_name(0.0): mae, lam_name(lam_eff): _with_lambda(fine, "umae", lam_eff)}
        out["lam_eff_fine_patch"] = (fine, variants, tuple(S.fine_patch_seeds), True)
    return out


def effective_runs(settings, sweep_runs, sweep_config: dict, results: dict):
    """The runs table of the effective-lambda comparison at the settings' patch size: variants ``lam_0``,
    ``lam_<lam_eff>``, ``lam_<lam_paper>`` and ``random`` at every seed of ``eff_seeds``, one row each.

    ``sweep_runs``/``sweep_config``: the stored Table 3 (``lambda_sweep``) runs table and config; ``results``:
    ``{group: compare() result}`` of :func:`effective_groups` (the fine-patch group is not used here). The rows of
    lambda 0, ``lam_paper`` and random init at Table 3's seeds come from ``sweep_runs``; that they are the same runs
    is checked, not assumed: the stored config must hold the same base spec and the same variant configurations
    (else :class:`maelab.ParameterError`)."""
    import pandas as pd

    S = settings
    base = base_spec(S)
    lam_eff = float(S.lam_eff)
    reused = {lam_name(0.0): {"model": "mae"}, lam_name(S.lam_paper): _with_lambda(base, "umae", S.lam_paper)}

    def same(a, b) -> bool:  # as stored: JSON (tuples are lists there)
        return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)

    if not same(sweep_config.get("spec"), base.to_config()):
        raise ParameterError("sweep_config", "the lambda_sweep config of the same base spec", sweep_config.get("spec"))
    for name, fields in reused.items():
        if sweep_config.get("variants", {}).get(name) != str(experiments.variant_config(fields)):
            raise ParameterError("sweep_config", f"a lambda_sweep whose variant {name!r} is this page's", name)
    old = [s for s in S.eff_seeds if s in S.seeds]
    take = sweep_runs[sweep_runs.seed.isin(old) & sweep_runs.variant.isin([*reused, "random"])]
    parts = [take]
    for group in ("lam_eff_new_seeds", "lam_eff_table3_seeds"):
        if group in results:
            parts.append(results[group]["runs"])
    runs = pd.concat(parts, ignore_index=True)
    want = {(v, s) for v in (*reused, lam_name(lam_eff), "random") for s in S.eff_seeds}
    have = list(zip(runs.variant, runs.seed))
    if set(have) != want or len(have) != len(want):
        raise ParameterError("results", f"one run per variant and seed of {sorted(want)}", sorted(have))
    return runs.sort_values(["variant", "seed"]).reset_index(drop=True)
