"""CPU side: OpenMP / BLAS runtimes that can collide in one process, instruction sets builds need."""

from __future__ import annotations

from cudoctor.checks import check, finding, view
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "CPU BLAS"


def _runtime(lib: str) -> str:
    for prefix, name in (
        ("libiomp5", "Intel OpenMP (libiomp5)"),
        ("libomp", "LLVM OpenMP (libomp)"),
        ("libgomp", "GNU OpenMP (libgomp)"),
    ):
        if lib.startswith(prefix):
            return name
    return lib


@check("duplicate-openmp", "cpu-blas-runtime", LAYER, requires=("cpu.runtime_libs",))
def duplicate_openmp(snap: Snapshot) -> list[Finding]:
    """Packages ship different OpenMP runtimes that can end up loaded in one process (OMP Error #15, wrong thread counts)."""
    libs = [
        r
        for r in snap.value("cpu.runtime_libs") or []
        if r.get("kind") == "openmp" and not str(r.get("lib", "")).startswith("libintlc")
    ]
    kinds: dict[str, list[str]] = {}
    for r in libs:
        kinds.setdefault(_runtime(str(r["lib"])), []).append(f"{r['path']} ({r.get('package')})")
    intel = kinds.get("Intel OpenMP (libiomp5)", [])
    if len(kinds) < 2 and len(intel) < 2:
        return []
    return [
        finding(
            "duplicate-openmp",
            "cpu-blas-runtime",
            Severity.WARNING,
            f"{len(libs)} OpenMP runtimes are installed side by side ({', '.join(sorted(kinds))}); importing the packages together loads more than one",
            LAYER,
            evidence=[p for paths in kinds.values() for p in paths],
        )
    ]


@check("cpu-lacks-avx", "cpu-blas-runtime", LAYER, requires=("host.cpu",))
def cpu_lacks_avx(snap: Snapshot) -> list[Finding]:
    """The CPU has no AVX, which official TensorFlow (>= 1.6) and recent PyTorch wheels require."""
    cpu = snap.value("host.cpu") or {}
    if not cpu.get("all_flags_known") or "avx" in (cpu.get("flags") or []):
        return []
    users = [view.describe(n, i) for n, i in view.frameworks(snap) if n in ("tensorflow", "torch")]
    if not users:
        return []
    return [
        finding(
            "cpu-lacks-avx",
            "cpu-blas-runtime",
            Severity.ERROR,
            f"CPU {cpu.get('model') or '?'} has no AVX: {', '.join(users)} will die with 'Illegal instruction'",
            LAYER,
            evidence=[f"host.cpu.flags = {' '.join(cpu.get('flags') or []) or '(none of interest)'}"],
        )
    ]
