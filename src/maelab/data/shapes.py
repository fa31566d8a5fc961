"""``shapes``: a procedural, seeded, hierarchical image world with ground-truth latents.

Each image shows one object on a background. Its generative factors form three levels (all returned in
``Dataset.latents``; ``meta["latent_levels"]`` lists them):

1. **class** (the label): one of 10 silhouettes, :data:`CLASSES` -- disc, square, triangle, plus, ring, star,
   ellipse, diamond (a rhombus), bar, half_disc. No two are rotations of each other, so rotation is a nuisance.
2. **object** attributes: centre ``x, y`` (fractions of the image side, y from the top, uniform in [0.4, 0.6];
   objects are never clipped), ``scale`` (size as a fraction of the side, uniform in [0.18, 0.30]; a disc has
   radius ``scale``), ``rotation`` (uniform in [0, 2 pi)), ``colour`` (RGB from HSV: hue in [0, 0.65), saturation
   and value in [0.6, 1]; also ``hue``).
3. **low level**: a sinusoidal grating texture on the object (``texture_freq`` in cycles per image side,
   ``texture_orientation`` in [0, pi), ``texture_phase``, ``texture_contrast`` c): the object's pixels are
   ``colour * (1 - c + c * tau)`` with ``tau = (1 + sin(2 pi f ((x - 1/2) cos o + (y - 1/2) sin o) + phase)) / 2``
   (x, y pixel centres as fractions of the side); the background: a darker, low-saturation colour ``background``
   (value in [0.05, 0.45]) times ``1 + a ((x - 1/2) cos d + (y - 1/2) sin d)`` with ``background_gradient`` =
   (a, d); and i.i.d. Gaussian pixel noise of standard deviation ``noise_std`` (uniform in [0.01, 0.05]).
   The silhouette's edge is anti-aliased over one pixel and blends object and background linearly.

``latents["mask"]`` (N, 1, H, W) is the object's anti-aliased silhouette (coverage in [0, 1]; ``masks=False``
leaves it out to save memory) and
``latents["texture_class"]`` the class whose texture family was used. Each class owns a texture family: class t
has frequency 4 (t < 5) or 8 (t >= 5) cycles per side (+-10 %) and orientation (t mod 5) * 36 degrees (+-7
degrees), so frequency and orientation identify the texture class. Textures agree with the shape class with
probability ``p_texture`` (default 0.8); otherwise the texture class is uniform over the 9 other classes.
``cue_conflict=True`` always takes a different class (shape of class a, texture of class b: the images of a
shape-bias test, as in Geirhos et al. 2019), so ``latents["texture_class"] != labels`` everywhere.

Distribution shifts (option ``shift``) change one factor and nothing else; the same seed gives the *same scenes*
with and without a shift, which makes paired robustness comparisons possible:

- ``"background"``: a cluttered, saturated background of two random gratings instead of the smooth one;
- ``"colour"``: object hues from the unseen range [0.65, 1) (purple-magenta-red) instead of [0, 0.65);
- ``"texture_swap"``: every texture class t becomes (t + 1) mod 10, so an object of class t now carries the
  texture family of class t + 1 (a consistent relabelling of the texture cue: a texture-biased model is
  systematically wrong);
- ``"scale"``: objects of scale [0.10, 0.15] instead of [0.18, 0.30].

Images are float32 (N, C, H, W) quantised to the 256 levels k/255 of an 8-bit image, RGB by default (``channels``
1 gives BT.601 luma). Default size 32; any ``size`` renders the same scene at another resolution (all latents but
``mask`` are independent of size).

**Reproducibility.** Images are generated in fixed chunks of :data:`CHUNK` images; chunk c of (seed, split) uses
its own ``torch.Generator`` seeded by ``numpy.random.SeedSequence(seed, spawn_key=(1, split, stream, c))`` (two
streams: scene factors and pixel noise), and each chunk is rendered on its own. Image i therefore depends only on
(seed, split, i) -- not on n or on the other images -- and train and test use disjoint streams. Within one torch
version and thread count the output is bitwise identical; the 8-bit quantisation makes cross-machine differences
(float rounding of sin/atan2 in vectorised vs scalar code paths) show up, if ever, as rare single-level flips.
(On this project's CPU the output was bitwise identical with 1 and 2 torch threads.)

**Speed.** Rendering is batched over the chunk (per-class signed-distance functions on index groups, no per-image
Python loops); ``benchmarks/shapes_speed.py`` measures it: about 31,000 images/s at 32x32 RGB (48,000 grey, 7,900
at 64x64 RGB) on this project's 2-core CPU with 2 torch threads, latents and masks included
(``benchmarks/results/shapes_speed-cpu-*.json``).

**Difficulty.** Raw-pixel multinomial logistic regression (scikit-learn, standardised pixels, C = 1e-3; 5,000
train / 2,000 test images of seed 0, 32x32 RGB) reaches 0.25 test accuracy (chance 0.10; tested to lie in
(0.15, 0.6)); with the object centre uniform over [0.3, 0.7] instead it was 0.16, with a fixed centre 0.38. The
class is nevertheless fully determined by the silhouette: undoing the pose latents and matching class-mean
templates scores 1.00 (tested > 0.97), and a 5-NN on the pose-invariant Hu moments of ``latents["mask"]`` (no pose
latents) scores 0.93 (square/disc and plus/star are its confusions). The texture class is linearly decodable from
the phase-invariant amplitude spectrum (logistic regression on 2,000 images: 0.96; tested > 0.6).
"""

