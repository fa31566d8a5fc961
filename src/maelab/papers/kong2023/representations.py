"""What a frozen MAE encoder holds, measured against the ``shapes`` world's known latents (Kong et al. Sec. 3).

* :func:`factor_targets` turns ``Dataset.latents`` into decoding targets, one per generative factor, grouped by
  level (``shapes.LATENT_LEVELS``): classes (``class``, ``texture_class``) and continuous vectors; angles are
  encoded on the circle of their symmetry (rotation as (cos, sin); texture orientation, defined modulo pi, as
  (cos 2o, sin 2o); phase as (cos, sin); the background gradient (a, d) as (a cos d, a sin d)). A rotation of a
  symmetric silhouette (disc, ring, square...) is partly invisible, so its R² is bounded below 1 by the data.
* :func:`decode_factors`: linear (classes: :func:`maelab.evaluate.linear_probe`, accuracy; vectors: ridge
  regression with the penalty chosen by efficient leave-one-out, R² averaged over the vector's dimensions) and
  k-NN (classes: :func:`maelab.evaluate.knn_accuracy`; vectors: scikit-learn ``KNeighborsRegressor`` with cosine
  distance, R²) on standardised features.
* :func:`shape_bias`: Geirhos et al. (2019): among cue-conflict predictions that equal the shape class or the
  texture class, the fraction equal to the shape class.
* :func:`cls_attention_maps` / :func:`silhouette_mass`: the last layer's [CLS] attention averaged over heads,
  placed on the token grid (:func:`maelab.attention.cls_attention`), and the fraction of it that falls on the
  object: sum_p a_p f_p / sum_p a_p with f_p the object coverage of token p (the silhouette averaged over the
  patch). Uniform attention scores the mean coverage (returned as ``chance``).
* :func:`token_silhouette_probe`: the Table-3 analogue: a logistic regression on single patch tokens predicting
  object (coverage > threshold) vs background; accuracy and balanced accuracy.

The precondition of every trained-model claim is a :class:`maelab.claims.LearnedCheck` over every seed
(:func:`maelab.papers.kong2023.evidence.learned_check`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from ... import attention, evaluate
from ..._validate import ParameterError, in_range, one_of, positive_int
from ...data import shapes as _shapes
from ...options import DryRunLimits, cap

__all__ = [
    "CLASS_FACTORS",
    "factor_targets",
    "decode_factors",
    "shape_bias",
    "token_object_fraction",
    "cls_attention_maps",
    "silhouette_mass",
    "token_silhouette_probe",
    "patch_tokens",
    "LOW_LEVEL_CONTINUOUS",
    "measure_encoder",
    "ink_silhouette_row",
    "feature_silhouette",
]

#: the continuous low-level factors (``shapes.LATENT_LEVELS["low"]`` without the texture class, a class) whose
#: mean linear R² the ``kong.latent_low_ext`` claim compares
LOW_LEVEL_CONTINUOUS = tuple(f for f in _shapes.LATENT_LEVELS["low"] if f != "texture_class")

CLASS_FACTORS = ("class", "texture_class")


def _np(t) -> np.ndarray:
    return t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)


def factor_targets(latents: dict[str, Any]) -> dict[str, np.ndarray]:
    """Decoding targets from ``shapes`` latents: int arrays (N,) for classes, float arrays (N, d) otherwise."""
    if not isinstance(latents, dict) or "class" not in latents:
        raise ParameterError("latents", "a shapes Dataset.latents dict", type(latents).__name__)
    lt = {k: _np(v) for k, v in latents.items() if k != "mask"}
    out: dict[str, np.ndarray] = {k: lt[k].astype(np.int64) for k in CLASS_FACTORS}
    out["position"] = np.stack([lt["x"], lt["y"]], 1)
    out["scale"] = lt["scale"][:, None]
    out["rotation"] = np.stack([np.cos(lt["rotation"]), np.sin(lt["rotation"])], 1)
    out["hue"] = lt["hue"][:, None]
    out["colour"] = lt["colour"]
    out["texture_freq"] = lt["texture_freq"][:, None]
    o = lt["texture_orientation"]
    out["texture_orientation"] = np.stack([np.cos(2 * o), np.sin(2 * o)], 1)
    out["texture_phase"] = np.stack([np.cos(lt["texture_phase"]), np.sin(lt["texture_phase"])], 1)
    out["texture_contrast"] = lt["texture_contrast"][:, None]
    out["background"] = lt["background"]
    a, d = lt["background_gradient"][:, 0], lt["background_gradient"][:, 1]
    out["background_gradient"] = np.stack([a * np.cos(d), a * np.sin(d)], 1)
    out["noise_std"] = lt["noise_std"][:, None]
    return {k: v.astype(np.float64) if v.dtype.kind == "f" else v for k, v in out.items()}


def decode_factors(
    train_features,
    train_targets: dict[str, np.ndarray],
    test_features,
    test_targets: dict[str, np.ndarray],
    *,
    method: str = "linear",
    k: int = 20,
    seed: int = 0,
    probe_method: str = "logreg",
    caps: DryRunLimits | None = None,
) -> dict[str, float]:
    """Decode every factor of :func:`factor_targets` from frozen features; accuracy for classes, R² otherwise.

    ``probe_method``: the :func:`maelab.evaluate.linear_probe` solver of the linear class decoders (``"logreg"``
    or ``"logreg_torch"``: the same regularisation grid and validation rule, solved in torch, much faster). A dry
    run (``caps``: its :class:`maelab.options.DryRunLimits`) decodes from the first ``max(probe_examples, k)``
    training and test examples."""
    from sklearn.linear_model import RidgeCV
    from sklearn.metrics import r2_score
    from sklearn.neighbors import KNeighborsRegressor
    from sklearn.preprocessing import StandardScaler

    one_of("method", method, ("linear", "knn"))
    one_of("probe_method", probe_method, ("logreg", "logreg_torch"))
    positive_int("k", k)
    xtr, xte = _np(train_features).astype(np.float64), _np(test_features).astype(np.float64)
    if xtr.ndim != 2 or xte.ndim != 2 or xtr.shape[1] != xte.shape[1]:
        raise ParameterError("test_features", f"2-D features of width {xtr.shape[-1]}", xte.shape)
    if set(train_targets) != set(test_targets):
        raise ParameterError("test_targets", "the same factors as train_targets", sorted(test_targets))
    if caps is not None:  # a dry run: the first examples (as linear_probe and knn_accuracy take them)
        n = max(caps.probe_examples, k)
        xtr, xte = xtr[:n], xte[:n]
        train_targets = {f: np.asarray(v)[:n] for f, v in train_targets.items()}
        test_targets = {f: np.asarray(v)[:n] for f, v in test_targets.items()}
    scaler = StandardScaler().fit(xtr)
    ztr, zte = scaler.transform(xtr), scaler.transform(xte)
    out = {}
    for name, ytr in train_targets.items():
        yte = test_targets[name]
        if name in CLASS_FACTORS:
            if method == "linear":
                out[name] = float(
                    evaluate.linear_probe(
                        torch.from_numpy(ztr).float(),
                        torch.from_numpy(ytr),
                        torch.from_numpy(zte).float(),
                        torch.from_numpy(yte),
                        method=probe_method,
                        seed=seed,
                        caps=caps,
                    ).test_acc
                )
            else:
                out[name] = evaluate.knn_accuracy(
                    torch.from_numpy(ztr),
                    torch.from_numpy(ytr),
                    torch.from_numpy(zte),
                    torch.from_numpy(yte),
                    k=k,
                    caps=caps,
                )
            continue
        if method == "linear":
            reg = RidgeCV(alphas=np.logspace(-3, 4, 15)).fit(ztr, ytr)
        else:
            reg = KNeighborsRegressor(n_neighbors=k, metric="cosine").fit(ztr, ytr)
        out[name] = float(r2_score(yte, reg.predict(zte), multioutput="uniform_average"))
    return out


def shape_bias(predictions, shape_labels, texture_labels) -> dict[str, float]:
    """Geirhos et al.'s shape bias on cue-conflict images: shape decisions / (shape + texture decisions).

    Returns ``shape_bias`` (NaN if no prediction matches either cue), ``shape_fraction`` and ``texture_fraction``
    (of all images) and ``n``. Images whose shape and texture class agree are refused (not cue-conflict).
    """
    p, s, t = (_np(a).astype(np.int64).ravel() for a in (predictions, shape_labels, texture_labels))
    if not (p.shape == s.shape == t.shape) or p.size == 0:
        raise ParameterError("predictions", "non-empty and as long as shape_labels and texture_labels", p.shape)
    if np.any(s == t):
        raise ParameterError(
            "texture_labels", "different from shape_labels everywhere (cue-conflict images)", int(np.sum(s == t))
        )
    n_s, n_t = int(np.sum(p == s)), int(np.sum(p == t))
    return {
        "shape_bias": n_s / (n_s + n_t) if n_s + n_t else math.nan,
        "shape_fraction": n_s / p.size,
        "texture_fraction": n_t / p.size,
        "n": int(p.size),
    }


def token_object_fraction(silhouette: torch.Tensor, patch_size: int) -> torch.Tensor:
    """(N, 1, H, W) coverage in [0, 1] -> (N, gh, gw) mean coverage of each patch."""
    if not isinstance(silhouette, torch.Tensor) or silhouette.ndim != 4 or silhouette.shape[1] != 1:
        raise ParameterError("silhouette", "a tensor (N, 1, H, W)", getattr(silhouette, "shape", silhouette))
    positive_int("patch_size", patch_size)
    if silhouette.shape[-1] % patch_size or silhouette.shape[-2] % patch_size:
        raise ParameterError("patch_size", f"a divisor of the image size {tuple(silhouette.shape[-2:])}", patch_size)
    return torch.nn.functional.avg_pool2d(silhouette.float(), patch_size)[:, 0]


@torch.no_grad()
def cls_attention_maps(model, images: torch.Tensor, layer: int = -1, batch_size: int = 128) -> torch.Tensor:
    """[CLS] attention of encoder block ``layer`` on unmasked ``images``, averaged over heads: (N, gh, gw)."""
    was = model.training
    model.eval()
    dev = next(model.parameters()).device
    maps = []
    try:
        for s in range(0, images.shape[0], batch_size):
            enc = model.encode(images[s : s + batch_size].to(dev), mask_ratio=0.0, return_attn=True)
            a = attention.cls_attention(enc["attn"][layer], model.grid_size, ids_restore=enc["ids_restore"])
            maps.append(a.mean(dim=1).cpu())
    finally:
        model.train(was)
    return torch.cat(maps)


def silhouette_mass(attention: torch.Tensor, object_fraction: torch.Tensor) -> dict[str, Any]:
    """Fraction of attention on the object, per image: sum a f / sum a over tokens (NaN tokens ignored).

    ``attention`` and ``object_fraction``: (N, gh, gw), attention non-negative. Returns ``mass`` (N,) and
    ``chance`` (N,): the mean object fraction, what uniform attention would score.
    """
    if attention.shape != object_fraction.shape or attention.ndim != 3:
        raise ParameterError(
            "attention",
            f"a (N, gh, gw) tensor shaped like object_fraction {tuple(object_fraction.shape)}",
            tuple(attention.shape),
        )
    a = attention.double()
    ok = torch.isfinite(a)
    if torch.any(a[ok] < 0):
        raise ParameterError("attention", "non-negative", "negative entries")
    a = torch.where(ok, a, torch.zeros_like(a))
    f = object_fraction.double()
    mass = (a * f).sum(dim=(1, 2)) / a.sum(dim=(1, 2))
    chance = (f * ok).sum(dim=(1, 2)) / ok.sum(dim=(1, 2))
    return {"mass": mass, "chance": chance}


def token_silhouette_probe(
    train_tokens,
    train_fraction,
    test_tokens,
    test_fraction,
    *,
    threshold: float = 0.5,
    max_train: int = 20000,
    seed: int = 0,
) -> dict[str, float]:
    """Logistic regression on single patch tokens: object (coverage > ``threshold``) vs background.

    ``*_tokens``: (N, L, D) patch tokens (no [CLS]); ``*_fraction``: (N, L) or (N, gh, gw) coverage. At most
    ``max_train`` training tokens are used (a seeded subsample). Returns ``accuracy``, ``balanced_accuracy``,
    ``majority`` (accuracy of always predicting the more common training label) and ``object_rate``.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.preprocessing import StandardScaler

    in_range("threshold", threshold, 0.0, 1.0, low_open=True, high_open=True)
    positive_int("max_train", max_train)
    xtr, xte = _np(train_tokens).astype(np.float64), _np(test_tokens).astype(np.float64)
    ftr, fte = _np(train_fraction).reshape(xtr.shape[0], -1), _np(test_fraction).reshape(xte.shape[0], -1)
    if xtr.ndim != 3 or ftr.shape != xtr.shape[:2] or xte.ndim != 3 or fte.shape != xte.shape[:2]:
        raise ParameterError("train_fraction", "one coverage value per token of the (N, L, D) tokens", ftr.shape)
    xtr, ytr = xtr.reshape(-1, xtr.shape[-1]), (ftr.ravel() > threshold).astype(int)
    xte, yte = xte.reshape(-1, xte.shape[-1]), (fte.ravel() > threshold).astype(int)
    if len(np.unique(ytr)) < 2:
        raise ParameterError("train_fraction", "tokens of both kinds (object and background)", "one kind only")
    if xtr.shape[0] > max_train:
        keep = np.random.default_rng(seed).choice(xtr.shape[0], max_train, replace=False)
        xtr, ytr = xtr[keep], ytr[keep]
    sc = StandardScaler().fit(xtr)
    clf = LogisticRegression(max_iter=2000).fit(sc.transform(xtr), ytr)
    pred = clf.predict(sc.transform(xte))
    major = int(np.mean(ytr) >= 0.5)
    return {
        "accuracy": float(np.mean(pred == yte)),
        "balanced_accuracy": float(balanced_accuracy_score(yte, pred)),
        "majority": float(np.mean(yte == major)),
        "object_rate": float(np.mean(yte)),
    }


