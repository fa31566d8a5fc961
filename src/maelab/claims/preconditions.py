"""The learning preconditions of claims about trained models: one family, used by every paper.

A claim about a trained model counts only where the model demonstrably learned. Each check here says so in numbers,
per seed or run: ``met`` (it holds), ``unmet`` ("" or the one-line reason a row is withheld, for
``maelab.claims.Evidence.unmet``) and ``row()`` (its row of the table a page shows) -- the
:class:`~maelab.claims.Precondition` protocol. The paper packages build their gates from these and nothing else:

* :class:`~maelab.claims.LearnedCheck`: a class probe beats the same architecture at random initialisation by more
  than :data:`~maelab.claims.LEARNED_MARGIN` in every seed (models with labels);
* :class:`~maelab.claims.ReconstructionCheck`: a reconstruction loss is at most ``max_ratio`` (default
  :data:`~maelab.claims.RECON_MAX_RATIO`) times a trivial predictor's in every run (prediction maps without labels);
* :class:`~maelab.claims.FineTuneCheck`: a fine-tuned accuracy is above the frozen linear probe of the same encoder
  in every run (fine-tuning learned);
* :class:`~maelab.claims.RunStopped`: a run that has no trained model to judge (it diverged, or its loss is not
  finite): never met.

:func:`~maelab.claims.unmet_of` joins the reasons of the checks that failed.

**Why a margin of 5 points** (:data:`~maelab.claims.LEARNED_MARGIN`, in accuracy units: 0.05). A claim about a
trained representation counts only where its probe (the claim's own probe, e.g. the [CLS] linear probe) beats the
*same architecture at random initialisation* (same seed, so the same initial weights; same data and probe) by **more
than 5 points in every seed**:

* noise. Our probes are tested on 1,000 to 10,000 images: the binomial standard error of one accuracy is at most 1.6
  points on 1,000 images (at 50 %), that of a trained-minus-random difference at most 2.2 points, so a gain above 5
  points is more than two of them even in the smallest test set. Asking it of *every* seed (not of the mean) means
  one seed that did not learn withholds the verdict; the seed-to-seed spreads measured on Fashion-MNIST are shown on
  the ``zhang_regime`` page against this margin.
* relevance. The effects the papers test are of the same order or larger (U-MAE over MAE, Zhang et al. Table 1: +3.1
  to +9.3 points; MAE over no mask, §3.2: +43.8 points); a model whose representation moved less than 5 points away
  from its random initialisation is at the very beginning of training, not in the papers' regime, and a difference
  between two such models says nothing about the trained representations the papers describe.

**Why a ratio of 0.8** (:data:`~maelab.claims.RECON_MAX_RATIO`). For a claim about a trained *prediction map* where
no class probe exists (unlabelled data, e.g. Bisulco's masked-pixel Jacobians on photo crops), the model's
reconstruction loss must be at most this fraction of the loss of a trivial predictor. Beating random initialisation
is no test there (a model that outputs the mean grey level beats it many times over); the trivial predictor is the
one without spatial structure -- every removed pixel filled with the mean of the visible pixels, whose Jacobian
weighs every visible pixel equally. Requiring at most 0.8 of its loss (a fifth of its error removed) is the same
relative step as the probe margin: 5 points of the 20 to 25 points of error that our random-init probes leave. (A
page that keeps a ratio of its own states it in its settings, e.g. ``cao_decoder``'s ``margin`` and ``ref_margin``.)
"""

from __future__ import annotations

import dataclasses
import math
from typing import Protocol, runtime_checkable

from .._validate import ParameterError

#: The learning margin of :class:`LearnedCheck`, in accuracy units (0.05 = 5 points; the module docstring says why).
LEARNED_MARGIN = 0.05

#: The default ratio of :class:`ReconstructionCheck` (loss <= 0.8 x the trivial predictor's; the module docstring
#: says why).
RECON_MAX_RATIO = 0.8


