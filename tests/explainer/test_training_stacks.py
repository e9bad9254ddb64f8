"""What training and serving stacks print when the GPU side fails: fp16 parameters under a GradScaler,
the Trainer's bf16 check, bitsandbytes modules that did not fit, NCCL's unique id that never came,
Lightning without a GPU, sampling from non-finite probabilities, llama.cpp buffers, TensorFlow's
convolution algorithms. Two of them are raised for real here by the installed torch; the other lines
are from the threads each signature's source names."""

from __future__ import annotations

import pytest

from tests.conftest import explained, first, fixes, ids, needs_torch, stated, torch_error

BF16 = "ValueError: Your setup doesn't support bf16/gpu. You need torch>=1.10, using Ampere GPU with cuda>=11.0\n"


@needs_torch
def test_fp16_parameters_under_a_grad_scaler_keep_float32_master_weights() -> None:
    out = torch_error(
        "p = torch.nn.Parameter(torch.ones(2, dtype=torch.float16))\n"
        "opt = torch.optim.SGD([p], lr=0.1)\n"
        "scaler = torch.amp.GradScaler('cpu')\n"
        "scaler.scale(p.float().sum()).backward()\n"
        "scaler.unscale_(opt)\n"
    )
    exp = explained(out)
    assert exp.root is not None and exp.root.sig.id == "dtype-mismatch/grad-scaler-fp16-parameters"
    assert ids(exp)[:2] == ["dtype-mismatch", "library-bug"]
    steps = fixes(exp)
    assert "torch_dtype=torch.float32" in steps[0] and "--bf16" in steps[1]


@needs_torch
def test_sampling_from_nan_probabilities_is_numerical_not_a_device_problem() -> None:
    exp = explained(torch_error("torch.multinomial(torch.tensor([float('nan'), 1.0]), 1)\n"))
    assert first(exp)["id"] == "numerical-instability"
    assert fixes(exp)[0].startswith("Run the model in bfloat16")


@pytest.mark.parametrize(
    ("facts", "want"),
    [
        ({}, ["arch-unsupported", "no-gpu-visible"]),
        ({"gpu": "Tesla V100-SXM2-32GB"}, ["arch-unsupported"]),  # compute capability 7.0: confirmed
        ({"gpu": "A100"}, ["no-gpu-visible", "cpu-only-build"]),  # it has bf16: torch saw no GPU
    ],
    ids=["no-facts", "v100", "a100"],
)
def test_the_trainers_bf16_check_reads_the_gpu_the_facts_name(facts: dict[str, str], want: list[str]) -> None:
    exp = explained(BF16, stated(facts))
    assert ids(exp)[: len(want)] == want


def test_bitsandbytes_modules_dispatched_off_the_gpu_need_a_model_that_fits() -> None:
    """hustvl/Senna#17: a 40 GB GPU fixed it."""
    exp = explained(
        "ValueError: Some modules are dispatched on the CPU or the disk. Make sure you have enough GPU RAM to fit "
        "the quantized model.\n"
    )
    assert first(exp)["id"] == "gpu-oom" and "load_in_4bit=True" in fixes(exp)[0]


@pytest.mark.parametrize(
    "line",
    [
        "torch.distributed.DistBackendError: [4] is setting up NCCL communicator and retrieving ncclUniqueId from "
        "[0] via c10d key-value store by key '0', but store->get('0') got error: Socket Timeout\n",
        "RuntimeError: [1] is setting up NCCL communicator and retreiving ncclUniqueId from [0] via c10d key-value "
        "store by key '0', but store->get('0') got error: Timeout waiting for key: default_pg/0/0 after 1800000 ms\n",
    ],
    ids=["current", "older-spelling"],
)
def test_a_unique_id_that_never_came_points_at_rank_zero(line: str) -> None:
    exp = explained(line)
    assert first(exp)["id"] == "multi-gpu-comm" and "Rank 0 creates NCCL's unique id" in str(
        first(exp)["why"]
    )
    assert fixes(exp)[0].startswith("Read rank 0's own output first")


@pytest.mark.parametrize(
    ("log", "says"),
    [
        (  # AntixK/PyTorch-VAE#81
            "pytorch_lightning.utilities.exceptions.MisconfigurationException: You requested GPUs: [1]\n"
            " But your machine only has: []\n",
            "torch lists [].",
        ),
        (  # lightning's accelerator connector
            "lightning_fabric.utilities.exceptions.MisconfigurationException: No supported gpu backend found!\n",
            "neither a CUDA GPU nor Apple's MPS",
        ),
    ],
)
def test_lightning_without_a_gpu_is_what_torch_sees(log: str, says: str) -> None:
    exp = explained(log)
    assert ids(exp)[:2] == ["no-gpu-visible", "cpu-only-build"] and says in str(first(exp)["why"])


