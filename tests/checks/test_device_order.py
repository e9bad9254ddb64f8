"""cuda-device-order: CUDA numbers GPUs fastest first, nvidia-smi by PCI bus; they differ only on a
machine with more than one GPU model, unless CUDA_DEVICE_ORDER=PCI_BUS_ID."""

from __future__ import annotations

from typing import Any

import pytest

from cudoctor.model import Severity
from tests.conftest import run_check, stated

TORCH = {"version": "2.5.1+cu124", "build": "cuda", "cuda": "12.4"}
TORCH_CPU = {"version": "2.5.1+cpu", "build": "cpu", "cuda": None}
MIXED = [
    {"index": 0, "name": "NVIDIA GeForce GTX 1080", "cc": "6.1"},
    {"index": 1, "name": "NVIDIA TITAN X (Pascal)", "cc": "6.1"},
]
SAME = [{"index": i, "name": "NVIDIA A100-SXM4-80GB", "cc": "8.0"} for i in range(4)]


def _findings(
    env: dict[str, str], gpus: list[dict[str, Any]] = MIXED, torch: dict[str, Any] = TORCH
) -> list[Any]:
    snap = stated({}, env=env, gpu__devices=gpus, framework__torch=torch)
    return list(run_check("cuda-device-order", snap).findings)


def test_mixed_gpus_with_indices_chosen_from_nvidia_smi_warn() -> None:
    [f] = _findings({"CUDA_VISIBLE_DEVICES": "1"})
    assert f.severity is Severity.WARNING and "CUDA_VISIBLE_DEVICES='1' may select other GPUs" in f.title
    assert f.fix[0].startswith("export CUDA_DEVICE_ORDER=PCI_BUS_ID")
    assert "nvidia-smi order: 0: NVIDIA GeForce GTX 1080, 1: NVIDIA TITAN X (Pascal)" in f.evidence


def test_mixed_gpus_without_a_selection_are_noted() -> None:
    [f] = _findings({})
    assert f.severity is Severity.INFO and "may be another one" in f.title
    [by_uuid] = _findings({"CUDA_VISIBLE_DEVICES": "GPU-5f3a"})
    assert by_uuid.severity is Severity.INFO  # UUIDs mean the same GPU to both


@pytest.mark.parametrize(
    ("env", "gpus", "torch"),
    [
        ({"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "1"}, MIXED, TORCH),
        ({"CUDA_VISIBLE_DEVICES": "1"}, SAME, TORCH),  # one model: both orders agree
        ({"CUDA_VISIBLE_DEVICES": "1"}, MIXED[:1], TORCH),
        ({"CUDA_VISIBLE_DEVICES": "1"}, MIXED, TORCH_CPU),  # nothing here uses CUDA
    ],
)
def test_it_stays_silent_where_the_orders_agree_or_nothing_uses_cuda(
    env: dict[str, str], gpus: list[dict[str, Any]], torch: dict[str, Any]
) -> None:
    assert _findings(env, gpus, torch) == []


def test_without_gpu_facts_it_is_unknown() -> None:
    snap = stated({}, env={"CUDA_VISIBLE_DEVICES": "1"}, framework__torch=TORCH)
    assert run_check("cuda-device-order", snap).outcome == "unknown"
