"""Framework build facts from the files each framework ships: no import, no CUDA init.

For each framework: version, CPU or CUDA build, the CUDA/cuDNN it was built for, the GPU
architectures compiled in (fatbin headers), which CUDA libraries it would load (ELF +
loader emulation), and which files of its own are missing or unreadable.
"""

from __future__ import annotations

import glob
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from cudoctor import versions
from cudoctor.facts import buildinfo
from cudoctor.facts.elf import ElfError, read_elf
from cudoctor.facts.fatbin import fatbin_archs, sm_list
from cudoctor.facts.loader import Loader, Resolution, needed_closure
from cudoctor.facts.packages import Dist, find_package_dir, split_requirement
from cudoctor.facts.symvers import all_runtime_versions
from cudoctor.knowledge import CUDA_LIB, RUNTIME_LIB
from cudoctor.model import Fact, absent, failed, known
from cudoctor.paths import is_under


def cuda_lib_names(cuda: str | None, cudnn: str | None) -> list[str]:
    """Sonames a build for CUDA `cuda` and cuDNN `cudnn` will dlopen."""
    mm = versions.major_minor(cuda)
    names: list[str] = []
    if mm is not None:
        major = mm[0]
        cudart = "libcudart.so.11.0" if major == 11 else f"libcudart.so.{major}"
        names += [cudart, f"libcublas.so.{major}", f"libcublasLt.so.{major}"]
    cudnn_v = versions.parse(cudnn)
    if cudnn_v:
        names.append(f"libcudnn.so.{cudnn_v[0]}")
    return names


def _requires_pin(dist: Dist | None, prefix: str) -> str | None:
    """The version a dependency is built for: its exact pin ('nvidia-cudnn-cu12==9.1.0.70' ->
    '9.1.0.70', torch) or its lower bound ('nvidia-cudnn-cu12<10.0,>=9.8; extra == "with-cuda"'
    -> '9.8', the JAX plugin, built with the cuDNN it asks at least for)."""
    if dist is None:
        return None
    for req in dist.requires:
        parts = split_requirement(req)
        if parts is None or not parts[0].startswith(prefix):
            continue
        floor = versions.floor(parts[1])
        if floor:
            return floor[1]
    return None


def _libs_report(
    starts: Sequence[str], loader: Loader, root: str, extra_names: Sequence[str]
) -> dict[str, Any]:
    """Resolve a framework's own libraries transitively plus the CUDA libs it dlopens."""
    site = os.path.dirname(root)
    closure = needed_closure([s for s in starts if os.path.exists(s)], loader, follow_under=(site,))
    libs = {
        name: res.to_json()
        for name, res in closure.resolved.items()
        if CUDA_LIB.match(name) or RUNTIME_LIB.match(name)
    }
    missing = [{"name": n, "needed_by": os.path.relpath(by, site)} for n, by in closure.missing]
    anchor = next((s for s in starts if os.path.exists(s)), None)
    if anchor is not None:
        try:
            info = read_elf(anchor)
            for name in extra_names:
                if name not in libs:
                    res = loader.resolve(name, info)
                    libs[name] = res.to_json()
        except ElfError as exc:
            closure.unreadable.append(str(exc))
    runtimes = all_runtime_versions(
        closure.visited, closure.resolved, loader.ld_library_path, loader.interpreter
    )
    return {
        "libs": libs,
        "own_libs_elsewhere": _own_libs_elsewhere(closure.resolved, site),
        "missing_needed": missing,
        "unreadable": closure.unreadable,
        "runtime_versions": runtimes,
    }


def _own_libs_elsewhere(resolved: dict[str, Resolution], site: str) -> dict[str, Any]:
    """Libraries the framework ships itself (a copy under site-packages is among the candidates)
    that the loader would take from somewhere else, e.g. a libtorch on LD_LIBRARY_PATH.
    CUDA and C/C++ runtime libraries are left to their own facts."""
    out: dict[str, Any] = {}
    for name, res in resolved.items():
        if res.path is None or is_under(res.path, site) or CUDA_LIB.match(name) or RUNTIME_LIB.match(name):
            continue
        own = next((p for p, _via in res.candidates if is_under(p, site)), None)
        if own is not None:
            out[name] = {**res.to_json(), "own": own, "sizes": [_size(res.path), _size(own)]}
    return out


