"""The book: notebook context, papermill runner, Jupyter Book build, findings boxes and the scoreboard.

In a notebook::

    # parameters cell (tagged "parameters"; papermill may inject others)
    profile, seed, device, recompute, progress = "cpu", 0, "auto", False, None
    # next cell (input removed): the page's findings box from its stored claims record, redrawn by ctx.finish()
    from maelab import book; book.show_findings("masking", profile)
    # next cell
    ctx = maelab.book.setup("masking", profile=profile, seed=seed, device=device, recompute=recompute,
                            progress=progress)          # validates; one-line error for a bad value
    res = ctx.load_or_compute("spectra", config, fn)   # results as data, with provenance
    ctx.claim("bisulco.eq19_21_sinc", Evidence(...), res)
    ctx.finish()                                        # stores claim evidence, shows provenance

From the shell (``make book`` does both)::

    python -m maelab.book run --profile auto [--only masking] [--recompute] [-p mask_ratio=0.3] [--no-compute]
    python -m maelab.book build [--strict]

``--profile auto`` runs each notebook with the best profile that has committed results (gpu > cpu), else cpu.

A GPU profile without a GPU::

    python -m maelab.book run --profile gpu --dry-run   # every notebook, the gpu settings, 2 steps per run, on CPU
    python -m maelab.book plan --profile gpu            # predicted H100 and CPU minutes per notebook

``--dry-run`` (``maelab._util.dry_run_limits``) executes the notebooks with the profile's exact models, data
and code paths but caps every training run at a couple of optimiser steps and every evaluation at a few images;
results and checkpoints go to a temp folder, claims are not scored. ``--profile gpu`` on a machine without CUDA is
refused with the predicted duration on this CPU unless ``--force-cpu`` is given. ``MAELAB_DRY_RUN=1`` exported by
hand does not turn a plain ``run`` into a dry run: it is refused in one line (and the store never writes a dry
run's results outside its temp folder).

``build`` refuses failed notebooks, notebooks showing an error, and stale ones: an executed notebook older than its
source ``notebooks/NAME.md``, its settings module or a file of the results folder it read (modification times;
the scoreboard: every claims record), in one line naming each notebook and what is newer.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import shutil
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import claims as claims_mod
from . import store
from ._util import (
    DRY_RUN_DIR_ENV,
    DRY_RUN_ENV,
    TMP_PREFIX,
    dry_run_limits,
    env_flag,
    progress_enabled,
    resolve_device,
    seed_everything,
)
from ._validate import ParameterError, folder_path, one_of
from .profiles import CORE_PARAMS, PROFILE_NAMES, NotebookSettings, settings_class, validate_core

LAST = ("scoreboard",)  # notebooks that read other notebooks' results run last
# A claims record is kept as stored when its sources are unchanged and the new evidence equals the stored one
# within this tolerance (|a - b| <= max(CLAIMS_RTOL * max(|a|, |b|), CLAIMS_ATOL), NaN == NaN) with the same
# verdicts: a last-digit BLAS difference on another CPU does not rewrite committed records.
CLAIMS_RTOL, CLAIMS_ATOL = 1e-9, 1e-12
RECORD_ERROR = "record error"  # scoreboard verdict of a claim whose stored claims record cannot be trusted
DRY_RUN_VERDICT = "dry run"  # what Context.claim returns in a dry run (nothing is scored or stored)
ALLOW_CPU_ENV = "MAELAB_ALLOW_CPU"  # "1": compute gpu-profile results on a machine without CUDA (--force-cpu)
NOT_MEASURED = "not yet measured"  # scoreboard verdict of a claim with no stored evidence
IDENTITY = "identity"  # scoreboard verdict of a row of kind "identity" whose check holds: shown, not support


class EvidenceChanged(UserWarning):
    """Evidence recomputed from unchanged sources differs beyond tolerance from the stored evidence."""


# ----------------------------------------------------------------------------------------------- context
@dataclasses.dataclass
class Context:
    notebook: str
    profile: str
    seed: int
    device: Any
    recompute: bool
    progress: bool
    params: dict
    settings: NotebookSettings
    results: list = dataclasses.field(default_factory=list)
    _claims: dict = dataclasses.field(default_factory=dict)
    _claim_keys: dict = dataclasses.field(default_factory=dict)

    def load_or_compute(self, name: str, config: dict, fn: Callable[[], dict], seeds=None) -> store.Result:
        """:func:`maelab.store.load_or_compute` with this notebook's profile, seed, device and recompute flag.

        ``config`` must list everything ``fn`` reads, e.g. ``{"what": ..., **ctx.settings.pick("n", "k"),
        "seed": ctx.seed}``; only the profile is added. A result hashes only what it reads, so changing a setting
        it does not read keeps it, and a setting missing from ``config`` would let a stale result be reused.
        """
        if "profile" in config:
            raise ParameterError("config key", "not 'profile' (Context adds it)", "profile")
        full = {"profile": self.profile, **config}
        if (
            self.profile == "gpu"
            and getattr(self.device, "type", "cpu") != "cuda"
            and dry_run_limits() is None
            and not env_flag(ALLOW_CPU_ENV)
        ):

            def fn(fn=fn):  # only reached when the result must be computed (a stored one is loaded)
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
        )
        self.results.append(res)
        return res

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
        res = store.read(notebook, name, self.profile, {"profile": self.profile, **config})
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

    def claim(self, claim_id: str, evidence: claims_mod.Evidence, *sources: store.Result) -> tuple[str, str]:
        """Record evidence for a registered claim; returns (verdict, reason) computed by its criterion."""
        if claim_id not in claims_mod.REGISTRY:
            raise ParameterError("claim_id", "an id in maelab.claims.REGISTRY", claim_id)
        c = claims_mod.REGISTRY[claim_id]
        if c.notebook != self.notebook:
            raise ParameterError("claim_id", f"a claim of notebook {self.notebook!r}", claim_id)
        if dry_run_limits() is not None:  # a couple of steps per run: nothing to score
            return DRY_RUN_VERDICT, "dry run: capped training, not scored"
        v, why = claims_mod.verdict(c, evidence)
        _refuse_shared_samples(c, evidence, self._claims)
        self._claims[claim_id] = {
            "evidence": evidence.to_dict(),
            "verdict": v,
            "reason": why,
            "sources": [
                {
                    "name": s.name,
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
            "sources": [[s.name, s.provenance["config_hash"]] for s in sources],
        }
        return v, why

    def claims_frame(self):
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

        Then the page's findings box (:func:`show_findings`), drawn from the record stored before this run, is
        redrawn from the record this run has just stored: the rendered page shows this run's verdicts.

        The record is keyed by its *sources* (claim ids, criteria, the config hashes of the results each claim's
        evidence came from, the profile and settings), not by the evidence itself. With the same key, evidence
        equal within ``CLAIMS_RTOL``/``CLAIMS_ATOL``, the same verdicts and the same source records, the stored
        record is kept byte for byte (nothing is written: this works on a read-only results folder). Evidence that
        differs beyond the tolerance although its sources did not change means the notebook's derivation changed:
        the record is rewritten (the page must show what the code computes) and an :class:`EvidenceChanged`
        warning says so in one line.
        """
        if dry_run_limits() is not None:
            print(
                "DRY RUN: every training run was capped at a couple of optimiser steps and every evaluation at a "
                "few images; the numbers on this page mean nothing and no claim was scored or stored.",
                flush=True,
            )
            return None
        if store.no_compute_mode() == "record":  # stored records handed on under requested keys: nothing stored
            print("[claims] MAELAB_NO_COMPUTE=record: claims evaluated, not stored", file=sys.stderr, flush=True)
            return None
        res = self._store_claims()
        _refresh_findings(self.notebook, self.profile)
        return res

    def _store_claims(self) -> store.Result | None:
        if not self._claims:
            return None
        rows = {k: self._claims[k] for k in sorted(self._claims)}
        key = {
            "profile": self.profile,
            "settings": self.settings.key_dict(),  # fields at their omit_at value left out (profiles.setting)
            "claims": {k: self._claim_keys[k] for k in sorted(self._claim_keys)},
        }
        try:
            stored = store.load(self.notebook, "claims", self.profile)
        except store.OldSchemaError:
            raise
        except store.RecordError as e:
            print(f"[claims] {e} -> rewriting it", file=sys.stderr, flush=True)
            stored = None
        if stored is not None and stored.provenance.get("config_hash") == store.config_hash(key):
            diff = claims_difference(stored["claims"], rows)
            if diff is None:
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
            {"claims": rows},
            notebook=self.notebook,
            profile=self.profile,
            seeds=[self.seed],
            device=self.device,
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


