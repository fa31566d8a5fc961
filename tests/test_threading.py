"""maelab sets OMP_WAIT_POLICY=PASSIVE when imported before torch, and never overrides a user's value."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _policy_after(code: str, env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env["PYTHONPATH"] = SRC
    if env_value is not None:
        env["OMP_WAIT_POLICY"] = env_value
    out = subprocess.run(
        [sys.executable, "-c", code + "; import os; print(os.environ.get('OMP_WAIT_POLICY'))"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return out.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "code, env_value, expected",
    [
        ("import maelab", None, "PASSIVE"),  # imported first: the library's default
        ("import maelab", "ACTIVE", "ACTIVE"),  # a user's choice wins
        ("import sys; sys.modules['torch'] = None; import maelab", None, "None"),  # torch already imported: no effect
    ],
)
def test_wait_policy_default(code, env_value, expected):
    assert _policy_after(code, env_value) == expected
