"""Which GPUs a CUDA_VISIBLE_DEVICES value leaves visible, read the way CUDA reads it.

CUDA reads the list in order and stops at the first entry that is not a GPU: '-1', a word, an
index past the last GPU ('0,2,-1,1' shows GPUs 0 and 2 only). Each entry is read like strtoul
('1gpu' is 1), and a GPU listed twice leaves no GPU at all. GPU-/MIG- UUID prefixes work the
same way. torch.cuda._parse_visible_devices mirrors these rules (pytorch/pytorch#84879); the
tests hold this module to that function.
"""

from __future__ import annotations

import dataclasses
import re

_LEADING_INT = re.compile(r"[+-]?\d+")


@dataclasses.dataclass(frozen=True)
class Visible:
    gpus: tuple[str, ...]  # the entries that count, in order ('0', '2' or 'GPU-5f3a...')
    stopped_at: str | None  # the entry CUDA stopped at, if it stopped before the end
    why: str  # why it stopped ('' when it did not)
    no_such_gpu: bool = False  # it stopped at an index or UUID this machine does not have


def read(value: str, gpu_count: int | None = None, uuids: tuple[str, ...] = ()) -> Visible:
    """The GPUs CUDA_VISIBLE_DEVICES=value leaves visible; `gpu_count` / `uuids`: the machine's."""
    entries = [e.strip() for e in value.split(",")]
    prefix = next((p for p in ("GPU-", "MIG-") if value.startswith(p)), None)
    seen: list[str] = []
    for entry in entries:
        gpu, why, no_such_gpu = _read_entry(entry, prefix, gpu_count, uuids)
        if gpu is None:
            return Visible(tuple(seen), entry, why, no_such_gpu)
        if gpu in seen:
            return Visible((), entry, f"GPU {gpu} is listed twice, which CUDA reads as no GPU at all")
        seen.append(gpu)
    return Visible(tuple(seen), None, "")


def _read_entry(
    entry: str, prefix: str | None, gpu_count: int | None, uuids: tuple[str, ...]
) -> tuple[str | None, str, bool]:
    """(the GPU it names, or None where CUDA stops; why it stops; whether for a GPU not here)."""
    if prefix:
        if not entry.startswith(prefix):
            return None, f"{entry!r} is not a {prefix} UUID like the entries before it", False
        if uuids and not any(u.startswith(entry) for u in uuids):
            return None, f"no GPU here has a UUID starting with {entry}", True
        return entry, "", False
    match = _LEADING_INT.match(entry)
    if not match or int(match.group(0)) < 0:
        return None, f"{entry!r} is not a GPU index" if entry != "-1" else "-1 means no GPU", False
    index = int(match.group(0))
    if gpu_count is not None and index >= gpu_count:
        return None, f"there is no GPU {index} on a machine with {gpu_count} GPU(s)", True
    return str(index), "", False
