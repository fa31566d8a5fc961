"""Frozen-feature evaluation: feature extraction, linear probes and k-NN classification.

Choices made here (and why):

* :func:`extract_features` calls ``model.forward_features(imgs, pool=pool)`` (the shared model interface: the
  *unmasked* image, [CLS] after the final norm or the mean of the patch tokens) in eval mode, without gradients,
  in batches; the model's train/eval mode is restored afterwards. Plain callables ``f(imgs) -> (N, D)`` also work.
* :func:`linear_probe` has three methods:

  - ``"logreg"`` (default for small data, ``n_train <= 20000``): full-batch multinomial logistic regression
    (scikit-learn ``LogisticRegression``, L-BFGS, L2 penalty) on standardised features (``StandardScaler`` fit
    on the training features). The inverse regularisation ``C`` is either given or chosen on a held-out
    stratified validation split of the training set from a log-spaced grid (ties -> the smallest C, i.e. the
    strongest regularisation), then the model is refit on the whole training set. Deterministic and free of
    optimiser hyper-parameters, which is what one wants for small data sets and fair comparisons.
    ``blas_threads`` limits the BLAS thread pool (``threadpoolctl``, ``user_api="blas"``) during the fits and the
    accuracy predictions, restoring it afterwards: L-BFGS on small problems is 10-100x slower when several
    processes' BLAS threads compete for a few cores. It is off by default because it is *not* bit-neutral: the
    multi-threaded BLAS rounds differently in the last bits, and over the L-BFGS iterations this can move a
    borderline test prediction (measured: 3 of the 12 stored ``zhang_umae`` shapes probe accuracies differ by
    0.001-0.003 with one thread). :func:`maelab.experiments.pretrain_and_evaluate` uses one thread, as its stored
    results were computed.
  - ``"sgd"``: the official MAE probe head, ``BatchNorm1d(D, affine=False, eps=1e-6)`` + ``Linear(D, K)``
    (weight ~ truncated normal, std 0.01, bias 0), trained on the frozen features with cross-entropy, SGD with
    momentum 0.9 (plain SGD instead of the official LARS, which matters for the huge batches of ImageNet but
    not here), no weight decay, a per-iteration linear warm-up then half-cycle cosine schedule, shuffled
    mini-batches from a seeded generator. No data augmentation (features are extracted once).
  - ``"logreg_torch"`` (an option; the default stays ``"logreg"`` until the committed results are recomputed):
    the same model, standardisation, C grid, validation split and selection rule as ``"logreg"``, solved exactly
    (Newton's method with the exact Hessian, or whitened L-BFGS for many parameters; :mod:`maelab.logreg`) and
    warm-started along the C grid: >10x faster than scikit-learn at n = 10k (``benchmarks/probe_speed.py``),
    and converged where scikit-learn stops at its iteration cap.

* :func:`knn_accuracy` / :func:`knn_predict`: cosine similarity on L2-normalised features, the ``k`` most
  similar training examples vote. ``weighting="dino"`` (default) weighs each neighbour by ``exp(sim / T)``
  with ``T = 0.07`` and sums per class (Wu et al. 2018 InstDisc; Caron et al. 2021 DINO, k = 20);
  ``"majority"`` counts votes, ties going to the smallest class index (the same rule as scikit-learn's
  ``KNeighborsClassifier(weights="uniform")``).

Accuracies are fractions in [0, 1].
"""

from __future__ import annotations

import contextlib
import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from ._util import blas_limit, pbar, resolve_device
from ._validate import ParameterError, in_range, one_of, positive_int
from .options import DryRunLimits

__all__ = [
    "extract_features",
    "linear_probe",
    "ProbeResult",
    "knn_predict",
    "knn_accuracy",
    "probe",
    "LOGREG_MAX_TRAIN",
    "DEFAULT_CS",
]

