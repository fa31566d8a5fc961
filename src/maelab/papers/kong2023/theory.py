"""Theorem 1 of Kong et al. on explicit DAGs: the latent set **c** that a mask makes MAE learn.

The model (paper Sec. 2.1, Assumption 1)
-----------------------------------------
A DAG over latent variables ``z`` and observed variables ``x`` (pixels or patches, the DAG's leaves; no edge
between two observed variables). Every variable is an *invertible* function of its parents and its own exogenous
noise: ``v = g_v(Pa(v), eps_v)``. A mask splits the observed leaves into a masked part ``x_m`` and a visible part
``x_mc``. Theorem 1: there is a unique minimal latent set **c** with ``x_m = g(c, s_m)``,
``x_mc = g'(c, s_mc)`` (both invertible) and ``s_m`` independent of ``(c, s_mc)``; Theorem 2: MAE's encoder
recovers **c** up to a one-to-one map.

Our reading of Algorithm 1 (stated, because our copy of the paper has no appendix)
------------------------------------------------------------------------------------
The paper locates **c** "by executing Algorithm 1" of its Appendix A, which the text we have does not contain
(its figures are missing too). We therefore derive **c** from Theorem 1's conditions and Assumption 1, and check
the result against every example the main text states (Sec. 2.3, Figure 4's narrative):

1. Invertibility means each variable determines its parents and its noise, so by induction ``x_m`` is a bijective
   function of the noises ``E_m = {eps_u : u in An*(x_m)}`` (``An*``: ancestors and the nodes themselves), and
   ``x_mc`` of ``E_mc``. All noises are independent, so the information the two parts share is exactly
   ``E_S = {eps_u : u in S}``, with **S = An(x_m) ∩ An(x_mc)**, the latent variables with at least one masked *and*
   at least one visible observed descendant.
2. ``g`` and ``g'`` invertible make **c** a function of ``x_m`` and of ``x_mc``, hence of ``E_S``; and ``s_m``
   independent of ``(c, s_mc)`` forces **c** to determine ``E_S``. A latent node outside S carries a noise outside
   ``E_S``, so **c ⊆ S**; a node determines the noises of exactly its ancestors-or-self, so **c** must have every
   node of S as an ancestor-or-self. S is closed under taking ancestors, so the unique smallest such set is
   **c = the sinks of S**: the shared latents none of whose children is shared. Then
   ``s_m = {eps_u : u in An*(x_m) \\ S}`` (unique) and one valid ``s_mc = {eps_u : u in An*(x_mc) \\ S}`` (the
   paper's Algorithm 2 returns "one such instance"; ``s_mc`` is not unique).

Consequences used on the book's page: a latent enters **c** only when the mask splits its observed descendants;
a mask that covers a whole subtree lifts **c** to that subtree's parent; a low masking ratio leaves small mixed
subtrees near the pixels (Figure 4a: "a low-level variable mixes in"), and so does an extreme one, from the visible
side (Figure 4b). In a tree S is a sub-tree containing the root and **c** its leaves, which may sit at several
levels at once. With nothing masked or nothing visible the split is undefined and :func:`shared_latents` raises;
if the two parts share no latent at all, **c** is empty (MAE has nothing to learn from the visible part).

Levels: every node has an integer level, 0 at the top (most abstract). By default the level of a latent is the
length of the longest directed path from a root to it; constructors set them explicitly where the model has named
levels. Observed leaves get ``1 + max latent level``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from ..._validate import ParameterError, in_range, positive_int

__all__ = [
    "HierarchicalDAG",
    "SharedInfo",
    "make_dag",
    "shared_latents",
    "figure2_dag",
    "figure4_tree",
    "figure4_masks",
    "quadtree_dag",
    "shapes_dag",
    "shapes_object_reach",
    "sample_visible",
    "sweep",
    "draw",
    "layout",
    "figure4_panels",
    "unit_trend",
    "ratio_extreme_gaps",
]


@dataclasses.dataclass(frozen=True)
class HierarchicalDAG:
    """A hierarchical latent DAG (build it with :func:`make_dag`).

    ``parents``: every node -> tuple of its parents (nodes in a topological order). ``observed``: the observed
    leaves in a fixed order. ``levels``: node -> integer level (0 = top). ``grid``: optional observed leaf ->
    (row, col) on a patch grid (needed for masking units). ``descendants``: latent -> frozenset of the observed
    leaves below it (derived).
    """

    name: str
    parents: Mapping[str, tuple[str, ...]]
    observed: tuple[str, ...]
    levels: Mapping[str, int]
    grid: Mapping[str, tuple[int, int]] | None
    descendants: Mapping[str, frozenset[str]]

    @property
    def latents(self) -> tuple[str, ...]:
        obs = set(self.observed)
        return tuple(v for v in self.parents if v not in obs)

    @property
    def children(self) -> dict[str, tuple[str, ...]]:
        out: dict[str, list[str]] = {v: [] for v in self.parents}
        for v, ps in self.parents.items():
            for p in ps:
                out[p].append(v)
        return {v: tuple(c) for v, c in out.items()}

    @property
    def grid_shape(self) -> tuple[int, int] | None:
        if self.grid is None:
            return None
        rows, cols = zip(*self.grid.values())
        return max(rows) + 1, max(cols) + 1


def _topological(parents: Mapping[str, Sequence[str]]) -> list[str]:
    """Kahn's algorithm; keeps the given order among ready nodes; raises on a cycle."""
    indeg = {v: len(ps) for v, ps in parents.items()}
    kids: dict[str, list[str]] = {v: [] for v in parents}
    for v, ps in parents.items():
        for p in ps:
            kids[p].append(v)
    ready = [v for v in parents if indeg[v] == 0]
    order = []
    while ready:
        v = ready.pop(0)
        order.append(v)
        for k in kids[v]:
            indeg[k] -= 1
            if indeg[k] == 0:
                ready.append(k)
    if len(order) != len(parents):
        raise ParameterError("parents", "an acyclic graph", "a graph with a directed cycle")
    return order


