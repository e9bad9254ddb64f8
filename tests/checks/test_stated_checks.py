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
        {
            "driver": "v535 max",
            "container": "an image built FROM nvidia/cuda:12.8.0-runtime",
            "gpu": "RTX 3090",
        }
    )
    assert "driver-too-old" not in _fired({"driver": "575.51.03", "container": "requirement cuda>=12.9"})
    assert "driver-too-old" not in _fired({"driver": "550.54.14", "container": "ARG CUDA_VERSION=12.4.1"})


def test_a_cuda_12_image_on_a_forward_compatibility_branch_runs_on_datacenter_gpus_only() -> None:
    """NVIDIA's CUDA 12 images admit the 470, 535 and 550 branches for every brand but GeForce and TITAN
    (NVIDIA_REQUIRE_CUDA's brand clauses): alphafold3#18's CUDA 12.6 image runs on 535.183.01."""
    image = {"driver": "535.183.01", "container": "an image built FROM nvidia/cuda:12.6.0-base-ubuntu22.04"}
    assert "driver-too-old" not in _fired({**image, "gpu": "NVIDIA A100-SXM4-40GB"})
    assert "driver-too-old" in _fired({**image, "gpu": "GeForce RTX 4090"})
    assert "driver-too-old" in _fired(image)  # brand unknown: a warning that names the command showing it
    assert "driver-too-old" not in _fired(
        {**image, "os": "AKS GPU node image"}
    )  # a cloud's GPUs are datacenter ones
    refused = {**image, "other": "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.6"}
    assert "driver-too-old" in _fired(refused)  # the refusal itself is stated
    assert "driver-too-old" in _fired(
        {**image, "driver": "530.30.02", "gpu": "NVIDIA A100"}
    )  # not such a branch


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


def test_a_cpu_build_told_by_torch_version_cuda_or_by_conda_beside_a_cuda_request() -> None:
    """turingaicloud/quickstart#3 (torch.version.cuda prints None), conda/conda#11001 (py3.6_cpu_0 for a
    cudatoolkit=10.1 request): a CPU build where a GPU was wanted."""
    got = _fired({"framework_version": "pytorch==1.10.1 (conda env); torch.version.cuda prints None"})
    assert "cpu-only-build" in got
    conda = {
        "framework_version": "pytorch 1.10.0 build py3.6_cpu_0",
        "other": "requested with: conda install pytorch cudatoolkit=10.1 -c pytorch",
    }
    assert "cpu-only-build" in _fired(conda)
    assert "cpu-only-build" not in _fired(
        {**conda, "other": "requested with: conda install pytorch cpuonly -c pytorch"}
    )
    assert "cpu-only-build" not in _fired(
        {"framework_version": "pytorch==1.10.1; torch.version.cuda prints 10.2"}
    )


def test_pypis_torch_on_native_windows_is_the_cpu_wheel() -> None:
    """ultralytics/ultralytics#13903: torch-2.3.1-cp39-cp39-win_amd64.whl pulled from PyPI by a dependency."""
    wheel = {
        "os": "Windows 10",
        "framework_version": "torch-2.3.1-cp39-cp39-win_amd64.whl, installed from PyPI by pip install ultralytics",
        "gpu": "RTX 3060",
    }
    assert "cpu-only-build" in _fired(wheel)
    assert "cpu-only-build" not in _fired(
        {**wheel, "framework_version": "torch 2.3.1+cu121 (pip, PyTorch's index)"}
    )
    linux = {
        **wheel,
        "os": "Ubuntu 22.04",
        "framework_version": "torch-2.3.1-cp39-cp39-manylinux1_x86_64.whl from PyPI",
    }
    assert "cpu-only-build" not in _fired(linux)  # Linux's PyPI wheel has CUDA
    assert "cpu-only-build" not in _fired(
        {"os": "Windows 10", "framework_version": "torch 2.3.1", "gpu": "RTX 3060"}
    )  # how is unsaid


def test_a_driver_that_reports_the_toolkits_cuda_runs_it_whatever_the_table_row() -> None:
    """tensorflow/tensorflow#41374: driver 440.31 reporting CUDA 10.2 (the table's 10.2 row says 440.33)."""
    reported = {"driver": "440.31 (nvidia-smi CUDA Version: 10.2)", "system_cuda": "CUDA 10.2"}
    assert "driver-too-old" not in _fired(reported)
    assert "driver-too-old" in _fired({**reported, "driver": "440.31"})  # known only from the table


def test_cuda_11_0_runs_on_its_own_drivers_below_the_minor_version_compatibility_floor() -> None:
    """tensorflow/tensorflow#51641: TensorFlow 2.4 (CUDA 11.0) on a 450.66 kernel driver; the 11.x
    compatibility floor (450.80.02) is for 11.1 and newer."""
    got = _fired({"framework_version": "TensorFlow 2.4.1", "driver": "450.66"})
    assert "driver-too-old" not in got
    assert "driver-too-old" in _fired({"framework_version": "torch 1.9.0+cu111", "driver": "450.66"})


def test_tensorflows_report_of_two_driver_versions_is_a_stale_libcuda() -> None:
    got = _fired(
        {
            "framework_version": "TensorFlow 2.4.1",
            "driver": "kernel module 450.66",
            "other": "libcuda reported version is: 450.142.0 kernel reported version is: 450.66.0",
        }
    )
    assert "multiple-toolkits" in got and "450.142" in got["multiple-toolkits"]


def test_a_docker_run_command_without_gpus_is_a_container_started_without_them() -> None:
    """zhxu-cuhk/TopoBoundary: 'sudo docker run -it zhxu_topoboundary', then nvidia-smi not found inside."""
    assert "no-gpu-visible" in _fired({"container": "sudo docker run -it zhxu_topoboundary"})
    for asked in (
        "docker run --gpus all -it img",
        "docker run --runtime=nvidia img",
        "nvidia-docker run img",
    ):
        assert "no-gpu-visible" not in _fired({"container": asked}), asked


def test_a_docker_run_that_passes_the_gpus_or_is_only_prose_is_not_read_as_without_them() -> None:
    """Review of session 40: quoted arguments before --gpus, a continued line, prose about docker run."""
    for said in (
        'docker run -v "$PWD":/ws --gpus all -it nvcr.io/nvidia/pytorch:24.01-py3',
        'docker run -e "NVIDIA_VISIBLE_DEVICES=all" --runtime=nvidia img',
        "sudo docker run -it --rm \\",
        "I used docker run with the image from the readme",
    ):
        assert "no-gpu-visible" not in _fired({"container": said}), said
    # the textbook mistake: the -gpu image tag is no --gpus
    assert "no-gpu-visible" in _fired({"container": "docker run -it tensorflow/tensorflow:latest-gpu python"})


def test_pip_pointed_at_pytorchs_cuda_index_on_windows_is_no_cpu_wheel() -> None:
    facts = {
        "os": "Windows 10",
        "gpu": "RTX 3060",
        "framework_version": "torch 2.0.1",
        "other": "pip install torch --extra-index-url https://download.pytorch.org/whl/cu118\nLooking in indexes: https://pypi.org/simple, https://download.pytorch.org/whl/cu118",
    }
    assert "cpu-only-build" not in _fired(facts)
