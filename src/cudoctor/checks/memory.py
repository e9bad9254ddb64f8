"""Sharing a GPU and its health: memory held by other processes, preallocation, compute mode,
ECC / row remapping."""

from __future__ import annotations

import os
from typing import Any

from cudoctor.checks import FactMissing, check, finding, view
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "GPU & driver"


@check("gpu-memory-held", "gpu-oom", LAYER, requires=("gpu.devices",))
def gpu_memory_held(snap: Snapshot) -> list[Finding]:
    """Other processes already hold most of a GPU's memory."""
    gpus = view.gpus(snap)
    idle = [str(g["index"]) for g in gpus if (share := _share_used(g)) is not None and share < 0.1]
    out = []
    for g in gpus:
        share = _share_used(g)
        if share is None or share < 0.5:
            continue
        listed = g.get("processes")  # None: a pasted report that does not list them
        compute = _compute_processes(g)  # a desktop's Xorg (type G) is never one to stop
        procs = compute or list(listed or [])
        who = ", ".join(_process(p) for p in procs[:5]) or (
            "processes this container cannot see"
            if listed is not None
            else "processes the report does not list"
        )
        biggest = sorted(compute, key=lambda p: -(p.get("used_mib") or 0))[:2]
        steps = [
            f"If pid {p['pid']} is left over from an earlier run, stop it: kill {p['pid']}" for p in biggest
        ]
        steps = steps or [
            "nvidia-smi  (find and stop the process holding the memory; in a container, run it on the host)"
        ]
        if idle:
            steps.insert(1, f"Or run on a GPU with free memory: export CUDA_VISIBLE_DEVICES={','.join(idle)}")
        out.append(
            finding(
                "gpu-memory-held",
                "gpu-oom",
                Severity.WARNING,
                f"GPU {g.get('index', '?')} ({g.get('name')}) has {g['memory_used_mib']} of {g['memory_total_mib']} MiB in use by {who}",
                LAYER,
                evidence=[
                    f"gpu {g.get('index')}: used {g['memory_used_mib']} MiB / total {g['memory_total_mib']} MiB"
                ]
                + [f"pid {p['pid']}: {p.get('used_mib')} MiB" for p in procs],
                fix=steps,
                generic_fixes=False,
            )
        )
    return out


def _share_used(gpu: dict[str, Any]) -> float | None:
    total, used = gpu.get("memory_total_mib"), gpu.get("memory_used_mib")
    return used / total if total and used is not None else None


def _process(p: dict[str, Any]) -> str:
    name = f" {p['name']}" if p.get("name") else ""
    used = p.get("used_mib")
    return f"pid {p['pid']}{name}" + (f" ({used} MiB)" if used is not None else "")


def _compute_processes(gpu: dict[str, Any]) -> list[dict[str, Any]]:
    """Processes with a CUDA context; graphics-only ones (type G: Xorg, a desktop shell) hold none."""
    return [p for p in gpu.get("processes") or [] if p.get("type") != "G"]


@check("preallocation-with-shared-gpu", "gpu-oom", LAYER, requires=("gpu.devices",))
def preallocation_with_shared_gpu(snap: Snapshot) -> list[Finding]:
    """TensorFlow / JAX grab most GPU memory at start while other processes use the same GPU."""
    env = view.env(snap)
    shared = [g for g in view.gpus(snap) if _compute_processes(g)]
    if not shared:
        return []
    out = []
    for name, info in view.cuda_frameworks(snap):
        if name == "tensorflow" and env.get("TF_FORCE_GPU_ALLOW_GROWTH", "").lower() != "true":
            setting = "export TF_FORCE_GPU_ALLOW_GROWTH=true"
        elif name == "jax" and env.get("XLA_PYTHON_CLIENT_PREALLOCATE", "").lower() != "false":
            setting = "export XLA_PYTHON_CLIENT_PREALLOCATE=false"
        else:
            continue
        out.append(
            finding(
                f"{name}-preallocates",
                "gpu-oom",
                Severity.WARNING,
                f"{view.describe(name, info)} preallocates most GPU memory at start, and {len(shared)} GPU(s) are already used by other processes",
                LAYER,
                evidence=[f"gpu {g.get('index')}: {len(_compute_processes(g))} process(es)" for g in shared],
                fix=[setting],
            )
        )
    return out


