"""Fixes tried for real on an H100 (tests/fixtures/gpu/h100/fixes, made by bench/gpu_fixes.py): each
broken run's recorded output, explained here with no live facts, names the cause and proposes the
fix that made the same program pass on the GPU."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import ROOT, cudoctor

FIXES = os.path.join(ROOT, "tests", "fixtures", "gpu", "h100", "fixes")

# trial -> (the cause ranked first, a piece of the step that fixed it on the GPU)
TRIALS = {
    "jax-prealloc-starves-torch": ("gpu-oom", "XLA_PYTHON_CLIENT_PREALLOCATE=false"),
    "visible-devices-bad-index": ("no-gpu-visible", "CUDA_VISIBLE_DEVICES"),
    "alloc-conf-bad-key": ("env-setting-invalid", "expandable_segments:True"),
    "alloc-conf-misspelt-key": ("env-setting-invalid", "expandable_segments instead of expandible_segments"),
    "alloc-conf-lowercase-true": ("env-setting-invalid", "True"),
    "launch-blocking-locates-fault": ("illegal-memory-access", "CUDA_LAUNCH_BLOCKING=1"),
    "xla-flags-unknown": ("env-setting-invalid", "XLA_FLAGS"),
    "torch-oom-fragmentation": ("gpu-oom", "expandable_segments:True"),
    "two-ranks-one-gpu": ("multi-gpu-comm", "nproc"),
    "cupy-bad-device": ("no-gpu-visible", "a device index below that count"),
}


def test_every_recorded_trial_broke_and_its_fix_made_it_pass() -> None:
    with open(os.path.join(FIXES, "summary.json"), encoding="utf-8") as fh:
        summary = json.load(fh)
    assert "H100" in summary["meta"]["gpus"][0]
    for name, trial in summary["trials"].items():
        assert trial["broken"]["rc"] != 0, name
        if trial["kind"] == "fix":
            assert trial["fixed"]["rc"] == 0 and trial["fixed"]["worked"], name


@pytest.mark.parametrize("trial", sorted(TRIALS))
def test_explain_names_the_cause_and_the_fix_that_worked(trial: str) -> None:
    cause, step = TRIALS[trial]
    out = cudoctor(["explain", os.path.join(FIXES, trial, "broken.txt"), "--no-live", "--format", "json"])
    doc = json.loads(out.stdout)
    assert doc["causes"][0]["id"] == cause, [c["id"] for c in doc["causes"]]
    assert any(step in s for s in doc["causes"][0]["fix"]), doc["causes"][0]["fix"]


# trial -> a piece of the first step when explained with the H100's own facts (planned/check.json, that
# machine's live snapshot) and the broken run's environment stated: the fix that worked there comes first.
FIRST_STEP_ON_THE_H100 = {
    "jax-prealloc-starves-torch": "XLA_PYTHON_CLIENT_PREALLOCATE=false",
    "visible-devices-bad-index": "CUDA_VISIBLE_DEVICES=0",
    "alloc-conf-bad-key": "expandable_segments:True",
    "alloc-conf-misspelt-key": "expandable_segments instead of expandible_segments",
    "alloc-conf-lowercase-true": "expandable_segments:True",
    "launch-blocking-locates-fault": "index",
    "xla-flags-unknown": "--xla_gpu_graph_level",
    "torch-oom-fragmentation": "expandable_segments:True",
    "jax-no-prealloc-oom": "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "cupy-bad-device": "a device index below that count",
    "two-ranks-one-gpu": "--nproc_per_node",
}


@pytest.mark.parametrize("trial", sorted(FIRST_STEP_ON_THE_H100))
def test_with_the_h100s_own_facts_the_fix_that_worked_comes_first(trial: str, tmp_path: Path) -> None:
    with open(os.path.join(FIXES, "summary.json"), encoding="utf-8") as fh:
        changes = json.load(fh)["trials"][trial]["broken"].get("env_changes") or {}
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"other": " ".join(f"{k}={v}" for k, v in changes.items())}))
    out = cudoctor(
        [
            "explain",
            os.path.join(FIXES, trial, "broken.txt"),
            "--snapshot",
            os.path.join(FIXES, "planned", "check.json"),
            "--facts",
            str(facts),
            "--no-live",
            "--format",
            "json",
        ]
    )
    first = json.loads(out.stdout)["causes"][0]
    assert FIRST_STEP_ON_THE_H100[trial] in first["fix"][0], first["fix"]
