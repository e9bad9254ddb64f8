"""Recordings of session 38 on an H200 (tests/fixtures/gpu/h200/session38, made by bench/gpu_fixes.py and
bench/gpu_record.py): fixes tried for real, and library refusals in their own words. Each broken output,
explained here with no live facts (or with the H200's recorded snapshot), names the cause and puts the
fix that made the same program pass on the GPU among its first cause's steps."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cudoctor.explainer.command import explain_stated
from tests.conftest import ROOT, cudoctor

HERE = os.path.join(ROOT, "tests", "fixtures", "gpu", "h200", "session38")
FIXES = os.path.join(HERE, "fixes")
BROKEN = os.path.join(HERE, "broken")
H200_SNAPSHOT = os.path.join(ROOT, "tests", "fixtures", "gpu", "h200", "session32", "check.json")


def output(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def test_six_fixes_worked_and_two_jax_settings_failed_without_an_exit_status() -> None:
    with open(os.path.join(FIXES, "summary.json"), encoding="utf-8") as fh:
        trials = json.load(fh)["trials"]
    worked = {name for name, t in trials.items() if t["worked"]}
    assert worked == {
        "torch-cuda-after-fork",
        "cupy-cuda-after-fork",
        "sdpa-flash-float32",
        "torch-memory-fraction-oom",
        "cufft-half-not-power-of-two",
        "triton-block-shared-memory",
    }
    for name in worked:
        assert trials[name]["broken"]["rc"] != 0 and trials[name]["fixed"]["rc"] == 0, name
    # JAX falls back to the CPU on a refused allocator setting, and retries smaller pools on a fraction
    # over 1: both exit 0, and only their output says what went wrong
    allocator = output(os.path.join(FIXES, "jax-allocator-unknown", "broken.txt"))
    assert "# exit: 0" in allocator and "devices: [CpuDevice(id=0)]" in allocator
    fraction = output(os.path.join(FIXES, "jax-mem-fraction-over-one", "broken.txt"))
    assert "# exit: 0" in fraction and "Failed to allocate device memory of 209.70GiB" in fraction


# trial -> (the cause ranked first, a piece of one of its steps: the fix that worked on the H200)
TRIALS = {
    "torch-cuda-after-fork": ("cuda-after-fork", "spawn"),
    "cupy-cuda-after-fork": ("cuda-after-fork", "multiprocessing.get_context('spawn')"),
    "sdpa-flash-float32": ("dtype-mismatch", "torch.bfloat16"),
    "torch-memory-fraction-oom": ("gpu-oom", "set_per_process_memory_fraction"),
    "cufft-half-not-power-of-two": ("dtype-mismatch", "next power of two"),
    "triton-block-shared-memory": ("library-bug", "BLOCK sizes"),
    "jax-allocator-unknown": ("env-setting-invalid", "XLA_PYTHON_CLIENT_ALLOCATOR"),
}


@pytest.mark.parametrize("trial", sorted(TRIALS))
def test_explain_names_the_cause_and_the_fix_that_worked(trial: str) -> None:
    cause, step = TRIALS[trial]
    doc = explain_stated(output(os.path.join(FIXES, trial, "broken.txt")), {})
    first = doc["causes"][0]
    assert first["id"] == cause, [c["id"] for c in doc["causes"]]
    assert any(step in s for s in first["fix"]), first["fix"]


def test_cupy_after_fork_keeps_steps_a_cupy_user_can_follow() -> None:
    """The cause's steps were all written with PyTorch's names, and the planner dropped every one of them
    for a CuPy log: the cause came with no step at all."""
    doc = explain_stated(output(os.path.join(FIXES, "cupy-cuda-after-fork", "broken.txt")), {})
    steps = doc["causes"][0]["fix"]
    assert len(steps) >= 2 and not any("torch" in s or "DataLoader" in s for s in steps), steps


def test_a_capped_process_is_told_its_cap_and_fragmentation_still_wins_where_it_applies() -> None:
    doc = explain_stated(output(os.path.join(FIXES, "torch-memory-fraction-oom", "broken.txt")), {})
    assert (
        "1.40 GiB" in doc["causes"][0]["fix"][0]
        and "set_per_process_memory_fraction" in doc["causes"][0]["fix"][0]
    )
    # the H100's fragmentation trial ran under a cap too (1.09 GiB allowed), and expandable segments fixed it
    frag = os.path.join(
        ROOT, "tests", "fixtures", "gpu", "h100", "fixes", "torch-oom-fragmentation", "broken.txt"
    )
    first = explain_stated(output(frag), {})["causes"][0]["fix"][0]
    assert "1.09 GiB allowed" in output(frag) and "expandable_segments:True" in first


def test_a_jax_pool_larger_than_the_gpu_names_the_fraction() -> None:
    """No step named the fraction before: the H200's snapshot gives the GPU's size, and the allocation
    XLA failed to make (209.70 GiB) is larger than the whole GPU."""
    out = cudoctor(
        [
            "explain",
            os.path.join(FIXES, "jax-mem-fraction-over-one", "broken.txt"),
            "--snapshot",
            H200_SNAPSHOT,
            "--no-live",
            "--format",
            "json",
        ]
    )
    first = json.loads(out.stdout)["causes"][0]
    assert first["id"] == "gpu-oom" and "XLA_PYTHON_CLIENT_MEM_FRACTION" in first["fix"][0], first["fix"]
    # without the GPU's size the figure means nothing more than an out-of-memory
    bare = explain_stated(output(os.path.join(FIXES, "jax-mem-fraction-over-one", "broken.txt")), {})
    assert not any("below 1" in s for s in bare["causes"][0]["fix"])


@pytest.mark.parametrize(
    ("name", "cause", "root"),
    [
        ("cholesky_not_positive_definite", "numerical-instability", "not positive-definite"),
        ("eigh_nan", "numerical-instability", "linalg.eigh: The algorithm failed to converge"),
        ("svd_nan", "numerical-instability", "linalg.svd: The algorithm failed to converge"),
        ("assert_async", "illegal-memory-access", "_assert_async_cuda_kernel"),
        ("cupy_misaligned_address", "illegal-memory-access", "cudaErrorMisalignedAddress"),
        ("graph_capture_sync", "library-bug", "operation not permitted when stream is capturing"),
    ],
)
def test_each_recorded_refusal_is_explained(name: str, cause: str, root: str) -> None:
    doc = explain_stated(output(os.path.join(BROKEN, f"{name}.txt")), {})
    assert root in doc["root"]["text"], doc["root"]
    assert doc["causes"][0]["id"] == cause, [c["id"] for c in doc["causes"]]


def test_a_launch_over_the_block_limit_is_not_read_as_an_architecture_cupy_compiles_for() -> None:
    """CUDA_ERROR_INVALID_VALUE from cuLaunchKernel (4096 threads in a block) ranked arch-unsupported first,
    with a step to install cupy-cuda12x on a machine whose cupy-cuda13x compiles for its H200."""
    path = os.path.join(BROKEN, "cupy_block_too_large.txt")
    out = cudoctor(["explain", path, "--snapshot", H200_SNAPSHOT, "--no-live", "--format", "json"])
    causes = json.loads(out.stdout)["causes"]
    assert causes[0]["id"] != "arch-unsupported", [c["id"] for c in causes]
    assert not any("cupy-cuda12x" in s for c in causes for s in c["fix"])


# ------------------------------------------------------------------ the planner on the H200's own facts (call 3)
PLANNED = os.path.join(HERE, "planned")
# trial -> a piece of the fix that worked, which the plan made there puts in its first two steps
FIRST_ON_THE_H200 = {
    "torch-cuda-after-fork": "spawn",
    "cupy-cuda-after-fork": "spawn",
    "sdpa-flash-float32": "torch.bfloat16",
    "torch-memory-fraction-oom": "set_per_process_memory_fraction",
    "cufft-half-not-power-of-two": "next power of two",
    "triton-block-shared-memory": "BLOCK sizes",
    "jax-allocator-unknown": "XLA_PYTHON_CLIENT_ALLOCATOR",
    "jax-mem-fraction-over-one": "XLA_PYTHON_CLIENT_MEM_FRACTION",
}


def test_on_the_h200_the_fix_that_worked_is_among_the_first_two_steps() -> None:
    """bench/gpu_explain_live.py on the H200 (live facts and each broken run's settings), recorded."""
    with open(os.path.join(PLANNED, "summary.json"), encoding="utf-8") as fh:
        planned = json.load(fh)
    for trial, piece in FIRST_ON_THE_H200.items():
        assert any(piece in s for s in planned[trial]["fix"][:2]), (trial, planned[trial]["fix"][:2])


@pytest.mark.parametrize("trial", sorted(FIRST_ON_THE_H200))
def test_replayed_with_the_h200s_snapshot_the_plan_is_the_one_made_there(trial: str, tmp_path: Path) -> None:
    with open(os.path.join(FIXES, "summary.json"), encoding="utf-8") as fh:
        changes = json.load(fh)["trials"][trial]["broken"].get("env_changes") or {}
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"other": " ".join(f"{k}={v}" for k, v in changes.items())}))
    args = [
        "explain",
        os.path.join(FIXES, trial, "broken.txt"),
        "--snapshot",
        os.path.join(PLANNED, "check.json"),
    ]
    first = json.loads(cudoctor([*args, "--facts", str(facts), "--no-live", "--format", "json"]).stdout)[
        "causes"
    ][0]
    assert any(FIRST_ON_THE_H200[trial] in s for s in first["fix"][:2]), first["fix"][:2]
