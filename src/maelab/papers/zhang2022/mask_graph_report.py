"""The ``zhang_mask_graph`` page's computations, the configs of their stored results, and the tables it assembles.

Computations (each with the config of its stored result; the profile is added by the store): the patch distances
of Fig. 2b/c per dataset under the four readings of :data:`READINGS` (:func:`distances_config`,
:func:`distances`), the exact mask and augmentation graphs of the tiny world (:func:`exact_graphs_config`,
:func:`exact_graphs`), Theorem 3.6's collapsed decoders and the contrast MAE (:func:`collapse_spec`,
:func:`collapse_config`, :func:`collapse`, :func:`learned_config`, :func:`learned_probe`) and the collapse floor of
the shared zoo's test images (:func:`zoo_floor_config`, :func:`zoo_floor`). :func:`sem`, :func:`intra_inter`,
:func:`distance_table` and :func:`graph_markdown` read stored results; every number they show comes from them.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from maelab import data, experiments, masking, result_keys, zoo
from maelab._util import resolve_device
from maelab._validate import ParameterError
from maelab.options import DryRunLimits
from maelab.parts import Task
from maelab.prefetch import compute_parts

from . import mask_graph
from .settings import ZhangMaskGraphSettings

__all__ = [
    "READINGS",
    "LABELS",
    "MAIN",
    "datasets",
    "distances_config",
    "distances",
    "sem",
    "intra_inter",
    "distance_table",
    "exact_graphs_config",
    "exact_graphs",
    "graph_markdown",
    "collapse_spec",
    "collapse_config",
    "collapse",
    "learned_config",
    "learned_probe",
    "zoo_floor_config",
    "zoo_floor",
]

#: The four readings of the paper's patch distance (which pairs of patches; removed patches left out or zero-filled)
READINGS = {
    "vis_all": {"pairs": "all", "fill": None},
    "zero_all": {"pairs": "all", "fill": 0.0},
    "vis_pos": {"pairs": "matched", "fill": None},
    "zero_pos": {"pairs": "matched", "fill": 0.0},
}
#: each reading's name on the page
LABELS = {
    "vis_all": "visible, every pair",
    "zero_all": "zero-filled, every pair (main)",
    "vis_pos": "visible, same position",
    "zero_pos": "zero-filled, same position",
}
#: the main reading, the only one both literal ("every pair of patches") and able to give Fig. 2b's falling distances
MAIN = "zero_all"
#: the learning rate and batch size of the collapsed decoders' optimiser (part of the stored config)
COLLAPSE_LR, COLLAPSE_BATCH = 1e-3, 128


def _settings(S: Any) -> ZhangMaskGraphSettings:
    if not isinstance(S, ZhangMaskGraphSettings):
        raise ParameterError("S", "the zhang_mask_graph page's ZhangMaskGraphSettings", type(S).__name__)
    return S


def datasets(S: ZhangMaskGraphSettings) -> list[str]:
    """The datasets of Fig. 2b/c: the settings' and CIFAR-10 when ``data_root`` points at a local copy."""
    S = _settings(S)
    return list(S.datasets) + (["cifar10"] if S.data_root is not None else [])


def distances_config(S: ZhangMaskGraphSettings, name: str, seed: int) -> dict[str, Any]:
    """The config of the stored result ``distances_<name>``: everything :func:`distances` reads (the settings,
    the image seed and, for cifar10 only, ``data_root``)."""
    S = _settings(S)
    return {
        "dataset": name,
        "readings": READINGS,
        "what": "Fig. 2b/c",
        "seed": seed,
        **S.pick("n_images", "patch_size", "mask_ratios", "n_pairs", "n_mask_draws", "seeds"),
        **({"data_root": S.data_root} if name == "cifar10" else {}),
    }


def distances(S: ZhangMaskGraphSettings, name: str, seed: int, *, caps: DryRunLimits | None = None) -> dict:
    """Fig. 2b/c on ``n_images`` training images of ``name`` (drawn with ``seed``): for every reading the exact
    and the Monte-Carlo intra- and inter-class distances (:func:`maelab.papers.zhang2022.mask_graph.distance_curves`),
    stacked over the settings' seeds as ``(seeds, rhos)`` arrays, plus the patch count and dimension."""
    S = _settings(S)
    opts = {"data_root": S.data_root} if name == "cifar10" else {}
    ds = data.load(name, "train", n=S.n_images, seed=seed, **opts)
    tokens = masking.patchify(ds.images, S.patch_size)
    ratios = [float(r) for r in S.mask_ratios]
    per_seed = [
        mask_graph.distance_curves(
            tokens, ds.labels, ratios, n_pairs=S.n_pairs, n_mask_draws=S.n_mask_draws, seed=s, readings=READINGS,
            caps=caps,
        )
        for s in S.seeds
    ]  # fmt: skip
    out = {k: np.stack([p[k] for p in per_seed]) for k in per_seed[0] if not k.startswith("pairs")}
    out["n_patches"] = int(tokens.shape[1])
    out["patch_dim"] = int(tokens.shape[2])
    return out


