"""JIT kernel caches: where the CUDA driver, Triton, TorchInductor, CuPy and DeepGEMM keep compiled
kernels, the filesystem each directory is on (processes that share a cache on a network filesystem
race), and whether this user can write there (a run under sudo leaves it owned by root)."""

from __future__ import annotations

import getpass
import itertools
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


FOREIGN_SAMPLE = 64  # entries of a cache directory looked at for ones this user cannot write


def _owner(path: str) -> str:
    try:
        uid = os.stat(path).st_uid
    except OSError:
        return "unknown"
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return f"uid {uid}"


def _foreign_entries(path: str) -> list[str]:
    """Names of the first entries of `path` this user cannot write (a root-owned index file)."""
    try:
        with os.scandir(path) as it:
            entries = list(itertools.islice(it, FOREIGN_SAMPLE))
    except OSError:
        return []
    return sorted(e.name for e in entries if not e.is_symlink() and not os.access(e.path, os.W_OK))


def access(path: str, home: str) -> dict[str, Any]:
    """Whether this user can use the cache at `path`: write into it, or create it in its nearest
    existing ancestor. Where not: the directory or entry that stops it, who owns that, and whether
    it lies inside the user's home (a leftover to take back, not the home itself)."""
    existing = _existing(path)
    writable = os.access(existing, os.W_OK | os.X_OK)
    foreign = _foreign_entries(existing) if writable and existing == os.path.realpath(path) else []
    if writable and not foreign:
        return {"writable": True}
    blocked = existing if not writable else os.path.join(existing, foreign[0])
    inside = os.path.realpath(home).rstrip("/") + "/"
    while os.path.dirname(blocked).startswith(inside) and not os.access(os.path.dirname(blocked), os.W_OK):
        blocked = os.path.dirname(blocked)  # ~/.nv as well as ~/.nv/ComputeCache: take back the top one
    return {
        "writable": False,
        "blocked_at": blocked,
        "owner": _owner(blocked),
        "blocked_in_home": blocked.startswith(inside),
        "foreign_entries": foreign,
    }


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
    cache = env.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    path = row["default"].format(home=home, cache=cache, tmp=host.temp_dir(env), user=_user())
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
    home = env.get("HOME") or os.path.expanduser("~")
    for row in knowledge.table("jit_caches")["cache"]:
        if env.get(row.get("disabled_by") or "", "").strip() == "1":
            continue  # CUDA_CACHE_DISABLE=1: no cache to race on or to write
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
                **access(path, home),
            }
        )
    return known("host.jit_caches", out, f"env + file:{mountinfo}")
