"""explain on CUDA, cuDNN, cuSOLVER, NCCL and other libraries: versions that do not pair, libraries not
found or not loaded, and library defects with their workarounds."""

from __future__ import annotations

import pytest

from cudoctor.explainer import rank
from tests.explainer.helpers import ASYNC, explain_text, top


def test_torchvision_missing_operator_points_at_the_torch_pair() -> None:
    exp = explain_text("RuntimeError: operator torchvision::nms does not exist\n")
    assert top(exp)[0] == "requirements-unmet"  # torchvision pins the torch it was built for
    assert "pip install torch==<your torch version> torchvision" in exp.causes[0].fixes[0]


def test_a_wrong_cudnn_sub_library_is_cudnn_first_even_as_an_undefined_symbol() -> None:
    """pytorch/pytorch#119989: a system cuDNN 8 in /usr/local/cuda/lib64 shadows the wheel's."""
    line = (
        "Could not load library libcudnn_cnn_train.so.8. Error: /usr/local/cuda/lib64/libcudnn_cnn_train.so.8: "
        "undefined symbol: _ZN5cudnn3cnn34layerNormFwd_execute_internal_implERKNS_7backend11VariantPackEP11CUstream_st, "
        "version libcudnn_cnn_infer.so.8\n"
    )
    assert top(explain_text(line))[:2] == ["cudnn-mismatch", "multiple-toolkits"]
    # Another library's undefined symbol keeps its own first cause.
    other = "ImportError: /venv/nvidia/cusparse/lib/libcusparse.so.12: undefined symbol: __nvJitLinkAddData_12_1, version libnvJitLink.so.12\n"
    assert top(explain_text(other))[0] == "multiple-toolkits"


def test_cusolver_internal_error_points_at_the_cublas_pairing_then_memory() -> None:
    exp = explain_text("jaxlib._jax.XlaRuntimeError: INTERNAL: cuSolver internal error\n")
    assert top(exp) == ["library-bug", "cuda-libs-missing", "gpu-oom"]
    assert "pip install -U nvidia-cublas-cu12" in exp.causes[0].fixes[0]
    oom = next(c for c in exp.causes if c.id == "gpu-oom")
    assert "XLA_PYTHON_CLIENT_PREALLOCATE=false" in oom.fixes[0]


def test_cuda_invalid_argument_is_a_defect_first_with_the_allocator_switch() -> None:
    exp = explain_text(
        "!!! Exception during processing !!! CUDA error: invalid argument\n" + ASYNC.splitlines()[-1] + "\n"
    )
    assert top(exp)[0] == "library-bug"
    assert any("--disable-cuda-malloc" in f for f in exp.causes[0].fixes)


def test_numpy_c_api_and_abi_versions_point_opposite_ways() -> None:
    abi = explain_text(
        "RuntimeError: module compiled against ABI version 0x1000009 but this version of numpy is 0x2000000\n"
    )
    assert abi.root is not None and abi.root.sig.id == "binary-incompatible/numpy-1x-module-on-numpy-2"
    api = explain_text(
        "RuntimeError: module compiled against API version 0x10 but this version of numpy is 0xe\n"
    )
    assert api.root is not None and api.root.sig.id == "binary-incompatible/numpy-older-than-build"
    assert top(api)[0] == "binary-incompatible" and "pip install -U numpy" in api.causes[0].fixes[0]
    assert "(C API 0x10) than the one it finds (0xe)" in api.causes[0].fixes[0]
    # each wording's own steps, not the cause's other topics: NumPy too old is never pinned below 2, nor MKL
    assert not any("numpy<2" in f or "mkl" in f for f in api.causes[0].fixes)
    assert "pip install 'numpy<2'" in abi.causes[0].fixes[0] and "torch >= 2.3" in abi.causes[0].fixes[1]
    assert not any("mkl" in f or "glibc" in f for f in abi.causes[0].fixes)


