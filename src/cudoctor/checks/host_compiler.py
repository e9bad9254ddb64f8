"""The host compiler nvcc builds with: each CUDA release's nvcc refuses a GCC newer than the one it knows
(crt/host_config.h: 'gcc versions later than 12 are not supported!'), so a CUDA extension (flash-attn, apex, mmcv,
tiny-cuda-nn, vLLM from source) fails to build on a distribution whose default GCC is newer than its toolkit."""

from __future__ import annotations

from typing import Any

from cudoctor import knowledge, versions
from cudoctor.checks import check, finding
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "CUDA toolkits & libraries"


def _toolkit(snap: Snapshot) -> str | None:
    """The CUDA release of the toolkit that builds here: the first known toolkit's."""
    kit = next((t for t in snap.value("cuda.toolkits") or [] if t.get("version")), None)
    return str(kit["version"]) if kit else None


@check("host-compiler-too-new", "toolchain-not-found", LAYER, requires=("host.gcc",))
def host_compiler_too_new(snap: Snapshot) -> list[Finding]:
    """The GCC stated or found is newer than the toolkit's nvcc takes (toolkit_archs.toml [[host_gcc]], read from
    NVIDIA's nvcc wheels), or an nvcc's own refusal is quoted: building CUDA code with it fails before it starts."""
    gcc: dict[str, Any] = snap.value("host.gcc") or {}
    have = versions.parse(str(gcc.get("version") or ""))
    cuda = _toolkit(snap)
    row = knowledge.host_gcc_max(cuda) if cuda else None
    limit = row[0] if row else gcc.get("nvcc_gcc_max")
    if limit is None or (have is not None and have[0] <= int(limit)):
        return []
    if have is None and not gcc.get("nvcc_gcc_max"):
        return []
    named = f"GCC {versions.fmt(have)}" if have else "the GCC in use"
    whose = f"CUDA {cuda}'s nvcc" if row else "the nvcc in use (its own error says so)"
    evidence = [f"{whose} accepts GCC {limit} at most" + (f" ({row[1]['source']})" if row else "")]
    fix = [
        f"Build with GCC {limit} or older: install gcc-{limit} and g++-{limit} (the distribution's package, or conda's "
        f"gcc_linux-64={limit} gxx_linux-64={limit}) and point the build at them: export CC=gcc-{limit} "
        f"CXX=g++-{limit} CUDAHOSTCXX=g++-{limit} (nvcc: -ccbin g++-{limit})"
    ]
    newer = knowledge.host_gcc_toolkit(have[0]) if have else None
    if newer:
        fix.append(
            f"Or build with a CUDA {newer} or newer toolkit, whose nvcc accepts GCC {have[0] if have else ''} (and a "
            "framework build of the same CUDA major)"
        )
    return [
        finding(
            "host-compiler-too-new",
            "toolchain-not-found",
            Severity.ERROR,
            f"{named} is newer than {whose} accepts (GCC {limit} at most): CUDA code (a PyTorch extension, a "
            "package built from source) cannot be compiled with it",
            LAYER,
            evidence=evidence,
            fix=fix,
        )
    ]
