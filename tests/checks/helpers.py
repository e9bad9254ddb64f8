"""Helpers shared by the check tests: a CUDA torch's facts, a check's outcome and finding ids, common facts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cudoctor.model import Snapshot
from tests.conftest import finding_ids, run_check

A100_CU124 = {"gpu": "A100", "driver": "550.54.15", "framework_version": "torch 2.5.1+cu124"}
TORCH_LIBS_OK = {
    "libcudart.so.12": {
        "path": "/site/nvidia/cuda_runtime/lib/libcudart.so.12",
        "via": "rpath",
        "candidates": [["/site/nvidia/cuda_runtime/lib/libcudart.so.12", "rpath"]],
    }
}


def torch_cuda(**over: Any) -> dict[str, Any]:
    info = {
        "version": "2.5.1+cu124",
        "cuda": "12.4",
        "build": "cuda",
        "cudnn": "9.1.0.70",
        "location": "/site/torch",
        "libs": TORCH_LIBS_OK,
        "missing_needed": [],
        "broken": [],
    }
    info.update(over)
    return info


def outcome(check_id: str, snap: Snapshot) -> tuple[str, list[str]]:
    r = run_check(check_id, snap)
    return r.outcome, finding_ids(r)


# ---------------------------------------------------------------- memory and health
GPU_BUSY = {
    "index": 0,
    "name": "NVIDIA A100",
    "cc": "8.0",
    "memory_total_mib": 81920,
    "memory_used_mib": 79000,
    "processes": [{"pid": 4242, "used_mib": 78000}],
}


REPORTS = Path(__file__).parents[1] / "fixtures" / "reports"


SHM_64_MIB = {"path": "/dev/shm", "size_bytes": 64 << 20, "free_bytes": 60 << 20}
