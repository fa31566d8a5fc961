"""Theorem 2 in the linear-Gaussian hierarchy: exact canonical correlations, violations, sampled estimates."""

import numpy as np
import pytest
import torch
from scipy.linalg import subspace_angles

from maelab._validate import ParameterError
from maelab.papers.kong2023 import linear_gaussian as lg
from maelab.papers.kong2023 import theory as th


def test_canonical_correlations_hand_examples():
    rho = 0.3
    # a = z, b = (z1, rho z2 + sqrt(1 - rho^2) w): correlations 1 and rho
    np.testing.assert_allclose(lg.canonical_correlations(np.eye(2), np.eye(2), np.diag([1.0, rho])), [1.0, rho])
    # a = (z1, z1) is rank 1: one correlation 1 with b = z, the other padded 0
    c_aa = np.ones((2, 2))
    c_ab = np.array([[1.0, 0.0], [1.0, 0.0]])
    np.testing.assert_allclose(lg.canonical_correlations(c_aa, np.eye(2), c_ab), [1.0, 0.0], atol=1e-12)
    with pytest.raises(ParameterError, match="c_ab"):
        lg.canonical_correlations(np.eye(2), np.eye(3), np.eye(2))


def test_population_cca_equals_principal_angle_cosines():
    """With white noise E, CCA of L_a E and L_b E = cosines of the principal angles between the row spaces."""
    rng = np.random.default_rng(0)
    la, lb = rng.standard_normal((3, 8)), rng.standard_normal((4, 8))
    cc = lg.canonical_correlations(la @ la.T, lb @ lb.T, la @ lb.T)
    np.testing.assert_allclose(cc, np.sort(np.cos(subspace_angles(la.T, lb.T)))[::-1], atol=1e-10)


def test_algorithm1_shared_dimension_is_the_rank_of_the_cross_covariance():
    """Independent check of theory.shared_latents: rank Cov(x_m, x_mc) = sum of the noise dims over S."""
    g = torch.Generator().manual_seed(3)
    for dag in (th.figure2_dag(), th.quadtree_dag(4), th.figure4_tree()):
        model = lg.make_model(dag, {v: 1 + i % 2 for i, v in enumerate(dag.parents)}, seed=1)
        obs = list(dag.observed)
        for t in range(6):
            perm = torch.randperm(len(obs), generator=g).tolist()
            vis = {obs[i] for i in perm[: 1 + t % (len(obs) - 1)]}
            info = th.shared_latents(dag, vis)
            rank = np.linalg.matrix_rank(lg.covariance(model, info.masked, info.visible), tol=1e-9)
            assert rank == sum(model.noise[u].stop - model.noise[u].start for u in info.shared)


@pytest.mark.parametrize("panel", ["low", "moderate", "extreme"])
def test_theorem2_population_is_exact(panel):
    dag = th.figure4_tree()
    model = lg.make_model(dag, 2, seed=0)
    r = lg.theorem2_check(model, th.figure4_masks()[panel])
    want_dc = {"low": 6, "moderate": 2, "extreme": 6}[panel]  # S = {z1, z2, z4} / {z1} / {z1, z3, z7}, 2 each
    assert r["d_c"] == want_dc == r["k"]
    np.testing.assert_allclose(r["cc_c"][:want_dc], 1.0, atol=1e-8)
    assert r["cc_s_m"].max() < 1e-8 and r["cc_s_mc"].max() < 1e-8
    assert r["rank_gap"] < 1e-10 and abs(r["frac_c_recovered"] - 1) < 1e-8
    for z, cc in r["cc_nodes"].items():  # non-shared nodes: c_hat correlates with them exactly as c does
        np.testing.assert_allclose(cc, r["cc_nodes_c"][z], atol=1e-7)
    if panel == "moderate":  # visible-only z3 is a child of c = z1: its correlation with c_hat is not 0
        assert r["cc_nodes"]["z3"].max() > 0.1


def test_theorem2_on_a_dag_with_two_node_c():
    dag = th.figure2_dag()
    model = lg.make_model(dag, 1, seed=2)
    r = lg.theorem2_check(model, set(dag.observed) - {"x3", "x4"})
    assert r["c"] == ["z2", "z3"] and r["d_c"] == 3  # S = {z1, z2, z3}; c = (z2, z3) has 4 coordinates, rank 3
    np.testing.assert_allclose(r["cc_c"][:3], 1.0, atol=1e-8)
    assert r["cc_c"][3:].max(initial=0) < 1e-8 and r["cc_s_mc"].max() < 1e-8


