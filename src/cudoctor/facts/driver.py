"""Driver and GPU facts: /proc and /sys files first, NVML and libcuda in a child process.

The child can hang on a wedged GPU or crash on a broken driver; it is killed at its timeout
and its failure becomes a fact. With no NVIDIA library on the machine no child is started.
"""

from __future__ import annotations

import glob
import json
import os
import re
from collections.abc import Mapping
from typing import Any

from cudoctor import runner
from cudoctor.model import Fact, absent, failed, known, unknown

PROC_VERSION = "/proc/driver/nvidia/version"

# Runs in `python -I`; prints one sentinel line of JSON. Uses pynvml when importable, and
# ctypes on libcuda for the driver's CUDA version (cuDriverGetVersion needs no cuInit).
NVML_PROBE = r"""
import json, ctypes
out = {}
try:
    cuda = ctypes.CDLL("libcuda.so.1")
    v = ctypes.c_int(0)
    rc = cuda.cuDriverGetVersion(ctypes.byref(v))
    out["libcuda"] = {"rc": rc, "version": v.value}
    rc = cuda.cuInit(0)
    out["libcuda"]["cuInit"] = rc
except OSError as exc:
    out["libcuda"] = {"error": str(exc)}
try:
    import pynvml as N
except ImportError:
    N = None
    out["nvml"] = {"error": "nvidia-ml-py is not installed in this interpreter"}
if N is not None:
    try:
        N.nvmlInit()
        def s(x):
            return x.decode() if isinstance(x, bytes) else x
        def call(fn, *a):
            try:
                return fn(*a)
            except N.NVMLError as exc:
                return {"nvml_error": str(exc)}
        def comm(pid):
            try:
                with open("/proc/%d/comm" % pid) as f:
                    return f.read().strip()
            except OSError:
                return None
        modes = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}
        nv = {"driver": s(N.nvmlSystemGetDriverVersion()), "cuda": N.nvmlSystemGetCudaDriverVersion(), "gpus": []}
        for i in range(N.nvmlDeviceGetCount()):
            h = N.nvmlDeviceGetHandleByIndex(i)
            mem = N.nvmlDeviceGetMemoryInfo(h)
            g = {"index": i, "name": s(N.nvmlDeviceGetName(h)), "uuid": s(N.nvmlDeviceGetUUID(h)),
                 "memory_total_mib": mem.total // 2**20, "memory_used_mib": mem.used // 2**20,
                 "memory_free_mib": mem.free // 2**20}
            cc = call(N.nvmlDeviceGetCudaComputeCapability, h)
            g["cc"] = "%d.%d" % tuple(cc) if isinstance(cc, tuple) else None
            procs = call(N.nvmlDeviceGetComputeRunningProcesses, h)
            g["processes"] = [{"pid": p.pid, "used_mib": (p.usedGpuMemory or 0) // 2**20, "name": comm(p.pid)} for p in procs] if isinstance(procs, list) else []
            mode = call(N.nvmlDeviceGetComputeMode, h)
            g["compute_mode"] = modes.get(mode) if isinstance(mode, int) else None
            ecc = call(N.nvmlDeviceGetTotalEccErrors, h, N.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, N.NVML_VOLATILE_ECC)
            g["ecc_uncorrected_volatile"] = ecc if isinstance(ecc, int) else None
            rows = call(N.nvmlDeviceGetRemappedRows, h)
            g["remapped_rows"] = list(rows) if isinstance(rows, tuple) else None
            shown = call(getattr(N, "nvmlDeviceGetDisplayActive", lambda h: None), h)
            g["display_active"] = bool(shown) if isinstance(shown, int) else None
            dm = call(getattr(N, "nvmlDeviceGetCurrentDriverModel", lambda h: None), h)
            g["driver_model"] = {0: "WDDM", 1: "TCC", 2: "MCDM"}.get(dm) if isinstance(dm, int) else None
            nv["gpus"].append(g)
        out["nvml"] = nv
    except N.NVMLError as exc:
        out["nvml"] = {"error": str(exc), "code": getattr(exc, "value", None)}
print("@@CUDOCTOR@@" + json.dumps(out))
"""


def parse_proc_version(text: str) -> dict[str, Any] | None:
    """'NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  ...' -> version and flavour."""
    m = re.search(r"NVRM version:.*?(Open Kernel Module|Kernel Module).*?\s(\d+\.\d+(?:\.\d+)?)\s", text)
    if not m:
        return None
    return {"version": m.group(2), "open_kernel_module": m.group(1).startswith("Open")}


