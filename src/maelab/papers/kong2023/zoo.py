"""The shared zoo of pretrained encoders of the Kong et al. notebooks (``kong_reconstruction``,
``kong_representations``).

One MAE per (mask ratio, masking unit, seed): every ratio of ``S.mask_ratios`` at unit 1 (Fig. 5 top row) and
every unit of ``S.units`` at ``S.unit_ratio`` (bottom row; unit 1 at ``unit_ratio`` is the same model as the top
row's), for every seed of ``S.seeds``, pre-trained on ``shapes`` by :func:`maelab.experiments.pretrain` with the
official MAE recipe (norm-pix loss, ``maelab.result_keys.OFFICIAL_CHOICES``). The masking unit is decoupled from the
ViT patch, as the paper does: the patch stays ``S.size``'s, the model masks ``unit x unit`` token blocks
(``mask_unit``). Checkpoints are cached by :attr:`~maelab.experiments.PretrainSpec.key`, so the second notebook
loads what the first one trained. The baseline of every representation claim is the same architecture at random
initialisation (:func:`random_init`): the weights ``maelab.models.create`` draws for the seed, which do not depend
on the mask ratio or unit (tested).
"""

from __future__ import annotations

from typing import Any

from ... import models, result_keys
from ..._validate import ParameterError
from ...experiments import PretrainSpec, build_model, load_data, pretrain
from ...options import DryRunLimits

__all__ = ["DATASET", "configs", "spec", "specs", "zoo_config", "data", "train_or_load", "random_init", "label"]

DATASET = "shapes"


def configs(S) -> list[tuple[float, int]]:
    """The zoo's (mask ratio, masking unit) pairs: ratios at unit 1, then units > 1 at ``S.unit_ratio``."""
    return [(float(r), 1) for r in S.mask_ratios] + [(float(S.unit_ratio), int(u)) for u in S.units if u != 1]


def label(ratio: float, unit: int) -> str:
    """A short name of a zoo entry, e.g. ``"r0.75 u2"``."""
    return f"r{ratio:g} u{unit}"


def spec(S, ratio: float, unit: int, seed: int) -> PretrainSpec:
    """The :class:`~maelab.experiments.PretrainSpec` of one zoo entry (``S``: a :class:`.settings.KongZooSettings`)."""
    if (float(ratio), int(unit)) not in configs(S):
        raise ParameterError(
            "ratio, unit", "a pair of the zoo (" + ", ".join(map(str, configs(S))) + ")", (ratio, unit)
        )
    over = {**result_keys.OFFICIAL_CHOICES, "mask_unit": int(unit), "norm_pix_loss": True}
    return PretrainSpec(
        dataset=DATASET,
        n_train=S.n_train,
        n_test=S.n_test,
        img_size=models.SIZES[S.size]["img_size"],
        channels=3,
        model="mae",
        size=S.size,
        model_overrides=tuple(sorted(over.items())),
        epochs=S.epochs,
        batch_size=S.batch_size,
        blr=S.blr,
        warmup_epochs=S.warmup_epochs,
        mask_ratio=float(ratio),
        seed=int(seed),
    )


def specs(S, seed: int) -> dict[tuple[float, int], PretrainSpec]:
    """``{(ratio, unit): spec}`` of every zoo entry of one seed."""
    return {c: spec(S, *c, seed) for c in configs(S)}


def zoo_config(S) -> dict[str, Any]:
    """What every zoo result depends on (for a result's ``config``): the zoo's settings and the spec of entry
    (``unit_ratio``, 1) at seed 0 (its fields fix the recipe; the others differ only in ratio, unit and seed)."""
    fields = (
        "size",
        "mask_ratios",
        "units",
        "unit_ratio",
        "n_train",
        "n_test",
        "epochs",
        "batch_size",
        "blr",
        "warmup_epochs",
    )
    return {"zoo": S.pick(*fields), "spec": spec(S, S.unit_ratio, 1, 0).to_config()}


def data(S, device="cpu"):
    """The zoo's (train, test) ``shapes`` data sets (identical for every entry)."""
    return load_data(spec(S, S.unit_ratio, 1, 0), device, progress=False)


def train_or_load(
    s: PretrainSpec,
    train_data,
    test_data,
    *,
    device: str = "cpu",
    progress: bool | None = None,
    caps: DryRunLimits | None = None,
):
    """Pre-train ``s`` (or load its finished checkpoint); returns ``(model in eval mode, history)``.

    ``history``: the trainer's per-epoch log (``loss``, ``seconds``, ...) of the run that trained it (restored
    from the checkpoint when loaded). ``caps``: a dry run's (:class:`maelab.options.DryRunLimits`).
    """
    model, res, _, _ = pretrain(
        s, device=device, progress=progress, train_data=train_data, test_data=test_data, caps=caps
    )
    return model.eval(), list(res.history)


def random_init(S, seed: int, device: str = "cpu", *, unit: int = 1):
    """The zoo's architecture at random initialisation for ``seed`` (eval mode): the weights every zoo entry of
    that seed starts from, masking ``unit x unit`` token blocks (the unit changes the masks, not the weights)."""
    return build_model(spec(S, S.unit_ratio, unit, seed)).to(device).eval()
