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

import time
from typing import Any

import numpy as np
import pandas as pd

from ... import data as datasets
from ... import metrics, models, result_keys
from ... import zoo as shared_zoo
from ..._validate import ParameterError
from ...experiments import PretrainSpec, build_model, load_data, pretrain
from ...options import DryRunLimits
from ...prefetch import prefetch
from ...reconstruction import masked_patch_losses
from . import representations as rp

__all__ = [
    "DATASET",
    "configs",
    "spec",
    "specs",
    "zoo_config",
    "encoders_config",
    "data",
    "train_or_load",
    "random_init",
    "label",
    "probe_data",
    "measure_seed",
    "tsne_seed",
    "ink_config",
    "measure_ink",
]

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


def encoders_config(S, seed: int) -> dict[str, Any]:
    """The ``config`` of one seed's ``encoders_s<seed>`` result of ``kong_representations``: the zoo's recipe
    (:func:`zoo_config`), the measurement settings and the seed."""
    fields = ("n_probe_train", "n_probe_test", "pool", "knn_k", "shifts", "n_cue_conflict", "n_attention")
    fields += ("n_token_images", "token_threshold", "n_tsne")
    return {
        "what": "frozen-encoder measurements and masked-patch test losses, one seed",
        **zoo_config(S),
        **S.pick(*fields),
        "seed": int(seed),
    }


def probe_data(S) -> dict[str, Any]:
    """The probe images of ``kong_representations`` (all ``shapes``, data seed 0): the first ``S.n_probe_train``
    training images, ``S.n_probe_test`` test images, the same test scenes under every shift of ``S.shifts`` and
    ``S.n_cue_conflict`` cue-conflict test images; the ``probe`` argument of
    :func:`~maelab.papers.kong2023.representations.measure_encoder`."""
    opts = {"size": 32, "channels": 3, "progress": False}
    out: dict[str, Any] = {
        "train": datasets.load("shapes", "train", n=S.n_probe_train, **opts),
        "test": datasets.load("shapes", "test", n=S.n_probe_test, **opts),
        "cue": datasets.load("shapes", "test", n=S.n_cue_conflict, cue_conflict=True, masks=False, **opts),
    }
    out["shifts"] = {
        sh: datasets.load("shapes", "test", n=S.n_probe_test, shift=sh, masks=False, **opts) for sh in S.shifts
    }
    return out


def measure_seed(
    S, seed: int, *, device: str = "cpu", progress: bool | None = None, caps: DryRunLimits | None = None
) -> dict[str, Any]:
    """Train (or load) every zoo entry of one seed and measure it and the seed's random init.

    Returns ``rows`` (a DataFrame: one row per encoder -- ``model``, ``ratio``, ``unit``, ``seed``, every key of
    :func:`~maelab.papers.kong2023.representations.measure_encoder`'s row, the precondition's masked-patch test
    losses of :func:`maelab.reconstruction.masked_patch_losses` against the entry's random init, ``train_seconds``,
    ``eval_seconds``) and ``seconds``; for the first seed of ``S.seeds`` also ``features`` (the first ``S.n_tsne``
    test features of each encoder), ``attention`` (last-layer [CLS] attention of 4 test images), ``encoders``,
    ``labels``, ``example_images`` and ``example_masks``. ``S``: a :class:`.settings.KongRepresentationsSettings`.
    """
    t0 = time.time()
    probe = probe_data(S)
    train, test = data(S, device)
    encoders = [(label(r, u), r, u) for r, u in configs(S)] + [("random init", np.nan, 1)]
    # on a lent GPU a pool of workers pre-trains the seed's entries side by side while the loop measures them
    prefetch([spec(S, r, u, seed) for r, u in configs(S)], device=str(device), caps=caps)
    rows, feats, maps = [], {}, {}
    for name, ratio, unit in encoders:
        if name == "random init":
            model, train_s, losses = random_init(S, seed, device), 0.0, {}
        else:
            model, hist = train_or_load(
                spec(S, ratio, unit, seed), train, test, device=device, progress=progress, caps=caps
            )
            train_s = float(sum(h["seconds"] for h in hist))
            # the precondition's numbers: its masked-patch test loss, its random init's and the patch mean's
            losses = masked_patch_losses(model, random_init(S, seed, device, unit=unit), test.images, ratio, seed=seed)
        t = time.time()
        row, fte = rp.measure_encoder(
            model,
            probe,
            pool=S.pool,
            knn_k=S.knn_k,
            token_threshold=S.token_threshold,
            n_token_images=S.n_token_images,
            n_attention=S.n_attention,
            seed=seed,
            caps=caps,
        )
        rows.append(
            {
                "model": name,
                "ratio": ratio,
                "unit": unit,
                "seed": seed,
                **row,
                **losses,
                "train_seconds": train_s,
                "eval_seconds": time.time() - t,
            }
        )
        if seed == S.seeds[0]:
            feats[name] = fte[: S.n_tsne].numpy()
            maps[name] = rp.cls_attention_maps(model, probe["test"].images[:4]).numpy()
    out: dict[str, Any] = {"rows": pd.DataFrame(rows), "seconds": time.time() - t0}
    if feats:
        out["features"] = np.stack(list(feats.values()))
        out["attention"] = np.stack(list(maps.values()))
        out["encoders"] = list(feats)
        out["labels"] = probe["test"].labels[: S.n_tsne].numpy()
        out["example_images"] = probe["test"].images[:4].numpy()
        out["example_masks"] = probe["test"].latents["mask"][:4].numpy()
    return out


