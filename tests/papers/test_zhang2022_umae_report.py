"""The zhang_umae page's runs and display (maelab.papers.zhang2022.umae_report): the configs find the committed
records, and the tables and sentences match hand-computed values on small synthetic runs."""

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from maelab import profiles, store
from maelab._validate import ParameterError
from maelab.papers.zhang2022 import umae_report as report

ROOT = Path(__file__).resolve().parents[2]
CPU = profiles.settings("zhang_umae", "cpu")
SMOKE = profiles.settings("zhang_umae", "smoke")


def stored_hash(name: str) -> str:
    record = ROOT / "data" / "results" / "zhang_umae" / f"{name}.cpu.json"
    return json.loads(record.read_text())["provenance"]["config_hash"]


def cpu_hash(config: dict) -> str:
    return store.config_hash({"profile": "cpu", **config})


@pytest.mark.parametrize("ds", ["fashion_mnist", "mnist", "cifar_dogcat"])
def test_compare_and_raw_pixel_configs_find_the_committed_records(ds):
    assert cpu_hash(report.compare_config(CPU, ds)) == stored_hash(f"compare_{ds}")
    assert cpu_hash(report.raw_pixels_config(CPU, ds)) == stored_hash(f"raw_pixels_{ds}")


def test_committed_gpu_parts_belong_to_records_today_s_gpu_settings_compute():
    """The parts an installment brought back (maelab.parts) are loaded by the next only if their record's config is
    the one today's gpu settings give it: a settings change after they ran would orphan them silently."""
    gpu = profiles.settings("zhang_umae", "gpu")
    records = {f"compare_{ds}": report.compare_config(gpu, ds) for ds in gpu.run_datasets}
    found = sorted((ROOT / "data" / "results" / "zhang_umae").glob("*__*.gpu.json"))
    for path in found:
        config = json.loads(path.read_text())["provenance"]["config"]
        assert config["part of"] in records, f"{path.name}: a part of a record this page does not compute at gpu"
        want = store.config_hash({"profile": "gpu", **records[config["part of"]]})
        assert config["record config"] == want, f"{path.name}: its record's config is not today's gpu one"


def test_a_second_look_has_its_own_record_config_and_halves_the_level():
    """The added seeds (a second look) are a record of their own, whose config differs from the first's in the
    seeds only; the dataset's rows are then tested at ALPHA / 2, the other datasets' at ALPHA."""
    S = profiles.settings("zhang_umae", "cpu", added_seeds={"mnist": [7, 5]})
    first, added = report.compare_config(S, "mnist"), report.compare_config(S, "mnist", report.added_seeds(S, "mnist"))
    assert report.added_seeds(S, "mnist") == [7, 5] and report.added_seeds(S, "fashion_mnist") == []
    assert set(first) - set(added) == {"seeds"} and set(added) - set(first) == {"seeds_added"}
    assert added["seeds_added"] == [7, 5] and {k for k in set(first) & set(added) if first[k] != added[k]} == set()
    assert (report.looks(S, "mnist"), report.looks(S, "fashion_mnist")) == (2, 1)
    assert report.seeds_text(S, {"mnist": "MNIST"}) == (
        "3 seeds (MNIST: 5, seeds 7, 5 added after a first analysis of seeds 0, 1, 2, so its rows are tested at "
        "0.05 / 2: two looks)"
    )
    none = profiles.settings("zhang_umae", "cpu", added_seeds={})
    assert report.seeds_text(none, {}) == "3 seeds" and report.looks(none, "mnist") == 1


@pytest.mark.parametrize(
    "added, start",
    [
        ({"mnist": [2, 3]}, "added_seeds['mnist'] must be seeds not in seeds [0, 1, 2]"),
        ({"mnist": [3, 3]}, "added_seeds['mnist'] must be distinct seeds"),
        ({"svhn": [3]}, "added_seeds key must be one of"),
        ([3, 4], "added_seeds must be a dict with string keys"),
    ],
)
def test_bad_added_seeds_are_one_line(added, start):
    with pytest.raises(ParameterError) as e:
        profiles.settings("zhang_umae", "cpu", added_seeds=added)
    assert str(e.value).startswith(start) and "\n" not in str(e.value), str(e.value)


