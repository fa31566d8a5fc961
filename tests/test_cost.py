"""Tests of maelab.cost: FLOP counting against hand formulas, scaling laws, minutes arithmetic, plan table, cache key.
No timing is asserted (timings belong in benchmarks/)."""

from __future__ import annotations

import copy
import json

import pytest
import torch
import torch.nn as nn

from maelab import cost, models
from maelab._validate import ParameterError


class _LinearModel(nn.Module):
    """A bare Linear with the image attributes the counting helpers read (in_chans x img_size^2 inputs)."""

    def __init__(self, d_in: int = 12, d_out: int = 5):
        super().__init__()
        self.in_chans, self.img_size = 3, 2
        self.lin = nn.Linear(d_in, d_out)

    def forward(self, x, mask_ratio=None, generator=None):
        return {"loss": self.lin(x.flatten(1)).sum()}


def test_linear_forward_backward_flops_match_hand_formula():
    b, d_in, d_out = 7, 12, 5
    c = cost.step_flops(_LinearModel(d_in, d_out), b)
    assert c.forward == 2 * b * d_in * d_out
    # backward: the weight gradient only (2 B in out); the images need no gradient (see the next test for both)
    assert c.backward == 2 * b * d_in * d_out
    assert c.flops == c.forward + c.backward
    assert c.optimizer_flops == 12 * (d_in * d_out + d_out)


def test_linear_backward_with_input_grad_is_twice_forward():
    b, d_in, d_out = 4, 6, 3
    lin = nn.Linear(d_in, d_out)
    x = torch.zeros(b, d_in, device="meta", requires_grad=True)
    meta = copy.deepcopy(lin).to("meta")
    out = {}
    f, _ = cost.count_flops(lambda: out.update(y=meta(x).sum()))
    g, _ = cost.count_flops(lambda: out["y"].backward())
    assert f == 2 * b * d_in * d_out
    assert g == 2 * f


def test_count_flops_of_a_matmul():
    a, b = torch.zeros(3, 4), torch.zeros(4, 5)
    flops, ops = cost.count_flops(lambda: a @ b)
    assert flops == 2 * 3 * 4 * 5 and ops >= 1


def test_step_flops_linear_in_batch_and_encoder_scales_with_visible_tokens():
    m = models.create("mae", "micro", seed=0, lambda_unif=0.0)
    c8, c16 = cost.step_flops(m, 8), cost.step_flops(m, 16)
    assert c16.forward == 2 * c8.forward and c16.backward == 2 * c8.backward
    # encoder only (forward_features has no decoder): tokens 1 + L (unmasked) vs 1 + L/4 (mask 0.75)
    enc = models.create("mae", "micro", seed=0, decoder_depth=0)
    full = cost.step_flops(enc, 8, mask_ratio=0.0).forward
    masked = cost.step_flops(enc, 8, mask_ratio=0.75).forward
    ratio = masked / full
    assert 0.2 < ratio < 0.3  # ~ (1 - 0.75) up to [CLS] and the token-independent decoder_pred/patch-embed terms


def test_eval_flops_linear_in_images_and_equal_to_forward_features_count():
    m = models.create("mae", "micro", seed=0)
    f256, _ = cost.eval_flops(m, 256, batch_size=256)
    f512, _ = cost.eval_flops(m, 512, batch_size=256)
    f300, _ = cost.eval_flops(m, 300, batch_size=256)
    assert f512 == 2 * f256
    assert f300 == pytest.approx(f256 * 300 / 256, rel=1e-9)
    assert cost.eval_flops(m, 0) == (0, 0)


def test_finetune_step_counts_encoder_only_and_not_masked():
    m = models.create("mae", "micro", seed=0)
    ft = cost.finetune_step_flops(m, 8)
    fwd, _ = cost.eval_flops(m, 8, batch_size=8)
    head = 2 * 8 * m.embed_dim * 10
    assert ft.forward == fwd + head