@runtime_checkable
class Precondition(Protocol):
    """What every learning check of the family offers: ``met`` (the check holds) and ``unmet`` ("" when it holds,
    else a one-line reason with the numbers, for ``Evidence.unmet``)."""

    @property
    def met(self) -> bool: ...

    @property
    def unmet(self) -> str: ...


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


@dataclasses.dataclass(frozen=True)
class FineTuneCheck:
    """The precondition "fine-tuning learned": in every run, the fine-tuned test accuracy is above the frozen linear
    probe of the same pre-trained encoder. Two fine-tunings stuck at chance agree "within tolerance" for a trivial
    reason, and a fine-tuning below the frozen probe it started from has not learned its task, so a statement about
    fine-tuning needs this first.

    ``what``: the compared accuracy in words ("mean fine-tuned accuracy"); ``finetuned`` and ``probe``: accuracies in
    [0, 1], paired by position; ``runs``: their labels (default 0, 1, ...). An accuracy equal to the probe's is not
    above it."""

    what: str
    finetuned: tuple[float, ...]
    probe: tuple[float, ...]
    runs: tuple = ()

    def __post_init__(self):
        for name in ("finetuned", "probe"):
            v = tuple(float(a) for a in getattr(self, name))
            if not v or not all(math.isfinite(a) for a in v):
                raise ParameterError(name, "a non-empty sequence of finite accuracies (one per run)", v)
            object.__setattr__(self, name, v)
        if len(self.finetuned) != len(self.probe):
            raise ParameterError("probe", f"{len(self.finetuned)} values, one per run like finetuned", self.probe)
        runs = tuple(self.runs) or tuple(range(len(self.finetuned)))
        if len(runs) != len(self.finetuned):
            raise ParameterError("runs", f"{len(self.finetuned)} labels, one per value", runs)
        object.__setattr__(self, "runs", runs)

    @property
    def met(self) -> bool:
        return all(f > p for f, p in zip(self.finetuned, self.probe))

    @property
    def unmet(self) -> str:
        failed = [
            f"{r} {_pts(f)} % <= probe {_pts(p)} %"
            for r, f, p in zip(self.runs, self.finetuned, self.probe)
            if not f > p
        ]
        if not failed:
            return ""
        return f"fine-tuning did not learn ({self.what} not above the frozen linear probe: " + "; ".join(failed) + ")"

    def row(self) -> dict:
        """One row of a page's precondition table (accuracies in %)."""
        return {
            "fine-tuning": self.what,
            "runs": ", ".join(map(str, self.runs)),
            "fine-tuned (%)": ", ".join(_pts(a) for a in self.finetuned),
            "frozen probe (%)": ", ".join(_pts(a) for a in self.probe),
            "required": "above the probe in every run",
            "learned": "yes" if self.met else "no",
        }


@dataclasses.dataclass(frozen=True)
class RunStopped:
    """The precondition of a run that has no trained model to judge: it diverged (``reason``: the trainer's first
    line) or ended with a loss that is not finite. Never met; ``unmet`` is "<what>: <reason>". It belongs to the
    family so that a page's gate is made of :class:`Precondition` checks only, a diverged run included (a loss check
    cannot say this: a NaN loss has no ratio to compare)."""

    what: str
    reason: str

    def __post_init__(self):
        for name in ("what", "reason"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v.strip():
                raise ParameterError(name, "a non-empty one-line string", v)

    @property
    def met(self) -> bool:
        return False

    @property
    def unmet(self) -> str:
        return f"{self.what}: {self.reason}"

    def row(self) -> dict:
        """One row of a page's precondition table."""
        return {"model": self.what, "stopped": self.reason, "learned": "no"}


def unmet_of(*checks: Precondition) -> str:
    """The ``unmet`` reasons of the failed checks ("" when every check holds): joined by "; " for one or two,
    else "k of n models did not learn, e.g. <the first reason>"."""
    failed = [c for c in checks if not c.met]
    if len(failed) <= 2:
        return "; ".join(c.unmet for c in failed)
    return f"{len(failed)} of {len(checks)} models did not learn, e.g. {failed[0].unmet}"