def test_added_seeds_of_a_dataset_not_on_the_page_are_skipped(tmp_path):
    one = profiles.settings("zhang_umae", "cpu", datasets=["mnist"], investigate_dataset="mnist")
    assert one.run_datasets == ["mnist"]
    per_dataset = dict(n_train=1000, n_test=100, epochs=2, patch_size=4)  # one value for mnist and cifar10
    with_c10 = profiles.settings(
        "zhang_umae", "cpu", datasets=["mnist"], investigate_dataset="mnist", data_root=str(tmp_path), **per_dataset
    )
    assert with_c10.run_datasets == ["mnist", "cifar10"] and report.looks(with_c10, "cifar10") == 1
    assert "fashion_mnist" in one.added_seeds  # the default names it, and narrowing datasets stays valid
    assert report.added_seeds(one, "fashion_mnist") == [] and report.looks(one, "fashion_mnist") == 1
    assert report.added_seeds(one, "mnist") == [3, 4, 5] and report.looks(one, "mnist") == 2
    shapes = profiles.settings("zhang_umae", "cpu", added_seeds={"shapes": [3]})
    assert report.added_seeds(shapes, "shapes") == []
    with pytest.raises(ParameterError, match=r"added_seeds\['shapes'\] must be seeds not in seeds"):
        profiles.settings("zhang_umae", "cpu", added_seeds={"shapes": [0]})  # still checked where skipped


def test_investigation_and_tsne_configs_find_the_committed_records():
    inv = report.investigation(CPU)
    assert cpu_hash(report.investigate_config(CPU, inv)) == stored_hash(f"investigate_{inv.dataset}")
    res = {
        ds: SimpleNamespace(provenance={"config_hash": stored_hash(f"compare_{ds}")})
        for ds in ("fashion_mnist", "mnist", "cifar_dogcat")
    }
    assert cpu_hash(report.tsne_config(CPU, res, 0)) == stored_hash("tsne")


def test_investigation_variants_by_length():
    short = report.investigation(SMOKE)  # smoke: 1 investigation epoch of 2
    assert short.dataset == "shapes" and short.epochs == 1 and short.short and short.spec.epochs == 1
    assert list(short.variants) == ["mae", "umae", "umae_x10", "umae_meanfeat", "mae_legacy", "umae_legacy"]
    assert dict(short.variants["umae_x10"]["model_overrides"])["lambda_unif"] == pytest.approx(10 * SMOKE.lam)
    assert dict(short.variants["umae_meanfeat"]["model_overrides"])["uniformity_feature"] == "mean"
    full = report.investigation(profiles.settings("zhang_umae", "smoke", investigate_epochs=None))
    assert not full.short and full.epochs == 2 and list(full.variants) == ["umae_x10", "umae_meanfeat"]


def test_rank_epochs_cut_at_the_run_length():
    S = profiles.settings("zhang_umae", "smoke", rank_epochs=[1, 5, 10], epochs=4)
    assert report.rank_epochs(S, "shapes") == [0, 1, 4]


def test_recipe_text_counts_steps_and_images_by_hand():
    # cpu: a micro ViT; 30,000 // 256 = 117 full batches x 64 epochs = 7,488 steps, x 256 = 1,916,928 images;
    # cifar_dogcat: 1,600 // 256 = 6 x 200 = 1,200 steps, 307,200 images; 28 / 7 and 32 / 8: 4 x 4 = 16 tokens
    text = report.recipe_text(CPU, {"fashion_mnist": "F", "mnist": "M", "cifar_dogcat": "C"})
    assert text == (
        "a 2-layer, 64-d ViT (micro; 1-layer, 64-d decoder), on F and M patch 7 (16 tokens) for 64 epochs of "
        "30,000 training images (7,488 optimiser steps of batch 256, 1,916,928 images seen per run); on C patch 8 "
        "(16 tokens) for 200 epochs of 1,600 training images (1,200 optimiser steps of batch 256, 307,200 images "
        "seen per run)"
    )
    one = report.recipe_text(
        profiles.settings("zhang_umae", "cpu", epochs=2, datasets=["mnist"], investigate_dataset="mnist"), {}
    )
    assert one.endswith(
        "on mnist patch 7 (16 tokens) for 2 epochs of 30,000 training images (234 optimiser steps "
        "of batch 256, 59,904 images seen per run)"
    )


