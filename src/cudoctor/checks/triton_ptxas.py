"""Triton's ptxas against the one a variable puts in its place.

Triton compiles its kernels with the ptxas it bundles (triton/backends/nvidia/bin/ptxas; from 3.5 also
bin/ptxas-blackwell, which Triton 3.9 runs for compute capability 9.0 and newer). TRITON_PTXAS_PATH
(TRITON_PTXAS_BLACKWELL_PATH) replaces it whenever that binary answers `--version`, and Triton then
writes PTX of the ISA version that ptxas's release reads (knobs.NvidiaTool, compiler.ptx_get_version):
an older ptxas than the bundled one gets older PTX than Triton's code generation was built for, and one
older than the GPU's first CUDA cannot compile for it at all ("Value 'sm_90a' is not defined for
option 'gpu-name'").
"""

from __future__ import annotations

from typing import Any

from cudoctor import knowledge, versions
from cudoctor.checks import check, finding
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "CUDA toolkits & libraries"


def _uses(for_arch: list[int | None], cc: str) -> bool | None:
    """Whether the bundled binary with this [lowest, highest) range compiles for compute capability cc."""
    want = versions.cc_tuple(cc)
    if want is None or len(for_arch) != 2:
        return None
    arch = want[0] * 10 + want[1]
    low, high = for_arch
    return (low is None or arch >= low) and (high is None or arch < high)


ARCH_SPECIFIC = (12, 0)  # Triton targets sm_XXa from cc 9.0 (sm_arch_from_capability); sm_90a is CUDA 12.0's


def _first_cuda(cc: str) -> versions.Version | None:
    span = knowledge.cuda_span_for_cc(cc)
    first = versions.major_minor(span[0]) if span else None
    want = versions.cc_tuple(cc)
    return max(first, ARCH_SPECIFIC) if first and want and want >= (9, 0) else first


def _gpus_needing_newer(snap: Snapshot, bundled: dict[str, Any], pv: versions.Version) -> list[str]:
    """'A100 (cc 8.0, from CUDA 11.0)' for each GPU this binary compiles for whose first CUDA is newer."""
    out = []
    for gpu in snap.value("gpu.devices") or []:
        cc = str(gpu.get("cc") or gpu.get("compute_capability") or "")
        first = _first_cuda(cc)
        if first and _uses(bundled.get("for_arch") or [], cc) and pv[:2] < first:
            out.append(f"{gpu.get('name', 'GPU')} (cc {cc}, from CUDA {versions.fmt(first)})")
    return out


def _not_used_here(snap: Snapshot, bundled: dict[str, Any]) -> bool:
    """Every GPU known compiles with Triton's other ptxas: this variable changes nothing here."""
    ccs = [str(g.get("cc") or g.get("compute_capability") or "") for g in snap.value("gpu.devices") or []]
    uses = [_uses(bundled.get("for_arch") or [], cc) for cc in ccs]
    return bool(uses) and all(u is False for u in uses)


@check("triton-ptxas-too-old", "toolchain-not-found", LAYER, requires=("cuda.run_tools",))
def triton_ptxas_too_old(snap: Snapshot) -> list[Finding]:
    """TRITON_PTXAS_PATH (or TRITON_PTXAS_BLACKWELL_PATH) names a ptxas older than the one the installed
    Triton bundles, or older than the CUDA the GPU needs: Triton runs it in place of its own."""
    tools = snap.value("cuda.run_tools") or []
    triton = (snap.value("python.packages") or {}).get("triton", "")
    out = []
    for bundled in tools:
        var = bundled.get("override")
        override = next((t for t in tools if var and var in (t.get("via") or [])), None)
        bv = versions.parse(bundled.get("version"))
        pv = versions.parse((override or {}).get("version"))
        if not override or override is bundled or not bv or not pv or _not_used_here(snap, bundled):
            continue
        gpus = _gpus_needing_newer(snap, bundled, pv)
        if not gpus and pv[:2] >= bv[:2]:
            continue
        out.append(_finding(str(var), override, bundled, f"triton {triton}".strip(), gpus))
    return out


def _finding(
    var: str, override: dict[str, Any], bundled: dict[str, Any], triton: str, gpus: list[str]
) -> Finding:
    pv, bv = versions.parse(override.get("version")), versions.parse(bundled.get("version"))
    older = pv is not None and bv is not None and pv[0] < bv[0]
    title = (
        f"{var} names ptxas {override['version']} ({override['path']}), older than the ptxas "
        f"{bundled['version']} that {triton} bundles and would run otherwise"
    )
    if gpus:
        title += f", and too old to compile for {', '.join(gpus)}"
    title += (
        f": Triton writes PTX for CUDA {override.get('release', override['version'])} and kernels fail to compile"
        if gpus or older
        else ""
    )
    return finding(
        "triton-ptxas-too-old",
        "toolchain-not-found",
        Severity.ERROR if gpus or older else Severity.WARNING,
        title,
        LAYER,
        evidence=[
            f"env:{var} = {override['path']} (ptxas --version: {override['version']})",
            f"{bundled['path']} --version: {bundled['version']}",
        ],
        fix=[
            f"unset {var}  (Triton then runs its own ptxas {bundled['version']})",
            f"or point {var} at a ptxas of CUDA {bundled.get('release', bundled['version'])} or newer",
        ],
        generic_fixes=False,
    )
