"""Read-only views over a Snapshot that several checks share."""

from __future__ import annotations

import os
import re
from typing import Any

from cudoctor import knowledge, versions
from cudoctor.knowledge import jax_builds
from cudoctor.model import FRAMEWORK_LABEL as LABEL
from cudoctor.model import FRAMEWORKS, Snapshot

CUDA_LIB = knowledge.CUDA_LIB


def frameworks(snap: Snapshot) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for name in FRAMEWORKS:
        info = snap.value(f"framework.{name}")
        if isinstance(info, dict):
            out.append((name, info))
    return out


def cuda_frameworks(snap: Snapshot) -> list[tuple[str, dict[str, Any]]]:
    return [(n, i) for n, i in frameworks(snap) if i.get("build") == "cuda" and i.get("cuda")]


def arch_frameworks(snap: Snapshot) -> list[tuple[str, dict[str, Any]]]:
    """CUDA builds whose CUDA or arch list is known (a stated 'supports sm_37 sm_50' with no version)."""
    return [
        (n, i) for n, i in frameworks(snap) if i.get("build") == "cuda" and (i.get("cuda") or i.get("archs"))
    ]


def describe(name: str, info: dict[str, Any]) -> str:
    version = (
        f" {info['version']}" if info.get("version") else ""
    )  # 'PyTorch (CUDA 10.2)': a conda pin, no release
    cuda = f" (CUDA {info['cuda']})" if info.get("cuda") else ""
    pinned = (
        f", which {info['pinned_by']} pins" if info.get("pinned_by") else ""
    )  # 'vllm 0.4.3' stated, no torch
    return f"{LABEL.get(name, name)}{version}{cuda}{pinned}"


# a GeForce or TITAN card: the brands CUDA forward compatibility (cuda-compat, and the brand clauses of NVIDIA's
# images' NVIDIA_REQUIRE_CUDA) leaves out
CONSUMER_GPU = re.compile(r"geforce|\b(?:gtx|titan)\b|\brtx\s?[2-5]0[5-9]0", re.I)


def gpus(snap: Snapshot) -> list[dict[str, Any]]:
    """GPUs with a parsed compute capability ('cc_t'); the name is looked up when cc is missing."""
    out = []
    for gpu in snap.value("gpu.devices") or []:
        g = dict(gpu)
        cc = versions.cc_tuple(g.get("cc"))
        if cc is None and g.get("name"):
            hit = knowledge.gpu_cc(str(g["name"]))
            cc = versions.cc_tuple(hit[0]) if hit else None
        g["cc_t"] = cc
        out.append(g)
    return out


def has_gpu_hardware(snap: Snapshot) -> bool:
    """A GPU is listed, seen on the PCI bus, or an NVIDIA driver is loaded (it loads for a GPU only)."""
    return bool(snap.value("gpu.devices") or snap.value("gpu.pci") or snap.value("driver.version"))


def platform(snap: Snapshot) -> str | None:
    """'wsl' (Linux under WSL2), 'windows' (native), 'linux', 'darwin', or None when unknown."""
    if snap.value("host.wsl"):
        return "wsl"
    system = str((snap.value("host.os") or {}).get("system") or "").lower()
    return system or None


def env(snap: Snapshot) -> dict[str, str]:
    value = snap.value("env")
    return value if isinstance(value, dict) else {}


def framework_archs(name: str, info: dict[str, Any]) -> tuple[list[str] | None, str]:
    """The arch list a build carries, and where that list came from."""
    if info.get("archs"):
        return list(info["archs"]), "read from the build's fatbin / build info"
    if name == "torch" and info.get("version"):
        variant = knowledge.torch_variant(str(info["version"]), info.get("cuda"))
        hit = knowledge.torch_archs(str(info["version"]), variant) if variant else None
        if hit:
            return hit[0], f"official {variant} wheels ({hit[1]['source']})"
    if name == "torch" and not info.get("version") and info.get("cuda") and not info.get("cuda_inferred"):
        variant = knowledge.torch_variant("", str(info["cuda"]))
        every = knowledge.torch_variant_archs(variant) if variant else None
        if every:
            archs, rows = every
            low = min((r["torch_min"] for r in rows), key=lambda v: versions.parse(v) or ())
            high = max((r["torch_max"] for r in rows), key=lambda v: versions.parse(v) or ())
            return archs, f"every official {variant} wheel, torch {low}..{high}; the release was not stated"
    if name == "tensorflow" and info.get("version"):
        windows = info.get("platform") == "windows"
        row = knowledge.tf_build(str(info["version"]), "windows" if windows else "linux")
        if row and row.get("archs"):
            return list(row["archs"]), f"TensorFlow {row['version']}'s GPU builds ({row['archs_source']})"
    if name == "jax" and (info.get("jaxlib") or info.get("version")):
        major = versions.parse(str(info.get("cuda") or ""))
        built = jax_builds.archs(str(info.get("jaxlib") or info["version"]), major[0] if major else None)
        if built:
            return built[0], f"JAX's CUDA build targets ({built[1]['source']})"
    return None, ""


def toolkit_at(path: str, snap: Snapshot) -> dict[str, Any] | None:
    """The known toolkit a directory (or a path inside it) belongs to."""
    real = os.path.realpath(path) if os.path.isabs(path) else path
    for tk in snap.value("cuda.toolkits") or []:
        if real in (tk.get("realpath"), tk.get("root")) or real.startswith(str(tk.get("realpath")) + "/"):
            return dict(tk)
    return None


def path_tool(snap: Snapshot, tool: str) -> str | None:
    """The resolved path of the first `tool` (nvcc, ptxas) a shell finds on PATH."""
    return ((snap.value("cuda.path_tools") or {}).get(tool) or {}).get("resolved")


def tool_asked(snap: Snapshot, path: str, via: str = "") -> dict[str, Any] | None:
    """What an nvcc / ptxas answered to `--version` (cuda.run_tools), by its resolved path; or, given
    `via` and no path, the one reached that way ('XLA_FLAGS --xla_gpu_cuda_data_dir')."""
    for tool in snap.value("cuda.run_tools") or []:
        if (path and tool.get("resolved") == path) or (not path and via in (tool.get("via") or [])):
            return dict(tool)
    return None


def pythonpath_entry(info: dict[str, Any], snap: Snapshot) -> str | None:
    """The PYTHONPATH entry a framework is imported from (its location under it), else None."""
    location = os.path.realpath(str(info.get("location") or "")) if info.get("location") else ""
    entries = [e for e in str((snap.value("env") or {}).get("PYTHONPATH") or "").split(os.pathsep) if e]
    return next((e for e in entries if location.startswith(os.path.realpath(e).rstrip("/") + "/")), None)


# the facts say CUDA code is compiled here: an extension's setup.py, nvcc itself, a module built from source
BUILT_HERE = re.compile(
    r"setup\.py|\bbuil(?:t|d|ding)\b|\bcompil|\bnvcc\b|\bextension|\._(?:C|ext)\b|from source|\bcmake\b|CUDA_HOME"
    r"|TORCH_CUDA_ARCH_LIST|Unsupported gpu architecture",
    re.I,
)


def built_here(snap: Snapshot) -> bool:
    """Whether what is stated of the machine says CUDA code is compiled on it (not only wheels run)."""
    said = " ".join(str(snap.value(f"stated.{k}") or "") for k in ("other", "container"))
    said += " " + " ".join(str(info.get("stated") or "") for _, info in frameworks(snap))
    return BUILT_HERE.search(said) is not None