def setup(
    notebook: str,
    *,
    profile: str,
    seed: int = 0,
    device: str = "auto",
    recompute: bool = False,
    progress: bool | None = None,
    **params: Any,
) -> Context:
    """Validate a notebook's parameters (one-line ParameterError on the first bad one) and build its context.

    ``params`` name fields of the notebook's settings class (``None`` keeps the profile's value); any other name
    is an error listing the allowed ones.
    """
    cls = settings_class(notebook)
    checked = validate_core(
        {"profile": profile, "seed": seed, "device": device, "recompute": recompute, "progress": progress}
    )
    extra = {k: v for k, v in params.items() if v is not None}
    S = cls.for_profile(checked["profile"], **extra)  # unknown names and bad values: one-line ParameterError
    dev = resolve_device(checked["device"])
    if dry_run_limits() is not None:
        print(
            f"DRY RUN of {notebook} with profile={checked['profile']}: the profile's models, data and code paths, "
            "a couple of optimiser steps per training run, a few images per evaluation; results in a temp "
            "folder, claims not scored.",
            flush=True,
        )
    seed_everything(checked["seed"])
    return Context(
        notebook=notebook,
        profile=checked["profile"],
        seed=checked["seed"],
        device=dev,
        recompute=checked["recompute"],
        progress=progress_enabled(checked["progress"]),
        params=extra,
        settings=S,
    )


def format_value(ev: claims_mod.Evidence, unit: str = "") -> str:
    """Our value in words: ``mean ± s.e. (n=...)`` over seeds, a series ``[y1, ...] (±max s.e.)``, or the value;
    in ``unit`` (:data:`maelab.claims.UNITS`: "points" shows accuracy fractions x 100, as the papers do)."""
    one_of("unit", unit, claims_mod.UNITS)
    k, suffix = claims_mod.UNITS[unit]
    if ev.y is not None:
        pts = ", ".join(f"{k * y:.3g}" for y in ev.y)
        return f"[{pts}]{suffix}" + (f" (±{k * max(ev.y_err):.2g} s.e.)" if ev.y_err else "")
    if ev.value is None:
        return "—"
    if not unit:
        return f"{ev.value:.3g}" + (f" ± {ev.sem:.2g} s.e. (n={ev.n})" if ev.std is not None else "")
    s = f"{k * ev.value:+.3g}" + (f" ± {k * ev.sem:.2g}" if ev.std is not None else "") + suffix
    return s + (f" (mean ± s.e., n={ev.n})" if ev.std is not None else "")


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


def settings_table(settings: Any, provenance: dict[str, Any] | None = None, *, title: str = "Settings"):
    """A collapsible HTML table of a notebook's settings, headed by its provenance (profile, device, commit, wall time).

    Args:
        settings: a plain dict of setting -> value, or a settings dataclass instance (a field's ``metadata["help"]``
            is shown as its meaning).
        provenance: e.g. :func:`page_provenance` of the notebook's context; shown in the summary line and first rows.
        title: the summary line's label.

    Returns:
        ``IPython.display.HTML`` (a ``<details>`` element, closed by default).
    """
    import html

    from IPython.display import HTML

    if dataclasses.is_dataclass(settings) and not isinstance(settings, type):
        rows = [(f.name, getattr(settings, f.name), f.metadata.get("help", "")) for f in dataclasses.fields(settings)]
    elif isinstance(settings, dict):
        rows = [(k, v, "") for k, v in settings.items()]
    else:
        raise ParameterError("settings", "a dict or a settings dataclass instance", type(settings).__name__)
    prov = dict(provenance or {})
    esc = html.escape
    head = " · ".join(f"{esc(str(k))} <b>{esc(str(v))}</b>" for k, v in prov.items() if k in ("profile", "device"))
    cells = "".join(f"<tr><th>{esc(str(k))}</th><td>{esc(str(v))}</td><td></td></tr>" for k, v in prov.items())
    cells += "".join(
        f"<tr><th><code>{esc(str(k))}</code></th><td><code>{esc(repr(v))}</code></td><td>{esc(str(h))}</td></tr>"
        for k, v, h in rows
    )
    return HTML(
        f'<details class="maelab-settings"><summary>{esc(title)}: {head}</summary>'
        f'<table class="table"><tbody>{cells}</tbody></table></details>'
    )


# ----------------------------------------------------------------------------------------------- scoreboard
def _claim_roots() -> list[Path]:
    env = os.environ.get("MAELAB_RESULTS_DIR")
    if env:
        return [Path(env)]
    return [store.results_root("cpu"), store.results_root("smoke")]


def _claims_record(root: Path, notebook: str, profile: str) -> tuple[str, dict | None, dict | None, str]:
    """(profile, claim rows, provenance, "") of a stored claims record, or (profile, None, None, why) when it cannot
    be trusted (tampered, unreadable, old format): the scoreboard then shows an error, never another profile."""
    try:
        r = store.load(notebook, "claims", profile, root=root)
        return profile, r["claims"], r.provenance, ""
    except (store.RecordError, KeyError, TypeError) as e:
        why = str(e) if isinstance(e, store.RecordError) else f"claims record of {notebook} ({profile}) is malformed"
        print(f"[scoreboard] {why}", file=sys.stderr, flush=True)
        return profile, None, None, why


def _best_claims_records(
    notebooks: list[str] | None = None, profile: str | None = None
) -> dict[str, tuple[str, dict | None, dict | None, str]]:
    """notebook -> (profile, claim rows, provenance, error) of the claims record a page or the scoreboard shows.

    ``profile=None``: the best profile stored for each notebook (gpu > cpu > smoke) over the claim roots;
    a profile: that profile's record in its results root (where :meth:`Context.finish` stores it).
    """
    best: dict[str, tuple[str, dict | None, dict | None, str]] = {}
    if profile is not None:
        one_of("profile", profile, store.PROFILE_ORDER)
        root = store.results_root(profile)
        names = (
            notebooks
            if notebooks is not None
            else (sorted(p.name for p in root.iterdir() if p.is_dir()) if root.exists() else [])
        )
        for name in names:
            if store.record_path(root, name, "claims", profile).exists():
                best[name] = _claims_record(root, name, profile)
        return best
    for root in _claim_roots():
        if not root.exists():
            continue
        for folder in sorted(p for p in root.iterdir() if p.is_dir()):
            if notebooks is not None and folder.name not in notebooks:
                continue
            for prof in store.PROFILE_ORDER:
                if not store.record_path(root, folder.name, "claims", prof).exists():
                    continue
                cur = best.get(folder.name)
                if cur is None or store.PROFILE_ORDER.index(prof) < store.PROFILE_ORDER.index(cur[0]):
                    best[folder.name] = _claims_record(root, folder.name, prof)
                break
    return best


