"""Fix planning: every step of every fix, computed from all the facts and the knowledge tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cudoctor.model import CheckResult, Snapshot


def checked(snap: Snapshot, only: Sequence[str] = (), ignore: Sequence[str] = ()) -> list[CheckResult]:
    """The checks' results on `snap`, their findings' steps planned from its facts (check, probe,
    report and the Python API all take findings from here)."""
    from cudoctor import quoted
    from cudoctor.checks import run_checks
    from cudoctor.fixes.planner import planned

    snap = quoted.fill(snap)  # an error quoted in the stated facts, read as explain reads it
    return planned(run_checks(snap, only=only, ignore=ignore), snap)
