"""The zoo's store records: one per trained entry (:func:`~maelab.zoo.entry`, measured by
:func:`~maelab.zoo.measure_entry`), per seed's random init (:func:`~maelab.zoo.random_entry`) and the raw-pixel
probe (:func:`~maelab.zoo.raw_pixel_entry`); :func:`~maelab.zoo.compute` makes the missing ones,
:func:`~maelab.zoo.load_entries` reads them as the pages do, :func:`~maelab.zoo.fingerprint` keys what is derived
from them."""

from __future__ import annotations

from functools import partial
from typing import Any

import torch

from .. import evaluate, metrics, store
from .. import reconstruction as rc
from .._util import Phases, resolve_device
from .._validate import ParameterError, one_of
from ..experiments import PretrainSpec, load_data, pretrain
from ..options import DryRunLimits, RunOptions, cap
from ..prefetch import compute_records, prefetch
from ..profiles import PROFILE_NAMES
from .grid import N_EXAMPLES, NOTEBOOK, POOLS, RANDOM_INIT, ZooSettings, configs, entry_name, label, random_init, spec


def _probes(model, tr, te, S: ZooSettings, seed: int, caps: DryRunLimits | None = None) -> dict[str, float]:
    out: dict[str, float] = {}
    dev = next(model.parameters()).device
    for pool in POOLS:
        ftr = evaluate.extract_features(model, tr.images, pool=pool, progress=False, caps=caps)
        fte = evaluate.extract_features(model, te.images, pool=pool, progress=False, caps=caps)
        lp = evaluate.linear_probe(
            ftr, tr.labels, fte, te.labels, method=S.probe_method, seed=seed, blas_threads=1, device=dev, caps=caps
        )
        out[f"linear_acc_{pool}"] = float(lp.test_acc)
        out[f"knn_acc_{pool}"] = float(evaluate.knn_accuracy(ftr, tr.labels, fte, te.labels, caps=caps))
        out[f"effective_rank_{pool}"] = float(metrics.effective_rank(fte))
    return out


def measure_entry(
    model,
    reference,
    tr,
    te,
    S: ZooSettings,
    ratio: float,
    seed: int,
    caps: DryRunLimits | None = None,
    phases: Phases | None = None,
) -> dict[str, float]:
    """The measurements of one entry (see the module docstring): probes per pool, then
    :func:`maelab.reconstruction.score_model` against ``reference`` (random init, same unit) at ``ratio``.
    ``caps``: a dry run's (:class:`maelab.options.DryRunLimits`); ``phases``: the caller's phase clock (``Phases``
    of ``maelab._util``), marked after the probes and after the scoring.

    Every forward pass, and the ``logreg_torch`` probes' fits (float64), run where ``model`` is, the page's device
    (SSIM, FSIM, PSNR and MSE are computed on the CPU from the returned images, masks come from CPU generators and
    the probes are solved to the same tolerance, so the device changes rounding only). On a lent GPU the scoring's
    ``4 * n_score`` passes and the probes' Newton Hessians thus run on the card, not on a pool worker's one CPU
    thread, where they took several times an entry's training on the card (before any gpu record of the zoo
    existed, the models were moved to the CPU for the scoring and the probes were fitted there)."""
    clock = phases if phases is not None else Phases()
    out = _probes(model, tr, te, S, seed, caps)
    clock.mark("probes, 20-NN and ranks of both pools")
    images = te.images[: cap(S.n_score, caps, "eval_images")]
    out.update(rc.score_model(model, reference, images, ratio, seed=seed, fsim=S.fsim, caps=caps))
    shown = images[:N_EXAMPLES]
    out["examples_pred"] = rc.reconstruct(model, shown)["pred"].numpy()
    out["examples_pasted"] = rc.reconstruct(model, shown, ratio, generator=torch.Generator().manual_seed(seed))[
        "pasted"
    ].numpy()
    clock.mark("reconstruction scores, losses and examples")
    return out


def _job_key(S: ZooSettings, job) -> tuple[str, dict]:
    """(store name, config) of a job of ``_jobs``: what :func:`entry` & co. store and :func:`load_entries` reads."""
    kind, seed, ratio, unit = job
    measure = {"what": "zoo entry", **S.pick("probe_method", "n_score", "fsim")}
    if kind == "entry":
        return entry_name(ratio, unit, seed), {**measure, "spec": spec(S, ratio, unit, seed).to_config()}
    base = spec(S, S.unit_ratio, 1, S.seeds[0] if seed is None else seed)
    if kind == "random":
        return f"random_s{seed}", {**measure, "random_init": base.init_config(), "ratio": S.unit_ratio}
    return "raw_pixels", {"what": "raw-pixel probe", "probe_method": S.probe_method, "data": base.init_config()}


