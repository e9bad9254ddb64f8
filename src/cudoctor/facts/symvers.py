"""Symbol-version contracts between a framework and the system runtime libraries it links:
libstdc++ (GLIBCXX_*, CXXABI_*) and glibc (GLIBC_*).

A framework built with a newer GCC or on a newer distribution than the machine's fails at
import with "version `GLIBCXX_3.4.30' not found" or "version `GLIBC_2.28' not found". Read
from ELF version sections (DT_VERNEED, DT_VERDEF), so it is known before anything is imported.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import sys
from collections.abc import Iterable
from typing import Any

from cudoctor.facts.elf import ElfError, SymbolVersions, read_elf, read_symbol_versions
from cudoctor.facts.loader import Resolution, expand_origin

CXX_LIB = "libstdc++.so.6"
# versioned runtime library -> the version families it defines; only libstdc++ can come in
# several copies (conda envs, toolkits), glibc is the system's one
RUNTIME_LIBS = {CXX_LIB: ("GLIBCXX", "CXXABI"), "libc.so.6": ("GLIBC",), "libm.so.6": ("GLIBC",)}
VERSION = re.compile(r"^(?P<family>[A-Z]+)_(?P<number>[\d.]+)$")


def version_key(name: str) -> tuple[str, tuple[int, ...]]:
    """'GLIBCXX_3.4.30' -> ('GLIBCXX', (3, 4, 30)), for sorting within a family."""
    m = VERSION.match(name)
    if not m:
        return (name, ())
    return (m["family"], tuple(int(p) for p in m["number"].split(".") if p.isdigit()))


def symbol_versions(path: str) -> SymbolVersions:
    """read_symbol_versions, remembered per file (path, size, mtime): every framework links the
    same libc and libstdc++, and each object is asked about several libraries."""
    st = os.stat(path)
    return _cached_versions(path, st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=512)
def _cached_versions(path: str, size: int, mtime_ns: int) -> SymbolVersions:
    return read_symbol_versions(path)


def needs_of(objects: Iterable[str], lib: str) -> dict[str, str]:
    """Every symbol version the objects need from `lib` -> the first object that needs it."""
    needed_by: dict[str, str] = {}
    for path in objects:
        try:
            versions = symbol_versions(path)
        except (ElfError, OSError):
            continue
        for name in versions.needs.get(lib, ()):
            needed_by.setdefault(name, path)
    return needed_by


def newest(names: Iterable[str], family: str) -> str | None:
    same = [n for n in names if version_key(n)[0] == family]
    return max(same, key=version_key) if same else None


def describe_copy(path: str, via: str, needs: Iterable[str], family: str) -> dict[str, Any]:
    """One copy of the library on the search path: the newest version it defines, what it lacks."""
    try:
        defines = set(symbol_versions(path).defines)
    except (ElfError, OSError) as exc:
        return {"path": path, "via": via, "error": str(exc), "missing": [], "newest": None}
    missing = sorted(set(needs) - defines, key=version_key)
    return {"path": path, "via": via, "missing": missing, "newest": newest(defines, family)}


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


def unlinked_copies(dirs: Iterable[str], lib: str) -> list[str]:
    """lib.N files (libstdc++.so.6.0.34) in a directory that has no `lib` link to them."""
    out = []
    for d in dict.fromkeys(dirs):
        if os.path.lexists(os.path.join(d, lib)):
            continue
        out += sorted(glob.glob(os.path.join(glob.escape(d), lib + ".*")))
    return out


def runtime_versions(
    objects: Iterable[str],
    resolution: Resolution | None,
    lib: str,
    extra_dirs: Iterable[str] = (),
    interpreter: str | None = None,
) -> dict[str, Any] | None:
    """What the framework needs from `lib` and what each copy the loader could pick offers.

    `copies` lists the loader's candidates in its order (the first one wins). For libstdc++,
    copies in the interpreter's own library path follow (loaded first when any earlier module
    needs libstdc++), and `unlinked` lists copies the loader passes by for want of a link.
    """
    objects = list(objects)
    needed_by = needs_of(objects, lib)
    if not needed_by or resolution is None:
        return None
    families = RUNTIME_LIBS[lib]
    needs = sorted(needed_by, key=version_key)
    copies = [describe_copy(path, via, needs, families[0]) for path, via in resolution.candidates]
    dirs: tuple[str, ...] = ()
    if lib == CXX_LIB:
        seen = {os.path.realpath(c["path"]) for c in copies}
        dirs = interpreter_dirs(interpreter)
        for d in dirs:
            path = os.path.join(d, lib)
            if os.path.exists(path) and os.path.realpath(path) not in seen:
                copies.append(describe_copy(path, "interpreter rpath", needs, families[0]))
                seen.add(os.path.realpath(path))
    newest_needs = {f: newest(needs, f) for f in families}
    return {
        "newest_needed": {f: n for f, n in newest_needs.items() if n},
        "needed_by": {n: needed_by[n] for n in newest_needs.values() if n},
        "copies": copies,
        "unlinked": unlinked_copies([*dirs, *extra_dirs], lib) if lib == CXX_LIB else [],
    }


def all_runtime_versions(
    objects: Iterable[str],
    resolved: dict[str, Resolution],
    extra_dirs: Iterable[str],
    interpreter: str | None = None,
) -> dict[str, Any]:
    """runtime_versions for each versioned runtime library the objects link (in a process of `interpreter`)."""
    objects, extra_dirs = list(objects), list(extra_dirs)
    out = {}
    for lib in RUNTIME_LIBS:
        found = runtime_versions(objects, resolved.get(lib), lib, extra_dirs, interpreter)
        if found:
            out[lib] = found
    return out