def _size(path: str) -> int | None:
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def _first(paths: Sequence[str]) -> str | None:
    return next((p for p in paths if os.path.exists(p)), None)


# torch/lib's core libraries as each platform's wheels name them (a macOS arm64 wheel has
# libtorch_cpu.dylib and libc10.dylib; Windows wheels torch_cpu.dll and c10.dll)
TORCH_CORE = {
    "darwin": ("libtorch_cpu.dylib", "libc10.dylib"),
    "win32": ("torch_cpu.dll", "c10.dll"),
}


def read_torch(root: str, dist: Dist | None, loader: Loader, platform: str = sys.platform) -> dict[str, Any]:
    info: dict[str, Any] = {"location": root, "dist_version": dist.version if dist else None}
    ver = buildinfo.literal_assignments(os.path.join(root, "version.py"))
    info["version"] = ver.get("__version__")
    info["cuda"] = ver.get("cuda")
    info["hip"] = ver.get("hip")
    info["build"] = "cuda" if ver.get("cuda") else "rocm" if ver.get("hip") else "cpu"
    info["mps"] = platform == "darwin"  # macOS builds drive Apple GPUs through MPS
    info["cudnn"] = _requires_pin(dist, "nvidia-cudnn")
    lib = os.path.join(root, "lib")
    info["broken"] = [
        f"{os.path.join(lib, n)} is missing"
        for n in TORCH_CORE.get(platform, ("libtorch_cpu.so", "libc10.so"))
        if not os.path.exists(os.path.join(lib, n))
    ]
    cuda_lib = os.path.join(lib, "libtorch_cuda.so")
    if info["build"] == "cuda":
        info["cpp_extension_arches"] = buildinfo.cpp_extension_arches(
            os.path.join(root, "utils", "cpp_extension.py")
        )
        if os.path.exists(cuda_lib):
            archs = fatbin_archs(cuda_lib)
            info["archs"] = sm_list(archs) if archs is not None else None
        else:
            info["broken"].append(f"{cuda_lib} is missing")
    starts = [
        *glob.glob(os.path.join(root, "_C*.so")),
        cuda_lib,
        os.path.join(lib, "libtorch_global_deps.so"),
    ]
    info.update(
        _libs_report(
            starts,
            loader,
            root,
            cuda_lib_names(info["cuda"], info["cudnn"]) if info["build"] == "cuda" else [],
        )
    )
    return info


def read_tensorflow(root: str, dist: Dist | None, loader: Loader) -> dict[str, Any]:
    info: dict[str, Any] = {
        "location": root,
        "version": dist.version if dist else None,
        "dist": dist.name if dist else None,
    }
    bi = buildinfo.tensorflow_build_info(os.path.join(root, "python", "platform", "build_info.py"))
    info["build_info"] = {k: v for k, v in bi.items() if isinstance(v, (str, bool, int, list))}
    info["build"] = "cuda" if bi.get("is_cuda_build") else "rocm" if bi.get("is_rocm_build") else "cpu"
    info["cuda"] = bi.get("cuda_version")
    info["cudnn"] = bi.get("cudnn_version")
    caps = bi.get("cuda_compute_capabilities")
    info["archs"] = (
        [c if c.startswith(("sm_", "compute_")) else f"sm_{c.replace('.', '')}" for c in caps]
        if caps
        else None
    )
    core = _first(
        [
            os.path.join(root, "python", "_pywrap_tensorflow_internal.so"),
            os.path.join(root, "python", "_pywrap_tensorflow_internal.pyd"),  # Windows
            os.path.join(root, "libtensorflow_framework.so.2"),
            os.path.join(root, "libtensorflow_framework.2.dylib"),  # macOS
        ]
    )
    info["broken"] = [] if core else [f"{root}/python/_pywrap_tensorflow_internal.so is missing"]
    names = cuda_lib_names(info["cuda"], info["cudnn"]) if info["build"] == "cuda" else []
    starts = [p for p in (core, os.path.join(root, "libtensorflow_framework.so.2")) if p]
    info.update(_libs_report(starts, loader, root, names))
    return info


