"""Checks on stated facts alone, in the forms the blind scenario tables brought: a driver known only by
the CUDA it runs, a TensorFlow release whose every GPU build is too old for the GPU, a container started
without its GPUs, a CPU build beside a driver."""

from __future__ import annotations

from cudoctor import api
from cudoctor.model import Severity


def _fired(facts: dict[str, str]) -> dict[str, str]:
    return {
        f.cause: f.title for f in api.check(facts, live=False).findings if f.severity is not Severity.INFO
    }


def test_a_driver_known_by_its_cuda_alone_is_checked_with_minor_version_compatibility() -> None:
    too_old = _fired({"driver": "reports CUDA 12020 (12.2)", "framework_version": "torch 2.9.0+cu130"})
    assert "driver-too-old" in too_old and too_old["driver-too-old"].startswith(
        "The driver (supports CUDA 12.2)"
    )
    assert "driver-too-old" not in _fired(
        {"driver": "reports CUDA 12020", "framework_version": "torch 2.9.0+cu129"}
    )
    assert "driver-too-old" not in _fired(
        {"framework_version": "torch 2.9.0+cu130"}
    )  # nothing known of the driver


def test_a_release_whose_gpu_builds_all_predate_the_gpu_fires_whatever_the_build() -> None:
    got = _fired({"framework_version": "TensorFlow 1.14", "gpu": "A6000"})
    assert "arch-unsupported" in got and "CUDA 10.0" in got["arch-unsupported"]
    assert "arch-unsupported" not in _fired(
        {"framework_version": "TensorFlow 1.14", "gpu": "GeForce GTX 1080"}
    )
    assert "arch-unsupported" not in _fired({"framework_version": "TensorFlow 2.12", "gpu": "A6000"})


def test_a_container_started_without_its_gpus() -> None:
    got = _fired({"container": "docker run -it test (no --gpus)", "other": "nvidia-smi: command not found"})
    assert "no-gpu-visible" in got
    assert "no-gpu-visible" not in _fired({"container": "docker run --gpus all test"})


def test_a_cpu_build_beside_a_stated_driver_fires() -> None:
    got = _fired(
        {"driver": "515.105.01", "framework_version": "jax 0.4.31", "other": "jax.devices: [CpuDevice(id=0)]"}
    )
    assert "cpu-only-build" in got
    assert "cpu-only-build" not in _fired(
        {"framework_version": "jax 0.4.31", "other": "jax.devices: [CpuDevice(id=0)]"}
    )


def test_tensorflow_built_with_cuda_11_0_needs_that_minor() -> None:
    """CUDA 11.0 still shipped libcusolver.so.10; 11.1 has .so.11 (tensorflow/tensorflow#45848)."""
    assert "cuda-libs-missing" in _fired({"framework_version": "tensorflow-gpu 2.4.0", "system_cuda": "11.1"})
    assert "cuda-libs-missing" not in _fired(
        {"framework_version": "tensorflow-gpu 2.4.0", "system_cuda": "11.0"}
    )
    assert "cuda-libs-missing" not in _fired({"framework_version": "tensorflow 2.6.0", "system_cuda": "11.4"})


def test_a_container_image_needing_a_newer_cuda_than_the_driver_fires_without_minor_compatibility() -> None:
    """nvidia-container-cli checks the image's cuda>=X.Y as is (tabbyml/tabby: cuda>=12.9 on a 570 driver)."""
    got = _fired(
        {"driver": "570.169", "container": "tabby image (nvidia-container-cli: requirement cuda>=12.9)"}
    )
    assert "driver-too-old" in got and "CUDA 12.9 the container image requires" in got["driver-too-old"]
    assert "driver-too-old" in _fired(
        {"driver": "v535 max", "container": "an image built FROM nvidia/cuda:12.8.0-runtime"}
    )
    assert "driver-too-old" not in _fired({"driver": "575.51.03", "container": "requirement cuda>=12.9"})
    assert "driver-too-old" not in _fired({"driver": "550.54.14", "container": "ARG CUDA_VERSION=12.4.1"})


def test_a_cpu_without_avx_named_in_the_facts_fires_and_a_newer_one_stays_silent() -> None:
    """knowledge/cpus.toml: families without AVX, as people write their CPU (set 5's TF 2.12 on a Celeron)."""
    for cpu in (
        "CPU: Intel(R) Celeron(R) N4505 @ 2.00GHz",
        "Intel(R) Xeon(R) CPU W3520 @ 2.67GHz",
        "Core2 Duo E8400",
        "Intel Core i5-650",
        "AMD Phenom II X4 965",
    ):
        assert "cpu-blas-runtime" in _fired({"framework_version": "tensorflow 2.12", "other": cpu}), cpu
    for cpu in (
        "Intel Core i7-9700K",
        "Intel Core i5-6500",
        "AMD Ryzen 9 5950X",
        "Intel Xeon Gold 6248",
        "Pentium Gold G7400",
    ):
        assert "cpu-blas-runtime" not in _fired({"framework_version": "tensorflow 2.12", "other": cpu}), cpu
    assert "cpu-blas-runtime" not in _fired({"other": "Intel Celeron N4505"})  # no framework that needs AVX
