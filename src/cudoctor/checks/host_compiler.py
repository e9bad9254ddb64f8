"""The host compiler nvcc builds with: each CUDA release's nvcc refuses a GCC newer than the one it knows
(crt/host_config.h: 'gcc versions later than 12 are not supported!'), so a CUDA extension (flash-attn, apex, mmcv,
tiny-cuda-nn, vLLM from source) fails to build on a distribution whose default GCC is newer than its toolkit. nvcc on
native Windows builds with MSVC only: GCC there is nothing to it."""

from __future__ import annotations

from typing import Any

from cudoctor import knowledge, versions
from cudoctor.checks import check, finding, view
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "CUDA toolkits & libraries"


def _toolkit(snap: Snapshot) -> str | None:
    """The CUDA release of the nvcc that builds here: the one a person quotes nvcc answering with, else the first
    known toolkit's."""
    said = snap.value("cuda.nvcc_said")
    if isinstance(said, dict) and said.get("release"):
        return str(said["release"])
    kit = next((t for t in snap.value("cuda.toolkits") or [] if t.get("version")), None)
    return str(kit["version"]) if kit else None


def _limit(gcc: dict[str, Any], cuda: str | None) -> tuple[int, str] | None:
    """The newest GCC major the nvcc in use takes, and why: its own refusal quoted (the nvcc that ran said so),
    else the table's row for its release ([[host_gcc]]; a release stated without its minor is no row's)."""
    if gcc.get("nvcc_gcc_max"):
        return int(gcc["nvcc_gcc_max"]), "the nvcc in use (its own error says so)"
    row = knowledge.host_gcc_max(cuda) if cuda and "." in cuda else None
    if row is None:
        return None
    return row[0], f"CUDA {versions.fmt(versions.major_minor(str(cuda)) or ())}'s nvcc ({row[1]['source']})"


@check("host-compiler-too-new", "toolchain-not-found", LAYER, requires=("host.gcc",))
def host_compiler_too_new(snap: Snapshot) -> list[Finding]:
    """The GCC stated or found is newer than the toolkit's nvcc takes (toolkit_archs.toml [[host_gcc]], read from
    NVIDIA's nvcc wheels), or an nvcc's own refusal is quoted: building CUDA code with it fails before it starts."""
    if (snap.value("host.os") or {}).get("system") == "Windows":
        return []  # nvcc on native Windows builds with MSVC
    gcc: dict[str, Any] = snap.value("host.gcc") or {}
    have = versions.parse(str(gcc.get("version") or ""))
    limit = _limit(gcc, _toolkit(snap))
    if limit is None:
        return []
    most, whose = limit
    if have is not None and have[0] <= most:
        return []
    if have is None and not gcc.get("nvcc_gcc_max"):
        return []
    named = f"GCC {versions.fmt(have)}" if have else "the GCC in use"
    fix = [
        f"Build with GCC {most} or older: install it (Debian/Ubuntu: sudo apt install gcc-{most} g++-{most}) and "
        f"point the build at it: export CC=gcc-{most} CXX=g++-{most} CUDAHOSTCXX=g++-{most} (nvcc: -ccbin g++-{most})",
        f"In a conda environment: conda install -c conda-forge gcc_linux-64={most} gxx_linux-64={most}, which sets CC "
        "and CXX when the environment is activated; then export CUDAHOSTCXX=$CXX",
    ]
    newer = knowledge.host_gcc_toolkit(have[0]) if have else None
    if newer and have:
        fix.append(
            f"Or build with a CUDA {newer} or newer toolkit, whose nvcc accepts GCC {have[0]} (and a framework build "
            "of the same CUDA major)"
        )
    # an error where a build is in evidence (nvcc's refusal quoted, an extension or a source build said), else a
    # warning: wheels alone compile nothing
    building = bool(gcc.get("nvcc_gcc_max")) or view.built_here(snap)
    return [
        finding(
            "host-compiler-too-new",
            "toolchain-not-found",
            Severity.ERROR if building else Severity.WARNING,
            f"{named} is newer than {whose.split(' (')[0]} accepts (GCC {most} at most): CUDA code (a PyTorch "
            "extension, a package built from source) cannot be compiled with it",
            LAYER,
            evidence=[f"{whose}: GCC {most} at most"],
            fix=fix,
            generic_fixes=False,  # the cause's ptxas and libdevice steps are not this
        )
    ]
