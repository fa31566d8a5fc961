"""One pipeline shared by the paper notebooks: pre-train a self-supervised model, then evaluate it.

**General library** (kept as its own module rather than folded into :mod:`maelab.evaluate`): ``evaluate`` holds
the model-agnostic measurements (features, probes, k-NN) and imports neither the trainer nor the data sets; this
module wires data, models, trainer and those measurements into the one pre-train -> evaluate pipeline that every
paper's notebooks share, including the one loop over saved weight snapshots (:func:`evaluate_snapshots`).

``pretrain_and_evaluate(spec)`` loads the data, builds the model (``maelab.models.create``), pre-trains it with
``maelab.train.train`` (the online linear classifier logs accuracy per epoch; checkpoints go to the gitignored
cache so an interrupted run resumes exactly), and evaluates the frozen encoder:

* linear probe: full-batch multinomial logistic regression on standardised features (``maelab.evaluate``),
* k-NN accuracy (cosine, k = 20, DINO weighting),
* effective rank (Roy & Vetterli) and the singular-value spectrum of the test features,
* masked-patch reconstruction loss on the test set (fixed mask seed),
* optionally end-to-end fine-tuning (``maelab.train.fine_tune``) of a copy of the encoder.

It returns a dict that ``maelab.store.load_or_compute`` can store (JSON values + arrays). ``spec.to_config()`` is
the config to hash: every field that changes the result is in the spec.

``workload(spec)`` (:class:`Workload`) says what such a run does in numbers -- optimiser steps and batch, online
evaluations (``eval_every``), rank epochs, fine-tuning steps and batch, images through the encoder -- and is what the
run configures itself from and what the cost model (:meth:`maelab.cost.PlannedRun.from_spec`) prices.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from collections.abc import Callable
from typing import Any

import torch

from . import data as data_mod
from . import evaluate, metrics, models, result_keys, train
from ._util import resolve_device
from ._validate import ParameterError, one_of, positive_int
from .options import DryRunLimits, cap
from .train.checkpoint import adopt_legacy_checkpoint, checkpoint_lock


@dataclasses.dataclass(frozen=True)
class PretrainSpec:
    """Everything one pre-training + evaluation run depends on."""

    dataset: str = "shapes"
    n_train: int | None = 5000
    n_test: int | None = 1000
    img_size: int = 32
    channels: int = 3
    data_seed: int = 0
    data_options: tuple = ()  # extra (key, value) pairs for maelab.data.load, e.g. (("p_texture", 0.8),)
    model: str = "mae"  # mae | umae | simmim | usimmim
    size: str = "micro"
    model_overrides: tuple = ()  # (key, value) pairs for maelab.models.create, e.g. (("lambda_unif", 0.1),)
    epochs: int = 10
    batch_size: int = 128
    blr: float = 1.5e-4
    warmup_epochs: float = 1.0
    mask_ratio: float | None = None  # None: the model's default
    seed: int = 0
    pool: str = "cls"
    rank_every: int = 0  # > 0: effective rank of test features every k epochs (and at 0 and the last)
    finetune_epochs: int = 0  # 0: no fine-tuning
    finetune_blr: float = 1e-3
    keep_features: bool = False  # return the test features (e.g. for t-SNE)
    snapshot_epochs: tuple = ()  # epochs whose weights are cached for later analysis

    def __post_init__(self):
        one_of("dataset", self.dataset, data_mod.NAMES)
        one_of("model", self.model, ("mae", "umae", "simmim", "usimmim"))
        one_of("pool", self.pool, ("cls", "mean"))
        positive_int("epochs", self.epochs)
        positive_int("batch_size", self.batch_size)
        positive_int("rank_every", self.rank_every, minimum=0)
        positive_int("finetune_epochs", self.finetune_epochs, minimum=0)

    def to_config(self) -> dict:
        """The config to hash: every field, ``data_options`` and ``model_overrides`` as dicts, the latter with the
        official-code choices in the canonical form of :func:`maelab.result_keys.canonical_overrides`."""
        d = dataclasses.asdict(self)
        d["data_options"] = {k: v for k, v in self.data_options}
        # rule 3 of maelab.result_keys: a legacy choice is absent, any other present -- a legacy-pinned spec keeps
        # the hash it had while legacy was the default, one relying on today's (official) default hashes differently
        d["model_overrides"] = result_keys.canonical_overrides(dict(self.model_overrides))
        return d

    def init_config(self) -> dict:
        """:meth:`PretrainSpec.to_config` without the fields only pre-training reads (:data:`TRAINING_FIELDS`):
        what the untrained model and its frozen evaluation depend on (the config of a random-init reference, see
        :func:`random_init_evaluate`)."""
        return {k: v for k, v in self.to_config().items() if k not in TRAINING_FIELDS}

    @property
    def key(self) -> str:
        """A short stable name for this spec (cache folder names)."""
        text = json.dumps(self.to_config(), sort_keys=True, default=str)
        return f"{self.model}-{self.size}-{self.dataset}-s{self.seed}-" + hashlib.sha256(text.encode()).hexdigest()[:12]


def variant_config(fields: dict) -> dict:
    """The :class:`PretrainSpec` fields of a variant (fields replacing a base spec's, e.g. in
    :func:`maelab.papers.zhang2022.umae.compare`) as a result config lists them: ``model_overrides`` as sorted
    (key, value) pairs in the canonical form of :func:`maelab.result_keys.canonical_overrides` (as
    :meth:`PretrainSpec.to_config` lists a spec's), every other field as given."""
    out = dict(fields)
    if "model_overrides" in out:
        out["model_overrides"] = tuple(sorted(result_keys.canonical_overrides(dict(out["model_overrides"])).items()))
    return out


#: the :class:`PretrainSpec` fields that only pre-training (and fine-tuning) reads: the untrained model of a spec and
#: its frozen evaluation do not depend on them (:meth:`PretrainSpec.init_config`)
TRAINING_FIELDS = (
    "epochs",
    "batch_size",
    "blr",
    "warmup_epochs",
    "mask_ratio",
    "rank_every",
    "finetune_epochs",
    "finetune_blr",
    "keep_features",
    "snapshot_epochs",
)


def load_data(spec: PretrainSpec, device="cpu", progress: bool | None = None):
    opts = dict(spec.data_options)
    common = {
        "seed": spec.data_seed,
        "device": device,
        "size": spec.img_size,
        "channels": spec.channels,
        "progress": progress,
        **opts,
    }
    if spec.dataset == "ising":
        common.pop("size"), common.pop("channels")
    tr = data_mod.load(spec.dataset, "train", n=spec.n_train, **common)
    te = data_mod.load(spec.dataset, "test", n=spec.n_test, **common)
    return tr, te


def build_model(spec: PretrainSpec):
    """The untrained model of ``spec`` (:func:`maelab.models.create` with the spec's image size, channels, seed and
    overrides)."""
    over = {"img_size": spec.img_size, "in_chans": spec.channels, "seed": spec.seed, **dict(spec.model_overrides)}
    return models.create(spec.model, spec.size, **over)


@torch.no_grad()
def reconstruction_loss(
    model,
    images: torch.Tensor,
    mask_ratio: float | None,
    seed: int = 0,
    batch_size: int = 256,
    *,
    caps: DryRunLimits | None = None,
) -> float:
    """Mean reconstruction loss (the model's own objective, masked patches) on ``images`` with a fixed mask seed
    (``caps``: a dry run's, the first ``eval_images`` images)."""
    model.eval()
    dev = next(model.parameters()).device
    g = torch.Generator(device="cpu").manual_seed(seed)
    images = images[: cap(len(images), caps, "eval_images")]
    total, n = 0.0, 0
    for i in range(0, len(images), batch_size):
        x = images[i : i + batch_size].to(dev)
        out = model(x, mask_ratio=mask_ratio, generator=g) if dev.type == "cpu" else model(x, mask_ratio=mask_ratio)
        total += float(out["loss_rec"]) * len(x)
        n += len(x)
    return total / max(n, 1)


@dataclasses.dataclass(frozen=True)
class Workload:
    """What one :func:`pretrain_and_evaluate` run of a spec does, in numbers (:func:`workload`).

    The run configures itself from it (:func:`pretrain`: batch and ``eval_every``; :func:`finetune_config`: the
    fine-tuning batch; the rank epochs) and the cost model prices it (:meth:`maelab.cost.PlannedRun.from_spec`), so
    the two cannot drift apart; ``tests/test_workload.py`` runs a spec and counts what it did.

    Pre-training: :attr:`steps` optimiser steps at ``batch_size`` (the spec's, capped at ``n_train``); the online
    probe is evaluated on the ``n_test`` test images after each of ``online_eval_epochs`` (every ``eval_every``
    epochs and the last; none when the data has no labels). The trained encoder's evaluation: the effective rank of
    the test features at ``rank_epochs`` (from weight snapshots), then :attr:`final_eval_images`. Fine-tuning:
    :attr:`finetune_steps` at ``finetune_batch``, the test accuracy after each of its ``finetune_epochs``.
    """

    n_train: int
    n_test: int
    epochs: int
    batch_size: int
    eval_every: int
    online_eval_epochs: tuple[int, ...]
    rank_epochs: tuple[int, ...]
    finetune_epochs: int
    finetune_batch: int

    @property
    def steps(self) -> int:
        """Pre-training optimiser steps, ``epochs * (n_train // batch_size)`` (the trainer drops incomplete batches)."""
        return self.epochs * (self.n_train // self.batch_size)

    @property
    def finetune_steps(self) -> int:
        """Fine-tuning optimiser steps, ``finetune_epochs * (n_train // finetune_batch)``."""
        return self.finetune_epochs * (self.n_train // self.finetune_batch)

    @property
    def online_eval_images(self) -> int:
        """Images through the encoder (unmasked, no grad) for the online probe's test accuracy."""
        return len(self.online_eval_epochs) * self.n_test

    @property
    def rank_images(self) -> int:
        """Images through the encoder for the effective ranks (the test set per rank epoch)."""
        return len(self.rank_epochs) * self.n_test

    @property
    def final_eval_images(self) -> int:
        """Images through the trained model after pre-training, i.e. the features of the train and test images
        (probe, k-NN, rank) and the test reconstruction loss (a masked forward, counted as the images it reads)."""
        return self.n_train + 2 * self.n_test

    @property
    def finetune_eval_images(self) -> int:
        """Images through the fine-tuned encoder for its test accuracy (the test set after every epoch)."""
        return self.finetune_epochs * self.n_test

    def eval_images(self, *, final: bool = True) -> int:
        """Every image of a no-grad forward pass of the run (``final=False``: without :attr:`final_eval_images`,
        for a caller that evaluates the trained model itself)."""
        return (
            self.online_eval_images
            + (self.final_eval_images if final else 0)
            + self.rank_images
            + self.finetune_eval_images
        )


#: The fine-tuning batch of the pipeline, capped at the training set (every stored fine-tuning result used it; the
#: official recipe's effective batch is 1,024).
FINETUNE_BATCH = 128


def _finetune_batch(n_train: int) -> int:
    return min(FINETUNE_BATCH, n_train)


def workload(
    spec: PretrainSpec, *, n_train: int | None = None, n_test: int | None = None, online_eval: bool = True
) -> Workload:
    """The :class:`Workload` of ``spec``: what :func:`pretrain_and_evaluate` does with it.

    ``n_train`` / ``n_test``: the sizes of the loaded data (default: the spec's, which must then be numbers: a spec
    with ``n_train=None`` reads the whole dataset, whose size only loading tells). ``online_eval``: whether the
    online probe is evaluated (in the run: the data has labels)."""
    n_tr = spec.n_train if n_train is None else n_train
    n_te = spec.n_test if n_test is None else n_test
    if n_tr is None or n_te is None:
        raise ParameterError("n_train / n_test", "numbers (the spec reads a whole dataset: pass its sizes)", None)
    positive_int("n_train", n_tr)
    positive_int("n_test", n_te, minimum=0)
    e = spec.epochs
    every = max(1, e // 10)  # about ten online evaluations per run, whatever its length
    return Workload(
        n_train=n_tr,
        n_test=n_te,
        epochs=e,
        batch_size=min(spec.batch_size, n_tr),
        eval_every=every,
        online_eval_epochs=tuple(d for d in range(1, e + 1) if d % every == 0 or d == e) if online_eval else (),
        rank_epochs=rank_epochs(spec),
        finetune_epochs=spec.finetune_epochs,
        finetune_batch=_finetune_batch(n_tr),
    )


def finetune_config(spec: PretrainSpec, n_train: int, *, epochs: int | None = None) -> train.FineTuneConfig:
    """The pipeline's fine-tuning recipe for ``spec`` on ``n_train`` images for ``epochs`` (default
    ``spec.finetune_epochs``; > 0): batch ``Workload.finetune_batch``, ``spec.finetune_blr``, one warm-up
    epoch, the spec's pooling and seed."""
    epochs = positive_int("epochs", spec.finetune_epochs if epochs is None else epochs)
    return train.FineTuneConfig(
        epochs=epochs,
        batch_size=_finetune_batch(positive_int("n_train", n_train)),
        blr=spec.finetune_blr,
        warmup_epochs=min(1, epochs),
        pool=spec.pool,
        seed=spec.seed,
    )


def rank_epochs(spec: PretrainSpec) -> tuple[int, ...]:
    """Completed epochs at which ``pretrain_and_evaluate`` measures the effective rank: 0, every ``rank_every``
    epochs and the last epoch (empty when ``rank_every == 0``)."""
    if not spec.rank_every:
        return ()
    return tuple(e for e in range(spec.epochs + 1) if e % spec.rank_every == 0 or e == spec.epochs)


def training_spec(spec: PretrainSpec) -> PretrainSpec:
    """The spec :func:`pretrain_and_evaluate` pre-trains: ``spec`` itself, or with ``rank_every > 0`` the spec whose
    ``snapshot_epochs`` also hold :func:`rank_epochs` (the weights the ranks are computed from are then stored in
    the checkpoint, so they survive a resume; this changes ``key``, i.e. the checkpoint folder, but no number)."""
    epochs = rank_epochs(spec)
    if not epochs or set(epochs) <= set(spec.snapshot_epochs):
        return spec
    return dataclasses.replace(spec, snapshot_epochs=tuple(sorted(set(spec.snapshot_epochs) | set(epochs))))


def pretrain(
    spec: PretrainSpec,
    *,
    device: str = "auto",
    progress: bool | None = None,
    train_data=None,
    test_data=None,
    callbacks=(),
    caps: DryRunLimits | None = None,
):
    """Pre-train the model of ``spec`` (resuming from the cache); returns (model, TrainResult, train, test).
    ``caps``: a dry run's (:class:`maelab.options.DryRunLimits`), handed to the trainer; its checkpoints then go
    to the dry run's scratch folder, never the cache."""
    dev = resolve_device(device)
    tr, te = (train_data, test_data) if train_data is not None else load_data(spec, dev, progress)
    model = build_model(spec)
    work = workload(spec, n_train=len(tr), n_test=len(te))
    cfg = train.TrainConfig(
        epochs=spec.epochs,
        batch_size=work.batch_size,
        blr=spec.blr,
        warmup_epochs=min(spec.warmup_epochs, spec.epochs),
        mask_ratio=spec.mask_ratio,
        seed=spec.seed,
        probe_pool=spec.pool,
        eval_every=work.eval_every,
        snapshot_epochs=tuple(spec.snapshot_epochs),
        online_probe=tr.labels is not None,
    )
    ckdir = train.default_checkpoint_dir(spec.key, caps)
    # one writer per checkpoint: a prefetch worker (maelab.prefetch) training this spec is waited for, and its
    # finished checkpoint is then resumed below without a step
    with checkpoint_lock(ckdir):
        # the folder's name (spec.key) hashes every field that builds the model, so it vouches for a checkpoint
        # written before checkpoints recorded the model's description: that one is given it instead of being refused
        adopt_legacy_checkpoint(ckdir, model)
        res = train.train(
            model,
            tr,
            cfg,
            eval_data=te if te.labels is not None else None,
            checkpoint_dir=ckdir,
            device=str(dev),
            progress=progress,
            callbacks=callbacks,
            caps=caps,
        )
    return res.model, res, tr, te


def evaluate_snapshots(
    spec: PretrainSpec, model, snapshots: dict, epochs, measure: Callable[[Any], Any], *, reseed: bool
) -> list:
    """``[measure(m_e) for e in epochs]``, m_e a model holding the weights ``snapshots[e]`` (state dicts saved by the
    trainer at ``snapshot_epochs``): the one loop over weight snapshots of the library.

    One model object is loaded with each snapshot in turn. ``reseed`` chooses how that object is made, which
    matters for what runs *after* this loop on a GPU:

    * ``False``: ``copy.deepcopy(model)`` (the trained model of ``spec``): no generator is touched.
    * ``True``: :func:`build_model` ``(spec)`` on ``model``'s device, built before the first snapshot (none when
      ``epochs`` is empty). ``maelab.models.create(seed=...)`` forks and restores the CPU generator but re-seeds
      the CUDA generators with ``spec.seed``, so on a GPU later random draws (e.g. fine-tuning) start from there.

    The stored results were computed so: :func:`pretrain_and_evaluate` (ranks) with ``reseed=False``; the
    ``zhang_umae`` runs (:func:`maelab.papers.zhang2022.umae.evaluate_run`) and the ``bisulco_sweeps`` snapshot
    probes with ``reseed=True``. On the CPU both give the same numbers. ``measure`` must not draw random numbers
    from the global generators (feature extraction at mask ratio 0 and the seeded probes do not).
    """
    out, snap = [], None
    for e in epochs:
        if snap is None:
            snap = build_model(spec).to(next(model.parameters()).device) if reseed else copy.deepcopy(model)
        snap.load_state_dict(snapshots[e])
        out.append(measure(snap))
    return out


def _frozen_metrics(
    model, tr, te, spec: PretrainSpec, blas_threads: int | None, caps: DryRunLimits | None = None
) -> tuple[dict[str, Any], Any]:
    """The frozen-encoder evaluation of :func:`pretrain_and_evaluate` (and of :func:`random_init_evaluate`):
    logistic-regression probe, k-NN, effective rank and singular values of the test features; and those features."""
    ftr = evaluate.extract_features(model, tr.images, pool=spec.pool, progress=False, caps=caps)
    fte = evaluate.extract_features(model, te.images, pool=spec.pool, progress=False, caps=caps)
    lp = evaluate.linear_probe(
        ftr, tr.labels, fte, te.labels, method="logreg", seed=spec.seed, blas_threads=blas_threads, caps=caps
    )
    return {
        "linear_acc": float(lp.test_acc),
        "linear_train_acc": float(lp.train_acc),
        "knn_acc": float(evaluate.knn_accuracy(ftr, tr.labels, fte, te.labels, caps=caps)),
        "effective_rank": float(metrics.effective_rank(fte)),
        "singular_values": metrics.singular_values(fte).cpu().numpy(),
    }, fte


def random_init_evaluate(
    spec: PretrainSpec, *, device: str = "auto", blas_threads: int | None = 1, caps: DryRunLimits | None = None
) -> dict[str, Any]:
    """The untrained model of ``spec`` (:func:`build_model`: the initial weights its pre-training starts from)
    evaluated frozen exactly as :func:`pretrain_and_evaluate` evaluates the trained one (same data, pooling, probe,
    probe seed and BLAS threads). No training, so it is cheap: the random-init reference of the learning
    precondition (:class:`maelab.claims.LearnedCheck`). Keys: ``linear_acc``, ``linear_train_acc``, ``knn_acc``,
    ``effective_rank``, ``singular_values``. ``caps``: a dry run's (:class:`maelab.options.DryRunLimits`)."""
    if blas_threads is not None:
        positive_int("blas_threads", blas_threads)
    dev = resolve_device(device)
    tr, te = load_data(spec, dev, progress=False)
    if tr.labels is None or te.labels is None:
        raise ParameterError("dataset", "a labelled dataset (mnist10k, shapes, cifar10, ...)", spec.dataset)
    return _frozen_metrics(build_model(spec).to(dev), tr, te, spec, blas_threads, caps)[0]


def pretrain_and_evaluate(
    spec: PretrainSpec,
    *,
    device: str = "auto",
    progress: bool | None = None,
    blas_threads: int | None = 1,
    caps: DryRunLimits | None = None,
) -> dict[str, Any]:
    """Pre-train (see :func:`pretrain`) and evaluate; returns a store-ready dict.

    Keys: ``history`` (per-epoch dicts from the trainer), ``linear_acc``, ``linear_train_acc``, ``knn_acc``,
    ``effective_rank``, ``singular_values`` (array), ``rec_loss`` (test), ``rank_by_epoch`` (list of
    [epoch, effective rank] at :func:`rank_epochs` when ``rank_every``), ``finetune_acc`` (or None),
    ``train_seconds``, and ``test_features``/``test_labels`` arrays when ``keep_features``.

    With ``rank_every > 0`` the model is pre-trained as :func:`training_spec` (weight snapshots at the rank epochs
    kept in the checkpoint) and the ranks are computed from those snapshots after training, so a resumed (cached)
    run returns the same ``rank_by_epoch`` as a fresh one.

    ``blas_threads``: BLAS threads of the logistic-regression probe (:func:`maelab.evaluate.linear_probe`; None: no
    limit). One thread is fast on a busy machine and is how every stored result of this pipeline was computed
    (the notebooks ran it under ``threadpool_limits(1, user_api="blas")``); other values can change the last bits.

    ``caps``: a dry run's (:class:`maelab.options.DryRunLimits`), handed to every step (training, fine-tuning,
    features, probes, losses); None: a real run.
    """
    if blas_threads is not None:
        positive_int("blas_threads", blas_threads)
    dev = resolve_device(device)
    tr, te = load_data(spec, dev, progress)
    if tr.labels is None:
        raise ParameterError(
            "dataset", "a labelled dataset for evaluation (mnist10k, shapes, cifar10, imagefolder)", spec.dataset
        )
    model, res, tr, te = pretrain(
        training_spec(spec), device=str(dev), progress=progress, train_data=tr, test_data=te, caps=caps
    )
    epochs = workload(spec, n_train=len(tr), n_test=len(te)).rank_epochs  # empty unless rank_every
    ranks = [
        [e, r]
        for e, r in zip(
            epochs,
            evaluate_snapshots(
                spec,
                model,
                res.snapshots,
                epochs,
                reseed=False,
                measure=lambda m: metrics.effective_rank(
                    evaluate.extract_features(m, te.images, pool=spec.pool, progress=False, caps=caps)
                ),
            ),
        )
    ]
    frozen, fte = _frozen_metrics(model, tr, te, spec, blas_threads, caps)
    out: dict[str, Any] = {
        "history": res.history,
        **frozen,
        "rec_loss": reconstruction_loss(model, te.images, spec.mask_ratio, seed=spec.seed, caps=caps),
        "rank_by_epoch": ranks,
        "train_seconds": float(sum(h["seconds"] for h in res.history)),
        "finetune_acc": None,
    }
    if spec.finetune_epochs:
        ft = train.fine_tune(
            model, tr, te, finetune_config(spec, len(tr)), device=str(dev), progress=progress, caps=caps
        )
        out["finetune_acc"] = float(ft.test_acc)
    if spec.keep_features:
        out["test_features"] = fte.cpu().numpy()
        out["test_labels"] = te.labels.cpu().numpy()
    return out


def random_init_features(
    spec: PretrainSpec, *, device: str = "auto", caps: DryRunLimits | None = None
) -> dict[str, Any]:
    """Features of the untrained model of ``spec`` (the 'random init' reference of U-MAE's Fig. 1b; ``caps``: a
    dry run's)."""
    dev = resolve_device(device)
    _, te = load_data(spec, dev, progress=False)
    model = build_model(spec).to(dev)
    f = evaluate.extract_features(model, te.images, pool=spec.pool, progress=False, caps=caps)
    return {
        "effective_rank": float(metrics.effective_rank(f)),
        "singular_values": metrics.singular_values(f).cpu().numpy(),
    }
