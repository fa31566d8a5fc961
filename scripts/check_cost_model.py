"""Check the cost model against the committed cpu results: predicted vs measured CPU minutes (issue 13, item 2).

For every training-heavy stored result (zhang_umae compare_* / investigate_*, zhang_ablations, bisulco_sweeps grids,
zhang_regime's curves, bisulco_jacobians MAEs) the planned runs are recovered from the stored config (each result's
``provenance.config`` holds its specs or settings), their cost is predicted with :mod:`maelab.cost` on this machine's
CPU calibration (:func:`maelab.cost.calibrate_cpu`, cached in ``.cache/cost``), and compared with two measurements:

* **training**: the sum over runs of the trainer's own per-epoch step-loop seconds (``train_seconds`` of each run,
  stored in the result; restored from the checkpoint when a run was resumed, so it is always the time the training
  really took) against the predicted steps x seconds per step. This isolates the FLOPs -> time model.
* **wall**: ``provenance.wall_time_s`` (the whole computation of the result: data, training, evaluation, probes,
  analysis) against the predicted training + fine-tuning + evaluation. Only meaningful when the result was computed
  from scratch; when the measured training alone exceeds the wall time, runs came from the checkpoint cache and the
  comparison is reported as "resumed".

The measured times come from a 2-core machine shared with other jobs. There a 2-thread torch step is slowed far more
than 2x when another job holds a core (each parallel op waits for the descheduled thread: a step of the zhang_regime
model took 1.1-1.8 s instead of ~55 ms, see ``benchmarks/cost_configs.py``), so identical runs differ by up to 13x.
Each comparison is therefore also made against a **load-robust** measured time
(:func:`maelab.cost.check.robust_seconds`, which with the comparison tables lives in :mod:`maelab.cost.check`), which
estimates the machine's undisturbed speed from identical work only, never from the model:

* runs whose per-epoch seconds are stored (zhang_umae, zhang_regime): the median epoch x epochs. Every epoch is the
  same number of identical steps, so a slowed epoch is an outlier; the median ignores any minority of them, and is
  not biased low by the +-5 % epoch-to-epoch noise of an undisturbed run as the fastest epoch is (on undisturbed
  runs the fastest epoch x epochs is 5-10 % below the measured total, the median 0-2 %);
* other runs with seeds of identical work (zhang_ablations, bisulco_sweeps' seed cells): the fastest of them (2-3
  runs, of which two may be disturbed; a run averages hundreds of steps, so the undisturbed ones agree within 2-7 %
  and the fastest is barely biased low; the calibration uses the same rule, its fastest repetition);
* a single run without per-epoch times (bisulco_sweeps' other cells, bisulco_jacobians): the raw time; load that
  lasted a whole run, or a whole result (zhang_regime's three results: every epoch slow), is not removed.

The wall comparison has a robust variant too: the wall time minus the training's excess over its robust estimate
(the evaluation and probes keep their measured time). A run is flagged ``disturbed`` when it took more than twice
the median of the runs of identical work in its notebook. The summary's "within x1.5" names the comparisons whose
ratio is within 1/1.5..1.5.

The predictions are only as undisturbed as the calibration: it is the fastest of several repetitions, which still
errs slow when another job held a core for the whole calibration (its load average and float32 GEMM rate are in the
calibration table: two idle cores of this machine give ~180 GFLOP/s, one ~90-100).

Usage: ``PYTHONPATH=src python scripts/check_cost_model.py [--results data/results] [--csv out.csv] [--write]``.
Prints one row per result and one summary row per notebook (ratio = predicted / measured; the issue asks for
1/1.5..1.5); ``--write`` stores them as ``data/results/plan/cost_check.cpu`` for the re-run page.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import re
import sys
from pathlib import Path

import pandas as pd

from maelab import cost, papers, paths, profiles, result_keys, store
from maelab.cost.check import compare, summary, within
from maelab.experiments import PretrainSpec


def _spec(d: dict) -> PretrainSpec:
    d = dict(d)
    d["data_options"] = tuple(sorted((d.get("data_options") or {}).items()))
    # a stored config lists the official-code choices in canonical form (absent: legacy): rebuild what was run
    d["model_overrides"] = tuple(sorted(result_keys.overrides_from_config(d.get("model_overrides")).items()))
    d["snapshot_epochs"] = tuple(d.get("snapshot_epochs") or ())
    return PretrainSpec(**d)


def _choices(config: dict) -> tuple:
    """The official-code choices of a config that lists them at its top level (canonical form: absent = legacy)."""
    listed = {k: config[k] for k in result_keys.LEGACY_CHOICES if k in config}
    return tuple(sorted(result_keys.overrides_from_config(listed).items()))


def _load(results: Path, nb: str, name: str) -> tuple[dict, dict[str, pd.DataFrame]]:
    r = store.load(nb, name, "cpu", root=results)
    if r is None:
        raise SystemExit(f"no committed cpu record {nb}/{name} under {results}")
    frames = {k: v for k, v in r.data.items() if isinstance(v, pd.DataFrame)}
    return {"provenance": r.provenance, "data": r.data}, frames


def _run(spec: PretrainSpec, label: str, **kw) -> cost.PlannedRun:
    # the notebooks' data stay on the device; 10 classes for every labelled dataset used here
    return cost.PlannedRun.from_spec(spec, label=label, **kw)


def _compare_runs(rec: dict, fr: dict[str, pd.DataFrame], rank_epochs: list[int], ft_epochs: int):
    """The runs of one :func:`maelab.papers.zhang2022.umae.compare` record: variants x seeds via ``evaluate_run``
    (both pools: features of train + test twice, ranks of the test set per rank epoch twice), plus 'random' rows
    (the untrained first variant, features only)."""
    c = rec["provenance"]["config"]
    base, st = _spec(c["spec"]), c.get("settings") or c
    cs = st.get("probe_cs")
    kind = st.get("probe_method", "logreg")
    fits = 0 if not cs else (1 if len(cs) == 1 else len(cs) + 1)
    first = ast.literal_eval(next(iter(c["variants"].values())))
    runs, measured, epochs = [], [], []
    curves = fr["curves"]
    for _, row in fr["runs"].iterrows():
        if row["variant"] == "random":
            evals = 2 * (base.n_train + base.n_test)
            runs.append(
                cost.PlannedRun(
                    f"random s{row['seed']}",
                    model=first.get("model", base.model),
                    size=base.size,
                    overrides=tuple(first.get("model_overrides", base.model_overrides)),
                    img_size=base.img_size,
                    channels=base.channels,
                    eval_images=evals,
                    jobs=(
                        cost.EvalJob(kind, base.n_train, base.n_test, count=2, fits=fits),
                        cost.EvalJob("knn", base.n_train, base.n_test, count=2),
                    ),
                )
            )
            measured.append(None)
            epochs.append(None)
            continue
        fields = ast.literal_eval(c["variants"][row["variant"]])
        spec = dataclasses.replace(base, **fields, seed=int(row["seed"]))
        extra = (base.n_train + base.n_test) + 2 * len(rank_epochs) * base.n_test  # 2nd pool; ranks (both pools)
        runs.append(
            _run(
                spec,
                f"{row['variant']} s{row['seed']}",
                extra_eval_images=extra,
                finetune_epochs=ft_epochs,
                pools=2,
                probe_fits=fits,
                probe_kind=kind,
            )
        )
        measured.append(float(row["train_seconds"]))
        mine = curves[(curves["variant"] == row["variant"]) & (curves["seed"] == row["seed"])]
        epochs.append([float(x) for x in mine["seconds"]])
    return runs, measured, rec["provenance"]["wall_time_s"], epochs


def zhang_umae(results: Path, name: str):
    """compare_<ds> / investigate_<ds>: the umae.compare runs, with ranks at the rank epochs and fine-tuning in
    the comparison (not in the investigation)."""
    rec, fr = _load(results, "zhang_umae", name)
    c = rec["provenance"]["config"]
    base, st = _spec(c["spec"]), c.get("settings") or c
    rank_eps = sorted({e for e in st["rank_epochs"] if e <= base.epochs} | {0, base.epochs})
    return _compare_runs(rec, fr, rank_eps, st["finetune_epochs"] if name.startswith("compare") else 0)


def zhang_ablations(results: Path, name: str):
    """lambda_sweep / simmim / no_mask: umae.compare runs without ranks or fine-tuning
    (:func:`maelab.papers.zhang2022.ablations.groups`)."""
    rec, fr = _load(results, "zhang_ablations", name)
    return _compare_runs(rec, fr, [], 0)


def bisulco_sweeps(results: Path, name: str):
    rec, fr = _load(results, "bisulco_sweeps", name)
    c = rec["provenance"]["config"]
    st = c.get("settings") or c
    seeds, e = list(st["seeds"]), st["epochs"]
    snaps = tuple(sorted({x for x in st["snapshot_epochs"] if x <= e} | {e}))
    runs = []
    for enc, dec, patch, mask, seed in c["cells"]:
        key = dec == st["key_decoder_depth"] and patch == st["patch_size"] and mask == st["mask_ratio"]
        spec = PretrainSpec(
            dataset=st["dataset"],
            n_train=st["n_train"],
            n_test=st["n_test"],
            img_size=st["img_size"],
            channels=1,
            model="mae",
            size=st["size"],
            model_overrides=(("decoder_depth", dec), ("depth", enc), ("patch_size", patch), *_choices(c)),
            epochs=e,
            batch_size=st["batch_size"],
            blr=st["blr"],
            warmup_epochs=1.0,
            mask_ratio=mask,
            seed=seed,
            snapshot_epochs=snaps if key else (),
            finetune_epochs=st["finetune_epochs"] if key and seed == seeds[0] else 0,
        )
        runs.append(_run(spec, f"enc{enc} dec{dec} p{patch} m{mask} s{seed}"))
    return runs, [float(t) for t in fr["runs"]["train_seconds"]], rec["provenance"]["wall_time_s"], None


def bisulco_jacobians(results: Path, name: str):
    rec, _ = _load(results, "bisulco_jacobians", name)
    c = rec["provenance"]["config"]
    st = c.get("settings") or c
    spec = PretrainSpec(
        dataset="natural",
        n_train=st["n_train"],
        n_test=st["n_images"],
        img_size=st["img_size"],
        channels=1,
        model="mae",
        size=st["model_size"],
        model_overrides=(("norm_pix_loss", False), ("patch_size", c["p"]), *_choices(c)),
        epochs=st["epochs"],
        batch_size=st["batch_size"],
        blr=st["blr"],
        warmup_epochs=st["warmup_epochs"],
        mask_ratio=c["m"],
        seed=int(rec["provenance"]["seeds"][0]),
    )
    # unlabelled (no online probe, no probes); the Jacobians are autograd work the model does not count
    run = dataclasses.replace(_run(spec, name, online_eval=False), eval_images=0)
    return [run], [float(rec["data"]["train_seconds"])], rec["provenance"]["wall_time_s"], None


def zhang_regime(results: Path, name: str):
    """curves_s<seed>: MAE and U-MAE pre-trained (online probe on the test set) and their snapshots evaluated
    (:func:`maelab.papers.zhang2022.regime.seed_curves`): per snapshot and pooling the features of the probe subset
    and of the test set, a torch logistic-regression probe and a 20-NN; the raw-pixel probe once (in the MAE run)."""
    rec, fr = _load(results, "zhang_regime", name)
    c = rec["provenance"]["config"]
    base = _spec(c["spec"])
    n_probe = c["probe_n_train"] or base.n_train
    runs, measured, epochs = [], [], []
    timing = fr["timing"].set_index("variant")
    history = fr["history"]
    for i, (variant, fields) in enumerate(c["variants"].items()):
        spec = dataclasses.replace(base, **dict(ast.literal_eval(fields)))
        snaps = len(c["curve_epochs"]) - (i > 0)  # the first variant also evaluates epoch 0 (random init)
        jobs = (
            cost.EvalJob("logreg_torch", n_probe, base.n_test, count=2 * snaps),
            cost.EvalJob("knn", n_probe, base.n_test, count=2 * snaps),
        )
        if i == 0:
            raw = base.img_size**2 * base.channels
            jobs += (
                cost.EvalJob("logreg_torch", n_probe, base.n_test, dim=raw),
                cost.EvalJob("knn", n_probe, base.n_test, dim=raw),
            )
        runs.append(
            _run(
                spec,
                f"{variant} s{c['seed']}",
                pipeline_eval=False,
                finetune_epochs=0,
                extra_eval_images=2 * snaps * (n_probe + base.n_test),
                jobs=jobs,
            )
        )
        measured.append(float(timing.loc[variant, "train_seconds"]))
        epochs.append([float(x) for x in history.loc[history["variant"] == variant, "seconds"]])
    return runs, measured, rec["provenance"]["wall_time_s"], epochs


# this script is a top: it hands the paper registry to the core (maelab.registry) before reading any settings
papers.install()
_UMAE = profiles.settings("zhang_umae", "cpu")  # the results its cpu run stores

RESULTS = {
    "zhang_umae": (
        zhang_umae,
        [f"compare_{ds}" for ds in _UMAE.datasets] + [f"investigate_{_UMAE.investigate_dataset}"],
    ),
    "zhang_ablations": (zhang_ablations, ["lambda_sweep", "simmim", "no_mask"]),
    "bisulco_sweeps": (bisulco_sweeps, ["depth_grid", "patch_mask_grid"]),
    "zhang_regime": (zhang_regime, ["curves_s0", "curves_s1", "curves_s2"]),
    "bisulco_jacobians": (
        bisulco_jacobians,
        [
            f"mae_m{m}_p{p}_s0"
            for m, p in (
                ("000", 8),
                ("010", 8),
                ("030", 8),
                ("050", 8),
                ("070", 8),
                ("080", 4),
                ("080", 8),
                ("080", 16),
                ("090", 8),
            )
        ],
    ),
}


def stored_threads(results: Path, nb: str, name: str) -> int | None:
    """Torch threads of the process that computed a stored result, read from its provenance device
    ("cpu (..., 2 cores, 1 threads)"); None when it does not say."""
    r = store.load(nb, name, "cpu", root=results)
    m = re.search(r"(\d+) threads\)", str(r.provenance.get("device", ""))) if r is not None else None
    return int(m.group(1)) if m else None


def check(results: Path, device: cost.Device, threads: int | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-result table, per-run table) of every result of :data:`RESULTS` (:func:`maelab.cost.check.compare`:
    measured against predicted, load-robust times, disturbed runs). ``threads``: the calibration's torch threads; a
    result computed with another number (read from its provenance) says so in its note."""
    recovered = (
        (nb, name, *fn(results, name), stored_threads(results, nb, name))
        for nb, (fn, names) in RESULTS.items()
        for name in names
    )
    return compare(recovered, device, threads)


