"""JIT kernel caches shared through a network filesystem, or that this user cannot write.

Triton, TorchInductor, CuPy and DeepGEMM write each compiled kernel to a cache directory and
read it back. Processes that compile the same kernel at once (DDP ranks, vLLM workers, MPI
ranks) race on those files, and on NFS, Lustre or GPFS the race is common: FileNotFoundError
on a '.tmp.pid_' file, 'Stale file handle', or CUDA_ERROR_FILE_NOT_FOUND from the driver
(triton#2688, triton#11512, vllm#6180, DeepGEMM#301, mirgecom#679).
"""

from __future__ import annotations

import re
from typing import Any

from cudoctor import knowledge
from cudoctor.checks import check, finding
from cudoctor.facts.packages import normalise
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "Environment"


def uses_cache(row: dict[str, Any], installed: set[str] | None) -> bool:
    """Whether a package that compiles into this cache is installed (unknown packages, or a cache
    every CUDA program uses: assume so)."""
    if installed is None or not row["packages"]:
        return True
    for want in row["packages"]:
        if want.endswith("*") and any(p.startswith(normalise(want[:-1])) for p in installed):
            return True
        if normalise(want) in installed:
            return True
    return False


def _installed(snap: Snapshot) -> set[str] | None:
    packages = snap.value("python.packages")
    return {normalise(p) for p in packages} if isinstance(packages, dict) else None


def _slug(tool: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", tool.lower().split(" (")[0]).strip("-")


def _fix(row: dict[str, Any], cache: dict[str, Any]) -> list[str]:
    var, slug = row["variable"], _slug(row["tool"])
    return [
        f"export {var}=/tmp/$USER/{slug}-cache  (a directory on each node's local disk; in a batch job, "
        "set it in the job script before the processes start)",
        f"If processes on one node still collide, give each rank its own: {var}=/tmp/$USER/{slug}-cache-$LOCAL_RANK "
        "(torchrun sets LOCAL_RANK; with MPI use OMPI_COMM_WORLD_LOCAL_RANK or SLURM_LOCALID)",
        f"Or compile once before the ranks start (run one process to warm {cache['path']}), then copy that cache to each node",
    ]


@check("jit-cache-network-fs", "library-bug", LAYER, requires=("host.jit_caches",))
def jit_cache_network_fs(snap: Snapshot) -> list[Finding]:
    """A JIT compiler's kernel cache (Triton, TorchInductor, CuPy, DeepGEMM) is on a network
    filesystem: processes compiling the same kernel at once race on its files there."""
    table = knowledge.table("jit_caches")
    network, rows = set(table["network"]["types"]), {row["tool"]: row for row in table["cache"]}
    installed = _installed(snap)
    out = []
    for cache in snap.value("host.jit_caches") or []:
        row = rows.get(str(cache.get("tool")))
        if row is None or cache.get("fstype") not in network or not row.get("network_race", True):
            continue
        if not uses_cache(row, installed):
            continue
        how = "set by " + row["variable"] if cache.get("set_by") == row["variable"] else "its default"
        out.append(
            finding(
                "jit-cache-network-fs",
                "library-bug",
                Severity.WARNING,
                f"{row['tool']}'s kernel cache {cache['path']} ({how}) is on {cache['fstype']} "
                f"(mounted at {cache.get('mount_point')}): processes compiling at once there fail with "
                "FileNotFoundError, 'Stale file handle' or CUDA_ERROR_FILE_NOT_FOUND",
                LAYER,
                evidence=[
                    f"{cache['path']}: {cache['fstype']} filesystem mounted at {cache.get('mount_point')}"
                ],
                fix=_fix(row, cache),
            )
        )
    return out


def _unwritable_fix(row: dict[str, Any], cache: dict[str, Any]) -> list[str]:
    var, slug = row["variable"], _slug(row["tool"])
    elsewhere = f"export {var}=/tmp/$USER/{slug}-cache  (a directory this user owns)"
    if not cache.get("blocked_in_home"):  # the home itself, or a directory outside it: move the cache
        return [
            elsewhere,
            "Or give the user a writable home (in a container: -e HOME=/tmp/home, or run as the image's user)",
        ]
    blocked = cache.get("blocked_at") or cache["path"]
    return [
        f"sudo chown -R $(id -un): {blocked}  (or sudo rm -rf {blocked}: it is only a cache and is rebuilt)",
        "Then run jobs as this user rather than with sudo, which leaves root-owned files behind",
        "Or " + elsewhere,
    ]


@check("jit-cache-unwritable", "jit-cache-unwritable", LAYER, requires=("host.jit_caches",))
def jit_cache_unwritable(snap: Snapshot) -> list[Finding]:
    """A kernel cache (the CUDA driver's ~/.nv, Triton, TorchInductor, torch's run-time extension
    builds, CuPy, DeepGEMM) that this user cannot write: most often left owned by root by a run
    under sudo."""
    rows = {row["tool"]: row for row in knowledge.table("jit_caches")["cache"]}
    installed = _installed(snap)
    out = []
    for cache in snap.value("host.jit_caches") or []:
        row = rows.get(str(cache.get("tool")))
        if row is None or cache.get("writable", True) or not uses_cache(row, installed):
            continue
        blocked, owner = cache.get("blocked_at") or cache["path"], cache.get("owner") or "another user"
        out.append(
            finding(
                "jit-cache-unwritable",
                "jit-cache-unwritable",
                Severity.WARNING,
                f"{row['tool']}'s kernel cache {cache['path']} is not writable by this user "
                f"({blocked} belongs to {owner}): {row['unwritable']}",
                LAYER,
                evidence=[f"{blocked}: owned by {owner}, not writable by this user"],
                fix=_unwritable_fix(row, cache),
                generic_fixes=False,
            )
        )
    return out
