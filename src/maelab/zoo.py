"""One learned zoo of MAEs that every page reads: mask ratio x masking unit x seed on one real dataset.

Every entry is pre-trained by :func:`maelab.experiments.pretrain` with the official MAE recipe (norm-pix loss,
``maelab.result_keys.OFFICIAL_CHOICES``) and measured once by :func:`measure_entry`; the measurements are one store
record per entry (notebook ``zoo``, name :func:`entry_name`, e.g. ``r0p75_u1_s0``), so the zoo accumulates run by
run and across machines, and pages read the records without the checkpoints. The grid (:func:`configs`): every
ratio of ``mask_ratios`` at masking unit 1, and every unit of ``units`` at ``unit_ratio`` (unit 1 there is the
ratio row's model). The masking unit is decoupled from the ViT patch, as Kong et al. do: the model masks
``unit x unit`` token blocks (``mask_unit``).

**Pairing.** All entries of one seed start from the same weights (``maelab.models.create(seed=...)`` does not
depend on the mask ratio or unit) and see the same images in the same order (the trainer's data order depends on
the seed only), so differences between entries of a seed are paired.

**Reuse.** A unit-1 entry's spec carries no ``mask_unit`` (the model's default), so it equals the spec of any
other page's plain MAE with the same recipe: its checkpoint (cached by
:attr:`~maelab.experiments.PretrainSpec.key`) is loaded, never re-trained.

**What each entry stores** (:func:`measure_entry`): the training history; per pooling ([CLS], mean of the patch
tokens) the linear probe (``probe_method``), 20-NN accuracy and effective rank of the test features; the scores of
:func:`maelab.reconstruction.score_model` on the first ``n_score`` test images and the masked-patch losses of the
model, of its random init and of the patch-mean predictor under the same masks: the learning check
(:func:`reconstruction_checks`); the reconstructions of ``N_EXAMPLES`` test images. ``random_s<seed>`` and
``raw_pixels`` are the baselines every probe is read against. A page's own measurement of the checkpoints
(:func:`measure_checkpoints`) stores each model's check with it.

**Two looks.** The cpu zoo was first analysed at seeds 0-2 (claims records up to commit 88299d7); seeds 3-5 were
added after that look, so a page that reads them passes ``looks(S.seeds) == 2`` and the engine tests those rows at
ALPHA / 2 (:data:`maelab.claims.POLICY`), a rule fixed in code, with the paired trend test, before seeds 3-5 were read.

Run the whole grid: ``python -m maelab.zoo run --profile cpu`` (each finished entry is a complete record; an
interrupted run resumes from its checkpoint); ``python -m maelab.zoo status --profile cpu`` lists what is stored.
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from typing import Any

import torch

from . import evaluate, metrics, models, parts, result_keys, store
from . import reconstruction as rc
from ._util import resolve_device
from ._validate import ParameterError, one_of
from .claims import ReconstructionCheck
from .experiments import PretrainSpec, build_model, load_data, pretrain
from .options import DryRunLimits, RunOptions, cap
from .prefetch import compute_records, prefetch
from .profiles import (
    PROFILE_NAMES,
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

__all__ = [
    "NOTEBOOK",
    "FIRST_LOOK_SEEDS",
    "ZooSettings",
    "looks",
    "measured",
    "configs",
    "label",
    "entry_name",
    "spec",
    "data",
    "random_init",
    "trained_model",
    "measure_checkpoints",
    "measure_entry",
    "entry",
    "random_entry",
    "raw_pixel_entry",
    "compute",
    "fingerprint",
    "load_entries",
    "RANDOM_INIT",
    "LOSS_MARGIN",
    "reconstruction_checks",
    "main",
]

NOTEBOOK = "zoo"  # the store folder of the zoo's records (data/results/zoo)
GREY = ("mnist", "fashion_mnist", "mnist10k")
POOLS = ("cls", "mean")
N_EXAMPLES = 8  # test images whose reconstructions every entry stores (the pages' example figures)
#: The ``model`` of the random-init rows of :func:`load_entries`.
RANDOM_INIT = "random init"

#: The margin of the zoo's learning check (:func:`reconstruction_checks`): a model has learned its pretext task when
#: its masked-patch test loss is at most ``1 - LOSS_MARGIN`` times the better of two trivial references. 5 %:
#: ``kong_reconstruction``'s stated margin, fixed before the zoo was trained (its ``loss_margin`` setting, and the
#: synthesis page's, hold the same value); a page without a setting of its own reads this one.
LOSS_MARGIN = 0.05

#: The seeds of the zoo's first analysis (see "Two looks" above).
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
    pipeline only. gpu: ViT-Tiny (patch 2, 16 x 16 tokens) on all 60,000 MNIST images for 7 epochs, 3 seeds (sized
    by the cost model to the 30-minute budget of a notebook: 10 epochs were 39 H100 min at the assumed 5 % MFU).
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
    GPU = {"size": "vit_tiny", "n_train": 60000, "epochs": 7, "blr": 1.5e-3, "warmup_epochs": 1, "seeds": [0, 1, 2]}

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
    import dataclasses

    return dataclasses.replace(S, seeds=tuple(s for s in S.seeds if s in set(S.measured_seeds)))


def looks(seeds) -> int:
    """The analyses that the zoo runs of ``seeds`` (e.g. ``S.seeds``) have had: 1 where every seed lies within
    :data:`FIRST_LOOK_SEEDS`, else 2 (the second look, after seeds were added to a first analysis). What a zoo
    evidence builder passes as its evidence's ``looks`` (:class:`maelab.claims.Evidence`), so the policy tests the
    row at ALPHA / looks."""
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


def measure_checkpoints(M: ZooSettings, table: str, row, device="cpu", *, caps=None, with_random: bool = False) -> dict:
    """A page's own measurement of the unit-1 checkpoints of ``M`` (:func:`measured`): ``{table: DataFrame}``, a row
    per model and seed (``model``, ``seed``, ``row(model, ratio, seed, tr, te)``; ``with_random``: also each seed's
    random init, ratio None), one part per seed (:func:`maelab.parts.concat_frames`). Each trained row holds its
    model's own learning check (``loss``, ``reference_loss``, ``patch_mean_loss`` as in :func:`measure_entry`), which
    gates the rows read from the table: a checkpoint re-made on another CPU or card is another model (same seed and
    data order, other floating point: on a second CPU the online probe after training moved by points)."""
    import pandas as pd

    tr, te = data(M, device)
    images = te.images[: cap(M.n_score, caps, "eval_images")]

    def one_seed(s: int) -> dict:
        out = []
        for r in [float(r) for r in M.mask_ratios]:
            model = trained_model(M, r, 1, s, device, train_data=tr, test_data=te, caps=caps)
            check = rc.masked_patch_losses(model, random_init(M, s, device), images, r, seed=s)
            out.append({"model": label(r, 1), "seed": s, **row(model, r, s, tr, te), **check})
        if with_random:
            out.append({"model": RANDOM_INIT, "seed": s, **row(random_init(M, s, device), None, s, tr, te)})
        return {table: pd.DataFrame(out)}

    def pool(c: dict) -> None:  # a seed not stored: its unit-1 models to the pre-training pool (a lent GPU)
        prefetch([spec(M, r, 1, c["seed"]) for r in M.mask_ratios], device=str(device), caps=caps)

    return parts.concat_frames([(f"s{s}", {"seed": int(s)}, partial(one_seed, int(s))) for s in M.seeds], pool)


def _probes(model, tr, te, S: ZooSettings, seed: int, caps: DryRunLimits | None = None) -> dict[str, float]:
    out: dict[str, float] = {}
    for pool in POOLS:
        ftr = evaluate.extract_features(model, tr.images, pool=pool, progress=False, caps=caps)
        fte = evaluate.extract_features(model, te.images, pool=pool, progress=False, caps=caps)
        lp = evaluate.linear_probe(
            ftr, tr.labels, fte, te.labels, method=S.probe_method, seed=seed, blas_threads=1, caps=caps
        )
        out[f"linear_acc_{pool}"] = float(lp.test_acc)
        out[f"knn_acc_{pool}"] = float(evaluate.knn_accuracy(ftr, tr.labels, fte, te.labels, caps=caps))
        out[f"effective_rank_{pool}"] = float(metrics.effective_rank(fte))
    return out


def measure_entry(
    model, reference, tr, te, S: ZooSettings, ratio: float, seed: int, caps: DryRunLimits | None = None
) -> dict[str, float]:
    """The measurements of one entry (see the module docstring): probes per pool, then
    :func:`maelab.reconstruction.score_model` against ``reference`` (random init, same unit) at ``ratio``.
    ``caps``: a dry run's (:class:`maelab.options.DryRunLimits`)."""
    out = _probes(model, tr, te, S, seed, caps)
    images = te.images[: cap(S.n_score, caps, "eval_images")].cpu()
    model, reference = model.cpu(), reference.cpu()
    out.update(rc.score_model(model, reference, images, ratio, seed=seed, fsim=S.fsim, caps=caps))
    shown = images[:N_EXAMPLES]
    out["examples_pred"] = rc.reconstruct(model, shown)["pred"].numpy()
    out["examples_pasted"] = rc.reconstruct(model, shown, ratio, generator=torch.Generator().manual_seed(seed))[
        "pasted"
    ].numpy()
    return out


