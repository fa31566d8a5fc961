"""The claims scoreboard: each paper claim is a row whose verdict is computed by code from stored evidence.

A :class:`Claim` (in ``REGISTRY``) says what the paper claims, where, the paper's value, and a :class:`Criterion`.
A notebook measures the *evidence* (a value with its spread over seeds, or a series) and records it with
:meth:`maelab.book.Context.claim`, which stores it through :func:`maelab.store.load_or_compute` (so it carries
provenance). The scoreboard page gathers every notebook's stored evidence and calls :func:`verdict`.

Verdicts: ``supported``, ``not supported``, ``inconclusive``. With n > 1 samples the criteria use a two-sided
interval of ``z`` standard errors (default z = 2): only an interval wholly on one side of a threshold decides.

Paper issues add rows to ``REGISTRY`` (one list per paper, below).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

from ._validate import ParameterError, one_of

SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE = "supported", "not supported", "inconclusive"
VERDICTS = (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE)


@dataclasses.dataclass(frozen=True)
class Evidence:
    """What a notebook measured for a claim.

    ``value``: the statistic (a mean over seeds when ``samples`` is given). ``samples``: per-seed values (or
    per-seed paired differences). ``x``/``y``/``y_err``: a series for monotone-trend criteria (``y_err`` = standard
    error of each point). ``note``: one line on how it was measured. ``unmet``: empty, or the stated
    precondition of the measurement that failed (e.g. "fine-tuning did not learn"): the verdict is then
    ``inconclusive`` whatever the numbers, so a comparison of two broken runs can never count as support.
    """

    value: float | None = None
    samples: tuple[float, ...] | None = None
    x: tuple[float, ...] | None = None
    y: tuple[float, ...] | None = None
    y_err: tuple[float, ...] | None = None
    note: str = ""
    unmet: str = ""

    @property
    def n(self) -> int:
        return len(self.samples) if self.samples else 1

    @property
    def std(self) -> float | None:
        if not self.samples or len(self.samples) < 2:
            return None
        m = sum(self.samples) / len(self.samples)
        return math.sqrt(sum((s - m) ** 2 for s in self.samples) / (len(self.samples) - 1))

    @property
    def sem(self) -> float:
        s = self.std
        return 0.0 if s is None else s / math.sqrt(self.n)

    def to_dict(self) -> dict:
        """JSON-ready fields; an empty ``unmet`` is left out, so records stored before it existed stay unchanged."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(self).items()
                if not (k == "unmet" and not v)}

    @classmethod
    def from_dict(cls, d: dict) -> "Evidence":
        kw = {k: (tuple(float(a) for a in v) if isinstance(v, list) else v) for k, v in d.items()}
        return cls(**kw)

    @classmethod
    def from_samples(cls, samples, note: str = "", unmet: str = "") -> "Evidence":
        samples = tuple(float(s) for s in samples)
        if not samples:
            raise ParameterError("samples", "a non-empty sequence of numbers", samples)
        return cls(value=sum(samples) / len(samples), samples=samples, note=note, unmet=unmet)


class Criterion:
    """Base class: ``decide(evidence) -> (verdict, one-line reason)``; ``text`` states it for the page."""

    text: str = ""

    def decide(self, ev: Evidence) -> tuple[str, str]:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class Below(Criterion):
    """Supported when the value (its upper z-sigma bound, with samples) is below ``threshold``."""

    threshold: float
    z: float = 2.0

    @property
    def text(self) -> str:
        return f"value < {self.threshold:g}" + (" (mean + 2 s.e. when seeds > 1)" if self.z else "")

    def decide(self, ev: Evidence) -> tuple[str, str]:
        if ev.value is None or not math.isfinite(ev.value):
            return INCONCLUSIVE, "no finite value"
        lo, hi = ev.value - self.z * ev.sem, ev.value + self.z * ev.sem
        if hi < self.threshold:
            return SUPPORTED, f"{ev.value:.3g} < {self.threshold:g}"
        if lo >= self.threshold:
            return NOT_SUPPORTED, f"{ev.value:.3g} >= {self.threshold:g}"
        return INCONCLUSIVE, f"[{lo:.3g}, {hi:.3g}] straddles {self.threshold:g}"


