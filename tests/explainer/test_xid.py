"""Xid lines from the NVIDIA driver's kernel log: what each code says is data (knowledge/xid.toml).
Most Xids are the program's own kernel faulting (13, 31, 43), only some say the GPU is failing (48,
63, 79, 94, 95); Xid 45 is a channel cleaned up after something else. Lines are real, from the
threads named in the signatures' sources."""

from __future__ import annotations

import pytest

from cudoctor import knowledge
from tests.explainer.helpers import explain_text, rooted

XID31 = "[  170.053881] NVRM: Xid (PCI:0000:01:00): 31, Ch 00000013, engmask 00000101, intr 10000000"
XID79 = (
    "april 24 16:22:15 robin-linux-x3d kernel: NVRM: Xid (PCI:0000:01:00): 79, pid=6755, name=vivaldi-bin, "
    "GPU has fallen off the bus."
)
XID45 = "Nov 22 14:56:47 cctvserver-MS-7B17 kernel: [94558.085056] NVRM: Xid (PCI:0000:02:00): 45, pid=12723, Ch 00000000"
AER = (
    "[  +0.000005] pcieport 0000:00:03.0: PCIe Bus Error: severity=Corrected, type=Data Link Layer, "
    "(Transmitter ID)"
)


@pytest.mark.parametrize(
    ("line", "code", "cause"),
    [
        (XID31, 31, "illegal-memory-access"),
        (
            "NVRM: Xid (PCI:0000:b5:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on "
            "(GPC 1, TPC 3, SM 0): Out Of Range Address",
            13,
            "illegal-memory-access",
        ),
        (XID79, 79, "hardware-fault"),
        (
            "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to "
            "activate.",
            63,
            "hardware-fault",
        ),
        (
            "NVRM: Xid (PCI:0000:07:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error "
            "(DBE) has been detected on GPU in the framebuffer at physAddr 0x7fdf0de80 partition 5",
            48,
            "hardware-fault",
        ),
    ],
)
def test_each_xid_is_read_by_its_code(line: str, code: int, cause: str) -> None:
    exp = rooted(line, "hardware-fault/xid")
    row = knowledge.xid(code)
    assert row is not None and exp.causes[0].id == cause
    assert exp.causes[0].fixes[:2] == [f"Xid {code} is '{row['name']}': {row['meaning']}", row["fix"][0]]


def test_a_page_fault_is_the_programs_bug_not_the_gpus() -> None:
    """Xid 31 used to read as a hardware fault like every Xid: now the GPU comes last."""
    causes = [c.id for c in explain_text(XID31).causes]
    assert causes[0] == "illegal-memory-access" and causes.index("hardware-fault") > causes.index(
        "library-bug"
    )


def test_an_xid_the_table_does_not_know_keeps_the_signatures_priors() -> None:
    line = "NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000)"
    assert knowledge.xid(149) is None
    exp = rooted(line, "hardware-fault/xid")
    assert exp.causes[0].id == "hardware-fault"
    assert (
        exp.causes[0]
        .fixes[0]
        .startswith("NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors/) says what Xid 149")
    )


def test_the_kernel_log_outranks_the_frameworks_vaguer_error() -> None:
    """'unspecified launch failure' alone may be a kernel fault or the card; next to Xid 79 the GPU
    left the bus, and the kernel log's line is the root."""
    exp = explain_text("RuntimeError: CUDA error: unspecified launch failure\n" + XID79)
    assert exp.root is not None and exp.root.line == 2 and exp.causes[0].id == "hardware-fault"


def test_xid_45_is_a_cleanup_after_the_real_error() -> None:
    alone = explain_text(XID45)
    assert alone.root is None and list(alone.scan.benign) == ["nvidia-xid-45-preemptive-cleanup"]
    after = explain_text(XID31 + "\n" + XID45)
    assert after.root is not None and after.root.line == 1 and after.causes[0].id == "illegal-memory-access"


def test_pcie_errors_point_at_the_link_and_give_way_to_the_xid() -> None:
    alone = rooted(AER, "hardware-fault/pcie-bus-error")
    assert alone.causes[0].id == "hardware-fault"
    assert "PCIe errors (Corrected, Data Link Layer)" in alone.causes[0].fixes[0]
    exp = explain_text(AER + "\n" + XID79)
    assert exp.root is not None and exp.root.sig.id == "hardware-fault/xid"


def test_a_gpu_off_the_bus_without_an_xid_is_still_read() -> None:
    log = (
        "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
        "               NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
        "               NVRM: fallen off the bus and is not responding to commands.\n"
    )
    exp = rooted(log, "hardware-fault/ecc-uncorrectable")
    assert exp.causes[0].id == "hardware-fault"
