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
    ``y_samples``: the per-seed series behind ``y`` (seeds x points) where the runs are paired by seed (the same
    initial weights and data order at every x): the trend criterion then tests each step on the per-seed differences.
    ``looks``: the number of planned analyses of the runs this evidence reads (1; 2 where runs were added after a
    first analysis): the multiplicity policy tests the row at ALPHA / looks (Bonferroni over the looks).
    """

    value: float | None = None
    samples: tuple[float, ...] | None = None
    x: tuple[float, ...] | None = None
    y: tuple[float, ...] | None = None
    y_err: tuple[float, ...] | None = None
    note: str = ""
    unmet: str = ""
    y_n: tuple[int, ...] | None = None
    y_samples: tuple[tuple[float, ...], ...] | None = None
    looks: int = 1

    def __post_init__(self):
        if isinstance(self.looks, bool) or not isinstance(self.looks, int) or self.looks < 1:
            raise ParameterError("looks", "an integer >= 1 (planned analyses of the runs)", self.looks)
        if self.y_samples is not None:
            rows = self.y_samples
            if self.y is None or len(rows) < 1 or any(len(r) != len(self.y) for r in rows):
                raise ParameterError("y_samples", "one row per seed, each as long as y", rows)

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
        """JSON-ready fields; an empty ``unmet``, a missing ``y_n`` or ``y_samples`` and ``looks`` 1 are left out, so
        records stored before they existed stay unchanged."""
        out = {}
        for k, v in dataclasses.asdict(self).items():
            if (k in ("unmet", "y_n", "y_samples") and not v) or (k == "looks" and v == 1):
                continue
            out[k] = [list(r) for r in v] if k == "y_samples" else list(v) if isinstance(v, tuple) else v
        return out

    @classmethod
    def from_dict(cls, d: dict) -> Evidence:
        """The evidence of a stored record (:meth:`to_dict`): lists become tuples of floats, ``y_n`` of ints."""
        kw = {k: (tuple(float(a) for a in v) if isinstance(v, list) else v) for k, v in d.items() if k != "y_samples"}
        if kw.get("y_n") is not None:
            kw["y_n"] = tuple(int(a) for a in kw["y_n"])
        if d.get("y_samples") is not None:
            kw["y_samples"] = tuple(tuple(float(a) for a in r) for r in d["y_samples"])
        return cls(**kw)

    @classmethod
    def from_series(
        cls, x, samples, note: str = "", unmet: str = "", *, paired: bool = False, looks: int = 1
    ) -> Evidence:
        """A series over seeds for trend criteria: ``samples`` is (seeds, len(x)); each point's mean, its standard
        error over seeds (ddof 1; 0 for one seed) and the number of seeds behind it (``y_n``, for the t quantile).
        ``paired``: the runs of one row of ``samples`` share their seed (initial weights, data order), so the rows are
        kept (``y_samples``) and each step is tested on the per-seed differences. ``looks``: see the class."""
        xs = tuple(float(a) for a in x)
        rows = [tuple(float(v) for v in row) for row in samples]
        if not xs or not rows or any(len(r) != len(xs) for r in rows):
            raise ParameterError("samples", f"a non-empty (seeds, {len(xs)}) table of numbers over x", len(rows))
        n = len(rows)
        cols = list(zip(*rows))
        mean = tuple(sum(c) / n for c in cols)
        err = tuple(math.sqrt(sum((v - m) ** 2 for v in c) / (n - 1) / n) if n > 1 else 0.0 for c, m in zip(cols, mean))
        if not isinstance(paired, bool):
            raise ParameterError("paired", "True or False", paired)
        return cls(
            x=xs,
            y=mean,
            y_err=err,
            y_n=(n,) * len(xs),
            note=note,
            unmet=unmet,
            y_samples=tuple(rows) if paired else None,
            looks=looks,
        )

    @classmethod
    def from_samples(cls, samples, note: str = "", unmet: str = "", *, looks: int = 1) -> Evidence:
        """A value measured per seed (or per pair): ``value`` is the mean of ``samples`` (non-empty). ``looks``:
        see the class."""
        samples = tuple(float(s) for s in samples)
        if not samples:
            raise ParameterError("samples", "a non-empty sequence of numbers", samples)
        return cls(value=sum(samples) / len(samples), samples=samples, note=note, unmet=unmet, looks=looks)