@dataclasses.dataclass(frozen=True)
class Above(Criterion):
    """Supported when the value (its lower z-sigma bound, with samples) is above ``threshold``."""

    threshold: float
    z: float = 2.0

    @property
    def text(self) -> str:
        return f"value > {self.threshold:g}" + (" (mean - 2 s.e. when seeds > 1)" if self.z else "")

    def decide(self, ev: Evidence) -> tuple[str, str]:
        if ev.value is None or not math.isfinite(ev.value):
            return INCONCLUSIVE, "no finite value"
        lo, hi = ev.value - self.z * ev.sem, ev.value + self.z * ev.sem
        if lo > self.threshold:
            return SUPPORTED, f"{ev.value:.3g} > {self.threshold:g}"
        if hi <= self.threshold:
            return NOT_SUPPORTED, f"{ev.value:.3g} <= {self.threshold:g}"
        return INCONCLUSIVE, f"[{lo:.3g}, {hi:.3g}] straddles {self.threshold:g}"


@dataclasses.dataclass(frozen=True)
class Within(Criterion):
    """Supported when the z-sigma interval lies inside target +- tol; not supported when it lies outside."""

    target: float
    tol: float
    z: float = 2.0

    @property
    def text(self) -> str:
        return f"|value - {self.target:g}| <= {self.tol:g}"

    def decide(self, ev: Evidence) -> tuple[str, str]:
        if ev.value is None or not math.isfinite(ev.value):
            return INCONCLUSIVE, "no finite value"
        lo, hi = ev.value - self.z * ev.sem, ev.value + self.z * ev.sem
        a, b = self.target - self.tol, self.target + self.tol
        if a <= lo and hi <= b:
            return SUPPORTED, f"{ev.value:.3g} within {self.target:g} ± {self.tol:g}"
        if hi < a or lo > b:
            return NOT_SUPPORTED, f"{ev.value:.3g} outside {self.target:g} ± {self.tol:g}"
        return INCONCLUSIVE, f"[{lo:.3g}, {hi:.3g}] overlaps the edge of {self.target:g} ± {self.tol:g}"


@dataclasses.dataclass(frozen=True)
class PairedGreater(Criterion):
    """Per-seed paired differences (ours - baseline): one-sided paired t-test at level ``alpha``.

    Supported: one-sided p(mean > 0) < alpha. Not supported: significantly negative (one-sided p(mean < 0) < alpha).
    Otherwise (including a tie within noise) inconclusive.
    """

    alpha: float = 0.05

    @property
    def text(self) -> str:
        return f"paired difference > 0, one-sided paired t-test p < {self.alpha:g}"

    def decide(self, ev: Evidence) -> tuple[str, str]:
        if not ev.samples or len(ev.samples) < 2:
            return INCONCLUSIVE, "needs >= 2 paired samples"
        from scipy import stats

        mean, sd = ev.value, ev.std
        if sd == 0:
            p_gt = 0.0 if mean > 0 else 1.0
            p_lt = 0.0 if mean < 0 else 1.0
        else:
            p_gt = float(stats.ttest_1samp(ev.samples, 0.0, alternative="greater").pvalue)
            p_lt = float(stats.ttest_1samp(ev.samples, 0.0, alternative="less").pvalue)
        if p_gt < self.alpha:
            return SUPPORTED, f"mean diff {mean:+.3g} (n={ev.n}), p = {p_gt:.2g}"
        if p_lt < self.alpha:
            return NOT_SUPPORTED, f"mean diff {mean:+.3g} (n={ev.n}) is significantly negative, p = {p_lt:.2g}"
        return INCONCLUSIVE, f"mean diff {mean:+.3g} (n={ev.n}), p = {p_gt:.2g}"


@dataclasses.dataclass(frozen=True)
class Monotone(Criterion):
    """A series y(x) moves in ``direction`` at every step, each step beyond z standard errors.

    Supported: every consecutive step goes the stated way by more than z*sqrt(err_i^2 + err_j^2).
    Not supported: some step goes significantly the other way. Otherwise inconclusive.
    """

    direction: str = "increasing"
    z: float = 2.0

    def __post_init__(self):
        one_of("direction", self.direction, ("increasing", "decreasing"))

    @property
    def text(self) -> str:
        return f"{self.direction} at every step by > {self.z:g} s.e."

    def decide(self, ev: Evidence) -> tuple[str, str]:
        if not ev.y or len(ev.y) < 2:
            return INCONCLUSIVE, "needs a series of >= 2 points"
        err = ev.y_err or (0.0,) * len(ev.y)
        sign = 1.0 if self.direction == "increasing" else -1.0
        steps = []
        for i in range(len(ev.y) - 1):
            d = sign * (ev.y[i + 1] - ev.y[i])
            e = self.z * math.hypot(err[i], err[i + 1])
            steps.append((d, e))
        if all(d > e for d, e in steps):
            return SUPPORTED, f"all {len(steps)} steps {self.direction}"
        if any(d < -e for d, e in steps):
            k = sum(d < -e for d, e in steps)
            return NOT_SUPPORTED, f"{k} of {len(steps)} steps significantly the other way"
        return INCONCLUSIVE, "some steps within error"


