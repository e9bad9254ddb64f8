"""Rules on the CPU a process died on: a SIGILL means the CPU met an instruction it lacks. On an x86 CPU that is a
build for AVX/AVX2/AVX-512 on a CPU without them (cpu-blas-runtime, the exit-status table's reading); on an ARM CPU
it is a wheel compiled for a newer ARM core than the one running it (torch 2.4's LSE atomics 'ldaddal' on a
Raspberry Pi 4's Cortex-A72, pytorch/pytorch#132032; OpenBLAS's SVE kernels on a VM without SVE,
OpenMathLib/OpenBLAS#6011), which another release or build of the package fixes: library-bug, as the corpus labels
those threads (10 of 13 ARM SIGILL reports)."""

from __future__ import annotations

import re

from cudoctor.explainer import exit_status
from cudoctor.explainer.ranked import RankedCause, bump
from cudoctor.model import Snapshot

# an ARM machine named in the facts or in the log's paths
ARM = re.compile(
    r"\b(?:aarch64|arm64|armv[89](?:\.\d)?[a-z]?|armhf|sbsa)\b|raspberry ?pi|\bjetson\b|\bgraviton\d?\b|neoverse"
    r"|cortex-a\d+|\bg[bh]200\b|\bgb10\b",
    re.I,
)


# macOS and Windows on ARM run x86 wheels under Rosetta or Prism, whose SIGILL is an x86 instruction (AVX) missing
TRANSLATED = re.compile(r"\bmac ?os|darwin|apple|\bM[1-4]\b|rosetta|windows|\bprism\b", re.I)


def _arm_named(snap: Snapshot, log_text: str) -> str | None:
    host = snap.value("host.os") or {}
    machine = str(host.get("machine") or "")
    stated = " ".join(str(snap.value(k) or "") for k in ("stated.other", "stated.container"))
    stated += " " + str(host.get("name") or "") + " " + str(host.get("system") or "")
    stated += " " + " ".join(str(g.get("name") or "") for g in snap.value("gpu.devices") or [])
    if TRANSLATED.search(stated + " " + machine):
        return None
    for where, text in (
        ("the machine is", machine),
        ("the facts name", stated),
        ("the log's paths name", log_text),
    ):
        m = ARM.search(text)
        if m:
            return f"{where} an ARM CPU ({m.group(0)})"
    return None


def arm_sigill_rule(ranked: dict[str, RankedCause], root_text: str, snap: Snapshot, log_text: str) -> None:
    """A SIGILL on an ARM CPU: a build for a newer ARM core than this one (another release or build fixes it)."""
    if not any(e.name == "SIGILL" for e in exit_status.read(root_text)):
        return
    arm = _arm_named(snap, log_text)
    if arm is None:
        return
    cpu, lib = ranked.get("cpu-blas-runtime"), ranked.get("library-bug")
    above = (cpu.score - (lib.score if lib is not None else 0.0) + 0.05) if cpu is not None else 0.0
    bump(
        ranked,
        "library-bug",
        max(0.5, above),
        f"SIGILL where {arm}: a wheel compiled for a newer ARM core than this one (LSE atomics, SVE), which "
        "another release or build of the package runs without",
    )
