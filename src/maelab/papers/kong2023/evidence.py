"""The evidence of every Kong et al. claim row, derived from the stored results of its page.

The notebooks ``kong_theory``, ``kong_reconstruction`` and ``kong_representations`` only load or compute their
results and pass them here; each function below builds the :class:`maelab.claims.Evidence` of one family of claim
rows (the ids are those of :mod:`maelab.papers.kong2023.claims`), so what the scoreboard judges is derived by tested
library code, not by notebook cells. The ``*_rows`` functions take a page's results and settings and return every
row of the page (and the learning checks that gate them, which the pages show).

* ``kong_theory`` (exact computations, no precondition): :func:`fig4_levels`, :func:`unit_level_trend`,
  :func:`ratio_extremes`, :func:`theorem2_rows`; all of them: :func:`theory_rows`.
* ``kong_reconstruction`` (Fig. 5): the precondition :func:`maelab.zoo.reconstruction_checks` (one
  :class:`maelab.claims.ReconstructionCheck` per model, with the page's ``loss_margin``), the trends
  :func:`fig5_trend` (``Monotone`` rows over the per-seed series, paired by seed) and the paired differences
  :func:`fig5_high_ratio`; all of them: :func:`reconstruction_rows`, at the zoo's looks
  (:func:`maelab.zoo.looks`).
* ``kong_representations`` (Tables 1-3, Figs 6-8): the precondition :func:`maelab.zoo.reconstruction_checks` of the
  compared ``shapes`` models (the pretext task, not the level the rows measure; :func:`learned_check`, the
  ``unit_ratio`` model's class probe against its random init, is shown beside it), then per-seed paired differences
  between encoders (:func:`paired_gap`): :func:`table1_gaps`, :func:`shape_bias_gaps`, :func:`latent_level_gaps`,
  :func:`attention_gap`, :func:`token_gap`; all of them: :func:`representation_rows`.

Tables are the pages' stored pandas DataFrames: the ``table`` of :func:`.theory.sweep` and of
:func:`.linear_gaussian.theorem2_experiment`, the ``scores`` of every seed of ``kong_reconstruction`` and the ``rows``
of every seed of ``kong_representations`` (concatenated over seeds, random-init rows included).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..._validate import ParameterError, one_of
from ...claims import Evidence, LearnedCheck, ReconstructionCheck, unmet_of
from ...zoo import checkpoint_checks, looks, reconstruction_checks
from . import theory as th
from . import zoo
from .representations import LOW_LEVEL_CONTINUOUS
from .settings import EXTREMES

__all__ = [
    "series_stats",
    "fig4_levels",
    "unit_level_trend",
    "ratio_extremes",
    "theorem2_rows",
    "theory_rows",
    "fig5_trend",
    "fig5_high_ratio",
    "reconstruction_rows",
    "learned_check",
    "paired_gap",
    "table1_gaps",
    "shape_bias_gaps",
    "latent_level_gaps",
    "attention_gap",
    "token_gap",
    "representation_rows",
    "zoo_representation_rows",
]

RANDOM_INIT = "random init"  # the model name of the random-init rows of the trained-model pages


def _need(frame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ParameterError(what, f"a table with columns {list(columns)}", f"missing {missing}")


def series_stats(frame, by: str, column: str):
    """Per value of ``by`` (sorted): the ``mean`` of ``column``, its standard error over the rows (sample std with
    ddof 1 / sqrt(n); 0 where a point has one value) and ``n``, the values behind it (NaN not counted).

    Returns a DataFrame indexed by ``by`` with columns ``mean``, ``sem``, ``n``: the points, error bars and degrees
    of freedom of a series over seeds (the page's plots and :func:`fig5_trend` read the same numbers). Not
    :func:`maelab.metrics.mean_sem`, which takes an array and gives NaN for one value: a point of one seed here has
    s.e. 0, which :class:`maelab.claims.Monotone` reads as a point without spread."""
    import pandas as pd

    _need(frame, [by, column], "frame")
    g = frame.groupby(by)[column]
    n = g.count()
    return pd.DataFrame({"mean": g.mean(), "sem": (g.std(ddof=1) / np.sqrt(n)).fillna(0.0), "n": n})


# ------------------------------------------------------------------------------------------------- kong_theory
def fig4_levels(figure4: Mapping[str, Mapping]) -> dict[str, Evidence]:
    """``kong.fig4_low`` / ``_moderate`` / ``_extreme``: the level of the most abstract node of c (``min_level``)
    for the low, moderate and extreme masks of Figure 4 (``figure4``: the page's result, panel name -> a mapping
    with ``min_level``). Exact values, no spread."""
    out = {}
    for panel in ("low", "moderate", "extreme"):
        if panel not in figure4 or "min_level" not in figure4[panel]:
            raise ParameterError("figure4", "panels 'low', 'moderate', 'extreme', each with a 'min_level'", figure4)
        out[f"kong.fig4_{panel}"] = Evidence(value=float(figure4[panel]["min_level"]), note="exact")
    return out


def unit_level_trend(table, mask_ratio: float, quadtree_side: int) -> Evidence:
    """``kong.thm1_unit_level``: the mean level of c over random masks at ``mask_ratio`` against the masking unit
    (:func:`.theory.unit_trend` of a :func:`.theory.sweep` table on a quadtree of side ``quadtree_side``): ``y`` the
    mean over seeds, ``y_err`` its standard error, ``y_n`` the seeds behind each point."""
    return Evidence(**th.unit_trend(table, mask_ratio), note=f"quadtree {quadtree_side}, ratio {mask_ratio}")


def ratio_extremes(table, mid: float, extremes: Sequence[float] = EXTREMES) -> Evidence:
    """``kong.thm1_ratio_extremes``: per seed, the min over the ``extremes`` ratios of [mean level of c there − at
    ``mid``], averaged over units (:func:`.theory.ratio_extreme_gaps`); one sample per seed."""
    return Evidence.from_samples(th.ratio_extreme_gaps(table, mid=mid, extremes=extremes), note="levels, per seed")


def theorem2_rows(table, n_samples: int | None = None) -> dict[str, Evidence]:
    """``kong.thm2_cc_c`` / ``_cc_s`` / ``_sampled`` from a :func:`.linear_gaussian.theorem2_experiment` table.

    From the encoders fitted on the exact covariances (``fit == "population"``): the largest 1 − (smallest canonical
    correlation with c) and the largest canonical correlation with the noises of s_mc, over masks, graphs and seeds
    (exact values). From the encoders fitted on ``n_samples`` samples (default: the largest sample size in the
    table): per seed, the smallest canonical correlation with c over masks and graphs."""
    _need(table, ["fit", "n_samples", "seed", "min_cc_c", "max_cc_s_mc"], "table")
    pop = table[table.fit == "population"]
    sampled = table[table.fit == "sampled"]
    if pop.empty or sampled.empty:
        raise ParameterError("table", "rows fitted on the population and on samples", sorted(set(table.fit)))
    n = int(sampled.n_samples.max()) if n_samples is None else n_samples
    big = sampled[sampled.n_samples == n]
    if big.empty:
        raise ParameterError("n_samples", f"a sample size of the table {sorted(set(sampled.n_samples))}", n_samples)
    return {
        "kong.thm2_cc_c": Evidence(value=float((1 - pop.min_cc_c).max()), note="exact covariances"),
        "kong.thm2_cc_s": Evidence(value=float(pop.max_cc_s_mc.max()), note="exact covariances"),
        "kong.thm2_sampled": Evidence.from_samples(big.groupby("seed").min_cc_c.min(), note=f"n = {n}"),
    }


def theory_rows(figure4: Mapping, level_table, theorem2_table, settings) -> dict[str, Evidence]:
    """Every claim row of ``kong_theory`` from its results (``settings``: a ``KongTheorySettings``)."""
    return {
        **fig4_levels(figure4),
        "kong.thm1_unit_level": unit_level_trend(level_table, settings.claim_ratio, settings.quadtree_side),
        "kong.thm1_ratio_extremes": ratio_extremes(level_table, settings.claim_ratio),
        **theorem2_rows(theorem2_table, max(settings.lg_n_samples)),
    }


# ------------------------------------------------------------------------------------------ kong_reconstruction
def _trained(scores):
    _need(scores, ["model", "ratio", "unit", "seed"], "scores")
    return scores[scores.model != RANDOM_INIT]


def fig5_trend(
    scores,
    metric: str,
    along: str,
    xs: Sequence[float],
    *,
    unit_ratio: float = 0.75,
    note: str = "",
    unmet: str = "",
    looks: int = 1,
) -> Evidence:
    """A Fig.-5 trend (``Monotone`` rows): ``metric`` of the unmasked reconstructions against the mask ratio
    (``along="ratio"``, the models at masking unit 1) or the masking unit (``along="unit"``, the models at
    ``unit_ratio``), at the values ``xs`` only, one row per seed: the zoo's runs are paired by seed (same initial
    weights and data order at every point), so the series keeps the per-seed rows (``Evidence.from_series`` with
    ``paired=True``) and each step is tested on the per-seed differences. Every seed must have every point.
    ``looks``: the zoo's looks at these seeds (:func:`maelab.zoo.looks`)."""
    one_of("along", along, ("ratio", "unit"))
    one = _trained(scores)
    _need(one, [metric], "scores")
    frame = one[one.unit == 1] if along == "ratio" else one[np.isclose(one.ratio, unit_ratio)]
    frame = frame[frame[along].isin(list(xs))]
    if frame.empty:
        raise ParameterError("xs", f"values of {along} present in the scores", tuple(xs))
    table = frame.pivot_table(index="seed", columns=along, values=metric, aggfunc="first")
    if table.isna().to_numpy().any():
        bad = [int(s) for s in table.index[table.isna().any(axis=1)]]
        raise ParameterError("scores", f"{metric} at every {along} of {list(table.columns)} in every seed", bad)
    return Evidence.from_series(table.columns, table.to_numpy(), note=note, unmet=unmet, paired=True, looks=looks)


