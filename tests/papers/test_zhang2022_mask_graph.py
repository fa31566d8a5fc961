"""maelab.papers.zhang2022.mask_graph against brute-force enumeration, hand computations and closed forms."""

import itertools
import math

import numpy as np
import pytest
import torch

from maelab._validate import ParameterError
from maelab.papers.zhang2022 import mask_graph as mg


def _all_masks(length, n_keep):
    for vis in itertools.combinations(range(length), n_keep):
        v = torch.zeros(length)
        v[list(vis)] = 1
        yield v


@pytest.mark.parametrize(
    "pairs, fill", [("all", None), ("all", 0.0), ("all", 0.5), ("matched", None), ("matched", 0.0)]
)
@pytest.mark.parametrize("rho", [0.0, 0.34, 0.5, 0.7])
def test_expected_distance_matches_enumeration_over_all_masks(pairs, fill, rho):
    g = torch.Generator().manual_seed(0)
    a, b = torch.rand(3, 5, 4, generator=g, dtype=torch.float64), torch.rand(3, 5, 4, generator=g, dtype=torch.float64)
    n_keep = int(5 * (1 - rho))
    masks = list(_all_masks(5, n_keep))
    vals = []
    for va in masks:
        for vb in [va] if pairs == "matched" else masks:  # matched: one shared mask
            vals.append(mg.masked_pair_distance(a, b, va.expand(3, 5), vb.expand(3, 5), pairs, fill))
    brute = torch.stack(vals).mean(0)
    closed = mg.expected_pair_distance(a, b, rho, pairs, fill)
    assert torch.allclose(brute, closed, atol=1e-12)


def test_masked_pair_distance_by_hand():
    # one pair, 2 patches of dim 1: a = (0, 3), b = (4, 0); a keeps patch 0, b keeps both
    a = torch.tensor([[[0.0], [3.0]]])
    b = torch.tensor([[[4.0], [0.0]]])
    va, vb = torch.tensor([[1.0, 0.0]]), torch.tensor([[1.0, 1.0]])
    # visible only, all pairs: |0-4| and |0-0| -> 2
    assert mg.masked_pair_distance(a, b, va, vb, "all", None).item() == pytest.approx(2.0)
    # fill 1: a -> (0, 1); pairs |0-4|,|0-0|,|1-4|,|1-0| -> (4+0+3+1)/4 = 2
    assert mg.masked_pair_distance(a, b, va, vb, "all", 1.0).item() == pytest.approx(2.0)
    # matched, fill 0: a -> (0, 0): |0-4|, |0-0| -> 2
    assert mg.masked_pair_distance(a, b, va, vb, "matched", 0.0).item() == pytest.approx(2.0)
    # matched, visible in both: only patch 0 -> 4
    assert mg.masked_pair_distance(a, b, va, vb, "matched", None).item() == pytest.approx(4.0)


def test_fast_path_equals_direct():
    g = torch.Generator().manual_seed(1)
    a, b = torch.rand(4, 6, 3, generator=g, dtype=torch.float64), torch.rand(4, 6, 3, generator=g, dtype=torch.float64)
    va = (torch.rand(4, 6, generator=g) > 0.5).double()
    vb = (torch.rand(4, 6, generator=g) > 0.5).double()
    va[:, 0] = vb[:, 0] = 1
    for pairs in ("all", "matched"):
        for fill in (None, 0.0, 0.3):
            dist = torch.cdist(a, b) if pairs == "all" else (a - b).norm(dim=-1)
            r = (a - fill).norm(dim=-1) if fill is not None else None
            s = (b - fill).norm(dim=-1) if fill is not None else None
            fast = mg._fast_masked_distance(dist, r, s, va, vb, pairs, fill)
            assert torch.allclose(fast, mg.masked_pair_distance(a, b, va, vb, pairs, fill), atol=1e-12)


