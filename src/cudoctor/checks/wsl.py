"""WSL2: the Windows driver's libcuda lives in /usr/lib/wsl/lib and must be the one the loader finds."""

from __future__ import annotations

from cudoctor.checks import check, finding, view
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "GPU & driver"
WSL_LIB = "/usr/lib/wsl/lib"


@check("wsl-linux-driver", "multiple-toolkits", LAYER, requires=("host.wsl", "loader.ldcache"))
def wsl_linux_driver(snap: Snapshot) -> list[Finding]:
    """Inside WSL2 a Linux driver's libcuda is installed and can shadow the Windows driver's /usr/lib/wsl/lib copy."""
    if not snap.value("host.wsl"):
        return []
    cache = snap.value("loader.ldcache") or {}
    foreign = [p for p in cache.get("libcuda.so.1", []) if not p.startswith("/usr/lib/wsl/")]
    if not foreign:
        return []
    return [
        finding(
            "wsl-linux-driver",
            "multiple-toolkits",
            Severity.ERROR,
            f"A Linux NVIDIA driver library is installed inside WSL ({foreign[0]}); WSL must use the Windows driver's /usr/lib/wsl/lib/libcuda.so.1",
            LAYER,
            evidence=[f"ld.so cache: libcuda.so.1 => {p}" for p in cache.get("libcuda.so.1", [])],
            fix=[
                "sudo apt-get remove --purge 'nvidia-driver-*' 'libnvidia-compute-*'  (never install a Linux driver inside WSL)",
                "sudo ldconfig",
            ],
        )
    ]


@check("wsl-libcuda-not-found", "env-path-misconfig", LAYER, requires=("host.wsl", "loader.ldcache"))
def wsl_libcuda_not_found(snap: Snapshot) -> list[Finding]:
    """Inside WSL2 the loader cannot find the Windows driver's libcuda.so.1, or the unversioned libcuda.so that cuDNN 8 and bitsandbytes dlopen."""
    if not snap.value("host.wsl"):
        return []
    cache = snap.value("loader.ldcache") or {}
    ld_path = [
        str(e.get("path", "")).rstrip("/") for e in (snap.value("env.paths") or {}).get("LD_LIBRARY_PATH", [])
    ]
    if WSL_LIB in ld_path:
        return []
    missing = [name for name in ("libcuda.so.1", "libcuda.so") if not cache.get(name)]
    if not missing:
        return []
    return [
        finding(
            "wsl-libcuda-not-found",
            "env-path-misconfig",
            Severity.ERROR if "libcuda.so.1" in missing else Severity.WARNING,
            f"Inside WSL the loader cannot find {' or '.join(missing)}: the Windows driver's copy in {WSL_LIB} is not in the ld.so cache or on LD_LIBRARY_PATH"
            + (
                " (cuDNN 8 and bitsandbytes dlopen the unversioned libcuda.so and fail with 'libcuda.so: cannot open shared object file')"
                if missing == ["libcuda.so"]
                else ""
            ),
            LAYER,
            evidence=[
                f"ld.so cache: libcuda.so.1 => {', '.join(cache.get('libcuda.so.1', [])) or 'not found'}",
                f"ld.so cache: libcuda.so => {', '.join(cache.get('libcuda.so', [])) or 'not found'}",
                f"env:LD_LIBRARY_PATH = {view.env(snap).get('LD_LIBRARY_PATH', '(unset)')}",
            ],
            fix=[
                f"export LD_LIBRARY_PATH={WSL_LIB}:$LD_LIBRARY_PATH  (put it in the environment's activate script: conda environments often replace LD_LIBRARY_PATH)",
                "sudo ldconfig  (WSL lists /usr/lib/wsl/lib in /etc/ld.so.conf.d/ld.wsl.conf)",
            ],
        )
    ]


# CUDA on WSL2 needs a Windows with GPU paravirtualization: Windows 11, or Windows 10 21H2 (build 19044) and newer
# (Insider builds from 20145, above that number, had it first)
WSL_GPU_BUILD = 19044
WSL_GPU_SOURCE = (
    "https://docs.nvidia.com/cuda/wsl-user-guide/index.html (Getting Started: 'Windows 11 and Windows 10, version 21H2 "
    "support running existing ML tools ... inside a WSL instance'); CUDA on WSL first came to Insider build 20145"
)


@check("wsl-windows-too-old", "no-gpu-visible", LAYER, requires=("host.wsl", "host.windows_build"))
def wsl_windows_too_old(snap: Snapshot) -> list[Finding]:
    """WSL2 on a Windows 10 build older than 21H2 (19044): Windows gives WSL no GPU, whatever the driver."""
    build = snap.value("host.windows_build")
    if not snap.value("host.wsl") or not isinstance(build, int) or build >= WSL_GPU_BUILD:
        return []
    return [
        finding(
            "wsl-windows-too-old",
            "no-gpu-visible",
            Severity.ERROR,
            f"Windows build {build} gives WSL2 no GPU: CUDA on WSL2 needs Windows 11 or Windows 10 21H2 (build "
            f"{WSL_GPU_BUILD}) or newer; CUDA reports the missing GPU as an insufficient driver",
            LAYER,
            evidence=[f"host.windows_build = {build}", WSL_GPU_SOURCE],
            fix=[
                "Update Windows (Settings > Windows Update) to Windows 10 21H2 or Windows 11, then run wsl --update "
                "in PowerShell and restart WSL (wsl --shutdown)",
                "Then check inside WSL: nvidia-smi lists the GPU (never install a Linux NVIDIA driver inside WSL)",
            ],
        )
    ]
