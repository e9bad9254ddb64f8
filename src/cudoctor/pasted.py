"""Reports people paste into bug trackers besides collect_env and `nvidia-smi -q`: the plain
`nvidia-smi` table, `cupy.show_config()` and `jax.print_environment_info()` (which appends that
table). Each becomes a Snapshot with the same fact keys as a live one; a table cut off mid-row,
as threads often quote it, still gives what it shows.
"""

from __future__ import annotations

import re
from typing import Any

from cudoctor import knowledge, versions
from cudoctor.facts.stated import from_stated
from cudoctor.model import Snapshot, known

SMI_HEADER = re.compile(r"NVIDIA-SMI\s+(\S+)\s+Driver Version:\s*(\S+)\s+CUDA Version:\s*(\S+)")
# "|   0  NVIDIA A10G                    On  |" and a row cut short ("|   0  Tesla M40 24GB     W")
SMI_GPU_ROW = re.compile(r"^\|\s+(\d+)\s+(\S+(?: \S+)*)(?:\s{2,}.*)?$")
SMI_MEMORY = re.compile(r"(\d+)MiB\s*/\s*(\d+)MiB")
# "|    0   N/A  N/A   1065593      C   python      308MiB |" (GI/CI columns since R450; MIG puts
# numbers there), "|    0   1800353      C   python     14305MiB |" before; WDDM prints N/A memory
SMI_PROCESS_ROW = re.compile(
    r"^\|\s+(\d+)\s+(?:(?:N/A|\d+)\s+(?:N/A|\d+)\s+)?(\d+)\s+(C\+G|M\+C|C|G|M)\s+(.*?)\s+(?:(\d+)MiB|N/A)\s*\|$"
)


def mib(value: str | None) -> int | None:
    m = re.match(r"\s*(\d+)\s*MiB", value or "")
    return versions.integer(m.group(1)) if m else None


def gpu_record(
    index: int, name: str | None, uuid: str | None, total: str | None, used: str | None, free: str | None
) -> dict[str, Any]:
    hit = knowledge.gpu_cc(name or "")
    return {
        "index": index,
        "name": name,
        "uuid": uuid,
        "cc": hit[0] if hit else None,
        "memory_total_mib": mib(total),
        "memory_used_mib": mib(used),
        "memory_free_mib": mib(free),
        "processes": [],
    }


def display_fields(active: str | None, model: str | None) -> dict[str, Any]:
    """nvidia-smi's 'Display Active' (Enabled / Disabled) and Windows driver model (WDDM, TCC, MCDM;
    N/A on Linux) as the fields a live NVML read gives: display_active, driver_model."""
    shown = {"enabled": True, "disabled": False}.get((active or "").strip().lower())
    dm = (model or "").strip().upper()
    return {"display_active": shown, "driver_model": dm if dm in ("WDDM", "TCC", "MCDM") else None}


def looks_like_smi_table(head: str) -> bool:
    return bool(SMI_HEADER.search(head))


def _smi_processes(lines: list[str]) -> dict[int, list[dict[str, Any]]] | None:
    """The process table by GPU index; None when the paste does not show all of it (cut off, or
    left out), so no one concludes that no process holds memory."""
    start = next((i for i, line in enumerate(lines) if re.match(r"^\|\s*Processes:", line)), None)
    if start is None:
        return None
    by_gpu: dict[int, list[dict[str, Any]]] = {}
    for line in lines[start + 1 :]:
        if line.startswith("+-"):
            return by_gpu  # the table's closing border: every row was pasted
        row = SMI_PROCESS_ROW.match(line)
        if row:
            gpu, pid, kind, name, used = row.groups()
            by_gpu.setdefault(versions.integer(gpu), []).append(
                {
                    "pid": versions.integer(pid),
                    "type": kind,
                    "name": name,
                    "used_mib": versions.integer(used) if used else None,
                }
            )
    return None


def _smi_gpus(text: str) -> list[dict[str, Any]]:
    """GPU rows of the table, each with the memory of the row under it when the paste has it."""
    lines = [line.strip() for line in text.split("\n")]  # a table quoted in an indented block
    start = next((i for i, line in enumerate(lines) if line.startswith("|====")), None)
    gpus: list[dict[str, Any]] = []
    for i, line in enumerate(lines[start + 1 :] if start is not None else [], (start or 0) + 1):
        if re.match(r"^\|\s*(?:Processes|MIG devices):", line):
            break
        row = SMI_GPU_ROW.match(line)
        if row is None or not re.search(r"[A-Za-z]", row.group(2)):
            continue
        memory = SMI_MEMORY.search(lines[i + 1]) if i + 1 < len(lines) else None
        used, total = (f"{memory.group(1)} MiB", f"{memory.group(2)} MiB") if memory else (None, None)
        free = (
            f"{versions.integer(memory.group(2)) - versions.integer(memory.group(1))} MiB" if memory else None
        )
        gpus.append(gpu_record(versions.integer(row.group(1)), row.group(2), None, total, used, free))
    processes = _smi_processes(lines)
    for gpu in gpus:
        gpu["processes"] = None if processes is None else processes.get(gpu["index"], [])
    return gpus