def read_jax(sys_path: Sequence[str], dists: dict[str, Dist], loader: Loader) -> dict[str, Any]:
    jax, jaxlib = dists.get("jax"), dists.get("jaxlib")
    info: dict[str, Any] = {
        "version": jax.version if jax else None,
        "jaxlib": jaxlib.version if jaxlib else None,
    }
    plugins = sorted(n for n in dists if re.match(r"jax-cuda\d+-(plugin|pjrt)$", n))
    info["plugins"] = {n: dists[n].version for n in plugins}
    majors = sorted({re.search(r"cuda(\d+)", n).group(1) for n in plugins if re.search(r"cuda(\d+)", n)})  # type: ignore[union-attr]
    info["build"] = "cuda" if majors else "cpu"
    info["cuda"] = f"{majors[-1]}.0" if majors else None
    plugin_pkg = f"jax_cuda{majors[-1]}_plugin" if majors else None
    info["cudnn"] = _requires_pin(dists.get(plugins[0]) if plugins else None, "nvidia-cudnn")
    info["broken"] = []
    if jaxlib is None:
        info["broken"].append("jax is installed but jaxlib is not")
    if plugin_pkg:
        pdir = find_package_dir(sys_path, plugin_pkg)
        pjrt = (
            glob.glob(
                os.path.join(os.path.dirname(pdir or ""), "jax_plugins", f"xla_cuda{majors[-1]}", "*.so")
            )
            if pdir
            else []
        )
        if pdir is None:
            info["broken"].append(f"{plugin_pkg} metadata is installed but the package directory is missing")
        else:
            archs = fatbin_archs(pjrt[0]) if pjrt else None
            info["archs"] = sm_list(archs) if archs else None
            starts = [*glob.glob(os.path.join(pdir, "_versions*.so")), *pjrt]
            cudnn_major = "9" if info["cudnn"] is None else info["cudnn"]
            info.update(_libs_report(starts, loader, pdir, cuda_lib_names(info["cuda"], cudnn_major)))
    return info


def read_cupy(dists: dict[str, Dist], sys_path: Sequence[str]) -> dict[str, Any]:
    names = sorted(n for n in dists if n.startswith("cupy"))
    info: dict[str, Any] = {"dists": {n: dists[n].version for n in names}, "broken": []}
    if len(names) > 1:
        info["broken"].append(f"several CuPy packages installed at once: {', '.join(names)}")
    m = re.search(r"cupy-cuda(\d+)x?$", names[0]) if names else None
    info["version"] = dists[names[0]].version if names else None
    info["build"] = "rocm" if names and "rocm" in names[0] else "cuda"
    info["cuda"] = (
        f"{m.group(1)}.0"
        if m and len(m.group(1)) <= 2
        else versions.cuda_from_variant(f"cu{m.group(1)}")
        if m
        else None
    )
    root = find_package_dir(sys_path, "cupy")
    wheel_json = os.path.join(root, ".data", "_wheel.json") if root else ""
    if wheel_json and os.path.exists(wheel_json):
        info["wheel"] = buildinfo.read_json(wheel_json)
    return info


def framework_facts(sys_path: Sequence[str], dists: list[Dist], loader: Loader) -> list[Fact]:
    """One `framework.<name>` fact per framework: known, absent or error."""
    by_name = {d.name: d for d in dists}
    readers: list[tuple[str, Callable[[], dict[str, Any]] | None]] = []
    torch_dir = find_package_dir(sys_path, "torch")
    readers.append(
        ("torch", (lambda: read_torch(torch_dir, by_name.get("torch"), loader)) if torch_dir else None)
    )
    tf_dir = find_package_dir(sys_path, "tensorflow")
    tf_dist = next(
        (
            by_name[n]
            for n in ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tf-nightly")
            if n in by_name
        ),
        None,
    )
    readers.append(("tensorflow", (lambda: read_tensorflow(tf_dir, tf_dist, loader)) if tf_dir else None))
    readers.append(("jax", (lambda: read_jax(sys_path, by_name, loader)) if "jax" in by_name else None))
    has_cupy = any(n.startswith("cupy") for n in by_name)
    readers.append(("cupy", (lambda: read_cupy(by_name, sys_path)) if has_cupy else None))
    facts: list[Fact] = []
    for name, reader in readers:
        key = f"framework.{name}"
        if reader is None:
            facts.append(absent(key, "sys.path scan", f"{name} is not installed"))
            continue
        try:
            facts.append(known(key, reader(), "package files (no import)"))
        except (OSError, ValueError, SyntaxError, KeyError) as exc:
            facts.append(
                failed(key, "package files", f"{name} is installed but its files cannot be read: {exc}")
            )
    return facts
