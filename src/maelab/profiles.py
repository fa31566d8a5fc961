"""The three run profiles and every notebook's per-profile settings -- defined here and nowhere else.

* ``smoke``: CI. Seconds per notebook, tiny models; asserts the pipeline, not the science.
* ``cpu``: a laptop. <= 30 min per notebook on 2 cores; meaningful trends.
* ``gpu``: one H100-class GPU. <= 10 min per notebook; closest to the papers.

A notebook gets its settings with ``settings(notebook, profile)``; paper notebooks add their entry to
``NOTEBOOKS`` below. Parameters that a reader may inject through papermill are validated by
:func:`validate_params` using ``PARAM_RULES``.
"""
from __future__ import annotations

from typing import Any, Callable

from ._validate import ParameterError, in_open_unit, in_range, is_bool, one_of, positive_int

PROFILES: dict[str, dict[str, Any]] = {
    "smoke": {"description": "CI: seconds per notebook, tiny models; proves the pipeline only",
              "budget_min": 1, "target": "any machine"},
    "cpu": {"description": "a laptop: <= 30 min per notebook on 2 cores; meaningful trends",
            "budget_min": 30, "target": "2 CPU cores"},
    "gpu": {"description": "one H100-class GPU: <= 10 min per notebook; closest to the papers",
            "budget_min": 10, "target": "1 GPU"},
}
PROFILE_NAMES = tuple(PROFILES)

