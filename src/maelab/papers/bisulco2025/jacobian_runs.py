"""The nonlinear part of the ``bisulco_jacobians`` page: ViT MAEs trained on photo crops, their masked-pixel Jacobians.

**Paper-specific:** Bisulco et al.'s Figs. 5, 6 and 13A-B. :class:`NonlinearRuns` trains one MAE per (mask ratio,
patch size, training seed) (:func:`maelab.experiments.pretrain`, grey crops of the training photos, raw-pixel
targets) and measures the Jacobians of masked output pixels on held-out crops (:func:`jacobian_stats`); each model
is one stored result (:meth:`NonlinearRuns.result`), and :meth:`NonlinearRuns.sweeps` gathers the page's sweeps
(the main model with its snapshots, the mask ratios, the AE at m = 0, the patch sizes). The trivial predictor that
gates them (:func:`.locality.visible_mean_loss`) is :meth:`NonlinearRuns.trivial_loss`.

The shared zoo's unit-1 MAEs get the same Jacobian spreads (:func:`zoo_spreads`, stored under
:func:`zoo_config`, with the zoo's fingerprint in its key). :func:`sweep_table` is the page's table of the sweeps.

A result's config lists every setting its computation reads; changing one recomputes that result only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch

from maelab import result_keys, zoo
from maelab._validate import ParameterError, divides, in_range, positive_int
from maelab.experiments import PretrainSpec, load_data, pretrain
from maelab.prefetch import prefetch

from . import jacobians as J
from . import locality as loc
from .evidence import seed_summary
from .settings import BisulcoJacobiansSettings

__all__ = [
    "TRIVIAL_MASKS",
    "JAC_BATCH",
    "MASK_SEED",
    "jacobian_stats",
    "NonlinearRuns",
    "sweep_table",
    "zoo_config",
    "zoo_spreads",
]

#: Masks per training crop of the visible-mean predictor's Monte-Carlo loss (the learning precondition).
TRIVIAL_MASKS = 8
#: Images per batch of :func:`.locality.masked_pixel_spreads` on the zoo's models.
JAC_BATCH = 500
#: Seed offset of the zoo's mask generator, which is seeded with MASK_SEED + training seed (as the page's own MAEs).
MASK_SEED = 10_000


def _settings(S: Any) -> BisulcoJacobiansSettings:
    if not isinstance(S, BisulcoJacobiansSettings):
        raise ParameterError("S", "the bisulco_jacobians page's settings (BisulcoJacobiansSettings)", type(S).__name__)
    return S


def jacobian_stats(model, m: float, images: torch.Tensor, seed: int, S: BisulcoJacobiansSettings, device) -> dict:
    """Jacobians of ``n_pixels`` masked output pixels per image (one mask per image, generator ``10,000 + seed``).

    Returns per image the mean ``spread`` (half-mass radius, fraction ``q``) and the ``baseline`` (the same of the
    uniform-over-visible map), the mean ``profile`` over visible pixels up to ``img_size // 2``, and for the figures
    the first three images' first Jacobian (``example``), its pixel and visible mask.
    """
    S = _settings(S)
    seed = positive_int("seed", seed, minimum=0)
    out = J.masked_pixel_jacobians(
        model, images.to(device), m, S.n_pixels, generator=torch.Generator().manual_seed(MASK_SEED + seed)
    )
    jac, pix, vis = out["jac"], out["pixels"], out["visible"]
    n, P = pix.shape[:2]
    flat, cen = jac.reshape(n * P, *jac.shape[2:]), pix.reshape(-1, 2).numpy()
    vis_r = vis.repeat_interleave(P, 0)
    return {
        "spread": loc.map_spread(flat, cen, S.q).reshape(n, P).mean(1),
        "baseline": loc.uniform_visible_spread(vis_r, cen, S.q).reshape(n, P).mean(1),
        "profile": loc.mean_profile(flat, cen, S.img_size // 2, where=vis_r > 0),
        "example": jac[:3, 0, :].sum(1).numpy(),
        "example_pixel": pix[:3, 0].numpy(),
        "example_visible": vis[:3].numpy(),
    }


class NonlinearRuns:
    """The page's ViT MAEs: specs, the training data (loaded once, on first use: every model reads the same crops),
    training with Jacobians, and their stored results through ``ctx`` (a :class:`maelab.book.Context`).

    ``ctx`` gives the device, progress flag and dry-run caps the training runs with, and ``ctx.load_or_compute``.
    """

    def __init__(self, ctx: Any, S: BisulcoJacobiansSettings):
        self.ctx, self.S = ctx, _settings(S)
        self._data = None

    def _check(self, m: float, p: int, seed: int) -> None:
        """Bad (m, p, seed) fail here in one line, before any training (the values themselves are kept as given:
        they are part of the stored config)."""
        in_range("m", m, 0.0, 1.0, high_open=True)
        divides("p", p, self.S.img_size, "img_size")
        positive_int("seed", seed, minimum=0)

    def spec(self, m: float, p: int, seed: int, snapshots=()) -> PretrainSpec:
        """The pre-training spec of the MAE at mask ratio ``m`` (0: the AE), patch ``p``, training ``seed``."""
        self._check(m, p, seed)
        S = self.S
        return PretrainSpec(
            dataset="natural",
            n_train=S.n_train,
            n_test=S.n_images,
            img_size=S.img_size,
            channels=1,
            model="mae",
            size=S.model_size,
            model_overrides=(
                ("patch_size", p),
                ("norm_pix_loss", False),
                *sorted(result_keys.choice_set(S.model_choices).items()),
            ),
            epochs=S.epochs,
            batch_size=S.batch_size,
            blr=S.blr,
            warmup_epochs=S.warmup_epochs,
            mask_ratio=m,
            seed=seed,
            snapshot_epochs=tuple(snapshots),
        )

    def data(self):
        """(train, test) crops, loaded on CPU at the first call (the specs differ only in what data does not read)."""
        if self._data is None:
            self._data = load_data(self.spec(self.S.mask_ratio, self.S.patch_size, 0), "cpu", progress=False)
        return self._data

    def run(self, m: float, p: int, seed: int, snapshots=()) -> dict:
        """Train one MAE and measure it: :func:`jacobian_stats` on the first ``n_images`` test crops, the training
        loss per epoch (``loss``), the training time, the example images and, for ``snapshots``, the spreads,
        baselines and first example at each saved epoch (``snap_*``)."""
        S, ctx = self.S, self.ctx
        tr, te = self.data()
        spec = self.spec(m, p, seed, snapshots)
        model, res, _, _ = pretrain(
            spec, device=str(ctx.device), progress=ctx.progress, train_data=tr, test_data=te, caps=ctx.caps
        )
        images = te.images[: S.n_images]
        out = jacobian_stats(model, m, images, seed, S, ctx.device)
        out["loss"] = [h["loss_rec"] for h in res.history]
        out["train_seconds"] = float(sum(h["seconds"] for h in res.history))
        out["example_image"] = images[:3, 0].numpy()
        if snapshots:
            snap = {"epochs": sorted(res.snapshots)}
            stats = []
            for e in snap["epochs"]:
                model.load_state_dict(res.snapshots[e])
                stats.append(jacobian_stats(model, m, images, seed, S, ctx.device))
            snap["spread"] = np.stack([s["spread"] for s in stats])
            snap["baseline"] = np.stack([s["baseline"] for s in stats])
            snap["example"] = np.stack([s["example"][0] for s in stats])
            out.update({f"snap_{k}": v for k, v in snap.items()})
        return out

    def config(self, m: float, p: int, seed: int, snapshots=()) -> dict[str, Any]:
        """The config of one model's stored result: what :meth:`spec`, :meth:`data` and :func:`jacobian_stats` read,
        with the model choices in canonical form (legacy values absent)."""
        self._check(m, p, seed)
        S = self.S
        return {
            "what": "masked-pixel Jacobians",
            "m": m,
            "p": p,
            "snapshots": list(snapshots),
            "train_seed": seed,
            **S.pick(
                "n_train",
                "n_images",
                "img_size",
                "model_size",
                "epochs",
                "batch_size",
                "blr",
                "warmup_epochs",
                "n_pixels",
                "q",
            ),  # fmt: skip
            **result_keys.choices_config(result_keys.choice_set(S.model_choices)),
        }

    @staticmethod
    def name(m: float, p: int, seed: int) -> str:
        """The store name of one model's result."""
        return f"mae_m{round(m * 100):03d}_p{p}_s{seed}"

    def result(self, m: float, p: int, seed: int, snapshots=()):
        """One model's stored result (``mae_m<100 m>_p<p>_s<seed>``), computed by :meth:`run` when not stored."""
        return self.ctx.load_or_compute(
            self.name(m, p, seed),
            self.config(m, p, seed, snapshots),
            lambda: self.run(m, p, seed, snapshots),
            seeds=[seed],
        )

    def sweeps(self) -> dict[str, Any]:
        """Every model of the page, by training seed: ``main`` (``mask_ratio``, ``patch_size``, with the snapshots),
        ``by_m`` (mask ratio -> results; ``mask_ratios`` and ``mask_ratio`` at ``patch_size``), ``ae`` (m = 0),
        ``by_p`` (patch size -> results; ``patch_sizes`` and ``patch_size`` at ``mask_ratio``), and the sorted
        ``ms`` / ``ps`` of the two sweeps. The main model is shared by both sweeps (stored once)."""
        S = self.S
        M0, P0, seeds = S.mask_ratio, S.patch_size, S.seeds
        ms, ps = sorted(set(S.mask_ratios) | {M0}), sorted(set(S.patch_sizes) | {P0})
        # on a lent GPU a pool of workers pre-trains the pending models side by side (maelab.prefetch), in the
        # order of the loops below
        cells = [(M0, P0, s, tuple(S.snapshot_epochs)) for s in seeds]
        cells += [(m, P0, s, ()) for m in ms if m != M0 for s in seeds] + [(0.0, P0, s, ()) for s in seeds]
        cells += [(M0, p, s, ()) for p in ps if p != P0 for s in seeds]
        workers = self.ctx.options.train_workers
        pending = [c for c in cells if workers > 1 and self.ctx.is_pending(self.name(*c[:3]), self.config(*c))]
        prefetch([self.spec(*c) for c in pending], device=str(self.ctx.device), caps=self.ctx.caps, workers=workers)
        main = {s: self.result(M0, P0, s, S.snapshot_epochs) for s in seeds}
        by_m = {m: (dict(main) if m == M0 else {s: self.result(m, P0, s) for s in seeds}) for m in ms}
        ae = {s: self.result(0.0, P0, s) for s in seeds}
        by_p = {p: (dict(main) if p == P0 else {s: self.result(M0, p, s) for s in seeds}) for p in ps}
        return {"main": main, "by_m": by_m, "ae": ae, "by_p": by_p, "ms": ms, "ps": ps}

    def trivial_configs(self) -> list[tuple[float, int]]:
        """The (m, p) of every model of :meth:`sweeps`, the AE included: where the trivial predictor is scored."""
        S = self.S
        ms, ps = sorted(set(S.mask_ratios) | {S.mask_ratio}), sorted(set(S.patch_sizes) | {S.patch_size})
        return sorted({(m, S.patch_size) for m in ms} | {(S.mask_ratio, p) for p in ps} | {(0.0, S.patch_size)})

    def trivial_loss(self):
        """The stored loss of the visible-mean predictor (:func:`.locality.visible_mean_loss`, ``TRIVIAL_MASKS``
        masks per crop) on the training crops at each of :meth:`trivial_configs`: ``loss`` keyed ``m<m>_p<p>``."""
        S, cfgs = self.S, self.trivial_configs()

        def compute():
            tr, _ = self.data()
            return {
                "loss": {
                    f"m{m:g}_p{p}": loc.visible_mean_loss(tr.images, m, p, n_masks=TRIVIAL_MASKS, caps=self.ctx.caps)
                    for m, p in cfgs
                }
            }

        config = {
            "what": "loss of the visible-mean predictor on the training crops",
            "configs": cfgs,
            "n_masks": TRIVIAL_MASKS,
            **S.pick("n_train", "img_size"),
        }
        return self.ctx.load_or_compute("trivial_loss", config, compute)


