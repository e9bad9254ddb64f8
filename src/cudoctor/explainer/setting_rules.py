"""Rules for errors about a setting in the environment: the allocator option a log names, read
against which release knows it (knowledge/torch_alloc_conf.toml) and the torch the facts describe;
the interface name Gloo could not use, read against this host's interfaces; PyTorch's cuBLAS
determinism error, read against the CUBLAS_WORKSPACE_CONFIG this environment holds."""

from __future__ import annotations

import re

from cudoctor import knowledge, versions
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


def cublas_workspace_rule(ranked: dict[str, RankedCause], line: int, snap: Snapshot) -> None:
    """'Deterministic behavior was enabled ... it uses CuBLAS': say what CUBLAS_WORKSPACE_CONFIG
    holds here, since torch compares it as exact text, once per process."""
    rc = ranked.get("determinism-unmet")
    value = view.env(snap).get("CUBLAS_WORKSPACE_CONFIG")
    if rc is None or value is None or any("CUBLAS_WORKSPACE_CONFIG" in r for r in rc.reasons):
        return
    exact = knowledge.table("env_settings")["cublas_workspace"]["deterministic"]
    if value in exact:
        rc.reasons.append(
            f"line {line}: CUBLAS_WORKSPACE_CONFIG={value} is set here, so the failing process did not have it "
            "when it made its first cuBLAS call"
        )
        rc.fixes.insert(
            0,
            f"This environment has CUBLAS_WORKSPACE_CONFIG={value}, the failing process did not: it was set after "
            "the first GPU matrix product (a notebook cell, os.environ late in a script: restart the process), or "
            "the job ran from another shell, a launcher or a container that does not pass it on (set it there)",
        )
        return
    rc.reasons.append(
        f"line {line}: CUBLAS_WORKSPACE_CONFIG={value!r} is set here, but torch accepts only the exact text "
        + " or ".join(exact)
    )
    rc.fixes.insert(
        0,
        f"CUBLAS_WORKSPACE_CONFIG is {value!r}; torch compares the exact text: export CUBLAS_WORKSPACE_CONFIG=:4096:8 "
        "(no quotes or spaces inside the value)",
    )


JAX_FRACTIONS = ("XLA_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_MEM_FRACTION")
JAX_DEFAULT_FRACTION = 0.75  # XLA preallocates this share of the GPU when no fraction is set
JAX_OOM = re.compile(r"RESOURCE_EXHAUSTED|Out of memory while trying to allocate|XlaRuntimeError", re.I)


def jax_fraction_rule(ranked: dict[str, RankedCause], text: str, snap: Snapshot) -> None:
    """A JAX/XLA out-of-memory while the environment caps XLA's pool below its default share: the
    cap, not the GPU, is the limit (recorded on an H100: a 4 GiB array under a .02 fraction)."""
    if "gpu-oom" not in ranked or not JAX_OOM.search(text):
        return
    env = view.env(snap)
    for variable in JAX_FRACTIONS:
        try:
            fraction = float(env.get(variable) or "nan")
        except ValueError:
            continue
        if fraction > 1:
            bump(
                ranked,
                "gpu-oom",
                0.1,
                f"fact: {variable}={env[variable]} asks XLA for {fraction:.0%} of the GPU, more than there is",
                f"Set {variable} below 1 (now {env[variable]}: XLA tries to reserve {fraction:.0%} of the GPU's "
                f"memory and fails): export {variable}=.9, or unset it for the default {JAX_DEFAULT_FRACTION}",
            )
            return
        if fraction < JAX_DEFAULT_FRACTION:  # NaN compares false: unset or unreadable values pass
            bump(
                ranked,
                "gpu-oom",
                0.1,
                f"fact: {variable}={env[variable]} caps XLA's memory pool at {fraction:.0%} of the GPU "
                f"(the default is {JAX_DEFAULT_FRACTION:.0%})",
                f"Raise or unset {variable} (now {env[variable]}: JAX may use only {fraction:.0%} of the GPU's "
                f"memory): export {variable}={JAX_DEFAULT_FRACTION}, or unset {variable} for the default",
            )
            return
