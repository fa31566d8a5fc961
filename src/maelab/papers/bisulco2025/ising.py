"""The ``bisulco_ising`` page's computation: spatial scale of the optimal linear MAE, AE and DAE on Ising samples.

**Paper-specific:** supplement E of Bisulco et al. (Figs. 20-21). :func:`ising_scales` draws each seed's Ising
sample set at T_c, replaces it by its translation average (:func:`.spatial.translation_averaged_data`), solves the
closed forms (:func:`maelab.linear_mae.closed_forms`, :func:`maelab.linear_mae.dae_closed_forms`) of every model
at every rank of :func:`.evidence.ising_ranks` and measures each map ``W = AB`` with
:func:`.spatial.spatial_scale`. :func:`scales_config` is the config the result is stored under.

The models are the AE (``m = 0``; the patch size does not matter, recorded as 1), the MAE at each (m, p) of
:func:`mae_configs` and the DAE (``m`` holds its noise level ``dae_sigma``, ``p`` is 0); :func:`model_key` names
each one in the stored arrays. A decay length above ``10 L`` (no decay within the lattice) is stored as ``10 L``
with ``no_decay`` set: the tables mark it instead of averaging an infinity.

:func:`scale_table` and :func:`rank_verdicts` turn the stored table into the page's two Markdown tables.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from maelab import data
from maelab import linear_mae as lm
from maelab._validate import ParameterError

from . import spatial
from .claims import CLAIMS
from .evidence import ising_evidence, ising_figure_configs, ising_ranks, scale_summary
from .settings import BisulcoIsingSettings

__all__ = [
    "model_key",
    "mae_configs",
    "scales_config",
    "ising_scales",
    "scale_table",
    "rank_verdicts",
    "decay_lengths",
]

#: A decay length above CAP_FACTOR * L (no decay within the lattice) is stored as that cap, flagged ``no_decay``.
CAP_FACTOR = 10.0


def _settings(S: Any) -> BisulcoIsingSettings:
    if not isinstance(S, BisulcoIsingSettings):
        raise ParameterError("S", "the bisulco_ising page's settings (BisulcoIsingSettings)", type(S).__name__)
    return S


def model_key(kind: str, m: float, p: int, k: int) -> str:
    """Name of a model's arrays in the stored result: ``{kind}_m{100 m}_p{p}_k{k}`` (m, or sigma, in hundredths)."""
    if kind not in ("AE", "MAE", "DAE"):
        raise ParameterError("kind", "one of 'AE', 'MAE', 'DAE'", kind)
    return f"{kind}_m{int(round(100 * m))}_p{p}_k{k}"


def mae_configs(S: BisulcoIsingSettings) -> list[tuple[float, int]]:
    """The sorted (m, p) of every MAE computed: the m-series at ``p_for_m``, the p-series at ``m_for_p`` and the
    configurations of Figs. 20-21 (:func:`.evidence.ising_figure_configs`). Every patch size divides ``L`` (the
    settings refuse one that does not)."""
    S = _settings(S)
    fig20, fig21 = ising_figure_configs(S)
    return sorted(
        {(m, S.p_for_m) for m in S.mask_ratios} | {(S.m_for_p, p) for p in S.patch_sizes} | set(fig20) | set(fig21)
    )


def scales_config(S: BisulcoIsingSettings) -> dict[str, Any]:
    """The config of the stored result ``scales`` (the profile is added by the store)."""
    S = _settings(S)
    return {
        "what": "decay length and mass radius of AB",
        "T": "T_c",
        "cap": "10 L",
        "translation_average": True,
        **S.pick("L", "n", "seeds", "rank_fracs", "p_for_m", "mask_ratios", "m_for_p", "patch_sizes", "dae_sigma", "q"),
    }