def runs_table(rows):
    return pd.DataFrame(
        rows,
        columns=[
            "variant",
            "seed",
            "linear_acc",
            "linear_acc_mean",
            "knn_acc",
            "finetune_acc",
            "effective_rank",
            "effective_rank_mean",
        ],
    )


RUNS = runs_table(
    [
        ("random", 0, 0.30, 0.35, 0.20, np.nan, 5.0, 6.0),
        ("random", 1, 0.32, 0.37, 0.22, np.nan, 7.0, 8.0),
        ("mae", 0, 0.60, 0.70, 0.50, 0.80, 10.0, 20.0),
        ("mae", 1, 0.62, 0.72, 0.52, 0.84, 12.0, 22.0),
        ("umae", 0, 0.64, 0.70, 0.55, 0.82, 14.0, 21.0),
        ("umae", 1, 0.62, 0.76, 0.53, 0.84, 14.0, 23.0),
    ]
)


def test_accuracy_table_mean_std_and_raw_pixels():
    tab = report.accuracy_table(
        {"mnist": {"runs": RUNS}},
        {"mnist": {"linear_acc": 0.456, "knn_acc": 0.4}},
        {"mnist": "MNIST"},
        {"random": "random init", "mae": "MAE", "umae": "U-MAE"},
    )
    assert list(tab.method) == ["random init", "MAE", "U-MAE", "raw pixels (no encoder)"]
    mae = tab.iloc[1]
    assert mae["linear probe, [CLS]"] == f"61.0 ± {100 * np.std([0.60, 0.62], ddof=1):.1f}"
    assert mae["effective rank, [CLS]"] == f"11.0 ± {np.std([10.0, 12.0], ddof=1):.1f}"
    assert tab.iloc[0]["fine-tuning"] == "—"
    raw = tab.iloc[3]
    assert raw["linear probe, [CLS]"] == "45.6" and raw["20-NN, [CLS]"] == "40.0" and raw["fine-tuning"] == "—"
    with pytest.raises(ParameterError, match="^raw_px must be"):
        report.accuracy_table({"mnist": {"runs": RUNS}}, {}, {"mnist": "MNIST"}, {})


def test_claim_row_scales_and_strips_the_dataset():
    e = SimpleNamespace(samples=[0.04, 0.02], value=0.03, sem=0.01, n=2)
    row = report.claim_row("MNIST", "mnist", "zhang.table1_linear_mnist", e, ("supported", "p = 0.01"))
    assert row["quantity"] == "table1_linear" and row["per-seed values"] == "+4.00, +2.00"
    assert row["mean ± s.e."] == "+3.00 ± 1.00" and row["verdict"] == "supported"
    rank = report.claim_row(
        "MNIST", "mnist", "zhang.fig1b_rank_mnist", SimpleNamespace(samples=[2.5], value=2.5, sem=0, n=1), ("a", "b")
    )
    assert rank["mean ± s.e."] == "+2.50"


def test_dataset_summary_reads_the_samples():
    learned = SimpleNamespace(met=True, trained=[0.60, 0.62])
    text = report.dataset_summary(
        "MNIST", {"runs": RUNS}, [0.04, 0.0], [-0.02, 0.0], [4.0, 2.0], learned, {"linear_acc": 0.5}
    )
    assert text.startswith(
        "MNIST: the learning precondition holds; the uniformity term changes the [CLS] linear probe by +2.0 points, "
        "fine-tuning by -1.0 points"
    )
    # fine-tuned (0.82, 0.83) above the probe (0.61, 0.63) for both methods
    assert "(fine-tuning learned: yes)" in text and "by +3.0 dimensions" in text
    # mean-pooled probe: U-MAE - MAE = 0.0 and +4.0 points: +2.0 ± 2.0
    assert "differ by +2.0 ± 2.0 points" in text
    assert "MAE's own [CLS] probe (61.0 %) is above the same probe on the raw pixels (50.0 %)" in text


