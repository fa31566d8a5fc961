"""The bisulco_ising page's computation: the stored config finds the committed record, the closed forms' scales
behave as the maps they measure must (the full-rank AE is the identity), the page's tables by hand."""

import numpy as np
import pandas as pd
import pytest

from maelab import paths, profiles, store
from maelab._validate import ParameterError
from maelab.papers.bisulco2025 import ising

# the settings of test_bisulco2025_evidence's hand-made Ising table
SMALL = dict(L=8, rank_fracs=[0.25, 1.0], seeds=[0, 1], mask_ratios=[0.1, 0.5, 0.9], p_for_m=2, m_for_p=0.5,
             patch_sizes=[2, 4], dae_sigma=0.5)  # fmt: skip


def _table():
    ell = {  # (model, m, p): decay length per seed (0, 1)
        ("MAE", 0.1, 2): (2.0, 2.2),
        ("MAE", 0.5, 2): (3.0, 3.4),
        ("MAE", 0.9, 2): (5.0, 5.0),
        ("MAE", 0.5, 4): (4.0, 4.6),
        ("MAE", 0.9, 4): (6.0, 80.0),  # seed 1 hit the cap 10 L = 80
        ("AE", 0.0, 1): (1.0, 1.5),
        ("DAE", 0.5, 0): (1.2, 1.1),
    }
    rows = []
    for k in (16, 64):
        for (model, m, p), v in ell.items():
            for s in (0, 1):
                rows.append({"seed": s, "k": k, "model": model, "m": m, "p": p, "decay_length": v[s],
                             "no_decay": v[s] == 80.0, "mass_radius": 2.0 + s})  # fmt: skip
    return pd.DataFrame(rows)


def test_scales_config_hashes_to_the_committed_record():
    r = store.load("bisulco_ising", "scales", "cpu", root=paths.committed_results())
    if r is None:
        pytest.skip("no committed bisulco_ising/scales.cpu")
    S = profiles.settings("bisulco_ising", "cpu")
    assert store.config_hash({"profile": "cpu", **ising.scales_config(S)}) == r.provenance["config_hash"]


def test_model_key_and_configs():
    assert ising.model_key("DAE", 0.5, 0, 256) == "DAE_m50_p0_k256"
    assert ising.model_key("MAE", 0.01, 8, 1024) == "MAE_m1_p8_k1024"
    with pytest.raises(ParameterError, match="^kind must be"):
        ising.model_key("VAE", 0.5, 4, 4)
    S = profiles.settings("bisulco_ising", "smoke", **SMALL)
    # m-series at p 2, p-series at m 0.5, Fig. 20 (0.5, 4), (0.5, 2), Fig. 21 (0.9, 4), (0.1, 2)
    assert ising.mae_configs(S) == [(0.1, 2), (0.5, 2), (0.5, 4), (0.9, 2), (0.9, 4)]
    with pytest.raises(ParameterError, match="^S must be"):
        ising.mae_configs(profiles.settings("bisulco_linear_mae", "smoke"))


def test_ising_scales_small_lattice(cache):
    S = profiles.settings("bisulco_ising", "smoke", L=8, n=40, seeds=[0], rank_fracs=[0.25, 1.0], p_for_m=2,
                          mask_ratios=[0.1, 0.9], patch_sizes=[2, 4])  # fmt: skip
    out = ising.ising_scales(S)
    t = out["table"]
    n_models = 2 + len(ising.mae_configs(S))  # AE, the MAEs, DAE
    assert len(t) == 2 * n_models and sorted(t.k.unique()) == [16, 64]
    assert (t.decay_length.dropna() <= 80).all() and t.decay_length.isna().sum() == 1 and (t.mass_radius >= 0).all()
    full_ae = t[(t.k == 64) & (t.model == "AE")].iloc[0]
    assert full_ae.mass_radius == 0.0 and np.isnan(full_ae.decay_length)  # the identity: all weight at r = 0
    key = ising.model_key("MAE", 0.9, 4, 16)
    assert out[f"fields_{key}"].shape == (6, 8, 8) and f"fields_{ising.model_key('MAE', 0.9, 4, 64)}" not in out
    assert out[f"profile_{key}"].shape == (1, len(out["radii"]))


def test_tables_by_hand():
    S = profiles.settings("bisulco_ising", "smoke", **SMALL)
    md = ising.scale_table(_table(), [16]).splitlines()
    assert md[0] == "| rank k | model | decay length ℓ (px) | mass radius (px) |" and len(md) == 2 + 7
    # (6 + 80) / 2 = 43, s.e. |80 - 6| / 2 = 37; mass radius 2, 3: 2.5 ± 0.5
    assert "| 16 | MAE m = 0.9, p = 4 | 43.00 ± 37.00 (cap: no decay) | 2.50 ± 0.50 |" in md
    assert "| 16 | AE (PCA) | 1.25 ± 0.25 | 2.50 ± 0.50 |" in md
    verdicts = ising.rank_verdicts(_table(), S).splitlines()
    assert len(verdicts) == 2 + 2 * 4
    # two seeds: the steps of the m-series are not significant (test_bisulco2025_evidence says why)
    assert any(v.startswith("| 16 | bisulco.fig21_scale_grows_with_m | inconclusive |") for v in verdicts)
    # min over (0.5, 4), (0.5, 2), (0.9, 4) per seed: 3.0, 3.4
    assert ising.decay_lengths(_table(), S) == pytest.approx({"ae": 1.25, "dae": 1.15, "mae_min": 3.2})
    with pytest.raises(ParameterError, match="^table must be"):
        ising.scale_table(_table().drop(columns="no_decay"), [16])
