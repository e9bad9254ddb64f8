"""Process settings: CUDA_HOME / CUDA_PATH / PATH / LD_LIBRARY_PATH against what is installed."""

from __future__ import annotations

import os
import re

from cudoctor import versions
from cudoctor.checks import FactMissing, check, finding, view
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "Environment"
CUDA_WORDS = re.compile(r"cuda|cudnn|nvidia|cublas|nccl", re.I)


def _toolkit_roots(snap: Snapshot) -> list[str]:
    return sorted(
        {str(t.get("root")) for t in snap.value("cuda.toolkits") or []}
        | {str(t.get("realpath")) for t in snap.value("cuda.toolkits") or []}
    )


@check("env-path-missing", "env-path-misconfig", LAYER, requires=("env.paths",))
def env_path_missing(snap: Snapshot) -> list[Finding]:
    """CUDA_HOME / CUDA_PATH name a directory that does not exist; CUDA-looking PATH / LD_LIBRARY_PATH entries that do not exist or cannot be read."""
    out = []
    roots = _toolkit_roots(snap)
    for var, entries in sorted((snap.value("env.paths") or {}).items()):
        for e in entries:
            path = str(e["path"])
            single = var not in ("PATH", "LD_LIBRARY_PATH")
            if not single and not CUDA_WORDS.search(path):
                continue
            if e.get("exists") and e.get("readable", True):
                continue
            if single and e.get("parts"):
                out.append(_path_list_finding(var, path, [str(p) for p in e["parts"]], roots))
                continue
            problem = "does not exist" if not e.get("exists") else "cannot be read by this user"
            hint = _closest(path, roots)
            fix = [f"export {var}={hint}" if single and hint else f"Remove {path} from {var}"]
            if hint and not single:
                fix.append(f"Did you mean {hint}?")
            out.append(
                finding(
                    f"env-{var.lower().replace('_', '-')}-missing",
                    "env-path-misconfig",
                    Severity.ERROR if single else Severity.WARNING,
                    f"{var} entry {path} {problem}" + (f" (installed toolkit: {hint})" if hint else ""),
                    LAYER,
                    evidence=[f"env:{var} = {view.env(snap).get(var, path)}"]
                    + [f"toolkit found at {r}" for r in roots[:3]],
                    fix=fix,
                )
            )
    return out


def _path_list_finding(var: str, value: str, parts: list[str], roots: list[str]) -> Finding:
    """CUDA_HOME="/usr/local/cuda-12.4:$CUDA_HOME": one directory written like a PATH list."""
    named = [p for p in parts if p]
    best = next((p for p in named if p.rstrip("/") in roots), named[0] if named else None)
    return finding(
        f"env-{var.lower().replace('_', '-')}-path-list",
        "env-path-misconfig",
        Severity.ERROR,
        f"{var} is written like a PATH list ({value}): it must name one directory, and tools that build {var}/bin/nvcc get '{value}/bin/nvcc', which does not exist",
        LAYER,
        evidence=[f"env:{var} = {value}"] + [f"toolkit found at {r}" for r in roots[:3]],
        fix=[
            f"export {var}={best}" if best else f"unset {var}",
            f"Fix the line in ~/.bashrc that sets {var} (e.g. export {var}=/usr/local/cuda, not export {var}=/usr/local/cuda:${var})",
        ],
    )


