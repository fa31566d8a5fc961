"""The zoo's grid: its settings (:class:`~maelab.zoo.ZooSettings`), the (mask ratio, masking unit) pairs,
each entry's name and :class:`~maelab.experiments.PretrainSpec`, the data every entry reads, and its models (random
init, trained)."""

from __future__ import annotations

import dataclasses

from .. import models, result_keys
from .._validate import ParameterError
from ..experiments import PretrainSpec, build_model, load_data, pretrain
from ..options import DryRunLimits
from ..profiles import (
    NotebookSettings,
    is_choice,
    is_flag,
    is_int,
    is_list,
    is_number,
    is_ratio,
    is_str,
    notebook_settings,
    setting,
)

NOTEBOOK = "zoo"  # the store folder of the zoo's records (data/results/zoo)
GREY = ("mnist", "fashion_mnist", "mnist10k")
POOLS = ("cls", "mean")
N_EXAMPLES = 8  # test images whose reconstructions every entry stores (the pages' example figures)
#: The ``model`` of the random-init rows of :func:`~maelab.zoo.load_entries`.
RANDOM_INIT = "random init"

#: The margin of the zoo's learning check (:func:`~maelab.zoo.reconstruction_checks`): a model has learned its
#: pretext task when its masked-patch test loss is at most ``1 - LOSS_MARGIN`` times the better of two trivial
#: references. 5 %: ``kong_reconstruction``'s stated margin, fixed before the zoo was trained (its ``loss_margin``
#: setting, and the synthesis page's, hold the same value); a page without a setting of its own reads this one.
LOSS_MARGIN = 0.05

#: The seeds of the zoo's first analysis (see "Two looks" in :mod:`maelab.zoo`).
FIRST_LOOK_SEEDS = (0, 1, 2)


