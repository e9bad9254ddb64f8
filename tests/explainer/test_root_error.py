"""cudoctor explain: which line is the root error, how the log text is normalised and read,
and what a precise signature replaces."""

from __future__ import annotations

import io

import pytest

from cudoctor.explainer import rank, scan
from cudoctor.model import Snapshot
from tests.explainer.helpers import ASYNC, explain_text, top


def test_async_error_root_is_the_earlier_assert() -> None:
    exp = explain_text(ASYNC)
    assert exp.root is not None and exp.root.line == 2 and "Assertion" in exp.root.text
    assert top(exp)[0] == "illegal-memory-access"


MULTI_RANK = "".join(
    [
        f"[rank{r}]:[E ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE) ran for 600010 milliseconds before timing out.\n"
        for r in range(4)
    ]
    + [
        "[rank37]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 5 has a total capacity of 79.15 GiB of which 1.02 GiB is free.\n"
    ]
    + [
        f"[rank{r}]:[E ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE)\n"
        for r in range(40, 60)
    ]
)


def test_multi_rank_root_is_the_oom_not_the_nccl_timeouts() -> None:
    exp = explain_text(MULTI_RANK)
    assert exp.root is not None and exp.root.rank == 37 and exp.root.line == 5
    assert top(exp)[0] == "gpu-oom"
    assert exp.scan.counts["multi-gpu-comm/collective-timeout"] == 24


def test_same_message_different_machines() -> None:
    gemm = "tensorflow.python.framework.errors_impl.InternalError: Blas GEMM launch failed : a.shape=(32, 1000), b.shape=(1000, 512), m=32, n=512, k=1000\n"
    old_build_new_gpu = explain_text(
        gemm, {"gpu": "A100", "framework_version": "tensorflow-gpu 1.13.1", "system_cuda": "10.0"}
    )
    assert top(old_build_new_gpu)[0] == "arch-unsupported"
    alloc = (
        "E tensorflow/stream_executor/cuda/cuda_blas.cc:464] failed to create cublas handle: CUBLAS_STATUS_ALLOC_FAILED\n"
        + gemm
    )
    assert (
        top(explain_text(alloc, {"gpu": "RTX 2080 Ti", "framework_version": "tensorflow-gpu 2.1.0"}))[0]
        == "gpu-oom"
    )
    dlopen = (
        "W tensorflow/stream_executor/platform/default/dso_loader.cc:55] Could not load dynamic library 'libcublas.so.10'; dlerror: libcublas.so.10: cannot open shared object file\n"
        + gemm
    )
    assert top(explain_text(dlopen, {}))[0] == "cuda-libs-missing"


def test_captured_values_are_used() -> None:
    exp = explain_text("RuntimeError: The NVIDIA driver on your system is too old (found version 11060).\n")
    assert exp.root is not None and exp.root.captures["driver_cuda_int"] == "11060"
    assert any("CUDA 11.6" in r for r in exp.causes[0].reasons)
    cudnn = explain_text(
        "ImportError: libcudnn.so.8: cannot open shared object file: No such file or directory\n"
    )
    assert top(cudnn)[0] == "cudnn-mismatch"
    big = explain_text(
        "Blas xGEMV launch failed : a.shape=[1,1638400,3], b.shape=[1,3,1], m=1638400, n=1, k=3 [Op:MatMul]\n"
    )
    assert top(big)[0] == "library-bug"


@pytest.mark.parametrize("engine", ["python", "auto"])
def test_normalisation_of_colours_timestamps_crlf_and_bad_utf8(engine: str) -> None:
    raw = (
        b"2024-05-01 12:00:00.123456: I tensorflow/core/platform/cpu_feature_guard.cc:182] fine\r\n"
        b"\x1b[31m2024-05-01T12:00:01Z [rank3]: RuntimeError: CUDA error: device-side assert triggered\x1b[0m\r\n"
        b"\xff\xfe broken bytes here\r\n"
    )
    result = scan.scan(io.BytesIO(raw), engine=engine)
    exp = rank.explain(result, Snapshot())
    assert exp.root is not None and exp.root.line == 2 and exp.root.rank == 3
    assert (
        exp.root.text.startswith("2024-05-01T12:00:01Z")
        and "\x1b" not in exp.root.text
        and "\r" not in exp.root.text
    )


def test_python_and_hyperscan_engines_agree() -> None:
    log = ASYNC + MULTI_RANK + "Could not load dynamic library 'libcudart.so.11.0'\n"
    a = scan.scan(io.BytesIO(log.encode()), engine="python")
    b = scan.scan(io.BytesIO(log.encode()), engine="auto")
    assert [(m.line, m.sig.id) for m in a.matches] == [(m.line, m.sig.id) for m in b.matches]
    assert a.lines == b.lines == log.count("\n")