def fig5_high_ratio(
    scores, metric: str, high: float, mid: float, *, note: str = "", unmet: str = "", looks: int = 1
) -> Evidence:
    """A Fig.-5 paired row: per seed, ``metric`` of the model trained at mask ratio ``high`` minus that at ``mid``
    (both at masking unit 1), on unmasked reconstructions. ``neg_mse`` gives MSE(mid) − MSE(high)."""
    one = _trained(scores)
    _need(one, [metric], "scores")
    pair = one[one.unit == 1].pivot_table(index="seed", columns="ratio", values=metric)
    for r in (high, mid):
        if r not in pair.columns:
            raise ParameterError("high, mid", f"mask ratios at unit 1 in the scores {list(pair.columns)}", r)
    d = (pair[high] - pair[mid]).to_numpy()
    if np.isnan(d).any():
        raise ParameterError("scores", f"both ratios {mid} and {high} in every seed", list(pair.index[np.isnan(d)]))
    return Evidence.from_samples(d, note=note, unmet=unmet, looks=looks)


def reconstruction_rows(scores, settings) -> tuple[dict[str, Evidence], tuple[ReconstructionCheck, ...]]:
    """Every claim row of ``kong_reconstruction`` from the scores of all its seeds (``settings``: a
    ``KongReconstructionSettings``), each gated by :func:`maelab.zoo.reconstruction_checks` with the page's
    ``loss_margin``; returns (rows, checks). The FSIM row is left out where the scores have no FSIM (``fsim=False``).
    Every row carries the zoo's looks at ``settings.seeds`` (:func:`maelab.zoo.looks`)."""
    S = settings
    checks = reconstruction_checks(scores, S.loss_margin)
    unmet = unmet_of(*checks)
    note = f"{len(S.seeds)} seeds, {S.n_score} unmasked test images"
    rise = [r for r in S.mask_ratios if r <= S.unit_ratio + 1e-9]
    lk = looks(S.seeds)
    kw = {"unit_ratio": S.unit_ratio, "note": note, "unmet": unmet, "looks": lk}
    rows = {}
    for cid, col in (("kong.fig5_ssim_ratio", "ssim"), ("kong.fig5_fsim_ratio", "fsim")):
        if col in scores.columns:
            rows[cid] = fig5_trend(scores, col, "ratio", rise, **kw)
    hi = max(S.mask_ratios)
    pw = {"unmet": unmet, "looks": lk}
    rows["kong.fig5_psnr_090"] = fig5_high_ratio(scores, "psnr", hi, S.unit_ratio, note="dB, " + note, **pw)
    rows["kong.fig5_negmse_090"] = fig5_high_ratio(scores, "neg_mse", hi, S.unit_ratio, note=note, **pw)
    rows["kong.fig5_ssim_unit"] = fig5_trend(scores, "ssim", "unit", S.units, **kw)
    rows["kong.fig5_psnr_unit"] = fig5_trend(scores, "psnr", "unit", S.units, **kw)
    return rows, checks


