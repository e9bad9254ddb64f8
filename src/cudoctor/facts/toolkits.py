"""Every CUDA toolkit we can find, with its version and where it was found.

Sources: standard install dirs, CUDA_HOME / CUDA_PATH / CUDA_ROOT, nvcc and ptxas on PATH
(symlinks and `exec` shell wrappers followed), conda prefixes, and NVIDIA pip wheels
(CUDA 12 `nvidia/cuda_nvcc`, CUDA 13 `nvidia/cu13`).

Apart from toolkits, every nvcc / ptxas a shell or framework would run (PATH, CUDA_HOME, CUDA_PATH,
CUDA_DIR, XLA's --xla_gpu_cuda_data_dir, TRITON_PTXAS_PATH, TRITON_PTXAS_BLACKWELL_PATH) is asked its
version (`run_tools`): a ptxas copied into a directory that is no toolkit's `bin` is still identified.
So are the ptxas binaries Triton bundles (triton/backends/nvidia/bin/ptxas, and ptxas-blackwell in
Triton 3.5 and newer), with the GPU architectures each one compiles for, read from Triton's own
compiler.py (`get_ptxas`: `if arch < 90: return knobs.nvidia.ptxas` in 3.9).
"""

from __future__ import annotations

import glob
import json
import os
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from cudoctor import runner, versions
from cudoctor.facts import xlaflags

RELEASE_RE = re.compile(r"release (\d+\.\d+), V(\d+\.\d+\.\d+)")


def follow_wrapper(path: str) -> str:
    """Resolve symlinks and 2-line `exec /real/tool "$@"` shell wrappers to the real binary."""
    real = os.path.realpath(path)
    try:
        with open(real, "rb") as fh:
            head = fh.read(512)
    except OSError:
        return real
    if head.startswith(b"#!"):
        m = re.search(rb"exec\s+\"?(/[^\s\"]+)", head)
        if m:
            target = m.group(1).decode("utf-8", "replace")
            if os.path.exists(target):
                return os.path.realpath(target)
    return real