def collect_claims(notebooks: list[str] | None = None, profile: str | None = None):
    """Every registered claim with the evidence of the best profile stored for its notebook (gpu > cpu > smoke).

    Verdicts are recomputed here from the stored evidence with the registry's criterion, then judged under the
    book's multiplicity policy (:data:`maelab.claims.POLICY`, :func:`maelab.claims.adjust`: Holm within each
    paper's stochastic rows). The family of a row is taken from every notebook's record of the same selection
    (the best stored profile, or ``profile``'s records), whatever ``notebooks`` keeps. When the best stored claims
    record of a notebook cannot be trusted (checksum mismatch, unreadable, old format), its claims get the verdict
    ``RECORD_ERROR`` with the reason -- the scoreboard never falls back silently to a lower profile.

    Args:
        notebooks: only the claims of these notebooks (default: every registered claim).
        profile: read this profile's record (where a page run with it stores its claims) instead of the best one.

    Returns:
        ``pandas.DataFrame``, one row per claim in registry order: id, paper, where, claim, paper's value, measure,
        criterion, notebook, ours (mean ± s.e., n), verdict, reason, profile, device, commit, recorded (date),
        raw verdict (the row's own test), p (its two-sided p; None without a test), p_adj (Holm-adjusted), kind
        (:data:`maelab.claims.KINDS`) and view_of. A row of kind "identity" whose check holds shows ``IDENTITY``.
    """
    import pandas as pd

    best = _best_claims_records(None, profile)  # every notebook: the policy's families span the paper
    rows, measured = [], {}
    for c in claims_mod.REGISTRY.values():
        row = {
            "id": c.id,
            "paper": c.paper,
            "where": c.where,
            "claim": c.statement,
            "paper's value": c.paper_value,
            "measure": c.measure,
            "criterion": c.criterion.text,
            "notebook": c.notebook,
            "kind": c.kind,
            "view_of": c.view_of,
        }
        found = best.get(c.notebook)
        rec = found[1].get(c.id) if found and found[1] is not None else None
        if found is not None and found[3]:
            row.update(
                {
                    "ours": "—",
                    "verdict": RECORD_ERROR,
                    "reason": found[3],
                    "profile": found[0],
                    "device": "",
                    "commit": "",
                    "recorded": "",
                }
            )
        elif rec is None:
            row.update(
                {
                    "ours": "—",
                    "verdict": NOT_MEASURED,
                    "reason": "",
                    "profile": "",
                    "device": "",
                    "commit": "",
                    "recorded": "",
                }
            )
        else:
            ev = claims_mod.Evidence.from_dict(rec["evidence"])
            measured[c.id] = (c, ev)
            v, why = claims_mod.verdict(c, ev)
            src = (
                rec["sources"][0]
                if rec["sources"]
                else {"device": found[2]["device"], "commit": found[2]["git"]["commit"]}
            )
            row.update(
                {
                    "ours": format_value(ev, c.unit),
                    "verdict": v,
                    "reason": why,
                    "profile": found[0],
                    "device": src["device"],
                    "commit": src["commit"][:10],
                    "recorded": str(found[2].get("timestamp", ""))[:10],
                }
            )
        rows.append(row)
    decided = claims_mod.adjust(measured)
    for row in rows:
        d = decided.get(row["id"])
        row["raw verdict"] = d.raw_verdict if d else row["verdict"]
        row["p"], row["p_adj"] = (d.p, d.p_adj) if d else (None, None)
        if d:
            row["verdict"], row["reason"] = d.verdict, d.reason
            if row["kind"] == "identity" and d.verdict == claims_mod.SUPPORTED:
                row["verdict"] = IDENTITY  # holds by construction: shown, never counted as support
    board = pd.DataFrame(rows)
    if notebooks is not None:
        board = board[board["notebook"].isin(notebooks)].reset_index(drop=True)
    return board


# ----------------------------------------------------------------------------------------------- findings
#: The verdicts a claim can show, in the order the scoreboard counts and colours them.
VERDICT_ORDER = (
    claims_mod.SUPPORTED,
    claims_mod.NOT_SUPPORTED,
    claims_mod.INCONCLUSIVE,
    IDENTITY,
    NOT_MEASURED,
    RECORD_ERROR,
)
#: background and text colour of each verdict's badge; the background is also its colour in the scoreboard figure
VERDICT_COLORS: dict[str, tuple[str, str]] = {
    claims_mod.SUPPORTED: ("#027a5c", "#ffffff"),
    claims_mod.NOT_SUPPORTED: ("#b84a00", "#ffffff"),
    claims_mod.INCONCLUSIVE: ("#ece133", "#1f1f1f"),
    IDENTITY: ("#56b4e9", "#1f1f1f"),
    NOT_MEASURED: ("#c8c8c8", "#1f1f1f"),
    RECORD_ERROR: ("#6a3d9a", "#ffffff"),
}
PAPER_VALUE = "paper's value"  # column of collect_claims
_FINDINGS_VIEWS: dict[tuple[str, str], Any] = {}  # (notebook, profile) -> display handle of its findings box
# one small style sheet, repeated in each box (a page may show a box alone); selectors beat myst-nb's output styles
_CSS = """<style>
div.maelab-findings{border:1px solid #d0d7de;border-left:4px solid #0173b2;border-radius:4px;padding:.5em .8em;
 margin:.3em 0 1.2em;font-size:.9em;line-height:1.4}
div.maelab-findings p{margin:.2em 0}
div.maelab-findings table,div.maelab-board table.maelab-scoreboard{width:100%;table-layout:fixed;
 border-collapse:collapse;margin:.3em 0 .8em}
div.maelab-findings table th,div.maelab-findings table td,div.maelab-board table.maelab-scoreboard th,
div.maelab-board table.maelab-scoreboard td{padding:.25em .4em;vertical-align:top;text-align:left;
 overflow-wrap:anywhere;white-space:normal;border-bottom:1px solid #e3e3e3}
div.maelab-board table.maelab-scoreboard caption{caption-side:top;text-align:left;font-weight:600;padding:.3em 0}
div.maelab-board tr.maelab-detail td{font-size:.85em;color:#57606a;border-bottom:1px solid #bbb}
div.maelab-board tr.maelab-detail dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:0 .8em;
 margin:.2em 0}
div.maelab-board tr.maelab-detail dd{margin:0}
span.maelab-badge{display:inline-block;padding:0 .5em;border-radius:.7em;font-size:.85em;font-weight:600;
 overflow-wrap:normal;word-break:normal}
p.maelab-note{color:#57606a;font-size:.85em}
</style>"""


def verdict_badge(verdict: str) -> str:
    """HTML of a verdict's coloured badge (one of :data:`VERDICT_ORDER`)."""
    import html

    if verdict not in VERDICT_COLORS:
        raise ParameterError("verdict", "one of " + ", ".join(repr(v) for v in VERDICT_ORDER), verdict)
    bg, fg = VERDICT_COLORS[verdict]
    return f'<span class="maelab-badge" style="background:{bg};color:{fg}">{html.escape(verdict)}</span>'


def paper_label(paper: str) -> str:
    """Short name of a paper: ``"Zhang, Wang & Wang (NeurIPS 2022)"`` from its :data:`maelab.claims.PAPERS` title."""
    title = claims_mod.PAPERS.get(paper)
    return title.split("),")[0] + ")" if title and ")," in title else (title or paper)


def verdict_counts(board):
    """Claims per paper (rows, in :data:`maelab.claims.PAPERS` order) and verdict (columns, :data:`VERDICT_ORDER`).

    Args:
        board: :func:`collect_claims` (or a subset of its rows).

    Returns:
        ``pandas.DataFrame`` of ints; a verdict outside :data:`VERDICT_ORDER` is an error.
    """
    import pandas as pd

    bad = sorted(set(board["verdict"]) - set(VERDICT_ORDER)) if len(board) else []
    if bad:
        raise ParameterError("board verdicts", "among " + ", ".join(repr(v) for v in VERDICT_ORDER), bad[0])
    present = set(board["paper"]) if len(board) else set()
    papers = [p for p in claims_mod.PAPERS if p in present] + sorted(present - set(claims_mod.PAPERS))
    counts = pd.DataFrame(0, index=pd.Index(papers, name="paper"), columns=list(VERDICT_ORDER), dtype=int)
    for (paper, v), n in board.groupby(["paper", "verdict"]).size().items() if len(board) else ():
        counts.loc[paper, v] = int(n)
    return counts


def _heading_anchor(text: str) -> str:
    """The id Sphinx gives a MyST heading: docutils' ``make_id`` of its text (maths as its source, no markup)."""
    import re

    from docutils.nodes import make_id

    plain = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return make_id(re.sub(r"[`*$]", "", plain))


def _string_patterns(source: str) -> list:
    """Regexes of the string literals of a code cell: constants literally, f-strings with ``.+`` for each field
    (only f-strings whose literal text holds a dot, as claim ids do: ``f"{cid}"`` would match any id)."""
    import ast
    import re

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(re.compile(re.escape(node.value)))
        elif isinstance(node, ast.JoinedStr) and any(
            isinstance(v, ast.Constant) and "." in v.value for v in node.values
        ):  # "paper.name" ids spell the dot
            out.append(
                re.compile("".join(re.escape(v.value) if isinstance(v, ast.Constant) else ".+" for v in node.values))
            )
    return out


def claim_sections(notebook: str, root: Path | None = None) -> dict[str, tuple[str, str]]:
    """Claim id -> (heading, anchor) of the section of notebooks/NOTEBOOK.md whose cell records it.

    A claim is placed in the first code cell calling ``ctx.claim(`` whose string literals (f-strings as patterns)
    spell its id, under the last ``##`` (or deeper) heading before that cell. Claims recorded elsewhere (an id held
    in a variable only) are left out: a link then goes to the page alone.
    """
    import re

    import jupytext

    root = root or store.repo_root()
    src = root / "notebooks" / f"{notebook}.md"
    if not src.exists():
        raise ParameterError(
            "notebook", "one of " + ", ".join(sorted(p.stem for p in src.parent.glob("*.md"))), notebook
        )
    ids = [c.id for c in claims_mod.REGISTRY.values() if c.notebook == notebook]
    heading, out = None, {}
    for cell in jupytext.read(src).cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                m = re.match(r"^#{2,6}\s+(.+?)\s*$", line)
                if m:
                    heading = m.group(1)
        elif cell.cell_type == "code" and heading and "ctx.claim(" in cell.source:
            patterns = _string_patterns(cell.source)
            for cid in ids:
                if cid not in out and any(p.fullmatch(cid) for p in patterns):
                    out[cid] = (heading, _heading_anchor(heading))
    return out


