"""The evidence of the ``bisulco_sweeps`` claim rows (Figs. 14-19: depth, decoder, patch size and mask ratio, late
gains, CKA), computed from the page's stored results, with the learning checks that gate them.

Which check gates the rows. Every accuracy and similarity row reads a trained encoder's probe or its layers, so its
gate is the pretext task (:func:`pretext_check`: each compared model's masked-patch test loss at most 95 % of the
better of its random init's and the patch-mean predictor's, in every seed, as the shared zoo's and Kong's): a row
must not be gated on the quantity it measures (issue 26). The [CLS] probe against random init
(:func:`learned_check`) is shown beside it as context, not as a gate; it was this page's gate until its models were
re-trained where they learn.

The same conventions as :mod:`maelab.papers.bisulco2025.evidence` (the other Bisulco pages): each function takes the
page's stored runs (tables) and its settings (``BisulcoSweepsSettings``: the fields it reads are named in its docstring)
and returns :class:`maelab.claims.Evidence` or the checks; tested in ``tests/papers/test_bisulco2025_evidence.py``,
which also recomputes the committed claims record. A separate module only to keep each under the project's ~600 lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from maelab._validate import ParameterError
from maelab.claims import Evidence, LearnedCheck, ReconstructionCheck, unmet_of
from maelab.zoo import LOSS_MARGIN

from .evidence import _floats, _table, mean_se

__all__ = [
    "pretext_check",
    "learned_check",
    "depth_checks",
    "patch_mask_checks",
    "encoder_depth_table",
    "decoder_depth_means",
    "loss_accuracy_spearman",
    "depth_evidence",
    "per_layer_slopes",
    "decoder_time_evidence",
    "patch_pairs",
    "patch_mask_evidence",
    "late_epochs",
    "late_gains_evidence",
    "last_layer_cka",
    "cka_evidence",
]


def learned_check(trained: Any, random_init: Any, what: str) -> LearnedCheck:
    """:class:`maelab.claims.LearnedCheck` of one trained configuration against its untrained encoder, seed by seed:
    ``trained`` holds its runs (columns ``enc``, ``dec``, ``patch``, ``seed``, ``linear_acc``; one row per seed),
    ``random_init`` the ``random_init`` result's runs (the same columns, one row per architecture and seed)."""
    _table(trained, ("enc", "dec", "patch", "seed", "linear_acc"), "trained")
    rand = _table(random_init, ("enc", "dec", "patch", "seed", "linear_acc"), "random_init")
    rand = rand.set_index(["enc", "dec", "patch", "seed"]).linear_acc
    t = trained.sort_values("seed")
    r0 = t.iloc[0]
    rnd = [rand[(int(r0.enc), int(r0.dec), int(r0.patch), int(s))] for s in t.seed]
    return LearnedCheck(what, tuple(t.linear_acc), tuple(rnd), seeds=tuple(int(s) for s in t.seed))


def pretext_check(trained: Any, what: str) -> ReconstructionCheck:
    """:class:`maelab.claims.ReconstructionCheck` of one trained configuration, seed by seed: its masked-patch test
    loss (``pretext_loss``) against the better of its random init's (``random_init_loss``) and the patch-mean
    predictor's (``patch_mean_loss``), under the same masks (:func:`maelab.papers.bisulco2025.sweeps.run_cell`); met
    when at most ``1 -`` :data:`maelab.zoo.grid.LOSS_MARGIN` of it in every seed. ``trained``: its runs (one row per
    seed)."""
    t = _table(trained, ("seed", "pretext_loss", "random_init_loss", "patch_mean_loss"), "trained").sort_values("seed")
    return ReconstructionCheck(
        what=what,
        loss=tuple(float(v) for v in t.pretext_loss),
        reference=tuple(float(min(a, b)) for a, b in zip(t.random_init_loss, t.patch_mean_loss)),
        runs=tuple(f"seed {int(s)}" for s in t.seed),
        reference_name="the better of random init and the patch-mean predictor",
        max_ratio=1 - LOSS_MARGIN,
    )


def _check(trained: Any, random_init: Any, what: str):
    """The pretext check of ``trained`` (``random_init`` None), else its probe against random init (context)."""
    return pretext_check(trained, what) if random_init is None else learned_check(trained, random_init, what)


