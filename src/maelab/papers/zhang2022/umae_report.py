"""The ``zhang_umae`` page's runs, their configs, and the tables and sentences it assembles from them.

Computations (each with the config of its stored result; the profile is added by the store): the MAE vs U-MAE
comparison per dataset (:func:`compare_config`, :func:`compare_run`), the raw-pixel reference
(:func:`raw_pixels_config`, :func:`raw_pixels`), the t-SNE of the first seed's features (:func:`tsne_config`,
:func:`tsne`) and the investigation of lambda, the feature and the official-code choices
(:func:`investigation`, :func:`investigate_config`, :func:`investigate_run`). The rest reads stored results and
formats them (:func:`accuracy_table`, :func:`claim_row`, :func:`dataset_summary`, :func:`investigation_table`,
:func:`legacy_text`, :func:`regime_summary`), or the settings (:func:`recipe_text`); every number in a sentence
comes from the results and the settings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from maelab import experiments, metrics, models, result_keys
from maelab._validate import ParameterError
from maelab.claims import ALPHA
from maelab.options import DryRunLimits

from . import regime as rg
from . import umae as ua
from .settings import ZhangUMAESettings

#: The columns of the accuracy table, as pairs of a metric of compare's ``runs`` and its title.
ACCURACY_COLUMNS = {
    "linear_acc": "linear probe, [CLS]",
    "linear_acc_mean": "linear probe, mean of patches",
    "knn_acc": "20-NN, [CLS]",
    "finetune_acc": "fine-tuning",
    "effective_rank": "effective rank, [CLS]",
}
#: the columns of the investigation table
INVESTIGATION_COLUMNS = (
    ("linear_acc", "linear probe [CLS]"),
    ("linear_acc_mean", "linear probe, mean pool"),
    ("effective_rank", "eff. rank [CLS]"),
    ("effective_rank_mean", "eff. rank, mean pool"),
)


def _settings(S: Any) -> ZhangUMAESettings:
    if not isinstance(S, ZhangUMAESettings):
        raise ParameterError("S", "the zhang_umae page's ZhangUMAESettings", type(S).__name__)
    return S


def _mean_se(d: np.ndarray, digits: int = 1) -> str:
    """'mean ± s.e.' of paired differences (the mean alone for one sample)."""
    return f"{d.mean():+.{digits}f}" + (f" ± {d.std(ddof=1) / np.sqrt(len(d)):.{digits}f}" if len(d) > 1 else "")


def rank_epochs(S: ZhangUMAESettings, dataset: str) -> list[int]:
    """Epochs at which the effective rank is tracked (Fig. 1c) on ``dataset``: the profile's list, cut at this
    run's length, with 0 and the last epoch always included."""
    last = ua.per_dataset(_settings(S), "epochs", dataset)
    return sorted({e for e in S.rank_epochs if e <= last} | {0, last})