# Per-notebook settings for each profile. Each notebook's entry has one dict per profile with the same keys.
NOTEBOOKS: dict[str, dict[str, dict[str, Any]]] = {
    "masking": {
        # spectral identity check (Eq. 15-21): signal length D, patch sizes, random masks per (p, m)
        # 2-D spectra: crops of bundled photos (downscaled by photo_scale first), mask draws per crop
        "smoke": {"D": 64, "patch_sizes_1d": [2, 4, 8], "n_masks_1d": 4, "crop": 64, "n_crops": 4,
                  "n_mask_draws": 2, "mask_ratio": 0.5, "patch_sizes_2d": [4, 8, 16], "photo_scale": 0.5},
        "cpu": {"D": 256, "patch_sizes_1d": [2, 4, 8, 16, 32], "n_masks_1d": 200, "crop": 128, "n_crops": 64,
                "n_mask_draws": 16, "mask_ratio": 0.5, "patch_sizes_2d": [4, 8, 16], "photo_scale": 0.5},
        "gpu": {"D": 512, "patch_sizes_1d": [2, 4, 8, 16, 32, 64], "n_masks_1d": 1000, "crop": 256,
                "n_crops": 256, "n_mask_draws": 32, "mask_ratio": 0.5, "patch_sizes_2d": [4, 8, 16],
                "photo_scale": 1.0},
    },
    # ---- zhang_mask_graph: settings per profile (edited only by the zhang_mask_graph notebook's author) ----
    # Fig. 2b/c: n_images per dataset (train split), patch_size, the rho grid, n_pairs intra- and inter-class image
    # pairs per seed, n_mask_draws sampled masks per pair and rho; exact graphs: graph_side x graph_side images over
    # 3 symbols (graph_noise, graph_texture), residual sums for ks, the claim at claim_k; Theorem 3.6: a micro MAE on
    # mnist10k, collapsed decoders trained collapse_steps steps per (mask ratio, seed), a normal MAE mae_epochs.
    "zhang_mask_graph": {
        "smoke": {"datasets": ["mnist10k", "shapes"], "n_images": 200, "patch_size": 4,
                  "mask_ratios": [0.0, 0.2, 0.4, 0.6, 0.7, 0.8, 0.95], "n_pairs": 20, "n_mask_draws": 1,
                  "seeds": [0, 1], "data_root": None, "graph_side": 2, "graph_noise": 0.1, "graph_texture": 0.8,
                  "ks": [1, 2, 4], "claim_k": 2, "collapse_n_train": 64, "collapse_n_test": 32,
                  "collapse_steps": 5, "collapse_mask_ratios": [0.75], "collapse_seeds": [0, 1],
                  "mae_epochs": 1},
        "cpu": {"datasets": ["mnist10k", "shapes"], "n_images": 2000, "patch_size": 4,
                "mask_ratios": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95], "n_pairs": 300,
                "n_mask_draws": 4, "seeds": [0, 1, 2, 3, 4], "data_root": None, "graph_side": 3, "graph_noise": 0.1,
                "graph_texture": 0.8, "ks": [2, 16, 64], "claim_k": 16, "collapse_n_train": 2000,
                "collapse_n_test": 500, "collapse_steps": 300, "collapse_mask_ratios": [0.5, 0.75],
                "collapse_seeds": [0, 1, 2], "mae_epochs": 10},
        "gpu": {"datasets": ["mnist10k", "shapes"], "n_images": 8000, "patch_size": 4,
                "mask_ratios": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95],
                "n_pairs": 2000, "n_mask_draws": 16, "seeds": list(range(10)), "data_root": None, "graph_side": 3,
                "graph_noise": 0.1, "graph_texture": 0.8, "ks": [2, 16, 64], "claim_k": 16,
                "collapse_n_train": 8000, "collapse_n_test": 2000, "collapse_steps": 2000,
                "collapse_mask_ratios": [0.25, 0.5, 0.75, 0.9], "collapse_seeds": [0, 1, 2, 3, 4],
                "mae_epochs": 100},
    },
    # ---- zhang_umae: settings per profile (edited only by the zhang_umae notebook's author) ----
    # MAE vs U-MAE paired by seed on each dataset (+ cifar10 when data_root is given); "lam" = U-MAE's lambda;
    # investigation (investigate_dataset, no fine-tuning): lambda x lam_factor and the uniformity term on the
    # mean of the visible tokens. blr: peak lr = blr * batch / 256. rank_epochs: effective rank tracked (Fig. 1c).
    # n_train and epochs may be {dataset: value} (a notebook parameter `epochs=` overrides every dataset).
    # probe_cs: the logistic-regression C grid (None: maelab.evaluate.DEFAULT_CS, 1e-3 ... 1e2, as zhang_ablations
    # uses); a grid capped at C = 1 under-fits shapes features by up to ~9 points (seed 0: 28.1 % vs 37.0 %).
    # cpu: blr 1e-2 and the per-dataset lengths come from a pilot of plain MAE (seed 0): at blr 2e-3 / 12 epochs on
    # 2,000 images the micro encoder's [CLS] probe stayed at the random-init level and 2-epoch fine-tuning at chance;
    # mnist10k needs ~200k training images seen before its probe leaves the random-init level, shapes ~100k.
    # Measured: 34 min on 2 cores with a small second job for the first minutes (estimate idle: ~29 min; micro MAE
    # ~1,800 img/s, fine-tuning ~1,250 img/s).
    # gpu: ViT-Tiny (192-d, 12 layers, 4-layer 192-d decoder) with patch 4 instead of the paper's 2, sized by
    # scaling CPU cost (never run: no session has had a GPU yet).
    "zhang_umae": {
        "smoke": {"datasets": ["shapes", "mnist10k"], "data_root": None, "size": "micro", "model_overrides": {},
                  "n_train": 128, "n_test": 64, "epochs": 2, "batch_size": 64, "blr": 2e-3, "warmup_epochs": 1,
                  "seeds": [0], "lam": 0.01, "mask_ratio": 0.75, "finetune_epochs": 1, "finetune_blr": 1e-3,
                  "rank_epochs": [0, 1, 2], "investigate_dataset": "shapes", "lam_factor": 10,
                  "tsne_n": 64, "tsne_iter": 250, "probe_cs": [0.1]},
        "cpu": {"datasets": ["shapes", "mnist10k"], "data_root": None, "size": "micro", "model_overrides": {},
                "n_train": {"shapes": 4000, "mnist10k": 5000, "cifar10": 5000}, "n_test": 1000,
                "epochs": {"shapes": 25, "mnist10k": 40, "cifar10": 40}, "batch_size": 128, "blr": 1e-2,
                "warmup_epochs": 2, "seeds": [0, 1, 2], "lam": 0.01, "mask_ratio": 0.75, "finetune_epochs": 6,
                "finetune_blr": 1e-2, "rank_epochs": [0, 5, 10, 15, 20, 25, 30, 35, 40],
                "investigate_dataset": "shapes", "lam_factor": 10,
                "tsne_n": 500, "tsne_iter": 750, "probe_cs": None},
        "gpu": {"datasets": ["shapes", "mnist10k"], "data_root": None, "size": "vit_tiny",
                "model_overrides": {"patch_size": 4}, "n_train": 8000, "n_test": 2000, "epochs": 40,
                "batch_size": 256, "blr": 1.5e-3, "warmup_epochs": 4, "seeds": [0, 1, 2], "lam": 0.01,
                "mask_ratio": 0.75, "finetune_epochs": 5, "finetune_blr": 1e-3,
                "rank_epochs": [0, 5, 10, 20, 30, 40], "investigate_dataset": "shapes", "lam_factor": 10,
                "tsne_n": 1000, "tsne_iter": 1000, "probe_cs": None},
    },
    # ---- zhang_ablations: settings per profile (edited only by the zhang_ablations notebook's author) ----
    # Table 3 (lambda sweep of U-MAE, mask 0.75), Table 2 (SimMIM vs U-SimMIM, mask 0.6, lambda 0.01) and the no-mask
    # ablation (MAE at mask 0 vs 0.75), every run paired by seed (same data, init seed, data order). cpu: the recipe of
    # zhang_umae's shapes runs (blr: peak lr = blr * batch / 256); 24 micro runs, ~28 min on 2 idle cores (measured:
    # MAE and SimMIM ~1,600-1,800 img/s, mask 0 ~1,050 img/s).
    # gpu: "small" (128-d, 4 layers), sized by scaling the CPU cost (never run).
    "zhang_ablations": {
        "smoke": {"dataset": "shapes", "size": "micro", "n_train": 128, "n_test": 64, "epochs": 1,
                  "batch_size": 64, "blr": 2e-3, "warmup_epochs": 1, "seeds": [0], "lams": [0.0, 0.01, 1.0],
                  "simmim_mask_ratio": 0.6, "simmim_lam": 0.01},
        "cpu": {"dataset": "shapes", "size": "micro", "n_train": 4000, "n_test": 1000, "epochs": 25,
                "batch_size": 128, "blr": 1e-2, "warmup_epochs": 2, "seeds": [0, 1, 2],
                "lams": [0.0, 0.001, 0.01, 0.1, 1.0], "simmim_mask_ratio": 0.6, "simmim_lam": 0.01},
        "gpu": {"dataset": "shapes", "size": "small", "n_train": 10000, "n_test": 2000, "epochs": 30,
                "batch_size": 256, "blr": 1.5e-3, "warmup_epochs": 3, "seeds": [0, 1, 2, 3],
                "lams": [0.0, 0.001, 0.01, 0.1, 1.0], "simmim_mask_ratio": 0.6, "simmim_lam": 0.01},
    },
    # ---- bisulco_linear_mae: settings per profile (edited only by the bisulco_linear_mae notebook's author) ----
    # data: centred grey crops (dataset, crop side, n); Lemma 1: masks per (m, p); Theorem 1: rank k, (m, p)
    # configurations trained by sampled-mask Adam (sgd_steps) then polished on the exact expected loss
    # (polish_steps), seeds; spectrum: ratios / patch sizes of the C-spectrum figure; Lemmas 4-6: mask ratios and
    # draws. Costs measured here (2 cores, 1 BLAS thread): ~8 ms per sampled step at n=1000, d=144.
    "bisulco_linear_mae": {
        "smoke": {"dataset": "mnist10k", "crop": 12, "n": 200, "mask_ratios": [0.25, 0.75], "patch_sizes": [2, 4],
                  "mc_draws": 100, "k": 3, "thm1_configs": [[0.5, 4]], "seeds": [0], "sgd_steps": 100,
                  "polish_steps": 50, "lr": 1e-2, "polish_lr": 1e-3, "spectrum_ratios": [0.0, 0.5, 0.9],
                  "taylor_ratios": [0.1, 0.5, 0.9], "taylor_draws": 20},
        "cpu": {"dataset": "natural", "crop": 12, "n": 1000, "mask_ratios": [0.25, 0.5, 0.75],
                "patch_sizes": [2, 3, 4, 6], "mc_draws": 500, "k": 3,
                "thm1_configs": [[0.25, 3], [0.5, 4], [0.75, 6]], "seeds": [0, 1, 2], "sgd_steps": 2000,
                "polish_steps": 1000, "lr": 1e-2, "polish_lr": 1e-3, "spectrum_ratios": [0.0, 0.25, 0.5, 0.75, 0.9],
                "taylor_ratios": [0.1, 0.3, 0.5, 0.7, 0.9], "taylor_draws": 200},
        # gpu: this notebook is CPU linear algebra (float64); sized from the cpu cost (~4x the data, 1.5x steps)
        "gpu": {"dataset": "natural", "crop": 16, "n": 2000, "mask_ratios": [0.25, 0.5, 0.75],
                "patch_sizes": [2, 4, 8], "mc_draws": 1000, "k": 3,
                "thm1_configs": [[0.25, 2], [0.5, 4], [0.75, 8]], "seeds": [0, 1, 2], "sgd_steps": 3000,
                "polish_steps": 1000, "lr": 1e-2, "polish_lr": 1e-3, "spectrum_ratios": [0.0, 0.25, 0.5, 0.75, 0.9],
                "taylor_ratios": [0.1, 0.3, 0.5, 0.7, 0.9], "taylor_draws": 1000},
    },
    # ---- bisulco_ising: settings per profile (edited only by the bisulco_ising notebook's author) ----
    # Ising L x L at T_c, n samples per seed (seeds = independent sample draws); closed forms at ranks
    # k = rank_fracs * L^2 (the first is the one the claims use); m-series at patch p_for_m, p-series at m_for_p;
    # DAE noise dae_sigma (spins are +-1); mass radius fraction q. Cost here (1 BLAS thread): ~2.5 s per closed
    # form at L = 32 and ~11 s to simulate 2000 samples.
    "bisulco_ising": {
        "smoke": {"L": 16, "n": 300, "seeds": [0], "rank_fracs": [0.25], "p_for_m": 4,
                  "mask_ratios": [0.01, 0.5, 0.99], "m_for_p": 0.5, "patch_sizes": [2, 4, 8], "dae_sigma": 0.5,
                  "q": 0.9},
        "cpu": {"L": 32, "n": 2000, "seeds": [0, 1, 2], "rank_fracs": [0.25, 1.0], "p_for_m": 8,
                "mask_ratios": [0.01, 0.25, 0.5, 0.75, 0.99], "m_for_p": 0.5, "patch_sizes": [2, 4, 8, 16],
                "dae_sigma": 0.5, "q": 0.9},
        "gpu": {"L": 32, "n": 8000, "seeds": [0, 1, 2, 3, 4], "rank_fracs": [0.25, 1.0], "p_for_m": 8,
                "mask_ratios": [0.01, 0.25, 0.5, 0.75, 0.99], "m_for_p": 0.5, "patch_sizes": [2, 4, 8, 16],
                "dae_sigma": 0.5, "q": 0.9},
    },
    # ---- bisulco_jacobians: settings per profile (edited only by the bisulco_jacobians notebook's author) ----
    # linear part (closed forms, lin_*): crop side, crops per data seed, patch sizes, mask ratios, bottleneck
    # k = lin_rank_frac * d, DAE noise sigmas (pixel units), central-pixel margin, data seeds, datasets, ranks panel.
    # nonlinear part: MAE (size/img/n_train/epochs/batch/blr/warmup) trained at every mask ratio in mask_ratios
    # (+ m = 0, the AE) with patch_size, and at every patch size in patch_sizes with mask_ratio (the main model,
    # snapshots at snapshot_epochs); n_images test crops x n_pixels masked output pixels per model; q: mass fraction.
    "bisulco_jacobians": {
        "smoke": {"lin_size": 16, "lin_n": 300, "lin_patch_sizes": [4, 8], "lin_mask_ratios": [0.3, 0.8],
                  "lin_rank_frac": 0.25, "dae_sigmas": [0.1], "lin_margin": 4, "lin_seeds": [0, 1],
                  "lin_datasets": ["natural"], "rank_fracs": [0.25, 1.0],
                  "model_size": "micro", "img_size": 32, "n_train": 128, "epochs": 1, "batch_size": 64,
                  "blr": 1.5e-3, "warmup_epochs": 0.5, "patch_size": 8, "mask_ratio": 0.8,
                  "mask_ratios": [0.3], "patch_sizes": [4, 8], "snapshot_epochs": [0, 1], "n_images": 8,
                  "n_pixels": 2, "q": 0.5, "seeds": [0]},
        "cpu": {"lin_size": 24, "lin_n": 3000, "lin_patch_sizes": [2, 4, 8],
                "lin_mask_ratios": [0.1, 0.3, 0.5, 0.7, 0.8, 0.9], "lin_rank_frac": 0.25,
                "dae_sigmas": [0.05, 0.1, 0.2], "lin_margin": 6, "lin_seeds": [0, 1, 2],
                "lin_datasets": ["natural", "shapes"], "rank_fracs": [0.125, 0.25, 0.5, 1.0],
                "model_size": "micro", "img_size": 64, "n_train": 2048, "epochs": 16, "batch_size": 64,
                "blr": 5e-3, "warmup_epochs": 1, "patch_size": 8, "mask_ratio": 0.8,
                "mask_ratios": [0.1, 0.3, 0.5, 0.7, 0.9], "patch_sizes": [4, 8, 16],
                "snapshot_epochs": [0, 1, 2, 4, 8, 16], "n_images": 128, "n_pixels": 4, "q": 0.5, "seeds": [0]},
        "gpu": {"lin_size": 24, "lin_n": 8000, "lin_patch_sizes": [2, 4, 8],
                "lin_mask_ratios": [0.1, 0.3, 0.5, 0.7, 0.8, 0.9], "lin_rank_frac": 0.25,
                "dae_sigmas": [0.05, 0.1, 0.2], "lin_margin": 6, "lin_seeds": [0, 1, 2],
                "lin_datasets": ["natural", "shapes"], "rank_fracs": [0.125, 0.25, 0.5, 1.0],
                "model_size": "small", "img_size": 64, "n_train": 8000, "epochs": 15, "batch_size": 128,
                "blr": 3e-3, "warmup_epochs": 1, "patch_size": 8, "mask_ratio": 0.8,
                "mask_ratios": [0.1, 0.3, 0.5, 0.7, 0.9], "patch_sizes": [4, 8, 16],
                "snapshot_epochs": [0, 1, 2, 4, 8, 15], "n_images": 256, "n_pixels": 8, "q": 0.5,
                "seeds": [0, 1, 2]},
    },
    # ---- bisulco_sweeps: settings per profile (edited only by the bisulco_sweeps notebook's author) ----
    # one grid encoder depth x decoder depth at (patch_size, mask_ratio) and one grid mask ratio x patch size at
    # (grid_depth, grid_decoder_depth), seed seeds[0]; all seeds on the key column (decoder_depth = key_decoder_depth),
    # which also keeps snapshots (probe vs epoch) and is fine-tuned (seeds[0] only). cost_*: per-step timing.
    # cpu cost estimate: FLOPs per step relative to micro's default (1,500 img/s on 2 idle cores) -> ~9-10 min.
    "bisulco_sweeps": {
        "smoke": {"dataset": "mnist10k", "n_train": 128, "n_test": 64, "img_size": 32, "size": "micro",
                  "epochs": 1, "batch_size": 64, "blr": 3e-3, "encoder_depths": [1, 2], "decoder_depths": [1, 2],
                  "key_decoder_depth": 2, "patch_size": 4, "mask_ratio": 0.75, "grid_depth": 1,
                  "grid_decoder_depth": 2, "mask_ratios": [0.75, 0.9], "patch_sizes": [4, 8], "seeds": [0, 1],
                  "snapshot_epochs": [0], "finetune_epochs": 1, "cost_batch": 16, "cost_reps": 1,
                  "cka_images": 64},
        "cpu": {"dataset": "mnist10k", "n_train": 2048, "n_test": 1000, "img_size": 32, "size": "micro",
                "epochs": 4, "batch_size": 64, "blr": 3e-3, "encoder_depths": [1, 2, 4], "decoder_depths": [1, 2, 4, 8],
                "key_decoder_depth": 2, "patch_size": 4, "mask_ratio": 0.75, "grid_depth": 2,
                "grid_decoder_depth": 2, "mask_ratios": [0.5, 0.75, 0.9], "patch_sizes": [2, 4, 8],
                "seeds": [0, 1, 2], "snapshot_epochs": [1, 2, 4], "finetune_epochs": 2, "cost_batch": 64,
                "cost_reps": 5, "cka_images": 1000},
        "gpu": {"dataset": "mnist10k", "n_train": 8000, "n_test": 2000, "img_size": 32, "size": "small",
                "epochs": 20, "batch_size": 128, "blr": 1.5e-3, "encoder_depths": [1, 2, 4, 8, 12],
                "decoder_depths": [1, 2, 4, 8], "key_decoder_depth": 4, "patch_size": 4, "mask_ratio": 0.75,
                "grid_depth": 4, "grid_decoder_depth": 4, "mask_ratios": [0.5, 0.75, 0.9],
                "patch_sizes": [2, 4, 8], "seeds": [0, 1, 2], "snapshot_epochs": [5, 10, 20],
                "finetune_epochs": 10, "cost_batch": 128, "cost_reps": 10, "cka_images": 2000},
    },
    "scoreboard": {p: {} for p in PROFILE_NAMES},
}


