"""Framework build ↔ GPU contracts: CPU-only builds, architectures, broken installs."""

from __future__ import annotations

import re
from typing import Any

from cudoctor import knowledge, versions
from cudoctor.checks import FRAMEWORK_FACTS, check, finding, tf_windows, view
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "Frameworks"

# The frameworks whose CUDA install the fix planner computes from the knowledge tables (the wheel index
# and release a driver and GPU run, TensorFlow's tested builds, JAX's CUDA extras): their findings carry
# no install command of their own, and not the cause's general steps for every framework.
PLANNED = ("torch", "tensorflow", "jax")


@check(
    "cpu-only-build",
    "cpu-only-build",
    LAYER,
    requires_any=("gpu.devices", "gpu.pci", "driver.version", "stated.gpu_wanted"),
)
def cpu_only_build(snap: Snapshot) -> list[Finding]:
    """A framework is a CPU-only build on a machine that has an NVIDIA GPU (or, in stated facts that name
    no GPU, where the person says they want the GPU: a CUDA toolkit, 'GPU', 'CUDA' in what they wrote)."""
    if not view.has_gpu_hardware(snap) and not snap.value("stated.gpu_wanted"):
        return []
    gpu_names = ", ".join(sorted({str(g.get("name", "GPU")) for g in view.gpus(snap)})) or "an NVIDIA GPU"
    out = []
    for name, info in view.frameworks(snap):
        if info.get("build") != "cpu":
            continue
        if name == "tensorflow" and tf_windows.cpu_only_there(snap, info):
            out.append(tf_windows.windows_finding(snap, info, "cpu-only-tensorflow"))
            continue
        why = _cpu_reason(name, info)
        out.append(
            finding(
                f"cpu-only-{name}",
                "cpu-only-build",
                Severity.ERROR if name == "torch" else Severity.WARNING,
                f"{view.describe(name, info)} is a CPU-only build, so it cannot use {gpu_names}{why}",
                LAYER,
                evidence=[
                    f"framework.{name}.build = cpu",
                    f"framework.{name}.version = {info.get('version')}",
                ],
                subject=name,
                generic_fixes=name not in PLANNED,  # the cause's steps name every framework
            )
        )
    return out


def _cpu_reason(name: str, info: dict[str, Any]) -> str:
    if name == "tensorflow" and "cpu" in str(info.get("dist") or ""):
        return " (the tensorflow-cpu package)"
    return ""


@check("broken-install", "broken-install", LAYER, requires_any=(*FRAMEWORK_FACTS, "python.package_problems"))
def broken_install(snap: Snapshot) -> list[Finding]:
    """A framework's package files are missing, unreadable or its metadata is corrupt."""
    out = []
    for name in view.FRAMEWORKS:
        fact = snap.get(f"framework.{name}")
        if fact is None:
            continue
        if fact.status.value == "error":
            out.append(
                finding(
                    f"broken-{name}",
                    "broken-install",
                    Severity.ERROR,
                    fact.detail.splitlines()[0],
                    LAYER,
                    evidence=[fact.detail],
                    subject=name,
                )
            )
            continue
        info = fact.value if fact.known and isinstance(fact.value, dict) else {}
        problems = list(info.get("broken") or [])
        problems += [
            f"{m['name']} (needed by {m['needed_by']}) cannot be found"
            for m in info.get("missing_needed") or []
            if not view.CUDA_LIB.match(m["name"])
        ]
        if problems:
            via = view.pythonpath_entry(info, snap)
            where = (
                [f"this copy is imported through PYTHONPATH ({via}), ahead of the environment's own"]
                if via
                else []
            )
            out.append(
                finding(
                    f"broken-{name}",
                    "broken-install",
                    Severity.ERROR,
                    f"{view.describe(name, info)} is installed but broken: {problems[0]}",
                    LAYER,
                    evidence=[*problems, *where],  # the steps: fixes/steps.py broken_install
                    subject=name,
                )
            )
    for problem in snap.value("python.package_problems") or []:
        out.append(
            finding(
                "broken-metadata",
                "broken-install",
                Severity.WARNING,
                str(problem),
                LAYER,
                evidence=[str(problem)],
            )
        )
    return out


