"""One trainer for every self-supervised variant (MAE, U-MAE, SimMIM, U-SimMIM), supervised fine-tuning, DDP.

What it does, following the official MAE recipe (facebookresearch/mae ``main_pretrain.py``, ``engine_pretrain.py``,
``util/lr_sched.py``) and U-MAE's online classifier (zhangq327/U-MAE ``engine_pretrain.py``):

* **Optimiser.** AdamW, betas (0.9, 0.95), weight decay 0.05 applied to weight matrices only: no decay on biases,
  1-d parameters (norms) and on ``*pos_embed``, ``*cls_token``, ``*mask_token`` (plus whatever the model lists in
  ``no_weight_decay()``). Grouping is timm's ``param_groups_weight_decay``. (The official pre-training script passes
  no skip list, so its 3-d cls/mask tokens *are* decayed; we follow timm's convention for ViTs instead.)
* **Learning rate.** ``lr = blr * effective_batch / 256`` with ``effective_batch = batch_size * world_size`` (as the
  official code: ``batch_size`` is *per process*), set every iteration from the fractional epoch
  ``epoch + it / iters`` by linear warm-up then a half-cycle cosine to ``min_lr`` (:func:`lr_at`).
* **Mixed precision.** ``amp="auto"`` is bf16 autocast on CUDA and off on CPU; ``"bf16"`` forces it, ``"fp16"``
  (CUDA only) adds a ``GradScaler``; ``"off"`` is float32. Fused attention is the model's business (timm blocks use
  ``scaled_dot_product_attention``).
* **Data.** The whole dataset lives on the training device as one tensor (the book's datasets are small). Each
  epoch's order is ``torch.randperm`` from a CPU generator seeded by ``(seed, epoch)`` only (a ``SeedSequence``
  hash), so the data order is a pure function of the seed and the epoch: identical on CPU and GPU, for any world
  size, and trivially restored on resume. Incomplete last batches are dropped (as ``drop_last=True``). Optional
  augmentation (random resized crop + horizontal flip on tensors, :func:`random_resized_crop_flip`) is off by
  default, as in U-MAE's CIFAR runs.
* **Randomness.** Masks come from a dedicated generator on the device, passed to ``model(imgs, generator=...)``;
  augmentation parameters from a dedicated CPU generator; python/numpy/torch global generators are seeded per rank
  (for dropout and the like). Seeds are derived from ``(config.seed, purpose, rank)`` by ``numpy.random.SeedSequence``
  so streams never collide. Same seed -> same numbers on CPU.
* **Online linear probe** (U-MAE's monitor). A ``Linear`` head (optionally after ``BatchNorm1d(affine=False)``) is
  trained on ``out["features"].detach()`` with cross-entropy, with its *own* AdamW whose hyper-parameters and
  schedule equal the model's (U-MAE trains the same head inside the model's optimizer; AdamW is per-parameter, so
  this is the same update), ``probe_blr`` overrides the peak rate. The head never touches the model's gradients,
  and it is initialised inside ``torch.random.fork_rng``, so switching the probe on or off leaves the model's
  trajectory bit-for-bit unchanged. Test accuracy is the head applied to ``model.forward_features`` (unmasked
  image) in eval mode.
* **Checkpoints** (``checkpoint_dir/last.pt``, :mod:`maelab.train.checkpoint`): model, optimiser, grad scaler, probe
  head and its optimiser, the RNG states of every rank (torch CPU and CUDA, python, numpy, mask and augmentation
  generators), epoch, iteration, history, partial-epoch accumulators and snapshots. Written by rank 0 through
  ``maelab._util.atomic_path`` (temp file, fsync, rename: never half-written under the final name), loaded with
  ``torch.load(weights_only=True)`` (everything is stored as tensors or plain python types; no code in the file can
  run); an empty, truncated, corrupt or unsafe file raises :class:`CheckpointError`, one line naming the file and
  what to do. Resume is **exact**: on CPU a run killed (between or inside epochs, with ``checkpoint_every_iters``)
  and resumed in a fresh process ends with bit-identical weights and history (apart from timings) to an
  uninterrupted run. Resuming checks that the stored model description (class, ``model.config`` and the
  attributes that define architecture and loss: ``mask_ratio``, ``norm_pix_loss``, ``lambda_unif``, ...), the
  stored training configuration and a fingerprint of the data agree with the current ones (a difference is one line
  naming the differing keys, e.g. ``model.lambda_unif``); a checkpoint written before the model description was
  stored is refused unless its folder vouches for its model (the book's cache folders,
  ``maelab.train.checkpoint.adopt_legacy_checkpoint``); a finished run resumes instantly (the book's cache).
* **Distributed.** When ``torch.distributed`` is initialised (e.g. by ``torchrun``; ``python -m maelab.train``
  initialises it from the environment) the model and the probe head are wrapped in ``DistributedDataParallel``, each
  global batch of ``batch_size * world_size`` indices of the shared permutation is split into contiguous per-rank
  slices, logged metrics are all-reduced (the loss every step, so a non-finite loss stops every rank together), and
  only rank 0 writes checkpoints and shows progress. With a deterministic model whose loss is a per-sample mean, a
  2-rank run equals a single-process run with the doubled batch up to float rounding (tested). U-MAE's uniformity
  term, which couples samples, is computed by the model on the features of *every* rank, all-gathered
  (:func:`maelab.models.gather_features`): each rank gets the same ``loss_unif`` of the global batch of
  ``batch_size * world_size`` features, as in the official U-MAE code. The model option ``uniformity_gather`` sets
  its backward: ``"official"`` (the default) is the official ``GatherLayer``, which sends each rank's gradient only
  into its own features, so after DDP's averaging the term's parameter gradient is 1/world_size of the gradient of
  the loss as written (an effective weight ``lambda_unif / world_size``); ``"exact"`` sums the gradients over the
  ranks first and gives the single-process gradient on the global batch (both tested with 2 and 4 gloo ranks).
  Before this, each rank computed the term on its own ``batch_size`` features only.
* **Failures.** A non-finite loss raises :class:`NonFiniteLossError` naming epoch, iteration and the loss terms
  before the optimiser step, so no NaN weights are written. Bad arguments raise :class:`maelab.ParameterError`,
  among them training data with NaN or inf pixels (checked before the first step, so broken input is never
  reported as a non-finite loss with advice about the learning rate).

Conventions: images are float32 (N, C, H, W) in [0, 1] as delivered by :func:`maelab.data.load`; models follow the
shared interface (``model(imgs, mask_ratio=None, generator=None) -> dict`` with ``loss``, ``loss_rec``,
``loss_unif``, ``features``; ``forward_features(imgs, pool)``). History epochs count *completed* epochs (1..E);
epoch 0 denotes the initial model (for ``snapshot_epochs`` and callbacks).

Layout (one concern per module; this package re-exports the public API, so ``from maelab.train import train,
TrainConfig, fine_tune, ...`` and ``maelab.train.train(...)`` work as before the split):

* :mod:`~maelab.train.config`: :class:`TrainConfig`, :class:`FineTuneConfig` (validated dataclasses).
* :mod:`~maelab.train.schedule`: :func:`lr_at` (warm-up + cosine), :func:`param_groups` (no-decay groups,
  layer-wise lr decay). :mod:`~maelab.train.seeds`: derived seeds and the per-epoch data order.
* :mod:`~maelab.train.augment`: :func:`random_resized_crop_flip` on tensors.
* :mod:`~maelab.train.distributed`: device, DDP, autocast (``_Runtime``), :func:`is_main_process`, ``torchrun``
  initialisation.
* :mod:`~maelab.train.checkpoint`: writing ``last.pt`` atomically, :func:`load_checkpoint`, exact resume,
  :func:`default_checkpoint_dir`, :class:`CheckpointError`.
* :mod:`~maelab.train.loop`: the optimiser step shared with fine-tuning, one pre-training epoch, the online probe.
* :mod:`~maelab.train.pretrain`: :func:`train` and :class:`TrainResult`.
* :mod:`~maelab.train.finetune`: :func:`fine_tune`, :class:`FineTuneResult`.
* :mod:`~maelab.train.cli`: ``python -m maelab.train`` (:func:`main`, :func:`build_parser`).

The name ``maelab.train.train``: the package is the trainer and keeps its name (``maelab.train``), and the function
keeps its name (``train``), which every caller, the README and the notebooks use; renaming either would break them
for no gain. The clash is resolved by construction: the function lives in :mod:`maelab.train.pretrain` (it
pre-trains; :mod:`~maelab.train.finetune` is its sibling) and no submodule is called ``train``, so the attribute
``maelab.train.train`` is always the function, never a module that an import could shadow it with.
"""

from __future__ import annotations

from .augment import random_resized_crop_flip
from .checkpoint import CHECKPOINT_FORMAT, CheckpointError, default_checkpoint_dir, load_checkpoint
from .cli import build_parser, main
from .config import AMP_CHOICES, FineTuneConfig, TrainConfig
from .distributed import is_main_process
from .finetune import FineTuneResult, fine_tune
from .loop import NonFiniteLossError
from .pretrain import TrainResult, train
from .schedule import NO_DECAY_PATTERNS, lr_at, param_groups

__all__ = [
    "TrainConfig",
    "TrainResult",
    "train",
    "FineTuneConfig",
    "FineTuneResult",
    "fine_tune",
    "NonFiniteLossError",
    "CheckpointError",
    "lr_at",
    "param_groups",
    "random_resized_crop_flip",
    "default_checkpoint_dir",
    "load_checkpoint",
    "is_main_process",
    "main",
    "build_parser",
    "CHECKPOINT_FORMAT",
    "NO_DECAY_PATTERNS",
    "AMP_CHOICES",
]
