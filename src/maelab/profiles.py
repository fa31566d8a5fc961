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
    "zhang_mask_graph": {"smoke": {}, "cpu": {}, "gpu": {}},
    # ---- zhang_umae: settings per profile (edited only by the zhang_umae notebook's author) ----
    "zhang_umae": {"smoke": {}, "cpu": {}, "gpu": {}},
    # ---- zhang_ablations: settings per profile (edited only by the zhang_ablations notebook's author) ----
    "zhang_ablations": {"smoke": {}, "cpu": {}, "gpu": {}},
    # ---- bisulco_linear_mae: settings per profile (edited only by the bisulco_linear_mae notebook's author) ----
    "bisulco_linear_mae": {"smoke": {}, "cpu": {}, "gpu": {}},
    # ---- bisulco_ising: settings per profile (edited only by the bisulco_ising notebook's author) ----
    "bisulco_ising": {"smoke": {}, "cpu": {}, "gpu": {}},
    # ---- bisulco_jacobians: settings per profile (edited only by the bisulco_jacobians notebook's author) ----
    "bisulco_jacobians": {"smoke": {}, "cpu": {}, "gpu": {}},
    # ---- bisulco_sweeps: settings per profile (edited only by the bisulco_sweeps notebook's author) ----
    "bisulco_sweeps": {"smoke": {}, "cpu": {}, "gpu": {}},
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
}


def validate_params(params: dict[str, Any]) -> dict[str, Any]:
    """Validate notebook parameters; raise a one-line ParameterError for the first bad one."""
    out = {}
    for name, value in params.items():
        rule = PARAM_RULES.get(name)
        if rule is None:
            raise ParameterError("parameter name", "one of " + ", ".join(sorted(PARAM_RULES)), name)
        out[name] = rule(name, value)
    return out