def sweep_table(sweeps: dict, S: BisulcoJacobiansSettings) -> pd.DataFrame:
    """The page's table of :meth:`NonlinearRuns.sweeps`: per model of the mask-ratio sweep, the AE and the
    patch-size sweep, the mean spread and its s.e. (:func:`.evidence.seed_summary`), the uniform baseline, the
    final training loss (mean over seeds) and spread / baseline."""
    S = _settings(S)
    if not isinstance(sweeps, dict) or {"by_m", "ae", "by_p", "ms", "ps"} - set(sweeps):
        raise ParameterError("sweeps", "the dict of NonlinearRuns.sweeps", type(sweeps).__name__)

    def row(sweep, m, p, res):
        mu, se, _ = seed_summary(res)
        return {
            "sweep": sweep,
            "m": m,
            "p": p,
            "spread": mu,
            "s.e.": se,
            "uniform baseline": seed_summary(res, "baseline")[0],
            "final train loss": float(np.mean([r["loss"][-1] for r in res.values()])),
        }

    rows = [row("mask ratio", m, S.patch_size, sweeps["by_m"][m]) for m in sweeps["ms"]]
    rows.append(row("AE", 0.0, S.patch_size, sweeps["ae"]))
    rows += [row("patch size", S.mask_ratio, p, sweeps["by_p"][p]) for p in sweeps["ps"]]
    nl = pd.DataFrame(rows)
    nl["spread / baseline"] = nl["spread"] / nl["uniform baseline"]
    return nl


