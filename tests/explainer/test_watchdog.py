"""An unknown error at a synchronize call (a kernel that died while the host waited), the display
watchdog that most often kills it, and the facts that decide: a GPU that drives a display or runs
under WDDM (real nvidia-smi reports), a Windows path in the log, an error 700 printed by number.
Lines are from the threads each signature's source names."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from cudoctor.explainer import logfacts, rank, scan
from cudoctor.facts.stated import from_stated
from cudoctor.importers import load_report
from cudoctor.model import Snapshot
from tests.conftest import ROOT, explained, ids

REPORTS = Path(ROOT) / "tests" / "fixtures" / "reports"
RAYTRACING = "CUDA error = 999 at main.cu:196 'cudaDeviceSynchronize()'\n"  # raytracinginoneweekendincuda#7
# numba/numba#7769's traceback on Windows 10, with the code numba could not name
NUMBA_WINDOWS = """Traceback (most recent call last):
  File "F:\\numbaTest\\GPUTEST.py", line 33, in doTest
    cuda.synchronize()
  File "F:\\numbaTest\\Anaconda3\\envs\\numbaTest\\Lib\\site-packages\\numba\\cuda\\cudadrv\\driver.py", line 1223, in synchronize
    driver.cuCtxSynchronize()
numba.cuda.cudadrv.driver.CudaAPIError: [{code}] Call to cuCtxSynchronize results in UNKNOWN_CUDA_ERROR
"""


@pytest.mark.parametrize(
    "line",
    [
        RAYTRACING,
        'CUDA error at test_MMult.cpp:110 code=999 "cudaEventSynchronize(stop)"',
        "GPU #0: cudaError 30 (unknown error) calling 'result = cudaStreamSynchronize(stream)' (salsa_kernel.cu line 902)",
        'CUDA error at main.cu:42 code=999(cudaErrorUnknown) "cudaDeviceSynchronize()"',
    ],
)
def test_an_unknown_error_at_a_synchronize_is_a_kernel_that_died_not_a_missing_gpu(line: str) -> None:
    exp = explained(line)
    assert exp.root is not None and exp.root.sig.id == "gpu-watchdog/unknown-error-at-synchronize"
    assert ids(exp) == ["gpu-watchdog", "hardware-fault", "illegal-memory-access"]
    assert "no-gpu-visible" not in ids(exp)  # cudaErrorUnknown at start-up reads as no GPU; not here
    first = rank.cause_json(exp.causes, 0)
    assert "Synchronize" in first["why"] and any("TdrDelay" in f for f in first["fix"])


def test_the_same_unknown_error_at_start_up_still_reads_as_no_usable_gpu() -> None:
    assert ids(explained("cudaGetDeviceCount returned 30\n"))[0] == "no-gpu-visible"
    assert ids(explained("RuntimeError: CUDA error: unknown error\n"))[0] == "no-gpu-visible"


@pytest.mark.parametrize(
    ("report", "reason"),
    [
        ("nvidia_smi_q_x_rtx3080ti.xml", "drives a display"),  # Xorg and gnome-shell on it
        ("nvidia_smi_q_rtx4070_laptop.txt", "WDDM"),  # a Windows laptop: display inactive, WDDM
    ],
)
def test_a_gpu_that_drives_a_display_or_runs_wddm_confirms_the_watchdog(report: str, reason: str) -> None:
    exp = explained(RAYTRACING, load_report(str(REPORTS / report)))
    assert ids(exp)[0] == "gpu-watchdog"
    assert any(reason in r for r in exp.causes[0].reasons)
    assert exp.causes[0].score - exp.causes[1].score > 0.9


def test_gpus_that_drive_no_display_rule_the_watchdog_out() -> None:
    exp = explained(RAYTRACING, load_report(str(REPORTS / "nvidia_smi_q_t4_exclusive_mps.txt")))
    assert ids(exp)[0] == "hardware-fault" and ids(exp)[-1] == "gpu-watchdog"
    watchdog = next(c for c in exp.causes if c.id == "gpu-watchdog")
    assert any("no GPU drives a display" in r for r in watchdog.reasons)


def test_gpus_whose_display_state_is_unknown_leave_the_ranking_alone() -> None:
    stated = from_stated({"gpu": "Quadro K4200"})  # a name only: no display or driver-model fact
    exp = explained(RAYTRACING, stated)
    assert ids(exp)[0] == "gpu-watchdog"
    assert not any("display" in r for c in exp.causes for r in c.reasons)


def test_reports_give_each_gpus_display_state_and_windows_driver_model() -> None:
    def display(report: str) -> list[tuple[bool | None, str | None]]:
        gpus = load_report(str(REPORTS / report)).value("gpu.devices")
        return [(g["display_active"], g["driver_model"]) for g in gpus]

    assert display("nvidia_smi_q_x_rtx3080ti.xml") == [(True, None)]
    assert display("nvidia_smi_q_rtx4070_laptop.txt") == [(False, "WDDM")]
    assert display("nvidia_smi_q_t4_exclusive_mps.txt") == [(False, None)]  # 'Driver Model: N/A' on Linux


def test_a_windows_path_in_the_log_says_windows_and_weighs_toward_the_watchdog() -> None:
    """numba's [999] at cuCtxSynchronize in a traceback with F:\\ paths: the log's own paths say
    native Windows, where a display watchdog (TDR) is the usual killer."""
    text = NUMBA_WINDOWS.format(code=999)
    result = scan.scan(io.BytesIO(text.encode()))
    assert result.facts["os"] == (2, "F:\\")
    exp = rank.explain(result, logfacts.fill(Snapshot(), result.facts, None))  # as `explain` does
    assert exp.root is not None and exp.root.sig.id == "gpu-watchdog/unknown-error-at-synchronize"
    assert any("runs Windows" in r for r in exp.causes[0].reasons)
    linux = explained(text.replace("F:\\", "/home/u/"))  # the same error with Linux paths
    assert not any("runs Windows" in r for c in linux.causes for r in c.reasons)
    assert exp.causes[0].score > linux.causes[0].score


def test_a_log_under_wsl_is_not_native_windows() -> None:
    snap = from_stated({"os": "Windows 11, WSL2 Ubuntu 22.04"})
    exp = explained(RAYTRACING, snap)
    assert not any("runs Windows" in r for c in exp.causes for r in c.reasons)


def test_error_700_printed_by_number_is_an_illegal_address() -> None:
    """numba before numba-cuda#79 printed UNKNOWN_CUDA_ERROR for 700; the reporter's own
    out-of-bounds write reproduced it (numba/numba#7769)."""
    exp = explained(NUMBA_WINDOWS.format(code=700))
    assert exp.root is not None and exp.root.sig.id == "illegal-memory-access/error-700-by-number"
    assert ids(exp)[0] == "illegal-memory-access"
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in rank.cause_json(exp.causes, 0)["why"]
    openmm = "Exception: Error invoking kernel: Invalid error code (700)\n"  # openmm/openmm#820
    assert ids(explained(openmm))[0] == "illegal-memory-access"


def test_windows_own_notice_of_a_driver_reset_names_the_watchdog() -> None:
    text = (
        "System.ApplicationException: CUDA error occured before deserialization (most probably during "
        "kernel call): unknown error\n"
        "Event 4101: Display driver nvlddmkm stopped responding and has successfully recovered.\n"
    )
    exp = explained(text)
    assert exp.root is not None and exp.root.sig.id == "gpu-watchdog/display-driver-recovered"
    assert ids(exp)[0] == "gpu-watchdog"