def _in_toc(notebook: str, root: Path | None = None) -> bool:
    """Whether notebooks/NOTEBOOK is a page of the book (listed in _toc.yml; the book builds only listed files)."""
    import re

    toc = ((root or store.repo_root()) / "_toc.yml").read_text()
    return re.search(rf"^\s*-?\s*file:\s*notebooks/{re.escape(notebook)}\s*$", toc, flags=re.M) is not None


def _claim_links(board, link_base: str, same_page: bool = False) -> dict[str, str]:
    """Claim id -> URL of the page (and section) that measured it, relative to the page showing the link; claims
    of a notebook that is not a page of the book (not in _toc.yml, or not written yet) get no link."""
    links: dict[str, str] = {}
    for nb in dict.fromkeys(board["notebook"]) if len(board) else ():
        if not same_page and not _in_toc(nb):
            continue
        try:
            sections = claim_sections(nb)
        except ParameterError:  # a claim of a notebook that does not exist (yet): no link
            continue
        page = "" if same_page else f"{link_base}{nb}.html"
        for cid in board.loc[board["notebook"] == nb, "id"]:
            anchor = sections.get(cid, (None, ""))[1]
            if anchor or page:
                links[cid] = page + (f"#{anchor}" if anchor else "")
    return links


def _counts_line(board) -> str:
    counts = verdict_counts(board).sum()
    parts = [f"{int(counts[v])} {verdict_badge(v)}" for v in VERDICT_ORDER if counts[v]]
    return f"{len(board)} claim{'s' if len(board) != 1 else ''}: " + " ".join(parts)


def kind_counts(board):
    """Rows per kind (:data:`maelab.claims.KINDS`) and verdict, each counted once as a finding: a row that is a
    view of another (``view_of``) is left out. ``pandas.DataFrame`` of ints, kinds as rows."""
    import pandas as pd

    own = board[board["view_of"].fillna("") == ""] if len(board) else board
    counts = pd.DataFrame(0, index=pd.Index(list(claims_mod.KINDS), name="kind"), columns=list(VERDICT_ORDER))
    for (kind, v), n in own.groupby(["kind", "verdict"]).size().items() if len(own) else ():
        counts.loc[kind, v] = int(n)
    return counts


def _findings_box(board, *, title: str, note: str, links: dict[str, str]) -> str:
    import html

    esc = html.escape
    rows = []
    for _, d in board.iterrows():
        claim = esc(str(d["claim"]))
        if d["id"] in links:
            claim = f'<a href="{esc(links[d["id"]])}">{claim}</a>'
        rows.append(
            f"<tr><td>{claim}</td><td>{esc(str(d['where']))}</td><td>{esc(str(d[PAPER_VALUE]))}</td>"
            f"<td>{esc(str(d['ours']))}</td><td>{verdict_badge(d['verdict'])}</td></tr>"
        )
    body = (
        (
            '<table><colgroup><col style="width:35%"><col style="width:13%"><col style="width:17%">'
            '<col style="width:17%"><col style="width:18%"></colgroup><thead><tr><th>claim</th><th>where</th>'
            "<th>paper</th><th>ours</th><th>verdict</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
        )
        if rows
        else ""
    )
    counts = _counts_line(board) if rows else "no claims"
    return (
        f'{_CSS}<div class="maelab-findings"><p><b>{esc(title)}</b> · {counts}'
        f'</p>{body}<p class="maelab-note">{esc(note)}</p></div>'
    )


def _record_note(board) -> str:
    """Where a box's verdicts come from: profile, commit and date of the stored claims records."""
    recs = sorted({(r["profile"], r["commit"], r["recorded"]) for _, r in board.iterrows() if r["profile"]})
    if not recs:
        return "no claims record stored yet"
    return "; ".join(
        f"profile {p}" + (f", commit {c}" if c else "") + (f", recorded {t}" if t else "") for p, c, t in recs
    )


def findings(notebook: str, profile: str | None = None, *, when: str = "stored"):
    """The findings box of a notebook page: its claims, our value against the paper's, each verdict as a badge.

    Everything comes from the stored claims record (:func:`collect_claims`): verdicts are recomputed from the stored
    evidence with the registry's criteria, and a record that fails its checksum shows ``record error``.

    Args:
        notebook: the notebook's name (``notebooks/NAME.md``).
        profile: the profile whose record is shown (a page shows its own run's); ``None``: the best one stored.
        when: ``"stored"``, ``"before"`` (drawn before this run records its claims) or ``"after"`` (redrawn by
            :meth:`Context.finish`): only the note under the table differs.

    Returns:
        ``IPython.display.HTML``.
    """
    from IPython.display import HTML

    one_of("when", when, ("stored", "before", "after"))
    one_of("notebook", notebook, notebooks_in_order())
    board = collect_claims(notebooks=[notebook], profile=profile)
    note = {
        "stored": "Verdicts from the stored claims record",
        "before": "Verdicts stored before this run (this box is redrawn when the page has run)",
        "after": "Verdicts of this run, as stored in its claims record",
    }[when]
    note += f" ({_record_note(board)}), each computed by maelab.claims from the claim's stated criterion."
    return HTML(
        _findings_box(board, title="Findings of this page", note=note, links=_claim_links(board, "", same_page=True))
    )


def show_findings(notebook: str, profile: str) -> None:
    """Display a page's findings box (as stored before this run) and let :meth:`Context.finish` redraw it.

    The one-liner that opens each notebook page, before its setup cell::

        from maelab import book; book.show_findings("masking", profile)
    """
    from IPython.display import display

    one_of("profile", profile, PROFILE_NAMES)
    handle = display(findings(notebook, profile, when="before"), display_id=True)
    if handle is not None:
        _FINDINGS_VIEWS[(notebook, profile)] = handle


def _refresh_findings(notebook: str, profile: str) -> None:
    handle = _FINDINGS_VIEWS.get((notebook, profile))
    if handle is not None:
        handle.update(findings(notebook, profile, when="after"))


def paper_findings(paper: str, board=None, *, link_base: str = ""):
    """The findings box of a paper: its claims (best stored profile per notebook), each linked to its page.

    Args:
        paper: a key of :data:`maelab.claims.PAPERS`.
        board: :func:`collect_claims` (computed when omitted).
        link_base: the notebooks folder relative to the page showing the box (``"../../notebooks/"`` for
            ``book/papers/*.md``; ``""`` on a notebook page).

    Returns:
        ``IPython.display.HTML``.
    """
    from IPython.display import HTML

    one_of("paper", paper, claims_mod.PAPERS)
    board = collect_claims() if board is None else board
    part = board[board["paper"] == paper]
    note = (
        f"Verdicts from the stored claims records ({_record_note(part)}), computed by maelab.claims from "
        "each claim's stated criterion; criteria and reasons are on the claims scoreboard."
    )
    return HTML(_findings_box(part, title="Findings", note=note, links=_claim_links(part, link_base)))