def test_no_match_falls_back_to_last_error_line() -> None:
    exp = explain_text("starting\nValueError: my own bug\nshutting down\n")
    assert exp.root is None and exp.root_fallback == (2, "ValueError: my own bug")


def test_a_precise_signature_replaces_the_generic_one_on_its_line_only() -> None:
    """detectron2#1991: ':/usr/local/cuda/bin/nvcc: not found' is a CUDA_HOME list, not a missing nvcc."""
    exp = explain_text("/bin/sh: 1: :/usr/local/cuda/bin/nvcc: not found\n/bin/sh: 1: nvcc: not found\n")
    sigs = [(m.line, m.sig.id) for m in exp.matches]
    assert (1, "env-path-misconfig/cuda-home-path-list") in sigs
    assert (1, "toolchain-not-found/cuda-home-not-set") not in sigs
    assert (2, "toolchain-not-found/cuda-home-not-set") in sigs
    facts = {"framework_version": "PyTorch 1.6.0", "system_cuda": "9.2"}  # a true but later problem
    assert (
        top(explain_text("/bin/sh: 1: :/usr/local/cuda/bin/nvcc: not found\n", facts))[0]
        == "env-path-misconfig"
    )


def test_tensorflow_unexpected_event_status_defers_to_the_cuda_error_above_it() -> None:
    alone = explain_text(
        "F tensorflow/core/common_runtime/gpu/gpu_event_mgr.cc:273] Unexpected Event status: 1\n", {}
    )
    assert alone.root is not None and alone.root.sig.id == "illegal-memory-access/tf-unexpected-event-status"
    assert "Error polling for event status" in rank.cause_json(alone.causes, 0)["fix"][0]
    log = (
        "E tensorflow/stream_executor/cuda/cuda_event.cc:49] Error polling for event status: failed to query "
        "event: CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure\n"
        "F tensorflow/core/common_runtime/gpu/gpu_event_mgr.cc:203] Unexpected Event status: 1\n"
    )
    exp = explain_text(log, {})
    assert exp.root is not None and exp.root.line == 1


def test_an_upper_case_error_as_logging_prints_it_is_an_error() -> None:
    """koboldcpp#610: 'ERROR: ggml-cuda was compiled without support for the current GPU architecture.'
    matched no signature and was taken for a harmless last line; as an error line the learned stage
    ranks it (arch-unsupported)."""
    assert rank.looks_like_error(
        "ERROR: ggml-cuda was compiled without support for the current GPU architecture."
    )
    assert rank.looks_like_error("ERROR:numba.cuda.cudadrv.driver:Call to cuLinkAddData results in a failure")
    assert not rank.looks_like_error("I0000 00:00:1 stats: LOG_ERRORS_TOTAL=0 WARNING_COUNT=0")
    from cudoctor.explainer.command import explain_stated

    doc = explain_stated(
        "ERROR: ggml-cuda was compiled without support for the current GPU architecture.\n", {}
    )
    assert doc["root"]["error_looking"] and doc["causes"][0]["id"] == "arch-unsupported"


def test_work_said_to_run_on_the_cpu_is_a_symptom() -> None:
    """TencentARC/GFPGAN warns 'The unoptimized RealESRGAN is slow on CPU' when torch sees no CUDA (round 97):
    a line that says the work runs on the CPU is a failure told in other words."""
    assert rank.looks_like_error("UserWarning: The unoptimized RealESRGAN is slow on CPU. We do not use it.")
    assert rank.looks_like_error("Model is running on the CPU")
    assert not rank.looks_like_error("Loaded 12 layers on the GPU, 0 on cpu_mem pool")


def test_a_gpu_count_of_zero_is_a_symptom() -> None:
    """pytorch/serve#205: TorchServe's log says 'Number of GPUs: 0' in a container started without the GPU runtime."""
    assert rank.looks_like_error("Number of GPUs: 0")
    assert rank.looks_like_error("n_gpu=0, distributed training: False")
    assert not rank.looks_like_error("Number of GPUs: 4")
    assert not rank.looks_like_error("Using GPU 0")


@pytest.mark.parametrize(
    "line",
    [
        "No module named 'mmcv._ext'",  # open-mmlab/mmdetection#3272, pasted alone
        "No devices were found",  # nvidia-smi in a cgroup without the GPUs (pytorch/pytorch#190132)
        "NCCL INFO Call to connect returned Connection refused, retrying",
        # flownet2-tf#87: the loader's words quoted without the ImportError before them
        "undefined symbol: _ZN10tensorflow12OpDefBuilder4AttrENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
    ],
)
def test_a_failure_told_without_the_word_error_looks_like_one(line: str) -> None:
    assert rank.looks_like_error(line)


def test_lines_that_name_devices_or_modules_found_are_no_failure() -> None:
    assert not rank.looks_like_error("Found 2 devices: GPU0, GPU1")
    assert not rank.looks_like_error("Loaded module named torch")