def recipe_text(S: ZhangUMAESettings, labels: Mapping[str, str]) -> str:
    """The pre-training recipe of ``S`` as a phrase for the page's prose (the model, then per group of datasets
    with the same schedule: patch, tokens, epochs, training images, optimiser steps and images seen per run; a
    step is a full batch, the last partial batch dropped as the trainer does). ``labels``: dataset -> name."""
    S = _settings(S)
    m = models.SIZES[S.size] | dict(S.model_overrides)
    groups: dict[tuple, list[str]] = {}
    for ds in S.datasets:
        spec = ua.base_spec(S, ds)
        patch = dict(spec.model_overrides).get("patch_size", m["patch_size"])
        steps = spec.epochs * (spec.n_train // S.batch_size)
        key = (patch, (spec.img_size // patch) ** 2, spec.epochs, spec.n_train, steps)
        groups.setdefault(key, []).append(labels.get(ds, ds))
    parts = [
        f"on {' and '.join(names)} patch {p} ({t} tokens) for {e} epochs of {n:,} training images ({st:,} "
        f"optimiser steps of batch {S.batch_size}, {st * S.batch_size:,} images seen per run)"
        for (p, t, e, n, st), names in groups.items()
    ]
    return (
        f"a {m['depth']}-layer, {m['embed_dim']}-d ViT ({S.size}; {m['decoder_depth']}-layer, "
        f"{m['decoder_embed_dim']}-d decoder), " + "; ".join(parts)
    )


def umae_fields(S: ZhangUMAESettings, dataset: str, lam: float, **extra: Any) -> dict[str, Any]:
    """U-MAE's PretrainSpec fields on ``dataset``: ``maelab.papers.zhang2022.umae.base_spec``'s model overrides
    plus ``lambda_unif = lam`` and ``extra`` overrides."""
    over = {**dict(ua.base_spec(_settings(S), dataset).model_overrides), "lambda_unif": lam, **extra}
    return {"model": "umae", "model_overrides": tuple(sorted(over.items()))}


def variants(S: ZhangUMAESettings, dataset: str) -> dict[str, dict[str, Any]]:
    """The compared pair on ``dataset``: MAE and U-MAE with the settings' lambda."""
    return {"mae": {"model": "mae"}, "umae": umae_fields(S, dataset, S.lam)}


def _variants_config(vs: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    return {k: str(experiments.variant_config(v)) for k, v in vs.items()}


def added_seeds(S: ZhangUMAESettings, dataset: str) -> list[int]:
    """The seeds added to ``dataset``'s runs after a first analysis (``S.added_seeds``; [] where none, or where
    ``dataset`` is not one of the page's datasets: narrowing ``datasets`` keeps the default ``added_seeds`` valid)."""
    S = _settings(S)
    if dataset not in S.run_datasets:
        return []
    return [int(s) for s in S.added_seeds.get(dataset, ())]


def looks(S: ZhangUMAESettings, dataset: str) -> int:
    """The analyses ``dataset``'s runs have had: 2 where seeds were added after the first (:func:`added_seeds`),
    else 1; what the page's evidence of that dataset passes as ``looks`` (tested at ALPHA / looks)."""
    return 2 if added_seeds(S, dataset) else 1


def seeds_text(S: ZhangUMAESettings, labels: Mapping[str, str]) -> str:
    """How many seeds each dataset's rows of ``S`` are tested on, for the page's prose: ``S.seeds``, and per
    dataset with :func:`added_seeds` the added ones and the second look they make."""
    S = _settings(S)
    n = len(S.seeds)
    text = f"{n} seed{'s' if n != 1 else ''}"
    for ds in S.datasets:
        added = added_seeds(S, ds)
        if added:
            text += (
                f" ({labels.get(ds, ds)}: {n + len(added)}, seeds {', '.join(map(str, added))} added after a first "
                f"analysis of seeds {', '.join(map(str, S.seeds))}, so its rows are tested at {ALPHA:g} / 2: two looks)"
            )
    return text


def compare_config(S: ZhangUMAESettings, dataset: str, seeds: Sequence[int] | None = None) -> dict[str, Any]:
    """The config of the stored result ``compare_<dataset>`` (``seeds`` None: it reads ``S.seeds``), or of
    ``compare_<dataset>_added`` (``seeds``: :func:`added_seeds`, listed as ``seeds_added``, not under the settings'
    name ``seeds``, whose value it does not read): what :func:`compare_run` reads."""
    S = _settings(S)
    return {
        "what": "MAE vs U-MAE, paired by seed",
        "dataset": dataset,
        "spec": ua.base_spec(S, dataset).to_config(),
        "variants": _variants_config(variants(S, dataset)),
        **S.pick("rank_epochs", "finetune_epochs", "probe_cs", "probe_method"),
        **(S.pick("seeds") if seeds is None else {"seeds_added": [int(s) for s in seeds]}),
    }


def compare_run(
    S: ZhangUMAESettings,
    dataset: str,
    seeds: Sequence[int] | None = None,
    *,
    device: str = "cpu",
    progress: bool | None = None,
    caps: DryRunLimits | None = None,
) -> dict[str, Any]:
    """MAE against U-MAE on ``dataset``, every seed of ``seeds`` (None: ``S.seeds``), both fine-tuned, the test
    features of ``S.seeds[0]`` kept where it is among them (:func:`maelab.papers.zhang2022.umae.compare`)."""
    S = _settings(S)
    seeds = list(S.seeds) if seeds is None else [int(s) for s in seeds]
    return ua.compare(
        ua.base_spec(S, dataset),
        variants(S, dataset),
        seeds,
        rank_epochs=rank_epochs(S, dataset),
        finetune_variants=("mae", "umae"),
        finetune_epochs=S.finetune_epochs,
        features_seed=S.seeds[0] if S.seeds[0] in seeds else None,
        probe_cs=S.probe_cs,
        probe_method=S.probe_method,
        device=device,
        progress=progress,
        caps=caps,
    )


def raw_pixels_config(S: ZhangUMAESettings, dataset: str) -> dict[str, Any]:
    """The config of the stored result ``raw_pixels_<dataset>``: what :func:`raw_pixels` reads."""
    S = _settings(S)
    return {
        "what": "probe and 20-NN on raw pixels",
        "dataset": dataset,
        "spec": ua.base_spec(S, dataset).init_config(),
        **S.pick("probe_cs", "probe_method"),
    }


def raw_pixels(
    S: ZhangUMAESettings, dataset: str, *, device: str = "cpu", caps: DryRunLimits | None = None
) -> dict[str, Any]:
    """The reference a useful encoder should beat: the same probe and 20-NN on the raw pixels
    (:func:`maelab.papers.zhang2022.umae.raw_pixel_probe`)."""
    S = _settings(S)
    return ua.raw_pixel_probe(
        ua.base_spec(S, dataset), probe_cs=S.probe_cs, probe_method=S.probe_method, device=device, caps=caps
    )


def accuracy_table(
    res: Mapping, raw_px: Mapping, labels: Mapping[str, str], methods: Mapping[str, str]
) -> pd.DataFrame:
    """Per dataset of ``res`` (``{dataset: compare result}``): random init, MAE and U-MAE (mean ± std over seeds of
    :data:`ACCURACY_COLUMNS`, accuracies in %, "—" where not measured), then the raw-pixel row of ``raw_px``."""
    rows = []
    for ds, r in res.items():
        if ds not in raw_px:
            raise ParameterError(
                "raw_px", f"a raw-pixel result for every dataset of res ({ds!r} missing)", list(raw_px)
            )
        sm = ua.summary(r["runs"], list(ACCURACY_COLUMNS), order=["random", "mae", "umae"])
        for _, row in sm.iterrows():
            rec = {"dataset": labels[ds], "method": methods[row.variant], "seeds": int(row.seeds)}
            for m, title in ACCURACY_COLUMNS.items():
                if np.isnan(row[m]):
                    rec[title] = "—"
                else:
                    k = 1 if m == "effective_rank" else 100
                    sd = row[m + "_std"]
                    rec[title] = f"{k * row[m]:.1f}" + ("" if np.isnan(sd) else f" ± {k * sd:.1f}")
            rows.append(rec)
        rows.append(
            {
                "dataset": labels[ds],
                "method": "raw pixels (no encoder)",
                "seeds": 1,
                **{t: "—" for t in ACCURACY_COLUMNS.values()},
                ACCURACY_COLUMNS["linear_acc"]: f"{100 * raw_px[ds]['linear_acc']:.1f}",
                ACCURACY_COLUMNS["knn_acc"]: f"{100 * raw_px[ds]['knn_acc']:.1f}",
            }
        )
    return pd.DataFrame(rows)


def claim_row(label: str, dataset: str, cid: str, evidence: Any, verdict: Sequence[str]) -> dict[str, Any]:
    """One row of the paired-differences table: the claim ``cid`` of ``dataset`` (its quantity without the dataset
    suffix), its per-seed samples and mean ± s.e. (points, or dimensions for ranks and collapse) and ``verdict``
    (``(verdict, reason)`` as :meth:`maelab.book.Context.claim` returns it)."""
    if "." not in cid:
        raise ParameterError("cid", "a claim id 'paper.quantity_<dataset>'", cid)
    scale = 1 if "rank" in cid or "collapse" in cid else 100
    e = evidence
    return {
        "dataset": label,
        "quantity": cid.split(".")[1].removesuffix("_" + dataset),
        "per-seed values": ", ".join(f"{scale * x:+.2f}" for x in e.samples),
        "mean ± s.e.": f"{scale * e.value:+.2f}" + (f" ± {scale * e.sem:.2f}" if e.n > 1 else ""),
        "verdict": verdict[0],
        "reason": verdict[1],
    }


def dataset_summary(
    label: str,
    result: Mapping,
    d_lin: Sequence[float],
    d_ft: Sequence[float],
    d_rank: Sequence[float],
    learned: Any,
    raw: Mapping,
) -> str:
    """The page's sentence on one dataset: whether the learning precondition holds (``learned``: its check, with
    ``met``, ``trained``), the mean U-MAE - MAE change of the [CLS] probe, fine-tuning and effective rank (the
    per-seed samples ``d_lin``, ``d_ft``, ``d_rank`` of the dataset's claims), whether fine-tuning learned (from
    ``result``, the dataset's comparison), the same change on the mean-pooled probe (± s.e.) and MAE's [CLS] probe
    against the raw pixels (``raw``)."""
    runs = result["runs"]
    ft_unmet = ua.finetune_unmet(runs, ("mae", "umae"))
    d_mean = np.asarray(ua.paired(runs, "linear_acc_mean"))
    se_mean = f" ± {100 * d_mean.std(ddof=1) / np.sqrt(len(d_mean)):.1f}" if len(d_mean) > 1 else ""
    mae_probe = np.mean(learned.trained)
    return (
        f"{label}: the learning precondition {'holds' if learned.met else 'fails'}; the uniformity "
        f"term changes the [CLS] linear probe by {100 * np.mean(d_lin):+.1f} points, fine-tuning by "
        f"{100 * np.mean(d_ft):+.1f} points (fine-tuning learned: {'yes' if not ft_unmet else 'no'}), the "
        f"effective rank of the [CLS] features by {np.mean(d_rank):+.1f} dimensions; probed on the mean of the "
        f"patch tokens instead, the same encoders differ by {100 * d_mean.mean():+.1f}{se_mean} points "
        "(U-MAE − MAE, mean ± s.e. over seeds; no claim rests on this column). MAE's own [CLS] probe "
        f"({100 * mae_probe:.1f} %) is {'above' if mae_probe > raw['linear_acc'] else 'not above'} "
        f"the same probe on the raw pixels ({100 * raw['linear_acc']:.1f} %): learned, measured against random "
        "init, is not the same as useful."
    )


def tsne_config(S: ZhangUMAESettings, res: Mapping, seed: int) -> dict[str, Any]:
    """The config of the stored result ``tsne``: the datasets of ``res``, the config hashes of their comparisons
    (the features it embeds), ``seed`` and the t-SNE settings."""
    S = _settings(S)
    return {
        "what": "t-SNE of test [CLS] features, first seed",
        "datasets": list(res),
        "sources": [r.provenance["config_hash"] for r in res.values()],
        "seed": seed,
        **S.pick("tsne_n", "tsne_iter"),
    }


def tsne(S: ZhangUMAESettings, res: Mapping, seed: int, *, caps: DryRunLimits | None = None) -> dict[str, Any]:
    """t-SNE (:func:`maelab.metrics.tsne`) of the first seed's test [CLS] features of MAE and U-MAE per dataset of
    ``res``, on ``tsne_n`` test images drawn by ``seed`` (``idx_<ds>``; embeddings ``emb_<ds>_<variant>``)."""
    S = _settings(S)
    out = {}
    for ds, r in res.items():
        n = min(S.tsne_n, len(r["labels"]))
        idx = np.random.default_rng(seed).choice(len(r["labels"]), size=n, replace=False)
        out[f"idx_{ds}"] = idx
        for v in ("mae", "umae"):
            out[f"emb_{ds}_{v}"] = metrics.tsne(
                r[f"features_{v}"][idx], seed=seed, perplexity=min(30.0, (n - 1) / 3), max_iter=S.tsne_iter, caps=caps
            )
    return out


@dataclasses.dataclass(frozen=True)
class Investigation:
    """The runs of the investigation on ``dataset``: ``epochs`` (the settings' ``investigate_epochs`` capped at the
    comparison's length), ``short`` (shorter than the comparison: MAE and U-MAE are re-run at that length as
    references, and the legacy-choice pair is added), ``variants`` (name -> PretrainSpec fields) and ``spec``."""

    dataset: str
    epochs: int
    short: bool
    variants: dict
    spec: experiments.PretrainSpec


def investigation(S: ZhangUMAESettings) -> Investigation:
    """The investigation's runs: U-MAE with ``lam_factor`` x lambda and with the uniformity term on the mean of the
    visible tokens; when shorter than the comparison, also MAE and U-MAE and (official-code choices only) the same
    pair with maelab's legacy choices."""
    S = _settings(S)
    ids = S.investigate_dataset
    full = ua.per_dataset(S, "epochs", ids)
    epochs = full if S.investigate_epochs is None else min(S.investigate_epochs, full)
    short = epochs < full
    inv = {
        **(variants(S, ids) if short else {}),
        f"umae_x{S.lam_factor:g}": umae_fields(S, ids, S.lam * S.lam_factor),
        "umae_meanfeat": umae_fields(S, ids, S.lam, uniformity_feature="mean"),
    }
    legacy = result_keys.choice_set("legacy")
    if S.model_choices == "official" and short:
        over = {**dict(ua.base_spec(S, ids).model_overrides), **legacy}
        inv["mae_legacy"] = {"model": "mae", "model_overrides": tuple(sorted(over.items()))}
        inv["umae_legacy"] = umae_fields(S, ids, S.lam, **legacy)
    spec = dataclasses.replace(ua.base_spec(S, ids), epochs=epochs)
    return Investigation(ids, epochs, short, inv, spec)


def investigate_config(S: ZhangUMAESettings, inv: Investigation) -> dict[str, Any]:
    """The config of the stored result ``investigate_<dataset>``: what :func:`investigate_run` reads."""
    S = _settings(S)
    return {
        "what": "U-MAE variants, no fine-tuning",
        "dataset": inv.dataset,
        "spec": inv.spec.to_config(),
        "variants": _variants_config(inv.variants),
        **S.pick("seeds", "rank_epochs", "probe_cs", "probe_method"),
    }


def investigate_run(
    S: ZhangUMAESettings,
    inv: Investigation,
    *,
    device: str = "cpu",
    progress: bool | None = None,
    caps: DryRunLimits | None = None,
) -> dict[str, Any]:
    """The investigation's runs (:func:`maelab.papers.zhang2022.umae.compare`, no fine-tuning, no random init)."""
    S = _settings(S)
    return ua.compare(
        inv.spec,
        inv.variants,
        S.seeds,
        rank_epochs=[e for e in rank_epochs(S, inv.dataset) if e <= inv.epochs],
        random_init=False,
        probe_cs=S.probe_cs,
        probe_method=S.probe_method,
        device=device,
        progress=progress,
        caps=caps,
    )


def investigation_names(S: ZhangUMAESettings) -> dict[str, str]:
    """The page's name of each investigated variant."""
    S = _settings(S)
    return {
        "mae": "MAE",
        "umae": f"U-MAE, λ = {S.lam:g}, [CLS]",
        f"umae_x{S.lam_factor:g}": f"U-MAE, λ = {S.lam * S.lam_factor:g}, [CLS]",
        "umae_meanfeat": f"U-MAE, λ = {S.lam:g}, mean of visible tokens",
        "mae_legacy": "MAE, legacy choices",
        "umae_legacy": f"U-MAE, λ = {S.lam:g}, [CLS], legacy choices",
    }


def investigation_table(allruns: pd.DataFrame, names: Mapping[str, str]) -> pd.DataFrame:
    """Per variant of ``names`` present in ``allruns`` (runs tables, MAE included): the mean over seeds of
    :data:`INVESTIGATION_COLUMNS` (accuracies in %) and, but for MAE, the paired difference to MAE ± s.e."""
    if "variant" not in getattr(allruns, "columns", ()) or "mae" not in set(allruns.variant):
        raise ParameterError("allruns", "a runs table with MAE rows", type(allruns).__name__)
    rows = []
    for v in [v for v in names if v in set(allruns.variant)]:
        sub = allruns[allruns.variant == v]
        rec = {"variant": names[v]}
        for m, title in INVESTIGATION_COLUMNS:
            s = 1 if "rank" in m else 100
            if v == "mae":
                rec[title] = f"{s * sub[m].mean():.1f}"
            else:
                d = np.array(ua.paired(allruns, m, a=v, b="mae")) * s
                se = f" ± {d.std(ddof=1) / np.sqrt(len(d)):.1f}" if len(d) > 1 else ""
                rec[title] = f"{s * sub[m].mean():.1f} (Δ {d.mean():+.1f}{se})"
        rows.append(rec)
    return pd.DataFrame(rows)


def legacy_text(allruns: pd.DataFrame) -> str:
    """In words: what the official-code choices change (the legacy-choice runs against the official ones, paired
    by seed, [CLS] probe in points and effective rank), or why there are no legacy runs."""
    if not {"mae_legacy", "umae_legacy"} <= set(allruns.variant):
        return "The legacy-choice runs are made only when the investigation is shorter than the comparison."

    def change(a, b):
        return [
            _mean_se(k * np.array(ua.paired(allruns, m, a=a, b=b)))
            for m, k in (("linear_acc", 100), ("effective_rank", 1))
        ]

    (pm, rm), (pu, ru) = change("mae_legacy", "mae"), change("umae_legacy", "umae")
    (gl, _), (go, _) = change("umae_legacy", "mae_legacy"), change("umae", "mae")
    return (
        f"What the official-code choices change here: the legacy choices move MAE's [CLS] probe by {pm} "
        f"points and its effective rank by {rm}, U-MAE's by {pu} points and {ru}; U-MAE − MAE on the "
        f"[CLS] probe is {gl} points with the legacy choices and {go} with the official ones (mean ± s.e. "
        "over seeds, paired)."
    )


#: The profiles at which the page asks whether the cpu budget reaches a learned MAE (``zhang_regime``'s curves of
#: the micro ViT, priced at the trainer's throughput against the cpu budget): not at ``gpu``, whose models are
#: ViT-Tiny and whose throughput is a GPU's -- there the question and its pricing would not be this page's.
REGIME_ASKED_AT = ("smoke", "cpu")


def regime_summary(RS: Any, reg: Mapping, throughput: Any, profile: str) -> tuple[pd.DataFrame | None, str]:
    """What ``zhang_regime``'s stored curves (``reg``: ``{seed: result or None}``, ``RS``: its settings of
    ``profile``) say about reaching a learned MAE on the cpu budget: the per-seed extrapolation table
    (:func:`maelab.papers.zhang2022.regime.margin_extrapolation`) and the page's sentence, which sets the images
    every seed needs against the images the budget trains per run
    (:func:`maelab.papers.zhang2022.regime.affordable_images`) at the trainer's logged throughput.
    ``(None, why)`` when a result is missing (``reg``'s or the regime's ``throughput``, read only to tell that the
    regime page ran), and at ``gpu``, where the question is not asked (:data:`REGIME_ASKED_AT`)."""
    if profile not in REGIME_ASKED_AT:
        return None, (
            f"This question is the cpu budget's, so the {profile} profile does not ask it here: its models are "
            "ViT-Tiny, not the micro ViT `zhang_regime` follows, and whether they learned is the learning check "
            "above, seed by seed."
        )
    if throughput is None or not reg or any(r is None for r in reg.values()):
        return None, (
            f"`zhang_regime`'s {profile} results are not stored (this page was run without it), so there "
            "is nothing to show here; a smoke run or a dry run proves the pipeline only."
        )
    curves = pd.concat([reg[s]["curves"] for s in RS.seeds], ignore_index=True)
    timing = pd.concat([reg[s]["timing"] for s in RS.seeds], ignore_index=True)
    fit = rg.margin_extrapolation(curves, RS.margin)
    ips = rg.trainer_images_per_second(timing, rg.images_per_run(RS))
    runs = rg.rerun_runs(RS)
    afford = rg.affordable_images(RS.budget_minutes, ips, runs)
    need = float(fit.images_needed.max())
    table = pd.DataFrame(
        [
            {
                "seed": int(r.seed),
                f"gain at {r.last_images:,} images (points)": f"{100 * r.last_gain:+.1f}",
                "slope (points per doubling of images)": f"{100 * r.slope_per_doubling:+.2f}",
                "images for the margin (extrapolated)": "never (flat)"
                if not np.isfinite(r.images_needed)
                else f"{r.images_needed:,.0f}",
            }
            for r in fit.itertuples()
        ]
    )
    gains = ", ".join(f"{100 * g:+.1f}" for g in fit.last_gain)
    text = (
        f"On {RS.dataset}, after {rg.images_per_run(RS):,} images seen per run, MAE's [CLS] probe is above "
        f"its random init by {gains} points (seeds {', '.join(str(int(s)) for s in fit.seed)}), against "
        f"a margin of more than {100 * RS.margin:g} points in every seed. "
    )
    budget = (
        f"the {RS.budget_minutes:g}-minute cpu budget trains {afford:,.0f} images per run for the {runs} "
        f"runs of the re-run (MAE and U-MAE × {len(RS.seeds)} seeds × {len(RS.rerun_datasets)} datasets) at "
        f"the trainer's {ips:,.0f} images per second"
    )
    if not np.isfinite(need):
        text += (
            f"The gain has stopped rising in at least one seed, so no number of images is predicted to "
            f"reach the margin, while {budget}."
        )
    else:
        text += (
            f"Extrapolated, every seed clears the margin after about {need:,.0f} images per run "
            f"({rg.training_minutes(need, ips, runs):,.0f} min of training for those runs), while "
            f"{budget}: "
            + (
                f"the re-run needs {need / afford:.1f} × what the budget buys."
                if need > afford
                else "enough, by this optimistic estimate."
            )
        )
    text += (
        " Training alone is counted (probes, fine-tuning and evaluation come on top), so the budget buys fewer images "
        "than stated; the `zhang_regime` page shows the curves, the fit windows and the recipe."
    )
    return table, text


def observed_text(S: ZhangUMAESettings, dataset: str, check: Any) -> str:
    """The extrapolation against what happened on this page on ``dataset`` (``check``: the dataset's learning
    precondition, with ``trained``, ``random_init``, ``seeds`` and ``met``)."""
    S = _settings(S)
    n_train = ua.per_dataset(S, "n_train", dataset)
    seen = ua.per_dataset(S, "epochs", dataset) * (n_train // S.batch_size) * S.batch_size
    got = ", ".join(f"{100 * (a - b):+.1f}" for a, b in zip(check.trained, check.random_init))
    return (
        f" Observed on this page: after {seen:,} images per run, MAE's [CLS] probe (fitted on all "
        f"{n_train:,} training images, not the regime's subset) is above its random init "
        f"by {got} points (seeds {', '.join(str(x) for x in check.seeds)}): the learning precondition "
        + ("holds." if check.met else "fails, so the extrapolation was too optimistic.")
    )
