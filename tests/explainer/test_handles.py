"""Round 38: a library that could not start (a cuBLAS or cuDNN handle, a cuRAND kernel), read
with what the log says about the GPU's memory at that moment. Lines are from the threads named."""

from __future__ import annotations

import pytest

from tests.explainer.helpers import explain_text, rooted, top

# jax-ml/jax#22626: JAX had preallocated its 75%; the cause was a cuDNN other than jaxlib's 8.6
CUDNN_HANDLE = (
    "2024-07-19 15:49:01.341533: E external/xla/xla/stream_executor/cuda/cuda_dnn.cc:439] "
    "Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n"
)
PLENTY_FREE = (
    "2024-07-19 15:49:01.341571: E external/xla/xla/stream_executor/cuda/cuda_dnn.cc:443] "
    "Memory usage: 2624061440 bytes free, 12524191744 bytes total.\n"
)


def test_a_cudnn_handle_that_fails_with_gigabytes_free_is_not_memory() -> None:
    exp = explain_text(CUDNN_HANDLE + PLENTY_FREE)
    assert top(exp)[0] == "cudnn-mismatch"
    oom = next(c for c in exp.causes if c.id == "gpu-oom")
    assert any("2.4 of 11.7 GiB" in r for r in oom.reasons)


def test_without_the_memory_line_a_cudnn_handle_failure_still_reads_as_memory_first() -> None:
    assert top(explain_text(CUDNN_HANDLE))[0] == "gpu-oom"


def test_the_memory_line_alone_is_no_error() -> None:
    exp = explain_text(PLENTY_FREE)
    assert exp.root is None and exp.causes == []


def test_xla_gemm_autotuner_without_cublas_is_memory_taken_by_another_framework() -> None:
    # jax-ml/jax#13504: TensorFlow in the same process had taken the memory (allow_growth fixed it)
    line = (
        "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: RET_CHECK failure (external/org_tensorflow/"
        "tensorflow/compiler/xla/service/gpu/gemm_algorithm_picker.cc:327) "
        "stream->parent()->GetBlasGemmAlgorithms(stream, &algorithms)"
    )
    exp = rooted(line, "gpu-oom/xla-gemm-algorithms-unavailable")
    assert top(exp)[0] == "gpu-oom"
    assert any("XLA_PYTHON_CLIENT_PREALLOCATE=false" in f for f in exp.causes[0].fixes)


# BVLC/caffe#4324: a GTX 1080 with a CUDA 7.5 build
CURAND = (
    "F0616 13:17:34.736345 13420 math_functions.cu:408] Check failed: status == "
    "CURAND_STATUS_SUCCESS (201 vs. 0)  CURAND_STATUS_LAUNCH_FAILURE\n"
    "*** Check failure stack trace: ***\n"
    "    @     0x7f544737f6b1  caffe::caffe_gpu_rng_gaussian<>()\n"
)
# unslothai/unsloth#679: Triton's own search for libcuda.so, with libcuda.so.1 present
TRITON_LIBCUDA = (
    "AssertionError: libcuda.so cannot found!\n"
    "Possible files are located at ['/lib/x86_64-linux-gnu/libcuda.so.1'].Please create a symlink of "
    "libcuda.so to any of the file.\n"
)


@pytest.mark.parametrize(
    ("log", "sig", "first_two", "step"),
    [
        (
            CURAND,
            "arch-unsupported/curand-launch-failure",
            ["arch-unsupported", "multiple-toolkits"],
            "Pascal (GTX 10xx, cc 6.x) CUDA 8",
        ),
        (
            TRITON_LIBCUDA,
            "cuda-libs-missing/triton-libcuda-not-found",
            ["cuda-libs-missing", "library-bug"],
            "TRITON_LIBCUDA_PATH",
        ),
    ],
)
def test_a_library_that_could_not_launch_or_load_reads_its_cause_and_step(
    log: str, sig: str, first_two: list[str], step: str
) -> None:
    exp = rooted(log, sig)
    assert top(exp)[:2] == first_two
    assert any(step in f for f in exp.causes[0].fixes)
