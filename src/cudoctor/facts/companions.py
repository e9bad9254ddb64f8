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
    "torchaudio": ("lib/_torchaudio*.so", "lib/libtorchaudio*.so", "_torchaudio*.so"),  # 2.11: lib/*.abi3.so
}
CUDART = re.compile(r"^libcudart(?:[.-][0-9a-f]{8})*\.so\.(\d+)")


def cuda_major(needed: Sequence[str]) -> str | None:
    """The CUDA major of the libcudart among `needed` (None: a build without CUDA)."""
    return next((m.group(1) for name in needed if (m := CUDART.match(name))), None)


def read_companion(package_dir: str, name: str) -> dict[str, Any] | None:
    """Its compiled library, the CUDA major that library needs and how that was read (None: no
    compiled library there, so nothing to say)."""
    for pattern in LIBRARIES[name]:
        found = sorted(glob.glob(os.path.join(package_dir, pattern)))
        if found:
            major = cuda_major(read_elf(found[0]).needed)
            how = f"links libcudart.so.{major}" if major else "links no libcudart (a build without CUDA)"
            return {"library": found[0], "cuda_major": major, "evidence": f"{found[0]} {how}"}
    return None


def collect(sys_path: Sequence[str], installed: Mapping[str, str]) -> Fact:
    """One entry for every companion installed with a compiled library: {name: {version, cuda_major,
    evidence, library}}."""
    key = "python.torch_companions"
    out: dict[str, Any] = {}
    for name in COMPANIONS:
        where = find_package_dir(sys_path, name) if name in installed else None
        try:
            info = read_companion(where, name) if where else None
        except ElfError as exc:
            return failed(key, "ELF DT_NEEDED", f"{name}'s compiled library cannot be read: {exc}")
        if info is not None:
            out[name] = {"version": installed[name], **info}
    if not out:
        return absent(key, "sys.path scan", "no torchvision or torchaudio with a compiled library")
    return known(key, out, "ELF DT_NEEDED of their compiled libraries (no import)")


LOCAL_TAG = re.compile(r"\+(cu(\d+)|cpu)$")


def by_tag(version: str, evidence: str) -> dict[str, Any]:
    """What a companion's version says of its build: +cu118 is CUDA 11.8, +cpu none; without a tag
    (PyPI's wheels) nothing (`build_unknown`)."""
    m = LOCAL_TAG.search(version)
    digits = (m.group(2) or "") if m else ""  # the last digit is the minor: cu118, cu92
    return {
        "version": version,
        "cuda_major": digits[:-1] or None,
        "cuda": f"{digits[:-1]}.{digits[-1]}" if digits else None,
        "evidence": evidence,
        **({} if m else {"build_unknown": True}),
    }


def from_version_tags(installed: Mapping[str, str]) -> Fact:
    """The same fact from a report that lists versions only (pip list, conda list, collect_env): a local
    tag +cu118 says CUDA 11, +cpu no CUDA; a version without one (PyPI's builds) says nothing."""
    out: dict[str, Any] = {}
    for name in COMPANIONS:
        version = installed.get(name) or ""
        if LOCAL_TAG.search(version):
            out[name] = by_tag(version, f"its version {version} carries +{version.rpartition('+')[2]}")
    if not out:
        return absent(
            "python.torch_companions", "package list", "no torchvision or torchaudio with a +cu/+cpu tag"
        )
    return known("python.torch_companions", out, "local version tags")
