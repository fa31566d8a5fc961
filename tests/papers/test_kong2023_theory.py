"""Theorem 1 / Algorithm 1 (our reading) on hand-solved DAGs; the shapes DAG against rendered silhouettes."""

import math

import numpy as np
import pytest
import torch

from maelab._validate import ParameterError
from maelab.papers.kong2023 import theory as th


def chain():
    # z1 -> x1, z1 -> z2 -> x2, z2 -> z3 -> x3, x4: leaves hang at three depths
    par = {"z1": (), "z2": ("z1",), "z3": ("z2",), "x1": ("z1",), "x2": ("z2",), "x3": ("z3",), "x4": ("z3",)}
    return th.make_dag(par, ["x1", "x2", "x3", "x4"])


def two_branches():
    par = {"z1": (), "z2": ("z1",), "z3": ("z1",), "x1": ("z2",), "x2": ("z2",), "x3": ("z3",), "x4": ("z3",)}
    return th.make_dag(par, ["x1", "x2", "x3", "x4"])


def vis(dag, masked):
    return set(dag.observed) - set(masked)


@pytest.mark.parametrize(
    "masked, c, shared",
    [
        (["x1"], {"z1"}, {"z1"}),  # only z1 is above x1; the visible side reaches z1 too
        (["x3"], {"z3"}, {"z1", "z2", "z3"}),  # x4 shares z3 with x3
        (["x1", "x2"], {"z2"}, {"z1", "z2"}),  # z3 is visible-only
        (["x3", "x4"], {"z2"}, {"z1", "z2"}),  # z3 masked-only
        (["x2", "x3", "x4"], {"z1"}, {"z1"}),
    ],
)
def test_chain(masked, c, shared):
    info = th.shared_latents(chain(), vis(chain(), masked))
    assert info.c == c and info.shared == shared


def test_two_branches_levels_follow_the_mask():
    dag = two_branches()
    low = th.shared_latents(dag, vis(dag, ["x1"]))  # small mask inside z2's subtree
    mid = th.shared_latents(dag, vis(dag, ["x1", "x2"]))  # z2's whole subtree
    ext = th.shared_latents(dag, {"x4"})  # only one pixel visible
    both = th.shared_latents(dag, vis(dag, ["x1", "x3"]))  # one pixel of each branch
    assert low.c == {"z2"} and low.c_levels == (1,)
    assert mid.c == {"z1"} and mid.c_levels == (0,)
    assert ext.c == {"z3"} and ext.c_levels == (1,)
    assert both.c == {"z2", "z3"} and both.shared == {"z1", "z2", "z3"}
    # s_m: masked-only nodes (their noises); s_mc: visible-only ones
    assert mid.s_m == {"z2", "x1", "x2"} and mid.s_mc == {"z3", "x3", "x4"}
    assert low.s_m == {"x1"} and low.s_mc == {"z3", "x2", "x3", "x4"}


def test_dag_with_two_parents_and_disconnected_parts():
    par = {"a": (), "b": (), "x1": ("a",), "x2": ("a", "b"), "x3": ("b",)}
    dag = th.make_dag(par, ["x1", "x2", "x3"])
    assert th.shared_latents(dag, {"x2", "x3"}).c == {"a"}
    assert th.shared_latents(dag, {"x1", "x3"}).c == {"a", "b"}
    assert th.shared_latents(dag, {"x1", "x2"}).c == {"b"}
    split = th.make_dag({"a": (), "b": (), "x1": ("a",), "x2": ("b",)}, ["x1", "x2"])
    info = th.shared_latents(split, {"x2"})
    assert info.c == frozenset() and info.shared == frozenset() and math.isnan(info.mean_level)


def test_figure2_style_dag():
    dag = th.figure2_dag()
    # masking z5's pixels: z5 is masked-only, z2 and z3 both keep visible pixels -> c = {z2, z3}
    info = th.shared_latents(dag, vis(dag, ["x3", "x4"]))
    assert info.shared == {"z1", "z2", "z3"} and info.c == {"z2", "z3"} and info.c_levels == (1, 1)
    # masking x1 only: z4 keeps x2 visible
    assert th.shared_latents(dag, vis(dag, ["x1"])).c == {"z4"}
    # masking z4's pixels: z2 still reaches the visible x3, x4 through z5
    assert th.shared_latents(dag, vis(dag, ["x1", "x2"])).c == {"z2"}


