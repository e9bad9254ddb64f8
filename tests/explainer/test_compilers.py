"""explain on nvcc, ptxas, NVRTC and the driver's PTX JIT: CUDA_HOME written as a list, architectures a
toolkit does not know or dropped, NVRTC's -arch against the CUDA in the facts."""

from __future__ import annotations

import pytest

from cudoctor.explainer import rank
from tests.conftest import explained, ids, stated
from tests.explainer.helpers import explain_text, top


@pytest.mark.parametrize(
    ("line", "home"),
    [
        (
            "unable to execute '/usr/local/cuda-10.0:/usr/local/cuda-10.0:/bin/nvcc': No such file or directory",
            "/usr/local/cuda-10.0",
        ),
        ("/bin/sh: 1: :/usr/local/cuda/bin/nvcc: not found", "/usr/local/cuda"),
        (
            "unable to execute ':/usr/local/cuda-10.0/bin/bin/nvcc': No such file or directory",
            "/usr/local/cuda-10.0",
        ),
        (
            "error: [Errno 2] No such file or directory: '/usr/local/cuda-11.8:/bin/nvcc'",
            "/usr/local/cuda-11.8",
        ),
    ],
)
def test_cuda_home_written_as_a_list_gets_the_directory_it_meant(line: str, home: str) -> None:
    """Real lines from mmdetection#944/#1756, detectron2#1991 and GroundingDINO#165."""
    exp = explain_text(line + "\n")
    assert top(exp)[0] == "env-path-misconfig"
    assert rank.cause_json(exp.causes, 0)["fix"][0].startswith(f"export CUDA_HOME={home}  (")
    assert top(explain_text("/bin/sh: 1: nvcc: not found\n"))[0] == "toolchain-not-found"


def test_round_12_wordings() -> None:
    dst = explain_text(
        "tensorflow.python.framework.errors_impl.InternalError: Failed copying input tensor from "
        "/job:localhost/replica:0/task:0/device:CPU:0 to /job:localhost/replica:0/task:0/device:GPU:0 "
        "in order to run _EagerConst: Dst tensor is not initialized.\n"
    )
    assert top(dst)[0] == "gpu-oom" and "batch" in dst.causes[0].fixes[0]
    triton = explain_text(
        "RuntimeError: Found Tesla P40 which is too old to be supported by the triton GPU compiler, which is "
        "used as the backend. Triton only supports devices of CUDA Capability >= 7.0, but your device is of "
        "CUDA capability 6.1\n"
    )
    assert top(triton) == ["arch-unsupported"] and "which Tesla P40 lacks" in triton.causes[0].fixes[0]
    header = explain_text('cuda_fp16.h(129): catastrophic error: cannot open source file "vector_types.h"\n')
    assert top(header)[0] == "toolchain-not-found" and "vector_types.h" in header.causes[0].fixes[0]
    # a temp .cu file that cannot be opened is not a missing header (cupy#2100: a non-ASCII user path)
    assert explain_text('Catastrophic error: cannot open source file "C:\\Temp\\x.cubin.cu"\n').causes == []


def test_round_19_nvrtc_cannot_open_its_temp_file_under_a_non_ascii_user_name() -> None:
    log = (
        "NVRTCError: NVRTC_ERROR_COMPILATION (6)\n\n"
        'CompileException: Catastrophic error: cannot open source file "C:\\Users\\黄\\AppData\\Local\\Temp\\tmpg4\\7cb9_2.cubin.cu"\n'
    )
    exp = explain_text(log)
    assert exp.root is not None and exp.root.line == 3  # the specific line, not the generic NVRTC status
    assert top(exp)[0] == "env-path-misconfig"
    fix = rank.cause_json(exp.causes, 0)["fix"][0]
    assert "C:\\Users\\黄\\AppData" in fix and "set TEMP=C:\\tmp" in fix
    ascii_path = explain_text(log.replace("黄", "huang"))  # an ASCII temp path: the usual NVRTC reading stays
    assert top(ascii_path)[0] != "env-path-misconfig"