def settings(notebook: str, profile: str) -> dict[str, Any]:
    """A copy of ``notebook``'s settings for ``profile``."""
    one_of("profile", profile, PROFILE_NAMES)
    one_of("notebook", notebook, NOTEBOOKS)
    return dict(NOTEBOOKS[notebook][profile])


def _seed(name: str, v: Any) -> int:
    return positive_int(name, v, minimum=0)


def _device(name: str, v: Any) -> str:
    if not isinstance(v, str) or not (v in ("auto", "cpu", "cuda") or v.startswith("cuda:")):
        raise ParameterError(name, "one of 'auto', 'cpu', 'cuda', 'cuda:N'", v)
    return v


def _progress(name: str, v: Any) -> bool | None:
    if v is not None and not isinstance(v, bool):
        raise ParameterError(name, "True, False or None (None: on unless CI)", v)
    return v


def _ratio_list(name: str, v: Any) -> list[float]:
    if not isinstance(v, (list, tuple)) or not v:
        raise ParameterError(name, "a non-empty list of numbers in (0, 1)", v)
    return [in_open_unit(f"{name}[{i}]", x) for i, x in enumerate(v)]


def _int_list(name: str, v: Any) -> list[int]:
    if not isinstance(v, (list, tuple)) or not v:
        raise ParameterError(name, "a non-empty list of positive integers", v)
    return [positive_int(f"{name}[{i}]", x) for i, x in enumerate(v)]