def test_distance_curves_exact_matches_closed_form_and_is_seeded():
    g = torch.Generator().manual_seed(2)
    tokens = torch.rand(40, 9, 2, generator=g)
    labels = torch.arange(40) % 3
    readings = {
        "v": {"pairs": "all", "fill": None},
        "z": {"pairs": "all", "fill": 0.0},
        "m": {"pairs": "matched", "fill": 0.0},
    }
    out = mg.distance_curves(tokens, labels, [0.0, 0.5, 0.8], n_pairs=10, n_mask_draws=2, seed=3, readings=readings)
    again = mg.distance_curves(tokens, labels, [0.0, 0.5, 0.8], n_pairs=10, n_mask_draws=2, seed=3, readings=readings)
    for k in out:
        np.testing.assert_array_equal(out[k], again[k])
    intra = torch.as_tensor(out["pairs_intra"])
    assert (labels[intra[:, 0]] == labels[intra[:, 1]]).all() and (intra[:, 0] != intra[:, 1]).all()
    inter = torch.as_tensor(out["pairs_inter"])
    assert (labels[inter[:, 0]] != labels[inter[:, 1]]).all()
    a, b = tokens.double()[intra[:, 0]], tokens.double()[intra[:, 1]]
    for name, opt in readings.items():
        want = [float(mg.expected_pair_distance(a, b, r, opt["pairs"], opt["fill"]).mean()) for r in (0.0, 0.5, 0.8)]
        np.testing.assert_allclose(out[f"{name}__exact_intra"], want, rtol=1e-12)
    # at rho = 0 nothing is removed: the sampled value equals the exact one
    assert out["z__mc_intra"][0] == pytest.approx(out["z__exact_intra"][0])


def test_moebius_ratio_has_no_interior_extremum():
    assert mg.affine_ratio_extremum((1.0, 2.0), (2.0, 4.0)) == "constant"
    assert mg.affine_ratio_extremum((1.0, 2.0), (1.0, 1.0)) == "increasing"
    assert mg.affine_ratio_extremum((2.0, 1.0), (1.0, 1.0)) == "decreasing"


def test_ratios_that_keep_nothing_are_rejected():
    with pytest.raises(ParameterError):  # int(9 * (1 - 0.9)) == 0 in floating point, as in the official code
        mg.distance_curves(
            torch.rand(6, 9, 2),
            torch.arange(6) % 2,
            [0.9],
            n_pairs=2,
            n_mask_draws=1,
            seed=0,
            readings={"v": {"pairs": "all", "fill": None}},
        )


def test_sample_pairs_rejects_one_class():
    with pytest.raises(ParameterError):
        mg.sample_pairs(torch.zeros(10, dtype=torch.long), 3, torch.Generator())


# ---------------------------------------------------------------------------------------------- exact graphs


def _brute_graph(images, probs, n_visible):
    """Dict-based construction of A_M straight from the definition (positional views)."""
    n = images.shape[1]
    masks = list(itertools.combinations(range(n), n_visible))
    w = {}
    for vis in masks:
        hid = tuple(i for i in range(n) if i not in vis)
        for x, p in zip(images, probs):
            k1 = (vis, tuple(x[list(vis)]))
            k2 = (hid, tuple(x[list(hid)]))
            w[(k2, k1)] = w.get((k2, k1), 0.0) + p / len(masks)
    x1 = sorted({k1 for _, k1 in w})
    x2 = sorted({k2 for k2, _ in w})
    a = np.zeros((len(x2), len(x1)))
    for (k2, k1), v in w.items():
        a[x2.index(k2), x1.index(k1)] = v
    return a


def _small_world():
    rng = np.random.default_rng(0)
    images = np.array(list(itertools.product((0, 1), repeat=4)))
    probs = rng.random(len(images))
    probs /= probs.sum()
    labels = (images[:, 0] + images[:, 1] > images[:, 2] + images[:, 3]).astype(int)
    return {"images": images, "probs": probs, "labels": labels, "n_symbols": 2}


