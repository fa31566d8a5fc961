"""The synthesis page's own measurement of the zoo's checkpoints, the config of its stored result, and the tables
and figure it assembles from the zoo's records (:func:`maelab.zoo.load_entries`).

:func:`geometry_config` / :func:`measure_geometry`: the Jacobian spread and attention distance
(:func:`maelab.papers.synthesis.geometry.geometry_row`) of every unit-1 model and the random init of each measured
seed (:func:`maelab.zoo.measured`). :func:`encoder_table`, :func:`probe_gains` and :func:`prediction_table` format
the records and verdicts for display; :func:`six_panels` draws the page's figure. Every number they show comes
from the records.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import zoo
from ..._validate import ParameterError
from ...options import DryRunLimits
from ..kong2023.evidence import series_stats
from .geometry import geometry_row
from .settings import SynthesisSettings

__all__ = [
    "ENCODER_COLUMNS",
    "geometry_config",
    "measure_geometry",
    "encoder_table",
    "probe_gains",
    "prediction_table",
    "six_panels",
]

#: the zoo record columns of :func:`encoder_table`, each with its title (accuracies shown in percent)
ENCODER_COLUMNS = {
    "linear_acc_cls": "[CLS] probe (%)",
    "linear_acc_mean": "mean-pool probe (%)",
    "knn_acc_mean": "20-NN, mean-pool (%)",
    "effective_rank_cls": "effective rank ([CLS])",
}


def _settings(S: Any) -> SynthesisSettings:
    if not isinstance(S, SynthesisSettings):
        raise ParameterError("S", "the synthesis page's SynthesisSettings", type(S).__name__)
    return S


def _need(frame: Any, columns, name: str) -> None:
    missing = set(columns) - set(getattr(frame, "columns", ()))
    if missing:
        raise ParameterError(name, f"a table with columns {sorted(columns)}", f"missing {sorted(missing)}")


def geometry_config(S: SynthesisSettings) -> dict[str, Any]:
    """The config of the stored result ``geometry``: the fingerprint of the measured zoo (its checkpoints'
    configs, :func:`maelab.zoo.fingerprint` of :func:`maelab.zoo.measured`) and the measurement's settings."""
    S = _settings(S)
    return {
        "what": "Jacobian spread and attention distance of the zoo's models, with each checkpoint's own check",
        "zoo": zoo.fingerprint(zoo.measured(S)),
        **S.pick("eval_ratio", "n_jac_images", "n_jac_pixels", "n_attn_images"),
    }


def measure_geometry(S: SynthesisSettings, device: str = "cpu", *, caps: DryRunLimits | None = None) -> dict:
    """``{"geometry": DataFrame}``, one row per model and measured seed: every ratio at masking unit 1 and the
    random init, each measured by :func:`~maelab.papers.synthesis.geometry.geometry_row` on the zoo's test images
    with the seed's masks, with each trained model's own learning check, one part per seed
    (:func:`maelab.zoo.measure_checkpoints`; the checkpoints are trained once where missing)."""

    S = _settings(S)

    def row(model, ratio, seed: int, tr, te) -> dict:
        return geometry_row(model, te.images.cpu(), S, seed=seed, caps=caps)

    return zoo.measure_checkpoints(zoo.measured(S), "geometry", row, device, caps=caps, with_random=True)


def encoder_table(entries, S: SynthesisSettings):
    """Per zoo model (the zoo's order, then the random init): the mean over seeds of the probes (in percent) and
    the effective rank of :data:`ENCODER_COLUMNS`, titled."""
    S = _settings(S)
    _need(entries, ["model", *ENCODER_COLUMNS], "entries")
    order = [zoo.label(*c) for c in zoo.configs(S)] + [zoo.RANDOM_INIT]
    tab = entries.groupby("model")[list(ENCODER_COLUMNS)].mean().reindex(order)
    if tab.isna().all(axis=1).any():
        raise ParameterError("entries", f"rows of every model {order}", sorted(set(entries.model)))
    tab[["linear_acc_cls", "linear_acc_mean", "knn_acc_mean"]] *= 100
    return tab.rename(columns=ENCODER_COLUMNS)


def probe_gains(entries, S: SynthesisSettings):
    """Per mask ratio (unit 1): the mean [CLS] and mean-pool probe over seeds minus the random init's mean, in
    points (columns ``linear_acc_cls``, ``linear_acc_mean``)."""
    S = _settings(S)
    cols = ["linear_acc_cls", "linear_acc_mean"]
    _need(entries, ["model", *cols], "entries")
    models = {zoo.label(r, 1): float(r) for r in S.mask_ratios}
    trained = entries[entries.model.isin(list(models))].assign(ratio=lambda d: d.model.map(models))
    rnd = entries[entries.model == zoo.RANDOM_INIT]
    if trained.empty or rnd.empty:
        raise ParameterError("entries", "rows of the unit-1 models and of the random init", sorted(set(entries.model)))
    gain = trained.groupby("ratio")[cols].mean()
    return 100 * (gain - rnd[cols].mean().to_numpy())