def _store(name: str, config: dict, fn, options: RunOptions, seed, device) -> store.Result:
    def guarded():  # only reached when the record must be computed
        cuda = getattr(device, "type", str(device)) == "cuda"
        if options.profile == "gpu" and not cuda and options.dry_run is None and not options.allow_cpu:
            raise ParameterError(
                "device", "a CUDA device for the gpu profile's zoo (or run options with allow_cpu=True)", device
            )
        return fn()

    kw = dict(profile=options.profile, seeds=seed, device=device, recompute=options.recompute, options=options)
    return store.load_or_compute(name, config, guarded, notebook=NOTEBOOK, **kw)


def _options(options: RunOptions) -> RunOptions:
    if not isinstance(options, RunOptions):
        raise ParameterError("options", "a maelab.options.RunOptions (a page passes ctx.options)", options)
    one_of("options.profile", options.profile, PROFILE_NAMES)
    return options


def entry(S: ZooSettings, ratio: float, unit: int, seed: int, options: RunOptions):
    """The store record of one trained entry (pre-trained or loaded from its checkpoint, then measured), in the run
    ``options`` make (profile, device, recompute, results root, dry-run caps: :class:`maelab.options.RunOptions`)."""
    options = _options(options)
    s, dev, caps = spec(S, ratio, unit, seed), resolve_device(options.device), options.caps

    def compute() -> dict:
        clock = Phases()
        tr, te = load_data(s, dev, progress=False)
        model, res, _, _ = pretrain(s, device=str(dev), progress=False, train_data=tr, test_data=te, caps=caps)
        clock.mark("pre-training")
        row = measure_entry(model.eval(), random_init(S, seed, dev, unit=unit), tr, te, S, ratio, seed, caps, clock)
        clock.report(f"[zoo] {entry_name(ratio, unit, seed)}")
        out = {"ratio": float(ratio), "unit": int(unit), "seed": int(seed), **row, "history": list(res.history)}
        return {**out, "train_seconds": float(sum(h["seconds"] for h in res.history))}

    return _store(*_job_key(S, ("entry", seed, ratio, unit)), compute, options, seed, dev)


def random_entry(S: ZooSettings, seed: int, options: RunOptions):
    """The store record of the random-init encoder of ``seed``, measured as the entries (masked losses at
    ``unit_ratio``, unit 1; it is its own reference)."""
    options = _options(options)
    s, dev, caps = spec(S, S.unit_ratio, 1, seed), resolve_device(options.device), options.caps

    def compute() -> dict:
        tr, te = load_data(s, dev, progress=False)
        clock, m = Phases(), random_init(S, seed, dev)
        row = measure_entry(m, random_init(S, seed, dev), tr, te, S, S.unit_ratio, seed, caps, clock)
        clock.report(f"[zoo] random_s{seed}")
        return {"ratio": float("nan"), "unit": 1, "seed": int(seed), **row, "train_seconds": 0.0}

    return _store(*_job_key(S, ("random", seed, None, None)), compute, options, seed, dev)


def raw_pixel_entry(S: ZooSettings, options: RunOptions):
    """The store record of the linear probe and 20-NN on raw pixels (flattened images): the floor every encoder's
    probe is read against."""
    options = _options(options)
    s, dev, caps = spec(S, S.unit_ratio, 1, S.seeds[0]), resolve_device(options.device), options.caps

    def compute() -> dict:
        tr, te = load_data(s, dev, progress=False)
        ftr, fte = tr.images.flatten(1).float().cpu(), te.images.flatten(1).float().cpu()
        lp = evaluate.linear_probe(
            ftr, tr.labels, fte, te.labels, method=S.probe_method, seed=0, blas_threads=1, device=dev, caps=caps
        )
        knn = evaluate.knn_accuracy(ftr, tr.labels, fte, te.labels, caps=caps)
        return {"linear_acc": float(lp.test_acc), "knn_acc": float(knn)}

    return _store(*_job_key(S, ("raw", None, None, None)), compute, options, None, dev)


def _jobs(S: ZooSettings):
    for seed in S.seeds:
        yield ("random", seed, None, None)
        for ratio, unit in configs(S):
            yield ("entry", seed, ratio, unit)
    yield ("raw", None, None, None)


def _run(job, S, options: RunOptions):
    kind, seed, ratio, unit = job
    if kind == "entry":
        return entry(S, ratio, unit, seed, options)
    return random_entry(S, seed, options) if kind == "random" else raw_pixel_entry(S, options)