def which_all(name: str, path_env: str) -> list[str]:
    """Every executable `name` on PATH, in PATH order."""
    hits: list[str] = []
    for d in path_env.split(os.pathsep):
        candidate = os.path.join(d or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            hits.append(candidate)
    return hits


def root_of_tool(tool_path: str) -> str:
    """<root>/bin/nvcc -> <root>."""
    return os.path.dirname(os.path.dirname(follow_wrapper(tool_path)))


def version_from_files(root: str) -> tuple[str | None, str]:
    """CUDA version of a toolkit root from version.json, version.txt, dist-info or cuda.h."""
    vjson = os.path.join(root, "version.json")
    if os.path.isfile(vjson):
        try:
            with open(vjson, encoding="utf-8") as fh:
                data = json.load(fh)
            for key in ("cuda_cudart", "cuda_nvcc", "cuda"):
                if isinstance(data.get(key), dict) and data[key].get("version"):
                    return ".".join(str(data[key]["version"]).split(".")[:3]), f"file:{vjson}"
        except (OSError, ValueError):
            pass
    vtxt = os.path.join(root, "version.txt")
    if os.path.isfile(vtxt):
        with open(vtxt, encoding="utf-8", errors="replace") as fh:
            m = re.search(r"CUDA Version (\d+\.\d+(?:\.\d+)?)", fh.read())
        if m:
            return m.group(1), f"file:{vtxt}"
    for pattern in ("dist-info/nvidia_cuda_runtime*-*.dist-info", "dist-info/nvidia_cuda_nvcc*-*.dist-info"):
        for d in sorted(glob.glob(os.path.join(root, pattern))):
            m = re.search(r"-(\d+\.\d+\.\d+)", os.path.basename(d))
            if m:
                return m.group(1), f"file:{d}"
    cuda_h = os.path.join(root, "include", "cuda.h")
    if os.path.isfile(cuda_h):
        with open(cuda_h, encoding="utf-8", errors="replace") as fh:
            m = re.search(r"#define\s+CUDA_VERSION\s+(\d+)", fh.read())
        if m:
            return versions.cuda_from_int(int(m.group(1))), f"file:{cuda_h}"
    return None, ""


def tool_version(path: str, timeout: float) -> dict[str, Any]:
    """`<tool> --version` with a timeout -> {'version': '13.0.88', ...} or {'error': ...}."""
    res = runner.run([path, "--version"], timeout=timeout)
    if not res.ok:
        return {"error": f"{path} --version: {res.describe()}", "stderr": res.stderr[-300:]}
    m = RELEASE_RE.search(res.stdout)
    if not m:
        return {"error": f"{path} --version printed no 'release X.Y, VX.Y.Z' line"}
    return {"version": m.group(2), "release": m.group(1)}


def candidate_roots(env: Mapping[str, str], sys_path: Sequence[str]) -> list[tuple[str, str]]:
    """(root, how it was found), in the order a user's tools would consider them."""
    found: list[tuple[str, str]] = []
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDA_TOOLKIT_ROOT_DIR"):
        if env.get(var):
            found.append((env[var], f"env:{var}"))
    path_env = env.get("PATH", "")
    for tool in ("nvcc", "ptxas"):
        for hit in which_all(tool, path_env):
            found.append((root_of_tool(hit), f"PATH:{tool}"))
    for pattern in ("/usr/local/cuda", "/usr/local/cuda-*", "/opt/cuda", "/opt/cuda-*", "/usr/lib/cuda"):
        found += [(p, "standard dir") for p in sorted(glob.glob(pattern))]
    if env.get("CONDA_PREFIX"):
        found.append((env["CONDA_PREFIX"], "env:CONDA_PREFIX"))
    for site in sys_path:
        for sub in ("nvidia/cu13", "nvidia/cuda_nvcc", "nvidia/cuda_runtime"):
            p = os.path.join(site, sub)
            if os.path.isdir(p):
                found.append((p, f"pip wheel ({sub})"))
    return found


def _looks_like_toolkit(root: str) -> bool:
    markers = (
        "bin/nvcc",
        "bin/ptxas",
        "version.json",
        "version.txt",
        "include/cuda.h",
        "lib64/libcudart.so",
        "lib/libcudart.so",
    )
    return any(os.path.exists(os.path.join(root, m)) for m in markers) or bool(
        glob.glob(os.path.join(root, "lib", "libcudart.so.*"))
    )


def collect_toolkits(
    env: Mapping[str, str], sys_path: Sequence[str], timeout: float = 5.0
) -> list[dict[str, Any]]:
    """One entry per distinct toolkit root (realpath), listing every way it was found."""
    by_real: dict[str, dict[str, Any]] = {}
    for root, via in candidate_roots(env, sys_path):
        real = os.path.realpath(root)
        entry = by_real.get(real)
        if entry is None:
            entry = {"root": root, "realpath": real, "found_via": [], "exists": os.path.isdir(root)}
            by_real[real] = entry
        if via not in entry["found_via"]:
            entry["found_via"].append(via)
    toolkits = [e for e in by_real.values() if e["exists"] and _looks_like_toolkit(e["realpath"])]
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda e: _describe(e, timeout), toolkits))
    return toolkits


def _describe(entry: dict[str, Any], timeout: float) -> None:
    root = entry["realpath"]
    version, source = version_from_files(root)
    entry["version"], entry["version_source"] = version, source
    for tool in ("nvcc", "ptxas"):
        path = os.path.join(root, "bin", tool)
        entry[tool] = path if os.path.exists(path) else None
    libdevice = glob.glob(os.path.join(root, "nvvm", "libdevice", "libdevice*.bc"))
    entry["libdevice"] = libdevice[0] if libdevice else None
    entry["cudart"] = sorted(
        {os.path.basename(p) for p in glob.glob(os.path.join(root, "lib*", "libcudart.so.*"))}
    )
    if entry["ptxas"]:
        entry["ptxas_version"] = tool_version(entry["ptxas"], timeout)
        if version is None and "version" in entry["ptxas_version"]:
            entry["version"], entry["version_source"] = (
                entry["ptxas_version"]["version"],
                f"cmd:{entry['ptxas']} --version",
            )


def path_tools(env: Mapping[str, str]) -> dict[str, Any]:
    """Which nvcc / ptxas a shell would run first, and every other copy on PATH."""
    out: dict[str, Any] = {}
    for tool in ("nvcc", "ptxas"):
        hits = which_all(tool, env.get("PATH", ""))
        out[tool] = {
            "first": hits[0] if hits else None,
            "resolved": follow_wrapper(hits[0]) if hits else None,
            "all": hits,
        }
    return out


XLA_DATA_DIR = re.compile(r"^--?xla_gpu_cuda_data_dir=(.+)$")
# where a shell or a framework takes nvcc / ptxas from, besides PATH: a toolkit root (its bin/ holds
# them) or, for Triton, the ptxas itself
ROOT_VARS = ("CUDA_HOME", "CUDA_PATH", "CUDA_DIR")


