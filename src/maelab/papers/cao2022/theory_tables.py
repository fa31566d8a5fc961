"""The stored results of the ``cao_theory`` page: what each computes and the config it is stored under.

**Paper-specific:** one pair per stored result of the page -- ``*_config(S, seed)``, the config dict handed to
``ctx.load_or_compute`` (it lists every setting the computation reads, so a changed setting recomputes and an
unchanged one finds the committed record), and the computation itself, which returns the tables the page plots
and :mod:`maelab.papers.cao2022.evidence` decides on:

* ``thm51_rates``: :func:`rate_tables`, Theorem 5.1's layer change against the grid side n for the four
  variants of :func:`rate_variants` (:func:`maelab.papers.cao2022.kernels.rate_study`);
* ``thm52_conditioning``: :func:`conditioning_tables`, Theorem 5.2's condition numbers in 1-D and 2-D and the
  noisy recovery of a smooth map (:mod:`.tikhonov`);
* ``prop31_selection``: :func:`selection_tables`, Proposition 3.1's block-CUR study on natural and synthetic
  low-rank images, the existence check of the factor embedding and the identifiability deficiency
  (:mod:`.lowrank`).

Every computation runs its linear algebra on one BLAS thread (``threadpool_limits(1)``): the machine the book's
CPU results were computed on is shared, one thread is faster there and gives the same numbers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from maelab import data
from maelab._validate import ParameterError, positive_int

from . import kernels, lowrank, tikhonov
from .settings import CaoTheorySettings

__all__ = [
    "rate_variants",
    "rates_config",
    "rate_tables",
    "slope_summary",
    "conditioning_config",
    "conditioning_tables",
    "selection_config",
    "selection_tables",
]


def _check(S: Any, seed: Any) -> int:
    if not isinstance(S, CaoTheorySettings):
        raise ParameterError("S", "the cao_theory page's settings (CaoTheorySettings)", type(S).__name__)
    return positive_int("seed", seed, minimum=0)


def rate_variants(kernel: str) -> dict[str, tuple]:
    """The four variants of the rate study: name -> (scaling, width setting, normalisation, map kind, kernel).

    The kernel of fixed width in grid units (what the proof's step (35) needs), of fixed width in the unit square
    (Assumption (B_3)), the unnormalised kernel and a BV map with a jump; the names are the page's row labels.
    """
    if kernel not in kernels.KERNELS:
        raise ParameterError("kernel", "one of " + ", ".join(map(repr, kernels.KERNELS)), kernel)
    return {
        "grid width, softmax, smooth": ("grid", "width_grid", "softmax", "smooth", kernel),
        "fixed gamma, softmax, smooth": ("continuum", "width_continuum", "softmax", "smooth", kernel),
        "grid width, unnormalised, smooth": ("grid", "width_grid", "none", "smooth", kernel),
        "grid width, softmax, disk (jump)": ("grid", "width_grid", "softmax", "disk", kernel),
    }


def rates_config(S: CaoTheorySettings, seed: int) -> dict[str, Any]:
    """The config of the stored result ``thm51_rates`` (the profile is added by the store)."""
    seed = _check(S, seed)
    return {
        "variants": rate_variants(S.kernel),
        "seed": seed,
        **S.pick("ns", "n_maps", "channels", "kernel", "width_grid", "width_continuum"),
    }


def rate_tables(S: CaoTheorySettings, seed: int) -> dict[str, pd.DataFrame]:
    """Layer change and log-log slope per variant, norm and feature map (Theorem 5.1).

    Returns ``changes`` (variant, norm, map, n, change, constant: one row per grid side) and ``slopes``
    (variant, norm, map, slope: the fitted rate of each map).
    """
    seed = _check(S, seed)
    changes, slopes = [], []
    with threadpool_limits(1):
        for name, (scaling, wname, norm, kind, kern) in rate_variants(S.kernel).items():
            r = kernels.rate_study(
                S.ns,
                n_maps=S.n_maps,
                d=S.channels,
                width=getattr(S, wname),
                scaling=scaling,
                kernel=kern,
                normalisation=norm,
                kind=kind,
                seed=seed,
            )
            for nm in kernels.NORMS:
                for m in range(S.n_maps):
                    slopes.append({"variant": name, "norm": nm, "map": m, "slope": r["slope"][nm][m]})
                    changes += [
                        {
                            "variant": name,
                            "norm": nm,
                            "map": m,
                            "n": int(n),
                            "change": c,
                            "constant": r["constant"][m, j],
                        }
                        for j, (n, c) in enumerate(zip(S.ns, r["change"][nm][m]))
                    ]
    return {"changes": pd.DataFrame(changes), "slopes": pd.DataFrame(slopes)}


def slope_summary(slopes: pd.DataFrame, variants: Any) -> pd.DataFrame:
    """The page's table of slopes: "mean [low, high]" (95 % Student-t interval over maps) per variant and norm.

    ``slopes`` is :func:`rate_tables`' ``slopes``; rows follow ``variants`` (names), columns ``kernels.NORMS``.
    """
    if not isinstance(slopes, pd.DataFrame) or not {"variant", "norm", "slope"} <= set(slopes.columns):
        raise ParameterError("slopes", "a table with columns variant, norm, slope", type(slopes).__name__)
    return (
        slopes.groupby(["variant", "norm"])["slope"]
        .apply(lambda s: "{:+.2f} [{:+.2f}, {:+.2f}]".format(*kernels.mean_ci(s)))
        .unstack("norm")
        .reindex(index=list(variants), columns=list(kernels.NORMS))
    )


def conditioning_config(S: CaoTheorySettings, seed: int) -> dict[str, Any]:
    """The config of the stored result ``thm52_conditioning`` (the profile is added by the store)."""
    seed = _check(S, seed)
    return {
        "kernel": "gaussian",
        "seed": seed,
        **S.pick("tik_ns", "tik_ns_2d", "tik_betas", "tik_width", "tik_sigma", "tik_seeds", "claim_n", "claim_beta"),
    }


def conditioning_tables(S: CaoTheorySettings, seed: int) -> dict[str, pd.DataFrame]:
    """Condition numbers of the first- and second-kind equations (Theorem 5.2) and the noisy recovery.

    Returns ``cond_1d`` / ``cond_2d`` (:func:`maelab.papers.cao2022.tikhonov.conditioning_study` with a ``dim``
    column) and ``recovery``: :func:`maelab.papers.cao2022.tikhonov.recovery` of the middle row of a smooth map at
    ``claim_n``, per noise seed ``0 .. tik_seeds - 1`` and beta in (0, ``claim_beta``).
    """
    seed = _check(S, seed)
    with threadpool_limits(1):
        one = tikhonov.conditioning_study(S.tik_ns, S.tik_betas, width=S.tik_width, dim=1, sigma=S.tik_sigma, seed=seed)
        two = tikhonov.conditioning_study(
            S.tik_ns_2d, S.tik_betas, width=S.tik_width, dim=2, sigma=S.tik_sigma, seed=seed
        )
        a, _ = tikhonov.attention_operator(S.claim_n, S.tik_width, dim=1)
        u = kernels.feature_map("smooth", S.claim_n, d=1, seed=seed)[:, S.claim_n // 2, 0]
        rec = [
            {"seed": s, "beta": b, **tikhonov.recovery(a, u, b, S.tik_sigma, seed=s)}
            for s in range(S.tik_seeds)
            for b in (0.0, S.claim_beta)
        ]
    return {
        "cond_1d": pd.DataFrame(one).assign(dim=1),
        "cond_2d": pd.DataFrame(two).assign(dim=2),
        "recovery": pd.DataFrame(rec),
    }


def selection_config(S: CaoTheorySettings, seed: int) -> dict[str, Any]:
    """The config of the stored result ``prop31_selection`` (the profile is added by the store)."""
    seed = _check(S, seed)
    return {
        "images": "natural test crops, grey",
        "seed": seed,
        **S.pick("lr_n", "lr_patch_sides", "lr_ranks", "lr_images", "lr_draws"),
    }


def selection_tables(S: CaoTheorySettings, seed: int) -> dict[str, pd.DataFrame]:
    """Proposition 3.1 on grey natural crops and synthetic rank-r images, per patch side ``N_c`` and rank r.

    Returns ``study`` (:func:`maelab.papers.cao2022.lowrank.selection_study` rows, ``images`` natural or
    synthetic), ``existence`` (the factor embedding of a permutation selection reconstructs a rank-r truncation:
    error relative to the truncation error ``eps``, where 2 r <= N_c) and ``deficiency`` (the identifiability
    deficiency of each selection kind, where r <= N_c and the image is at most 64 px: the check is dense).
    """
    seed = _check(S, seed)
    rows, exist, defic = [], [], []
    with threadpool_limits(1):
        for nc in S.lr_patch_sides:
            size = S.lr_n * nc
            crops = (
                data.load("natural", "test", n=S.lr_images, seed=seed, size=size, channels=1, progress=False)
                .images[:, 0]
                .double()
                .numpy()
            )
            ranks = [r for r in S.lr_ranks if r <= size]
            rows += lowrank.selection_study({"natural": list(crops)}, S.lr_n, ranks, draws=S.lr_draws, seed=seed)
            for r in ranks:
                synth = [lowrank.low_rank_image(size, r, seed=seed + i) for i in range(S.lr_images)]
                rows += [
                    dict(row, images="synthetic")
                    for row in lowrank.selection_study({"synthetic": synth}, S.lr_n, [r], draws=S.lr_draws, seed=seed)
                ]
                if 2 * r <= nc:
                    for i, img in enumerate(crops):
                        sel = lowrank.permutation_selection(S.lr_n, seed=seed + i)
                        out = lowrank.factor_reconstruct(lowrank.factor_embedding(img, sel, nc, r), sel, nc, r)
                        _, eps = lowrank.truncate_rank(img, r)
                        exist.append(
                            {
                                "N_c": nc,
                                "r": r,
                                "image": i,
                                "eps": eps,
                                "ratio": np.linalg.norm(img - out) / np.linalg.norm(img) / eps,
                            }
                        )
                if r <= nc and size <= 64:
                    for kind in lowrank.SELECTIONS:
                        sel = lowrank.selection(kind, S.lr_n, seed)
                        deficiency = lowrank.identifiability_deficiency(sel, nc, r, seed=seed)
                        defic.append({"N_c": nc, "r": r, "selection": kind, "deficiency": deficiency})
    return {"study": pd.DataFrame(rows), "existence": pd.DataFrame(exist), "deficiency": pd.DataFrame(defic)}
