"""explain on GPUs that cannot be used or seen, the wrong device, and CUDA after fork: containers,
the fabric manager, driver state after suspend, peer access, forked DataLoader workers."""

from __future__ import annotations

import pytest

from cudoctor.explainer import rank
from tests.explainer.helpers import explain_text, rooted, top

CUPY_POOL = """  File "/usr/lib/python2.7/multiprocessing/pool.py", line 389, in _handle_results
    task = get()
  File "cupy/cuda/runtime.pyx", line 101, in cupy.cuda.runtime.CUDARuntimeError.__init__
TypeError: ('an integer is required', <class 'cupy.cuda.runtime.CUDARuntimeError'>, (u'cudaErrorInitializationError: initialization error',))
"""


@pytest.mark.parametrize(
    "log",
    [CUPY_POOL, "RuntimeError: CUDA failed with error initialization error\n"],
    ids=["cupy-in-a-pool", "ctranslate2"],
)
def test_initialization_error_in_a_child_process_is_a_fork(log: str) -> None:
    """chainer/chainer#1087 (CuPy in a multiprocessing pool), SYSTRAN/faster-whisper#983 (CTranslate2
    after torch.cuda.is_available() in the parent): error 3 is CUDA used after fork, not a missing GPU."""
    exp = rooted(log, "cuda-after-fork/cuda-initialization-error")
    assert top(exp)[0] == "cuda-after-fork"
    assert "no-gpu-visible" in top(exp)


def test_launch_timeout_is_the_display_watchdog() -> None:
    exp = explain_text("RuntimeError: CUDA error: the launch timed out and was terminated\n")
    assert top(exp)[0] == "gpu-watchdog"
    out = rank.cause_json(exp.causes, 0)
    assert "TdrDelay" in " ".join(out["fix"]) and out["references"]


WORKER = """RuntimeError: Caught RuntimeError in DataLoader worker process 0.
Original Traceback (most recent call last):
  File "/usr/lib/python3/dist-packages/torch/utils/data/_utils/worker.py", line 287, in _worker_loop
    data = fetcher.fetch(index)
"""


def test_cuda_in_a_forked_worker() -> None:
    forked = explain_text(
        "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the 'spawn' start method\n"
    )
    assert top(forked) == ["cuda-after-fork"]
    alone = explain_text("RuntimeError: CUDA error: initialization error\n")
    in_worker = explain_text(WORKER + "RuntimeError: CUDA error: initialization error\n")
    assert top(alone)[:2] == top(in_worker)[:2] == ["cuda-after-fork", "no-gpu-visible"]
    # the worker traceback is evidence only for this reading: it widens the gap to the next cause
    gap = [e.causes[0].score - e.causes[1].score for e in (alone, in_worker)]
    assert gap[1] > gap[0] + 0.3
    assert "spawn" in " ".join(rank.cause_json(in_worker.causes, 0)["fix"])


