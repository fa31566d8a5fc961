"""The claims scoreboard: each paper claim is a row whose verdict is computed by code from stored evidence.

A :class:`Claim` (a row of ``REGISTRY``) says what the paper claims, where, the paper's value, and a :class:`Criterion`.
A notebook measures the *evidence* (a value with its spread over seeds, or a series) and records it with
:meth:`maelab.book.Context.claim`, which stores it through :func:`maelab.store.load_or_compute` (so it carries
provenance). The scoreboard page gathers every notebook's stored evidence and calls :func:`verdict`.

Verdicts: ``supported``, ``not supported``, ``inconclusive``. With n > 1 samples the criteria use a two-sided
interval of ``z`` standard errors (default z = 2): only an interval wholly on one side of a threshold decides.

This module is the engine only. The rows are data next to their paper: each paper package has a module
``maelab.papers.<paper>.claims`` exporting ``CLAIMS: list[Claim]`` (keyword-argument rows). :data:`REGISTRY`
gathers them on first use by discovering those modules (``pkgutil``), so the core never imports a named paper and
adding a paper adds no line here. A claim id defined twice, or a row whose ``paper`` is not its package, is an
error (:class:`RegistryError`).
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import pkgutil
from collections.abc import Iterator, Mapping

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
        return {
            k: (list(v) if isinstance(v, tuple) else v)
            for k, v in dataclasses.asdict(self).items()
            if not (k == "unmet" and not v)
        }

    @classmethod
    def from_dict(cls, d: dict) -> Evidence:
        kw = {k: (tuple(float(a) for a in v) if isinstance(v, list) else v) for k, v in d.items()}
        return cls(**kw)

    @classmethod
    def from_samples(cls, samples, note: str = "", unmet: str = "") -> Evidence:
        samples = tuple(float(s) for s in samples)
        if not samples:
            raise ParameterError("samples", "a non-empty sequence of numbers", samples)
        return cls(value=sum(samples) / len(samples), samples=samples, note=note, unmet=unmet)


#: The learning precondition's margin, in accuracy units (0.05 = 5 points).
#:
#: A claim about a trained representation counts only where the model demonstrably learned: its probe (the
#: claim's own probe, e.g. the [CLS] linear probe) beats the *same architecture at random initialisation* (same
#: seed, so the same initial weights; same data and probe) by **more than 5 points in every seed**
#: (:class:`LearnedCheck`). Why 5 points:
#:
#: * noise. Our probes are tested on 1,000 to 10,000 images: the binomial standard error of one accuracy is at
#:   most 1.6 points on 1,000 images (at 50 %), that of a trained-minus-random difference at most 2.2 points, so a
#:   gain above 5 points is more than two of them even in the smallest test set. Asking it of *every* seed (not of
#:   the mean) means one seed that did not learn withholds the verdict; the seed-to-seed spreads measured on
#:   Fashion-MNIST are shown on the ``zhang_regime`` page against this margin.
#: * relevance. The effects the papers test are of the same order or larger (U-MAE over MAE, Zhang et al. Table 1: +3.1
#:   to +9.3 points; MAE over no mask, §3.2: +43.8 points); a model whose representation moved less than 5 points
#:   away from its random initialisation is at the very beginning of training, not in the papers' regime, and a
#:   difference between two such models says nothing about the trained representations the papers describe.
LEARNED_MARGIN = 0.05

#: The learning precondition of a claim about a trained *prediction map* where no class probe exists (unlabelled
#: data, e.g. Bisulco's masked-pixel Jacobians on photo crops): the model's reconstruction loss must be at most this
#: fraction of the loss of a trivial predictor (:class:`ReconstructionCheck`). Beating random initialisation is no
#: test there (a model that outputs the mean grey level beats it many times over); the trivial predictor is the one
#: without spatial structure -- every removed pixel filled with the mean of the visible pixels, whose Jacobian
#: weighs every visible pixel equally. Requiring at most 0.8 of its loss (a fifth of its error removed) is the same
#: relative step as the probe margin: 5 points of the 20 to 25 points of error that our random-init probes leave.
RECON_MAX_RATIO = 0.8


def _pts(x: float) -> str:
    return f"{100 * x:.1f}"


@dataclasses.dataclass(frozen=True)
class LearnedCheck:
    """The precondition "the model demonstrably learned": in every seed, the trained model's probe accuracy beats
    the same architecture's at random initialisation (same seed) by more than ``margin``.

    ``what``: the model and probe in words ("MAE, MNIST-10k, [CLS] linear probe"); ``trained`` and ``random_init``:
    accuracies in [0, 1], one per seed, paired by position; ``seeds``: their labels (default 0, 1, ...).
    ``unmet`` is "" when the check holds, else a one-line reason with the numbers (for :class:`Evidence`).
    """

    what: str
    trained: tuple[float, ...]
    random_init: tuple[float, ...]
    seeds: tuple = ()
    margin: float = LEARNED_MARGIN

    def __post_init__(self):
        for name in ("trained", "random_init"):
            v = tuple(float(a) for a in getattr(self, name))
            if not v or not all(math.isfinite(a) for a in v):
                raise ParameterError(name, "a non-empty sequence of finite accuracies (one per seed)", v)
            object.__setattr__(self, name, v)
        if len(self.trained) != len(self.random_init):
            raise ParameterError(
                "random_init", f"{len(self.trained)} values, one per seed like trained", self.random_init
            )
        seeds = tuple(self.seeds) or tuple(range(len(self.trained)))
        if len(seeds) != len(self.trained):
            raise ParameterError("seeds", f"{len(self.trained)} labels, one per value", seeds)
        object.__setattr__(self, "seeds", seeds)
        m = self.margin
        if isinstance(m, bool) or not isinstance(m, (int, float)) or not math.isfinite(m) or m < 0:
            raise ParameterError("margin", "a finite number >= 0 (accuracy units: 0.05 = 5 points)", m)

    @property
    def gains(self) -> tuple[float, ...]:
        return tuple(a - b for a, b in zip(self.trained, self.random_init))

    @property
    def met(self) -> bool:
        return min(self.gains) > self.margin

    @property
    def unmet(self) -> str:
        if self.met:
            return ""
        i = min(range(len(self.gains)), key=self.gains.__getitem__)
        return (
            f"{self.what} does not beat random init by more than {_pts(self.margin)} points in every seed "
            f"(smallest gain {100 * self.gains[i]:+.1f} points, seed {self.seeds[i]}: {_pts(self.trained[i])} % vs "
            f"{_pts(self.random_init[i])} %)"
        )

    def row(self) -> dict:
        """One row of a page's precondition table (accuracies in %)."""
        return {
            "model and probe": self.what,
            "seeds": ", ".join(map(str, self.seeds)),
            "trained (%)": ", ".join(_pts(a) for a in self.trained),
            "random init (%)": ", ".join(_pts(a) for a in self.random_init),
            "gain (points)": ", ".join(f"{100 * g:+.1f}" for g in self.gains),
            "required": f"> {_pts(self.margin)} in every seed",
            "learned": "yes" if self.met else "no",
        }


