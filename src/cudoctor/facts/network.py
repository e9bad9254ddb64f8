"""Network interfaces and their IP addresses: what NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME are
matched against. NCCL and Gloo use only interfaces that carry an address, so each interface records
whether it has an IPv4 address (SIOCGIFADDR) and an IPv6 one (/proc/net/if_inet6); the addresses
themselves are not kept (reports get shared). Linux only."""

from __future__ import annotations

import os
import socket
import struct
import sys
from typing import Any

from cudoctor.model import Fact, absent, known, unknown

IF_INET6 = "/proc/net/if_inet6"
SIOCGIFADDR = 0x8915  # linux/sockios.h


def ipv6_names(text: str) -> set[str]:
    """Interfaces /proc/net/if_inet6 lists (one line per address; the name is the last field)."""
    return {line.split()[-1] for line in text.splitlines() if len(line.split()) >= 6}


def has_ipv4(sock: socket.socket, name: str) -> bool:
    """Whether the interface has an IPv4 address."""
    import fcntl  # POSIX only: this module is imported on Windows too

    try:
        packed = fcntl.ioctl(sock.fileno(), SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
    except OSError:
        return False
    return packed[20:24] != b"\0\0\0\0"


def interfaces(if_inet6: str = IF_INET6) -> Fact:
    """host.net_interfaces: [{name, ipv4, ipv6}] in the kernel's order."""
    if not sys.platform.startswith("linux"):
        return absent("host.net_interfaces", "socket.if_nameindex", "read on Linux only")
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError as exc:
        return unknown("host.net_interfaces", "socket.if_nameindex", str(exc))
    try:
        with open(if_inet6, encoding="ascii", errors="replace") as fh:
            with_v6 = ipv6_names(fh.read())
    except OSError:
        with_v6 = set()  # no IPv6 in this kernel or namespace
    out: list[dict[str, Any]] = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for name in names:
            out.append({"name": name, "ipv4": has_ipv4(sock, name), "ipv6": name in with_v6})
    return known("host.net_interfaces", out, "socket.if_nameindex + SIOCGIFADDR + " + if_inet6)


INFINIBAND = "/sys/class/infiniband"


def ib_devices(sysfs: str = INFINIBAND) -> Fact:
    """host.ib_devices: the RDMA devices (InfiniBand or RoCE HCAs: mlx5_0, ...) the kernel lists,
    which is what NCCL_IB_HCA is matched against; absent where there are none."""
    if not sys.platform.startswith("linux"):
        return absent("host.ib_devices", INFINIBAND, "read on Linux only")
    try:
        names = sorted(os.listdir(sysfs))
    except FileNotFoundError:
        return absent("host.ib_devices", sysfs, "no RDMA devices (no InfiniBand or RoCE driver loaded)")
    except OSError as exc:
        return unknown("host.ib_devices", sysfs, str(exc))
    return known("host.ib_devices", names, sysfs)