@pytest.mark.parametrize("n_visible", [1, 2, 3])
def test_spectrum_matches_brute_force_graph(n_visible):
    w = _small_world()
    g = mg.mask_graph(w["images"], w["probs"], n_visible)
    a_m = _brute_graph(w["images"], w["probs"], n_visible)
    assert math.isclose(a_m.sum(), 1.0) and math.isclose(mg.dense_mask_graph(g).sum(), 1.0)
    a = mg.augmentation_graph(a_m)
    d1 = a_m.sum(0)
    np.testing.assert_allclose(a.sum(1), d1, atol=1e-15)  # "A has the same degree matrix D_1"
    # A(x1, x1') = sum_x2 M(x2) M(x1|x2) M(x1'|x2), written out
    d2 = a_m.sum(1)
    cond = a_m / d2[:, None]  # M(x1 | x2)
    np.testing.assert_allclose(a, np.einsum("k,ki,kj->ij", d2, cond, cond), atol=1e-15)
    lam_ref = np.sort(np.linalg.eigvalsh(a / np.sqrt(np.outer(d1, d1))))[::-1]
    np.testing.assert_allclose(mg.normalized_eigenvalues(g), lam_ref, atol=1e-12)
    # one connected component per mask (full support): eigenvalue 1 with multiplicity C(4, n_visible)
    assert int((lam_ref > 1 - 1e-9).sum()) == math.comb(4, n_visible)


def test_residual_sum_by_hand():
    assert mg.residual_eigen_sum(np.array([0.5, 1.0, 0.1]), 1) == pytest.approx(0.25 + 0.01)
    assert mg.residual_eigen_sum(np.array([0.5, 1.0, 0.1]), 0) == pytest.approx(1.26)
    with pytest.raises(ParameterError):
        mg.residual_eigen_sum(np.ones(3), -1)


def test_label_error_brute_force():
    w = _small_world()
    n = 4
    for n_visible in (1, 2, 3):
        masks = list(itertools.combinations(range(n), n_visible))
        # P(view, label) by dictionary, then Bayes guesses with uniform tie-breaking
        table = {}
        for vis in masks:
            for x, p, y in zip(w["images"], w["probs"], w["labels"]):
                key = (vis, tuple(x[list(vis)]))
                table.setdefault(key, np.zeros(2))[y] += p / len(masks)
        err = 0.0
        for vis in masks:
            for x, p, y in zip(w["images"], w["probs"], w["labels"]):
                t = table[(vis, tuple(x[list(vis)]))]
                winners = np.flatnonzero(np.isclose(t, t.max(), rtol=1e-12, atol=0))
                err += p / len(masks) * (1 - (y in winners) / len(winners))
        g = mg.mask_graph(w["images"], w["probs"], n_visible)
        assert mg.label_error(w, g) == pytest.approx(err, abs=1e-14)


def test_complementary_masks_have_the_same_nonzero_spectrum():
    w = _small_world()
    for positional in (True, False):
        for k in (1, 2):
            a = mg.normalized_eigenvalues(mg.mask_graph(w["images"], w["probs"], k, positional=positional))
            b = mg.normalized_eigenvalues(mg.mask_graph(w["images"], w["probs"], 4 - k, positional=positional))
            a, b = a[a > 1e-12], b[b > 1e-12]
            np.testing.assert_allclose(a, b, atol=1e-12)


def test_tiny_world_is_a_distribution_without_label_ties():
    w = mg.tiny_world(side=2, noise=0.1)
    assert w["images"].shape == (81, 4) and math.isclose(w["probs"].sum(), 1.0)
    j = w["class_joint"]
    assert (np.abs(j[:, 0] - j[:, 1]) > 1e-12 * j.max(1)).all()
    # the Bayes label of a clean horizontal bar of symbol 1 is class 0, of a vertical bar of symbol 2 class 1
    idx = {tuple(x): i for i, x in enumerate(w["images"])}
    assert w["labels"][idx[(1, 1, 0, 0)]] == 0 and w["labels"][idx[(2, 0, 2, 0)]] == 1
    with pytest.raises(ParameterError):
        mg.tiny_world(noise=0.9)


