"""The small-sample statistics of the claims engine: Student's t quantiles and intervals over seeds, one-sided
p-values, Holm's adjustment and the minimum detectable effect of a paired t-test.

Every interval drawn from seeds uses Student's t with n - 1 degrees of freedom, never a fixed 2 or 1.96: with the
book's 3 seeds the 95 % multiplier is 4.30, and mean ± 2 s.e. would be a ~9 % one-sided error instead of 2.5 %
(issue 21). Each function here is checked against ``scipy.stats`` or a reference written out in
``tests/test_claims.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .._validate import ParameterError
from .evidence import Evidence

#: The level of every test of the engine. A row's criterion decides at two-sided level ``ALPHA`` (its 95 % t
#: interval, one-sided ``ALPHA`` / 2 in each direction), and the multiplicity policy (:data:`POLICY`) keeps the
#: family-wise error rate of each paper's stochastic rows at ``ALPHA``.
ALPHA = 0.05


def t_quantile(n: int, level: float = 1 - ALPHA) -> float:
    """The two-sided ``level`` quantile of Student's t with n - 1 degrees of freedom (``t.ppf((1 + level) / 2,
    n - 1)``): the multiplier of the standard error in a ``level`` interval of a mean of n seeds (4.30 for n = 3,
    2.57 for n = 6, not the normal 1.96 or the 2 a fixed rule would take)."""
    from scipy import special  # what scipy.stats.t.ppf evaluates, bit for bit (see _one_sided)

    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ParameterError("n", "an integer >= 2 (samples behind the mean)", n)
    if not 0 < level < 1:
        raise ParameterError("level", "a number in (0, 1)", level)
    return float(special.stdtrit(n - 1, (1 + level) / 2))


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
    without spread the side the value lies on is certain (0 / 1; a tie gives 1 / 1).

    The functions ``scipy.stats.t(df).sf`` / ``.cdf`` and ``scipy.stats.norm`` evaluate (``stdtr``, ``ndtr``), called
    directly: the same numbers (bit for bit), without a frozen distribution per call (each findings box decides the
    whole book's rows, twice per page: 0.7 s a box before, 0.3 s after, on 2 cores)."""
    from scipy import special

    if se == 0:
        return (0.0 if diff > 0 else 1.0), (0.0 if diff < 0 else 1.0)
    t = diff / se
    if math.isinf(df):
        return float(special.ndtr(-t)), float(special.ndtr(t))
    return float(special.stdtr(df, -t)), float(special.stdtr(df, t))


def two_sided(p_supported: float, p_not: float) -> float:
    """The p-value of a row's three-way decision from its two one-sided p-values: ``min(1, 2 min(p, q))`` (the
    decision is a two-sided test whose direction is read from the sign)."""
    return min(1.0, 2.0 * min(p_supported, p_not))


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
