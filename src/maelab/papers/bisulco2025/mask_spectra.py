"""The computations of the ``masking`` page: the Fourier-domain account of masking in Bisulco et al. (supplement
§F, Eq. 15-21 and Fig. 22), checked on random 1-D masks and measured on masked photographs.

:func:`identity_1d` compares ``numpy.fft.fft`` of random pulse trains with the closed form
(:func:`maelab.spectra.pulse_train_dft`), written correctly and as printed; :func:`spectra_2d` measures the power
spectra of masked photo crops. :func:`identity_config` and :func:`spectra_config` are the configs of the page's
stored results (everything the computations read; the profile is added by the store). The claims' evidence is in
:mod:`maelab.papers.bisulco2025.evidence` (``sinc_identity_evidence``, ``fig22_evidence``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from maelab import data, masking, spectra
from maelab._validate import ParameterError, in_range

from .settings import MaskingSettings

#: The cut-off of the "high-frequency" power, in cycles per pixel (frequencies of modulus ``|k|`` above it).
CUTOFF = 0.25


def _check(settings: Any, seed: Any) -> None:
    if not isinstance(settings, MaskingSettings):
        raise ParameterError("settings", "the masking page's MaskingSettings", type(settings).__name__)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ParameterError("seed", "an int", seed)


def identity_config(settings: MaskingSettings, seed: int) -> dict[str, Any]:
    """The config of the stored result ``identity_1d``: what :func:`identity_1d` reads."""
    _check(settings, seed)
    return {"what": "max |fft - closed form| / D", "seed": seed, **settings.pick("D", "patch_sizes_1d", "n_masks_1d")}


def identity_1d(settings: MaskingSettings, seed: int) -> dict[str, list]:
    """The largest error, relative to ``D``, of the closed-form DFT of a pulse train (Eq. 19-20 with the ``/D``
    the supplement leaves out of the phase) and of the formula as printed, over ``n_masks_1d`` random masks per
    pulse width ``p``: ``{"p", "max_err", "max_err_printed"}``, one entry per ``p``.

    The masks alternate between grid-aligned MAE masks (half the pulses kept) and arbitrary, possibly overlapping
    pulse trains, since the identity is claimed for any sum of pulses, not only for the ones MAE draws.
    """
    _check(settings, seed)
    rng = np.random.default_rng(seed)
    D = settings.D
    rows: dict[str, list] = {"p": [], "max_err": [], "max_err_printed": []}
    for p in settings.patch_sizes_1d:
        err = err_printed = 0.0
        for i in range(settings.n_masks_1d):
            if i % 2 == 0:
                starts = spectra.random_grid_starts(D, p, 0.5, rng)
            else:
                starts = rng.integers(0, D, size=rng.integers(1, max(2, D // p)))
            fft = np.fft.fft(spectra.pulse_train(D, p, starts))
            err = max(err, np.abs(fft - spectra.pulse_train_dft(D, p, starts)).max() / D)
            err_printed = max(
                err_printed, np.abs(fft - spectra.pulse_train_dft(D, p, starts, as_printed=True)).max() / D
            )
        rows["p"].append(p)
        rows["max_err"].append(err)
        rows["max_err_printed"].append(err_printed)
    return rows


def identity_table(ident: Any) -> str:
    """A Markdown table of :func:`identity_1d`'s result: one row per pulse width, both errors in ``.2e``."""
    need = ("p", "max_err", "max_err_printed")
    if not all(k in ident for k in need) or len({len(ident[k]) for k in need}) != 1:
        raise ParameterError("ident", "identity_1d's result (lists p, max_err, max_err_printed of equal length)", ident)
    head = "| p | max error, Eq. 19–20 with /D | max error, Eq. 19 as printed |\n|---|---|---|\n"
    return head + "\n".join(
        f"| {p} | {a:.2e} | {b:.2e} |" for p, a, b in zip(ident["p"], ident["max_err"], ident["max_err_printed"])
    )


def spectra_config(settings: MaskingSettings, seed: int) -> dict[str, Any]:
    """The config of the stored result ``spectra_2d``: what :func:`spectra_2d` reads."""
    _check(settings, seed)
    picked = settings.pick("n_crops", "crop", "photo_scale", "patch_sizes_2d", "n_mask_draws", "mask_ratio")
    return {"what": "masked-photo spectra", "cutoff": CUTOFF, "seed": seed, **picked}


