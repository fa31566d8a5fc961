"""The ``cao_decoder`` page's runs and the tables and per-layer aggregates it shows.

:func:`run_config` / :func:`train_run` are one trained run per (variant, seed) (the stored result ``run_<v>_s<s>``,
computed by :func:`maelab.papers.cao2022.trained.run_variant`); :func:`mean_predictor_config` /
:func:`mean_predictor` the reference loss of predicting each patch's mean (``mean_predictor``). The configs list
everything the computations read; the profile is added by the store.

The rest reads the stored runs (``runs``: ``{(variant, seed): result}``, each with the frames and arrays of
``run_variant``) and only aggregates them for display: :func:`run_table`, :func:`per_layer`, :func:`change_table`,
:func:`top_block`, :func:`attention_display`, :func:`distance_profile`. The claims' evidence is in
:mod:`maelab.papers.cao2022.evidence`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from maelab import experiments
from maelab._validate import ParameterError
from maelab.options import DryRunLimits

from . import trained
from .evidence import change_per_seed
from .settings import CaoDecoderSettings

#: test images whose read-outs each run keeps as examples, and the seed of the analysis masks
N_EXAMPLES, MASK_SEED = 4, 0


def _settings(settings: Any) -> CaoDecoderSettings:
    if not isinstance(settings, CaoDecoderSettings):
        raise ParameterError("settings", "the cao_decoder page's CaoDecoderSettings", type(settings).__name__)
    return settings


def _runs(runs: Any, variants: Any, seeds: Any) -> None:
    missing = [(v, s) for v in variants for s in seeds if (v, s) not in runs]
    if missing:
        raise ParameterError("runs", "a stored run for every (variant, seed) asked for", missing[:3])


def run_config(settings: CaoDecoderSettings, variant: str, seed: int) -> dict[str, Any]:
    """The config of the stored run ``run_<variant>_s<seed>``: what :func:`train_run` reads."""
    S = _settings(settings)
    return {
        "what": "one trained micro MAE: loss curve, probe, read-outs, layer changes, attention",
        "spec": trained.spec_for(S, variant, seed).to_config(),
        "variant": variant,
        "n_examples": N_EXAMPLES,
        "mask_seed": MASK_SEED,
        **S.pick("n_loss", "n_eval", "n_probe"),
    }


def train_run(
    settings: CaoDecoderSettings,
    variant: str,
    seed: int,
    *,
    device: str = "cpu",
    progress: bool | None = None,
    caps: DryRunLimits | None = None,
) -> dict[str, Any]:
    """Pre-train and measure ``variant`` with ``seed`` under the page's settings
    (:func:`maelab.papers.cao2022.trained.run_variant` on :func:`maelab.papers.cao2022.trained.spec_for`)."""
    S = _settings(settings)
    return trained.run_variant(
        trained.spec_for(S, variant, seed),
        n_loss=S.n_loss,
        n_eval=S.n_eval,
        n_probe=S.n_probe,
        n_examples=N_EXAMPLES,
        mask_seed=MASK_SEED,
        device=device,
        progress=progress,
        caps=caps,
    )


def mean_predictor_config(settings: CaoDecoderSettings) -> dict[str, Any]:
    """The config of the stored result ``mean_predictor``: what :func:`mean_predictor` reads."""
    S = _settings(settings)
    return {
        "what": "reconstruction loss of predicting every patch's own mean (0 in normalised-pixel space), all patches "
        "of the loss images",
        **S.pick("dataset", "n_test", "n_loss", "patch_size"),
    }


def mean_predictor(settings: CaoDecoderSettings) -> dict[str, float]:
    """``{"loss": ...}``: :func:`maelab.papers.cao2022.trained.mean_predictor_loss` on the first ``n_loss`` test
    images. The model only supplies the patching and the normalised-pixel loss, so which variant and seed build it
    does not matter; the first seed's softmax model does."""
    S = _settings(settings)
    spec = trained.spec_for(S, "softmax", S.seeds[0])
    _, te = experiments.load_data(spec)
    return {"loss": trained.mean_predictor_loss(experiments.build_model(spec), te.images[: S.n_loss])}