def _kept_blocks(side: int, unit: int, ratio: float) -> int:
    return int((side // unit) ** 2 * (1 - ratio))


@notebook_settings
class ZooSettings(NotebookSettings):
    """The shared zoo (:mod:`maelab.zoo`). Not a notebook: the pages that read it take these values.

    cpu: MNIST padded to 32 px (the customary LeNet layout), the micro ViT with its patch 4 (an 8 x 8 token grid,
    so masking units of 1, 2 and 4 tokens give 64, 16 and 4 units, Kong et al.'s geometry) and ``zhang_ablations``'
    MNIST recipe (30,000 training images, 16 epochs, batch 256, blr 4e-3, 2 warm-up epochs), where plain MAE
    learned (+18 points of [CLS] probe over random init at patch 7). Why MNIST: on Fashion-MNIST this model needs
    about 2 M images before its probe clears the margin (``zhang_regime``), 4x this budget. 7 models x 6
    seeds = 42 runs, about 1.5 h of 2 cores per 3 seeds (measured ~2,800 images/s at ratio 0.75, ~1,700 at 0.1);
    seeds 3-5 are the zoo's second look (:func:`looks`).
    smoke: ``shapes`` (shipped), one epoch on 256 images, ratios 0.1 / 0.75 / 0.9, units 1 / 2, 2 seeds: the
    pipeline only. gpu: ViT-Tiny (patch 2, 16 x 16 tokens) for 7 epochs, 6 seeds, on the cpu zoo's 30,000 MNIST
    training images, probes scored on 5,000 test images (sized by the cost model to the 30-minute budget of a
    notebook: 28.6 predicted H100 min, mostly per-step latency, so the cost follows steps and probe images more than
    FLOPs). Session 19 (before any gpu zoo run) changed 3 seeds on all 60,000 images (10,000 test) to this: with 3
    seeds a paired t-test has 2 degrees of freedom, and Holm over Kong's 18 rows asks the strongest row for a t
    beyond 18.9 (the weakest beyond 4.3), so a 3-seed gpu zoo could decide almost nothing whatever it measured; with
    6 seeds, tested at ALPHA / 2 since :func:`looks` counts seeds 3-5 as a second look in every profile (a
    pre-planned Bonferroni split: the first three seeds may be read alone), the same steps need 6.4 and 3.2. Each
    model then sees 210,000 images instead of 420,000 (the cpu zoo's micro ViTs learned at 480,000); whether
    ViT-Tiny learns there is what each entry's learning check will say.
    """

    SMOKE = {
        "dataset": "shapes",
        "mask_ratios": [0.1, 0.75, 0.9],
        "units": [1, 2],
        "seeds": [0, 1],
        "measured_seeds": [0, 1],
        "n_train": 256,
        "n_test": 64,
        "epochs": 1,
        "batch_size": 64,
        "warmup_epochs": 1,
        "n_score": 32,
    }
    GPU = {
        "size": "vit_tiny",
        "n_train": 30000,
        "n_test": 5000,
        "epochs": 7,
        "blr": 1.5e-3,
        "warmup_epochs": 1,
        "seeds": [0, 1, 2, 3, 4, 5],
    }

    dataset: str = setting(
        "mnist",
        "dataset of every entry (mnist and fashion_mnist are fetched once: python -m maelab.data fetch NAME)",
        is_choice("mnist", "fashion_mnist", "mnist10k", "shapes", "cifar_dogcat"),
    )
    img_size: int = setting(32, "image side in pixels (MNIST's 28 px are zero-padded to 32)", is_int(4))
    size: str = setting("micro", "model size (maelab.models.SIZES; its patch size is the ViT patch)", is_str())
    mask_ratios: tuple = setting(
        [0.1, 0.25, 0.5, 0.75, 0.9],
        "pre-training mask ratios at masking unit 1 (must hold unit_ratio)",
        is_list(is_ratio(), min_len=3, increasing=True, why="the claims are trends over the ratio"),
    )
    units: tuple = setting(
        [1, 2, 4],
        "masking units in tokens (unit x unit token blocks) at unit_ratio (must start at 1)",
        is_list(is_int(), min_len=2, increasing=True, why="the masking-unit claims are trends over units"),
    )
    unit_ratio: float = setting(0.75, "mask ratio of the masking-unit entries (the official default)", is_ratio())
    seeds: tuple = setting(
        [0, 1, 2, 3, 4, 5], "pre-training seeds (>= 2 for paired claims; see looks)", is_list(is_int(0))
    )
    measured_seeds: tuple = setting(
        [0, 1, 2, 3, 4, 5],
        "seeds whose checkpoints the pages' own measurements read (Jacobians, attention, ink; see measured)",
        is_list(is_int(0)),
    )
    n_train: int = setting(30000, "training images (data seed 0), also the probes' training set", is_int(2))
    n_test: int = setting(10000, "held-out test images of the probes", is_int(2))
    epochs: int = setting(16, "pre-training epochs", is_int())
    batch_size: int = setting(256, "pre-training batch size", is_int())
    blr: float = setting(4e-3, "base learning rate: peak lr = blr * batch / 256", is_number(0.0, low_open=True))
    warmup_epochs: float = setting(2, "linear warm-up epochs", is_number(0.0))
    probe_method: str = setting(
        "logreg_torch",
        "linear probe (maelab.evaluate.linear_probe): logreg (scikit-learn) | logreg_torch (L-BFGS in torch)",
        is_choice("logreg", "logreg_torch"),
    )
    n_score: int = setting(
        2000, "test images the reconstruction scores and masked-patch losses are computed on", is_int(2)
    )
    fsim: bool = setting(True, "compute FSIM (piq; the slowest score)", is_flag())

    @property
    def channels(self) -> int:
        return 1 if self.dataset in GREY else 3

    @property
    def grid_side(self) -> int:
        """The side of the token grid (image side / patch size)."""
        return self.img_size // models.SIZES[self.size]["patch_size"]

    def validate(self) -> None:
        if self.size not in models.SIZES:
            raise ParameterError("size", "one of " + ", ".join(models.SIZES), self.size)
        if self.img_size % models.SIZES[self.size]["patch_size"]:
            raise ParameterError("img_size", f"a multiple of size {self.size!r}'s patch", self.img_size)
        if not any(abs(self.unit_ratio - m) < 1e-9 for m in self.mask_ratios):
            raise ParameterError("mask_ratios", f"a list holding unit_ratio={self.unit_ratio}", self.mask_ratios)
        if self.units[0] != 1:
            raise ParameterError("units", "a list starting at 1 (unit 1 is the ratio row's model)", self.units)
        g = self.grid_side
        for u in self.units:
            if g % u or _kept_blocks(g, u, self.unit_ratio) < 1:
                raise ParameterError(
                    "units", f"divisors of the token grid side {g} keeping >= 1 block at unit_ratio", self.units
                )
        if _kept_blocks(g, 1, max(self.mask_ratios)) < 1:
            raise ParameterError("mask_ratios", f"ratios that keep >= 1 of the {g * g} tokens", self.mask_ratios)
        if self.batch_size > self.n_train:
            raise ParameterError("batch_size", f"at most n_train={self.n_train}", self.batch_size)
        if not set(self.measured_seeds) & set(self.seeds):
            raise ParameterError("measured_seeds", f"seeds shared with seeds {list(self.seeds)}", self.measured_seeds)


def measured(S: ZooSettings) -> ZooSettings:
    """``S`` with its seeds cut to those also in ``S.measured_seeds`` (in ``S.seeds`` order): the zoo whose
    checkpoints a page's own measurements read (masked-pixel Jacobians, attention, ink silhouettes), as opposed to
    the stored entry records (probes, ranks, reconstruction scores, losses) that every seed has. Why two seed lists:
    those measurements need each model's checkpoint, a gitignored cache that a new machine does not have
    (:func:`trained_model` re-trains a missing one; same seed, same numbers on one machine), so a machine that can
    re-make only some of them can measure fewer seeds than the records hold. At cpu every seed is measured; seeds 0-2
    alone were, from the first look until the checkpoints of seeds 3-5 were re-made (2026-11-27). A page passes
    ``measured(S)`` to :func:`fingerprint` and :func:`trained_model` there."""
    return dataclasses.replace(S, seeds=tuple(s for s in S.seeds if s in set(S.measured_seeds)))


def looks(seeds) -> int:
    """The analyses that the zoo runs of ``seeds`` (e.g. ``S.seeds``) have had: 1 where every seed lies within
    :data:`~maelab.zoo.grid.FIRST_LOOK_SEEDS`, else 2 (the second look, after seeds were added to a first
    analysis). What a zoo evidence builder passes as its evidence's ``looks`` (:class:`maelab.claims.Evidence`), so
    the policy tests the row at ALPHA / looks."""
    try:
        got = {int(s) for s in seeds}
    except (TypeError, ValueError):
        raise ParameterError("seeds", "a sequence of integer seeds", seeds) from None
    if not got:
        raise ParameterError("seeds", "at least one seed", seeds)
    return 1 if got <= set(FIRST_LOOK_SEEDS) else 2


def configs(S: ZooSettings) -> list[tuple[float, int]]:
    """The zoo's (mask ratio, masking unit) pairs: every ratio at unit 1, then units > 1 at ``S.unit_ratio``."""
    return [(float(r), 1) for r in S.mask_ratios] + [(float(S.unit_ratio), int(u)) for u in S.units if u != 1]


def label(ratio: float, unit: int) -> str:
    """A short name of a zoo entry, e.g. ``"r0.75 u2"``."""
    return f"r{ratio:g} u{unit}"


def entry_name(ratio: float, unit: int, seed: int) -> str:
    """The store name of an entry, e.g. ``r0p75_u2_s0``."""
    return f"r{ratio:g}_u{unit}_s{seed}".replace(".", "p")


def spec(S: ZooSettings, ratio: float, unit: int, seed: int) -> PretrainSpec:
    """The :class:`~maelab.experiments.PretrainSpec` of one entry (unit 1 leaves ``mask_unit`` at its default)."""
    if (float(ratio), int(unit)) not in configs(S):
        raise ParameterError(
            "ratio, unit", "a pair of the zoo (" + ", ".join(map(str, configs(S))) + ")", (ratio, unit)
        )
    over = {**result_keys.OFFICIAL_CHOICES, "norm_pix_loss": True}
    if int(unit) != 1:
        over["mask_unit"] = int(unit)
    return PretrainSpec(
        dataset=S.dataset,
        n_train=S.n_train,
        n_test=S.n_test,
        img_size=S.img_size,
        channels=S.channels,
        model="mae",
        size=S.size,
        model_overrides=tuple(sorted(over.items())),
        epochs=S.epochs,
        batch_size=S.batch_size,
        blr=S.blr,
        warmup_epochs=S.warmup_epochs,
        mask_ratio=float(ratio),
        seed=int(seed),
    )


def data(S: ZooSettings, device="cpu"):
    """The zoo's (train, test) data sets (identical for every entry)."""
    return load_data(spec(S, S.unit_ratio, 1, S.seeds[0]), device, progress=False)


def random_init(S: ZooSettings, seed: int, device="cpu", *, unit: int = 1):
    """The zoo's architecture at random initialisation for ``seed`` (eval mode): the weights every entry of that seed
    starts from, masking ``unit x unit`` token blocks (the unit changes the masks, not the weights)."""
    return build_model(spec(S, S.unit_ratio, unit, seed)).to(device).eval()


def trained_model(
    S: ZooSettings,
    ratio: float,
    unit: int,
    seed: int,
    device="cpu",
    *,
    train_data=None,
    test_data=None,
    caps: DryRunLimits | None = None,
):
    """The trained model of an entry in eval mode, loaded from its finished checkpoint (the gitignored cache) or
    pre-trained when there is none: for a page's measurement that the entry records do not hold. A page stores
    what it measures, so the book reads it back without the checkpoints. ``caps``: a dry run's."""
    s = spec(S, ratio, unit, seed)
    model, _, _, _ = pretrain(
        s, device=str(device), progress=False, train_data=train_data, test_data=test_data, caps=caps
    )
    return model.eval()
