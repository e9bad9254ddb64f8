"""Readers: status codes, sonames and "compiled against X, found Y", read by table (real log lines)."""

from __future__ import annotations

import re

import pytest

from cudoctor import knowledge
from cudoctor.explainer import readers
from cudoctor.explainer.readers import read_line

try:  # the regex parser's module: re._parser from 3.11, sre_parse before
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    import sre_parse  # type: ignore[no-redef]


def _by(reader: str, text: str) -> list[readers.Reading]:
    return [r for r in read_line(text) if r.reader == reader]


def _statuses(text: str) -> set[str]:
    return {r.facts["status"] for r in _by("status-code", text)}


# ------------------------------------------------------------------ status codes
STATUS_LINES = [
    # names, in any wrapping
    (
        "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
        "CUBLAS_STATUS_ALLOC_FAILED",
    ),
    (
        "E tensorflow/stream_executor/cuda/cuda_blas.cc:464] failed to create cublas handle: CUBLAS_STATUS_NOT_INITIALIZED",
        "CUBLAS_STATUS_NOT_INITIALIZED",
    ),
    (
        "cupy.cuda.runtime.CUDARuntimeError: cudaErrorMemoryAllocation: out of memory",
        "cudaErrorMemoryAllocation",
    ),
    (
        "CUDA backend failed to initialize: jaxlib/cuda/versions_helpers.cc:98: operation cuInit(0) failed: CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
        "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
    ),
    ("OSError: (External) CUDNN error(7), CUDNN_STATUS_MAPPING_ERROR. ", "CUDNN_STATUS_MAPPING_ERROR"),
    (
        "RuntimeError: cuDNN error: CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED",
        "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED",
    ),
    (
        "torch.distributed.DistBackendError: NCCL error ... ncclUnhandledCudaError: Call to CUDA function failed.",
        "ncclUnhandledCudaError",
    ),
    ("RuntimeError: cuFFT error: CUFFT_INTERNAL_ERROR", "CUFFT_INTERNAL_ERROR"),
    (
        "RuntimeError: cusolver error: CUSOLVER_STATUS_EXECUTION_FAILED, when calling `cusolverDnSgetrf(handle, m, n, dA, ldda, static_cast<float*>(dataPtr.get()), ipiv, info)`",
        "CUSOLVER_STATUS_EXECUTION_FAILED",
    ),
    (
        "RuntimeError: CUDA error: CUSPARSE_STATUS_INSUFFICIENT_RESOURCES when calling `cusparseSpMM_bufferSize(...)`",
        "CUSPARSE_STATUS_INSUFFICIENT_RESOURCES",
    ),
    ("cupy_backends.cuda.libs.nvrtc.NVRTCError: NVRTC_ERROR_COMPILATION (6)", "NVRTC_ERROR_COMPILATION"),
    # NCCL's CUDACHECK quotes cudaGetErrorString's text (NVIDIA/nccl#444)
    ("[3] enqueue.cc:215 NCCL WARN Cuda failure 'invalid device function'", "cudaErrorInvalidDeviceFunction"),
    # a wrapper's camel case (hannes-brt/cudnn-python-wrappers: libcudnn.py raises cudnnExceptions[status])
    ("libcudnn.cudnnStatusArchMismatch", "CUDNN_STATUS_ARCH_MISMATCH"),
    # numbers, where the format says which enum
    (
        "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=405 error=11 : invalid argument",
        "cudaErrorInvalidValue",
    ),
    (
        "THCudaCheck FAIL file = / pytorch / torch / lib / THC / generic / THCTensorMathPairwise.cu line = 40 error = 48: no kernel image is available for execution on the device",
        "cudaErrorNoKernelImageForDevice",
    ),
    (
        "RuntimeError: cuda runtime error (38) : no CUDA-capable device is detected at /opt/conda/conda-bld/pytorch_1535491974311/work/aten/src/THC/THCGeneral.cpp:74",
        "cudaErrorNoDevice",
    ),
    (
        "RuntimeError: cuda runtime error (802) : system not yet initialized at /opt/conda/conda-bld/pytorch_1579022034529/work/aten/src/THC/THCGeneral.cpp:50",
        "cudaErrorSystemNotReady",
    ),
    ("cudaGetDeviceProperties returned 802", "cudaErrorSystemNotReady"),
    ("cudaRuntimeGetVersion() failed with error #30", "cudaErrorUnknown"),
    ("CUDA error = 999 at main.cu:196 'cudaDeviceSynchronize()'", "cudaErrorUnknown"),
    (
        "F0504 12:30:02.978602 2662 common.cpp:163] Check failed: error == cudaSuccess (30 vs. 0) unknown error",
        "cudaErrorUnknown",
    ),
    (
        "Check failed: error == cudaSuccess (48 vs. 0) no kernel image is available for execution on the device.",
        "cudaErrorNoKernelImageForDevice",
    ),
    (
        "F tensorflow/core/kernels/cuda_solvers.cc:94] Check failed: CUSOLVER_STATUS_SUCCESS (7 vs. 0)",
        "CUSOLVER_STATUS_INTERNAL_ERROR",
    ),
    (
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "cudaErrorIllegalAddress",
    ),  # torch's C10_CUDA_CHECK
    (
        "RuntimeError: CUDA error: operation not permitted when stream is capturing",
        "cudaErrorStreamCaptureUnsupported",
    ),
    (  # Caffe2's CAFFE_ENFORCE wording (facebookresearch/Detectron#560)
        "RuntimeError: [enforce fail at event_gpu.cc:17] error == cudaSuccess. 2 vs 0. Error at: /home/sd/pytorch/caffe2/core/event_gpu.cc:17: out of memory",
        "cudaErrorMemoryAllocation",
    ),
    (
        "InternalError: tensorflow/core/util/cuda_solvers.cc:648: cuSolverDN call failed with status =7 [Op:SelfAdjointEigV2]",
        "CUSOLVER_STATUS_INTERNAL_ERROR",
    ),
    (
        "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 803: system has unsupported display driver / cuda driver combination",
        "cudaErrorSystemDriverMismatch",
    ),
    (
        "Cuda failure: 222 the provided PTX was compiled with an unsupported toolchain.",
        "cudaErrorUnsupportedPtxVersion",
    ),
    ("ERROR: CUDA error: unknown error (code 999, ERROR_UNKNOWN)", "CUDA_ERROR_UNKNOWN"),
    (
        "  CUDA error: uncorrectable ECC error encountered (code #214, ERROR_ECC_UNCORRECTABLE)",
        "CUDA_ERROR_ECC_UNCORRECTABLE",
    ),
    ("RuntimeError: NCCL Error 2: unhandled system error", "ncclSystemError"),
    (
        "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:264, unhandled system error",
        "ncclSystemError",
    ),
    (
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.19.3",
        "ncclInvalidUsage",
    ),
    (
        "RuntimeError: cublas runtime error : the GPU program failed to execute at /opt/conda/conda-bld/pytorch_1549635019666/work/aten/src/THC/THCBlas.cu:441",
        "CUBLAS_STATUS_EXECUTION_FAILED",
    ),
    (
        'CUDA error at bandwidthTest.cu:256 code=802(cudaErrorSystemNotReady) "cudaSetDevice(currentDevice)"',
        "cudaErrorSystemNotReady",
    ),
    ('CUDA error at matrixMul.cu:120 code=700 "cudaDeviceSynchronize()"', "cudaErrorIllegalAddress"),
]