def test_figure4_narrative():
    """Sec. 2.3: low and extreme masks give low-level c, a moderate mask the top variable."""
    dag = th.figure4_tree()
    masks = th.figure4_masks()
    got = {k: th.shared_latents(dag, v) for k, v in masks.items()}
    assert got["low"].c == {"z4"} and got["moderate"].c == {"z1"} and got["extreme"].c == {"z7"}
    assert got["low"].min_level == got["extreme"].min_level == 2 and got["moderate"].min_level == 0


def test_edge_cases_raise_one_line_errors():
    dag = two_branches()
    with pytest.raises(ParameterError, match="visible must be non-empty"):
        th.shared_latents(dag, set())
    with pytest.raises(ParameterError, match="strict subset"):
        th.shared_latents(dag, set(dag.observed))
    with pytest.raises(ParameterError, match="observed leaves"):
        th.shared_latents(dag, {"z1"})
    with pytest.raises(ParameterError, match="acyclic"):
        th.make_dag({"a": ("b",), "b": ("a",), "x": ("a",)}, ["x"])
    with pytest.raises(ParameterError, match="Assumption 1"):
        th.make_dag({"a": (), "x": ("a",), "y": ("x",)}, ["x", "y"])
    with pytest.raises(ParameterError, match="parents"):
        th.make_dag({"x": ("ghost",)}, ["x"])


def test_quadtree_structure_and_unit_masks():
    dag = th.quadtree_dag(4)  # levels 0 (root), 1 (2x2-patch blocks); 16 patches
    assert len(dag.latents) == 5 and dag.levels["z1_1_0"] == 1 and dag.levels["x_0_0"] == 2
    assert dag.descendants["z1_1_0"] == {"x_2_0", "x_2_1", "x_3_0", "x_3_1"}
    # unit = 2 masks whole bottom blocks: c is always the root (no bottom block is split)
    g = torch.Generator().manual_seed(0)
    for v in th.sample_visible(dag, 0.5, unit=2, n=20, generator=g):
        assert len(v) == 8 and th.shared_latents(dag, v).c == {"z0_0_0"}
    # unit = 1 at ratio 0.25 (12 of 16 visible): every block holding a masked patch is split
    for v in th.sample_visible(dag, 0.25, unit=1, n=20, generator=g):
        info = th.shared_latents(dag, v)
        masked_blocks = {f"z1_{int(x.split('_')[1]) // 2}_{int(x.split('_')[2]) // 2}" for x in info.masked}
        assert len(v) == 12 and info.c == masked_blocks


def test_sample_visible_matches_block_masking_count_and_errors():
    dag = th.quadtree_dag(8)
    g = torch.Generator().manual_seed(1)
    for unit, ratio, keep in ((1, 0.75, 16), (2, 0.75, 16), (4, 0.5, 32), (1, 0.9, 6)):
        assert all(len(v) == keep for v in th.sample_visible(dag, ratio, unit, n=5, generator=g))
    with pytest.raises(ParameterError, match="at least 1"):
        th.sample_visible(dag, 0.9, unit=4)  # 4 units, int(4 * 0.1) = 0 kept
    with pytest.raises(ParameterError, match="grid"):
        th.sample_visible(two_branches(), 0.5)


def test_sweep_levels_and_determinism():
    dag = th.quadtree_dag(8)  # levels 0, 1, 2 (2x2 blocks)
    df = th.sweep(dag, [0.1, 0.5, 0.9], [1, 2], n_masks=30, seeds=[0, 1])
    again = th.sweep(dag, [0.1, 0.5, 0.9], [1, 2], n_masks=30, seeds=[0, 1])
    assert df.equals(again) and len(df) == 12
    fr = df[[c for c in df.columns if c.startswith("frac_level_")]].sum(axis=1)
    np.testing.assert_allclose(fr, 1.0)
    # unit 2 never splits a bottom block: no level-2 node in c
    assert (df[df.unit == 2]["frac_level_2"] == 0).all()
    # unit 1 at ratio 0.1: 58 visible / 6 masked patches; c is made of the split 2x2 blocks
    r = df[(df.unit == 1) & (df.mask_ratio == 0.1)]
    assert (r["max_level"] == 2).all()


