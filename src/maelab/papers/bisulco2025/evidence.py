"""The evidence of Bisulco et al.'s claim rows, computed from the pages' stored results (issue 21, item 6).

**Paper-specific:** one function per claim family of the pages ``masking``, ``bisulco_linear_mae``,
``bisulco_ising`` and ``bisulco_jacobians`` (those of ``bisulco_sweeps``: :mod:`.sweeps_evidence`). Each takes the
stored results of its page (or plain arrays and tables read from them) and the page's settings (the fields it reads
are named in its docstring), and returns :class:`maelab.claims.Evidence` -- or a dict claim id -> Evidence, with
the learning checks (:class:`maelab.claims.LearnedCheck`, :class:`maelab.claims.ReconstructionCheck`) that gate
them where a page shows them. The notebooks only call these functions and ``ctx.claim``; every derivation of a
verdict's input lives here, under test (``tests/papers/test_bisulco2025_evidence.py``, which also recomputes the
committed claims records from the committed results).

Series measured over samples (the rows decided by :class:`maelab.claims.Monotone`) carry ``y`` (a mean per point),
``y_err`` (its standard error) and ``y_n`` (the samples behind each point: seeds, data seeds, test images, crops or
Monte-Carlo draws, as each function says), so that each step is tested with Student's t of n - 1 degrees of
freedom; an exact series (FLOPs per step) carries its values alone.

A mean and standard error over n samples is :func:`maelab.metrics.mean_sem` (``std(ddof=1) / sqrt(n)``); with a
single sample the pages draw no error bar, so :func:`mean_se` gives a standard error of 0 there (where
:func:`~maelab.metrics.mean_sem` gives NaN) -- the series is then decided by its values alone, as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from maelab import zoo
from maelab._validate import ParameterError
from maelab.claims import Evidence, ReconstructionCheck, unmet_of
from maelab.metrics import mean_sem
from maelab.zoo import LOSS_MARGIN

__all__ = [
    "mean_se",
    # masking
    "sinc_identity_evidence",
    "fig22_evidence",
    # bisulco_linear_mae
    "lemma1_evidence",
    "theorem1_evidence",
    "lemma6_evidence",
    "lemma4_evidence",
    # bisulco_ising
    "ising_ranks",
    "ising_figure_configs",
    "scale_summary",
    "ising_evidence",
    # bisulco_jacobians
    "linear_choice",
    "linear_spread_evidence",
    "seed_summary",
    "reconstruction_checks",
    "claim_mask_ratios",
    "most_local_mask_ratio",
    "nonlinear_spread_evidence",
    "zoo_spread_evidence",
]


def mean_se(values: Any, axis: int = 0) -> tuple:
    """Mean and standard error of ``values`` along ``axis`` (:func:`maelab.metrics.mean_sem`), the s.e. 0 (not NaN)
    when there is one sample only: floats for 1-D input, arrays otherwise."""
    a = np.asarray(values, dtype=float)
    if a.ndim == 0 or a.shape[axis] == 0:
        raise ParameterError("values", "a non-empty array of numbers", a.shape)
    if a.shape[axis] > 1:
        return mean_sem(a, axis=axis)
    mean = a.mean(axis=axis)
    return (float(mean), 0.0) if a.ndim == 1 else (mean, np.zeros_like(mean))


def _floats(v) -> tuple[float, ...]:
    return tuple(float(a) for a in v)


def _table(t: Any, columns: Sequence[str], name: str = "table"):
    if not all(c in getattr(t, "columns", ()) for c in columns):
        raise ParameterError(name, f"a table with columns {list(columns)}", list(getattr(t, "columns", ())))
    return t


# ------------------------------------------------------------------------------------------------ masking
def sinc_identity_evidence(identity: Mapping) -> dict[str, Evidence]:
    """``bisulco.eq19_21_sinc`` and ``bisulco.eq19_as_printed``: the largest ``|FFT - closed form| / D`` over the
    random masks and pulse widths of the ``identity_1d`` result (``max_err``: Eq. 19-20 with the ``/D``;
    ``max_err_printed``: Eq. 19 as printed). Exact computations: values, no spread."""
    return {
        "bisulco.eq19_21_sinc": Evidence(value=float(max(identity["max_err"])), note="max over masks and p"),
        "bisulco.eq19_as_printed": Evidence(value=float(max(identity["max_err_printed"])), note="max over masks and p"),
    }


def fig22_evidence(spectra: Mapping) -> dict[str, Evidence]:
    """``bisulco.fig22_grating_zeros``: the largest fraction of a mask's power at a grating frequency over every mask
    drawn (``grating_max``, one per patch size); ``bisulco.fig22_smoothing``: the fraction of a masked photo's power
    above the cut-off against the patch size (``hf_fraction``: crops x patch sizes, each crop's mean over its mask
    draws): mean ± s.e. over crops, ``y_n`` = the number of crops. From the ``spectra_2d`` result."""
    hf = np.asarray(spectra["hf_fraction"], dtype=float)
    ps = list(spectra["patch_sizes"])
    if hf.ndim != 2 or hf.shape[1] != len(ps):
        raise ParameterError("hf_fraction", f"an array (crops, {len(ps)}) over the patch sizes", hf.shape)
    mean, se = mean_se(hf, axis=0)
    return {
        "bisulco.fig22_grating_zeros": Evidence(value=float(np.max(spectra["grating_max"])), note="max over draws, p"),
        "bisulco.fig22_smoothing": Evidence(
            x=_floats(ps),
            y=_floats(mean),
            y_err=_floats(se),
            y_n=(hf.shape[0],) * len(ps),
            note="mean ± s.e. over crops",
        ),
    }


# ------------------------------------------------------------------------------------------------ bisulco_linear_mae
def lemma1_evidence(table: Any, mc_draws: int) -> Evidence:
    """``bisulco.lemma1_monte_carlo``: the largest ``|z|`` of the Monte-Carlo loss against Lemma 1 over the (m, p) pairs
    of the ``lemma1`` table (column ``z`` = (MC - Lemma 1) / MC s.e.); ``mc_draws``: the settings' draws per pair
    (for the note). A value judged without spread (``Below(4, z=0)``)."""
    _table(table, ("z",))
    return Evidence(value=float(table["z"].abs().max()), note=f"{len(table)} (m, p) pairs, {mc_draws} mask draws each")


def theorem1_evidence(table: Any, *, looks: int = 1) -> dict[str, Evidence]:
    """The three Theorem-1 rows from the ``theorem1`` table (one row per seed and (m, p); columns ``seed``, ``m``,
    ``gap_sgd``, ``angle_polish``, ``angle_pca``): per seed (sorted), the worst relative loss gap after sampled-mask
    Adam (``bisulco.thm1_sgd_loss_gap``) and the worst principal angle after the polish (``bisulco.thm1_subspace``)
    over the masked configurations (m > 0); the angle to PCA of each seed's m = 0 run, in table order
    (``bisulco.thm1_m0_pca``). ``looks``: the analyses these runs have had (the settings' ``theorem1_looks``), so
    the rows are tested at ALPHA / looks."""
    _table(table, ("seed", "m", "gap_sgd", "angle_polish", "angle_pca"))
    per_seed = table[table.m > 0].groupby("seed")
    gap_sgd = per_seed["gap_sgd"].max().to_numpy()
    ang_pol = per_seed["angle_polish"].max().to_numpy()
    ang_pca = table[table.m == 0]["angle_pca"].to_numpy()
    return {
        "bisulco.thm1_sgd_loss_gap": Evidence.from_samples(gap_sgd, note="sampled-mask Adam only", looks=looks),
        "bisulco.thm1_subspace": Evidence.from_samples(ang_pol, note="after exact-loss polish", looks=looks),
        "bisulco.thm1_m0_pca": Evidence.from_samples(ang_pca, note="m = 0, after polish", looks=looks),
    }


def lemma6_evidence(table: Any, p: int = 4) -> Evidence:
    """``bisulco.lemma6_mean_variance``: the largest ``|z|`` of the Monte-Carlo loss against Lemma 6's two terms over
    the mask ratios of the ``lemma6`` table (column ``z``); ``p``: the patch size of the page's run (for the note)."""
    _table(table, ("z",))
    return Evidence(value=float(table["z"].abs().max()), note=f"{len(table)} mask ratios, p = {p}")


def lemma4_evidence(table: Any, draws: int) -> Evidence:
    """``bisulco.lemma4_small_m``: the relative error of Lemma 4, ``|lemma4 - mc| / mc``, against the mask ratio
    (the ``taylor`` table: columns ``m``, ``mc``, ``mc_se``, ``lemma4``), with the Monte-Carlo standard error
    relative to the loss, ``mc_se / mc``, as its s.e. and ``y_n`` = ``draws`` (the settings' ``taylor_draws``: the
    mask draws behind each Monte-Carlo loss)."""
    _table(table, ("m", "mc", "mc_se", "lemma4"))
    err4 = (table["lemma4"] - table["mc"]).abs() / table["mc"]
    se_rel = table["mc_se"] / table["mc"]
    return Evidence(
        x=_floats(table["m"]),
        y=_floats(err4),
        y_err=_floats(se_rel),
        y_n=(int(draws),) * len(table),
        note="relative error of Lemma 4; ± MC s.e. / loss",
    )


# ------------------------------------------------------------------------------------------------ bisulco_ising
def ising_ranks(settings: Any) -> list[int]:
    """The ranks k = round(frac * L^2) (at least 1) of ``settings.rank_fracs``; the first is the claims' rank."""
    d = settings.L * settings.L
    return [max(1, int(round(f * d))) for f in settings.rank_fracs]


def ising_figure_configs(settings: Any) -> tuple[list, list]:
    """The (m, p) configurations of Fig. 20 (two patch sizes at ``m_for_p``: the largest of ``patch_sizes`` and
    ``p_for_m``) and Fig. 21 (the largest mask ratio with the largest patch, the smallest with ``p_for_m``)."""
    pbig = max(settings.patch_sizes)
    fig20 = [(settings.m_for_p, pbig), (settings.m_for_p, settings.p_for_m)]
    fig21 = [(max(settings.mask_ratios), pbig), (min(settings.mask_ratios), settings.p_for_m)]
    return fig20, fig21


def scale_summary(table: Any, metric: str, k: int):
    """Mean and s.e. over seeds of ``metric`` per model (``model``, ``m``, ``p``) at rank ``k`` of the ``scales``
    table: a table with columns model, m, p, mean, se, n. The s.e. divides the standard deviation by the square root
    of the number of seeds at that rank (every model has every seed); one seed gives an s.e. of 0."""
    _table(table, ("seed", "k", "model", "m", "p", metric))
    t = table[table.k == k]
    g = t.groupby(["model", "m", "p"])[metric]
    n_ = t.seed.nunique()
    out = (
        g.mean().rename("mean").to_frame().join((g.std(ddof=1) / np.sqrt(n_) if n_ > 1 else g.mean() * 0).rename("se"))
    )
    return out.join(g.count().rename("n")).reset_index()


def ising_evidence(table: Any, settings: Any, k: int | None = None) -> dict[str, Evidence]:
    """The four rows of the Ising page at rank ``k`` (default: the claims' rank, the first of :func:`ising_ranks`),
    from the ``scales`` table's decay lengths (capped at 10 L):

    * ``bisulco.fig21_scale_grows_with_m`` / ``bisulco.fig20_scale_grows_with_p``: the MAE's mean decay length over
      seeds against ``mask_ratios`` at ``p_for_m`` / against ``patch_sizes`` at ``m_for_p`` (:func:`scale_summary`;
      ``y_n``: the seeds behind each point);
    * ``bisulco.fig21_high_vs_low_m``: per seed, the Fig. 21 pair's difference (:func:`ising_figure_configs`);
    * ``bisulco.fig1_ae_dae_shortest``: per seed, the shortest of the Fig. 20-21 MAEs minus the longer of the AE and
      the DAE. The longer of the two ignores a NaN (``np.fmax``): the full-rank AE is the identity and has no
      decay length, and "shortest" then compares against the DAE alone, as the page's rank table always did; at the
      claims' rank (L^2 / 4) the AE has a decay length and this is the plain maximum the claim row used.

    Every row is tested at ALPHA / ``looks`` (the analyses its sample sets have had at the profile).

    Settings read: ``seeds``, ``L``, ``rank_fracs``, ``mask_ratios``, ``p_for_m``, ``patch_sizes``, ``m_for_p``,
    ``dae_sigma``, ``looks``."""
    S = settings
    k = ising_ranks(S)[0] if k is None else k
    fig20, fig21 = ising_figure_configs(S)
    sm = scale_summary(table, "decay_length", k)
    ms = sm[(sm.model == "MAE") & (sm.p == S.p_for_m) & sm.m.isin(S.mask_ratios)].sort_values("m")
    ps = sm[(sm.model == "MAE") & (sm.m == S.m_for_p) & sm.p.isin(S.patch_sizes)].sort_values("p")
    main = table[table.k == k].set_index(["seed", "model", "m", "p"])["decay_length"]
    seeds = list(S.seeds)

    def ell(model, m, p):
        return np.array([main[(s, model, m, p)] for s in seeds])

    def series(rows, x, note):
        return Evidence(
            x=_floats(rows[x]),
            y=_floats(rows["mean"]),
            y_err=_floats(rows.se),
            y_n=tuple(int(n) for n in rows.n),
            note=note,
            looks=S.looks,
        )

    (m_hi, p_big), (m_lo, p_m) = fig21
    mae_min = np.min([ell("MAE", m, p) for m, p in dict.fromkeys(fig20 + [fig21[0]])], axis=0)
    base = np.fmax(ell("AE", 0.0, 1), ell("DAE", S.dae_sigma, 0))
    return {
        "bisulco.fig21_scale_grows_with_m": series(ms, "m", f"p = {S.p_for_m}, rank {k}, {len(seeds)} sample sets"),
        "bisulco.fig20_scale_grows_with_p": series(ps, "p", f"m = {S.m_for_p:g}, rank {k}, {len(seeds)} sample sets"),
        "bisulco.fig21_high_vs_low_m": Evidence.from_samples(
            ell("MAE", m_hi, p_big) - ell("MAE", m_lo, p_m),
            note=f"(p {p_big}, m {m_hi:g}) − (p {p_m}, m {m_lo:g})",
            looks=S.looks,
        ),
        "bisulco.fig1_ae_dae_shortest": Evidence.from_samples(
            mae_min - base, note="min over Fig. 20–21 MAEs − max(AE, DAE)", looks=S.looks
        ),
    }


# ------------------------------------------------------------------------------------------------ bisulco_jacobians
def linear_choice(settings: Any) -> dict:
    """What the linear claims read: ``K`` = max(1, round(lin_rank_frac * lin_size^2)), ``p`` (the page's
    ``patch_size`` if it is one of ``lin_patch_sizes``, else the largest of them) and ``m`` (likewise
    ``mask_ratio`` among ``lin_mask_ratios``) with their indices ``ip``, ``im``."""
    S = settings
    K = max(1, int(round(S.lin_rank_frac * S.lin_size * S.lin_size)))
    ps, ms = list(S.lin_patch_sizes), list(S.lin_mask_ratios)
    p = S.patch_size if S.patch_size in ps else max(ps)
    m = S.mask_ratio if S.mask_ratio in ms else max(ms)
    return {"K": K, "p": p, "m": m, "ip": ps.index(p), "im": ms.index(m)}


def linear_spread_evidence(lin: Mapping, settings: Any) -> dict[str, Evidence]:
    """The linear rows of the Jacobians page from one dataset's arrays of the ``linear_models`` result
    (``spread_mae``: data seeds x lin_patch_sizes x lin_mask_ratios half-mass radii; ``spread_ae``: one per data
    seed):

    * ``bisulco.jac_linear_spread_vs_m`` / ``_vs_p``: the MAE's spread against the mask ratio at the chosen patch
      size / against the patch size at the chosen mask ratio (:func:`linear_choice`): mean ± s.e. over data seeds,
      ``y_n`` = the data seeds;
    * ``bisulco.jac_linear_ae_most_local``: per data seed, the smallest MAE spread over (p, m) minus the AE's.

    Settings read: those of :func:`linear_choice`, ``lin_patch_sizes``, ``lin_mask_ratios``."""
    S = settings
    c = linear_choice(S)
    sp = np.asarray(lin["spread_mae"], dtype=float)
    ae = np.asarray(lin["spread_ae"], dtype=float)
    shape = (len(ae), len(S.lin_patch_sizes), len(S.lin_mask_ratios))
    if sp.shape != shape:
        raise ParameterError("spread_mae", f"an array {shape} (data seeds, patch sizes, mask ratios)", sp.shape)
    n = len(ae)
    mu_m, se_m = mean_se(sp[:, c["ip"], :])
    mu_p, se_p = mean_se(sp[:, :, c["im"]])
    tail = f"k = {c['K']}, mean ± s.e. over {n} data seeds"
    return {
        "bisulco.jac_linear_spread_vs_m": Evidence(
            x=_floats(S.lin_mask_ratios),
            y=_floats(mu_m),
            y_err=_floats(se_m),
            y_n=(n,) * len(mu_m),
            note=f"p = {c['p']}, {tail}",
        ),
        "bisulco.jac_linear_spread_vs_p": Evidence(
            x=_floats(S.lin_patch_sizes),
            y=_floats(mu_p),
            y_err=_floats(se_p),
            y_n=(n,) * len(mu_p),
            note=f"m = {c['m']}, {tail}",
        ),
        "bisulco.jac_linear_ae_most_local": Evidence.from_samples(
            sp.reshape(n, -1).min(axis=1) - ae, note="min over (p, m) of MAE − AE half-mass radius, per data seed"
        ),
    }


def seed_summary(res_by_seed: Mapping, key: str = "spread") -> tuple[float, float, int]:
    """(mean, s.e., n) of one nonlinear model's ``key`` (per test image) given its result per training seed: with
    one seed over its test images (n = the images), else over seeds of the per-seed means (n = the seeds)."""
    if not res_by_seed:
        raise ParameterError("res_by_seed", "results of at least one training seed", res_by_seed)
    if len(res_by_seed) == 1:
        v = np.asarray(next(iter(res_by_seed.values()))[key])
        return float(v.mean()), float(v.std(ddof=1) / np.sqrt(len(v))), len(v)
    means = [float(np.mean(r[key])) for r in res_by_seed.values()]
    return float(np.mean(means)), float(np.std(means, ddof=1) / np.sqrt(len(means))), len(means)


def _recon_check(res_by_seed: Mapping, reference: float, what: str) -> ReconstructionCheck:
    seeds = list(res_by_seed)
    return ReconstructionCheck(
        what,
        tuple(float(res_by_seed[s]["loss"][-1]) for s in seeds),
        (float(reference),) * len(seeds),
        runs=tuple(f"seed {s}" for s in seeds),
        reference_name="visible-mean predictor",
    )


def reconstruction_checks(by_m: Mapping, by_p: Mapping, ae: Mapping, trivial: Mapping, m0: float, p0: int) -> dict:
    """The learning precondition of the nonlinear ViT MAEs (:class:`maelab.claims.ReconstructionCheck`): each
    model's training loss of the last epoch (``loss[-1]`` of every seed's result) against the loss of the
    visible-mean predictor at its own mask ratio and patch size (``trivial``: ``"m{m:g}_p{p}"`` -> loss, the
    ``trivial_loss`` result's ``loss``). ``by_m``: mask ratio -> {seed: result} at patch ``p0``; ``by_p``: patch size
    -> {seed: result} at mask ratio ``m0``; ``ae``: {seed: result} of the AE (m = 0, patch ``p0``).

    Returns ``{"by_m": {m: check}, "by_p": {p: check}, "ae": check}`` (``by_p[p0]`` is ``by_m[m0]``: one model)."""
    chk_m = {m: _recon_check(by_m[m], trivial[f"m{m:g}_p{p0}"], f"ViT MAE, m = {m}, p = {p0}") for m in by_m}
    chk_p = {
        p: chk_m[m0] if p == p0 else _recon_check(by_p[p], trivial[f"m{m0:g}_p{p}"], f"ViT MAE, m = {m0}, p = {p}")
        for p in by_p
    }
    return {
        "by_m": chk_m,
        "by_p": chk_p,
        "ae": _recon_check(ae, trivial[f"m{0.0:g}_p{p0}"], f"ViT AE, m = 0, p = {p0}"),
    }


def claim_mask_ratios(mask_ratios: Sequence[float], minimum: float = 0.1) -> list[float]:
    """The mask ratios of the nonlinear claim rows: the sweep's ratios (sorted) from ``minimum`` on, as the rows'
    ``measure`` states ("all trained ratios >= 0.1"); m = 0 is the AE, compared in its own row."""
    return [m for m in sorted(mask_ratios) if m >= minimum]


def most_local_mask_ratio(by_m: Mapping) -> float:
    """The mask ratio (among :func:`claim_mask_ratios` of ``by_m``) whose MAE has the smallest mean spread."""
    return min(claim_mask_ratios(by_m), key=lambda m: seed_summary(by_m[m])[0])


def nonlinear_spread_evidence(
    by_m: Mapping, by_p: Mapping, ae: Mapping, checks: Mapping, m0: float, p0: int, *, looks: int = 1
):
    """The rows of the page's own nonlinear models (results as for :func:`reconstruction_checks`, ``checks`` its
    return value; the mask-ratio row is decided on the shared zoo, :func:`zoo_spread_evidence`), each carrying
    ``looks`` (the analyses these rows have had at the profile, the settings' ``nonlinear_looks``):

    * ``bisulco.jac_mae_spread_vs_p``: the half-mass radius of masked-pixel Jacobians against the patch size (mask
      ratio ``m0``), mean ± s.e. and ``y_n`` of :func:`seed_summary`; gated on the reconstruction check of every
      model in the series;
    * ``bisulco.jac_mae_ae_most_local``: the most local MAE (:func:`most_local_mask_ratio`) minus the AE, paired per
      test image with one seed (the same images and pixels), per seed otherwise; gated on both models."""
    ps = sorted(by_p)
    seeds = next(iter(by_m.values()))
    over = "images" if len(seeds) == 1 else "seeds"
    ys = [seed_summary(by_p[p]) for p in ps]
    m_loc = most_local_mask_ratio(by_m)
    if len(seeds) == 1:
        (s0,) = seeds
        diff = np.asarray(by_m[m_loc][s0]["spread"]) - np.asarray(ae[s0]["spread"])
    else:
        diff = [float(np.mean(by_m[m_loc][s]["spread"]) - np.mean(ae[s]["spread"])) for s in seeds]
    return {
        "bisulco.jac_mae_spread_vs_p": Evidence(
            x=_floats(ps),
            y=tuple(y for y, _, _ in ys),
            y_err=tuple(e for _, e, _ in ys),
            y_n=tuple(n for _, _, n in ys),
            note=f"m = {m0}; s.e. over {over}",
            unmet=unmet_of(*[checks["by_p"][p] for p in ps]),
            looks=looks,
        ),
        "bisulco.jac_mae_ae_most_local": Evidence.from_samples(
            diff,
            note=f"most local MAE: m = {m_loc}; paired over {'test images' if len(seeds) == 1 else 'seeds'}",
            unmet=unmet_of(checks["ae"], checks["by_m"][m_loc]),
            looks=looks,
        ),
    }


def zoo_spread_evidence(
    spreads: Any, mask_ratios: Sequence[float], seeds: Sequence[int], margin: float = LOSS_MARGIN
) -> tuple[Evidence, tuple[ReconstructionCheck, ...]]:
    """``bisulco.jac_mae_spread_vs_m`` on the shared zoo (:mod:`maelab.zoo`): the half-mass radius of masked-pixel
    Jacobians of the zoo's models at masking unit 1 against their training ``mask_ratios``, each model measured at
    its own ratio. ``spreads``: one row per (model, seed) with ``model`` (:func:`maelab.zoo.label`) and ``spread``,
    that seed's mean over its test images (:func:`.locality.masked_pixel_spreads`), and ``n_images``; the series is
    the mean over ``seeds`` with its s.e. over seeds (``y_n``: the seeds), so the error bars are over training runs,
    not over images of one run; the per-seed series are kept (the zoo's runs are paired by seed), so each step is
    tested on the per-seed differences, at the zoo's looks (:func:`maelab.zoo.looks`).

    Gate: the learning check of every model whose Jacobians were measured (:func:`maelab.zoo.checkpoint_checks`
    of ``spreads``' own ``loss``, ``reference_loss`` and ``patch_mean_loss``, measured on that checkpoint by
    :func:`maelab.zoo.measure_checkpoints`, with ``margin``) -- the pretext task, not the Jacobian the row measures.
    Returns (evidence, checks)."""
    _table(spreads, ("model", "seed", "spread", "n_images", "loss", "reference_loss", "patch_mean_loss"), "spreads")
    ratios = sorted(float(r) for r in mask_ratios)
    labels, seeds = [zoo.label(r, 1) for r in ratios], [int(s) for s in seeds]
    t = spreads[spreads.model.isin(labels) & spreads.seed.isin(seeds)]
    if t.duplicated(["model", "seed"]).any():
        raise ParameterError("spreads", "one row per (model, seed)", "duplicates")
    y = t.pivot(index="seed", columns="model", values="spread").reindex(index=seeds, columns=labels)
    if y.isna().to_numpy().any():
        raise ParameterError("spreads", f"a spread for every model {labels} and seed {seeds}", "missing values")
    checks = zoo.checkpoint_checks(t, labels, seeds, margin)
    n_img = sorted({int(n) for n in t.n_images})
    note = f"zoo, unit 1, each model at its training ratio; per seed the mean over {'/'.join(map(str, n_img))} test "
    note += f"images; s.e. over {len(seeds)} seeds"
    ev = Evidence.from_series(
        ratios, y.to_numpy(), note=note, unmet=unmet_of(*checks), paired=True, looks=zoo.looks(seeds)
    )
    return ev, checks
