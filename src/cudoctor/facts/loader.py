"""Which file the dynamic loader would pick for a library name, computed without loading it.

Follows glibc's order for a name without '/': DT_RPATH of the requesting object (only when it
has no DT_RUNPATH) -> LD_LIBRARY_PATH -> DT_RUNPATH -> ld.so.cache -> default directories.
Every candidate is kept, so a copy that shadows another can be reported.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
from collections.abc import Iterable, Mapping

from cudoctor import runner
from cudoctor.facts.elf import ElfError, ElfInfo, read_elf

DEFAULT_DIRS = (
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
)


@dataclasses.dataclass(frozen=True)
class Resolution:
    name: str
    path: str | None  # the winner, None when nothing matches
    via: str  # rpath | LD_LIBRARY_PATH | runpath | ldcache | default | preloaded | ""
    candidates: tuple[tuple[str, str], ...]  # every (path, via) that exists, in search order

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "via": self.via, "candidates": [list(c) for c in self.candidates]}


def parse_ldconfig(text: str) -> dict[str, list[str]]:
    """`ldconfig -p` output -> soname -> paths (x86-64 / 64-bit entries only)."""
    cache: dict[str, list[str]] = {}
    for line in text.splitlines():
        m = re.match(r"\s+(\S+)\s+\(([^)]*)\)\s+=>\s+(\S+)", line)
        if not m:
            continue
        soname, tags, path = m.groups()
        if "x86-64" in tags or "64bit" in tags or "AArch64" in tags:
            cache.setdefault(soname, []).append(path)
    return cache


def read_ldcache(timeout: float = 5.0) -> tuple[dict[str, list[str]], str]:
    """The ld.so cache as a mapping, and a note of how it was read (or why not)."""
    exe = shutil.which("ldconfig") or next(
        (p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if os.path.exists(p)), None
    )
    if exe is None:
        return {}, "ldconfig not found"
    res = runner.run([exe, "-p"], timeout=timeout)
    if not res.ok:
        return {}, f"ldconfig -p: {res.describe()}"
    return parse_ldconfig(res.stdout), f"cmd:{exe} -p"


def preloads(value: str, ldcache: dict[str, list[str]]) -> dict[str, str]:
    """LD_PRELOAD (entries split by spaces or colons) -> soname -> path. The loader loads these
    first and then satisfies any DT_NEEDED with the same SONAME from them. A bare name is looked
    up in the ld.so cache; an entry that is not there or not an ELF file is skipped, as ld.so does."""
    out: dict[str, str] = {}
    for entry in re.split(r"[\s:]+", value.strip()):
        path = entry if "/" in entry else next(iter(ldcache.get(entry, [])), "")
        if not path or not os.path.isfile(path):
            continue
        try:
            soname = read_elf(path).soname or os.path.basename(path)
        except ElfError:
            continue
        out.setdefault(soname, os.path.normpath(path))
    return out


def for_process(
    env: Mapping[str, str], ldcache: dict[str, list[str]], interpreter: str | None = None
) -> Loader:
    """The search state of a process started with `env`: its LD_LIBRARY_PATH and LD_PRELOAD, and
    the Python `interpreter` it runs (default: cudoctor's own)."""
    lib_path = tuple(p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p)
    return Loader(lib_path, ldcache, preloads(env.get("LD_PRELOAD", ""), ldcache), interpreter)


def expand_origin(entry: str, origin_dir: str) -> str:
    return entry.replace("$ORIGIN", origin_dir).replace("${ORIGIN}", origin_dir)


@dataclasses.dataclass
class Loader:
    """Search state for one process: its LD_LIBRARY_PATH and the ld.so cache."""

    ld_library_path: tuple[str, ...]
    ldcache: dict[str, list[str]]
    preloaded: dict[str, str] = dataclasses.field(default_factory=dict)  # soname -> path already loaded
    interpreter: str | None = None  # the Python executable of the process (None: cudoctor's own)

    def search_order(self, requester: ElfInfo) -> list[tuple[str, str]]:
        origin = os.path.dirname(requester.path)
        dirs: list[tuple[str, str]] = []
        if not requester.runpath:
            dirs += [(expand_origin(d, origin), "rpath") for d in requester.rpath]
        dirs += [(d, "LD_LIBRARY_PATH") for d in self.ld_library_path]
        dirs += [(expand_origin(d, origin), "runpath") for d in requester.runpath]
        return dirs

    def resolve(self, name: str, requester: ElfInfo) -> Resolution:
        candidates: list[tuple[str, str]] = []
        if name in self.preloaded:
            candidates.append((self.preloaded[name], "preloaded"))
        for directory, via in self.search_order(requester):
            path = os.path.join(directory, name)
            if _is_compatible(path, requester):
                candidates.append((os.path.normpath(path), via))
        for path in self.ldcache.get(name, []):
            candidates.append((path, "ldcache"))
        for directory in DEFAULT_DIRS:
            path = os.path.join(directory, name)
            if os.path.exists(path):
                candidates.append((path, "default"))
        unique = _dedupe(candidates)
        if not unique:
            return Resolution(name, None, "", ())
        return Resolution(name, unique[0][0], unique[0][1], tuple(unique))


def _dedupe(candidates: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for path, via in candidates:
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            out.append((path, via))
    return out


def _is_compatible(path: str, requester: ElfInfo) -> bool:
    if not os.path.isfile(path):
        return False
    try:
        info = read_elf(path)
    except ElfError:
        return False
    return info.elf_class == requester.elf_class and info.machine == requester.machine


def resolve_needed(path: str, loader: Loader, names: Iterable[str] | None = None) -> dict[str, Resolution]:
    """Resolve every DT_NEEDED entry of `path` (or just `names`) as the loader would."""
    info = read_elf(path)
    wanted = list(names) if names is not None else list(info.needed)
    return {name: loader.resolve(name, info) for name in wanted}


@dataclasses.dataclass
class Closure:
    """What a set of libraries pulls in: every name resolved, and what could not be."""

    resolved: dict[str, Resolution] = dataclasses.field(default_factory=dict)
    missing: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (name, needed by)
    unreadable: list[str] = dataclasses.field(default_factory=list)
    visited: list[str] = dataclasses.field(default_factory=list)  # files read, in order


def needed_closure(
    starts: Iterable[str], loader: Loader, follow_under: tuple[str, ...], limit: int = 80
) -> Closure:
    """Resolve NEEDED entries transitively, descending only into files under `follow_under`.

    System libraries are resolved but not descended into: their dependencies are the
    distribution's business, and walking them would cost time for nothing.
    """
    out = Closure()
    queue = list(starts)
    visited: set[str] = set()
    while queue and len(visited) < limit:
        path = queue.pop(0)
        real = os.path.realpath(path)
        if real in visited:
            continue
        visited.add(real)
        out.visited.append(path)
        try:
            info = read_elf(path)
        except ElfError as exc:
            out.unreadable.append(str(exc))
            continue
        for name in info.needed:
            if name in out.resolved:
                continue
            res = loader.resolve(name, info)
            out.resolved[name] = res
            if res.path is None:
                out.missing.append((name, path))
            elif res.path.startswith(follow_under):
                queue.append(res.path)
    return out