# ---------------------------------------------------------------- NVRTC's -arch against the CUDA in the facts
def _cupy_nvrtc_log(arch: str) -> str:
    """CuPy's dump of a failed NVRTC compile (cupy/cupy#1651), with the -arch it asked for."""
    return (
        "NVRTC compilation error: nvrtc: error: invalid value for --gpu-architecture (-arch)\n\n-----\nName: \n"
        f"Options: -I/home/u/miniconda3/lib/python3.6/site-packages/cupy/core/include -ftz=true -arch={arch}\n"
        "CUDA source:\n1 \n-----\n"
        "cupy.cuda.compiler.CompileException: nvrtc: error: invalid value for --gpu-architecture (-arch)\n"
    )


def test_nvrtc_arch_older_than_the_cuda_names_the_last_toolkit_for_it() -> None:
    exp = explain_text(_cupy_nvrtc_log("compute_21"), {"system_cuda": "9.1"})
    assert top(exp)[0] == "arch-unsupported"
    fix = rank.cause_json(exp.causes, 0)["fix"][0]
    assert fix.startswith(
        "This GPU (compute capability 2.1) is older than CUDA 9.1 supports: CUDA 8.0 is the last"
    )
    assert (
        "the log asks NVRTC for compute capability 2.1; CUDA 9.1 builds for 3.0 to 7.2"
        in exp.causes[0].reasons
    )


def test_nvrtc_invalid_option_without_its_arch_takes_the_stated_gpus() -> None:
    """CuPy 13 under CUDA 13.0 on a GTX 1080 (cupy/cupy#9475) prints only NVRTC_ERROR_INVALID_OPTION:
    the option refused is the GPU's own architecture, which CUDA 13 dropped."""
    line = "cupy_backends.cuda.libs.nvrtc.NVRTCError: NVRTC_ERROR_INVALID_OPTION (5)\n"
    exp = explain_text(line, {"gpu": "GTX 1080", "system_cuda": "13.0"})
    assert top(exp)[0] == "arch-unsupported"
    assert "NVRTC was asked for GTX 1080's compute capability 6.1; CUDA 13.0 builds for 7.5 to 12.1" in (
        exp.causes[0].reasons
    )
    assert "CUDA 12.9 is the last toolkit" in rank.cause_json(exp.causes, 0)["fix"][0]
    # a GPU the CUDA does build for confirms nothing; no GPU at all leaves the priors
    fits = explain_text(line, {"gpu": "RTX 4090", "system_cuda": "13.0"})
    bare = explain_text(line, {})
    assert [c.id for c in bare.causes[:2]] == ["arch-unsupported", "multiple-toolkits"]
    assert fits.causes[0].score == pytest.approx(bare.causes[0].score)
    assert bare.causes[0].score < exp.causes[0].score


def test_nvrtc_arch_newer_than_the_cuda_names_the_first_toolkit_that_knows_it() -> None:
    exp = explain_text(_cupy_nvrtc_log("compute_89"), {"system_cuda": "11.3"})
    fix = rank.cause_json(exp.causes, 0)["fix"][0]
    assert fix.startswith("This GPU (compute capability 8.9) is newer than CUDA 11.3 knows")
    assert "built with CUDA 11.8 or newer" in fix


def test_nvrtc_arch_within_the_cudas_range_is_not_confirmed() -> None:
    within = explain_text(_cupy_nvrtc_log("compute_61"), {"system_cuda": "9.1"})
    without = explain_text(_cupy_nvrtc_log("compute_61"), {})
    assert within.causes[0].score == pytest.approx(without.causes[0].score)
    # no CUDA fact: the span of toolkits that build for it, as a step to check
    assert any(
        f.startswith("Compute capability 6.1 needs a CuPy/PyTorch whose CUDA is between 8.0 and ")
        for f in rank.cause_json(without.causes, 0)["fix"]
    )


def test_an_nvrtc_options_line_alone_is_not_an_error() -> None:
    exp = explain_text("Options: -I/x/cupy/core/include -ftz=true -arch=compute_80\n", {})
    assert exp.root is None