def nvidia_pci_devices(sysfs: str = "/sys/bus/pci/devices") -> list[dict[str, str]]:
    """NVIDIA display/3D controllers on the PCI bus, with the kernel driver bound to each."""
    found = []
    for dev in sorted(glob.glob(os.path.join(sysfs, "*"))):
        try:
            with open(os.path.join(dev, "vendor")) as fh:
                vendor = fh.read().strip()
            with open(os.path.join(dev, "class")) as fh:
                klass = fh.read().strip()
        except OSError:
            continue
        if vendor != "0x10de" or not klass.startswith(("0x0300", "0x0302")):
            continue
        drv = os.path.join(dev, "driver")
        found.append(
            {
                "slot": os.path.basename(dev),
                "driver": os.path.basename(os.path.realpath(drv)) if os.path.exists(drv) else "none",
            }
        )
    return found


def nvml_library_present(ldcache: Mapping[str, list[str]]) -> bool:
    return bool(ldcache.get("libnvidia-ml.so.1") or ldcache.get("libcuda.so.1")) or any(
        os.path.exists(p)
        for p in ("/usr/lib/wsl/lib/libnvidia-ml.so.1", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1")
    )


def collect_driver(ldcache: Mapping[str, list[str]], timeout: float = 10.0) -> list[Fact]:
    facts: list[Fact] = []
    proc = None
    if os.path.exists(PROC_VERSION):
        try:
            with open(PROC_VERSION, encoding="utf-8", errors="replace") as fh:
                proc = parse_proc_version(fh.read())
        except OSError as exc:
            facts.append(failed("driver.kernel_module", f"file:{PROC_VERSION}", str(exc)))
    facts.append(known("gpu.pci", nvidia_pci_devices(), "file:/sys/bus/pci/devices"))
    facts.append(
        known(
            "gpu.device_nodes",
            sorted(glob.glob("/dev/nvidia*")) + (["/dev/dxg"] if os.path.exists("/dev/dxg") else []),
            "file:/dev",
        )
    )
    if not nvml_library_present(ldcache):
        detail = "no libnvidia-ml.so.1 / libcuda.so.1 in the loader cache: no NVIDIA driver is installed"
        if proc:
            facts.append(known("driver.version", proc["version"], f"file:{PROC_VERSION}"))
        else:
            facts.append(absent("driver.version", "ld.so cache + /proc/driver/nvidia", detail))
        facts.append(absent("driver.cuda_version", "ld.so cache", detail))
        facts.append(absent("gpu.devices", "ld.so cache", detail))
        facts.append(absent("driver.cuinit", "ld.so cache", detail))
        facts.append(absent("driver.nvml_error", "ld.so cache", detail))
        return facts
    facts += _probe_facts(proc, timeout)
    return facts


def _probe_facts(proc: dict[str, Any] | None, timeout: float) -> list[Fact]:
    res = runner.run_python(NVML_PROBE, timeout=timeout)
    payload = runner.last_sentinel_line(res.stdout)
    if payload is None:
        why = f"NVML probe failed ({res.describe()}): {res.stderr.strip()[-300:]}"
        return [
            unknown("driver.version", "nvml probe", why),
            unknown("driver.cuda_version", "nvml probe", why),
            unknown("gpu.devices", "nvml probe", why),
        ]
    data = json.loads(payload)
    return facts_from_probe(data, proc)


def facts_from_probe(data: Mapping[str, Any], proc: Mapping[str, Any] | None) -> list[Fact]:
    """Turn the NVML/libcuda probe's JSON (live or recorded) into facts."""
    facts: list[Fact] = []
    nvml = data.get("nvml") or {}
    lib = data.get("libcuda") or {}
    if "driver" in nvml:
        facts.append(known("driver.version", nvml["driver"], "nvml:nvmlSystemGetDriverVersion"))
        facts.append(known("gpu.devices", nvml.get("gpus", []), "nvml"))
        facts.append(absent("driver.nvml_error", "nvml:nvmlInit", "NVML initialised"))
    else:
        err = nvml.get("error", "NVML gave nothing")
        if proc:
            facts.append(known("driver.version", proc["version"], f"file:{PROC_VERSION}"))
        else:
            facts.append(unknown("driver.version", "nvml", err))
        facts.append(failed("gpu.devices", "nvml", err))
        facts.append(known("driver.nvml_error", err, "nvml:nvmlInit"))
    cuda_int = nvml.get("cuda") or (lib.get("version") if lib.get("rc") == 0 else None)
    if cuda_int:
        from cudoctor.versions import cuda_from_int

        facts.append(
            known(
                "driver.cuda_version",
                cuda_from_int(int(cuda_int)),
                "libcuda:cuDriverGetVersion" if "cuda" not in nvml else "nvml:nvmlSystemGetCudaDriverVersion",
            )
        )
    else:
        facts.append(unknown("driver.cuda_version", "libcuda", lib.get("error", "cuDriverGetVersion failed")))
    if "cuInit" in lib:
        facts.append(known("driver.cuinit", lib["cuInit"], "libcuda:cuInit"))
    else:
        facts.append(unknown("driver.cuinit", "libcuda", lib.get("error", "cuInit was not called")))
    return facts
