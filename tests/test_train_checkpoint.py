"""Tests for maelab.train.checkpoint: unusable checkpoint files give one clear line (never torch's advice to load
with ``weights_only=False``, never code execution), and a process killed while writing a checkpoint leaves the
previous one intact under the final name."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest
import torch
from test_train import REPO, TESTS, assert_same_weights, cfg, strip, tiny, toy

from maelab import ParameterError
from maelab.train import CheckpointError, load_checkpoint, train


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("CI", "1")  # progress bars off (maelab._util.progress_enabled)


def _good_checkpoint_bytes(tmp_path) -> bytes:
    ck = tmp_path / "good"
    train(tiny(), toy(), cfg(epochs=1), checkpoint_dir=ck, device="cpu")
    return (ck / "last.pt").read_bytes()


def _assert_one_line_advice(err: Exception, path) -> None:
    msg = str(err)
    assert "\n" not in msg
    assert str(path) in msg  # names the file
    assert "delete it" in msg and "resume=False" in msg  # says what to do
    assert "weights_only=False" not in msg and "weights_only` set to `False" not in msg


@pytest.mark.parametrize("kind", ["truncated", "empty", "garbage_text", "garbage_bytes"])
def test_unreadable_checkpoint_gives_one_line_error(tmp_path, kind):
    good = _good_checkpoint_bytes(tmp_path)
    content = {
        "truncated": good[: len(good) // 2],
        "empty": b"",
        "garbage_text": b"this is not a checkpoint\n" * 20,
        "garbage_bytes": bytes((i * 7919 + 13) % 256 for i in range(4096)),
    }[kind]
    ck = tmp_path / "ck"
    ck.mkdir()
    path = ck / "last.pt"
    path.write_bytes(content)
    with pytest.raises(CheckpointError) as e:
        train(tiny(), toy(), cfg(epochs=1), checkpoint_dir=ck, device="cpu")
    _assert_one_line_advice(e.value, path)
    assert isinstance(e.value, ParameterError) and e.value.name == "checkpoint"
    assert ("is empty" in str(e.value)) == (kind == "empty")
    with pytest.raises(CheckpointError):
        load_checkpoint(path)
    # the advice works: resume=False trains from the start and replaces the file with a readable checkpoint
    res = train(tiny(), toy(), cfg(epochs=1), checkpoint_dir=ck, resume=False, device="cpu")
    assert res.resumed_from is None and load_checkpoint(path)["epoch"] == 1


class _Payload:
    """Unpickling this would create a folder (the stand-in for arbitrary code) -- safe loading must refuse it."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def test_checkpoint_with_code_is_refused_in_one_line_and_never_run(tmp_path):
    ck = tmp_path / "ck"
    ck.mkdir()
    marker = tmp_path / "code_ran"
    torch.save({"format": "maelab.train/1", "payload": _Payload(marker)}, ck / "last.pt")
    with pytest.raises(CheckpointError, match="python object") as e:
        train(tiny(), toy(), cfg(epochs=1), checkpoint_dir=ck, device="cpu")
    _assert_one_line_advice(e.value, ck / "last.pt")
    assert not marker.exists()


@pytest.mark.parametrize(
    "obj,what",
    [
        ({"format": "other/2"}, "not a maelab.train/1 checkpoint"),
        ([1, 2, 3], "not a maelab.train/1 checkpoint"),
        ({"format": "maelab.train/1", "epoch": 1}, "incomplete"),
    ],
)
def test_foreign_or_incomplete_checkpoint(tmp_path, obj, what):
    path = tmp_path / "last.pt"
    torch.save(obj, path)
    with pytest.raises(CheckpointError, match=what) as e:
        load_checkpoint(path)
    _assert_one_line_advice(e.value, path)


def test_checkpoint_of_another_model_is_refused(tmp_path):
    ck = tmp_path / "ck"
    train(tiny(), toy(), cfg(epochs=1), checkpoint_dir=ck, device="cpu")
    with pytest.raises(ParameterError, match=r"model\.embed_dim=8") as e:  # the stored model's description
        train(tiny(embed_dim=16), toy(), cfg(epochs=1), checkpoint_dir=ck, device="cpu")
    assert e.value.name == "model" and "\n" not in str(e.value) and "resume=False" in str(e.value)


KILL_WHILE_WRITING = textwrap.dedent("""
    import os, signal, sys, torch
    sys.path.insert(0, {tests!r})
    import test_train as T
    from maelab.train import train
    real_save, calls = torch.save, [0]

    def save_then_die(obj, f, *a, **k):   # the 3rd checkpoint: write half of it, then SIGKILL this process
        calls[0] += 1
        if calls[0] < 3:
            return real_save(obj, f, *a, **k)
        import io
        buf = io.BytesIO()
        real_save(obj, buf, *a, **k)
        out = open(f, "wb") if isinstance(f, (str, os.PathLike)) else f
        out.write(buf.getvalue()[: len(buf.getvalue()) // 2])
        out.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    torch.save = save_then_die
    train(T.tiny(), T.toy(), T.cfg(epochs=2, checkpoint_every_iters=3), checkpoint_dir={ck!r}, device="cpu")
""")


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_kill_while_writing_leaves_the_previous_checkpoint(tmp_path):
    c = cfg(epochs=2, checkpoint_every_iters=3)
    full = train(tiny(), toy(), c, device="cpu")
    ck = tmp_path / "ck"
    env = dict(os.environ, OMP_NUM_THREADS=str(torch.get_num_threads()), CI="1")
    proc = subprocess.run(
        [sys.executable, "-c", KILL_WHILE_WRITING.format(tests=str(TESTS), ck=str(ck))], env=env, cwd=REPO, timeout=120
    )
    assert proc.returncode == -signal.SIGKILL
    # checkpoints at step 3 (epoch 1, iteration 3) and step 4 (end of epoch 1); the kill hit the one at step 6
    st = load_checkpoint(ck / "last.pt")
    assert (st["epoch"], st["iteration"]) == (1, 0)
    res = train(tiny(seed=5), toy(), c, checkpoint_dir=ck, device="cpu")
    assert res.resumed_from == (1, 0)
    assert_same_weights(res.model, full.model)
    assert strip(res.history) == strip(full.history)
