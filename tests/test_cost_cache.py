"""maelab.cost.cache: counts per model shape, made once per process and kept in .cache/cost/ (tiny models)."""

from __future__ import annotations

import json

import pytest
import torch

from maelab import cost
from maelab.cost import cache as cc
from maelab.cost import counting, memory

SHAPE = cost.ModelShape("mae", "micro", (("depth", 1), ("decoder_depth", 1)), img_size=16, channels=1)


@pytest.fixture()
def fresh(cache, monkeypatch):  # conftest's cache fixture: MAELAB_CACHE -> tmp_path
    """An empty counts cache in ``tmp_path``, nothing counted in this process; yields a record of the counts made."""
    made: list[str] = []
    for name in ("step_flops", "finetune_step_flops", "eval_flops"):
        real = getattr(counting, name)
        monkeypatch.setattr(
            counting, name, lambda *a, _real=real, _name=name, **k: made.append(_name) or _real(*a, **k)
        )
    real_mem = memory.peak_memory_bytes
    monkeypatch.setattr(memory, "peak_memory_bytes", lambda *a, **k: made.append("memory") or real_mem(*a, **k))
    cc.clear_memory()
    yield made
    cc.clear_memory()


def _all_counts():
    return (
        cc.pretrain_step(SHAPE, 8, 0.75),
        cc.finetune_step(SHAPE, 8, 10),
        cc.eval_batch(SHAPE, 8),
        cc.train_memory(SHAPE, "pretrain", 8, mask_ratio=0.75, amp="off"),
        cc.train_memory(SHAPE, "finetune", 8, amp="bf16", num_classes=10),
        cc.model_facts(SHAPE),
    )


def test_cached_counts_are_the_counts(fresh):
    m = SHAPE.build()
    pre, ft, ev, mem_pre, mem_ft, facts = _all_counts()
    assert pre == cost.step_flops(m, 8, mask_ratio=0.75)
    assert ft == cost.finetune_step_flops(m, 8, num_classes=10)
    assert ev == cost.eval_flops(m, 8, batch_size=8)
    direct = cost.peak_memory_bytes(m, 8, mask_ratio=0.75, amp="off", measure_cuda=False, data_images=5)
    assert mem_pre.total + 5 * 16 * 16 * 4 == direct.total and mem_pre.activations == direct.activations
    direct_ft = cost.peak_memory_bytes(m, 8, amp="bf16", kind="finetune", measure_cuda=False)
    assert mem_ft == direct_ft
    assert facts == (sum(p.numel() for p in m.parameters()), m.embed_dim)


def test_each_count_is_made_once_per_process_then_read_from_disk(fresh, monkeypatch):
    first = _all_counts()
    assert sorted(fresh) == ["eval_flops", "finetune_step_flops", "memory", "memory", "step_flops"]
    assert _all_counts() == first and len(fresh) == 5  # this process: nothing counted again
    stored = json.loads(cc.cache_path().read_text())
    assert stored["format"] == cc._FORMAT and len(stored["entries"]) == 6
    cc.clear_memory()  # a new process: the disk holds every count
    fresh.clear()
    assert _all_counts() == first and fresh == []
    # another batch or mask ratio is another count
    assert cc.pretrain_step(SHAPE, 8, 0.5) != first[0] and fresh == ["step_flops"]


def test_another_fingerprint_or_a_damaged_file_is_counted_again(fresh, monkeypatch):
    first = cc.pretrain_step(SHAPE, 4, None)
    path = cc.cache_path()
    cc.clear_memory()
    monkeypatch.setattr(cc, "fingerprint", lambda: "0123456789ab")  # e.g. a model's source changed
    assert cc.pretrain_step(SHAPE, 4, None) == first and fresh == ["step_flops", "step_flops"]
    assert cc.cache_path() != path and cc.cache_path().exists()
    cc.clear_memory()
    cc.cache_path().write_text("{not json")
    assert cc.pretrain_step(SHAPE, 4, None) == first and len(fresh) == 3
    d = json.loads(cc.cache_path().read_text())  # rewritten whole
    d["entries"] = {k: ["1", "2", "3", "4"] for k in d["entries"]}  # wrong form: strings, not counts
    cc.cache_path().write_text(json.dumps(d))
    cc.clear_memory()
    assert cc.pretrain_step(SHAPE, 4, None) == first and len(fresh) == 4