def make_dag(
    parents: Mapping[str, Iterable[str]],
    observed: Iterable[str],
    *,
    levels: Mapping[str, int] | None = None,
    grid: Mapping[str, tuple[int, int]] | None = None,
    name: str = "dag",
) -> HierarchicalDAG:
    """Validate and build a :class:`HierarchicalDAG`.

    Args:
        parents: node -> its parents; every node must appear as a key (roots map to ``()``).
        observed: the observed variables; they must be leaves (Assumption 1: no edge out of an observed node).
        levels: optional latent -> level (0 = top); missing latents get the longest path length from a root.
        grid: optional observed leaf -> (row, col), one distinct cell per leaf.
        name: a label.
    """
    par = {str(v): tuple(str(p) for p in ps) for v, ps in parents.items()}
    for v, ps in par.items():
        for p in ps:
            if p not in par:
                raise ParameterError("parents", f"a mapping whose parents are nodes too (parent {p!r} of {v!r})", p)
        if len(set(ps)) != len(ps):
            raise ParameterError("parents", f"parents listed once (node {v!r})", ps)
    obs = tuple(str(x) for x in observed)
    if not obs or len(set(obs)) != len(obs) or any(x not in par for x in obs):
        raise ParameterError("observed", "a non-empty list of distinct nodes of the graph", obs)
    order = _topological(par)
    obs_set = set(obs)
    for v, ps in par.items():
        bad = [p for p in ps if p in obs_set]
        if bad:
            raise ParameterError("observed", f"leaves (Assumption 1), but {bad[0]!r} is a parent of {v!r}", bad[0])
    lev: dict[str, int] = {}
    for v in order:
        if v not in obs_set:
            lev[v] = 1 + max((lev[p] for p in par[v]), default=-1)
    if levels is not None:
        for v, lv in levels.items():
            if v not in lev:
                raise ParameterError("levels", "a mapping over latent nodes", v)
            lev[v] = positive_int(f"levels[{v!r}]", lv, minimum=0)
    bottom = 1 + max(lev.values(), default=-1)
    for x in obs:
        lev[x] = bottom
    if grid is not None:
        cells = {str(k): (int(r), int(c)) for k, (r, c) in grid.items()}
        if set(cells) != obs_set or len(set(cells.values())) != len(cells) or min(min(rc) for rc in cells.values()) < 0:
            raise ParameterError("grid", "a mapping of every observed leaf to a distinct (row, col) >= 0", grid)
        grid = cells
    desc: dict[str, set[str]] = {v: ({v} if v in obs_set else set()) for v in par}
    for v in reversed(order):
        for p in par[v]:
            desc[p] |= desc[v]
    frozen = {v: frozenset(desc[v]) for v in order if v not in obs_set}
    return HierarchicalDAG(
        name=name, parents={v: par[v] for v in order}, observed=obs, levels=lev, grid=grid, descendants=frozen
    )


