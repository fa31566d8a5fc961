"""Speed and agreement of the exact linear probes: scikit-learn (``method="logreg"``, the default) against the
torch Newton / L-BFGS solver (``method="logreg_torch"``, :mod:`maelab.logreg`), same C grid and validation rule.

Features: a random-init micro ViT (``create("mae", "micro", img_size=28, in_chans=1, seed=0)``; [CLS] and mean
pool, 64-d) on Fashion-MNIST, ``--n-train`` seeded training images (default 10,000) and the 10,000 test images;
``--features pixels`` adds the raw 784 pixels (slow for scikit-learn). Each probe runs
:func:`maelab.evaluate.linear_probe` end to end (C chosen on the stratified 20 % validation split from
``DEFAULT_CS``, refit on the whole training set); the wall time, chosen C, validation and test accuracies, and
scikit-learn's convergence warnings (iteration cap reached) are recorded. Needs
``python -m maelab.data fetch fashion_mnist`` once.

Results are printed and written (atomically) to ``benchmarks/results/probe_speed-cpu-<utc>.json`` with provenance.

Usage::

    python benchmarks/probe_speed.py --threads 1                 # micro-ViT [CLS] and mean features
    python benchmarks/probe_speed.py --threads 1 --features cls mean pixels
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

import torch

import maelab
from maelab import data, evaluate, models
from maelab._util import atomic_path, device_name

ROOT = Path(__file__).resolve().parent


def _git_commit():
    try:
        return (
            subprocess.run(
                ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10
            ).stdout.strip()
            or None
        )
    except (OSError, subprocess.SubprocessError):
        return None


def features(kind: str, tr, te):
    if kind == "pixels":
        return tr.images.flatten(1), te.images.flatten(1)
    model = models.create("mae", "micro", img_size=28, in_chans=1, seed=0)
    return (evaluate.extract_features(model, d.images, pool=kind, progress=False) for d in (tr, te))


def run_probe(method: str, xtr, ytr, xte, yte) -> dict:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        res = evaluate.linear_probe(xtr, ytr, xte, yte, method=method)
        wall = time.perf_counter() - t0
    capped = sum("ConvergenceWarning" in type(w.message).__name__ or "iteration" in str(w.message) for w in caught)
    return {
        "method": method,
        "seconds": round(wall, 2),
        "C": res.C,
        "val_acc": res.val_acc,
        "train_acc": res.train_acc,
        "test_acc": res.test_acc,
        "convergence_warnings": capped,
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--features", nargs="+", default=["cls", "mean"], choices=["cls", "mean", "pixels"])
    p.add_argument("--n-train", type=int, default=10000)
    p.add_argument("--threads", type=int, default=None, help="torch and BLAS threads (default: library choice)")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.threads)
    tr = data.load("fashion_mnist", "train", n=args.n_train, seed=0, progress=False)
    te = data.load("fashion_mnist", "test", progress=False)
    result = {
        "benchmark": "probe_speed",
        "provenance": {
            "date_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "device": device_name("cpu"),
            "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "torch": torch.__version__,
            "maelab": maelab.__version__,
            "python": platform.python_version(),
            "git_commit": _git_commit(),
            "argv": sys.argv[1:],
            "load_average": os.getloadavg(),
            "dataset_sha256": tr.meta["sha256"],
        },
        "setup": f"Fashion-MNIST {len(tr)} train (seed 0) / {len(te)} test; C grid {list(evaluate.DEFAULT_CS)}",
        "results": [],
    }
    for kind in args.features:
        xtr, xte = features(kind, tr, te)
        for method in ("logreg_torch", "logreg"):
            row = {"features": kind, "dim": int(xtr.shape[1]), **run_probe(method, xtr, tr.labels, xte, te.labels)}
            result["results"].append(row)
            print(
                f"{kind:6s} d={row['dim']:4d} {method:13s} {row['seconds']:8.1f} s  C={row['C']:g}  "
                f"test {100 * row['test_acc']:.2f} %  val {[round(100 * v, 2) for v in row['val_acc'].values()]}"
                f"  warnings {row['convergence_warnings']}",
                flush=True,
            )
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = Path(args.out) if args.out else ROOT / "results" / f"probe_speed-cpu-{stamp}.json"
    with atomic_path(out) as tmp:
        tmp.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
