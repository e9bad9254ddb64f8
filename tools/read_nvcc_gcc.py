#!/usr/bin/env python3
"""Read, from NVIDIA's nvcc wheels on the package index, the newest GCC each CUDA release's nvcc accepts as its host
compiler, and compare it with knowledge/toolkit_archs.toml's [[host_gcc]] rows (knowledge.host_gcc_max).

    python tools/read_nvcc_gcc.py [--releases 12.4.131,12.8.93]

nvcc refuses a newer GCC in crt/host_config.h ('#if __GNUC__ > 13 ... #error -- unsupported GNU version! gcc versions
later than 13 are not supported!'). The wheels (nvidia-cuda-nvcc-cu11 from 11.7, -cu12, and from 13.0 nvidia-cuda-crt)
are 20-60 MB; this reads that one header by HTTP range requests (tools/read_tf_archs.py's reader).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import read_tf_archs as wheelzip

from cudoctor import knowledge

# CUDA 13 moved the headers out of the nvcc wheel into nvidia-cuda-crt
PACKAGES = ("nvidia-cuda-nvcc-cu11", "nvidia-cuda-nvcc-cu12", "nvidia-cuda-crt")
WHEEL = re.compile(
    r"^nvidia_cuda_(?:nvcc(?:_cu1\d)?|crt)-(?P<ver>\d+\.\d+\.\d+)-py3-none-(?:manylinux|linux)[\w.]*x86_64\.whl$"
)
GNUC_MAX = re.compile(r"#if __GNUC__ > (\d+)\s*\n\s*\n?\s*#error -- unsupported GNU version")


def wheels() -> dict[str, str]:
    """nvcc release (11.8.89) -> the URL of its Linux x86_64 wheel."""
    out: dict[str, str] = {}
    for package in PACKAGES:
        files = json.loads(wheelzip._get(wheelzip.SIMPLE.format(package)))["files"]
        for f in files:
            m = WHEEL.match(f["filename"])
            if m and not f.get("yanked"):
                out.setdefault(m.group("ver"), f["url"])
    return out


def header_member(url: str) -> str:
    """host_config.h's path in the wheel: nvidia/cuda_nvcc/include/crt/ (cu11, cu12) or nvidia/cu13/include/crt/
    (nvidia-cuda-crt)."""
    for path in ("nvidia/cuda_nvcc/include/crt/host_config.h", "nvidia/cu13/include/crt/host_config.h"):
        try:
            return wheelzip.read_member(url, path)
        except RuntimeError:
            continue
    raise RuntimeError("no crt/host_config.h in the wheel")


def gcc_max(header: str) -> int | None:
    m = GNUC_MAX.search(header)
    return int(m.group(1)) if m else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--releases", help="comma-separated nvcc wheel versions (default: the newest of each minor)"
    )
    args = ap.parse_args(argv)
    found = wheels()
    if args.releases:
        wanted = args.releases.split(",")
    else:
        newest: dict[str, str] = {}
        for v in sorted(found, key=lambda v: [int(x) for x in v.split(".")]):
            newest[".".join(v.split(".")[:2])] = v
        wanted = list(newest.values())
    differ = wheelzip.compare(
        wanted,
        found,
        lambda url: gcc_max(header_member(url)),
        lambda version: (knowledge.host_gcc_max(version) or (None,))[0],
        lambda version, gcc: f"CUDA {'.'.join(version.split('.')[:2])} (nvcc {version}): gcc <= {gcc}",
    )
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
