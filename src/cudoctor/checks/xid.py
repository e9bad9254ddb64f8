"""Xid reports in the kernel log since boot (host.xid_events): a GPU that fell off the bus, double-bit
ECC errors and failed row remaps say the GPU is failing; page faults and engine exceptions say a
program's kernel faulted. What each code means is data: knowledge/xid.toml."""

from __future__ import annotations

from typing import Any

from cudoctor import knowledge
from cudoctor.checks import check, finding
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "GPU & driver"
CATALOG = "docs.nvidia.com/deploy/xid-errors/"


@check("gpu-xid-logged", "hardware-fault", LAYER, requires=("host.xid_events",))
def gpu_xid_logged(snap: Snapshot) -> list[Finding]:
    """The NVIDIA driver logged Xid errors since boot: a failing GPU (Xid 48, 63, 64, 79, 94, 95) or
    a program's kernel that faulted (Xid 13, 31, 43)."""
    cleanup = set(knowledge.table("xid")["cleanup_codes"])
    events = [e for e in snap.value("host.xid_events") or [] if e.get("code") not in cleanup]
    return [_finding(event) for event in events]


def _finding(event: dict[str, Any]) -> Finding:
    row = knowledge.xid(event["code"])
    times = f"{event['count']} times" if event.get("count", 1) > 1 else "once"
    where = f"GPU {event.get('pci') or '?'} logged Xid {event['code']} {times} since boot"
    evidence = [
        f"dmesg: NVRM: Xid ({event.get('pci')}): {event['code']}, {event.get('last', '')}".rstrip(", ")
    ]
    if row is None:
        return finding(
            "gpu-xid-logged",
            "hardware-fault",
            Severity.WARNING,
            f"{where}: a code cudoctor does not know; NVIDIA's Xid catalog ({CATALOG}) says what it means",
            LAYER,
            evidence=evidence,
            confidence="possible",
            subject=str(event["code"]),
        )
    cause = max(row["causes"].items(), key=lambda kv: kv[1])[0]
    the_gpu = row["causes"].get("hardware-fault", 0) >= 0.5  # the GPU or its firmware, not one program
    return finding(
        "gpu-xid-logged",
        cause,
        Severity.ERROR if the_gpu else Severity.INFO,
        f"{where} ({row['name']}): {row['meaning']}",
        LAYER,
        evidence=evidence,
        fix=row["fix"],
        confidence="certain" if the_gpu else "likely",
        subject=str(event["code"]),
    )
