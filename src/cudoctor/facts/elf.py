"""A minimal ELF reader: the dynamic section and one named section, read from an mmap.

Enough for what a loader decides (SONAME, NEEDED, RPATH, RUNPATH) and for finding the
`.nv_fatbin` section. It never executes anything (unlike `ldd`) and reads only headers.
"""

from __future__ import annotations

import dataclasses
import mmap
import os
import struct
from collections.abc import Callable
from typing import TypeVar

DT_NEEDED, DT_STRTAB, DT_SONAME, DT_RPATH, DT_RUNPATH = 1, 5, 14, 15, 29
DT_VERDEF, DT_VERDEFNUM, DT_VERNEED, DT_VERNEEDNUM = 0x6FFFFFFC, 0x6FFFFFFD, 0x6FFFFFFE, 0x6FFFFFFF
VER_FLG_BASE = 1
PT_LOAD, PT_DYNAMIC = 1, 2
T = TypeVar("T")


class ElfError(Exception):
    """The file is not an ELF shared object we can read."""


@dataclasses.dataclass(frozen=True)
class ElfInfo:
    path: str
    machine: int
    elf_class: int  # 1 = 32-bit, 2 = 64-bit
    soname: str | None
    needed: tuple[str, ...]
    rpath: tuple[str, ...]
    runpath: tuple[str, ...]
    sections: dict[str, tuple[int, int]]  # name -> (file offset, size) for the few we ask for


@dataclasses.dataclass(frozen=True)
class SymbolVersions:
    """GNU symbol versioning: what a file needs from each library, and what it defines."""

    needs: dict[str, tuple[str, ...]]  # library file name -> version names ('GLIBCXX_3.4.30')
    defines: tuple[str, ...]


def _vaddr_to_offset(loads: list[tuple[int, int, int]], vaddr: int) -> int | None:
    for p_vaddr, p_offset, p_filesz in loads:
        if p_vaddr <= vaddr < p_vaddr + p_filesz:
            return vaddr - p_vaddr + p_offset
    return None


def _cstr(buf: mmap.mmap, off: int) -> str:
    end = buf.find(b"\0", off)
    return buf[off : end if end >= 0 else off].decode("utf-8", "replace")


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(p for p in (value or "").split(":") if p)


def read_elf(path: str, want_sections: tuple[str, ...] = ()) -> ElfInfo:
    """Read the dynamic entries (and offsets of `want_sections`) of an ELF file."""
    return _mapped(path, lambda buf: _parse(path, buf, want_sections))


def _mapped(path: str, parse: Callable[[mmap.mmap], T]) -> T:
    """Run `parse` on the file mapped read-only; every failure becomes an ElfError."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < 64:
                raise ElfError(f"{path}: too small to be ELF ({size} bytes)")
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
                if buf[:4] != b"\x7fELF":
                    raise ElfError(f"{path}: not an ELF file")
                return parse(buf)
    except OSError as exc:
        raise ElfError(f"{path}: {exc.strerror or exc}") from exc
    except (struct.error, IndexError, ValueError) as exc:
        raise ElfError(f"{path}: malformed ELF ({exc})") from exc


def _header(path: str, buf: mmap.mmap) -> tuple[tuple[int, ...], str, str, str]:
    """The ELF header's fields and the struct formats of program, dynamic and section entries."""
    elf_class, data = buf[4], buf[5]
    if data != 1:
        raise ElfError(f"{path}: big-endian ELF is not supported")
    if elf_class == 2:
        return struct.unpack_from("<HHIQQQIHHHHHH", buf, 16), "<IIQQQQQQ", "<qQ", "<IIQQQQIIQQ"
    if elf_class == 1:
        return struct.unpack_from("<HHIIIIIHHHHHH", buf, 16), "<IIIIIIII", "<iI", "<IIIIIIIIII"
    raise ElfError(f"{path}: unknown ELF class {elf_class}")


def _parse(path: str, buf: mmap.mmap, want_sections: tuple[str, ...]) -> ElfInfo:
    elf_class = buf[4]
    hdr, ph_fmt, dyn_fmt, sh_fmt = _header(path, buf)
    machine, phoff, shoff = hdr[1], hdr[4], hdr[5]
    phentsize, phnum, shentsize, shnum, shstrndx = hdr[8], hdr[9], hdr[10], hdr[11], hdr[12]
    loads, dyn = _program_headers(buf, elf_class, ph_fmt, phoff, phentsize, phnum)
    soname, needed, rpath, runpath = _dynamic(buf, dyn_fmt, loads, dyn)
    sections = _sections(buf, elf_class, sh_fmt, shoff, shentsize, shnum, shstrndx, want_sections)
    return ElfInfo(path, machine, elf_class, soname, tuple(needed), _split(rpath), _split(runpath), sections)


def read_symbol_versions(path: str) -> SymbolVersions:
    """The version needs (DT_VERNEED) and definitions (DT_VERDEF) of an ELF file."""
    return _mapped(path, lambda buf: _symbol_versions(path, buf))