def test_round_15_libstdcxx_arch_list_and_triton() -> None:
    glibcxx = explain_text(
        "ImportError: /lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.30' not found (required by /x/torch/lib/libtorch_python.so)\n"
    )
    assert top(glibcxx)[:2] == ["multiple-toolkits", "broken-install"]
    assert "strings /lib/x86_64-linux-gnu/libstdc++.so.6 | grep GLIBCXX_3.4.30" in glibcxx.causes[0].fixes[0]
    # glibc itself being too old is another problem, not a libstdc++ mix-up
    glibc = explain_text("ImportError: /lib64/libc.so.6: version `GLIBC_2.28' not found (required by x.so)\n")
    assert [m.sig.id for m in glibc.matches] == ["binary-incompatible/glibc-too-old"]
    assert top(glibc)[0] == "binary-incompatible" and "ldd --version" in glibc.causes[0].fixes[0]
    assert "a container image whose glibc is at least GLIBC_2.28" in glibc.causes[0].fixes[1]
    assert not any("numpy" in f or "mkl" in f for f in glibc.causes[0].fixes)  # glibc's steps alone
    arch = explain_text("ValueError: Unknown CUDA arch (9.0+PTX) or GPU not supported\n")
    assert top(arch)[0] == "arch-unsupported" and "compute capability 9.0+PTX" in arch.causes[0].fixes[0]
    assert not any("PT.X" in f for f in arch.causes[0].fixes)  # not read as an NVRTC compute_XY
    triton = explain_text(
        "RuntimeError: Cannot find a working triton installation. Either the package is not installed or it is too old.\n"
    )
    assert top(triton)[0] == "toolchain-not-found" and "triton-windows" in triton.causes[0].fixes[1]


def test_round_19_tf1_cudnn_launch_failure_is_the_cudnn_pair_first_memory_second() -> None:
    exp = explain_text(
        "InternalError (see above for traceback): cuDNN launch failure : input shape ([64,128,1,1])\n"
        "\t [[node dx_net/BatchNorm/FusedBatchNorm (defined at model.py:37) ]]\n"
    )
    assert exp.root is not None and exp.root.line == 1 and top(exp)[:2] == ["cudnn-mismatch", "gpu-oom"]
    fixes = rank.cause_json(exp.causes, 0)["fix"]
    assert "tensorflow.org/install/source#gpu" in fixes[0] and "memory growth" in fixes[1]
    # a GPU launch failure of another kind is not read as cuDNN's
    assert "cudnn-mismatch" not in top(explain_text("RuntimeError: CUDA error: unspecified launch failure\n"))


def test_round_20_jax_unable_to_load_cuda_in_the_backend_warning() -> None:
    exp = explain_text(
        "WARNING:jax._src.xla_bridge:CUDA backend failed to initialize: Unable to load CUDA. "
        "(Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)\n"
    )
    assert top(exp)[0] == "cuda-libs-missing"
    assert 'pip install -U "jax[cuda12]"' in rank.cause_json(exp.causes, 0)["fix"][0]


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: CUDA error: invalid configuration argument",
        "RuntimeError: cuda runtime error (9) : invalid configuration argument at roi_pool_kernel.cu:101",
    ],
)
def test_invalid_configuration_is_a_launch_sized_from_the_input(line: str) -> None:
    exp = explain_text(line + "\n", {})
    assert top(exp) == ["library-bug", "shape-mismatch"]
    fixes = rank.cause_json(exp.causes, 0)["fix"]
    assert "CUDA_LAUNCH_BLOCKING=1" in fixes[0] and any("#64194" in f for f in fixes)
    assert "x.numel() == 0" in rank.cause_json(exp.causes, 1)["fix"][0]
    other = explain_text("RuntimeError: CUDA error: invalid argument\n", {}).root
    assert other is not None and other.sig.id != "library-bug/invalid-launch-configuration"


def test_tensorflow_cudart_stub_symbol_is_a_missing_cudart_not_an_arch() -> None:
    line = "InternalError: cudaGetDevice() failed. Status: cudaGetErrorString symbol not found.\n"
    exp = explain_text(line, {})
    assert exp.root is not None and exp.root.sig.id == "cuda-libs-missing/tf-cudart-stub-symbol"
    assert top(exp)[0] == "cuda-libs-missing"
    assert "cudart64_100.dll" in rank.cause_json(exp.causes, 0)["fix"][0]


def test_operation_not_supported_names_the_stream_ordered_allocator_first() -> None:
    exp = explain_text("RuntimeError: CUDA error: operation not supported\n", {})
    assert "--disable-cuda-malloc" in rank.cause_json(exp.causes, 0)["fix"][0]