def _closest(path: str, roots: list[str]) -> str | None:
    import difflib  # only where a near match is wanted

    if not roots:
        return None
    base = path.rstrip("/")
    for suffix in ("/lib64", "/lib", "/bin"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
            hit = difflib.get_close_matches(base, roots, n=1, cutoff=0.5)
            return hit[0] + suffix if hit else None
    hit = difflib.get_close_matches(base, roots, n=1, cutoff=0.5)
    return hit[0] if hit else None


@check(
    "cuda-home-not-path-toolkit", "multiple-toolkits", LAYER, requires=("cuda.path_tools", "cuda.toolkits")
)
def cuda_home_not_path_toolkit(snap: Snapshot) -> list[Finding]:
    """CUDA_HOME / CUDA_PATH and the nvcc first on PATH belong to different toolkit versions."""
    env = view.env(snap)
    nvcc = view.path_tool(snap, "nvcc")
    path_tk = view.toolkit_at(os.path.dirname(os.path.dirname(nvcc)), snap) if nvcc else None
    out = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if not env.get(var) or path_tk is None:
            continue
        home_tk = view.toolkit_at(env[var], snap)
        if home_tk is None or home_tk.get("realpath") == path_tk.get("realpath"):
            continue
        hv, pv = versions.major_minor(home_tk.get("version")), versions.major_minor(path_tk.get("version"))
        if hv == pv:
            continue
        out.append(
            finding(
                f"{var.lower().replace('_', '-')}-not-path-toolkit",
                "multiple-toolkits",
                Severity.WARNING,
                f"{var} is CUDA {home_tk.get('version')} ({env[var]}) but nvcc on PATH is CUDA {path_tk.get('version')} ({nvcc}): builds mix two toolkits",
                LAYER,
                evidence=[f"env:{var} = {env[var]}", f"PATH nvcc -> {nvcc}"],
                fix=[
                    f"export PATH={home_tk.get('root')}/bin:$PATH",
                    f"or export {var}={path_tk.get('root')}",
                ],
            )
        )
    return out


@check("toolkits-shadow-on-path", "multiple-toolkits", LAYER, requires=("cuda.path_tools", "cuda.toolkits"))
def toolkits_shadow_on_path(snap: Snapshot) -> list[Finding]:
    """Two different toolkits' nvcc/ptxas are on PATH and an older one comes first."""
    tools = snap.value("cuda.path_tools") or {}
    out = []
    for tool in ("ptxas", "nvcc"):
        hits = (tools.get(tool) or {}).get("all") or []
        tks = [view.toolkit_at(os.path.dirname(os.path.dirname(os.path.realpath(h))), snap) for h in hits]
        # a copy that is no toolkit's bin/ (a ptxas copied anywhere) is known by its own --version
        vers = [
            (h, versions.parse((t or {}).get("version") or _asked_version(snap, h)))
            for h, t in zip(hits, tks, strict=False)
        ]
        vers = [(h, v) for h, v in vers if v]
        if len(vers) < 2:
            continue
        first, fv = vers[0]
        newest = max(vers, key=lambda hv: hv[1] or ())
        if newest[1] and fv and versions.cmp(fv, newest[1]) < 0:
            out.append(
                finding(
                    f"{tool}-older-first-on-path",
                    "multiple-toolkits",
                    Severity.WARNING,
                    f"{tool} {versions.fmt(fv)} ({first}) comes first on PATH, before {tool} {versions.fmt(newest[1])} ({newest[0]})",
                    LAYER,
                    evidence=[f"{h}: {versions.fmt(v)}" for h, v in vers],
                    fix=[f"export PATH={os.path.dirname(newest[0])}:$PATH"],
                )
            )
            break
    return out


@check("stated-nvcc-shadowed", "multiple-toolkits", LAYER, requires=("cuda.nvcc_said", "cuda.toolkits"))
def stated_nvcc_shadowed(snap: Snapshot) -> list[Finding]:
    """The nvcc a person quotes answers with an older release than another toolkit they state is installed (Ubuntu's
    apt nvidia-cuda-toolkit 11.5 in /usr/bin before the 11.8 just installed): a build picks the older one."""
    quoted = snap.value("cuda.nvcc_said") or {}
    said = versions.parse(str(quoted.get("release") or ""))
    if said is None:
        return []
    driver = {versions.major_minor(d) for d in quoted.get("driver_cuda_said") or []}
    kits = [
        v for t in snap.value("cuda.toolkits") or [] if (v := versions.parse(str(t.get("version") or "")))
    ]
    kits = [v for v in kits if v[:2] not in driver]  # nvidia-smi's 'CUDA Version' is the driver's, no toolkit
    newer = [v for v in kits if v[:2] > said[:2]]
    builds = {versions.major_minor(str(i.get("cuda"))) for _, i in view.frameworks(snap) if i.get("cuda")}
    if not newer or said[:2] in builds:  # the older nvcc is the one the framework's build needs (torch+cu118)
        return []
    want = versions.fmt(max(newer)[:2])
    return [
        finding(
            "stated-nvcc-shadowed",
            "multiple-toolkits",
            Severity.WARNING,
            f"nvcc answers with CUDA {versions.fmt(said[:2])}, while CUDA {want} is installed too: an older toolkit "
            "comes first, and builds (PyTorch extensions, CMake's FindCUDAToolkit) pick it",
            LAYER,
            evidence=[
                f"stated: nvcc {versions.fmt(said[:2])}",
                f"stated: toolkits {', '.join(versions.fmt(v) for v in kits)}",
            ],
            fix=[
                f"export PATH=/usr/local/cuda-{want}/bin:$PATH CUDA_HOME=/usr/local/cuda-{want} (which -a nvcc lists "
                "every copy in PATH order)",
                f"Or remove the older copy (Ubuntu's apt package: sudo apt remove nvidia-cuda-toolkit; it installs "
                f"/usr/bin/nvcc) so that CUDA {want} is the only one",
            ],
        )
    ]


def _asked_version(snap: Snapshot, hit: str) -> str | None:
    """What the tool at `hit` answered to --version (cuda.run_tools), whatever directory it sits in."""
    return next(
        (
            t.get("version")
            for t in snap.value("cuda.run_tools") or []
            if hit in (t.get("path"), t.get("resolved")) or os.path.realpath(hit) == t.get("resolved")
        ),
        None,
    )


GLOB_SPECIAL = re.compile(r"[\[\]]")


@check("install-path-brackets", "env-path-misconfig", LAYER, requires=("host.os", "framework.torch"))
def install_path_brackets(snap: Snapshot) -> list[Finding]:
    """Windows: torch installed under a folder whose name has [ or ]. torch preloads its DLLs with glob(torch\\lib\\*.dll), glob reads [..] as a pattern, and cuDNN's sub-libraries are then 'not located'."""
    if str((snap.value("host.os") or {}).get("system", "")).lower() != "windows":
        return []
    location = (snap.value("framework.torch") or {}).get("location")
    if not location:
        raise FactMissing("framework.torch.location")
    parts = re.split(r"[\\/]", str(location))
    bad = [p for p in parts if GLOB_SPECIAL.search(p)]
    if not bad:
        return []
    folder = str(location)[: str(location).index(bad[0]) + len(bad[0])]
    return [
        finding(
            "install-path-brackets",
            "env-path-misconfig",
            Severity.ERROR,
            f"torch is installed under {folder}, whose name has square brackets: torch's DLL preload finds no DLL there, and the first convolution fails with 'Could not locate cudnn_...dll'",
            LAYER,
            evidence=[
                f"torch at {location}",
                "torch/__init__.py: glob.glob(os.path.join(th_dll_path, '*.dll'))",
            ],
            fix=[
                f"Rename {folder} without [ ] (or move the environment to a path without them) and reinstall"
            ],
        )
    ]


@check(
    "temp-path-non-ascii",
    "env-path-misconfig",
    LAYER,
    requires=("host.os", "host.temp_dir", "python.packages"),
)
def temp_path_non_ascii(snap: Snapshot) -> list[Finding]:
    """Windows: the temp directory has non-ASCII characters (a user name in Chinese, Cyrillic, ...), and
    NVRTC cannot open the kernel source CuPy writes there: 'cannot open source file ...cubin.cu'."""
    if str((snap.value("host.os") or {}).get("system", "")).lower() != "windows":
        return []
    temp = str(snap.value("host.temp_dir"))
    cupy = sorted(n for n in snap.value("python.packages") or {} if n.startswith("cupy"))
    if temp.isascii() or not cupy:
        return []
    return [
        finding(
            "temp-path-non-ascii",
            "env-path-misconfig",
            Severity.WARNING,
            f"The temp directory {temp} has non-ASCII characters: {cupy[0]} compiles its kernels with NVRTC "
            "from files written there, and NVRTC fails with 'cannot open source file'",
            LAYER,
            evidence=[f"temp directory: {temp}", f"installed: {', '.join(cupy)}"],
            fix=[
                "Point TEMP and TMP at an ASCII-only folder (e.g. mkdir C:\\tmp, then set TEMP=C:\\tmp and "
                "set TMP=C:\\tmp, or in the user's environment variables), and set CUPY_CACHE_DIR to one too"
            ],
            subject="cupy",
        )
    ]


SMALL_SHM = 1 << 30  # bytes; Docker and Kubernetes give containers 64 MiB unless told otherwise


@check("shared-memory-small", "shm-exhausted", LAYER, requires=("host.shm",))
def shared_memory_small(snap: Snapshot) -> list[Finding]:
    """/dev/shm is too small for PyTorch DataLoader workers (a container's 64 MiB default)."""
    shm = snap.value("host.shm") or {}
    size, free = shm.get("size_bytes"), shm.get("free_bytes")
    if not isinstance(size, int) or size >= SMALL_SHM or "torch" not in dict(view.frameworks(snap)):
        return []
    container = snap.value("host.container")
    where = f"this {container} container's" if container else "this machine's"
    fix = (
        [
            "Start the container with more: docker run --shm-size=16g ... (or --ipc=host); docker compose: shm_size: '16gb'",
            "Kubernetes: mount an emptyDir with medium: Memory at /dev/shm",
        ]
        if container
        else ["sudo mount -o remount,size=16G /dev/shm (and set the size in /etc/fstab to keep it)"]
    )
    return [
        finding(
            "shared-memory-small",
            "shm-exhausted",
            Severity.WARNING,
            f"{where} /dev/shm holds {size >> 20} MiB: PyTorch DataLoader workers (num_workers > 0) pass "
            "batches through it and die with a bus error when it fills",
            LAYER,
            evidence=[f"{shm.get('path', '/dev/shm')}: {size >> 20} MiB, {(free or 0) >> 20} MiB free"],
            fix=[*fix, "Or use fewer DataLoader workers (num_workers=0 needs no shared memory)"],
        )
    ]