@dataclasses.dataclass(frozen=True)
class ReconstructionCheck:
    """The precondition of a claim about a trained prediction map without labels: in every run, the model's
    reconstruction loss is at most ``max_ratio`` times the loss of a trivial predictor (``reference``, named by
    ``reference_name``) on the same data and loss. ``loss``/``reference``: one value per run, ``runs``: labels."""

    what: str
    loss: tuple[float, ...]
    reference: tuple[float, ...]
    runs: tuple = ()
    reference_name: str = "the trivial predictor"
    max_ratio: float = RECON_MAX_RATIO

    def __post_init__(self):
        for name in ("loss", "reference"):
            v = tuple(float(a) for a in getattr(self, name))
            if not v or not all(math.isfinite(a) and a >= 0 for a in v):
                raise ParameterError(name, "a non-empty sequence of finite losses >= 0 (one per run)", v)
            object.__setattr__(self, name, v)
        if len(self.loss) != len(self.reference):
            raise ParameterError("reference", f"{len(self.loss)} values, one per run like loss", self.reference)
        runs = tuple(self.runs) or tuple(range(len(self.loss)))
        if len(runs) != len(self.loss):
            raise ParameterError("runs", f"{len(self.loss)} labels, one per value", runs)
        object.__setattr__(self, "runs", runs)
        f = self.max_ratio
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 < f <= 1:
            raise ParameterError("max_ratio", "a number in (0, 1]", f)

    @property
    def ratios(self) -> tuple[float, ...]:
        return tuple(a / b if b > 0 else math.inf for a, b in zip(self.loss, self.reference))

    @property
    def met(self) -> bool:
        return max(self.ratios) <= self.max_ratio

    @property
    def unmet(self) -> str:
        if self.met:
            return ""
        i = max(range(len(self.ratios)), key=self.ratios.__getitem__)
        return (
            f"{self.what}: loss not at most {self.max_ratio:g} × that of {self.reference_name} in every run "
            f"(run {self.runs[i]}: {self.loss[i]:.3g} vs {self.reference[i]:.3g}, ratio {self.ratios[i]:.2f})"
        )

    def row(self) -> dict:
        """One row of a page's precondition table."""
        return {
            "model": self.what,
            "runs": ", ".join(map(str, self.runs)),
            "loss": ", ".join(f"{a:.4g}" for a in self.loss),
            self.reference_name: ", ".join(f"{a:.4g}" for a in self.reference),
            "ratio": ", ".join(f"{r:.2f}" for r in self.ratios),
            "required": f"<= {self.max_ratio:g} in every run",
            "learned": "yes" if self.met else "no",
        }