def _job_key(S: ZooSettings, job) -> tuple[str, dict]:
    """(store name, config) of a job of ``_jobs``: what :func:`entry` & co. store and :func:`load_entries` reads."""
    kind, seed, ratio, unit = job
    measure = {"what": "zoo entry", **S.pick("probe_method", "n_score", "fsim")}
    if kind == "entry":
        return entry_name(ratio, unit, seed), {**measure, "spec": spec(S, ratio, unit, seed).to_config()}
    base = spec(S, S.unit_ratio, 1, S.seeds[0] if seed is None else seed)
    if kind == "random":
        return f"random_s{seed}", {**measure, "random_init": base.init_config(), "ratio": S.unit_ratio}
    return "raw_pixels", {"what": "raw-pixel probe", "probe_method": S.probe_method, "data": base.init_config()}


def _store(name: str, config: dict, fn, options: RunOptions, seed, device) -> store.Result:
    def guarded():  # only reached when the record must be computed
        cuda = getattr(device, "type", str(device)) == "cuda"
        if options.profile == "gpu" and not cuda and options.dry_run is None and not options.allow_cpu:
            raise ParameterError(
                "device", "a CUDA device for the gpu profile's zoo (or run options with allow_cpu=True)", device
            )
        return fn()

    kw = dict(profile=options.profile, seeds=seed, device=device, recompute=options.recompute, options=options)
    return store.load_or_compute(name, config, guarded, notebook=NOTEBOOK, **kw)


