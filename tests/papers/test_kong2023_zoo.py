"""The Kong zoo (shared specs, random init), the trained-model settings, the reconstruction precondition and the
representation helpers added for the trained-model notebooks; expected values computed by hand."""

import json

import numpy as np
import pytest
import torch

from maelab import book, models, paths, profiles, reconstruction, result_keys, store
from maelab import zoo as core_zoo
from maelab._validate import ParameterError
from maelab.papers.kong2023 import plan, representations, zoo


def test_zoo_holds_every_ratio_at_unit_1_and_every_unit_at_075():
    S = profiles.settings("kong_representations", "gpu")
    assert zoo.configs(S) == [(0.1, 1), (0.25, 1), (0.5, 1), (0.75, 1), (0.9, 1), (0.75, 2), (0.75, 4)]
    s = zoo.spec(S, 0.75, 4, 2)
    assert (s.dataset, s.mask_ratio, s.seed, dict(s.model_overrides)["mask_unit"]) == ("shapes", 0.75, 2, 4)
    assert dict(s.model_overrides)["norm_pix_loss"] is True
    with pytest.raises(ParameterError, match="^ratio, unit must be a pair of the zoo"):
        zoo.spec(S, 0.5, 2, 0)


def test_cpu_zoo_holds_the_three_compared_ratios_at_the_shared_zoos_recipe():
    """cpu (issue 26): only the ratios the shapes rows compare, at unit 1, trained as the shared zoo's entries
    (480,000 images per model, batch 256, base rate 4e-3, 2 warm-up epochs) with the shared zoo's seeds."""
    S = profiles.settings("kong_representations", "cpu")
    Z = core_zoo.ZooSettings.for_profile("cpu")
    assert zoo.configs(S) == [(0.1, 1), (0.75, 1), (0.9, 1)]
    assert S.n_train * S.epochs == 480_000
    assert (S.batch_size, S.blr, S.warmup_epochs) == (Z.batch_size, Z.blr, Z.warmup_epochs)
    assert list(S.seeds) == list(Z.seeds)
    with pytest.raises(ParameterError, match="^ratio, unit must be a pair of the zoo"):
        zoo.spec(S, 0.75, 2, 0)


def test_the_page_finds_its_committed_records():
    """The configs of kong_representations' stored results, rebuilt by kong2023.zoo, hash to the committed records
    (a changed config would recompute them)."""
    S = profiles.settings("kong_representations", "cpu")
    Z = core_zoo.ZooSettings.for_profile("cpu")
    folder = paths.committed_results() / "kong_representations"
    wanted = {f"encoders_s{s}": zoo.encoders_config(S, s) for s in S.seeds}
    wanted["zoo_ink"] = zoo.ink_config(S, core_zoo.measured(Z))
    wanted["tsne"] = {**zoo.encoders_config(S, S.seeds[0]), "what": "t-SNE of the seed-0 test features"}
    for name, config in wanted.items():
        stored = json.loads((folder / f"{name}.cpu.json").read_text())["provenance"]["config_hash"]
        assert store.config_hash({"profile": "cpu", **config}) == stored, name


@pytest.mark.parametrize("profile", profiles.PROFILE_NAMES)
def test_the_reconstruction_page_reads_the_shared_zoo(profile):
    """kong_reconstruction's settings name the same zoo records as maelab.zoo's own settings, in every profile."""
    a = profiles.settings("kong_reconstruction", profile)
    b = core_zoo.ZooSettings.for_profile(profile)
    jobs = list(core_zoo.entries._jobs(b))
    assert list(core_zoo.entries._jobs(a)) == jobs
    assert [core_zoo.entries._job_key(a, j) for j in jobs] == [core_zoo.entries._job_key(b, j) for j in jobs]


