"""The driver's user-space libraries as the loader finds them: libcuda and its companions.

libcuda opens some companions itself, by name, when it first needs them (the PTX JIT
compiler), so an install can carry libcuda without them and work until that moment. And a stale
libcuda earlier on the search path is another driver than the kernel module. Nothing is loaded
here: names are resolved with the loader's rules (loader.Loader) and driver versions are read
from the real file names (libcuda.so.580.95.05). The table of names is knowledge/driver_libs.toml.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from typing import Any

from cudoctor import knowledge
from cudoctor.facts import loader
from cudoctor.facts.elf import ElfError, ElfInfo, read_elf
from cudoctor.model import Fact, absent, known, unknown

# A driver build's version as its libraries carry it: 470.57.02, 535.104.05, 580.95.05, 32.7.1 (L4T).
_VERSION = re.compile(r"\.so\.(\d{2,3}\.\d+(?:\.\d+)?)$")


def driver_version_of(path: str) -> str | None:
    """The driver version in a library's real file name, None where it carries none (WSL's .so.1.1)."""
    m = _VERSION.search(os.path.basename(os.path.realpath(path)))
    return m.group(1) if m else None


def _is_compat(path: str) -> bool:
    """libcuda from a CUDA forward-compatibility package (/usr/local/cuda-X/compat, cuda-compat)."""
    return any(part == "compat" or part.startswith("cuda-compat") for part in path.split(os.sep))


def _entry(res: loader.Resolution) -> dict[str, Any]:
    path = res.path
    return {
        "path": path,
        "real": os.path.realpath(path) if path else None,
        "version": driver_version_of(path) if path else None,
        "via": res.via,
        "candidates": [p for p, _ in res.candidates],
    }


def _installed_beside(libcuda_real: str, row: Mapping[str, Any], version: str | None) -> str | None:
    """The companion's file of libcuda's driver build in libcuda's directory, where drivers install
    it: <stem>.so.<libcuda's version>, or the row's `file_name` where that carries no version."""
    name = row.get("file_name") or (f"{row['soname'].split('.so')[0]}.so.{version}" if version else None)
    if name is None:
        return None
    path = os.path.join(os.path.dirname(libcuda_real), name)
    return path if os.path.isfile(path) else None


def resolve_driver_libs(ld: loader.Loader, requester: ElfInfo) -> dict[str, Any] | None:
    """soname -> what the loader finds, for every row of driver_libs.toml; None without libcuda."""
    rows = knowledge.table("driver_libs")["library"]
    cuda = ld.resolve("libcuda.so.1", requester)
    if cuda.path is None:
        return None
    cuda_entry = _entry(cuda)
    out: dict[str, Any] = {"libcuda.so.1": {**cuda_entry, "compat": _is_compat(cuda_entry["real"])}}
    try:
        cuda_elf = read_elf(cuda.path)  # its RUNPATH is searched when it opens a companion (Nix)
    except ElfError:
        cuda_elf = requester
    version = out["libcuda.so.1"]["version"]
    for row in rows:
        name = row["soname"]
        if name == "libcuda.so.1":
            continue
        entry = _entry(ld.resolve(name, cuda_elf if row["needed_by_libcuda"] else requester))
        entry["beside_libcuda"] = _installed_beside(out["libcuda.so.1"]["real"], row, version)
        out[name] = entry
    return out


def _python_elf(executable: str | None = None) -> ElfInfo | None:
    try:
        return read_elf(os.path.realpath(executable or sys.executable))
    except (ElfError, OSError):
        return None


def collect(
    env: Mapping[str, str], ldcache: dict[str, list[str]], executable: str | None = None
) -> list[Fact]:
    """driver.libraries, and driver.userspace_version from libcuda's file name (not for cuda-compat),
    as the interpreter `executable` (default: cudoctor's own) would load them."""
    requester = _python_elf(executable)
    if requester is None:
        why = f"{executable or sys.executable} is not an ELF file (not Linux?)"
        return [unknown("driver.libraries", "loader", why)]
    libs = resolve_driver_libs(loader.for_process(env, ldcache), requester)
    if libs is None:
        return [absent("driver.libraries", "loader", "libcuda.so.1 is on no search path")]
    facts = [known("driver.libraries", libs, "loader: LD_LIBRARY_PATH, ld.so cache, default dirs")]
    cuda = libs["libcuda.so.1"]
    if cuda["version"] and not cuda["compat"]:
        facts.append(known("driver.userspace_version", cuda["version"], f"file:{cuda['real']}"))
    return facts