def findings_summary(board=None, *, link_base: str = ""):
    """What the book found: claims per paper and verdict, each paper linked to its scoreboard table.

    Args:
        board: :func:`collect_claims` (computed when omitted).
        link_base: the scoreboard page relative to the page showing the table (``""`` on the scoreboard itself).

    Returns:
        ``IPython.display.HTML``.
    """
    import html

    from IPython.display import HTML

    board = collect_claims() if board is None else board
    counts = verdict_counts(board)
    head = "".join(f"<th>{verdict_badge(v)}</th>" for v in VERDICT_ORDER)
    rows = "".join(
        f'<tr><td><a href="{html.escape(link_base)}#scoreboard-{p}">{html.escape(paper_label(p))}</a></td>'
        + "".join(f"<td>{int(counts.loc[p, v])}</td>" for v in VERDICT_ORDER)
        + f"<td>{int(counts.loc[p].sum())}</td></tr>"
        for p in counts.index
    )
    total = "".join(f"<td><b>{int(counts[v].sum())}</b></td>" for v in VERDICT_ORDER)
    cols = '<col style="width:26%">' + '<col style="width:12.5%">' * len(VERDICT_ORDER) + '<col style="width:11.5%">'
    table = (
        f"<table><colgroup>{cols}</colgroup><thead><tr><th>paper</th>{head}<th>claims</th></tr></thead>"
        f"<tbody>{rows}"
        f"<tr><td><b>all</b></td>{total}<td><b>{len(board)}</b></td></tr></tbody></table>"
    )
    kinds = kind_counts(board)
    krows = "".join(
        f"<tr><td>{html.escape(k)}</td>"
        + "".join(f"<td>{int(kinds.loc[k, v])}</td>" for v in VERDICT_ORDER)
        + f"<td>{int(kinds.loc[k].sum())}</td></tr>"
        for k in kinds.index
    )
    ktable = (
        f"<table><colgroup>{cols}</colgroup><thead><tr><th>kind of row (findings)</th>{head}<th>findings</th></tr>"
        f"</thead><tbody>{krows}<tr><td><b>all</b></td>"
        + "".join(f"<td><b>{int(kinds[v].sum())}</b></td>" for v in VERDICT_ORDER)
        + f"<td><b>{int(kinds.values.sum())}</b></td></tr></tbody></table>"
    )
    return HTML(
        f'{_CSS}<div class="maelab-findings"><p><b>What the book found</b> · {_counts_line(board)}</p>'
        f"{table}<p>The same rows by kind, each independent finding once (a row that reads another row's samples "
        f"under a second criterion is left out): <i>identity</i> rows hold by construction and are never counted "
        f"as support, <i>computation</i> rows compute a theorem's quantity exactly, <i>trained</i> rows measure "
        f"models we trained.</p>{ktable}"
        '<p class="maelab-note">Verdicts computed by <code>maelab.claims</code> from the stored claims '
        "records (the best profile stored per notebook), after the multiplicity policy (Holm within each "
        "paper).</p></div>"
    )


def _p_text(r) -> str:
    """A row's p-values as the scoreboard prints them: raw and Holm-adjusted, or why there are none."""
    p = r.get("p")
    if p is None or p != p:  # None or NaN
        return "— (decided without a test: an exact value, or no spread over seeds)"
    return f"{p:.2g} raw, {r['p_adj']:.2g} adjusted (its own test says: {r['raw verdict']})"


def scoreboard_table(board, paper: str) -> str:
    """One paper's scoreboard table (HTML): claim, where, paper's value, ours, verdict badge, and under each row a
    collapsible detail row with the criterion, reason and provenance; each claim links to the page (and section)
    that measured it. The table fits its container (fixed layout, long values wrap)."""
    import html

    one_of("paper", paper, claims_mod.PAPERS)
    esc = html.escape
    part = board[board["paper"] == paper]
    links = _claim_links(part, "")
    rows = []
    for _, r in part.iterrows():
        anchor = "claim-" + "-".join(filter(None, "".join(ch if ch.isalnum() else " " for ch in r["id"]).split()))
        claim = esc(r["claim"])
        if r["id"] in links:
            claim = f'<a href="{esc(links[r["id"]])}">{claim}</a>'
        prov = ", ".join(f"{k} {esc(str(r[k]))}" for k in ("profile", "device", "commit", "recorded") if r[k])
        detail = "".join(
            f"<dt>{k}</dt><dd>{esc(str(v))}</dd>"
            for k, v in (
                ("claim id", r["id"]),
                ("our measure", r["measure"]),
                ("criterion", r["criterion"]),
                ("reason", r["reason"] or "—"),
                ("p (Holm)", _p_text(r)),
                ("provenance", prov or "—"),
            )
        )
        rows.append(
            f'<tr id="{anchor}"><td>{esc(r["where"])}</td><td>{claim}</td><td>{esc(r[PAPER_VALUE])}</td>'
            f"<td>{esc(r['ours'])}</td><td>{verdict_badge(r['verdict'])}</td></tr>"
            f'<tr class="maelab-detail"><td colspan="5"><details><summary>criterion, reason, provenance'
            f"</summary><dl>{detail}</dl></details></td></tr>"
        )
    cols = "".join(f'<col style="width:{w}%">' for w in (12, 37, 16, 17, 18))  # a badge fits its column
    return (
        f'{_CSS}<div class="maelab-board"><table class="maelab-scoreboard" id="scoreboard-{paper}">'
        f"<caption>{esc(paper_label(paper))} · {_counts_line(part)}</caption><colgroup>{cols}</colgroup>"
        "<thead><tr><th>where</th><th>claim</th><th>paper</th><th>ours (mean ± s.e., n)</th><th>verdict</th></tr>"
        f"</thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def plot_verdict_counts(board, ax=None):
    """Stacked horizontal bars: claims per paper, one segment per verdict in its badge colour (the book's style).

    Returns:
        the matplotlib Axes.
    """
    import matplotlib.pyplot as plt

    counts = verdict_counts(board)
    if ax is None:
        _, ax = plt.subplots(figsize=(7.2, 0.5 * max(1, len(counts)) + 1.2), layout="constrained")
    labels = [paper_label(p) for p in counts.index]
    left = [0] * len(counts)
    for v in VERDICT_ORDER:
        n = counts[v].tolist()
        bars = ax.barh(labels, n, left=left, color=VERDICT_COLORS[v][0], edgecolor="white", label=v)
        ax.bar_label(
            bars, labels=[str(k) if k else "" for k in n], label_type="center", fontsize=8, color=VERDICT_COLORS[v][1]
        )
        left = [a + b for a, b in zip(left, n)]
    ax.invert_yaxis()
    ax.set_xlabel("claims")
    ax.legend(ncol=len(VERDICT_ORDER), loc="lower left", bbox_to_anchor=(0.0, 1.0), fontsize=7.5)
    return ax


# ----------------------------------------------------------------------------------------------- runner
def notebooks_in_order(root: Path | None = None) -> list[str]:
    """Notebook names in _toc.yml order, those in LAST at the end; notebooks/ files missing from the toc after."""
    import yaml

    root = root or store.repo_root()
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    names: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            f = node.get("file")
            if isinstance(f, str) and f.startswith("notebooks/"):
                names.append(Path(f).stem)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(toc)
    on_disk = sorted(p.stem for p in (root / "notebooks").glob("*.md"))
    names += [n for n in on_disk if n not in names]
    names = [n for n in names if n in on_disk]
    return [n for n in names if n not in LAST] + [n for n in LAST if n in names]


def choose_profile(notebook: str, requested: str) -> str:
    if requested != "auto":
        return requested
    found = [p for p in store.stored_profiles(notebook, store.results_root("cpu")) if p != "smoke"]
    return found[0] if found else "cpu"


class NotebookFailed(RuntimeError):
    pass


class GpuUnavailable(RuntimeError):
    """The gpu profile was asked to compute on a machine without CUDA (one-line message with the way out)."""


def predicted_minutes(profile: str, notebooks: list[str] | None = None, calibration=None) -> dict[str, tuple]:
    """``{notebook: (H100 minutes, CPU minutes)}`` of the notebooks' planned runs (:mod:`maelab.cost`; the CPU from
    this machine's calibration, measured once and cached); notebooks without a plan are left out."""
    from . import cost

    plans = cost.notebook_plans(profile)
    cpu = cost.cpu_device(calibration)
    return {
        nb: (
            sum(cost.predict(r, cost.H100)["seconds"] for r in runs) / 60,
            sum(cost.predict(r, cpu)["seconds"] for r in runs) / 60,
        )
        for nb, runs in plans.items()
        if notebooks is None or nb in notebooks
    }


def gpu_on_cpu_message(notebooks: list[str], calibration=None) -> str:
    """One line: the gpu profile needs CUDA, what the notebooks would take on this CPU, and what to run instead."""
    mins = predicted_minutes("gpu", notebooks, calibration)
    cpu = sum(m[1] for m in mins.values())
    h100 = sum(m[0] for m in mins.values())
    what = ", ".join(notebooks) if len(notebooks) <= 3 else f"{len(notebooks)} notebooks"
    est = (
        f"its planned training is predicted at {cpu:,.0f} min on this CPU ({h100:.1f} min on one H100, maelab.cost)"
        if mins
        else "its cost on this CPU is not modelled"
    )
    return (
        f"profile 'gpu' ({what}) needs a CUDA GPU and torch.cuda.is_available() is False here; {est}: run "
        "--profile cpu instead, or --dry-run to check the gpu settings on this CPU in minutes, or add --force-cpu "
        f"(env {ALLOW_CPU_ENV}=1) to compute it here anyway"
    )


RUNNER_FLAGS = ("profile", "recompute", "device")  # set by the runner's own options, not by -p


def notebook_parameters(name: str, root: Path | None = None) -> tuple[str, ...]:
    """Names assigned in the code cell tagged ``parameters`` of notebooks/NAME.md (what papermill may inject)."""
    import ast

    import jupytext

    root = root or store.repo_root()
    src = root / "notebooks" / f"{name}.md"
    if not src.exists():
        raise ParameterError("notebook", "one of " + ", ".join(notebooks_in_order(root)), name)
    for cell in jupytext.read(src).cells:
        if cell.cell_type == "code" and "parameters" in cell.metadata.get("tags", []):
            names: list[str] = []
            for node in ast.parse(cell.source).body:
                targets = (
                    node.targets
                    if isinstance(node, ast.Assign)
                    else ([node.target] if isinstance(node, ast.AnnAssign) else [])
                )
                for t in targets:
                    names += [e.id for e in (t.elts if isinstance(t, ast.Tuple) else [t]) if isinstance(e, ast.Name)]
            return tuple(dict.fromkeys(names))
    raise NotebookFailed(f"notebook {name} (notebooks/{name}.md) has no code cell tagged 'parameters'")


def check_parameters(name: str, profile: str, params: dict[str, Any], root: Path | None = None) -> None:
    """Reject, before papermill starts, a parameter that notebook ``name`` does not declare or a bad value.

    Allowed: the names of its ``parameters`` cell other than the runner's own options (profile, recompute,
    device). Values: core ones by :func:`maelab.profiles.validate_core`, the rest by the notebook's settings
    class for ``profile`` (so ``mask_ratio=0`` on the masking page fails here, in one line).
    """
    allowed = [n for n in notebook_parameters(name, root) if n not in RUNNER_FLAGS]
    for k, v in params.items():
        if k not in allowed:
            raise ParameterError(k, f"a parameter of notebook {name!r} (" + ", ".join(allowed) + ")", v)
    validate_core({k: v for k, v in params.items() if k in CORE_PARAMS})
    settings_class(name).for_profile(
        profile, **{k: v for k, v in params.items() if k not in CORE_PARAMS and v is not None}
    )


def parse_parameter(text: str) -> tuple[str, Any]:
    """``NAME=VALUE`` -> (name, value); VALUE is a Python literal (``ast.literal_eval``), else the plain string."""
    import ast

    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise ParameterError("-p", "NAME=VALUE with NAME an identifier, e.g. -p mask_ratio=0.3", text)
    try:
        return name, ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError):
        return name, raw.strip()


