"""One learned zoo of MAEs that every page reads: mask ratio x masking unit x seed on one real dataset.

Every entry is pre-trained by :func:`maelab.experiments.pretrain` with the official MAE recipe (norm-pix loss,
``maelab.result_keys.OFFICIAL_CHOICES``) and measured once by :func:`measure_entry`; the measurements are one store
record per entry (notebook ``zoo``, name :func:`entry_name`, e.g. ``r0p75_u1_s0``), so the zoo accumulates run by
run and across machines, and pages read the records without the checkpoints. The grid (:func:`configs`): every
ratio of ``mask_ratios`` at masking unit 1, and every unit of ``units`` at ``unit_ratio`` (unit 1 there is the
ratio row's model). The masking unit is decoupled from the ViT patch, as Kong et al. do: the model masks
``unit x unit`` token blocks (``mask_unit``).

**Pairing.** All entries of one seed start from the same weights (``maelab.models.create(seed=...)`` does not
depend on the mask ratio or unit) and see the same images in the same order (the trainer's data order depends on
the seed only), so differences between entries of a seed are paired.

**Reuse.** A unit-1 entry's spec carries no ``mask_unit`` (the model's default), so it equals the spec of any
other page's plain MAE with the same recipe: its checkpoint (cached by
:attr:`~maelab.experiments.PretrainSpec.key`) is loaded, never re-trained.

**What each entry stores** (:func:`measure_entry`): the training history; per pooling ([CLS], mean of the patch
tokens) the linear probe (``probe_method``), 20-NN accuracy and effective rank of the test features; the scores of
:func:`maelab.reconstruction.score_model` on the first ``n_score`` test images and the masked-patch losses of the
model, of its random init and of the patch-mean predictor under the same masks: the learning check
(:func:`reconstruction_checks`); the reconstructions of ``N_EXAMPLES`` test images. ``random_s<seed>`` and
``raw_pixels`` are the baselines every probe is read against. A page's own measurement of the checkpoints
(:func:`measure_checkpoints`) stores each model's check with it.

**Two looks.** The cpu zoo was first analysed at seeds 0-2 (claims records up to commit 88299d7); seeds 3-5 were
added after that look, so a page that reads them passes ``looks(S.seeds) == 2`` and the engine tests those rows at
ALPHA / 2 (:data:`maelab.claims.POLICY`), a rule fixed in code, with the paired trend test, before seeds 3-5 were read.

Run the whole grid: ``python -m maelab.zoo run --profile cpu`` (each finished entry is a complete record; an
interrupted run resumes from its checkpoint); ``python -m maelab.zoo status --profile cpu`` lists what is stored.

Layout: :mod:`~maelab.zoo.grid` (settings, pairs, names, specs, data, models), :mod:`~maelab.zoo.entries` (the
store records: measure, compute, load), :mod:`~maelab.zoo.checks` (the learning check, a page's measurement of the
checkpoints and their checks), :mod:`~maelab.zoo.cli` (``python -m maelab.zoo``); this package re-exports their
public API.
"""

from __future__ import annotations

from .checks import checkpoint_checks, measure_checkpoints, reconstruction_checks
from .cli import main
from .entries import (
    compute,
    entry,
    fingerprint,
    load_entries,
    measure_entry,
    pending_specs,
    random_entry,
    raw_pixel_entry,
)
from .grid import (
    FIRST_LOOK_SEEDS,
    LOSS_MARGIN,
    N_EXAMPLES,
    NOTEBOOK,
    POOLS,
    RANDOM_INIT,
    ZooSettings,
    configs,
    data,
    entry_name,
    label,
    looks,
    measured,
    random_init,
    spec,
    trained_model,
)

__all__ = [
    "NOTEBOOK",
    "FIRST_LOOK_SEEDS",
    "ZooSettings",
    "looks",
    "measured",
    "configs",
    "label",
    "entry_name",
    "spec",
    "data",
    "random_init",
    "trained_model",
    "measure_checkpoints",
    "measure_entry",
    "entry",
    "random_entry",
    "raw_pixel_entry",
    "compute",
    "fingerprint",
    "load_entries",
    "RANDOM_INIT",
    "LOSS_MARGIN",
    "reconstruction_checks",
    "checkpoint_checks",
    "pending_specs",
    "N_EXAMPLES",
    "POOLS",
    "main",
]