def test_investigation_table_and_legacy_text():
    allruns = pd.concat(
        [
            RUNS[RUNS.variant != "random"],
            RUNS[RUNS.variant == "mae"].assign(variant="mae_legacy", linear_acc=[0.50, 0.54]),
            RUNS[RUNS.variant == "umae"].assign(variant="umae_legacy", linear_acc=[0.50, 0.52]),
        ],
        ignore_index=True,
    )
    names = report.investigation_names(SMOKE)
    tab = report.investigation_table(allruns, names)
    assert list(tab.variant) == ["MAE", names["umae"], "MAE, legacy choices", names["umae_legacy"]]
    assert tab.iloc[0]["linear probe [CLS]"] == "61.0"
    # U-MAE - MAE: +4 and 0 points -> +2.0 ± 2.0
    assert tab.iloc[1]["linear probe [CLS]"] == "63.0 (Δ +2.0 ± 2.0)"
    text = report.legacy_text(allruns)
    # legacy - official, MAE: -10 and -8 points -> -9.0 ± 1.0; U-MAE - MAE with legacy choices: 0, -2 -> -1.0 ± 1.0
    assert "move MAE's [CLS] probe by -9.0 ± 1.0 points and its effective rank by +0.0 ± 0.0" in text
    assert "is -1.0 ± 1.0 points with the legacy choices and +2.0 ± 2.0 with the official ones" in text
    assert report.legacy_text(RUNS).startswith("The legacy-choice runs are made only")


def test_regime_summary_and_observed_text():
    RS = profiles.settings("zhang_regime", "smoke", margin=0.05)
    table, text = report.regime_summary(RS, {0: None, 1: None}, {"patch7": 1.0}, "smoke")
    assert table is None and text.startswith("`zhang_regime`'s smoke results are not stored")
    curves = pd.DataFrame(
        [
            {"variant": v, "seed": s, "epoch": e, "images_seen": 512 * e, "linear_acc": a}
            for (v, s, e, a) in [
                ("random", 0, 0, 0.50),
                ("random", 1, 0, 0.60),
                ("mae", 0, 1, 0.52),
                ("mae", 1, 1, 0.62),
                ("mae", 0, 2, 0.54),
                ("mae", 1, 2, 0.64),
            ]
        ]
    )
    timing = pd.DataFrame({"train_seconds": [10.24, 10.24]})  # 2 epochs x 512 images in 10.24 s: 100 images / s
    reg = {s: {"curves": curves[curves.seed == s], "timing": timing.iloc[[s]]} for s in (0, 1)}
    table, text = report.regime_summary(RS, reg, {"patch7": 1.0}, "smoke")
    assert list(table.seed) == [0, 1]
    assert text.startswith(
        "On mnist10k, after 1,024 images seen per run, MAE's [CLS] probe is above its random init by +4.0, +4.0 "
        "points (seeds 0, 1), against a margin of more than 5 points in every seed. "
    )
    # 2 methods x 2 seeds x 2 datasets = 8 runs; 120 min at 100 images / s: 720,000 images, 90,000 per run
    assert "trains 90,000 images per run for the 8 runs" in text and "at the trainer's 100 images per second" in text
    assert text.endswith("the `zhang_regime` page shows the curves, the fit windows and the recipe.")
    # gpu: ViT-Tiny at a GPU's throughput; the micro ViT's cpu-budget question is not asked (nothing is read)
    table, text = report.regime_summary(profiles.settings("zhang_regime", "gpu"), {}, None, "gpu")
    assert table is None and text.startswith("This question is the cpu budget's, so the gpu profile does not ask")
    check = SimpleNamespace(trained=[0.7, 0.8], random_init=[0.6, 0.6], seeds=[0, 1], met=False)
    obs = report.observed_text(SMOKE, "shapes", check)
    # smoke: 2 epochs of 128 images in batches of 64
    assert obs == (
        " Observed on this page: after 256 images per run, MAE's [CLS] probe (fitted on all 128 training images, "
        "not the regime's subset) is above its random init by +10.0, +20.0 points (seeds 0, 1): the learning "
        "precondition fails, so the extrapolation was too optimistic."
    )


