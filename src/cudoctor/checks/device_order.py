"""GPU numbers that differ between nvidia-smi and CUDA: nvidia-smi (and NVML) count GPUs in PCI bus
order, CUDA by default fastest first (CUDA_DEVICE_ORDER=FASTEST_FIRST). On a machine with two or
more GPU models, CUDA_VISIBLE_DEVICES=1 chosen from nvidia-smi can select another GPU: a busy one
(out of memory), or the small one."""

from __future__ import annotations

import re

from cudoctor.checks import FRAMEWORK_FACTS, check, finding, view
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "GPU & driver"
SOURCE = (
    "CUDA Programming Guide, environment variables: CUDA_DEVICE_ORDER FASTEST_FIRST (default) or "
    "PCI_BUS_ID; NVIDIA/DIGITS#1358 (maintainer: nvidia-smi lists GPUs in PCI order, CUDA best first), "
    "nanoporetech/bonito#120, gpustack/gpustack#1633 and #6041"
)


@check(
    "cuda-device-order",
    "no-gpu-visible",
    LAYER,
    requires=("env", "gpu.devices"),
    requires_any=FRAMEWORK_FACTS,
)
def cuda_device_order(snap: Snapshot) -> list[Finding]:
    """On a machine with different GPU models, CUDA numbers the GPUs otherwise than nvidia-smi
    unless CUDA_DEVICE_ORDER=PCI_BUS_ID, so a GPU picked by its nvidia-smi number may be another."""
    if not view.cuda_frameworks(snap):
        return []
    env = view.env(snap)
    gpus = view.gpus(snap)
    models = sorted({str(g.get("name")) for g in gpus if g.get("name")})
    if len(gpus) < 2 or len(models) < 2 or env.get("CUDA_DEVICE_ORDER", "").strip().upper() == "PCI_BUS_ID":
        return []
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    by_index = cvd is not None and bool(re.search(r"(?:^|,)\s*\d", cvd))
    order = ", ".join(f"{g.get('index', i)}: {g.get('name')}" for i, g in enumerate(gpus))
    title = (
        f"This machine has {len(models)} GPU models ({', '.join(models)}) and CUDA_DEVICE_ORDER is not PCI_BUS_ID, "
        "so CUDA numbers the GPUs fastest first while nvidia-smi numbers them by PCI bus"
    )
    title += (
        f": CUDA_VISIBLE_DEVICES={cvd!r} may select other GPUs than the ones nvidia-smi shows under those numbers"
        if by_index
        else ": a GPU chosen by its nvidia-smi number (cuda:1, CUDA_VISIBLE_DEVICES=1) may be another one"
    )
    return [
        finding(
            "cuda-device-order",
            "no-gpu-visible",
            Severity.WARNING if by_index else Severity.INFO,
            title,
            LAYER,
            evidence=[
                f"nvidia-smi order: {order}",
                f"env:CUDA_DEVICE_ORDER = {env.get('CUDA_DEVICE_ORDER')!r}",
            ]
            + ([f"env:CUDA_VISIBLE_DEVICES = {cvd!r}"] if cvd is not None else [])
            + [f"source: {SOURCE}"],
            fix=[
                "export CUDA_DEVICE_ORDER=PCI_BUS_ID  (before the program starts: CUDA then numbers GPUs as nvidia-smi does)",
                "Or pick GPUs by UUID, which both agree on: CUDA_VISIBLE_DEVICES=GPU-<uuid> (nvidia-smi -L lists them)",
            ],
            generic_fixes=False,
        )
    ]