def smi_table_facts(text: str, snap: Snapshot, source: str) -> bool:
    """Add the driver and GPUs a pasted `nvidia-smi` table shows; False when it has no header."""
    header = SMI_HEADER.search(text)
    if header is None:
        return False
    snap.add(known("driver.version", header.group(2), source))
    if versions.parse(header.group(3)):
        snap.add(known("driver.cuda_version", header.group(3), source))
    gpus = _smi_gpus(text)
    if gpus:
        snap.add(known("gpu.devices", gpus, source))
    return True


def from_smi_table(text: str) -> Snapshot:
    snap = Snapshot(origin="report:nvidia-smi table")
    smi_table_facts(text, snap, "nvidia-smi")
    return snap


# ---------------------------------------------------------------- cupy.show_config()
def looks_like_cupy_config(head: str) -> bool:
    return bool(re.search(r"^CuPy Version\s+:", head, re.M))


def _record(text: str, label: str) -> str | None:
    m = re.search(rf"^{re.escape(label)}\s+:\s*(.*?)\s*$", text, re.M)
    value = m.group(1) if m else None
    return None if value in (None, "", "None") else value


def _cuda(value: str | None) -> str | None:
    """'11040' -> '11.4' (CUDA's integer version); None for anything else."""
    return versions.cuda_from_int(versions.integer(value)) if value and value.isdigit() else None


def from_cupy_config(text: str) -> Snapshot:
    runtime = _record(text, "CUDA Runtime Version") or ""
    local = re.search(r"(\d+) \(locally installed\)", runtime)
    linked = re.match(r"(\d+)", runtime)
    stated = {
        "framework_version": f"cupy {_record(text, 'CuPy Version')}",
        "framework_cuda": _cuda(_record(text, "CUDA Build Version")) or "",
        "system_cuda": _cuda(local.group(1) if local else linked.group(1) if linked else None) or "",
        "cudnn": versions.cudnn_from_int(_record(text, "cuDNN Version")) or "",
        "os": _record(text, "OS") or "",
        "python": _record(text, "Python Version") or "",
    }
    driver_cuda = _cuda(_record(text, "CUDA Driver Version"))
    if driver_cuda:
        stated["driver"] = f"CUDA Version {driver_cuda}"
    names = re.findall(r"^Device \d+ Name\s+:\s*(.+?)\s*$", text, re.M)
    ccs = set(re.findall(r"^Device \d+ Compute Capability\s+:\s*(\d+)\s*$", text, re.M))
    stated["gpu"] = ", ".join(names)
    if len(ccs) == 1:
        stated["compute_capability"] = ccs.pop()  # '75': from_stated reads it with versions.cc_tuple
    snap = from_stated({k: v for k, v in stated.items() if v}, framework_hint="cupy")
    missing = _cupy_libs_not_loaded(text, stated["framework_cuda"])
    info = snap.value("framework.cupy")
    if missing and isinstance(info, dict):
        snap.add(
            known("framework.cupy", dict(info, missing_needed=missing), "cupy.show_config(): ImportError")
        )
    return snap


# "cuBLAS Version : ImportError('Failure finding "libcublasLt.so": No such file: ...')" (CuPy 14)
CUPY_IMPORT_ERROR = re.compile(
    r"^\w+ Version\s+:\s*ImportError\('Failure finding \"(lib\w+\.so(?:\.\d+)*)\"", re.M
)


def _cupy_libs_not_loaded(text: str, build_cuda: str) -> list[dict[str, str]]:
    """The CUDA libraries show_config could not load, named as CuPy's CUDA major loads them."""
    major = build_cuda.split(".")[0]
    names = [m.group(1) for m in CUPY_IMPORT_ERROR.finditer(text)]
    return [
        {
            "name": n if re.search(r"\.so\.\d", n) or not major else f"{n}.{major}",
            "reported_by": "cupy.show_config()",
        }
        for n in names
    ]


# ---------------------------------------------------------------- jax.print_environment_info()
def looks_like_jax_info(head: str) -> bool:
    return bool(re.search(r"^jax:\s+\d", head, re.M) and re.search(r"^jaxlib:\s+\d", head, re.M))


def from_jax_info(text: str) -> Snapshot:
    jaxlib = re.search(r"^jaxlib:\s+(\S+)", text, re.M)
    devices = re.search(r"^jax\.devices \((\d+) total.*?\): \[(.*)\]", text, re.M)
    on_gpu = bool(devices and re.search(r"cuda|gpu", devices.group(2), re.I))
    python = re.search(r"^python:\s+(\S+)", text, re.M)
    system = re.search(r"system='(\w+)'.*?release='([^']*)'", text)
    stated = {
        "framework_version": (f"jax {jaxlib.group(1)} " + ("[cuda]" if on_gpu else "cpu")) if jaxlib else "",
        "python": python.group(1) if python else "",
        "os": f"{system.group(1)} {system.group(2)}" if system else "",
    }
    snap = from_stated({k: v for k, v in stated.items() if v}, framework_hint="jax")
    smi_table_facts(text, snap, "jax.print_environment_info: nvidia-smi")
    return snap