def depth_checks(runs: Any, settings: Any, random_init: Any = None) -> dict:
    """The checks of the depth grid (``runs``: the ``depth_grid`` runs): the pretext checks that gate its rows
    (:func:`pretext_check`), or with ``random_init`` (the ``random_init`` result's runs) the probe against random
    init shown beside them (:func:`learned_check`). ``"key"``: encoder depth -> the key column (decoder
    ``key_decoder_depth``, every seed); ``"grid"``: one per cell of the grid (first seed), encoder then decoder.

    Settings read: ``seeds``, ``encoder_depths``, ``decoder_depths``, ``key_decoder_depth``, ``patch_size``,
    ``mask_ratio``."""
    S = settings
    seeds, kd, p0, m0 = list(S.seeds), S.key_decoder_depth, S.patch_size, S.mask_ratio
    grid = runs[runs.seed == seeds[0]]
    key = {
        e: _check(
            runs[(runs.enc == e) & (runs.dec == kd)],
            random_init,
            f"encoder {e}, decoder {kd}, patch {p0}, mask {m0:g} (seeds {seeds})",
        )
        for e in sorted(S.encoder_depths)
    }
    cells = [
        _check(
            grid[(grid.enc == e) & (grid.dec == d)],
            random_init,
            f"encoder {e}, decoder {d}, patch {p0}, mask {m0:g} (seed {seeds[0]})",
        )
        for e in sorted(S.encoder_depths)
        for d in sorted(S.decoder_depths)
    ]
    return {"key": key, "grid": cells}


def patch_mask_checks(pm_runs: Any, settings: Any, random_init: Any = None) -> dict:
    """The checks of the mask x patch grid (``pm_runs``: the ``patch_mask_grid`` runs; ``random_init``: as in
    :func:`depth_checks`): (patch, mask) -> the check of that cell (first seed). Settings read: ``seeds``,
    ``patch_sizes``, ``mask_ratios``, ``grid_depth``, ``grid_decoder_depth``."""
    S = settings
    return {
        (p, m): _check(
            pm_runs[(pm_runs.patch == p) & (pm_runs["mask"] == m)],
            random_init,
            f"encoder {S.grid_depth}, decoder {S.grid_decoder_depth}, patch {p}, mask {m:g} (seed {list(S.seeds)[0]})",
        )
        for p in sorted(S.patch_sizes)
        for m in sorted(S.mask_ratios)
    }


def encoder_depth_table(runs: Any, settings: Any):
    """Linear-probe accuracy of the key column (decoder ``key_decoder_depth``) per encoder depth: a table indexed
    by ``enc`` with mean, std, count (seeds) and sem = std / sqrt(count) (NaN with one seed)."""
    _table(runs, ("enc", "dec", "seed", "linear_acc"), "runs")
    by_enc = runs[runs.dec == settings.key_decoder_depth].groupby("enc").linear_acc.agg(["mean", "std", "count"])
    by_enc["sem"] = by_enc["std"] / np.sqrt(by_enc["count"])
    return by_enc


def decoder_depth_means(runs: Any, settings: Any):
    """Linear-probe accuracy per decoder depth of the depth grid (first seed), averaged over encoder depths: a
    Series indexed by ``dec``."""
    _table(runs, ("dec", "seed", "linear_acc"), "runs")
    return runs[runs.seed == list(settings.seeds)[0]].groupby("dec").linear_acc.mean()


def loss_accuracy_spearman(runs: Any, settings: Any) -> tuple[float, float]:
    """Spearman's rho between test reconstruction loss and probe accuracy over the depth grid's runs of the first
    seed, and its p-value."""
    from scipy import stats

    _table(runs, ("seed", "rec_loss", "linear_acc"), "runs")
    grid = runs[runs.seed == list(settings.seeds)[0]]
    rho, p = stats.spearmanr(grid.rec_loss, grid.linear_acc)
    return float(rho), float(p)


def depth_evidence(runs: Any, checks: Mapping, settings: Any) -> dict[str, Evidence]:
    """The accuracy rows of the depth grid (``runs``: the ``depth_grid`` runs; ``checks``: :func:`depth_checks`):

    * ``bisulco.fig15_encoder_depth``: probe accuracy against encoder depth, mean ± s.e. over seeds of the key column
      (:func:`encoder_depth_table`; ``y_n`` = its seeds), gated on the key column's checks;
    * ``bisulco.fig15_best_decoder``: the decoder depth with the best probe accuracy averaged over encoder depths
      (first seed), gated on every grid cell;
    * ``bisulco.fig14_loss_not_proxy``: Spearman's rho between test reconstruction loss and probe accuracy over the
      grid runs of the first seed, gated on every grid cell."""
    seeds = list(settings.seeds)
    n_grid = int((runs.seed == seeds[0]).sum())
    by_enc = encoder_depth_table(runs, settings)
    by_dec = decoder_depth_means(runs, settings)
    rho, p_rho = loss_accuracy_spearman(runs, settings)
    unmet_grid = unmet_of(*checks["grid"])
    return {
        "bisulco.fig15_encoder_depth": Evidence(
            x=_floats(by_enc.index),
            y=_floats(by_enc["mean"]),
            y_err=_floats(by_enc["sem"]),
            y_n=tuple(int(n) for n in by_enc["count"]),
            note=f"decoder depth {settings.key_decoder_depth}, mean ± s.e. over seeds {seeds}",
            unmet=unmet_of(*checks["key"].values()),
        ),
        "bisulco.fig15_best_decoder": Evidence(
            value=float(int(by_dec.idxmax())),
            note=f"mean probe accuracy per decoder depth over encoders: {by_dec.round(3).to_dict()}",
            unmet=unmet_grid,
        ),
        "bisulco.fig14_loss_not_proxy": Evidence(
            value=float(rho), note=f"Spearman over {n_grid} grid runs, p = {p_rho:.2g}", unmet=unmet_grid
        ),
    }


