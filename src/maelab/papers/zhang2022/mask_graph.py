"""Zhang, Wang & Wang (NeurIPS 2022), "How Mask Matters": patch distances against the mask ratio (Fig. 2b/c), the
exact mask graph and augmentation graph of a tiny image world (Sec. 3.1-3.2, Theorems 4.1-4.2), and the
collapsed-encoder floor of Theorem 3.6.

**Paper-specific:** every function here measures or enumerates an object defined by Zhang et al. (their patch
distances, their mask and augmentation graphs, their collapse bound); the masking it relies on is the general
:mod:`maelab.masking`.

**Patch distances (Fig. 2b/c).** The paper: "We evaluate the distance between two images by calculating the
average l2 distance between every pair of patches." Which patches and which pairs is not said, so every reading is
a pair of options here:

* ``pairs="all"``: every patch of image a against every patch of image b (n x n pairs); the two images are masked
  *independently* (as MAE draws one mask per image). ``pairs="matched"``: patch i of a against patch i of b (n
  pairs) under one *shared* mask -- the situation of two views joined in the augmentation graph, which share
  their target positions.
* ``fill=None``: only visible patches enter (the unmasked views x1 of Eq. 1). ``fill=v``: the masked image as
  displayed, removed patches set to the constant v (0 = black), and all n patches of each image enter.

Closed forms over the masks (fixed-size masks, ``n1 = int(n (1 - rho))`` kept, q = n1 / n; d_ij = ||a_i - b_j||,
r_i = ||a_i - v||, s_j = ||b_j - v||):

* all, drop:     E = mean_ij d_ij                                              (independent of rho)
* all, fill v:   E = mean_ij [q^2 d_ij + q (1 - q) (r_i + s_j)]                (both removed: distance 0)
* matched, drop: E = mean_i d_ii                                               (independent of rho)
* matched, fill: E = q mean_i d_ii + (1 - q) * 0

So under every reading the *expected* distance is affine in q per image pair, and the ratio of the mean
intra-class to the mean inter-class distance is a ratio of two affine functions of q: constant, or monotone in q.
No reading of this kind has an interior minimum (the paper's "sweet spot") in expectation;
:func:`expected_pair_distance` returns these closed forms and :func:`masked_pair_distance` the sampled values.

**Exact mask graph.** Tiny images of ``n`` patches, each patch a symbol of a small alphabet; every image, mask
and view is enumerated. Views carry their positions (``positional=True``, as a ViT with position embeddings sees
them): x1 = (visible positions, their symbols), x2 = (removed positions, their symbols). Edge weight
w(x1, x2) = sum over images and masks producing the pair of p(image) P(mask) (Sec. 3.1). The augmentation graph
A = A_M^T D_2^{-1} A_M, i.e. ``A(x1, x1') = E_{x2} M(x1|x2) M(x1'|x2)`` (Sec. 3.2); it has the degrees D_1. We report
the eigenvalues of the normalised A-bar = D_1^{-1/2} A D_1^{-1/2} (HaoChen et al.'s convention, eigenvalues in
[0, 1]; the paper writes "eigenvalues of A"). With ``positional=False`` views are multisets of symbols (an encoder
blind to positions): views from different masks can then coincide.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import torch

from maelab import masking
from maelab._validate import ParameterError, in_range, positive_int
from maelab.options import DryRunLimits

# ----------------------------------------------------------------------------------------------- Fig. 2b/c


def _check_pairs_fill(pairs: str, fill) -> None:
    if pairs not in ("all", "matched"):
        raise ParameterError("pairs", "one of 'all', 'matched'", pairs)
    if fill is not None and (isinstance(fill, bool) or not isinstance(fill, (int, float)) or not math.isfinite(fill)):
        raise ParameterError("fill", "None (visible patches only) or a finite number", fill)


def _check_tokens(a: torch.Tensor, b: torch.Tensor) -> None:
    if a.ndim != 3 or a.shape != b.shape:
        raise ParameterError("tokens", "two tensors of the same shape (P, L, D)", (tuple(a.shape), tuple(b.shape)))


def sample_pairs(labels: torch.Tensor, n_pairs: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``n_pairs`` intra-class and ``n_pairs`` inter-class image pairs, each (n_pairs, 2) of indices.

    Intra: a uniform random image, then a uniform random *other* image of its class. Inter: a uniform random image,
    then a uniform random image of another class. Classes therefore enter in proportion to their size.
    """
    positive_int("n_pairs", n_pairs)
    labels = torch.as_tensor(labels).long().cpu()
    n = len(labels)
    classes = labels.unique()
    if len(classes) < 2:
        raise ParameterError("labels", "labels of at least two classes", classes.tolist())
    members = {int(c): torch.nonzero(labels == c).flatten() for c in classes}
    if min(len(m) for m in members.values()) < 2:
        raise ParameterError("labels", "at least two images per class", {c: len(m) for c, m in members.items()})
    first = torch.randint(0, n, (2 * n_pairs,), generator=generator)
    u = torch.rand(2 * n_pairs, generator=generator)
    intra, inter = [], []
    for k in range(n_pairs):
        i = int(first[k])
        m = members[int(labels[i])]
        pos = int(torch.nonzero(m == i)[0])
        t = min(int(u[k] * (len(m) - 1)), len(m) - 2)  # uniform over the other len(m) - 1 members
        intra.append((i, int(m[t if t < pos else t + 1])))
        i2 = int(first[n_pairs + k])
        others = torch.nonzero(labels != labels[i2]).flatten()
        inter.append((i2, int(others[min(int(u[n_pairs + k] * len(others)), len(others) - 1)])))
    return torch.tensor(intra), torch.tensor(inter)


