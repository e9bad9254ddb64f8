"""NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME matched against this host's network interfaces: a value
that names no interface with an IP address here (eth0 on a host whose card is ens5, NCCL's ^lo
syntax given to Gloo, an IP address for a name) stops NCCL or Gloo when the job's process group
starts. NCCL_IB_HCA matched against the RDMA devices: one that selects none sends NCCL's traffic
over TCP, and a prefix such as mlx5_1 also takes mlx5_10. How each variable is read is data:
[[interface]] in knowledge/env_settings.toml."""

from __future__ import annotations

import re
from typing import Any

from cudoctor import knowledge
from cudoctor.checks import FRAMEWORK_FACTS, check, finding, view
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "Environment"
CAUSE = "multi-gpu-comm"
IP_ADDRESS = re.compile(r"^(?:\d{1,3}(?:\.\d{1,3}){3}|[0-9a-fA-F:]*:[0-9a-fA-F:]+)$")
NOT_A_LINK = re.compile(r"^(?:lo|docker|veth|virbr|br-|ifb|dummy|tun|tap)")


@check(
    "socket-ifname-unmatched",
    CAUSE,
    LAYER,
    requires=("env", "host.net_interfaces"),
    requires_any=FRAMEWORK_FACTS,
)
def socket_ifname_unmatched(snap: Snapshot) -> list[Finding]:
    """A communication library is told to use network interfaces this host does not have (or that
    carry no IP address), so a multi-GPU or multi-node job fails as its process group starts."""
    env = view.env(snap)
    ifaces: list[dict[str, Any]] = snap.value("host.net_interfaces") or []
    installed, cuda = dict(view.frameworks(snap)), dict(view.cuda_frameworks(snap))
    out = []
    for row in knowledge.table("env_settings")["interface"]:
        value = env.get(row["variable"])
        users = [n for n in row["frameworks"] if n in (cuda if row["cuda_only"] else installed)]
        if not value or not users or row.get("devices", "net") != "net":
            continue
        reasons = (
            nccl_reasons(value, ifaces)
            if row["syntax"] == "nccl"
            else names_reasons(value, ifaces, split=row["syntax"] == "names")
        )
        if reasons:
            out.append(_finding(row, value, reasons, ifaces, [view.describe(n, installed[n]) for n in users]))
    return out


def usable(ifaces: list[dict[str, Any]]) -> list[str]:
    return [i["name"] for i in ifaces if i.get("ipv4") or i.get("ipv6")]


def nccl_spec(value: str) -> tuple[bool, bool, list[str]]:
    """NCCL's list syntax: (exclude: a leading ^, exact: a leading =, the names without :port)."""
    spec = value.strip()
    exclude = spec.startswith("^")
    spec = spec[1:] if exclude else spec
    exact = spec.startswith("=")
    spec = spec[1:] if exact else spec
    return exclude, exact, [re.sub(r":\d+$", "", s.strip()) for s in spec.split(",") if s.strip()]


def nccl_selects(value: str, names: list[str]) -> list[str]:
    """The names NCCL's list selects: prefixes, ^ to exclude them, = for exact names."""
    exclude, exact, items = nccl_spec(value)
    return [n for n in names if any(n == p if exact else n.startswith(p) for p in items) != exclude]


def nccl_reasons(value: str, ifaces: list[dict[str, Any]]) -> list[str]:
    """Why NCCL would find no interface: its list selects none of the interfaces that carry an
    address."""
    if nccl_selects(value, usable(ifaces)):
        return []
    bare = nccl_selects(value, [i["name"] for i in ifaces])
    if bare:
        return [f"selects only {', '.join(bare)}, which carr{'ies' if len(bare) == 1 else 'y'} no IP address"]
    return ["selects none of this host's interfaces"]


def selected(variable: str, value: str, ifaces: list[dict[str, Any]]) -> list[str]:
    """The interfaces with an address that the library reading `variable` would use."""
    row = next(r for r in knowledge.table("env_settings")["interface"] if r["variable"] == variable)
    names = usable(ifaces)
    if row["syntax"] == "nccl":
        return nccl_selects(value, names)
    return [item for item in (value.split(",") if row["syntax"] == "names" else [value]) if item in names]