def test_random_init_is_the_start_of_every_entry_of_its_seed():
    S = profiles.settings("kong_representations", "smoke")
    a, b = zoo.random_init(S, 1, unit=1), zoo.random_init(S, 1, unit=2)
    c = zoo.random_init(S, 0)
    built = models.create("mae", S.size, seed=1, mask_unit=2, **result_keys.OFFICIAL_CHOICES)
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) and torch.equal(sa[k], built.state_dict()[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)  # another seed, other weights
    assert (a.mask_unit, b.mask_unit) == (1, 2)


@pytest.mark.parametrize(
    "params, start",
    [
        ({"units": [1, 3]}, "units must be divisors of the token grid side 8"),
        ({"units": [2, 4]}, "units must be a list starting at 1"),
        ({"units": [1, 8]}, "units must be divisors of the token grid side 8 keeping >= 1 block at unit_ratio"),
        ({"mask_ratios": [0.1, 0.5, 0.9]}, "mask_ratios must be a list holding unit_ratio=0.75"),
        ({"size": "nano"}, "size must be one of micro"),
        ({"batch_size": 80000}, "batch_size must be at most n_train=30000"),
        ({"n_examples": 9}, "n_examples must be at most min(n_score, 8)"),
        ({"loss_margin": 1.5}, "loss_margin must be"),
    ],
)
def test_degenerate_reconstruction_settings_are_rejected(params, start):
    with pytest.raises(ParameterError) as e:
        book.setup("kong_reconstruction", profile="cpu", **params)
    assert str(e.value).startswith(start) and "\n" not in str(e.value)


@pytest.mark.parametrize(
    "params, start",
    [
        ({"n_tsne": 3000}, "n_tsne must be at most n_probe_test=1000"),
        ({"n_token_images": 5000}, "n_token_images must be at most n_probe_train=2000"),
        ({"shifts": ["blur"]}, "shifts[0] must be one of"),
        ({"pool": "max"}, "pool must be one of"),
        ({"margin": 1.0}, "margin must be"),
    ],
)
def test_degenerate_representation_settings_are_rejected(params, start):
    with pytest.raises(ParameterError) as e:
        book.setup("kong_representations", profile="cpu", **params)
    assert str(e.value).startswith(start) and "\n" not in str(e.value)


def test_plans_count_the_zoo_once_per_seed():
    runs = plan.plans("cpu")
    S = profiles.settings("kong_reconstruction", "cpu")
    rec = runs["kong_reconstruction"]
    assert [r.repeats for r in rec] == [len(S.seeds)] * 7 and {r.mask_ratio for r in rec} == set(S.mask_ratios)
    assert len(S.seeds) == 6
    assert all(r.steps == S.epochs * (S.n_train // S.batch_size) for r in rec)
    *train, rep = runs["kong_representations"]  # its own shapes zoo, then the frozen-encoder passes
    R = profiles.settings("kong_representations", "cpu")
    assert [r.repeats for r in train] == [6] * 3 and all(
        r.steps == R.epochs * (R.n_train // R.batch_size) for r in train
    )
    assert rep.steps == 0 and rep.repeats == 6 * (3 + 1)


# ------------------------------------------------------------------ the reconstruction precondition
def _model(seed=0, **kw):
    return models.create("mae", "micro", seed=seed, **kw).eval()


def test_patch_mean_loss_is_n_minus_1_over_n_and_a_model_equals_itself():
    """A norm-pix target patch of n values has sum t^2 = n - 1 (unbiased variance), so predicting 0 costs
    (n - 1) / n per patch (n = 4 * 4 * 3 = 48), up to the 1e-6 in var + 1e-6."""
    x = torch.rand(12, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    m = _model()
    d = reconstruction.masked_patch_losses(m, _model(), x, 0.75, seed=3, batch_size=5)
    assert d["patch_mean_loss"] == pytest.approx(47 / 48, abs=1e-4)
    assert d["loss"] == pytest.approx(d["reference_loss"], rel=1e-6)  # same weights, same masks
    e = reconstruction.masked_patch_losses(m, _model(seed=1), x, 0.75, seed=3)
    assert e["loss"] == pytest.approx(d["loss"], rel=1e-6) and e["reference_loss"] != pytest.approx(d["loss"])
    with pytest.raises(ParameterError, match="^reference must be a model with the same token grid and mask_unit"):
        reconstruction.masked_patch_losses(m, _model(mask_unit=2), x, 0.75)


def test_feature_silhouette_matches_a_hand_computation():
    """1-D points 0, 1 | 10, 11: a = 1 for every point, b = 10.5 (outer points) or 9.5 (inner points); the
    standardisation scales all distances alike, so the score is unchanged."""
    x, y = np.array([[0.0], [1.0], [10.0], [11.0]]), np.array([0, 0, 1, 1])
    expect = (2 * (1 - 1 / 10.5) + 2 * (1 - 1 / 9.5)) / 4
    assert representations.feature_silhouette(x, y) == pytest.approx(expect, rel=1e-12)
    with pytest.raises(ParameterError, match="^labels must be between 2 and n - 1 distinct classes"):
        representations.feature_silhouette(x, np.zeros(4))


def test_patch_tokens_are_the_unmasked_patch_tokens():
    m = _model()
    x = torch.rand(5, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    t = representations.patch_tokens(m, x, batch_size=2)
    assert t.shape == (5, 64, 64)
    with torch.no_grad():
        assert torch.allclose(t.mean(dim=1), m.forward_features(x, pool="mean"), atol=1e-6)


def test_measure_encoder_identities_on_a_tiny_world():
    """The probe applied to an unshifted copy of the test set scores exactly its test accuracy; ``lin_class`` is
    the class probe; uniform-attention chance is the mean object coverage of the tokens."""
    from maelab import data

    opts = {"size": 32, "channels": 3, "progress": False}
    probe = {"train": data.load("shapes", "train", n=120, **opts), "test": data.load("shapes", "test", n=60, **opts)}
    probe["shifts"] = {"none": probe["test"]}
    probe["cue"] = data.load("shapes", "test", n=40, cue_conflict=True, masks=False, **opts)
    row, fte = representations.measure_encoder(_model(), probe, knn_k=5, n_token_images=20, n_attention=10)
    assert row["shift_none"] == pytest.approx(row["class_acc"]) and row["lin_class"] == row["class_acc"]
    frac = torch.nn.functional.avg_pool2d(probe["test"].latents["mask"][:10].float(), 4)
    assert row["attn_chance"] == pytest.approx(float(frac.mean()), rel=1e-6)
    assert 0 <= row["shape_bias"] <= 1 and fte.shape == (60, 64)
    assert {f"knn_{k}" for k in representations.LOW_LEVEL_CONTINUOUS} <= set(row)


def test_ink_silhouette_row_scores_the_bright_pixels():
    """A bright 8 x 8 square on black: 4 ink tokens of 4 x 4 patches among 64 (object rate 1/16); uniform
    attention would put 1/16 of its mass on the ink; black images give no ink token to probe (NaN)."""
    imgs = torch.zeros(20, 3, 32, 32)
    imgs[:, :, 8:16, 8:16] = 1.0
    row = representations.ink_silhouette_row(_model(), imgs, imgs, n_attention=20, n_token_images=20)
    assert row["object_rate"] == pytest.approx(4 / 64) and row["attn_chance"] == pytest.approx(4 / 64)
    assert 0 <= row["attn_mass"] <= 1 and 0 <= row["token_balanced_acc"] <= 1
    black = representations.ink_silhouette_row(_model(), imgs * 0, imgs * 0, n_attention=4, n_token_images=4)
    assert np.isnan(black["token_acc"]) and black["object_rate"] == 0
    with pytest.raises(ParameterError, match="^ink must be"):
        representations.ink_silhouette_row(_model(), imgs, imgs, ink=1.0)
