"""Which libstdc++ a framework would get, and whether it defines the symbol versions the
framework's libraries need (GLIBCXX_3.4.30, CXXABI_1.3.13 ...).

A framework built with a newer GCC than the libstdc++ the loader finds fails at import with
"version `GLIBCXX_3.4.30' not found". Read from ELF version sections (DT_VERNEED, DT_VERDEF),
so it is known before anything is imported.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import sys
from collections.abc import Iterable
from typing import Any

from cudoctor.facts.elf import ElfError, read_elf, read_symbol_versions
from cudoctor.facts.loader import Resolution, expand_origin

CXX_LIB = "libstdc++.so.6"
VERSION = re.compile(r"^(?P<family>[A-Z]+)_(?P<number>[\d.]+)$")


def version_key(name: str) -> tuple[str, tuple[int, ...]]:
    """'GLIBCXX_3.4.30' -> ('GLIBCXX', (3, 4, 30)), for sorting within a family."""
    m = VERSION.match(name)
    if not m:
        return (name, ())
    return (m["family"], tuple(int(p) for p in m["number"].split(".") if p.isdigit()))


def needs_of(objects: Iterable[str]) -> dict[str, str]:
    """Every libstdc++ symbol version the objects need -> the first object that needs it."""
    needed_by: dict[str, str] = {}
    for path in objects:
        try:
            versions = read_symbol_versions(path)
        except ElfError:
            continue
        for name in versions.needs.get(CXX_LIB, ()):
            needed_by.setdefault(name, path)
    return needed_by


def newest(names: Iterable[str], family: str = "GLIBCXX") -> str | None:
    same = [n for n in names if version_key(n)[0] == family]
    return max(same, key=version_key) if same else None


def describe_copy(path: str, via: str, needs: Iterable[str]) -> dict[str, Any]:
    """One libstdc++ on the search path: the newest GLIBCXX it defines and what it lacks."""
    try:
        defines = set(read_symbol_versions(path).defines)
    except ElfError as exc:
        return {"path": path, "via": via, "error": str(exc), "missing": [], "newest": None}
    missing = sorted(set(needs) - defines, key=version_key)
    return {"path": path, "via": via, "missing": missing, "newest": newest(defines)}


@functools.lru_cache(maxsize=8)
def interpreter_dirs(executable: str | None = None) -> tuple[str, ...]:
    """Directories in the Python executable's own RPATH/RUNPATH (conda: $ORIGIN/../lib);
    read once per executable, not once per framework."""
    exe = os.path.realpath(executable or sys.executable)
    try:
        info = read_elf(exe)
    except ElfError:
        return ()
    origin = os.path.dirname(exe)
    return tuple(os.path.normpath(expand_origin(d, origin)) for d in (*info.rpath, *info.runpath))


def unlinked_copies(dirs: Iterable[str]) -> list[str]:
    """libstdc++.so.6.0.N files in a directory that has no libstdc++.so.6 link to them."""
    out = []
    for d in dict.fromkeys(dirs):
        if os.path.lexists(os.path.join(d, CXX_LIB)):
            continue
        out += sorted(glob.glob(os.path.join(glob.escape(d), CXX_LIB + ".*")))
    return out


def cxx_runtime(
    objects: Iterable[str], resolution: Resolution | None, extra_dirs: Iterable[str] = ()
) -> dict[str, Any] | None:
    """What the framework needs from libstdc++ and what each copy the loader could pick offers.

    `copies` lists the loader's candidates in its order (the first one wins), then copies in
    the interpreter's own library path (loaded first when any earlier module needs libstdc++).
    """
    needed_by = needs_of(objects)
    if not needed_by or resolution is None:
        return None
    needs = sorted(needed_by, key=version_key)
    copies = [describe_copy(path, via, needs) for path, via in resolution.candidates]
    seen = {os.path.realpath(c["path"]) for c in copies}
    dirs = interpreter_dirs()
    for d in dirs:
        path = os.path.join(d, CXX_LIB)
        if os.path.exists(path) and os.path.realpath(path) not in seen:
            copies.append(describe_copy(path, "interpreter rpath", needs))
            seen.add(os.path.realpath(path))
    newest_needs = {f: newest(needs, f) for f in ("GLIBCXX", "CXXABI")}
    return {
        "newest_needed": {f: n for f, n in newest_needs.items() if n},
        "needed_by": {n: needed_by[n] for n in newest_needs.values() if n},
        "copies": copies,
        "unlinked": unlinked_copies([*dirs, *extra_dirs]),
    }