def sem(x, axis: int = 0) -> np.ndarray:
    """Standard error of the mean along ``axis`` of a 2-d array (sample std, ddof 1); 0 where there is one row."""
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or axis not in (0, 1):
        raise ParameterError("x", "a 2-d array and axis 0 or 1", f"shape {x.shape}, axis {axis}")
    if x.shape[axis] < 2:
        return np.zeros(x.shape[1 - axis])
    return x.std(axis=axis, ddof=1) / np.sqrt(x.shape[axis])


def intra_inter(res: Mapping[str, Any], reading: str, kind: str = "exact") -> np.ndarray:
    """The intra- over inter-class distance of ``reading``, ``(seeds, rhos)``; ``kind``: ``exact`` (closed form over
    masks) or ``mc`` (random masks)."""
    if reading not in READINGS:
        raise ParameterError("reading", f"one of {list(READINGS)}", reading)
    if kind not in ("exact", "mc"):
        raise ParameterError("kind", "'exact' or 'mc'", kind)
    return np.asarray(res[f"{reading}__{kind}_intra"]) / np.asarray(res[f"{reading}__{kind}_inter"])


def distance_table(dist: Mapping[str, Mapping[str, Any]], mask_ratios: Sequence[float]):
    """Per dataset and reading: the mean intra/inter ratio at rho = 0, 0.7 (where on the grid) and the last rho,
    and its argmin per seed, exact and with random masks. ``dist``: ``{dataset: distances() result}``."""
    import pandas as pd

    ratios = [float(r) for r in mask_ratios]
    rho = np.array(ratios)
    rows = []
    for name, res in dist.items():
        for reading in READINGS:
            r_exact, r_mc = intra_inter(res, reading), intra_inter(res, reading, "mc")
            if r_exact.shape[1] != len(ratios):
                raise ParameterError("mask_ratios", f"the {r_exact.shape[1]} ratios of the results", ratios)
            rows.append(
                {
                    "dataset": name,
                    "reading": LABELS[reading],
                    "ratio at ρ=0": f"{r_exact[:, 0].mean():.4f}",
                    "ratio at ρ=0.7": f"{r_exact[:, ratios.index(0.7)].mean():.4f}" if 0.7 in ratios else "—",
                    f"ratio at ρ={ratios[-1]}": f"{r_exact[:, -1].mean():.4f}",
                    "argmin per seed, exact": ", ".join(f"{a:g}" for a in rho[r_exact.argmin(1)]),
                    "argmin per seed, random masks": ", ".join(f"{a:g}" for a in rho[r_mc.argmin(1)]),
                }
            )
    return pd.DataFrame(rows)


def exact_graphs_config(S: ZhangMaskGraphSettings) -> dict[str, Any]:
    """The config of the stored result ``exact_graph``: what :func:`exact_graphs` reads."""
    S = _settings(S)
    return {
        "what": "exact mask/augmentation graphs",
        "world": "rows vs columns",
        **S.pick("graph_side", "graph_noise", "graph_texture", "ks"),
    }


def exact_graphs(S: ZhangMaskGraphSettings) -> dict[str, Any]:
    """The graphs of the tiny world (:func:`maelab.papers.zhang2022.mask_graph.tiny_world`) at every number of
    kept patches, rho increasing: per view kind (``pos``: positional, ``free``: position-blind) the residual
    sums per k, the label error, the connected components, the kept patches, the largest eigenvalue below the
    components' 1s, and the worst degree check (:func:`~maelab.papers.zhang2022.mask_graph.graph_summary`)."""
    S = _settings(S)
    world = mask_graph.tiny_world(side=S.graph_side, noise=S.graph_noise, texture=S.graph_texture)
    n = S.graph_side**2
    sizes = list(range(n - 1, 0, -1))  # kept patches n1, so that rho = 1 - n1/n increases
    out: dict[str, Any] = {"rho": np.array([1 - n1 / n for n1 in sizes])}
    for tag, positional in (("pos", True), ("free", False)):
        summ = [mask_graph.graph_summary(world, n1, S.ks, positional=positional) for n1 in sizes]
        out[f"{tag}_residual"] = np.array([s["residual"] for s in summ])  # (rhos, ks)
        out[f"{tag}_alpha"] = np.array([s["alpha"] for s in summ])
        out[f"{tag}_components"] = np.array([s["components"] for s in summ])
        out[f"{tag}_n1"] = np.array([s["n1"] for s in summ])
        out[f"{tag}_second"] = np.array(
            [s["eigenvalues"][s["components"]] if s["n1"] > s["components"] else 0.0 for s in summ]
        )
        out[f"{tag}_degree_check"] = max(s["degree_check"] for s in summ)
    return out


