"""maelab.masking against the official MAE algorithm, written out independently here."""

import pytest
import torch

from maelab import masking
from maelab._validate import ParameterError


def official_random_masking(x, mask_ratio, noise):
    """The official facebookresearch/mae random_masking with the noise given (the reference)."""
    N, L, D = x.shape
    len_keep = int(L * (1 - mask_ratio))
    ids_shuffle = torch.argsort(noise, dim=1)
    ids_restore = torch.argsort(ids_shuffle, dim=1)
    ids_keep = ids_shuffle[:, :len_keep]
    x_masked = torch.gather(x, dim=1, index=ids_keep.unsqueeze(-1).repeat(1, 1, D))
    mask = torch.ones([N, L])
    mask[:, :len_keep] = 0
    mask = torch.gather(mask, dim=1, index=ids_restore)
    return x_masked, mask, ids_restore


@pytest.mark.parametrize("L, m", [(16, 0.75), (49, 0.75), (64, 0.5), (10, 0.9), (196, 0.6), (7, 0.0)])
def test_matches_official_and_counts(L, m):
    x = torch.randn(4, L, 3)
    g = torch.Generator().manual_seed(0)
    xm, mask, ids_restore = masking.random_masking(x, m, generator=g)
    noise = torch.rand(4, L, generator=torch.Generator().manual_seed(0))
    ref = official_random_masking(x, m, noise)
    for a, b in zip((xm, mask, ids_restore), ref):
        assert torch.equal(a, b)
    keep = int(L * (1 - m))
    assert xm.shape == (4, keep, 3)
    assert (mask.sum(1) == L - keep).all()


def test_ids_restore_inverts_shuffle():
    x = torch.randn(3, 20, 5)
    xm, mask, ids_restore = masking.random_masking(x, 0.6, generator=torch.Generator().manual_seed(1))
    full = masking.restore(xm, ids_restore, fill=float("nan"))
    assert torch.equal(full[mask == 0], x[mask == 0])
    assert torch.isnan(full[mask == 1]).all()
    # the argsort of ids_restore is the shuffle, whose first entries are the kept tokens
    ids_shuffle = torch.argsort(ids_restore, dim=1)
    assert torch.equal(torch.gather(x, 1, ids_shuffle[:, : xm.shape[1], None].expand(-1, -1, 5)), xm)


def test_block_masking_units_share_fate():
    gh = gw = 8
    x = torch.arange(64.0).reshape(1, 64, 1).repeat(5, 1, 1)
    xm, mask, ids_restore = masking.block_masking(x, 0.75, (gh, gw), unit=2, generator=torch.Generator().manual_seed(0))
    assert xm.shape[1] == int(16 * 0.25) * 4
    grid = mask.reshape(5, 4, 2, 4, 2)
    assert (grid == grid[:, :, :1, :, :1]).all()  # every 2x2 unit is all-kept or all-masked
    assert (mask.sum(1) == 64 - xm.shape[1]).all()
    assert torch.equal(masking.restore(xm, ids_restore)[mask == 0], x[mask == 0])


def test_patchify_roundtrip_and_layout():
    imgs = torch.randn(2, 3, 8, 12)
    t = masking.patchify(imgs, 4)
    assert t.shape == (2, 6, 48)
    # token 1 is the patch at row 0, column 1; channel is the fastest axis
    assert torch.equal(t[0, 1].reshape(4, 4, 3), imgs[0, :, 0:4, 4:8].permute(1, 2, 0))
    assert torch.equal(masking.unpatchify(t, 4, 3, grid=(2, 3)), imgs)


def test_pixel_mask():
    mask = torch.tensor([[1.0, 0.0, 0.0, 1.0]])
    pm = masking.pixel_mask(mask, 2, (2, 2))
    assert pm.shape == (1, 1, 4, 4) and pm[0, 0, :2, :2].eq(1).all() and pm[0, 0, :2, 2:].eq(0).all()
    assert pm[0, 0, 2:, 2:].eq(1).all()


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: masking.random_masking(torch.zeros(1, 4, 1), 1.0), "mask_ratio"),
        (lambda: masking.random_masking(torch.zeros(1, 4, 1), -0.1), "mask_ratio"),
        (lambda: masking.patchify(torch.zeros(1, 3, 10, 10), 4), "patch_size"),
        (lambda: masking.block_masking(torch.zeros(1, 36, 1), 0.5, (6, 6), unit=4), "unit"),
        (lambda: masking.block_masking(torch.zeros(1, 36, 1), 0.5, (5, 5), unit=1 + 1), "grid"),
    ],
)
def test_bad_inputs(call, name):
    with pytest.raises(ParameterError) as e:
        call()
    assert str(e.value).startswith(name) and "\n" not in str(e.value)
