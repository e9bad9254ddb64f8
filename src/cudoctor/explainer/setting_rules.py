"""Rules for errors about a setting in the environment: the allocator option a log names, read
against which release knows it (knowledge/torch_alloc_conf.toml) and the torch the facts describe;
the interface name Gloo could not use, read against this host's interfaces."""

from __future__ import annotations

import re

from cudoctor import versions
from cudoctor.checks import interfaces, view
from cudoctor.explainer.ranked import RULE_OUT, RankedCause, bump
from cudoctor.knowledge import torch_alloc_conf as alloc_conf
from cudoctor.model import Snapshot

CAUSE = "env-setting-invalid"
VARIABLE = "PYTORCH_CUDA_ALLOC_CONF"


def alloc_key_rule(ranked: dict[str, RankedCause], line: int, key: str, snap: Snapshot) -> None:
    """'Unrecognized CachingAllocator option: expandable_segments': say which release added the
    key, and whether the torch on this machine knows it."""
    rc = ranked.get(CAUSE)
    if rc is None:
        return
    info = dict(view.frameworks(snap)).get("torch") or {}
    version = versions.parse(info.get("version"))
    problem = alloc_conf.key_problem(key, version, VARIABLE)
    if problem is not None:
        rc.reasons.append(f"line {line}: {problem.text}")
        rc.fixes.insert(0, problem.fix)
        return
    history = alloc_conf.key_history(key)
    if version is None:
        if history:
            rc.reasons.append(f"line {line}: {history}")
            rc.fixes.insert(
                0,
                f"Check the torch that failed (python -c 'import torch; print(torch.__version__)'): "
                f"{history}; upgrade it, or remove {key} from {VARIABLE}",
            )
        return
    release = f"torch {versions.fmt(version)}"
    rc.reasons.append(
        f"line {line}: {release} on this machine knows {key}, so the failing run used another torch"
    )
    rc.fixes.insert(
        0,
        f"The torch that failed is not this one ({release} knows {key}; {history}). Run the failing program's own "
        "python: python -c 'import torch; print(torch.__version__, torch.__file__)', then upgrade that torch "
        f"or remove {key} from {VARIABLE}",
    )


def gloo_iface_rule(ranked: dict[str, RankedCause], line: int, iface: str, snap: Snapshot) -> None:
    """'Unable to find address for: ^lo': why Gloo could not use that name (NCCL's syntax, an IP
    address, or, with this host's interfaces known, no such interface or one without an address)."""
    rc = ranked.get("multi-gpu-comm")
    if rc is None:
        return
    value = snap.value("host.net_interfaces")
    ifaces = value if isinstance(value, list) else None
    reasons = interfaces.names_reasons(iface, ifaces)
    if not reasons:
        return
    rc.reasons += [f"line {line}: {r}" for r in reasons]
    names = ", ".join(interfaces.usable(ifaces)) if ifaces is not None else ""
    here = f" (interfaces with an IP address here: {names})" if names else ""
    rc.fixes.insert(
        0, f"GLOO_SOCKET_IFNAME: {'; '.join(reasons)}. Set it to an interface name{here}, or unset it"
    )


ARCH_NUMBER = re.compile(r"^\d+\.\d+a?(?:\+PTX)?$")


def arch_entry_rule(ranked: dict[str, RankedCause], line: int, entry: str) -> None:
    """'Unknown CUDA arch (8.6,8.9)': an entry that is not a compute capability at all is how
    TORCH_CUDA_ARCH_LIST is written, not a GPU newer than torch."""
    if ARCH_NUMBER.match(entry):
        if "arch-unsupported" in ranked:
            ranked["arch-unsupported"].fixes.insert(
                0,
                f"The installed torch does not know compute capability {entry}: it predates that GPU generation. "
                f"Upgrade torch, or drop {entry} from TORCH_CUDA_ARCH_LIST and end the list with the newest "
                "architecture this torch knows plus +PTX (the driver compiles that PTX for the newer GPU)",
            )
        return
    if CAUSE not in ranked or "arch-unsupported" not in ranked:
        return
    shown = repr(entry) if entry else "an empty entry (a ';' or space at the end of the list)"
    reason = f"line {line}: {shown} is not a compute capability: TORCH_CUDA_ARCH_LIST is written wrong"
    bump(ranked, CAUSE, RULE_OUT, reason)
    bump(ranked, "arch-unsupported", -RULE_OUT, f"{reason}, not a GPU newer than torch")