def _pct(x: float, digits: int) -> str:
    return "—" if np.isnan(x) else f"{100 * x:.{digits}f} %"


def run_table(summary: pd.DataFrame, ref_loss: float, labels: Mapping[str, str]) -> pd.DataFrame:
    """The page's table of runs, formatted: one row per row of ``summary`` (each run's stored ``summary`` with
    ``variant``, ``seed`` and the ``learned`` verdict of its precondition); ``ref_loss``: the mean predictor's loss;
    ``labels``: the page's name of each variant. A drop is "—" where the loss is not a number (a diverged run)."""
    need = ("variant", "seed", "init_loss", "final_loss", "learned", "init_probe_acc", "probe_acc", "diverged")
    if any(c not in getattr(summary, "columns", ()) for c in need + ("train_seconds",)):
        got = list(getattr(summary, "columns", []))
        raise ParameterError("summary", "a table with columns " + ", ".join(need) + ", train_seconds", got)
    return pd.DataFrame(
        {
            "variant": summary.variant.map(labels),
            "seed": summary.seed,
            "test loss at init": summary.init_loss.map("{:.3f}".format),
            "trained": summary.final_loss.map("{:.3f}".format),
            "drop": (1 - summary.final_loss / summary.init_loss).map(lambda x: _pct(x, 0)),
            "below the mean predictor": (1 - summary.final_loss / ref_loss).map(lambda x: _pct(x, 1)),
            "learned": summary.learned.map({True: "yes", False: "no"}),
            "probe, random init (%)": (100 * summary.init_probe_acc).map("{:.1f}".format),
            "probe, trained (%)": (100 * summary.probe_acc).map(lambda x: "—" if np.isnan(x) else f"{x:.1f}"),
            "diverged": summary.diverged.map(lambda m: "no" if not m else f"epoch {trained.diverged_at(m)}"),
            "training (s)": summary.train_seconds.map("{:.0f}".format),
        }
    )


def per_layer(
    runs: Mapping, ok: Mapping[str, Sequence[int]], key: str, frame: str, value: str, part: str | None = None
) -> dict[str, tuple[np.ndarray, ...]]:
    """Per variant with at least one learned seed (``ok``: variant -> learned seeds): ``(layers, mean over seeds,
    standard error over seeds, standard deviation over images)`` of ``value`` in each run's frame ``key``, indexed
    by the column ``frame``; each seed first averaged over its images. ``part``: keep only the rows of that part
    (the ``changes`` frame: "encoder" or "decoder"). One seed: the standard error is NaN."""
    out = {}
    for v, seeds in ok.items():
        if not seeds:
            continue
        _runs(runs, [v], seeds)
        frames = [runs[v, s][key] for s in seeds]
        if part is not None:
            frames = [f[f.part == part] for f in frames]
        rows = pd.concat([f.assign(seed=s) for f, s in zip(frames, seeds)])
        if frame not in rows.columns or value not in rows.columns:
            raise ParameterError("frame, value", f"columns of the runs' {key!r} frame", (frame, value))
        per_seed = rows.groupby(["seed", frame])[value].mean().unstack(frame)
        se = per_seed.std(ddof=1) / np.sqrt(len(per_seed)) if len(per_seed) > 1 else per_seed.mean() * np.nan
        out[v] = (
            per_seed.columns.to_numpy(),
            per_seed.mean().to_numpy(),
            se.to_numpy(),
            rows.groupby(frame)[value].std().to_numpy(),
        )
    return out