def test_dnn_library_initialization_failed_keeps_an_old_driver_in_view() -> None:
    exp = explain_text("XlaRuntimeError: FAILED_PRECONDITION: DNN library initialization failed\n", {})
    assert top(exp) == ["cudnn-mismatch", "gpu-oom", "driver-too-old"]
    assert "Loaded runtime CuDNN library" in rank.cause_json(exp.causes, 0)["fix"][0]
    assert "525" in rank.cause_json(exp.causes, 2)["fix"][0]


def test_fbgemm_dll_is_torch_240s_missing_openmp_runtime_not_a_cuda_library() -> None:
    line = (
        'OSError: [WinError 126] The specified module could not be found. Error loading "C:\\Users\\u\\'
        'venv\\Lib\\site-packages\\torch\\lib\\fbgemm.dll" or one of its dependencies.\n'
    )
    exp = explain_text(line, {})
    assert exp.root is not None and exp.root.sig.id == "library-bug/torch-fbgemm-libomp140"
    assert top(exp)[0] == "library-bug"
    assert "torch>=2.4.1" in rank.cause_json(exp.causes, 0)["fix"][0]
    other = line.replace("fbgemm.dll", "caffe2_nvrtc.dll")
    assert top(explain_text(other, {}))[0] == "cuda-libs-missing"


def test_round_30_xla_cuda_graph_failures_say_how_to_turn_graphs_off() -> None:
    update = (
        "INTERNAL: Failed to execute XLA Runtime executable: run time error: custom call "
        "'xla.gpu.graph.launch' failed: Failed to update gpu graph: Graph update result=kNodeTypeChanged: "
        "Failed to update CUDA graph: CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE: the graph update was not performed\n"
    )
    exp = explain_text(update, {})
    assert top(exp)[0] == "library-bug"
    assert "--xla_gpu_enable_command_buffer=" in rank.cause_json(exp.causes, 0)["fix"][0]
    capture = (
        "XlaRuntimeError: INTERNAL: CUDA error: Failed to end stream capture: "
        "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: operation failed due to a previous error during capture\n"
    )
    assert explain_text(capture, {}).root.sig.id == "library-bug/xla-cuda-graph"  # type: ignore[union-attr]
    torch = "RuntimeError: CUDA error: operation not permitted when stream is capturing\n"
    assert explain_text(torch, {}).root.sig.id == "library-bug/illegal-during-graph-capture"  # type: ignore[union-attr]


def test_libcuda_by_its_development_name_is_a_loader_path_problem() -> None:
    line = "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file: No such file or directory\n"
    exp = explain_text(line, {})
    assert exp.root is not None and exp.root.sig.id == "env-path-misconfig/libcuda-dev-name-not-found"
    assert top(exp)[0] == "env-path-misconfig"
    assert "/usr/lib/wsl/lib" in rank.cause_json(exp.causes, 0)["fix"][0]
    # the versioned name missing means no driver in reach, as before
    versioned = "OSError: libcuda.so.1: cannot open shared object file: No such file or directory\n"
    assert top(explain_text(versioned, {}))[0] == "no-gpu-visible"


def test_round_31_nccl_infiniband_verbs_failures_check_the_fabric_then_the_plugin() -> None:
    exp = explain_text(
        "misc/ibvwrap.cc:284 NCCL WARN Call to ibv_modify_qp failed with error Invalid argument\n", {}
    )
    assert exp.root is not None and exp.root.sig.id == "multi-gpu-comm/nccl-ib-verbs-failed"
    assert top(exp)[:2] == ["multi-gpu-comm", "library-bug"]
    fixes = rank.cause_json(exp.causes, 0)["fix"]
    assert "ibv_modify_qp (Invalid argument)" in fixes[0] and "NCCL_IBEXT_DISABLE=1" in fixes[1]
    assert not any("NCCL_P2P_DISABLE" in f for f in fixes)  # peer-to-peer is not the RDMA path
    assert "2.5.6-2" in rank.cause_json(exp.causes, 1)["fix"][0]


@pytest.mark.parametrize(
    "line",
    [
        # trexminer/T-Rex#95: a CUDA 11.1 build on driver 440.100
        "/home/rik/Downloads/trex/t-rex: symbol lookup error: /home/rik/Downloads/trex/t-rex: undefined symbol: cuDevicePrimaryCtxSetFlags_v2",
        # trexminer/T-Rex#118: Windows, a newer driver fixed it
        "The procedure entry point cuDevicePrimaryCtxReset_v2 could not be located in the dynamic link library nvcuda.dll",
    ],
)
def test_a_driver_api_entry_point_the_driver_lacks_is_an_old_driver(line: str) -> None:
    exp = explain_text(line + "\n")
    assert exp.root is not None and exp.root.sig.id == "driver-too-old/driver-api-symbol-missing"
    assert top(exp)[:2] == ["driver-too-old", "multiple-toolkits"]


