"""What a notebook measured for a claim (:class:`~maelab.claims.Evidence`) and the three verdicts a claim can get.

Evidence is a value with its per-seed samples (:meth:`~maelab.claims.Evidence.from_samples`) or a series over x
with the seeds behind each point (:meth:`~maelab.claims.Evidence.from_series`), plus a one-line note and, where a
precondition of the measurement failed, its reason (``unmet``: the verdict is then "inconclusive" whatever the
numbers). It is stored as JSON in the claims records (:meth:`~maelab.claims.Evidence.to_dict` /
:meth:`~maelab.claims.Evidence.from_dict`), so fields added later are left out when empty and old records stay
byte-identical.
"""

from __future__ import annotations

import dataclasses
import math

from .._validate import ParameterError

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
        """The number of samples (1 without samples)."""
        return len(self.samples) if self.samples else 1

    @property
    def std(self) -> float | None:
        """The samples' standard deviation (ddof 1); None with fewer than two samples."""
        if not self.samples or len(self.samples) < 2:
            return None
        m = sum(self.samples) / len(self.samples)
        return math.sqrt(sum((s - m) ** 2 for s in self.samples) / (len(self.samples) - 1))

    @property
    def sem(self) -> float:
        """The standard error of the mean of the samples (0 without spread or samples)."""
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
        """The evidence of a stored record (:meth:`to_dict`): lists become tuples of floats, ``y_n`` of ints."""
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
        """A value measured per seed (or per pair): ``value`` is the mean of ``samples`` (non-empty)."""
        samples = tuple(float(s) for s in samples)
        if not samples:
            raise ParameterError("samples", "a non-empty sequence of numbers", samples)
        return cls(value=sum(samples) / len(samples), samples=samples, note=note, unmet=unmet)