def masked_pair_distance(
    a: torch.Tensor,
    b: torch.Tensor,
    vis_a: torch.Tensor,
    vis_b: torch.Tensor,
    pairs: str = "all",
    fill: float | None = None,
) -> torch.Tensor:
    """Average l2 patch distance of P image pairs under given masks (one reading of Zhang et al.'s Fig. 2b).

    Args:
        a, b: (P, L, D) patch tokens of the two images of each pair.
        vis_a, vis_b: (P, L) 1 = visible, 0 = removed (for ``pairs="matched"`` pass the same mask twice).
        pairs: ``"all"`` (every patch of a with every patch of b) or ``"matched"`` (same position).
        fill: None (only visible patches enter) or the value removed patches are set to.
    Returns:
        (P,) distances (NaN where a pair has no patch pair to average, e.g. matched with disjoint masks).
    """
    _check_pairs_fill(pairs, fill)
    _check_tokens(a, b)
    va, vb = vis_a.to(a.dtype), vis_b.to(a.dtype)
    if fill is not None:
        a = a * va[..., None] + fill * (1 - va[..., None])
        b = b * vb[..., None] + fill * (1 - vb[..., None])
        va, vb = torch.ones_like(va), torch.ones_like(vb)
    if pairs == "all":
        d = torch.cdist(a, b)  # (P, L, L)
        w = va[:, :, None] * vb[:, None, :]
    else:
        d = (a - b).norm(dim=-1)  # (P, L)
        w = va * vb
    num = (w * d).flatten(1).sum(1)
    den = w.flatten(1).sum(1)
    return torch.where(den > 0, num / den.clamp_min(1e-30), torch.full_like(num, float("nan")))


def expected_pair_distance(
    a: torch.Tensor, b: torch.Tensor, mask_ratio: float, pairs: str = "all", fill: float | None = None
) -> torch.Tensor:
    """Closed-form expectation of :func:`masked_pair_distance` over random fixed-size masks (module docstring).

    ``pairs="all"``: independent masks for a and b; ``"matched"``: one shared mask. ``int(L (1 - mask_ratio))``
    patches are kept per image, as in the official MAE code. Returns (P,).
    """
    _check_pairs_fill(pairs, fill)
    _check_tokens(a, b)
    in_range("mask_ratio", mask_ratio, 0.0, 1.0, high_open=True)
    length = a.shape[1]
    if masking.num_keep(length, mask_ratio) == 0:
        raise ParameterError("mask_ratio", f"a ratio keeping at least one of the {length} patches", mask_ratio)
    q = masking.num_keep(length, mask_ratio) / length
    if pairs == "all":
        d = torch.cdist(a, b).mean((1, 2))
        if fill is None:
            return d
        r = (a - fill).norm(dim=-1).mean(1)
        s = (b - fill).norm(dim=-1).mean(1)
        return q * q * d + q * (1 - q) * (r + s)
    d = (a - b).norm(dim=-1).mean(1)
    return d if fill is None else q * d


