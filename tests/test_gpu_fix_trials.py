"""Fixes tried for real on an H100 (tests/fixtures/gpu/h100/fixes, made by bench/gpu_fixes.py): each
broken run's recorded output, explained here with no live facts, names the cause and proposes the
fix that made the same program pass on the GPU."""

from __future__ import annotations

import json
import os

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