def run_notebook(
    name: str,
    profile: str,
    out_dir: Path,
    *,
    recompute: bool = False,
    device: str = "auto",
    extra: dict | None = None,
    root: Path | None = None,
) -> Path:
    """Execute notebooks/NAME.md through papermill into out_dir/NAME.ipynb; NotebookFailed names the cell.

    The notebook executes into a temp file that replaces NAME.ipynb only on success: a failed run keeps the last
    good executed notebook, leaves its own output in NAME.failed.ipynb, and :func:`stage` refuses to build the
    book until a later run of NAME succeeds (which removes NAME.failed.ipynb).
    """
    import jupytext
    import nbformat
    import papermill as pm

    root = root or store.repo_root()
    src = root / "notebooks" / f"{name}.md"
    if not src.exists():
        raise ParameterError("notebook", "one of " + ", ".join(notebooks_in_order(root)), name)
    out_dir.mkdir(parents=True, exist_ok=True)
    nb = jupytext.read(src)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    # where this run reads and writes its results: what `build` compares the executed notebook's age against
    nb.metadata["maelab"] = {"profile": profile, "results_root": str(store.results_root(profile).resolve())}
    out, failed = out_dir / f"{name}.ipynb", out_dir / f"{name}.failed.ipynb"
    inp = out_dir / f"{TMP_PREFIX}.{name}.{os.getpid()}.input.ipynb"
    tmp = out_dir / f"{TMP_PREFIX}.{name}.{os.getpid()}.output.ipynb"
    nbformat.write(nb, inp)
    params = {"profile": profile, "recompute": recompute, "device": device, **(extra or {})}
    t0 = time.perf_counter()
    try:
        pm.execute_notebook(
            str(inp),
            str(tmp),
            parameters=params,
            kernel_name="python3",
            cwd=str(root / "notebooks"),
            progress_bar=False,
            log_output=False,
            report_mode=False,
        )
    except Exception as e:
        if tmp.exists():
            os.replace(tmp, failed)
        else:
            failed.write_text("{}\n")  # the marker alone: this notebook's last run failed
        if isinstance(e, pm.PapermillExecutionError):
            evalue = str(e.evalue).splitlines()[0] if str(e.evalue) else ""
            first = next((ln.strip() for ln in (e.source or "").splitlines() if ln.strip()), "")
            first = first if len(first) <= 60 else first[:57] + "..."
            raise NotebookFailed(
                f"notebook {name} (notebooks/{name}.md) failed in cell {e.cell_index} "
                f"(execution count {e.exec_count}, `{first}`): {e.ename}: {evalue}"
            ) from None
        line = str(e).splitlines()[0] if str(e) else ""
        raise NotebookFailed(
            f"notebook {name} (notebooks/{name}.md) could not be executed: {type(e).__name__}: {line}"
        ) from None
    else:
        os.replace(tmp, out)
        failed.unlink(missing_ok=True)
    finally:
        inp.unlink(missing_ok=True)
        tmp.unlink(missing_ok=True)  # only left after an interrupt (KeyboardInterrupt)
    print(f"[book] {name}: executed with profile={profile} in {time.perf_counter() - t0:.1f} s -> {out}", flush=True)
    return out


def run(
    profile: str = "auto",
    only: list[str] | None = None,
    out_dir: Path | None = None,
    recompute: bool = False,
    device: str = "auto",
    extra: dict | None = None,
    *,
    dry_run: bool = False,
    force_cpu: bool = False,
) -> list[Path]:
    """Execute notebooks (see the module docstring). ``dry_run``: see :func:`run_dry`; ``force_cpu``: let
    ``profile="gpu"`` compute on a machine without CUDA."""
    check_environment()
    if dry_run:
        return run_dry(profile, only, out_dir, device=device, extra=extra)
    if dry_run_limits() is not None:
        raise ParameterError(
            DRY_RUN_ENV,
            "unset (or 0) for a plain run: a dry run is `python -m maelab.book run --dry-run`, which keeps its "
            "capped results in a temp folder",
            os.environ.get(DRY_RUN_ENV),
        )
    return _run(profile, only, out_dir, recompute, device, extra, force_cpu=force_cpu)


def check_environment() -> None:
    """Read every on/off variable the notebook kernels inherit (``MAELAB_DRY_RUN``, ``MAELAB_NO_COMPUTE``,
    ``MAELAB_ALLOW_CPU``, ``MAELAB_PROGRESS``) strictly, so that a bad value fails in one line before the first
    notebook runs, not inside one (``maelab._util.env_flag``)."""
    dry_run_limits()
    store.no_compute_mode()
    env_flag(ALLOW_CPU_ENV)
    progress_enabled()


def _run(
    profile: str,
    only: list[str] | None,
    out_dir: Path | None,
    recompute: bool,
    device: str,
    extra: dict | None,
    *,
    force_cpu: bool = False,
) -> list[Path]:
    """:func:`run` without the dry-run switch (a plain run, or the one inside :func:`run_dry`)."""
    root = store.repo_root()
    out_dir = folder_path("out_dir (--out)", out_dir) if out_dir else root / "_build" / "executed"
    if profile != "auto" and profile not in PROFILE_NAMES:
        raise ParameterError("profile", "one of 'auto', " + ", ".join(repr(p) for p in PROFILE_NAMES), profile)
    if force_cpu:
        os.environ[ALLOW_CPU_ENV] = "1"  # inherited by the notebook kernels
    elif (
        profile == "gpu"
        and dry_run_limits() is None
        and not env_flag(ALLOW_CPU_ENV)
        and resolve_device(device).type != "cuda"
    ):
        raise GpuUnavailable(gpu_on_cpu_message(only or [n for n in notebooks_in_order(root) if n not in LAST]))
    names = notebooks_in_order(root)
    if only is not None and not only:
        raise ParameterError("only", "one or more notebook names (leave --only out to run every notebook)", only)
    if only:
        bad = [n for n in only if n not in names]
        if bad:
            raise ParameterError("only", "notebook names among " + ", ".join(names), bad[0])
        names = [n for n in names if n in only]
    plan = []
    for name in names:
        prof = "cpu" if (profile == "auto" and name in LAST) else choose_profile(name, profile)
        if profile == "smoke":
            prof = "smoke"
        check_parameters(name, prof, extra or {}, root)  # every notebook checked before the first one runs
        plan.append((name, prof))
    return [
        run_notebook(name, prof, out_dir, recompute=recompute, device=device, extra=extra, root=root)
        for name, prof in plan
    ]