@dataclasses.dataclass(frozen=True)
class Claim:
    id: str
    paper: str
    where: str
    statement: str
    paper_value: str
    criterion: Criterion
    notebook: str
    measure: str  # what our value is, in words


def verdict(claim: Claim, evidence: Evidence) -> tuple[str, str]:
    if evidence.unmet:
        return INCONCLUSIVE, f"precondition not met: {evidence.unmet}"
    v, why = claim.criterion.decide(evidence)
    assert v in VERDICTS
    return v, why


PAPERS = {
    "bisulco2025": "Bisulco et al. (ICCV 2025), From Linearity to Non-Linearity (supplement)",
    "zhang2022": "Zhang, Wang & Wang (NeurIPS 2022), How Mask Matters (U-MAE)",
    "cao2022": "Cao, Xu & Clifton (ICLR 2022), How to Understand Masked Autoencoders",
    "kong2023": "Kong et al. (ICLR 2024), Understanding MAE via Hierarchical Latent Variable Models",
}

_MASKING = [
    Claim("bisulco.eq19_21_sinc", "bisulco2025", "Supp. §F, Eq. 18–21",
          "The DFT of a 1-D mask made of rectangular pulses of width p equals the sinc-like envelope "
          "sin(πpk/D)/sin(πk/D) times a sum of phase terms (Eq. 19–20, with the exponent e^{-j2πka_i/D}).",
          "identity (exact)", Below(1e-9), "masking",
          "max |DFT − closed form| / D over random masks"),
    Claim("bisulco.eq19_as_printed", "bisulco2025", "Supp. §F, Eq. 19",
          "Eq. 19 as printed (phase e^{-j2πka_i}, without /D) gives the mask's DFT.",
          "identity (as printed)", Below(1e-9), "masking",
          "max |DFT − printed Eq. 19| / D over random masks"),
    Claim("bisulco.fig22_grating_zeros", "bisulco2025", "Supp. §F, Fig. 22",
          "Masking with square p×p patches on the patch grid zeros out frequencies in a grating pattern: the "
          "mask's power vanishes wherever k_x or k_y is a non-zero multiple of D/p.",
          "zeros (exact)", Below(1e-20), "masking",
          "max power of the 2-D mask at grating frequencies / total power"),
    Claim("bisulco.fig22_smoothing", "bisulco2025", "Supp. §F, Fig. 22 and text",
          "Masking acts as spectral smoothing analogous to sinc filtering: larger patches add less "
          "high-frequency power to the masked image.",
          "qualitative (Fig. 22)", Monotone("decreasing"), "masking",
          "high-frequency power fraction of masked photos (|k| > D/4) for p = 4, 8, 16, mean ± s.e. over crops"),
]