def test_an_unversioned_driver_symbol_missing_is_still_another_copy_of_the_library() -> None:
    """pytorch/pytorch#15048: cuCtxGetCurrent exists in every driver; ld.so.conf named an old toolkit."""
    exp = explain_text("RuntimeError: undefined symbol: cuCtxGetCurrent\n")
    assert exp.root is not None and exp.root.sig.id == "multiple-toolkits/undefined-cuda-symbol"
    assert top(exp)[0] == "multiple-toolkits"


def test_cupy_whose_compiled_core_is_missing_is_a_broken_install_reinstalled_as_a_wheel() -> None:
    """cupy/cupy#7907: 'import cupy' worked, 'import cupy.cuda' did not; a new conda environment fixed it."""
    exp = explain_text(
        'Traceback (most recent call last):\n  File "<stdin>", line 1, in <module>\n'
        "ModuleNotFoundError: No module named 'cupy.cuda'\n"
    )
    assert top(exp)[0] == "broken-install"
    fix = rank.cause_json(exp.causes, 0, plan=exp.plan)["fix"]
    assert not any(
        "--no-deps cupy " in s or s.endswith("--no-deps cupy") for s in fix
    )  # PyPI's cupy compiles


def test_tensorrt_missing_from_the_loader_path_reads_as_a_path_problem_first() -> None:
    """onnx/onnx-tensorrt#385: TensorRT from its tar package, its lib directory not on LD_LIBRARY_PATH. A
    CUDA library of the toolkit keeps its reading (cuda-libs-missing first)."""
    trt = explain_text(
        "onnx2trt: error while loading shared libraries: libnvinfer.so.6: cannot open shared object file: No such file or directory\n"
    )
    assert top(trt)[:2] == ["env-path-misconfig", "cuda-libs-missing"]
    cublas = explain_text(
        "ImportError: libcublas.so.11: cannot open shared object file: No such file or directory\n"
    )
    assert top(cublas)[0] == "cuda-libs-missing"


CUBLAS_10 = "ImportError: libcublas.so.10.0: cannot open shared object file: No such file or directory\n"


def test_a_library_of_a_cuda_the_stated_driver_cannot_run_is_the_driver_first() -> None:
    """DeepLabCut#300: a wheel asks for CUDA 10.0's libcublas on a 384 driver (CUDA 9.0 at most): finding the
    file would not be enough. With a driver that runs CUDA 10.0, the missing file is the cause."""
    old = explain_text(CUBLAS_10, {"driver": "NVIDIA 384.xx", "system_cuda": "cudatoolkit 9.0"})
    assert top(old)[0] == "driver-too-old"
    assert any("410.48" in why for why in old.causes[0].reasons)
    assert top(explain_text(CUBLAS_10, {"driver": "418.87.01"}))[0] == "cuda-libs-missing"
    assert top(explain_text(CUBLAS_10, {}))[0] == "cuda-libs-missing"


def test_an_undefined_cudnn_symbol_is_a_cudnn_of_another_release() -> None:
    """cupy/cupy#521: CuPy's cudnn module lacks cudnnSetFilterNdDescriptor_v3 in the cuDNN loaded; no NumPy or
    MKL step beside it (the missing symbol is cuDNN's)."""
    line = (
        "ImportError('/home/user/anaconda3/lib/python3.6/site-packages/cupy/cuda/cudnn.cpython-36m-x86_64-linux-gnu.so: "
        "undefined symbol: cudnnSetFilterNdDescriptor_v3',)\n"
    )
    exp = explain_text(line, {})
    assert top(exp)[0] == "cudnn-mismatch"
    doc = rank.cause_json(exp.causes, 1, plan=exp.plan)
    assert not any("numpy" in s.lower() or "mkl" in s.lower() for s in doc["fix"])
    # a cuBLAS symbol stays the copy that shadows another (the corpus's six cases)
    cublas = explain_text("OSError: libfoo.so: undefined symbol: cublasLtHSHMatmulAlgoInit\n", {})
    assert top(cublas)[0] == "multiple-toolkits"
