"""host.xid_events (the NVIDIA driver's Xid lines in the kernel log) and the check gpu-xid-logged.
The collector reads real kernel-log text through a real child process (tests/fixtures/kernel), and
the live dmesg of this machine, which has no NVIDIA driver."""

from __future__ import annotations

import io
import os
import sys

import pytest

from cudoctor.explainer import rank, scan
from cudoctor.facts import kernel_log
from cudoctor.model import Severity, Status
from tests.conftest import run_check, stated
from tests.explainer.helpers import explain_text

KERNEL = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "kernel")
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="dmesg is read on Linux only")


def _events(name: str) -> list[dict[str, object]]:
    fact = kernel_log.xid_events(("cat", os.path.join(KERNEL, name)))
    assert fact.status is Status.KNOWN
    return list(fact.value)


@linux_only
def test_xid_lines_are_counted_per_gpu_and_code() -> None:
    [faults] = _events("collenchyma-blas-14.dmesg")
    assert faults == {
        "pci": "0000:01:00",
        "code": 31,
        "count": 8,
        "last": "Ch 00000019, engmask 00000101, intr 10000000",
    }
    [off_bus] = _events("open-gpu-kernel-modules-1010.journal")  # the other NVRM lines carry no Xid
    assert (off_bus["code"], off_bus["count"]) == (79, 1)
    assert off_bus["last"] == "pid=6755, name=vivaldi-bin, GPU has fallen off the bus."


@linux_only
def test_a_log_without_xid_lines_is_known_and_empty() -> None:
    assert _events("project-machine-head.dmesg") == []
    assert _events("nvsentinel-155.dmesg") == []  # off the bus without an Xid: explain's, not this fact's


@linux_only
def test_an_unreadable_kernel_log_is_unknown_and_says_why() -> None:
    refused = ("sh", "-c", "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1")
    fact = kernel_log.xid_events(refused)
    assert fact.status is Status.UNKNOWN
    assert fact.detail.startswith("dmesg: read kernel buffer failed: Operation not permitted")
    assert "sudo cudoctor check" in fact.detail
    assert kernel_log.xid_events(("/nonexistent/dmesg",)).status is Status.UNKNOWN
    assert run_check("gpu-xid-logged", stated({})).outcome == "unknown"


@linux_only
def test_this_machines_kernel_log_has_no_xid() -> None:
    fact = kernel_log.xid_events()
    assert fact.status in (Status.KNOWN, Status.UNKNOWN)  # dmesg may be refused to a non-root user
    if fact.status is Status.KNOWN:
        assert fact.value == []
        assert run_check("gpu-xid-logged", stated({}, host__xid_events=fact.value)).outcome == "ok"


@linux_only
def test_a_gpu_off_the_bus_is_an_error_and_page_faults_are_a_programs() -> None:
    events = _events("open-gpu-kernel-modules-1010.journal") + _events("collenchyma-blas-14.dmesg")
    off_bus, faults = run_check("gpu-xid-logged", stated({}, host__xid_events=events)).findings
    assert (off_bus.cause, off_bus.severity) == ("hardware-fault", Severity.ERROR)
    assert off_bus.title.startswith(
        "GPU 0000:01:00 logged Xid 79 once since boot (GPU has fallen off the bus)"
    )
    assert (faults.cause, faults.severity) == ("illegal-memory-access", Severity.INFO)
    assert "8 times" in faults.title and faults.fix[0].startswith("Find the kernel that faulted")


def test_cleanups_are_passed_over_and_unknown_codes_point_at_the_catalog() -> None:
    events = [
        {"pci": "0000:02:00", "code": 45, "count": 3, "last": "pid=12723, Ch 00000000"},
        {"pci": "0019:01:00", "code": 149, "count": 1, "last": "NETIR Fatal XC0 i0 Link -1"},
    ]
    [unknown_code] = run_check("gpu-xid-logged", stated({}, host__xid_events=events)).findings
    assert (
        unknown_code.severity is Severity.WARNING
        and "docs.nvidia.com/deploy/xid-errors/" in unknown_code.title
    )


@linux_only
def test_explain_uses_the_machines_xid_to_read_a_vague_error() -> None:
    """'unspecified launch failure' alone is most often the card (the corpus: 4 of 5 reports) and may be a
    bad kernel; on a machine whose kernel log has Xid 79, the GPU is what failed (opendatalab/MinerU#426: a
    faulty card), with more confidence."""
    vague = "RuntimeError: CUDA error: unspecified launch failure"
    alone = explain_text(vague).causes
    assert alone[0].id == "hardware-fault" and "illegal-memory-access" in [c.id for c in alone[:3]]
    events = _events("open-gpu-kernel-modules-1010.journal")
    snap = stated({}, host__xid_events=events)
    exp = rank.explain(scan.scan(io.BytesIO(vague.encode())), snap)
    assert exp.causes[0].id == "hardware-fault" and exp.causes[0].score > alone[0].score