@pytest.mark.parametrize("line,status", STATUS_LINES)
def test_status_code_read(line: str, status: str) -> None:
    assert status in _statuses(line)


def test_status_reading_names_the_value_and_its_meaning() -> None:
    (r,) = _by(
        "status-code",
        "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
    )
    assert r.what.startswith("CUBLAS_STATUS_ALLOC_FAILED (cuBLAS status 3): ")
    assert r.facts == {"status": "CUBLAS_STATUS_ALLOC_FAILED", "enum": "cublasStatus_t", "code": "3"}
    assert max(r.causes, key=r.causes.__getitem__) == "gpu-oom"


def test_old_numbering_is_named() -> None:
    (r,) = _by(
        "status-code", "RuntimeError: cuda runtime error (11) : invalid argument at THCGeneral.cpp:405"
    )
    assert r.facts["code"] == "11" and "CUDA 10.0 and older" in r.what


@pytest.mark.parametrize(
    "line,cause",
    [
        ("cudaErrorInsufficientDriver", "driver-too-old"),
        ("Check failed: error == cudaSuccess (35 vs. 0)", "driver-too-old"),
        ("CUDA error: CUDA_ERROR_NO_BINARY_FOR_GPU", "arch-unsupported"),
        ("cudaErrorIllegalAddress", "illegal-memory-access"),
        ("CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "driver-too-old"),
        ("Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED", "cudnn-mismatch"),
    ],
)
def test_status_weights(line: str, cause: str) -> None:
    (r,) = _by("status-code", line)
    assert max(r.causes, key=r.causes.__getitem__) == cause


@pytest.mark.parametrize(
    "line",
    [
        "Epoch 700/1000 - loss: 2.0000",  # a bare number is never a code
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 MiB (GPU 0; 7.79 GiB total capacity; 2 MiB free)",
        "cuda runtime error (4) : something",  # 4 is cudaErrorCudartUnloading now, cudaErrorLaunchFailure before 10.1
        "[E ProcessGroupNCCL.cpp:414] Some NCCL operations have failed or timed out (rank 2)",
        "[155] misc/ibvwrap.cc:284 NCCL WARN Call to ibv_modify_qp failed with error Invalid argument",
        "cudaSuccess",
        "cudaErrorNotARealName happened",
        "exit code 700",
    ],
)
def test_status_code_not_read(line: str) -> None:
    assert _by("status-code", line) == []


# ------------------------------------------------------------------ sonames
SONAME_LINES = [
    (
        "2021-03-01 W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: No such file or directory",
        "cudart",
        {"cuda_wanted": "11.0"},
        "cuda-libs-missing",
    ),
    (
        "ImportError: libcudnn.so.8: cannot open shared object file: No such file or directory",
        "cudnn",
        {"cudnn_wanted": "8"},
        "cudnn-mismatch",
    ),
    (
        "Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared object file: No such file or directory",
        "cudnn",
        {"cudnn_wanted": "8"},
        "cudnn-mismatch",
    ),
    (
        "OSError: libcublas.so.11: cannot open shared object file: No such file or directory",
        "cublas",
        {"cuda_wanted": "11"},
        "cuda-libs-missing",
    ),
    (
        "Could not load dynamic library 'libcusolver.so.10'; dlerror: libcusolver.so.10: cannot open shared object file: No such file or directory;",
        "cusolver",
        {"wanted": "10"},
        "cuda-libs-missing",
    ),
    (
        "RuntimeError: CuPy failed to load libnvrtc.so.12: OSError: libnvrtc.so.12: cannot open shared object file: No such file or directory",
        "nvrtc",
        {"cuda_wanted": "12"},
        "cuda-libs-missing",
    ),
    (
        "nvrtc: error: failed to open libnvrtc-builtins.so.11.6",
        "nvrtc-builtins",
        {"cuda_wanted": "11.6"},
        "cuda-libs-missing",
    ),
    (
        "Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot open shared object file: No such file or directory",
        "nvrtc",
        {},
        "cuda-libs-missing",
    ),
    (
        "ImportError: libcuda.so.1: cannot open shared object file: No such file or directory",
        "libcuda",
        {},
        "no-gpu-visible",
    ),
    (
        "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file: No such file or directory",
        "libcuda",
        {},
        "env-path-misconfig",
    ),
    (
        "Could not load dynamic library 'libnccl.so.2'; dlerror: libnccl.so.2: cannot open shared object file",
        "nccl",
        {"nccl_wanted": "2"},
        "cuda-libs-missing",
    ),
    (
        "Could not load dynamic library 'libnvinfer.so.7'; dlerror: libnvinfer.so.7: cannot open shared object file",
        "tensorrt",
        {"tensorrt_wanted": "7"},
        "env-path-misconfig",  # TensorRT's tar packages install off the loader's path
    ),
    (  # openmm/openmm-ml#67: openmm-torch built for a CUDA torch, imported beside a CPU one
        "ImportError: libtorch_cuda.so: cannot open shared object file: No such file or directory",
        "torch-cuda",
        {},
        "cpu-only-build",
    ),
    (
        "Could not load dynamic library 'cudart64_110.dll'; dlerror: cudart64_110.dll not found",
        "cudart",
        {"cuda_wanted": "11.0"},
        "cuda-libs-missing",
    ),
    (
        "Could not load dynamic library 'cudart64_101.dll'; dlerror: cudart64_101.dll not found",
        "cudart",
        {"cuda_wanted": "10.1"},
        "cuda-libs-missing",
    ),
    (
        "Could not locate cudnn_ops_infer64_8.dll. Please make sure it is in your library path!",
        "cudnn",
        {"cudnn_wanted": "8"},
        "cudnn-mismatch",
    ),
    (
        "Could not load dynamic library 'cudnn64_8.dll'; dlerror: cudnn64_8.dll not found",
        "cudnn",
        {"cudnn_wanted": "8"},
        "cudnn-mismatch",
    ),
    (
        "Could not load dynamic library 'cublas64_12.dll'; dlerror: cublas64_12.dll not found",
        "cublas",
        {"cuda_wanted": "12"},
        "cuda-libs-missing",
    ),
    (
        "Unable to load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9.1, libcudnn_ops.so.9, libcudnn_ops.so}",
        "cudnn",
        {"cudnn_wanted": "9.1.0"},
        "cudnn-mismatch",
    ),
    (
        "ImportError: /opt/conda/lib/python3.10/site-packages/torch/lib/../../nvidia/cusparse/lib/libcusparse.so.12: undefined symbol: __nvJitLinkComplete_12_4, version libnvJitLink.so.12",
        "cusparse",
        {"wanted": "12"},
        "multiple-toolkits",
    ),
    (
        "Could not load library libcudnn_cnn_train.so.8. Error: /usr/local/cuda/lib64/libcudnn_cnn_train.so.8: undefined symbol: _ZN5cudnn3cnn34layerNormFwd",
        "cudnn",
        {"cudnn_wanted": "8"},
        "cudnn-mismatch",
    ),
]


@pytest.mark.parametrize("line,library,facts,cause", SONAME_LINES)
def test_soname_read(line: str, library: str, facts: dict[str, str], cause: str) -> None:
    (r,) = _by("soname", line)
    assert r.facts["library"] == library
    assert facts.items() <= r.facts.items()
    assert max(r.causes, key=r.causes.__getitem__) == cause


@pytest.mark.parametrize(
    "line",
    [
        "2022-06-28 10:15:05.973091: I tensorflow/stream_executor/platform/default/dso_loader.cc:49] Successfully opened dynamic library libcudart.so.10.1",
        "        libcudnn_ops.so.9 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcudnn_ops.so.9",
        "\tlibnvJitLink.so.12 => /usr/local/cuda-12.1/lib64/libnvJitLink.so.12 (0x000070ddad800000)",
        "ls: cannot access '/usr/local/cudnn-8.9/include/cudnn_version.h': No such file or directory",
        "export LD_LIBRARY_PATH=/opt/cudnn/lib64:$LD_LIBRARY_PATH  # not found before",
        "ImportError: /lib64/libm.so.6: version `GLIBC_2.27' not found (required by /home/u/envs/trl/lib/python3.11/site-packages/torch/lib/../../../../libcurand.so.10)",
        "OSError: libgomp.so.1: cannot open shared object file: No such file or directory",
        # torch 1.1x's split library: an extension built against another torch, not a CPU build (r95, r133)
        "ImportError: libtorch_cuda_cu.so: cannot open shared object file: No such file or directory",
    ],
)
def test_soname_not_read(line: str) -> None:
    assert _by("soname", line) == []


# ------------------------------------------------------------------ compiled vs loaded
CVL_LINES = [
    (
        "2021-11-10 11:34:35.330749: E tensorflow/stream_executor/cuda/cuda_dnn.cc:362] Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0.  CuDNN library needs to have matching major version and equal or higher minor version.",
        "cudnn",
        "8.1.0",
        "8.0.5",
        "cudnn-mismatch",
    ),
    (
        "RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (8, 9, 2) but found runtime version (8, 5, 0). PyTorch already comes bundled with cuDNN.",
        "cudnn",
        "8.9.2",
        "8.5.0",
        "cudnn-mismatch",
    ),
    (
        "RuntimeError: cuDNN version incompatibility: PyTorch was compiled against (8, 3, 2) but linked against (8, 0, 3)",
        "cudnn",
        "8.3.2",
        "8.0.3",
        "cudnn-mismatch",
    ),
    (
        "CUDA backend failed to initialize: Found cuDNN version 8600, but JAX was built against version 8907, which is newer. The copy of cuDNN that is installed must be at least as new as the version against which JAX was built.",
        "cudnn",
        "8.9.7",
        "8.6.0",
        "cudnn-mismatch",
    ),
    (
        "E1027 15:11:27.184481 3266602 cuda_dnn.cc:456] Loaded runtime CuDNN library: 9.10.1 but source was compiled with: 9.13.1.",
        "cudnn",
        "9.13.1",
        "9.10.1",
        "cudnn-mismatch",
    ),
    (
        "RuntimeError: The installed version of CUDA Runtime (11020) is older than the version JAX was compiled with (11040)",
        "cuda",
        "11.4",
        "11.2",
        "cuda-libs-missing",
    ),
    (
        "Unable to initialize backend 'cuda': Found cuSOLVER version 11002, but JAX was built against version 11401, which is newer.",
        "cusolver",
        "11.4.1",
        "11.0.2",
        "cuda-libs-missing",
    ),
    (
        "Exception: Installed CUDA version 9.0 does not match the version torch was compiled with 10.1, unable to compile cuda/cpp extensions without a matching cuda version.",
        "cuda",
        "10.1",
        "9.0",
        "multiple-toolkits",
    ),
    (
        "The detected CUDA version (11.8) mismatches the version that was used to compile PyTorch (12.1). Please make sure to use the same CUDA versions.",
        "cuda",
        "12.1",
        "11.8",
        "multiple-toolkits",
    ),
    (
        "torch was built with CUDA 12.1 but the runtime found CUDA 11.8",
        "cuda",
        "12.1",
        "11.8",
        "cuda-libs-missing",
    ),
]


@pytest.mark.parametrize("line,library,compiled,loaded,cause", CVL_LINES)
def test_compiled_vs_loaded(line: str, library: str, compiled: str, loaded: str, cause: str) -> None:
    (r,) = _by("compiled-vs-loaded", line)
    assert (r.facts["library"], r.facts["compiled"], r.facts["loaded"]) == (library, compiled, loaded)
    assert r.facts["older"] == "loaded"
    assert max(r.causes, key=r.causes.__getitem__) == cause


@pytest.mark.parametrize(
    "line,loaded",
    [
        ("RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version", None),
        (
            "RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver",
            "11.4",
        ),
    ],
)
def test_driver_too_old(line: str, loaded: str | None) -> None:
    (r,) = _by("compiled-vs-loaded", line)
    assert r.facts["library"] == "driver" and r.facts.get("loaded") == loaded
    assert max(r.causes, key=r.causes.__getitem__) == "driver-too-old"


def test_ptxas_newer_than_driver() -> None:
    line = (
        "W external/xla/xla/service/gpu/nvptx_compiler.cc:765] The NVIDIA driver's CUDA version is 12.4 which is "
        "older than the ptxas CUDA version (12.5.40). Because the driver is older than the ptxas version, XLA is "
        "disabling parallel compilation"
    )
    (r,) = _by("compiled-vs-loaded", line)
    assert max(r.causes, key=r.causes.__getitem__) == "toolchain-not-found" and "driver-too-old" in r.causes


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: jaxlib version 0.4.14 is newer than and incompatible with jax version 0.4.6. Please update",
        "RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA major versions. PyTorch has CUDA Version=11.8 and torchvision has CUDA Version=12.1.",
        "W0000 00:00:1753232013.685876   24341 gpu_device.cc:2431] TensorFlow was not built with CUDA kernel binaries compatible with compute capability 12.0.",
        "I ... cuda_dnn.cc:384] Loaded cuDNN version 8900",
        "Version JAX was built against: 8907",
        "Loaded runtime CuDNN library: 8.9.7 but source was compiled with: 8.9.7",
    ],
)
def test_compiled_vs_loaded_not_read(line: str) -> None:
    assert _by("compiled-vs-loaded", line) == []