def test_named_symbol_not_found_is_code_built_for_another_gpu() -> None:
    exp = explain_text("CUDA error cudaErrorSymbolNotFound [bulk.cuh:239]: named symbol not found\n", {})
    assert top(exp)[:2] == ["arch-unsupported", "driver-too-old"]
    assert "CMAKE_CUDA_ARCHITECTURES" in rank.cause_json(exp.causes, 0)["fix"][0]


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: UNKNOWN: PTX JIT compiler library not found",
        "ERROR: CUDA error: PTX JIT compiler library not found (code 221, ERROR_JIT_COMPILER_NOT_FOUND)",
    ],
)
def test_ptx_jit_compiler_not_found_is_the_drivers_companion_library(line: str) -> None:
    exp = explain_text(line + "\n", {})
    assert top(exp) == ["cuda-libs-missing", "driver-too-old"]
    fixes = rank.cause_json(exp.causes, 0)["fix"]
    assert "libnvidia-ptxjitcompiler" in fixes[0] and "NVIDIA_DRIVER_CAPABILITIES=compute" in fixes[1]
    failed_jit = "CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed while calling cuModuleLoadDataEx\n"
    other = explain_text(failed_jit, {}).root
    assert other is None or other.sig.id != "cuda-libs-missing/ptx-jit-compiler-not-found"


@pytest.mark.parametrize(
    ("line", "sig", "first"),
    [
        (
            "ptxas fatal   : Value 'sm_121a' is not defined for option 'gpu-name'",
            "toolchain-not-found/ptxas-unknown-gpu-name",
            "toolchain-not-found",
        ),
        (
            "nvcc fatal   : Value 'sm_80' is not defined for option 'gpu-architecture'",
            "toolchain-not-found/ptxas-unknown-gpu-name",
            "toolchain-not-found",
        ),
        (
            "ptxas fatal   : Value 'sm_30' is not defined for option 'gpu-name'",
            "multiple-toolkits/ptxas-dropped-gpu-arch",
            "multiple-toolkits",
        ),
        (
            "ptxas fatal   : Value 'sm_70' is not defined for option 'gpu-name'",
            "multiple-toolkits/ptxas-dropped-gpu-arch",
            "multiple-toolkits",
        ),
    ],
)
def test_an_unknown_gpu_name_is_a_too_old_ptxas_or_a_dropped_arch(line: str, sig: str, first: str) -> None:
    exp = explain_text(line + "\n", {})
    assert exp.root is not None and exp.root.sig.id == sig
    assert top(exp)[0] == first
    sm = line.split("'")[1]
    assert sm in rank.cause_json(exp.causes, 0)["fix"][0]


def test_round_30_cudajl_says_which_cuda_dropped_the_gpu() -> None:
    log = (
        "┌ Error: Your Tesla V100-PCIE-32GB GPU (compute capability 7.0) is not supported on CUDA 13+.\n"
        "│ Please use a device with at least capability 7.5, or downgrade your NVIDIA driver to below v580.\n"
        "ERROR: CUDA error: unknown error (code 999, ERROR_UNKNOWN)\n"
    )
    exp = explain_text(log, {})
    assert exp.root is not None and exp.root.sig.id == "arch-unsupported/cudajl-gpu-not-supported"
    fixes = rank.cause_json(exp.causes, 0)["fix"]
    assert top(exp)[0] == "arch-unsupported" and 'set_runtime_version!(v"12.9")' in fixes[0]
    assert not any("TORCH_CUDA_ARCH_LIST" in f for f in fixes)  # PyTorch steps do not apply to Julia


def test_round_30_a_ptx_feature_the_target_lacks() -> None:
    bf16 = explain_text("ptxas error: Feature '.bf16' requires .target sm_80 or higher\n", {})
    assert top(bf16)[0] == "arch-unsupported"
    assert "float16" in rank.cause_json(bf16.causes, 0)["fix"][0]
    julia = explain_text("ptxas ... error   : Modifier '.NaN' requires .target sm_80 or higher\n", {})
    assert "library-bug" in top(julia)[:2]
    assert "1.11.7" in rank.cause_json(julia.causes, top(julia).index("library-bug"))["fix"][0]