def _options(options: RunOptions) -> RunOptions:
    if not isinstance(options, RunOptions):
        raise ParameterError("options", "a maelab.options.RunOptions (a page passes ctx.options)", options)
    one_of("options.profile", options.profile, PROFILE_NAMES)
    return options


def entry(S: ZooSettings, ratio: float, unit: int, seed: int, options: RunOptions):
    """The store record of one trained entry (pre-trained or loaded from its checkpoint, then measured), in the run
    ``options`` make (profile, device, recompute, results root, dry-run caps: :class:`maelab.options.RunOptions`)."""
    options = _options(options)
    s, dev, caps = spec(S, ratio, unit, seed), resolve_device(options.device), options.caps

    def compute() -> dict:
        tr, te = load_data(s, dev, progress=False)
        model, res, _, _ = pretrain(s, device=str(dev), progress=False, train_data=tr, test_data=te, caps=caps)
        row = measure_entry(model.eval(), random_init(S, seed, dev, unit=unit), tr, te, S, ratio, seed, caps)
        out = {"ratio": float(ratio), "unit": int(unit), "seed": int(seed), **row, "history": list(res.history)}
        return {**out, "train_seconds": float(sum(h["seconds"] for h in res.history))}

    return _store(*_job_key(S, ("entry", seed, ratio, unit)), compute, options, seed, dev)


def random_entry(S: ZooSettings, seed: int, options: RunOptions):
    """The store record of the random-init encoder of ``seed``, measured as the entries (masked losses at
    ``unit_ratio``, unit 1; it is its own reference)."""
    options = _options(options)
    s, dev, caps = spec(S, S.unit_ratio, 1, seed), resolve_device(options.device), options.caps

    def compute() -> dict:
        tr, te = load_data(s, dev, progress=False)
        m = random_init(S, seed, dev)
        row = measure_entry(m, random_init(S, seed, dev), tr, te, S, S.unit_ratio, seed, caps)
        return {"ratio": float("nan"), "unit": 1, "seed": int(seed), **row, "train_seconds": 0.0}

    return _store(*_job_key(S, ("random", seed, None, None)), compute, options, seed, dev)