def xla_cuda_data_dir(xla_flags: str) -> str | None:
    """The directory XLA_FLAGS' --xla_gpu_cuda_data_dir names (XLA runs its bin/ptxas before PATH's)."""
    found = [m.group(1) for t in xlaflags.tokens(xla_flags) if (m := XLA_DATA_DIR.match(t))]
    return found[-1] if found else None


def tools_to_run(env: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(tool, path, how it is reached) for every nvcc / ptxas a shell or a framework would run."""
    out: list[tuple[str, str, str]] = []
    for tool in ("nvcc", "ptxas"):
        for i, hit in enumerate(which_all(tool, env.get("PATH", ""))):
            out.append((tool, hit, "PATH" if i == 0 else "PATH (not first)"))
    roots = [(env[v], v) for v in ROOT_VARS if env.get(v)]
    data_dir = xla_cuda_data_dir(env.get("XLA_FLAGS", ""))
    if data_dir:
        roots.append((data_dir, "XLA_FLAGS --xla_gpu_cuda_data_dir"))
    out += [(tool, os.path.join(root, "bin", tool), via) for root, via in roots for tool in ("nvcc", "ptxas")]
    for var in TRITON_VARS.values():
        if env.get(var):
            out.append(("ptxas", env[var], var))
    return out


# Triton's bundled binaries (triton/backends/nvidia/bin/) and the variable that replaces each
TRITON_VARS = {"ptxas": "TRITON_PTXAS_PATH", "ptxas-blackwell": "TRITON_PTXAS_BLACKWELL_PATH"}
_TRITON_SPLIT = re.compile(
    r"def get_ptxas\(arch[^)]*\)[^:]*:\s*if arch < (\d+):\s*return knobs\.nvidia\.ptxas\b"
)


def triton_tools(triton_dir: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(path, how it is reached, what it is for) of each ptxas the Triton at `triton_dir` bundles:
    'for_arch' is [lowest, highest) compute capability x10 it compiles for (None: no bound, or unknown)."""
    nvidia = os.path.join(triton_dir, "backends", "nvidia")
    split: int | None = None
    try:
        with open(os.path.join(nvidia, "compiler.py"), encoding="utf-8", errors="replace") as fh:
            m = _TRITON_SPLIT.search(fh.read())
        split = int(m.group(1)) if m else None
    except OSError:
        pass
    two = os.path.isfile(os.path.join(nvidia, "bin", "ptxas-blackwell"))
    out = []
    for name, var in TRITON_VARS.items():
        path = os.path.join(nvidia, "bin", name)
        if not os.path.isfile(path):
            continue
        if not two:
            archs: list[int | None] = [None, None]
        elif split is None:
            archs = []  # Triton chooses between its two by architecture, at a bound it did not show
        else:
            archs = [None, split] if name == "ptxas" else [split, None]
        out.append((path, f"triton bin/{name}", {"triton_binary": name, "override": var, "for_arch": archs}))
    return out


def run_tools(
    env: Mapping[str, str],
    timeout: float,
    asked: Mapping[str, dict[str, Any]] | None = None,
    triton_dir: str | None = None,
) -> list[dict[str, Any]]:
    """Each nvcc / ptxas of `tools_to_run` (and the ptxas binaries of the Triton at `triton_dir`) that
    exists, identified by asking it (`--version`, bounded, no shell) wherever it sits: one entry per real
    binary, with every way it is reached. One that exists but is not executable, named by a variable
    (a shell skips it on PATH), is an entry with an error. `asked`: answers already given, by real path."""
    by_real: dict[str, dict[str, Any]] = {}
    reached: list[tuple[str, str, str, dict[str, Any]]] = [(t, p, v, {}) for t, p, v in tools_to_run(env)]
    reached += [("ptxas", path, via, extra) for path, via, extra in triton_tools(triton_dir or "")]
    for tool, path, via, extra in reached:
        if not os.path.isfile(path) or (via.startswith("PATH") and not os.access(path, os.X_OK)):
            continue
        real = follow_wrapper(path)
        entry = by_real.setdefault(real, {"tool": tool, "path": path, "resolved": real, "via": []})
        entry.update(extra)
        if via not in entry["via"]:
            entry["via"].append(via)
    entries = list(by_real.values())
    done = asked or {}

    def ask(entry: dict[str, Any]) -> None:
        if not os.access(entry["resolved"], os.X_OK):
            entry["error"] = f"{entry['path']} is not executable (its mode is {_mode(entry['resolved'])})"
            return
        entry.update(done.get(entry["resolved"]) or tool_version(entry["resolved"], timeout))

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(ask, entries))
    return entries


def _mode(path: str) -> str:
    try:
        return oct(os.stat(path).st_mode & 0o777)[2:]
    except OSError:
        return "unreadable"
