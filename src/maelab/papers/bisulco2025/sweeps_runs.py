"""The runs of the ``bisulco_sweeps`` page (Bisulco et al. 2025, supplement §D, Figs. 14-19) and the configs of its
stored results.

:class:`Sweep` holds the page's grids under its settings and data seed: one pre-training spec per cell
(:meth:`Sweep.spec`), the cells of the encoder x decoder depth grid and of the mask ratio x patch size grid, the
step-cost configurations, the untrained architectures; its methods compute the stored results (:meth:`Sweep.run_rows`,
:meth:`Sweep.cost_rows`, :meth:`Sweep.random_init_rows`, :meth:`Sweep.snapshot_rows`, :meth:`Sweep.cka_rows`) and
give their configs (``*_config``), each listing everything its computation reads (the profile is added by the store).
The measurements themselves are :mod:`maelab.papers.bisulco2025.sweeps`; the claims' evidence
:mod:`maelab.papers.bisulco2025.sweeps_evidence`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from maelab import experiments, profiles, result_keys
from maelab._validate import ParameterError
from maelab.options import DryRunLimits

from . import sweeps
from .settings import BisulcoSweepsSettings

CELL = ("enc", "dec", "patch", "mask", "seed")
PRETEXT = ("pretext_loss", "random_init_loss", "patch_mean_loss")  # a run's pretext check (sweeps.run_cell)


@dataclasses.dataclass(frozen=True)
class Sweep:
    """The sweeps of the settings ``S`` with ``data_seed`` (the page's seed: the data subset and the global RNG;
    the models' seeds are ``S.seeds``). Attributes derived from ``S``: ``seeds``, ``snaps`` (the snapshot epochs up
    to ``epochs``, the last included), ``enc`` / ``dec`` / ``ps`` / ``ms`` (sorted depths, patch sizes, mask ratios),
    ``key_dec``, ``p0``, ``m0`` (the key column: decoder depth, patch size and mask ratio) and ``choices`` (the
    official-code model choices of every run)."""

    S: BisulcoSweepsSettings
    data_seed: int

    def __post_init__(self) -> None:
        if not isinstance(self.S, BisulcoSweepsSettings):
            raise ParameterError("S", "the bisulco_sweeps page's BisulcoSweepsSettings", type(self.S).__name__)
        if isinstance(self.data_seed, bool) or not isinstance(self.data_seed, int):
            raise ParameterError("data_seed", "an int", self.data_seed)

    @property
    def seeds(self) -> list[int]:
        return list(self.S.seeds)

    @property
    def snaps(self) -> tuple[int, ...]:
        S = self.S
        return tuple(sorted({e for e in S.snapshot_epochs if e <= S.epochs} | {S.epochs}))

    @property
    def enc(self) -> list[int]:
        return sorted(self.S.encoder_depths)

    @property
    def dec(self) -> list[int]:
        return sorted(self.S.decoder_depths)

    @property
    def ps(self) -> list[int]:
        return sorted(self.S.patch_sizes)

    @property
    def ms(self) -> list[float]:
        return sorted(self.S.mask_ratios)

    @property
    def key_dec(self) -> int:
        return self.S.key_decoder_depth

    @property
    def p0(self) -> int:
        return self.S.patch_size

    @property
    def m0(self) -> float:
        return self.S.mask_ratio

    @property
    def choices(self) -> dict[str, Any]:
        return result_keys.choice_set(self.S.model_choices)

    # ------------------------------------------------------------------------------------------------ the runs
    def spec(self, enc: int, dec: int, patch: int, mask: float, seed: int) -> experiments.PretrainSpec:
        """One run. The key column (decoder ``key_dec`` at the base patch and mask) keeps snapshots for the
        probe-vs-epoch curves, and its first seed is also fine-tuned; identical cells of the two grids are the
        same spec (one run)."""
        S = self.S
        key = dec == self.key_dec and patch == self.p0 and mask == self.m0
        return experiments.PretrainSpec(
            dataset=S.dataset,
            n_train=S.n_train,
            n_test=S.n_test,
            img_size=S.img_size,
            channels=1,
            data_seed=self.data_seed,
            model="mae",
            size=S.size,
            model_overrides=(
                ("depth", enc),
                ("decoder_depth", dec),
                ("patch_size", patch),
                *sorted(self.choices.items()),
            ),
            epochs=S.epochs,
            batch_size=S.batch_size,
            blr=S.blr,
            warmup_epochs=1.0,
            mask_ratio=mask,
            seed=seed,
            snapshot_epochs=self.snaps if key else (),
            finetune_epochs=S.finetune_epochs if key and seed == self.seeds[0] else 0,
            finetune_blr=S.finetune_blr,
        )

    def spec_reads(self) -> dict[str, Any]:
        """What :meth:`spec` reads, as result configs list it (the key column's snapshots and fine-tuning depend on
        the key decoder, patch, mask and seeds[0]; the model choices in their canonical form)."""
        picked = self.S.pick(
            "dataset",
            "n_train",
            "n_test",
            "img_size",
            "size",
            "epochs",
            "batch_size",
            "blr",
            "snapshot_epochs",
            "finetune_epochs",
            "finetune_blr",
            "key_decoder_depth",
            "patch_size",
            "mask_ratio",
            "seeds",
        )
        return {"seed": self.data_seed, **picked, **result_keys.choices_config(self.choices), "run": sweeps.RUN}

    def depth_cells(self) -> list[tuple]:
        """The encoder x decoder depth grid (first seed), then the key column with every other seed."""
        cells = [(e, d, self.p0, self.m0, self.seeds[0]) for e in self.enc for d in self.dec]
        return cells + [(e, self.key_dec, self.p0, self.m0, s) for s in self.seeds[1:] for e in self.enc]

    def patch_mask_cells(self) -> list[tuple]:
        """The patch size x mask ratio grid at (``grid_depth``, ``grid_decoder_depth``), first seed."""
        S = self.S
        return [(S.grid_depth, S.grid_decoder_depth, p, m, self.seeds[0]) for p in self.ps for m in self.ms]

    def cost_configs(self) -> list[tuple]:
        """(enc, dec, patch, mask) whose step cost is measured: the depth grid, then the new cells of the patch x
        mask grid."""
        S = self.S
        out = [(e, d, self.p0, self.m0) for e in self.enc for d in self.dec]
        grid = [(S.grid_depth, S.grid_decoder_depth, p, m) for p in self.ps for m in self.ms]
        return out + [c for c in grid if c not in out]

    def random_init_archs(self) -> list[tuple]:
        """(enc, dec, patch, seed) of every trained encoder (the mask ratio does not change the untrained model)."""
        return sorted({(e, d, p, s) for e, d, p, _, s in self.depth_cells() + self.patch_mask_cells()})

    # ------------------------------------------------------------------------------------------------ configs
    def depth_config(self) -> dict[str, Any]:
        """The config of the stored result ``depth_grid``."""
        return {"what": "encoder x decoder depth grid", "cells": self.depth_cells(), **self.spec_reads()}

    def patch_mask_config(self) -> dict[str, Any]:
        """The config of the stored result ``patch_mask_grid``."""
        return {"what": "mask ratio x patch size grid", "cells": self.patch_mask_cells(), **self.spec_reads()}

    def random_init_config(self) -> dict[str, Any]:
        """The config of the stored result ``random_init``: the untrained models' own configs."""
        specs = [self.spec(e, d, p, self.m0, s).init_config() for e, d, p, s in self.random_init_archs()]
        return {"what": "untrained encoders, probed as the trained ones", "specs": specs}

    def cost_config(self) -> dict[str, Any]:
        """The config of the stored result ``step_costs``."""
        return {
            "what": "per-step FLOPs and min time",
            "configs": self.cost_configs(),
            **self.S.pick("size", "img_size", "seeds", "cost_batch", "cost_reps"),
            **result_keys.choices_config(self.choices),
        }

    def snapshot_config(self) -> dict[str, Any]:
        """The config of the stored result ``snapshot_probes``."""
        return {
            "what": "probe of snapshot weights",
            "snapshots": list(self.snaps),
            "encoder_depths": self.enc,
            **self.spec_reads(),
        }

    def cka_config(self) -> dict[str, Any]:
        """The config of the stored result ``cka``."""
        return {
            "what": "linear CKA, k-layer vs deepest encoder (next seed)",
            "pool": "mean",
            "encoder_depths": self.enc,
            "cka_images": self.S.cka_images,
            **self.spec_reads(),
        }

    # ------------------------------------------------------------------------------------------------ computing
    def run_rows(
        self,
        cells: Sequence[tuple],
        *,
        device: str = "cpu",
        progress: bool | None = None,
        caps: DryRunLimits | None = None,
    ) -> dict[str, pd.DataFrame]:
        """Pre-train and evaluate every cell ((enc, dec, patch, mask, seed),
        :func:`maelab.papers.bisulco2025.sweeps.evaluate_specs`): ``runs`` (one row per run: probe, k-NN, test
        reconstruction loss, trainer wall time, fine-tuned accuracy or NaN) and ``curves`` (per epoch: loss and the
        online probe, NaN where not evaluated)."""
        cells = [tuple(c) for c in cells]
        if any(len(c) != len(CELL) for c in cells):
            raise ParameterError("cells", "(enc, dec, patch, mask, seed) tuples", cells[:3])
        outs = sweeps.evaluate_specs([self.spec(*c) for c in cells], device=device, progress=progress, caps=caps)
        rows, curves = [], []
        for c, o in zip(cells, outs):
            rows.append(
                dict(
                    zip(CELL, c),
                    linear_acc=o["linear_acc"],
                    knn_acc=o["knn_acc"],
                    rec_loss=o["rec_loss"],
                    train_seconds=o["train_seconds"],
                    finetune_acc=np.nan if o["finetune_acc"] is None else o["finetune_acc"],
                    **{k: o[k] for k in PRETEXT},
                )
            )
            for h in o["history"]:
                online = np.nan if h["eval_online_acc"] is None else h["eval_online_acc"]
                curves.append(dict(zip(CELL, c), epoch=h["epoch"], loss=h["loss"], online_acc=online))
        return {"runs": pd.DataFrame(rows), "curves": pd.DataFrame(curves)}

    def cost_rows(self, configs: Sequence[tuple], *, caps: DryRunLimits | None = None) -> dict[str, pd.DataFrame]:
        """The cost of one training step (:func:`maelab.papers.bisulco2025.sweeps.step_cost`, batch ``cost_batch``,
        minimum of ``cost_reps``) of each (enc, dec, patch, mask), first seed's spec: FLOPs, wall and CPU seconds."""
        S, rows = self.S, []
        for enc, dec, patch, mask in configs:
            c = sweeps.step_cost(
                self.spec(enc, dec, patch, mask, self.seeds[0]), batch_size=S.cost_batch, reps=S.cost_reps, caps=caps
            )
            rows.append(
                {
                    "enc": enc,
                    "dec": dec,
                    "patch": patch,
                    "mask": mask,
                    "flops": c["flops"],
                    "step_wall_s": c["wall_s"],
                    "step_cpu_s": c["cpu_s"],
                }
            )
        return {"costs": pd.DataFrame(rows)}

    def random_init_rows(
        self, archs: Sequence[tuple], *, device: str = "cpu", caps: DryRunLimits | None = None
    ) -> dict[str, pd.DataFrame]:
        """archs: (enc, dec, patch, seed) -> the untrained encoder of each, probed as the trained ones are
        (:func:`maelab.experiments.random_init_evaluate`)."""
        rows = []
        for enc, dec, patch, s in archs:
            r = experiments.random_init_evaluate(self.spec(enc, dec, patch, self.m0, s), device=device, caps=caps)
            rows.append(
                {
                    "enc": enc,
                    "dec": dec,
                    "patch": patch,
                    "seed": s,
                    "linear_acc": r["linear_acc"],
                    "knn_acc": r["knn_acc"],
                }
            )
        return {"runs": pd.DataFrame(rows)}

    def snapshot_rows(
        self, *, device: str = "cpu", progress: bool | None = None, caps: DryRunLimits | None = None
    ) -> dict[str, pd.DataFrame]:
        """The probe of every snapshot of the key column, every seed and encoder depth
        (:func:`maelab.papers.bisulco2025.sweeps.snapshot_probe_accuracy`)."""
        rows = []
        for s in self.seeds:
            for e in self.enc:
                r = sweeps.snapshot_probe_accuracy(
                    self.spec(e, self.key_dec, self.p0, self.m0, s), device=device, progress=progress, caps=caps
                )
                rows += [
                    {"enc": e, "seed": s, "epoch": ep, "linear_acc": a} for ep, a in zip(r["epochs"], r["linear_acc"])
                ]
        return {"snapshots": pd.DataFrame(rows)}

    def cka_rows(self, *, device: str = "cpu", caps: DryRunLimits | None = None) -> dict[str, Any]:
        """Linear CKA between every block of each key-column encoder (mean of its patch tokens on ``cka_images``
        unmasked test images) and every block of the deepest encoder trained with the *next* seed, so that the
        deepest encoder's own row is a cross-seed comparison rather than trivially 1: ``cka`` (seeds x depths x
        max depth x deepest depth, NaN beyond an encoder's depth), ``seeds``, ``depths``."""
        seeds, enc = self.seeds, self.enc
        feats = {}
        for s in seeds:
            for e in enc:
                sp = self.spec(e, self.key_dec, self.p0, self.m0, s)
                model, _, _, te = experiments.pretrain(sp, device=device, progress=False, caps=caps)
                feats[s, e] = sweeps.layer_features(model, te.images[: self.S.cka_images], pool="mean", caps=caps)
        D = enc[-1]
        mats = np.full((len(seeds), len(enc), max(enc), D), np.nan)
        for i, s in enumerate(seeds):
            ref = feats[seeds[(i + 1) % len(seeds)], D]
            for j, e in enumerate(enc):
                mats[i, j, :e, :] = sweeps.cka_matrix(feats[s, e], ref)
        return {"cka": mats, "seeds": seeds, "depths": enc}

    # ------------------------------------------------------------------------------------------------ display
    def depth_costs(self, costs: pd.DataFrame) -> pd.DataFrame:
        """The step costs of the depth grid (base patch and mask), with ``gflops``."""
        out = costs[
            (costs.patch == self.p0) & (costs["mask"] == self.m0) & costs.enc.isin(self.enc) & costs.dec.isin(self.dec)
        ].copy()
        out["gflops"] = out.flops / 1e9
        return out

    def patch_mask_costs(self, costs: pd.DataFrame) -> pd.DataFrame:
        """The step costs of the patch x mask grid, with ``gflops``."""
        S = self.S
        out = costs[
            (costs.enc == S.grid_depth)
            & (costs.dec == S.grid_decoder_depth)
            & costs.patch.isin(self.ps)
            & costs["mask"].isin(self.ms)
        ].copy()
        out["gflops"] = out.flops / 1e9
        return out


