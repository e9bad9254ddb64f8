#!/usr/bin/env python3
"""Read what each ollama release builds for NVIDIA GPUs from ollama's own repository, into
src/cudoctor/knowledge/ollama.toml: the lowest compute capability its GPU discovery accepts (below it,
ollama runs on the CPU), and its Linux CUDA runners (the CUDA toolkit each is built with, and the
architectures it is built for).

    python tools/read_ollama.py GIT_DIR > src/cudoctor/knowledge/ollama.toml

GIT_DIR is a clone of github.com/ollama/ollama (a bare one will do). Per release tag (vX.Y.Z, no
release candidates) it reads:
- the floor: gpu/*.go or discover/*.go (`CudaComputeMajorMin = 6`, `CudaComputeMin = [2]C.int{5, 0}`,
  `CudaComputeMajorMin = "5"` with `CudaComputeMinorMin = "0"`);
- the runners' CUDA: the Dockerfile's `FROM nvidia/cuda:X.Y`, `ARG CUDA_VERSION=X.Y`,
  `ARG CUDA_VERSION_NN=X.Y` or `ARG CUDANNVERSION=X.Y`;
- their architectures: the "CUDA NN" presets of CMakePresets.json (or "llama_cuda_vNN_linux" of
  llama/server/CMakePresets.json), the Dockerfile's `ARG CUDA_VNN_ARCHITECTURES`, or the single
  CMAKE_CUDA_ARCHITECTURES of llm/generate/gen_linux.sh or gen_common.sh.
Consecutive releases that read the same are one row.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

FLOOR = (
    re.compile(r"const CudaComputeMajorMin = (\d+)\b()"),
    re.compile(r"CudaComputeMin = \[2\]C\.int\{(\d+), (\d+)\}"),
    re.compile(r'CudaComputeMajorMin\s*=\s*"(\d+)"[\s\S]{0,80}?CudaComputeMinorMin\s*=\s*"(\d+)"'),
)
CUDA_ONE = re.compile(r"FROM (?:--platform=\S+ )?nvidia/cuda:(\d+\.\d+)|ARG CUDA_VERSION=(\d+\.\d+)")
CUDA_MANY = re.compile(r"ARG CUDA_VERSION_(\d+)=(\d+\.\d+)|ARG CUDA(\d+)VERSION=(\d+\.\d+)")
DOCKER_ARCHS = re.compile(r'ARG CUDA_V(\d+)_ARCHITECTURES="([^"]+)"')
SCRIPT_ARCHS = re.compile(r'^\s*CMAKE_CUDA_ARCHITECTURES="([^"$]+)"', re.M)
SCRIPTS = ("gen_linux.sh", "gen_common.sh")
# "CUDA 12" (CMakePresets.json from 0.5.13) or "llama_cuda_v12_linux" (llama/server/CMakePresets.json)
PRESET = re.compile(r"CUDA (\d+)|llama_cuda_v(\d+)_linux")


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True).stdout


def show(repo: str, tag: str, path: str) -> str:
    return git(repo, "show", f"{tag}:{path}")


def floor(repo: str, tag: str) -> str | None:
    files = [
        p
        for p in git(repo, "ls-tree", "-r", "--name-only", tag, "gpu", "discover").split()
        if p.endswith(".go")
    ]
    for path in files:
        text = show(repo, tag, path)
        for rx in FLOOR:
            m = rx.search(text)
            if m:
                return f"{m.group(1)}.{m.group(2) or '0'}"
    return None


DRIVER_FLOOR = re.compile(r"minFatbinCompressionNVIDIADriverMajor\s*=\s*(\d+)")
LEGACY_FLOOR = re.compile(r"minLegacyComputeJITNVIDIADriverMajor\s*=\s*(\d+)|if driver >= (\d+) \{")
LEGACY_BELOW = re.compile(r"ComputeMajor < (\d+)")


def driver_floors(repo: str, tag: str) -> dict[str, str]:
    """discover/cuda_compat.go (from 0.30): the driver branch below which ollama drops every CUDA GPU
    (min_driver), and the one below which it drops GPUs under a compute capability major (legacy_*)."""
    text = show(repo, tag, "discover/cuda_compat.go")
    out = {}
    floor, legacy, below = DRIVER_FLOOR.search(text), LEGACY_FLOOR.search(text), LEGACY_BELOW.search(text)
    if floor:
        out["min_driver"] = floor.group(1)
    if legacy and below:
        out["legacy_min_driver"] = legacy.group(1) or legacy.group(2)
        out["legacy_below_cc"] = f"{below.group(1)}.0"
    return out


def runners(repo: str, tag: str) -> list[dict[str, str]]:
    docker = show(repo, tag, "Dockerfile")
    cuda: dict[str, str] = {}
    for m in CUDA_MANY.finditer(docker):
        major, ver = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        cuda.setdefault(major, ver)
    if not cuda:
        for m in CUDA_ONE.finditer(docker):
            ver = m.group(1) or m.group(2)
            cuda.setdefault(ver.split(".")[0], ver)
    archs: dict[str, str] = {m.group(1): m.group(2) for m in DOCKER_ARCHS.finditer(docker)}
    for path in ("CMakePresets.json", "llama/server/CMakePresets.json"):
        presets = show(repo, tag, path)
        for p in json.loads(presets).get("configurePresets", []) if presets else []:
            m = PRESET.fullmatch(p.get("name", ""))
            value = (p.get("cacheVariables") or {}).get("CMAKE_CUDA_ARCHITECTURES")
            if m and value:
                archs[m.group(1) or m.group(2)] = value
    script = [a for path in SCRIPTS for a in SCRIPT_ARCHS.findall(show(repo, tag, f"llm/generate/{path}"))]
    if len(cuda) == 1 and not archs and len(set(script)) == 1:
        archs[next(iter(cuda))] = script[0]
    return [{"cuda": cuda[k], "archs": archs.get(k, "")} for k in sorted(cuda, key=int)]


def releases(repo: str) -> list[str]:
    tags = [t for t in git(repo, "tag").split() if re.fullmatch(r"v\d+\.\d+\.\d+", t)]
    return sorted(tags, key=lambda t: tuple(int(x) for x in t[1:].split(".")))


def rows(repo: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for tag in releases(repo):
        read = {"min_cc": floor(repo, tag), "runners": runners(repo, tag), **driver_floors(repo, tag)}
        if not read["runners"] and read["min_cc"] is None:
            continue
        if out and {k: v for k, v in out[-1].items() if k not in ("first", "last")} == read:
            out[-1]["last"] = tag[1:]
        else:
            out.append({"first": tag[1:], "last": tag[1:], **read})
    return out


def toml(out: list[dict[str, Any]], commit: str) -> str:
    lines = [
        "# What each ollama release builds for NVIDIA GPUs, read from ollama's repository by tools/read_ollama.py",
        f"# (github.com/ollama/ollama at {commit}; release tags vX.Y.Z, release candidates left out). Do not edit by hand.",
        "# min_cc: the lowest compute capability its GPU discovery accepts (below it ollama runs on the CPU; absent",
        "#   where the release's discovery code names none). runners: its Linux CUDA runners, each the CUDA toolkit it",
        "#   is built with (its driver floor is that CUDA's) and CMAKE_CUDA_ARCHITECTURES ('NN-virtual' is PTX only;",
        "#   empty where the build left it to CMake's default). min_driver: the driver branch below which it drops every",
        "#   CUDA GPU; legacy_min_driver: the one below which it drops GPUs under legacy_below_cc (discover/cuda_compat.go).",
        "",
    ]
    for row in out:
        lines += ["[[release]]", f'first = "{row["first"]}"', f'last = "{row["last"]}"']
        if row["min_cc"]:
            lines.append(f'min_cc = "{row["min_cc"]}"')
        for key in ("min_driver", "legacy_min_driver", "legacy_below_cc"):
            if row.get(key):
                lines.append(f'{key} = "{row[key]}"')
        runs = ", ".join(f'{{ cuda = "{r["cuda"]}", archs = "{r["archs"]}" }}' for r in row["runners"])
        lines += [f"runners = [{runs}]", ""]
    return "\n".join(lines)


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: read_ollama.py GIT_DIR", file=sys.stderr)
        return 2
    repo = sys.argv[1]
    commit = git(repo, "rev-parse", "--short=12", "HEAD").strip()
    if not commit:
        print(f"read_ollama.py: {repo} is not a git repository", file=sys.stderr)
        return 2
    sys.stdout.write(toml(rows(repo), commit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
