"""The evidence of Zhang, Wang & Wang's claim rows, computed from the pages' stored results (issue 21).

**Paper-specific.** One function per family of rows; the notebooks only call them and record the result with
:meth:`maelab.book.Context.claim`. Each returns :class:`maelab.claims.Evidence` (a dict of them for a family) and,
where rows are gated on a model having learned, the :class:`maelab.claims.LearnedCheck` the page shows.

* ``zhang_mask_graph``: :func:`distance_trends` (Fig. 2b), :func:`sweet_spot` (Fig. 2c), :func:`graph_trends`
  (Thm. 4.2), :func:`collapse_floor` (Thm. 3.6) and, on the shared zoo (:mod:`maelab.zoo`), :func:`zoo_learned`
  and :func:`zoo_collapse_avoidance` (the remark after it);
* ``zhang_umae``: :func:`umae_rows` (Table 1, Figs. 1b, 1c, 3b, per dataset);
* ``zhang_ablations``: :func:`ablation_rows` (Tables 2-3, §3.2) and :func:`effective_lambda_rows` (Table 1 at the
  official code's effective lambda).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from maelab import zoo
from maelab._validate import ParameterError, one_of
from maelab.claims import Evidence, LearnedCheck

from . import ablations as abl
from .umae import finetune_unmet, paired, per_seed_curve_gap

__all__ = [
    "distance_trends",
    "sweet_spot",
    "graph_trends",
    "collapse_floor",
    "mae_learned",
    "zoo_learned",
    "zoo_collapse_avoidance",
    "learned_by_seed",
    "umae_rows",
    "ablation_rows",
    "effective_lambda_rows",
]


# ------------------------------------------------------------------------------------------------ zhang_mask_graph
def distance_trends(
    rhos: Sequence[float], intra, inter, grid: Sequence[float], *, looks: int = 1
) -> dict[str, Evidence]:
    """Fig. 2b: the mean intra- and inter-class patch distances over the claim's ``grid`` of mask ratios, as series
    over seeds (``intra``/``inter``: (seeds, len(rhos)) exact distances). Keys ``intra``, ``inter``. ``looks``: the
    analyses these seeds have had (the settings' ``distance_looks``; tested at ALPHA / looks)."""
    rhos = [float(r) for r in rhos]
    missing = [g for g in grid if g not in rhos]
    if missing:
        raise ParameterError("grid", f"ratios among {rhos}", missing)
    cols = [rhos.index(g) for g in grid]
    note = "mnist10k, zero-filled, every pair; mean ± s.e. over seeds"
    return {
        k: Evidence.from_series(grid, np.asarray(v, dtype=float)[:, cols].tolist(), note=note, looks=looks)
        for k, v in (("intra", intra), ("inter", inter))
    }


def sweet_spot(rhos, ratio, at: float = 0.7, note: str = "", *, looks: int = 1) -> Evidence:
    """Fig. 2c's sweet spot ("the relative distance first decreases, then increases with the mask ratio; its minimum
    lies at rho = ``at``"): per seed, the dip of the intra/inter ratio at ``at`` below the lower of its two ends,
    ``min(r(rho_first), r(rho_last)) - r(at)``.

    A dip > 0 in every seed beyond noise means the curve goes down from the first ratio and up again to the last one
    with ``at`` below both ends -- the paper's U shape with its bottom near ``at``; a dip < 0 means ``at`` is not below
    both ends (e.g. a curve that falls or rises all the way, whose per-seed argmins sit at the ends of the grid).
    Averaging per-seed argmins instead (the first statistic of this row) can land near 0.7 when every argmin is an
    end point. ``rhos``: the grid (must hold ``at`` strictly inside it); ``ratio``: (seeds, len(rhos)); ``looks``:
    as :func:`distance_trends`'."""
    rhos = [float(r) for r in rhos]
    r = np.asarray(ratio, dtype=float)
    if r.ndim != 2 or r.shape[1] != len(rhos):
        raise ParameterError("ratio", f"an array (seeds, {len(rhos)}) over the rho grid", tuple(r.shape))
    if at not in rhos or not rhos[0] < at < rhos[-1]:
        raise ParameterError("at", f"a ratio strictly inside the grid {rhos}", at)
    i = rhos.index(at)
    dips = np.minimum(r[:, 0], r[:, -1]) - r[:, i]
    default = f"per seed: min(r({rhos[0]:g}), r({rhos[-1]:g})) - r({at:g})"
    return Evidence.from_samples(dips.tolist(), note=note or default, looks=looks)


def graph_trends(rhos, residual, alpha, k: int) -> dict[str, Evidence]:
    """Thm. 4.2 on the exact small mask graph: the residual eigenvalue sum at ``k`` and the label error alpha against
    the mask ratio (exact values, no spread). Keys ``residual``, ``alpha``."""
    x = tuple(float(r) for r in rhos)
    res, al = tuple(float(v) for v in residual), tuple(float(v) for v in alpha)
    if len(res) != len(x) or len(al) != len(x):
        raise ParameterError("residual", f"{len(x)} values, one per ratio (and as many alphas)", (len(res), len(al)))
    return {
        "residual": Evidence(x=x, y=res, note=f"exact, positional views, k = {k}"),
        "alpha": Evidence(x=x, y=al, note="exact, positional"),
    }


def collapse_floor(test_losses, var_x2: float) -> Evidence:
    """Thm. 3.6: the relative excess ``(loss - Var(x2)) / Var(x2)`` of each decoder trained behind a collapsed encoder
    (one per mask ratio and seed) over the floor."""
    if not (math.isfinite(var_x2) and var_x2 > 0):
        raise ParameterError("var_x2", "a finite variance > 0", var_x2)
    gaps = [(float(v) - var_x2) / var_x2 for v in test_losses]
    return Evidence.from_samples(gaps, note="per (mask ratio, seed)")


def mae_learned(what: str, probe: dict, seed: int) -> LearnedCheck:
    """The learning check of the page's own pre-trained MAE (the contrast run of Theorem 3.6): its [CLS] probe
    (``probe["trained"]``) against the same encoder at random initialisation (``probe["random_init"]``), one run
    (``seed``)."""
    return LearnedCheck(what, (float(probe["trained"]),), (float(probe["random_init"]),), seeds=(seed,))


def _zoo_values(entries, model: str, column: str, seeds: Sequence[int]) -> tuple[float, ...]:
    """``column`` of zoo ``model`` per seed, in ``seeds`` order, from the frame of :func:`maelab.zoo.load_entries`."""
    if column not in getattr(entries, "columns", ()) or "model" not in entries.columns:
        raise ParameterError("entries", f"a zoo entries table with columns model, seed, {column}", "missing columns")
    t = entries[entries.model == model].set_index("seed")[column]
    missing = [s for s in seeds if s not in t.index]
    if missing or t.index.duplicated().any() or not len(seeds):
        raise ParameterError("entries", f"one row of {model!r} per seed {list(seeds)}", missing or "duplicates")
    return tuple(float(t[s]) for s in seeds)


def zoo_learned(entries, model: str, seeds: Sequence[int], pool: str = "cls") -> LearnedCheck:
    """The learning check of zoo model ``model`` (:func:`maelab.zoo.label`, e.g. ``"r0.75 u1"``): its linear probe
    (``pool`` "cls": ``linear_acc_cls``, "mean": ``linear_acc_mean``) against the zoo's random-init encoder of the
    same seed, every seed of ``seeds`` (:data:`maelab.claims.LEARNED_MARGIN`). ``entries``: the frame of
    :func:`maelab.zoo.load_entries`."""
    one_of("pool", pool, ("cls", "mean"))
    col, name = f"linear_acc_{pool}", {"cls": "[CLS]", "mean": "mean-pool"}[pool]
    seeds = [int(s) for s in seeds]
    return LearnedCheck(
        f"MAE {model} of the shared zoo, {name} linear probe",
        _zoo_values(entries, model, col, seeds),
        _zoo_values(entries, zoo.RANDOM_INIT, col, seeds),
        seeds=tuple(seeds),
    )


def zoo_collapse_avoidance(entries, var_x2: float, model: str, seeds: Sequence[int], learned: LearnedCheck) -> Evidence:
    """ "MAE training does not end in full collapse" (after Thm. 3.6) on the shared zoo: per seed, the margin of zoo
    model ``model``'s masked-patch test loss (``loss``) below the collapse floor, ``(Var(x2) - loss) / Var(x2)``;
    ``var_x2``: the floor in the zoo's own loss (:func:`.mask_graph.masked_target_variance` of the zoo's targets on
    the images the loss is measured on). Gated by ``learned`` (:func:`zoo_learned`): the gate reads the
    representation, not the loss the claim measures -- a model that learned nothing says nothing about where
    training ends, and a gate on the loss itself (e.g. the zoo's reconstruction check, whose patch-mean reference
    lies above the floor) would decide the claim. At the zoo's looks at ``seeds`` (:func:`maelab.zoo.looks`)."""
    if not isinstance(learned, LearnedCheck):
        raise ParameterError("learned", "a maelab.claims.LearnedCheck of the zoo model", type(learned).__name__)
    if not (isinstance(var_x2, (int, float)) and math.isfinite(var_x2) and var_x2 > 0):
        raise ParameterError("var_x2", "a finite variance > 0", var_x2)
    seeds = [int(s) for s in seeds]
    gaps = [(var_x2 - v) / var_x2 for v in _zoo_values(entries, model, "loss", seeds)]
    note = f"{model} of the shared zoo, per seed {seeds}"
    return Evidence.from_samples(gaps, note=note, unmet=learned.unmet, looks=zoo.looks(seeds))


# ------------------------------------------------------------------------------------------------ zhang_umae
def learned_by_seed(what: str, runs, variant: str, reference: str = "random", seeds=None) -> LearnedCheck:
    """The learning precondition of a runs table (:func:`.umae.compare`): ``variant``'s [CLS] linear probe against
    the untrained encoder (``reference``) of the same seed, over ``seeds`` (default: the seeds both have)."""
    a = runs[runs.variant == variant].set_index("seed").linear_acc
    b = runs[runs.variant == reference].set_index("seed").linear_acc
    both = sorted(set(a.index) & set(b.index)) if seeds is None else list(seeds)
    missing = [s for s in both if s not in a.index or s not in b.index]
    if not both or missing:
        raise ParameterError("runs", f"rows of {variant!r} and {reference!r} at the same seeds", missing or both)
    return LearnedCheck(what, tuple(float(a[s]) for s in both), tuple(float(b[s]) for s in both), seeds=tuple(both))


def umae_rows(dataset: str, label: str, result, *, looks: int = 1) -> tuple[dict[str, Evidence], LearnedCheck]:
    """The six rows of ``zhang_umae`` on one dataset from its stored :func:`.umae.compare` result (``runs``,
    ``ranks``, ``curves``): U-MAE - MAE per seed for the [CLS] probe (Table 1, and its size view), fine-tuning
    (gated also on fine-tuning having learned), the effective rank (Fig. 1b), MAE's rank from the first to the last
    tracked epoch (Fig. 1c) and the online accuracy (Fig. 3b). Every row is gated on MAE having learned. ``looks``:
    the analyses these runs have had (2 where seeds were added after the first:
    :func:`.umae_report.looks`), so every row is tested at ALPHA / looks."""
    runs = result["runs"]
    learned = learned_by_seed(f"MAE, {label}, [CLS] linear probe", runs, "mae")
    lu = learned.unmet
    d_lin = paired(runs, "linear_acc")
    rk = result["ranks"][result["ranks"].variant == "mae"]
    first, last = rk.epoch.min(), rk.epoch.max()
    start = rk[rk.epoch == first].set_index("seed").effective_rank
    end = rk[rk.epoch == last].set_index("seed").effective_rank
    collapse = [float(start[s] - end[s]) for s in sorted(start.index)]
    ft_unmet = finetune_unmet(runs, ("mae", "umae"))
    note = "U-MAE - MAE, per seed"
    ev = {
        f"zhang.table1_linear_{dataset}": Evidence.from_samples(d_lin, note=note, unmet=lu, looks=looks),
        f"zhang.table1_linear_size_{dataset}": Evidence.from_samples(d_lin, note=note, unmet=lu, looks=looks),
        f"zhang.table1_finetune_{dataset}": Evidence.from_samples(
            paired(runs, "finetune_acc"),
            note=note,
            unmet="; ".join(u for u in (lu, ft_unmet) if u),
            looks=looks,
        ),
        f"zhang.fig1b_rank_{dataset}": Evidence.from_samples(
            paired(runs, "effective_rank"), note=note, unmet=lu, looks=looks
        ),
        f"zhang.fig1c_mae_collapse_{dataset}": Evidence.from_samples(
            collapse, note=f"MAE rank at epoch {first} minus at epoch {last}, per seed", unmet=lu, looks=looks
        ),
        f"zhang.fig3b_online_{dataset}": Evidence.from_samples(
            per_seed_curve_gap(result["curves"], "eval_online_acc"),
            note="mean over evaluated epochs, per seed",
            unmet=lu,
            looks=looks,
        ),
    }
    return ev, learned


# ------------------------------------------------------------------------------------------------ zhang_ablations
def ablation_rows(
    settings, sweep_runs, simmim_runs, nomask_runs
) -> tuple[dict[str, Evidence], dict[str, LearnedCheck]]:
    """Tables 2-3 and §3.2 of ``zhang_ablations`` from the three groups' ``runs`` tables (:func:`.umae.compare`,
    random-init rows included for the sweep and SimMIM): per seed, the [CLS] probe at lambda = 1e-2 minus at 0
    (helps), minus the best other lambda (best), minus the best lambda >= 0.1 (large lambda hurts), lambda 0 minus
    the best lambda >= 0.1 (below MAE), U-SimMIM minus SimMIM, and mask 0.75 minus mask 0. Table 3 and §3.2 are
    gated on plain MAE having learned, Table 2 on SimMIM. Returns the evidence and the checks ``mae``, ``simmim``."""
    S = settings
    seeds = tuple(S.seeds)
    l0 = abl.lam_name(0.0)
    sw = sweep_runs[sweep_runs.variant != "random"].assign(lam=lambda d: d.variant.map(abl.lam_of))
    checks = {
        "mae": learned_by_seed(f"MAE (λ = 0, mask 0.75), {S.dataset}, [CLS] linear probe", sweep_runs, l0, seeds=seeds),
        "simmim": learned_by_seed(
            f"SimMIM (mask {S.simmim_mask_ratio:g}), {S.dataset}, [CLS] linear probe",
            simmim_runs,
            "simmim",
            seeds=seeds,
        ),
    }
    acc = sw.pivot(index="seed", columns="lam", values="linear_acc")
    lams = sorted(acc.columns)
    big = [lam for lam in lams if lam >= 0.1]
    others = [lam for lam in lams if lam != 0.01]
    sm = simmim_runs[simmim_runs.variant != "random"].pivot(index="seed", columns="variant", values="linear_acc")
    mae_0 = nomask_runs.set_index("seed")["linear_acc"]
    note, mu, su = "paired by seed", checks["mae"].unmet, checks["simmim"].unmet
    ev = {
        "zhang.table3_lambda_helps": Evidence.from_samples(acc[0.01] - acc[0.0], note=note, unmet=mu),
        "zhang.table3_lambda_best": Evidence.from_samples(acc[0.01] - acc[others].max(axis=1), note=note, unmet=mu),
        "zhang.table3_large_lambda_hurts": Evidence.from_samples(acc[0.01] - acc[big].max(axis=1), note=note, unmet=mu),
        "zhang.table3_large_lambda_below_mae": Evidence.from_samples(
            acc[0.0] - acc[big].max(axis=1), note=note, unmet=mu
        ),
        "zhang.table2_usimmim": Evidence.from_samples(sm["usimmim"] - sm["simmim"], note=note, unmet=su),
        "zhang.sec32_no_mask": Evidence.from_samples(acc[0.0] - mae_0.loc[acc.index], note=note, unmet=mu),
    }
    return ev, checks


def effective_lambda_rows(settings, runs, fine_runs=None) -> tuple[dict[str, Evidence], dict[str, LearnedCheck]]:
    """Table 1 at the weight the official code gave the uniformity term (issue 22): per seed, U-MAE at ``lam_eff``
    (and at ``lam_paper`` as written) minus plain MAE on the [CLS] probe, from :func:`.ablations.effective_runs`;
    with ``fine_runs`` (the fine-patch group's runs table) the same at ``fine_patch_size``. Each row is gated on
    plain MAE of the same patch size having learned -- a check on the baseline, not on the difference measured.
    Returns the evidence and the checks ``patch`` (and ``fine_patch``)."""
    S = settings
    l0, le, lp = abl.lam_name(0.0), abl.lam_name(S.lam_eff), abl.lam_name(S.lam_paper)
    patch = dict(abl.base_spec(S).model_overrides).get("patch_size", "default")
    checks = {
        "patch": learned_by_seed(
            f"MAE (λ = 0), {S.dataset}, patch {patch}, [CLS] linear probe", runs, l0, seeds=tuple(S.eff_seeds)
        )
    }
    note = "paired by seed"
    ev = {
        "zhang.table1_linear_mnist_lam_eff": Evidence.from_samples(
            paired(runs, "linear_acc", le, l0), note=note, unmet=checks["patch"].unmet
        ),
        "zhang.table1_linear_mnist_lam_paper": Evidence.from_samples(
            paired(runs, "linear_acc", lp, l0), note=note, unmet=checks["patch"].unmet
        ),
    }
    if fine_runs is not None:
        checks["fine_patch"] = learned_by_seed(
            f"MAE (λ = 0), {S.dataset}, patch {S.fine_patch_size}, [CLS] linear probe",
            fine_runs,
            l0,
            seeds=tuple(S.fine_patch_seeds),
        )
        ev["zhang.table1_linear_mnist_lam_eff_patch4"] = Evidence.from_samples(
            paired(fine_runs, "linear_acc", le, l0), note=note, unmet=checks["fine_patch"].unmet
        )
    return ev, checks
