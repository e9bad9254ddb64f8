"""cpu_rules: a SIGILL on an ARM CPU is a build for a newer ARM core (library-bug), on an x86 CPU one for
instructions the CPU lacks (cpu-blas-runtime)."""

from __future__ import annotations

import pytest

from cudoctor.explainer.command import explain_stated

SIGILL = "Illegal instruction (core dumped)"


def _first(log: str, facts: dict[str, str]) -> str:
    causes = explain_stated(log, facts)["causes"]
    return str(causes[0]["id"]) if causes else ""


@pytest.mark.parametrize(
    "facts",
    [
        {
            "os": "Raspberry Pi OS 64-bit (aarch64)",
            "framework_version": "torch 2.4.0",
        },  # pytorch/pytorch#132032
        {"other": "Ubuntu 24.04 arm64 VM under Parallels", "framework_version": "numpy 2.2 with OpenBLAS"},
    ],
)
def test_a_sigill_on_an_arm_cpu_is_a_build_for_a_newer_core(facts: dict[str, str]) -> None:
    assert _first(f"$ python -c 'import torch'\n{SIGILL}", facts) == "library-bug"


def test_a_sigill_on_an_x86_cpu_stays_the_cpu_lacking_instructions() -> None:
    facts = {
        "os": "Ubuntu 22.04 x86_64",
        "other": "Intel Pentium G4560 (no AVX)",
        "framework_version": "tensorflow 2.15",
    }
    assert _first(f"$ python -c 'import tensorflow'\n{SIGILL}", facts) == "cpu-blas-runtime"


def test_an_arm_cpu_without_a_sigill_is_not_read_as_one() -> None:
    log = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    assert (
        _first(log, {"os": "Jetson Orin, JetPack 6 (aarch64)", "framework_version": "torch 2.5.0"})
        != "library-bug"
    )


@pytest.mark.parametrize(
    "facts",
    [
        {
            "os": "macOS 13, Apple M1 (arm64)",
            "framework_version": "tensorflow 2.11",
        },  # an x86 wheel under Rosetta
        {"os": "Windows 11 on ARM (arm64)", "framework_version": "torch 2.3.0"},
    ],
)
def test_an_arm_mac_or_windows_runs_x86_wheels_translated(facts: dict[str, str]) -> None:
    assert _first(f"$ python -c 'import tensorflow'\n{SIGILL}", facts) != "library-bug"
