"""Round 41: AMD GPUs through ROCm/HIP builds. The steps must speak of gfx targets and rocm-smi,
not of CUDA architectures and nvidia-smi. Lines are from the threads the signatures name."""

from __future__ import annotations

import pytest

from tests.explainer.helpers import explain_text, rooted, top


@pytest.mark.parametrize(
    "line",
    [
        "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!",
        "RuntimeError: HIP error: invalid device function",
    ],
)
def test_a_gpu_target_the_rocm_build_lacks_names_the_override(line: str) -> None:
    exp = rooted(line, "arch-unsupported/hip-no-code-object")
    assert top(exp)[0] == "arch-unsupported"
    fixes = exp.causes[0].fixes
    assert any("HSA_OVERRIDE_GFX_VERSION=10.3.0" in f for f in fixes)
    assert not any("TORCH_CUDA_ARCH_LIST" in f or "nvidia-smi" in f for f in fixes)


def test_cuda_invalid_device_function_keeps_its_cuda_reading() -> None:
    exp = rooted(
        "RuntimeError: CUDA error: invalid device function", "arch-unsupported/invalid-device-function"
    )
    assert not any("HSA_OVERRIDE_GFX_VERSION" in f for c in exp.causes for f in c.fixes)


def test_hip_out_of_memory_points_at_rocm_smi() -> None:
    line = (
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 80.00 MiB. GPU 0 has a total capacity "
        "of 15.98 GiB of which 84.00 MiB is free."
    )
    exp = rooted(line, "gpu-oom/hip-out-of-memory")
    fixes = exp.causes[0].fixes
    assert top(exp)[0] == "gpu-oom" and fixes[0].startswith("See what holds the AMD GPU's memory: rocm-smi")
    assert not any("nvidia-smi" in f for f in fixes)


def test_cuda_out_of_memory_is_not_read_as_hip() -> None:
    exp = explain_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB")
    assert exp.root is not None and exp.root.sig.id == "gpu-oom/torch-out-of-memory"