def per_layer_slopes(costs: Any, settings: Any) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares fits ``cost ~ a + b_enc * encoder depth + b_dec * decoder depth`` over the depth grid's cells
    of the ``step_costs`` table (at ``patch_size``, ``mask_ratio``; depths of ``encoder_depths`` x
    ``decoder_depths``): the coefficients (a, b_enc, b_dec) of the step time (``step_wall_s``) and of the FLOPs."""
    S = settings
    _table(costs, ("enc", "dec", "patch", "mask", "flops", "step_wall_s"), "costs")
    d = costs[
        (costs.patch == S.patch_size)
        & (costs["mask"] == S.mask_ratio)
        & costs.enc.isin(S.encoder_depths)
        & costs.dec.isin(S.decoder_depths)
    ]
    X = np.column_stack([np.ones(len(d)), d.enc, d.dec])
    b_time = np.linalg.lstsq(X, d.step_wall_s.to_numpy(), rcond=None)[0]
    b_flops = np.linalg.lstsq(X, d.flops.to_numpy(dtype=float), rcond=None)[0]
    return b_time, b_flops


def decoder_time_evidence(costs: Any, settings: Any) -> Evidence:
    """``bisulco.fig14_decoder_time``: the FLOPs of one extra decoder layer over those of one extra encoder layer
    (:func:`per_layer_slopes`); the step-time ratio of a shared machine goes in the note. Exact: no spread, no
    learning gate (a cost does not depend on what was learned)."""
    b_time, b_flops = per_layer_slopes(costs, settings)
    return Evidence(
        value=float(b_flops[2] / b_flops[1]),
        note=f"FLOPs per decoder layer / per encoder layer; step-time ratio {b_time[2] / b_time[1]:.2f} "
        f"({b_time[2]:.2g} s vs {b_time[1]:.2g} s per layer, shared machine)",
    )


def patch_pairs(pm_runs: Any, costs: Any, settings: Any) -> dict:
    """The smallest against the largest patch of the mask x patch grid, paired over the mask ratios (sorted):
    ``acc_diff`` (probe accuracy, smallest minus largest patch), ``log_time`` / ``log_flops`` (log of the step-time
    / FLOP ratio, smallest over largest patch), and ``base``: the grid's cost rows at ``patch_size`` (or the
    smallest patch when it is not in the grid), sorted by mask ratio. ``pm_runs``: the ``patch_mask_grid`` runs;
    ``costs``: the ``step_costs`` table."""
    S = settings
    PS, MS = sorted(S.patch_sizes), sorted(S.mask_ratios)
    pcost = costs[
        (costs.enc == S.grid_depth)
        & (costs.dec == S.grid_decoder_depth)
        & costs.patch.isin(PS)
        & costs["mask"].isin(MS)
    ]
    small, large = pm_runs[pm_runs.patch == PS[0]].set_index("mask"), pm_runs[pm_runs.patch == PS[-1]].set_index("mask")
    cs, cl = pcost[pcost.patch == PS[0]].set_index("mask"), pcost[pcost.patch == PS[-1]].set_index("mask")
    base = pcost[pcost.patch == (S.patch_size if S.patch_size in PS else PS[0])].sort_values("mask")
    return {
        "acc_diff": [float(small.linear_acc[m] - large.linear_acc[m]) for m in MS],
        "log_time": [float(np.log(cs.step_wall_s[m] / cl.step_wall_s[m])) for m in MS],
        "log_flops": [float(np.log(cs.flops[m] / cl.flops[m])) for m in MS],
        "base": base,
    }


def patch_mask_evidence(pm_runs: Any, costs: Any, pm_checks: Mapping, settings: Any) -> dict[str, Evidence]:
    """The rows of the mask x patch grid (:func:`patch_pairs`):

    * ``bisulco.fig16_patch_time``: log FLOP ratio of the smallest over the largest patch, paired over mask ratios
      (the step-time ratios in the note); a cost, no learning gate;
    * ``bisulco.fig17_patch_acc``: probe accuracy, smallest minus largest patch, paired over mask ratios; gated on
      the checks (``pm_checks``: :func:`patch_mask_checks`) of both patch sizes at every mask ratio;
    * ``bisulco.fig16_mask_time``: GFLOP per step against the mask ratio at the base patch (exact; the minimum step
      times in the note)."""
    S = settings
    PS, MS = sorted(S.patch_sizes), sorted(S.mask_ratios)
    pp = patch_pairs(pm_runs, costs, S)
    base = pp["base"]
    return {
        "bisulco.fig16_patch_time": Evidence.from_samples(
            pp["log_flops"],
            note=f"patch {PS[0]} vs {PS[-1]}, paired over mask ratios {MS}; step-time ratios "
            f"{[round(float(np.exp(t)), 2) for t in pp['log_time']]}",
        ),
        "bisulco.fig17_patch_acc": Evidence.from_samples(
            pp["acc_diff"],
            note=f"patch {PS[0]} minus patch {PS[-1]}, paired over mask ratios {MS}",
            unmet=unmet_of(*[pm_checks[p, m] for p in (PS[0], PS[-1]) for m in MS]),
        ),
        "bisulco.fig16_mask_time": Evidence(
            x=_floats(base["mask"]),
            y=tuple(float(f) / 1e9 for f in base.flops),
            note=f"GFLOP per step, patch {int(base.patch.iloc[0])}; min step times over {S.cost_reps} repetitions: "
            f"{[round(float(t), 3) for t in base.step_wall_s]} s",
        ),
    }


def late_epochs(settings: Any) -> tuple[int, int]:
    """(mid, last) epochs of Fig. 18's late gain: the last is ``epochs``; the mid epoch is the latest snapshot at or
    before half of it (the first snapshot when none is), among ``snapshot_epochs`` up to ``epochs`` and ``epochs``."""
    E = settings.epochs
    snaps = tuple(sorted({e for e in settings.snapshot_epochs if e <= E} | {E}))
    mid = max(e for e in snaps if e <= E / 2) if any(e <= E / 2 for e in snaps) else snaps[0]
    return mid, E


def late_gains_evidence(snapshots: Any, key_checks: Mapping, settings: Any) -> Evidence:
    """``bisulco.fig18_late_gains``: per seed, the deepest encoder's probe accuracy at the last epoch minus at the mid
    epoch (:func:`late_epochs`), from the ``snapshot_probes`` table (columns ``enc``, ``seed``, ``epoch``,
    ``linear_acc``); gated on the deepest encoder's key-column check (``key_checks``: :func:`depth_checks`
    ``"key"``)."""
    _table(snapshots, ("enc", "seed", "epoch", "linear_acc"), "snapshots")
    deepest = max(settings.encoder_depths)
    mid, last = late_epochs(settings)
    deep = snapshots[snapshots.enc == deepest].pivot_table(index="seed", columns="epoch", values="linear_acc")
    return Evidence.from_samples(
        (deep[last] - deep[mid]).to_numpy(),
        note=f"encoder {deepest}, epoch {last} minus epoch {mid}, seeds {list(settings.seeds)}",
        unmet=key_checks[deepest].unmet,
    )


def last_layer_cka(cka: Any, settings: Any) -> np.ndarray:
    """(seeds, encoder depths) CKA of each encoder's last layer with the deepest encoder's last layer (next seed),
    from the ``cka`` result's array (seeds, depths, max depth, deepest depth)."""
    mats = np.asarray(cka, dtype=float)
    enc = sorted(settings.encoder_depths)
    if mats.ndim != 4 or mats.shape[:2] != (len(settings.seeds), len(enc)):
        raise ParameterError(
            "cka", f"an array ({len(settings.seeds)}, {len(enc)}, max depth, deepest depth)", mats.shape
        )
    return np.array([[mats[i, j, e - 1, -1] for j, e in enumerate(enc)] for i in range(len(settings.seeds))])


def cka_evidence(cka: Any, key_checks: Mapping, settings: Any) -> Evidence:
    """``bisulco.fig19_cka_last_layer``: the last-layer CKA (:func:`last_layer_cka`) against encoder depth, mean ±
    s.e. over seeds (``y_n`` = the seeds; one seed: s.e. 0), gated on every key-column check."""
    last = last_layer_cka(cka, settings)
    mean, se = mean_se(last, axis=0)
    return Evidence(
        x=_floats(sorted(settings.encoder_depths)),
        y=_floats(mean),
        y_err=_floats(se),
        y_n=(len(last),) * len(mean),
        note=f"mean-pooled patch tokens, {settings.cka_images} test images, reference: deepest encoder of the next "
        "seed",
        unmet=unmet_of(*key_checks.values()),
    )
