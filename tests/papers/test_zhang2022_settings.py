"""Settings of the Zhang et al. notebooks: degenerate values that would make a claim vacuous are rejected."""

import pytest

from maelab import book
from maelab._validate import ParameterError
from maelab.profiles import FrozenDict, settings


@pytest.mark.parametrize(
    "notebook, params, start",
    [
        # lambda = 0 makes U-MAE the MAE: every paired U-MAE - MAE claim would compare MAE with itself
        ("zhang_umae", {"lam": 0}, "lam must be a number in (0.0, inf); got 0"),
        ("zhang_umae", {"epochs": {"shapes": 0}}, "epochs['shapes'] must be an integer >= 1; got 0"),
        ("zhang_umae", {"n_train": {"svhn": 10}}, "n_train key must be one of 'mnist10k', 'shapes', 'cifar10'"),
        ("zhang_ablations", {"lams": [0.0, 0.1, 1.0]}, "lams must be a list holding 0.0, 0.01 and a value >= 0.1"),
        ("zhang_ablations", {"simmim_lam": 0.0}, "simmim_lam must be a number in (0.0, inf)"),
        ("zhang_mask_graph", {"mask_ratios": [0.2, 0.5]}, "mask_ratios must be a grid starting at 0.0"),
        ("zhang_mask_graph", {"mask_ratios": [0.0]}, "mask_ratios must be a list of at least 2 items"),
        ("zhang_mask_graph", {"claim_k": 3}, "claim_k must be one of ks [2, 16, 64]; got 3"),
    ],
)
def test_degenerate_settings_are_rejected(notebook, params, start):
    with pytest.raises(ParameterError) as e:
        book.setup(notebook, profile="cpu", **params)
    assert str(e.value).startswith(start) and "\n" not in str(e.value)


def test_per_dataset_settings_are_immutable_and_overridable():
    S = settings("zhang_umae", "gpu")
    assert isinstance(S.n_train, FrozenDict) and S.n_train["cifar_dogcat"] == 1600 and S.epochs["cifar_dogcat"] == 200
    assert S.n_test["cifar_dogcat"] == 400 and S.patch_size == 4 and S.model_overrides == {}
    assert settings("zhang_umae", "smoke").n_train == 128
    cpu = settings("zhang_umae", "cpu")
    assert dict(cpu.n_train) == {"fashion_mnist": 30000, "mnist": 30000, "cifar_dogcat": 1600}
    assert cpu.patch_size["cifar_dogcat"] == 8 and cpu.epochs["cifar_dogcat"] == 200
    assert book.setup("zhang_umae", profile="gpu", epochs=3).settings.epochs == 3  # one value for every dataset
    assert settings("zhang_mask_graph", "gpu").mae_epochs == 200
