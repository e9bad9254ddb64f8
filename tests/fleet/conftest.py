"""What every fleet test's local Ray cluster shares."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def no_ray_oom_killer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray's memory monitor kills tasks once the machine is 95% full, whoever filled it.

    The fleet tests check what cudoctor reports, not how Ray copes with a busy CI machine (a CI run
    failed when other processes held the memory); raylets started by a test inherit this variable.
    """
    monkeypatch.setenv("RAY_memory_monitor_refresh_ms", "0")
