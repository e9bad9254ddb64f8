"""Stated-facts checks added for what threads state: libraries on a CUDA release line, a JAX that finds an
older CUDA than it was built against, a CPU build where the person wants the GPU, a build's own cuDNN."""

from __future__ import annotations

from typing import Any

from cudoctor import api
from cudoctor.model import Severity


def fired(facts: dict[str, Any], check: str | None = None) -> dict[str, list[str]]:
    report = api.check(facts, live=False)
    out: dict[str, list[str]] = {}
    for f in report.findings:
        if f.severity is not Severity.INFO and (check is None or f.id == check):
            out.setdefault(f.cause, []).append(f.title)
    return out


def test_a_release_line_that_wants_another_cuda_major() -> None:
    facts = {
        "container": "nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04",
        "framework_version": "faster-whisper 1.0.1",
    }
    found = fired(facts, "release-line-cuda")
    assert "CUDA 12" in found["cuda-libs-missing"][0] and "11.8" in found["cuda-libs-missing"][0]
    report = api.check(facts, live=False)
    steps = next(f.fix for f in report.findings if f.id == "release-line-cuda")
    assert any("faster-whisper<1.0" in s for s in steps)  # the line that loads CUDA 11


def test_a_release_line_on_its_own_cuda_is_silent() -> None:
    assert not fired(
        {"system_cuda": "12.4", "framework_version": "faster-whisper 1.0.1"}, "release-line-cuda"
    )
    assert not fired(
        {"system_cuda": "12.1", "framework_version": "onnxruntime-gpu 1.20.1"}, "release-line-cuda"
    )


def test_a_release_line_with_no_cuda_known_says_nothing() -> None:
    assert not fired({"framework_version": "onnxruntime-gpu 1.16"}, "release-line-cuda")
    assert fired(
        {"framework_version": "onnxruntime-gpu 1.16", "system_cuda": "cuda 12.1"}, "release-line-cuda"
    )


def test_jax_finds_an_older_cuda_than_it_was_built_against() -> None:
    facts = {
        "system_cuda": "12.1 (Found CUDA version 12010)",
        "framework_version": "jaxlib built against CUDA 12.2",
    }
    assert "cuda-libs-missing" in fired(facts, "jax-cuda-older")
    newer = {**facts, "system_cuda": "12.4"}
    assert not fired(newer, "jax-cuda-older")
    pip = {**facts, "framework_version": "jax[cuda12]==0.4.23"}  # pip's CUDA wheels, not the toolkit
    assert not fired(pip, "jax-cuda-older")
    assert not fired({"framework_version": "jaxlib built against CUDA 12.2"}, "jax-cuda-older")


def test_a_cpu_build_where_the_person_wants_the_gpu() -> None:
    assert "cpu-only-build" in fired(
        {"os": "Windows", "system_cuda": "12.3", "framework_version": "torch 2.1.0+cpu"}
    )
    assert "cpu-only-build" not in fired({"framework_version": "torch 2.1.0+cpu", "python": "3.11"})
    assert "cpu-only-build" not in fired({"framework_version": "torch 2.1.0+cu121", "system_cuda": "12.1"})


def test_a_build_that_names_its_cudnn_against_the_one_loaded() -> None:
    facts = {
        "cudnn": "8.7.0 (loaded at runtime)",
        "framework_version": "tensorflow (compiled with cuDNN 8.9.4)",
    }
    assert "cudnn-mismatch" in fired(facts)
    assert "cudnn-mismatch" not in fired({**facts, "cudnn": "8.9.6"})
    assert "cudnn-mismatch" not in fired({"framework_version": "tensorflow (compiled with cuDNN 8.9.4)"})


def test_onnxruntime_gpus_cudnn_major_against_the_cudnn_stated() -> None:
    """onnxruntime-gpu loads one cuDNN major (9 from 1.19, 8 before; its requirements page: 'built with cuDNN
    8.x is not compatible with cuDNN 9.x, and vice versa'): 1.21 beside cuDNN 8.8.1 fires, with the release
    line that loads cuDNN 8 as the first step; beside cuDNN 9 it is silent; with no cuDNN stated, nothing."""
    facts = {"framework_version": "onnxruntime-gpu 1.21.0", "system_cuda": "12.7", "cudnn": "8.8.1"}
    found = fired(facts, "release-line-cudnn")
    assert "cuDNN 9" in found["cudnn-mismatch"][0] and "8.8.1" in found["cudnn-mismatch"][0]
    steps = next(f.fix for f in api.check(facts, live=False).findings if f.id == "release-line-cudnn")
    assert "onnxruntime-gpu>=1.7,<1.19" in steps[0]
    assert not fired({**facts, "cudnn": "9.1.0"}, "release-line-cudnn")
    assert not fired(
        {"framework_version": "onnxruntime-gpu 1.21.0", "system_cuda": "12.7"}, "release-line-cudnn"
    )
    old = {"framework_version": "onnxruntime-gpu 1.17.1", "system_cuda": "12.4", "cudnn": "9.1.1"}
    assert "cuDNN 8" in fired(old, "release-line-cudnn")["cudnn-mismatch"][0]


def test_onnxruntimes_cuda12_archives_before_1_19_have_their_own_cudnn() -> None:
    """The CUDA 12 builds of 1.17 and 1.18.0 load cuDNN 8, those of 1.18.1 cuDNN 9 (microsoft/onnxruntime#20829);
    read from the archive's name ('onnxruntime-win-x64-cuda12-1.17.1'), and named in words, never as a pip package."""
    old = {
        "framework_version": "onnxruntime-win-x64-cuda12-1.17.1 (C++ package)",
        "cudnn": "9",
        "os": "Windows 11",
    }
    assert (
        "onnxruntime's CUDA 12 build 1.17.1 loads cuDNN 8"
        in fired(old, "release-line-cudnn")["cudnn-mismatch"][0]
    )
    steps = next(f.fix for f in api.check(old, live=False).findings if f.id == "release-line-cudnn")
    assert not any("onnxruntime-gpu-cuda12" in step for step in steps)  # no such pip package
    assert not fired(
        {"framework_version": "onnxruntime-linux-x64-gpu-cuda12-1.18.1.tgz", "cudnn": "9.1"},
        "release-line-cudnn",
    )
    assert not fired({"framework_version": "onnxruntime-win-x64-cuda12-1.17.1"}, "release-line-cudnn")
