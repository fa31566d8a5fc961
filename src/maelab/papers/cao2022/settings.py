"""Settings of the Cao, Xu & Clifton (2022) notebooks: ``cao_theory`` (Thm. 5.1 (a), Thm. 5.2, Prop. 3.1; exact).

Each class holds the ``cpu`` values as defaults and ``SMOKE`` / ``GPU`` overrides; see :mod:`maelab.profiles`. The
trained-model notebook ``cao_decoder`` (Fig. 3, Lemma 6.1 / Prop. 6.2, Thm. 5.1 (b)) does not exist yet: its settings
come with it (its claim rows in :mod:`maelab.papers.cao2022.claims` show as "not yet measured" until then; the drafted
recipe is in the history of this file, commit 1a923e6). Edited only by the Cao notebooks' author.
"""

from __future__ import annotations

from ..._validate import ParameterError
from ...profiles import NotebookSettings, is_choice, is_int, is_list, is_number, notebook_settings, setting

_POSITIVE = is_number(0.0, low_open=True)
DENSE_MAX = 64  # largest 2-D grid side (and image side of the deficiency table) computed with dense matrices


@notebook_settings
class CaoTheorySettings(NotebookSettings):
    """Exact computations; all float64 numpy on one thread. Costs measured on the shared 2-core machine: the rate
    study (8 maps, n up to 128, 4 variants) ~15 s, the conditioning table (1-D n up to 128 and 2-D n up to 32)
    ~10 s, the selection study (4 + 4 images, 3 patch sides, 5 ranks, 8 draws) ~1 min (the page shows the measured
    times). smoke: fewer sizes, maps and draws. gpu: nothing here uses a GPU; more sizes, maps and draws."""

    SMOKE = {
        "ns": [8, 16, 32],
        "n_maps": 2,
        "tik_ns": [4, 8, 12, 16],
        "tik_ns_2d": [6, 8],
        "tik_seeds": 2,
        "lr_patch_sides": [4, 8],
        "lr_ranks": [1, 2, 4],
        "lr_images": 2,
        "lr_draws": 2,
    }
    GPU = {"ns": [16, 24, 32, 48, 64, 96, 128, 192, 256], "n_maps": 16, "tik_seeds": 10, "lr_images": 8, "lr_draws": 16}

    # Theorem 5.1 (a)
    ns: tuple = setting(
        [16, 24, 32, 48, 64, 96, 128],
        "grid sides n of the feature maps (patches per side)",
        is_list(is_int(2), min_len=3, increasing=True, why="the rate is a log-log fit over n"),
    )
    n_maps: int = setting(
        8, "random smooth feature maps (seeds) per variant; the rate's error bar is over these", is_int(2)
    )
    channels: int = setting(4, "channels d of each feature map", is_int())
    kernel: str = setting(
        "gaussian",
        "kernel of eq. (13): 'gaussian' (RBF) or 'laplace' (exp(-|xi|_1 / w), (B_3))",
        is_choice("gaussian", "laplace"),
    )
    width_grid: float = setting(1.0, "kernel width in grid units (patches) for the grid scaling", _POSITIVE)
    width_continuum: float = setting(
        0.1, "kernel width in unit-square coordinates for the continuum scaling", _POSITIVE
    )
    # Theorem 5.2
    tik_ns: tuple = setting(
        [4, 6, 8, 10, 12, 16, 24, 32, 48, 64, 96, 128],
        "1-D grid sizes of the conditioning study",
        is_list(is_int(2), min_len=2, increasing=True, why="the ill-posedness claim is a trend over n"),
    )
    tik_ns_2d: tuple = setting(
        [8, 12, 16, 24, 32],
        f"2-D grid sides of the conditioning study (dense, <= {DENSE_MAX})",
        is_list(is_int(2), increasing=True),
    )
    tik_betas: tuple = setting(
        [0.0, 1e-3, 1e-2, 1e-1, 1.0],
        "skip weights beta (must hold 0 = first kind and a beta > 0)",
        is_list(is_number(0.0), min_len=2, increasing=True),
    )
    tik_width: float = setting(0.1, "Gaussian kernel width in unit-square coordinates (a smoothing kernel)", _POSITIVE)
    tik_sigma: float = setting(1e-3, "standard deviation of the noise added to z", _POSITIVE)
    tik_seeds: int = setting(5, "noise draws (seeds) of the recovery experiment (>= 2 for the paired claim)", is_int(2))
    claim_n: int = setting(32, "grid size n of the noise-amplification claim (1-D)", is_int(2))
    claim_beta: float = setting(1e-2, "skip weight beta of the noise-amplification claim (> 0)", _POSITIVE)
    # Proposition 3.1
    lr_n: int = setting(8, "patches per side n (a permutation selects n of the n^2 patches)", is_int(2))
    lr_patch_sides: tuple = setting(
        [4, 8, 16], "patch sides N_c (pixels); images are n N_c pixels wide", is_list(is_int(), increasing=True)
    )
    lr_ranks: tuple = setting(
        [1, 2, 4, 8, 16], "ranks r (r <= N_c is the proposition's regime)", is_list(is_int(), increasing=True)
    )
    lr_images: int = setting(
        4, "images per kind (synthetic exactly rank r; natural grey crops truncated to rank r)", is_int(2)
    )
    lr_draws: int = setting(8, "random selections per image, rank and kind", is_int())

    def validate(self) -> None:
        if self.tik_betas[0] != 0.0:
            raise ParameterError(
                "tik_betas", "a list starting at 0.0 (the first-kind equation the claims compare with)", self.tik_betas
            )
        if self.tik_ns_2d[-1] > DENSE_MAX:
            raise ParameterError("tik_ns_2d", f"sides <= {DENSE_MAX} (dense matrices of side n^2)", self.tik_ns_2d)
        if self.lr_n * self.lr_patch_sides[0] > DENSE_MAX:
            raise ParameterError(
                "lr_patch_sides",
                f"a smallest side N_c with lr_n * N_c <= {DENSE_MAX} (the exact deficiency table)",
                self.lr_patch_sides,
            )
        if 2 * self.lr_ranks[0] > self.lr_patch_sides[-1]:
            raise ParameterError(
                "lr_ranks", "a rank r with 2 r <= some N_c (the embedding-existence claim)", self.lr_ranks
            )


NOTEBOOKS: dict[str, type] = {"cao_theory": CaoTheorySettings}