def _seeds(name: str, v: Any) -> list[int]:
    if not isinstance(v, (list, tuple)) or not v:
        raise ParameterError(name, "a non-empty list of integers >= 0", v)
    return [_seed(f"{name}[{i}]", x) for i, x in enumerate(v)]


def _optional_path(name: str, v: Any) -> str | None:
    if v is not None and not isinstance(v, str):
        raise ParameterError(name, "None or a folder path string", v)
    return v


PARAM_RULES: dict[str, Callable[[str, Any], Any]] = {
    "profile": lambda n, v: one_of(n, v, PROFILE_NAMES),
    "seed": _seed,
    "seeds": _seeds,
    "device": _device,
    "recompute": is_bool,
    "progress": _progress,
    # 0 allowed: the no-mask ablation; None: keep the profile's value
    "mask_ratio": lambda n, v: None if v is None else in_range(n, v, 0.0, 1.0, high_open=True),
    "mask_ratios": _ratio_list,
    "patch_size": lambda n, v: positive_int(n, v),
    "patch_sizes": _int_list,
    "lam": lambda n, v: in_range(n, v, 0.0),
    "epochs": lambda n, v: positive_int(n, v),
    "data_root": _optional_path,
    "dataset": lambda n, v: one_of(n, v, ("mnist10k", "shapes", "natural", "cifar10", "imagefolder")),
    "encoder_depths": _int_list,  # bisulco_sweeps
    "decoder_depths": _int_list,  # bisulco_sweeps
}


_CORE = ("profile", "seed", "device", "recompute", "progress")


def validate_params(params: dict[str, Any]) -> dict[str, Any]:
    """Validate notebook parameters; raise a one-line ParameterError for the first bad one."""
    out = {}
    for name, value in params.items():
        rule = PARAM_RULES.get(name)
        if rule is None:
            raise ParameterError("parameter name", "one of " + ", ".join(sorted(PARAM_RULES)), name)
        # a notebook-specific parameter left at None keeps the profile's value
        out[name] = None if (value is None and name not in _CORE) else rule(name, value)
    return out
