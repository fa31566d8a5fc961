"""Progress of the installments, for the re-run page: per notebook, what is stored of a profile and what is left.

:func:`progress` reads the plan (:func:`maelab.cost.notebook_plans`, the cost model's runs per notebook) and the
stored records, and predicts the minutes left on the GPU model of the plans (:func:`maelab.cost.gpu_device`: the
measured calibration when one is stored, else the assumed H100).
"""

from __future__ import annotations

from pathlib import Path

from .. import parts, paths
from ..book.runner import complete
from ..profiles import COMMITTED_PROFILES


def _records(root: Path, notebook: str, profile: str) -> tuple[list, int]:
    """(stored results of ``profile`` in the notebook's folder that verify, claims left out; how many do not)."""
    from .. import store

    good, bad = [], 0
    folder = root / notebook
    for p in sorted(folder.glob(f"*.{profile}.json")) if folder.is_dir() else ():
        name = p.name[: -len(f".{profile}.json")]
        if name.startswith(".") or name in store.NO_COMPUTE_EXEMPT:
            continue
        try:
            good.append(store.load(notebook, name, profile, root=root))
        except store.RecordError:
            bad += 1
    return good, bad


def _cited_elsewhere(root: Path, notebook: str, profile: str) -> list:
    """The stored results of other folders that the notebook's ``profile`` claims record cites (e.g. the shared
    zoo's entries, ``zoo/...``, which the cost model plans under the pages that read them); those that verify."""
    from .. import store

    try:
        claims = store.load(notebook, "claims", profile, root=root)
    except store.RecordError:
        return []
    names = set()
    for rec in (claims["claims"] if claims is not None else {}).values():
        for src in rec.get("sources", []):
            nb, _, name = str(src.get("name", "")).rpartition("/")
            if nb and nb != notebook:
                names.add((nb, name))
    out = []
    for nb, name in sorted(names):
        try:
            got = store.load(nb, name, profile, root=root)
        except store.RecordError:
            continue
        if got is not None:
            out.append(got)
    return out


def device_minutes(records) -> float:
    """Minutes a device spent on ``records``: the length of the union of their compute intervals (each record's
    ``[timestamp - wall_time_s, timestamp]``: the store stamps a record when it saves it), so that runs computed side by
    side (an installment's pool, :mod:`maelab.prefetch`) count once, not once per worker. A record without a
    readable timestamp counts its wall time on its own."""
    from datetime import datetime

    spans, alone = [], 0.0
    for r in records:
        wall = float(r.provenance.get("wall_time_s") or 0.0)
        try:
            end = datetime.fromisoformat(str(r.provenance["timestamp"])).timestamp()
        except (KeyError, ValueError):
            alone += wall
            continue
        spans.append((end - wall, end))
    total, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        total += max(end - max(start, reach), 0.0)
        reach = max(reach, end)
    return (total + alone) / 60


def progress(
    profile: str = "gpu",
    *,
    notebooks: list[str] | None = None,
    root: str | Path | None = None,
    plans: dict | None = None,
    device=None,
    planned: dict[str, tuple[int, float]] | None = None,
):
    """One row per planned notebook (``plans``: default :func:`maelab.cost.notebook_plans`): planned runs (with
    their repeats), predicted minutes on ``device`` (default: :func:`maelab.cost.gpu_device` for ``gpu``, the
    calibrated CPU for ``cpu``; ``planned``, ``{notebook: (runs, minutes)}``, gives both instead, e.g. from the
    stored plan table, :func:`planned_from_table`, without pricing the runs again), results stored (verified
    records of ``profile``, claims left out) and parts stored (:mod:`maelab.parts`: the finished runs of records an
    installment did not finish), the minutes they took on a device of the profile's kind (a gpu record computed on
    a CPU does not count; runs side by side count once, :func:`device_minutes`), whether the result set is complete
    (:func:`complete`), the minutes left (0 when complete, else the prediction less the minutes spent, at least 0:
    an estimate, as good as the plan), and the devices and torch versions that computed the records. ``root``: the
    results root (default the committed ``data/results``). A page's stored results are those of its folder and
    those of other folders its claims record cites (the shared zoo's entries of a zoo-reading page)."""
    import pandas as pd

    from .. import cost
    from .._validate import one_of

    one_of("profile", profile, COMMITTED_PROFILES)
    root = Path(root) if root is not None else paths.committed_results()
    if planned is None:
        plans = cost.notebook_plans(profile) if plans is None else plans
        if device is None:
            device = cost.gpu_device(root) if profile == "gpu" else cost.cpu_device()
        planned = {
            nb: (sum(r.repeats for r in runs), sum(cost.predict(r, device)["seconds"] for r in runs) / 60)
            for nb, runs in plans.items()
        }
    rows = []
    for nb, (n_runs, predicted) in planned.items():
        if notebooks is not None and nb not in notebooks:
            continue
        recs, bad = _records(root, nb, profile)
        recs += _cited_elsewhere(root, nb, profile)  # e.g. the zoo entries a zoo-reading page planned and cites
        # parts (maelab.parts) are progress, not results: their minutes count until their record is stored (whose
        # wall time then holds them)
        whole = {r.name for r in recs if not parts.is_part(r.name)}
        counted = [r for r in recs if not parts.is_part(r.name) or r.name.split(parts.SEPARATOR)[0] not in whole]
        on_kind = [r for r in counted if str(r.provenance.get("device", "")).startswith("cpu") == (profile == "cpu")]
        spent = device_minutes(on_kind)
        n_parts = sum(parts.is_part(r.name) for r in recs)
        recs = [r for r in recs if not parts.is_part(r.name)]
        done = complete(nb, profile, root)
        rows.append(
            {
                "notebook": nb,
                "planned runs": int(n_runs),
                "predicted min": round(predicted, 1),
                "results stored": len(recs),
                "parts stored": n_parts,
                "results that do not verify": bad,
                "min spent": round(spent, 1),
                "complete": done,
                "predicted min left": 0.0 if done else round(max(predicted - spent, 0.0), 1),
                "computed on": "; ".join(sorted({str(r.provenance.get("device")) for r in recs})) or "—",
                "torch": ", ".join(sorted({str(r.provenance.get("versions", {}).get("torch")) for r in recs})) or "—",
            }
        )
    return pd.DataFrame(rows)


def planned_from_table(table) -> dict[str, tuple[int, float]]:
    """``{notebook: (runs, predicted minutes)}`` from a stored plan table (``data/results/plan/notebooks.<profile>``,
    :func:`maelab.book.plan.plan_table`: its ``runs`` and ``H100 min`` columns, "negligible" read as 0), for
    :func:`progress`'s ``planned``: the book's re-run page reads the plan the tests keep current
    (``tests/test_cost_plans.py``) instead of pricing every run again (about a minute on a cold cost cache)."""
    out = {}
    for nb, runs, minutes in zip(table["notebook"], table["runs"], table["H100 min"], strict=True):
        out[str(nb)] = (int(runs), 0.0 if str(minutes) == "negligible" else float(minutes))
    return out
