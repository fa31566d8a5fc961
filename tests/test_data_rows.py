"""Rows files (:mod:`maelab.data.rows`): the part of a fetched dataset a lent machine is carried. A stand-in for
``cifar_dogcat`` (40 / 20 random images, its SPECS entry patched to their hash), so no real dataset is needed; the
expected values are the whole file's loads, read through the loader's existing path."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import stand_in_dogcat

from maelab import data
from maelab._validate import ParameterError
from maelab.data import packaged, rows


@pytest.fixture()
def whole(tmp_path, monkeypatch):
    """The stand-in fetched into ``tmp_path/fetched`` (the data dir); returns its checked arrays."""
    stand_in_dogcat(tmp_path / "fetched", monkeypatch)
    return packaged.read_arrays("cifar_dogcat")


READS = [
    {"name": "cifar_dogcat", "split": "train", "n": 12, "seed": 0},
    {"name": "cifar_dogcat", "split": "train", "n": 5, "seed": 3},
    {"name": "cifar_dogcat", "split": "test", "n": 6, "seed": 0},
    {"name": "mnist", "split": "test", "n": None, "seed": 0},  # another dataset's read: no rows of this one
]


def _rows_dir(tmp_path, whole, reads=READS):
    folder = tmp_path / "carried"
    folder.mkdir(exist_ok=True)
    arrays = rows.make_rows("cifar_dogcat", whole, rows.needed_rows("cifar_dogcat", reads))
    (folder / f"cifar_dogcat{rows.SUFFIX}").write_bytes(rows.to_bytes(arrays))
    return folder, arrays


def _same_load(a, b) -> bool:
    ma, mb = dict(a.meta), dict(b.meta)
    assert ma.pop("options").pop("data_dir") != mb.pop("options").pop("data_dir")  # the two files are elsewhere
    return torch.equal(a.images, b.images) and torch.equal(a.labels, b.labels) and ma == mb


def test_rows_file_serves_what_the_whole_file_serves(tmp_path, whole):
    folder, _ = _rows_dir(tmp_path, whole)
    # the reads themselves, smaller n of the same seed (nested), and other image options
    for split, n, seed, opts in [
        ("train", 12, 0, {}),
        ("train", 3, 0, {}),
        ("train", 5, 3, {"size": 28, "channels": 1}),
        ("test", 6, 0, {}),
        ("test", 1, 0, {"size": 36}),
    ]:
        got = data.load("cifar_dogcat", split, n=n, seed=seed, data_dir=str(folder), **opts)
        want = data.load("cifar_dogcat", split, n=n, seed=seed, **opts)
        assert _same_load(got, want), (split, n, seed, opts)
        assert got.meta["sha256"] == packaged.SPECS["cifar_dogcat"].sha256  # the whole dataset's hash, as provenance


def test_needed_rows_is_the_union_of_the_rows_each_read_takes(whole):
    index = rows.needed_rows("cifar_dogcat", READS)
    want_train = set(data.load("cifar_dogcat", "train", n=12, seed=0).meta["indices"])
    want_train |= set(data.load("cifar_dogcat", "train", n=5, seed=3).meta["indices"])
    assert set(index["train"].tolist()) == want_train and list(index["train"]) == sorted(want_train)
    assert index["test"].tolist() == data.load("cifar_dogcat", "test", n=6, seed=0).meta["indices"]
    assert rows.needed_rows("cifar_dogcat", [{"name": "cifar_dogcat", "split": "test", "n": None, "seed": 0}])[
        "test"
    ].tolist() == list(range(20))
    assert all(len(v) == 0 for v in rows.needed_rows("cifar_dogcat", READS[3:]).values())


@pytest.mark.parametrize(
    "split,n,seed",
    [("train", 30, 0), ("train", 5, 1), ("test", None, 0), ("test", 7, 0)],
    ids=["larger-n", "other-seed", "whole-split", "test-larger-n"],
)
def test_a_load_outside_the_carried_rows_is_refused_in_one_line(tmp_path, whole, split, n, seed):
    folder, arrays = _rows_dir(tmp_path, whole)
    with pytest.raises(rows.RowsNotCarried) as e:
        data.load("cifar_dogcat", split, n=n, seed=seed, data_dir=str(folder))
    msg = str(e.value)
    assert "\n" not in msg and f"n={n}, seed={seed}" in msg and f"{len(arrays[f'{split}_index'])} of the" in msg


def test_the_whole_file_is_read_where_it_is_there(tmp_path, whole):
    folder = tmp_path / "fetched"  # the data dir of the fixture, now with a rows file beside the whole one
    (folder / f"cifar_dogcat{rows.SUFFIX}").write_bytes(b"not an npz")
    got = data.load("cifar_dogcat", "train", n=13, seed=1)  # not carried by any rows file: the whole file answers
    assert got.meta["n"] == 13


def _rewrite(folder, arrays, **changes):
    arrays = {**arrays, **changes}
    (folder / f"cifar_dogcat{rows.SUFFIX}").write_bytes(rows.to_bytes(arrays))


def test_a_damaged_or_foreign_rows_file_is_refused(tmp_path, whole):
    folder, arrays = _rows_dir(tmp_path, whole)
    load = lambda: data.load("cifar_dogcat", "train", n=3, seed=0, data_dir=str(folder))  # noqa: E731
    x = arrays["train_images"].copy()
    x[0, 0, 0, 0] ^= 0xFF
    _rewrite(folder, arrays, train_images=x)  # a pixel changed, the hash written with it kept
    with pytest.raises(ParameterError, match="the file is damaged"):
        load()
    foreign = dict(arrays, sha256=np.array("0" * 64))
    _rewrite(folder, foreign, rows_sha256=np.array(rows.rows_sha256(foreign)))  # consistent, of another dataset
    with pytest.raises(ParameterError, match="rows of the published cifar_dogcat"):
        load()
    shuffled = dict(arrays, train_index=arrays["train_index"][::-1].copy())
    _rewrite(folder, shuffled, rows_sha256=np.array(rows.rows_sha256(shuffled)))
    with pytest.raises(ParameterError, match="strictly increasing row numbers"):
        load()
    _rewrite(folder, {k: v for k, v in arrays.items() if k != "test_labels"})
    with pytest.raises(ParameterError, match="no test_labels"):
        load()
    (folder / f"cifar_dogcat{rows.SUFFIX}").write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(ParameterError, match="an npz of maelab.data.rows"):
        load()


def test_neither_file_names_the_fetch_command(tmp_path, whole):
    with pytest.raises(data.DatasetNotFetched, match="python -m maelab.data fetch cifar_dogcat"):
        data.load("cifar_dogcat", "train", n=3, data_dir=str(tmp_path / "empty"))


def test_on_read_reports_every_load_as_asked(whole, monkeypatch):
    seen = []
    monkeypatch.setattr(packaged, "_READS", [seen.append])
    data.load("cifar_dogcat", "train", n=4, seed=2)
    data.load("cifar_dogcat", "test")
    assert seen == [
        {"name": "cifar_dogcat", "split": "train", "n": 4, "seed": 2},
        {"name": "cifar_dogcat", "split": "test", "n": None, "seed": 0},
    ]
    assert (
        rows.needed_rows("cifar_dogcat", seen)["train"].tolist()
        == data.load("cifar_dogcat", "train", n=4, seed=2).meta["indices"]
    )