def test_an_unwritable_cache_only_costs_time(fresh, monkeypatch, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("MAELAB_CACHE", str(blocker))  # the cache folder would be inside a file
    monkeypatch.setattr(cc, "_WARNED", [])
    assert cc.eval_batch(SHAPE, 4) == cost.eval_flops(SHAPE.build(), 4, batch_size=4)
    assert cc.eval_batch(SHAPE, 2)[0] > 0
    err = capsys.readouterr().err
    assert err.count("[cost] counts not cached on disk") == 1


def test_runs_of_one_shape_are_counted_once_in_a_plan(fresh):
    a = cost.PlannedRun("a", model="mae", size="micro", overrides=SHAPE.overrides, img_size=16, channels=1,
                        batch_size=8, steps=10, mask_ratio=0.75, eval_images=100)  # fmt: skip
    b = cost.PlannedRun("b", model="mae", size="micro", overrides=tuple(reversed(SHAPE.overrides)), img_size=16,
                        channels=1, batch_size=8, steps=30, mask_ratio=0.75, eval_images=7, repeats=3)  # fmt: skip
    pa, pb = cost.predict(a, cost.H100), cost.predict(b, cost.H100)
    assert sorted(fresh) == ["eval_flops", "step_flops"]  # one shape, one batch: counted once for both runs
    assert pb["train_flops"] == 3 * 30 * pa["step_flops"] and pa["step_flops"] > 0


def test_model_shape_orders_overrides_and_checks_them():
    assert cost.ModelShape(overrides=(("b", 1), ("a", 2))) == cost.ModelShape(overrides=(("a", 2), ("b", 1)))
    assert cost.ModelShape(overrides=(("b", 1), ("a", 2))).key()[2] == [["a", 2], ["b", 1]]
    with pytest.raises(ValueError, match="overrides"):
        cost.ModelShape(overrides={"a": 1})
    with pytest.raises(ValueError, match="shape"):
        cc.pretrain_step("micro", 8, None)


def test_counting_copies_the_module_not_the_weights_and_leaves_the_model_alone():
    """The counts run on a copy of the module tree with meta (or, for memory, shared) tensors: the same counts as
    on a full copy of the model moved to the meta device, and the caller's model is untouched."""
    import copy

    m = SHAPE.build().eval()
    before = {k: v.clone() for k, v in m.state_dict().items()}
    full = copy.deepcopy(m).to("meta").train()  # the way before: every weight copied, then moved
    out: dict = {}
    f, ops = cost.count_flops(lambda: out.update(loss=full(torch.zeros(8, 1, 16, 16, device="meta"))["loss"]))
    b, b_ops = cost.count_flops(lambda: out["loss"].backward())
    c = cost.step_flops(m, 8)
    assert (c.forward, c.backward) == (f, b) and c.ops > ops + b_ops  # + the AdamW update's ops
    cost.peak_memory_bytes(m, 8, amp="off", measure_cuda=False)
    cost.peak_memory_bytes(m, 8, kind="finetune", amp="off", measure_cuda=False)
    assert not m.training and all(p.grad is None and p.device.type == "cpu" for p in m.parameters())
    assert all(torch.equal(v, before[k]) for k, v in m.state_dict().items())


def test_a_plan_counts_in_two_processes_and_keeps_every_count(fresh, monkeypatch, tmp_path):
    """Two groups of runs of two shapes: a forked helper counts one group and hands its counts back. The table is
    the one-process plan's, this process counted only its own group, and the counts file holds both groups'."""
    from conftest import synthetic_calibration

    from maelab.cost import planning

    other = cost.ModelShape("mae", "micro", (("depth", 2), ("decoder_depth", 1)), img_size=16, channels=1)

    def run(label, shape):
        return cost.PlannedRun(label, model="mae", size="micro", overrides=shape.overrides, img_size=16, channels=1,
                               batch_size=8, steps=10, mask_ratio=0.75, eval_images=16)  # fmt: skip

    plans = {"a": [run("a", SHAPE)], "b": [run("b", other)]}
    cal = synthetic_calibration()
    planning._costs.cache_clear()  # this process's per-run memo (counts are what the test is about)
    monkeypatch.setattr(planning.os, "cpu_count", lambda: 2)
    two = cost.plan("smoke", plans=plans, calibration=cal, memory=False)
    assert sorted(fresh) == ["eval_flops", "step_flops"]  # one group here, the other in the helper
    entries = json.loads(cc.cache_path().read_text())["entries"]
    shapes = {json.dumps(json.loads(k)[1]) for k in entries if json.loads(k)[0] == "pretrain step"}
    assert shapes == {json.dumps(SHAPE.key()), json.dumps(other.key())}

    monkeypatch.setattr(planning.os, "cpu_count", lambda: 1)  # one process, a fresh cache: every count made here
    monkeypatch.setenv("MAELAB_CACHE", str(tmp_path / "one"))
    cc.clear_memory()
    planning._costs.cache_clear()
    fresh.clear()
    one = cost.plan("smoke", plans=plans, calibration=cal, memory=False)
    assert sorted(fresh) == ["eval_flops", "eval_flops", "step_flops", "step_flops"]
    assert one.equals(two)


def test_adopted_counts_are_kept_and_written_once_and_a_helper_writes_none(fresh, monkeypatch):
    cc.adopt({json.dumps(["model", SHAPE.key()]): [7, 3]})
    assert cc.model_facts(SHAPE) == (7, 3) and fresh == []  # taken as counted, not counted again
    assert json.loads(cc.cache_path().read_text())["entries"] == {json.dumps(["model", SHAPE.key()]): [7, 3]}
    with pytest.raises(Exception, match="^entries must be a dict of counts by key"):
        cc.adopt([1, 2])
    monkeypatch.setattr(cc, "_WRITES", [True])
    cc.keep_in_memory()
    cc.eval_batch(SHAPE, 8)
    assert len(json.loads(cc.cache_path().read_text())["entries"]) == 1  # counted, kept in memory, not written
    assert any(json.loads(k)[0] == "eval batch" for k in cc.counted_here())
