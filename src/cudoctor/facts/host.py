"""Host facts: OS, Python, CPU and its instruction sets, container / WSL, environment variables."""

from __future__ import annotations

import glob
import os
import platform
import sys
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from cudoctor import knowledge
from cudoctor.model import Fact, absent, known, unknown

ENV_VARS = (
    "PATH",
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "PYTHONPATH",
    "CUDA_HOME",
    "CUDA_PATH",
    "CUDA_ROOT",
    "CUDA_TOOLKIT_ROOT_DIR",
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "CUDA_DEVICE_ORDER",
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_CACHE_DISABLE",
    "CUDA_CACHE_PATH",
    "NVIDIA_TF32_OVERRIDE",
    "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "JAX_DISABLE_JIT",
    "CUDA_MODULE_LOADING",
    "CUBLAS_WORKSPACE_CONFIG",
    "XLA_FLAGS",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "XLA_PYTHON_CLIENT_ALLOCATOR",
    "JAX_PLATFORMS",
    "TF_FORCE_GPU_ALLOW_GROWTH",
    "TF_CPP_MIN_LOG_LEVEL",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "TORCH_CUDA_ARCH_LIST",
    "TRITON_PTXAS_PATH",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "KMP_DUPLICATE_LIB_OK",
    "CONDA_PREFIX",
    "VIRTUAL_ENV",
    "CUDNN_PATH",
    "NCCL_SOCKET_IFNAME",
    "GLOO_SOCKET_IFNAME",
    "TP_SOCKET_IFNAME",
    "NCCL_IB_DISABLE",
    "NCCL_IB_HCA",
    "NCCL_P2P_DISABLE",
    "NCCL_DEBUG",
)

# Instruction sets that framework builds are known to require (x86); reported if present.
CPU_FLAGS = ("sse4_1", "sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile", "f16c")


PATH_VARS = (
    "CUDA_HOME",
    "CUDA_PATH",
    "CUDA_ROOT",
    "CUDA_TOOLKIT_ROOT_DIR",
    "CUDNN_PATH",
    "LD_LIBRARY_PATH",
    "PATH",
)


def relevant_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables cudoctor reads: ENV_VARS, and every variable a knowledge table says how a
    framework reads (so a row added there is collected without a code change)."""
    names = set(ENV_VARS) | knowledge.env_variables()
    return {k: env[k] for k in sorted(names) if k in env}


LIST_VARS = ("LD_LIBRARY_PATH", "PATH")


def _dir_entry(path: str) -> dict[str, Any]:
    return {"path": path, "exists": os.path.isdir(path), "readable": os.access(path, os.R_OK | os.X_OK)}


def path_entries(env: Mapping[str, str]) -> dict[str, list[dict[str, Any]]]:
    """Each directory named by a path-like variable, and whether it exists and can be listed.

    PATH and LD_LIBRARY_PATH are lists. CUDA_HOME and the like name one directory: tools build
    CUDA_HOME + "/bin/nvcc" from the whole value, so a value written like a list
    ("/usr/local/cuda:$CUDA_HOME") is one entry that does not exist, with its parts kept."""
    out: dict[str, list[dict[str, Any]]] = {}
    for var in PATH_VARS:
        if var not in env:
            continue
        if var in LIST_VARS:
            out[var] = [_dir_entry(entry) for entry in env[var].split(os.pathsep) if entry]
            continue
        entry = _dir_entry(env[var])
        if os.pathsep in env[var] and not entry["exists"]:
            entry["parts"] = env[var].split(os.pathsep)
        out[var] = [entry]
    return out


def parse_cpuinfo(text: str) -> dict[str, Any]:
    model = ""
    flags: list[str] = []
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and not model:
            model = value.strip()
        elif key in ("flags", "Features") and not flags:
            flags = value.split()
    return {"model": model, "flags": sorted(set(flags) & set(CPU_FLAGS)), "all_flags_known": bool(flags)}


def detect_container() -> str | None:
    if os.path.exists("/.dockerenv"):
        return "docker"
    if os.path.exists("/run/.containerenv"):
        return "podman"
    try:
        with open("/proc/1/cgroup", encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for marker in ("kubepods", "docker", "containerd", "lxc"):
            if marker in text:
                return marker
    except OSError:
        pass
    return None


def detect_wsl() -> bool:
    try:
        with open("/proc/sys/kernel/osrelease", encoding="utf-8") as fh:
            return "microsoft" in fh.read().lower()
    except OSError:
        return False


def os_release() -> str:
    try:
        with open("/etc/os-release", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.platform()


def temp_dir(env: Mapping[str, str]) -> str:
    """The directory Python's tempfile (and so CuPy's NVRTC sources) would use for this environment:
    TMPDIR, TEMP, TMP in that order when the directory exists, else the platform's default."""
    for name in ("TMPDIR", "TEMP", "TMP"):
        value = env.get(name)
        if value and os.path.isdir(value):
            return value
    return tempfile.gettempdir()