# ---- zhang_mask_graph: claim rows (edited only by the zhang_mask_graph notebook's author) ----
_ZHANG_MASK_GRAPH: list[Claim] = [
    Claim("zhang.fig2b_intra_decreases", "zhang2022", "Sec. 4.2, Fig. 2b",
          "The average l2 distance between intra-class images decreases as the mask ratio grows.",
          "decreasing (Fig. 2b)", Monotone("decreasing"), "zhang_mask_graph",
          "mean intra-class distance on mnist10k (zero-filled masked images, every pair of patches, independent "
          "masks; exact over masks) at rho = 0, 0.2, 0.4, 0.6, 0.8, 0.95; mean ± s.e. over seeds of image pairs"),
    Claim("zhang.fig2b_inter_decreases", "zhang2022", "Sec. 4.2, Fig. 2b",
          "The average l2 distance between inter-class images also decreases as the mask ratio grows.",
          "decreasing (Fig. 2b)", Monotone("decreasing"), "zhang_mask_graph",
          "as zhang.fig2b_intra_decreases, inter-class pairs"),
    Claim("zhang.fig2c_sweet_spot_mnist", "zhang2022", "Sec. 4.2, Fig. 2c",
          "The relative distance (intra-class over inter-class) first decreases, then increases with the mask "
          "ratio; its minimum, the sweet spot, lies at rho = 0.7.",
          "rho = 0.7", Within(0.7, 0.1), "zhang_mask_graph",
          "argmin over the rho grid of the intra/inter ratio of mean distances (zero-filled, every pair, exact over "
          "masks) on mnist10k, one argmin per seed of image pairs; mean ± 2 s.e. must lie in [0.6, 0.8]"),
    Claim("zhang.fig2c_sweet_spot_shapes", "zhang2022", "Sec. 4.2, Fig. 2c",
          "As zhang.fig2c_sweet_spot_mnist, on the procedural shapes dataset.",
          "rho = 0.7", Within(0.7, 0.1), "zhang_mask_graph",
          "as zhang.fig2c_sweet_spot_mnist, on shapes (32 px RGB)"),
    Claim("zhang.thm42_residual_decreases", "zhang2022", "Sec. 4.2 with Thm. 4.2",
          "A larger mask ratio improves the connectivity of the augmentation graph, i.e. decreases the residual "
          "eigenvalues sum_{i>k} lambda_i^2 of Theorem 4.2.",
          "qualitative", Monotone("decreasing"), "zhang_mask_graph",
          "exact sum_{i>k} lambda_i^2 of the normalised augmentation graph of a 3x3, 3-symbol image world "
          "(every image and mask enumerated; views keep positions) at k = claim_k, for rho = 1/9 ... 8/9"),
    Claim("zhang.thm42_alpha_increases", "zhang2022", "Sec. 4.2 with Thm. 4.1",
          "The mask-induced label error alpha grows with the mask ratio.",
          "qualitative", Monotone("increasing"), "zhang_mask_graph",
          "exact alpha = E 1[y(x1) != y(x)] (Bayes label of the view) in the same image world, rho = 1/9 ... 8/9"),
    Claim("zhang.thm36_collapse_floor", "zhang2022", "Thm. 3.6, Eq. 9",
          "A fully collapsed encoder (f(x1) = c for all x1) has MAE loss >= Var(x2).",
          "bound (proof)", Above(0.0), "zhang_mask_graph",
          "(test loss of a micro-MAE decoder trained behind a constant encoder output - Var(x2)) / Var(x2), "
          "per (seed, mask ratio), mnist10k, norm_pix targets"),
    Claim("zhang.thm36_mae_avoids_collapse", "zhang2022", "Sec. 3.3 (after Thm. 3.6)",
          "MAE training does not end in full collapse: a trained MAE's loss falls below the collapse floor Var(x2).",
          "qualitative", Above(0.0), "zhang_mask_graph",
          "(Var(x2) - test loss of a micro MAE pre-trained at rho = 0.75) / Var(x2), mnist10k"),
]

# ---- zhang_umae: claim rows (edited only by the zhang_umae notebook's author) ----
_ZHANG_UMAE: list[Claim] = [
    c
    for key, label in (("shapes", "shapes"), ("mnist10k", "MNIST-10k"))
    for c in (
        Claim(f"zhang.table1_linear_{key}", "zhang2022", "Table 1 (linear probing), Sec. 5.1",
              f"On {label}, U-MAE (lambda = 0.01, m = 0.75) raises the linear-probe accuracy of MAE's features "
              "(paired by seed: same initial weights, data and masks).",
              "+9.3 points (CIFAR-10, ViT-Tiny: 59.6 -> 68.9); +3.1 to +8.5 on the other 5 settings",
              PairedGreater(), "zhang_umae",
              "per-seed U-MAE - MAE test accuracy of a logistic-regression probe on frozen [CLS] features"),
        Claim(f"zhang.table1_finetune_{key}", "zhang2022", "Table 1 (fine-tuning)",
              f"On {label}, U-MAE leaves end-to-end fine-tuning accuracy unchanged.",
              "-0.2 points (CIFAR-10, ViT-Tiny: 89.6 -> 89.4); |difference| <= 0.2 in all 6 settings",
              Within(0.0, 0.03), "zhang_umae",
              "per-seed U-MAE - MAE fine-tuning test accuracy; tolerance 3 points, about two binomial standard "
              "errors of one accuracy on our 1,000 test images (fixed before the runs)"),
        Claim(f"zhang.fig1b_rank_{key}", "zhang2022", "Sec. 3.3-3.4, Fig. 1b-c",
              f"On {label}, U-MAE's features have a higher effective rank than MAE's (it counters dimensional "
              "collapse).",
              "qualitative (ImageNet-100): U-MAE's singular values decay more slowly; its effective rank stays "
              "far above MAE's", PairedGreater(), "zhang_umae",
              "per-seed U-MAE - MAE effective rank (Roy & Vetterli) of the [CLS] features of the test images"),
        Claim(f"zhang.fig1c_mae_collapse_{key}", "zhang2022", "Sec. 3.3, Fig. 1c",
              f"On {label}, MAE's features collapse dimensionally during training: their effective rank "
              "decreases from initialisation to the end of training.",
              "qualitative (ImageNet-100): MAE's effective rank becomes smaller and smaller along training",
              PairedGreater(), "zhang_umae",
              "per-seed MAE effective rank of the test [CLS] features at initialisation minus at the last epoch"),
        Claim(f"zhang.fig3b_online_{key}", "zhang2022", "Sec. 5.2, Fig. 3b",
              f"On {label}, U-MAE's online linear accuracy is above MAE's along training.",
              "qualitative (ImageNet-100): U-MAE above MAE at all training epochs",
              PairedGreater(), "zhang_umae",
              "per-seed mean over the evaluated epochs of U-MAE - MAE online-classifier test accuracy"),
    )
]

