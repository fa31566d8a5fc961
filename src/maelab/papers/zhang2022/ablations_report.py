"""The ``zhang_ablations`` page's runs, the configs of their stored results, and the tables and sentences it
assembles from them.

Computations (each with the config of its stored result; the profile is added by the store): the three paired
groups of :data:`~maelab.papers.zhang2022.ablations.GROUPS` (:func:`group_config`, :func:`run_group`), the
raw-pixel reference (:func:`raw_pixels_config`, :func:`raw_pixels`) and the effective-lambda groups of
:data:`~maelab.papers.zhang2022.ablations.EFFECTIVE` (:func:`effective_config`, :func:`run_effective`). The rest
reads stored results: :func:`trained_runs` (the runs table without the random init, the sweep's with its lambda),
:func:`mean_se`, :func:`paired_gain`, :func:`runs_table`, :func:`effective_table` and :func:`mechanism_text`.
Every number in a table or a sentence comes from the results and the settings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from maelab import experiments
from maelab._validate import ParameterError
from maelab.options import DryRunLimits

from . import ablations as abl
from . import umae as ua
from .settings import ZhangAblationsSettings

__all__ = [
    "PAPER_TABLE",
    "group_config",
    "run_group",
    "raw_pixels_config",
    "raw_pixels",
    "effective_config",
    "run_effective",
    "trained_runs",
    "mean_se",
    "paired_gain",
    "runs_table",
    "effective_table",
    "mechanism_text",
]

#: The paper's linear-probe accuracies in percent on ImageNet-100 with ViT-B, per (method, setting) row of
#: :func:`runs_table`, from Table 3 (U-MAE against lambda), Table 2 (SimMIM, U-SimMIM) and §3.2 (MAE without masks).
PAPER_TABLE = {
    ("U-MAE", "λ = 0 (MAE)"): 61.2,
    ("U-MAE", "λ = 0.001"): 65.9,
    ("U-MAE", "λ = 0.01"): 67.5,
    ("U-MAE", "λ = 0.1"): 45.1,
    ("U-MAE", "λ = 1"): 47.0,
    ("SimMIM", "λ = 0"): 54.3,
    ("SimMIM", "λ = 0.01 (U-SimMIM)"): 61.1,
    ("MAE", "mask 0"): 17.4,
    ("MAE", "mask 0.75"): 61.2,
}


def _settings(S: Any) -> ZhangAblationsSettings:
    if not isinstance(S, ZhangAblationsSettings):
        raise ParameterError("S", "the zhang_ablations page's ZhangAblationsSettings", type(S).__name__)
    return S


def _variants_config(variants: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    return {k: str(experiments.variant_config(v)) for k, v in variants.items()}


def _group(S: ZhangAblationsSettings, name: str):
    groups = abl.groups(S)
    if name not in groups:
        raise ParameterError("name", f"one of {list(groups)}", name)
    return groups[name]


def group_config(S: ZhangAblationsSettings, name: str) -> dict[str, Any]:
    """The config of the stored result ``<name>`` (a group of :func:`maelab.papers.zhang2022.ablations.groups`):
    what :func:`run_group` reads."""
    S = _settings(S)
    base, variants = _group(S, name)
    return {
        "what": abl.GROUPS[name],
        "spec": base.to_config(),
        "variants": _variants_config(variants),
        **S.pick("seeds", "probe_method"),
    }


def run_group(
    S: ZhangAblationsSettings,
    name: str,
    *,
    device: str = "cpu",
    progress: bool | None = None,
    caps: DryRunLimits | None = None,
) -> dict[str, Any]:
    """The group's variants at every seed, paired (:func:`maelab.papers.zhang2022.umae.compare`). Every group but
    ``no_mask`` brings the untrained encoder of its first variant, its random-init reference; ``no_mask``'s
    reference is the sweep's lambda-0 run."""
    S = _settings(S)
    base, variants = _group(S, name)
    return ua.compare(
        base,
        variants,
        S.seeds,
        random_init=name != "no_mask",
        probe_method=S.probe_method,
        probe_on_device=True,  # on the page's device (at gpu the card): decided before any gpu record of the page
        device=device,
        progress=progress,
        caps=caps,
    )


def raw_pixels_config(S: ZhangAblationsSettings) -> dict[str, Any]:
    """The config of the stored result ``raw_pixels``: what :func:`raw_pixels` reads."""
    S = _settings(S)
    return {
        "what": "probe and 20-NN on raw pixels",
        "spec": abl.base_spec(S).init_config(),
        **S.pick("probe_method"),
    }


def raw_pixels(S: ZhangAblationsSettings, *, device: str = "cpu", caps: DryRunLimits | None = None) -> dict:
    """The reference a useful encoder should beat: the same probe and 20-NN on the raw pixels, no encoder
    (:func:`maelab.papers.zhang2022.umae.raw_pixel_probe`)."""
    S = _settings(S)
    return ua.raw_pixel_probe(
        abl.base_spec(S), probe_method=S.probe_method, probe_on_device=True, device=device, caps=caps
    )