def test_a_cpu_torch_in_the_facts_puts_the_build_first_for_lightning() -> None:
    exp = explained(
        " But your machine only has: []\n",
        stated({"framework_version": "torch 2.3.0+cpu", "gpu": "RTX 3090"}),
    )
    assert first(exp)["id"] == "cpu-only-build"


def test_llama_cpp_buffers_that_do_not_fit_send_fewer_layers_to_the_gpu() -> None:
    """ggml-org/llama.cpp#20431."""
    exp = explained(
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 144817.04 MiB on device 0: cudaMalloc failed: out "
        "of memory\nalloc_tensor_range: failed to allocate CUDA0 buffer of size 151851674624\n"
        "llama_model_load: error loading model: unable to allocate CUDA0 buffer\n"
    )
    assert exp.root is not None and exp.root.line == 1 and first(exp)["id"] == "gpu-oom"
    steps = fixes(exp)
    assert "--n-gpu-layers" in steps[0] and not any("batch size" in s.lower() for s in steps)


def test_no_convolution_algorithm_is_tensorflows_memory_first() -> None:
    """tensorflow/tensorflow#43174: memory growth fixed it."""
    exp = explained("tensorflow.python.framework.errors_impl.NotFoundError: No algorithm worked!\n")
    assert ids(exp)[:2] == ["gpu-oom", "cudnn-mismatch"]
    assert any("TF_FORCE_GPU_ALLOW_GROWTH=true" in s for s in fixes(exp))


def test_zlibwapi_missing_is_cudnns_windows_dependency() -> None:
    """NickSwardh/YoloDotNet#18: the DLL in CUDA's bin folder fixed it."""
    exp = explained("Could not locate zlibwapi.dll. Please make sure it is in your library path!\n")
    assert ids(exp)[:2] == ["cuda-libs-missing", "cudnn-mismatch"]
    assert "zlibwapi.dll" in fixes(exp)[0] and "Error code 193" in fixes(exp)[2]


@pytest.mark.parametrize(
    ("facts", "want"),
    [
        ({}, ["cpu-only-build", "shape-mismatch"]),  # no facts: the CPU reading first (GPU-only kernels)
        (
            {"framework_version": "tensorflow-cpu 2.15.0", "gpu": "RTX 3090"},
            ["cpu-only-build", "shape-mismatch"],
        ),
        ({"framework_version": "tensorflow 2.15.0", "gpu": "RTX 3090"}, ["shape-mismatch", "no-gpu-visible"]),
    ],
    ids=["no-facts", "cpu-tensorflow", "cuda-tensorflow"],
)
def test_tensorflows_grouped_convolution_reads_the_build_the_facts_name(
    facts: dict[str, str], want: list[str]
) -> None:
    exp = explained(
        "UnimplementedError:  Fused conv implementation does not support grouped convolutions for now.\n",
        stated(facts),
    )
    assert ids(exp)[:2] == want
    steps = fixes(exp)  # a CPU-only TensorFlow the facts confirm puts its reinstall step first
    assert any("jit_compile=True" in s for s in steps) and any("color_mode='grayscale'" in s for s in steps)


def test_xlas_own_libdevice_wording_is_read() -> None:
    exp = explained(
        "W tensorflow/compiler/xla/service/gpu/llvm_gpu_backend/gpu_backend_lib.cc:274] libdevice is required by "
        "this HLO module but was not found at ./libdevice.10.bc\n"
    )
    assert exp.root is not None and exp.root.sig.id == "toolchain-not-found/libdevice-not-found"


def test_a_jax_kernel_outside_xlas_pool_is_told_about_preallocation() -> None:
    """jax-ml/jax#10864: jax.random.split beyond the preallocated pool."""
    exp = explained(
        "RuntimeError: INTERNAL: CustomCall failed: jaxlib/cuda_prng_kernels.cc:30: operation cudaGetLastError() "
        "failed: out of memory\n"
    )
    assert first(exp)["id"] == "gpu-oom" and "XLA_PYTHON_CLIENT_MEM_FRACTION" in fixes(exp)[0]


@pytest.mark.parametrize(
    ("line", "sig"),
    [
        (  # tensorflow/tensorflow#57162
            "tensorflow.python.framework.errors_impl.UnknownError: JIT compilation failed. [Op:FloorMod]\n",
            "toolchain-not-found/tf-xla-jit-compilation-failed",
        ),
        (  # wutzebaer/tensorflow-5090#3
            "No PTX compilation provider is available. Neither ptxas/nvlink nor nvjtlink is available.\n",
            "toolchain-not-found/xla-no-ptx-compilation-provider",
        ),
    ],
)
def test_xla_compiling_without_ptxas_or_libdevice_is_the_toolchain(line: str, sig: str) -> None:
    exp = explained(line)
    assert exp.root is not None and exp.root.sig.id == sig and first(exp)["id"] == "toolchain-not-found"
    assert any("--xla_gpu_cuda_data_dir" in s for s in fixes(exp))
