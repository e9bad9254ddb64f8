"""Fix scenarios (tests/fixtures/fix_scenarios.toml): the steps of the first cause carry the values the
facts call for, and no step of any cause contradicts a fact."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, assert_as_marked, cudoctor, load_tool

SCORE = load_tool("score_scenarios")
SCENARIOS = {
    row["id"]: row for row in SCORE.read_table(os.path.join(ROOT, "tests", "fixtures", "fix_scenarios.toml"))
}


def explain(row: dict[str, Any], tmp: Path) -> dict[str, Any]:
    log, facts = tmp / "run.log", tmp / "facts.json"
    log.write_text(row["log"] + "\n")
    facts.write_text(json.dumps(row["facts"]))
    out = cudoctor(["explain", str(log), "--facts", str(facts), "--no-live", "--format", "json"])
    return dict(json.loads(out.stdout))


def test_every_scenario_names_its_source_and_what_it_wants() -> None:
    assert len(SCENARIOS) >= 77
    for row in SCENARIOS.values():
        assert row["source"] and row["want_first"] and row["cause"], row["id"]


@pytest.mark.parametrize("sid", sorted(SCENARIOS))
def test_scenario_in_process(sid: str) -> None:
    """Every row through explain_stated (what explain --facts --no-live prints); a known miss must still
    fail, so that its marker goes once it is fixed."""
    row = SCENARIOS[sid]
    assert_as_marked(row, SCORE.fix_problems(row))


@pytest.mark.parametrize("sid", sorted(s for s, row in SCENARIOS.items() if "known_miss" not in row)[:7])
def test_scenario(sid: str, tmp_path: Path) -> None:
    """A few rows end to end through the command line."""
    row = SCENARIOS[sid]
    doc = explain(row, tmp_path)
    assert doc["causes"], "no cause at all"
    first = doc["causes"][0]
    assert first["id"] == row["cause"], [c["id"] for c in doc["causes"]]
    steps = "\n".join(first["fix"])
    missing = [w for w in row["want_first"] if w not in steps]
    assert not missing, f"missing {missing} in:\n{steps}"
    every = [s for c in doc["causes"] for s in c["fix"]]
    bad = [(w, s) for w in row.get("not_anywhere", []) for s in every if w in s]
    assert not bad, bad
