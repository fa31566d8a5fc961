"""Planned runs of the Kong et al. (2023) notebooks, for :mod:`maelab.cost` (``plans(profile)``).

Built from each profile's settings exactly as the notebooks build their zoo (:mod:`.zoo`):

* ``kong_reconstruction``: the zoo's pre-training (one :class:`~maelab.cost.PlannedRun` per (ratio, unit),
  repeated per seed, with the trainer's online evaluation); its scoring passes (unmasked and masked
  reconstructions of ``n_eval`` images, two loss passes, each counted as one unmasked forward: an over-count of
  the encoder, an under-count of the decoder) are added as evaluation images. ``kong_theory`` trains nothing.
* ``kong_representations``: the zoo is loaded from the checkpoints the first notebook wrote (no training in the
  plan: run ``kong_reconstruction`` first, as the book does); per encoder (the zoo and the random init, per seed)
  the feature passes of the probe images, the shifts, the cue-conflict images and the attention / token images.
"""

from __future__ import annotations

from ... import models
from ...cost import PlannedRun
from ...profiles import settings
from . import zoo


def reconstruction_runs(profile: str) -> list[PlannedRun]:
    S = settings("kong_reconstruction", profile)
    scoring = 4 * S.n_eval
    return [
        PlannedRun.from_spec(
            zoo.spec(S, r, u, S.seeds[0]),
            label=f"MAE {zoo.label(r, u)}",
            repeats=len(S.seeds),
            extra_eval_images=scoring,
            finetune_epochs=0,
        )
        for r, u in zoo.configs(S)
    ]


def representation_runs(profile: str) -> list[PlannedRun]:
    S = settings("kong_representations", profile)
    per_encoder = (
        S.n_probe_train + S.n_probe_test * (1 + len(S.shifts)) + S.n_cue_conflict + S.n_attention + 2 * S.n_token_images
    )
    return [
        PlannedRun(
            "frozen encoders (zoo + random init)",
            size=S.size,
            overrides=tuple(sorted(models.OFFICIAL_CHOICES.items())),
            img_size=models.SIZES[S.size]["img_size"],
            channels=3,
            eval_images=per_encoder,
            repeats=len(S.seeds) * (len(zoo.configs(S)) + 1),
        )
    ]


def plans(profile: str) -> dict[str, list[PlannedRun]]:
    """``{notebook: planned runs}`` of this paper's trained-model notebooks in ``profile``."""
    return {"kong_reconstruction": reconstruction_runs(profile), "kong_representations": representation_runs(profile)}