# ---- zhang_ablations: claim rows (edited only by the zhang_ablations notebook's author) ----
_ZHANG_ABLATIONS: list[Claim] = [
    Claim("zhang.table3_lambda_helps", "zhang2022", "§5.2, Table 3",
          "A small uniformity coefficient improves MAE's linear probe: U-MAE with λ = 1e-2 beats λ = 0 (plain MAE).",
          "67.5 (λ = 1e-2) vs 61.2 (λ = 0), ImageNet-100, ViT-B", PairedGreater(), "zhang_ablations",
          "per-seed linear-probe accuracy at λ = 1e-2 minus at λ = 0 (mask 0.75, same seed)"),
    Claim("zhang.table3_lambda_best", "zhang2022", "§5.2, Table 3",
          "λ = 1e-2 is the best coefficient of the sweep {0, 1e-3, 1e-2, 1e-1, 1}.",
          "67.5 at 1e-2; next best 65.9 at 1e-3", PairedGreater(), "zhang_ablations",
          "per-seed linear-probe accuracy at λ = 1e-2 minus the best other λ of the same seed"),
    Claim("zhang.table3_large_lambda_hurts", "zhang2022", "§5.2, Table 3",
          "Over-large coefficients hurt: accuracy at λ ≥ 1e-1 falls well below that at λ = 1e-2.",
          "45.1 (1e-1), 47.0 (1) vs 67.5 (1e-2)", PairedGreater(), "zhang_ablations",
          "per-seed linear-probe accuracy at λ = 1e-2 minus the best of λ ≥ 1e-1"),
    Claim("zhang.table3_large_lambda_below_mae", "zhang2022", "§5.2, Table 3",
          "Over-large coefficients are worse than no uniformity term at all: accuracy at λ ≥ 1e-1 is below "
          "plain MAE (λ = 0).",
          "45.1 (1e-1), 47.0 (1) vs 61.2 (0)", PairedGreater(), "zhang_ablations",
          "per-seed linear-probe accuracy at λ = 0 minus the best of λ ≥ 1e-1"),
    Claim("zhang.table2_usimmim", "zhang2022", "§5.1, Table 2",
          "The uniformity term also helps SimMIM: U-SimMIM (λ = 0.01, mask 0.6) has a higher linear probe than "
          "SimMIM.",
          "61.1 vs 54.3 (+6.8), ImageNet-100, ViT-B", PairedGreater(), "zhang_ablations",
          "per-seed linear-probe accuracy of U-SimMIM minus SimMIM (same seed)"),
    Claim("zhang.sec32_no_mask", "zhang2022", "§3.2 (after Assumption 3.1)",
          "Without masking MAE learns much worse features: its linear probe drops when the mask ratio goes from "
          "0.75 to 0 (a plain autoencoder).",
          "61.2 (mask 0.75) vs 17.4 (no mask), ImageNet-100", PairedGreater(), "zhang_ablations",
          "per-seed linear-probe accuracy of MAE at mask 0.75 minus at mask 0 (same seed)"),
]