def test_an_answer_on_the_line_after_its_check_reads_as_the_symptom() -> None:
    """vocalpy/vak (conda-forge's CPU torch): '>>> torch.cuda.is_available()' then 'False'; a Slurm job's
    'srun python -c ...is_available()...' then '# False' (a job without a GPU requested)."""
    from cudoctor.explainer.command import explain_stated

    repl = explain_stated(">>> import torch\n>>> torch.cuda.is_available()\nFalse\n", {})
    assert repl["causes"] and "is_available() False" in repl["root"]["text"]
    comment = explain_stated('srun python -c "import torch; print(torch.cuda.is_available())"\n# False\n', {})
    assert comment["causes"]
    # an answer that is not False, or a False after something else, is no symptom
    assert rank._answers_joined([(1, ">>> torch.cuda.is_available()"), (2, "True")])[1][1] == "True"
    assert rank._answers_joined([(1, ">>> x = 3"), (2, "False")])[1][1] == "False"


def test_the_root_is_the_first_line_that_says_it() -> None:
    """NVIDIA/nccl-tests#287: every rank prints the same NCCL line; taichi-dev/taichi#7826: a warning re-raises
    the error line above it. The first saying of it is the root."""
    lines = [
        (1, "GENOA-06:4766:4780 [0] NCCL INFO ncclMaxSharedMem 82240 exceeds device/fn maxSharedMem 79856"),
        (2, "GENOA-06:4766:4781 [1] NCCL INFO ncclMaxSharedMem 82240 exceeds device/fn maxSharedMem 79856"),
    ]
    assert rank._first_saying(lines, 2, lines[1][1])[0] == 1
    other = [
        (1, "[E 04/17/23] loading model weights from disk now"),
        (2, "RuntimeError: Function X not found"),
    ]
    assert rank._first_saying(other, 2, other[1][1])[0] == 2


@pytest.mark.parametrize(
    "log",
    [
        ">>> import torch\n>>> torch.cuda.device_count()\n0\n",
        ">>> tf.config.list_physical_devices('GPU')\n[]\n",
        "In [3]: torch.cuda.is_available()\nOut[3]: False\n",
    ],
)
def test_a_count_of_zero_or_an_empty_device_list_after_its_check_is_a_symptom(log: str) -> None:
    from cudoctor.explainer.command import explain_stated

    assert explain_stated(log, {})["causes"]


def test_the_root_is_the_message_not_the_traceback_s_echo_of_the_code() -> None:
    """facebookresearch/detectron2#460: the traceback prints the raise before the message; both match the same
    signature, and the message is the root."""
    log = (
        'File "/home/xx/anaconda3/envs/tf-gpu/lib/python3.7/site-packages/torch/cuda/__init__.py", line 95, in _check_driver\n'
        '    raise AssertionError("Torch not compiled with CUDA enabled")\n'
        "AssertionError: Torch not compiled with CUDA enabled\n"
    )
    exp = explain_text(log)
    assert exp.root is not None and exp.root.text.startswith("AssertionError: Torch not compiled")


def test_a_fallback_root_is_never_a_frame_or_the_source_line_of_a_warning() -> None:
    # turboderp/exllama#33, cut after its traceback: the warning's own line, not its source echo
    log = (
        "F:\\ChatIAs\\exllama\\venv\\lib\\site-packages\\torch\\utils\\cpp_extension.py:358: UserWarning: Error checking "
        "compiler version for cl: [WinError 2] The system cannot find the file specified\n"
        "  warnings.warn(f'Error checking compiler version for {compiler}: {error}')\n"
    )
    line = rank.fallback_root(scan.scan(io.BytesIO(log.encode())))
    assert line is not None and "UserWarning: Error checking compiler version for cl" in line[1]
    assert rank.is_echo(
        '  File "cupy/cuda/memory.pyx", line 37, in cupy.cuda.memory.OutOfMemoryError.__init__'
    )
    assert rank.is_echo("frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96")
    assert not rank.is_echo("AssertionError: Torch not compiled with CUDA enabled")


def test_a_cmake_header_carries_the_message_on_the_lines_below_it() -> None:
    """abetlen/llama-cpp-python#1917 (blind set 68): CMake prints 'CMake Error at FILE:LINE (cmd):' and its message
    indented on the next line; the root says both."""
    from cudoctor.explainer.command import explain_stated

    log = "-- CUDA Toolkit found\nCMake Error at CMakeLists.txt:12 (project):\n  No CUDA toolset found.\n-- Configuring incomplete"
    root = explain_stated(log, {})["root"]
    assert root["line"] == 2 and root["text"].endswith("No CUDA toolset found.")
    plain = explain_stated("CMake Error at CMakeLists.txt:12 (project):\nsomething unindented", {})["root"]
    assert plain["text"] == "CMake Error at CMakeLists.txt:12 (project):"