@dataclasses.dataclass(frozen=True)
class SharedInfo:
    """What Theorem 1 says about one mask (see the module docstring for the derivation).

    ``c``: the minimal shared latent set (sinks of ``shared``); ``shared``: S, the latents with both masked and
    visible observed descendants; ``s_m`` / ``s_mc``: the nodes whose exogenous noises make up s_m (unique) and
    one valid s_mc (masked-only resp. visible-only ancestors, the leaves included); ``c_levels``: the levels of
    the nodes of c, sorted.
    """

    visible: frozenset[str]
    masked: frozenset[str]
    shared: frozenset[str]
    c: frozenset[str]
    s_m: frozenset[str]
    s_mc: frozenset[str]
    c_levels: tuple[int, ...]

    @property
    def min_level(self) -> float:
        """Level of the most abstract node of c (NaN when c is empty)."""
        return float(min(self.c_levels)) if self.c_levels else math.nan

    @property
    def max_level(self) -> float:
        """Level of the least abstract node of c (NaN when c is empty)."""
        return float(max(self.c_levels)) if self.c_levels else math.nan

    @property
    def mean_level(self) -> float:
        """Mean level over the nodes of c (NaN when c is empty)."""
        return float(np.mean(self.c_levels)) if self.c_levels else math.nan


def shared_latents(dag: HierarchicalDAG, visible: Iterable[str]) -> SharedInfo:
    """Theorem 1 / Algorithm 1 (our reading, module docstring): c for the mask whose visible leaves are ``visible``.

    Raises :class:`~maelab.ParameterError` when ``visible`` is not a set of observed leaves, is empty
    (everything masked) or contains every leaf (nothing masked): the split into x_m and x_mc is then undefined.
    """
    vis = frozenset(str(v) for v in visible)
    obs = frozenset(dag.observed)
    if not vis <= obs:
        raise ParameterError("visible", "a set of observed leaves of the graph", sorted(vis - obs)[:3])
    if not vis:
        raise ParameterError("visible", "non-empty (with everything masked, x_mc and c are undefined)", set())
    if vis == obs:
        raise ParameterError(
            "visible", "a strict subset of the observed leaves (nothing masked: x_m is empty)", f"all {len(obs)} leaves"
        )
    masked = obs - vis
    shared = frozenset(z for z, d in dag.descendants.items() if d & masked and d & vis)
    kids = dag.children
    c = frozenset(z for z in shared if not any(k in shared for k in kids[z]))
    s_m = frozenset(z for z, d in dag.descendants.items() if d & masked and z not in shared) | masked
    s_mc = frozenset(z for z, d in dag.descendants.items() if d & vis and z not in shared) | vis
    return SharedInfo(
        visible=vis,
        masked=masked,
        shared=shared,
        c=c,
        s_m=s_m,
        s_mc=s_mc,
        c_levels=tuple(sorted(dag.levels[z] for z in c)),
    )


# ----------------------------------------------------------------------------------------------------------------
# example hierarchies
# ----------------------------------------------------------------------------------------------------------------
def figure2_dag() -> HierarchicalDAG:
    """A Figure-2-style hierarchy: a DAG (not a tree) in latent space, three latent levels, six pixels.

    z1 -> z2, z3; z2 -> z4, z5; z3 -> z5, z6 (z5 has two parents); z4 -> x1, x2; z5 -> x3, x4; z6 -> x5, x6.
    (The paper's Figure 2 is not in our text; this graph has the same kind: a latent DAG above the pixels.)
    """
    par = {
        "z1": (),
        "z2": ("z1",),
        "z3": ("z1",),
        "z4": ("z2",),
        "z5": ("z2", "z3"),
        "z6": ("z3",),
        "x1": ("z4",),
        "x2": ("z4",),
        "x3": ("z5",),
        "x4": ("z5",),
        "x5": ("z6",),
        "x6": ("z6",),
    }
    return make_dag(par, [f"x{i}" for i in range(1, 7)], name="figure2")