def change_table(runs: Mapping, ok: Mapping[str, Sequence[int]], labels: Mapping[str, str]) -> pd.DataFrame:
    """Per variant (in the order of ``ok``): the seeds that learned, the largest block change (mean ± s.d. over
    those seeds of each seed's largest mean change, :func:`maelab.papers.cao2022.evidence.change_per_seed`) and the
    mean block change; "—" without a learned seed."""
    rows = []
    for v, seeds in ok.items():
        mx, mn = (change_per_seed(runs, v, seeds, stat) for stat in ("max", "mean"))
        spread = np.std(list(mx.values()), ddof=1) if len(mx) > 1 else float("nan")
        rows.append(
            {
                "variant": labels[v],
                "seeds that learned": len(mx),
                "largest block change (mean ± s.d. over seeds)": f"{np.mean(list(mx.values())):.2f} ± {spread:.2f}"
                if mx
                else "—",
                "mean block change": f"{np.mean(list(mn.values())):.2f}" if mn else "—",
            }
        )
    return pd.DataFrame(rows)


def top_block(runs: Mapping, seeds: Sequence[int], variant: str = "softmax") -> str:
    """In words: the block (encoder or decoder) with the largest mean relative change over the learned ``seeds`` of
    ``variant`` (all their images pooled) and the range of the other blocks' means."""
    if not seeds:
        return f"no {variant} run learned"
    _runs(runs, [variant], seeds)
    allc = pd.concat([runs[variant, s]["changes"] for s in seeds]).groupby(["part", "block"]).change.mean()
    (p_top, b_top), top = allc.idxmax(), float(allc.max())
    rest = allc.drop((p_top, b_top))
    if not len(rest):
        return f"{p_top} block {b_top}"
    return (
        f"{p_top} block {b_top} (mean change {top:.2f}); the other blocks range from {rest.min():.2f} to "
        f"{rest.max():.2f}"
    )


ATTENTION_HEADERS = {
    "visible": "mass on visible",
    "masked": "mass on mask tokens",
    "cls": "mass on [CLS]",
    "far_fraction": "visible mass beyond 8 neighbours",
    "r2": "R² on visible values",
    "r2_chance": "R² chance (k/h)",
}


def attention_display(
    att: pd.DataFrame, variants: Sequence[str], labels: Mapping[str, str], far_ref: float
) -> pd.DataFrame:
    """:func:`maelab.papers.cao2022.evidence.attention_table` as the page shows it: per variant (in the order of
    ``variants``, those with a learned run) each column's mean ± s.d. over seeds (the mean alone for one seed), then
    a row "uniform attention (reference)" with ``far_ref``, the far fraction of uniform attention."""
    if any(c not in getattr(att, "columns", ()) for c in ("variant", *ATTENTION_HEADERS)):
        raise ParameterError("att", "the table of evidence.attention_table", list(getattr(att, "columns", [])))

    def fmt(x):
        return f"{x.mean():.3f} ± {x.std(ddof=1):.3f}" if len(x) > 1 else f"{x.mean():.3f}"

    tab = att.groupby("variant")[list(ATTENTION_HEADERS)].agg(fmt)
    tab = tab.reindex([v for v in variants if v in tab.index])
    tab.index = [labels[v] for v in tab.index]
    tab.columns = list(ATTENTION_HEADERS.values())
    tab.loc["uniform attention (reference)"] = ["", "", "", f"{far_ref:.3f}", "", ""]
    return tab


def distance_profile(runs: Mapping, variant: str, seeds: Sequence[int]) -> np.ndarray:
    """(seeds, distances 1..): the first decoder block's attention weight of a masked query on one visible key
    against their patch distance, per seed averaged over images (NaN where a distance has no key); each image's
    weights divided by its total mass (visible + mask tokens + [CLS]) so that the unnormalised kernel compares.
    Distance 0 is the query itself, never a visible key, and is left out."""
    _runs(runs, [variant], seeds)
    per_seed = []
    for s in seeds:
        a = runs[variant, s]["attention"]
        tot = (a.visible + a.masked + a.cls).to_numpy()[:, None]
        prof = runs[variant, s]["by_distance"][:, 1:] / tot
        per_seed.append([np.nanmean(col) if np.isfinite(col).any() else np.nan for col in prof.T])
    return np.array(per_seed)
