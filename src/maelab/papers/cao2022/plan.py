"""Planned runs of the Cao, Xu & Clifton (2022) notebooks, for :mod:`maelab.cost` (``plans(profile)``).

Built from each profile's settings exactly as the notebook builds its runs (:func:`.trained.spec_for`):

* ``cao_decoder``: one micro MAE per variant (softmax, unnormalised kernel, scaled skip) and seed
  (:func:`maelab.papers.cao2022.trained.run_variant`: pre-training with the online probe; [CLS] features of
  ``n_probe`` training and all test images for the untrained and the trained encoder; the reconstruction loss of
  every epoch's weights on ``n_loss`` test images and of the untrained model; about four passes over the ``n_eval``
  analysis images), each counted as an unmasked forward (an over-count).
* ``cao_theory``: float64 linear algebra on the CPU, not modelled (about a minute).
"""

from __future__ import annotations

from ...cost import PlannedRun
from ...profiles import settings
from .trained import VARIANT_NAMES, spec_for


def decoder_runs(profile: str) -> list[PlannedRun]:
    """``cao_decoder``: every (variant, seed) run of the profile."""
    S = settings("cao_decoder", profile)
    runs = []
    for variant in VARIANT_NAMES:
        spec = spec_for(S, variant, 0)
        own = 2 * (S.n_probe + S.n_test) + (S.epochs + 2) * S.n_loss + 4 * S.n_eval
        extra = max(0, own - (S.n_train + S.n_test))  # from_spec already counts train + test features
        runs.append(
            PlannedRun.from_spec(
                spec,
                label=f"MAE {variant}",
                repeats=len(S.seeds),
                extra_eval_images=extra,
                pool=len(VARIANT_NAMES) * len(S.seeds),  # every run's record side by side (load_or_compute_many)
            )
        )
    return runs


def plans(profile: str) -> dict[str, list[PlannedRun]]:
    """``{notebook: planned runs}`` of this paper's notebooks in ``profile``."""
    return {"cao_decoder": decoder_runs(profile)}
