"""The cao_theory page's stored computations: configs that find the committed records, tables of the right shape
that agree with the functions they gather, and one-line errors for bad input."""

import numpy as np
import pandas as pd
import pytest

from maelab import paths, profiles, store
from maelab._validate import ParameterError
from maelab.papers.cao2022 import kernels, tikhonov
from maelab.papers.cao2022 import theory_tables as T


def _committed_hash(name):
    r = store.load("cao_theory", name, "cpu", root=paths.committed_results())
    if r is None:
        pytest.skip(f"no committed cao_theory/{name}.cpu")
    return r.provenance["config_hash"]


@pytest.mark.parametrize(
    "name,config",
    [
        ("thm51_rates", T.rates_config),
        ("thm52_conditioning", T.conditioning_config),
        ("prop31_selection", T.selection_config),
    ],
)
def test_configs_hash_to_the_committed_records(name, config):
    S = profiles.settings("cao_theory", "cpu")
    assert store.config_hash({"profile": "cpu", **config(S, 0)}) == _committed_hash(name)


def test_rate_variants_name_the_four_cases():
    v = T.rate_variants("laplace")
    assert len(v) == 4 and all(t[-1] == "laplace" for t in v.values())
    assert v["grid width, unnormalised, smooth"][:4] == ("grid", "width_grid", "none", "smooth")
    assert v["fixed gamma, softmax, smooth"][:2] == ("continuum", "width_continuum")
    with pytest.raises(ParameterError, match="kernel"):
        T.rate_variants("cosine")


def test_rate_tables_gather_rate_study():
    S = profiles.settings("cao_theory", "smoke", ns=[8, 12, 16], n_maps=2)
    out = T.rate_tables(S, seed=3)
    ch, sl = out["changes"], out["slopes"]
    assert len(sl) == 4 * len(kernels.NORMS) * 2 and len(ch) == len(sl) * 3
    direct = kernels.rate_study(
        [8, 12, 16],
        n_maps=2,
        d=S.channels,
        width=S.width_continuum,
        scaling="continuum",
        kernel=S.kernel,
        normalisation="softmax",
        kind="smooth",
        seed=3,
    )
    got = sl.query("variant == 'fixed gamma, softmax, smooth' and norm == 'l2'").sort_values("map")["slope"]
    assert np.allclose(got.to_numpy(), direct["slope"]["l2"], rtol=0, atol=0)
    assert sorted(ch["n"].unique()) == [8, 12, 16]


def test_slope_summary_by_hand():
    sl = pd.DataFrame(
        {
            "variant": ["a"] * 2 * len(kernels.NORMS),
            "norm": [n for n in kernels.NORMS for _ in (0, 1)],
            "slope": [0.0, 2.0] * len(kernels.NORMS),
        }
    )
    tab = T.slope_summary(sl, ["a", "b"])
    # mean 1, half width t(0.975, 1) * s.d. / sqrt(2) = 12.7062 * sqrt(2) / sqrt(2)
    assert tab.loc["a", kernels.NORMS[0]] == "+1.00 [-11.71, +13.71]"
    assert tab.loc["b"].isna().all()
    with pytest.raises(ParameterError, match="slopes"):
        T.slope_summary(pd.DataFrame({"x": [1]}), ["a"])


def test_conditioning_tables_shape_and_recovery_pairs():
    S = profiles.settings("cao_theory", "smoke")
    out = T.conditioning_tables(S, seed=0)
    assert len(out["cond_1d"]) == len(
        tikhonov.conditioning_study(S.tik_ns, S.tik_betas, width=S.tik_width, dim=1, sigma=S.tik_sigma, seed=0)
    )
    assert set(out["cond_1d"]["dim"]) == {1} and set(out["cond_2d"]["dim"]) == {2}
    rec = out["recovery"]
    assert len(rec) == 2 * S.tik_seeds and sorted(set(rec["beta"])) == [0.0, S.claim_beta]


def test_selection_tables_rows(cache):
    S = profiles.settings("cao_theory", "smoke", lr_patch_sides=[4], lr_ranks=[1, 2], lr_images=2, lr_draws=2)
    out = T.selection_tables(S, seed=0)
    assert set(out["study"]["images"]) == {"natural", "synthetic"}
    ex = out["existence"]  # 2 r <= N_c = 4 for r = 1, 2: every image at each rank
    assert len(ex) == 2 * 2 and (ex["ratio"] > 0).all()
    assert len(out["deficiency"]) == 2 * 3  # r <= N_c and 32 px <= 64: each rank, each selection kind


@pytest.mark.parametrize("fn", [T.rates_config, T.rate_tables, T.conditioning_config, T.selection_config])
def test_bad_input_is_one_line(fn):
    S = profiles.settings("cao_theory", "smoke")
    with pytest.raises(ParameterError, match="seed"):
        fn(S, -1)
    with pytest.raises(ParameterError, match="^S must be"):
        fn(profiles.settings("cao_decoder", "smoke"), 0)