from __future__ import annotations

import math

import torch

from .._validate import ParameterError, in_range, is_bool
from ._common import Dataset, check_channels, check_options, check_size, chunk_generator, quantize_, to_channels

#: The 10 silhouettes (class names, in label order).
CLASSES = ("disc", "square", "triangle", "plus", "ring", "star", "ellipse", "diamond", "bar", "half_disc")
SHIFTS = (None, "background", "colour", "texture_swap", "scale")
#: Images per chunk of the random streams (see the module docstring, *Reproducibility*).
CHUNK = 512
DATASET_ID = 1
DEFAULT_N = {"train": 10_000, "test": 2_000}
TEXTURE_FREQS = (4.0, 8.0)  # cycles per image side, for classes 0-4 and 5-9
TEXTURE_ORIENTATIONS = tuple(k * math.pi / 5 for k in range(5))  # for class t: t % 5
#: Closed-form area of each silhouette in units of scale**2 (the tests compare rendered masks against these).
AREAS = {
    "disc": math.pi,
    "square": 1.7**2,
    "triangle": 3 * math.sqrt(3) * 0.575**2,
    "plus": 2 * (2.0 * 0.66) - 0.66**2,
    "ring": math.pi * (1.0 - 0.55**2),
    "star": math.pi * (0.45**2 + 0.45 * 1.1 + 1.1**2) / 3,
    "ellipse": math.pi * 1.2 * 0.6,
    "diamond": 2 * 1.2 * 0.75,
    "bar": 2.4 * 0.6,
    "half_disc": math.pi * 1.2**2 / 2,
}
OPTIONS = {"size": 32, "channels": 3, "p_texture": 0.8, "cue_conflict": False, "shift": None, "masks": True}
LATENT_LEVELS = {
    "class": ["class"],
    "object": ["x", "y", "scale", "rotation", "colour", "hue"],
    "low": [
        "texture_class",
        "texture_freq",
        "texture_orientation",
        "texture_phase",
        "texture_contrast",
        "background",
        "background_gradient",
        "noise_std",
    ],
}

# Columns of the per-image uniform draws (fixed, so adding a factor later never changes existing ones).
_U_CLASS, _U_AGREE, _U_OTHER, _U_X, _U_Y, _U_SCALE, _U_ROT, _U_HUE, _U_SAT, _U_VAL = range(10)
_U_TFREQ, _U_TORI, _U_TPHASE, _U_TCON, _U_BHUE, _U_BSAT, _U_BVAL, _U_GDIR, _U_GAMP, _U_NOISE = range(10, 20)
_U_CLUTTER = 20  # 20..27: two gratings (freq, orientation, phase) and a hue, plus a spare
_N_UNIFORM = 32


