"""The ``bisulco_linear_mae`` page's computations: Lemma 1, Theorem 1, the spectrum of C, Lemma 6, Lemmas 4-5.

**Paper-specific:** Bisulco et al.'s linear MAE checked on centred grey crops (:func:`crops`). Each stored result
of the page has its computation here and ``*_config(S, seed)``, the config dict it is stored under (every setting
the computation reads, and the data's :func:`data_config`):

* ``lemma1``: :func:`lemma1_table`, Monte-Carlo loss over Bernoulli (and fixed-count) masks against Lemma 1;
* ``theorem1``: :func:`theorem1_runs`, sampled-mask Adam then an exact-loss polish against the closed form;
* ``spectrum``: :func:`spectrum`, the eigenvalues of C and the angle of its top-k subspace to PCA's;
* ``lemma6``: :func:`lemma6_table`, the two terms of Lemma 6 at the closed-form optimum against Monte Carlo;
* ``taylor``: :func:`taylor_table`, Lemmas 4-5 against the Monte-Carlo loss of a tanh autoencoder.

Patch size 4 is the page's fixed patch where a figure varies m alone (its settings require it to divide the crop).
Every computation runs on one BLAS thread (``threadpool_limits(1)``; the Theorem 1 training also on one torch
thread): the machine the book's CPU results were computed on is shared, and one thread is faster there.
:func:`lemma1_markdown` and :func:`theorem1_markdown` are the page's two tables of these results.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch
from threadpoolctl import threadpool_limits

from maelab import data
from maelab import linear_mae as lm
from maelab._validate import ParameterError, positive_int

from . import taylor as tl
from .settings import BisulcoLinearMAESettings

__all__ = [
    "crops",
    "data_config",
    "patch_indices",
    "lemma1_config",
    "lemma1_table",
    "lemma1_markdown",
    "theorem1_config",
    "theorem1_runs",
    "theorem1_markdown",
    "spectrum_config",
    "spectrum",
    "lemma6_config",
    "lemma6_table",
    "taylor_config",
    "taylor_table",
]


def _settings(S: Any) -> BisulcoLinearMAESettings:
    if not isinstance(S, BisulcoLinearMAESettings):
        raise ParameterError("S", "the bisulco_linear_mae page's settings (BisulcoLinearMAESettings)", type(S).__name__)
    return S


def _data(X: Any, S: BisulcoLinearMAESettings) -> np.ndarray:
    d = S.crop * S.crop
    if not isinstance(X, np.ndarray) or X.ndim != 2 or X.shape[1] != d or not np.all(np.isfinite(X)):
        raise ParameterError("X", f"a finite (n, crop^2 = {d}) numpy array of crops", getattr(X, "shape", X))
    return X


def crops(S: BisulcoLinearMAESettings, seed: int) -> np.ndarray:
    """The page's data: ``n`` grey ``crop`` x ``crop`` training crops of ``dataset`` drawn by ``seed``, flattened to
    rows (float64) with the mean crop subtracted (the linear MAE has no bias)."""
    S, seed = _settings(S), positive_int("seed", seed, minimum=0)
    ds = data.load(S.dataset, "train", n=S.n, seed=seed, size=S.crop, channels=1)
    X = ds.images[:, 0].reshape(S.n, -1).double().numpy()
    return X - X.mean(0)


def data_config(S: BisulcoLinearMAESettings, seed: int) -> dict[str, Any]:
    """What :func:`crops` depends on: part of every config of the page."""
    S, seed = _settings(S), positive_int("seed", seed, minimum=0)
    return {"seed": seed, **S.pick("dataset", "n", "crop")}


def patch_indices(S: BisulcoLinearMAESettings) -> dict[int, Any]:
    """Patch index of every patch size the page uses (``patch_sizes``, those of ``thm1_configs`` and 4)."""
    S = _settings(S)
    sizes = sorted(set(S.patch_sizes) | {p for _, p in S.thm1_configs} | {4})
    return {p: lm.patch_index_2d(S.crop, S.crop, p) for p in sizes}


def lemma1_config(S: BisulcoLinearMAESettings, seed: int) -> dict[str, Any]:
    """The config of the stored result ``lemma1`` (the profile is added by the store)."""
    return {
        "what": "MC vs Lemma 1",
        "AB": "closed form m=0.5 p=4",
        **data_config(S, seed),
        **S.pick("k", "mask_ratios", "patch_sizes", "mc_draws"),
    }


def lemma1_table(X: np.ndarray, S: BisulcoLinearMAESettings, seed: int) -> dict[str, pd.DataFrame]:
    """Lemma 1 against Monte Carlo for the closed-form optimum at m = 0.5, p = 4, per (m, p) of ``mask_ratios`` x
    ``patch_sizes``: ``table`` with lemma1, mc, mc_se, z, and fixed_mc / fixed_z (fixed-count masks against the
    Bernoulli formula: the power check). Each Monte-Carlo estimate has its own generator from (seed, p, m)."""
    S, seed = _settings(S), positive_int("seed", seed, minimum=0)
    X, patch = _data(X, S), patch_indices(S)
    with threadpool_limits(1):
        cf = lm.closed_form(X, 0.5, patch[4], S.k)
        rows = []
        for m in S.mask_ratios:
            for p in S.patch_sizes:
                exact = lm.expected_loss(X, cf.A, cf.B, m, patch[p])
                rng = [seed, p, int(100 * m)]
                mc, se = lm.sampled_loss(X, cf.A, cf.B, m, patch[p], draws=S.mc_draws, rng=rng, return_se=True)
                fx, fse = lm.sampled_loss(
                    X, cf.A, cf.B, m, patch[p], draws=S.mc_draws, mask_mode="fixed", rng=[*rng, 1], return_se=True
                )
                rows.append(
                    {
                        "m": m,
                        "p": p,
                        "lemma1": exact,
                        "mc": mc,
                        "mc_se": se,
                        "z": (mc - exact) / se,
                        "fixed_mc": fx,
                        "fixed_z": (fx - exact) / fse,
                    }
                )
    return {"table": pd.DataFrame(rows)}


def lemma1_markdown(table: pd.DataFrame) -> str:
    """The page's Lemma 1 table (Markdown) from :func:`lemma1_table`'s ``table``."""
    _columns(table, ("m", "p", "lemma1", "mc", "mc_se", "z", "fixed_mc", "fixed_z"))
    head = (
        "| m | p | Lemma 1 | Monte Carlo ± s.e. | z | fixed-count masks: MC, z vs Lemma 1 |\n"
        "|---|---|---|---|---|---|\n"
    )
    return head + "\n".join(
        f"| {r.m:g} | {r.p} | {r.lemma1:.2f} | {r.mc:.2f} ± {r.mc_se:.2f} | {r.z:+.2f} | "
        f"{r.fixed_mc:.2f}, {r.fixed_z:+.1f} |"
        for r in table.itertuples()
    )


def _columns(table: Any, columns: tuple[str, ...]) -> None:
    if not isinstance(table, pd.DataFrame) or not set(columns) <= set(table.columns):
        raise ParameterError("table", "a table with columns " + ", ".join(columns), type(table).__name__)


def theorem1_config(S: BisulcoLinearMAESettings, seed: int) -> dict[str, Any]:
    """The config of the stored result ``theorem1`` (the profile is added by the store; ``seed`` is the data's)."""
    return {
        "what": "sampled-mask Adam + exact polish vs closed form",
        **data_config(S, seed),
        **S.pick("seeds", "thm1_configs", "k", "sgd_steps", "lr", "polish_steps", "polish_lr"),
    }


def theorem1_runs(X: np.ndarray, S: BisulcoLinearMAESettings, caps: Any = None) -> dict[str, Any]:
    """Theorem 1: per training seed and (m, p) of (0, 4) and ``thm1_configs``, sampled-mask Adam then ``polish_steps``
    on the exact expected loss (:func:`maelab.linear_mae.train_linear_mae`), against the closed form.

    Returns ``table`` (seed, m, p, closed_form, eig_ratio = lambda_k / lambda_k+1 of C, gap_* and angle_* after
    "sgd" and "polish", angle_pca at m = 0) and ``curve`` (step, exact expected loss) of both phases for the first
    seed at the last configuration's mask ratio. ``caps``: a dry run's limits, passed to the trainer.
    """
    S, X = _settings(S), _data(X, S)
    patch = patch_indices(S)
    rows, curve = [], None
    with threadpool_limits(1):
        n_threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            for s in S.seeds:
                for m, p in [[0.0, 4]] + [list(c) for c in S.thm1_configs]:
                    ids = patch[p]
                    cf = lm.closed_form(X, m, ids, S.k)
                    fit = lm.train_linear_mae(
                        X, m, ids, S.k, steps=S.sgd_steps, lr=S.lr, seed=s, objective="sampled", progress=False,
                        caps=caps,
                    )  # fmt: skip
                    pol = lm.train_linear_mae(
                        X, m, ids, S.k, steps=S.polish_steps, lr=S.polish_lr, seed=s, objective="expected",
                        init=(fit.A, fit.B), progress=False, caps=caps,
                    )  # fmt: skip
                    row = {
                        "seed": s,
                        "m": m,
                        "p": p,
                        "closed_form": cf.min_loss,
                        "eig_ratio": float(cf.eigvals[S.k - 1] / cf.eigvals[S.k]),
                    }
                    for name, f in (("sgd", fit), ("polish", pol)):
                        loss = lm.expected_loss(X, f.A, f.B, m, ids)
                        row[f"gap_{name}"] = (loss - cf.min_loss) / cf.min_loss
                        row[f"angle_{name}"] = float(lm.principal_angles(f.B.T, cf.B.T, degrees=True).max())
                    if m == 0.0:
                        vt = np.linalg.svd(X, full_matrices=False)[2]
                        row["angle_pca"] = float(lm.principal_angles(pol.B.T, vt[: S.k].T, degrees=True).max())
                    rows.append(row)
                    if s == S.seeds[0] and m == S.thm1_configs[-1][0]:
                        curve = np.array(
                            [[h["step"], h["expected_loss"]] for h in fit.history]
                            + [[S.sgd_steps + h["step"], h["expected_loss"]] for h in pol.history]
                        )
        finally:
            torch.set_num_threads(n_threads)
    return {"table": pd.DataFrame(rows), "curve": curve}


def theorem1_markdown(table: pd.DataFrame) -> str:
    """The page's Theorem 1 table (Markdown): per (m, p), the mean eigenvalue ratio and the worst gap and angle over
    seeds after SGD and after the polish, from :func:`theorem1_runs`' ``table``."""
    _columns(table, ("m", "p", "eig_ratio", "gap_sgd", "angle_sgd", "gap_polish", "angle_polish"))
    summary = (
        table.groupby(["m", "p"])
        .agg(
            eig_ratio=("eig_ratio", "mean"),
            gap_sgd=("gap_sgd", "max"),
            angle_sgd=("angle_sgd", "max"),
            gap_polish=("gap_polish", "max"),
            angle_polish=("angle_polish", "max"),
        )
        .reset_index()
    )
    head = (
        "Worst case over seeds:\n\n| m | p | λ_k/λ_{k+1} of C | gap after SGD | angle after SGD (°) | "
        "gap after polish | angle after polish (°) |\n|---|---|---|---|---|---|---|\n"
    )
    return head + "\n".join(
        f"| {r.m:g} | {r.p} | {r.eig_ratio:.2f} | {r.gap_sgd:.1e} | {r.angle_sgd:.2f} | "
        f"{r.gap_polish:.1e} | {r.angle_polish:.3f} |"
        for r in summary.itertuples()
    )


def spectrum_config(S: BisulcoLinearMAESettings, seed: int) -> dict[str, Any]:
    """The config of the stored result ``spectrum`` (the profile is added by the store)."""
    return {
        "what": "(1-m) eig(C) / Tr S",
        "p_for_m": 4,
        "m_for_p": 0.5,
        **data_config(S, seed),
        **S.pick("k", "spectrum_ratios", "patch_sizes"),
    }


def spectrum(X: np.ndarray, S: BisulcoLinearMAESettings) -> dict[str, np.ndarray]:
    """Eigenvalues of C scaled by (1 - m) / Tr X^T X: ``by_m`` (rows: ``spectrum_ratios`` at p = 4) and ``by_p``
    (rows: ``patch_sizes`` at m = 0.5), and ``angle_m`` / ``angle_p``, the largest principal angle (degrees) between
    each top-k subspace and PCA's."""
    S, X = _settings(S), _data(X, S)
    patch = patch_indices(S)
    out = {"by_m": [], "by_p": [], "angle_m": [], "angle_p": []}
    with threadpool_limits(1):
        trS = float(np.trace(X.T @ X))
        pca = lm.closed_form(X, 0.0, patch[4], S.k)
        for m in S.spectrum_ratios:
            cf = lm.closed_form(X, m, patch[4], S.k)
            out["by_m"].append((1 - m) * cf.eigvals / trS)
            out["angle_m"].append(float(lm.principal_angles(cf.B.T, pca.B.T, degrees=True).max()))
        for p in S.patch_sizes:
            cf = lm.closed_form(X, 0.5, patch[p], S.k)
            out["by_p"].append(0.5 * cf.eigvals / trS)
            out["angle_p"].append(float(lm.principal_angles(cf.B.T, pca.B.T, degrees=True).max()))
    return {k: np.asarray(v) for k, v in out.items()}


def lemma6_config(S: BisulcoLinearMAESettings, seed: int) -> dict[str, Any]:
    """The config of the stored result ``lemma6`` (the profile is added by the store)."""
    return {"what": "Lemma 6 terms vs MC", "p": 4, **data_config(S, seed), **S.pick("k", "taylor_ratios", "mc_draws")}


def lemma6_table(X: np.ndarray, S: BisulcoLinearMAESettings, seed: int) -> dict[str, pd.DataFrame]:
    """Lemma 6's terms (:func:`.taylor.lemma6_terms`) of the closed-form optimum at each of ``taylor_ratios`` (p = 4)
    against the Monte-Carlo loss: ``table`` with m, the terms, mc, mc_se and z."""
    S, seed = _settings(S), positive_int("seed", seed, minimum=0)
    X, patch = _data(X, S), patch_indices(S)
    rows = []
    with threadpool_limits(1):
        for m in S.taylor_ratios:
            cf = lm.closed_form(X, m, patch[4], S.k)
            terms = tl.lemma6_terms(X, cf.A, cf.B, m, patch[4])
            mc, se = lm.sampled_loss(
                X, cf.A, cf.B, m, patch[4], draws=S.mc_draws, rng=[seed, 6, int(100 * m)], return_se=True
            )
            rows.append({"m": m, **terms, "mc": mc, "mc_se": se, "z": (mc - terms["total"]) / se})
    return {"table": pd.DataFrame(rows)}


def taylor_config(S: BisulcoLinearMAESettings, seed: int) -> dict[str, Any]:
    """The config of the stored result ``taylor`` (the profile is added by the store)."""
    return {
        "what": "Lemma 4/5 vs MC, tanh autoencoder",
        "p": 4,
        **data_config(S, seed),
        **S.pick("k", "taylor_ratios", "taylor_draws"),
    }


def taylor_table(X: np.ndarray, S: BisulcoLinearMAESettings, seed: int) -> dict[str, Any]:
    """Lemmas 4-5 for the tanh autoencoder built on the closed-form linear MAE at m = 0.5, p = 4 (its scale ``s``:
    the standard deviation of ``X A``), per m of ``taylor_ratios``: ``table`` with m, mc, mc_se, lemma4, lemma5,
    and ``s``."""
    S, seed = _settings(S), positive_int("seed", seed, minimum=0)
    X, patch = _data(X, S), patch_indices(S)
    rows = []
    with threadpool_limits(1):
        cf = lm.closed_form(X, 0.5, patch[4], S.k)
        f = tl.TanhAutoencoder(cf.A, cf.B, s=float((X @ cf.A).std()))
        for m in S.taylor_ratios:
            mc, se = tl.nonlinear_sampled_loss(X, f, m, patch[4], draws=S.taylor_draws, rng=[seed, 4, int(100 * m)])
            rows.append(
                {
                    "m": m,
                    "mc": mc,
                    "mc_se": se,
                    "lemma4": tl.lemma4_loss(X, f, m, patch[4]),
                    "lemma5": tl.lemma5_loss(X, f, m, patch[4]),
                }
            )
    return {"table": pd.DataFrame(rows), "s": f.s}
