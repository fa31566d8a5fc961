"""The evidence of the synthesis rows, from the shared zoo's entries (:func:`maelab.zoo.load_entries`) and the
page's geometry measurements (:func:`maelab.papers.synthesis.geometry.geometry_row`, one row per model and seed).

Every row is gated by the pretext task, never by the quantity it measures: each model the row compares must pass
the reconstruction check of the Kong page (its masked-patch test loss at most ``1 - loss_margin`` times the better
of random init and the patch-mean predictor, every seed; :func:`maelab.zoo.reconstruction_checks`; for the rows
measured on the checkpoints, the check of the checkpoint measured). Series rows
(``Monotone``) take the per-seed values at each ratio (unit 1), kept per seed so each step is tested on the per-seed
differences (the zoo's runs are paired by seed), paired rows the per-seed differences; every row carries the zoo's
looks at its seeds (:func:`maelab.zoo.looks`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats

from ..._validate import ParameterError
from ...claims import Evidence, ReconstructionCheck, unmet_of
from ...zoo import checkpoint_checks, looks, reconstruction_checks

__all__ = ["per_seed", "synthesis_rows"]


def per_seed(frame, column: str, models: Sequence[str], seeds: Sequence[int]) -> np.ndarray:
    """(seeds, models) table of ``column`` (one row per seed, columns in ``models`` order); one-line error when a
    (model, seed) is missing or duplicated."""
    if column not in frame.columns:
        raise ParameterError("frame", f"a table with column {column!r}", sorted(frame.columns))
    t = frame[frame.model.isin(list(models)) & frame.seed.isin(list(seeds))]
    if t.duplicated(["model", "seed"]).any():
        raise ParameterError("frame", "one row per (model, seed)", "duplicates")
    p = t.pivot(index="seed", columns="model", values=column).reindex(index=list(seeds), columns=list(models))
    if p.isna().to_numpy().any():
        raise ParameterError("frame", f"{column} for every model and seed", "missing values")
    return p.to_numpy(dtype=float)


def _spearman_per_seed(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman's rho of each row pair; NaN (no warning) where a row is constant: no ranking to correlate."""
    return np.array(
        [np.nan if np.ptp(x) == 0 or np.ptp(y) == 0 else stats.spearmanr(x, y).statistic for x, y in zip(a, b)]
    )


def synthesis_rows(
    entries, geometry, mask_ratios, units, unit_ratio: float, seeds, loss_margin: float, *, geometry_seeds=None
) -> tuple[dict[str, Evidence], tuple[ReconstructionCheck, ...]]:
    """Every row of the synthesis page and the checks that gate them (see the module docstring and
    :mod:`maelab.papers.synthesis.claims` for what each row says). The rows of the zoo records read ``seeds``;
    the ``geometry`` rows read ``geometry_seeds`` (default ``seeds``: the seeds whose checkpoints were measured,
    :func:`maelab.zoo.measured`), each at the zoo's looks at its own seeds, and are gated by the checks of the
    checkpoints measured (``geometry``'s own loss columns, :func:`maelab.zoo.checkpoint_checks`),
    the others by the entry records' checks. Returns (rows, entry checks + checkpoint checks)."""
    ratios = [float(r) for r in mask_ratios]
    ratio_models = [f"r{r:g} u1" for r in ratios]
    unit_models = [f"r{unit_ratio:g} u{u}" for u in units]
    seeds = list(seeds)
    trained = entries[entries.model.isin(ratio_models + unit_models)]
    checks = reconstruction_checks(trained, loss_margin)
    by_model = {c.what.split(",")[0].removeprefix("MAE "): c for c in checks}
    u_ratio = unmet_of(*(by_model[m] for m in ratio_models))
    u_unit = unmet_of(*(by_model[m] for m in unit_models[:2]))
    acc = per_seed(entries, "linear_acc_cls", ratio_models, seeds)
    interior = [i for i, r in enumerate(ratios) if min(ratios) < r < max(ratios)]
    extremes = [ratios.index(min(ratios)), ratios.index(max(ratios))]
    rank = per_seed(entries, "effective_rank_cls", ratio_models, seeds)
    rise = [i for i, r in enumerate(ratios) if r <= unit_ratio + 1e-9]
    psnr = per_seed(entries, "psnr", ratio_models, seeds)
    uacc = per_seed(entries, "linear_acc_cls", unit_models[:2], seeds)
    note = f"{len(seeds)} seeds, unit 1"
    lk = looks(seeds)
    rows = {
        "synth.probe_interior": Evidence.from_samples(
            acc[:, interior].mean(axis=1) - acc[:, extremes].mean(axis=1),
            note="[CLS] probe, " + note,
            unmet=u_ratio,
            looks=lk,
        ),
        "synth.rank_tracks_probe": Evidence.from_samples(
            _spearman_per_seed(rank, acc), note="Spearman rho over the ratios, " + note, unmet=u_ratio, looks=lk
        ),
        "synth.psnr_falls_ratio": Evidence.from_series(
            [ratios[i] for i in rise],
            psnr[:, rise],
            note="dB, unmasked test images, " + note,
            unmet=u_ratio,
            paired=True,
            looks=lk,
        ),
        "synth.unit_raises_probe": Evidence.from_samples(
            uacc[:, 1] - uacc[:, 0],
            note=f"[CLS] probe, unit {units[1]} minus 1 at ratio {unit_ratio:g}",
            unmet=u_unit,
            looks=lk,
        ),
    }
    if geometry is not None:
        gseeds = seeds if geometry_seeds is None else list(geometry_seeds)
        gchecks = checkpoint_checks(geometry, ratio_models, gseeds, loss_margin)
        for cid, col, what in (
            ("synth.jacobian_spread_ratio", "jac_spread", "pixels, common masks"),
            ("synth.attention_distance_ratio", "attn_distance", "tokens, last layer"),
        ):
            y = per_seed(geometry, col, ratio_models, gseeds)
            gnote = f"{what}, {len(gseeds)} seeds, unit 1"
            rows[cid] = Evidence.from_series(
                ratios, y, note=gnote, unmet=unmet_of(*gchecks), paired=True, looks=looks(gseeds)
            )
        checks = checks + gchecks
    return rows, checks
