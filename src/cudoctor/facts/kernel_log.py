"""The NVIDIA driver's Xid reports in the kernel log since boot (host.xid_events): what the GPUs
and their driver said about failures, which NVML does not keep (a GPU that fell off the bus is
gone from nvidia-smi, its Xid 79 is still in the log). Read with dmesg, which needs root where
kernel.dmesg_restrict is 1; what each code means is data (knowledge/xid.toml), read by the check."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Any

from cudoctor import runner
from cudoctor.model import Fact, absent, known, unknown

XID_LINE = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<pci>[^)]*)\):? (?P<code>\d+)\b,?\s*(?P<rest>.*)")
KEEP = 200  # characters of the last line kept per event: enough for pid, process and engine


def parse_xids(text: str) -> list[dict[str, Any]]:
    """One entry per (GPU, Xid code) in the order first seen: {pci, code, count, last}."""
    events: dict[tuple[str, int], dict[str, Any]] = {}
    for line in text.splitlines():
        m = XID_LINE.search(line)
        if m is None:
            continue
        key = (m.group("pci"), int(m.group("code")))
        event = events.setdefault(key, {"pci": key[0], "code": key[1], "count": 0, "last": ""})
        event["count"] += 1
        event["last"] = m.group("rest").strip()[:KEEP]
    return list(events.values())


def xid_events(cmd: Sequence[str] = ("dmesg",), timeout: float = 5.0) -> Fact:
    """host.xid_events from the kernel log; unknown when it cannot be read (not root, no dmesg)."""
    if not sys.platform.startswith("linux"):
        return absent("host.xid_events", "dmesg", "read on Linux only")
    done = runner.run(cmd, timeout=timeout)  # its own process group: a timeout kills its children too
    if done.returncode is None:
        return unknown("host.xid_events", "dmesg", done.error or f"{cmd[0]} did not finish")
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return unknown(
            "host.xid_events",
            "dmesg",
            f"{why} (the kernel log needs root where kernel.dmesg_restrict=1: run sudo cudoctor check)",
        )
    return known("host.xid_events", parse_xids(done.stdout), "dmesg")
