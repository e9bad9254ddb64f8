"""Replays tests/fixtures/gpu/h100/run: programs that failed on an H100 under `cudoctor run` (their output
as recorded there), explained here with that machine's recorded facts."""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import ROOT, cudoctor

RUN = os.path.join(ROOT, "tests", "fixtures", "gpu", "h100", "run")
FAILED = [
    "torch-oom",
    "torch-label-past-classes",
    "torch-mixed-dtype-gemm",
    "torch-no-visible-gpu",
    "jax-oom",
    "cupy-device-past-the-ones-there",
]


def _read(case: str, name: str) -> str:
    with open(os.path.join(RUN, case, name), encoding="utf-8") as fh:
        return fh.read()


def _program_output(case: str) -> str:
    """What the program printed: stdout, then stderr without the lines cudoctor run added after it."""
    err = _read(case, "stderr.txt").split("\ncudoctor: `")[0]
    return _read(case, "stdout.txt") + err


def _explain(case: str, tmp_path: object) -> dict:  # type: ignore[type-arg]
    log = os.path.join(str(tmp_path), f"{case}.log")
    with open(log, "w", encoding="utf-8") as fh:
        fh.write(_program_output(case))
    out = cudoctor(
        ["explain", log, "--snapshot", os.path.join(RUN, "check.json"), "--no-live", "--format", "json"]
    )
    return dict(json.loads(out.stdout))


@pytest.mark.parametrize("case", FAILED)
def test_the_recorded_failures_keep_their_cause(case: str, tmp_path: object) -> None:
    recorded = json.loads(_read(case, "why.json"))
    assert recorded["status"] == json.loads(_read(case, "run.json"))["status"] != 0
    doc = _explain(case, tmp_path)
    assert doc["causes"][0]["id"] == recorded["causes"][0]["id"]


def test_an_allocation_larger_than_the_gpu_says_the_tensor_must_shrink(tmp_path: object) -> None:
    """400 GiB asked of an 80 GB H100 that was 99% free: 'see who holds memory' was the wrong first step."""
    first = _explain("torch-oom", tmp_path)["causes"][0]
    assert first["fix"][0].startswith("Make that tensor smaller than the GPU (400 GiB asked, 79 GiB in all)")
    jax = _explain("jax-oom", tmp_path)["causes"][0]
    assert "smaller than the GPU" in jax["fix"][0]


def test_the_loss_kernels_own_steps_lead_over_the_xid_the_run_left(tmp_path: object) -> None:
    first = _explain("torch-label-past-classes", tmp_path)["causes"][0]
    assert "NLL / cross-entropy loss kernel" in first["fix"][0]
    assert not first["title"].startswith("GPU ")  # the Xid 43 finding is a note, not the title


def test_no_step_for_gpus_older_than_the_one_there(tmp_path: object) -> None:
    steps = [s for c in _explain("torch-mixed-dtype-gemm", tmp_path)["causes"] for s in c["fix"]]
    assert not any("older than Ampere" in s for s in steps)


def test_a_successful_run_added_nothing_and_pytest_named_the_cause() -> None:
    assert _read("torch-training-succeeds", "stderr.txt") == ""
    assert _read("torch-training-succeeds", "stdout.txt").count("loss") == 5
    out = _read("pytest-cudoctor", "stdout.txt")
    assert "[illegal-memory-access," in out and "1 failing test with a GPU/CUDA/BLAS error explained" in out
