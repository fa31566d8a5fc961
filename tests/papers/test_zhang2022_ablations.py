"""maelab.papers.zhang2022.ablations: the three groups of the zhang_ablations page, built from its settings."""

import dataclasses

import pytest

from maelab import profiles, result_keys
from maelab._validate import ParameterError
from maelab.experiments import variant_config
from maelab.papers.zhang2022 import ablations as A
from maelab.papers.zhang2022 import evidence as E
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
    assert (
        over["patch_size"] == 7 and {k: over[k] for k in result_keys.OFFICIAL_CHOICES} == result_keys.OFFICIAL_CHOICES
    )
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
    assert {k: dict(legacy.model_overrides)[k] for k in result_keys.LEGACY_CHOICES} == result_keys.LEGACY_CHOICES


@pytest.mark.parametrize("profile", ["smoke", "cpu", "gpu"])
def test_cost_plan_prices_the_runs_the_page_makes(profile):
    """One planned run per (group, variant) with a repeat per seed, and a random-init reference for the groups
    that have one (all but no_mask); then the effective-lambda groups, each at its own seeds."""
    S = profiles.settings("zhang_ablations", profile)
    runs = plan.ablation_runs(profile)
    g = A.groups(S)
    e = A.effective_groups(S)
    trained = [r for r in runs if not r.label.endswith("random init")]
    assert [r.label for r in trained] == [f"{n} {v}" for n, (_, vs) in g.items() for v in vs] + [
        f"{n} {v}" for n, (_, vs, _, _) in e.items() for v in vs
    ]
    repeats = {f"{n} {v}": len(S.seeds) for n, (_, vs) in g.items() for v in vs}
    repeats.update({f"{n} {v}": len(seeds) for n, (_, vs, seeds, _) in e.items() for v in vs})
    assert {r.label: r.repeats for r in trained} == repeats
    assert sorted(r.label for r in runs if r.label.endswith("random init")) == sorted(
        ["lambda_sweep random init", "simmim random init"] + [f"{n} random init" for n, (*_, ri) in e.items() if ri]
    )


def test_effective_groups_on_the_cpu_settings():
    """Table 1 at the official code's weight: lambda_paper / processes = 1.25e-3; the runs Table 3 already holds
    (lambda 0 and 0.01 at its seeds) are not planned again; the fine-patch group differs only in the patch size."""
    S = profiles.settings("zhang_ablations", "cpu")
    assert S.lam_eff == pytest.approx(0.01 / 8)
    e = A.effective_groups(S)
    assert list(e) == ["lam_eff_new_seeds", "lam_eff_table3_seeds", "lam_eff_fine_patch"]
    base, variants, seeds, ri = e["lam_eff_new_seeds"]
    assert seeds == (3, 4, 5) and ri and list(variants) == ["lam_0", "lam_0p00125", "lam_0p01"]
    sweep_base, sweep = A.groups(S)["lambda_sweep"]
    assert base == sweep_base
    for name in ("lam_0", "lam_0p01"):  # the very runs of Table 3 at other seeds
        assert variant_config(variants[name]) == variant_config(sweep[name])
    _, old, old_seeds, old_ri = e["lam_eff_table3_seeds"]
    assert list(old) == ["lam_0p00125"] and old_seeds == (0, 1, 2) and not old_ri
    assert dict(dataclasses.replace(base, **old["lam_0p00125"]).model_overrides)["lambda_unif"] == 0.00125
    fine, fv, fs, _ = e["lam_eff_fine_patch"]
    assert dict(fine.model_overrides)["patch_size"] == 4 and fs == (0, 1, 2)
    assert dataclasses.replace(fine, model_overrides=base.model_overrides) == base
    assert dict(dataclasses.replace(fine, **fv["lam_0p00125"]).model_overrides)["patch_size"] == 4