# ---- bisulco_linear_mae: claim rows (edited only by the bisulco_linear_mae notebook's author) ----
_BISULCO_LINEAR_MAE: list[Claim] = [
    Claim("bisulco.lemma1_monte_carlo", "bisulco2025", "Supp. §C, Lemma 1",
          "The expected linear-MAE loss over Bernoulli patch masks is ||X − (1−m)XAB||² + m(1−m)||GAB||² "
          "with GᵀG = Blkdiag_p(XᵀX).",
          "identity (exact)", Below(4.0, z=0.0), "bisulco_linear_mae",
          "max over (m, p) of |Monte-Carlo mean − Lemma 1| / Monte-Carlo s.e. (real crops, A B = a closed-form "
          "optimum)"),
    Claim("bisulco.thm1_sgd_loss_gap", "bisulco2025", "Supp. §A, Theorem 1 (eq. 12–14)",
          "A linear MAE trained by SGD with sampled masks reaches the closed-form minimum "
          "Tr(XᵀX) − (1−m)Σ_{i≤k} λ_i(C), C = XᵀX V⁻¹ XᵀX.",
          "minimum of eq. 12", Below(1e-3), "bisulco_linear_mae",
          "relative gap (loss − closed form) / closed form after sampled-mask Adam only; per seed the max over "
          "(m, p) configurations; mean + 2 s.e. over seeds"),
    Claim("bisulco.thm1_subspace", "bisulco2025", "Supp. §A, Theorem 1 and Lemma 2",
          "The trained decoder's row space is spanned by the top-k eigenvectors of C.",
          "top-k eigenvectors of C", Below(1.0), "bisulco_linear_mae",
          "largest principal angle (degrees) between the decoder row space and the top-k eigenvectors of C, "
          "after sampled-mask Adam + exact-expected-loss polish; per seed the max over (m, p); mean + 2 s.e."),
    Claim("bisulco.thm1_m0_pca", "bisulco2025", "Supp. §A, Theorem 1 at m = 0",
          "Without masking (m = 0) the linear MAE is PCA: V = XᵀX, C = XᵀX.",
          "PCA", Below(1.0), "bisulco_linear_mae",
          "largest principal angle (degrees) between the trained m = 0 decoder and the top-k right singular "
          "vectors of X (numpy SVD); mean + 2 s.e. over seeds"),
    Claim("bisulco.lemma6_mean_variance", "bisulco2025", "Supp. §B and Lemma 6",
          "For a linear f the MAE loss is ||x − f(μ)||² − ||f(μ)||² + ∫||f(r⊙x)||²dr with μ the mean masked "
          "image: fit the mean masked image, minimise the variance of predictions over masks.",
          "identity (exact)", Below(4.0, z=0.0), "bisulco_linear_mae",
          "max over m of |Monte-Carlo loss − Lemma 6 expression| / Monte-Carlo s.e."),
    Claim("bisulco.lemma4_small_m", "bisulco2025", "Supp. §B (text after Lemma 4's statement)",
          "The Taylor approximation around 0 (Lemma 4) \"is only valid for small masking ratio\": its error grows "
          "with m.",
          "qualitative", Monotone("increasing"), "bisulco_linear_mae",
          "relative error |Lemma 4 − Monte-Carlo loss| / loss of a tanh autoencoder f(x) = s·tanh(xA/s)B, "
          "against m; ± s.e. of the Monte-Carlo loss"),
]

