"""Checkpoints of a pre-training run (``checkpoint_dir/last.pt``): writing, safe reading, exact resume.

A checkpoint holds the model, optimiser, grad scaler, probe head and its optimiser, the RNG states of every rank
(torch CPU and CUDA, python, numpy, mask and augmentation generators), epoch, iteration, history, partial-epoch
accumulators and snapshots, all as tensors or plain python types.

* **Writing** (``_save``, rank 0): to a temporary file in the same folder, flushed to disk (``fsync``), then
  renamed onto ``last.pt`` (``maelab._util.atomic_path``), so a run killed while writing leaves the previous
  checkpoint intact and never a truncated file under the final name.
* **Reading** (:func:`~maelab.train.load_checkpoint`): ``torch.load(weights_only=True)``, so no code in the file can
  run. An empty, truncated, corrupt or unsafe file, or one of another format, raises
  :class:`~maelab.train.CheckpointError`, one line naming the file and what to do (delete it or pass
  ``resume=False``).
* **Resuming** (``_resume``) checks that the stored model description (``model_description``: class, its
  ``config`` from :func:`maelab.models.create` and the attributes that define its architecture and loss, such as
  ``mask_ratio``, ``norm_pix_loss``, ``lambda_unif``), the stored training configuration (apart from bookkeeping
  fields) and a fingerprint of the data agree with the current ones -- a difference is one line naming the
  differing keys -- then restores every state. A checkpoint written before checkpoints held the model description
  is refused (:class:`CheckpointError`: delete it or pass ``resume=False``); ``adopt_legacy_checkpoint``
  upgrades one whose folder name vouches for its model (the book's :class:`maelab.experiments.PretrainSpec`
  cache folders). On CPU a run killed (between or
  inside epochs) and resumed in a fresh process ends with bit-identical weights and history (apart from timings)
  to an uninterrupted run.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import torch

from .. import paths
from .._util import atomic_path, state_dict_mismatch
from .._validate import ParameterError
from ..models import MODEL_OPTIONS
from ..options import DryRunLimits
from .config import TrainConfig

CHECKPOINT_FORMAT = "maelab.train/1"
_REQUIRED = (
    "epoch",
    "iteration",
    "world_size",
    "config",
    "data_fingerprint",
    "model",
    "optimizer",
    "probe",
    "probe_optimizer",
    "scaler",
    "ranks",
    "history",
    "snapshots",
    "partial",
)


class CheckpointError(ParameterError):
    """A training checkpoint that cannot be used: empty, truncated, corrupt, unsafe, of another format or model.

    The message is one line naming the file and what to do; ``name`` is ``"checkpoint"``, ``value`` the path.
    """

    def __init__(self, path: str | os.PathLike, problem: str):
        self.name, self.allowed, self.value = "checkpoint", f"a readable {CHECKPOINT_FORMAT} checkpoint", str(path)
        ValueError.__init__(
            self, f"checkpoint {path} {problem}; delete it, or pass resume=False, to train from the start"
        )


#: attributes that define a model beyond its weights (architecture, masking and loss), read from the live model
#: (so a change made after :func:`maelab.models.create` counts too); those a model lacks are left out
MODEL_ATTRS = MODEL_OPTIONS
#: ``model.config`` keys that do not define the model of a resumed run: the seed only drew the initial weights,
#: which the checkpoint's replace
_NOT_MODEL = ("seed",)


def _plain(v):
    """``v`` as the plain python types a weights-only checkpoint holds (tuples as lists; others by repr)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, np.generic):
        return v.item()
    return repr(v)


def model_description(model: torch.nn.Module) -> dict:
    """What defines ``model`` beyond its weights, as stored in a checkpoint (``model_config``) and compared on
    resume: ``class`` (the class name), ``model.config`` (:func:`maelab.models.create`'s name, size and options)
    without the init seed, and the live values of :data:`MODEL_ATTRS` the model has (e.g. ``mask_ratio``,
    ``norm_pix_loss``, ``lambda_unif``: an MAE and a U-MAE share class and weights and differ only there)."""
    out: dict = {"class": type(model).__name__}
    cfg = getattr(model, "config", None)
    if isinstance(cfg, dict):
        out.update({str(k): _plain(v) for k, v in cfg.items() if k not in _NOT_MODEL})
    for a in MODEL_ATTRS:
        v = getattr(model, a, None)
        if v is not None and not callable(v) and not isinstance(v, (torch.Tensor, torch.nn.Module)):
            out[a] = _plain(v)
    return out


