"""Stated-facts check scenarios (tests/fixtures/check_scenarios.toml): facts people wrote in public
threads -> the findings `cudoctor check --facts F --no-live` must and must not report."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import ROOT, assert_as_marked, cudoctor, load_tool

SCORE = load_tool("score_scenarios")
SCENARIOS = {
    row["id"]: row
    for row in SCORE.read_table(os.path.join(ROOT, "tests", "fixtures", "check_scenarios.toml"))
}


def test_every_scenario_names_its_source_and_what_it_checks() -> None:
    assert len(SCENARIOS) >= 250
    for row in SCENARIOS.values():
        assert row["source"] and row["facts"], row["id"]
        assert row.get("fires") or row.get("silent"), row["id"]


@pytest.mark.parametrize("sid", sorted(SCENARIOS))
def test_scenario(sid: str) -> None:
    row = SCENARIOS[sid]
    assert_as_marked(row, SCORE.check_problems(row))


def test_one_scenario_end_to_end_through_the_command_line(tmp_path: Path) -> None:
    row = SCENARIOS["tf212-win11-py31010"]
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(row["facts"]))
    out = cudoctor(["check", "--facts", str(facts), "--no-live", "--format", "json"])
    causes = {f["cause"] for f in json.loads(out.stdout)["findings"]}
    assert set(row["fires"]) <= causes and not set(row["silent"]) & causes