def _fast_masked_distance(dist, r, s, va, vb, pairs: str, fill) -> torch.Tensor:
    """:func:`masked_pair_distance` from precomputed patch distances: ``dist`` (P, L, L) for "all" or (P, L) for
    "matched", ``r``/``s`` (P, L) distances of a's / b's patches to the fill value (unused when fill is None)."""
    if pairs == "all":
        if fill is None:
            num = torch.einsum("pi,pij,pj->p", va, dist, vb)
            return num / (va.sum(1) * vb.sum(1))
        length = va.shape[1]
        num = (
            torch.einsum("pi,pij,pj->p", va, dist, vb)
            + (va * r).sum(1) * (1 - vb).sum(1)
            + (1 - va).sum(1) * (vb * s).sum(1)
        )
        return num / length**2
    if fill is None:
        w = va * vb
        den = w.sum(1)
        return torch.where(den > 0, (w * dist).sum(1) / den.clamp_min(1e-30), torch.full_like(den, float("nan")))
    both = va * vb
    return (both * dist + va * (1 - vb) * r + (1 - va) * vb * s).mean(1)


def distance_curves(
    tokens: torch.Tensor,
    labels: torch.Tensor,
    mask_ratios,
    *,
    n_pairs: int,
    n_mask_draws: int,
    seed: int,
    readings: dict[str, dict],
    caps: DryRunLimits | None = None,
) -> dict[str, Any]:
    """Intra- and inter-class patch distances against the mask ratio for one seed (one sample of image pairs).

    Args:
        tokens: (N, L, D) patchified images; labels: (N,).
        mask_ratios: the rho grid.
        n_pairs: intra- and inter-class pairs each.
        n_mask_draws: random masks per pair and ratio for the sampled (Monte Carlo) curves.
        seed: seeds the pairs and the masks.
        readings: name -> dict(pairs=..., fill=...) (see :func:`masked_pair_distance`).
        caps: a dry run's (:class:`maelab.options.DryRunLimits`): at most ``mc_samples`` pairs and 2 mask draws.
    Returns:
        A dict with, per reading name, arrays of shape ``(len(mask_ratios),)`` -- ``<name>__exact_intra``,
        ``<name>__exact_inter`` (closed form over masks, mean over pairs), ``<name>__mc_intra``, ``<name>__mc_inter``
        (mean over pairs and mask draws) -- and ``pairs_intra`` / ``pairs_inter`` (the index pairs used).
    """
    positive_int("n_mask_draws", n_mask_draws)
    if caps is not None:  # dry run: a few Monte-Carlo samples
        n_pairs, n_mask_draws = min(n_pairs, caps.mc_samples), min(n_mask_draws, 2)
    ratios = [in_range(f"mask_ratios[{i}]", r, 0.0, 1.0, high_open=True) for i, r in enumerate(mask_ratios)]
    for opt in readings.values():
        _check_pairs_fill(opt.get("pairs", "all"), opt.get("fill"))
    length = tokens.shape[1]
    for r in ratios:
        if masking.num_keep(length, r) == 0:
            raise ParameterError("mask_ratios", f"ratios keeping at least one of the {length} patches", r)
    g = torch.Generator().manual_seed(int(seed))
    intra, inter = sample_pairs(labels, n_pairs, g)
    tokens = tokens.double()
    out: dict[str, Any] = {"pairs_intra": intra.numpy(), "pairs_inter": inter.numpy()}
    for kind, idx in (("intra", intra), ("inter", inter)):
        a, b = tokens[idx[:, 0]], tokens[idx[:, 1]]
        cross, matched = torch.cdist(a, b), (a - b).norm(dim=-1)
        exact = {name: [] for name in readings}
        mc = {name: [] for name in readings}
        d_all, d_matched = cross.mean((1, 2)), matched.mean(1)
        rs = {
            name: ((a - opt["fill"]).norm(dim=-1).mean(1) + (b - opt["fill"]).norm(dim=-1).mean(1))
            for name, opt in readings.items()
            if opt.get("fill") is not None
        }
        for rho in ratios:
            q = masking.num_keep(length, rho) / length
            for name, opt in readings.items():  # the closed forms of expected_pair_distance, from cached distances
                pairs, fill = opt.get("pairs", "all"), opt.get("fill")
                if pairs == "all":
                    e = d_all if fill is None else q * q * d_all + q * (1 - q) * rs[name]
                else:
                    e = d_matched if fill is None else q * d_matched
                exact[name].append(float(e.mean()))
            draws = {name: [] for name in readings}
            for _ in range(n_mask_draws):
                _, ma, _ = masking.random_masking(torch.zeros(len(a), length, 1), rho, g)
                _, mb, _ = masking.random_masking(torch.zeros(len(a), length, 1), rho, g)
                va, vb = (1 - ma).double(), (1 - mb).double()
                for name, opt in readings.items():
                    pairs, fill = opt.get("pairs", "all"), opt.get("fill")
                    r = (a - fill).norm(dim=-1) if fill is not None else None
                    s = (b - fill).norm(dim=-1) if fill is not None else None
                    vb_used = va if pairs == "matched" else vb  # matched: one shared mask
                    dist = cross if pairs == "all" else matched
                    draws[name].append(_fast_masked_distance(dist, r, s, va, vb_used, pairs, fill))
            for name in readings:
                mc[name].append(float(torch.nanmean(torch.stack(draws[name]))))
        for name in readings:
            out[f"{name}__exact_{kind}"] = np.array(exact[name])
            out[f"{name}__mc_{kind}"] = np.array(mc[name])
    return out


