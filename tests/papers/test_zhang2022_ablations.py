"""maelab.papers.zhang2022.ablations: the three groups of the zhang_ablations page, built from its settings."""

import dataclasses

import pytest

from maelab import models, profiles
from maelab._validate import ParameterError
from maelab.experiments import variant_config
from maelab.papers.zhang2022 import ablations as A
from maelab.papers.zhang2022 import plan


@pytest.mark.parametrize(
    "lam, name", [(0.0, "lam_0"), (0.01, "lam_0p01"), (0.1, "lam_0p1"), (1.0, "lam_1"), (1e-5, "lam_1em05")]
)
def test_lambda_names_round_trip(lam, name):
    assert A.lam_name(lam) == name and A.lam_of(name) == lam
    # a variant name must be identifier-like for umae.compare (letters, digits, underscores)
    assert name.replace("_", "a").isalnum()


@pytest.mark.parametrize(
    "call, arg",
    [(A.lam_name, -0.1), (A.lam_name, float("nan")), (A.lam_of, "mae"), (A.lam_of, "lam_x"), (A.lam_of, 3)],
)
def test_lambda_names_refuse_bad_input(call, arg):
    with pytest.raises(ParameterError) as e:
        call(arg)
    assert "\n" not in str(e.value)


def test_groups_on_the_cpu_settings():
    """The cpu page: MNIST 28 px grey with patch 7 under the official choices; lambda 0 is the plain MAE model,
    the others U-MAE with their coefficient; SimMIM's group at its own mask ratio; the no-mask run differs from the
    sweep's lambda-0 run only in the mask ratio."""
    S = profiles.settings("zhang_ablations", "cpu")
    g = A.groups(S)
    assert list(g) == list(A.GROUPS)
    base, sweep = g["lambda_sweep"]
    assert (base.dataset, base.img_size, base.channels, base.mask_ratio) == ("mnist", 28, 1, 0.75)
    over = dict(base.model_overrides)
    assert over["patch_size"] == 7 and {k: over[k] for k in models.OFFICIAL_CHOICES} == models.OFFICIAL_CHOICES
    assert list(sweep) == [A.lam_name(v) for v in S.lams]
    assert sweep["lam_0"] == {"model": "mae"}
    for name, fields in sweep.items():
        spec = dataclasses.replace(base, **fields)
        lam = A.lam_of(name)
        if lam > 0:
            assert spec.model == "umae" and dict(spec.model_overrides)["lambda_unif"] == lam
            # only the coefficient is added: choices and patch size kept
            assert {k: v for k, v in spec.model_overrides if k != "lambda_unif"} == over
    sim_base, sim = g["simmim"]
    assert sim_base.mask_ratio == S.simmim_mask_ratio and list(sim) == ["simmim", "usimmim"]
    usim = dataclasses.replace(sim_base, **sim["usimmim"])
    assert usim.model == "usimmim" and dict(usim.model_overrides)["lambda_unif"] == S.simmim_lam
    nb, nm = g["no_mask"]
    no_mask = dataclasses.replace(nb, **nm["mask_0"])
    mae = dataclasses.replace(base, **sweep["lam_0"])
    assert no_mask.mask_ratio == 0.0 and dataclasses.replace(no_mask, mask_ratio=0.75) == mae
    # every variant has a config the store can key on
    for _, (_, variants) in g.items():
        for fields in variants.values():
            assert variant_config(fields)


def test_groups_follow_the_settings():
    """A patch size of None is the size's own; shapes is 32 px RGB; the lambdas come sorted from the settings."""
    S = profiles.settings("zhang_ablations", "smoke")
    base, sweep = A.groups(S)["lambda_sweep"]
    assert (base.dataset, base.img_size, base.channels) == ("shapes", 32, 3)
    assert "patch_size" not in dict(base.model_overrides)
    assert [A.lam_of(n) for n in sweep] == sorted(S.lams)
    legacy = A.base_spec(profiles.settings("zhang_ablations", "smoke", model_choices="legacy"))
    assert {k: dict(legacy.model_overrides)[k] for k in models.LEGACY_CHOICES} == models.LEGACY_CHOICES


@pytest.mark.parametrize("profile", ["smoke", "cpu", "gpu"])
def test_cost_plan_prices_the_runs_the_page_makes(profile):
    """One planned run per (group, variant) with a repeat per seed, and a random-init reference for the groups
    that have one (all but no_mask)."""
    S = profiles.settings("zhang_ablations", profile)
    runs = plan.ablation_runs(profile)
    g = A.groups(S)
    trained = [r for r in runs if not r.label.endswith("random init")]
    assert [r.label for r in trained] == [f"{n} {v}" for n, (_, vs) in g.items() for v in vs]
    assert all(r.repeats == len(S.seeds) for r in runs)
    assert sorted(r.label for r in runs if r.label.endswith("random init")) == [
        "lambda_sweep random init",
        "simmim random init",
    ]