def test_mask_graph_rejects_empty_views():
    w = _small_world()
    for bad in (0, 4, 2.5):
        with pytest.raises(ParameterError):
            mg.mask_graph(w["images"], w["probs"], bad)


# ---------------------------------------------------------------------------------------------- Theorem 3.6


def test_collapsed_floor_is_the_best_content_free_predictor():
    g = torch.Generator().manual_seed(0)
    t = torch.randn(50, 6, 3, generator=g, dtype=torch.float64) + torch.arange(6.0).reshape(1, 6, 1)
    var = mg.masked_target_variance(t)
    mu = t.mean(0, keepdim=True)
    assert ((t - mu) ** 2).mean().item() == pytest.approx(var)  # per-position mean achieves it
    for _ in range(5):  # any other content-free prediction does worse
        u = mu + 0.1 * torch.randn(1, 6, 3, generator=g, dtype=torch.float64)
        assert ((t - u) ** 2).mean().item() > var
    assert mg.position_blind_variance(t) > var


def test_collapsed_decoder_stays_above_the_floor():
    from maelab import models

    g = torch.Generator().manual_seed(0)
    imgs = torch.rand(96, 1, 8, 8, generator=g)
    model = models.create("mae", "micro", img_size=8, patch_size=4, in_chans=1, seed=0)
    out = mg.fit_collapsed_decoder(
        model, imgs[:64], imgs[64:], mask_ratio=0.5, steps=30, batch_size=32, lr=1e-2, seed=0, eval_draws=8
    )
    var = mg.masked_target_variance(model.target(imgs[64:]))
    assert out["test_loss"] >= var * 0.95  # above the floor up to mask-sampling noise
    assert out["trace"][-1] < out["trace"][0]


# ------------------------------------------------------------------------------------------------ claim evidence
def test_sweet_spot_evidence_reads_the_dip_at_the_stated_ratio():
    import numpy as np

    from maelab.claims import Above
    from maelab.papers.zhang2022.evidence import sweet_spot as sweet_spot_evidence

    rhos = [0.0, 0.35, 0.7, 0.95]
    u = np.array([[1.0, 0.9, 0.8, 0.95], [1.0, 0.92, 0.81, 0.97], [1.0, 0.88, 0.79, 0.9]])  # a U with its bottom at 0.7
    ev = sweet_spot_evidence(rhos, u)
    assert ev.samples == pytest.approx((0.15, 0.16, 0.11))
    assert Above(0.0).decide(ev)[0] == "supported"
    assert ev.looks == 1 and sweet_spot_evidence(rhos, u, looks=2).looks == 2  # seeds added after a first look
    # a curve falling all the way (argmin at the last ratio in every seed; the mean argmin of per-seed argmins at 0
    # and 0.95 could sit near 0.7): the dip is negative, the claim not supported
    down = np.array([[1.0, 0.9, 0.8, 0.6], [1.0, 0.91, 0.8, 0.62], [1.0, 0.9, 0.82, 0.61]])
    assert Above(0.0).decide(sweet_spot_evidence(rhos, down))[0] == "not supported"
    with pytest.raises(ParameterError, match="at"):
        sweet_spot_evidence(rhos, u, at=0.5)
    with pytest.raises(ParameterError, match="ratio"):
        sweet_spot_evidence(rhos, u[:, :3])


