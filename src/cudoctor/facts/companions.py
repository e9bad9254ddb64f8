"""Packages compiled against torch (torchvision, torchaudio): the CUDA each was built for, read from the
libcudart its compiled library names in DT_NEEDED, without importing it.

torchvision checks the same thing at import ("compiled with different CUDA major versions") by asking
its own library; the soname's major is what that library was linked against. A CPU build names no
libcudart; auditwheel renames a bundled copy (libcudart.3eda8113.so.13, older ones
libcudart-1a2b3c4d.so.11.0) and keeps the major.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from cudoctor.facts.elf import ElfError, read_elf
from cudoctor.facts.packages import find_package_dir
from cudoctor.model import Fact, absent, failed, known

COMPANIONS = ("torchvision", "torchaudio")
# where each keeps the library that holds its compiled operators (newest layouts first)
LIBRARIES = {
    "torchvision": ("_C_stable.so", "_C.so", "_C.*.so"),
    "torchaudio": ("lib/_torchaudio.so", "lib/libtorchaudio.so", "_torchaudio*.so", "lib/libtorchaudio*.so"),
}
CUDART = re.compile(r"^libcudart(?:[.-][0-9a-f]{8})*\.so\.(\d+)")


def cuda_major(needed: Sequence[str]) -> str | None:
    """The CUDA major of the libcudart among `needed` (None: a build without CUDA)."""
    return next((m.group(1) for name in needed if (m := CUDART.match(name))), None)


def read_companion(package_dir: str, name: str) -> dict[str, Any]:
    """Its compiled library and the CUDA major that library needs; library None when none is there."""
    for pattern in LIBRARIES[name]:
        found = sorted(glob.glob(os.path.join(package_dir, pattern)))
        if found:
            return {"library": found[0], "cuda_major": cuda_major(read_elf(found[0]).needed)}
    return {"library": None, "cuda_major": None}


def collect(sys_path: Sequence[str], installed: Mapping[str, str]) -> Fact:
    """One fact for every companion installed: {name: {version, library, cuda_major}}."""
    key = "python.torch_companions"
    out: dict[str, Any] = {}
    for name in COMPANIONS:
        where = find_package_dir(sys_path, name) if name in installed else None
        if where is None:
            continue
        try:
            out[name] = {"version": installed[name], **read_companion(where, name)}
        except ElfError as exc:
            return failed(key, "ELF DT_NEEDED", f"{name}'s compiled library cannot be read: {exc}")
    if not out:
        return absent(key, "sys.path scan", "neither torchvision nor torchaudio is installed")
    return known(key, out, "ELF DT_NEEDED of their compiled libraries (no import)")
