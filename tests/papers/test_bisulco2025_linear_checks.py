"""The bisulco_linear_mae page's computations: configs that find the committed records, and on small synthetic
crops the properties each table must have whatever the data (Monte Carlo agrees with the exact lemma within its
standard error, the closed form is the minimum training reaches, at m = 0 the spectrum is PCA's)."""

import numpy as np
import pandas as pd
import pytest

from maelab import paths, profiles, store
from maelab._validate import ParameterError
from maelab.papers.bisulco2025 import linear_checks as lc

SMALL = dict(crop=8, n=60, k=2, mask_ratios=[0.25, 0.75], patch_sizes=[2, 4], mc_draws=400, thm1_configs=[[0.5, 2]],
             seeds=[0], sgd_steps=40, polish_steps=40, spectrum_ratios=[0.0, 0.5], taylor_ratios=[0.1, 0.9],
             taylor_draws=200)  # fmt: skip


def _small():
    S = profiles.settings("bisulco_linear_mae", "smoke", **SMALL)
    X = np.random.default_rng(0).normal(size=(S.n, S.crop * S.crop)) * np.linspace(2.0, 0.5, 64)
    return S, X - X.mean(0)


@pytest.mark.parametrize(
    "name,config",
    [("lemma1", lc.lemma1_config), ("theorem1", lc.theorem1_config), ("spectrum", lc.spectrum_config),
     ("lemma6", lc.lemma6_config), ("taylor", lc.taylor_config)],
)  # fmt: skip
def test_configs_hash_to_the_committed_records(name, config):
    r = store.load("bisulco_linear_mae", name, "cpu", root=paths.committed_results())
    if r is None:
        pytest.skip(f"no committed bisulco_linear_mae/{name}.cpu")
    S = profiles.settings("bisulco_linear_mae", "cpu")
    assert store.config_hash({"profile": "cpu", **config(S, 0)}) == r.provenance["config_hash"]


def test_crops_are_centred_rows(cache):
    S = profiles.settings("bisulco_linear_mae", "smoke", dataset="natural", n=20, crop=8)
    X = lc.crops(S, 1)
    assert X.shape == (20, 64) and X.dtype == np.float64
    assert np.abs(X.mean(0)).max() < 1e-12 and X.std() > 0
    assert sorted(lc.patch_indices(S)) == [2, 4]  # the smoke patch sizes, its Theorem 1 patch 4, and 4


def test_lemma1_and_lemma6_agree_with_monte_carlo():
    S, X = _small()
    t1 = lc.lemma1_table(X, S, 0)["table"]
    assert len(t1) == 4 and (t1["z"].abs() < 4).all()
    assert (t1["mc_se"] > 0).all()
    t6 = lc.lemma6_table(X, S, 0)["table"]
    assert list(t6["m"]) == [0.1, 0.9] and (t6["z"].abs() < 4).all()
    assert np.allclose(t6["total"], t6["mean_fit"] + t6["variance"], rtol=1e-12)


def test_theorem1_training_never_beats_the_closed_form():
    S, X = _small()
    out = lc.theorem1_runs(X, S)
    t = out["table"]
    assert list(zip(t.m, t.p)) == [(0.0, 4), (0.5, 2)]
    assert (t["gap_sgd"] > -1e-9).all() and (t["gap_polish"] > -1e-9).all()  # the closed form is the minimum
    assert t["angle_pca"].notna().tolist() == [True, False]
    steps = out["curve"][:, 0]  # both phases, the polish's steps counted on from the SGD's
    assert steps[-1] == S.sgd_steps + S.polish_steps and (np.diff(steps) > 0).all() and steps[0] <= S.sgd_steps


def test_spectrum_at_m0_is_pca():
    S, X = _small()
    sp = lc.spectrum(X, S)
    assert sp["by_m"].shape[0] == 2 and sp["by_p"].shape[0] == 2
    # m = 0: C = X^T X, so the scaled eigenvalues sum to 1 and its top-k subspace is PCA's
    assert sp["by_m"][0].sum() == pytest.approx(1.0, rel=1e-9)
    assert sp["angle_m"][0] < 1e-4


def test_taylor_table_scale_and_rows():
    S, X = _small()
    out = lc.taylor_table(X, S, 0)
    assert out["s"] > 0 and list(out["table"]["m"]) == [0.1, 0.9]
    assert np.isfinite(out["table"][["mc", "lemma4", "lemma5"]].to_numpy()).all()


def test_markdown_tables_by_hand():
    t1 = pd.DataFrame([{"m": 0.25, "p": 2, "lemma1": 10.0, "mc": 10.123, "mc_se": 0.05, "z": 2.46, "fixed_mc": 11.0,
                        "fixed_z": 20.04}])  # fmt: skip
    assert lc.lemma1_markdown(t1).splitlines()[-1] == "| 0.25 | 2 | 10.00 | 10.12 ± 0.05 | +2.46 | 11.00, +20.0 |"
    t = pd.DataFrame({"seed": [0, 1], "m": [0.5, 0.5], "p": [4, 4], "eig_ratio": [2.0, 3.0], "gap_sgd": [1e-3, 2e-3],
                      "angle_sgd": [1.0, 0.5], "gap_polish": [1e-7, 3e-7], "angle_polish": [0.01, 0.02]})  # fmt: skip
    # the mean eigenvalue ratio, the worst of the rest over the two seeds
    assert lc.theorem1_markdown(t).splitlines()[-1] == "| 0.5 | 4 | 2.50 | 2.0e-03 | 1.00 | 3.0e-07 | 0.020 |"
    with pytest.raises(ParameterError, match="^table must be"):
        lc.lemma1_markdown(t)


def test_bad_input_is_one_line():
    S, X = _small()
    with pytest.raises(ParameterError, match="^X must be"):
        lc.lemma1_table(X[:, :5], S, 0)
    with pytest.raises(ParameterError, match="^seed must be"):
        lc.lemma6_table(X, S, -1)
    with pytest.raises(ParameterError, match="^S must be"):
        lc.spectrum(X, profiles.settings("bisulco_ising", "smoke"))