# ----------------------------------------------------------------------------------------- kong_representations
def _per_seed(rows, model: str, columns: Sequence[str], seeds: Sequence[int]):
    g = rows[rows.model == model]
    if g.empty:
        raise ParameterError("rows", f"rows of model {model!r}", sorted(set(rows.model)))
    g = g.set_index("seed")
    if g.index.has_duplicates or any(s not in g.index for s in seeds):
        raise ParameterError("rows", f"one row of {model!r} for each seed {list(seeds)}", list(g.index))
    g = g.loc[list(seeds)]
    return g[columns[0]] if len(columns) == 1 else g[list(columns)].mean(axis=1)


def paired_gap(rows, columns, high: Sequence[str], low: Sequence[str], seeds: Sequence[int]) -> np.ndarray:
    """Per seed (in the order of ``seeds``): the mean over the ``high`` models minus the mean over the ``low``
    models of ``columns`` (one column name, or several: their mean per model and seed first)."""
    cols = [columns] if isinstance(columns, str) else list(columns)
    _need(rows, ["model", "seed", *cols], "rows")
    if not high or not low:
        raise ParameterError("high, low", "non-empty lists of model names", (high, low))
    hi = [_per_seed(rows, m, cols, seeds).to_numpy() for m in high]
    lo = [_per_seed(rows, m, cols, seeds).to_numpy() for m in low]
    return np.mean(hi, axis=0) - np.mean(lo, axis=0)


