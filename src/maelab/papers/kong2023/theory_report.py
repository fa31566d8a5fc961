"""The ``kong_theory`` page's computations, the configs of their stored results, and the tables it displays.

Each computation has the config of its stored result (the profile is added by the store), which lists everything
it reads: the Figure-4 panels (:func:`figure4_config`, :func:`figure4`), the level of c on the quadtree
(:func:`level_table_config`, :func:`level_table`) and on the ``shapes`` world's DAG (:func:`shapes_table_config`,
:func:`shapes_table`), and Theorem 2 in the linear-Gaussian hierarchy (:func:`theorem2_config`, :func:`theorem2`).
:func:`level_markdown` and :func:`theorem2_markdown` format stored tables for display; every number in them comes
from the table.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._validate import ParameterError
from . import linear_gaussian as lg
from . import theory as th
from .settings import KongTheorySettings

__all__ = [
    "figure4_config",
    "figure4",
    "level_table_config",
    "level_table",
    "level_markdown",
    "shapes_table_config",
    "shapes_table",
    "theorem2_config",
    "theorem2",
    "theorem2_markdown",
]


def _settings(S: Any) -> KongTheorySettings:
    if not isinstance(S, KongTheorySettings):
        raise ParameterError("S", "the kong_theory page's KongTheorySettings", type(S).__name__)
    return S


def figure4_config() -> dict[str, str]:
    """The config of the stored result ``figure4``: the fixed graph and masks it reads (no setting)."""
    return {"graph": "figure4_tree", "masks": "figure4_masks"}


def figure4() -> dict[str, dict[str, Any]]:
    """c, the shared latents S, the masked pixels and the lowest level of c for each Figure-4 panel
    (:func:`maelab.papers.kong2023.theory.figure4_panels`), as sorted lists so the result is stored as JSON."""
    out = {}
    for name, info in th.figure4_panels().items():
        out[name] = {
            "c": sorted(info.c),
            "shared": sorted(info.shared),
            "masked": sorted(info.masked),
            "min_level": info.min_level,
        }
    return out


def level_table_config(S: KongTheorySettings) -> dict[str, Any]:
    """The config of the stored result ``level_table``: what :func:`level_table` reads."""
    S = _settings(S)
    return {"graph": "quadtree", **S.pick("quadtree_side", "mask_ratios", "units", "n_masks", "seeds")}


def level_table(S: KongTheorySettings) -> dict[str, Any]:
    """The level of c for MAE's random masks on the quadtree hierarchy: ``{"table": sweep}``
    (:func:`maelab.papers.kong2023.theory.sweep` on :func:`~maelab.papers.kong2023.theory.quadtree_dag`)."""
    S = _settings(S)
    dag = th.quadtree_dag(S.quadtree_side)
    return {"table": th.sweep(dag, S.mask_ratios, S.units, S.n_masks, S.seeds)}


def level_markdown(table, S: KongTheorySettings) -> str:
    """A Markdown table of the mean level of c (and, in brackets, the mean number of its nodes) per mask ratio
    (rows) and masking unit (columns), averaged over seeds; "—" where MAE's masking keeps no unit."""
    S = _settings(S)
    missing = {"mask_ratio", "unit", "mean_level", "n_c"} - set(getattr(table, "columns", ()))
    if missing:
        raise ParameterError("table", "a theory.sweep table with mask_ratio, unit, mean_level, n_c", sorted(missing))
    mean = table.groupby(["mask_ratio", "unit"])[["mean_level", "n_c"]].mean().unstack("unit")

    def cell(r: float, u: int) -> str:
        level = mean.loc[r, ("mean_level", u)]
        return "—" if np.isnan(level) else f"{level:.2f} ({mean.loc[r, ('n_c', u)]:.1f})"

    head = (
        f"Mean level of c (0 = root; bottom latents at level {S.quadtree_side.bit_length() - 2}) and, in brackets, "
        "the mean number of nodes in c:\n\n"
        "| mask ratio | " + " | ".join(f"unit {u}" for u in S.units) + " |\n|---|" + "---|" * len(S.units) + "\n"
    )
    return head + "\n".join(f"| {r:g} | " + " | ".join(cell(r, u) for u in S.units) + " |" for r in S.mask_ratios)


def shapes_table_config(S: KongTheorySettings) -> dict[str, Any]:
    """The config of the stored result ``shapes_table``: what :func:`shapes_table` reads."""
    S = _settings(S)
    return {"graph": "shapes", **S.pick("shapes_size", "shapes_patch", "mask_ratios", "units", "n_masks", "seeds")}


def shapes_table(S: KongTheorySettings) -> dict[str, Any]:
    """The level of c on the ``shapes`` world's DAG (:func:`maelab.papers.kong2023.theory.shapes_dag`): the sweep
    table, c when the middle patch alone is masked, and how many of the patches the object can reach."""
    S = _settings(S)
    dag = th.shapes_dag(S.shapes_size, S.shapes_patch)
    info = th.shared_latents(dag, set(dag.observed) - {dag.observed[len(dag.observed) // 2]})
    return {
        "table": th.sweep(dag, S.mask_ratios, S.units, S.n_masks, S.seeds),
        "c_example": sorted(info.c),
        "n_object_patches": sum("class" in dag.parents[x] for x in dag.observed),
        "n_patches": len(dag.observed),
    }


def theorem2_config(S: KongTheorySettings) -> dict[str, Any]:
    """The config of the stored result ``theorem2``: what :func:`theorem2` reads."""
    S = _settings(S)
    return {
        "graph": "linear-Gaussian quadtree and figure4_tree",
        **S.pick("lg_side", "lg_noise_dim", "lg_ratio", "lg_n_masks", "seeds", "lg_n_samples"),
    }


def theorem2(S: KongTheorySettings) -> dict[str, Any]:
    """Theorem 2 in the linear-Gaussian hierarchy, the encoder fitted on the exact covariances and on each sample
    size of ``lg_n_samples``: ``{"table": ...}`` of
    :func:`maelab.papers.kong2023.linear_gaussian.theorem2_experiment`."""
    S = _settings(S)
    table = lg.theorem2_experiment(
        S.lg_side, S.lg_noise_dim, S.lg_ratio, S.lg_n_masks, S.seeds, [None, *S.lg_n_samples]
    )
    return {"table": table}


def theorem2_markdown(table) -> str:
    """A Markdown table of the worst case over masks and seeds, per graph and fit: the smallest canonical
    correlation with c and the largest with the visible part's noises s_mc."""
    missing = {"model", "fit", "n_samples", "min_cc_c", "max_cc_s_mc"} - set(getattr(table, "columns", ()))
    if missing:
        raise ParameterError("table", "a theorem2_experiment table", f"missing {sorted(missing)}")
    t = table.assign(
        n=[f"{k} samples" if f == "sampled" else "exact covariances" for f, k in zip(table.fit, table.n_samples)]
    )
    summ = t.groupby(["model", "n"], sort=False).agg(min_cc_c=("min_cc_c", "min"), max_cc_s_mc=("max_cc_s_mc", "max"))
    return (
        "Worst case over masks and seeds:\n\n| graph | encoder fitted on | min canonical corr. with c | "
        "max canonical corr. with s_mc |\n|---|---|---|---|\n"
        + "\n".join(f"| {m} | {n} | {r.min_cc_c:.10f} | {r.max_cc_s_mc:.2e} |" for (m, n), r in summ.iterrows())
    )