def affine_ratio_extremum(c_intra: tuple[float, float], c_inter: tuple[float, float]) -> str:
    """Where R(q) = (u0 + u1 q) / (w0 + w1 q) is extremal on an interval: it is a Moebius map, so R is constant
    (u0 w1 == u1 w0) or strictly monotone; it never has an interior extremum. Returns "constant", "increasing" or
    "decreasing" (sign of dR/dq = (u1 w0 - u0 w1) / (w0 + w1 q)^2 where the denominator is positive)."""
    (u0, u1), (w0, w1) = c_intra, c_inter
    det = u1 * w0 - u0 * w1
    scale = max(abs(u1 * w0), abs(u0 * w1), 1e-300)
    if abs(det) <= 1e-12 * scale:
        return "constant"
    return "increasing" if det > 0 else "decreasing"


# ----------------------------------------------------------------------------------------------- exact graphs


def tiny_world(
    side: int = 3, noise: float = 0.1, texture: float = 0.8, class_prior: tuple[float, float] = (0.55, 0.45)
) -> dict[str, Any]:
    """Every ``side x side`` image over the symbols {0 (background), 1, 2}, one symbol per patch, with its
    probability and label.

    Class 0 draws a full row (uniform), class 1 a full column, painted with symbol 1 or 2; the symbol ("texture")
    agrees with the class (class c -> symbol c + 1) with probability ``texture``. Then each patch is replaced by a
    uniformly chosen *other* symbol with probability ``noise``. p(x) = sum_c prior_c p(x | c); the label
    y(x) = argmax_c prior_c p(x | c) (the Bayes label; the unequal prior breaks the symmetric ties).
    Returns dict(images (M, n) int, probs (M,), labels (M,), class_joint (M, 2) = prior_c p(x | c), n_symbols).
    """
    positive_int("side", side, minimum=2)
    in_range("noise", noise, 0.0, 2 / 3, low_open=True, high_open=True)
    in_range("texture", texture, 0.0, 1.0)
    if len(class_prior) != 2 or abs(sum(class_prior) - 1) > 1e-9 or min(class_prior) <= 0:
        raise ParameterError("class_prior", "two positive probabilities summing to 1", class_prior)
    n = side * side
    imgs = np.array(list(itertools.product((0, 1, 2), repeat=n)), dtype=np.int64)  # (3^n, n)
    joint = np.zeros((len(imgs), 2))
    for c in range(2):
        for k in range(side):
            shape = np.zeros((side, side), dtype=bool)
            if c == 0:
                shape[k, :] = True
            else:
                shape[:, k] = True
            for sym, p_sym in ((c + 1, texture), (2 - c, 1 - texture)):
                proto = np.where(shape.ravel(), sym, 0)
                flips = (imgs != proto[None]).sum(1)
                joint[:, c] += class_prior[c] / side * p_sym * (noise / 2) ** flips * (1 - noise) ** (n - flips)
    return {"images": imgs, "probs": joint.sum(1), "labels": joint.argmax(1), "class_joint": joint, "n_symbols": 3}