def figure4_tree() -> HierarchicalDAG:
    """A Figure-4-style hierarchy: a binary tree z1 -> (z2, z3) -> (z4..z7) -> pixels x1..x8 (two per z4..z7).

    The pixels sit on a 1 x 8 grid (``grid``), so masks can be drawn with :func:`sample_visible`.
    """
    par: dict[str, tuple[str, ...]] = {"z1": (), "z2": ("z1",), "z3": ("z1",)}
    for i, z in enumerate(("z4", "z5", "z6", "z7")):
        par[z] = ("z2",) if i < 2 else ("z3",)
    for j in range(8):
        par[f"x{j + 1}"] = (f"z{4 + j // 2}",)
    obs = [f"x{j + 1}" for j in range(8)]
    return make_dag(par, obs, grid={x: (0, j) for j, x in enumerate(obs)}, name="figure4")


def figure4_masks() -> dict[str, frozenset[str]]:
    """Visible pixels of :func:`figure4_tree` for Figure 4's three panels: ``"low"`` (x1 masked: c = {z4}),
    ``"moderate"`` (z2's subtree x1..x4 masked: c = {z1}) and ``"extreme"`` (only x8 visible: c = {z7})."""
    allx = [f"x{j}" for j in range(1, 9)]
    return {"low": frozenset(allx[1:]), "moderate": frozenset(allx[4:]), "extreme": frozenset(["x8"])}


def quadtree_dag(side: int, levels: int | None = None) -> HierarchicalDAG:
    """An image hierarchy on a ``side x side`` patch grid (``side`` a power of 2): latent level l (0..L-1) has
    4**l nodes, node ``z{l}_{i}_{j}`` covering the block of (side / 2**l)**2 patches at block (i, j); every
    patch ``x_{r}_{c}`` is a child of the level-(L-1) block that contains it. ``levels`` = L defaults to
    log2(side) (blocks of 2 x 2 patches at the bottom); a smaller L gives bigger bottom blocks."""
    positive_int("side", side)
    depth = side.bit_length() - 1
    if side != 1 << depth or depth < 1:
        raise ParameterError("side", "a power of 2 >= 2", side)
    n_levels = depth if levels is None else levels
    if isinstance(n_levels, bool) or not isinstance(n_levels, int) or not 1 <= n_levels <= depth:
        raise ParameterError("levels", f"an integer in [1, {depth}]", levels)
    par: dict[str, tuple[str, ...]] = {}
    for lv in range(n_levels):
        for i in range(1 << lv):
            for j in range(1 << lv):
                par[f"z{lv}_{i}_{j}"] = (f"z{lv - 1}_{i // 2}_{j // 2}",) if lv else ()
    block = side >> (n_levels - 1)
    obs, grid = [], {}
    for r in range(side):
        for c in range(side):
            x = f"x_{r}_{c}"
            par[x] = (f"z{n_levels - 1}_{r // block}_{c // block}",)
            obs.append(x)
            grid[x] = (r, c)
    return make_dag(par, obs, grid=grid, name=f"quadtree{side}")


# ----------------------------------------------------------------------------------------------------------------
# the shapes world
# ----------------------------------------------------------------------------------------------------------------
SHAPES_LEVELS = {"class": 0, "object": 1, "low": 2}
_SHAPES_NODES: dict[str, tuple[tuple[str, ...], str]] = {
    # node: (parents, level group of maelab.data.shapes.LATENT_LEVELS)
    "class": ((), "class"),
    "position": ((), "object"),  # (x, y)
    "scale": ((), "object"),
    "rotation": ((), "object"),
    "hue": ((), "object"),
    "colour": (("hue",), "object"),  # RGB from (hue, saturation, value); sat, val are its noise
    "texture_class": (("class",), "low"),  # agree with the class or another class; (agree, other) are its noise
    "texture": (("texture_class",), "low"),  # (texture_freq, texture_orientation)
    "texture_phase": ((), "low"),
    "texture_contrast": ((), "low"),
    "background": ((), "low"),
    "background_gradient": ((), "low"),
    "noise_std": ((), "low"),
}
_OBJECT_PARENTS = ("class", "position", "scale", "rotation", "colour", "texture", "texture_phase", "texture_contrast")
_BACKGROUND_PARENTS = ("background", "background_gradient", "noise_std")