def _symbol_versions(path: str, buf: mmap.mmap) -> SymbolVersions:
    hdr, ph_fmt, dyn_fmt, _ = _header(path, buf)
    loads, dyn = _program_headers(buf, buf[4], ph_fmt, hdr[4], hdr[8], hdr[9])
    entries = dict(_dynamic_entries(buf, dyn_fmt, dyn))
    strtab = _vaddr_to_offset(loads, entries.get(DT_STRTAB, -1))
    if strtab is None:
        return SymbolVersions({}, ())
    need_at = _vaddr_to_offset(loads, entries.get(DT_VERNEED, -1))
    def_at = _vaddr_to_offset(loads, entries.get(DT_VERDEF, -1))
    needs = _verneed(buf, strtab, need_at, entries.get(DT_VERNEEDNUM, 0)) if need_at is not None else {}
    defines = _verdef(buf, strtab, def_at, entries.get(DT_VERDEFNUM, 0)) if def_at is not None else ()
    return SymbolVersions(needs, defines)


def _verneed(buf: mmap.mmap, strtab: int, off: int, count: int) -> dict[str, tuple[str, ...]]:
    """Elf_Verneed entries (one per library) and their Elf_Vernaux version names."""
    needs: dict[str, tuple[str, ...]] = {}
    for _ in range(count):
        _, n_aux, file_name, aux, next_off = struct.unpack_from("<HHIII", buf, off)
        names, aux_off = [], off + aux
        for _ in range(n_aux):
            _, _, _, name, aux_next = struct.unpack_from("<IHHII", buf, aux_off)
            names.append(_cstr(buf, strtab + name))
            aux_off += aux_next
        needs[_cstr(buf, strtab + file_name)] = tuple(names)
        if not next_off:
            break
        off += next_off
    return needs


def _verdef(buf: mmap.mmap, strtab: int, off: int, count: int) -> tuple[str, ...]:
    """Elf_Verdef entries: each one's own name (its first Elf_Verdaux), the file's base name left out."""
    defines: list[str] = []
    for _ in range(count):
        _, flags, _, _, _, aux, next_off = struct.unpack_from("<HHHHIII", buf, off)
        if not flags & VER_FLG_BASE:
            defines.append(_cstr(buf, strtab + struct.unpack_from("<I", buf, off + aux)[0]))
        if not next_off:
            break
        off += next_off
    return tuple(defines)


def _program_headers(
    buf: mmap.mmap, elf_class: int, fmt: str, phoff: int, phentsize: int, phnum: int
) -> tuple[list[tuple[int, int, int]], tuple[int, int] | None]:
    loads: list[tuple[int, int, int]] = []
    dyn: tuple[int, int] | None = None
    for i in range(phnum):
        ph = struct.unpack_from(fmt, buf, phoff + i * phentsize)
        if elf_class == 2:
            p_type, p_offset, p_vaddr, p_filesz = ph[0], ph[2], ph[3], ph[5]
        else:
            p_type, p_offset, p_vaddr, p_filesz = ph[0], ph[1], ph[2], ph[4]
        if p_type == PT_LOAD:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == PT_DYNAMIC:
            dyn = (p_offset, p_filesz)
    return loads, dyn


def _dynamic_entries(buf: mmap.mmap, fmt: str, dyn: tuple[int, int] | None) -> list[tuple[int, int]]:
    entries: list[tuple[int, int]] = []
    if dyn is None:
        return entries
    step = struct.calcsize(fmt)
    for off in range(dyn[0], dyn[0] + dyn[1], step):
        tag, val = struct.unpack_from(fmt, buf, off)
        if tag == 0:
            break
        entries.append((tag, val))
    return entries


def _dynamic(
    buf: mmap.mmap, fmt: str, loads: list[tuple[int, int, int]], dyn: tuple[int, int] | None
) -> tuple[str | None, list[str], str | None, str | None]:
    entries = _dynamic_entries(buf, fmt, dyn)
    if not entries:
        return None, [], None, None
    strtab_vaddr = next((v for t, v in entries if t == DT_STRTAB), None)
    strtab = _vaddr_to_offset(loads, strtab_vaddr) if strtab_vaddr is not None else None
    if strtab is None:
        return None, [], None, None
    soname = rpath = runpath = None
    needed: list[str] = []
    for tag, val in entries:
        if tag == DT_NEEDED:
            needed.append(_cstr(buf, strtab + val))
        elif tag == DT_SONAME:
            soname = _cstr(buf, strtab + val)
        elif tag == DT_RPATH:
            rpath = _cstr(buf, strtab + val)
        elif tag == DT_RUNPATH:
            runpath = _cstr(buf, strtab + val)
    return soname, needed, rpath, runpath


def _sections(
    buf: mmap.mmap,
    elf_class: int,
    fmt: str,
    shoff: int,
    shentsize: int,
    shnum: int,
    shstrndx: int,
    want: tuple[str, ...],
) -> dict[str, tuple[int, int]]:
    if not want or shoff == 0 or shnum == 0 or shstrndx >= shnum:
        return {}
    headers = [struct.unpack_from(fmt, buf, shoff + i * shentsize) for i in range(shnum)]
    # fields: name, type, flags, addr, offset, size, ... (same order in both classes)
    names_off = headers[shstrndx][4]
    found: dict[str, tuple[int, int]] = {}
    for sh in headers:
        name = _cstr(buf, names_off + sh[0])
        if name in want:
            found[name] = (sh[4], sh[5])
    return found
