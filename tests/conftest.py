"""Fixtures shared by several test modules."""

import shutil
from pathlib import Path

import pytest

from maelab import book, cost, papers, paths

# the top of the test process: gather the paper registry once and hand it to the core (maelab.registry), as
# `python -m maelab.book` does; the notebook kernels the tests start get it from the runner's injected cell
papers.install()


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    """A fresh checkpoint/data cache: ``MAELAB_CACHE`` points at ``tmp_path`` for the test (returned).

    (Shadows pytest's built-in ``cache`` fixture for this folder; no test here uses that one.)"""
    monkeypatch.setenv("MAELAB_CACHE", str(tmp_path))
    return tmp_path


def load_repo_script(relpath: str):
    """A script of the repository (``benchmarks/...``, ``scripts/...``) imported as a module, for its tests."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / relpath
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _files(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file() and p.name[0] != "."}


@pytest.fixture(scope="session")
def committed_book(tmp_path_factory):
    """What ``make book`` executes, once per test session: every notebook with ``--profile auto`` from a copy of the
    committed ``data/results``, with ``--no-compute`` (a result that is not committed fails the run: ``StoreMiss``).

    Returns ``(executed folder, results copy, files before, files after)``: ``tests/test_committed_results.py``
    checks that nothing was recomputed or rewritten, ``tests/test_html.py`` builds and crawls the book from the
    executed notebooks (one execution for both).
    """
    tmp = tmp_path_factory.mktemp("committed-book")
    committed = paths.committed_results()
    results = tmp / "results"
    shutil.copytree(committed, results)
    before, mtimes = _files(results), {str(p): p.stat().st_mtime_ns for p in committed.rglob("*")}
    book.run(  # two pages at a time (runner._execute), as the smoke run and the dry runs
        book.RunOptions(profile="auto", results_root=str(results), no_compute="on"), out_dir=tmp / "executed", jobs=2
    )
    assert {str(p): p.stat().st_mtime_ns for p in committed.rglob("*")} == mtimes, "the run wrote into data/results"
    return tmp / "executed", results, before, _files(results)


@pytest.fixture(scope="session")
def committed_site(committed_book) -> Path:
    """The book as ``make book`` and the Pages workflow publish it, built strictly (Sphinx ``-W -n``: a warning or
    a broken reference fails) from the ``committed_book`` execution; each executed notebook records the results
    copy it ran with, which the build's staleness check reads. ``tests/test_html.py`` crawls it and
    ``tests/test_book.py`` checks its maths and glued prose (one build for both)."""
    executed = committed_book[0]
    html = book.build(executed=executed, out=executed.parent / "site", strict=True)
    assert (html / "index.html").exists()
    return html


def synthetic_calibration():
    """A synthetic CPU calibration (nothing measured): train and eval steps at 1 GFLOP/s, for the plan tests."""
    pts = tuple(
        {
            "name": kind,
            "kind": kind,
            "batch_size": 8,
            "flops": 1e9,
            "seconds": 1.0,
            "median_seconds": 1.0,
            "cpu_seconds": 1.0,
            "flops_per_s": 1e9,
            "median_flops_per_s": 1e9,
        }
        for kind in ("train", "eval")
    )
    return cost.CpuCalibration(
        key="test cpu",
        points=pts,
        matmul_flops_per_s=2e9,
        matmul_median_flops_per_s=2e9,
        threads=1,
        loadavg=(0.0, 0.0),
        date_utc="x",
    )


def stand_in_dogcat(folder: Path, monkeypatch, n_train: int = 40, n_test: int = 20) -> tuple[dict, str]:
    """A stand-in for cifar_dogcat (random images, ``n_train`` / ``n_test``) fetched into ``folder`` (made here,
    set as ``MAELAB_DATA_DIR``), its ``SPECS`` entry patched to its counts and hash, so that no real dataset is
    needed. Returns (its arrays, their SHA-256)."""
    import dataclasses

    import numpy as np

    from maelab.data import packaged

    rng = np.random.default_rng(0)
    arrays = {
        "train_images": rng.integers(0, 256, (n_train, 3, 32, 32), dtype=np.uint8),
        "train_labels": rng.integers(0, 2, n_train).astype(np.int64),
        "test_images": rng.integers(0, 256, (n_test, 3, 32, 32), dtype=np.uint8),
        "test_labels": rng.integers(0, 2, n_test).astype(np.int64),
    }
    sha = packaged.arrays_sha256(arrays)
    spec = dataclasses.replace(packaged.SPECS["cifar_dogcat"], counts=(n_train, n_test), sha256=sha)
    monkeypatch.setitem(packaged.SPECS, "cifar_dogcat", spec)
    monkeypatch.setenv("MAELAB_DATA_DIR", str(folder))
    folder.mkdir(parents=True)
    np.savez_compressed(folder / "cifar_dogcat.npz", **arrays, sha256=np.array(sha), source=np.array("t"))
    return arrays, sha
