"""The claims scoreboard: each paper claim is a row whose verdict is computed by code from stored evidence.

A :class:`Claim` (a row of ``REGISTRY``) says what the paper claims, where, the paper's value, and a :class:`Criterion`.
A notebook measures the *evidence* (a value with its spread over seeds, or a series) and records it with
:meth:`maelab.book.Context.claim`, which stores it through :func:`maelab.store.load_or_compute` (so it carries
provenance). The scoreboard page gathers every notebook's stored evidence and calls :func:`verdict`.

Verdicts: ``supported``, ``not supported``, ``inconclusive``. With n > 1 samples (seeds) a criterion is a test:
the two-sided 95 % interval of Student's t with n - 1 degrees of freedom (:func:`t_interval`), equivalently a
one-sided test at level :data:`ALPHA` / 2 in each direction, and only an interval wholly on one side of a threshold
decides. Such a row is *stochastic*: its criterion also gives a p-value (:meth:`Criterion.p_value`), and the
scoreboard's verdict is the one left after the book's multiplicity policy (:data:`POLICY`, :func:`adjust`: Holm
within each paper's stochastic rows). Rows without spread (exact computations) are decided by their value alone.

This module is the engine only. The rows are data next to their paper: each paper package has a module
``maelab.papers.<paper>.claims`` exporting ``CLAIMS: list[Claim]`` (keyword-argument rows). :data:`REGISTRY`
gathers them on first use from the paper registry an entry point installed (:mod:`maelab.registry`), so the core
never imports a paper and adding a paper adds no line here. A claim id defined twice, or a row whose ``paper`` is
not its package, is an error (:class:`~maelab.registry.RegistryError`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping, Sequence

from . import registry as _registry
from ._validate import ParameterError, one_of
from .registry import RegistryError

SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE = "supported", "not supported", "inconclusive"
VERDICTS = (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE)


@dataclasses.dataclass(frozen=True)
class Evidence:
    """What a notebook measured for a claim.

    ``value``: the statistic (a mean over seeds when ``samples`` is given). ``samples``: per-seed values (or
    per-seed paired differences). ``x``/``y``/``y_err``: a series for monotone-trend criteria (``y_err`` = standard
    error of each point, ``y_n`` = the seeds behind each point, for its t quantile).
    ``note``: one line on how it was measured. ``unmet``: empty, or the stated
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
    y_n: tuple[int, ...] | None = None

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
        """JSON-ready fields; an empty ``unmet`` and a missing ``y_n`` are left out, so records stored before they
        existed stay unchanged."""
        return {
            k: (list(v) if isinstance(v, tuple) else v)
            for k, v in dataclasses.asdict(self).items()
            if not (k in ("unmet", "y_n") and not v)
        }

    @classmethod
    def from_dict(cls, d: dict) -> Evidence:
        kw = {k: (tuple(float(a) for a in v) if isinstance(v, list) else v) for k, v in d.items()}
        if kw.get("y_n") is not None:
            kw["y_n"] = tuple(int(a) for a in kw["y_n"])
        return cls(**kw)

    @classmethod
    def from_series(cls, x, samples, note: str = "", unmet: str = "") -> Evidence:
        """A series over seeds for trend criteria: ``samples`` is (seeds, len(x)); each point's mean, its standard
        error over seeds (ddof 1; 0 for one seed) and the number of seeds behind it (``y_n``, for the t quantile)."""
        xs = tuple(float(a) for a in x)
        rows = [tuple(float(v) for v in row) for row in samples]
        if not xs or not rows or any(len(r) != len(xs) for r in rows):
            raise ParameterError("samples", f"a non-empty (seeds, {len(xs)}) table of numbers over x", len(rows))
        n = len(rows)
        cols = list(zip(*rows))
        mean = tuple(sum(c) / n for c in cols)
        err = tuple(math.sqrt(sum((v - m) ** 2 for v in c) / (n - 1) / n) if n > 1 else 0.0 for c, m in zip(cols, mean))
        return cls(x=xs, y=mean, y_err=err, y_n=(n,) * len(xs), note=note, unmet=unmet)

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


