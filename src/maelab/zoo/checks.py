"""The zoo's learning check (:func:`~maelab.zoo.reconstruction_checks`) and a page's own measurement of its
checkpoints, each model with its own check (:func:`~maelab.zoo.measure_checkpoints`, read back by
:func:`~maelab.zoo.checkpoint_checks`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import partial

from .. import parts
from .. import reconstruction as rc
from .._validate import ParameterError
from ..claims import ReconstructionCheck
from ..options import cap
from ..prefetch import prefetch
from .grid import LOSS_MARGIN, RANDOM_INIT, ZooSettings, data, label, random_init, spec, trained_model


def measure_checkpoints(M: ZooSettings, table: str, row, device="cpu", *, caps=None, with_random: bool = False) -> dict:
    """A page's own measurement of the unit-1 checkpoints of ``M`` (:func:`measured`): ``{table: DataFrame}``, a row
    per model and seed (``model``, ``seed``, ``row(model, ratio, seed, tr, te)``; ``with_random``: also each seed's
    random init, ratio None), one part per seed (:func:`maelab.parts.concat_frames`). Each trained row holds its
    model's own learning check (``loss``, ``reference_loss``, ``patch_mean_loss`` as in :func:`measure_entry`), which
    gates the rows read from the table: a checkpoint re-made on another CPU or card is another model (same seed and
    data order, other floating point: on a second CPU the online probe after training moved by points)."""
    import pandas as pd

    tr, te = data(M, device)
    images = te.images[: cap(M.n_score, caps, "eval_images")]

    def one_seed(s: int) -> dict:
        out = []
        for r in [float(r) for r in M.mask_ratios]:
            model = trained_model(M, r, 1, s, device, train_data=tr, test_data=te, caps=caps)
            check = rc.masked_patch_losses(model, random_init(M, s, device), images, r, seed=s)
            out.append({"model": label(r, 1), "seed": s, **row(model, r, s, tr, te), **check})
        if with_random:
            out.append({"model": RANDOM_INIT, "seed": s, **row(random_init(M, s, device), None, s, tr, te)})
        return {table: pd.DataFrame(out)}

    def pool(c: dict) -> None:  # a seed not stored: its unit-1 models to the pre-training pool (a lent GPU)
        prefetch([spec(M, r, 1, c["seed"]) for r in M.mask_ratios], device=str(device), caps=caps)

    return parts.concat_frames([(f"s{s}", {"seed": int(s)}, partial(one_seed, int(s))) for s in M.seeds], pool)


_CHECK_COLUMNS = ["model", "seed", "loss", "reference_loss", "patch_mean_loss"]


def _columns(table, name: str) -> None:
    if missing := [c for c in _CHECK_COLUMNS if c not in getattr(table, "columns", ())]:
        raise ParameterError(name, f"a table with columns {_CHECK_COLUMNS}", f"missing {missing}")


def reconstruction_checks(entries, margin: float = LOSS_MARGIN) -> tuple[ReconstructionCheck, ...]:
    """The learning check of zoo models: one :class:`maelab.claims.ReconstructionCheck` per trained model of
    ``entries`` (the frame of :func:`load_entries`, or any frame with its columns ``model``, ``seed``, ``loss``,
    ``reference_loss``, ``patch_mean_loss``; random-init rows are skipped), in order of first appearance, its runs
    the model's seeds. Met when in every seed the model's masked-patch test loss (``loss``: its own objective under
    its own masking) is at most ``1 - margin`` times the smaller of the same architecture's loss at random
    initialisation (``reference_loss``) and the loss of predicting every patch's own mean (``patch_mean_loss``),
    under the same masks (:func:`maelab.reconstruction.masked_patch_losses`).

    A check on the pretext task, for rows that read something else (a probe, a Jacobian, a reconstruction score):
    a row must not be gated on the quantity it measures. A ratio exactly ``1 - margin`` passes (``<=``, the
    engine's convention)."""
    _columns(entries, "entries")
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 <= margin < 1:
        raise ParameterError("margin", "a number in [0, 1) (0.05: a 5 % drop)", margin)
    trained = entries[entries.model != RANDOM_INIT]
    if trained.empty:
        raise ParameterError("entries", "rows of at least one trained model", "only random-init rows")
    return tuple(
        ReconstructionCheck(
            what=f"MAE {model}, masked-patch test loss",
            loss=tuple(float(v) for v in g.loss),
            reference=tuple(float(min(a, b)) for a, b in zip(g.reference_loss, g.patch_mean_loss)),
            runs=tuple(f"seed {s}" for s in g.seed),
            reference_name="the better of random init and the patch-mean predictor",
            max_ratio=1 - margin,
        )
        for model, g in trained.groupby("model", sort=False)
    )


def checkpoint_checks(
    table, models: Sequence[str], seeds: Sequence[int], margin: float = LOSS_MARGIN
) -> tuple[ReconstructionCheck, ...]:
    """The learning checks of the zoo's ``models`` (:func:`label`) at ``seeds`` as measured on the checkpoints a page
    read (``table``: a frame of :func:`measure_checkpoints`, each trained row with its model's own ``loss``,
    ``reference_loss`` and ``patch_mean_loss``): :func:`reconstruction_checks` of those rows, in the order of
    ``models``, each named "..., its checkpoint measured here". The gate of the rows read from ``table``: a re-made
    checkpoint is not the model of the zoo's entry record, so that record's check does not vouch for it."""
    _columns(table, "table")
    order, seeds = list(models), [int(s) for s in seeds]
    t = table[table.model.isin(order) & table.seed.isin(seeds)]
    have = set(zip(t.model, t.seed.astype(int)))
    if missing := [f"{m} seed {s}" for m in order for s in seeds if (m, s) not in have]:  # a gate never skips one
        raise ParameterError("table", "a row for every named model and seed", "missing " + ", ".join(missing))
    t = t.sort_values("model", key=lambda m: m.map(order.index), kind="stable")
    return tuple(
        dataclasses.replace(c, what=c.what + ", its checkpoint measured here") for c in reconstruction_checks(t, margin)
    )