def shapes_object_reach(size: int, step: float = 0.004) -> float:
    """Largest distance (fraction of the image side) from an object's centre at which a pixel centre of a
    ``size``-pixel ``shapes`` image can get non-zero object coverage, over all classes, rotations and the training
    scales [0.18, 0.30]. Coverage is ``clamp(0.5 - sdf * scale * size, 0, 1)`` (``maelab.data.shapes``), so a
    point counts when ``sdf < 0.5 / (scale * size)``; the silhouette's signed-distance functions are evaluated on
    a grid of spacing ``step`` (object units) and the result is padded by one grid diagonal."""
    from ...data import shapes

    positive_int("size", size)
    step = in_range("step", step, 0.0, 0.05, low_open=True)
    g = torch.arange(-2.0, 2.0 + step / 2, step, dtype=torch.float64)
    u, v = torch.meshgrid(g, g, indexing="xy")
    r = torch.hypot(u, v)
    reach = 0.0
    for k in range(len(shapes.CLASSES)):
        sdf = shapes._sdf(k, u, v)
        for scale in np.linspace(0.18, 0.30, 7):
            inside = sdf < 0.5 / (scale * size)
            reach = max(reach, float(scale * (r[inside].max() + step * math.sqrt(2))))
    return reach


def shapes_dag(size: int = 32, patch_size: int = 4) -> HierarchicalDAG:
    """The generative DAG that ``maelab.data.shapes`` implements, with one observed leaf per patch.

    Latents (level 0 ``class``, 1 ``object``, 2 ``low``, as ``shapes.LATENT_LEVELS``): ``class``; the object's
    ``position``, ``scale``, ``rotation``, ``hue`` -> ``colour``, all drawn *independently of the class* (the code
    draws them from their own uniforms; there is no class -> attribute edge); ``class`` -> ``texture_class`` ->
    ``texture`` (frequency and orientation); ``texture_phase``, ``texture_contrast``, ``background``,
    ``background_gradient``, ``noise_std``. Patch ``x_{r}_{c}`` (pixels rendered as lerp(background, object,
    coverage) + noise) has the background factors and ``noise_std`` as parents, and the object factors only when
    some pixel centre of the patch lies within :func:`shapes_object_reach` of the square of possible object centres
    [0.4, 0.6]^2 (other patches never show the object). Its own pixel noise is the leaf's exogenous noise.

    Not invertible: Assumption 1 asks each node to be an invertible function of its parents and noise; a patch is
    not (a background patch says nothing of the class; a colour cannot be told from its hue alone). Theorem 1's
    graphical answer is what :func:`shared_latents` computes on this DAG; what MAE can recover of it is an
    empirical question (the representations page).
    """
    positive_int("size", size)
    positive_int("patch_size", patch_size)
    if size % patch_size:
        raise ParameterError("patch_size", f"a positive divisor of size={size}", patch_size)
    reach = shapes_object_reach(size)
    par = {v: ps for v, (ps, _) in _SHAPES_NODES.items()}
    levels = {v: SHAPES_LEVELS[g] for v, (_, g) in _SHAPES_NODES.items()}
    side = size // patch_size
    centres = (np.arange(size) + 0.5) / size
    obs, grid = [], {}
    for r in range(side):
        for c in range(side):
            ys = centres[r * patch_size : (r + 1) * patch_size]
            xs = centres[c * patch_size : (c + 1) * patch_size]
            dy = np.clip(0.4 - ys, 0, None) + np.clip(ys - 0.6, 0, None)
            dx = np.clip(0.4 - xs, 0, None) + np.clip(xs - 0.6, 0, None)
            near = float(np.hypot(dy.min(), dx.min())) < reach
            x = f"x_{r}_{c}"
            par[x] = (_OBJECT_PARENTS if near else ()) + _BACKGROUND_PARENTS
            obs.append(x)
            grid[x] = (r, c)
    return make_dag(par, obs, levels=levels, grid=grid, name=f"shapes{size}p{patch_size}")


