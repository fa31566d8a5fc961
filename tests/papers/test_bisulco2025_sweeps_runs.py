"""The bisulco_sweeps page's runs (maelab.papers.bisulco2025.sweeps_runs): the configs find the committed records,
the grids hold the cells the settings describe, and the key column alone keeps snapshots and is fine-tuned."""

import json
from pathlib import Path
from types import SimpleNamespace

import matplotlib
import numpy as np
import pandas as pd
import pytest

from maelab import profiles, store
from maelab._validate import ParameterError
from maelab.papers.bisulco2025 import sweeps_runs

matplotlib.use("Agg")
ROOT = Path(__file__).resolve().parents[2]
# smoke: encoders [1, 2], decoders [1, 2] (key 2), patch 4 and mask 0.75 at the base, patch x mask grid at (1, 2)
# over patches [4, 8] and masks [0.75, 0.9], seeds [0, 1], 1 epoch, snapshot epochs [0]
SMOKE = sweeps_runs.Sweep(profiles.settings("bisulco_sweeps", "smoke"), 0)


@pytest.mark.parametrize(
    "name, config",
    [
        ("depth_grid", "depth_config"),
        ("patch_mask_grid", "patch_mask_config"),
        ("random_init", "random_init_config"),
        ("step_costs", "cost_config"),
        ("snapshot_probes", "snapshot_config"),
        ("cka", "cka_config"),
    ],
)
def test_configs_find_the_committed_records(name, config):
    record = ROOT / "data" / "results" / "bisulco_sweeps" / f"{name}.cpu.json"
    stored = json.loads(record.read_text())["provenance"]["config_hash"]
    sweep = sweeps_runs.Sweep(profiles.settings("bisulco_sweeps", "cpu"), 0)
    assert store.config_hash({"profile": "cpu", **getattr(sweep, config)()}) == stored


def test_grids_hold_the_cells_of_the_settings():
    assert SMOKE.depth_cells() == [
        (1, 1, 4, 0.75, 0),
        (1, 2, 4, 0.75, 0),
        (2, 1, 4, 0.75, 0),
        (2, 2, 4, 0.75, 0),
        (1, 2, 4, 0.75, 1),
        (2, 2, 4, 0.75, 1),
    ]
    assert SMOKE.patch_mask_cells() == [(1, 2, 4, 0.75, 0), (1, 2, 4, 0.9, 0), (1, 2, 8, 0.75, 0), (1, 2, 8, 0.9, 0)]
    # the patch x mask cell (1, 2, 4, 0.75) is already in the depth grid: measured once
    assert SMOKE.cost_configs() == [
        (1, 1, 4, 0.75),
        (1, 2, 4, 0.75),
        (2, 1, 4, 0.75),
        (2, 2, 4, 0.75),
        (1, 2, 4, 0.9),
        (1, 2, 8, 0.75),
        (1, 2, 8, 0.9),
    ]
    assert SMOKE.random_init_archs() == [
        (1, 1, 4, 0),
        (1, 2, 4, 0),
        (1, 2, 4, 1),
        (1, 2, 8, 0),
        (2, 1, 4, 0),
        (2, 2, 4, 0),
        (2, 2, 4, 1),
    ]
    assert SMOKE.snaps == (0, 1)


def test_only_the_key_column_keeps_snapshots_and_its_first_seed_is_fine_tuned():
    key0, key1 = SMOKE.spec(1, 2, 4, 0.75, 0), SMOKE.spec(1, 2, 4, 0.75, 1)
    assert key0.snapshot_epochs == (0, 1) and key0.finetune_epochs == 1
    assert key1.snapshot_epochs == (0, 1) and key1.finetune_epochs == 0
    for other in (SMOKE.spec(1, 1, 4, 0.75, 0), SMOKE.spec(1, 2, 8, 0.75, 0), SMOKE.spec(1, 2, 4, 0.9, 0)):
        assert other.snapshot_epochs == () and other.finetune_epochs == 0
    over = dict(key0.model_overrides)
    assert (over["depth"], over["decoder_depth"], over["patch_size"]) == (1, 2, 4)
    assert key0.data_seed == 0 and key0.seed == 0 and key0.mask_ratio == 0.75
    # a cell in both grids is one spec
    assert SMOKE.spec(*SMOKE.patch_mask_cells()[0]) == SMOKE.spec(*SMOKE.depth_cells()[1])


def test_cost_rows_count_more_flops_for_smaller_patches():
    costs = SMOKE.cost_rows([(1, 1, 4, 0.75), (1, 1, 8, 0.75)])["costs"]
    assert list(costs.patch) == [4, 8] and (costs.step_wall_s > 0).all()
    # 64 tokens against 16 (32 px images): more work per step
    assert costs.flops.iloc[0] > costs.flops.iloc[1] > 0


def test_display_helpers():
    costs = pd.DataFrame(
        [(e, d, p, m, 2e9) for e, d, p, m in SMOKE.cost_configs()], columns=["enc", "dec", "patch", "mask", "flops"]
    )
    assert len(SMOKE.depth_costs(costs)) == 4 and (SMOKE.depth_costs(costs).gflops == 2.0).all()
    assert len(SMOKE.patch_mask_costs(costs)) == 4
    ftp = pd.DataFrame({"linear_acc": [0.5], "finetune_acc": [0.75], "gain": [0.25]}, index=pd.Index([2], name="enc"))
    assert sweeps_runs.finetune_text(ftp) == "encoder 2: 75.0 % vs 50.0 % (+25.0 points)"
    assert sweeps_runs.finetune_text(None) == "none"
    a, b, c = (SimpleNamespace(what=w) for w in ("run a", "run b", "run a"))
    assert list(sweeps_runs.learning_checks({"x": a}, [b], {"y": c})) == ["run a", "run b"]
    gpu = profiles.settings("bisulco_sweeps", "gpu")
    assert sweeps_runs.gpu_scale()["gpu_max_depth"] == 12 == max(gpu.encoder_depths)


def test_heat_annotates_every_cell():
    import matplotlib.pyplot as plt

    df = pd.DataFrame({"enc": [1, 1, 2, 2], "dec": [1, 2, 1, 2], "v": [0.1, 0.2, 0.3, np.nan]})
    fig, ax = plt.subplots()
    sweeps_runs.heat(ax, df, "enc", "dec", "v", "title", fmt="{:.1f}")
    assert sorted(t.get_text() for t in ax.texts) == ["0.1", "0.2", "0.3"]
    plt.close(fig)


@pytest.mark.parametrize(
    "call, start",
    [
        (lambda: sweeps_runs.Sweep(profiles.settings("masking", "smoke"), 0), "S must be"),
        (lambda: sweeps_runs.Sweep(SMOKE.S, 0.5), "data_seed must be an int"),
        (lambda: SMOKE.run_rows([(1, 2, 4)]), "cells must be (enc, dec, patch, mask, seed) tuples"),
    ],
)
def test_bad_input_is_one_line(call, start):
    with pytest.raises(ParameterError) as e:
        call()
    assert str(e.value).startswith(start) and "\n" not in str(e.value)