def write(df: pd.DataFrame, pr: pd.DataFrame, cal: cost.CpuCalibration, results: Path) -> None:
    """Store the comparison as ``data/results/plan/cost_check.cpu`` (what book/rerun.md shows), keyed by the
    calibration and by the config hashes of the records compared."""
    compared = {
        f"{nb}/{name}": store.load(nb, name, "cpu", root=results).provenance["config_hash"]
        for nb, (_, names) in RESULTS.items()
        for name in names
    }
    calib = {
        "cpu": cal.key,
        "training calibrated": cal.date_utc,
        "probes calibrated": cal.probes_date_utc,
        "matmul GFLOP/s": round(cal.matmul_flops_per_s / 1e9, 1),
        "load average (before -> after)": f"{cal.loadavg[0]:.2f} -> {cal.loadavg[1]:.2f}",
    }
    store.save(
        "cost_check",
        {"profile": "cpu", "calibration": calib, "compared": compared},
        {"summary": summary(df, pr), "results": df.round(3), "calibration": pd.DataFrame([calib])},
        notebook="plan",
        profile="cpu",
        root=results,
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--results", default=str(paths.committed_results()))
    p.add_argument("--csv", default=None, help="also write the per-result table here")
    p.add_argument("--write", action="store_true", help="store the tables in <results>/plan/ (book/rerun.md)")
    args = p.parse_args(argv)
    cal = cost.calibrate_cpu()
    print(f"calibration: {cal.key}, {cal.date_utc}, load average {cal.loadavg[0]:.2f} -> {cal.loadavg[1]:.2f}")
    with pd.option_context("display.width", 220, "display.max_columns", 20, "display.float_format", "{:.3g}".format):
        print(cal.frame().to_string(index=False))
        df, pr = check(Path(args.results), cost.cpu_device(cal), threads=cal.threads)
        print(df.to_string(index=False))
        print(
            "runs off by more than x1.5 (raw or robust), and disturbed runs:",
            pr[pr["disturbed"] | ~pr["ratio"].map(within) | ~pr["ratio (robust)"].map(within)]
            .drop(columns=["notebook", "config"])
            .to_string(index=False),
            sep="\n",
        )
        print(summary(df, pr).to_string(index=False))
    if args.write:
        write(df, pr, cal, Path(args.results))
    if args.csv:
        df.to_csv(args.csv, index=False)
        pr.to_csv(Path(args.csv).with_suffix(".runs.csv"), index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