def _effective(S: ZhangAblationsSettings, name: str):
    groups = abl.effective_groups(S)
    if name not in groups:
        raise ParameterError("name", f"one of {list(groups)}", name)
    return groups[name]


def effective_config(S: ZhangAblationsSettings, name: str) -> dict[str, Any]:
    """The config of the stored result ``<name>`` (a group of
    :func:`maelab.papers.zhang2022.ablations.effective_groups`): what :func:`run_effective` reads."""
    S = _settings(S)
    base, variants, seeds, random_init = _effective(S, name)
    return {
        "what": abl.EFFECTIVE[name],
        "spec": base.to_config(),
        "variants": _variants_config(variants),
        "run_seeds": list(seeds),
        "random_init": random_init,
        **S.pick("probe_method"),
    }


def run_effective(
    S: ZhangAblationsSettings,
    name: str,
    *,
    device: str = "cpu",
    progress: bool | None = None,
    caps: DryRunLimits | None = None,
) -> dict[str, Any]:
    """The effective-lambda group ``name`` at its own seeds, paired
    (:func:`maelab.papers.zhang2022.umae.compare`)."""
    S = _settings(S)
    base, variants, seeds, random_init = _effective(S, name)
    return ua.compare(
        base,
        variants,
        seeds,
        random_init=random_init,
        probe_method=S.probe_method,
        probe_on_device=True,  # on the page's device (at gpu the card): decided before any gpu record of the page
        device=device,
        progress=progress,
        caps=caps,
    )


def trained_runs(result: Mapping[str, Any], *, with_lambda: bool = False):
    """The ``runs`` table of a stored :func:`run_group` result without its random-init rows; ``with_lambda``: with
    a column ``lam``, each sweep variant's coefficient (:func:`maelab.papers.zhang2022.ablations.lam_of`)."""
    runs = result["runs"]
    if "variant" not in getattr(runs, "columns", ()):
        raise ParameterError("result", "a compare() result whose runs table has a variant column", type(runs).__name__)
    out = runs[runs.variant != "random"].copy()
    return out.assign(lam=out.variant.map(abl.lam_of)) if with_lambda else out


def mean_se(frame, by: str, column: str):
    """``(mean, standard error)`` of ``column`` per value of ``by``: the sample std (ddof 1) over sqrt(n)."""
    if by not in frame.columns or column not in frame.columns:
        raise ParameterError("frame", f"a table with columns {by!r} and {column!r}", sorted(frame.columns))
    g = frame.groupby(by)[column]
    return g.mean(), g.std(ddof=1) / np.sqrt(g.count())


def paired_gain(sweep, column: str, lam: float):
    """Per seed (in order): ``column`` at coefficient ``lam`` minus at lambda 0 (plain MAE), from the sweep's
    :func:`trained_runs` with its ``lam`` column."""
    t = sweep.pivot(index="seed", columns="lam", values=column)
    if lam not in t.columns or 0.0 not in t.columns:
        raise ParameterError("lam", f"a coefficient of the sweep {sorted(t.columns)}, which must hold 0", lam)
    return t[lam] - t[0.0]


def _mean_se_text(frame, column: str) -> str:
    return f"{frame[column].mean():.3f} ± {frame[column].std(ddof=1) / np.sqrt(len(frame)):.3f}"


def runs_table(S: ZhangAblationsSettings, sweep, simmim, nomask, raw_px: Mapping[str, float]):
    """The page's table of every trained configuration: the paper's value (:data:`PAPER_TABLE`) beside ours (mean ±
    s.e. over seeds) of the [CLS] probe and 20-NN, the mean-pool probe and the effective rank, and the raw-pixel
    reference. ``sweep``: :func:`trained_runs` of the lambda sweep with ``lam``; ``simmim``, ``nomask``: theirs."""
    import pandas as pd

    S = _settings(S)
    rows = []

    def row(family: str, setting: str, frame) -> None:
        paper = PAPER_TABLE.get((family, setting))
        rows.append(
            {
                "method": family,
                "setting": setting,
                "paper (ImageNet-100, %)": "—" if paper is None else f"{paper:.1f}",
                "linear probe [CLS]": _mean_se_text(frame, "linear_acc"),
                "k-NN [CLS]": _mean_se_text(frame, "knn_acc"),
                "linear probe, mean pool": _mean_se_text(frame, "linear_acc_mean"),
                "effective rank [CLS]": _mean_se_text(frame, "effective_rank"),
            }
        )

    for lam in sorted(sweep["lam"].unique()):
        row("U-MAE", "λ = 0 (MAE)" if lam == 0 else f"λ = {lam:g}", sweep[sweep["lam"] == lam])
    row("SimMIM", "λ = 0", simmim[simmim.variant == "simmim"])
    row("SimMIM", f"λ = {S.simmim_lam:g} (U-SimMIM)", simmim[simmim.variant == "usimmim"])
    row("MAE", "mask 0", nomask)
    row("MAE", "mask 0.75", sweep[sweep["lam"] == 0])
    rows.append(
        {
            "method": "raw pixels",
            "setting": "no encoder",
            "paper (ImageNet-100, %)": "—",
            "linear probe [CLS]": f"{raw_px['linear_acc']:.3f}",
            "k-NN [CLS]": f"{raw_px['knn_acc']:.3f}",
            "linear probe, mean pool": "—",
            "effective rank [CLS]": "—",
        }
    )
    return pd.DataFrame(rows)