@check("companion-version-mismatch", "multiple-toolkits", LAYER, requires=("python.pins", "python.packages"))
def companion_version_mismatch(snap: Snapshot) -> list[Finding]:
    """A package compiled against torch / jaxlib / tensorflow states the exact version it needs,
    and another one is installed (torchvision: 'operator torchvision::nms does not exist')."""
    installed = snap.value("python.packages") or {}
    out = []
    for pin in snap.value("python.pins") or []:
        have = installed.get(pin["requires"])
        if have is None or versions.satisfies(str(have), pin["spec"]) is not False:
            continue
        want = f"{pin['requires']}{pin['spec']}"
        out.append(
            finding(
                "companion-version-mismatch",
                "multiple-toolkits",
                Severity.ERROR,
                f"{pin['package']} {pin['version']} was built for {want}, but {pin['requires']} {have} is installed: "
                "its compiled parts will not load (missing operators, undefined symbols)",
                LAYER,
                evidence=[f"{pin['package']} Requires-Dist: {want}", f"installed {pin['requires']} = {have}"],
                fix=[
                    f"Install them together so pip picks matching builds: pip install '{pin['requires']}=={have}' "
                    f"{pin['package']}{_build_index(pin['requires'], str(have))}  "
                    f"(or pip install '{want}' to keep {pin['package']} {pin['version']})"
                ],
                subject=pin["requires"],
                also=["binary-incompatible"],  # compiled against the other version: the ABI side of it
                generic_fixes=False,  # the cause's steps are about loader paths, not a version pin
            )
        )
    return out


def _build_index(requires: str, have: str) -> str:
    """The index of the build torch was installed from (2.13.0+cu128: cu128), so pip takes the companion
    of that build, not PyPI's default one; nothing for a version without a local tag."""
    tag = have.partition("+")[2]
    if requires != "torch" or not re.fullmatch(r"cpu|cu\d+|rocm[\d.]+", tag):
        return ""
    return f" --index-url https://download.pytorch.org/whl/{tag}"


@check("numpy-abi-mismatch", "binary-incompatible", LAYER, requires=("python.packages",))
def numpy_abi_mismatch(snap: Snapshot) -> list[Finding]:
    """NumPy 2 is installed next to a framework built against NumPy 1.x (torch < 2.3, TensorFlow < 2.18, jaxlib < 0.4.26):
    its import warns 'compiled using NumPy 1.x' and tensor <-> array conversion fails."""
    installed = snap.value("python.packages") or {}
    numpy = installed.get("numpy")
    if numpy is None or (versions.parse(str(numpy)) or (0,)) < (2,):
        return []
    out = []
    for row in knowledge.table("numpy_abi")["module"]:
        for dist in row["dists"]:
            have = installed.get(dist)
            built_old = have is not None and versions.satisfies(str(have), f"<{row['numpy2_from']}")
            if not built_old:
                continue
            out.append(
                finding(
                    "numpy-abi-mismatch",
                    "binary-incompatible",
                    Severity.ERROR,
                    f"{dist} {have} was built against NumPy 1.x, and NumPy {numpy} is installed: "
                    "its NumPy interop fails ('_ARRAY_API not found', 'Numpy is not available')",
                    LAYER,
                    evidence=[f"installed numpy = {numpy}", f"installed {dist} = {have}", row["source"]],
                    fix=[
                        "pip install 'numpy<2'",
                        f"or upgrade: pip install -U '{dist}>={row['numpy2_from']}' (built against NumPy 2, runs with both)",
                    ],
                    subject=dist,
                    generic_fixes=False,  # the cause's steps add MKL and glibc, which this is not
                )
            )
    return out


