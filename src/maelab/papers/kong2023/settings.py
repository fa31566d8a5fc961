"""Settings of the Kong et al. (2023) notebooks: ``kong_theory`` (Theorem 1 on explicit DAGs, Theorem 2 in a
linear-Gaussian hierarchy; exact, no training).

Each class holds the ``cpu`` values as defaults and ``SMOKE`` / ``GPU`` overrides; see :mod:`maelab.profiles`. The
trained-model notebooks (``kong_reconstruction``, ``kong_representations``) do not exist yet: their settings come
with them (their claim rows in :mod:`maelab.papers.kong2023.claims` show as "not yet measured" until then; the
drafted recipes are in the history of this file, commit 67dbcb6).
"""

from __future__ import annotations

from ..._validate import ParameterError
from ...profiles import NotebookSettings, is_int, is_list, is_ratio, notebook_settings, setting

EXTREMES = (0.1, 0.9)  # the ratios kong.thm1_ratio_extremes compares with claim_ratio (theory.ratio_extreme_gaps)


def _power_of_two(minimum: int):
    def check(name: str, v):
        is_int(minimum)(name, v)
        if v & (v - 1):
            raise ParameterError(name, f"a power of 2 >= {minimum}", v)
        return v

    return check


def _kept_blocks(side: int, unit: int, ratio: float) -> int:
    """Blocks of ``unit x unit`` patches MAE keeps on a ``side x side`` grid (``maelab.masking.num_keep``)."""
    return int((side // unit) ** 2 * (1 - ratio))


@notebook_settings
class KongTheorySettings(NotebookSettings):
    """Theorem 1 on explicit DAGs (Fig. 4 panels, a quadtree over a patch grid, the ``shapes`` world's DAG) and
    Theorem 2 in a linear-Gaussian hierarchy (exact covariances and sampled fits).

    cpu: the paper's Fig. 5 ratio grid, units 1, 2, 4 on a 16 x 16 quadtree (4 latent levels), 200 masks per cell
    and 5 seeds; the linear-Gaussian quadtree has 8 x 8 leaves. Estimated ~2.5 min on one core (the page shows the
    measured time). smoke: an 8 x 8 quadtree, 10 masks, 2 seeds. gpu: nothing here uses a GPU; more masks and seeds.
    """

    SMOKE = {
        "quadtree_side": 8,
        "n_masks": 10,
        "seeds": [0, 1],
        "lg_side": 4,
        "lg_n_masks": 2,
        "lg_n_samples": [200, 2000],
    }
    GPU = {"n_masks": 1000, "seeds": list(range(10)), "lg_n_masks": 10, "lg_n_samples": [200, 2000, 20000, 200000]}

    quadtree_side: int = setting(
        16, "side of the patch grid of the quadtree hierarchy (a power of 2 >= 4)", _power_of_two(4)
    )
    mask_ratios: tuple = setting(
        [0.1, 0.25, 0.5, 0.75, 0.9],
        "mask ratios of the level-of-c tables (the paper's Fig. 5 grid; must hold 0.1, 0.9 and claim_ratio)",
        is_list(is_ratio(), min_len=3, increasing=True, why="the extremes claim compares 0.1 and 0.9 with claim_ratio"),
    )
    units: tuple = setting(
        [1, 2, 4],
        "masking units (unit x unit patches) of the level-of-c tables",
        is_list(is_int(), min_len=2, increasing=True, why="the masking-unit claim is a trend over units"),
    )
    n_masks: int = setting(200, "random masks per (seed, ratio, unit) cell", is_int())
    seeds: tuple = setting(
        [0, 1, 2, 3, 4],
        "seeds of the mask draws and of the linear-Gaussian models (>= 2 for "
        "error bars; 1 makes the per-seed claims inconclusive)",
        is_list(is_int(0)),
    )
    claim_ratio: float = setting(
        0.75, "mask ratio at which the masking-unit trend is scored (one of mask_ratios)", is_ratio()
    )
    shapes_size: int = setting(32, "image side of the shapes DAG (the trained models' input size)", is_int(2))
    shapes_patch: int = setting(4, "patch size of the shapes DAG's leaves (the ViT patch)", is_int())
    lg_noise_dim: int = setting(2, "dimension of every node's noise in the linear-Gaussian tree", is_int())
    lg_side: int = setting(8, "patch-grid side of the linear-Gaussian quadtree (a power of 2 >= 2)", _power_of_two(2))
    lg_ratio: float = setting(0.5, "mask ratio of the linear-Gaussian random masks", is_ratio())
    lg_n_masks: int = setting(4, "random masks per seed in the linear-Gaussian quadtree", is_int())
    lg_n_samples: tuple = setting(
        [200, 2000, 20000],
        "sample sizes of the sampled Theorem-2 encoder (the claim uses the largest)",
        is_list(is_int(2), increasing=True),
    )

    def validate(self) -> None:
        for r in (*EXTREMES, self.claim_ratio):
            if not any(abs(r - m) < 1e-9 for m in self.mask_ratios):
                raise ParameterError(
                    "mask_ratios",
                    f"a list holding 0.1, 0.9 and claim_ratio={self.claim_ratio} (the Theorem-1 claims compare them)",
                    self.mask_ratios,
                )
        if any(abs(self.claim_ratio - r) < 1e-9 for r in EXTREMES):
            raise ParameterError(
                "claim_ratio",
                "a moderate ratio, not 0.1 or 0.9 (the extremes claim compares those with it)",
                self.claim_ratio,
            )
        leaves = self.shapes_size // self.shapes_patch
        if self.shapes_size % self.shapes_patch:
            raise ParameterError("shapes_patch", f"a divisor of shapes_size={self.shapes_size}", self.shapes_patch)
        for u in self.units:
            if self.quadtree_side % u or leaves % u:
                raise ParameterError(
                    "units",
                    f"divisors of quadtree_side={self.quadtree_side} and of the shapes grid side {leaves}",
                    self.units,
                )
            if _kept_blocks(self.quadtree_side, u, self.claim_ratio) < 1:
                raise ParameterError(
                    "units",
                    f"units that keep >= 1 block at claim_ratio={self.claim_ratio} on a "
                    f"{self.quadtree_side} x {self.quadtree_side} grid (else the trend has a hole)",
                    self.units,
                )
        if _kept_blocks(self.lg_side, 1, self.lg_ratio) < 1:
            raise ParameterError("lg_ratio", f"a ratio that keeps >= 1 of the {self.lg_side**2} patches", self.lg_ratio)


NOTEBOOKS: dict[str, type] = {"kong_theory": KongTheorySettings}