def run_dry(
    profile: str = "gpu",
    only: list[str] | None = None,
    out_dir: Path | None = None,
    *,
    device: str = "auto",
    extra: dict | None = None,
    keep: bool = False,
) -> list[Path]:
    """Execute the notebooks with ``profile``'s settings under the dry-run caps (``maelab._util.dry_run_limits``).

    Everything goes to a fresh temp folder (results, checkpoints and, unless ``out_dir`` is given, the executed
    notebooks): never ``data/results``, the smoke cache or the checkpoint cache. The folder is removed after a
    successful run unless ``keep`` or ``out_dir`` (the executed notebooks stay there); after a failure it is kept and
    its path is printed. A setting that cannot run fails as :class:`NotebookFailed`, one line naming the notebook,
    the cell and the error. The environment is restored afterwards.
    """
    import tempfile

    check_environment()
    scratch = Path(tempfile.mkdtemp(prefix="maelab-dry-run-"))
    saved = {k: os.environ.get(k) for k in (DRY_RUN_ENV, DRY_RUN_DIR_ENV, "MAELAB_RESULTS_DIR")}
    os.environ.update({DRY_RUN_ENV: "1", DRY_RUN_DIR_ENV: str(scratch), "MAELAB_RESULTS_DIR": str(scratch / "results")})
    ok = False
    try:
        outs = _run(profile, only, Path(out_dir) if out_dir else scratch / "executed", False, device, extra)
        ok = True
        return outs
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if ok and not keep:
            shutil.rmtree(scratch, ignore_errors=True)
        elif not ok:
            print(f"[book] dry run failed; its temp folder is kept: {scratch}", file=sys.stderr, flush=True)


PLAN_NOTEBOOK = "plan"  # data/results/plan/: the stored plan tables book/rerun.md shows
PLAN_PROFILES = ("cpu", "gpu")  # the stored plans; a smoke plan is printed, never stored (smoke stays out of data/)
COST_CHECK = "cost_check"  # data/results/plan/cost_check.cpu: predicted vs measured cpu minutes (the re-run page)


def plan_table(profile: str, *, calibration=None, memory: bool = True):
    """One row per notebook with its planned runs summed: runs, TFLOP, predicted H100 minutes (machine-independent:
    :data:`maelab.cost.H100`; device work only), predicted minutes on the calibrated CPU and the part of them spent
    in logistic-regression probes (which run on the CPU in every profile: add them to the H100 minutes on a GPU
    machine with a CPU like the calibrated one), peak memory (GiB, the largest run); notebooks without a plan (no
    model training) are listed with "negligible"."""
    import pandas as pd

    from . import cost

    full = cost.plan(profile, calibration=calibration, memory=memory)
    cpu_col = next(c for c in full.columns if c.endswith(" min") and c.startswith("CPU (measured)"))
    rows = []
    for nb in [n for n in notebooks_in_order() if n not in LAST]:
        t = full[(full.notebook == nb) & (full.run != "total")] if len(full) else full
        if not len(t):
            rows.append(
                {
                    "notebook": nb,
                    "runs": 0,
                    "TFLOP": 0.0,
                    "H100 min": "negligible",
                    "CPU min": "negligible",
                    "of which CPU probes": "—",
                    "peak memory (GiB)": "—",
                }
            )
            continue
        rows.append(
            {
                "notebook": nb,
                "runs": int(t.repeats.sum()),
                "TFLOP": round(float(t["total TFLOP"].sum()), 1),
                "H100 min": round(float(t["H100 (bf16) min"].sum()), 1),
                "CPU min": round(float(t[cpu_col].sum()), 1),
                "of which CPU probes": round(float(t["CPU probes min"].sum()), 1),
                "peak memory (GiB)": round(float(t["peak memory (GiB)"].max()), 2) if memory else "—",
            }
        )
    return pd.DataFrame(rows), full


def plan_command(profile: str, *, memory: bool = True, write: bool = False) -> None:
    """Print the per-run and per-notebook plan of ``profile``; ``write``: store the per-notebook table (with the
    calibration it used) as ``data/results/plan/notebooks.<profile>`` for book/rerun.md (cpu and gpu only)."""
    import pandas as pd

    if write and profile not in PLAN_PROFILES:
        raise ParameterError(
            "--write", "used with --profile cpu or gpu (smoke results never go to data/results)", profile
        )

    from . import cost

    cal = cost.calibrate_cpu()
    per_nb, full = plan_table(profile, calibration=cal, memory=memory)
    with pd.option_context("display.width", 200, "display.max_columns", 30, "display.float_format", "{:.3g}".format):
        print(f"H100: {cost.H100_SOURCE}\nCPU: {cal.key}, calibrated {cal.date_utc}\n")
        print(full.to_string(index=False) + "\n")
        print(per_nb.to_string(index=False))
    over = [nb for nb, m in zip(per_nb.notebook, per_nb["H100 min"]) if isinstance(m, float) and m > 30]
    if profile == "gpu" and over:
        print(f"[plan] over the 30-min H100 budget: {', '.join(over)}", flush=True)
    if write:
        cpu = {"cpu": cal.key, "calibrated": cal.date_utc, "matmul GFLOP/s": round(cal.matmul_flops_per_s / 1e9, 1)}
        from .profiles import settings as nb_settings

        reads = {nb: nb_settings(nb, profile).key_dict() for nb in per_nb.notebook}  # a stale table is detectable
        store.save(
            "notebooks",
            {"profile": profile, "h100": cost.H100_SOURCE, "calibration": cpu, "notebook_settings": reads},
            {"table": per_nb, "calibration": pd.DataFrame([cpu])},
            notebook=PLAN_NOTEBOOK,
            profile=profile,
            root=store.repo_root() / "data" / "results",
        )


def stage_plan_tables(results: Path, folder: Path) -> None:
    """Write the stored plan tables as ``folder/<profile>.csv`` and ``<profile>-calibration.csv``, and the check of
    the cost model against the committed cpu results (``scripts/check_cost_model.py --write``) as
    ``cost-check-{summary,results,calibration}.csv`` (what book/rerun.md includes); a table that is not stored gets a
    one-row CSV saying how to make it."""
    import pandas as pd

    folder.mkdir(parents=True, exist_ok=True)
    for p in PLAN_PROFILES:
        rec = store.load(PLAN_NOTEBOOK, "notebooks", p, root=results)
        missing = pd.DataFrame([{"plan": f"not stored: run python -m maelab.book plan --profile {p} --write"}])
        (rec["table"] if rec else missing).to_csv(folder / f"{p}.csv", index=False)
        (rec["calibration"] if rec else missing).to_csv(folder / f"{p}-calibration.csv", index=False)
    rec = store.load(PLAN_NOTEBOOK, COST_CHECK, "cpu", root=results)
    missing = pd.DataFrame([{"check": "not stored: run python scripts/check_cost_model.py --write"}])
    for part in ("summary", "results", "calibration"):
        (rec[part] if rec else missing).to_csv(folder / f"cost-check-{part}.csv", index=False)


def stage(executed: Path, stage_dir: Path, root: Path | None = None) -> Path:
    """Assemble a Jupyter Book source tree: config, toc, prose pages and the executed notebooks."""
    root = root or store.repo_root()
    if stage_dir.exists():
        shutil.rmtree(stage_dir)
    stage_dir.mkdir(parents=True)
    for f in ("_config.yml", "_toc.yml"):
        shutil.copy2(root / f, stage_dir / f)
    shutil.copytree(root / "book", stage_dir / "book")
    stage_plan_tables(root / "data" / "results", stage_dir / "book" / "_plan")
    nbdir = stage_dir / "notebooks"
    nbdir.mkdir()
    missing, failed, stale = [], [], []
    for name in notebooks_in_order(root):
        p = Path(executed) / f"{name}.ipynb"
        if (Path(executed) / f"{name}.failed.ipynb").exists():
            failed.append(f"{name} (its last run failed: see {name}.failed.ipynb)")
        elif not p.exists():
            missing.append(name)
        else:
            err = _error_output(p)
            if err:
                failed.append(f"{name} ({err})")
            newer = _newer_inputs(name, p, root)
            if newer:
                stale.append((name, newer))
            _hide_injected_parameters(p, nbdir / p.name)
    if failed:
        raise NotebookFailed(
            "refusing to build a book with failed notebooks: "
            + "; ".join(failed)
            + " (fix them and run `python -m maelab.book run --only NAME`)"
        )
    if stale:
        names = " ".join(n for n, _ in stale)
        raise NotebookFailed(
            "refusing to build stale pages: "
            + "; ".join(f"{n} ({what} newer than its executed notebook)" for n, what in stale)
            + f" (re-run them: `python -m maelab.book run --only {names}`)"
        )
    if missing:
        raise NotebookFailed("not executed yet: " + ", ".join(missing) + " (run `python -m maelab.book run` first)")
    return stage_dir