def test_encoder_width_violations():
    dag = th.figure4_tree()
    model = lg.make_model(dag, 2, seed=0)
    vis = th.figure4_masks()["low"]  # d_c = 6
    small = lg.theorem2_check(model, vis, k=4)
    np.testing.assert_allclose(small["cc_c"], 1.0, atol=1e-8)  # still a function of c ...
    assert abs(small["frac_c_recovered"] - 4 / 6) < 1e-8  # ... but only 4 of c's 6 directions
    big = lg.theorem2_check(model, vis, k=8)
    fit = lg.optimal_encoder(model, vis, 8)
    assert np.abs(fit.A[6:]).max() < 1e-8 * np.abs(fit.A[:6]).max()  # the extra outputs are identically 0
    assert abs(big["frac_c_recovered"] - 1) < 1e-8 and big["cc_s_mc"].max() < 1e-8


def test_non_invertible_masked_leaf_loses_part_of_c():
    # root r (dim 2) -> x1, x2; x1 = (r_1 + eps, 2 (r_1 + eps)) (a rank-1 generator drops r_2): the masked x1
    # shows only r_1
    dag = th.make_dag({"r": (), "x1": ("r",), "x2": ("r",)}, ["x1", "x2"])
    g1 = np.array([[1.0, 0.0, 1.0], [2.0, 0.0, 2.0]])
    model = lg.make_model(dag, {"r": 2, "x1": 1, "x2": 1}, seed=0, generators={"x1": g1})
    r = lg.theorem2_check(model, {"x2"})
    assert r["d_c"] == 2 and r["rank_gap"] < 1e-12
    np.testing.assert_allclose(r["cc_c"], [1.0, 0.0], atol=1e-8)
    assert abs(r["frac_c_recovered"] - 0.5) < 1e-8
    # which half: c_hat is r_1 exactly
    fit = lg.optimal_encoder(model, {"x2"}, 1)
    l_hat = fit.A @ model.stack(["x2"])
    l_r1 = model.loadings["r"][:1]
    np.testing.assert_allclose(
        lg.canonical_correlations(l_hat @ l_hat.T, l_r1 @ l_r1.T, l_hat @ l_r1.T), [1.0], atol=1e-8
    )


def test_sampled_encoder_converges_and_is_seeded():
    dag = th.figure4_tree()
    model = lg.make_model(dag, 2, seed=0)
    vis = th.figure4_masks()["moderate"]
    a = lg.theorem2_check(model, vis, n_samples=20000, seed=0)
    b = lg.theorem2_check(model, vis, n_samples=20000, seed=0)
    c = lg.theorem2_check(model, vis, n_samples=20000, seed=1)
    np.testing.assert_array_equal(a["cc_c"], b["cc_c"])
    assert not np.array_equal(a["cc_c"], c["cc_c"])
    assert a["cc_c"].min() > 0.99 and a["cc_s_mc"].max() < 0.1 and a["cc_s_m"].max() < 0.1
    small = lg.theorem2_check(model, vis, n_samples=200, seed=0)
    assert small["cc_c"].min() < a["cc_c"].min()  # fewer samples, worse estimate


def test_sweep_theorem2_and_errors():
    dag = th.figure4_tree()
    model = lg.make_model(dag, 1, seed=0)
    df = lg.sweep_theorem2(model, th.figure4_masks(), seeds=[0, 1], n_samples=[None, 5000])
    assert len(df) == 12
    pop = df[df.fit == "population"]
    assert (pop.min_cc_c > 1 - 1e-8).all() and (pop.max_cc_s_mc < 1e-8).all()
    split = th.make_dag({"a": (), "b": (), "x1": ("a",), "x2": ("b",)}, ["x1", "x2"])
    with pytest.raises(ParameterError, match="share a latent"):
        lg.theorem2_check(lg.make_model(split), {"x2"})
    with pytest.raises(ParameterError, match="columns"):
        lg.make_model(dag, 1, generators={"x1": np.ones((1, 2))})
    with pytest.raises(ParameterError, match="k must be"):
        lg.optimal_encoder(model, {"x8"}, 100)


def test_theorem2_experiment_table():
    df = lg.theorem2_experiment(4, 1, 0.5, 2, seeds=[0, 1], n_samples=[None, 2000])
    # per seed: (2 random + 3 figure-4 masks) x 2 sample sizes
    assert len(df) == 2 * 5 * 2 and set(df.model) == {"quadtree", "figure4"}
    pop = df[df.fit == "population"]
    assert (pop.min_cc_c > 1 - 1e-8).all() and (pop.max_cc_s_m < 1e-8).all() and (pop.max_cc_s_mc < 1e-8).all()
    again = lg.theorem2_experiment(4, 1, 0.5, 2, seeds=[0, 1], n_samples=[None, 2000])
    assert df.equals(again)
