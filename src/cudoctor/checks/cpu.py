"""CPU side: OpenMP / BLAS runtimes that can collide in one process, instruction sets builds need."""

from __future__ import annotations

from typing import Any

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


FEW_PROCESSES = 64  # fewer BLAS-threaded processes than this fit under the limit: say so
SMALL_ADDRESS_SPACE = 16 << 30


def _threads_per_process(snap: Snapshot, cpus: int) -> tuple[int, str]:
    """How many threads OpenBLAS / OpenMP start in each process, and what says so."""
    env = snap.value("env") or {}
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        text = str(env.get(name, "")).strip()
        if text.isdigit() and int(text) > 0:
            return int(text), f"{name}={text}"
    return cpus, f"one per usable CPU ({cpus})"


def _thread_limit(limits: dict[str, Any]) -> tuple[int, str] | None:
    """The tightest limit on this user's threads: RLIMIT_NPROC (not for root) or the cgroup's pids.max."""
    found = []
    if limits.get("threads_per_user") is not None and not limits.get("root"):
        found.append((int(limits["threads_per_user"]), "ulimit -u (RLIMIT_NPROC)"))
    if limits.get("cgroup_pids_max") is not None:
        found.append((int(limits["cgroup_pids_max"]), "the cgroup's pids.max"))
    return min(found) if found else None


@check("blas-thread-limit", "cpu-blas-runtime", LAYER, requires=("host.limits",))
def blas_thread_limit(snap: Snapshot) -> list[Finding]:
    """The user's thread limit (ulimit -u, a container's pids limit) leaves room for few processes that start a BLAS / OpenMP thread per CPU ('pthread_create failed', 'Thread creation failed')."""
    limits = snap.value("host.limits") or {}
    limit = _thread_limit(limits)
    if limit is None:
        return []
    per_process, why = _threads_per_process(snap, int(limits.get("cpus") or 1))
    fits = limit[0] // per_process
    if fits >= FEW_PROCESSES:
        return []
    return [
        finding(
            "blas-thread-limit",
            "cpu-blas-runtime",
            Severity.WARNING,
            f"{limit[1]} allows {limit[0]} threads, and each process that loads OpenBLAS or OpenMP starts {per_process} ({why}): {fits} such processes (data-loader workers, ranks) use it up, and the next thread fails to start",
            LAYER,
            evidence=[f"host.limits = {limits}"],
            fix=[
                "Start fewer threads per process: export OPENBLAS_NUM_THREADS=4 OMP_NUM_THREADS=4 (1 in each worker of a process pool)",
                "Or raise the limit: ulimit -u in the shell or /etc/security/limits.conf; docker run --pids-limit; the batch system's task limit",
            ],
            generic_fixes=False,
        )
    ]


@check("address-space-limit", "host-oom", LAYER, requires=("host.limits",))
def address_space_limit(snap: Snapshot) -> list[Finding]:
    """An address-space limit (ulimit -v) small enough that libraries which reserve address space up front, OpenBLAS's per-thread buffers first, fail to load."""
    limits = snap.value("host.limits") or {}
    cap = limits.get("address_space_bytes")
    if cap is None or cap >= SMALL_ADDRESS_SPACE:
        return []
    return [
        finding(
            "address-space-limit",
            "host-oom",
            Severity.WARNING,
            f"ulimit -v caps this process at {cap / (1 << 30):.1f} GiB of address space: OpenBLAS maps buffers for each thread it starts, and frameworks reserve far more address space than memory they use, so loading can fail while memory is free",
            LAYER,
            evidence=[f"host.limits.address_space_bytes = {cap}"],
            fix=[
                "Remove the cap for this job: ulimit -v unlimited (or ask the batch system for virtual memory, not only resident memory)",
                "If the cap must stay: start fewer BLAS threads (export OPENBLAS_NUM_THREADS=1), each maps its own buffers",
            ],
            generic_fixes=False,
        )
    ]
