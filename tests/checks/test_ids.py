"""Every id the tool prints can be passed back (issue 40, point 1): check ids and finding ids alike, in
--only and --ignore, repeated or as comma lists; a partial run says it is partial (point 2)."""

from __future__ import annotations

import glob
import json
import os
import re
from pathlib import Path

from cudoctor.checks import FINDING_IDS, all_checks, check_of, split_ids
from tests.conftest import ROOT, cudoctor

CHECK_IDS = {c.id for c in all_checks()}


def _finding_ids_in_the_source() -> set[str]:
    """The first argument of every finding(...) call in the checks, {name} parts as a pattern."""
    found = set()
    for path in glob.glob(os.path.join(ROOT, "src", "cudoctor", "checks", "*.py")):
        with open(path, encoding="utf-8") as fh:
            for m in re.finditer(r'finding\(\s*f?"([a-z0-9{}_.-]+)"', fh.read()):
                found.add(m.group(1))
    return found


def test_every_finding_id_in_the_checks_maps_to_its_check() -> None:
    for fid in _finding_ids_in_the_source():
        sample = re.sub(r"\{\w+\}", "torch" if "preallocates" in fid or "cpu-only" in fid else "nvcc", fid)
        assert check_of(sample) is not None, f"{fid}: add it to checks.FINDING_IDS"
    assert set(FINDING_IDS.values()) <= CHECK_IDS


def test_ids_are_resolved_and_comma_lists_split() -> None:
    assert check_of("toolkit-needs-newer-driver") == "toolkit-newer-than-driver"
    assert check_of("cpu-only-tensorflow") == "cpu-only-build"
    assert check_of("arch-unsupported") == "arch-unsupported"
    assert check_of("no-such-id") is None
    assert split_ids(["a,b", " c ", ""]) == ["a", "b", "c"]


def test_a_finding_id_from_the_output_can_be_ignored_or_selected(tmp_path: Path) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text(
        json.dumps({"driver": "450.80.02", "system_cuda": "12.4", "framework_version": "torch 2.1.0+cu121"})
    )
    base = ["check", "--facts", str(facts), "--no-live", "--format", "json"]
    shown = {f["id"] for f in json.loads(cudoctor(base).stdout)["findings"]}
    assert "toolkit-needs-newer-driver" in shown and "driver-too-old" in shown
    ignored = {
        f["id"]
        for f in json.loads(cudoctor([*base, "--ignore", "toolkit-needs-newer-driver"]).stdout)["findings"]
    }
    assert ignored == shown - {"toolkit-needs-newer-driver"}
    only = {
        f["id"]
        for f in json.loads(cudoctor([*base, "--only", "toolkit-needs-newer-driver,driver-too-old"]).stdout)[
            "findings"
        ]
    }
    assert only == {"toolkit-needs-newer-driver", "driver-too-old"}
    text = cudoctor(["check", "--facts", str(facts), "--no-live", "--only", "driver-too-old"]).stdout
    assert f"(a partial run: 1 of {len(CHECK_IDS)} checks run; not recorded as last known good)" in text
    bad = cudoctor(["check", "--no-live", "--only", "driver-too-old,nope"])
    assert bad.returncode == 2 and "nope" in bad.stderr and "driver-too-old" not in bad.stderr.split("(")[0]