@check("gpu-memory-errors", "hardware-fault", LAYER, requires=("gpu.devices",))
def gpu_memory_errors(snap: Snapshot) -> list[Finding]:
    """Uncorrectable ECC errors or failed row remapping on a GPU."""
    out = []
    for g in view.gpus(snap):
        ecc = g.get("ecc_uncorrected_volatile")
        rows = g.get("remapped_rows") or []
        failed = len(rows) >= 4 and bool(rows[3])
        pending = len(rows) >= 3 and bool(rows[2])
        if not (ecc or failed or pending):
            continue
        parts = (
            ([f"{ecc} uncorrectable ECC errors since boot"] if ecc else [])
            + (["row remapping failed"] if failed else [])
            + (["row remapping pending (reset needed)"] if pending else [])
        )
        out.append(
            finding(
                "gpu-memory-errors",
                "hardware-fault",
                Severity.ERROR,
                f"GPU {g.get('index', '?')} ({g.get('name')}): {', '.join(parts)}",
                LAYER,
                evidence=[
                    f"ecc_uncorrected_volatile = {ecc}",
                    f"remapped_rows (corr, unc, pending, failure) = {rows}",
                ],
            )
        )
    return out


EXCLUSIVE_MODES = ("Exclusive_Process", "Exclusive_Thread")
MPS_SERVER = "nvidia-cuda-mps-server"


@check("gpu-compute-mode", "no-gpu-visible", LAYER, requires=("gpu.devices",))
def gpu_compute_mode(snap: Snapshot) -> list[Finding]:
    """A GPU's compute mode refuses this process a context: Prohibited, or Exclusive_Process
    while another process holds the GPU (CUDA says 'busy or unavailable')."""
    gpus = view.gpus(snap)
    if gpus and not any(g.get("compute_mode") for g in gpus):
        raise FactMissing("the GPU records carry no compute mode (recorded without it)")
    out = []
    for g in gpus:
        mode = g.get("compute_mode")
        holders = _compute_processes(g)
        through_mps = any(_program(p) == MPS_SERVER for p in holders)
        if mode == "Prohibited":
            out.append(_compute_mode_finding(g, Severity.ERROR, "no process can create a CUDA context on it"))
        elif mode in EXCLUSIVE_MODES and holders and not through_mps:
            who = ", ".join(_process_label(p) for p in holders[:3])
            text = f"one process at a time may use it, and {who} already does: any other process gets 'CUDA-capable device(s) is/are busy or unavailable'"
            out.append(_compute_mode_finding(g, Severity.WARNING, text))
    return out


def _program(proc: dict[str, Any]) -> str:
    """'nvidia-cuda-mps-server' from '/usr/bin/nvidia-cuda-mps-server' (nvidia-smi) or the comm name (NVML)."""
    name = (proc.get("name") or "").split(" ")[0]
    return os.path.basename(name)


def _process_label(proc: dict[str, Any]) -> str:
    return f"pid {proc.get('pid')}" + (f" ({proc['name']})" if proc.get("name") else "")


def _compute_mode_finding(gpu: dict[str, Any], severity: Severity, consequence: str) -> Finding:
    index, mode = gpu.get("index", "?"), gpu.get("compute_mode")
    return finding(
        "gpu-compute-mode",
        "no-gpu-visible",
        severity,
        f"GPU {index} ({gpu.get('name')}) is in compute mode {mode}: {consequence}",
        LAYER,
        evidence=[f"gpu {index}: compute_mode = {mode}"]
        + [f"pid {p.get('pid')}: {p.get('name') or '?'}" for p in gpu.get("processes") or []],
        fix=[
            f"sudo nvidia-smi -i {index} -c DEFAULT  (lets several processes share the GPU; resets to Default at reboot on Linux)",
            "Or run on another GPU (CUDA_VISIBLE_DEVICES), or share this one through MPS (nvidia-cuda-mps-control -d)",
        ],
    )
