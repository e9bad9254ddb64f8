#!/usr/bin/env python3
"""Read, from the package index, the torch release each release of a package built against torch pins, and write
knowledge/torch_pins.toml.

    python tools/read_pypi_pins.py [vllm xformers ...]

vLLM and xFormers publish wheels compiled against one torch release and pin it exactly in their metadata
(vllm 0.4.3: torch == 2.3.0; xformers 0.0.26.post1: torch == 2.3.0). pip reads the metadata alone
(`pip install --dry-run --report`, no download); releases published as source only, or that pin no exact torch,
are left out. Needs the package index (PyPI or a mirror).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "src", "cudoctor", "knowledge", "torch_pins.toml")
TORCH_PIN = re.compile(r"^torch\s*\(?\s*==\s*([\d.]+)\s*\)?\s*(?:;|$)")
PLATFORMS = (
    "manylinux1_x86_64",
    "manylinux2014_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux_2_28_x86_64",
    "linux_x86_64",
)
PACKAGES = ("vllm", "xformers")


def releases(package: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", package],
        capture_output=True,
        text=True,
        timeout=120,
    )
    m = re.search(r"Available versions: (.+)", done.stdout)
    return [v.strip() for v in m.group(1).split(",")] if m else []


def torch_pin(package: str, version: str) -> str | None:
    """The torch release this release's Linux x86_64 wheel pins exactly, or None."""
    for python in ("3.11", "3.10", "3.9", "3.8"):
        with tempfile.TemporaryDirectory() as tmp:
            report = os.path.join(tmp, "report.json")
            cmd = [
                sys.executable,
                "-m",
                "pip",
                "install",
                f"{package}=={version}",
                "--no-deps",
                "--dry-run",
                "-q",
            ]
            cmd += [
                "--ignore-installed",
                "--only-binary=:all:",
                "--python-version",
                python,
                "--report",
                report,
            ]
            cmd += [arg for p in PLATFORMS for arg in ("--platform", p)]
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            if done.returncode != 0 or not os.path.exists(report):
                continue
            with open(report, encoding="utf-8") as fh:
                meta = json.load(fh)["install"][0]["metadata"]
        for req in meta.get("requires_dist") or []:
            m = TORCH_PIN.match(req.strip())
            if m and "extra ==" not in req:
                return m.group(1)
        return None
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("packages", nargs="*", default=list(PACKAGES))
    args = ap.parse_args()
    lines = [
        "# The torch release each wheel of a package compiled against torch pins exactly (its metadata's",
        "# 'torch == X'), read from the package index by tools/read_pypi_pins.py (pip --dry-run --report, Linux x86_64",
        "# wheels; 2026-11-27). A stated vLLM with no torch beside it runs the torch its release pins.",
        "",
    ]
    for package in args.packages:
        found = 0
        for version in reversed(releases(package)):  # oldest first
            pin = torch_pin(package, version)
            print(f"{package} {version}: torch {pin}", file=sys.stderr)
            if pin:
                lines += ["[[pin]]", f'package = "{package}"', f'version = "{version}"', f'torch = "{pin}"']
                lines += ['source = "S-PYPI: the Linux x86_64 wheel\'s metadata"', ""]
                found += 1
        print(f"{package}: {found} releases pin torch", file=sys.stderr)
    with open(OUT, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