def spectra_2d(settings: MaskingSettings, seed: int) -> dict[str, Any]:
    """Power spectra of ``n_crops`` grey photo crops (side ``crop``), unmasked and masked with ``p x p`` squares
    for each ``p`` in ``patch_sizes_2d`` (``n_mask_draws`` masks of ratio ``mask_ratio`` per crop, drawn by
    :func:`maelab.masking.random_masking` as the MAE models draw theirs).

    Returns ``patch_sizes``; ``hf_fraction`` (crops x p: the mean over draws of the power fraction above
    ``|k| = CUTOFF``); ``grating_max`` (per p: the largest power fraction of a zero-mean mask at its grating
    frequencies, which the factorised DFT says is zero); ``mean_psd`` (the mean spectrum unmasked, then per p);
    ``example_mask`` (the last mask drawn per p).
    """
    _check(settings, seed)
    S = settings
    crops = data.load("natural", "train", n=S.n_crops, seed=seed, size=S.crop, channels=1, scale=S.photo_scale).images
    crops = crops[:, 0].double().numpy()  # (N, D, D) in [0, 1]
    g = torch.Generator().manual_seed(seed)
    D, ps = S.crop, S.patch_sizes_2d
    hf = np.zeros((len(crops), len(ps)))
    grating = np.zeros(len(ps))
    mean_psd = np.zeros((len(ps) + 1, D, D))
    example_mask = np.zeros((len(ps), D, D))
    for j, p in enumerate(ps):
        grid = (D // p, D // p)
        for i, img in enumerate(crops):
            if j == 0:
                mean_psd[0] += spectra.power_spectrum(img) / len(crops)
            fr = []
            for _ in range(S.n_mask_draws):
                _, mask, _ = masking.random_masking(torch.zeros(1, grid[0] * grid[1], 1), S.mask_ratio, g)
                keep = 1.0 - masking.pixel_mask(mask, p, grid)[0, 0].double().numpy()
                grating[j] = max(grating[j], spectra.grating_power_fraction(keep - keep.mean(), p))
                psd = spectra.power_spectrum(img * keep)
                mean_psd[j + 1] += psd / (len(crops) * S.n_mask_draws)
                fr.append(spectra.high_frequency_fraction(psd, CUTOFF))
            hf[i, j] = np.mean(fr)
            example_mask[j] = keep
    return {
        "patch_sizes": list(ps),
        "hf_fraction": hf,
        "grating_max": grating,
        "mean_psd": mean_psd,
        "example_mask": example_mask,
    }


def mask_examples(
    photos: Any, ratios: Any, units: Any, seed: int, *, patch: int = 16, side: int = 224
) -> list[dict[str, Any]]:
    """Masks drawn as the official MAE code draws them (:func:`maelab.masking.block_masking`) on the centre
    ``side x side`` crop of each photo in ``photos`` (``{name: H x W [x 3] array in [0, 1]}``), for every masking
    unit in ``units`` (sides, in patches of ``patch`` pixels) and mask ratio in ``ratios``; one generator seeded by
    ``seed`` draws them all, in order.

    Returns one row per (photo, unit): ``name``, ``unit``, ``image`` (the crop, H x W x 3) and ``panels``, one per
    ratio: ``ratio``, ``kept``, ``total`` (tokens kept and in all) and ``image`` (the kept patches put back in place
    by :func:`maelab.masking.restore`, masked ones grey). Every panel checks that ``int(U * (1 - m))`` of the ``U``
    units are kept and that restoring puts each kept token back where it came from (``RuntimeError`` if not: the
    page would otherwise draw a wrong mask).
    """
    if not hasattr(photos, "items") or not photos:
        raise ParameterError("photos", "a non-empty mapping of names to images", type(photos).__name__)
    if not (isinstance(patch, int) and patch > 0):
        raise ParameterError("patch", "an int >= 1", patch)
    if not (isinstance(side, int) and side >= patch and side % patch == 0):
        raise ParameterError("side", f"a multiple of patch ({patch}) >= patch", side)
    for u in units:
        if isinstance(u, bool) or not isinstance(u, int) or u < 1 or (side // patch) % u:
            raise ParameterError("units", f"ints >= 1 dividing the patch grid side {side // patch}", list(units))
    for m in ratios:
        in_range("ratios", m, 0.0, 1.0, high_open=True)
    g = torch.Generator().manual_seed(seed)
    grid = (side // patch, side // patch)
    rows = []
    for name, photo in photos.items():
        img = np.asarray(photo, dtype=np.float32)
        img = img if img.ndim == 3 else np.repeat(img[..., None], 3, axis=2)
        if img.shape[0] < side or img.shape[1] < side:
            raise ParameterError(f"photos[{name!r}]", f"an image of at least {side} x {side} pixels", img.shape)
        h0, w0 = (img.shape[0] - side) // 2, (img.shape[1] - side) // 2
        x = torch.from_numpy(img[h0 : h0 + side, w0 : w0 + side]).permute(2, 0, 1)[None]  # (1, 3, H, W)
        tokens = masking.patchify(x, patch)
        for unit in units:
            panels = []
            for m in ratios:
                kept, mask, ids_restore = masking.block_masking(tokens, m, grid, unit, generator=g)
                if kept.shape[1] != masking.num_keep(grid[0] * grid[1] // unit**2, m) * unit**2:
                    raise RuntimeError(f"block_masking kept {kept.shape[1]} tokens, not int(U * (1 - {m})) units")
                back = masking.restore(kept, ids_restore, fill=0.5)
                if not torch.equal(back[mask == 0], tokens[mask == 0]):
                    raise RuntimeError("restore did not put the kept tokens back where they came from")
                shown = masking.unpatchify(back, patch, 3, grid)[0].permute(1, 2, 0).clamp(0, 1)
                panels.append({"ratio": m, "kept": kept.shape[1], "total": tokens.shape[1], "image": shown})
            rows.append({"name": name, "unit": unit, "image": x[0].permute(1, 2, 0).clamp(0, 1), "panels": panels})
    return rows
