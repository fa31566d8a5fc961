"""Theorem 2 of Kong et al. where it can be computed exactly: a linear-Gaussian hierarchical model.

Model
-----
A :class:`~maelab.papers.kong2023.theory.HierarchicalDAG` whose every node v is a vector of dimension d_v generated
linearly from its parents and its own Gaussian noise::

    v = G_v [Pa(v)_1; ...; Pa(v)_k; eps_v],   eps_v ~ N(0, I_{e_v}) independent,   G_v square and invertible,

so d_v = sum of the parents' dimensions + e_v (roots: v = G_v eps_v). Stacking every noise into one white vector E,
each node is ``v = L_v E`` with a known loading matrix L_v, and every covariance is exact: Cov(a, b) = L_a L_b^T.
This is Assumption 1 with linear g's.

The MAE and what Theorem 2 predicts here
----------------------------------------
For one fixed mask (the theorem is stated per mask), the linear MAE of Eq. 2 encodes the visible part,
``c_hat = A x_mc`` (A: k x d_mc), and decodes the masked part, ``x_m ≈ B c_hat``; the loss is
E||x_m - B A x_mc||^2 (the masked part only, as Eq. 2). Its minimiser is reduced-rank regression: with
W = Σ_m,mc Σ_mc,mc^+ (the regression of x_m on x_mc) and U_k the top-k eigenvectors of W Σ_mc,mc W^T,
``B = U_k`` and ``A = U_k^T W`` (:func:`optimal_encoder`). ``maelab.linear_mae.closed_form`` does not fit: it
averages over random masks and reconstructs the visible pixels too (Bisulco et al.'s loss).

Derivation. By Theorem 1 (see :mod:`.theory`), x_mc is a bijective linear function of its ancestors' noises, which
split into the shared ones E_S (S = latents with masked and visible descendants) and the visible-only ones; x_m
likewise with E_S and the masked-only ones; all independent. Hence E[x_m | x_mc] = F E_S: the regression W has
rank d_c := sum_{u in S} e_u (the dimension of the shared information: it equals d_v when c = {v} is one node;
several nodes of c may overlap, but jointly they span exactly E_S), F has full column rank because x_m is an
invertible function of (E_S, masked-only noises). So, **with encoder width k = d_c** (Theorem 2's "given the
dimensions"):

* ``c_hat = Q E_S`` with Q invertible, i.e. a one-to-one linear function of c: all d_c canonical correlations
  between c_hat and c equal 1 (:func:`theorem2_check` reports them; the population case is exact to rounding);
* c_hat is independent of every noise outside S -- those of s_m *and* those of the visible-only part s_mc: all
  canonical correlations with them are 0;
* with a non-shared latent *node* u (e.g. a visible-only child of c), c_hat's canonical correlations equal c's own
  (u = its ancestors' contribution + its noise); they are not 0, and the theorem does not say they are.

When a hypothesis fails: with k < d_c the encoder keeps a k-dimensional function of c (k unit correlations, the
other d_c - k directions of c lost); with k > d_c the extra outputs are identically 0 in the population (the
regression has rank d_c, nothing beyond c is learnable from Eq. 2); if a masked leaf's generator is not invertible
and drops part of c (a "projection" leaf, ``generators=`` override), the regression has rank r < d_c and only r
canonical correlations with c are 1 -- the encoder learns only what the masked part can show.

A sampled version estimates Σ from n draws (seeded) and evaluates the estimated encoder in the population.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..._validate import ParameterError, positive_int
from .theory import HierarchicalDAG, SharedInfo, shared_latents

__all__ = [
    "LinearGaussianModel",
    "make_model",
    "canonical_correlations",
    "covariance",
    "optimal_encoder",
    "EncoderFit",
    "theorem2_check",
    "sweep_theorem2",
    "theorem2_experiment",
]


@dataclasses.dataclass(frozen=True)
class LinearGaussianModel:
    """``dims``: node -> d_v; ``noise``: node -> slice of its noise in E; ``generators``: node -> G_v;
    ``loadings``: node -> L_v (d_v x D) with v = L_v E, E ~ N(0, I_D)."""

    dag: HierarchicalDAG
    dims: Mapping[str, int]
    noise: Mapping[str, slice]
    generators: Mapping[str, np.ndarray]
    loadings: Mapping[str, np.ndarray]

    @property
    def noise_dim(self) -> int:
        return max(s.stop for s in self.noise.values())

    def ordered(self, nodes: Iterable[str]) -> list[str]:
        """``nodes`` in the canonical order: observed leaves as ``dag.observed``, then latents as ``dag.latents``
        (every matrix over several nodes -- covariances, encoders -- uses this order)."""
        rank = {v: i for i, v in enumerate(tuple(self.dag.observed) + self.dag.latents)}
        return sorted(set(nodes), key=rank.__getitem__)

    def stack(self, nodes: Iterable[str]) -> np.ndarray:
        """Loadings of the concatenation of ``nodes`` (in :meth:`ordered` order), (sum d_v) x D."""
        rows = [self.loadings[v] for v in self.ordered(nodes)]
        return np.vstack(rows) if rows else np.zeros((0, self.noise_dim))

    def noise_rows(self, nodes: Iterable[str]) -> np.ndarray:
        """Loadings of the noises eps_v of ``nodes`` (rows of the identity), (sum e_v) x D."""
        eye = np.eye(self.noise_dim)
        rows = [eye[self.noise[v]] for v in self.ordered(nodes)]
        return np.vstack(rows) if rows else np.zeros((0, self.noise_dim))


def _random_invertible(rng: np.random.Generator, d_out: int, d_in: int, cond: float) -> np.ndarray:
    """U diag(s) V^T with Haar-random orthogonal U, V and singular values log-uniform in [1/sqrt(cond), sqrt(cond)]."""
    u, _ = np.linalg.qr(rng.standard_normal((d_out, d_out)))
    v, _ = np.linalg.qr(rng.standard_normal((d_in, d_in)))
    k = min(d_out, d_in)
    s = np.exp(rng.uniform(-0.5, 0.5, size=k) * np.log(cond))
    return (u[:, :k] * s) @ v[:, :k].T


def make_model(
    dag: HierarchicalDAG,
    noise_dims: int | Mapping[str, int] = 1,
    *,
    seed: int = 0,
    cond: float = 4.0,
    generators: Mapping[str, np.ndarray] | None = None,
) -> LinearGaussianModel:
    """Random invertible linear generators on ``dag``.

    Args:
        noise_dims: e_v for every node (an int for all, or a mapping; nodes left out get 1).
        seed: seeds ``numpy.random.default_rng`` (one draw per node in the DAG's order).
        cond: condition number bound of each random G_v (singular values in [cond^-1/2, cond^1/2]).
        generators: optional node -> matrix overriding G_v; it must have (parents' dims + e_v) columns and may have
            any number of rows (fewer rows than columns breaks Assumption 1's invertibility on purpose).
    """
    if isinstance(noise_dims, int):
        positive_int("noise_dims", noise_dims)
        e = {v: noise_dims for v in dag.parents}
    else:
        e = {v: positive_int(f"noise_dims[{v!r}]", int(noise_dims.get(v, 1))) for v in dag.parents}
    if not isinstance(cond, (int, float)) or isinstance(cond, bool) or not cond >= 1:
        raise ParameterError("cond", "a number >= 1", cond)
    override = dict(generators or {})
    unknown = set(override) - set(dag.parents)
    if unknown:
        raise ParameterError("generators", "a mapping over nodes of the graph", sorted(unknown))
    rng = np.random.default_rng(seed)
    noise, start = {}, 0
    for v in dag.parents:
        noise[v] = slice(start, start + e[v])
        start += e[v]
    dims, gens, loads = {}, {}, {}
    eye = np.eye(start)
    for v, ps in dag.parents.items():
        d_in = sum(dims[p] for p in ps) + e[v]
        g = _random_invertible(rng, d_in, d_in, float(cond))
        if v in override:
            g = np.asarray(override[v], dtype=np.float64)
            if g.ndim != 2 or g.shape[1] != d_in or g.shape[0] < 1:
                raise ParameterError(f"generators[{v!r}]", f"a matrix with {d_in} columns", getattr(g, "shape", g))
        gens[v] = g
        dims[v] = g.shape[0]
        loads[v] = g @ np.vstack([loads[p] for p in ps] + [eye[noise[v]]])
    return LinearGaussianModel(dag=dag, dims=dims, noise=noise, generators=gens, loadings=loads)


def covariance(model: LinearGaussianModel, a: Iterable[str], b: Iterable[str] | None = None) -> np.ndarray:
    """Exact Cov(a, b) = L_a L_b^T of the concatenated nodes (b defaults to a)."""
    la = model.stack(a)
    lb = la if b is None else model.stack(b)
    return la @ lb.T


def _inv_sqrt(c: np.ndarray, rtol: float) -> np.ndarray:
    """Whitening map W (d x r) with W^T c W = I_r on the range of c (eigenvalues > rtol * max kept)."""
    w, v = np.linalg.eigh((c + c.T) / 2)
    top = w.max() if w.size else 0.0
    keep = w > rtol * top if top > 0 else np.zeros_like(w, dtype=bool)
    return v[:, keep] / np.sqrt(w[keep])


def canonical_correlations(c_aa: Any, c_bb: Any, c_ab: Any, rtol: float = 1e-12) -> np.ndarray:
    """Canonical correlations of two random vectors from their covariances (population or sample).

    Directions of zero variance (eigenvalues <= ``rtol`` x the largest) are dropped before whitening; the result
    has min(d_a, d_b) entries in decreasing order, padded with zeros when a or b is rank-deficient.
    """
    c_aa, c_bb, c_ab = (np.atleast_2d(np.asarray(m, dtype=np.float64)) for m in (c_aa, c_bb, c_ab))
    if c_aa.shape[0] != c_aa.shape[1] or c_bb.shape[0] != c_bb.shape[1] or c_ab.shape != (c_aa.shape[0], c_bb.shape[0]):
        raise ParameterError(
            "c_ab",
            f"a ({c_aa.shape[0]}, {c_bb.shape[0]}) cross-covariance between square covariances",
            (c_aa.shape, c_bb.shape, c_ab.shape),
        )
    n = min(c_aa.shape[0], c_bb.shape[0])
    wa, wb = _inv_sqrt(c_aa, rtol), _inv_sqrt(c_bb, rtol)
    out = np.zeros(n)
    if wa.shape[1] and wb.shape[1]:
        s = np.linalg.svd(wa.T @ c_ab @ wb, compute_uv=False)
        out[: min(n, s.size)] = np.clip(s[:n], 0.0, 1.0)
    return out


@dataclasses.dataclass(frozen=True)
class EncoderFit:
    """The optimal linear MAE for one mask: ``A`` (k x d_mc) encoder, ``B`` (d_m x k) decoder, ``eigvals`` all
    eigenvalues of W Σ_mc W^T in decreasing order (the loss reduction of each encoder direction)."""

    A: np.ndarray
    B: np.ndarray
    eigvals: np.ndarray
    k: int


def _sample_cov(model: LinearGaussianModel, n: int, seed: int) -> np.ndarray:
    """Sample covariance (centred, divided by n) of all observed leaves from n draws, in ``model.ordered`` order."""
    rng = np.random.default_rng(seed)
    lx = model.stack(model.dag.observed)
    xs = rng.standard_normal((n, model.noise_dim)) @ lx.T
    xs -= xs.mean(axis=0)
    return xs.T @ xs / n


def optimal_encoder(
    model: LinearGaussianModel, visible: Iterable[str], k: int, *, n_samples: int | None = None, seed: int = 0
) -> EncoderFit:
    """Minimiser of E||x_m - B A x_mc||^2 (Eq. 2 for one fixed mask, linear E and D) by reduced-rank regression.
    A's columns follow ``model.stack(visible)`` (leaves in ``dag.observed`` order), B's rows ``model.stack(masked)``.

    With ``n_samples`` None the exact population covariances are used; otherwise sample covariances of
    ``n_samples`` draws seeded by ``seed``.
    """
    info = shared_latents(model.dag, visible)
    positive_int("k", k)
    obs = model.ordered(model.dag.observed)  # the row order of model.stack(...) and of A's columns
    sizes = [model.dims[x] for x in obs]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    idx = {x: np.arange(offsets[i], offsets[i + 1]) for i, x in enumerate(obs)}
    iv = np.concatenate([idx[x] for x in obs if x in info.visible])
    im = np.concatenate([idx[x] for x in obs if x in info.masked])
    if n_samples is None:
        lx = model.stack(obs)
        cov = lx @ lx.T
    else:
        cov = _sample_cov(model, positive_int("n_samples", n_samples), seed)
    s_vv, s_mv = cov[np.ix_(iv, iv)], cov[np.ix_(im, iv)]
    if k > len(im):
        raise ParameterError("k", f"at most the masked dimension {len(im)}", k)
    w = s_mv @ np.linalg.pinv(s_vv, rcond=1e-12, hermitian=True)
    lam, u = np.linalg.eigh(w @ s_vv @ w.T)
    order = np.argsort(lam)[::-1]
    lam, u = lam[order], u[:, order]
    uk = u[:, :k]
    return EncoderFit(A=uk.T @ w, B=uk, eigvals=lam, k=k)


def _cca_rows(la: np.ndarray, lb: np.ndarray) -> np.ndarray:
    return canonical_correlations(la @ la.T, lb @ lb.T, la @ lb.T)


def theorem2_check(
    model: LinearGaussianModel,
    visible: Iterable[str],
    k: int | None = None,
    *,
    n_samples: int | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Fit :func:`optimal_encoder` for the mask and compare c_hat = A x_mc with the true latents, in the population.

    ``k`` defaults to d_c (sum of the noise dimensions over S, the dimension of the shared information).
    Returns ``c`` (sorted nodes), ``d_c``, ``k``, ``cc_c`` (canonical correlations of c_hat with c's nodes),
    ``cc_s_m`` / ``cc_s_mc`` (with the noises of the masked-only / visible-only nodes), ``cc_nodes`` (node ->
    correlations of c_hat with each latent outside S) and ``cc_nodes_c`` (the same for c itself, which Theorem 2
    says c_hat matches), ``rank_gap`` = eigvals[d_c] / eigvals[0] (0 when the regression has rank d_c) and
    ``info`` (:class:`~maelab.papers.kong2023.theory.SharedInfo`), ``frac_c_recovered`` = sum(cc_c^2) / d_c (1 when
    c_hat determines c).
    """
    info: SharedInfo = shared_latents(model.dag, visible)
    if not info.c:
        raise ParameterError("visible", "a mask whose two parts share a latent (c is empty here)", sorted(visible))
    d_c = sum(model.noise[u].stop - model.noise[u].start for u in info.shared)
    k = d_c if k is None else k
    fit = optimal_encoder(model, info.visible, k, n_samples=n_samples, seed=seed)
    l_hat = fit.A @ model.stack(info.visible)  # c_hat = A x_mc = (A L_mc) E
    l_c = model.stack(info.c)
    outside = [z for z in model.dag.latents if z not in info.shared]
    lam = fit.eigvals
    return {
        "c": sorted(info.c),
        "d_c": d_c,
        "k": k,
        "cc_c": (cc_c := _cca_rows(l_hat, l_c)),
        "frac_c_recovered": float((cc_c**2).sum() / d_c),
        "cc_s_m": _cca_rows(l_hat, model.noise_rows(info.s_m)),
        "cc_s_mc": _cca_rows(l_hat, model.noise_rows(info.s_mc)),
        "cc_nodes": {z: _cca_rows(l_hat, model.loadings[z]) for z in outside},
        "cc_nodes_c": {z: _cca_rows(l_c, model.loadings[z]) for z in outside},
        "rank_gap": float(lam[d_c] / lam[0]) if lam.size > d_c and lam[0] > 0 else 0.0,
        "info": info,
    }


def sweep_theorem2(
    model: LinearGaussianModel,
    masks: Mapping[str, Iterable[str]],
    seeds: Sequence[int],
    n_samples: Sequence[int | None],
):
    """One row per (mask, n_samples, seed): min canonical correlation with c, max with s_m and s_mc noises.

    ``n_samples`` None is the exact population case (column ``fit`` = "population", ``n_samples`` = 0; its rows
    repeat over seeds, which changes nothing there). Returns a pandas DataFrame.
    """
    import pandas as pd

    rows = []
    for name, vis in masks.items():
        for n in n_samples:
            for s in seeds:
                r = theorem2_check(model, vis, n_samples=n, seed=int(s))
                rows.append(
                    {
                        "mask": name,
                        "fit": "population" if n is None else "sampled",
                        "n_samples": 0 if n is None else int(n),
                        "seed": int(s),
                        "c": " ".join(r["c"]),
                        "d_c": r["d_c"],
                        "min_cc_c": float(r["cc_c"].min()),
                        "max_cc_s_m": float(r["cc_s_m"].max(initial=0.0)),
                        "max_cc_s_mc": float(r["cc_s_mc"].max(initial=0.0)),
                        "rank_gap": r["rank_gap"],
                    }
                )
    return pd.DataFrame(rows)


def theorem2_experiment(
    side: int, noise_dim: int, mask_ratio: float, n_masks: int, seeds: Sequence[int], n_samples: Sequence[int | None]
):
    """The page's Theorem-2 table: for each seed, a random linear-Gaussian model (seeded) on
    ``theory.quadtree_dag(side)`` and on ``theory.figure4_tree()``, checked (:func:`sweep_theorem2`) on
    ``n_masks`` random masks of ``mask_ratio`` (unit 1, seeded) and on Figure 4's three masks. Returns a pandas
    DataFrame with a ``model`` column ("quadtree" / "figure4") and ``sweep_theorem2``'s columns."""
    import pandas as pd
    import torch

    from .theory import figure4_masks, figure4_tree, quadtree_dag, sample_visible

    frames = []
    for s in seeds:
        q = quadtree_dag(side)
        g = torch.Generator().manual_seed(int(s))
        masks = {f"random{i}": v for i, v in enumerate(sample_visible(q, mask_ratio, 1, n_masks, g))}
        for name, dag, mk in (("quadtree", q, masks), ("figure4", figure4_tree(), figure4_masks())):
            model = make_model(dag, noise_dim, seed=int(s))
            df = sweep_theorem2(model, mk, seeds=[int(s)], n_samples=n_samples)
            frames.append(df.assign(model=name))
    return pd.concat(frames, ignore_index=True)