def raw_pixel_entry(S: ZooSettings, options: RunOptions):
    """The store record of the linear probe and 20-NN on raw pixels (flattened images): the floor every encoder's
    probe is read against."""
    options = _options(options)
    s, dev, caps = spec(S, S.unit_ratio, 1, S.seeds[0]), resolve_device(options.device), options.caps

    def compute() -> dict:
        tr, te = load_data(s, dev, progress=False)
        ftr, fte = tr.images.flatten(1).float().cpu(), te.images.flatten(1).float().cpu()
        lp = evaluate.linear_probe(
            ftr, tr.labels, fte, te.labels, method=S.probe_method, seed=0, blas_threads=1, caps=caps
        )
        knn = evaluate.knn_accuracy(ftr, tr.labels, fte, te.labels, caps=caps)
        return {"linear_acc": float(lp.test_acc), "knn_acc": float(knn)}

    return _store(*_job_key(S, ("raw", None, None, None)), compute, options, None, dev)


def _jobs(S: ZooSettings):
    for seed in S.seeds:
        yield ("random", seed, None, None)
        for ratio, unit in configs(S):
            yield ("entry", seed, ratio, unit)
    yield ("raw", None, None, None)


def _run(job, S, options: RunOptions):
    kind, seed, ratio, unit = job
    if kind == "entry":
        return entry(S, ratio, unit, seed, options)
    return random_entry(S, seed, options) if kind == "random" else raw_pixel_entry(S, options)


def fingerprint(S: ZooSettings) -> dict[str, str]:
    """``{store name: config hash}`` of every trained and random-init entry: what a result derived from the zoo's
    models (e.g. a page's own measurement of their checkpoints) lists in its config, so a changed zoo recomputes it."""
    return {name: store.config_hash(cfg) for name, cfg in (_job_key(S, j) for j in _jobs(S) if j[0] != "raw")}


def _pending(S: ZooSettings, jobs, options: RunOptions) -> list[tuple[tuple, str]]:
    """(job, store name) of the ``jobs`` whose record is not stored under its config (every one with recompute)."""
    keyed = [(job, *_job_key(S, job)) for job in jobs]
    stored = {n for _, n, c in keyed if store.matches(NOTEBOOK, n, options.profile, c, options)}
    return [(j, n) for j, n, _ in keyed if options.recompute or n not in stored]


def pending_specs(S: ZooSettings, options: RunOptions) -> list[PretrainSpec]:
    """The specs of the trained entries :func:`compute` would compute (not stored, or ``options.recompute``)."""
    return [spec(S, j[2], j[3], j[1]) for j, _ in _pending(S, [j for j in _jobs(S) if j[0] == "entry"], options)]


def compute(S: ZooSettings, options: RunOptions, *, raw_pixels: bool = False):
    """Every entry of the zoo (and its random-init baselines; the raw-pixel probe with ``raw_pixels``), each
    loaded from the store or computed and stored, in the run ``options`` make (a page passes ``ctx.options``:
    profile, device, recompute, results root, dry-run caps): ``{store name: maelab.store.Result}`` in ``_jobs``
    order. What a page calls before it reads the zoo (:func:`load_entries`, with ``root=ctx.root``); with
    ``train_workers`` >= 2 a pool first computes the pending records whole (:func:`maelab.prefetch.compute_records`)."""
    options = _options(options)
    if options.train_workers > 1:  # on a lent GPU a pool computes the pending entries whole (recompute: trains)
        dev, kw = str(resolve_device(options.device)), dict(caps=options.caps, workers=options.train_workers)
        jobs = [] if options.recompute else _pending(S, [j for j in _jobs(S) if j[0] != "raw" or raw_pixels], options)
        if not compute_records({n: partial(_run, j, S, options) for j, n in jobs}, device=dev, **kw):
            prefetch(pending_specs(S, options), device=dev, **kw)
    out = {}
    for job in _jobs(S):
        if job[0] != "raw" or raw_pixels:
            r = _run(job, S, options)
            out[r.name] = r
    return out