def _view_codes(imgs: np.ndarray, positions: tuple[int, ...], positional: bool, n_symbols: int) -> np.ndarray:
    sub = imgs[:, list(positions)]
    if positional:
        base = n_symbols ** np.arange(len(positions))
        return (sub * base[None]).sum(1)
    counts = np.stack([(sub == s).sum(1) for s in range(n_symbols)], 1)  # multiset = symbol counts
    base = (len(positions) + 1) ** np.arange(n_symbols)
    return (counts * base[None]).sum(1)


def mask_graph(
    images: np.ndarray, probs: np.ndarray, n_visible: int, *, positional: bool = True, n_symbols: int | None = None
) -> dict[str, Any]:
    """The bipartite mask graph of Sec. 3.1 for masks keeping exactly ``n_visible`` of the n patches.

    Every mask (all C(n, n_visible), equally likely, as MAE's fixed-count masking) and every image is enumerated;
    w(x1, x2) = sum p(image) P(mask) over the (image, mask) giving the views (x1, x2). With positional views the
    graph is a disjoint union of one bipartite block per mask (views of different masks never coincide), so A_M is
    stored block by block: ``blocks`` is a list of dense (N2_b, N1_b) arrays (one block when not positional).
    Also returned: per (mask, image) the global x1 index ``x1_of`` (n_masks, M), ``p_mask``, ``n_masks``.
    """
    images = np.asarray(images)
    probs = np.asarray(probs, dtype=np.float64)
    if images.ndim != 2 or len(images) != len(probs):
        raise ParameterError("images", "an (M, n) integer array matching probs (M,)", images.shape)
    if abs(probs.sum() - 1) > 1e-9 or (probs < 0).any():
        raise ParameterError("probs", "a probability vector (sums to 1)", float(probs.sum()))
    n = images.shape[1]
    if isinstance(n_visible, bool) or not isinstance(n_visible, int) or not 1 <= n_visible <= n - 1:
        raise ParameterError("n_visible", f"an integer in [1, {n - 1}] (both views non-empty)", n_visible)
    s = int(images.max()) + 1 if n_symbols is None else n_symbols
    masks = list(itertools.combinations(range(n), n_visible))
    p_mask = 1.0 / len(masks)
    codes = []
    for vis in masks:
        hid = tuple(i for i in range(n) if i not in vis)
        codes.append((_view_codes(images, vis, positional, s), _view_codes(images, hid, positional, s)))
    blocks, x1_of, offset = [], np.zeros((len(masks), len(images)), dtype=np.int64), 0
    groups = [[i] for i in range(len(masks))] if positional else [list(range(len(masks)))]
    for grp in groups:
        c1 = np.concatenate([codes[i][0] for i in grp])
        c2 = np.concatenate([codes[i][1] for i in grp])
        u1, i1 = np.unique(c1, return_inverse=True)
        u2, i2 = np.unique(c2, return_inverse=True)
        blk = np.zeros((len(u2), len(u1)))
        np.add.at(blk, (i2, i1), p_mask * np.tile(probs, len(grp)))
        blocks.append(blk)
        x1_of[grp] = (i1 + offset).reshape(len(grp), -1)
        offset += len(u1)
    return {
        "blocks": blocks,
        "x1_of": x1_of,
        "p_mask": p_mask,
        "n_masks": len(masks),
        "n1": offset,
        "n2": sum(b.shape[0] for b in blocks),
    }


