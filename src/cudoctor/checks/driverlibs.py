"""libcuda ↔ its companion libraries: the ones it opens itself must be there, of its own version.

libcuda opens the PTX JIT compiler (libnvidia-ptxjitcompiler) by name the first time it must
compile PTX, and it wants the one of its own driver build. Without it everything works until a
kernel has no SASS for this GPU, or JAX/XLA links PTX, or cuTile launches: then 'PTX JIT compiler
library not found' (CUDA_ERROR_JIT_COMPILER_NOT_FOUND). Containers and CDI specs that mount part
of the driver, Nix profiles, Jetson's l4t-cuda without l4t-3d-core and hand-copied libcuda files
cause it (jetpack-nixos#184, jax#9644). Since R575 libcuda also opens libnvidia-nvvm70 for PTX from
applications built with CUDA 11 or older, with the same error where it is missing (CDI specs made
before nvidia-container-toolkit#1876 leave it out, #1875).
"""

from __future__ import annotations

from typing import Any

from cudoctor import knowledge, versions
from cudoctor.checks import check, finding, view
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "GPU & driver"


def _companions(version: str | None) -> list[dict[str, Any]]:
    """The rows libcuda of this driver version opens itself (a row with min_driver needs a known version)."""
    rows = [row for row in knowledge.table("driver_libs")["library"] if row["needed_by_libcuda"]]
    have = versions.parse(version)
    return [row for row in rows if "min_driver" not in row or _at_least(have, row["min_driver"])]


def _at_least(have: versions.Version | None, floor: str) -> bool:
    wanted = versions.parse(floor)
    return have is not None and wanted is not None and versions.at_least(have, wanted)


def _fix(row: dict[str, Any], stem: str, version: str | None) -> list[str]:
    exact = row.get("file_name") or (f"{stem}.so.{version}" if version else f"{stem}.so.<driver version>")
    return [
        f"Install the driver's {stem} of exactly libcuda's version ({exact}) next to libcuda: it comes with the "
        "same driver package (Ubuntu: libnvidia-compute-<branch>; RHEL: nvidia-driver-cuda-libs); check with "
        f"ldconfig -p | grep -E 'libcuda|{stem.removeprefix('libnvidia-')}'",
        "In a container: run with --gpus all -e NVIDIA_DRIVER_CAPABILITIES=compute,utility, and with CDI "
        "regenerate the spec after every driver upgrade: nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml",
        "NixOS: put /run/opengl-driver/lib on LD_LIBRARY_PATH. Jetson: install the package that ships it "
        "(l4t-3d-core / nvidia-l4t-3d-core)",
        *row.get("fix", []),
    ]


def _problem(
    cuda: dict[str, Any], name: str, stem: str, entry: dict[str, Any]
) -> tuple[str, list[str]] | None:
    """Title and evidence when libcuda cannot open companion `name` of its version, else None."""
    version, found = cuda.get("version"), entry.get("real")
    if entry.get("beside_libcuda") or (found and (not version or entry.get("version") in (None, version))):
        return None
    evidence = [
        f"libcuda: {cuda.get('real') or cuda.get('path')} (driver {version or 'version not in its name'})"
    ]
    if found:
        evidence.append(f"{name} -> {found} (driver {entry.get('version')}), via {entry.get('via')}")
        return (
            f"libcuda is driver {version} but the {stem} it finds is driver {entry.get('version')}",
            evidence,
        )
    evidence.append(f"{name}: not on LD_LIBRARY_PATH, libcuda's RUNPATH, the ld.so cache or the default dirs")
    return f"libcuda (driver {version or '?'}) is here but {stem} is not", evidence


@check("driver-libs-incomplete", "cuda-libs-missing", LAYER, requires=("driver.libraries",))
def driver_libs_incomplete(snap: Snapshot) -> list[Finding]:
    """libcuda is found but a library it opens itself (the PTX JIT compiler) is missing or of another driver version."""
    libs: dict[str, Any] = snap.value("driver.libraries") or {}
    cuda = libs.get("libcuda.so.1") or {}
    out: list[Finding] = []
    for row in _companions(cuda.get("version")):
        entry, stem = libs.get(row["soname"]), row["soname"].split(".so")[0]
        problem = _problem(cuda, row["soname"], stem, entry) if entry is not None else None
        if problem is None:
            continue
        title, evidence = problem
        severity = Severity.WARNING
        if "matters_below_cuda" in row:
            old_builds = _cuda_builds_below(snap, int(row["matters_below_cuda"]))
            evidence += old_builds or [f"nothing here is built for CUDA below {row['matters_below_cuda']}"]
            severity = Severity.WARNING if old_builds else Severity.INFO
        out.append(
            finding(
                "driver-libs-incomplete",
                "cuda-libs-missing",
                severity,
                f"{title}: {row['needed_for']} will fail with '{row['symptom']}'",
                LAYER,
                evidence=evidence,
                fix=_fix(row, stem, cuda.get("version")),
                subject=row["soname"],
                generic_fixes=False,
            )
        )
    return out


def _cuda_builds_below(snap: Snapshot, major: int) -> list[str]:
    """'<what> is built for CUDA X.Y' for every framework build and toolkit here older than CUDA `major`."""
    found = [
        f"{name} {info.get('version')} is built for CUDA {info['cuda']}"
        for name, info in view.frameworks(snap)
        if _below(info.get("cuda"), major)
    ]
    for kit in snap.value("cuda.toolkits") or []:
        if isinstance(kit, dict) and _below(kit.get("version"), major):
            found.append(f"the CUDA {kit['version']} toolkit at {kit.get('root')}")
    return found


def _below(version: Any, major: int) -> bool:
    parsed = versions.parse(version) if isinstance(version, str) else None
    return parsed is not None and parsed[0] < major
