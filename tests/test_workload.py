"""maelab.experiments.workload: what a pipeline run does, read by the run and by the cost model. A tiny spec is run
and every image through the model is counted; the counts must be the workload's and the cost model's plan."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from maelab import cost, train
from maelab import experiments as E
from maelab._validate import ParameterError

# 100 training images at batch 32: 3 steps per epoch (4 images dropped); 21 epochs: online evaluation every 2
# epochs and after the last (11 times); ranks at 0, 8, 16, 21; fine-tuning at batch 100 (the 128 cap), 1 step/epoch
SPEC = E.PretrainSpec(
    dataset="shapes",
    n_train=100,
    n_test=24,
    img_size=16,
    model="mae",
    size="micro",
    epochs=21,
    batch_size=32,
    rank_every=8,
    finetune_epochs=2,
)


def test_workload_numbers_by_hand():
    w = E.workload(SPEC)
    assert (w.batch_size, w.steps, w.eval_every) == (32, 21 * 3, 2)
    assert w.online_eval_epochs == (2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 21)
    assert w.rank_epochs == (0, 8, 16, 21)
    assert (w.finetune_batch, w.finetune_steps) == (100, 2)
    assert w.eval_images() == 11 * 24 + 4 * 24 + (100 + 2 * 24) + 2 * 24
    assert w.eval_images(final=False) == w.eval_images() - (100 + 2 * 24)
    assert E.workload(SPEC, online_eval=False).online_eval_epochs == ()
    short = E.workload(dataclasses.replace(SPEC, epochs=3, batch_size=512, rank_every=0, finetune_epochs=0))
    assert (short.batch_size, short.steps, short.eval_every, short.online_eval_epochs) == (100, 3, 1, (1, 2, 3))
    assert short.rank_epochs == () and short.finetune_steps == 0 and short.finetune_eval_images == 0
    assert E.workload(dataclasses.replace(SPEC, n_train=None), n_train=500, n_test=10).finetune_batch == 128


def test_workload_refuses_unknown_sizes():
    with pytest.raises(ParameterError, match="n_train / n_test"):
        E.workload(dataclasses.replace(SPEC, n_train=None))
    with pytest.raises(ParameterError, match="n_test"):
        E.workload(SPEC, n_test=-1)


def test_finetune_config_is_the_pipeline_s_recipe():
    cfg = E.finetune_config(SPEC, 100)
    assert (cfg.epochs, cfg.batch_size, cfg.blr, cfg.warmup_epochs) == (2, 100, SPEC.finetune_blr, 1)
    assert E.finetune_config(SPEC, 1000, epochs=5).batch_size == E.FINETUNE_BATCH
    with pytest.raises(ParameterError, match="epochs"):
        E.finetune_config(dataclasses.replace(SPEC, finetune_epochs=0), 100)


def test_the_run_does_what_the_workload_and_the_plan_say(cache, monkeypatch):
    """Every batch through the patch embedding (each training step, feature pass and loss pass reads all its images
    there) is recorded with the phase (pre-training or fine-tuning) and whether autograd was on."""
    seen: list[tuple[str, bool, int]] = []
    phase = ["pretrain"]

    def record(module, args, out):
        seen.append((phase[0], torch.is_grad_enabled(), int(args[0].shape[0])))

    build, fine_tune = E.build_model, train.fine_tune

    def hooked(spec):
        m = build(spec)
        m.patch_embed.register_forward_hook(record)  # copies of the model (snapshots, fine-tuning) keep the hook
        return m

    def tracked(*a, **kw):
        phase[0] = "finetune"
        return fine_tune(*a, **kw)

    monkeypatch.setattr(E, "build_model", hooked)
    monkeypatch.setattr(train, "fine_tune", tracked)
    out = E.pretrain_and_evaluate(SPEC, device="cpu", progress=False)

    def images(ph, grad):
        return [n for p, g, n in seen if p == ph and g == grad]

    w = E.workload(SPEC)
    assert images("pretrain", True) == [w.batch_size] * w.steps
    assert sum(images("pretrain", False)) == w.online_eval_images + w.rank_images + w.final_eval_images
    assert images("finetune", True) == [w.finetune_batch] * w.finetune_steps
    # fine-tuning reads the encoder's width from 2 images before its first step (not in the workload: negligible)
    assert sum(images("finetune", False)) == w.finetune_eval_images + 2
    # the trainer's history and the ranks: the epochs the workload names
    assert len(out["history"]) == SPEC.epochs
    assert tuple(h["epoch"] for h in out["history"] if h["eval_online_acc"] is not None) == w.online_eval_epochs
    assert tuple(e for e, _ in out["rank_by_epoch"]) == w.rank_epochs
    # the cost model's plan of the spec is what ran
    run = cost.PlannedRun.from_spec(SPEC)
    assert (run.steps, run.batch_size) == (len(images("pretrain", True)), w.batch_size)
    assert (run.finetune_steps, run.finetune_batch) == (len(images("finetune", True)), w.finetune_batch)
    assert run.eval_images == sum(images("pretrain", False)) + sum(images("finetune", False)) - 2
    assert run.data_images == SPEC.n_train + SPEC.n_test
