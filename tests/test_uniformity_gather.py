"""The uniformity term's cross-process gather (``maelab.models.gather_features``, model option ``uniformity_gather``).

Under DistributedDataParallel (gloo, N = 2 and 4 CPU processes, float64), a global batch of B * N rows is split
into contiguous per-rank slices. Every rank computes ``uniformity_loss(gather_features(features, mode))``, the loss
of the global batch; after DDP's backward the parameter gradients are compared with the single-process gradient of
``uniformity_loss`` on the global batch, computed here in the test process without a process group:

* ``"official"`` (the official U-MAE ``GatherLayer``: each rank back-propagates into its own rows only): exactly
  1/N of it -- the ratio is checked to be 1/N, so a gather that summed the gradients (or did not gather) fails;
* ``"exact"`` (all_reduce SUM of the incoming gradients first): equal to it.

Once for a ``Linear`` encoder and once for a micro U-MAE through its ``forward`` (``out["loss_unif"]``; mask_ratio
0, so the [CLS] features do not depend on a random mask). Each N spawns its processes once (a module-scoped
fixture); the workers write their gradients to files.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn as nn

from maelab import ParameterError, models, result_keys
from maelab.models import create, gather_features, uniformity_loss

B = 3  # rows per rank
IN_DIM, OUT_DIM = 8, 6
IMG, PATCH = 8, 4
MODES = models.UNIFORMITY_GATHERS


def linear_encoder() -> nn.Linear:
    torch.manual_seed(0)
    return nn.Linear(IN_DIM, OUT_DIM).double()


def linear_inputs(world: int) -> torch.Tensor:
    return torch.randn(B * world, IN_DIM, generator=torch.Generator().manual_seed(1), dtype=torch.float64)


def micro_umae(mode: str = "official"):
    model = create(
        "umae",
        "micro",
        img_size=IMG,
        patch_size=PATCH,
        in_chans=1,
        lambda_unif=0.01,
        mask_ratio=0.0,
        uniformity_gather=mode,
        seed=0,
    )
    return model.double()


def model_inputs(world: int) -> torch.Tensor:
    return torch.rand(B * world, 1, IMG, IMG, generator=torch.Generator().manual_seed(2), dtype=torch.float64)


def grads(module: nn.Module) -> dict[str, torch.Tensor]:
    """Parameter gradients (zeros where none arrived), detached copies."""
    return {
        n: (p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p))
        for n, p in module.named_parameters()
        if p.requires_grad
    }


def model_backward(model, imgs: torch.Tensor) -> dict:
    """Forward, then backward of loss_unif alone (0 * loss_rec keeps every decoder parameter in the backward, so DDP
    reduces every bucket). Returns the model's loss_unif, its features' row count and the gradients."""
    out = model(imgs)
    (out["loss_unif"] + 0.0 * out["loss_rec"]).backward()
    return {"loss_unif": out["loss_unif"].detach().clone(), "rows": out["features"].shape[0]}


def _worker(rank: int, world: int, init_file: str, out_dir: str) -> None:
    torch.set_num_threads(1)
    torch.distributed.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        from torch.nn.parallel import DistributedDataParallel as DDP

        rows = slice(rank * B, (rank + 1) * B)
        result = {}
        enc = DDP(linear_encoder())
        x = linear_inputs(world)[rows]
        for mode in MODES:
            enc.zero_grad(set_to_none=True)
            loss = uniformity_loss(gather_features(enc(x), mode))
            loss.backward()
            result[("linear", mode)] = {"loss_unif": loss.detach().clone(), "grads": grads(enc.module)}
        imgs = model_inputs(world)[rows]
        for mode in MODES:
            model = DDP(micro_umae(mode), find_unused_parameters=True)
            res = model_backward(model, imgs)
            res["grads"] = grads(model.module)
            result[("model", mode)] = res
        torch.save(result, Path(out_dir) / f"rank{rank}.pt")
    finally:
        torch.distributed.destroy_process_group()


@pytest.fixture(scope="module", params=[2, 4], ids=lambda n: f"N{n}")
def ddp_run(request, tmp_path_factory):
    """(N, per-rank results of the spawned DDP run, single-process references on the global batch)."""
    import torch.multiprocessing as mp

    world = request.param
    tmp = tmp_path_factory.mktemp(f"gather{world}")
    mp.spawn(_worker, args=(world, str(tmp / "init"), str(tmp)), nprocs=world, join=True)
    ranks = [torch.load(tmp / f"rank{r}.pt", weights_only=True) for r in range(world)]

    enc = linear_encoder()
    loss = uniformity_loss(enc(linear_inputs(world)))
    loss.backward()
    ref = {"linear": {"loss_unif": loss.detach(), "grads": grads(enc)}}
    model = micro_umae()
    res = model_backward(model, model_inputs(world))
    res["grads"] = grads(model)
    ref["model"] = res
    return world, ranks, ref


def _ratio(got: dict, ref: dict) -> float:
    """Least-squares factor c with got ~ c * ref over all parameters."""
    num = sum((got[k] * ref[k]).sum() for k in ref)
    den = sum((ref[k] * ref[k]).sum() for k in ref)
    return float(num / den)


@pytest.mark.parametrize("what", ["linear", "model"])
@pytest.mark.parametrize("mode", MODES)
def test_ddp_gradient_is_official_1_over_n_or_exact(ddp_run, what, mode):
    world, ranks, ref = ddp_run
    want_scale = 1.0 / world if mode == "official" else 1.0
    ref_grads = ref[what]["grads"]
    assert sum(float(g.norm()) for g in ref_grads.values()) > 1e-6  # a non-trivial gradient to compare
    for rank, res in enumerate(ranks):
        got = res[(what, mode)]["grads"]
        assert set(got) == set(ref_grads)
        assert _ratio(got, ref_grads) == pytest.approx(want_scale, rel=1e-9), (rank, mode)
        for k, g in ref_grads.items():
            torch.testing.assert_close(got[k], want_scale * g, rtol=1e-9, atol=1e-12, msg=f"{what} {mode} {k}")


@pytest.mark.parametrize("what", ["linear", "model"])
@pytest.mark.parametrize("mode", MODES)
def test_every_rank_gets_the_global_batch_loss(ddp_run, what, mode):
    world, ranks, ref = ddp_run
    for res in ranks:
        got = res[(what, mode)]["loss_unif"]
        torch.testing.assert_close(got, ref[what]["loss_unif"], rtol=1e-12, atol=1e-14)
    if what == "model":
        assert all(res[(what, mode)]["rows"] == B for res in ranks)  # out["features"] stays this rank's
        assert ref[what]["rows"] == B * world


# ---------------------------------------------------------------------------------------------------------------
# one process (no process group)
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_gather_is_the_identity_without_a_process_group(mode):
    assert not (torch.distributed.is_available() and torch.distributed.is_initialized())
    f = torch.randn(5, 4, requires_grad=True)
    assert gather_features(f, mode) is f


def test_bad_mode_is_a_one_line_parameter_error():
    with pytest.raises(ParameterError) as e:
        gather_features(torch.zeros(2, 3), "sum")
    assert e.value.name == "uniformity_gather" and "'official', 'exact'" in str(e.value)
    assert "\n" not in str(e.value)
    with pytest.raises(ParameterError) as e:
        create("umae", uniformity_gather="all")
    assert e.value.name == "uniformity_gather" and "\n" not in str(e.value)


def test_model_option_default_and_config():
    model = create("umae", seed=0)
    assert model.uniformity_gather == "official"
    assert "uniformity_gather=" in repr(model)
    # a default the result configs never list: model.config and the canonical overrides are unchanged
    assert "uniformity_gather" not in model.config
    assert "uniformity_gather" not in result_keys.canonical_overrides({})
    exact = create(**create("umae", uniformity_gather="exact", seed=0).config)
    assert exact.uniformity_gather == "exact"


def test_single_process_loss_does_not_depend_on_the_mode():
    x = model_inputs(2)
    outs = [micro_umae(mode)(x) for mode in MODES]
    for key in ("loss", "loss_unif", "loss_rec"):
        assert torch.equal(outs[0][key], outs[1][key]), key
    assert outs[0]["loss_unif"].item() > 0
