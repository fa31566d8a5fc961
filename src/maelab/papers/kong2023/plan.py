"""Planned runs of the Kong et al. (2023) notebooks, for :mod:`maelab.cost` (``plans(profile)``).

Built from each profile's settings exactly as the notebooks build their zoos (:mod:`maelab.zoo`,
:mod:`maelab.papers.kong2023.zoo`):

* ``kong_reconstruction``: the shared zoo's pre-training (:mod:`maelab.zoo`; one :class:`~maelab.cost.PlannedRun`
  per (ratio, unit), repeated per seed, with the trainer's online evaluation); its measurements per entry (two
  pools' feature passes of the train and test images, unmasked and masked reconstructions of ``n_score`` images,
  two loss passes, each counted as one unmasked forward) are added as evaluation images, and its two pools'
  probes (``probe_method``; ``logreg_torch`` on the entry's device) and k-NN as jobs. The zoo is computed
  once for every page that reads it; it is planned here, on the first page that computes it. ``kong_theory``
  trains nothing.
* ``kong_representations``: the pre-training of its ``shapes`` zoo (:mod:`maelab.papers.kong2023.zoo`; the rows
  that need known latents) and, per encoder (that zoo and the random init, per seed), the feature passes of the
  probe images, the shifts, the cue-conflict images and the attention / token images; the shared zoo's ink
  measurements are small beside them and the shared zoo itself is planned on ``kong_reconstruction``.
"""

from __future__ import annotations

from ... import models, result_keys
from ... import zoo as core_zoo
from ...cost import PlannedRun
from ...profiles import settings
from . import zoo


def reconstruction_runs(profile: str) -> list[PlannedRun]:
    S = settings("kong_reconstruction", profile)
    measuring = 2 * (S.n_train + S.n_test) + 4 * S.n_score
    return [
        PlannedRun.from_spec(
            core_zoo.spec(S, r, u, S.seeds[0]),
            label=f"MAE {core_zoo.label(r, u)}",
            repeats=len(S.seeds),
            extra_eval_images=measuring,
            finetune_epochs=0,
            pools=len(core_zoo.POOLS),
            probe_kind=S.probe_method,
            probe_on_device=S.probe_method == "logreg_torch",  # zoo.measure_entry fits them where the model is
            pool=len(core_zoo.configs(S)) * len(S.seeds),  # zoo.compute hands maelab.prefetch every entry
        )
        for r, u in core_zoo.configs(S)
    ]


def representation_runs(profile: str) -> list[PlannedRun]:
    S = settings("kong_representations", profile)
    training = [
        PlannedRun.from_spec(
            zoo.spec(S, r, u, S.seeds[0]),
            label=f"shapes MAE {zoo.label(r, u)}",
            repeats=len(S.seeds),
            finetune_epochs=0,
            pool=len(zoo.configs(S)),  # one seed's entries side by side (zoo.measure_seed: maelab.prefetch)
        )
        for r, u in zoo.configs(S)
    ]
    per_encoder = (
        S.n_probe_train + S.n_probe_test * (1 + len(S.shifts)) + S.n_cue_conflict + S.n_attention + 2 * S.n_token_images
    )
    return training + [
        PlannedRun(
            "frozen encoders (zoo + random init)",
            size=S.size,
            overrides=tuple(sorted(result_keys.OFFICIAL_CHOICES.items())),
            img_size=models.SIZES[S.size]["img_size"],
            channels=3,
            eval_images=per_encoder,
            repeats=len(S.seeds) * (len(zoo.configs(S)) + 1),
        )
    ]


def plans(profile: str) -> dict[str, list[PlannedRun]]:
    """``{notebook: planned runs}`` of this paper's trained-model notebooks in ``profile``."""
    return {"kong_reconstruction": reconstruction_runs(profile), "kong_representations": representation_runs(profile)}