# ------------------------------------------------------------------ the tables
def test_status_tables_are_complete_and_valid() -> None:
    data = knowledge.table("status_codes")
    valid = set(knowledge.causes())
    names: set[str] = set()
    for enum in data["enum"]:
        assert enum.get("source") and enum.get("kind") and enum.get("success"), enum["id"]
        for key in ("code", "old_code"):
            numbers = [row[key] for row in enum["code"] if key in row]
            assert len(numbers) == len(set(numbers)), f"{enum['id']}: a {key} used twice"
        assert any("old_code" in row for row in enum["code"]) == ("old_numbering" in enum), enum["id"]
        for row in enum["code"]:
            assert row.get("name") and row.get("meaning") and isinstance(row.get("code"), int), row
            assert row["causes"] and set(row["causes"]) <= valid, row["name"]
            assert all(0 < w <= 1 for w in row["causes"].values()), row["name"]
            for name in [row["name"], *row.get("aliases", [])]:
                assert name not in names, f"{name} twice"
                names.add(name)
                assert readers.NAME_TOKEN.fullmatch(name), f"{name} would never be read"
    for row in data["library"]:
        assert row.get("id") and row.get("name") and row.get("source"), row
        re.compile(row["match"])
        for key in ("causes", "unversioned_causes"):
            assert set(row.get(key, {})) <= valid, row["id"]


