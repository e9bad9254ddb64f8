#!/usr/bin/env python3
"""Read, from the package index, which CUDA and cuDNN each torch release's default PyPI wheel depends on, and compare
them with knowledge/torch.toml's `pypi_default` and `cudnn` fields.

    python tools/read_pypi_torch.py [--releases 2.3.0,2.6.0]

PyPI's Linux x86_64 torch wheels from 1.13 on install CUDA from NVIDIA's wheels and pin them exactly in their
metadata (nvidia-cuda-runtime-cu12==12.4.127, nvidia-cudnn-cu12==9.1.0.70; from 2.11 cuda-toolkit[cudart,...]==13.0.2):
that pin is the build's CUDA and cuDNN.
pip reads the metadata alone (`pip install --dry-run --report`, no download of the wheel). Releases before 1.13 carry
CUDA inside the wheel and pin nothing: they are reported as such. Needs the package index (PyPI or a mirror).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(ROOT, "src", "cudoctor", "knowledge", "torch.toml")
PIN = re.compile(r"^nvidia-(cuda-runtime|cudnn)-cu(\d+)\s*\(?==\s*([\d.]+)\)?")
TOOLKIT = re.compile(
    r"^cuda-toolkit\[[^\]]*\bcudart\b[^\]]*\]\s*==\s*([\d.]+)"
)  # from 2.11: NVIDIA's cuda-toolkit metapackage
PLATFORMS = ("manylinux1_x86_64", "manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64")


def python_for(version: str) -> str:
    """A CPython the release published Linux wheels for."""
    major, minor = (int(x) for x in version.split(".")[:2])
    if (major, minor) >= (1, 11):
        return "3.10"
    return "3.8" if (major, minor) >= (1, 5) else "3.7"


def read(version: str) -> dict[str, str]:
    """The CUDA variant and cuDNN the default wheel pins ({} when it pins none); raises RuntimeError when pip fails."""
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        cmd = [sys.executable, "-m", "pip", "install", f"torch=={version}", "--no-deps", "--dry-run", "-q"]
        cmd += ["--ignore-installed", "--only-binary=:all:", "--python-version", python_for(version)]
        cmd += [arg for p in PLATFORMS for arg in ("--platform", p)] + ["--report", report]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if done.returncode != 0 or not os.path.exists(report):
            raise RuntimeError((done.stderr.strip().splitlines() or ["pip failed"])[-1])
        with open(report, encoding="utf-8") as fh:
            meta = json.load(fh)["install"][0]["metadata"]
    out: dict[str, str] = {}
    for req in meta.get("requires_dist") or []:
        kit = TOOLKIT.match(req)
        if kit:
            major, minor = kit.group(1).split(".")[:2]
            out["variant"] = f"cu{major}{minor}"
            continue
        m = PIN.match(req)
        if m and m.group(1) == "cuda-runtime":
            major, minor = m.group(3).split(".")[:2]
            out["variant"] = f"cu{major}{minor}"
        elif m:
            out["cudnn"] = m.group(3)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--releases", default="", help="comma-separated torch releases (default: every row of torch.toml)"
    )
    args = ap.parse_args()
    with open(TABLE, "rb") as fh:
        rows = tomllib.load(fh)["release"]
    wanted = [r for r in args.releases.split(",") if r]
    for row in rows:
        version = str(row["version"]).split()[0].replace(".x", ".0")
        if wanted and version not in wanted:
            continue
        try:
            got = read(version)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            print(f"{version:8s} not read: {exc}")
            continue
        said = str(row.get("pypi_default", ""))
        if not got:
            print(f"{version:8s} pins no NVIDIA wheel (CUDA inside the wheel); table: {said}")
            continue
        variant, cudnn = got.get("variant", "?"), got.get("cudnn", "?")
        table_cudnn = (row.get("cudnn") or {}).get(variant)
        agree = "agrees" if said == variant and table_cudnn in (None, cudnn) else "DIFFERS"
        print(
            f"{version:8s} PyPI default {variant}, cuDNN {cudnn}; table: {said}, cuDNN {table_cudnn} -> {agree}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