def fingerprint(S: ZooSettings) -> dict[str, str]:
    """``{store name: config hash}`` of every trained and random-init entry: what a result derived from the zoo's
    models (e.g. a page's own measurement of their checkpoints) lists in its config, so a changed zoo recomputes it."""
    return {name: store.config_hash(cfg) for name, cfg in (_job_key(S, j) for j in _jobs(S) if j[0] != "raw")}


def _pending(S: ZooSettings, jobs, options: RunOptions) -> list[tuple[tuple, str]]:
    """(job, store name) of the ``jobs`` whose record is not stored under its config (every one with recompute)."""
    keyed = [(job, *_job_key(S, job)) for job in jobs]
    stored = {n for _, n, c in keyed if store.matches(NOTEBOOK, n, options.profile, c, options)}
    return [(j, n) for j, n, _ in keyed if options.recompute or n not in stored]


def pending_specs(S: ZooSettings, options: RunOptions) -> list[PretrainSpec]:
    """The specs of the trained entries :func:`compute` would compute (not stored, or ``options.recompute``)."""
    return [spec(S, j[2], j[3], j[1]) for j, _ in _pending(S, [j for j in _jobs(S) if j[0] == "entry"], options)]


def compute(S: ZooSettings, options: RunOptions, *, raw_pixels: bool = False, recompute: bool = False):
    """Every entry of the zoo (and its random-init baselines; the raw-pixel probe with ``raw_pixels``), each
    loaded from the store or computed and stored, in the run ``options`` make (a page passes ``ctx.options``:
    profile, device, results root, dry-run caps): ``{store name: maelab.store.Result}`` in ``_jobs`` order. What a
    page calls before it reads the zoo (:func:`load_entries`, with ``root=ctx.root``); with ``train_workers`` >= 2 a
    pool first computes the pending records whole (:func:`maelab.prefetch.compute_records`).

    ``options.recompute`` is not passed on: a page run with ``--recompute`` recomputes that page's results, not the
    shared zoo that every other page reads too (on 2 CPU cores its 48 records are hours of training, and a zoo
    re-made on another processor is another set of models). ``recompute=True`` recomputes it; so does
    ``python -m maelab.zoo run --recompute``."""
    options = _options(options).replace(recompute=bool(recompute))
    if options.train_workers > 1:  # on a lent GPU a pool computes the pending entries whole (recompute: trains)
        dev, kw = str(resolve_device(options.device)), dict(caps=options.caps, workers=options.train_workers)
        jobs = [] if options.recompute else _pending(S, [j for j in _jobs(S) if j[0] != "raw" or raw_pixels], options)
        if not compute_records({n: partial(_run, j, S, options) for j, n in jobs}, device=dev, **kw):
            prefetch(pending_specs(S, options), device=dev, **kw)
    out = {}
    for job in _jobs(S):
        if job[0] != "raw" or raw_pixels:
            r = _run(job, S, options)
            out[r.name] = r
    return out


def load_entries(S: ZooSettings, profile: str, root=None) -> dict[str, Any]:
    """The stored zoo as read by the pages, computing nothing that is missing: ``{"entries": DataFrame (one row per
    trained and random-init entry, ``model`` = :func:`label` or :data:`~maelab.zoo.grid.RANDOM_INIT`, its scalar
    measurements), "raw_pixels": dict | None, "missing": [names], "examples": {(model, seed): {"examples_pred": array,
    "examples_pasted": array}}}``. A record whose config differs from ``S``'s counts as missing."""
    import pandas as pd

    rows, missing, raw, examples = [], [], None, {}
    for job in _jobs(S):
        kind, seed, ratio, unit = job
        name, cfg = _job_key(S, job)
        try:
            got = store.read(NOTEBOOK, name, profile, cfg, root=root)
        except store.StoreMiss:
            got = None
        if got is None:
            missing.append(name)
        elif kind == "raw":
            raw = dict(got.data)
        else:
            d = {k: v for k, v in got.data.items() if isinstance(v, (int, float, str)) or v is None}
            d["model"] = RANDOM_INIT if kind == "random" else label(ratio, unit)
            d["commit"] = got.provenance.get("git", {}).get("commit")
            hist = got.data.get("history") or [{}]
            d["train_loss"] = float(hist[-1].get("loss", float("nan")))
            rows.append(d)
            examples[(d["model"], seed)] = {k: got.data[k] for k in ("examples_pred", "examples_pasted")}
    return {"entries": pd.DataFrame(rows), "raw_pixels": raw, "missing": missing, "examples": examples}
