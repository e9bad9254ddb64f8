"""CUDA_VISIBLE_DEVICES read as CUDA reads it, held to torch's own parser (which mirrors the
driver: pytorch/pytorch#84879), and the findings no-gpu-visible makes of it."""

from __future__ import annotations

from typing import Any

import pytest

from cudoctor.checks import visible_devices
from tests.conftest import run_check, stated

FOUR = [{"index": i, "name": "NVIDIA A100", "uuid": f"GPU-{i}aaa{i}-bbbb", "cc": "8.0"} for i in range(4)]
TORCH = {"version": "2.5.1+cu124", "cuda": "12.4", "build": "cuda"}


@pytest.mark.parametrize(
    "value",
    [
        "0",
        "0,1",
        "2,1",
        "0,2,-1,1",
        "-1",
        "",
        "none",
        "NoDevFiles",
        "1gpu2,2ampere",
        "0,0",
        " 1, 3",
        "+1",
        "1,x,2",
    ],
)
def test_indices_are_read_as_torch_reads_them(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    torch_cuda = pytest.importorskip("torch.cuda")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    assert [int(g) for g in visible_devices.read(value).gpus] == torch_cuda._parse_visible_devices()


@pytest.mark.parametrize("value", ["GPU-0aaa0,GPU-2aaa2", "GPU-1aaa1,0", "MIG-abc,MIG-abc", "GPU-3aaa3"])
def test_uuid_lists_are_read_as_torch_reads_them(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    torch_cuda = pytest.importorskip("torch.cuda")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    assert list(visible_devices.read(value).gpus) == torch_cuda._parse_visible_devices()


def test_an_index_past_the_last_gpu_stops_the_list() -> None:
    seen = visible_devices.read("0,5,1", gpu_count=4)
    assert (seen.gpus, seen.stopped_at, seen.no_such_gpu) == (("0",), "5", True)
    assert visible_devices.read("0,1", gpu_count=4).stopped_at is None


def _finding(value: str, gpus: list[dict[str, Any]] | None = FOUR) -> tuple[str, str] | None:
    extra: dict[str, Any] = {"framework__torch": TORCH, "env": {"CUDA_VISIBLE_DEVICES": value}}
    if gpus is not None:
        extra["gpu__devices"] = gpus
    found = run_check("no-gpu-visible", stated({}, **extra)).findings
    return (found[0].id, found[0].title) if found else None


def test_no_gpu_visible_reads_the_whole_list() -> None:
    ident, title = _finding("0,2,-1,1") or ("", "")
    assert ident == "cuda-visible-devices-hides-gpus" and "leaves only GPU 0, 2 visible" in title
    ident, title = _finding("5") or ("", "")
    assert (
        ident == "cuda-visible-devices-bad-index" and "there is no GPU 5 on a machine with 4 GPU(s)" in title
    )
    ident, title = _finding("1,1") or ("", "")
    assert ident == "cuda-visible-devices-hides-gpus" and "GPU 1 is listed twice" in title
    ident, title = _finding("GPU-9") or ("", "")
    assert ident == "cuda-visible-devices-bad-index" and "no GPU here has a UUID starting with GPU-9" in title
    assert _finding("GPU-2aaa") is None  # a UUID prefix that names a GPU here
    assert _finding("3,0,1") is None


def test_without_the_gpu_list_only_what_the_value_itself_says() -> None:
    assert _finding("7", gpus=None) is None  # cannot tell whether GPU 7 exists
    ident, _ = _finding("-1", gpus=None) or ("", "")
    assert ident == "cuda-visible-devices-hides-gpus"
