"""The plan: every notebook's planned training runs priced by the cost model (:mod:`maelab.cost`), before running.

``python -m maelab.book plan --profile P`` is the one plan command (``python -m maelab.cost`` only calibrates): it
prints the per-run table and the per-notebook sums, ``--write`` stores the per-notebook table for the re-run page
(``data/results/plan/notebooks.<profile>``), ``--runs FILE`` prices the runs of a JSON file instead. The notebooks'
plans come from the installed paper registry (:func:`maelab.cost.notebook_plans`). ``gpu_on_cpu_message`` is what
the runner and a page's context say when the gpu profile is asked to compute on a machine without CUDA.
"""

from __future__ import annotations

from pathlib import Path

from .. import paths, store
from .._validate import ParameterError
from ..profiles import COMMITTED_PROFILES, PROFILE_NAMES, PROFILES
from ..result_keys import settings_key
from .toc import LAST, notebooks_in_order


def predicted_minutes(profile: str, notebooks: list[str] | None = None, calibration=None) -> dict[str, tuple]:
    """``{notebook: (H100 minutes, CPU minutes)}`` of the notebooks' planned runs (:mod:`maelab.cost`; the CPU from
    this machine's calibration, measured once and cached); notebooks without a plan are left out."""
    from .. import cost

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
        "(run options allow_cpu=True) to compute it here anyway"
    )


PLAN_NOTEBOOK = "plan"  # data/results/plan/: the stored plan tables book/rerun.md shows
#: the stored plans, cheapest first; a smoke plan is printed, never stored (smoke stays out of data/)
PLAN_PROFILES = tuple(p for p in PROFILE_NAMES if p in COMMITTED_PROFILES)
COST_CHECK = "cost_check"  # data/results/plan/cost_check.cpu: predicted vs measured cpu minutes (the re-run page)


def plan_table(profile: str, *, calibration=None, memory: bool = True):
    """One row per notebook with its planned runs summed: runs, TFLOP, predicted H100 minutes (machine-independent:
    :data:`~maelab.cost.devices.H100`; device work only), predicted minutes on the calibrated CPU and the part of them
    spent in logistic-regression probes that run on the CPU in every profile (add them to the H100 minutes on a GPU
    machine with a CPU like the calibrated one; those fitted on the device, ``EvalJob.on_device``, are in both
    device columns instead), peak memory (GiB, the largest run); notebooks without a plan (no model training) are
    listed with "negligible"."""
    import pandas as pd

    from .. import cost

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


def plan_command(profile: str, *, memory: bool = True, write: bool = False, runs_file: str | None = None) -> None:
    """Print the per-run and per-notebook plan of ``profile``; ``write``: store the per-notebook table (with the
    calibration it used) as ``data/results/plan/notebooks.<profile>`` for book/rerun.md (cpu and gpu only);
    ``runs_file``: price the runs listed in this JSON file (:func:`maelab.cost.read_runs`) instead of the notebooks'
    plans (printed only)."""
    import pandas as pd

    if write and profile not in PLAN_PROFILES:
        raise ParameterError(
            "--write", "used with --profile cpu or gpu (smoke results never go to data/results)", profile
        )
    if write and runs_file is not None:
        raise ParameterError("--write", "used without --runs (only the notebooks' plans are stored)", runs_file)

    from .. import cost

    runs = cost.read_runs(runs_file) if runs_file is not None else None  # a bad file fails before calibrating
    cal = cost.calibrate_cpu()
    fmt = ("display.width", 200, "display.max_columns", 30, "display.float_format", "{:.3g}".format)
    if runs is not None:
        with pd.option_context(*fmt):
            print(f"H100: {cost.H100_SOURCE}\nCPU: {cal.key}, calibrated {cal.date_utc}\n")
            table = cost.plan(profile, plans={str(runs_file): runs}, calibration=cal, memory=memory)
            print(table.to_string(index=False))
        return
    per_nb, full = plan_table(profile, calibration=cal, memory=memory)
    gpu = cost.gpu_device()
    with pd.option_context(*fmt):
        print(f"H100: {gpu.source}\nCPU: {cal.key}, calibrated {cal.date_utc}\n")
        print(full.to_string(index=False) + "\n")
        print(per_nb.to_string(index=False))
    limit = next(p.budget_min for p in PROFILES if p.name == "gpu")
    over = [nb for nb, m in zip(per_nb.notebook, per_nb["H100 min"]) if isinstance(m, float) and m > limit]
    if profile == "gpu" and over:
        print(f"[plan] over the {limit:g}-min H100 budget: {', '.join(over)}", flush=True)
    if write:
        cpu = {"cpu": cal.key, "calibrated": cal.date_utc, "matmul GFLOP/s": round(cal.matmul_flops_per_s / 1e9, 1)}
        from ..profiles import settings as nb_settings

        reads = {nb: settings_key(nb_settings(nb, profile)) for nb in per_nb.notebook}  # a stale table is detectable
        store.save(
            "notebooks",
            {"profile": profile, "h100": gpu.source, "calibration": cpu, "notebook_settings": reads},
            {"table": per_nb, "calibration": pd.DataFrame([cpu])},
            notebook=PLAN_NOTEBOOK,
            profile=profile,
            root=paths.committed_results(),
        )