#: The level of every test of the engine. A row's criterion decides at two-sided level ``ALPHA`` (its 95 % t
#: interval, one-sided ``ALPHA`` / 2 in each direction), and the multiplicity policy (:data:`POLICY`) keeps the
#: family-wise error rate of each paper's stochastic rows at ``ALPHA``.
ALPHA = 0.05


def t_quantile(n: int, level: float = 1 - ALPHA) -> float:
    """The two-sided ``level`` quantile of Student's t with n - 1 degrees of freedom (``t.ppf((1 + level) / 2,
    n - 1)``): the multiplier of the standard error in a ``level`` interval of a mean of n seeds (4.30 for n = 3,
    2.57 for n = 6, not the normal 1.96 or the 2 a fixed rule would take)."""
    from scipy import stats

    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ParameterError("n", "an integer >= 2 (samples behind the mean)", n)
    if not 0 < level < 1:
        raise ParameterError("level", "a number in (0, 1)", level)
    return float(stats.t.ppf((1 + level) / 2, n - 1))


def t_interval(ev: Evidence, level: float = 1 - ALPHA) -> tuple[float, float]:
    """The two-sided ``level`` t interval of the mean of ``ev.samples`` (mean ± t quantile × s.e., n - 1 degrees of
    freedom); the value itself twice when there is no spread (one sample, or identical samples)."""
    if ev.value is None:
        raise ParameterError("evidence", "evidence with a value", ev)
    if ev.sem == 0:
        return ev.value, ev.value
    h = t_quantile(ev.n, level) * ev.sem
    return ev.value - h, ev.value + h


def _one_sided(diff: float, se: float, df: float) -> tuple[float, float]:
    """One-sided p-values (P(T >= t), P(T <= t)) of t = diff / se with ``df`` degrees of freedom (inf: normal);
    without spread the side the value lies on is certain (0 / 1; a tie gives 1 / 1)."""
    from scipy import stats

    if se == 0:
        return (0.0 if diff > 0 else 1.0), (0.0 if diff < 0 else 1.0)
    t = diff / se
    dist = stats.norm if math.isinf(df) else stats.t(df)
    return float(dist.sf(t)), float(dist.cdf(t))


def two_sided(p_supported: float, p_not: float) -> float:
    """The p-value of a row's three-way decision from its two one-sided p-values: ``min(1, 2 min(p, q))`` (the
    decision is a two-sided test whose direction is read from the sign)."""
    return min(1.0, 2.0 * min(p_supported, p_not))


def _bound(ev: Evidence, bound: float, sign: str, threshold: float) -> str:
    """The number a one-sided criterion decided on, as its reason prints it: the value itself without spread
    ("0.912"), else the bound with its name ("mean - t(0.975, 2) s.e. = 0.035"), so the reason names what crossed
    the threshold (the mean alone may lie on the other side of it)."""
    if ev.sem == 0:
        return _pair(ev.value, threshold)[0]
    return f"mean {sign} t({1 - ALPHA / 2:g}, {ev.n - 1}) s.e. = {_pair(bound, threshold)[0]}"


def _check_z(z) -> None:
    if z is not None and not (isinstance(z, (int, float)) and not isinstance(z, bool) and z == 0):
        raise ParameterError("z", "None (a t interval over the samples) or 0 (the value alone, no interval)", z)