def graph_markdown(graphs: Mapping[str, Any], ks: Sequence[int], claim_k: int) -> str:
    """A Markdown table against rho of the positional residual sum at ``claim_k``, the components of G_A and the
    label error of both view kinds (``graphs``: an :func:`exact_graphs` result computed with ``ks``)."""
    ks = list(ks)
    if claim_k not in ks:
        raise ParameterError("claim_k", f"one of ks {ks}", claim_k)
    rho, res_k = graphs["rho"], np.asarray(graphs["pos_residual"])[:, ks.index(claim_k)]
    return (
        "| ρ | " + " | ".join(f"{r:.2f}" for r in rho) + " |\n|---|" + "---|" * len(rho) + "\n"
        f"| Σ_(i>{claim_k}) λ_i², positional | " + " | ".join(f"{v:.3g}" for v in res_k) + " |\n"
        "| components of G_A, positional | " + " | ".join(str(int(v)) for v in graphs["pos_components"]) + " |\n"
        "| α, positional | " + " | ".join(f"{v:.3f}" for v in graphs["pos_alpha"]) + " |\n"
        "| α, position-blind | " + " | ".join(f"{v:.3f}" for v in graphs["free_alpha"]) + " |"
    )


def collapse_spec(S: ZhangMaskGraphSettings, seed: int) -> experiments.PretrainSpec:
    """The micro MAE of Theorem 3.6's check on MNIST (mask 0.75, seed ``seed``): the architecture behind the
    collapsed decoders and the briefly pre-trained contrast run."""
    S = _settings(S)
    return experiments.PretrainSpec(
        dataset="mnist10k",
        n_train=S.collapse_n_train,
        n_test=S.collapse_n_test,
        img_size=28,
        channels=1,
        model="mae",
        size="micro",
        epochs=S.mae_epochs,
        mask_ratio=0.75,
        seed=seed,
        model_overrides=tuple(sorted(result_keys.choice_set(S.model_choices).items())),
    )


def collapse_config(S: ZhangMaskGraphSettings, spec: experiments.PretrainSpec) -> dict[str, Any]:
    """The config of the stored result ``collapse_floor``: what :func:`collapse` reads."""
    S = _settings(S)
    return {
        "spec": spec.to_config(),
        "lr": COLLAPSE_LR,
        "batch_size": COLLAPSE_BATCH,
        **S.pick("collapse_mask_ratios", "collapse_seeds", "collapse_steps"),
    }


def _fit_key(mask_ratio: float, seed: int) -> str:
    return f"fit_r{mask_ratio:g}_s{seed}".replace(".", "p")


def _collapse_fit(S: ZhangMaskGraphSettings, spec, mask_ratio: float, seed: int, device: str, caps) -> dict:
    """One collapsed decoder of :func:`collapse` (module level: a worker process may compute it as a part)."""
    tr, te = experiments.load_data(spec, "cpu", False)
    model = experiments.build_model(dataclasses.replace(spec, seed=seed)).to(device)  # the spec's model, seed s
    fit = mask_graph.fit_collapsed_decoder(
        model, tr.images, te.images, mask_ratio=mask_ratio, steps=S.collapse_steps, batch_size=COLLAPSE_BATCH,
        lr=COLLAPSE_LR, seed=seed, caps=caps,
    )  # fmt: skip
    return {"test_loss": fit["test_loss"], "first_loss": float(fit["trace"][0])}


def _contrast_mae(spec, device: str, progress, caps) -> dict:
    """The contrast run of :func:`collapse`: ``spec`` pre-trained, its test reconstruction loss (a part, as above)."""
    mae, _, _, te = experiments.pretrain(spec, device=device, progress=progress, caps=caps)
    return {"mae_loss": experiments.reconstruction_loss(mae, te.images, 0.75, seed=spec.seed, caps=caps)}