def stage_plan_tables(results: Path, folder: Path) -> None:
    """Write the stored plan tables as ``folder/<profile>.csv`` and ``<profile>-calibration.csv``, and the check of
    the cost model against the committed cpu results (``scripts/check_cost_model.py --write``) as
    ``cost-check-{summary,results,calibration}.csv`` and the installments' progress, ``gpu-progress.csv`` (what
    book/rerun.md includes); a table that is not stored gets a one-row CSV saying how to make it."""
    import pandas as pd

    folder.mkdir(parents=True, exist_ok=True)
    for p in PLAN_PROFILES:
        rec = store.load(PLAN_NOTEBOOK, "notebooks", p, root=results)
        missing = pd.DataFrame([{"plan": f"not stored: run python -m maelab.book plan --profile {p} --write"}])
        (rec["table"] if rec else missing).to_csv(folder / f"{p}.csv", index=False)
        (rec["calibration"] if rec else missing).to_csv(folder / f"{p}-calibration.csv", index=False)
    _stage_gpu_calibration(results, folder)
    _stage_gpu_progress(results, folder)
    rec = store.load(PLAN_NOTEBOOK, COST_CHECK, "cpu", root=results)
    missing = pd.DataFrame([{"check": "not stored: run python scripts/check_cost_model.py --write"}])
    for part in ("summary", "results", "calibration"):
        (rec[part] if rec else missing).to_csv(folder / f"cost-check-{part}.csv", index=False)


def _stage_gpu_calibration(results: Path, folder: Path) -> None:
    """``gpu-measured.csv`` (the stored GPU calibration's timed workloads, with the device, torch and CUDA that timed
    them) and ``gpu-pool.csv`` (the speed-up of runs trained side by side that the plans use,
    :func:`maelab.cost.devices.pool_points`), or a one-row CSV saying how to make them."""
    import pandas as pd

    from ..cost.devices import GPU_CALIBRATION, pool_points

    notebook, name, profile = GPU_CALIBRATION
    rec = store.load(notebook, name, profile, root=results)
    if rec is None or rec.data.get("device_type") != "cuda":
        missing = pd.DataFrame([{"gpu": "not measured: python -m maelab.device run --calibrate on a lent GPU"}])
        missing.to_csv(folder / "gpu-measured.csv", index=False)
        missing.to_csv(folder / "gpu-pool.csv", index=False)
        return
    pts = rec["points"]
    when = str(rec.provenance.get("timestamp", ""))[:10]
    measured = pd.DataFrame(
        {
            "workload": pts["label"],
            "model": pts["size"] + " " + pts["channels"].astype(str) + "x" + pts["img_size"].astype(str) + "px",
            "batch": pts["batch_size"],
            "ms per step": (1000 * pts["seconds_per_step"]).round(1),
            "images/s": pts["images_per_s"].round(0).astype(int),
            "kernels per step": pts["ops_per_step"],
            "µs per kernel": (1e6 * pts["seconds_per_step"] / pts["ops_per_step"]).round(1),
            "bf16 peak (%)": (100 * pts["fraction_of_h100_bf16_peak"]).round(2),
            "measured on": f"{rec['device_name']}, torch {rec['torch']}, CUDA {rec['cuda']}, {when}",
        }
    )
    measured.to_csv(folder / "gpu-measured.csv", index=False)
    points, where = pool_points(rec)
    pool = pd.DataFrame(
        [{"processes": n, "speed-up (wall clock)": round(v, 2), "source": where} for n, v in points]
        or [{"processes": "—", "speed-up (wall clock)": "not measured", "source": ""}]
    )
    pool.to_csv(folder / "gpu-pool.csv", index=False)


def _stage_gpu_progress(results: Path, folder: Path) -> None:
    """``gpu-progress.csv``: per notebook, what the installments have stored of the gpu profile and what is left
    (:func:`maelab.device.progress.progress`, priced by the stored gpu plan), or a one-row CSV saying how to make
    the plan."""
    import pandas as pd

    from ..device.progress import planned_from_table, progress

    rec = store.load(PLAN_NOTEBOOK, "notebooks", "gpu", root=results)
    if rec is None:
        pd.DataFrame([{"plan": "not stored: run python -m maelab.book plan --profile gpu --write"}]).to_csv(
            folder / "gpu-progress.csv", index=False
        )
        return
    t = progress("gpu", root=results, planned=planned_from_table(rec["table"]))
    t["complete"] = t["complete"].map({True: "yes", False: "no"})
    t = t.rename(columns={"predicted min": "predicted H100 min", "min spent": "device min spent"})
    t.to_csv(folder / "gpu-progress.csv", index=False)
