"""The notebook context: what a page's kernel uses to validate its parameters, load or compute its results and
record its claims.

In a notebook::

    # parameters cell: the run options (``python -m maelab.book run`` replaces them) and the page's own settings
    run_options = {"profile": "cpu", "seed": 0, "device": "auto", "recompute": False, "progress": None}
    mask_ratio = None
    # ...
    ctx = maelab.book.setup("masking", run_options, mask_ratio=mask_ratio)  # one-line error for a bad value
    res = ctx.load_or_compute("spectra", config, fn)   # results as data, with provenance
    ctx.claim("bisulco.eq19_21_sinc", Evidence(...), res)
    ctx.finish()                                        # stores claim evidence, shows provenance

The context holds the run's :class:`maelab.options.RunOptions` (``ctx.options``) and hands the library what it
needs from them as arguments: ``ctx.caps`` (the dry run's caps, or None) to every function that trains or
evaluates, ``ctx.root`` (the results folder) to readers of stored results, ``ctx.options`` to the store.

A kernel imports this module (through :mod:`maelab.book`) and nothing of the runner: no papermill, nbformat or
argparse (``tests/test_book_package.py`` checks it). The cost model is imported only when the gpu profile is asked
to compute on a machine without CUDA (to say how long it would take).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import sys
import warnings
from collections.abc import Callable
from typing import Any

from .. import claims as claims_mod
from .. import store
from .._util import progress_enabled, resolve_device, seed_everything
from .._validate import ParameterError
from ..options import DryRunLimits, RunOptions
from ..profiles import CORE_PARAMS, NotebookSettings, settings_class, validate_core
from ..result_keys import settings_key
from .render import refresh_findings
from .scoreboard import format_value

# A claims record is kept as stored when its sources are unchanged and the new evidence equals the stored one
# within this tolerance (|a - b| <= max(CLAIMS_RTOL * max(|a|, |b|), CLAIMS_ATOL), NaN == NaN) with the same
# verdicts: a last-digit BLAS difference on another CPU does not rewrite committed records.
CLAIMS_RTOL, CLAIMS_ATOL = 1e-9, 1e-12
DRY_RUN_VERDICT = "dry run"  # what Context.claim returns in a dry run (nothing is scored or stored)


class EvidenceChanged(UserWarning):
    """Evidence recomputed from unchanged sources differs beyond tolerance from the stored evidence."""


class GpuUnavailable(RuntimeError):
    """The gpu profile was asked to compute on a machine without CUDA (one-line message with the way out)."""


def _store_job(name, full, fn, notebook, profile, seeds, device, options) -> None:
    """One job of :meth:`Context.load_or_compute_many` in a worker of the pool: the record stored, as the page's
    :meth:`Context.load_or_compute` would store it (module level: it travels to a spawned process)."""
    store.load_or_compute(
        name, full, fn, notebook=notebook, profile=profile, seeds=seeds, device=device, options=options
    )


@dataclasses.dataclass
class Context:
    """One page's run: its notebook, its run options (:class:`maelab.options.RunOptions`), the resolved device and
    progress flag, settings for the profile, the results it has used (for its provenance table) and the claims it
    has recorded (stored by :meth:`finish`). Built by :func:`setup`."""

    notebook: str
    options: RunOptions
    device: Any
    progress: bool
    params: dict
    settings: NotebookSettings
    results: list = dataclasses.field(default_factory=list)
    _claims: dict = dataclasses.field(default_factory=dict)
    _claim_keys: dict = dataclasses.field(default_factory=dict)

    @property
    def profile(self) -> str:
        """The run's profile (smoke, cpu or gpu)."""
        return self.options.profile

    @property
    def seed(self) -> int:
        """The page's seed."""
        return self.options.seed

    @property
    def recompute(self) -> bool:
        """Whether stored results are ignored and computed again."""
        return self.options.recompute

    @property
    def caps(self) -> DryRunLimits | None:
        """The dry run's caps, or None in a real run. Pass them as ``caps=ctx.caps`` to every library function that
        trains or evaluates, so that a dry run stays a few steps on a few images all the way down."""
        return self.options.dry_run

    @property
    def root(self):
        """The results folder this run reads and writes, ``maelab.store.results_root`` of its profile and options.
        Pass it to readers of stored results, e.g. ``maelab.zoo.load_entries(S, ctx.profile, root=ctx.root)``."""
        return store.results_root(self.profile, self.options)

    def load_or_compute(self, name: str, config: dict, fn: Callable[[], dict], seeds=None) -> store.Result:
        """:func:`maelab.store.load_or_compute` with this notebook's profile, seed, device and recompute flag.

        ``config`` must list everything ``fn`` reads, e.g. ``{"what": ..., **ctx.settings.pick("n", "k"),
        "seed": ctx.seed}``; only the profile is added. A result hashes only what it reads, so changing a setting
        it does not read keeps it, and a setting missing from ``config`` would let a stale result be reused.
        """
        if "profile" in config:
            raise ParameterError("config key", "not 'profile' (Context adds it)", "profile")
        full = {"profile": self.profile, **config}
        if self._gpu_without_cuda:

            def fn(fn=fn):  # only reached when the result must be computed (a stored one is loaded)
                from .plan import gpu_on_cpu_message

                raise GpuUnavailable(gpu_on_cpu_message([self.notebook]))

        res = store.load_or_compute(
            name,
            full,
            fn,
            notebook=self.notebook,
            profile=self.profile,
            seeds=seeds if seeds is not None else [self.seed],
            device=self.device,
            recompute=self.recompute,
            options=self.options,
        )
        self.results.append(res)
        return res

    @property
    def _gpu_without_cuda(self) -> bool:
        """The gpu profile on a machine without CUDA, outside a dry run and without ``allow_cpu``: where
        :meth:`load_or_compute` refuses to compute (:class:`GpuUnavailable`)."""
        cuda = getattr(self.device, "type", "cpu") == "cuda"
        return self.profile == "gpu" and not cuda and self.caps is None and not self.options.allow_cpu

    def load_or_compute_many(self, jobs: dict) -> dict:
        """Several independent results at once: ``jobs`` is ``{key: (name, config, fn, seeds)}``, each as
        :meth:`load_or_compute` takes it; returns ``{key: Result}`` in ``jobs``' order, what one
        :meth:`load_or_compute` per job would have returned.

        Where the run options' ``train_workers`` is 2 or more (a lent GPU: ``maelab.device``'s runner), the pending
        jobs are first computed side by side, each stored whole by a worker of the pool
        (:func:`maelab.prefetch.compute_records`), and then loaded here; else (the book's runs, every cpu run) one
        after another, exactly as before. A worker computes the same record: the same name, config, ``fn``, seeds,
        device and results root (its run options have ``train_workers`` 0, so the ``fn`` of a job trains on its own
        rather than starting a pool inside the pool). ``fn`` must pickle for the pool (a ``functools.partial`` of a
        module-level function); with ``recompute``, or a gpu page on a CPU, nothing is handed over and the loop
        meets what :meth:`load_or_compute` meets."""
        if not isinstance(jobs, dict):
            raise ParameterError("jobs", "a dict {key: (name, config, fn, seeds)}", type(jobs).__name__)
        for key, job in jobs.items():
            if not (isinstance(job, tuple) and len(job) == 4 and callable(job[2]) and isinstance(job[1], dict)):
                raise ParameterError(f"jobs[{key!r}]", "a tuple (name, config, fn, seeds)", job)
            if "profile" in job[1]:  # refused before a worker could store anything
                raise ParameterError("config key", "not 'profile' (Context adds it)", "profile")
        if self.options.train_workers >= 2 and not self.recompute and not self._gpu_without_cuda:
            from ..prefetch import compute_records

            alone = self.options.replace(train_workers=0)
            calls = {
                name: functools.partial(
                    _store_job,
                    name,
                    {"profile": self.profile, **config},
                    fn,
                    self.notebook,
                    self.profile,
                    seeds if seeds is not None else [self.seed],
                    self.device,
                    alone,
                )  # fmt: skip
                for name, config, fn, seeds in jobs.values()
                if self.is_pending(name, config)
            }
            compute_records(calls, device=str(self.device), caps=self.caps, workers=self.options.train_workers)
        return {
            key: self.load_or_compute(name, config, fn, seeds=seeds) for key, (name, config, fn, seeds) in jobs.items()
        }

    def is_pending(self, name: str, config: dict) -> bool:
        """Whether :meth:`load_or_compute` of ``name`` with ``config`` would compute (nothing matching is stored, or
        recompute is on) rather than load: what a page's library asks before it hands the runs of pending results
        to :mod:`maelab.prefetch`. Reads, never computes."""
        return self.recompute or not store.matches(
            self.notebook, name, self.profile, {"profile": self.profile, **config}, self.options
        )

    def read(self, notebook: str, name: str, config: dict, *, missing_ok: bool = False) -> store.Result | None:
        """Another notebook's stored result of this profile, read through the store and never computed (the book
        runs notebooks in ``_toc.yml`` order, so the one that computes it runs first).

        ``config``: the config that notebook passes to its :meth:`load_or_compute` (the profile is added), so a
        result computed under other settings is never taken. Missing: :class:`maelab.store.StoreMiss` in one line
        naming the command that computes it, or None with ``missing_ok``; stored under another config: ``StoreMiss``
        whatever ``missing_ok``. The result is listed in this page's provenance as ``<notebook>/<name>``.
        """
        if "profile" in config:
            raise ParameterError("config key", "not 'profile' (Context adds it)", "profile")
        res = store.read(notebook, name, self.profile, {"profile": self.profile, **config}, root=self.root)
        if res is None:
            if missing_ok:
                return None
            raise store.StoreMiss(
                f"{notebook}/{name}.{self.profile}: not stored; compute it first: "
                f"python -m maelab.book run --profile {self.profile} --only {notebook}"
            )
        res = dataclasses.replace(res, name=f"{notebook}/{name}")
        self.results.append(res)
        return res

    def _source_name(self, result: store.Result) -> str:
        """How a claim names a result it rests on: ``name`` in this page's folder, ``<notebook>/<name>`` for a
        result of another folder (read with :meth:`read`, or the shared zoo's entries), so that the name finds the
        record (the scoreboard's provenance, ``maelab.device.progress``)."""
        folder = result.provenance.get("notebook")
        if "/" in result.name or not folder or folder == self.notebook:
            return result.name
        return f"{folder}/{result.name}"

    def claim(self, claim_id: str, evidence: claims_mod.Evidence, *sources: store.Result) -> tuple[str, str]:
        """Record evidence for a registered claim; returns (verdict, reason) computed by its criterion."""
        if claim_id not in claims_mod.REGISTRY:
            raise ParameterError("claim_id", "an id in maelab.claims.REGISTRY", claim_id)
        c = claims_mod.REGISTRY[claim_id]
        if c.notebook != self.notebook:
            raise ParameterError("claim_id", f"a claim of notebook {self.notebook!r}", claim_id)
        if self.caps is not None:  # a couple of steps per run: nothing to score
            return DRY_RUN_VERDICT, "dry run: capped training, not scored"
        v, why = claims_mod.verdict(c, evidence)
        _refuse_shared_samples(c, evidence, self._claims)
        self._claims[claim_id] = {
            "evidence": evidence.to_dict(),
            "verdict": v,
            "reason": why,
            "sources": [
                {
                    "name": self._source_name(s),
                    "config_hash": s.provenance["config_hash"],
                    "commit": s.provenance["git"]["commit"],
                    "device": s.provenance["device"],
                }
                for s in sources
            ],
        }
        # what the record is keyed by: the results the evidence was computed from, and how it is judged
        self._claim_keys[claim_id] = {
            "criterion": c.criterion.text,
            "sources": [[self._source_name(s), s.provenance["config_hash"]] for s in sources],
        }
        return v, why

    def claims_frame(self):
        """One row per claim recorded so far on this page: claim, where, paper's value, ours, criterion, verdict,
        reason (``pandas.DataFrame``)."""
        import pandas as pd

        rows = []
        for cid, rec in self._claims.items():
            c = claims_mod.REGISTRY[cid]
            ev = claims_mod.Evidence.from_dict(rec["evidence"])
            rows.append(
                {
                    "claim": c.statement,
                    "where": c.where,
                    "paper": c.paper_value,
                    "ours": format_value(ev, c.unit),
                    "criterion": c.criterion.text,
                    "verdict": rec["verdict"],
                    "reason": rec["reason"],
                }
            )
        return pd.DataFrame(rows)

    def finish(self) -> store.Result | None:
        """Store this notebook's claim evidence in ``claims.<profile>.json``; unchanged evidence is not rewritten.

        Then the page's findings box (:func:`maelab.book.show_findings`), drawn from the record stored before this
        run, is redrawn from the record this run has just stored: the rendered page shows this run's verdicts.

        The record is keyed by its *sources* (claim ids, criteria, the config hashes of the results each claim's
        evidence came from, the profile and settings), not by the evidence itself. With the same key, evidence
        equal within ``CLAIMS_RTOL``/``CLAIMS_ATOL``, the same verdicts and the same source records, the stored
        record is kept byte for byte (nothing is written: this works on a read-only results folder). Evidence that
        differs beyond the tolerance although its sources did not change means the notebook's derivation changed:
        the record is rewritten (the page must show what the code computes) and an :class:`EvidenceChanged`
        warning says so in one line.
        """
        if self.caps is not None:
            print(
                "DRY RUN: every training run was capped at a couple of optimiser steps and every evaluation at a "
                "few images; the numbers on this page mean nothing and no claim was scored or stored.",
                flush=True,
            )
            return None
        if self.options.no_compute == "record":  # stored records handed on under requested keys: nothing stored
            print("[claims] no_compute='record': claims evaluated, not stored", file=sys.stderr, flush=True)
            return None
        res = self._store_claims()
        refresh_findings(self.notebook, self.profile, self.root)
        return res

    def _store_claims(self) -> store.Result | None:
        rows = {k: self._claims[k] for k in sorted(self._claims)}
        key = {
            "profile": self.profile,
            "settings": settings_key(self.settings),  # fields at their omit_at value left out (rule 5 there)
            "claims": {k: self._claim_keys[k] for k in sorted(self._claim_keys)},
        }
        data: dict = {"claims": rows}
        if not rows:  # a page without claims (zhang_regime): the record marks its result set, see used_results
            if not self.results:
                return None
            data["results"] = used_results(self)
            key["results"] = [[r["name"], r["config_hash"]] for r in data["results"]]
        try:
            stored = store.load(self.notebook, "claims", self.profile, root=self.root)
        except store.OldSchemaError:
            raise
        except store.RecordError as e:
            print(f"[claims] {e} -> rewriting it", file=sys.stderr, flush=True)
            stored = None
        if stored is not None and stored.provenance.get("config_hash") == store.config_hash(key):
            diff = claims_difference(stored["claims"], rows)
            if diff is None:  # the same key: for a page without claims, the same results used
                return stored
            if not diff.startswith("sources"):
                warnings.warn(
                    f"{self.notebook}: {diff} although its sources are unchanged; rewriting the claims record",
                    EvidenceChanged,
                    stacklevel=3,
                )
        return store.save(
            "claims",
            key,
            data,
            notebook=self.notebook,
            profile=self.profile,
            seeds=[self.seed],
            device=self.device,
            options=self.options,
        )

    def provenance_frame(self):
        """One row per result used on this page: where it came from."""
        import pandas as pd

        rows = []
        for r in self.results:
            p = r.provenance
            rows.append(
                {
                    "result": r.name,
                    "profile": p["profile"],
                    "device": p["device"],
                    "commit": p["git"]["commit"][:10] + ("+dirty" if p["git"]["dirty"] else ""),
                    "seeds": ", ".join(map(str, p["seeds"] or [])),
                    "wall time (s)": f"{p['wall_time_s']:.3g}",
                    "computed": p["timestamp"][:19].replace("T", " "),
                    "config hash": p["config_hash"],
                    "loaded from store": r.from_store,
                }
            )
        return pd.DataFrame(rows)


