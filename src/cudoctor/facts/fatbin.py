"""GPU architectures compiled into a library, read from its `.nv_fatbin` section headers.

Walks the fatbin container and entry headers on an mmap; payloads are never read or
decompressed, so this costs about a millisecond even for a 100 MB section.
Layout: see ../shared/TECH.md section 1.6 (verified against nvcc 13.0 output).
"""

from __future__ import annotations

import mmap
import struct

from cudoctor.facts.elf import ElfError, read_elf

FATBIN_MAGIC = 0xBA55ED50
KIND_PTX = 1
FLAG_ARCH_SPECIFIC = 0x100000  # sm_90a
FLAG_FAMILY = 0x200000  # sm_100f


def _entry_name(kind: int, arch: int, flags: int) -> str:
    suffix = "a" if flags & FLAG_ARCH_SPECIFIC else "f" if flags & FLAG_FAMILY else ""
    prefix = "compute_" if kind == KIND_PTX else "sm_"
    return f"{prefix}{arch}{suffix}"


def archs_in_section(buf: mmap.mmap | bytes, start: int, size: int) -> set[str]:
    """Arch names ('sm_80', 'compute_90', 'sm_90a') of every entry in a fatbin section."""
    found: set[str] = set()
    pos, end = start, start + size
    while pos + 16 <= end:
        magic, _version, header_size, body_size = struct.unpack_from("<IHHQ", buf, pos)
        if magic != FATBIN_MAGIC:
            pos += 8  # containers are 8-byte aligned; skip padding
            continue
        entry = pos + header_size
        container_end = min(entry + body_size, end)
        while entry + 64 <= container_end:
            kind, _, ehdr_size, payload = struct.unpack_from("<HHIQ", buf, entry)
            arch = struct.unpack_from("<I", buf, entry + 28)[0]
            flags = struct.unpack_from("<Q", buf, entry + 40)[0]
            if ehdr_size < 64 or kind not in (1, 2, 0x10):
                break
            found.add(_entry_name(kind, arch, flags))
            entry += ehdr_size + payload
        pos = container_end
    return found


def fatbin_archs(path: str) -> set[str] | None:
    """Archs in `path`'s .nv_fatbin; empty set when it has none; None when unreadable."""
    try:
        info = read_elf(path, want_sections=(".nv_fatbin",))
    except ElfError:
        return None
    section = info.sections.get(".nv_fatbin")
    if section is None:
        return set()
    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            return archs_in_section(buf, section[0], section[1])
    except (OSError, ValueError, struct.error):
        return None


def sm_list(archs: set[str]) -> list[str]:
    """Sorted by number, SASS before PTX: ['sm_75', 'sm_80', 'compute_90']."""

    def key(a: str) -> tuple[int, int, str]:
        digits = "".join(ch for ch in a.split("_", 1)[1] if ch.isdigit())
        return (int(digits or 0), a.startswith("compute_"), a)

    return sorted(archs, key=key)