def unmet_of(*checks: LearnedCheck | ReconstructionCheck) -> str:
    """The ``unmet`` reasons of the failed checks ("" when every check holds): joined by "; " for one or two,
    else "k of n models did not learn, e.g. <the first reason>"."""
    failed = [c for c in checks if not c.met]
    if len(failed) <= 2:
        return "; ".join(c.unmet for c in failed)
    return f"{len(failed)} of {len(checks)} models did not learn, e.g. {failed[0].unmet}"


def _num(x: float) -> str:
    """``x`` with ``:g`` when that prints it exactly, else with the shortest digits that round-trip (``repr``):
    ``Below(1 + 1e-9)`` reads "1.000000001", not "1"."""
    s = f"{x:g}"
    return s if float(s) == x else repr(float(x))


def _pair(value: float, threshold: float) -> tuple[str, str]:
    """``value`` (3 significant digits, more where needed) and ``threshold`` (:func:`_num`) as printed in a reason:
    the printed value lies on the same side of the printed threshold as the value itself, so a value of 1 + 1e-6
    above 1 + 1e-9 reads "1.000001 >= 1.000000001", never "1 >= 1" or "1 < 1"."""
    t = _num(threshold)
    side = (value > threshold) - (value < threshold)
    for digits in range(3, 18):
        v = f"{value:.{digits}g}"
        if (float(v) > threshold) - (float(v) < threshold) == side:
            return v, t
    return repr(float(value)), t


def _bound(ev: Evidence, bound: float, sign: str, z: float, threshold: float) -> str:
    """The number a one-sided criterion decided on, as its reason prints it: the value itself without spread
    ("0.912"), else the bound with its name ("mean - 2 s.e. = 0.035"), so the reason names what crossed the
    threshold (the mean alone may lie on the other side of it)."""
    if ev.sem == 0 or z == 0:
        return _pair(ev.value, threshold)[0]
    return f"mean {sign} {z:g} s.e. = {_pair(bound, threshold)[0]}"


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
        return f"value < {_num(self.threshold)}" + (" (mean + 2 s.e. when seeds > 1)" if self.z else "")

    def decide(self, ev: Evidence) -> tuple[str, str]:
        if ev.value is None or not math.isfinite(ev.value):
            return INCONCLUSIVE, "no finite value"
        lo, hi = ev.value - self.z * ev.sem, ev.value + self.z * ev.sem
        if hi < self.threshold:
            return SUPPORTED, f"{_bound(ev, hi, '+', self.z, self.threshold)} < {_num(self.threshold)}"
        if lo >= self.threshold:
            return NOT_SUPPORTED, f"{_bound(ev, lo, '-', self.z, self.threshold)} >= {_num(self.threshold)}"
        return (
            INCONCLUSIVE,
            f"[{_pair(lo, self.threshold)[0]}, {_pair(hi, self.threshold)[0]}] straddles {_num(self.threshold)}",
        )


