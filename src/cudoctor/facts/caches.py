"""JIT kernel caches: where Triton, TorchInductor, CuPy and DeepGEMM keep compiled kernels, and the
filesystem each directory is on (processes that share a cache on a network filesystem race)."""

from __future__ import annotations

import getpass
import os
import re
from collections.abc import Mapping
from typing import Any

from cudoctor import knowledge
from cudoctor.facts import host
from cudoctor.model import Fact, absent, known, unknown

MOUNTINFO = "/proc/self/mountinfo"
_ESCAPE = re.compile(r"\\([0-7]{3})")


def parse_mountinfo(text: str) -> list[tuple[str, str]]:
    """(mount point, filesystem type) per line of /proc/<pid>/mountinfo (proc(5)): the fifth field
    is the mount point with spaces as \\040, and the type follows the '-' that ends the optional fields."""
    mounts = []
    for line in text.splitlines():
        fields = line.split(" ")
        if "-" not in fields[6:] or len(fields) < 9:
            continue
        sep = fields.index("-", 6)
        if sep + 1 >= len(fields):
            continue
        point = _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), fields[4])
        mounts.append((point, fields[sep + 1]))
    return mounts


def _existing(path: str) -> str:
    """The path itself, or its nearest ancestor that exists (a cache not created yet lands there)."""
    path = os.path.abspath(path)
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return os.path.realpath(path)


def mount_of(path: str, mounts: list[tuple[str, str]]) -> tuple[str, str] | None:
    """The mount (point, type) holding `path`: the longest mount point that contains it; the last
    one mounted wins where two share a point."""
    real = _existing(path)
    best: tuple[str, str] | None = None
    for point, fstype in mounts:
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best[0])):
            best = (point, fstype)
    return best


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError, ImportError):
        return f"uid_{os.getuid()}" if hasattr(os, "getuid") else "unknown_user"


def cache_dir(row: dict[str, Any], env: Mapping[str, str]) -> tuple[str, str]:
    """(directory, what set it): the tool's variable when set, else its documented default."""
    if env.get(row["variable"], "").strip():
        return env[row["variable"]].strip(), row["variable"]
    home = env.get(row.get("home_variable") or "") or env.get("HOME") or os.path.expanduser("~")
    path = row["default"].format(home=home, tmp=host.temp_dir(env), user=_user())
    return path, "default"


def jit_caches(env: Mapping[str, str], mountinfo: str = MOUNTINFO) -> Fact:
    if not os.path.exists(mountinfo):
        return absent("host.jit_caches", f"file:{mountinfo}", "no Linux mount table on this system")
    try:
        with open(mountinfo, encoding="utf-8", errors="replace") as fh:
            mounts = parse_mountinfo(fh.read())
    except OSError as exc:
        return unknown("host.jit_caches", f"file:{mountinfo}", str(exc))
    out = []
    for row in knowledge.table("jit_caches")["cache"]:
        path, set_by = cache_dir(row, env)
        mount = mount_of(path, mounts)
        out.append(
            {
                "tool": row["tool"],
                "path": path,
                "set_by": set_by,
                "exists": os.path.isdir(path),
                "mount_point": mount[0] if mount else None,
                "fstype": mount[1] if mount else None,
            }
        )
    return known("host.jit_caches", out, f"env + file:{mountinfo}")
