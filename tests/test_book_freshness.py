"""Incremental `make book` (issue 23): a notebook is re-executed only when its source, the library, the results or
its parameters changed -- judged by content, never by modification times."""

from __future__ import annotations

import os
import time
from pathlib import Path

import nbformat
import pytest

from maelab.book import freshness, runner
from maelab.options import RunOptions


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    root, results = tmp_path / "repo", tmp_path / "results"
    (root / "notebooks").mkdir(parents=True)
    (root / "src" / "maelab").mkdir(parents=True)
    (root / "notebooks" / "demo.md").write_text("# demo\n")
    (root / "src" / "maelab" / "lib.py").write_text("X = 1\n")
    (root / "requirements.lock").write_text("torch==1\n")
    (results / "demo").mkdir(parents=True)
    (results / "demo" / "r.cpu.json").write_text("{}\n")
    return root, results


def test_the_key_follows_contents_not_times(tmp_path):
    root, results = _tree(tmp_path)
    params = {"profile": "cpu", "recompute": False, "device": "auto"}
    key = freshness.inputs_key("demo", params, results, root)
    assert len(key) == 64 and key == freshness.inputs_key("demo", dict(params), results, root)
    t = time.time() + 100
    for f in (root / "notebooks" / "demo.md", results / "demo" / "r.cpu.json", root / "src" / "maelab" / "lib.py"):
        os.utime(f, (t, t))  # a checkout or a touch: same contents
    assert freshness.inputs_key("demo", params, results, root) == key
    (root / "src" / "maelab" / "__pycache__").mkdir()
    (root / "src" / "maelab" / "__pycache__" / "lib.pyc").write_bytes(b"\0")  # bytecode is not an input
    assert freshness.inputs_key("demo", params, results, root) == key

    def changed(path: Path, text: str) -> str:
        old = path.read_text()
        path.write_text(text)
        try:
            return freshness.inputs_key("demo", params, results, root)
        finally:
            path.write_text(old)

    keys = {
        "source": changed(root / "notebooks" / "demo.md", "# demo, edited\n"),
        "library": changed(root / "src" / "maelab" / "lib.py", "X = 2\n"),
        "lock": changed(root / "requirements.lock", "torch==2\n"),
        "result": changed(results / "demo" / "r.cpu.json", '{"a": 1}\n'),
        "another page's result": freshness.inputs_key("demo", params, results, root),
        "parameters": freshness.inputs_key("demo", {**params, "device": "cpu"}, results, root),
    }
    (results / "zoo").mkdir()
    (results / "zoo" / "e.cpu.json").write_text("{}\n")  # a shared result: every page may read it
    keys["another page's result"] = freshness.inputs_key("demo", params, results, root)
    assert key not in keys.values() and len(set(keys.values())) == len(keys)
    (results / "zoo" / "e.cpu.json").unlink()
    (results / "zoo").rmdir()
    assert freshness.inputs_key("demo", params, results, root) == key


def test_recorded_key_of_a_plain_or_unreadable_notebook_is_none(tmp_path):
    p = tmp_path / "n.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), p)
    assert freshness.recorded_key(p) == (None, {})
    p.write_text("not json")
    assert freshness.recorded_key(p) == (None, {})


def test_a_second_run_with_nothing_changed_does_not_execute(tmp_path, capsys, monkeypatch):
    root = tmp_path / "repo"
    (root / "notebooks").mkdir(parents=True)
    src = root / "notebooks" / "tiny.md"
    src.write_text(
        "---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n---\n\n"
        "# tiny\n\n```{code-cell} ipython3\nprint(40 + 2)\n```\n"
    )
    results = tmp_path / "results"
    results.mkdir()
    monkeypatch.setattr(runner.store, "results_root", lambda profile, options=None: results)
    out_dir = tmp_path / "executed"
    out = runner.run_notebook("tiny", "smoke", out_dir, root=root)
    first = out.stat().st_mtime_ns
    meta = nbformat.read(out, as_version=4).metadata["maelab"]
    assert meta["params"] == {runner.RUN_OPTIONS: RunOptions(profile="smoke").to_param()}
    assert meta[freshness.KEY] == freshness.inputs_key("tiny", meta["params"], results, root)
    capsys.readouterr()
    t = time.time() + 100
    os.utime(src, (t, t))  # newer, same contents: still fresh, for the runner and for the builder
    assert runner.run_notebook("tiny", "smoke", out_dir, root=root) == out
    assert "tiny: unchanged since its last execution" in capsys.readouterr().out
    assert out.stat().st_mtime_ns == first
    from maelab.book import builder

    assert builder._same_key("tiny", out, root)
    src.write_text(src.read_text().replace("40 + 2", "40 + 3"))  # a changed source: executed again
    runner.run_notebook("tiny", "smoke", out_dir, root=root)
    assert "executed with profile=smoke" in capsys.readouterr().out
    assert "43" in "".join(
        o.get("text", "") for c in nbformat.read(out, as_version=4).cells for o in c.get("outputs", [])
    )
    assert builder._same_key("tiny", out, root)  # the new run recorded its own key: fresh again
    again = RunOptions(profile="smoke", recompute=True)
    runner.run_notebook("tiny", again, out_dir, root=root)  # --recompute always executes
    assert "executed with profile=smoke" in capsys.readouterr().out


@pytest.mark.parametrize("bad", ["", "x" * 64])
def test_a_foreign_key_is_not_fresh(tmp_path, bad):
    root, results = _tree(tmp_path)
    p = tmp_path / "demo.ipynb"
    nb = nbformat.v4.new_notebook(metadata={"maelab": {freshness.KEY: bad, "params": {}, "results_root": str(results)}})
    nbformat.write(nb, p)
    from maelab.book import builder

    assert not builder._same_key("demo", p, root)