def test_device_seconds_and_plan_minutes_arithmetic():
    d = cost.Device("x", flops_per_s=1e9, op_overhead_s=1e-3)
    assert d.seconds(2e9, ops=10) == pytest.approx(2.0)
    assert d.seconds(1e3, ops=10) == pytest.approx(1e-2)  # the op floor binds
    assert cost.H100.flops_per_s == pytest.approx(989e12 * cost.H100_MFU)
    run = cost.PlannedRun("r", steps=10, repeats=3)
    p = cost.predict(run, d)
    assert p["train_flops"] == 30 * p["step_flops"]
    assert p["train_s"] == pytest.approx(30 * d.seconds(p["step_flops"], p["step_ops"]))
    assert p["seconds"] == pytest.approx(p["train_s"])  # no eval, no fine-tuning planned


def test_device_curve_interpolates_log_log_and_clamps():
    d = cost.Device("cpu", 1.0, curve=(("train", ((1e9, 1e10), (1e11, 1e12))),))
    assert d.throughput(1e10) == pytest.approx(1e11)  # geometric midpoint
    assert d.throughput(1e8) == 1e10 and d.throughput(1e13) == 1e12


def test_plan_table_columns():
    runs = [cost.PlannedRun("a", steps=2, eval_images=10, finetune_steps=1, finetune_batch=4, batch_size=4)]
    devs = (cost.H100, cost.Device("slow", 1e9))
    t = cost.format_plan_table(runs, devs, memory=False)
    assert list(t.columns) == list(cost.PLAN_COLUMNS) + ["H100 (bf16) min", "slow min"]
    assert len(t) == 1 and t["run"][0] == "a"
    assert t["slow min"][0] == pytest.approx(cost.predict(runs[0], devs[1])["seconds"] / 60)


def test_planned_run_from_spec_counts_steps():
    from maelab.experiments import PretrainSpec

    spec = PretrainSpec(n_train=1000, n_test=100, epochs=3, batch_size=128, finetune_epochs=2)
    r = cost.PlannedRun.from_spec(spec, repeats=2)
    assert r.steps == 3 * (1000 // 128) and r.finetune_steps == 2 * (1000 // 128) and r.repeats == 2
    # online eval after each of 3 epochs, train + test features, reconstruction, 2 fine-tuning evals
    assert r.eval_images == 3 * 100 + 1000 + 100 + 100 + 2 * 100


def test_peak_memory_counts_states_and_fake_equals_real_saved_bytes():
    m = models.create("umae", "micro", seed=0)
    est = cost.peak_memory_bytes(m, 8, amp="off", measure_cuda=False, data_images=10)
    n = sum(p.numel() for p in m.parameters() if p.requires_grad)
    assert est.grads == 4 * n and est.optimizer == 8 * n and est.data == 10 * 3 * 32 * 32 * 4
    real = cost.memory._saved_bytes(copy.deepcopy(m), 8, "off", cost.memory._pretrain_loss(None), fake=False)
    assert est.activations == real > 0


def test_calibration_cache_key_and_path(monkeypatch, tmp_path):
    monkeypatch.setenv("MAELAB_CACHE", str(tmp_path))
    key = cost.cpu_key()
    assert torch.__version__ in key and f"{torch.get_num_threads()} threads" in key
    path = cost.calibration_path()
    assert path.parent == tmp_path / "cost" and path.name.startswith("cpu-calibration-")
    assert cost.calibration_path("other machine") != path
    cal = cost.CpuCalibration(
        key=key,
        points=(
            {
                "name": "p",
                "kind": "train",
                "batch_size": 1,
                "flops": 2e9,
                "seconds": 1.0,
                "median_seconds": 1.0,
                "cpu_seconds": 2.0,
                "flops_per_s": 2e9,
                "median_flops_per_s": 2e9,
            },
        ),
        matmul_flops_per_s=4e9,
        matmul_median_flops_per_s=4e9,
        threads=1,
        loadavg=(0.0, 0.0),
        date_utc="x",
    )
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"format": cost.calibration._CALIBRATION_FORMAT, **cal.to_dict()}))
    assert cost.calibrate_cpu() == cal  # served from the cache, nothing measured
    assert cost.cpu_device(cal).throughput(123.0) == 2e9
    assert cal.frame()["% of GEMM"].tolist() == [50.0, 100.0]