def test_a_worker_traceback_says_nothing_about_other_errors() -> None:
    exp = explain_text(WORKER + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB\n")
    assert top(exp)[0] == "gpu-oom" and "cuda-after-fork" not in [c.id for c in exp.causes]
    assert explain_text(WORKER).causes == []


def test_nvml_unknown_error_is_a_container_that_lost_its_gpu() -> None:
    exp = explain_text("root@098b49afe624:/# nvidia-smi\nFailed to initialize NVML: Unknown Error\n")
    assert top(exp)[0] == "no-gpu-visible" and "daemon-reload" in exp.causes[0].fixes[0]
    assert (
        top(explain_text("Failed to initialize NVML: Driver/library version mismatch\n"))[0]
        != "no-gpu-visible"
    )


def test_generator_device_mismatch_names_both_devices() -> None:
    exp = explain_text("RuntimeError: Expected a 'cuda' device type for generator but found 'cpu'\n")
    assert top(exp)[0] == "device-mismatch"
    assert "generator is on cpu while the default tensor device is cuda" in exp.causes[0].fixes[0]
    assert "torch.Generator(device='cuda')" in exp.causes[0].fixes[0]


def test_a_device_index_beyond_the_visible_gpus() -> None:
    exp = explain_text(
        "torch.cuda.DeferredCudaCallError: CUDA call failed lazily at initialization with error: "
        'device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at "../aten/src/ATen/cuda/CUDAContext.cpp":50\n'
    )
    assert top(exp)[0] == "no-gpu-visible" and "CUDA_VISIBLE_DEVICES" in exp.causes[0].fixes[0]


def test_round_20_error_802_says_how_to_start_the_fabric_manager() -> None:
    exp = explain_text("ggml_cuda_init: failed to initialize CUDA: system not yet initialized\n")
    assert top(exp)[0] == "no-gpu-visible"
    fixes = rank.cause_json(exp.causes, 0)["fix"]
    assert (
        "systemctl status nvidia-fabricmanager" in fixes[0] and "version must equal the driver's" in fixes[1]
    )


@pytest.mark.parametrize(
    "log",
    [
        "E external/xla/xla/stream_executor/cuda/cuda_driver.cc:268] failed call to cuInit: CUDA_ERROR_UNKNOWN: unknown error\n",
        "F0504 12:30:02.978602 2662 common.cpp:163] Check failed: error == cudaSuccess (30 vs. 0) unknown error\n",
    ],
)
def test_round_20_cuda_unknown_error_points_at_the_driver_state_after_suspend(log: str) -> None:
    exp = explain_text(log)
    assert top(exp)[0] == "no-gpu-visible"
    fixes = rank.cause_json(exp.causes, 0)["fix"]
    assert (
        "sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm" in fixes[0]
        and "nvidia-modprobe -c 0 -u" in fixes[1]
    )
    # another CUDA status number in the same wording is not the unknown error
    assert (
        "no-gpu-visible"
        not in top(explain_text("Check failed: error == cudaSuccess (2 vs. 0) out of memory\n"))[:1]
    )


# ---------------------------------------------------------------- round 24
def test_round_24_peer_access_unsupported_turns_p2p_off() -> None:
    exp = explain_text(
        "RuntimeError: CUDA error: peer access is not supported between these two devices\n", {}
    )
    assert top(exp)[0] == "multi-gpu-comm"
    fixes = rank.cause_json(exp.causes, 0)["fix"]
    assert any("NCCL_P2P_DISABLE=1" in f for f in fixes) and any("topo -p2p r" in f for f in fixes)
    assert explain_text("CUDA error: peer access has not been enabled\n", {}).root is None


@pytest.mark.parametrize("what", ["invalid device context", "context is destroyed"])
def test_round_24_triton_context_errors_are_the_wrong_current_device(what: str) -> None:
    exp = explain_text(f"RuntimeError: Triton Error [CUDA]: {what}\n", {})
    assert top(exp)[0] == "device-mismatch"
    assert "torch.cuda.set_device(x.device)" in rank.cause_json(exp.causes, 0)["fix"][0]


def test_round_24_no_cuda_backend_kernel_is_a_cpu_only_build() -> None:
    log = "NotImplementedError: Could not run 'aten::empty_strided' with arguments from the 'CUDA' backend.\n"
    exp = explain_text(log, {})
    assert top(exp)[:2] == ["cpu-only-build", "multiple-toolkits"]
    assert rank.cause_json(exp.causes, 0)["fix"][0].startswith("This PyTorch has no CUDA kernels")
    quantized = "NotImplementedError: Could not run 'quantized::linear_dynamic' with arguments from the 'CUDA' backend.\n"
    assert explain_text(quantized, {}).root is None


def test_torch_driver_initialization_failed_is_no_usable_gpu() -> None:
    exp = explain_text(
        "RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu.\n", {}
    )
    assert top(exp)[0] == "no-gpu-visible"
    assert rank.cause_json(exp.causes, 0)["fix"][0].startswith("PyTorch's cuInit failed")
    # the runtime's "initialization error" after a fork stays the fork's
    assert top(explain_text("RuntimeError: CUDA error: initialization error\n", {}))[0] == "cuda-after-fork"


def test_no_cuda_gpus_points_at_a_script_that_sets_cuda_visible_devices_itself() -> None:
    """Grace9994/CoMoSVC#6: train.py set CUDA_VISIBLE_DEVICES='1' on a machine with one GPU."""
    exp = explain_text("RuntimeError: No CUDA GPUs are available\n", {})
    assert top(exp)[0] == "no-gpu-visible"
    assert any("grep -rn CUDA_VISIBLE_DEVICES" in f for f in rank.cause_json(exp.causes, 0)["fix"])


def test_a_gpu_count_of_zero_is_no_visible_gpu_unless_the_facts_show_a_cpu_build() -> None:
    """pytorch/serve#205: 'Number of GPUs: 0' from a container started without the GPU runtime."""
    log = "2020-04-16 01:53:17,099 [INFO ] main org.pytorch.serve.ModelServer - \nNumber of GPUs: 0\nNumber of CPUs: 8\n"
    assert top(explain_text(log))[:2] == ["no-gpu-visible", "cpu-only-build"]
    cpu = explain_text(log, {"framework_version": "torch 2.1.0+cpu", "gpu": "Tesla V100"})
    assert top(cpu)[0] == "cpu-only-build"
    assert explain_text("Number of GPUs: 4\n").root is None
