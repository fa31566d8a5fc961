"""Settings of the Kong et al. notebooks: one frozen dataclass per notebook.

Fields hold the ``cpu`` profile's values; the class attributes ``SMOKE`` and ``GPU`` override a few fields for
those profiles. Every field documents itself in ``metadata["doc"]``. The training recipe of the two trained-model
notebooks (epochs, data size, model size) is provisional: it is set when the shared encoders are first trained.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = ["KongTheory", "KongReconstruction", "KongRepresentations", "NOTEBOOKS"]

RATIOS = (0.1, 0.25, 0.5, 0.75, 0.9)


def _f(default: Any, doc: str) -> Any:
    return dataclasses.field(default=default, metadata={"doc": doc})


@dataclass(frozen=True)
class KongTheory:
    """``kong_theory``: Algorithm 1 / Theorem 1 on explicit DAGs and Theorem 2 in a linear-Gaussian hierarchy."""

    quadtree_side: int = _f(16, "side of the patch grid of the quadtree hierarchy (a power of 2)")
    mask_ratios: tuple[float, ...] = _f(RATIOS, "mask ratios of the level-of-c table (the paper's Fig. 5 grid)")
    units: tuple[int, ...] = _f((1, 2, 4), "masking units (unit x unit patches) of the level-of-c table")
    n_masks: int = _f(200, "random masks per (seed, ratio, unit) cell")
    seeds: tuple[int, ...] = _f((0, 1, 2, 3, 4), "seeds of the mask draws and of the linear-Gaussian models")
    claim_ratio: float = _f(0.75, "mask ratio at which the masking-unit trend is scored")
    shapes_size: int = _f(32, "image side of the shapes DAG (the trained models' input size)")
    shapes_patch: int = _f(4, "patch size of the shapes DAG's leaves (the ViT patch)")
    lg_noise_dim: int = _f(2, "dimension of every node's noise in the linear-Gaussian tree")
    lg_side: int = _f(8, "patch-grid side of the linear-Gaussian quadtree (random masks)")
    lg_ratio: float = _f(0.5, "mask ratio of the linear-Gaussian random masks")
    lg_n_masks: int = _f(4, "random masks per seed in the linear-Gaussian quadtree")
    lg_n_samples: tuple[int, ...] = _f((200, 2000, 20000), "sample sizes of the sampled Theorem-2 encoder")

    SMOKE: ClassVar[dict[str, Any]] = {"quadtree_side": 8, "n_masks": 10, "seeds": (0, 1), "lg_side": 4,
                                       "lg_n_masks": 2, "lg_n_samples": (200, 2000)}
    GPU: ClassVar[dict[str, Any]] = {"n_masks": 1000, "seeds": tuple(range(10)), "lg_n_masks": 10,
                                     "lg_n_samples": (200, 2000, 20000, 200000)}


@dataclass(frozen=True)
class KongReconstruction:
    """``kong_reconstruction``: Fig. 5, SSIM / FSIM / PSNR / -MSE of MAEs pretrained at several mask ratios and
    masking units, on held-out images without masking (and, second panel, on the masked patches)."""

    datasets: tuple[str, ...] = _f(("shapes", "natural"), "pretraining / evaluation data sets")
    img_size: int = _f(32, "image side")
    patch_size: int = _f(4, "ViT patch size (fixed; the masking unit is decoupled, as the paper does)")
    model: str = _f("micro", "maelab.models size of the MAE")
    norm_pix_loss: bool = _f(True, "per-patch normalised targets (official MAE); outputs de-normalised to score")
    mask_ratios: tuple[float, ...] = _f(RATIOS, "pretraining mask ratios at masking unit 1 (Fig. 5 top row)")
    units: tuple[int, ...] = _f((1, 2, 4), "masking units in tokens at ratio ``unit_ratio`` (Fig. 5 bottom row)")
    unit_ratio: float = _f(0.75, "mask ratio of the masking-unit runs")
    seeds: tuple[int, ...] = _f((0, 1, 2), "pretraining seeds")
    n_train: int = _f(10000, "pretraining images (provisional)")
    epochs: int = _f(20, "pretraining epochs (provisional)")
    n_eval: int = _f(500, "held-out images scored")
    masked_panel_ratio: float | None = _f(None, "mask ratio of the masked-patch panel (None: each model's own)")
    learned_margin: float = _f(0.05, "precondition: class probe must beat the random-init encoder by this much")

    SMOKE: ClassVar[dict[str, Any]] = {"datasets": ("shapes",), "mask_ratios": (0.25, 0.75), "units": (1, 2),
                                       "seeds": (0, 1), "n_train": 256, "epochs": 1, "n_eval": 32}
    GPU: ClassVar[dict[str, Any]] = {"seeds": (0, 1, 2, 3, 4), "n_train": 50000, "epochs": 100, "n_eval": 2000,
                                     "model": "tiny"}


@dataclass(frozen=True)
class KongRepresentations:
    """``kong_representations``: what the frozen encoders of ``kong_reconstruction`` hold (no retraining):
    latent-level decodability, the class probe in- and out-of-distribution (Table 1), shape bias (Table 2),
    attention on the silhouette (Figs 6-7), t-SNE (Fig. 8), per-token silhouette probe (Table 3 analogue)."""

    n_probe_train: int = _f(5000, "shapes images to fit probes on")
    n_probe_test: int = _f(2000, "shapes images to score probes on (each shift variant too)")
    pool: str = _f("cls", "frozen feature: [CLS] ('cls') or mean of patch tokens ('mean')")
    knn_k: int = _f(20, "neighbours of the k-NN decoders")
    shifts: tuple[str, ...] = _f(("background", "colour", "texture_swap", "scale"), "shapes shift variants")
    n_cue_conflict: int = _f(2000, "cue-conflict images (shape of one class, texture of another) for shape bias")
    n_attention: int = _f(256, "images whose last-layer attention is scored")
    silhouette_threshold: float = _f(0.5, "coverage above which a pixel belongs to the object")
    token_threshold: float = _f(0.5, "object fraction above which a token is labelled 'object' (token probe)")
    n_tsne: int = _f(1000, "points per t-SNE")
    learned_margin: float = _f(0.05, "precondition: class probe must beat the random-init encoder by this much")

    SMOKE: ClassVar[dict[str, Any]] = {"n_probe_train": 200, "n_probe_test": 100, "knn_k": 5,
                                       "shifts": ("background",), "n_cue_conflict": 100, "n_attention": 16,
                                       "n_tsne": 100}
    GPU: ClassVar[dict[str, Any]] = {"n_probe_train": 20000, "n_probe_test": 5000, "n_cue_conflict": 5000,
                                     "n_attention": 1000, "n_tsne": 2000}


NOTEBOOKS: dict[str, type] = {
    "kong_theory": KongTheory,
    "kong_reconstruction": KongReconstruction,
    "kong_representations": KongRepresentations,
}
