"""The nonlinear part of bisulco_jacobians: the stored configs find the committed records, the sweeps train and
store the models the page names (the main model once), the tables and the trivial predictor's configurations."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from maelab import models, paths, profiles, store, zoo
from maelab._validate import ParameterError
from maelab.options import DryRunLimits, RunOptions
from maelab.papers.bisulco2025 import jacobian_runs as jr


class FakeContext(SimpleNamespace):
    """What NonlinearRuns reads of a notebook's Context; load_or_compute records each name and config, and
    computes only when ``compute`` is set."""

    def __init__(self, compute=True):
        super().__init__(
            device=torch.device("cpu"),
            progress=False,
            caps=DryRunLimits(),
            options=RunOptions(),
            calls=[],
            compute=compute,
        )

    def load_or_compute(self, name, config, fn, seeds=None):
        self.calls.append((name, config))
        return fn() if self.compute else None

    def is_pending(self, name, config):  # nothing is stored here
        return True


def _committed_hash(name):
    r = store.load("bisulco_jacobians", name, "cpu", root=paths.committed_results())
    if r is None:
        pytest.skip(f"no committed bisulco_jacobians/{name}.cpu")
    return r.provenance["config_hash"]


def test_configs_hash_to_the_committed_records():
    S = profiles.settings("bisulco_jacobians", "cpu")
    ctx = FakeContext(compute=False)
    NL = jr.NonlinearRuns(ctx, S)
    NL.sweeps()
    NL.trivial_loss()
    configs = dict(ctx.calls)
    for name in ("mae_m080_p8_s0", "mae_m000_p8_s0", "trivial_loss"):
        assert store.config_hash({"profile": "cpu", **configs[name]}) == _committed_hash(name), name
    ZM = zoo.measured(zoo.ZooSettings.for_profile("cpu"))
    assert store.config_hash({"profile": "cpu", **jr.zoo_config(ZM, S)}) == _committed_hash("zoo_jacobians")


def test_sweeps_train_each_model_once_and_tabulate(cache, monkeypatch):
    S = profiles.settings("bisulco_jacobians", "smoke")  # m 0.3 and 0.8 at p 8; p 4 and 8 at m 0.8; one seed
    ctx = FakeContext()
    ctx.options = RunOptions(train_workers=2)  # a pool (replaced below): what an installment on a GPU asks for
    NL = jr.NonlinearRuns(ctx, S)
    handed, trained = [], []  # maelab.prefetch's pool is handed exactly the models the loop trains, in order
    monkeypatch.setattr(jr, "prefetch", lambda specs, **kw: handed.extend(s.key for s in specs))
    real = jr.pretrain
    monkeypatch.setattr(jr, "pretrain", lambda spec, **kw: (trained.append(spec.key), real(spec, **kw))[1])
    sw = NL.sweeps()
    assert handed == trained and len(trained) == 4
    names = [n for n, _ in ctx.calls]
    assert names == ["mae_m080_p8_s0", "mae_m030_p8_s0", "mae_m000_p8_s0", "mae_m080_p4_s0"]
    assert sw["ms"] == [0.3, 0.8] and sw["ps"] == [4, 8]
    assert sw["by_m"][0.8][0] is sw["main"][0] and sw["by_p"][8][0] is sw["main"][0]
    main = sw["main"][0]
    assert list(main["snap_epochs"]) == [0, 1] and main["snap_spread"].shape == (2, S.n_images)
    assert main["spread"].shape == (S.n_images,) and (main["baseline"] > 0).all()
    assert main["example"].shape == (3, S.img_size, S.img_size)
    nl = jr.sweep_table(sw, S)
    assert list(nl.sweep) == ["mask ratio", "mask ratio", "AE", "patch size", "patch size"]
    assert list(nl.m) == [0.3, 0.8, 0.0, 0.8, 0.8] and list(nl.p) == [8, 8, 8, 4, 8]
    ae = sw["ae"][0]
    assert nl.spread[2] == pytest.approx(float(np.mean(ae["spread"])))
    assert nl["final train loss"][2] == ae["loss"][-1]
    assert np.allclose(nl["spread / baseline"], nl.spread / nl["uniform baseline"])
    assert NL.trivial_configs() == [(0.0, 8), (0.3, 8), (0.8, 4), (0.8, 8)]
    triv = NL.trivial_loss()
    assert sorted(triv["loss"]) == ["m0.3_p8", "m0.8_p4", "m0.8_p8", "m0_p8"]
    assert all(v > 0 for v in triv["loss"].values())


def test_jacobian_stats_shapes_on_an_untrained_model():
    S = profiles.settings("bisulco_jacobians", "smoke", img_size=16, n_pixels=3)
    torch.manual_seed(0)
    model = models.create("mae", "micro", img_size=16, patch_size=4, in_chans=1, norm_pix_loss=False)
    out = jr.jacobian_stats(model, 0.5, torch.rand(4, 1, 16, 16), 0, S, "cpu")
    assert out["spread"].shape == (4,) and out["baseline"].shape == (4,) and (out["baseline"] > 0).all()
    assert out["profile"].shape == (9,) and out["example"].shape == (3, 16, 16)
    # the encoder never sees a removed patch: the Jacobian is zero there
    assert (out["example"][out["example_visible"] == 0] == 0).all()
    assert (out["example"][out["example_visible"] > 0] != 0).any()


def test_bad_input_is_one_line():
    S = profiles.settings("bisulco_jacobians", "smoke")
    with pytest.raises(ParameterError, match="^S must be"):
        jr.NonlinearRuns(FakeContext(), profiles.settings("bisulco_ising", "smoke"))
    NL = jr.NonlinearRuns(FakeContext(), S)
    with pytest.raises(ParameterError, match="^m must be"):
        NL.config(1.0, 8, 0)
    with pytest.raises(ParameterError, match="^p must be"):
        NL.result(0.5, 5, 0)  # 5 does not divide img_size 32
    with pytest.raises(ParameterError, match="^seed must be"):
        NL.spec(0.5, 8, -1)
    with pytest.raises(ParameterError, match="^sweeps must be"):
        jr.sweep_table({"by_m": {}}, S)
    with pytest.raises(ParameterError, match="^seed must be"):
        jr.jacobian_stats(None, 0.5, torch.zeros(1, 1, 32, 32), -1, S, "cpu")