def names_reasons(value: str, ifaces: list[dict[str, Any]] | None, split: bool = True) -> list[str]:
    """Why Gloo would refuse the value: every comma-separated item must be the exact name of an
    interface with an address (torch ignores a value of one character, and empty items). With
    split=False the whole value is one name (TensorPipe). With ifaces None (this host's interfaces
    unknown) only what is wrong on any host: spaces, NCCL's syntax, a list, an IP address."""
    if len(value) <= 1:
        return []
    with_address = set(usable(ifaces or []))
    known = {i["name"] for i in ifaces or []}
    reasons = []
    for item in (s for s in (value.split(",") if split else [value]) if s):
        if item in with_address:
            continue
        wrong = _written_wrong(item, split)
        if wrong or ifaces is not None:
            reasons.append(
                wrong
                or (f"{item} has no IP address" if item in known else f"there is no interface named {item}")
            )
    return reasons


def _written_wrong(item: str, split: bool) -> str | None:
    """What makes an item no interface name on any host."""
    if item != item.strip():
        return f"{item!r} has spaces around the name, which Gloo keeps"
    if item.startswith(("^", "=")):
        return f"{item!r} is NCCL's syntax; it takes exact interface names only"
    if not split and "," in item:
        return f"{item!r} is a list; it takes one interface name"
    if IP_ADDRESS.match(item):
        return f"{item} is an IP address; it takes the name of the interface that holds it"
    return None


def _finding(
    row: dict[str, Any], value: str, reasons: list[str], ifaces: list[dict[str, Any]], users: list[str]
) -> Finding:
    with_address = usable(ifaces)
    without = [i["name"] for i in ifaces if i["name"] not in with_address]
    links = [n for n in with_address if not NOT_A_LINK.match(n)]
    suggest = links[0] if len(links) == 1 else "<interface>"
    evidence = [
        f"env:{row['variable']} = {value!r}",
        "interfaces with an IP address: " + (", ".join(with_address) or "none"),
    ]
    evidence += ["interfaces without one: " + ", ".join(without)] if without else []
    return finding(
        "socket-ifname-unmatched",
        CAUSE,
        Severity.WARNING if row.get("severity") == "warning" else Severity.ERROR,
        f"{row['variable']}={value!r} " + "; ".join(reasons) + f": {row['effect']}",
        LAYER,
        evidence=evidence + users,
        fix=[row["fix"].replace("{suggest}", suggest)],
        generic_fixes=False,
        subject=row["variable"],
    )


@check("ib-hca-unmatched", CAUSE, LAYER, requires=("env", "host.ib_devices"), requires_any=FRAMEWORK_FACTS)
def ib_hca_unmatched(snap: Snapshot) -> list[Finding]:
    """NCCL_IB_HCA selects none of this host's RDMA devices (NCCL quietly falls back to TCP), or a
    prefix in it also selects devices it does not name (mlx5_1 takes mlx5_10)."""
    env, devices = view.env(snap), list(snap.value("host.ib_devices") or [])
    cuda = dict(view.cuda_frameworks(snap))
    out = []
    for row in knowledge.table("env_settings")["interface"]:
        value = env.get(row["variable"])
        users = [view.describe(n, cuda[n]) for n in row["frameworks"] if n in cuda]
        if row.get("devices") != "ib" or not value or not users:
            continue
        evidence = [
            f"env:{row['variable']} = {value!r}",
            "RDMA devices: " + (", ".join(devices) or "none"),
            *users,
        ]
        if not nccl_selects(value, devices):
            suggest = devices[0] if len(devices) == 1 else "<hca>"
            out.append(
                finding(
                    "ib-hca-unmatched",
                    CAUSE,
                    Severity.WARNING,
                    f"{row['variable']}={value!r} selects none of this host's RDMA devices: {row['effect']}",
                    LAYER,
                    evidence=evidence,
                    fix=[row["fix"].replace("{suggest}", suggest)],
                    generic_fixes=False,
                    subject=row["variable"],
                )
            )
        elif extra := overselected(value, devices):
            out.append(
                finding(
                    "ib-hca-unmatched",
                    CAUSE,
                    Severity.INFO,
                    f"{row['variable']}={value!r} also selects {', '.join(extra)}: NCCL reads each name as a prefix",
                    LAYER,
                    evidence=evidence,
                    fix=[f"export {row['variable']}='{exact(value)}'  (= selects exactly the devices named)"],
                    generic_fixes=False,
                    subject=row["variable"],
                )
            )
    return out


def overselected(value: str, names: list[str]) -> list[str]:
    """Devices a plain (prefix) list selects beyond the ones it names exactly: mlx5_1 -> mlx5_10."""
    exclude, exact, items = nccl_spec(value)
    named = set(items)
    if exclude or exact or not named & set(names):
        return []
    return [n for n in nccl_selects(value, names) if n not in named]


def exact(value: str) -> str:
    return "=" + value.strip()
