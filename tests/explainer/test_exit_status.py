"""The exit-status reader: how a process ended, read by table whatever its form (real log lines)."""

from __future__ import annotations

import pytest

from cudoctor import knowledge
from cudoctor.explainer import exit_status
from cudoctor.explainer.readers import read_line
from tests.explainer.helpers import explain_text, top

READ = [
    # gcc's driver on a compiler the OOM killer ended (NVlabs/nvdiffrast#183: a JIT extension build)
    ("c++: fatal error: Killed signal terminated program cc1plus", "SIGKILL"),
    # Windows exception statuses: hex in a runner's exit status or an exception print, signed decimal
    ("Error: llama runner process has terminated: exit status 0xc0000139", "STATUS_ENTRYPOINT_NOT_FOUND"),
    ("Exception 0xc000001d 0x0 0x0 0x7ffdd3ded257", "STATUS_ILLEGAL_INSTRUCTION"),
    ("Process finished with exit code -1073741819 (0xC0000005)", "STATUS_ACCESS_VIOLATION"),
    ("Process finished with exit code -1073741795", "STATUS_ILLEGAL_INSTRUCTION"),
    ("Process finished with exit code 3221225477", "STATUS_ACCESS_VIOLATION"),
    ("Windows fatal exception: access violation", "STATUS_ACCESS_VIOLATION"),
    ("Windows fatal exception: stack overflow", "STATUS_STACK_OVERFLOW"),
    # POSIX signals: by name, number, exit status 128+N, return code -N, a shell's own words
    ("fish: Job 1, 'openplayground run' terminated by signal SIGABRT (Abort)", "SIGABRT"),
    ("zsh: IOT instruction (core dumped)  ipython", "SIGABRT"),
    ("zsh: abort      python devika.py", "SIGABRT"),
    ("zsh: illegal hardware instruction  python train.py", "SIGILL"),
    ("Illegal instruction (core dumped)", "SIGILL"),
    ("Process finished with exit code 132 (interrupted by signal 4: SIGILL)", "SIGILL"),
    ("Process finished with exit code 139 (interrupted by signal 11: SIGSEGV)", "SIGSEGV"),
    ("exitcode  : -9 (pid: 4123)", "SIGKILL"),
    (
        "subprocess.CalledProcessError: Command '['python', 'x.py']' died with <Signals.SIGSEGV: 11>.",
        "SIGSEGV",
    ),
    ("Process finished with exit code 135 (interrupted by signal 7: SIGBUS)", "SIGBUS"),
    ("`Illegal instruction (core dumped)`", "SIGILL"),  # quoted in a thread
    ("RuntimeError: DataLoader worker (pid 22048) is killed by signal: Killed.", "SIGKILL"),
    ("Fatal Python error: Segmentation fault", "SIGSEGV"),
    # Windows system errors a failed call returns
    (
        "OSError: [WinError 1455] The paging file is too small for this operation to complete.",
        "ERROR_COMMITMENT_LIMIT",
    ),
    ("OSError: [WinError 126] The specified module could not be found.", "ERROR_MOD_NOT_FOUND"),
    (
        "Could not load library zlibwapi.dll. Error code 193. Please verify that the library is built correctly for your processor architecture (32-bit, 64-bit)",
        "ERROR_BAD_EXE_FORMAT",
    ),
    (
        "ONNXRuntimeError:1:FAIL:LoadLibrary failed with error 126 when trying to load onnxruntime_providers_cuda.dll",
        "ERROR_MOD_NOT_FOUND",
    ),
    # POSIX errors a failed call reports
    (
        "RuntimeError: unable to mmap 4096 bytes from file </torch_362873_3123855485_63350>: Cannot allocate memory (12)",
        "ENOMEM",
    ),
    (
        "[W socket.cpp:663] [c10d] The client socket has failed to connect to [::ffff:255.255.0.0]:29500 (errno: 110 - Connection timed out).",
        "ETIMEDOUT",
    ),
    (
        "RuntimeError: The server socket has failed to listen on any local network address. port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use",
        "EADDRINUSE",
    ),
]