def prediction_table(predictions: Mapping[str, Mapping[str, str]], verdicts: Mapping[str, str]):
    """One row per synthesis claim: its statement (:data:`maelab.claims.REGISTRY`), what each paper predicts
    ("—" where a paper says nothing) and the zoo's verdict ("not measured" where the page decided none)."""
    import pandas as pd

    from ...claims import REGISTRY

    unknown = sorted(set(predictions) - set(REGISTRY))
    if unknown:
        raise ParameterError("predictions", "ids of registered claims", unknown)
    rows = [
        {
            "claim": REGISTRY[cid].statement,
            **{p: (t or "—") for p, t in pred.items()},
            "the zoo": verdicts.get(cid, "not measured"),
        }
        for cid, pred in predictions.items()
    ]
    return pd.DataFrame(rows)


def _panel(ax, frame, x: str, col: str, label: str, scale: float = 1.0, color: str = "tab:blue") -> None:
    """Thin per-seed lines of ``col`` against ``x`` and their mean ± s.e. over seeds."""
    for _, g in frame.groupby("seed"):
        g = g.sort_values(x)
        ax.plot(g[x], scale * g[col], color=color, lw=0.6, alpha=0.35)
    st = series_stats(frame, x, col)
    ax.errorbar(
        st.index, scale * st["mean"], yerr=scale * st["sem"], color=color, marker="o", ms=4, capsize=3, lw=1.6,
        label=label,
    )  # fmt: skip


def _note(ax, text: str) -> None:
    ax.text(0.02, 0.02, text, transform=ax.transAxes, fontsize=6.5, color="0.35", va="bottom")


def six_panels(entries, geometry, raw: Mapping[str, float] | None, S: SynthesisSettings):
    """The page's figure: probes, effective rank and PSNR against the ratio (top); Jacobian spread, attention
    distance against the training ratio and the probe against the masking unit (bottom), each with what the papers
    predict in grey. ``entries``: the zoo's records; ``geometry``: :func:`measure_geometry`'s table; ``raw``: the
    raw-pixel probe (or None). Returns the figure."""
    import matplotlib.pyplot as plt

    S = _settings(S)
    _need(entries, ["model", "seed", "ratio", "unit", "linear_acc_cls", "linear_acc_mean", "psnr"], "entries")
    _need(
        geometry,
        ["model", "seed", "jac_spread", "jac_spread_uniform", "attn_distance", "attn_distance_uniform"],
        "geometry",
    )
    ratio_models = {zoo.label(r, 1): float(r) for r in S.mask_ratios}
    trained = entries[entries.model.isin(list(ratio_models))]
    g = geometry[geometry.model.isin(list(ratio_models))].assign(ratio=lambda d: d.model.map(ratio_models))
    rnd = entries[entries.model == zoo.RANDOM_INIT]
    fig, axes = plt.subplots(2, 3, figsize=(12, 7), layout="constrained")
    ax = axes[0, 0]
    _panel(ax, trained, "ratio", "linear_acc_cls", "[CLS]", 100)
    _panel(ax, trained, "ratio", "linear_acc_mean", "mean-pool", 100, "tab:orange")
    ax.axhline(100 * rnd.linear_acc_cls.mean(), color="0.4", ls=":", lw=1.2, label="random init [CLS]")
    if raw:
        ax.axhline(100 * raw["linear_acc"], color="k", ls="--", lw=1, label="raw pixels")
    ax.set(xlabel="mask ratio", ylabel="linear probe (%)")
    ax.legend(fontsize=6.5, frameon=False, loc="upper left")
    _note(ax, "Zhang, Kong: interior optimum; Bisulco: flat")
    ax = axes[0, 1]
    _panel(ax, trained, "ratio", "effective_rank_cls", "[CLS]")
    ax.set(xlabel="mask ratio", ylabel="effective rank")
    _note(ax, "Zhang: rank tracks the probe")
    ax = axes[0, 2]
    _panel(ax, trained, "ratio", "psnr", "MAE")
    ax.axhline(rnd.psnr.mean(), color="0.4", ls=":", lw=1.2, label="random init")
    ax.set(xlabel="mask ratio", ylabel="PSNR, unmasked (dB)")
    _note(ax, "Kong: falls from 0.1 to 0.75")
    ax = axes[1, 0]
    _panel(ax, g, "ratio", "jac_spread", "MAE")
    ax.axhline(geometry.jac_spread_uniform.mean(), color="k", ls="--", lw=1, label="uniform over visible pixels")
    ax.set(xlabel="mask ratio (training)", ylabel=f"Jacobian 50 % radius (px), masks at {S.eval_ratio:g}")
    ax.legend(fontsize=6.5, frameon=False)
    _note(ax, "Bisulco, Kong: grows with the ratio")
    ax = axes[1, 1]
    _panel(ax, g, "ratio", "attn_distance", "MAE")
    ax.axhline(geometry.attn_distance_uniform.mean(), color="k", ls="--", lw=1, label="uniform attention")
    ax.set(xlabel="mask ratio (training)", ylabel="attention distance (tokens)")
    ax.legend(fontsize=6.5, frameon=False)
    _note(ax, "Kong: grows with the ratio; Cao: global at any ratio")
    ax = axes[1, 2]
    by_unit = entries[entries.model.isin([zoo.label(S.unit_ratio, u) for u in S.units])]
    _panel(ax, by_unit, "unit", "linear_acc_cls", "[CLS]", 100)
    ax.set(xlabel=f"masking unit, tokens (ratio {S.unit_ratio:g})", ylabel="linear probe (%)", xticks=list(S.units))
    _note(ax, "Kong: up from the smallest unit, extreme hurts")
    return fig