NVCC_COMPUTE_90 = "nvcc fatal   : Unsupported gpu architecture 'compute_90'\n"


def test_an_architecture_no_gpu_here_has_comes_from_the_build_list() -> None:
    """jax-ml/jax#16640: building jaxlib on a Jetson Orin (8.7), nvcc refuses the default list's compute_90:
    the toolkit does not fit the build's list; building for the GPU's own 8.7 gets round it."""
    orin = explain_text(NVCC_COMPUTE_90, {"gpu": "jetson orin"})
    assert top(orin)[0] == "toolchain-not-found"
    fix = rank.cause_json(orin.causes, 0)["fix"][0]
    assert "--cuda_compute_capabilities=8.7" in fix and "TORCH_CUDA_ARCH_LIST=8.7" in fix
    # the GPU's own architecture refused: the toolkit is older than the GPU (the corpus's label convention)
    own = explain_text(NVCC_COMPUTE_90, {"gpu": "H100"})
    assert top(own)[:2] == ["toolchain-not-found", "arch-unsupported"]
    # no GPU in the facts: the message's own priors say the same
    assert top(explain_text(NVCC_COMPUTE_90, {}))[0] == "toolchain-not-found"
    # an architecture newer toolkits dropped is the GPU too old, not the compiler
    assert (
        top(explain_text("nvcc fatal   : Unsupported gpu architecture 'compute_30'\n", {}))[0]
        == "arch-unsupported"
    )


def test_a_framework_builds_kernel_list_does_not_confirm_a_compilers_refusal() -> None:
    """Round 104 (an extension built with CUDA 11.0's nvcc for an RTX 3090 beside torch 1.7): that torch
    lacks sm_86 kernels is a fact of the machine, not why nvcc refused compute_86; the toolkit is."""
    refused = "nvcc fatal   : Unsupported gpu architecture 'compute_86'\n"
    facts = {"gpu": "RTX 3090", "framework_version": "pytorch 1.7", "system_cuda": "11.0"}
    exp = explain_text(refused, facts)
    assert top(exp)[0] == "toolchain-not-found"
    arch = exp.causes[top(exp).index("arch-unsupported")]
    assert any("has no kernels" in f.title for f in arch.findings)  # still shown, only not confirming
    # the same finding still confirms a runtime error that is about the build's kernels
    runtime = explain_text(
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n", facts
    )
    assert top(runtime)[0] == "arch-unsupported"


REFUSED_61 = "nvcc fatal   : Unsupported gpu architecture 'compute_61\nerror: command '/usr/bin/nvcc' failed with exit status 1\n"


def test_an_arch_every_stated_toolkit_builds_was_refused_by_another_nvcc() -> None:
    """ucbdrive/few-shot-object-detection#11: CUDA 10.1 builds compute_61; /usr/bin/nvcc (older) ran."""
    exp = explained(REFUSED_61, stated({"system_cuda": "10.1", "os": "Ubuntu 16.04"}))
    assert exp.root is not None and exp.root.captures["sm"] == "compute_61"  # read without its closing quote
    assert ids(exp)[0] == "toolchain-not-found"
    assert "export PATH=/usr/local/cuda-10.1/bin:$PATH" in exp.causes[0].fixes[0]
    unknown = explained(REFUSED_61)  # no toolkit known: nothing says which nvcc ran
    assert not any("another, older one" in r for c in unknown.causes for r in c.reasons)
    # a framework's list of the architectures it holds is not a compiler's refusal
    torch = explained(
        "NVIDIA GeForce RTX 3080 with CUDA capability sm_86 is not compatible with the current PyTorch installation.\n",
        stated({"system_cuda": "11.8"}),
    )
    assert not any("another, older one" in r for c in torch.causes for r in c.reasons)