def test_status_names_agree_with_shared_runtime_facts() -> None:
    """cudaError_t rows agree with the libcudart 12.9 facts gathered in shared/compat (when present)."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "shared" / "compat" / "cuda_runtime_errors.json"
    if not path.exists():
        pytest.skip("shared/compat not here")
    facts = {e["name"]: e for e in json.loads(path.read_text())["errors"]}
    enum = next(e for e in knowledge.table("status_codes")["enum"] if e["id"] == "cudaError_t")
    for row in enum["code"]:
        assert facts[row["name"]]["code"] == row["code"], row["name"]
        assert facts[row["name"]]["text"].rstrip(".") == row["text"], row["name"]


# ------------------------------------------------------------------ linear regexes
def _nested_unbounded(tree: object, inside: bool = False) -> bool:
    """Whether a parsed pattern holds an unbounded repeat inside another unbounded repeat."""
    for op, av in tree:  # type: ignore[attr-defined]
        name = str(op)
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            unbounded = av[1] == sre_parse.MAXREPEAT
            if unbounded and inside:
                return True
            if _nested_unbounded(av[2], inside or unbounded):
                return True
        elif name == "SUBPATTERN":
            if _nested_unbounded(av[-1], inside):
                return True
        elif name == "BRANCH":
            if any(_nested_unbounded(b, inside) for b in av[1]):
                return True
        elif name in ("ASSERT", "ASSERT_NOT") and _nested_unbounded(av[1], inside):
            return True
    return False


def _module_patterns() -> list[re.Pattern[str]]:
    tables = readers._tables()
    found = [v for v in vars(readers).values() if isinstance(v, re.Pattern)]
    found += [p for p, _ in readers.FIXED_FORMATS] + [tables.label_re, tables.success_re]
    return found + [p for p, _ in readers._libraries()]


def test_patterns_have_no_nested_unbounded_quantifiers() -> None:
    for pattern in _module_patterns():
        assert not _nested_unbounded(sre_parse.parse(pattern.pattern, pattern.flags)), pattern.pattern


def test_nested_quantifier_check_catches_one() -> None:
    assert _nested_unbounded(sre_parse.parse(r"(a+)+b"))
    assert not _nested_unbounded(sre_parse.parse(r"(?:ab){0,3}c+"))


def test_long_adversarial_lines_are_read() -> None:
    """Lines far beyond MAX_LINE, built to make a backtracking pattern struggle, still return."""
    for line in (
        "libcudnn" + "_x" * 50_000 + ".so.8: cannot open shared object file",
        "Loaded runtime CuDNN library: " + "1." * 50_000 + " but source was compiled with: 8.1.0",
        "CUDA error " + " " * 100_000 + "2",
        "cudaError" + "A" * 100_000,
        "(" + "1, " * 30_000 + ")",
        "cuda" + "x(" * 30_000 + " returned 2",
    ):
        assert isinstance(read_line(line), list)


def test_camel_case_results_of_bindings_are_read_by_their_cuda_name() -> None:
    """Rust and .NET bindings print CUresult names in CamelCase (rust-gpu-tools: Cuda(NoBinaryForGpu))."""
    assert _statuses("called `Result::unwrap()` on an `Err` value: Cuda(NoBinaryForGpu)") == {
        "CUDA_ERROR_NO_BINARY_FOR_GPU"
    }
    assert _statuses("Err(CudaError::OutOfMemory)") == {"CUDA_ERROR_OUT_OF_MEMORY"}
    assert _statuses("Cuda(Something)") == set()
    assert _statuses("NoBinaryForGpu without its binding's name") == set()


def test_a_library_named_in_words_is_read_like_its_soname() -> None:
    """Paddle: 'Cannot load cudnn shared library' names cuDNN without a soname."""
    got = _by(
        "soname",
        "RuntimeError: (PreconditionNotMet) Cannot load cudnn shared library. Cannot invoke method cudnnGetVersion.",
    )
    assert got and got[0].facts["library"] == "cudnn" and next(iter(got[0].causes)) == "cudnn-mismatch"
    assert _by("soname", "Loaded the cudnn shared library in 2 ms") == []  # no load failure


def test_a_symbol_of_a_newer_cuda_release_missing_from_the_library_loaded() -> None:
    """glibc names the symbol and the soname that lacks it; nvJitLink's symbols carry their CUDA release."""
    got = _by("versioned-symbol", "undefined symbol: __nvJitLinkCreate_12_8, version libnvJitLink.so.12")
    assert got and got[0].facts["symbol_cuda"] == "12.8" and got[0].facts["wheel"] == "nvidia-nvjitlink-cu12"
    beside = _by(
        "versioned-symbol",
        "ImportError: /v/nvidia/cusparse/lib/libcusparse.so.12: undefined symbol: __nvJitLinkAddData_12_1, version libnvJitLink.so.12",
    )
    assert beside and beside[0].facts["soname"] == "libnvJitLink.so.12"
    # the soname after 'version' is the copy that lacks it, not a library that failed to load
    soname = _by("soname", "undefined symbol: __nvJitLinkCreate_12_8, version libnvJitLink.so.12")
    assert soname and "does not fit" in soname[0].what and "cuda-libs-missing" not in soname[0].causes
    assert _by("versioned-symbol", "undefined symbol: cusparseSpSM_analysis, version libcusparse.so.12") == []