def used_results(ctx: Context) -> list[dict]:
    """The results a run of ``ctx``'s page used, each once (``name`` as a claim names its source, ``config_hash``):
    what the claims record of a page *without* claims (``zhang_regime``) stores, so that
    :func:`maelab.book.runner.complete` can tell whether its result set is complete -- a page with claims is
    complete when every result its claims cite is stored, one without when every result it used is."""
    seen = {}
    for r in ctx.results:
        seen.setdefault(ctx._source_name(r), r.provenance["config_hash"])
    return [{"name": n, "config_hash": h} for n, h in seen.items()]


def setup(notebook: str, run_options: Any = None, **params: Any) -> Context:
    """Validate a notebook's run options and parameters (one-line ParameterError on the first bad one) and build its
    context.

    ``run_options``: the page's ``run_options`` parameter -- the dict ``python -m maelab.book run`` injects
    (:meth:`maelab.options.RunOptions.to_param`), or the page's own defaults when opened by hand (any subset of the
    fields) -- a :class:`~maelab.options.RunOptions`, or None (the defaults). ``params`` name fields of the
    notebook's settings class (``None`` keeps the profile's value; any other name is an error listing the allowed
    ones) or one of the run options' core fields (``profile``, ``seed``, ``device``, ``recompute``, ``progress``),
    which then replace the options' value: ``setup("masking", profile="smoke")`` by hand.

    In a dry run (``run_options`` with ``dry_run``) the settings' repetitions are cut to the caps
    (:meth:`maelab.profiles.NotebookSettings.for_profile`).
    """
    cls = settings_class(notebook)
    opts = RunOptions.from_param(run_options)
    core = {k: params.pop(k) for k in CORE_PARAMS if k in params}
    if core:
        validate_core(core)
        opts = opts.replace(**core)
    validate_core({"profile": opts.profile})  # a kernel runs one profile ("auto" is the runner's)
    extra = {k: v for k, v in params.items() if v is not None}
    S = cls.for_profile(opts.profile, caps=opts.dry_run, **extra)  # unknown names, bad values: one-line errors
    dev = resolve_device(opts.device)
    if opts.dry_run is not None:
        print(
            f"DRY RUN of {notebook} with profile={opts.profile}: the profile's models, data and code paths, "
            "a couple of optimiser steps per training run, a few images per evaluation; results in a temp "
            "folder, claims not scored.",
            flush=True,
        )
    seed_everything(opts.seed)
    return Context(
        notebook=notebook,
        options=opts,
        device=dev,
        progress=progress_enabled(opts.progress),
        params=extra,
        settings=S,
    )


