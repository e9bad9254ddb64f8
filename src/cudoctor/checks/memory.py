"""Sharing a GPU and its health: memory held by other processes, preallocation, compute mode,
ECC / row remapping."""

from __future__ import annotations

import os
from typing import Any

from cudoctor import knowledge
from cudoctor.checks import FactMissing, check, finding, view
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "GPU & driver"


@check("gpu-memory-held", "gpu-oom", LAYER, requires=("gpu.devices",))
def gpu_memory_held(snap: Snapshot) -> list[Finding]:
    """Other processes already hold most of a GPU's memory: one finding for all such GPUs, so an
    8-GPU node shared with another job reads as one thing to do, not four."""
    gpus = view.gpus(snap)
    busy = [g for g in gpus if (share := _share_used(g)) is not None and share >= 0.5]
    if not busy:
        return []
    idle = [str(g["index"]) for g in gpus if (share := _share_used(g)) is not None and share < 0.1]
    holders = [(g, p) for g in busy for p in _holders_of(g)]
    steps = [_kill_step(busy)] if any(_compute_processes(g) for g in busy) else []
    steps = steps or [
        "nvidia-smi  (find and stop the process holding the memory; in a container, run it on the host)"
    ]
    if idle:
        steps.append(f"Or run on a GPU with free memory: export CUDA_VISIBLE_DEVICES={','.join(idle)}")
    return [
        finding(
            "gpu-memory-held",
            "gpu-oom",
            Severity.WARNING,
            f"{_busy_gpus(busy)} in use by {_holders(busy, holders)}",
            LAYER,
            evidence=[
                f"gpu {g.get('index')}: used {g['memory_used_mib']} MiB / total {g['memory_total_mib']} MiB"
                for g in busy
            ]
            + [f"gpu {g.get('index')} pid {p['pid']}: {p.get('used_mib')} MiB" for g, p in holders],
            fix=steps,
            generic_fixes=False,
        )
    ]


def _busy_gpus(busy: list[dict[str, Any]]) -> str:
    """'GPU 0 (A100) has 79000 of 81920 MiB' or 'GPUs 0, 1, 2, 3 (A800) have 68605 to 72750 of 81920 MiB'."""
    if len(busy) == 1:
        g = busy[0]
        return f"GPU {g.get('index', '?')} ({g.get('name')}) has {g['memory_used_mib']} of {g['memory_total_mib']} MiB"
    names = ", ".join(dict.fromkeys(str(g.get("name")) for g in busy))
    used = sorted(g["memory_used_mib"] for g in busy)
    totals = sorted({g["memory_total_mib"] for g in busy})
    span = f"{used[0]} to {used[-1]}" if used[0] != used[-1] else str(used[0])
    total = str(totals[0]) if len(totals) == 1 else f"{totals[0]} to {totals[-1]}"
    indexes = ", ".join(str(g.get("index", "?")) for g in busy)
    return f"GPUs {indexes} ({names}) have {span} of {total} MiB"


def _holders(busy: list[dict[str, Any]], holders: list[tuple[dict[str, Any], dict[str, Any]]]) -> str:
    if not holders:
        unlisted = any(
            g.get("processes") is None for g in busy
        )  # None: a pasted report that does not list them
        return "processes the report does not list" if unlisted else "processes this container cannot see"
    if len(busy) == 1:
        return ", ".join(_process(p) for _, p in holders[:5])
    biggest = [_biggest(g) for g in busy]
    named, seen = [], set()
    for g, p in ((g, p) for g, p in zip(busy, biggest, strict=True) if p):
        name = f" {p['name']}" if p.get("name") and p["name"] not in seen else ""
        seen.add(p.get("name"))
        named.append(f"pid {p['pid']}{name} on GPU {g.get('index')}")
    rest = len(holders) - len(named)
    text = f"{len(holders)} processes: " + ", ".join(named) + (f" and {rest} more" if rest else "")
    unseen = [g for g, p in zip(busy, biggest, strict=True) if not p]
    if unseen:
        where = ", ".join(str(g.get("index")) for g in unseen)
        text += f"; on GPU {where} by {_holders(unseen, [])}"
    return text


def _biggest(gpu: dict[str, Any]) -> dict[str, Any] | None:
    return max(_holders_of(gpu), key=lambda p: p.get("used_mib") or 0, default=None)


def _holders_of(gpu: dict[str, Any]) -> list[dict[str, Any]]:
    """Its compute processes; the graphics-only ones only when no compute process is listed."""
    return _compute_processes(gpu) or list(gpu.get("processes") or [])


def _kill_step(busy: list[dict[str, Any]]) -> str:
    """Stop the biggest compute process of each busy GPU (the two biggest of a single one)."""
    per_gpu = 2 if len(busy) == 1 else 1
    pids: list[int] = []
    for g in busy:
        biggest = sorted(_compute_processes(g), key=lambda p: -(p.get("used_mib") or 0))[:per_gpu]
        pids += [p["pid"] for p in biggest if p["pid"] not in pids]
    listed = " ".join(str(pid) for pid in pids)
    if len(pids) == 1:
        return f"If pid {listed} is left over from an earlier run, stop it: kill {listed}"
    return f"If pids {', '.join(str(pid) for pid in pids)} are left over from an earlier run, stop them: kill {listed}"


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
        # as the framework reads the value: TensorFlow ignores "True", JAX reads "FALSE" as true
        if (
            name == "tensorflow"
            and knowledge.env_flag("TF_FORCE_GPU_ALLOW_GROWTH", env.get("TF_FORCE_GPU_ALLOW_GROWTH"))
            is not True
        ):
            setting = "export TF_FORCE_GPU_ALLOW_GROWTH=true"
        elif (
            name == "jax"
            and knowledge.env_flag("XLA_PYTHON_CLIENT_PREALLOCATE", env.get("XLA_PYTHON_CLIENT_PREALLOCATE"))
            is not False
        ):
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
                about=[name],
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