def learned_check(rows, model: str, seeds: Sequence[int], margin: float, pool: str = "cls") -> LearnedCheck:
    """The precondition of every representation row: in every seed, the class probe (``class_acc``) of ``model``
    (the ``unit_ratio`` encoder) beats the same architecture at random initialisation (same seed) by more than
    ``margin`` (a :class:`maelab.claims.LearnedCheck`)."""
    probe = "[CLS] linear probe" if pool == "cls" else f"{pool}-pooled linear probe"
    return LearnedCheck(
        f"MAE {model}, shapes, {probe}",
        trained=tuple(_per_seed(rows, model, ["class_acc"], seeds)),
        random_init=tuple(_per_seed(rows, RANDOM_INIT, ["class_acc"], seeds)),
        seeds=tuple(seeds),
        margin=margin,
    )


def table1_gaps(
    rows, mid: str, low: str, high: str, shifts: Sequence[str], seeds: Sequence[int], unmet: str = ""
) -> dict[str, Evidence]:
    """Table 1: per seed, the class-probe accuracy of ``mid`` minus ``low`` (``kong.tab1_probe_075_010``) and minus
    ``high`` (``_075_090``), and the mean over the ``shifts`` of the shifted accuracy of ``mid`` minus ``low``
    (``kong.tab1_shift_075_010``)."""
    sh = [f"shift_{s}" for s in shifts]
    return {
        "kong.tab1_probe_075_010": Evidence.from_samples(
            paired_gap(rows, "class_acc", [mid], [low], seeds), note="accuracy", unmet=unmet
        ),
        "kong.tab1_probe_075_090": Evidence.from_samples(
            paired_gap(rows, "class_acc", [mid], [high], seeds), note="accuracy", unmet=unmet
        ),
        "kong.tab1_shift_075_010": Evidence.from_samples(
            paired_gap(rows, sh, [mid], [low], seeds), note="mean over shifts", unmet=unmet
        ),
    }


