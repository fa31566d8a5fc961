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
    error of each point). ``note``: one line on how it was measured.
    """

    value: float | None = None
    samples: tuple[float, ...] | None = None
    x: tuple[float, ...] | None = None
    y: tuple[float, ...] | None = None
    y_err: tuple[float, ...] | None = None
    note: str = ""

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
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_dict(cls, d: dict) -> "Evidence":
        kw = {k: (tuple(float(a) for a in v) if isinstance(v, list) else v) for k, v in d.items()}
        return cls(**kw)

    @classmethod
    def from_samples(cls, samples, note: str = "") -> "Evidence":
        samples = tuple(float(s) for s in samples)
        if not samples:
            raise ParameterError("samples", "a non-empty sequence of numbers", samples)
        return cls(value=sum(samples) / len(samples), samples=samples, note=note)


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
_ZHANG_MASK_GRAPH: list[Claim] = []

# ---- zhang_umae: claim rows (edited only by the zhang_umae notebook's author) ----
_ZHANG_UMAE: list[Claim] = []

# ---- zhang_ablations: claim rows (edited only by the zhang_ablations notebook's author) ----
_ZHANG_ABLATIONS: list[Claim] = []

# ---- bisulco_linear_mae: claim rows (edited only by the bisulco_linear_mae notebook's author) ----
_BISULCO_LINEAR_MAE: list[Claim] = []

# ---- bisulco_ising: claim rows (edited only by the bisulco_ising notebook's author) ----
_BISULCO_ISING: list[Claim] = []

# ---- bisulco_jacobians: claim rows (edited only by the bisulco_jacobians notebook's author) ----
_BISULCO_JACOBIANS: list[Claim] = []

# ---- bisulco_sweeps: claim rows (edited only by the bisulco_sweeps notebook's author) ----
_BISULCO_SWEEPS: list[Claim] = []

_ALL = [_MASKING, _ZHANG_MASK_GRAPH, _ZHANG_UMAE, _ZHANG_ABLATIONS, _BISULCO_LINEAR_MAE, _BISULCO_ISING, _BISULCO_JACOBIANS, _BISULCO_SWEEPS]
REGISTRY: dict[str, Claim] = {c.id: c for rows in _ALL for c in rows}
assert len(REGISTRY) == sum(len(rows) for rows in _ALL), "duplicate claim ids"