@pytest.mark.parametrize(
    "call, start",
    [
        (lambda: report.compare_config(profiles.settings("zhang_regime", "smoke"), "mnist"), "S must be"),
        (lambda: report.claim_row("x", "x", "nodot", None, ("a", "b")), "cid must be"),
        (lambda: report.investigation_table(RUNS[RUNS.variant == "umae"], {}), "allruns must be"),
    ],
)
def test_bad_input_is_one_line(call, start):
    with pytest.raises(ParameterError) as e:
        call()
    assert str(e.value).startswith(start) and "\n" not in str(e.value)


def test_compare_hands_the_prefetch_pool_exactly_the_runs_it_pre_trains(cache, monkeypatch):
    """maelab.prefetch: the specs compare() hands the worker pool are the ones its loop pre-trains, in that order
    (a spec that differs in any field would be trained twice on a lent GPU, once in vain)."""
    import pickle

    from maelab import experiments
    from maelab.papers.zhang2022 import umae

    handed, trained, tasks = [], [], []
    monkeypatch.setattr(umae, "prefetch", lambda specs, **kw: handed.extend(s.key for s in specs))
    monkeypatch.setattr(umae, "compute_parts", lambda ts, **kw: tasks.extend(ts) and 0)  # as with no pool
    real = experiments.pretrain
    monkeypatch.setattr(experiments, "pretrain", lambda spec, **kw: (trained.append(spec.key), real(spec, **kw))[1])
    S = profiles.settings("zhang_umae", "smoke")
    report.compare_run(S, S.datasets[0], device="cpu", progress=False)
    assert handed == trained and len(set(trained)) == 2 * len(S.seeds)
    # the whole runs a pool would compute (maelab.prefetch.compute_parts): one per run, in a worker's reach, then
    # the random-init evaluations, one per seed, of the first variant's untrained model
    runs = [f"{v}_s{s}" for v in ("mae", "umae") for s in S.seeds]
    assert [t.key for t in tasks] == runs + [f"random_s{s}" for s in S.seeds]
    assert all(t.config["spec"]["model"] == "mae" and t.config["random_init"] for t in tasks[len(runs) :])
    for t in tasks:
        again = pickle.loads(pickle.dumps(t))
        assert (again.key, again.config, again.fn.args) == (t.key, t.config, t.fn.args)


def test_compare_assembled_from_stored_parts_equals_one_computed_in_one_go(cache, tmp_path, monkeypatch):
    """maelab.parts: an installment stores each run of compare() on its own; the record assembled from those parts
    (no run computed again) equals the record computed with parts on and with parts off, value for value."""
    from maelab.options import RunOptions
    from maelab.papers.zhang2022 import umae

    S = profiles.settings("zhang_umae", "smoke")
    ds = S.datasets[0]

    def record(root, parts=True):
        fn = lambda: report.compare_run(S, ds, device="cpu", progress=False)  # noqa: E731
        kw = dict(notebook="zhang_umae", profile="smoke", root=root, log=None, options=RunOptions(store_parts=parts))
        return store.load_or_compute(f"compare_{ds}", report.compare_config(S, ds), fn, **kw)

    first = record(tmp_path / "a")
    stored = sorted(p.name for p in (tmp_path / "a" / "zhang_umae").glob(f"compare_{ds}__*.smoke.json"))
    assert len(stored) == 3 * len(S.seeds)  # MAE's and U-MAE's runs, and the random-init evaluations
    (tmp_path / "a" / "zhang_umae" / f"compare_{ds}.smoke.json").unlink()  # as if cut off before the record
    runs = []
    for name in ("evaluate_run", "random_init_run"):
        real = getattr(umae, name)
        monkeypatch.setattr(umae, name, lambda *a, real=real, **k: (runs.append(1), real(*a, **k))[1])
    assembled = record(tmp_path / "a")
    assert not assembled.from_store and runs == []  # every run came from its part
    plain = record(tmp_path / "b", parts=False)
    timings = ["seconds", "images_per_s", "train_seconds"]  # wall times differ between two computations
    for other in (first, plain):
        assert sorted(other.data) == sorted(assembled.data)
        for k, v in assembled.data.items():
            if isinstance(v, pd.DataFrame):
                drop = [c for c in timings if c in v.columns]
                pd.testing.assert_frame_equal(v.drop(columns=drop), other[k].drop(columns=drop), check_exact=True)
            elif isinstance(v, np.ndarray):
                assert np.array_equal(v, other[k]), k
            else:
                assert v == other[k], k