#: ``method="auto"`` uses logistic regression up to this many training examples.
LOGREG_MAX_TRAIN = 20000
#: The logistic-regression C grid of :func:`linear_probe`, six values 1e-3 ... 1e2, log-spaced.
DEFAULT_CS = tuple(float(c) for c in np.logspace(-3, 2, 6))


def _shape(t) -> Any:
    return tuple(t.shape) if hasattr(t, "shape") else type(t).__name__


def _images_of(name: str, images) -> torch.Tensor:
    if hasattr(images, "images") and not isinstance(images, torch.Tensor):
        images = images.images
    if not isinstance(images, torch.Tensor) or images.ndim != 4 or images.shape[0] < 1:
        raise ParameterError(name, "a 4-D tensor (N, C, H, W) or a Dataset with .images", _shape(images))
    return images


def _model_device(model) -> torch.device:
    if isinstance(model, nn.Module):
        for t in model.parameters():
            return t.device
        for t in model.buffers():
            return t.device
    return torch.device("cpu")


@torch.no_grad()
def extract_features(
    model,
    images,
    pool: str = "cls",
    batch_size: int = 256,
    device: str | None = None,
    progress: bool | None = None,
    *,
    caps: DryRunLimits | None = None,
) -> torch.Tensor:
    """Frozen features of ``images`` (N, C, H, W) in [0, 1] (or a Dataset with ``.images``).

    Args:
        model: a module with ``forward_features(imgs, pool=...) -> (N, D)``, or any callable ``imgs -> (N, D)``
            (then ``pool`` is ignored).
        pool: ``"cls"`` ([CLS] token after the final norm) or ``"mean"`` (mean of the patch tokens).
        batch_size: images per forward pass.
        device: where to run; ``None`` = where the model already is; ``"auto"``/``"cpu"``/``"cuda"`` move the
            model there (it stays there).
        caps: a dry run's (:class:`maelab.options.DryRunLimits`): only the first ``eval_images`` images are
            computed, their rows repeated to the full ``(N, D)`` shape; None: a real run.
    Returns:
        float32 CPU tensor (N, D).
    """
    one_of("pool", pool, ("cls", "mean"))
    positive_int("batch_size", batch_size)
    images = _images_of("images", images)
    if not callable(model):
        raise ParameterError(
            "model", "a module with forward_features or a callable imgs -> (N, D)", type(model).__name__
        )
    dev = _model_device(model) if device is None else resolve_device(device)
    was_training = None
    if isinstance(model, nn.Module):
        was_training = model.training
        model.to(dev).eval()
    fn = (lambda x: model.forward_features(x, pool=pool)) if hasattr(model, "forward_features") else model
    out = []
    n_real = images.shape[0] if caps is None else min(images.shape[0], caps.eval_images)
    try:
        starts = range(0, n_real, batch_size)
        for s in pbar(starts, progress=progress, desc="features", leave=False):
            f = fn(images[s : min(s + batch_size, n_real)].to(dev, torch.float32))
            if not isinstance(f, torch.Tensor) or f.ndim != 2 or f.shape[0] != min(batch_size, n_real - s):
                raise ParameterError("model", "returning features of shape (batch, D)", _shape(f))
            out.append(f.detach().float().cpu())
    finally:
        if was_training is not None:
            model.train(was_training)
    feats = torch.cat(out)
    if n_real < images.shape[0]:  # dry run: the computed rows repeated to the real shape (no number is kept)
        feats = feats.repeat((images.shape[0] + n_real - 1) // n_real, 1)[: images.shape[0]]
    return feats


def _features_labels(fname: str, lname: str, feats, labels) -> tuple[torch.Tensor, torch.Tensor]:
    if isinstance(feats, np.ndarray):
        feats = torch.from_numpy(feats)
    if isinstance(labels, np.ndarray):
        labels = torch.from_numpy(labels)
    if not isinstance(feats, torch.Tensor) or feats.ndim != 2 or feats.shape[0] < 1:
        raise ParameterError(fname, "a 2-D tensor (n, d)", _shape(feats))
    if not torch.isfinite(feats).all():
        raise ParameterError(fname, "finite (no NaN/inf)", "non-finite values")
    if (
        not isinstance(labels, torch.Tensor)
        or labels.ndim != 1
        or labels.shape[0] != feats.shape[0]
        or labels.is_floating_point()
        or labels.dtype == torch.bool
    ):
        raise ParameterError(lname, f"an integer tensor of shape ({feats.shape[0]},)", _shape(labels))
    if labels.min() < 0:
        raise ParameterError(lname, "non-negative class indices", int(labels.min()))
    return feats.detach().cpu().float(), labels.detach().cpu().long()


@dataclass
class ProbeResult:
    """Result of :func:`linear_probe`. Accuracies are fractions in [0, 1]; ``test_acc`` is None without test data.

    ``method`` is ``"logreg"``, ``"logreg_torch"`` or ``"sgd"``; ``C`` the inverse regularisation used (logreg);
    ``val_acc`` maps each tried C to its validation accuracy (empty when C was given); ``history`` per-epoch dicts
    (sgd); ``classifier`` the fitted scikit-learn pipeline (logreg), :class:`maelab.logreg.TorchLogisticRegression`
    (logreg_torch) or the torch head (sgd, on CPU, eval mode).
    """

    method: str
    train_acc: float
    test_acc: float | None
    num_classes: int
    C: float | None = None
    val_acc: dict[float, float] = field(default_factory=dict)
    history: list[dict] = field(default_factory=list)
    classifier: Any = None

    def predict(self, features) -> torch.Tensor:
        """Class predictions (int64, (n,)) for features (n, d)."""
        if isinstance(features, np.ndarray):
            features = torch.from_numpy(features)
        if not isinstance(features, torch.Tensor) or features.ndim != 2:
            raise ParameterError("features", "a 2-D tensor (n, d)", _shape(features))
        if self.method in ("logreg", "logreg_torch"):
            return torch.from_numpy(self.classifier.predict(features.detach().cpu().double().numpy())).long()
        with torch.no_grad():
            return self.classifier(features.detach().cpu().float()).argmax(dim=1)


def _fit_logreg(x: np.ndarray, y: np.ndarray, C: float, max_iter: int):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    clf = make_pipeline(StandardScaler(), LogisticRegression(C=C, solver="lbfgs", max_iter=max_iter))
    return clf.fit(x, y)


def _logreg_probe(xtr, ytr, C, Cs, val_fraction, seed, max_iter, fit=None) -> tuple[Any, float, dict]:
    fit = fit or _fit_logreg  # method "logreg_torch": a warm-started maelab.logreg.LogRegPath, same protocol
    x, y = xtr.double().numpy(), ytr.numpy()
    val_acc: dict[float, float] = {}
    if C is None:
        from sklearn.model_selection import train_test_split

        counts = np.bincount(y)
        strat = y if counts[counts > 0].min() >= 2 else None
        n_val = max(1, int(round(val_fraction * len(y))))
        if len(y) - n_val < 2:
            raise ParameterError("train_features", "at least 3 examples to choose C on a validation split", len(y))
        if strat is not None:
            n_val = max(n_val, int((counts > 0).sum()))  # stratification needs one per class
            if len(y) - n_val < int((counts > 0).sum()):
                strat = None
        xa, xb, ya, yb = train_test_split(x, y, test_size=n_val, random_state=seed, stratify=strat)
        if len(np.unique(ya)) < 2:
            raise ParameterError(
                "train_labels", "at least 2 classes in the C-selection training split", int(len(np.unique(ya)))
            )
        for c in Cs:
            val_acc[float(c)] = float((fit(xa, ya, float(c), max_iter).predict(xb) == yb).mean())
        best = max(val_acc.values())
        C = min(c for c, a in val_acc.items() if a == best)
    clf = fit(x, y, float(C), max_iter)
    return clf, float(C), val_acc


def _lr_at(it: float, total: float, warmup: float, lr: float) -> float:
    """Linear warm-up to ``lr`` then half-cycle cosine to 0 (per iteration, as the official lr_sched)."""
    if it < warmup:
        return lr * it / warmup
    return lr * 0.5 * (1.0 + math.cos(math.pi * (it - warmup) / max(total - warmup, 1e-12)))


def _sgd_probe(
    xtr, ytr, num_classes, *, epochs, batch_size, lr, weight_decay, warmup_epochs, seed, device, progress
) -> tuple[nn.Module, list[dict]]:
    dev = resolve_device(device)
    g = torch.Generator().manual_seed(seed)
    d = xtr.shape[1]
    head = nn.Sequential(nn.BatchNorm1d(d, affine=False, eps=1e-6), nn.Linear(d, num_classes))
    nn.init.trunc_normal_(head[1].weight, std=0.01, generator=g)
    nn.init.zeros_(head[1].bias)
    head.to(dev)
    opt = torch.optim.SGD(head.parameters(), lr=lr, momentum=0.9, weight_decay=weight_decay)
    n = xtr.shape[0]
    bs = min(batch_size, n)
    steps = max(1, n // bs)  # drop the last incomplete batch (BatchNorm needs > 1 example; official: drop_last)
    x, y = xtr.to(dev), ytr.to(dev)
    history = []
    for epoch in pbar(range(epochs), progress=progress, desc="linear probe", leave=False):
        head.train()
        perm = torch.randperm(n, generator=g).to(dev)
        tot_loss, correct, seen = 0.0, 0, 0
        for s in range(steps):
            cur_lr = _lr_at(epoch + s / steps, epochs, warmup_epochs, lr)
            for group in opt.param_groups:
                group["lr"] = cur_lr
            idx = perm[s * bs : (s + 1) * bs]
            logits = head(x[idx])
            loss = nn.functional.cross_entropy(logits, y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            tot_loss += float(loss.detach()) * len(idx)
            correct += int((logits.argmax(1) == y[idx]).sum())
            seen += len(idx)
        history.append({"epoch": epoch, "loss": tot_loss / seen, "train_acc_running": correct / seen, "lr": cur_lr})
    head.eval()
    return head.cpu(), history


def linear_probe(
    train_features,
    train_labels,
    test_features=None,
    test_labels=None,
    *,
    method: str = "auto",
    C: float | None = None,
    Cs=DEFAULT_CS,
    val_fraction: float = 0.2,
    max_iter: int = 1000,
    epochs: int = 30,
    batch_size: int = 256,
    lr: float = 0.1,
    weight_decay: float = 0.0,
    warmup_epochs: float | None = None,
    num_classes: int | None = None,
    seed: int = 0,
    device: str = "cpu",
    progress: bool | None = None,
    blas_threads: int | None = None,
    caps: DryRunLimits | None = None,
) -> ProbeResult:
    """Linear classifier on frozen features; see the module docstring for the two methods.

    Args:
        train_features, train_labels: (n, d) features and (n,) int64 class indices (test_* likewise, optional).
        method: ``"auto"`` (``"logreg"`` if n_train <= ``LOGREG_MAX_TRAIN`` else ``"sgd"``), ``"logreg"``, ``"sgd"``,
            or ``"logreg_torch"``: the same logistic regression, C grid and validation rule as ``"logreg"``,
            solved exactly and much faster in torch, warm-started along the C grid (Newton's method, or a whitened
            L-BFGS for many parameters: :mod:`maelab.logreg`).
        C: logreg inverse regularisation; ``None`` = choose from ``Cs`` on a ``val_fraction`` validation split
            (stratified when every class has >= 2 examples; split seeded by ``seed``).
        max_iter: L-BFGS iterations.
        epochs, batch_size, lr, weight_decay, warmup_epochs: sgd settings; ``lr`` is the absolute peak learning
            rate, ``warmup_epochs`` defaults to 10% of ``epochs`` (official: 10 of 90).
        num_classes: defaults to 1 + the largest label seen.
        seed: seeds the validation split (logreg) or the head initialisation and shuffling (sgd).
        device: where the sgd head trains and ``logreg_torch`` fits (float64); scikit-learn's ``logreg``: the CPU.
        blas_threads: logreg only: BLAS threads during the fits and predictions (``threadpoolctl``, restored
            afterwards; 1 avoids oversubscription on a busy machine but may change the last bits, see the module
            docstring); None leaves the thread pool alone. Ignored by sgd (torch).
        caps: a dry run's (:class:`maelab.options.DryRunLimits`): ``probe_examples`` evenly spaced training and
            test examples, ``probe_iters`` solver iterations (sgd: ``train_steps`` epochs), the first
            ``probe_grid`` values of ``Cs``, one BLAS thread; None: a real run.
    """
    one_of("method", method, ("auto", "logreg", "logreg_torch", "sgd"))
    if blas_threads is not None:
        positive_int("blas_threads", blas_threads)
    xtr, ytr = _features_labels("train_features", "train_labels", train_features, train_labels)
    has_test = test_features is not None or test_labels is not None
    if has_test:
        xte, yte = _features_labels("test_features", "test_labels", test_features, test_labels)
        if xte.shape[1] != xtr.shape[1]:
            raise ParameterError("test_features", f"width {xtr.shape[1]} like train_features", tuple(xte.shape))
    dry = caps
    if dry is not None:  # dry run: a few examples, a few solver iterations (the code path, not the accuracy)
        # evenly spaced, not the first ones: a split stored class by class (cifar_dogcat) still gives >= 2 classes
        sel = torch.linspace(0, len(ytr) - 1, min(len(ytr), dry.probe_examples)).round().long()
        xtr, ytr = xtr[sel], ytr[sel]
        if has_test:
            sel = torch.linspace(0, len(yte) - 1, min(len(yte), dry.probe_examples)).round().long()
            xte, yte = xte[sel], yte[sel]
        max_iter, epochs, blas_threads = min(max_iter, dry.probe_iters), min(epochs, dry.train_steps), 1
        Cs = tuple(Cs)[: dry.probe_grid]
    if len(torch.unique(ytr)) < 2:
        raise ParameterError("train_labels", "at least 2 distinct classes", int(len(torch.unique(ytr))))
    max_label = int(ytr.max()) if not has_test else max(int(ytr.max()), int(yte.max()))
    if num_classes is None:
        num_classes = max_label + 1
    positive_int("num_classes", num_classes, minimum=max_label + 1)
    if method == "auto":
        method = "logreg" if xtr.shape[0] <= LOGREG_MAX_TRAIN else "sgd"
    result = ProbeResult(method=method, train_acc=float("nan"), test_acc=None, num_classes=num_classes)
    limit = blas_limit(blas_threads) if method == "logreg" else contextlib.nullcontext()
    with limit, warnings.catch_warnings():
        if dry is not None:  # a dry run's capped solver does not converge, by design
            from sklearn.exceptions import ConvergenceWarning

            warnings.simplefilter("ignore", ConvergenceWarning)
        _fit_probe(
            result,
            xtr,
            ytr,
            xte if has_test else None,
            yte if has_test else None,
            C=C,
            Cs=Cs,
            val_fraction=val_fraction,
            max_iter=max_iter,
            epochs=epochs,
            batch_size=batch_size,
            lr=lr,
            weight_decay=weight_decay,
            warmup_epochs=warmup_epochs,
            seed=seed,
            device=device,
            progress=progress,
        )
    return result


def _logreg_torch_fit(device):
    """The ``fit(x, y, C, max_iter)`` of ``method="logreg_torch"`` on ``device``: one warm-started path per probe."""
    from .logreg import LogRegPath

    return LogRegPath(device=resolve_device(device) if isinstance(device, str) else device)


def _fit_probe(
    result: ProbeResult,
    xtr,
    ytr,
    xte,
    yte,
    *,
    C,
    Cs,
    val_fraction,
    max_iter,
    epochs,
    batch_size,
    lr,
    weight_decay,
    warmup_epochs,
    seed,
    device,
    progress,
) -> None:
    """Fit ``result.method``'s classifier and fill ``result`` (classifier, C, val_acc or history, accuracies)."""
    method, num_classes = result.method, result.num_classes
    if method in ("logreg", "logreg_torch"):
        if C is not None:
            C = in_range("C", C, 0.0, None, low_open=True)
        else:
            Cs = tuple(Cs)
            if not Cs:
                raise ParameterError("Cs", "a non-empty sequence of positive numbers", Cs)
            for c in Cs:
                in_range("Cs", c, 0.0, None, low_open=True)
            in_range("val_fraction", val_fraction, 0.0, 1.0, low_open=True, high_open=True)
        positive_int("max_iter", max_iter)
        fit = _logreg_torch_fit(device) if method == "logreg_torch" else None
        clf, result.C, result.val_acc = _logreg_probe(xtr, ytr, C, Cs, val_fraction, seed, max_iter, fit)
        result.classifier = clf
    else:
        positive_int("epochs", epochs)
        positive_int("batch_size", batch_size, minimum=2)
        in_range("lr", lr, 0.0, None, low_open=True)
        in_range("weight_decay", weight_decay, 0.0, None)
        if warmup_epochs is None:
            warmup_epochs = 0.1 * epochs
        in_range("warmup_epochs", warmup_epochs, 0.0, epochs, high_open=True)
        if xtr.shape[0] < 2:
            raise ParameterError("train_features", "at least 2 examples for the BatchNorm head", xtr.shape[0])
        head, result.history = _sgd_probe(
            xtr,
            ytr,
            num_classes,
            epochs=epochs,
            batch_size=batch_size,
            lr=lr,
            weight_decay=weight_decay,
            warmup_epochs=float(warmup_epochs),
            seed=seed,
            device=device,
            progress=progress,
        )
        result.classifier = head
    result.train_acc = float((result.predict(xtr) == ytr).float().mean())
    if xte is not None:
        result.test_acc = float((result.predict(xte) == yte).float().mean())


# ----------------------------------------------------------------------------------------------------------------
# k-NN
# ----------------------------------------------------------------------------------------------------------------
@torch.no_grad()
def knn_predict(
    train_features,
    train_labels,
    test_features,
    *,
    k: int = 20,
    weighting: str = "dino",
    temperature: float = 0.07,
    num_classes: int | None = None,
    batch_size: int = 256,
    caps: DryRunLimits | None = None,
) -> torch.Tensor:
    """k-NN class predictions (int64, (n_test,)) with cosine similarity; see the module docstring.

    ``weighting``: ``"dino"`` (weights ``exp(cos / temperature)`` summed per class) or ``"majority"`` (plain
    votes, ties -> smallest class index). ``batch_size`` test examples are compared at a time. ``caps``: a dry
    run's (:class:`maelab.options.DryRunLimits`): the first ``max(probe_examples, k)`` training examples (every
    test example is still predicted); None: a real run.
    """
    one_of("weighting", weighting, ("dino", "majority"))
    xtr, ytr = _features_labels("train_features", "train_labels", train_features, train_labels)
    if isinstance(test_features, np.ndarray):
        test_features = torch.from_numpy(test_features)
    if not isinstance(test_features, torch.Tensor) or test_features.ndim != 2 or test_features.shape[1] != xtr.shape[1]:
        raise ParameterError("test_features", f"a 2-D tensor (n, {xtr.shape[1]})", _shape(test_features))
    positive_int("k", k)
    if k > xtr.shape[0]:
        raise ParameterError("k", f"at most the number of training examples ({xtr.shape[0]})", k)
    temperature = in_range("temperature", temperature, 0.0, None, low_open=True)
    positive_int("batch_size", batch_size)
    if num_classes is None:
        num_classes = int(ytr.max()) + 1
    positive_int("num_classes", num_classes, minimum=int(ytr.max()) + 1)
    if caps is not None:  # dry run: the first training examples (at least k); every test example is still predicted
        xtr, ytr = xtr[: max(caps.probe_examples, k)], ytr[: max(caps.probe_examples, k)]
    xtr = nn.functional.normalize(xtr.double(), dim=1)
    xte = nn.functional.normalize(test_features.detach().cpu().double(), dim=1)
    preds = []
    for s in range(0, xte.shape[0], batch_size):
        sim = xte[s : s + batch_size] @ xtr.T  # (b, n_train)
        top_sim, top_idx = sim.topk(k, dim=1)  # descending similarity
        top_lab = ytr[top_idx]
        w = torch.ones_like(top_sim) if weighting == "majority" else torch.exp(top_sim / temperature)
        votes = torch.zeros(top_sim.shape[0], num_classes, dtype=torch.float64).scatter_add_(1, top_lab, w)
        preds.append(votes.argmax(dim=1))  # first maximum = smallest class index on ties
    return torch.cat(preds)


def knn_accuracy(train_features, train_labels, test_features, test_labels, **kwargs) -> float:
    """Fraction of test examples whose :func:`knn_predict` class equals ``test_labels`` (``kwargs``: those of
    :func:`knn_predict`, ``caps`` among them)."""
    pred = knn_predict(train_features, train_labels, test_features, **kwargs)
    _, yte = _features_labels("test_features", "test_labels", test_features, test_labels)
    return float((pred == yte).double().mean())


def _split(name: str, data) -> tuple[torch.Tensor, torch.Tensor]:
    if isinstance(data, (tuple, list)) and len(data) == 2:
        images, labels = data
    elif hasattr(data, "images") and hasattr(data, "labels"):
        images, labels = data.images, data.labels
    else:
        raise ParameterError(name, "a Dataset with images and labels or an (images, labels) pair", type(data).__name__)
    if labels is None:
        raise ParameterError(name, "labelled data", "labels=None")
    return _images_of(name, images), labels


def probe(
    model,
    train,
    test,
    *,
    pool: str = "cls",
    method: str = "auto",
    k: int = 20,
    weighting: str = "dino",
    batch_size: int = 256,
    device: str | None = None,
    seed: int = 0,
    progress: bool | None = None,
    caps: DryRunLimits | None = None,
    **probe_kwargs,
) -> dict[str, Any]:
    """Extract features of ``train`` and ``test`` (Datasets or (images, labels) pairs) and run a linear probe
    and k-NN. Returns ``{"linear_train_acc", "linear_test_acc", "linear_method", "knn_acc", "k", "pool",
    "feature_dim"}``; extra keyword arguments go to :func:`linear_probe`; ``caps``: a dry run's, to each step."""
    xtr_img, ytr = _split("train", train)
    xte_img, yte = _split("test", test)
    opts = {"pool": pool, "batch_size": batch_size, "device": device, "progress": progress, "caps": caps}
    ftr = extract_features(model, xtr_img, **opts)
    fte = extract_features(model, xte_img, **opts)
    res = linear_probe(ftr, ytr, fte, yte, method=method, seed=seed, progress=progress, caps=caps, **probe_kwargs)
    knn = knn_accuracy(ftr, ytr, fte, yte, k=k, weighting=weighting, caps=caps)
    return {
        "linear_train_acc": res.train_acc,
        "linear_test_acc": res.test_acc,
        "linear_method": res.method,
        "knn_acc": knn,
        "k": k,
        "pool": pool,
        "feature_dim": int(ftr.shape[1]),
    }