def test_bad_input_one_line_errors():
    m = models.create("mae", "micro", seed=0)
    with pytest.raises(ParameterError, match="batch_size"):
        cost.step_flops(m, 0)
    with pytest.raises(ParameterError, match="mask_ratio"):
        cost.step_flops(m, 2, mask_ratio=1.0)
    with pytest.raises(ParameterError, match="model"):
        cost.step_flops("not a model", 2)
    with pytest.raises(ParameterError, match="steps"):
        cost.PlannedRun("x", steps=-1)
    with pytest.raises(ParameterError, match="amp"):
        cost.peak_memory_bytes(m, 2, amp="fp8")


# ----------------------------------------------------------------------------------------------- probes and k-NN
_PROBES = (
    {"kind": "logreg", "n_train": 1000, "n_test": 1000, "dim": 10, "seconds": 2.0},
    {"kind": "logreg_torch", "n_train": 1000, "n_test": 1000, "dim": 9, "seconds": 4.0},
    {"kind": "logreg_torch", "n_train": 1000, "n_test": 1000, "dim": 784, "seconds": 30.0},
    {"kind": "knn", "n_train": 1000, "n_test": 1000, "dim": 10, "seconds": 0.5},
)


def test_probe_seconds_scale_the_measured_workload_by_the_solver_s_work():
    cpu = cost.Device("cpu", 1e9, probes=_PROBES)
    # k-NN: n_train * n_test * dim
    assert cost.probe_seconds(cost.EvalJob("knn", 2000, 3000, dim=10), cpu) == pytest.approx(0.5 * 2 * 3)
    # scikit-learn: n_train * dim, and fits / 7 (one fixed C: 1 fit instead of the grid's 6 + 1)
    assert cost.probe_seconds(cost.EvalJob("logreg", 4000, 10, dim=20), cpu) == pytest.approx(2.0 * 4 * 2)
    assert cost.probe_seconds(cost.EvalJob("logreg", 1000, 10, dim=10, fits=1), cpu) == pytest.approx(2.0 / 7)
    # torch, Newton (10 classes x 20 parameters <= 3000): n_train * (dim + 1)^2 from the 9-d reference
    assert cost.probe_seconds(cost.EvalJob("logreg_torch", 3000, 10, dim=19), cpu) == pytest.approx(4.0 * 3 * 4)
    # torch above Newton's size (10 x 785 parameters): the whitened L-BFGS reference, n_train * dim^2
    assert cost.probe_seconds(cost.EvalJob("logreg_torch", 2000, 10, dim=784), cpu) == pytest.approx(60.0)
    # fewer examples than features: Newton in the n_train-dimensional row space (10 x 201 parameters), from the 9-d
    # reference; where that does not fit either, the whitened L-BFGS of the n x n Gram matrix, n_train * dim * n_train
    assert cost.probe_seconds(cost.EvalJob("logreg_torch", 200, 10, dim=3072), cpu) == pytest.approx(
        4.0 * 0.2 * (201 / 10) ** 2
    )
    assert cost.probe_seconds(cost.EvalJob("logreg_torch", 392, 10, dim=784), cpu) == pytest.approx(
        30.0 * 0.392 * 784 * 392 / 784**2
    )
    # the H100 model has no probes: k-NN as FLOPs at its throughput, probes on the host only
    h = cost.Device("gpu", 1e12)
    assert cost.probe_seconds(cost.EvalJob("knn", 1000, 1000, dim=50), h) == pytest.approx(2 * 1000 * 1000 * 50 / 1e12)
    assert cost.probe_seconds(cost.EvalJob("logreg", 1000, 1000, dim=50), h) == 0.0


