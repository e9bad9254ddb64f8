"""Process limits that decide whether BLAS and OpenMP can start their threads and map their buffers:
the per-user thread limit (RLIMIT_NPROC, which root is exempt from), the container's pids limit,
the address-space and stack limits, and the CPUs this process may run on."""

from __future__ import annotations

import os
from typing import Any

from cudoctor.model import Fact, absent, known

CGROUP_PIDS_FILES = ("/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max")  # cgroup v2, v1


def _soft(resource_module: Any, name: str) -> int | None:
    """The soft limit of one rlimit, None when unlimited."""
    soft, _hard = resource_module.getrlimit(getattr(resource_module, name))
    return None if soft == resource_module.RLIM_INFINITY else int(soft)


def cgroup_pids_max(files: tuple[str, ...] = CGROUP_PIDS_FILES) -> int | None:
    """The pids limit of this process's cgroup (threads count), None when there is none."""
    for path in files:
        try:
            with open(path, encoding="ascii") as fh:
                text = fh.read().strip()
        except OSError:
            continue
        return int(text) if text.isdigit() else None
    return None


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def process_limits(cgroup_files: tuple[str, ...] = CGROUP_PIDS_FILES) -> Fact:
    try:
        import resource
    except ImportError:  # Windows: no rlimits
        return absent("host.limits", "resource.getrlimit", "this platform has no POSIX resource limits")
    value = {
        "threads_per_user": _soft(resource, "RLIMIT_NPROC"),
        "address_space_bytes": _soft(resource, "RLIMIT_AS"),
        "stack_bytes": _soft(resource, "RLIMIT_STACK"),
        "cgroup_pids_max": cgroup_pids_max(cgroup_files),
        "cpus": usable_cpus(),
        "root": os.geteuid() == 0,
    }
    return known("host.limits", value, "resource.getrlimit, " + ", ".join(cgroup_files))
