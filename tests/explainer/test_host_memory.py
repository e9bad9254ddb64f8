"""explain on host-side failures: processes killed for host memory, shared memory too small, the
Windows paging file, CPU BLAS runtimes."""

from __future__ import annotations

from cudoctor.explainer import rank
from tests.explainer.helpers import explain_text, top


def test_round_13_wordings() -> None:
    bus = explain_text(
        "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).\n"
    )
    assert top(bus)[0] == "shm-exhausted"
    assert "--shm-size" in rank.cause_json(bus.causes, 0)["fix"][0]
    write = explain_text(
        "RuntimeError: unable to write to file </torch_31911_952036340_6686>: No space left on device (28)\n"
    )
    assert top(write)[0] == "shm-exhausted"
    # a full disk is not full shared memory
    assert (
        explain_text("OSError: [Errno 28] No space left on device: '/data/ckpt/epoch_10.pt'\n").causes == []
    )
    # a DataLoader worker killed by the OOM killer is not a bus error
    assert top(
        explain_text("RuntimeError: DataLoader worker (pid 12345) is killed by signal: Killed.\n")
    ) == ["host-oom"]
    mkl = explain_text(
        "ImportError: /x/site-packages/torch/lib/libtorch_cpu.so: undefined symbol: iJIT_NotifyEvent\n"
    )
    assert top(mkl) == ["binary-incompatible"] and "mkl=2024.0" in mkl.causes[0].fixes[0]
    assert (
        top(explain_text("ImportError: /x/libtorch_cuda.so: undefined symbol: cudaGraphDebugDotPrint\n"))[0]
        == "multiple-toolkits"
    )
    header = explain_text("/tmp/tmpdebje0fu/main.c:4:10: fatal error: Python.h: No such file or directory\n")
    assert top(header) == ["toolchain-not-found"] and "python3-dev" in header.causes[0].fixes[0]
    assert not any("nvcc" in f for f in rank.cause_json(header.causes, 0)["fix"])  # not a CUDA compiler


def test_round_14_killed_processes_are_host_memory() -> None:
    shards = "Loading checkpoint shards:  38%|██████▊           | 3/8 [00:02<00:03,  1.28it/s]Killed\n"
    exp = explain_text(shards)
    assert top(exp)[0] == "host-oom" and "dmesg" in exp.causes[0].fixes[0]
    dmesg = (
        "[2025-06-02 20:51:24,182] [INFO] [launch.py:319:sigkill_handler] Killing subprocess 410126\n"
        "[856341.770960] Out of memory: Killed process 410126 (python) total-vm:79905000kB, anon-rss:22957108kB\n"
    )
    exp = explain_text(dmesg)
    assert exp.root is not None and exp.root.sig.id == "host-oom/oom-killer" and top(exp) == ["host-oom"]
    # a GPU out-of-memory that the shell then reports as Killed stays a GPU out-of-memory
    cuda_oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB\nKilled\n"
    assert top(explain_text(cuda_oom))[0] == "gpu-oom"
    # prose about a killed worker is not the shell's report
    assert explain_text("INFO: worker 3 was killed by the user\n").matches == []
    torchrun = "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 3 (pid: 812917) of binary: /x/bin/python\n"
    assert top(explain_text(torchrun))[0] == "host-oom"


def test_round_14_cpu_blas_runtimes_and_graph_capture() -> None:
    warning = "OpenBLAS Warning : Detect OpenMP Loop and this application may hang. Please rebuild the library with USE_OPENMP=1 option.\n"
    exp = explain_text(warning * 3)
    assert top(exp) == ["cpu-blas-runtime"] and "OPENBLAS_NUM_THREADS=1" in exp.causes[0].fixes[0]
    # the warning repeats all through a log; a real error after it is still the root
    exp = explain_text(warning * 3 + "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    assert exp.root is not None and exp.root.line == 4
    mkl = explain_text("Intel MKL FATAL ERROR: Cannot load libmkl_avx2.so or libmkl_def.so.\n")
    assert top(mkl)[0] == "cpu-blas-runtime" and "libmkl_avx2.so" in mkl.causes[0].fixes[0]
    assert [m.sig.id for m in mkl.matches] == ["cpu-blas-runtime/mkl-cannot-load-kernels"]
    capture = explain_text("RuntimeError: CUDA error: operation not permitted when stream is capturing\n")
    assert top(capture)[:2] == ["library-bug", "device-mismatch"]
    fixes = rank.cause_json(capture.causes, 1)["fix"]
    assert "--enforce-eager" in rank.cause_json(capture.causes, 0)["fix"][0]
    assert fixes[0].startswith("Create the capture stream on the device that holds the model")


def test_round_19_a_dataloader_worker_that_exited_unexpectedly() -> None:
    exited = explain_text("RuntimeError: DataLoader worker (pid(s) 76) exited unexpectedly\n")
    assert top(exited)[:2] == ["shm-exhausted", "host-oom"]
    assert "--shm-size" in rank.cause_json(exited.causes, 0)["fix"][0]
    # torch chains it after the signal the worker died of: that line is the root
    killed = explain_text(
        "RuntimeError: DataLoader worker (pid 22048) is killed by signal: Killed.\n\n"
        "The above exception was the direct cause of the following exception:\n\n"
        "RuntimeError: DataLoader worker (pid(s) 22048) exited unexpectedly\n"
    )
    assert killed.root is not None and killed.root.line == 1 and top(killed)[0] == "host-oom"


def test_windows_paging_file_too_small_is_host_memory_not_a_missing_dll() -> None:
    line = (
        'OSError: [WinError 1455] The paging file is too small for this operation to complete. Error loading "C:\\'
        'Python\\lib\\site-packages\\torch\\lib\\cudnn_cnn_infer64_8.dll" or one of its dependencies.\n'
    )
    exp = explain_text(line, {})
    assert exp.root is not None and exp.root.sig.id == "host-oom/windows-paging-file-too-small"
    fixes = rank.cause_json(exp.causes, 0)["fix"]
    assert top(exp)[0] == "host-oom" and "num_workers" in fixes[0] and len(fixes) == 2
    missing = line.replace(
        "[WinError 1455] The paging file is too small", "[WinError 126] The specified module"
    )
    assert top(explain_text(missing, {}))[0] != "host-oom"
