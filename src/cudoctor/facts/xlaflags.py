"""Which of the flags in XLA_FLAGS the installed XLA builds know, read from their libraries without
importing them. XLA registers each flag under its name as a NUL-terminated string in `.rodata`
(xla/debug_options_flags.cc); a name found only inside a protobuf descriptor (a field or a reserved
name of a removed flag, such as xla_gpu_graph_level) is not a flag XLA_FLAGS may set, and an
unknown one aborts the process ("Unknown flag in XLA_FLAGS: ...")."""

from __future__ import annotations

import mmap
import os
import re
import shlex
from collections.abc import Mapping, Sequence

from cudoctor.facts import elf
from cudoctor.facts.packages import find_package_dir
from cudoctor.model import Fact, absent, known, unknown

KEY = "xla.flags"
NAME = re.compile(rb"xla_[a-z0-9_]+")
# Where each framework keeps its XLA, newest layout first; the first that registers flags is read
# (xla/debug_options_flags.cc is linked into one library of each build).
LIBRARIES = {
    "jax": ("jaxlib", ("libjax_common.so", "xla_extension.so")),
    "tensorflow": (
        "tensorflow",
        ("libtensorflow_cc.so.2", "python/_pywrap_tensorflow_internal.so", "libtensorflow_framework.so.2"),
    ),
}


def tokens(value: str) -> list[str]:
    """XLA_FLAGS split as a shell would (plain whitespace when its quotes do not close)."""
    try:
        return shlex.split(value)
    except ValueError:
        return value.split()


def flag_names(value: str) -> list[str]:
    """The xla_* flag names XLA_FLAGS sets, in order ('--xla_gpu_graph_level=0' -> xla_gpu_graph_level)."""
    names = [t.lstrip("-").split("=", 1)[0] for t in tokens(value) if t.startswith("-")]
    return list(dict.fromkeys(n for n in names if n.startswith("xla_")))


def registered_flags(path: str) -> set[str]:
    """The xla_* names stored as whole C strings in the library's .rodata."""
    info = elf.read_elf(path, (".rodata",))
    section = info.sections.get(".rodata")
    if section is None:
        return set()
    start, size = section
    end, out = start + size, set()
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        pos = buf.find(b"\x00xla_", start, end)
        while pos >= 0:
            stop = buf.find(b"\x00", pos + 1, min(end, pos + 256))
            if stop > 0 and NAME.fullmatch(buf[pos + 1 : stop]):
                out.add(buf[pos + 1 : stop].decode())
            pos = buf.find(b"\x00xla_", pos + 1, end)
    return out


def collect(env: Mapping[str, str], sys_path: Sequence[str]) -> Fact:
    """xla.flags: the flags XLA_FLAGS sets, and per installed XLA build the ones it does not know."""
    value = env.get("XLA_FLAGS")
    if value is None:
        return absent(KEY, "environment", "XLA_FLAGS is not set")
    names = flag_names(value)
    readers: dict[str, dict[str, object]] = {}
    for framework, (package, files) in LIBRARIES.items():
        root = find_package_dir(sys_path, package)
        paths = [os.path.join(root, f) for f in files if root and os.path.isfile(os.path.join(root, f))]
        for path in paths:
            try:
                flags = registered_flags(path)
            except (OSError, ValueError, elf.ElfError):  # unreadable, or not ELF (macOS, Windows)
                continue
            if flags:
                unknown_names = [n for n in names if n not in flags]
                readers[framework] = {
                    "libraries": [path],
                    "flags_known": len(flags),
                    "unknown": unknown_names,
                }
                break
    if not readers:
        return unknown(KEY, "library files", "no installed XLA library could be read for its flags")
    return known(KEY, {"flags": names, "readers": readers}, ".rodata of the frameworks' XLA libraries")