class Criterion:
    """Base class: ``decide(evidence) -> (verdict, one-line reason)``; ``text`` states it for the page.

    ``p_values(evidence)``: the one-sided p-values ``(p_supported, p_not_supported)`` of the test behind the
    decision, or None when the evidence has no spread (an exact computation: not a test, outside the multiplicity
    policy). :meth:`p_value` is the row's two-sided p (:func:`two_sided`)."""

    text: str = ""

    def decide(self, ev: Evidence) -> tuple[str, str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def p_values(self, ev: Evidence) -> tuple[float, float] | None:
        """One-sided p-values ``(p_supported, p_not_supported)`` of the test behind the decision; None without one."""
        return None

    def p_value(self, ev: Evidence) -> float | None:
        """The row's two-sided p (:func:`two_sided` of :meth:`p_values`); None for a decision without a test."""
        p = self.p_values(ev)
        return None if p is None else two_sided(*p)


_T_NOTE = f" (two-sided {100 * (1 - ALPHA):g} % t interval when seeds > 1)"


@dataclasses.dataclass(frozen=True)
class Below(Criterion):
    """Supported when the value (the upper end of its t interval, with samples) is below ``threshold``; not
    supported when the lower end is at or above it. ``z=0``: the value alone decides (an exact computation)."""

    threshold: float
    z: float | None = None

    def __post_init__(self):
        _check_z(self.z)

    @property
    def text(self) -> str:
        return f"value < {_num(self.threshold)}" + ("" if self.z == 0 else _T_NOTE)

    def p_values(self, ev: Evidence) -> tuple[float, float] | None:
        if self.z == 0 or ev.sem == 0 or ev.value is None or not math.isfinite(ev.value):
            return None
        up, down = _one_sided(ev.value - self.threshold, ev.sem, ev.n - 1)
        return down, up

    def decide(self, ev: Evidence) -> tuple[str, str]:
        if ev.value is None or not math.isfinite(ev.value):
            return INCONCLUSIVE, "no finite value"
        lo, hi = (ev.value, ev.value) if self.z == 0 else t_interval(ev)
        b = (
            (lambda x, sign: _pair(ev.value, self.threshold)[0])
            if self.z == 0
            else (lambda x, sign: _bound(ev, x, sign, self.threshold))
        )
        if hi < self.threshold:
            return SUPPORTED, f"{b(hi, '+')} < {_num(self.threshold)}"
        if lo >= self.threshold:
            return NOT_SUPPORTED, f"{b(lo, '-')} >= {_num(self.threshold)}"
        return (
            INCONCLUSIVE,
            f"[{_pair(lo, self.threshold)[0]}, {_pair(hi, self.threshold)[0]}] straddles {_num(self.threshold)}",
        )


@dataclasses.dataclass(frozen=True)
class Above(Criterion):
    """Supported when the value (the lower end of its t interval, with samples) is above ``threshold``; not
    supported when the upper end is at or below it. ``z=0``: the value alone decides (an exact computation)."""

    threshold: float
    z: float | None = None

    def __post_init__(self):
        _check_z(self.z)

    @property
    def text(self) -> str:
        return f"value > {_num(self.threshold)}" + ("" if self.z == 0 else _T_NOTE)

    def p_values(self, ev: Evidence) -> tuple[float, float] | None:
        if self.z == 0 or ev.sem == 0 or ev.value is None or not math.isfinite(ev.value):
            return None
        return _one_sided(ev.value - self.threshold, ev.sem, ev.n - 1)

    def decide(self, ev: Evidence) -> tuple[str, str]:
        if ev.value is None or not math.isfinite(ev.value):
            return INCONCLUSIVE, "no finite value"
        lo, hi = (ev.value, ev.value) if self.z == 0 else t_interval(ev)
        b = (
            (lambda x, sign: _pair(ev.value, self.threshold)[0])
            if self.z == 0
            else (lambda x, sign: _bound(ev, x, sign, self.threshold))
        )
        if lo > self.threshold:
            return SUPPORTED, f"{b(lo, '-')} > {_num(self.threshold)}"
        if hi <= self.threshold:
            return NOT_SUPPORTED, f"{b(hi, '+')} <= {_num(self.threshold)}"
        return (
            INCONCLUSIVE,
            f"[{_pair(lo, self.threshold)[0]}, {_pair(hi, self.threshold)[0]}] straddles {_num(self.threshold)}",
        )


@dataclasses.dataclass(frozen=True)
class Within(Criterion):
    """Supported when the t interval lies inside target ± tol (two one-sided tests, the equivalence test TOST);
    not supported when it lies wholly outside. ``z=0``: the value alone decides."""

    target: float
    tol: float
    z: float | None = None

    def __post_init__(self):
        _check_z(self.z)

    @property
    def text(self) -> str:
        return f"|value - {self.target:g}| <= {self.tol:g}" + ("" if self.z == 0 else _T_NOTE)

    def p_values(self, ev: Evidence) -> tuple[float, float] | None:
        if self.z == 0 or ev.sem == 0 or ev.value is None or not math.isfinite(ev.value):
            return None
        a, b = self.target - self.tol, self.target + self.tol
        above_a, below_a = _one_sided(ev.value - a, ev.sem, ev.n - 1)
        above_b, below_b = _one_sided(ev.value - b, ev.sem, ev.n - 1)
        return max(above_a, below_b), min(below_a, above_b)

    def decide(self, ev: Evidence) -> tuple[str, str]:
        if ev.value is None or not math.isfinite(ev.value):
            return INCONCLUSIVE, "no finite value"
        lo, hi = (ev.value, ev.value) if self.z == 0 else t_interval(ev)
        a, b = self.target - self.tol, self.target + self.tol
        if a <= lo and hi <= b:
            return SUPPORTED, f"{ev.value:.3g} within {self.target:g} ± {self.tol:g}" + (
                f" (t interval [{lo:.3g}, {hi:.3g}])" if hi > lo else ""
            )
        if hi < a or lo > b:
            return NOT_SUPPORTED, f"{ev.value:.3g} outside {self.target:g} ± {self.tol:g}" + (
                f" (t interval [{lo:.3g}, {hi:.3g}])" if hi > lo else ""
            )
        return INCONCLUSIVE, f"[{lo:.3g}, {hi:.3g}] overlaps the edge of {self.target:g} ± {self.tol:g}"


@dataclasses.dataclass(frozen=True)
class PairedGreater(Criterion):
    """Per-seed paired differences (ours - baseline): the paired t-test (n - 1 degrees of freedom), two-sided at
    :data:`ALPHA`, its direction read from the sign.

    Supported: the mean difference is significantly positive (one-sided p < ALPHA / 2); not supported: significantly
    negative; otherwise (a tie within noise included) inconclusive. Identical differences (no spread) decide by their
    sign alone."""

    @property
    def text(self) -> str:
        return f"paired difference > 0: paired t-test, two-sided p < {ALPHA:g} (direction from the sign)"

    def p_values(self, ev: Evidence) -> tuple[float, float] | None:
        if not ev.samples or len(ev.samples) < 2 or ev.sem == 0:
            return None
        return _one_sided(ev.value, ev.sem, ev.n - 1)

    def decide(self, ev: Evidence) -> tuple[str, str]:
        if not ev.samples or len(ev.samples) < 2:
            return INCONCLUSIVE, "needs >= 2 paired samples"
        mean = ev.value
        if ev.sem == 0:
            v = SUPPORTED if mean > 0 else NOT_SUPPORTED if mean < 0 else INCONCLUSIVE
            return v, f"mean diff {mean:+.3g} (n={ev.n}), identical in every pair"
        p_gt, p_lt = self.p_values(ev)
        p = two_sided(p_gt, p_lt)
        if p_gt < ALPHA / 2:
            return SUPPORTED, f"mean diff {mean:+.3g} (n={ev.n}), p = {p:.2g}"
        if p_lt < ALPHA / 2:
            return NOT_SUPPORTED, f"mean diff {mean:+.3g} (n={ev.n}) is significantly negative, p = {p:.2g}"
        return INCONCLUSIVE, f"mean diff {mean:+.3g} (n={ev.n}), p = {p:.2g}"


@dataclasses.dataclass(frozen=True)
class Monotone(Criterion):
    """A series y(x) moves in ``direction``.

    Each step y[i+1] - y[i] is tested with its standard error sqrt(err_i^2 + err_{i+1}^2) (``ev.y_err``), with
    Student's t of min(n_i, n_{i+1}) - 1 degrees of freedom where ``ev.y_n`` gives the seeds behind each point (the
    normal distribution where it does not). Supported: *every* step goes the stated way significantly (an
    intersection-union test: its p is the largest step p). Not supported: some step, or the series end to end
    (last - first), goes significantly the other way (Bonferroni over those k + 1 tests). Otherwise inconclusive.
    Each direction is tested at ALPHA / 2, as the other criteria. ``z=0``: the values alone decide (an exact
    series)."""

    direction: str = "increasing"
    z: float | None = None

    def __post_init__(self):
        one_of("direction", self.direction, ("increasing", "decreasing"))
        _check_z(self.z)

    @property
    def text(self) -> str:
        if self.z == 0:
            return f"{self.direction} at every step"
        return (
            f"{self.direction} at every step (each step significant); not supported when a step or the whole "
            f"series goes significantly the other way (t tests, {ALPHA / 2:g} each way)"
        )

    def _tests(self, ev: Evidence):
        """[(difference in the stated direction, s.e., d.o.f.)] of each step, then of the series end to end."""
        err = (0.0,) * len(ev.y) if (self.z == 0 or not ev.y_err) else ev.y_err
        ns = ev.y_n if ev.y_n else None
        sign = 1.0 if self.direction == "increasing" else -1.0
        out = []
        tie = 1e-9 * max(abs(v) for v in ev.y)  # an exact series: a difference of rounding size is a tie
        for i, j in [(k, k + 1) for k in range(len(ev.y) - 1)] + [(0, len(ev.y) - 1)]:
            df = math.inf if ns is None else max(min(ns[i], ns[j]) - 1, 1)
            d, se = sign * (ev.y[j] - ev.y[i]), math.hypot(err[i], err[j])
            out.append((0.0 if se == 0 and abs(d) <= tie else d, se, df))
        return out

    def p_values(self, ev: Evidence) -> tuple[float, float] | None:
        if not ev.y or len(ev.y) < 2:
            return None
        tests = self._tests(ev)
        if all(se == 0 for _, se, _ in tests):
            return None
        ps = [_one_sided(d, se, df) for d, se, df in tests]
        p_sup = max(p for p, _ in ps[:-1])
        p_not = min(1.0, len(ps) * min(q for _, q in ps))
        return p_sup, p_not

    def decide(self, ev: Evidence) -> tuple[str, str]:
        if not ev.y or len(ev.y) < 2:
            return INCONCLUSIVE, "needs a series of >= 2 points"
        tests = self._tests(ev)
        steps, end = tests[:-1], tests[-1]
        ps = [_one_sided(d, se, df) for d, se, df in tests]
        k = len(steps)
        back = [q * len(ps) < ALPHA / 2 for _, q in ps]  # Bonferroni over the k steps and the end-to-end change
        if all(p < ALPHA / 2 for p, _ in ps[:-1]):
            return SUPPORTED, f"all {k} steps {self.direction}" + (
                f" (largest step p = {max(p for p, _ in ps[:-1]):.2g})" if end[1] > 0 else ""
            )
        if any(back):
            n_steps = sum(back[:-1])
            first, last = ev.y[0], ev.y[-1]
            parts = []
            if n_steps:
                parts.append(f"{n_steps} of {k} steps significantly the other way")
            if back[-1]:
                parts.append(f"end to end {first:.3g} -> {last:.3g}, significantly the other way")
            return NOT_SUPPORTED, "; ".join(parts)
        return INCONCLUSIVE, "some steps within error"


@dataclasses.dataclass(frozen=True)
class Claim:
    """One row of the scoreboard. ``kind`` (one of :data:`KINDS`) says what the row can tell: an ``identity`` holds
    by construction and is shown, never counted as support; ``computation`` computes a theorem's quantity on the
    objects it describes; ``trained`` measures models we trained. ``view_of``: the id of another row of the same
    notebook whose evidence (samples) this row reads under another criterion -- counted once as a finding.
    ``unit``: how the scoreboard shows our value beside the paper's (``UNITS``); the evidence stays as measured."""

    id: str
    paper: str
    where: str
    statement: str
    paper_value: str
    criterion: Criterion
    notebook: str
    measure: str  # what our value is, in words
    kind: str = ""
    view_of: str = ""
    unit: str = ""  # how "ours" is shown: "" as stored, "points" for accuracy fractions shown x 100 (paper's unit)


#: Display units of our value (``Claim.unit``), name -> (factor, suffix).
UNITS = {"": (1.0, ""), "points": (100.0, " points")}


#: What a claim row is (issue 21), i.e. how far its verdict can count as evidence for a paper.
KINDS = {
    "identity": "holds by construction or arithmetic whatever the data: it can fail only if the code is wrong, so it "
    "is shown as an identity and never counted as support",
    "computation": "an exact (or Monte-Carlo) computation of a theorem's quantity on the objects the theorem "
    "describes, without a trained model",
    "trained": "measured on models we trained: counts only where the models demonstrably learned",
}


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


#: The book's multiplicity policy, fixed before the runs it judges (issue 21; maelab.claims.adjust applies it).
POLICY = (
    f"Holm's step-down procedure within each paper: the family is every stochastic row of that paper (a row "
    f"decided by a test over seeds, with its precondition met), and the probability of one or more wrong verdicts "
    f"among them is at most {ALPHA:g} under any dependence between the rows"
)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values (step-down, monotone, capped at 1), in the input order: the i-th smallest p times
    (m - i + 1), made non-decreasing. Rejecting where the adjusted p < alpha controls the family-wise error rate at
    alpha under any dependence (Holm 1979)."""
    ps = [float(p) for p in p_values]
    if any(not 0 <= p <= 1 for p in ps):
        raise ParameterError("p_values", "numbers in [0, 1]", ps)
    m = len(ps)
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(sorted(range(m), key=ps.__getitem__)):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        out[i] = running
    return out


@dataclasses.dataclass(frozen=True)
class Decision:
    """A row's verdict under the multiplicity policy: ``verdict``/``reason`` (what the scoreboard shows),
    ``raw_verdict`` (the row's own test at level ALPHA), ``p`` (its two-sided p; None for a row decided without
    a test), ``p_adj`` (Holm-adjusted within its paper's family) and ``family`` (that family's size)."""

    verdict: str
    reason: str
    raw_verdict: str
    p: float | None = None
    p_adj: float | None = None
    family: int = 0


def adjust(rows: Mapping[str, tuple[Claim, Evidence]]) -> dict[str, Decision]:
    """The verdicts of ``rows`` (claim id -> (claim, evidence)) under :data:`POLICY`.

    Each row is first decided by its criterion (:func:`verdict`). The stochastic rows -- those whose criterion
    gives a p-value for the evidence, whose precondition is met and which are no identity -- form one family per
    paper; their p-values are
    Holm-adjusted within it. A decided row (supported / not supported) whose adjusted p is not below :data:`ALPHA`
    becomes inconclusive, its reason saying so with both p-values. Other rows keep their verdict.

    A family holds the rows present in ``rows``: pass every measured row of the book (the scoreboard does), not
    one page's."""
    raw = {cid: verdict(c, ev) for cid, (c, ev) in rows.items()}
    pv = {
        cid: c.criterion.p_value(ev)
        for cid, (c, ev) in rows.items()
        if not ev.unmet and c.kind != "identity" and c.criterion.p_value(ev) is not None
    }
    families: dict[str, list[str]] = {}
    for cid in pv:
        families.setdefault(rows[cid][0].paper, []).append(cid)
    adj: dict[str, tuple[float, int]] = {}
    for ids in families.values():
        for cid, q in zip(ids, holm([pv[i] for i in ids])):
            adj[cid] = (q, len(ids))
    out = {}
    for cid, (v, why) in raw.items():
        if cid not in adj:
            out[cid] = Decision(v, why, v)
            continue
        q, m = adj[cid]
        p = pv[cid]
        tag = f"Holm over {m} stochastic rows of {rows[cid][0].paper}: p = {p:.2g}, adjusted {q:.2g}"
        if v != INCONCLUSIVE and not q < ALPHA:
            out[cid] = Decision(INCONCLUSIVE, f"{why}; not significant after {tag} >= {ALPHA:g}", v, p, q, m)
        else:
            out[cid] = Decision(v, f"{why}; {tag}", v, p, q, m)
    return out


def minimum_detectable_effect(sd: float, n: int, alpha: float = ALPHA, power: float = 0.8) -> float:
    """The smallest true mean difference that a two-sided one-sample (paired) t-test of n samples with standard
    deviation ``sd`` detects at level ``alpha`` with probability ``power`` (noncentral t). In the units of ``sd``."""
    from scipy import optimize, stats

    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ParameterError("n", "an integer >= 2", n)
    if not (math.isfinite(sd) and sd >= 0):
        raise ParameterError("sd", "a finite number >= 0", sd)
    for name, v in (("alpha", alpha), ("power", power)):
        if not 0 < v < 1:
            raise ParameterError(name, "a number in (0, 1)", v)
    if sd == 0:
        return 0.0
    df, crit = n - 1, float(stats.t.ppf(1 - alpha / 2, n - 1))

    def pw(nc: float) -> float:
        lower = float(stats.nct.cdf(-crit, df, nc))  # the wrong-sign tail, < 1e-5 here; scipy's nct gives NaN at times
        return float(stats.nct.sf(crit, df, nc)) + (lower if math.isfinite(lower) else 0.0) - power

    hi = crit + 4.0
    while pw(hi) < 0:  # the power rises with the noncentrality; a bracket of moderate width keeps nct finite
        hi *= 2
    nc = optimize.brentq(pw, 0.0, hi)
    return nc * sd / math.sqrt(n)


def gather_claims(declared: _registry.Declarations | None = None) -> dict[str, Claim]:
    """Every claim row, id -> :class:`Claim`, from the ``CLAIMS`` list of each ``maelab.papers.<paper>.claims``
    module as ``declared`` (default: the installed registry's, :func:`maelab.registry.installed`) hands them down (a
    paper package without one contributes nothing). Raises :class:`~maelab.registry.RegistryError` on a duplicate
    id, a ``CLAIMS`` that is not a list of claims, or a row whose ``paper`` is not its package."""
    rows: dict[str, Claim] = {}
    origin: dict[str, str] = {}
    for paper, (name, claims) in (_registry.installed().claims() if declared is None else declared).items():
        if not isinstance(claims, list) or not all(isinstance(c, Claim) for c in claims):
            raise RegistryError(f"{name}.CLAIMS must be a list of maelab.claims.Claim rows")
        for c in claims:
            if c.paper != paper:
                raise RegistryError(
                    f"claim {c.id!r} in {name} has paper={c.paper!r}; rows of {name} need paper={paper!r}"
                )
            if c.id in rows:
                raise RegistryError(f"duplicate claim id {c.id!r}: defined in {origin[c.id]} and in {name}")
            if c.unit not in UNITS:
                raise RegistryError(f"claim {c.id!r} in {name}: unit must be one of {list(UNITS)}; got {c.unit!r}")
            if c.kind not in KINDS:
                raise RegistryError(f"claim {c.id!r} in {name}: kind must be one of {', '.join(KINDS)}; got {c.kind!r}")
            rows[c.id], origin[c.id] = c, name
    for c in rows.values():
        main = rows.get(c.view_of) if c.view_of else None
        if c.view_of and (main is None or main.notebook != c.notebook or main.view_of or main.id == c.id):
            raise RegistryError(
                f"claim {c.id!r}: view_of must name another row of notebook {c.notebook!r} that is no view itself; "
                f"got {c.view_of!r}"
            )
    return rows


class _Registry(Mapping[str, Claim]):
    """Read-only mapping claim id -> :class:`Claim`, gathered by :func:`gather_claims` on first use (lazily: the
    paper modules import this one for :class:`Claim` and the criteria)."""

    def __init__(self) -> None:
        self._rows: dict[str, Claim] | None = None
        self._source: _registry.PaperRegistry | None = None  # the installed registry the rows came from

    def _load(self) -> dict[str, Claim]:
        if self._rows is None or self._source is not _registry.installed():
            self._source = _registry.installed()
            self._rows = gather_claims(self._source.claims())
        return self._rows

    def __getitem__(self, claim_id: str) -> Claim:
        return self._load()[claim_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())

    def __repr__(self) -> str:
        return f"<maelab.claims.REGISTRY: {len(self)} claims>"


#: every claim row, id -> Claim, in paper (``order`` of :class:`maelab.registry.Paper`) then row order
REGISTRY: Mapping[str, Claim] = _Registry()