# ---- bisulco_ising: claim rows (edited only by the bisulco_ising notebook's author) ----
_BISULCO_ISING: list[Claim] = [
    Claim("bisulco.fig21_scale_grows_with_m", "bisulco2025", "Supp. §E, Fig. 21; main text Fig. 1",
          "Raising the masking ratio biases the linear MAE towards long-range correlations: the spatial scale of "
          "its reconstruction weights AB grows with m.",
          "qualitative (Fig. 21)", Monotone("increasing"), "bisulco_ising",
          "decay length of mean |(AB)_ij| against torus distance, closed form on Ising samples at T_c, rank d/4, "
          "m = 0.01 … 0.99 at fixed p; mean ± s.e. over independent sample draws"),
    Claim("bisulco.fig20_scale_grows_with_p", "bisulco2025", "Supp. §E, Fig. 20; main text Fig. 1",
          "Increasing the patch size at fixed masking ratio biases the encoder towards long-range correlations: "
          "the spatial scale of AB grows with p.",
          "qualitative (Fig. 20)", Monotone("increasing"), "bisulco_ising",
          "decay length of mean |(AB)_ij| against torus distance at m = 0.5, p = 2 … 16, rank d/4; mean ± s.e. "
          "over sample draws"),
    Claim("bisulco.fig21_high_vs_low_m", "bisulco2025", "Supp. §E, Fig. 21",
          "p = 16, m = 0.99 captures longer-range correlations than p = 8, m = 0.01.",
          "qualitative (Fig. 21)", PairedGreater(), "bisulco_ising",
          "paired difference of decay lengths, (p 16, m 0.99) − (p 8, m 0.01), per sample draw, rank d/4"),
    Claim("bisulco.fig1_ae_dae_shortest", "bisulco2025", "Main text Fig. 1 (as summarised in the supplement)",
          "Plain and denoising autoencoders learn shorter-range features than MAEs.",
          "qualitative", PairedGreater(), "bisulco_ising",
          "per sample draw: smallest decay length among the MAEs of Figs. 20–21 (m, p) ∈ {(0.5, 8), (0.5, 16), "
          "(0.99, 16)} minus the larger of AE (= PCA) and Gaussian DAE, rank d/4"),
]

# ---- bisulco_jacobians: claim rows (edited only by the bisulco_jacobians notebook's author) ----
_BISULCO_JACOBIANS: list[Claim] = [
    Claim("bisulco.jac_linear_spread_vs_m", "bisulco2025", "Main text Fig. 1; Supp. Fig. 13C (linear MAE)",
          "For the optimal linear MAE (Theorem 1) on natural-photo crops, the weights an output pixel puts on the "
          "input spread further as the mask ratio m grows (patch size as in Fig. 13, p = 8).",
          "qualitative (Fig. 1, 13C)", Monotone("increasing"), "bisulco_jacobians",
          "half-mass radius (px) of the columns of W = A*B*, mean over central output pixels; mean ± s.e. over "
          "data seeds; m = 0.1 … 0.9"),
    Claim("bisulco.jac_linear_spread_vs_p", "bisulco2025", "Main text Fig. 1; Supp. Figs. 13C, 20",
          "For the optimal linear MAE on natural-photo crops, the weights spread further as the patch size p grows "
          "(mask ratio as in Fig. 13, m = 0.8).",
          "qualitative (Fig. 1, 13C, 20)", Monotone("increasing"), "bisulco_jacobians",
          "half-mass radius (px) of the columns of W = A*B*, mean over central output pixels; mean ± s.e. over "
          "data seeds; p = 2, 4, 8"),
    Claim("bisulco.jac_linear_ae_most_local", "bisulco2025", "Main text Fig. 1; Supp. Fig. 13C",
          "The plain linear autoencoder (m = 0, same bottleneck k) has more local weights than the linear MAE at "
          "every mask ratio and patch size tried.",
          "qualitative (Fig. 1, 13C)", Above(0.0), "bisulco_jacobians",
          "min over MAE (m, p) of [MAE half-mass radius − AE half-mass radius] (px), per data seed"),
    Claim("bisulco.jac_mae_spread_vs_m", "bisulco2025", "Main text Fig. 1; Supp. Figs. 5, 13A",
          "For a nonlinear ViT MAE (patch 8), the Jacobian of a masked output pixel with respect to the visible "
          "input spreads further as the training mask ratio m grows.",
          "qualitative (Fig. 1, 5, 13A)", Monotone("increasing"), "bisulco_jacobians",
          "half-mass radius (px) of |∂ pred(r, c) / ∂ x| with the mask fixed, each model at its training m; mean ± "
          "s.e. over test images (one mask each, several masked output pixels); m = all trained ratios ≥ 0.1"),
    Claim("bisulco.jac_mae_spread_vs_p", "bisulco2025", "Main text Fig. 1; Supp. Figs. 5, 13",
          "For a nonlinear ViT MAE (m = 0.8), the masked-pixel Jacobian spreads further as the patch size grows.",
          "qualitative (Fig. 1, 5, 13)", Monotone("increasing"), "bisulco_jacobians",
          "half-mass radius (px) of the masked-pixel Jacobian; mean ± s.e. over test images; p = 4, 8, 16"),
    Claim("bisulco.jac_mae_ae_most_local", "bisulco2025", "Main text Fig. 1",
          "A nonlinear ViT autoencoder trained without masking (m = 0) has a more local Jacobian than the MAE at "
          "every mask ratio tried.",
          "qualitative (Fig. 1)", Above(0.0), "bisulco_jacobians",
          "per-image [half-mass radius of the most local MAE − that of the AE] (px), same test images; mean ± s.e."),
]