def ising_scales(S: BisulcoIsingSettings) -> dict[str, Any]:
    """Decay length and mass radius of every model at every rank and seed (see the module docstring).

    Returns ``table`` (seed, k, model, m, p, decay_length, no_decay, mass_radius), ``radii`` and, per model key,
    ``profile_<key>`` (seeds, radii: mean ``|W_ij|`` against the torus distance) and, for the first seed at the
    claims' rank, ``fields_<key>`` (6, L, L): the centred receptive fields of a pixel at a patch corner and of one
    inside the largest patch, then the first four encoder columns.
    """
    S = _settings(S)
    L, d, pbig = S.L, S.L * S.L, max(S.patch_sizes)
    ranks, configs, cap = ising_ranks(S), mae_configs(S), CAP_FACTOR * S.L
    rows, profiles, fields = [], {}, {}
    centre_pix = (L // 2) * L + L // 2  # an output pixel at a patch corner for even p
    off_pix = (L // 2 + pbig // 2 - 1) * L + L // 2 + pbig // 2 - 1  # one inside the largest patch
    with threadpool_limits(1):
        for s in S.seeds:
            ds = data.load("ising", "train", n=S.n, seed=s, L=L, progress=False)
            X = ds.latents["spins"].reshape(S.n, d).double().numpy()
            Z = spatial.translation_averaged_data(X, (L, L))
            models = [("AE", 0.0, 1)] + [("MAE", m, p) for m, p in configs] + [("DAE", S.dae_sigma, 0)]
            fits = {}  # one eigendecomposition per model serves every rank (the same numbers as one per rank)
            for kind, m, p in models:
                cfs = (
                    lm.dae_closed_forms(Z, m, ranks)
                    if kind == "DAE"
                    else lm.closed_forms(Z, m, lm.patch_index_2d(L, L, p), ranks)
                )
                fits.update({(kind, m, p, k): cf for k, cf in zip(ranks, cfs)})
            for k in ranks:
                for kind, m, p in models:
                    cf = fits[(kind, m, p, k)]
                    W = cf.A @ cf.B
                    sc = spatial.spatial_scale(W, (L, L), q=S.q)
                    ell = sc["decay_length"]
                    rows.append(
                        {
                            "seed": s,
                            "k": k,
                            "model": kind,
                            "m": m,
                            "p": p,
                            "decay_length": min(ell, cap),
                            "no_decay": bool(ell > cap),
                            "mass_radius": sc["mass_radius"],
                        }
                    )
                    name = model_key(kind, m, p, k)
                    profiles.setdefault(name, []).append(sc["profile"])
                    profiles["radii"] = sc["radii"]
                    if s == S.seeds[0] and k == ranks[0]:
                        fc = spatial.centred_fields(W, (L, L), [centre_pix, off_pix]).astype(np.float32)
                        enc = cf.A[:, :4].T.reshape(4, L, L).astype(np.float32)
                        fields[name] = np.concatenate([fc, enc])
    out = {"table": pd.DataFrame(rows), "radii": profiles.pop("radii")}
    out.update({f"profile_{k}": np.asarray(v) for k, v in profiles.items()})
    out.update({f"fields_{k}": v for k, v in fields.items()})
    return out


def _scales_table(table: Any) -> pd.DataFrame:
    need = {"seed", "k", "model", "m", "p", "decay_length", "no_decay", "mass_radius"}
    if not isinstance(table, pd.DataFrame) or not need <= set(table.columns):
        raise ParameterError("table", "the stored scales table (columns " + ", ".join(sorted(need)) + ")", table)
    return table


def scale_table(table: pd.DataFrame, ranks: Any) -> str:
    """Markdown table of decay length and mass radius (mean ± s.e. over seeds, :func:`.evidence.scale_summary`)
    per rank in ``ranks`` and model; a model whose decay length hit the cap in any seed is marked."""
    table = _scales_table(table)
    rows = []
    for k in ranks:
        dl, mr = scale_summary(table, "decay_length", k), scale_summary(table, "mass_radius", k)
        flag = table[table.k == k].groupby(["model", "m", "p"])["no_decay"].any().reset_index()
        for a, b, f in zip(dl.itertuples(), mr.itertuples(), flag.itertuples()):
            name = {"AE": "AE (PCA)", "DAE": f"DAE σ = {a.m:g}"}.get(a.model, f"MAE m = {a.m:g}, p = {a.p}")
            cap = " (cap: no decay)" if f.no_decay else ""
            rows.append(f"| {k} | {name} | {a.mean:.2f} ± {a.se:.2f}{cap} | {b.mean:.2f} ± {b.se:.2f} |")
    return "| rank k | model | decay length ℓ (px) | mass radius (px) |\n|---|---|---|---|\n" + "\n".join(rows)


def rank_verdicts(table: pd.DataFrame, S: BisulcoIsingSettings) -> str:
    """Markdown table of the page's four claim rows decided at every rank of :func:`.evidence.ising_ranks`: the
    same criteria (the rows' own) on the same measurements, to show what the choice of rank does."""
    table, S = _scales_table(table), _settings(S)
    rows = {c.id: c for c in CLAIMS}
    lines = []
    for k in ising_ranks(S):
        for cid, ev in ising_evidence(table, S, k).items():
            v, why = rows[cid].criterion.decide(ev)
            lines.append(f"| {k} | {cid} | {v} | {why} |")
    return "| rank k | claim | verdict | reason |\n|---|---|---|---|\n" + "\n".join(lines)


def decay_lengths(table: pd.DataFrame, S: BisulcoIsingSettings) -> dict[str, float]:
    """The decay lengths the page's text quotes, at the claims' rank (the first of :func:`.evidence.ising_ranks`),
    each a mean over seeds: ``ae``, ``dae`` and ``mae_min``, the per-seed shortest of the MAEs of Figs. 20-21 (the
    two of Fig. 20 and Fig. 21's high-m model) averaged over seeds."""
    table, S = _scales_table(table), _settings(S)
    main = table[table.k == ising_ranks(S)[0]].set_index(["seed", "model", "m", "p"])["decay_length"]

    def ell(model, m, p):
        return np.array([main[(s, model, m, p)] for s in S.seeds])

    fig20, fig21 = ising_figure_configs(S)
    mae_min = np.min([ell("MAE", m, p) for m, p in dict.fromkeys(fig20 + [fig21[0]])], axis=0)
    return {
        "ae": float(ell("AE", 0.0, 1).mean()),
        "dae": float(ell("DAE", S.dae_sigma, 0).mean()),
        "mae_min": float(mae_min.mean()),
    }