CUPY_PACKAGE = re.compile(r"cupy(?:-cuda\d+x?|-rocm-[\d-]+)?$")  # the source package and its binary wheels


@check("multiple-cupy-packages", "multiple-toolkits", LAYER, requires=("python.packages",))
def multiple_cupy_packages(snap: Snapshot) -> list[Finding]:
    """More than one CuPy package is installed (cupy-cuda12x beside cupy-cuda13x, a source build beside a wheel):
    they write the same cupy/ directory, and whichever was installed last left a mix of both."""
    installed = snap.value("python.packages") or {}
    cupys = sorted(n for n in installed if CUPY_PACKAGE.match(n))
    if len(cupys) < 2:
        return []
    listed = ", ".join(f"{n} {installed[n]}" for n in cupys)
    return [
        finding(
            "multiple-cupy-packages",
            "multiple-toolkits",
            Severity.ERROR,
            f"{len(cupys)} CuPy packages are installed ({listed}): they share one cupy/ directory, so the files are a mix of both",
            LAYER,
            evidence=[f"installed: {listed}"],
            fix=[
                f"Remove them all: pip uninstall -y {' '.join(cupys)} (and conda uninstall cupy if conda put one "
                "there); then install the one wheel for the CUDA major your driver supports (nvidia-smi's CUDA "
                "Version): pip install cupy-cuda12x or cupy-cuda13x"
            ],
            subject="cupy",
            generic_fixes=False,
        )
    ]


# a CuPy that brings its CUDA libraries itself: CuPy 14's [ctk] extra, or conda's cupy (conda's cudatoolkit)
CUPY_OWN_LIBS = re.compile(r"\[ctk\]|\bconda\b", re.I)


@check("cupy-cuda-mismatch", "cuda-libs-missing", LAYER, requires=("cuda.toolkits", "framework.cupy"))
def cupy_cuda_mismatch(snap: Snapshot) -> list[Finding]:
    """A CuPy wheel built for one CUDA release on a machine whose toolkit is another: CuPy's wheels load the
    toolkit's libraries (libcudart, libnvrtc, libcublas) of the CUDA they were built for, by a soname that
    carries the minor before CUDA 11 (cupy-cuda92 wants libcudart.so.9.2) and the major from it."""
    cupy = snap.value("framework.cupy")
    if (
        not isinstance(cupy, dict)
        or cupy.get("build") != "cuda"
        or CUPY_OWN_LIBS.search(str(cupy.get("stated") or ""))
    ):
        return []
    built = versions.major_minor(str(cupy.get("cuda") or ""))
    toolkits = [
        (v, t)
        for t in snap.value("cuda.toolkits") or []
        if (v := versions.major_minor(str(t.get("version") or "")))
    ]
    if built is None or not toolkits:
        return []
    if any(
        str(w.get("name", "")).endswith(f"-cu{built[0]}") for w in snap.value("python.nvidia_wheels") or []
    ):
        return []
    # before CUDA 11 the sonames carry the minor (libcudart.so.10.0); from 11 the major only (cupy-cuda110
    # runs on a CUDA 11.1 toolkit: cupy/cupy#4043)
    exact = built < (11, 0)
    if any(v == built if exact else v[0] == built[0] for v, _ in toolkits):
        return []
    have = ", ".join(str(t["version"]) for _, t in toolkits)
    wanted = versions.fmt(built) if exact else str(built[0])
    # the steps (the wheel of the toolkit installed, or that CUDA) are the fix planner's, from these facts
    return [
        finding(
            "cupy-cuda-mismatch",
            "cuda-libs-missing",
            Severity.ERROR,
            f"{view.describe('cupy', cupy)} is built for CUDA {wanted} and loads that CUDA's libraries, but the CUDA installed is {have}",
            LAYER,
            evidence=[f"framework.cupy.cuda = {versions.fmt(built)}", f"cuda.toolkits: {have}"],
            about=["cupy"],
            subject="cupy",
            confidence="likely",
            generic_fixes=False,
        )
    ]
