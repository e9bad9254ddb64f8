"""GPU memory and health: memory held by other processes, preallocation, ECC / row remapping."""

from __future__ import annotations

from cudoctor.checks import check, finding, view
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "GPU & driver"


@check("gpu-memory-held", "gpu-oom", LAYER, requires=("gpu.devices",))
def gpu_memory_held(snap: Snapshot) -> list[Finding]:
    """Other processes already hold most of a GPU's memory."""
    out = []
    for g in view.gpus(snap):
        total, used = g.get("memory_total_mib"), g.get("memory_used_mib")
        if not total or used is None or used < 0.5 * total:
            continue
        procs = g.get("processes") or []
        who = (
            ", ".join(f"pid {p['pid']} ({p.get('used_mib', '?')} MiB)" for p in procs[:5])
            or "processes this container cannot see"
        )
        out.append(
            finding(
                "gpu-memory-held",
                "gpu-oom",
                Severity.WARNING,
                f"GPU {g.get('index', '?')} ({g.get('name')}) has {used} of {total} MiB in use by {who}",
                LAYER,
                evidence=[f"gpu {g.get('index')}: used {used} MiB / total {total} MiB"]
                + [f"pid {p['pid']}: {p.get('used_mib')} MiB" for p in procs],
                fix=[
                    "nvidia-smi  (find and stop the process holding the memory, or pick another GPU with CUDA_VISIBLE_DEVICES)"
                ],
            )
        )
    return out


@check("preallocation-with-shared-gpu", "gpu-oom", LAYER, requires=("gpu.devices",))
def preallocation_with_shared_gpu(snap: Snapshot) -> list[Finding]:
    """TensorFlow / JAX grab most GPU memory at start while other processes use the same GPU."""
    env = view.env(snap)
    shared = [g for g in view.gpus(snap) if len(g.get("processes") or []) >= 1]
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
                evidence=[
                    f"gpu {g.get('index')}: {len(g.get('processes') or [])} process(es)" for g in shared
                ],
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