# ---- bisulco_sweeps: claim rows (edited only by the bisulco_sweeps notebook's author) ----
_BISULCO_SWEEPS: list[Claim] = [
    Claim("bisulco.fig15_encoder_depth", "bisulco2025", "Supp. §D, Fig. 15 (left) and text",
          "Linear-probe accuracy of the MAE encoder improves as the encoder gets deeper.",
          "increasing up to 12 (20) layers, CIFAR-10", Monotone("increasing"), "bisulco_sweeps",
          "linear-probe test accuracy against encoder depth at a fixed decoder depth, mean ± s.e. over seeds"),
    Claim("bisulco.fig15_best_decoder", "bisulco2025", "Supp. §D, Fig. 15 and text",
          "The optimal decoder has 2–4 layers.",
          "2–4 layers", Within(3.0, 1.0), "bisulco_sweeps",
          "decoder depth with the highest linear-probe accuracy averaged over encoder depths (one seed)"),
    Claim("bisulco.fig14_loss_not_proxy", "bisulco2025", "Supp. §D, Fig. 14 and text",
          "The reconstruction (training) loss is not a good proxy for downstream performance: lower loss does not "
          "mean higher linear-probe accuracy. Criterion: a proxy would show Spearman ρ(loss, accuracy) ≤ −0.5.",
          "qualitative", Above(-0.5), "bisulco_sweeps",
          "Spearman ρ between test reconstruction loss and linear-probe accuracy over the encoder × decoder grid"),
    Claim("bisulco.fig14_decoder_time", "bisulco2025", "Supp. §D, Fig. 14 and text",
          "Training time grows faster with the size of the decoder than with the size of the encoder.",
          "qualitative", Above(1.0), "bisulco_sweeps",
          "per-layer training-step FLOPs of the decoder / of the encoder (least-squares slopes over the depth grid; "
          "FLOPs, not wall time, because this machine is shared -- the step-time ratio is in the note)"),
    Claim("bisulco.fig16_patch_time", "bisulco2025", "Supp. §D, Fig. 16",
          "Smaller patch sizes are a lot slower to train.",
          "qualitative", PairedGreater(), "bisulco_sweeps",
          "log(training-step FLOPs at the smallest patch / at the largest patch), paired over mask ratios "
          "(step-time ratios in the note)"),
    Claim("bisulco.fig17_patch_acc", "bisulco2025", "Supp. §D, Figs. 16–17",
          "Smaller patch sizes usually perform better than larger ones.",
          "qualitative (patch 2 and 4 best)", PairedGreater(), "bisulco_sweeps",
          "linear-probe accuracy at the smallest minus at the largest patch size, paired over mask ratios"),
    Claim("bisulco.fig16_mask_time", "bisulco2025", "Supp. §D, Fig. 16",
          "Larger masking ratios lead to smaller training times.",
          "qualitative", Monotone("decreasing"), "bisulco_sweeps",
          "training-step FLOPs against mask ratio at the base patch size (step times in the note)"),
    Claim("bisulco.fig18_late_gains", "bisulco2025", "Supp. §D, Fig. 18 and text",
          "Linear-probe accuracy keeps increasing late in pre-training (long training pays off).",
          "still rising after 1000–1500 epochs", PairedGreater(), "bisulco_sweeps",
          "probe accuracy at the last epoch minus at half of training, deepest encoder, paired over seeds"),
    Claim("bisulco.fig19_cka_last_layer", "bisulco2025", "Supp. §D, Fig. 19 and text",
          "Shallower encoders are less similar (linear CKA) to the deepest encoder, particularly at the last layer.",
          "qualitative", Monotone("increasing"), "bisulco_sweeps",
          "CKA of each encoder's last layer with the deepest encoder's last layer (another seed) against depth, "
          "mean ± s.e. over seeds"),
]

_ALL = [_MASKING, _ZHANG_MASK_GRAPH, _ZHANG_UMAE, _ZHANG_ABLATIONS, _BISULCO_LINEAR_MAE, _BISULCO_ISING, _BISULCO_JACOBIANS, _BISULCO_SWEEPS]
REGISTRY: dict[str, Claim] = {c.id: c for rows in _ALL for c in rows}
assert len(REGISTRY) == sum(len(rows) for rows in _ALL), "duplicate claim ids"