@torch.no_grad()
def patch_tokens(model, images: torch.Tensor, batch_size: int = 256) -> torch.Tensor:
    """The encoder's patch tokens of unmasked ``images`` after the final norm, in raster order: (N, L, D) on CPU."""
    was = model.training
    model.eval()
    dev = next(model.parameters()).device
    out = []
    try:
        for s in range(0, images.shape[0], batch_size):
            out.append(model.encode(images[s : s + batch_size].to(dev), mask_ratio=0.0)["latent"][:, 1:].cpu())
    finally:
        model.train(was)
    return torch.cat(out)


def measure_encoder(
    model,
    probe: dict[str, Any],
    *,
    pool: str = "cls",
    knn_k: int = 20,
    token_threshold: float = 0.5,
    n_token_images: int = 500,
    n_attention: int = 500,
    seed: int = 0,
    caps: DryRunLimits | None = None,
) -> tuple[dict[str, float], torch.Tensor]:
    """Every measurement of ``kong_representations`` on one frozen encoder; returns (row, test features).

    ``probe``: ``train`` and ``test`` (``shapes`` Datasets with latents and silhouettes), ``shifts`` ({name:
    Dataset}, the test scenes under each shift) and ``cue`` (cue-conflict images). Row keys: ``class_acc`` (the
    class probe, ``logreg_torch`` on standardised ``pool`` features), ``shift_<name>`` (that probe on each shift),
    ``shape_bias`` (its decisions on the cue-conflict images), ``lin_<factor>`` / ``knn_<factor>`` (every factor of
    :func:`factor_targets`; ``lin_class`` is ``class_acc``), ``attn_mass`` / ``attn_chance`` (mean over the first
    ``n_attention`` test images of :func:`silhouette_mass`), ``token_acc`` / ``token_balanced_acc`` /
    ``token_majority`` (:func:`token_silhouette_probe` on the first ``n_token_images`` train / test images).
    ``caps``: a dry run's (:class:`maelab.options.DryRunLimits`), to every probe and image count.
    """
    tr, te = probe["train"], probe["test"]

    def feats(x):
        return evaluate.extract_features(model, x, pool=pool, progress=False, caps=caps)

    ftr, fte = feats(tr.images), feats(te.images)
    lp = evaluate.linear_probe(ftr, tr.labels, fte, te.labels, method="logreg_torch", seed=seed, caps=caps)
    row: dict[str, float] = {"class_acc": float(lp.test_acc)}
    for name, ds in probe["shifts"].items():
        row[f"shift_{name}"] = float((lp.predict(feats(ds.images)) == ds.labels.cpu()).double().mean())
    cue = probe["cue"]
    row["shape_bias"] = shape_bias(lp.predict(feats(cue.images)), cue.labels, cue.latents["texture_class"])[
        "shape_bias"
    ]
    ytr, yte = factor_targets(tr.latents), factor_targets(te.latents)
    no_class = [k for k in ytr if k != "class"]
    lin = decode_factors(
        ftr,
        {k: ytr[k] for k in no_class},
        fte,
        {k: yte[k] for k in no_class},
        seed=seed,
        probe_method="logreg_torch",
        caps=caps,
    )
    row.update({f"lin_{k}": v for k, v in lin.items()}, lin_class=row["class_acc"])
    knn = decode_factors(ftr, ytr, fte, yte, method="knn", k=knn_k, caps=caps)
    row.update({f"knn_{k}": v for k, v in knn.items()})
    patch = model.patch_size
    n_attention = cap(n_attention, caps, "eval_images")  # a dry run: a few images
    att = silhouette_mass(
        cls_attention_maps(model, te.images[:n_attention]),
        token_object_fraction(te.latents["mask"][:n_attention], patch),
    )
    row["attn_mass"], row["attn_chance"] = float(att["mass"].mean()), float(att["chance"].mean())
    n = cap(n_token_images, caps, "eval_images")
    tok = token_silhouette_probe(
        patch_tokens(model, tr.images[:n]),
        token_object_fraction(tr.latents["mask"][:n], patch),
        patch_tokens(model, te.images[:n]),
        token_object_fraction(te.latents["mask"][:n], patch),
        threshold=token_threshold,
        seed=seed,
    )
    row.update(token_acc=tok["accuracy"], token_balanced_acc=tok["balanced_accuracy"], token_majority=tok["majority"])
    return row, fte


