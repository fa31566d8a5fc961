"""The runs of the ``zhang_ablations`` page: Table 3 (the uniformity coefficient), Table 2 (SimMIM and U-SimMIM) and
§3.2's MAE without masks, as three groups of paired comparisons.

**Paper-specific** (Zhang, Wang & Wang 2022). Each group is one call of :func:`maelab.papers.zhang2022.umae.compare`
(a base :class:`~maelab.experiments.PretrainSpec` and named variants, every variant run at every seed from the same
initial weights, data order and masks), so the runs are evaluated exactly as the U-MAE page's: the
logistic-regression probe, 20-NN and effective rank on the [CLS] token and on the mean of the patch tokens, and the
untrained encoder of a group's first variant probed the same way (its random-init reference).

:func:`groups` builds the three groups from the page's settings; the page and its cost plan
(``maelab.papers.zhang2022.plan.ablation_runs``) both call it, so the plan prices the runs the page makes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from maelab import experiments, models
from maelab._validate import ParameterError

from .umae import image_geometry

__all__ = ["GROUPS", "lam_name", "lam_of", "base_spec", "groups"]

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
    over = dict(models.choice_set(S.model_choices))
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