def test_predict_adds_probes_on_the_host_and_from_spec_adds_the_pipeline_s_evaluation():
    from maelab.experiments import PretrainSpec

    spec = PretrainSpec(dataset="shapes", n_train=1000, n_test=1000, img_size=32, channels=3, epochs=1, batch_size=500)
    run = cost.PlannedRun.from_spec(spec, pools=2)
    assert [(j.kind, j.n_train, j.n_test, j.count) for j in run.jobs] == [
        ("logreg", 1000, 1000, 2),
        ("knn", 1000, 1000, 2),
    ]
    assert cost.PlannedRun.from_spec(spec, pipeline_eval=False).jobs == ()
    cpu = cost.Device("cpu", 1e9, probes=_PROBES)
    width = models.create("mae", "micro", seed=0).embed_dim
    p = cost.predict(run, cpu)
    assert p["probe_s"] == pytest.approx(2 * 2.0 * width / 10)
    assert p["knn_s"] == pytest.approx(2 * 0.5 * width / 10)
    assert p["seconds"] == pytest.approx(p["train_s"] + p["finetune_s"] + p["eval_s"] + p["knn_s"] + p["probe_s"])
    on_h100 = cost.predict(run, cost.H100)
    assert on_h100["probe_s"] == 0.0 and cost.predict(run, cost.H100, host=cpu)["probe_s"] == p["probe_s"]
    with pytest.raises(ParameterError, match="^kind must be one of"):
        cost.EvalJob("svm", 10, 10)


def test_a_probe_fitted_on_the_device_is_priced_there_not_on_the_host():
    """``EvalJob.on_device`` (the zoo's logreg_torch probes): on a device without probe workloads its Newton Hessians'
    FLOPs (fits x 2 n P^2, P = classes (dim + 1)) at the device's rate, never CPU probe time; on a calibrated CPU the
    CPU's own probe price."""
    from maelab.experiments import PretrainSpec

    gpu, cpu = cost.Device("gpu", 1e12), cost.Device("cpu", 1e9, probes=_PROBES)
    job = cost.EvalJob("logreg_torch", 3000, 10, dim=19, on_device=True)
    assert cost.probe_seconds(job, gpu) == pytest.approx(7 * 2 * 3000 * (10 * 20) ** 2 / 1e12)
    assert cost.probe_seconds(job, cpu) == cost.probe_seconds(cost.EvalJob("logreg_torch", 3000, 10, dim=19), cpu)
    spec = PretrainSpec(dataset="shapes", n_train=1000, n_test=1000, img_size=32, channels=3, epochs=1, batch_size=500)
    run = cost.PlannedRun.from_spec(spec, pools=2, probe_kind="logreg_torch", probe_on_device=True)
    assert [(j.kind, j.count, j.on_device) for j in run.jobs] == [("logreg_torch", 2, True), ("knn", 2, False)]
    here = cost.predict(run, gpu, host=cpu)
    assert here["probe_s"] == 0.0 and here["device_probe_s"] > 0
    assert here["seconds"] == pytest.approx(sum(here[k] for k in ("train_s", "eval_s", "knn_s", "device_probe_s")))
    on_cpu = cost.predict(run, cpu)
    off = cost.predict(cost.PlannedRun.from_spec(spec, pools=2, probe_kind="logreg_torch"), cpu)
    assert on_cpu["device_probe_s"] == pytest.approx(off["probe_s"]) and on_cpu["seconds"] == pytest.approx(
        off["seconds"]
    )
    with pytest.raises(ParameterError, match="^on_device must be False unless kind is 'logreg_torch'"):
        cost.EvalJob("logreg", 10, 10, on_device=True)