# ----------------------------------------------------------------------------------------------------------------
# masks and sweeps
# ----------------------------------------------------------------------------------------------------------------
def sample_visible(
    dag: HierarchicalDAG, mask_ratio: float, unit: int = 1, n: int = 1, generator: torch.Generator | None = None
) -> list[frozenset[str]]:
    """``n`` random masks of the DAG's leaf grid, drawn exactly as the MAE models draw them
    (:func:`maelab.masking.block_masking`: ``int(U (1 - mask_ratio))`` of the U ``unit x unit`` blocks kept).
    Returns the visible leaves of each mask."""
    from ... import masking

    if dag.grid is None:
        raise ParameterError("dag", "a graph whose observed leaves have grid positions", dag.name)
    positive_int("n", n)
    ratio = in_range("mask_ratio", mask_ratio, 0.0, 1.0, low_open=True, high_open=True)
    gh, gw = dag.grid_shape
    if len(dag.observed) != gh * gw:
        raise ParameterError("dag", "a graph with one observed leaf per grid cell", dag.name)
    units = (gh // unit) * (gw // unit) if unit > 0 and gh % unit == 0 and gw % unit == 0 else 0
    if units and masking.num_keep(units, ratio) < 1:
        raise ParameterError("mask_ratio", f"small enough that at least 1 of the {units} units stays visible", ratio)
    dummy = torch.zeros(n, gh * gw, 1)
    _, mask, _ = masking.block_masking(dummy, ratio, (gh, gw), unit, generator)
    cell = {rc: x for x, rc in dag.grid.items()}
    leaves = [cell[(i // gw, i % gw)] for i in range(gh * gw)]
    return [frozenset(leaves[i] for i in np.flatnonzero(row.numpy() == 0)) for row in mask]


def _feasible(dag: HierarchicalDAG, mask_ratio: float, unit: int) -> bool:
    """Whether MAE's masking keeps at least one ``unit x unit`` block of the DAG's grid at ``mask_ratio``."""
    from ... import masking

    gh, gw = dag.grid_shape
    if unit < 1 or gh % unit or gw % unit:
        raise ParameterError("unit", f"a positive divisor of the grid sides {(gh, gw)}", unit)
    return masking.num_keep((gh // unit) * (gw // unit), mask_ratio) >= 1


def sweep(dag: HierarchicalDAG, mask_ratios: Sequence[float], units: Sequence[int], n_masks: int, seeds: Sequence[int]):
    """Level of c against mask ratio x masking unit, over ``n_masks`` random masks per seed.

    Returns a pandas DataFrame with one row per (seed, mask_ratio, unit): ``mean_level`` (mean over masks of the
    mean level of c's nodes), ``min_level`` / ``max_level`` (means over masks of c's most / least abstract level),
    ``n_c`` (mean number of nodes in c), ``empty`` (fraction of masks with c empty) and ``frac_level_{l}`` (mean
    fraction of c's nodes at level l); ``feasible`` is False (and the other columns NaN) where MAE's masking
    would keep no unit (e.g. ratio 0.9 with 4 units). Masks of seed s come from a ``torch.Generator`` seeded
    from (s, ratio, unit), one generator per (seed, ratio, unit) cell, so a cell does not depend on the others.
    """
    import pandas as pd

    positive_int("n_masks", n_masks)
    lat_levels = sorted({dag.levels[z] for z in dag.latents})
    rows = []
    for s in seeds:
        for r in mask_ratios:
            for u in units:
                row: dict[str, Any] = {"seed": int(s), "mask_ratio": float(r), "unit": int(u)}
                if not _feasible(dag, r, u):  # no unit would stay visible: MAE cannot draw this mask
                    rows.append({**row, "feasible": False})
                    continue
                g = torch.Generator().manual_seed(int(s) * 1_000_003 + int(round(float(r) * 1000)) * 101 + int(u))
                infos = [shared_latents(dag, v) for v in sample_visible(dag, r, u, n_masks, g)]
                row["feasible"] = True
                full = [i for i in infos if i.c]
                row["mean_level"] = float(np.mean([i.mean_level for i in full])) if full else math.nan
                row["min_level"] = float(np.mean([i.min_level for i in full])) if full else math.nan
                row["max_level"] = float(np.mean([i.max_level for i in full])) if full else math.nan
                row["n_c"] = float(np.mean([len(i.c) for i in infos]))
                row["empty"] = float(np.mean([not i.c for i in infos]))
                for lv in lat_levels:
                    row[f"frac_level_{lv}"] = (
                        float(np.mean([i.c_levels.count(lv) / len(i.c) for i in full])) if full else math.nan
                    )
                rows.append(row)
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------------------------------------
# drawing
# ----------------------------------------------------------------------------------------------------------------
def layout(dag: HierarchicalDAG) -> dict[str, tuple[float, float]]:
    """Positions for drawing: y = -level; x spreads the nodes of each level evenly over [0, 1], leaves in order."""
    by_level: dict[int, list[str]] = {}
    for v in dag.parents:
        by_level.setdefault(dag.levels[v], []).append(v)
    pos = {}
    for lv, nodes in by_level.items():
        if lv == dag.levels[dag.observed[0]]:
            nodes = list(dag.observed)
        k = len(nodes)
        for i, v in enumerate(nodes):
            pos[v] = ((i + 0.5) / k, -float(lv))
    return pos


def draw(dag: HierarchicalDAG, info: SharedInfo, ax=None, *, title: str | None = None):
    """Figure 4 style: edges in grey, the nodes of c filled blue, the other shared latents (S \\ c) light blue,
    masked leaves marked with a cross. Returns the matplotlib axes."""
    import matplotlib.pyplot as plt

    ax = ax if ax is not None else plt.gca()
    pos = layout(dag)
    for v, ps in dag.parents.items():
        for p in ps:
            ax.plot([pos[p][0], pos[v][0]], [pos[p][1], pos[v][1]], color="0.75", lw=0.8, zorder=1)
    for v, (x, y) in pos.items():
        if v in info.c:
            face = "tab:blue"
        elif v in info.shared:
            face = "lightsteelblue"
        else:
            face = "white"
        shape = "s" if v in dag.observed else "o"
        ax.scatter([x], [y], s=260, marker=shape, facecolor=face, edgecolor="0.2", zorder=2)
        if v in info.masked:
            ax.scatter([x], [y], s=120, marker="x", color="tab:red", zorder=3)
        ax.annotate(
            v, (x, y), xytext=(0, -14 if v in dag.observed else 12), textcoords="offset points", ha="center", fontsize=7
        )
    ax.set_axis_off()
    if title:
        ax.set_title(title, fontsize=9)
    return ax


# ----------------------------------------------------------------------------------------------------------------
# evidence for the claim rows
# ----------------------------------------------------------------------------------------------------------------
def figure4_panels() -> dict[str, SharedInfo]:
    """:func:`shared_latents` of :func:`figure4_tree` for each mask of :func:`figure4_masks`."""
    dag = figure4_tree()
    return {k: shared_latents(dag, v) for k, v in figure4_masks().items()}


def unit_trend(table, mask_ratio: float, column: str = "mean_level") -> dict[str, tuple]:
    """From a :func:`sweep` table: ``x`` = units, ``y`` = mean of ``column`` over seeds at ``mask_ratio``,
    ``y_err`` = its standard error over seeds (0 with one seed), ``y_n`` = the seeds behind each mean (the degrees
    of freedom of ``Monotone``'s t tests), for a ``Monotone`` claim."""
    sub = table[np.isclose(table["mask_ratio"], mask_ratio)]
    if sub.empty:
        raise ParameterError("mask_ratio", "a ratio present in the table", mask_ratio)
    g = sub.groupby("unit")[column]
    n = g.count()
    sem = (g.std(ddof=1) / np.sqrt(n)).fillna(0.0)
    return {
        "x": tuple(float(u) for u in g.mean().index),
        "y": tuple(float(v) for v in g.mean()),
        "y_err": tuple(float(v) for v in sem),
        "y_n": tuple(int(v) for v in n),
    }


def ratio_extreme_gaps(
    table, mid: float = 0.75, extremes: Sequence[float] = (0.1, 0.9), column: str = "mean_level"
) -> list[float]:
    """Per seed: min over the extreme ratios of [``column`` at the extreme − at ``mid``], each averaged over
    units. Positive values mean every extreme ratio gives a *lower-level* (larger level) c than ``mid``."""
    per = table.groupby(["seed", "mask_ratio"])[column].mean().unstack("mask_ratio")
    cols = {round(float(c), 6): c for c in per.columns}
    for r in (mid, *extremes):
        if round(float(r), 6) not in cols:
            raise ParameterError("table", f"a sweep that includes mask ratio {r}", sorted(cols))
    m = per[cols[round(float(mid), 6)]]
    gaps = np.min([per[cols[round(float(r), 6)]] - m for r in extremes], axis=0)
    return [float(v) for v in gaps]
