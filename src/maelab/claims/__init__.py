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

This package is the engine only. The rows are data next to their paper: each paper package has a module
``maelab.papers.<paper>.claims`` exporting ``CLAIMS: list[Claim]`` (keyword-argument rows). :data:`REGISTRY`
gathers them on first use from the paper registry an entry point installed (:mod:`maelab.registry`), so the core
never imports a paper and adding a paper adds no line here. A claim id defined twice, or a row whose ``paper`` is
not its package, is an error (:class:`~maelab.registry.RegistryError`).

Layout (one concern per module; this package re-exports the public API, so ``from maelab.claims import Evidence,
Above, LearnedCheck, REGISTRY`` works as before the split, and each object is documented once, under that name):

* ``maelab.claims.evidence``: :class:`Evidence` and the verdict names;
* ``maelab.claims.statistics``: t quantiles and intervals, one-sided and two-sided p-values, :func:`holm`,
  :func:`minimum_detectable_effect`;
* ``maelab.claims.criteria``: :class:`Criterion` and the criteria :class:`Below`, :class:`Above`, :class:`Within`,
  :class:`PairedGreater`, :class:`Monotone`;
* ``maelab.claims.preconditions``: the learning preconditions of every paper (:class:`LearnedCheck`,
  :class:`ReconstructionCheck`, :class:`FineTuneCheck`, :class:`RunStopped`, :func:`unmet_of`) and why their
  margins are what they are;
* ``maelab.claims.rows``: :class:`Claim`, :data:`KINDS`, :data:`UNITS`, :func:`verdict`;
* ``maelab.claims.policy``: :data:`POLICY`, :func:`adjust`, :class:`Decision`;
* ``maelab.claims.registry``: :func:`gather_claims` (checks the rows the installed paper registry hands down),
  :data:`REGISTRY`. Which papers there are is the papers' own declaration (:func:`maelab.registry.papers`).

The constants are re-bound below (not only imported) so that each carries its documentation under its public name.
"""

from __future__ import annotations

from .._validate import ParameterError as ParameterError  # the error of every bad argument, as C.ParameterError
from . import policy as _policy
from . import preconditions as _preconditions
from . import registry as _registry
from . import rows as _rows
from . import statistics as _statistics
from .criteria import Above, Below, Criterion, Monotone, PairedGreater, Within
from .evidence import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED, VERDICTS, Evidence
from .policy import Decision, adjust
from .preconditions import FineTuneCheck, LearnedCheck, Precondition, ReconstructionCheck, RunStopped, unmet_of
from .registry import RegistryError as RegistryError  # maelab.registry's (documented there), as C.RegistryError
from .registry import gather_claims
from .rows import Claim, verdict
from .statistics import holm, minimum_detectable_effect, t_interval, t_quantile, two_sided

#: The level of every test of the engine. A row decides at two-sided level ``ALPHA`` (its 95 % t interval, one-sided
#: ``ALPHA`` / 2 each way), and :data:`POLICY` keeps the family-wise error rate of each paper's stochastic rows at it.
ALPHA = _statistics.ALPHA

#: The learning margin of :class:`LearnedCheck`, in accuracy units (0.05 = 5 points). A trained model's probe must
#: beat its random initialisation by more than this in every seed (:mod:`maelab.claims.preconditions` says why).
LEARNED_MARGIN = _preconditions.LEARNED_MARGIN

#: The default ratio of :class:`ReconstructionCheck`. A trained prediction map's loss must be at most this fraction
#: of a trivial predictor's in every run (:mod:`maelab.claims.preconditions` says why 0.8).
RECON_MAX_RATIO = _preconditions.RECON_MAX_RATIO

#: Display units of our value (``Claim.unit``), name -> (factor, suffix). "points" shows an accuracy fraction x 100.
UNITS = _rows.UNITS

#: What a claim row is (issue 21), i.e. how far its verdict can count as evidence for a paper (kind -> meaning).
KINDS = _rows.KINDS

#: The book's multiplicity policy, fixed before the runs it judges (issue 21; maelab.claims.adjust applies it).
POLICY = _policy.POLICY

#: every claim row, id -> Claim, in paper (``order`` of :class:`maelab.registry.Paper`) then row order
REGISTRY = _registry.REGISTRY

__all__ = [
    # evidence and verdicts
    "Evidence",
    "SUPPORTED",
    "NOT_SUPPORTED",
    "INCONCLUSIVE",
    "VERDICTS",
    # statistics
    "ALPHA",
    "t_quantile",
    "t_interval",
    "two_sided",
    "holm",
    "minimum_detectable_effect",
    # criteria
    "Criterion",
    "Below",
    "Above",
    "Within",
    "PairedGreater",
    "Monotone",
    # learning preconditions
    "LEARNED_MARGIN",
    "RECON_MAX_RATIO",
    "Precondition",
    "LearnedCheck",
    "ReconstructionCheck",
    "FineTuneCheck",
    "RunStopped",
    "unmet_of",
    # rows, policy, registry
    "Claim",
    "KINDS",
    "UNITS",
    "verdict",
    "POLICY",
    "Decision",
    "adjust",
    "gather_claims",
    "REGISTRY",
]
