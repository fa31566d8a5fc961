"""The linear part of bisulco_jacobians: configs that find the committed records, the identity map has spread 0
(so the full-rank AE does), hand-made profiles give their decay length, one-line errors."""

import math

import numpy as np
import pytest

from maelab import paths, profiles, store
from maelab._validate import ParameterError
from maelab.papers.bisulco2025 import jacobian_linear as jl

SMALL = dict(lin_size=8, lin_n=200, lin_patch_sizes=[2, 4], lin_mask_ratios=[0.3, 0.8], dae_sigmas=[0.05, 0.1],
             lin_margin=2, lin_seeds=[0, 1], lin_datasets=["natural"], rank_fracs=[0.25, 1.0])  # fmt: skip


@pytest.mark.parametrize("name,config", [("linear_models", jl.linear_config), ("rank_panel", jl.rank_config)])
def test_configs_hash_to_the_committed_records(name, config):
    r = store.load("bisulco_jacobians", name, "cpu", root=paths.committed_results())
    if r is None:
        pytest.skip(f"no committed bisulco_jacobians/{name}.cpu")
    S = profiles.settings("bisulco_jacobians", "cpu")
    assert store.config_hash({"profile": "cpu", **config(S)}) == r.provenance["config_hash"]


def test_identity_map_is_the_most_local():
    S = profiles.settings("bisulco_jacobians", "smoke", **SMALL)
    spread, profile = jl.summarise(np.eye(64), S)
    assert spread == 0.0  # all weight on the pixel itself
    assert profile[0] == profile.max() and (profile[1:] == 0).all()


def test_linear_models_and_rank_panel_on_small_crops(cache):
    S = profiles.settings("bisulco_jacobians", "smoke", **SMALL)
    lin = jl.unpack_linear(jl.linear_models(S), S)["natural"]
    assert lin["spread_mae"].shape == (2, 2, 2) and lin["spread_ae"].shape == (2,) and lin["spread_dae"].shape == (2, 2)
    assert lin["profile_mae"].shape == (2, 2, 5) and lin["profile_ae"].shape == (5,)
    assert (lin["spread_mae"] > 0).all() and (lin["spread_ae"] > 0).all()  # rank d/4: not the identity
    rk = jl.rank_panel(S)
    assert rk["k"] == [16, 64]
    assert rk["ae"][-1] == pytest.approx(0.0, abs=1e-9)  # at k = d (< n crops) the AE is the identity
    assert rk["mae"][-1] > 0  # the MAE still predicts masked pixels from others
    titles = [t for t, _ in jl.example_weights(S)]
    # the claims' p, m: patch_size 8 and mask ratio 0.8 of the smoke profile are not / are in the grid
    assert titles == ["AE", "DAE σ = 0.1", "MAE p = 4, m = 0.3", "MAE p = 4, m = 0.8", "MAE p = 2, m = 0.8"]


def test_linear_table_by_hand():
    S = profiles.settings("bisulco_jacobians", "smoke", **SMALL)
    prof = 2.0 ** -np.arange(5)  # e^{-r / ell} with ell = 1 / ln 2
    lin = {"natural": {"spread_mae": np.full((2, 2, 2), 3.0), "spread_ae": np.array([1.0, 2.0]),
                       "spread_dae": np.array([[1.0, 2.0], [3.0, 4.0]]), "profile_mae": np.tile(prof, (2, 2, 1)),
                       "profile_ae": prof, "profile_dae": np.tile(prof, (2, 1))}}  # fmt: skip
    t = jl.linear_table(lin, S)
    assert list(t.model[:3]) == ["AE (m = 0)", "DAE σ = 0.05", "DAE σ = 0.1"] and len(t) == 3 + 4
    assert list(t["half-mass radius (px)"][:3]) == [1.5, 2.0, 3.0]
    assert np.allclose(t["decay length (px)"], 1 / math.log(2))
    with pytest.raises(ParameterError, match="^lin must be"):
        jl.linear_table({"natural": {"spread_ae": 1}}, S)


def test_bad_input_is_one_line():
    S = profiles.settings("bisulco_jacobians", "smoke", **SMALL)
    with pytest.raises(ParameterError, match="^name must be"):
        jl.crops(S, "shapes", 0)
    with pytest.raises(ParameterError, match="^result must be"):
        jl.unpack_linear({"x": 1}, S)
    with pytest.raises(ParameterError, match="^S must be"):
        jl.linear_config(profiles.settings("bisulco_ising", "smoke"))