def zoo_config(ZM: Any, S: BisulcoJacobiansSettings) -> dict[str, Any]:
    """The config of the stored result ``zoo_jacobians``: the zoo's fingerprint (:func:`maelab.zoo.fingerprint` of
    the measured zoo ``ZM``), the batch, the mask seed and the settings :func:`zoo_spreads` reads."""
    S = _settings(S)
    return {
        "what": "masked-pixel Jacobian spreads of the shared zoo's unit-1 MAEs at their training ratios, own checks",
        "zoo": zoo.fingerprint(ZM),
        "jac_batch": JAC_BATCH,
        "mask_seed": MASK_SEED,
        **S.pick("n_pixels", "q"),
    }


def zoo_spreads(ZS: Any, ZM: Any, S: BisulcoJacobiansSettings, device, caps=None) -> dict[str, pd.DataFrame]:
    """Masked-pixel Jacobian spreads of the zoo's unit-1 MAEs (settings ``ZS``, measured seeds ``ZM``), each at its
    training ratio, on the zoo's scored test images (:func:`.locality.masked_pixel_spreads`, ``n_pixels`` per image,
    generator ``MASK_SEED + seed``): ``spreads`` with one row per (seed, ratio), the mean over images and its s.d.;
    one part per seed (:func:`maelab.parts.concat_frames`)."""
    S = _settings(S)

    def row(model, r: float, s: int, tr, te) -> dict:
        images = te.images[: ZS.n_score]  # the test images the zoo's losses and scores are computed on
        out = loc.masked_pixel_spreads(
            model, images, r, S.n_pixels, q=S.q, seed=MASK_SEED + s, batch_size=JAC_BATCH, caps=caps
        )
        return {
            "ratio": r,
            "n_images": len(out["spread"]),
            "spread": float(out["spread"].mean()),
            "spread_sd": float(out["spread"].std(ddof=1)),
            "baseline": float(out["baseline"].mean()),
        }

    return zoo.measure_checkpoints(ZM, "spreads", row, device, caps=caps)