def ink_silhouette_row(
    model,
    train_images: torch.Tensor,
    test_images: torch.Tensor,
    *,
    ink: float = 0.5,
    n_attention: int = 1000,
    n_token_images: int = 1000,
    token_threshold: float = 0.5,
    seed: int = 0,
    caps: DryRunLimits | None = None,
) -> dict[str, float]:
    """Figs 6-7 and the Table-3 analogue on images without known latents (the shared zoo's MNIST digits): the
    object's silhouette is its ink, the pixels brighter than ``ink`` (all channels averaged). Keys: ``attn_mass``
    / ``attn_chance`` (mean over the first ``n_attention`` test images of :func:`silhouette_mass` of the
    last-layer [CLS] attention), ``token_acc`` / ``token_balanced_acc`` / ``token_majority`` / ``object_rate``
    (:func:`token_silhouette_probe` on the first ``n_token_images`` train / test images; NaN when the training
    tokens are all ink or all background, e.g. on other images than digits). A dry run (``caps``) caps the images
    (:attr:`maelab.options.DryRunLimits.eval_images`)."""
    in_range("ink", ink, 0.0, 1.0, low_open=True, high_open=True)

    def sil(x):
        return (x.mean(dim=1, keepdim=True) > ink).float().cpu()

    patch = model.patch_size
    na = cap(n_attention, caps, "eval_images")
    att = silhouette_mass(
        cls_attention_maps(model, test_images[:na]), token_object_fraction(sil(test_images[:na]), patch)
    )
    n = cap(n_token_images, caps, "eval_images")
    ftr, fte = token_object_fraction(sil(train_images[:n]), patch), token_object_fraction(sil(test_images[:n]), patch)
    if len(torch.unique(ftr > token_threshold)) < 2:  # no ink token (or no background one): nothing to probe
        nan = float("nan")
        tok = {
            "accuracy": nan,
            "balanced_accuracy": nan,
            "majority": nan,
            "object_rate": float((ftr > token_threshold).float().mean()),
        }
    else:
        tok = token_silhouette_probe(
            patch_tokens(model, train_images[:n]),
            ftr,
            patch_tokens(model, test_images[:n]),
            fte,
            threshold=token_threshold,
            seed=seed,
        )
    return {
        "attn_mass": float(att["mass"].mean()),
        "attn_chance": float(att["chance"].mean()),
        "token_acc": tok["accuracy"],
        "token_balanced_acc": tok["balanced_accuracy"],
        "token_majority": tok["majority"],
        "object_rate": tok["object_rate"],
    }


def feature_silhouette(features, labels) -> float:
    """Silhouette score of the classes ``labels`` in the standardised feature space (Euclidean; scikit-learn
    ``silhouette_score``): in [-1, 1], higher = tighter, better separated classes (the number beside Fig. 8)."""
    from sklearn.metrics import silhouette_score
    from sklearn.preprocessing import StandardScaler

    x, y = _np(features).astype(np.float64), _np(labels).ravel()
    if x.ndim != 2 or x.shape[0] != y.shape[0]:
        raise ParameterError("labels", f"one label per row of the (n, d) features {x.shape}", y.shape)
    if not 2 <= len(np.unique(y)) < x.shape[0]:
        raise ParameterError("labels", "between 2 and n - 1 distinct classes", len(np.unique(y)))
    return float(silhouette_score(StandardScaler().fit_transform(x), y))