def _fingerprint(images: torch.Tensor) -> list[float]:
    """Cheap identity check of a dataset stored in checkpoints: shape plus sums of a strided subset."""
    step = max(1, images.shape[0] // 64)
    sub = images[::step].double()
    return [float(images.shape[0]), float(sub.sum()), float((sub * sub).sum())]


# ----------------------------------------------------------------------------------------------------------------
# RNG state <-> plain python/tensors (so torch.load(weights_only=True) can read it)
# ----------------------------------------------------------------------------------------------------------------


def _rng_state(mask_gen: torch.Generator, aug_gen: torch.Generator) -> dict:
    py = random.getstate()
    npst = np.random.get_state()
    return {
        "torch_cpu": torch.get_rng_state(),
        "torch_cuda": list(torch.cuda.get_rng_state_all()) if torch.cuda.is_available() else [],
        "python": [int(py[0]), [int(v) for v in py[1]], None if py[2] is None else float(py[2])],
        "numpy": [str(npst[0]), torch.from_numpy(npst[1].astype(np.int64)), int(npst[2]), int(npst[3]), float(npst[4])],
        "mask": mask_gen.get_state(),
        "mask_device": str(mask_gen.device),
        "aug": aug_gen.get_state(),
    }


def _set_rng_state(st: dict, mask_gen: torch.Generator, aug_gen: torch.Generator) -> bool:
    """Restore; returns False (and leaves the generators seeded) if the mask generator's device differs."""
    torch.set_rng_state(st["torch_cpu"])
    if torch.cuda.is_available() and st["torch_cuda"] and len(st["torch_cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(st["torch_cuda"])
    v, ints, gauss = st["python"]
    random.setstate((v, tuple(ints), gauss))
    name, keys, pos, has_gauss, cached = st["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    aug_gen.set_state(st["aug"])
    if st["mask_device"] != str(mask_gen.device):
        return False
    mask_gen.set_state(st["mask"])
    return True


def _unreadable(path: Path, err: Exception) -> CheckpointError:
    """The one-line error for a file ``torch.load(weights_only=True)`` refused (never torch's own advice)."""
    msg = str(err)
    unsafe = re.search(r"(?:Unsupported global: GLOBAL|unsupported GLOBAL) ([\w.]+)", msg)
    if unsafe:
        return CheckpointError(
            path, f"holds a python object ({unsafe.group(1)}), which safe loading (weights_only=True) never executes"
        )
    return CheckpointError(path, f"is truncated or corrupt (not readable as a torch checkpoint: {type(err).__name__})")


def load_checkpoint(path: str | os.PathLike) -> dict:
    """Read a maelab training checkpoint safely (``weights_only=True``; no code in the file can run).

    Raises:
        CheckpointError: the file is empty, truncated, corrupt, holds python objects, or is not a
            ``maelab.train/1`` checkpoint (one line naming the file; never advising ``weights_only=False``).
        OSError: the file cannot be opened (missing, permissions).
    """
    path = Path(path)
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            raise CheckpointError(path, "is empty")
        try:
            ck = torch.load(f, map_location="cpu", weights_only=True)
        except Exception as err:  # anything torch.load raises on a readable file is about the file's content
            raise _unreadable(path, err) from None
    if not isinstance(ck, dict) or ck.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(path, f"is not a {CHECKPOINT_FORMAT} checkpoint")
    missing = [k for k in _REQUIRED if k not in ck]
    if missing:
        raise CheckpointError(path, f"is incomplete (no {', '.join(missing)})")
    return ck


LOCK_NAME = ".train-lock"  # the lock file in a checkpoint folder (checkpoint_lock)
_HELD: set[str] = set()  # checkpoint folders this process holds the lock of


@contextlib.contextmanager
def checkpoint_lock(checkpoint_dir, *, blocking: bool = True):
    """Hold the lock of ``checkpoint_dir`` (an exclusive ``flock`` on its ``.train-lock`` file, released when the
    block ends or the process dies) while a run trains into it; yields True, or False when ``blocking`` is off and
    another process holds it. Re-entrant within a process (a block inside one of the same folder yields True at
    once). Two processes that pre-train the same spec (:mod:`maelab.prefetch`'s workers and the page's own loop)
    thus never write one checkpoint at the same time: the second waits, then resumes the finished checkpoint.
    ``checkpoint_dir`` None: no lock, True. The folder is created."""
    import fcntl

    if checkpoint_dir is None:
        yield True
        return
    folder = Path(checkpoint_dir)
    key = str(folder.resolve())
    if key in _HELD:
        yield True
        return
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK_NAME, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        _HELD.add(key)
        try:
            yield True
        finally:
            _HELD.discard(key)
            fcntl.flock(f, fcntl.LOCK_UN)


def default_checkpoint_dir(name: str, caps: DryRunLimits | None = None) -> Path:
    """``<cache>/checkpoints/<name>`` (``<cache>``: :func:`maelab.paths.cache_root`, ``$MAELAB_CACHE`` or
    ``<repo>/.cache``); in a dry run (``caps``: its :class:`maelab.options.DryRunLimits`)
    ``<caps.scratch_dir>/checkpoints/<name>``: a dry run never writes into (or resumes from) the real checkpoint
    cache, whose capped checkpoints a real run would otherwise resume as finished.

    ``<repo>``: :func:`maelab.paths.repo_root`. The folder is not created here.
    """
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._\-]*", name) or ".." in name:
        raise ParameterError("name", "a non-empty name of letters, digits, '.', '_', '-' (no path separators)", name)
    if caps is not None and not isinstance(caps, DryRunLimits):
        raise ParameterError("caps", "None or a maelab.options.DryRunLimits", type(caps).__name__)
    if caps is not None:
        return caps.scratch_dir / "checkpoints" / name
    return paths.cache_dir("checkpoints") / name


def adopt_legacy_checkpoint(checkpoint_dir: str | os.PathLike, model: torch.nn.Module) -> bool:
    """Give ``checkpoint_dir/last.pt``, written before checkpoints recorded the model description, the description
    of ``model`` (in place, atomically), so that :func:`~maelab.train.train` resumes it; True when it did.

    Only for a folder whose *name* vouches for the model: :func:`maelab.experiments.pretrain`'s folders are named
    by :attr:`maelab.experiments.PretrainSpec.key`, a hash of every field that builds the model (variant, size,
    overrides, image size, channels, seed), so a checkpoint in one was trained on that spec's model. Anywhere else
    an old checkpoint is refused (delete it, or pass ``resume=False``). The class name stored since the first
    format must still match; the training configuration and the data are checked on resume as for any checkpoint.
    Nothing is done (False) when there is no checkpoint or it already holds a description.
    """
    path = Path(checkpoint_dir) / "last.pt"
    if not path.is_file():
        return False
    ck = load_checkpoint(path)
    if isinstance(ck.get("model_config"), dict):
        return False
    if ck.get("model_class") != type(model).__name__:
        raise CheckpointError(path, f"holds a {ck.get('model_class')}, not a {type(model).__name__}")
    ck["model_config"] = model_description(model)
    _write(ck, path)
    print(
        f"[train] {path}: checkpoint of an older format given its model's description (folder {path.parent.name})",
        file=sys.stderr,
        flush=True,
    )
    return True


def _write(state: dict, path: Path) -> None:
    """Write ``state`` to ``path`` atomically: temp file in the same folder, fsync, rename."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())


def _save(run, epoch: int, iteration: int, acc) -> None:
    """Checkpoint ``run`` (a :class:`maelab.train.loop._Run`) after ``iteration`` steps of ``epoch`` (0 = epoch
    boundary, ``acc`` None); every rank contributes its RNG states, rank 0 writes."""
    rt = run.rt
    mine = {"rng": _rng_state(run.mask_gen, run.aug_gen), "probe_counts": run.probe_counts.tolist()}
    ranks = [mine]
    if rt.world > 1:
        ranks = [None] * rt.world
        torch.distributed.all_gather_object(ranks, mine)
    if rt.rank == 0:
        state = {
            "format": CHECKPOINT_FORMAT,
            "epoch": epoch,
            "iteration": iteration,
            "iters_per_epoch": run.iters,
            "world_size": rt.world,
            "config": run.cfg.to_dict(),
            "model_class": type(run.base).__name__,
            "model_config": model_description(run.base),
            "data_fingerprint": run.fingerprint,
            "model": run.base.state_dict(),
            "optimizer": run.opt.state_dict(),
            "probe": run.head.state_dict() if run.head is not None else None,
            "probe_optimizer": run.popt.state_dict() if run.popt is not None else None,
            "scaler": run.scaler.state_dict() if run.scaler is not None else None,
            "ranks": ranks,
            "history": run.history,
            "snapshots": run.snapshots,
            "partial": acc.to_dict() if acc is not None else None,
        }
        _write(state, run.ckpt)
    if rt.world > 1:
        torch.distributed.barrier()


def _differences(stored: dict, current: dict, prefix: str) -> list[tuple[str, object, object]]:
    """(prefix + key, stored value, current value) for every key whose values differ (absent: None)."""
    return [
        (prefix + k, stored.get(k), current.get(k))
        for k in sorted(set(stored) | set(current))
        if stored.get(k) != current.get(k)
    ]


def _check_resumable(run, ck: dict) -> None:
    """Refuse a checkpoint written for another model, configuration, dataset or (mid-epoch) world size."""
    cfg, path = run.cfg, run.ckpt
    if not isinstance(ck.get("model_config"), dict):
        raise CheckpointError(
            path,
            "was written before checkpoints recorded the model's configuration, so it cannot be checked against "
            f"this {type(run.base).__name__} (it may hold another model variant, mask_ratio or loss)",
        )
    stored = {k: v for k, v in ck["config"].items() if k not in TrainConfig._BOOKKEEPING}
    current = {k: v for k, v in cfg.to_dict().items() if k not in TrainConfig._BOOKKEEPING}
    diff = _differences(ck["model_config"], model_description(run.base), "model.")
    diff += _differences(stored, current, "config.")
    if diff:
        raise ParameterError(
            "model" if diff[0][0].startswith("model.") else "config",
            f"what the checkpoint {path} was written with ("
            + ", ".join(f"{k}={a!r}" for k, a, _ in diff)
            + "); resume with the same model and configuration, or pass resume=False (python -m maelab.train: "
            "--no-resume) or another checkpoint folder to train from the start",
            {k: b for k, _, b in diff},
        )
    if any(abs(a - b) > 1e-6 * max(1.0, abs(a)) for a, b in zip(ck["data_fingerprint"], run.fingerprint)):
        raise ParameterError(
            "data",
            f"the dataset the checkpoint {path} was trained on "
            "(fingerprint differs); use resume=False or another checkpoint_dir",
            len(run.images),
        )
    if ck["world_size"] != run.rt.world and ck["iteration"] != 0:
        raise ParameterError(
            "world_size", f"{ck['world_size']} to resume the mid-epoch checkpoint {path}", run.rt.world
        )


def _load_states(run, ck: dict) -> None:
    """Model, optimiser, probe and scaler states; a checkpoint of another model raises :class:`CheckpointError`
    (one line: which keys are missing, unexpected or of another shape, never torch's multi-line message)."""
    for what, module, sd in (("model", run.base, ck["model"]), ("probe", run.head, ck["probe"])):
        mismatch = state_dict_mismatch(module.state_dict(), sd) if module is not None and isinstance(sd, dict) else ""
        if mismatch:
            raise CheckpointError(
                run.ckpt,
                f"does not fit this {what} (written for a {ck.get('model_class')}, this is a "
                f"{type(run.base).__name__}: {mismatch})",
            )
    try:
        run.base.load_state_dict(ck["model"])
        run.opt.load_state_dict(ck["optimizer"])
        if run.head is not None:
            run.head.load_state_dict(ck["probe"])
            run.popt.load_state_dict(ck["probe_optimizer"])
    except (RuntimeError, ValueError, KeyError, TypeError, AttributeError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise CheckpointError(
            run.ckpt,
            f"does not fit this model (written for a {ck.get('model_class')}, "
            f"this is a {type(run.base).__name__}: {first})",
        ) from None
    if run.scaler is not None and ck.get("scaler"):
        run.scaler.load_state_dict(ck["scaler"])


def _resume(run, ck: dict) -> tuple[int, int, dict | None]:
    """Restore ``run`` from the checkpoint ``ck``; returns (epoch, iteration, partial-epoch accumulators)."""
    _check_resumable(run, ck)
    _load_states(run, ck)
    rt = run.rt
    exact = ck["world_size"] == rt.world and _set_rng_state(ck["ranks"][rt.rank]["rng"], run.mask_gen, run.aug_gen)
    if not exact:
        warnings.warn(
            f"resuming {run.ckpt} on a different device type or world size: training continues, but the "
            "random streams are re-seeded, so the run is not bit-identical to an uninterrupted one",
            stacklevel=3,
        )
    start_epoch, start_iter = int(ck["epoch"]), int(ck["iteration"])
    run.history = list(ck["history"])
    run.snapshots = dict(ck["snapshots"])
    if start_iter:
        run.probe_counts = torch.tensor(ck["ranks"][rt.rank]["probe_counts"], dtype=torch.float64, device=rt.device)
    return start_epoch, start_iter, ck["partial"]