def _close(a: Any, b: Any) -> bool:
    """Equal JSON values, numbers within (CLAIMS_RTOL, CLAIMS_ATOL), NaN equal to NaN."""
    num = (int, float)
    if isinstance(a, num) and isinstance(b, num) and not isinstance(a, bool) and not isinstance(b, bool):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=CLAIMS_RTOL, abs_tol=CLAIMS_ATOL)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    return a == b


def _refuse_shared_samples(claim, evidence, recorded: dict) -> None:
    """One row per independent finding: a claim whose per-seed samples equal those of a claim already recorded on
    the page must be declared a view of it (``Claim.view_of``, either way round), else :class:`ParameterError`.
    Constant samples (every seed the same difference, e.g. two models at the same chance accuracy in a smoke run)
    carry no finding to share and are not compared."""
    if not evidence.samples or len(evidence.samples) < 2 or len(set(evidence.samples)) == 1:
        return
    for other, rec in recorded.items():
        if other == claim.id or list(evidence.samples) != rec["evidence"].get("samples"):
            continue
        o = claims_mod.REGISTRY[other]
        if claim.view_of != other and o.view_of != claim.id:
            raise ParameterError(
                "claim_id",
                f"a row declared view_of={other!r} (its samples equal those of {other!r}: one finding, counted once)",
                claim.id,
            )