def finetune_text(ftp: pd.DataFrame | None) -> str:
    """Per encoder depth, fine-tuned against frozen-probe accuracy in words (``ftp``: the table of
    :func:`maelab.papers.bisulco2025.sweeps.finetune_vs_probe`; None: "none")."""
    if ftp is None:
        return "none"
    return "; ".join(
        f"encoder {e}: {100 * r.finetune_acc:.1f} % vs {100 * r.linear_acc:.1f} % ({100 * r.gain:+.1f} points)"
        for e, r in ftp.iterrows()
    )


def heat(ax, df, index, columns, value, title, fmt="{:.3f}", cmap="viridis"):
    """Plotting helper: the mean of ``value`` over ``df``'s rows per (``index``, ``columns``) as an annotated heat
    map on ``ax``, with a colour bar; the annotation is dark on the bright part of the colour map."""
    import matplotlib.pyplot as plt

    t = df.pivot_table(index=index, columns=columns, values=value, aggfunc="mean")
    im = ax.imshow(t.values, cmap=cmap, aspect="auto", origin="lower")
    ax.set_xticks(range(t.shape[1]), [str(c) for c in t.columns])
    ax.set_yticks(range(t.shape[0]), [str(i) for i in t.index])
    ax.set_xlabel(columns)
    ax.set_ylabel(index)
    ax.set_title(title, fontsize=9)
    for i in range(t.shape[0]):
        for j in range(t.shape[1]):
            if np.isfinite(t.values[i, j]):
                ax.text(j, i, fmt.format(t.values[i, j]), ha="center", va="center", fontsize=7, color="w")
    plt.colorbar(im, ax=ax, fraction=0.046)
    lo, hi = np.nanmin(t.values), np.nanmax(t.values)
    for txt in ax.texts:  # dark text on the bright half of the colour map
        i, j = int(round(txt.get_position()[1])), int(round(txt.get_position()[0]))
        txt.set_color("k" if hi > lo and (t.values[i, j] - lo) / (hi - lo) > 0.6 else "w")


def learning_checks(key_checks: dict, grid_checks: Sequence, pm_checks: dict) -> dict:
    """Every learning check of the page, each trained run once (a run in several groups is keyed by its ``what``):
    the key column's, the depth grid's and the patch x mask grid's
    (:mod:`maelab.papers.bisulco2025.sweeps_evidence`)."""
    return {c.what: c for c in [*key_checks.values(), *grid_checks, *pm_checks.values()]}


def gpu_scale() -> dict[str, Any]:
    """The scale of the ``gpu`` profile the page's closing section names: model size, deepest encoder, epochs and
    training images (read from its settings, never typed)."""
    gpu = profiles.settings("bisulco_sweeps", "gpu")
    return {
        "gpu_size": gpu.size,
        "gpu_max_depth": max(gpu.encoder_depths),
        "gpu_epochs": gpu.epochs,
        "gpu_n_train": gpu.n_train,
    }