@dataclasses.dataclass(frozen=True)
class Above(Criterion):
    """Supported when the value (its lower z-sigma bound, with samples) is above ``threshold``."""

    threshold: float
    z: float = 2.0

    @property
    def text(self) -> str:
        return f"value > {_num(self.threshold)}" + (" (mean - 2 s.e. when seeds > 1)" if self.z else "")

    def decide(self, ev: Evidence) -> tuple[str, str]:
        if ev.value is None or not math.isfinite(ev.value):
            return INCONCLUSIVE, "no finite value"
        lo, hi = ev.value - self.z * ev.sem, ev.value + self.z * ev.sem
        if lo > self.threshold:
            return SUPPORTED, f"{_bound(ev, lo, '-', self.z, self.threshold)} > {_num(self.threshold)}"
        if hi <= self.threshold:
            return NOT_SUPPORTED, f"{_bound(ev, hi, '+', self.z, self.threshold)} <= {_num(self.threshold)}"
        return (
            INCONCLUSIVE,
            f"[{_pair(lo, self.threshold)[0]}, {_pair(hi, self.threshold)[0]}] straddles {_num(self.threshold)}",
        )


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
    """The verdict on ``claim`` and its reason: "inconclusive" when a precondition is unmet (``evidence.unmet``),
    else what the claim's criterion decides from ``evidence``."""
    if evidence.unmet:
        return INCONCLUSIVE, f"precondition not met: {evidence.unmet}"
    v, why = claim.criterion.decide(evidence)
    if v not in VERDICTS:
        raise ValueError(
            f"criterion {type(claim.criterion).__name__} of claim {claim.id!r} returned verdict {v!r}; "
            f"a criterion must return one of {VERDICTS}"
        )
    return v, why


#: The papers of the book (package name -> citation), in the order of the claim registry.
PAPERS = {
    "bisulco2025": "Bisulco et al. (ICCV 2025), From Linearity to Non-Linearity (supplement)",
    "zhang2022": "Zhang, Wang & Wang (NeurIPS 2022), How Mask Matters (U-MAE)",
    "cao2022": "Cao, Xu & Clifton (ICLR 2022), How to Understand Masked Autoencoders",
    "kong2023": "Kong et al. (ICLR 2024), Understanding MAE via Hierarchical Latent Variable Models",
}


PAPERS_PACKAGE = "maelab.papers"


class RegistryError(ValueError):
    """The claim rows of the paper packages do not form a registry (duplicate id, malformed ``CLAIMS``)."""


def _paper_packages() -> list[str]:
    """Names of the subpackages of ``maelab.papers``: those of :data:`PAPERS` in its order, then any other sorted."""
    pkg = importlib.import_module(PAPERS_PACKAGE)
    found = {m.name for m in pkgutil.iter_modules(pkg.__path__) if m.ispkg}
    return [p for p in PAPERS if p in found] + sorted(found - set(PAPERS))


def gather_claims() -> dict[str, Claim]:
    """Every claim row, id -> :class:`Claim`, from the ``CLAIMS`` list of each ``maelab.papers.<paper>.claims``
    module (a paper package without one contributes nothing). Raises :class:`RegistryError` on a duplicate id,
    a ``CLAIMS`` that is not a list of claims, or a row whose ``paper`` is not its package."""
    rows: dict[str, Claim] = {}
    origin: dict[str, str] = {}
    for paper in _paper_packages():
        name = f"{PAPERS_PACKAGE}.{paper}.claims"
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name != name:  # a missing import *inside* the module is a real error
                raise
            continue
        claims = getattr(module, "CLAIMS", None)
        if not isinstance(claims, list) or not all(isinstance(c, Claim) for c in claims):
            raise RegistryError(f"{name}.CLAIMS must be a list of maelab.claims.Claim rows")
        for c in claims:
            if c.paper != paper:
                raise RegistryError(
                    f"claim {c.id!r} in {name} has paper={c.paper!r}; rows of {name} need paper={paper!r}"
                )
            if c.id in rows:
                raise RegistryError(f"duplicate claim id {c.id!r}: defined in {origin[c.id]} and in {name}")
            rows[c.id], origin[c.id] = c, name
    return rows


class _Registry(Mapping[str, Claim]):
    """Read-only mapping claim id -> :class:`Claim`, gathered by :func:`gather_claims` on first use (lazily: the
    paper modules import this one for :class:`Claim` and the criteria)."""

    def __init__(self) -> None:
        self._rows: dict[str, Claim] | None = None

    def _load(self) -> dict[str, Claim]:
        if self._rows is None:
            self._rows = gather_claims()
        return self._rows

    def __getitem__(self, claim_id: str) -> Claim:
        return self._load()[claim_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())

    def __repr__(self) -> str:
        return f"<maelab.claims.REGISTRY: {len(self)} claims>"


#: every claim row, id -> Claim, in paper (:data:`PAPERS`) then row order
REGISTRY: Mapping[str, Claim] = _Registry()
