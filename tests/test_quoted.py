"""An error quoted in the stated facts: `check --facts` reads it as explain does and reports the cause it
names, where no check on the stated versions found that cause."""

from __future__ import annotations

from cudoctor import api, quoted
from cudoctor.facts.stated import from_stated

DRIVER = (
    "RuntimeError: The NVIDIA driver on your system is too old (found version 11040), raised when training"
)


def causes(facts: dict[str, str]) -> dict[str, str]:
    return {f.id: f.cause for f in api.check(facts, live=False).findings}


def test_a_quoted_error_that_names_its_cause_is_a_finding() -> None:
    found = causes({"other": DRIVER})
    assert found.get("quoted-error") == "driver-too-old"
    cudnn = causes(
        {
            "other": "RuntimeError: cuDNN version mismatch: PyTorch was compiled against 7102 but linked against 7600"
        }
    )
    assert cudnn.get("quoted-error") == "cudnn-mismatch"
    report = api.check({"other": DRIVER}, live=False)
    quoted_finding = next(f for f in report.findings if f.id == "quoted-error")
    assert "found version 11040" in quoted_finding.title and quoted_finding.confidence == "likely"
    assert quoted_finding.fix  # the steps explain gives, planned from the same facts


def test_nothing_quoted_or_nothing_that_names_a_cause_stays_silent() -> None:
    assert "quoted-error" not in causes({"framework_version": "torch 2.1.0+cu121", "gpu": "RTX 3090"})
    assert "quoted-error" not in causes({"other": "training works on the CPU, slow on the GPU"})
    assert "quoted-error" not in causes({"other": "Segmentation fault (core dumped)"})  # names no cause
    assert quoted.quoted_text(from_stated({})) == ""


def test_a_cause_the_stated_versions_show_is_not_reported_twice() -> None:
    facts = {"driver": "450.80.02", "framework_version": "torch 2.1.0+cu121", "other": DRIVER}
    found = api.check(facts, live=False).findings
    assert "quoted-error" not in {f.id for f in found}
    assert any(f.cause == "driver-too-old" for f in found)  # the driver check says it, with the versions


def test_the_fact_is_filled_once_and_only_from_stated_text() -> None:
    snap = quoted.fill(from_stated({"other": DRIVER}))
    said = snap.value("stated.quoted_error")
    assert said["cause"] == "driver-too-old" and said["signature"].startswith("driver-too-old/")
    assert quoted.fill(snap) is snap


def test_a_library_quoted_as_the_one_that_could_not_be_loaded_names_its_cause() -> None:
    found = causes(
        {
            "framework_version": "TensorFlow 2.5.0",
            "other": "title: CUDA 11.2/TF 2.5.0 Failed to load libcudnn.so.8",
        }
    )
    assert (
        found.get("quoted-error") == "cudnn-mismatch"
    )  # a missing cuDNN library is cudnn-mismatch (taxonomy)
    assert "quoted-error" not in causes(
        {"other": "Possibly insufficient driver version: 390.77.0"}
    )  # a hedge


JAX_CPU = (
    "WARNING:2025-05-27 20:22:28,949:jax._src.xla_bridge:791: An NVIDIA GPU may be present on this machine, "
    "but a CUDA-enabled jaxlib is not installed. Falling back to cpu."
)


def test_a_line_that_names_its_cause_unless_an_earlier_error_came_first_counts_when_quoted_alone() -> None:
    """sashakolpakov/dire-jax#14: JAX's CPU-fallback warning is the only error quoted (its signature has
    specificity 2, since JAX prints it after a CUDA plugin's own failure too)."""
    assert causes({"other": JAX_CPU}).get("quoted-error") == "cpu-only-build"
    plugin = (
        "E external/xla/xla/stream_executor/cuda/cuda_driver.cc:152] failed call to cuInit: "
        "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected\n" + JAX_CPU
    )
    assert causes({"other": plugin}).get("quoted-error") != "cpu-only-build"


def test_an_insufficient_driver_quoted_where_no_gpu_reaches_the_program_is_that_missing_gpu() -> None:
    """CUDA calls a driver it cannot reach insufficient: with only an Intel GPU (roop-unleashed#457) or under a
    Windows that gives WSL2 no GPU (NVIDIA/nvidia-docker#1437) the facts' no-GPU finding says why, and no
    driver-too-old is quoted beside it."""
    error35 = "CUDA failure 35: CUDA driver version is insufficient for CUDA runtime version"
    intel = causes(
        {
            "os": "Windows",
            "gpu": "Intel",
            "framework_version": "onnxruntime (CUDA provider)",
            "other": error35,
        }
    )
    assert "quoted-error" not in intel and intel.get("no-nvidia-gpu") == "no-gpu-visible"
    wsl = causes({"os": "Windows 10 Version 1909 build 18363, WSL2", "other": error35})
    assert "quoted-error" not in wsl and wsl.get("wsl-windows-too-old") == "no-gpu-visible"
    nvidia = causes({"gpu": "RTX 3060", "other": error35})
    assert nvidia.get("quoted-error") == "driver-too-old"  # an NVIDIA GPU: the message stands
