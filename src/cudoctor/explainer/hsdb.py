"""The prefilter's compiled Hyperscan database, kept between runs in the user's cache folder.

Compiling the anchors costs 10-25 ms of CPU a run for today's ~730 caseless literals, and grows with
them (~60 ms at 3,700); loading the serialised database costs a fraction of a millisecond.
A file is named by a hash of everything the compiled bytes depend on: the expressions and their
flags, the Hyperscan version, the operating system, the machine and the CPU features Hyperscan
compiles for. A file that cannot be read, is damaged (its checksum) or is not the one its name says
is ignored and the database compiled again; a cache folder that cannot be written only means
compiling in every run. CUDOCTOR_NO_CACHE=1: never read or write the folder.
"""

from __future__ import annotations

import _thread
import collections
import functools
import hashlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from cudoctor import knowledge

MAGIC = b"cudoctor hyperscan database 1\n"
SUFFIX = ".hsdb"
KEEP = 8  # databases kept in the folder: the shipped anchors', and a few others (tests, benchmarks)
# the CPU features Hyperscan's compiler targets (a database compiled for AVX-512 does not load without it)
CPU_FEATURES = frozenset(
    {"ssse3", "sse4_1", "sse4_2", "popcnt", "avx", "avx2", "bmi1", "bmi2", "avx512f", "avx512cd"}
    | {"avx512dq", "avx512bw", "avx512vl", "avx512vbmi", "avx512_vbmi2"}
)

# How each database of this process was had ("compiled", "loaded" from the folder, "memo": already
# in this process): what the tests observe.
stats: collections.Counter[str] = collections.Counter()
_memo: dict[tuple[tuple[bytes, ...], int], Any] = {}


def database(expressions: Sequence[bytes], flags: int) -> Any:
    """A `hyperscan.Database` (block mode) for `expressions`, ids their indexes, each with `flags`:
    this process's copy, else the cached one, else compiled (and cached). Raises what `hyperscan`
    raises when it cannot compile (or is not installed)."""
    import hyperscan

    mine = (tuple(expressions), flags)
    db = _memo.get(mine)
    if db is not None:
        stats["memo"] += 1
        return db
    key = cache_key(expressions, flags, getattr(hyperscan, "__version__", "unknown"))
    path = cache_path(key)
    db = _load(path, key, hyperscan) if path else None
    if db is None:
        db = hyperscan.Database()
        db.compile(
            expressions=list(expressions), ids=list(range(len(expressions))), flags=[flags] * len(expressions)
        )
        stats["compiled"] += 1
        if path:
            _keep(path, key, hyperscan.dumpb(db))
    else:
        stats["loaded"] += 1
    if len(_memo) >= KEEP:  # a long-lived process that tried many anchor lists (tests, benchmarks)
        _memo.pop(next(iter(_memo)))
    _memo[mine] = db
    return db


def forget() -> None:
    """Drop this process's databases (tests: the next `database` reads the folder or compiles)."""
    _memo.clear()


def cache_key(expressions: Sequence[bytes], flags: int, version: str) -> str:
    """Hex SHA-256 of the expressions, flags, Hyperscan version, platform and CPU features."""
    h = hashlib.sha256(MAGIC)
    machine = os.uname().machine if hasattr(os, "uname") else ""
    for part in (version, sys.platform, machine, cpu_features(), str(flags), str(len(expressions))):
        h.update(part.encode() + b"\0")
    for expr in expressions:
        h.update(len(expr).to_bytes(4, "little") + expr)
    return h.hexdigest()


def cache_path(key: str) -> str | None:
    folder = knowledge.cache_dir("hyperscan")
    return os.path.join(folder, key + SUFFIX) if folder else None


@functools.cache
def cpu_features() -> str:
    """The CPU features among CPU_FEATURES this machine has (Linux: /proc/cpuinfo's first flags
    line), sorted and space-separated; "" where they cannot be read."""
    try:
        with open("/proc/cpuinfo", "rb") as fh:
            for line in fh:
                if line.startswith(b"flags"):
                    found = set(line.decode("ascii", "replace").split(":", 1)[-1].split())
                    return " ".join(sorted(found & CPU_FEATURES))
    except OSError:
        pass
    return ""


def _load(path: str, key: str, hyperscan: Any) -> Any:
    """The database kept in `path`, or None: missing, unreadable, damaged, another key's, or one
    this Hyperscan refuses (another version or CPU)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    head = MAGIC + key.encode() + b"\n"
    body = len(head) + 65  # the payload's checksum (64 hex digits) and a newline
    if not data.startswith(head) or len(data) <= body:
        return None
    payload = data[body:]
    if data[len(head) : body - 1] != hashlib.sha256(payload).hexdigest().encode():
        return None
    try:
        db = hyperscan.loadb(payload, hyperscan.HS_MODE_BLOCK)
        hyperscan.Scratch(db)  # Hyperscan validates the database when it sizes a scratch for it
    except Exception:  # any refusal only means compiling again
        return None
    return db


def _keep(path: str, key: str, payload: bytes) -> None:
    """Write the database atomically (a partial file is never read) and keep only the KEEP newest
    in the folder. Any failure (read-only home, full disk) only means the next run compiles again."""
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.{_thread.get_ident()}.tmp"
        try:
            with open(tmp, "wb") as fh:
                fh.write(MAGIC + key.encode() + b"\n" + hashlib.sha256(payload).hexdigest().encode() + b"\n")
                fh.write(payload)
            os.replace(tmp, path)
        except OSError:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise
        kept = sorted(
            (entry for entry in os.scandir(folder) if entry.name.endswith(SUFFIX)),
            key=lambda entry: entry.stat().st_mtime_ns,
            reverse=True,
        )
        for entry in kept[KEEP:]:
            os.remove(entry.path)
    except OSError:
        return