def dense_mask_graph(graph: dict[str, Any]) -> np.ndarray:
    """The full (N2, N1) A_M (block diagonal) of :func:`mask_graph`, for small graphs and tests."""
    out = np.zeros((graph["n2"], graph["n1"]))
    r = c = 0
    for b in graph["blocks"]:
        out[r : r + b.shape[0], c : c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    return out


def augmentation_graph(a_m: np.ndarray) -> np.ndarray:
    """A = A_M^T D_2^{-1} A_M: ``A(x1, x1') = sum_x2 M(x2) M(x1|x2) M(x1'|x2)`` (Sec. 3.2); row sums are d_{x1}."""
    d2 = a_m.sum(1)
    return a_m.T @ (a_m / np.where(d2 > 0, d2, 1.0)[:, None])


def normalized_eigenvalues(graph: dict[str, Any]) -> np.ndarray:
    """Eigenvalues (descending, N1 of them) of A-bar = D_1^{-1/2} A D_1^{-1/2}: the squared singular values of
    D_2^{-1/2} A_M D_1^{-1/2}, block by block, padded with zeros."""
    eig = []
    for b in graph["blocks"]:
        d1, d2 = b.sum(0), b.sum(1)
        norm = b / np.sqrt(np.outer(np.where(d2 > 0, d2, 1.0), np.where(d1 > 0, d1, 1.0)))
        # squared singular values = eigenvalues of the smaller Gram matrix (the rest are zeros)
        gram = norm.T @ norm if norm.shape[1] <= norm.shape[0] else norm @ norm.T
        ev = np.clip(np.linalg.eigvalsh(gram), 0.0, None)
        e = np.zeros(b.shape[1])
        e[: len(ev)] = ev
        eig.append(e)
    return np.sort(np.concatenate(eig))[::-1]


def residual_eigen_sum(eigenvalues: np.ndarray, k: int) -> float:
    """Sum_{i > k} lambda_i^2 over eigenvalues sorted in descending order (Theorem 4.2)."""
    positive_int("k", k, minimum=0)
    lam = np.sort(np.asarray(eigenvalues, dtype=np.float64))[::-1]
    return float((lam[k:] ** 2).sum())


def label_error(world: dict[str, Any], graph: dict[str, Any]) -> float:
    """alpha = E_{x, x1} 1[y(x1) != y(x)] (Theorem 4.1) with y(x1) the Bayes label of the view: the class c
    maximising P(y(x) = c | x1); ties are broken uniformly at random (their expected error is counted)."""
    probs, labels = world["probs"], world["labels"]
    x1_of, p_mask = graph["x1_of"], graph["p_mask"]
    n_cls = int(labels.max()) + 1
    table = np.zeros((graph["n1"], n_cls))  # P(x1, y(x) = c)
    w = p_mask * np.broadcast_to(probs[None], x1_of.shape)
    lab = np.broadcast_to(labels[None], x1_of.shape)
    np.add.at(table, (x1_of.ravel(), lab.ravel()), w.ravel())
    best = table.max(1, keepdims=True)
    winners = np.isclose(table, best, rtol=1e-12, atol=0.0)
    p_right = winners / winners.sum(1, keepdims=True)  # P(guess = c | x1)
    return float(1.0 - (w * p_right[x1_of, lab]).sum())


def graph_summary(world: dict[str, Any], n_visible: int, ks, positional: bool = True) -> dict[str, Any]:
    """For one mask size: eigenvalues of A-bar, residual sums for each k, number of connected components of G_A
    (multiplicity of eigenvalue 1, tolerance 1e-9), node counts, label error alpha, and a check that each block of
    A = A_M^T D_2^{-1} A_M has row sums d_1."""
    g = mask_graph(world["images"], world["probs"], n_visible, positional=positional, n_symbols=world.get("n_symbols"))
    lam = normalized_eigenvalues(g)
    # row sums of A = A_M^T D_2^{-1} A_M, without forming A: A 1 = A_M^T D_2^{-1} (A_M 1) = A_M^T 1 = d_1
    deg = max(
        float(np.abs(b.T @ (b.sum(1) / np.where(b.sum(1) > 0, b.sum(1), 1.0)) - b.sum(0)).max()) for b in g["blocks"]
    )
    return {
        "eigenvalues": lam,
        "residual": [residual_eigen_sum(lam, k) for k in ks],
        "components": int((lam > 1 - 1e-9).sum()),
        "n1": g["n1"],
        "n2": g["n2"],
        "alpha": label_error(world, g),
        "degree_check": deg,
        "n_masks": g["n_masks"],
    }


# ----------------------------------------------------------------------------------------------- Theorem 3.6


def masked_target_variance(targets: torch.Tensor) -> float:
    """Var(x2) in the loss's units: the mean over patch positions i and patch values of the variance over images
    of target[:, i] (population variance, ddof=0). With masks independent of the images, this is the expected
    MAE loss (mean squared error over removed patches) of the best predictor that ignores image content but
    knows the mask (Theorem 3.6's fully collapsed encoder with an optimal decoder): for every mask it predicts the
    per-position mean. ``targets``: (N, L, D)."""
    if targets.ndim != 3:
        raise ParameterError("targets", "a 3-D tensor (N, L, D)", tuple(targets.shape))
    return float(targets.double().var(dim=0, unbiased=False).mean())


def position_blind_variance(targets: torch.Tensor) -> float:
    """Loss of the best single constant patch (same prediction at every position): variance around the global mean
    patch; >= :func:`masked_target_variance` (a decoder that also forgets positions)."""
    t = targets.double().reshape(-1, targets.shape[-1])
    return float(t.var(dim=0, unbiased=False).mean())


def fit_collapsed_decoder(
    model,
    train_images: torch.Tensor,
    test_images: torch.Tensor,
    *,
    mask_ratio: float,
    steps: int,
    batch_size: int,
    lr: float,
    seed: int,
    eval_draws: int = 4,
    caps: DryRunLimits | None = None,
) -> dict[str, Any]:
    """Train an MAE decoder behind a fully collapsed encoder: the encoder output is one learned constant tensor c
    (shared by all images; the decoder still gets the mask positions through its position embeddings and mask
    token, as in MAE). Adam on (c, decoder); returns the test reconstruction loss (the model's own loss, masked
    patches), averaged over ``eval_draws`` seeded mask draws, and the training-loss trace (every 10 steps).
    ``caps``: a dry run's (:class:`maelab.options.DryRunLimits`): ``train_steps`` steps, ``eval_images`` test
    images."""
    positive_int("steps", steps)
    positive_int("batch_size", batch_size)
    in_range("lr", lr, 0.0, low_open=True)
    if caps is not None:  # dry run: a couple of steps, a few test images
        steps, test_images = min(steps, caps.train_steps), test_images[: caps.eval_images]
    torch.manual_seed(seed)
    dev = next(model.parameters()).device
    n_keep = masking.num_keep(model.num_patches, mask_ratio)
    c = torch.nn.Parameter(torch.zeros(1, 1 + n_keep, model.embed_dim, device=dev))
    dec = [p for n, p in model.named_parameters() if n.startswith(("decoder", "mask_token")) and p.requires_grad]
    opt = torch.optim.Adam([c, *dec], lr=lr)
    g = torch.Generator().manual_seed(seed)

    def loss_of(x, gen):
        mask, ids_restore, _ = model.sample_mask(len(x), dev, mask_ratio, gen)
        pred = model.decode(c.expand(len(x), -1, -1), ids_restore)["pred"]
        return model.reconstruction_loss(pred, model.target(x), mask)

    trace = []
    model.train()
    for step in range(steps):
        idx = torch.randint(0, len(train_images), (min(batch_size, len(train_images)),), generator=g)
        loss = loss_of(train_images[idx].to(dev), g)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == steps - 1:
            trace.append(loss.item())
    model.eval()
    with torch.no_grad():
        ge = torch.Generator().manual_seed(seed + 1)
        test = float(np.mean([float(loss_of(test_images.to(dev), ge)) for _ in range(eval_draws)]))
    return {"test_loss": test, "trace": np.array(trace)}