EFFECTIVE_METRICS = ("linear_acc", "linear_acc_mean", "knn_acc", "effective_rank")


def effective_table(S: ZhangAblationsSettings, eff_runs, fine_runs, raw_px: Mapping[str, float]):
    """The effective-lambda runs (:func:`maelab.papers.zhang2022.ablations.effective_runs`) and, when run, the
    fine-patch group's runs, as mean ± sample s.d. over seeds per variant and patch size, in percent (the
    effective rank as is), with the raw-pixel probe as a last row."""
    import pandas as pd

    S = _settings(S)
    L0, LE, LP = abl.lam_name(0.0), abl.lam_name(S.lam_eff), abl.lam_name(S.lam_paper)
    labels = {
        L0: "MAE (λ = 0)",
        LE: f"U-MAE, λ = {S.lam_eff:g} (effective)",
        LP: f"U-MAE, λ = {S.lam_paper:g} (as written)",
        "random": "random init (no training)",
    }
    patch = str(dict(abl.base_spec(S).model_overrides).get("patch_size"))
    t = ua.summary(eff_runs, EFFECTIVE_METRICS, order=[L0, LE, LP, "random"]).assign(patch=patch)
    if fine_runs is not None:
        fine = ua.summary(fine_runs, EFFECTIVE_METRICS, order=[L0, LE, "random"]).assign(patch=str(S.fine_patch_size))
        t = pd.concat([t, fine], ignore_index=True)
    show = t[["patch", "variant", "seeds"]].copy()
    show["variant"] = show["variant"].map(labels)
    for col, name in (
        ("linear_acc", "linear probe [CLS] (%)"),
        ("linear_acc_mean", "linear probe, mean pool (%)"),
        ("knn_acc", "20-NN [CLS] (%)"),
    ):
        show[name] = [f"{100 * m:.1f} ± {100 * sd:.1f}" for m, sd in zip(t[col], t[col + "_std"])]
    show["effective rank [CLS]"] = [
        f"{m:.1f} ± {sd:.1f}" for m, sd in zip(t["effective_rank"], t["effective_rank_std"])
    ]
    show.loc[len(show)] = [
        "—",
        "raw pixels (no encoder)",
        1,
        f"{100 * raw_px['linear_acc']:.1f}",
        "—",
        f"{100 * raw_px['knn_acc']:.1f}",
        "—",
    ]
    return show


def mechanism_text(sweep, learned: bool, lams: Sequence[float] | None = None) -> str:
    """The paragraph on the paper's mechanism: how the uniformity term moved the effective rank, the [CLS] probe
    and the mean-pool probe against plain MAE (paired by seed, means over seeds) at each lambda > 0 of the sweep
    (or of ``lams``), and, when plain MAE ``learned``, whether the rank rose and the [CLS] probe fell in every seed.
    ``sweep``: :func:`trained_runs` of the lambda sweep with ``lam``."""
    pos = [float(lam) for lam in (sorted(sweep["lam"].unique()) if lams is None else lams) if lam > 0]
    if not pos:
        raise ParameterError("lams", "at least one coefficient > 0", lams)
    g_rank = {lam: paired_gain(sweep, "effective_rank", lam) for lam in pos}
    g_cls = {lam: 100 * paired_gain(sweep, "linear_acc", lam) for lam in pos}
    g_mean = {lam: 100 * paired_gain(sweep, "linear_acc_mean", lam) for lam in pos}

    def fmt(d, unit: str) -> str:
        return " and ".join(f"{d[lam].mean():+.1f} {unit} (λ = {lam:g})" for lam in pos)

    text = (
        "Against plain MAE (paired by seed, means over seeds), the uniformity term changed the effective rank of "
        f"the [CLS] features by {fmt(g_rank, 'dimensions')}, the [CLS] linear probe by {fmt(g_cls, 'points')}, and "
        f"the linear probe on the mean of the patch tokens by {fmt(g_mean, 'points')}."
    )
    rank_up = all((g_rank[lam] > 0).all() for lam in pos)
    cls_down = all((g_cls[lam] < 0).all() for lam in pos)
    if learned and rank_up and cls_down:
        text += (
            " In every seed and at every λ > 0 the rank rose and the [CLS] probe fell: the term did spread the "
            "token it acts on over more dimensions — the first step of the paper's mechanism (less dimensional "
            "collapse) — but the spread did not make the classes more linearly separable, so the second step "
            "(higher rank, better linear probe) fails here."
        )
    elif learned and rank_up:
        text += " The rank rose in every seed and at every λ > 0; the probes did not move with it consistently."
    return text