def claims_difference(stored: dict, new: dict) -> str | None:
    """None when two claims records agree (same claims, sources and verdicts; evidence within tolerance; the stored
    reasons what today's criteria say of the stored evidence), else the first difference in words (starting with
    "sources" when a source record was recomputed)."""
    if stored.keys() != new.keys():
        return f"claims {sorted(stored)} != {sorted(new)}"
    for cid in sorted(new):
        a, b = stored[cid], new[cid]
        if a.get("sources") != b.get("sources"):
            return f"sources of {cid} changed"
    for cid in sorted(new):
        a, b = stored[cid], new[cid]
        if not _close(a.get("evidence"), b.get("evidence")):
            return (
                f"evidence for {cid} differs beyond rtol={CLAIMS_RTOL:g}, atol={CLAIMS_ATOL:g} "
                f"({a.get('evidence')} -> {b.get('evidence')})"
            )
        if a.get("verdict") != b.get("verdict"):
            return f"verdict of {cid} changed ({a.get('verdict')} -> {b.get('verdict')})"
    for cid in sorted(new):
        a = stored[cid]
        claim = claims_mod.REGISTRY.get(cid)
        if claim is None or "evidence" not in a or "reason" not in a:
            continue
        # the criterion's wording changed: today's reason for the *stored* evidence (robust to evidence noise)
        today = claims_mod.verdict(claim, claims_mod.Evidence.from_dict(a["evidence"]))[1]
        if a["reason"] != today:
            return f"reason of {cid} reads differently today ({a['reason']!r} -> {today!r})"
    return None


def page_provenance(ctx: Context) -> dict[str, str]:
    """Profile, device, commit and wall time of the results a page has used so far (for :func:`settings_table`).

    Device and commit are those recorded with the stored results (where they were computed), not this machine's;
    the wall time is the results' computing time, summed.
    """
    provs = [r.provenance for r in ctx.results]
    devices = sorted({str(p.get("device", "")) for p in provs} - {""})
    commits = sorted(
        {
            str(p.get("git", {}).get("commit", ""))[:10] + ("+dirty" if p.get("git", {}).get("dirty") else "")
            for p in provs
        }
        - {""}
    )
    wall = sum(float(p.get("wall_time_s") or 0.0) for p in provs)
    loaded = sum(bool(getattr(r, "from_store", False)) for r in ctx.results)
    return {
        "profile": ctx.profile,
        "device": "; ".join(devices) or "—",
        "commit": ", ".join(commits) or "—",
        "wall time": f"{wall:.1f} s over {len(provs)} results ({loaded} loaded from the store)" if provs else "—",
    }
