"""The committed plan tables (data/results/plan/notebooks.<profile>, shown by book/rerun.md) are what the cost model
prices today: the machine-independent columns (planned runs, TFLOP, H100 minutes) of every notebook. A change to the
pipeline's workload, a paper's plan or the counting that moves a number fails here until the tables are rewritten
(``python -m maelab.book plan --profile P --write``). The CPU columns depend on this machine's calibration and the
peak memory is left out (a synthetic calibration, ``memory=False``): they are not compared."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import synthetic_calibration

from maelab import book, store

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("profile", book.PLAN_PROFILES)
def test_committed_plan_tables_are_today_s_cost_model(profile):
    rec = store.load(book.PLAN_NOTEBOOK, "notebooks", profile, root=ROOT / "data" / "results")
    assert rec is not None, f"no plan table for {profile}"
    committed = rec["table"].set_index("notebook")
    today, _ = book.plan_table(profile, calibration=synthetic_calibration(), memory=False)
    today = today.set_index("notebook")
    assert list(today.index) == list(committed.index)
    for col in ("runs", "TFLOP", "H100 min"):
        for nb in today.index:
            a, b = _value(today.loc[nb, col]), _value(committed.loc[nb, col])
            assert a == b, f"{nb} {profile} {col}: {a} today, {b} in the committed table"


def _value(v):
    """A table cell as a number (the committed CSV reads a column holding "negligible" as text), else the text."""
    try:
        return round(float(v), 6)
    except ValueError:
        return str(v)