def test_shapes_dag_matches_the_generator():
    dag = th.shapes_dag(64, 4)
    corner, centre = dag.parents["x_0_0"], dag.parents["x_8_8"]
    assert "class" not in corner and set(corner) == {"background", "background_gradient", "noise_std"}
    assert {"class", "position", "texture", "colour"} <= set(centre)
    assert dag.levels["class"] == 0 and dag.levels["scale"] == 1 and dag.levels["texture"] == 2
    # one split of a touchable patch: c holds the object and low-level sinks, not the class (an ancestor of c)
    info = th.shared_latents(dag, set(dag.observed) - {"x_8_8"})
    assert "class" in info.shared and "class" not in info.c and "texture" in info.c and "position" in info.c
    # visible = corner patches only: the object factors are not shared
    corners = {"x_0_0", "x_0_15", "x_15_0", "x_15_15"}
    assert th.shared_latents(dag, corners).c == {"background", "background_gradient", "noise_std"}


def test_shapes_reach_bounds_the_rendered_silhouettes():
    """Independent check: no rendered silhouette pixel lies farther from its object's centre than the reach."""
    from maelab import data

    size = 32
    ds = data.load("shapes", "train", n=3000, seed=0, size=size)
    reach = th.shapes_object_reach(size)
    m = ds.latents["mask"][:, 0] > 0
    centres = (torch.arange(size) + 0.5) / size
    dx = centres.view(1, 1, size) - ds.latents["x"].view(-1, 1, 1)
    dy = centres.view(1, size, 1) - ds.latents["y"].view(-1, 1, 1)
    far = torch.hypot(dx, dy)[m].max().item()
    assert far <= reach < far + 0.06


def test_claim_evidence_helpers_on_a_hand_table():
    import pandas as pd

    rows = []
    for seed, shift in ((0, 0.0), (1, 0.2)):
        for r, base in ((0.1, 2.5), (0.75, 2.0), (0.9, 2.25)):
            for u, du in ((1, 0.0), (2, -1.0)):
                rows.append({"seed": seed, "mask_ratio": r, "unit": u, "mean_level": base + du + shift})
    df = pd.DataFrame(rows)
    tr = th.unit_trend(df, 0.75)
    assert tr["x"] == (1.0, 2.0)
    np.testing.assert_allclose(tr["y"], [2.1, 1.1])
    np.testing.assert_allclose(tr["y_err"], [0.1, 0.1])  # std of (2.0, 2.2) / sqrt(2)
    assert tr["y_n"] == (2, 2)  # two seeds behind each point
    # per seed: min(2.5 - 2.0, 2.25 - 2.0) averaged over units = 0.25 (the unit offsets cancel)
    np.testing.assert_allclose(th.ratio_extreme_gaps(df), [0.25, 0.25])
    with pytest.raises(ParameterError, match="mask_ratio"):
        th.unit_trend(df, 0.5)
    with pytest.raises(ParameterError, match="table"):
        th.ratio_extreme_gaps(df, mid=0.5)


def test_figure4_panels_and_draw():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = th.figure4_panels()
    assert {k: set(v.c) for k, v in panels.items()} == {"low": {"z4"}, "moderate": {"z1"}, "extreme": {"z7"}}
    fig, ax = plt.subplots()
    th.draw(th.figure4_tree(), panels["low"], ax, title="low")
    faces = [tuple(c.get_facecolor()[0]) for c in ax.collections if len(c.get_offsets()) == 1]
    blue = matplotlib.colors.to_rgba("tab:blue")
    assert sum(np.allclose(f, blue) for f in faces) == 1  # exactly one node of c drawn blue
    plt.close(fig)


def test_sweep_marks_infeasible_cells():
    dag = th.quadtree_dag(8)  # unit 4: 4 units; ratio 0.9 keeps int(0.4) = 0 of them
    df = th.sweep(dag, [0.75, 0.9], [4], n_masks=3, seeds=[0])
    assert df.feasible.tolist() == [True, False] and np.isnan(df.mean_level.iloc[1])
    assert df.mean_level.iloc[0] == 0.0  # units are the four quadrants: only the root is split