def collect_host(env: Mapping[str, str], python: Fact | None = None) -> list[Fact]:
    """Host facts; `python` is the `host.python` fact of the environment checked (default: cudoctor's own)."""
    if python is None:
        python = known(
            "host.python", {"version": platform.python_version(), "executable": sys.executable}, "sys"
        )
    facts = [
        known(
            "host.os",
            {
                "system": platform.system(),
                "release": platform.release(),
                "name": os_release(),
                "machine": platform.machine(),
            },
            "platform",
        ),
        python,
        known("host.name", platform.node(), "platform.node"),
        known("host.temp_dir", temp_dir(env), "env:TMPDIR,TEMP,TMP / tempfile"),
        known("host.container", detect_container(), "file:/.dockerenv,/proc/1/cgroup"),
        known("host.wsl", detect_wsl(), "file:/proc/sys/kernel/osrelease"),
        known("env", relevant_env(env), "environment"),
        known("env.paths", path_entries(env), "environment + stat"),
    ]
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            facts.append(known("host.cpu", parse_cpuinfo(fh.read()), "file:/proc/cpuinfo"))
    except OSError as exc:
        facts.append(unknown("host.cpu", "file:/proc/cpuinfo", str(exc)))
    facts.append(shared_memory())
    return facts


def shared_memory(path: str = "/dev/shm") -> Fact:
    """Size and free space of the shared-memory filesystem that worker processes pass data through."""
    if not os.path.isdir(path):
        return absent("host.shm", f"statvfs:{path}", f"{path} does not exist on this system")
    try:
        st = os.statvfs(path)
    except OSError as exc:
        return unknown("host.shm", f"statvfs:{path}", str(exc))
    return known(
        "host.shm",
        {"path": path, "size_bytes": st.f_blocks * st.f_frsize, "free_bytes": st.f_bavail * st.f_frsize},
        f"statvfs:{path}",
    )


OPENMP_PREFIXES = ("libgomp", "libiomp5", "libomp", "libintlc")
BLAS_PREFIXES = ("libopenblas", "libscipy_openblas", "libmkl_rt", "libmkl_core", "libblis", "libflexiblas")


def cpu_runtime_libs(sys_path: Sequence[str]) -> list[dict[str, str]]:
    """OpenMP and BLAS runtimes shipped inside installed packages (what can end up in one process)."""
    seen: set[str] = set()
    found: list[dict[str, str]] = []
    for site in sys_path:
        if not site or not os.path.isdir(site):
            continue
        for pattern in ("*/lib/lib*.so*", "*.libs/lib*.so*", "*/.libs/lib*.so*", "../../lib*.so*"):
            for path in glob.glob(os.path.join(site, pattern)):
                base = os.path.basename(path)
                kind = (
                    "openmp"
                    if base.startswith(OPENMP_PREFIXES)
                    else "blas"
                    if base.startswith(BLAS_PREFIXES)
                    else ""
                )
                real = os.path.realpath(path)
                if not kind or real in seen:
                    continue
                seen.add(real)
                owner = os.path.relpath(path, site).split(os.sep)[0]
                found.append({"kind": kind, "lib": base, "path": path, "package": owner})
    return sorted(found, key=lambda d: (d["kind"], d["path"]))
