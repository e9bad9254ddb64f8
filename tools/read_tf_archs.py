#!/usr/bin/env python3
"""Read, from the package index, the GPU architectures each TensorFlow release's Linux wheel was compiled for, and
compare them with knowledge/tensorflow.toml's `archs`.

    python tools/read_tf_archs.py [--releases 2.15.0,2.16.1] [--package tensorflow-gpu] [--platform windows]

A TensorFlow GPU wheel records its build in tensorflow/python/platform/build_info.py:
`('cuda_compute_capabilities', ['sm_35', 'sm_50', ..., 'compute_80'])`. The wheels are 200-600 MB; this reads only
that one member through HTTP range requests (the zip's central directory, then the member), about 100 KB a release.
Needs the package index (PyPI's simple API and files.pythonhosted.org).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import struct
import sys
import urllib.request
import zlib
from collections.abc import Callable
from typing import Any

import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(ROOT, "src", "cudoctor", "knowledge", "tensorflow.toml")
SIMPLE = "https://pypi.org/simple/{}/"
MEMBER = "tensorflow/python/platform/build_info.py"
WHEEL = {
    "linux": re.compile(
        r"^(?P<pkg>[a-z_]+)-(?P<ver>[\d.]+)-cp3\d+-cp3\d+m?-(manylinux|linux)[\w.]*x86_64\.whl$"
    ),
    "windows": re.compile(r"^(?P<pkg>[a-z_]+)-(?P<ver>[\d.]+)-cp3\d+-cp3\d+m?-win_amd64\.whl$"),
}


def _get(url: str, start: int | None = None, end: int | None = None, tail: int | None = None) -> bytes:
    headers = {"Accept": "application/vnd.pypi.simple.v1+json"}
    if tail is not None:
        headers["Range"] = f"bytes=-{tail}"
    elif start is not None:
        headers["Range"] = f"bytes={start}-{end}"
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=60) as resp:
        data: bytes = resp.read()
        return data


def wheels(package: str, platform: str = "linux") -> dict[str, str]:
    """Release -> the URL of one of its x86_64 wheels for the platform."""
    files = json.loads(_get(SIMPLE.format(package)))["files"]
    out: dict[str, str] = {}
    for f in files:
        m = WHEEL[platform].match(f["filename"])
        if m and not f.get("yanked"):
            out.setdefault(m.group("ver"), f["url"])
    return out


def read_member(url: str, name: str = MEMBER) -> str:
    """One member of a remote zip, read by ranges: the end record, the central directory, then the member."""
    tail = _get(url, tail=65536)
    eocd = tail.rfind(b"PK\x05\x06")
    if eocd < 0:
        raise RuntimeError("no end of central directory")
    cd_size, cd_offset = struct.unpack("<II", tail[eocd + 12 : eocd + 20])
    if cd_offset == 0xFFFFFFFF:  # zip64
        loc = tail.rfind(b"PK\x06\x07")
        z64 = struct.unpack("<Q", tail[loc + 8 : loc + 16])[0]
        rec = _get(url, z64, z64 + 55)
        cd_size, cd_offset = struct.unpack("<QQ", rec[40:56])
    cd = _get(url, cd_offset, cd_offset + cd_size - 1)
    pos = 0
    while pos < len(cd) and cd[pos : pos + 4] == b"PK\x01\x02":
        (method,) = struct.unpack("<H", cd[pos + 10 : pos + 12])
        csize, _usize, nlen, elen, clen = struct.unpack("<IIHHH", cd[pos + 20 : pos + 34])
        (offset,) = struct.unpack("<I", cd[pos + 42 : pos + 46])
        fname = cd[pos + 46 : pos + 46 + nlen].decode()
        if fname == name:
            head = _get(url, offset, offset + 29)
            hn, he = struct.unpack("<HH", head[26:30])
            start = offset + 30 + hn + he
            data = _get(url, start, start + csize - 1)
            raw = zlib.decompress(data, -15) if method == 8 else data
            return raw.decode()
        pos += 46 + nlen + elen + clen
    raise RuntimeError(f"{name} not in the wheel")


def compare(
    wanted: list[str],
    found: dict[str, str],
    read: Callable[[str], Any],
    known: Callable[[str], Any],
    show: Callable[[str, Any], str],
    missing: str = "no wheel on the index",
) -> int:
    """For each release wanted: what its wheel says (`read` of its URL) printed by `show`, beside what the table
    holds (`known`); returns how many differ from the table."""
    differ = 0
    for version in wanted:
        if version not in found:
            print(f"{version}: {missing}")
            continue
        try:
            got = read(found[version])
        except (OSError, RuntimeError, ValueError) as exc:
            print(f"{version}: {exc}")
            continue
        table = known(version)
        mark = "" if table is None or table == got else "  DIFFERS from the table"
        differ += bool(mark)
        print(f"{show(version, got)}  (table: {table}){mark}")
    return differ


def archs_of(build_info: str) -> list[str] | None:
    """The list build_info.py records: a tuple in an OrderedDict from 2.4 on, a dict entry in 2.3."""
    m = re.search(r"'cuda_compute_capabilities'(?:,|:) (\[[^\]]*\])", build_info)
    return ast.literal_eval(m.group(1)) if m else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--releases", help="comma-separated releases (default: every x.y.0 from 2.4 on)")
    ap.add_argument("--package", default="tensorflow", help="tensorflow (default) or tensorflow-gpu")
    ap.add_argument("--platform", default="linux", choices=sorted(WHEEL))
    args = ap.parse_args(argv)
    with open(TABLE, "rb") as fh:
        rows = tomllib.load(fh)["build"]
    table = {b["version"]: b.get("archs") for b in rows if b["platform"] == args.platform}
    found = wheels(args.package, args.platform)
    if args.releases:
        wanted = args.releases.split(",")
    else:
        wanted = sorted(
            (v for v in found if re.fullmatch(r"2\.(\d+)\.0", v) and int(v.split(".")[1]) >= 4),
            key=lambda v: int(v.split(".")[1]),
        )
    differ = compare(
        wanted,
        found,
        lambda url: archs_of(read_member(url)),
        table.get,
        lambda version, archs: f"{version}: {archs}",
        f"no {args.platform} x86_64 wheel on the index",
    )
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
