"""The ``zhang_regime`` page's computations and the tables and sentences it assembles from them.

:func:`measure_throughput` and :func:`run_seed` compute the page's stored results ``throughput`` and
``curves_s<seed>`` (configs: :func:`maelab.papers.zhang2022.regime.throughput_config` and
:func:`~maelab.papers.zhang2022.regime.curves_config`). The rest only reads them (``curves``: the concatenated
``curves`` tables of :func:`~maelab.papers.zhang2022.regime.seed_curves`, random-init rows as variant
``"random"``) and formats what the page shows; every number in a sentence comes from the stored results and the
settings ``S``, none is typed by hand.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from maelab import data, models
from maelab._validate import ParameterError
from maelab.options import DryRunLimits

from . import regime as rg
from .settings import ZhangRegime

#: The metrics of the gain table, as pairs of a column of ``curves`` and the page's name for it.
GAIN_METRICS = (
    ("linear_acc", "linear probe, [CLS]"),
    ("linear_acc_mean", "linear probe, mean of patches"),
    ("knn_acc", "20-NN, [CLS]"),
    ("knn_acc_mean", "20-NN, mean of patches"),
)
#: The metrics of the U-MAE - MAE table, as triples of a column, a title and a scale (100 for accuracies in points).
GAP_METRICS = (
    ("linear_acc", "probe [CLS]", 100),
    ("linear_acc_mean", "probe mean", 100),
    ("knn_acc", "20-NN [CLS]", 100),
    ("effective_rank", "rank [CLS]", 1),
)


def _settings(S: Any) -> ZhangRegime:
    if not isinstance(S, ZhangRegime):
        raise ParameterError("S", "the zhang_regime page's ZhangRegime", type(S).__name__)
    return S


def _curves(curves: Any, *columns: str) -> pd.DataFrame:
    need = ("variant", "seed", "epoch", "images_seen", *columns)
    if any(c not in getattr(curves, "columns", ()) for c in need):
        raise ParameterError("curves", "a seed_curves table with columns " + ", ".join(need), type(curves).__name__)
    return curves


def images_per_epoch(S: ZhangRegime) -> int:
    """Training images one epoch sees (full batches only: the trainer drops the last partial batch)."""
    S = _settings(S)
    return (S.n_train // S.batch_size) * S.batch_size


def measure_throughput(S: ZhangRegime) -> dict[str, float]:
    """Training images per second of one MAE step (:func:`maelab.papers.zhang2022.regime.step_throughput`) per
    patch size in ``S.timing_patches``, on ``4 x batch_size`` training images; ``{"patch<p>": images / s}``."""
    S = _settings(S)
    imgs = data.load(S.dataset, "train", n=S.batch_size * 4, size=28, channels=1).images
    out = {}
    for p in S.timing_patches:
        spec = dataclasses.replace(rg.base_spec(S, p), model="mae")
        model = models.create("mae", S.size, img_size=28, in_chans=1, seed=0, **dict(spec.model_overrides))
        out[f"patch{p}"] = rg.step_throughput(model, imgs, S.batch_size, S.timing_steps)
    return out


def run_seed(
    S: ZhangRegime,
    seed: int,
    *,
    device: str = "cpu",
    progress: bool | None = None,
    caps: DryRunLimits | None = None,
) -> dict[str, Any]:
    """MAE and U-MAE of ``seed`` on the page's schedule, evaluated at ``S.curve_epochs``
    (:func:`maelab.papers.zhang2022.regime.seed_curves`, every epoch's weights kept)."""
    S = _settings(S)
    return rg.seed_curves(
        rg.base_spec(S),
        rg.variants(S),
        seed,
        S.curve_epochs,
        keep_epochs=range(S.epochs + 1),
        probe_n_train=S.probe_n_train,
        device=device,
        progress=progress,
        caps=caps,
    )


def throughput_table(S: ZhangRegime, thr: Mapping) -> pd.DataFrame:
    """Per timed patch size: tokens, visible tokens at ``S.mask_ratio`` and the measured training images / s."""
    S = _settings(S)
    rows = []
    for p in S.timing_patches:
        if f"patch{p}" not in thr:
            raise ParameterError("thr", f"measure_throughput's result with a 'patch{p}' entry", sorted(thr))
        rows.append(
            {
                "patch": p,
                "tokens": (28 // p) ** 2,
                "visible tokens": round((28 // p) ** 2 * (1 - S.mask_ratio)),
                "training images / s": round(thr[f"patch{p}"]),
            }
        )
    return pd.DataFrame(rows)


def with_init(curves: pd.DataFrame, variants: Mapping) -> pd.DataFrame:
    """``curves`` with every seed's random-init rows repeated as each of ``variants``: every method's curve starts
    at its seed's random-init snapshot (MAE and U-MAE of a seed start from the same weights)."""
    _curves(curves)
    init = curves[curves.variant == "random"]
    return pd.concat([curves] + [init.assign(variant=v) for v in variants], ignore_index=True)


def first_crossing(curves: pd.DataFrame, margin: float, metric: str = "linear_acc") -> str:
    """In words, the first snapshot at which MAE's ``metric`` beats its random init by more than ``margin`` in every
    seed (:func:`maelab.papers.zhang2022.regime.first_learned`), or "not within this budget"."""
    hit = rg.first_learned(curves, margin, metric=metric)
    return "not within this budget" if hit is None else f"after {hit[0]:,} images seen (epoch {hit[1]})"


def _end(curves: pd.DataFrame, S: ZhangRegime, variant: str) -> pd.DataFrame:
    end = curves[curves.epoch == S.curve_epochs[-1]]
    return end[end.variant == variant].set_index("seed")


def gain_table(curves: pd.DataFrame, S: ZhangRegime) -> pd.DataFrame:
    """MAE against the random-init encoder of the same seed, per metric of :data:`GAIN_METRICS`: the random-init and
    the last snapshot's accuracy (mean over seeds), the gain per seed and the first snapshots above random init and
    above it by more than ``S.margin`` (:func:`first_crossing`)."""
    S = _settings(S)
    _curves(curves, *(m for m, _ in GAIN_METRICS))
    seeds = list(S.seeds)
    rand = curves[curves.variant == "random"].set_index("seed")
    mae_end = _end(curves, S, "mae")
    images = S.curve_epochs[-1] * images_per_epoch(S)
    rows = []
    for metric, title in GAIN_METRICS:
        g = (mae_end[metric] - rand[metric]).loc[seeds]
        rows.append(
            {
                "MAE's": title,
                "random init (%)": f"{100 * rand[metric].mean():.1f}",
                f"MAE at {images:,} images (%)": f"{100 * mae_end[metric].mean():.1f}",
                "gain per seed (points)": ", ".join(f"{100 * x:+.1f}" for x in g),
                "first above random init": first_crossing(curves, 0.0, metric),
                f"first above by > {100 * S.margin:g} points": first_crossing(curves, S.margin, metric),
            }
        )
    return pd.DataFrame(rows)


def learning_answer(curves: pd.DataFrame, S: ZhangRegime, unmet: str) -> str:
    """The page's answer to "where does MAE learn?": the first snapshots at which the [CLS] probe is above its
    random init in every seed, and above it by the margin; whether the precondition holds at the last snapshot
    (``unmet``: :func:`maelab.papers.zhang2022.regime.learned_margin`'s reason, "" when it holds); and MAE's [CLS]
    effective rank at init, at its lowest and at the end (mean over seeds)."""
    S = _settings(S)
    _curves(curves, "effective_rank")
    hit0, hitm = rg.first_learned(curves, 0.0), rg.first_learned(curves, S.margin)
    answer = (
        "MAE's [CLS] probe is above its random init in every seed "
        + (f"from {hit0[0]:,} images seen (epoch {hit0[1]}) on" if hit0 else "at no snapshot of this budget")
        + f"; by more than the {100 * S.margin:g}-point margin "
        + (f"from {hitm[0]:,} images seen (epoch {hitm[1]})." if hitm else "at no snapshot of this budget.")
        + f" At the last snapshot the precondition {'holds' if not unmet else 'does not hold (' + unmet + ')'}."
    )
    full = with_init(curves, ["mae"])
    mr = full[full.variant == "mae"].groupby("epoch").effective_rank.mean()
    answer += (
        f" MAE's [CLS] effective rank (mean over seeds) is {mr.loc[0]:.1f} at init, {mr.min():.1f} at its lowest "
        f"(epoch {int(mr.idxmin())}) and {mr.loc[S.curve_epochs[-1]]:.1f} at the end."
    )
    return answer


def fit_table(fit: pd.DataFrame) -> pd.DataFrame:
    """:func:`maelab.papers.zhang2022.regime.margin_extrapolation`'s fit as the page shows it, one row per seed."""
    need = ("seed", "points", "slope_per_doubling", "last_images", "last_gain", "images_needed")
    if any(c not in getattr(fit, "columns", ()) for c in need):
        raise ParameterError("fit", "a margin_extrapolation table", type(fit).__name__)
    return pd.DataFrame(
        [
            {
                "seed": int(r.seed),
                "snapshots fitted": int(r.points),
                "slope (points per doubling of images)": f"{100 * r.slope_per_doubling:+.2f}",
                f"gain at {r.last_images:,} images (points)": f"{100 * r.last_gain:+.1f}",
                "images for the margin": "never (flat)"
                if not np.isfinite(r.images_needed)
                else f"{r.images_needed:,.0f}",
            }
            for r in fit.itertuples()
        ]
    )


def budget_table(fits: Mapping, S: ZhangRegime, step_ips: float, trainer_ips: float) -> tuple[pd.DataFrame, str]:
    """The training budget of the ``zhang_umae`` re-run per extrapolation window.

    ``fits``: ``{fit_points: margin_extrapolation(...)}`` (key None: all snapshots after initialisation, first);
    ``step_ips`` / ``trainer_ips``: training images per second by the step timing and by the trainer's log. Per
    window, the images per run every seed needs (the largest over seeds), that as a multiple of this page's runs,
    the minutes of the re-run's :func:`~maelab.papers.zhang2022.regime.rerun_runs` runs at both throughputs and
    whether they fit ``S.budget_minutes``. Returns the table and the page's sentence on it (the all-snapshot
    fit, then the range over windows; the fit is optimistic where the curve bends over).
    """
    S = _settings(S)
    if None not in fits:
        raise ParameterError("fits", "a mapping with the all-snapshot fit under key None", list(fits))
    n_runs, run_images = rg.rerun_runs(S), S.epochs * images_per_epoch(S)
    n_post = len(S.curve_epochs) - 1
    rows, needs, minutes = [], {}, {}
    for k, fit in fits.items():
        need = float(fit.images_needed.max())
        step_min = rg.training_minutes(need, step_ips, n_runs)
        needs[k], minutes[k] = need, rg.training_minutes(need, trainer_ips, n_runs)
        rows.append(
            {
                "fit": f"all {n_post} snapshots" if k is None else f"last {k} snapshots",
                "images per run (every seed)": "never (flat)" if not np.isfinite(need) else f"{need:,.0f}",
                f"× images of this page's runs ({run_images:,})": f"{need / run_images:.1f}",
                f"{n_runs} runs, min at {step_ips:,.0f} img/s (steps)": f"{step_min:,.0f}",
                f"{n_runs} runs, min at {trainer_ips:,.0f} img/s (trainer)": f"{minutes[k]:,.0f}",
                f"within {S.budget_minutes:g} min": "yes" if minutes[k] <= S.budget_minutes else "no",
            }
        )
    need_main, min_main = needs[None], minutes[None]
    if not np.isfinite(need_main):
        text = (
            "By the fit over all snapshots the [CLS] gain has stopped rising in at least one seed: no length "
            "of this schedule is predicted to reach the margin."
        )
    else:
        text = (
            f"By the fit over all snapshots, every seed clears the margin after about {need_main:,.0f} images "
            f"per run, {need_main / run_images:.1f} × this page's runs: {min_main:,.0f} min of "
            f"training for the {n_runs} runs of the re-run at the trainer's throughput, "
            + ("within" if min_main <= S.budget_minutes else "beyond")
            + f" the {S.budget_minutes:g}-min budget."
        )
    finite = [v for v in needs.values() if np.isfinite(v)]
    if finite:
        text += (
            f" Over the fit windows the estimate ranges from {min(finite):,.0f} to {max(finite):,.0f} images "
            f"per run ({rg.training_minutes(min(finite), trainer_ips, n_runs):,.0f} to "
            f"{rg.training_minutes(max(finite), trainer_ips, n_runs):,.0f} min): with at most {n_post} points "
            "per seed, the extrapolation is loose."
        )
    return pd.DataFrame(rows), text


def _paired(curves: pd.DataFrame, variants: Mapping) -> pd.DataFrame:
    return (
        curves[curves.variant.isin(list(variants))]
        .pivot_table(index=["seed", "epoch", "images_seen"], columns="variant")
        .reset_index()
    )


def _gap(d: np.ndarray, digits: int = 1) -> str:
    return f"{d.mean():+.{digits}f}" + (f" ± {d.std(ddof=1):.{digits}f}" if len(d) > 1 else "")


def gap_table(curves: pd.DataFrame, variants: Mapping) -> pd.DataFrame:
    """U-MAE - MAE per snapshot, paired by seed: mean ± standard deviation over seeds of each metric of
    :data:`GAP_METRICS` (accuracies in points, the rank in dimensions). ``variants``:
    ``maelab.papers.zhang2022.regime.variants``."""
    _curves(curves, *(m for m, _, _ in GAP_METRICS))
    rows = []
    for (epoch, images), g in _paired(curves, variants).groupby([("epoch", ""), ("images_seen", "")]):
        rec = {"images seen": f"{images:,}", "epoch": epoch}
        for metric, title, k in GAP_METRICS:
            rec[title] = _gap(k * (g[(metric, "umae")] - g[(metric, "mae")]).to_numpy())
        rows.append(rec)
    return pd.DataFrame(rows)


def gap_at_crossing(curves: pd.DataFrame, variants: Mapping) -> str:
    """In words: U-MAE - MAE on the [CLS] probe (points, mean ± s.d. over seeds) at the first snapshot where MAE's
    probe is above its random init in every seed, or why there is none."""
    _curves(curves, "linear_acc")
    hit0 = rg.first_learned(curves, 0.0)
    if hit0 is None:
        return (
            "MAE's [CLS] probe never rises above random init in every seed here, so there is no crossing to read "
            "the gap at."
        )
    pairs = _paired(curves, variants)
    g0 = pairs[pairs[("epoch", "")] == hit0[1]]
    d0 = 100 * (g0[("linear_acc", "umae")] - g0[("linear_acc", "mae")]).to_numpy()
    return (
        f"Where MAE's [CLS] probe first rises above random init in every seed ({hit0[0]:,} images), "
        f"U-MAE − MAE is {_gap(d0)} points."
    )


def recipe(S: ZhangRegime, timing: pd.DataFrame, unmet: str) -> str:
    """The recipe the page hands to ``zhang_umae`` (Markdown): the schedule of ``S``, whether the [CLS] precondition
    held at its end (``unmet``: "" when it did), and its measured cost from ``timing`` (the concatenated ``timing``
    tables of :func:`~maelab.papers.zhang2022.regime.seed_curves`: training minutes per run, evaluation minutes
    per snapshot)."""
    S = _settings(S)
    if any(c not in getattr(timing, "columns", ()) for c in ("train_seconds", "eval_seconds", "snapshots")):
        raise ParameterError("timing", "seed_curves' timing table (train_seconds, eval_seconds, snapshots)", None)
    images = S.epochs * images_per_epoch(S)
    text = (
        f"`zhang_umae` on {S.dataset} (28 px, 1 channel): `{S.size}` ViT, patch {S.patch_size}, official-code "
        f"choices, mask {S.mask_ratio:g}, batch {S.batch_size}, blr {S.blr:g} (peak lr "
        f"{S.blr * S.batch_size / 256:.2g}), {S.warmup_epochs:g} warm-up epoch(s), {S.n_train:,} images × "
        f"{S.epochs} epochs = {images:,} images seen per run, λ = {S.lam:g}, ≥ 3 seeds paired; "
        f"claims on the [CLS] probe gated by `learned_margin(margin={S.margin:g})` against each seed's random init"
    )
    run_min = float(timing.train_seconds.mean()) / 60
    eval_min_run = float((timing.eval_seconds / timing.snapshots).mean()) / 60
    cost = (
        f" Measured here: {run_min:.1f} min of training per run of {images:,} images (mean over the "
        f"{len(timing)} runs) and {eval_min_run:.1f} min per evaluated snapshot; training cost grows in proportion "
        "to images seen."
    )
    verdict = (
        "."
        if not unmet
        else " — at this length the [CLS] precondition fails (see above), so the re-run needs more images seen "
        "than this pilot, or its [CLS] claims stay inconclusive."
    )
    return "**Recipe.** " + text + verdict + cost