def test_effective_settings_refuse_bad_values():
    with pytest.raises(ParameterError, match="lam_paper") as e:
        profiles.settings("zhang_ablations", "cpu", lam_paper=0.02)
    assert "\n" not in str(e.value)
    with pytest.raises(ParameterError, match="fine_patch_size"):
        profiles.settings("zhang_ablations", "cpu", fine_patch_size=5)
    assert "lam_eff_fine_patch" not in A.effective_groups(
        profiles.settings("zhang_ablations", "cpu", fine_patch_size=None)
    )


def _runs(rows):
    import pandas as pd

    return pd.DataFrame(rows, columns=["variant", "seed", "linear_acc"])


def _sweep_and_results(S, shift=0.0):
    """A stored Table 3 table (lambda 0, 0.01, 0.1, random at seeds 0-2) and compare() results of the effective
    groups, with accuracies built so that U-MAE at lam_eff gains 0.02 + shift over MAE in every seed."""
    import json

    base, sweep = A.groups(S)["lambda_sweep"]
    config = json.loads(
        json.dumps(
            {"spec": base.to_config(), "variants": {k: str(variant_config(v)) for k, v in sweep.items()}}, default=str
        )
    )
    mae = {s: 0.80 + 0.01 * s for s in range(6)}
    sw = _runs(
        [(v, s, mae[s] + d) for s in (0, 1, 2) for v, d in (("lam_0", 0), ("lam_0p01", -0.03), ("lam_0p1", -0.05))]
        + [("random", s, 0.6) for s in (0, 1, 2)]
    )
    res = {
        "lam_eff_new_seeds": {
            "runs": _runs(
                [
                    (v, s, mae[s] + d)
                    for s in (3, 4, 5)
                    for v, d in (("lam_0", 0), ("lam_0p00125", 0.02 + shift), ("lam_0p01", -0.03))
                ]
                + [("random", s, 0.6) for s in (3, 4, 5)]
            )
        },
        "lam_eff_table3_seeds": {"runs": _runs([("lam_0p00125", s, mae[s] + 0.02 + shift) for s in (0, 1, 2)])},
    }
    return sw, config, res


def test_effective_runs_reuse_table3_runs_and_give_the_evidence():
    S = profiles.settings("zhang_ablations", "cpu")
    sw, config, res = _sweep_and_results(S)
    runs = A.effective_runs(S, sw, config, res)
    assert sorted(set(runs.variant)) == ["lam_0", "lam_0p00125", "lam_0p01", "random"]
    assert len(runs) == 4 * 6 and sorted(set(runs.seed)) == list(range(6))
    ev, checks = E.effective_lambda_rows(S, runs)
    assert checks["patch"].met and checks["patch"].gains[0] == pytest.approx(0.2)
    assert ev["zhang.table1_linear_mnist_lam_eff"].samples == pytest.approx((0.02,) * 6)
    assert ev["zhang.table1_linear_mnist_lam_paper"].samples == pytest.approx((-0.03,) * 6)
    assert "zhang.table1_linear_mnist_lam_eff_patch4" not in ev
    # a baseline that did not learn gates every row, whatever the differences
    low = runs.assign(linear_acc=[0.62 if v == "lam_0" else a for v, a in zip(runs.variant, runs.linear_acc)])
    ev2, checks2 = E.effective_lambda_rows(S, low)
    assert not checks2["patch"].met and all(e.unmet for e in ev2.values())


def test_effective_runs_refuse_a_sweep_of_another_configuration():
    S = profiles.settings("zhang_ablations", "cpu")
    sw, config, res = _sweep_and_results(S)
    other = {**config, "spec": {**config["spec"], "epochs": 8}}
    with pytest.raises(ParameterError, match="sweep_config"):
        A.effective_runs(S, sw, other, res)
    renamed = {**config, "variants": {**config["variants"], "lam_0p01": "{'model': 'umae'}"}}
    with pytest.raises(ParameterError, match="sweep_config"):
        A.effective_runs(S, sw, renamed, res)
    with pytest.raises(ParameterError, match="results"):  # a seed missing
        A.effective_runs(S, sw, config, {"lam_eff_new_seeds": res["lam_eff_new_seeds"]})
