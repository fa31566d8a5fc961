"""The criteria of the claim rows: how a row's evidence is decided (supported / not supported / inconclusive).

:class:`~maelab.claims.Below`, :class:`~maelab.claims.Above` and :class:`~maelab.claims.Within` compare a value
(with samples: its t interval) with a threshold or a band; :class:`~maelab.claims.PairedGreater` is the paired t-test
of per-seed differences; :class:`~maelab.claims.Monotone` tests a series step by step and end to end. Each states
itself for the page (``text``) and, where the evidence has spread, gives the one-sided p-values of its test
(:meth:`~maelab.claims.Criterion.p_values`) for the multiplicity policy (:mod:`maelab.claims.policy`).
"""

from __future__ import annotations

import dataclasses
import math

from .._validate import ParameterError, one_of
from .evidence import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED, Evidence
from .statistics import ALPHA, _one_sided, t_interval, two_sided


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
    normal distribution where it does not). Where the evidence carries the per-seed series (``ev.y_samples``: runs
    paired by seed, the same initial weights and data order at every x), each step is instead the paired t-test of
    its per-seed differences (n - 1 degrees of freedom): the seed's own level, shared by every point of its series,
    drops out of the step, as it does in :class:`PairedGreater`. Supported: *every* step goes the stated way
    significantly (an intersection-union test: its p is the largest step p). Not supported: some step, or the
    series end to end (last - first), goes significantly the other way (Bonferroni over those k + 1 tests).
    Otherwise inconclusive.
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
        sign = 1.0 if self.direction == "increasing" else -1.0
        pairs = [(k, k + 1) for k in range(len(ev.y) - 1)] + [(0, len(ev.y) - 1)]
        if self.z != 0 and ev.y_samples and len(ev.y_samples) > 1:
            n = len(ev.y_samples)
            out = []
            for i, j in pairs:
                d = [sign * (row[j] - row[i]) for row in ev.y_samples]
                mean = sum(d) / n
                sd = math.sqrt(sum((v - mean) ** 2 for v in d) / (n - 1))
                out.append((mean, sd / math.sqrt(n), n - 1))
            return out
        err = (0.0,) * len(ev.y) if (self.z == 0 or not ev.y_err) else ev.y_err
        ns = ev.y_n if ev.y_n else None
        out = []
        tie = 1e-9 * max(abs(v) for v in ev.y)  # an exact series: a difference of rounding size is a tie
        for i, j in pairs:
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
            paired = ", paired by seed" if self._paired_note(ev) else ""
            return SUPPORTED, f"all {k} steps {self.direction}" + (
                f" (largest step p = {max(p for p, _ in ps[:-1]):.2g}{paired})" if end[1] > 0 else ""
            )
        if any(back):
            n_steps = sum(back[:-1])
            first, last = ev.y[0], ev.y[-1]
            parts = []
            if n_steps:
                parts.append(f"{n_steps} of {k} steps significantly the other way")
            if back[-1]:
                parts.append(f"end to end {first:.3g} -> {last:.3g}, significantly the other way")
            return NOT_SUPPORTED, "; ".join(parts) + self._paired_note(ev)
        return INCONCLUSIVE, "some steps within error" + self._paired_note(ev)

    def _paired_note(self, ev: Evidence) -> str:
        return " (steps paired by seed)" if self.z != 0 and ev.y_samples and len(ev.y_samples) > 1 else ""