def tsne_seed(measured: dict[str, Any], caps: DryRunLimits | None = None) -> dict[str, Any]:
    """t-SNE (:func:`maelab.metrics.tsne`, seed 0) of each encoder's test features of the first seed's
    :func:`measure_seed` result, and the silhouette of the class labels in each encoder's feature space
    (:func:`~maelab.papers.kong2023.representations.feature_silhouette`); returns ``embedding`` (encoders x points x
    2), ``names`` and ``stats`` (a DataFrame: ``model``, ``silhouette``)."""
    out, stats = {}, []
    for k, name in enumerate(measured["encoders"]):
        f = measured["features"][k]
        out[name] = metrics.tsne(f, seed=0, perplexity=min(30.0, (len(f) - 1) / 3), caps=caps)
        stats.append({"model": name, "silhouette": float(rp.feature_silhouette(f, measured["labels"]))})
    return {"embedding": np.stack(list(out.values())), "names": list(out), "stats": pd.DataFrame(stats)}


def ink_config(S, ZM) -> dict[str, Any]:
    """The ``config`` of ``kong_representations``' ``zoo_ink`` result: the measured part of the shared zoo
    (:func:`maelab.zoo.fingerprint` of ``ZM``, :func:`maelab.zoo.measured`) and the measurement settings of ``S``
    (a :class:`.settings.KongRepresentationsSettings`)."""
    return {
        "what": "ink silhouettes of the shared zoo's encoders, with each checkpoint's own learning check",
        "zoo": shared_zoo.fingerprint(ZM),
        **S.pick("ink", "n_attention", "n_token_images", "token_threshold"),
    }


def measure_ink(S, ZS, ZM, *, device: str = "cpu", caps: DryRunLimits | None = None) -> dict[str, Any]:
    """The ink-silhouette rows of the shared zoo's unit-1 encoders and their random inits, every seed of ``ZM``
    (:func:`~maelab.papers.kong2023.representations.ink_silhouette_row`: [CLS] attention on a digit's ink and the
    per-token ink probe); returns ``{"marks": DataFrame}`` (``model``, ``seed``, the row's keys and each trained
    model's own learning check), one part per seed: :func:`maelab.zoo.measure_checkpoints`.

    ``ZS``: the shared zoo's :class:`maelab.zoo.ZooSettings`; ``ZM``: its measured part (:func:`maelab.zoo.measured`),
    whose checkpoints are loaded, or re-trained where missing (:func:`maelab.zoo.trained_model`)."""

    def row(model, ratio, seed: int, tr, te) -> dict:
        kw = S.pick("ink", "n_attention", "n_token_images", "token_threshold")
        return rp.ink_silhouette_row(model, tr.images, te.images, **kw, seed=seed, caps=caps)

    return shared_zoo.measure_checkpoints(ZM, "marks", row, device, caps=caps, with_random=True)