NOT_READ = [
    "c++: fatal error: no input files",
    "Process finished with exit code 1",
    "Process finished with exit code 0",
    "RuntimeError: CUDA error: an illegal instruction was encountered",
    "ERROR: process exited with code 2",
    "The process was killed by the user",
    "Aborted by user request.",
    "0xc0000000 is the base address",  # a hex value no table row has
    "slept for 1073741795 ms",
    "The process exited with error code 126",  # no load failure, no WinError: a bare number
    "ERROR: the run failed",  # a word that looks like an errno name but is none
    "allocated 12 tensors (12)",
    "OSError: [Errno 28] No space left on device: '/data/ckpt/epoch_10.pt'",  # a full disk: the path decides
    "PermissionError: [Errno 13] Permission denied: '/home/u/.cache/huggingface/hub'",
]


@pytest.mark.parametrize("line,name", READ)
def test_an_ending_is_read_in_every_form(line: str, name: str) -> None:
    assert name in {e.name for e in exit_status.read(line)}


@pytest.mark.parametrize("line", NOT_READ)
def test_a_number_or_word_that_is_not_an_ending_is_left_alone(line: str) -> None:
    assert exit_status.read(line) == []


def test_the_readers_name_the_ending_its_form_and_its_causes() -> None:
    (reading,) = [
        r for r in read_line("Exception 0xc000001d 0x0 0x0 0x7ffdd3ded257") if r.reader == "exit-status"
    ]
    assert reading.facts == {"ending": "STATUS_ILLEGAL_INSTRUCTION"}
    assert "0xC000001D" in reading.what and "instruction" in reading.what
    assert max(reading.causes, key=reading.causes.__getitem__) == "cpu-blas-runtime"


def test_a_status_without_causes_takes_those_of_its_signal() -> None:
    (windows,) = exit_status.read("Windows fatal exception: access violation")
    (posix,) = exit_status.read("Segmentation fault (core dumped)")
    assert windows.causes == posix.causes


def test_the_table_is_complete() -> None:
    data = knowledge.table("exit_status")
    causes = knowledge.causes()
    signals = {row["name"] for row in data["signal"]}
    for row in data["signal"]:
        assert 0 < row["number"] < 32 and row["texts"] and row["meaning"]
        assert set(row["causes"]) <= set(causes), row["name"]
    for row in data["errno"]:
        assert row["name"].startswith("E") and 0 < row["code"] < 200 and row["text"] and row["meaning"]
        assert row["causes"] and set(row["causes"]) <= set(causes), row["name"]
    for row in data["winerror"]:
        assert row["name"].startswith("ERROR_") and 0 < row["code"] < 16000 and row["meaning"]
        assert row["causes"] and set(row["causes"]) <= set(causes), row["name"]
    for row in data["ntstatus"]:
        assert row["name"].startswith("STATUS_") and 0xC0000000 <= row["code"] <= 0xC0000FFF
        assert ("causes" in row) != ("signal" in row), row["name"]  # its own causes, or its signal's
        assert set(row.get("causes", {})) <= set(causes) and row.get("signal", "SIGSEGV") in signals


def test_a_windows_crash_with_no_signature_is_explained_by_its_status() -> None:
    exp = explain_text("Performing pre-initialization of GPU\nException 0xc000001d 0x0 0x0 0x7ffdd3ded257\n")
    assert exp.root is None and top(exp)[0] == "cpu-blas-runtime"


def test_an_ending_with_a_signature_keeps_its_signature_ranking() -> None:
    exp = explain_text("Process finished with exit code 139 (interrupted by signal 11: SIGSEGV)\n")
    alone = explain_text("Segmentation fault (core dumped)\n")
    assert top(exp)[:2] == top(alone)[:2]