def test_a_camel_case_status_that_no_table_has_is_not_read() -> None:
    assert _statuses("libcudnn.cudnnStatusSomethingNew") == set()
    assert _statuses("cudnnStatusSuccess") == set()  # success is no error either way


@pytest.mark.parametrize(
    ("line", "span"),
    [
        ("Could not load dynamic library 'cusolver64_10.dll'", "10.1-11.0"),  # tensorflow/tensorflow#44291
        (
            "Could not load dynamic library 'libcusolver.so.11'; dlerror: libcusolver.so.11: cannot open shared object file",
            "11.1-12.9",
        ),
        (
            "Could not load dynamic library 'libcufft.so.10'; dlerror: libcufft.so.10: cannot open shared object file",
            "10.1-11.8",
        ),
        (
            "Could not load dynamic library 'libcusparse.so.12'; dlerror: libcusparse.so.12: cannot open shared object file",
            "12.0-12.9",
        ),
    ],
)
def test_a_library_whose_soname_carries_its_own_major_names_the_cuda_releases_that_ship_it(
    line: str, span: str
) -> None:
    (reading,) = _by("soname", line)
    assert reading.facts["cuda_range"] == span and "cuda_wanted" not in reading.facts


def test_a_soname_that_carries_a_cuda_version_names_no_range() -> None:
    (old,) = _by(
        "soname",
        "Could not load dynamic library 'libcusolver.so.10.0'; dlerror: libcusolver.so.10.0: cannot open shared object file",
    )
    assert "cuda_range" not in old.facts  # CUDA 10.0's numbering: the CUDA release itself
    (runtime,) = _by(
        "soname", "Could not load dynamic library 'cudart64_110.dll'; dlerror: cudart64_110.dll not found"
    )
    assert "cuda_range" not in runtime.facts and runtime.facts["cuda_wanted"] == "11.0"