def load_entries(S: ZooSettings, profile: str, root=None) -> dict[str, Any]:
    """The stored zoo as read by the pages, computing nothing that is missing: ``{"entries": DataFrame (one row per
    trained and random-init entry, ``model`` = :func:`label` or :data:`RANDOM_INIT`, its scalar measurements),
    "raw_pixels": dict | None, "missing": [names], "examples": {(model, seed): {"examples_pred": array,
    "examples_pasted": array}}}``. A record whose config differs from ``S``'s counts as missing."""
    import pandas as pd

    rows, missing, raw, examples = [], [], None, {}
    for job in _jobs(S):
        kind, seed, ratio, unit = job
        name, cfg = _job_key(S, job)
        try:
            got = store.read(NOTEBOOK, name, profile, cfg, root=root)
        except store.StoreMiss:
            got = None
        if got is None:
            missing.append(name)
        elif kind == "raw":
            raw = dict(got.data)
        else:
            d = {k: v for k, v in got.data.items() if isinstance(v, (int, float, str)) or v is None}
            d["model"] = RANDOM_INIT if kind == "random" else label(ratio, unit)
            d["commit"] = got.provenance.get("git", {}).get("commit")
            hist = got.data.get("history") or [{}]
            d["train_loss"] = float(hist[-1].get("loss", float("nan")))
            rows.append(d)
            examples[(d["model"], seed)] = {k: got.data[k] for k in ("examples_pred", "examples_pasted")}
    return {"entries": pd.DataFrame(rows), "raw_pixels": raw, "missing": missing, "examples": examples}


def reconstruction_checks(entries, margin: float = LOSS_MARGIN) -> tuple[ReconstructionCheck, ...]:
    """The learning check of zoo models: one :class:`maelab.claims.ReconstructionCheck` per trained model of
    ``entries`` (the frame of :func:`load_entries`, or any frame with its columns ``model``, ``seed``, ``loss``,
    ``reference_loss``, ``patch_mean_loss``; random-init rows are skipped), in order of first appearance, its runs
    the model's seeds. Met when in every seed the model's masked-patch test loss (``loss``: its own objective under
    its own masking) is at most ``1 - margin`` times the smaller of the same architecture's loss at random
    initialisation (``reference_loss``) and the loss of predicting every patch's own mean (``patch_mean_loss``),
    under the same masks (:func:`maelab.reconstruction.masked_patch_losses`).

    A check on the pretext task, for rows that read something else (a probe, a Jacobian, a reconstruction score):
    a row must not be gated on the quantity it measures. A ratio exactly ``1 - margin`` passes (``<=``, the
    engine's convention)."""
    need = ["model", "seed", "loss", "reference_loss", "patch_mean_loss"]
    if missing := [c for c in need if c not in getattr(entries, "columns", ())]:
        raise ParameterError("entries", f"a table with columns {need}", f"missing {missing}")
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 <= margin < 1:
        raise ParameterError("margin", "a number in [0, 1) (0.05: a 5 % drop)", margin)
    trained = entries[entries.model != RANDOM_INIT]
    if trained.empty:
        raise ParameterError("entries", "rows of at least one trained model", "only random-init rows")
    return tuple(
        ReconstructionCheck(
            what=f"MAE {model}, masked-patch test loss",
            loss=tuple(float(v) for v in g.loss),
            reference=tuple(float(min(a, b)) for a, b in zip(g.reference_loss, g.patch_mean_loss)),
            runs=tuple(f"seed {s}" for s in g.seed),
            reference_name="the better of random init and the patch-mean predictor",
            max_ratio=1 - margin,
        )
        for model, g in trained.groupby("model", sort=False)
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m maelab.zoo", description="Compute or list the shared zoo.")
    ap.add_argument("command", choices=("run", "status"))
    ap.add_argument("--profile", choices=PROFILE_NAMES, default="cpu")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--recompute", action="store_true")
    a = ap.parse_args(argv)
    options = RunOptions(profile=a.profile, device=a.device, recompute=a.recompute)
    S = ZooSettings.for_profile(a.profile)
    if a.command == "status":
        got = load_entries(S, a.profile)
        print(f"{len(got['entries'])} entries stored; missing: {', '.join(got['missing']) or 'none'}")
        return 0
    for job in _jobs(S):
        t = time.time()
        r = _run(job, S, options)
        print(f"[zoo] {r.name}: {'stored' if r.from_store else 'computed'} ({time.time() - t:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