def _notebook_inputs(name: str, executed: Path, root: Path) -> list[Path]:
    """What the executed notebook ``executed`` of ``name`` was computed from: its source ``notebooks/NAME.md``, its
    settings module (``maelab/papers/<paper>/settings.py``) and the results it read -- the files of the profile it
    ran with in its own folder of the results root it ran with (both recorded by :func:`run_notebook`; else the
    profile papermill injected and its default root), and for the notebooks that read every notebook's claims
    (``LAST``, the scoreboard) every claims record there."""
    import nbformat

    from .profiles import registry

    files = [root / "notebooks" / f"{name}.md"]
    klass = registry().get(name)
    module = sys.modules.get(klass.__module__) if klass is not None else None
    if module is not None and getattr(module, "__file__", None):
        files.append(Path(module.__file__))
    try:
        meta = nbformat.read(executed, as_version=4).metadata
    except Exception:  # noqa: BLE001 - an unreadable notebook is reported by _error_output
        return files
    recorded = (meta.get("maelab") or {}).get("results_root")
    profile = (meta.get("maelab") or {}).get("profile") or (meta.get("papermill") or {}).get("parameters", {}).get(
        "profile"
    )
    if recorded:
        results = Path(recorded)
    elif profile in PROFILE_NAMES:
        results = store.results_root(profile)
    else:
        return files
    own = results / name
    if own.is_dir():  # its records and side files of the profile it ran with (<result>.<profile>.*)
        files += [
            f
            for f in own.iterdir()
            if not f.name.startswith(".") and f.name.split(".")[1:2] == [profile] and f.is_file()
        ]
    if name in LAST and results.is_dir():
        files += [f for f in results.glob("*/claims.*.json") if f.is_file()]
    return files


def _newer_inputs(name: str, executed: Path, root: Path) -> str:
    """ "" when the executed notebook is at least as new as everything it was computed from
    (:func:`_notebook_inputs`, by modification time), else the newest of those files (and how many more are
    newer), for :func:`stage`'s one-line refusal."""
    t = executed.stat().st_mtime_ns
    newer = sorted(
        (f for f in _notebook_inputs(name, executed, root) if f.exists() and f.stat().st_mtime_ns > t),
        key=lambda f: f.stat().st_mtime_ns,
        reverse=True,
    )
    if not newer:
        return ""

    def show(f: Path) -> str:
        try:
            return str(f.resolve().relative_to(root.resolve()))
        except ValueError:
            return str(f)

    return show(newer[0]) + (f" and {len(newer) - 1} more" if len(newer) > 1 else "")


def _error_output(path: Path) -> str:
    """ "" when the executed notebook shows no error, else which cell shows one (cells tagged raises-exception
    may show an error on purpose)."""
    import nbformat

    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as e:  # noqa: BLE001 - any unreadable notebook is a failed one
        return f"unreadable executed notebook: {type(e).__name__}"
    for i, cell in enumerate(nb.cells):
        if "raises-exception" in cell.get("metadata", {}).get("tags", []):
            continue
        for o in cell.get("outputs", []):
            if o.get("output_type") == "error":
                return f"cell {i} shows {o.get('ename', 'an error')}"
    return ""


def _hide_injected_parameters(src: Path, dst: Path) -> None:
    """Copy an executed notebook, tagging papermill's ``injected-parameters`` cell ``remove-cell``.

    The injected cell repeats the parameters cell with the values of the run; the page shows those values in its
    settings table instead, so myst-nb drops the cell from the rendered page (it stays in the executed notebook).
    """
    import nbformat

    nb = nbformat.read(src, as_version=4)
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            cell.metadata["tags"] = [*tags, "remove-cell"]
    nbformat.write(nb, dst)


def build(executed: Path | None = None, out: Path | None = None, strict: bool = False) -> Path:
    """Build the HTML book from executed notebooks (execution off); returns the html folder."""
    root = store.repo_root()
    executed = folder_path("executed (--executed)", executed) if executed else root / "_build" / "executed"
    out = folder_path("out (--out)", out) if out else root
    src = stage(executed, out / "_build" / "src", root)
    jb = Path(sys.executable).parent / "jupyter-book"
    cmd = [
        str(jb) if jb.exists() else "jupyter-book",
        "build",
        str(src),
        "--path-output",
        str(out),
        "--builder",
        "html",
    ]
    if strict:
        cmd += ["-W", "-n", "--keep-going"]
    print("[book] " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd)
    if r.returncode != 0:
        raise NotebookFailed(f"jupyter-book build failed (exit {r.returncode})")
    html = out / "_build" / "html"
    print(f"[book] built {html / 'index.html'}", flush=True)
    return html


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m maelab.book", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="execute notebooks through papermill")
    r.add_argument("--profile", default="auto", help="auto (best committed, else cpu) | smoke | cpu | gpu")
    r.add_argument("--only", nargs="*", help="notebook names (leave out to run all; at least one if given)")
    r.add_argument("--recompute", action="store_true", help="ignore stored results")
    r.add_argument(
        "-p",
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a notebook parameter (repeatable; VALUE a Python literal), checked before running",
    )
    r.add_argument(
        "--no-compute",
        action="store_true",
        help="fail (StoreMiss) instead of computing a result that is not stored (claims records excepted)",
    )
    r.add_argument("--device", default="auto")
    r.add_argument("--out", type=Path, help="folder for executed notebooks (default _build/executed)")
    r.add_argument("--results-dir", type=Path, help="results root (default data/results; smoke: .cache)")
    r.add_argument(
        "--dry-run",
        action="store_true",
        help="the profile's models, data and code paths on this machine, 2 optimiser steps per training "
        "run and a few images per evaluation; results in a temp folder, claims not scored",
    )
    r.add_argument("--force-cpu", action="store_true", help="let --profile gpu compute on a machine without CUDA")
    q = sub.add_parser("plan", help="predicted cost per notebook (H100 and this CPU; maelab.cost)")
    q.add_argument("--profile", default="gpu", choices=PROFILE_NAMES)
    q.add_argument("--no-memory", action="store_true", help="skip the peak-memory column")
    q.add_argument(
        "--write",
        action="store_true",
        help="also store the machine-independent table in data/results/plan/ (what book/rerun.md shows)",
    )
    b = sub.add_parser("build", help="build the HTML book from executed notebooks")
    b.add_argument("--executed", type=Path)
    b.add_argument("--out", type=Path, help="output root (html goes to OUT/_build/html)")
    b.add_argument("--strict", action="store_true", help="-W -n --keep-going")
    sub.add_parser("list", help="list notebooks in build order")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "run":
            if a.results_dir:
                os.environ["MAELAB_RESULTS_DIR"] = str(a.results_dir.resolve())
            if a.no_compute:
                os.environ[store.NO_COMPUTE_ENV] = "1"  # inherited by the papermill kernels
            params = dict(parse_parameter(t) for t in a.param)
            if a.dry_run and (a.results_dir or a.no_compute or a.recompute):
                raise ParameterError(
                    "--dry-run",
                    "used without --results-dir, --no-compute and --recompute (a dry "
                    "run computes everything in a temp folder)",
                    "--dry-run",
                )
            if a.dry_run:
                run_dry(a.profile if a.profile != "auto" else "gpu", a.only, a.out, device=a.device, extra=params)
                print("[book] dry run passed", flush=True)
            else:
                run(a.profile, a.only, a.out, a.recompute, a.device, extra=params, force_cpu=a.force_cpu)
        elif a.cmd == "plan":
            plan_command(a.profile, memory=not a.no_memory, write=a.write)
        elif a.cmd == "build":
            build(a.executed, a.out, a.strict)
        else:
            print("\n".join(notebooks_in_order()))
    except (NotebookFailed, GpuUnavailable, ParameterError, store.StoreError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