def test_a_cuda_error_text_alone_is_read_only_where_nccl_quotes_it() -> None:
    assert _statuses("Training failed: invalid device function") == set()
    assert _statuses("NCCL WARN Cuda failure 'unspecified launch failure'") == {"cudaErrorLaunchFailure"}


@pytest.mark.parametrize(
    "line",
    [
        "ImportError: /x/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi",
        "ImportError: (...)/knn.so: undefined symbol: _ZN3c105ErrorC1ENS_14SourceLocationERKSs",
        "error: ~/.local/lib/python3.7/site-packages/torch_scatter/_scatter_cuda.so: undefined symbol: _ZNK2at6Tensor6narrowElll",
    ],
)
def test_an_undefined_symbol_in_torch_s_namespace_is_an_extension_built_against_another_torch(
    line: str,
) -> None:
    (r,) = _by("symbol", line)
    assert r.facts["library"] == "torch" and max(r.causes, key=r.causes.__getitem__) == "binary-incompatible"


def test_a_namespace_reading_names_the_module_that_lacks_the_symbol() -> None:
    (torch,) = _by(
        "symbol",
        "ImportError: /x/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi",
    )
    assert (torch.facts["namespace"], torch.facts["module"]) == ("torch", "flash_attn_2_cuda")
    # flownet2-tf#87: a TensorFlow custom op built with another C++ ABI, quoted without its path
    (tf,) = _by(
        "symbol",
        "undefined symbol: _ZN10tensorflow12OpDefBuilder4AttrENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
    )
    assert tf.facts["namespace"] == "tensorflow" and "module" not in tf.facts


@pytest.mark.parametrize(
    "line",
    [
        "_ext.cpython-37m-x86_64-linux-gnu.so: undefined symbol: _Z27points_in_boxes_cpu_forwardN2at6TensorES0_S0_",
        "RuntimeError: undefined symbol: cuCtxGetCurrent",
        "undefined symbol: _ZN3c1x",  # a length that does not fit the name
    ],
)
def test_an_undefined_symbol_of_the_module_itself_or_of_cuda_is_not_a_namespace_reading(line: str) -> None:
    assert _by("symbol", line) == []


