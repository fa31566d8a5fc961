"""The FLOP / MFU arithmetic of benchmarks/train_speed.py and its one-line failure without CUDA (no timings)."""

from __future__ import annotations

import pytest
import torch
from conftest import load_repo_script

from maelab import cost, models


@pytest.fixture(scope="module")
def ts():
    return load_repo_script("benchmarks/train_speed.py")


def test_mfu_arithmetic(ts):
    # 1e9 FLOPs per step of 100 images at 1000 images/s = 10 steps/s = 1e10 FLOP/s; against a 1e12 peak: 1 %
    assert ts.achieved_flops_per_s(1e9, 100, 1000.0) == pytest.approx(1e10)
    assert ts.mfu(1e9, 100, 1000.0, 1e12) == pytest.approx(0.01)


def test_flops_per_step_is_the_cost_model_count(ts):
    m = models.create("mae", "micro", seed=0)
    assert ts._flops_per_step(m, 16) == cost.step_flops(m, 16).flops


def test_cuda_request_without_cuda_fails_in_one_line(ts, monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert ts.cuda_missing("cpu") is None
    assert ts.main(["--device", "cuda", "--configs", "micro32"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--device cuda" in err and "--device cpu" in err
