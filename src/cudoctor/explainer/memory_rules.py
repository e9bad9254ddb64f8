"""Rules on the figures a GPU out-of-memory message prints: PyTorch's allocator says how much it
asked for and how much it holds reserved but unallocated; more of the second than the first is
fragmentation, which PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True fixes (recorded on an H100:
tests/fixtures/gpu/h100/fixes/torch-oom-fragmentation)."""

from __future__ import annotations

import re

from cudoctor.explainer.ranked import RankedCause, bump

SIZE = r"([\d.]+) ?(bytes|[KMGT]iB)"
ASKED = re.compile(r"(?:Tried to allocate|trying to allocate) " + SIZE)
CAPACITY = re.compile(r"total capacity of " + SIZE)
UNALLOCATED = re.compile(SIZE + r" is reserved by PyTorch but unallocated")
ALLOWED = re.compile(SIZE + r" allowed;")
XLA_POOL = re.compile(r"Failed to allocate device memory of ([\d.]+) ?([KMGT]iB)")
UNIT = {"bytes": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def _bytes(m: re.Match[str] | None) -> float | None:
    if m is None:
        return None
    try:
        return float(m.group(1)) * UNIT[m.group(2)]
    except ValueError:
        return None


def _fragmented(text: str) -> tuple[float, float] | None:
    """(asked, reserved but unallocated) where PyTorch held more of the second than the request it could not
    serve: the free memory is fragmented."""
    asked, spare = _bytes(ASKED.search(text)), _bytes(UNALLOCATED.search(text))
    return (asked, spare) if asked is not None and spare is not None and spare >= asked else None


def fragmentation_rule(ranked: dict[str, RankedCause], line: int, text: str) -> None:
    """PyTorch held more reserved-but-unallocated memory than the request it could not serve."""
    held = _fragmented(text) if "gpu-oom" in ranked else None
    if held is None:
        return
    asked, spare = held
    bump(
        ranked,
        "gpu-oom",
        0.1,
        f"line {line}: PyTorch held {spare / 2**20:.0f} MiB reserved but unallocated, more than the "
        f"{asked / 2**20:.0f} MiB it asked for: the free memory is fragmented",
        "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True  (torch >= 2.1: segments grow instead of "
        "splitting, so reserved memory can serve a larger request; set it before the process starts)",
    )


def larger_than_the_gpu_rule(
    ranked: dict[str, RankedCause], line: int, text: str, gpu_bytes: float | None
) -> None:
    """One allocation larger than the whole GPU (PyTorch prints its total capacity; else the GPU's memory
    from the facts): no setting and no other process frees that much, the tensor itself must shrink."""
    if "gpu-oom" not in ranked:
        return
    pool = _bytes(XLA_POOL.search(text))
    asked = _bytes(ASKED.search(text)) or pool
    total = _bytes(CAPACITY.search(text)) or gpu_bytes
    if asked is None or total is None or asked <= total:
        return
    if pool is not None:  # XLA reserving its pool at start: the share it was given is over 1
        bump(
            ranked,
            "gpu-oom",
            0.1,
            f"line {line}: XLA tried to reserve {asked / 2**30:.2f} GiB, more than the whole GPU ({total / 2**30:.2f} GiB)",
            f"XLA's memory pool was set larger than the GPU ({asked / total:.2f} of it): set "
            "XLA_PYTHON_CLIENT_MEM_FRACTION (TensorFlow: per_process_gpu_memory_fraction) below 1, or unset it",
        )
        return
    bump(
        ranked,
        "gpu-oom",
        0.1,
        f"line {line}: one allocation of {asked / 2**30:.2f} GiB is larger than the whole GPU ({total / 2**30:.2f} GiB)",
        f"Make that tensor smaller than the GPU ({asked / 2**30:.0f} GiB asked, {total / 2**30:.0f} GiB in all): its "
        "shape comes from the batch size, sequence length or image size, or from a wrong shape (a broadcast, a "
        "dimension read from the wrong axis); print the shapes before the failing line. Freeing memory or "
        "other processes cannot help here",
    )


def fraction_cap_rule(ranked: dict[str, RankedCause], line: int, text: str) -> None:
    """PyTorch's message says how much this process is allowed ('1.40 GiB allowed;', printed only under
    torch.cuda.set_per_process_memory_fraction): a cap well below the GPU is the limit, not the GPU
    (recorded on an H200: tests/fixtures/gpu/h200/session38/fixes/torch-memory-fraction-oom)."""
    if "gpu-oom" not in ranked:
        return
    allowed, total = _bytes(ALLOWED.search(text)), _bytes(CAPACITY.search(text))
    if allowed is None or total is None or allowed >= 0.9 * total:
        return
    if _fragmented(text):
        return  # fragmentation: the cap would have served the request (fragmentation_rule's case)
    bump(
        ranked,
        "gpu-oom",
        0.1,
        f"line {line}: this process is allowed {allowed / 2**30:.2f} GiB of the GPU's {total / 2**30:.2f} GiB",
        f"The process is capped at {allowed / 2**30:.2f} GiB ({allowed / total:.0%} of the GPU) by "
        "torch.cuda.set_per_process_memory_fraction: raise the fraction it is given, or remove the call "
        "(a launcher or library may make it for you)",
    )