@pytest.mark.parametrize(
    ("line", "package", "wanted", "found"),
    [
        (  # tch-rs (LaurentMazare/tch-rs#918, blind round 228)
            "  Error: this tch version expects PyTorch 2.5.0, got 2.5.1, this check can be bypassed by setting the "
            "LIBTORCH_BYPASS_VERSION_CHECK environment variable",
            "PyTorch",
            "2.5.0",
            "2.5.1",
        ),
        (  # pip's resolver
            "torchvision 0.16.0 requires torch==2.1.0, but you have torch 2.2.0 which is incompatible.",
            "torch",
            "2.1.0",
            "2.2.0",
        ),
        ("ImportError: this build needs numpy 1.26 but found 2.0.1", "numpy", "1.26", "2.0.1"),
        (  # pip's specifier list is what is wanted, whole
            "tensorflow 2.15.0 requires numpy<2.0.0,>=1.23.5, but you have numpy 2.0.1 which is incompatible.",
            "numpy",
            "<2.0.0,>=1.23.5",
            "2.0.1",
        ),
    ],
)
def test_a_release_wanted_and_the_one_found_are_a_requirement_unmet(
    line: str, package: str, wanted: str, found: str
) -> None:
    (r,) = _by("version-expected", line)
    assert r.facts == {"package": package, "wanted": wanted, "found": found}
    assert max(r.causes, key=r.causes.__getitem__) == "requirements-unmet"


@pytest.mark.parametrize(
    "line",
    [
        "Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0",  # a CUDA library's: compiled-vs-loaded
        "RuntimeError: requires CUDA 11.8, found 11.2",
        "INVALID_ARGUMENT: Unexpected PJRT_Client_Create_Args size: expected 88, got 72.",  # sizes, no package
        "GPU requires compute capability 7.0, found 6.1",
        "this tch version expects PyTorch 2.5.0, got 2.5.0",  # the same release
        "AssertionError: expected value 1.0 but got 0.9",  # an assertion's values (review of session 46)
        "Expected output 0.5, got 0.49",
        "requires libcudnn 8.9.0, found 8.6.0",  # a CUDA library: compiled-vs-loaded's
    ],
)
def test_versions_of_cuda_libraries_sizes_or_one_release_are_not_a_package_wanted(line: str) -> None:
    assert _by("version-expected", line) == []


@pytest.mark.parametrize(
    ("line", "built_without"),
    [
        (
            'Error { code: GenericFailure, msg: "CUDA execution provider is not enabled in this build." }',
            True,
        ),
        ("AssertionError: Torch not compiled with CUDA enabled", True),
        (
            "The installed version of bitsandbytes was compiled without GPU support. 8-bit optimizers are unavailable",
            True,
        ),
        ("RuntimeError: jaxlib has never been built with CUDA support", True),
        (
            "TensorFlow was not built with CUDA kernel binaries compatible with compute capability 7.5. CUDA kernels "
            "will be jit-compiled from PTX",
            False,
        ),
        ("CUDA is not available on this machine", False),
        ("torch was not compiled with NCCL support", False),  # a CUDA build without NCCL is no CPU build
        ("PyTorch was not compiled with cuDNN", False),
    ],
)
def test_a_build_that_says_it_has_no_gpu_support(line: str, built_without: bool) -> None:
    found = _by("built-without", line)
    assert bool(found) is built_without
    if found:
        assert max(found[0].causes, key=found[0].causes.__getitem__) == "cpu-only-build"


@pytest.mark.parametrize(
    "line",
    [
        "ERROR: No matching distribution found for torch==1.13.1",
        "ERROR: Could not find a version that satisfies the requirement torch (from versions: none)",
        "    | Unable to find installation candidates for torch (2.5.1+cu124)",
        "  ╰─▶ Because there is no version of torch==2.5.1+cu121 and you require torch==2.5.1+cu121, we can conclude "
        "that your requirements are unsatisfiable.",
        "UnsatisfiableError: The following specifications were found to be incompatible with each other:",
        ">failed to resolve pypi dependencies",  # pixi
        "ERROR: torch-2.1.0+cu121-cp311-cp311-linux_x86_64.whl is not a supported wheel on this platform.",
    ],
)
def test_an_installer_that_found_nothing_to_install_is_a_requirement_unmet(line: str) -> None:
    (r,) = _by("resolver-refused", line)
    assert max(r.causes, key=r.causes.__getitem__) == "requirements-unmet"


def test_an_installer_that_installed_is_not_refused() -> None:
    assert (
        _by("resolver-refused", "Successfully installed torch-2.5.1+cu124 nvidia-cudnn-cu12-9.1.0.70") == []
    )
    assert _by("resolver-refused", "Looking in indexes: https://download.pytorch.org/whl/cu124") == []


@pytest.mark.parametrize(
    ("line", "refused"),
    [
        ("This kernel is not supported on your GPU", True),  # nunchaku on a Turing GPU (blind round 236)
        (
            "ValueError: The quantization method awq is not supported for the current GPU. Minimum capability: 75.",
            True,
        ),
        ("Warning: this feature is not supported on Windows", False),
        ("The device is not supported by this driver version", False),
        ("CUDA error: operation not supported on this device", False),  # CUDA's own status says that
    ],
)
def test_work_refused_on_this_gpu(line: str, refused: bool) -> None:
    found = _by("gpu-refused", line)
    assert bool(found) is refused
    if found:
        assert max(found[0].causes, key=found[0].causes.__getitem__) == "arch-unsupported"


def test_two_releases_called_incompatible_are_a_compiled_package_of_another_release() -> None:
    line = "RuntimeError: jaxlib version 0.4.14 is newer than and incompatible with jax version 0.4.6. Please update your jax and/or jaxlib packages."
    (r,) = _by("incompatible-pair", line)
    assert (r.facts["package"], r.facts["with_version"]) == ("jaxlib", "0.4.6")
    assert max(r.causes, key=r.causes.__getitem__) == "binary-incompatible"
    assert _by("incompatible-pair", "CUDA 12.1 is compatible with driver 530") == []


