"""Where maelab's folders are: the source checkout (:func:`repo_root`), the cache (:func:`cache_root`,
:func:`cache_dir`), the fetched datasets (:func:`data_dir`), the committed results (:func:`committed_results`) and
the smoke profile's results (:func:`smoke_results`). The one place these are spelled; every module asks here.

The cache and the data dir are the only two folders (and ``MAELAB_CACHE``, ``MAELAB_DATA_DIR`` the only two
environment variables) maelab reads from the environment; every run option travels as an argument instead
(:class:`maelab.options.RunOptions`). Imports only the standard library.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "MAELAB_CACHE"
DATA_DIR_ENV = "MAELAB_DATA_DIR"


def repo_root() -> Path:
    """The source checkout holding this package (the first folder above it with ``pyproject.toml`` beside
    ``src/maelab``: an editable install); the current directory when there is none (an installed wheel), so a user
    running from a copy of the repository finds its ``data/`` and ``.cache/``."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").exists() and (parent / "src" / "maelab").exists():
            return parent
    return Path.cwd()


def cache_root(repo: str | os.PathLike | None = None) -> Path:
    """maelab's cache folder (checkpoints, fetched datasets, the cost model's calibration, device packs, smoke
    results): ``$MAELAB_CACHE`` if set, else ``<repo>/.cache`` (``repo``: given, else :func:`repo_root`).

    One of the two environment variables maelab reads (the other is ``MAELAB_DATA_DIR``, :func:`data_dir`). Why a
    variable here: the cache is a folder a user may want on another disk, and every process maelab starts (notebook
    kernels, torchrun workers, the device runner's programs, the tests' subprocesses) must find the same one without
    each being told.
    """
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    return Path(repo if repo is not None else repo_root()) / ".cache"


def cache_dir(name: str, repo: str | os.PathLike | None = None) -> Path:
    """The cache's sub-folder ``name`` (``"checkpoints"``, ``"cost"``, ``"device"``): ``cache_root(repo) / name``."""
    return cache_root(repo) / name


def data_dir(override: str | os.PathLike | None = None) -> Path:
    """Folder of the fetched datasets: ``override``, ``$MAELAB_DATA_DIR``, ``$MAELAB_CACHE/datasets`` or
    ``<repo>/.cache/datasets``, first that is set.

    ``MAELAB_DATA_DIR`` is one of the two environment variables maelab reads (the other, ``MAELAB_CACHE``:
    :func:`cache_root`). Why a variable here: the datasets are read deep inside every loader, by every process
    maelab starts (notebook kernels, the lent GPU machine's notebook programs, which the device runner points at
    the datasets it carried), and a user may keep them on another disk than the cache.
    """
    if override is not None:
        return Path(override).expanduser()
    if os.environ.get(DATA_DIR_ENV):
        return Path(os.environ[DATA_DIR_ENV]).expanduser()
    return cache_dir("datasets")


def committed_results(repo: str | os.PathLike | None = None) -> Path:
    """The committed results folder ``<repo>/data/results`` (``repo``: given, else :func:`repo_root`): the store's
    default root for the cpu and gpu profiles, and the folder a dry run or a smoke run never writes into."""
    return Path(repo if repo is not None else repo_root()) / "data" / "results"


def smoke_results() -> Path:
    """The smoke profile's results folder ``<repo>/.cache/results-smoke`` (gitignored, under the checkout even when
    ``MAELAB_CACHE`` points elsewhere, as ``make clean`` expects): smoke runs never write into ``data/results``."""
    return repo_root() / ".cache" / "results-smoke"