def shape_bias_gaps(rows, mid: str, low: str, high: str, seeds: Sequence[int], unmet: str = "") -> dict:
    """Table 2: per seed, the shape bias of ``mid`` minus ``low`` (``kong.tab2_shape_bias_010``) and minus ``high``
    (``_090``)."""
    return {
        "kong.tab2_shape_bias_010": Evidence.from_samples(
            paired_gap(rows, "shape_bias", [mid], [low], seeds), unmet=unmet
        ),
        "kong.tab2_shape_bias_090": Evidence.from_samples(
            paired_gap(rows, "shape_bias", [mid], [high], seeds), unmet=unmet
        ),
    }


def latent_level_gaps(
    rows, mids: Sequence[str], extremes: Sequence[str], seeds: Sequence[int], knn_k: int, unmet: str = ""
) -> dict[str, Evidence]:
    """Latent-level decodability: per seed, the k-NN class accuracy averaged over the ``mids`` models minus that
    over the ``extremes`` (``kong.latent_class_mid``), and the linear R² averaged over the continuous low-level
    factors (:data:`.representations.LOW_LEVEL_CONTINUOUS`), over the ``extremes`` minus over the ``mids``
    (``kong.latent_low_ext``)."""
    low = [f"lin_{f}" for f in LOW_LEVEL_CONTINUOUS]
    return {
        "kong.latent_class_mid": Evidence.from_samples(
            paired_gap(rows, "knn_class", mids, extremes, seeds), note=f"{knn_k}-NN, mids {list(mids)}", unmet=unmet
        ),
        "kong.latent_low_ext": Evidence.from_samples(
            paired_gap(rows, low, extremes, mids, seeds),
            note="linear R², " + ", ".join(LOW_LEVEL_CONTINUOUS),
            unmet=unmet,
        ),
    }


def attention_gap(
    rows, mid: str, extremes: Sequence[str], seeds: Sequence[int], n_attention: int, unmet: str = ""
) -> Evidence:
    """Fig. 6 (``kong.fig6_cls_silhouette``): per seed, the [CLS] attention mass on the silhouette of ``mid`` minus
    its mean over the ``extremes``."""
    return Evidence.from_samples(
        paired_gap(rows, "attn_mass", [mid], extremes, seeds), note=f"{n_attention} test images", unmet=unmet
    )


def token_gap(rows, mid: str, low: str, seeds: Sequence[int], unmet: str = "") -> Evidence:
    """Table 3 analogue (``kong.tab3_token_silhouette``): per seed, the per-token object-vs-background probe
    accuracy of ``mid`` minus ``low``."""
    return Evidence.from_samples(paired_gap(rows, "token_acc", [mid], [low], seeds), note="token accuracy", unmet=unmet)


def representation_rows(rows, settings) -> tuple[dict[str, Evidence], tuple[ReconstructionCheck, ...]]:
    """Every claim row of ``kong_representations`` from the rows of all its seeds (``settings``: a
    ``KongRepresentationsSettings``); returns (rows, checks). The lowest and highest mask ratios are the extremes;
    the intermediate ratios of the latent-level row are those in [0.5, 0.9) (the claim's {0.5, 0.75}).

    The gate is the pretext task, never the level the rows measure (issue 26: a claim about *which* latents the
    encoder holds must not condition on how well it holds the class): :func:`maelab.zoo.reconstruction_checks` of every
    model
    the rows compare (the extremes, ``unit_ratio`` and the intermediate ratios, unit 1) with
    ``settings.loss_margin``, from the ``loss``, ``reference_loss`` and ``patch_mean_loss`` columns of ``rows``.
    The class probe against random init (:func:`learned_check`) is shown by the page beside it, not used as a gate:
    on ``latent_class_mid`` it would condition the row on its own quantity."""
    S = settings
    seeds = list(S.seeds)
    mid = zoo.label(S.unit_ratio, 1)
    lo, hi = zoo.label(min(S.mask_ratios), 1), zoo.label(max(S.mask_ratios), 1)
    mids = [zoo.label(r, 1) for r in S.mask_ratios if 0.5 <= r < 0.9]
    compared = [lo, *dict.fromkeys([*mids, mid]), hi]
    checks = reconstruction_checks(rows[rows.model.isin(compared)], S.loss_margin)
    u = unmet_of(*checks)
    return {
        **table1_gaps(rows, mid, lo, hi, S.shifts, seeds, u),
        **shape_bias_gaps(rows, mid, lo, hi, seeds, u),
        **latent_level_gaps(rows, mids, [lo, hi], seeds, S.knn_k, u),
        "kong.fig6_cls_silhouette": attention_gap(rows, mid, [lo, hi], seeds, S.n_attention, u),
        "kong.tab3_token_silhouette": token_gap(rows, mid, lo, seeds, u),
    }, checks


