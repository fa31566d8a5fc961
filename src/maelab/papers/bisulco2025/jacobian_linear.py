"""The linear part of the ``bisulco_jacobians`` page: weight maps of the optimal linear MAE, AE and DAE on crops.

**Paper-specific:** Bisulco et al.'s Fig. 13C. For centred grey crops (:func:`crops`) the optimal linear models are
closed forms (:func:`.locality.linear_weights`: the MAE, and the AE at m = 0; :func:`maelab.linear_mae.dae_closed_form`:
the DAE); the weight map of an output pixel is its column of ``W = A B`` (:func:`.jacobians.weight_maps`).
:func:`summarise` turns the maps of the central output pixels (at least ``lin_margin`` from the border) into a
spread (mean half-mass radius, :func:`.locality.map_spread`) and a normalised profile against distance.

Two stored results: ``linear_models`` (:func:`linear_models`: spreads per data seed and profiles of the first, for
every dataset, patch size, mask ratio and noise level; config :func:`linear_config`) and ``rank_panel``
(:func:`rank_panel`: spread against the bottleneck k on one data seed; config :func:`rank_config`).
:func:`linear_table` and :func:`example_weights` are the page's table and weight-map figure.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from maelab import data, linear_mae, metrics
from maelab._validate import ParameterError, one_of, positive_int

from . import jacobians as J
from . import locality as loc
from .evidence import linear_choice
from .settings import BisulcoJacobiansSettings

__all__ = [
    "LIN_READS",
    "PARTS",
    "crops",
    "summarise",
    "linear_config",
    "linear_models",
    "unpack_linear",
    "linear_table",
    "example_weights",
    "rank_config",
    "rank_panel",
]

#: The settings the linear part reads (:func:`crops`, :func:`summarise`, :func:`linear_models`); the bottleneck k
#: is listed in the configs itself.
LIN_READS = (
    "lin_size",
    "lin_n",
    "lin_patch_sizes",
    "lin_mask_ratios",
    "dae_sigmas",
    "lin_margin",
    "lin_seeds",
    "lin_datasets",
    "q",
)
#: The arrays :func:`linear_models` stores per dataset (as ``<dataset>__<part>``: the store keeps top-level arrays).
PARTS = ("spread_mae", "spread_ae", "spread_dae", "profile_mae", "profile_ae", "profile_dae")


def _settings(S: Any) -> BisulcoJacobiansSettings:
    if not isinstance(S, BisulcoJacobiansSettings):
        raise ParameterError("S", "the bisulco_jacobians page's settings (BisulcoJacobiansSettings)", type(S).__name__)
    return S


def _dataset(S: BisulcoJacobiansSettings) -> str:
    """The dataset of the figures on one data seed: natural crops when computed, else the first."""
    return "natural" if "natural" in S.lin_datasets else S.lin_datasets[0]


def crops(S: BisulcoJacobiansSettings, name: str, data_seed: int) -> np.ndarray:
    """``lin_n`` grey ``lin_size`` crops of dataset ``name`` drawn by ``data_seed``, flattened (float64) and centred
    over the crops."""
    S = _settings(S)
    one_of("name", name, S.lin_datasets)
    data_seed = positive_int("data_seed", data_seed, minimum=0)
    x = data.load(name, "train", n=S.lin_n, seed=data_seed, size=S.lin_size, channels=1, progress=False).images
    x = x.reshape(len(x), -1).double().numpy()
    return x - x.mean(0)


def summarise(W: Any, S: BisulcoJacobiansSettings) -> tuple[float, np.ndarray]:
    """(spread, normalised profile) of the central output pixels' weight maps of the linear map ``W`` (d, d): the
    mean half-mass radius (fraction ``q``) and the mean profile up to ``lin_size // 2``."""
    S = _settings(S)
    D = S.lin_size
    cen = loc.central_pixels(D, D, S.lin_margin)
    maps = J.weight_maps(W, D, D)[cen[:, 0] * D + cen[:, 1]]
    return float(loc.map_spread(maps, cen, S.q).mean()), loc.mean_profile(maps, cen, D // 2)


def linear_config(S: BisulcoJacobiansSettings) -> dict[str, Any]:
    """The config of the stored result ``linear_models`` (the profile is added by the store)."""
    S = _settings(S)
    return {"what": "linear MAE / AE / DAE weight spreads", "k": linear_choice(S)["K"], **S.pick(*LIN_READS)}


def linear_models(S: BisulcoJacobiansSettings) -> dict[str, np.ndarray]:
    """Spreads and profiles of the AE, the MAE at every (p, m) of ``lin_patch_sizes`` x ``lin_mask_ratios`` and the
    DAE at every noise of ``dae_sigmas``, all at the bottleneck k of :func:`.evidence.linear_choice`.

    Per dataset, arrays ``<dataset>__<part>`` (:data:`PARTS`): spreads per data seed (``spread_mae`` (seeds, p, m),
    ``spread_ae`` (seeds,), ``spread_dae`` (seeds, sigma)) and the profiles of the first data seed.
    """
    S = _settings(S)
    D, K = S.lin_size, linear_choice(S)["K"]
    ps, ms, sigmas, seeds, n_r = S.lin_patch_sizes, S.lin_mask_ratios, S.dae_sigmas, S.lin_seeds, D // 2 + 1
    out = {}
    for name in S.lin_datasets:
        sp_mae = np.zeros((len(seeds), len(ps), len(ms)))
        sp_ae = np.zeros(len(seeds))
        sp_dae = np.zeros((len(seeds), len(sigmas)))
        pr_mae = np.zeros((len(ps), len(ms), n_r))
        pr_ae, pr_dae = None, np.zeros((len(sigmas), n_r))
        for si, ds in enumerate(seeds):
            X = crops(S, name, ds)
            sp_ae[si], prof = summarise(loc.linear_weights(X, 0.0, ps[0], K, D, D), S)
            pr_ae = prof if si == 0 else pr_ae
            for a, p in enumerate(ps):
                for b, m in enumerate(ms):
                    sp_mae[si, a, b], prof = summarise(loc.linear_weights(X, m, p, K, D, D), S)
                    if si == 0:
                        pr_mae[a, b] = prof
            for c, s in enumerate(sigmas):
                A, B, _, _ = linear_mae.dae_closed_form(X, s, K)
                sp_dae[si, c], prof = summarise(A @ B, S)
                if si == 0:
                    pr_dae[c] = prof
        parts = dict(zip(PARTS, (sp_mae, sp_ae, sp_dae, pr_mae, pr_ae, pr_dae)))
        out.update({f"{name}__{key}": v for key, v in parts.items()})  # the store keeps top-level arrays
    return out


def unpack_linear(result: Any, S: BisulcoJacobiansSettings) -> dict[str, dict[str, np.ndarray]]:
    """The stored ``linear_models`` result as dataset -> part -> array."""
    S = _settings(S)
    try:
        return {name: {key: np.asarray(result[f"{name}__{key}"]) for key in PARTS} for name in S.lin_datasets}
    except (KeyError, TypeError) as e:
        raise ParameterError(
            "result", "the stored linear_models result of these settings", type(result).__name__
        ) from e


def linear_table(lin: dict, S: BisulcoJacobiansSettings) -> pd.DataFrame:
    """Per dataset and model, the mean half-mass radius over data seeds and the decay length of the first seed's
    normalised profile over distances >= 1 px (:func:`maelab.metrics.decay_length`)."""
    S = _settings(S)
    r = np.arange(S.lin_size // 2 + 1)
    rows = []
    for name, L in lin.items():
        if not isinstance(L, dict) or set(PARTS) - set(L):
            raise ParameterError("lin", "dataset -> the arrays of unpack_linear", name)

        def row(model, spread, profile, name=name):
            return {
                "data": name,
                "model": model,
                "half-mass radius (px)": spread.mean(),
                "decay length (px)": metrics.decay_length(r[1:], profile[1:]),
            }

        rows.append(row("AE (m = 0)", L["spread_ae"], L["profile_ae"]))
        rows += [row(f"DAE σ = {s}", L["spread_dae"][:, c], L["profile_dae"][c]) for c, s in enumerate(S.dae_sigmas)]
        for a, p in enumerate(S.lin_patch_sizes):
            for b, m in enumerate(S.lin_mask_ratios):
                rows.append(row(f"MAE p = {p}, m = {m}", L["spread_mae"][:, a, b], L["profile_mae"][a, b]))
    return pd.DataFrame(rows)


def example_weights(S: BisulcoJacobiansSettings) -> list[tuple[str, np.ndarray]]:
    """(title, W) of the weight-map figure on the first data seed: the AE, the DAE at the middle noise level, the
    MAE at the claims' patch size (:func:`.evidence.linear_choice`) with the smallest and largest mask ratio, and
    the MAE at the smallest patch size with the claims' mask ratio. Computed, not stored (a few closed forms)."""
    S = _settings(S)
    D, choice = S.lin_size, linear_choice(S)
    K, p_lin, m_lin = choice["K"], choice["p"], choice["m"]
    X0 = crops(S, _dataset(S), S.lin_seeds[0])
    ps, ms, sigma = S.lin_patch_sizes, S.lin_mask_ratios, S.dae_sigmas[len(S.dae_sigmas) // 2]
    shown = [("AE", loc.linear_weights(X0, 0.0, ps[0], K, D, D))]
    A_, B_, _, _ = linear_mae.dae_closed_form(X0, sigma, K)
    shown.append((f"DAE σ = {sigma}", A_ @ B_))
    shown += [(f"MAE p = {p_lin}, m = {m}", loc.linear_weights(X0, m, p_lin, K, D, D)) for m in (ms[0], ms[-1])]
    shown += [(f"MAE p = {ps[0]}, m = {m_lin}", loc.linear_weights(X0, m_lin, ps[0], K, D, D))]
    return shown


def rank_config(S: BisulcoJacobiansSettings) -> dict[str, Any]:
    """The config of the stored result ``rank_panel`` (the profile is added by the store)."""
    S = _settings(S)
    choice = linear_choice(S)
    return {
        "what": "spread against the bottleneck k",
        "m": choice["m"],
        "p": choice["p"],
        "sigma": S.dae_sigmas[len(S.dae_sigmas) // 2],
        **S.pick(*LIN_READS, "rank_fracs"),
    }


def rank_panel(S: BisulcoJacobiansSettings) -> dict[str, list]:
    """Spread of the AE, the MAE at the claims' (p, m) and the DAE at the middle noise level against the bottleneck
    k = ``rank_fracs`` * d (distinct, at least 1), on the first data seed: ``k``, ``ae``, ``mae``, ``dae``."""
    S = _settings(S)
    D, choice = S.lin_size, linear_choice(S)
    X = crops(S, _dataset(S), S.lin_seeds[0])
    ks = sorted({max(1, int(round(f * D * D))) for f in S.rank_fracs})
    sigma = S.dae_sigmas[len(S.dae_sigmas) // 2]
    out = {"k": ks, "ae": [], "mae": [], "dae": []}
    for k in ks:
        out["ae"].append(summarise(loc.linear_weights(X, 0.0, S.lin_patch_sizes[0], k, D, D), S)[0])
        out["mae"].append(summarise(loc.linear_weights(X, choice["m"], choice["p"], k, D, D), S)[0])
        A, B, _, _ = linear_mae.dae_closed_form(X, sigma, k)
        out["dae"].append(summarise(A @ B, S)[0])
    return out