@pytest.mark.parametrize(
    "line",
    [
        "OSError: Could not find compatible tinycudann extension for compute capability 87.",
        "RuntimeError: sm_61 is not supported by this build of flash-attn",
        "The GPU has CUDA capability 6.0, which is not compatible with the kernels shipped",
        # the work needs a newer GPU, in words no signature was written for (corpus: r129, r136, r63, r159)
        "RuntimeError: GPUs with compute capability below 7.0 are not supported.",
        "AssertionError: SM80 kernel is not available. make sure you GPUs with compute capability 8.0 or higher.",
        "AssertionError: Device compute capability 9.x required for FP8 execution.",
        "RuntimeError: FlashAttention only supports Ampere GPUs or newer.",
        "RuntimeError: torch._scaled_mm is only supported on CUDA devices with compute capability >= 9.0 or 8.9, or ROCm MI300+",
    ],
)
def test_a_compute_capability_something_was_not_built_for_is_an_arch_reading(line: str) -> None:
    (r,) = _by("capability", line)
    assert max(r.causes, key=r.causes.__getitem__) == "arch-unsupported"


@pytest.mark.parametrize(
    "line",
    [
        "Found GPU0 NVIDIA A100 with compute capability 8.0",  # named, nothing refused
        "ImportError: could not find module foo",  # refused, no architecture
    ],
)
def test_a_capability_named_without_a_refusal_or_a_refusal_without_one_is_no_arch_reading(line: str) -> None:
    assert _by("capability", line) == []


def test_a_library_that_could_not_be_loaded_takes_its_causes_from_the_library_table() -> None:
    """onnx/onnx-tensorrt#317, #385, open-mmlab/mmdeploy#2594: TensorRT's libnvinfer off the loader's path."""
    trt = readers.library_causes("libnvinfer.so.8")
    assert trt is not None and max(trt, key=trt.__getitem__) == "env-path-misconfig"
    cublas = readers.library_causes("libcublas.so.11")
    assert cublas is not None and max(cublas, key=cublas.__getitem__) == "cuda-libs-missing"
    driver = readers.library_causes("libcuda.so.1")
    assert driver is not None and max(driver, key=driver.__getitem__) == "no-gpu-visible"
    assert readers.library_causes("libfoo.so.1") is None
    windows = readers.library_causes("nvinfer_10.dll")  # TensorRT's zip: its lib folder added to PATH by hand
    assert windows is not None and max(windows, key=windows.__getitem__) == "env-path-misconfig"
    nvcuda = readers.library_causes("nvcuda.dll")
    assert nvcuda is not None and max(nvcuda, key=nvcuda.__getitem__) == "no-gpu-visible"
    assert readers.library_causes("model.pt") is None


@pytest.mark.parametrize(
    "line",
    [
        "cc1: error: '-fcf-protection' is not compatible with this target",  # gcc's cc1, no capability
        "Your GPU (compute capability 8.6) is supported. Flash attention is not supported on CPU.",
        "sm_80 detected; torch.compile is not supported on Python 3.12",
        # a C++ source file and its line number, not a compute capability (corpus: TF-TRT, jaxlib)
        "2024-06-04 15:42:11.291687: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: Could not find TensorRT",
        "RuntimeError: INTERNAL: CustomCall failed: jaxlib/cuda_prng_kernels.cc:30: operation cudaGetLastError() failed: the provided PTX was compiled with an unsupported toolchain.",
    ],
)
def test_a_refusal_in_another_sentence_than_the_architecture_is_no_arch_reading(line: str) -> None:
    assert _by("capability", line) == []


@pytest.mark.parametrize(
    ("line", "library", "cause"),
    [
        (  # cupy/cupy#521: a cuDNN of another release than CuPy was built against
            "ImportError('/home/user/anaconda3/lib/python3.6/site-packages/cupy/cuda/cudnn.cpython-36m-x86_64-linux-gnu.so: "
            "undefined symbol: cudnnSetFilterNdDescriptor_v3',)",
            "cudnn",
            "cudnn-mismatch",
        ),
        (  # the corpus's cuBLASLt cases: a conda cudatoolkit's cuBLAS ahead of pip's
            "ImportError: /x/site-packages/cuml/libcuml++.so: undefined symbol: cublasLtHSHMatmulAlgoInit",
            "cublaslt",
            "multiple-toolkits",
        ),
    ],
)
def test_an_undefined_symbol_of_a_cuda_librarys_api_names_that_library(
    line: str, library: str, cause: str
) -> None:
    (reading,) = _by("symbol", line)
    assert reading.facts["library"] == library
    assert max(reading.causes, key=lambda c: reading.causes[c]) == cause


@pytest.mark.parametrize(
    "line",
    [
        # versioned: _versioned_symbol's
        "libcusparse.so.12: undefined symbol: __nvJitLinkComplete_12_4, version libnvJitLink.so.12",
        "undefined symbol: cudaGetDeviceCount",  # the runtime's own API: no prefix of a library the table holds
        "undefined symbol: cudnn_frontend_helper",  # lower case after the prefix: not the library's C API
    ],
)
def test_other_undefined_symbols_are_not_read_as_a_librarys(line: str) -> None:
    assert [r for r in _by("symbol", line) if r.facts.get("library") in ("cudnn", "cusparse")] == []
