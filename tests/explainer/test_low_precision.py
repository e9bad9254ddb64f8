"""Low-precision formats the GPU cannot run: FP8 matrix products below Ada, the Hopper-only FP8 checks
of early releases, and vLLM's quantized formats below their minimum compute capability. Lines are
from the threads each signature's source names."""

from __future__ import annotations

import pytest

from tests.conftest import explained, first, fixes, stated

SCALED_MM = "RuntimeError: torch._scaled_mm is only supported on CUDA devices with compute capability >= 9.0 or 8.9, or ROCm MI300+\n"


@pytest.mark.parametrize(
    "log",
    [
        SCALED_MM,  # kijai/ComfyUI-HunyuanVideoWrapper#98, aredden/flux-fp8-api#30
        # NVIDIA/TransformerEngine#1159
        " assert fp8_available, reason_for_no_fp8\nAssertionError: Device compute capability 8.9 or higher required for FP8 execution.\n",
        # 1038lab/ComfyUI-QwenVL#28
        "ERROR: FP8 models require a GPU with Compute Capability 8.9 or higher (e.g., RTX 4090). Your GPU's capability is 8.6. Please select a non-FP8 model.\n",
    ],
)
def test_fp8_compute_below_ada_says_which_gpus_have_fp8_and_how_to_turn_it_off(log: str) -> None:
    exp = explained(log)
    assert exp.root is not None and exp.root.sig.id == "arch-unsupported/fp8-compute-needs-ada-or-hopper"
    cause = first(exp)
    assert cause["id"] == "arch-unsupported" and "Ada (compute capability 8.9" in str(cause["why"])
    assert any("_fast" in f and "fp8_autocast(enabled=False)" in f for f in fixes(exp))


def test_an_ampere_gpu_in_the_facts_confirms_it_and_an_ada_one_does_not() -> None:
    ampere = explained(SCALED_MM, stated({"gpu": "RTX 3090"}))
    assert any("needs 8.9 or newer" in r for r in ampere.causes[0].reasons)
    ada = explained(SCALED_MM, stated({"gpu": "RTX 4090"}))
    # the RTX 4090 has compute capability 8.9: the facts rule the reading out rather than confirm it
    assert ada.causes[0].reasons == [
        "fact: RTX 4090 has compute capability 8.9, which has what this feature needs (8.9 or newer)"
    ]
    assert ampere.causes[0].score > explained(SCALED_MM).causes[0].score > ada.causes[0].score


@pytest.mark.parametrize(
    "log",
    [
        "RuntimeError: torch._scaled_mm is only supported on devices with compute capability >= 9.0)\n",  # pytorch#118703
        "AssertionError: Device compute capability 9.x required for FP8 execution.\n",  # TransformerEngine#15
    ],
)
def test_a_hopper_only_fp8_check_is_an_old_release_on_ada(log: str) -> None:
    exp = explained(log)
    assert exp.root is not None and exp.root.sig.id == "arch-unsupported/fp8-hopper-only-release"
    assert first(exp)["id"] == "arch-unsupported"
    assert any(f.startswith("On Ada (8.9): upgrade") for f in fixes(exp))


@pytest.mark.parametrize(
    ("log", "have", "need"),
    [
        (  # vllm-project/vllm#1488
            "The quantization method awq is not supported for the current GPU. Minimum capability: 75. Current capability: 70.\n",
            "7.0",
            "7.5",
        ),
        (  # vllm-project/llm-compressor#1258 (compressed-tensors raises its message as a tuple)
            "RuntimeError: ('Quantization scheme is not supported for ', 'the current GPU. Min capability: 80. ', "
            "'Current capability: 70.')\n",
            "7.0",
            "8.0",
        ),
        (  # a capability of 10.0 is written 100
            "ValueError: The quantization method fp8 is not supported for the current GPU. Minimum capability: 100. "
            "Current capability: 86\n",
            "8.6",
            "10.0",
        ),
    ],
)
def test_a_quantized_format_below_its_minimum_capability_names_both_with_the_dot(
    log: str, have: str, need: str
) -> None:
    exp = explained(log)
    assert exp.root is not None and exp.root.sig.id == "arch-unsupported/quantization-below-min-capability"
    cause = first(exp)
    assert cause["id"] == "arch-unsupported"
    assert f"This GPU is {have}; the kernels for this checkpoint's format need {need}." in str(cause["why"])
    assert any(f"compute capability {need} or newer" in f for f in fixes(exp))


def test_fp8_weights_through_marlin_are_not_an_error() -> None:
    warning = (
        "WARNING 11-07 19:34:49 marlin_utils_fp8.py:50] Your GPU does not have native support for FP8 computation "
        "but FP8 quantization is being used. Weight-only FP8 compression will be used leveraging the Marlin kernel. "
        "This may degrade performance for compute-heavy workloads.\n"
    )
    alone = explained(
        warning + "INFO 11-07 19:35:02 gpu_model_runner.py] Model loading took 28.9 GiB memory\n"
    )
    assert alone.root is None and alone.causes == []
    assert "vllm-fp8-weight-only-marlin" in alone.scan.benign
    failing = explained(warning + SCALED_MM)
    assert failing.root is not None and failing.root.line == 2


BNB_CPU = (  # zjunlp/DeepKE#503
    "bin D:\\ProgramData\\Anaconda3\\envs\\deepke-llm\\lib\\site-packages\\bitsandbytes\\libbitsandbytes_cpu.so\n"
    "D:\\ProgramData\\Anaconda3\\envs\\deepke-llm\\lib\\site-packages\\bitsandbytes\\cextension.py:34: UserWarning: The "
    "installed version of bitsandbytes was compiled without GPU support. 8-bit optimizers, 8-bit multiplication, and "
    "GPU quantization are unavailable.\n"
    '  warn("The installed version of bitsandbytes was compiled without GPU support. "\n'
    "'NoneType' object has no attribute 'cadam32bit_grad_fp32'\n"
)


def test_bitsandbytes_on_its_cpu_library_says_upgrade_for_windows_cuda() -> None:
    exp = explained(BNB_CPU)
    assert exp.root is not None and exp.root.sig.id == "cpu-only-build/bitsandbytes-cpu-library-loaded"
    assert [c.id for c in exp.causes[:2]] == ["cpu-only-build", "library-bug"]
    assert fixes(exp)[0].startswith(
        "pip install -U bitsandbytes: 0.43 and later ship the CUDA libraries for Windows"
    )
    on_windows = explained(BNB_CPU, stated({"os": "Windows 11"}))
    assert any("Windows" in r for r in on_windows.causes[0].reasons)
    assert on_windows.causes[0].score > exp.causes[0].score
