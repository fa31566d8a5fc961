"""Fixtures shared by several test modules."""

import pytest


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    """A fresh checkpoint/data cache: ``MAELAB_CACHE`` points at ``tmp_path`` for the test (returned).

    (Shadows pytest's built-in ``cache`` fixture for this folder; no test here uses that one.)"""
    monkeypatch.setenv("MAELAB_CACHE", str(tmp_path))
    return tmp_path