def _zoo_entries(cls_s1=0.86, loss_s1=0.2):
    """The frame of maelab.zoo.load_entries, two seeds: the zoo's MAE at 0.75 and the random init, by hand."""
    import pandas as pd

    return pd.DataFrame(
        [
            {"model": "random init", "seed": 0, "loss": 2.0, "linear_acc_cls": 0.80, "linear_acc_mean": 0.80},
            {"model": "r0.75 u1", "seed": 0, "loss": 0.15, "linear_acc_cls": 0.90, "linear_acc_mean": 0.95},
            {"model": "random init", "seed": 1, "loss": 2.1, "linear_acc_cls": 0.78, "linear_acc_mean": 0.79},
            {"model": "r0.75 u1", "seed": 1, "loss": loss_s1, "linear_acc_cls": cls_s1, "linear_acc_mean": 0.93},
        ]
    )


def test_zoo_collapse_avoidance_is_gated_on_the_representation_not_the_loss():
    from maelab.claims import Above, verdict
    from maelab.papers.zhang2022 import claims as zc
    from maelab.papers.zhang2022 import evidence as zev

    row = next(c for c in zc.CLAIMS if c.id == "zhang.thm36_mae_avoids_collapse")
    assert isinstance(row.criterion, Above) and row.criterion.threshold == 0.0
    learned = zev.zoo_learned(_zoo_entries(), "r0.75 u1", [0, 1])  # [CLS] gains 0.10 and 0.08 > 0.05
    assert learned.met and learned.gains == pytest.approx((0.10, 0.08)) and learned.seeds == (0, 1)
    assert learned.what == "MAE r0.75 u1 of the shared zoo, [CLS] linear probe"
    ev = zev.zoo_collapse_avoidance(_zoo_entries(), 0.25, "r0.75 u1", [0, 1], learned)
    # per seed (0.25 - loss) / 0.25: (0.25 - 0.15) / 0.25 = 0.4, (0.25 - 0.2) / 0.25 = 0.2
    assert ev.samples == pytest.approx((0.4, 0.2)) and ev.value == pytest.approx(0.3) and not ev.unmet
    # mean 0.3, s.e. 0.1, t(0.975, 1) = 12.71: the interval straddles 0 with two seeds
    assert verdict(row, ev)[0] == "inconclusive" and "straddles" in verdict(row, ev)[1]
    # the same losses from an encoder whose [CLS] probe did not move (seed 1: +1 point): withheld, not decided
    idle = zev.zoo_learned(_zoo_entries(cls_s1=0.79), "r0.75 u1", [0, 1])
    held = zev.zoo_collapse_avoidance(_zoo_entries(cls_s1=0.79), 0.25, "r0.75 u1", [0, 1], idle)
    assert held.samples == ev.samples and held.unmet == idle.unmet and "seed 1" in held.unmet
    assert verdict(row, held)[1].startswith("precondition not met")
    # a learned model above the floor in both seeds (0.3 and 0.5 > 0.25): margins -0.2 and -1.0
    above = zev.zoo_collapse_avoidance(_zoo_entries().assign(loss=[2.0, 0.3, 2.1, 0.5]), 0.25,
                                       "r0.75 u1", [0, 1], learned)  # fmt: skip
    assert above.samples == pytest.approx((-0.2, -1.0))
    mean_pool = zev.zoo_learned(_zoo_entries(), "r0.75 u1", [0, 1], pool="mean")
    assert mean_pool.gains == pytest.approx((0.15, 0.14)) and "mean-pool" in mean_pool.what
    with pytest.raises(ParameterError, match="^learned"):
        zev.zoo_collapse_avoidance(_zoo_entries(), 0.25, "r0.75 u1", [0, 1], None)
    with pytest.raises(ParameterError, match="^var_x2"):
        zev.zoo_collapse_avoidance(_zoo_entries(), 0.0, "r0.75 u1", [0, 1], learned)
    with pytest.raises(ParameterError, match="^entries must be one row of 'r0.75 u1' per seed"):
        zev.zoo_learned(_zoo_entries(), "r0.75 u1", [0, 1, 2])
    with pytest.raises(ParameterError, match="^pool"):
        zev.zoo_learned(_zoo_entries(), "r0.75 u1", [0, 1], pool="max")