def hsv_to_rgb(h: torch.Tensor, s: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """HSV in [0, 1] (any equal shapes) -> RGB stacked on a new last dim (closed form, as ``colorsys``)."""
    out = []
    for n in (5.0, 3.0, 1.0):
        k = torch.remainder(n + h * 6.0, 6.0)
        out.append(v - v * s * torch.clamp(torch.minimum(k, 4.0 - k), 0.0, 1.0))
    return torch.stack(out, dim=-1)


# ------------------------------------------------------------------ signed distances in the object's unit frame
def _sdf(cls: int, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Approximate signed distance (negative inside) of silhouette ``cls`` at object-frame coordinates (u, v),
    in units of the object's scale. Exact near the boundary for straight edges and circles."""
    name = CLASSES[cls]
    if name == "disc":
        return torch.hypot(u, v) - 1.0
    if name == "square":
        return torch.maximum(u.abs(), v.abs()) - 0.85
    if name == "triangle":  # equilateral, inradius 0.575, centroid at the origin
        return torch.maximum(-v, 0.8660254 * u.abs() + 0.5 * v) - 0.575
    if name == "plus":
        au, av = u.abs(), v.abs()
        return torch.minimum(torch.maximum(au - 1.0, av - 0.33), torch.maximum(au - 0.33, av - 1.0))
    if name == "ring":
        return (torch.hypot(u, v) - 0.775).abs() - 0.225
    if name == "star":  # five points: radius linear in angle between 0.45 (notch) and 1.1 (tip)
        sector = 2 * math.pi / 5
        w = torch.remainder(torch.atan2(v, u), sector) / sector * 2.0 - 1.0
        return torch.hypot(u, v) - (0.45 + 0.65 * (1.0 - w.abs()))
    if name == "ellipse":
        return (torch.hypot(u / 1.2, v / 0.6) - 1.0) * 0.6
    if name == "diamond":  # rhombus with half-diagonals 1.2 and 0.75
        return (u.abs() / 1.2 + v.abs() / 0.75 - 1.0) * (1.2 * 0.75 / math.hypot(1.2, 0.75))
    if name == "bar":
        return torch.maximum(u.abs() - 1.2, v.abs() - 0.3)
    if name == "half_disc":  # radius 1.2, centroid (4R / 3 pi below the dome's centre) at the origin
        vv = v + 4 * 1.2 / (3 * math.pi)
        return torch.maximum(torch.hypot(u, vv) - 1.2, -vv)
    raise AssertionError(name)


# ------------------------------------------------------------------------------------------- scene factors
def _factors(uni: torch.Tensor, p_texture: float, cue_conflict: bool, shift: str | None) -> dict[str, torch.Tensor]:
    """Map the (B, 32) uniform draws of a chunk to scene factors. Shifts touch only their own factor."""
    n_cls = len(CLASSES)
    cls = (uni[:, _U_CLASS] * n_cls).long().clamp_(max=n_cls - 1)
    other = (cls + 1 + (uni[:, _U_OTHER] * (n_cls - 1)).long().clamp_(max=n_cls - 2)) % n_cls
    agree = (uni[:, _U_AGREE] < p_texture) if not cue_conflict else torch.zeros_like(cls, dtype=torch.bool)
    tex = torch.where(agree, cls, other)
    if shift == "texture_swap":
        tex = (tex + 1) % n_cls
    f = {"class": cls, "texture_class": tex}
    f["x"] = 0.4 + 0.2 * uni[:, _U_X]  # with scale <= 0.3 and extent <= 1.2 scale, never clipped
    f["y"] = 0.4 + 0.2 * uni[:, _U_Y]
    f["scale"] = (0.10 + 0.05 * uni[:, _U_SCALE]) if shift == "scale" else (0.18 + 0.12 * uni[:, _U_SCALE])
    f["rotation"] = 2 * math.pi * uni[:, _U_ROT]
    f["hue"] = (0.65 + 0.35 * uni[:, _U_HUE]) if shift == "colour" else 0.65 * uni[:, _U_HUE]
    f["colour"] = hsv_to_rgb(f["hue"], 0.6 + 0.4 * uni[:, _U_SAT], 0.6 + 0.4 * uni[:, _U_VAL])
    freq_base = torch.tensor(TEXTURE_FREQS)[tex // 5]
    ori_base = torch.tensor(TEXTURE_ORIENTATIONS)[tex % 5]
    f["texture_freq"] = freq_base * (0.9 + 0.2 * uni[:, _U_TFREQ])
    f["texture_orientation"] = torch.remainder(ori_base + math.radians(7.0) * (2 * uni[:, _U_TORI] - 1), math.pi)
    f["texture_phase"] = 2 * math.pi * uni[:, _U_TPHASE]
    f["texture_contrast"] = 0.35 + 0.25 * uni[:, _U_TCON]
    f["background"] = hsv_to_rgb(uni[:, _U_BHUE], 0.3 * uni[:, _U_BSAT], 0.05 + 0.4 * uni[:, _U_BVAL])
    f["background_gradient"] = torch.stack([0.5 * uni[:, _U_GAMP], 2 * math.pi * uni[:, _U_GDIR]], dim=1)
    f["noise_std"] = 0.01 + 0.04 * uni[:, _U_NOISE]
    return f


def _render_chunk(
    f: dict[str, torch.Tensor],
    size: int,
    shift: str | None,
    uni: torch.Tensor,
    channels: int,
    out: torch.Tensor,
    out_alpha: torch.Tensor | None,
) -> torch.Tensor:
    """Render one chunk of scene factors without noise into ``out`` (B, channels, S, S); the silhouettes
    (B, 1, S, S) go into ``out_alpha`` when given. Returns ``out``."""
    B, S = f["class"].shape[0], size
    coords = (torch.arange(S, dtype=torch.float32) + 0.5) / S
    X, Y = coords.view(1, 1, S), coords.view(1, S, 1)
    dx = X - f["x"].view(B, 1, 1)  # (B, 1, S)
    dy = Y - f["y"].view(B, 1, 1)  # (B, S, 1)
    c, s = torch.cos(f["rotation"]).view(B, 1, 1), torch.sin(f["rotation"]).view(B, 1, 1)
    inv = (1.0 / f["scale"]).view(B, 1, 1)
    u = (dx * c + dy * s) * inv  # object frame, in units of scale: (B, S, S)
    v = (dy * c - dx * s) * inv
    sdf = torch.empty(B, S, S)
    for k in range(len(CLASSES)):
        idx = (f["class"] == k).nonzero().flatten()
        if idx.numel():
            sdf.index_copy_(0, idx, _sdf(k, u.index_select(0, idx), v.index_select(0, idx)))
    # coverage with a one-pixel linear ramp across the boundary (anti-aliasing)
    alpha = sdf.mul_(-(f["scale"] * S).view(B, 1, 1)).add_(0.5).clamp_(0.0, 1.0).unsqueeze(1)
    if out_alpha is not None:
        out_alpha.copy_(alpha)

    ori = f["texture_orientation"].view(B, 1, 1)
    arg = (2 * math.pi) * f["texture_freq"].view(B, 1, 1) * ((X - 0.5) * torch.cos(ori) + (Y - 0.5) * torch.sin(ori))
    tau = torch.sin(arg + f["texture_phase"].view(B, 1, 1)).mul_(0.5).add_(0.5)  # in [0, 1]
    con = f["texture_contrast"].view(B, 1, 1)
    fg = f["colour"].view(B, 3, 1, 1) * (1.0 - con + con * tau).unsqueeze(1)

    amp, gdir = f["background_gradient"][:, 0].view(B, 1, 1), f["background_gradient"][:, 1].view(B, 1, 1)
    ramp = 1.0 + amp * ((X - 0.5) * torch.cos(gdir) + (Y - 0.5) * torch.sin(gdir))  # (B, S, S)
    bg = f["background"].view(B, 3, 1, 1) * ramp.unsqueeze(1)
    if shift == "background":  # clutter: two saturated random gratings
        cl = uni[:, _U_CLUTTER : _U_CLUTTER + 7]
        pattern = 0.0
        for j in range(2):
            fr = (2.0 + 8.0 * cl[:, 3 * j]).view(B, 1, 1)
            th = (math.pi * cl[:, 3 * j + 1]).view(B, 1, 1)
            ph = (2 * math.pi * cl[:, 3 * j + 2]).view(B, 1, 1)
            pattern = pattern + 0.25 * torch.sin(2 * math.pi * fr * (X * torch.cos(th) + Y * torch.sin(th)) + ph)
        clutter_col = hsv_to_rgb(cl[:, 6], torch.full((B,), 0.8), torch.ones(B)).view(B, 3, 1, 1)
        bg = 0.3 * bg + 0.7 * clutter_col * (0.5 + pattern).unsqueeze(1)
    if channels == 3:
        return torch.lerp(bg, fg, alpha, out=out)
    return out.copy_(to_channels(torch.lerp(bg, fg, alpha), channels))


def generate(split: str, n: int | None, seed: int, options: dict, progress: bool | None = None) -> Dataset:
    o = check_options("shapes", options, OPTIONS)
    size, channels = check_size(o["size"]), check_channels(o["channels"])
    p_texture = in_range("p_texture", o["p_texture"], 0.0, 1.0)
    cue_conflict = is_bool("cue_conflict", o["cue_conflict"])
    masks = is_bool("masks", o["masks"])
    shift = o["shift"]
    if shift not in SHIFTS:
        raise ParameterError("shift", "one of " + ", ".join(repr(s) for s in SHIFTS), shift)
    n = DEFAULT_N[split] if n is None else n

    from .._util import pbar

    n_chunks = -(-n // CHUNK)
    images = torch.empty(n, channels, size, size)
    alphas = torch.empty(n, 1, size, size) if masks else None
    facts = []
    with torch.inference_mode():
        for ch in pbar(range(n_chunks), progress=progress, desc="shapes", leave=False):
            lo, keep = ch * CHUNK, min(CHUNK, n - ch * CHUNK)
            # every chunk is rendered whole (CHUNK images), so image i never depends on n
            out_img = images[lo : lo + CHUNK] if keep == CHUNK else torch.empty(CHUNK, channels, size, size)
            out_alpha = None
            if masks:
                out_alpha = alphas[lo : lo + CHUNK] if keep == CHUNK else torch.empty(CHUNK, 1, size, size)
            uni = torch.rand(CHUNK, _N_UNIFORM, generator=chunk_generator(seed, DATASET_ID, split, 0, ch))
            f = _factors(uni, p_texture, cue_conflict, shift)
            img = _render_chunk(f, size, shift, uni, channels, out_img, out_alpha)
            noise = torch.randn(CHUNK, channels, size, size, generator=chunk_generator(seed, DATASET_ID, split, 1, ch))
            quantize_(img.addcmul_(noise, f["noise_std"].view(CHUNK, 1, 1, 1)))
            if keep < CHUNK:
                images[lo:] = img[:keep]
                if masks:
                    alphas[lo:] = out_alpha[:keep]
            facts.append({k: t[:keep] for k, t in f.items()})
    latents = {k: torch.cat([fc[k] for fc in facts]) for k in facts[0]}
    latents = {k: (t.float() if t.dtype.is_floating_point else t.long()) for k, t in latents.items()}
    if masks:
        latents["mask"] = alphas
    labels = latents["class"].clone()
    meta = {
        "split": split,
        "seed": seed,
        "n": n,
        "options": {**o, "size": size, "channels": channels},
        "num_classes": len(CLASSES),
        "classes": list(CLASSES),
        "latent_levels": LATENT_LEVELS,
        "texture_families": {
            c: {"freq": TEXTURE_FREQS[t // 5], "orientation_deg": 36.0 * (t % 5)} for t, c in enumerate(CLASSES)
        },
        "source": "procedural (maelab.data.shapes)",
        "value_range": (0.0, 1.0),
    }
    return Dataset(images=images, labels=labels, latents=latents, name="shapes", meta=meta)