# ------------------------------------------------------------------- kong_representations on the shared zoo
def zoo_representation_rows(
    entries,
    marks,
    mask_ratios: Sequence[float],
    unit_ratio: float,
    seeds: Sequence[int],
    loss_margin: float,
    *,
    mark_seeds: Sequence[int] | None = None,
) -> tuple[dict[str, Evidence], tuple[ReconstructionCheck, ...]]:
    """The four representation rows decided on the shared zoo (:mod:`maelab.zoo`): Table 1's probe gaps
    (``kong.tab1_probe_075_010``, ``_075_090``: the [CLS] linear probe of the zoo records, ``linear_acc_cls``, the
    official MAE probe's feature), Fig. 6 (``kong.fig6_cls_silhouette``: [CLS] attention mass on the ink of the
    digit, ``unit_ratio`` minus the mean of the extremes) and the Table-3 analogue (``kong.tab3_token_silhouette``:
    the per-token ink-vs-background probe's *balanced* accuracy, ``unit_ratio`` minus the lowest ratio; balanced
    because on digits most tokens are background).

    The gate is the pretext task, not the probe the rows measure (a level claim must not condition on the level):
    :func:`maelab.zoo.reconstruction_checks` of the compared models (lowest ratio, ``unit_ratio``, highest ratio,
    unit 1) against random init and the patch-mean predictor with ``loss_margin``. ``entries``: the zoo's entries frame
    (:func:`maelab.zoo.load_entries`); ``marks``: one row per (model, seed) with ``attn_mass`` and
    ``token_balanced_acc`` (:func:`.representations.ink_silhouette_row`) and each trained model's own check
    (:func:`maelab.zoo.measure_checkpoints`). The probe rows read ``seeds`` and are gated by the entry records'
    checks; the ``marks`` rows read ``mark_seeds`` (default ``seeds``: the seeds whose checkpoints were measured,
    :func:`maelab.zoo.measured`) and are gated by the checks of the checkpoints measured
    (:func:`maelab.zoo.checkpoint_checks`). Each row carries the zoo's looks at its seeds (:func:`maelab.zoo.looks`).
    Returns (rows, entry checks + checkpoint checks)."""
    lab = [f"r{r:g} u1" for r in (min(mask_ratios), unit_ratio, max(mask_ratios))]
    lo, mid, hi = lab
    seeds = list(seeds)
    mseeds = seeds if mark_seeds is None else [int(x) for x in mark_seeds]
    checks = reconstruction_checks(entries[entries.model.isin(lab) & entries.seed.isin(seeds)], loss_margin)
    mchecks = checkpoint_checks(marks, lab, mseeds, loss_margin)
    u, um, lk, mlk = unmet_of(*checks), unmet_of(*mchecks), looks(seeds), looks(mseeds)
    return {
        "kong.tab1_probe_075_010": Evidence.from_samples(
            paired_gap(entries, "linear_acc_cls", [mid], [lo], seeds),
            note="[CLS] probe accuracy, MNIST zoo",
            unmet=u,
            looks=lk,
        ),
        "kong.tab1_probe_075_090": Evidence.from_samples(
            paired_gap(entries, "linear_acc_cls", [mid], [hi], seeds),
            note="[CLS] probe accuracy, MNIST zoo",
            unmet=u,
            looks=lk,
        ),
        "kong.fig6_cls_silhouette": Evidence.from_samples(
            paired_gap(marks, "attn_mass", [mid], [lo, hi], mseeds),
            note="attention on the ink, MNIST zoo",
            unmet=um,
            looks=mlk,
        ),
        "kong.tab3_token_silhouette": Evidence.from_samples(
            paired_gap(marks, "token_balanced_acc", [mid], [lo], mseeds),
            note="balanced token accuracy, MNIST zoo",
            unmet=um,
            looks=mlk,
        ),
    }, checks + mchecks