def collapse(
    S: ZhangMaskGraphSettings,
    spec: experiments.PretrainSpec,
    *,
    device: str = "cpu",
    progress: bool | None = None,
    caps: DryRunLimits | None = None,
) -> dict[str, Any]:
    """Theorem 3.6: a decoder trained behind a constant encoder at each mask ratio and seed (on ``device``,
    :func:`~maelab.papers.zhang2022.mask_graph.fit_collapsed_decoder`), the floor Var(x2) and the best single
    constant patch of the test targets, and the test loss of ``spec`` briefly pre-trained (the contrast run).

    Each fit and the contrast run are parts of the record (:mod:`maelab.parts`: ``fit_r<ratio>_s<seed>``,
    ``contrast_mae``): in an installment the pool computes them side by side (:func:`maelab.prefetch.compute_parts`)
    and a cut-off installment keeps the ones it finished; elsewhere they run one after another, in the order they
    always ran. At gpu they run on the GPU: 20 fits of 4,000 steps on the lent machine's CPU, one after another,
    would have outlasted every installment (about 7 s per 100 steps here, 2026-12-01)."""
    import pandas as pd
    import torch

    S = _settings(S)
    dev = str(resolve_device(device))
    pairs = [(mr, s) for mr in S.collapse_mask_ratios for s in S.collapse_seeds]
    fits = [
        Task(
            _fit_key(mr, s), {"mask_ratio": mr, "seed": s}, functools.partial(_collapse_fit, S, spec, mr, s, dev, caps)
        )
        for mr, s in pairs
    ]
    mae = Task(
        "contrast_mae", {"what": "the contrast MAE"}, functools.partial(_contrast_mae, spec, dev, progress, caps)
    )
    compute_parts([*fits, mae], device=dev, caps=caps)
    rows = [{"mask_ratio": mr, "seed": s, **task()} for (mr, s), task in zip(pairs, fits)]
    cols = ["mask_ratio", "seed", "test_loss", "first_loss"]  # a stored part's keys come back sorted
    _, te = experiments.load_data(spec, "cpu", progress)
    ref = experiments.build_model(dataclasses.replace(spec, seed=0))
    with torch.no_grad():
        t = ref.target(te.images)
    return {
        "fits": pd.DataFrame(rows, columns=cols),
        "var_x2": mask_graph.masked_target_variance(t),
        "var_blind": mask_graph.position_blind_variance(t),
        "mae_loss": mae()["mae_loss"],
    }


def learned_config(spec: experiments.PretrainSpec) -> dict[str, Any]:
    """The config of the stored result ``mae_learned``: what :func:`learned_probe` reads."""
    if not isinstance(spec, experiments.PretrainSpec):
        raise ParameterError("spec", "a PretrainSpec", type(spec).__name__)
    return {"what": "[CLS] linear probe of the pre-trained MAE and of its random init", "spec": spec.to_config()}


def learned_probe(
    spec: experiments.PretrainSpec,
    *,
    device: str = "cpu",
    progress: bool | None = None,
    caps: DryRunLimits | None = None,
) -> dict[str, float]:
    """The contrast run's learning check: the [CLS] linear probe of ``spec`` pre-trained and at random init."""
    trained = experiments.pretrain_and_evaluate(spec, device=device, progress=progress, caps=caps)
    return {
        "trained": trained["linear_acc"],
        "random_init": experiments.random_init_evaluate(spec, device=device, caps=caps)["linear_acc"],
    }


def zoo_floor_config(ZS: zoo.ZooSettings) -> dict[str, Any]:
    """The config of the stored result ``zoo_floor``: the fingerprint of the shared zoo (its test images and
    targets are those of its entries)."""
    if not isinstance(ZS, zoo.ZooSettings):
        raise ParameterError("ZS", "the shared zoo's ZooSettings", type(ZS).__name__)
    return {"what": "Var(x2) of the shared zoo's scored test images (norm-pix)", "zoo": zoo.fingerprint(ZS)}


def zoo_floor(ZS: zoo.ZooSettings, device: str = "cpu") -> dict[str, Any]:
    """The collapse floor Var(x2) and the best single constant patch in the zoo's own loss, on the ``n_score`` test
    images its losses are computed on. The target is the patchified, normalised image: the random init of any
    seed gives it."""
    import torch

    if not isinstance(ZS, zoo.ZooSettings):
        raise ParameterError("ZS", "the shared zoo's ZooSettings", type(ZS).__name__)
    _, te = zoo.data(ZS, device)
    images = te.images[: ZS.n_score].cpu()
    with torch.no_grad():
        t = zoo.random_init(ZS, ZS.seeds[0]).target(images)
    return {
        "var_x2": mask_graph.masked_target_variance(t),
        "var_blind": mask_graph.position_blind_variance(t),
        "n_images": int(t.shape[0]),
    }
