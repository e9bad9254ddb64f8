"""Framework build ↔ GPU contracts: CPU-only builds, architectures, broken installs."""

from __future__ import annotations

import re
from typing import Any

from cudoctor import knowledge, versions
from cudoctor.checks import FRAMEWORK_FACTS, check, finding, view
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "Frameworks"

CPU_FIX = {
    "torch": "pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu126  (pick the cuXYZ your driver supports)",
    "tensorflow": "pip uninstall -y tensorflow-cpu && pip install 'tensorflow[and-cuda]'",
    "jax": "pip install -U 'jax[cuda12]'",
}


@check("cpu-only-build", "cpu-only-build", LAYER, requires_any=("gpu.devices", "gpu.pci"))
def cpu_only_build(snap: Snapshot) -> list[Finding]:
    """A framework is a CPU-only build on a machine that has an NVIDIA GPU."""
    if not view.has_gpu_hardware(snap):
        return []
    gpu_names = ", ".join(sorted({str(g.get("name", "GPU")) for g in view.gpus(snap)})) or "an NVIDIA GPU"
    out = []
    for name, info in view.frameworks(snap):
        if info.get("build") != "cpu":
            continue
        why = _cpu_reason(name, info, snap)
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
                fix=[CPU_FIX[name]] if name in CPU_FIX else [],
                subject=name,
                generic_fixes=name not in CPU_FIX,  # the cause's steps name every framework
            )
        )
    return out


def _cpu_reason(name: str, info: dict[str, Any], snap: Snapshot) -> str:
    os_name = str((snap.value("host.os") or {}).get("system", ""))
    v = versions.parse(str(info.get("version") or ""))
    if name == "tensorflow" and os_name == "Windows" and v and v >= (2, 11):
        return " (TensorFlow >= 2.11 has no GPU support on native Windows: use WSL2 or tensorflow<2.11)"
    if name == "tensorflow" and "cpu" in str(info.get("dist") or ""):
        return " (the tensorflow-cpu package)"
    return ""


@check("arch-unsupported", "arch-unsupported", LAYER, requires=("gpu.devices",))
def arch_unsupported(snap: Snapshot) -> list[Finding]:
    """A GPU's compute capability is missing from a framework build (GPU too new or dropped)."""
    out = []
    for gpu in view.gpus(snap):
        cc = gpu.get("cc_t")
        if cc is None:
            continue
        for name, info in view.cuda_frameworks(snap):
            hit = _arch_finding(gpu, cc, name, info)
            if hit:
                out.append(hit)
    return out


def _arch_finding(
    gpu: dict[str, Any], cc: versions.Version, name: str, info: dict[str, Any]
) -> Finding | None:
    archs, where = view.framework_archs(name, info)
    gname = f"{gpu.get('name', 'GPU')} (compute capability {versions.cc_str(cc)})"
    if archs:
        support = knowledge.arch_support(cc, archs)
        listed = " ".join(archs)
        rng = knowledge.toolkit_cc_range(str(info["cuda"]))
        beyond = rng is not None and cc > rng[1]  # the GPU is newer than the build's CUDA knows
        evidence = [f"arch list ({where}): {listed}"]
        if rng is not None:
            evidence.append(f"CUDA {info['cuda']} targets up to sm_{rng[1][0]}{rng[1][1]}")
        if support == "sass" and beyond and rng is not None:
            return finding(
                "arch-newer-than-build-cuda",
                "arch-unsupported",
                Severity.ERROR,
                f"{gname} is newer than CUDA {info['cuda']} (which knows up to {versions.cc_str(rng[1])}): {view.describe(name, info)} runs older-arch kernels on it, but its cuBLAS/cuDNN predate this GPU",
                LAYER,
                evidence=evidence,
                fix=[_arch_fix(name, cc)],
                confidence="likely",
                subject=name,
            )
        if support == "sass":
            return None
        if support == "ptx" and beyond and rng is not None:
            return finding(
                "arch-unsupported",
                "arch-unsupported",
                Severity.ERROR,
                f"{gname} is newer than anything CUDA {info['cuda']} knows (up to {versions.cc_str(rng[1])}): {view.describe(name, info)} only has PTX for it, and its cuBLAS/cuDNN have no kernels for this GPU",
                LAYER,
                evidence=evidence,
                fix=[_arch_fix(name, cc)],
                subject=name,
            )
        if support == "ptx":
            return finding(
                "arch-ptx-jit-only",
                "arch-unsupported",
                Severity.WARNING,
                f"{view.describe(name, info)} has no native code for {gname}; it runs through PTX JIT (slow first start, no arch-specific kernels)",
                LAYER,
                evidence=[f"arch list ({where}): {listed}"],
                fix=[_arch_fix(name, cc)],
                subject=name,
            )
        return finding(
            "arch-unsupported",
            "arch-unsupported",
            Severity.ERROR,
            f"{view.describe(name, info)} has no kernels for {gname}: its build supports {listed}",
            LAYER,
            evidence=[f"arch list ({where}): {listed}"],
            fix=[_arch_fix(name, cc)],
            subject=name,
        )
    rng = knowledge.toolkit_cc_range(str(info["cuda"]))
    if rng is None or rng[0] <= cc <= rng[1]:
        return None
    side = "too new" if cc > rng[1] else "too old"
    return finding(
        "arch-unsupported",
        "arch-unsupported",
        Severity.ERROR,
        f"{gname} is {side} for {view.describe(name, info)}: CUDA {info['cuda']} builds cover compute capability {versions.cc_str(rng[0])}..{versions.cc_str(rng[1])}",
        LAYER,
        evidence=[f"CUDA {info['cuda']} can target sm_{rng[0][0]}{rng[0][1]}..sm_{rng[1][0]}{rng[1][1]}"],
        fix=[_arch_fix(name, cc)],
        confidence="likely",
        subject=name,
    )


def _arch_fix(name: str, cc: versions.Version) -> str:
    if name == "torch":
        if cc < (7, 5):
            return "pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu126  (the last variant that keeps sm_50..sm_70)"
        if cc >= (10, 0):
            return "pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu130  (Blackwell needs CUDA >= 12.8 builds)"
        return "pip install --upgrade torch  (current wheels cover compute capability 7.5..12.0)"
    if name == "tensorflow":
        return "pip install --upgrade 'tensorflow[and-cuda]'  (or build TensorFlow from source for this GPU)"
    return f"Install a {view.LABEL.get(name, name)} build made with a CUDA that supports compute capability {versions.cc_str(cc)}"


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
            out.append(
                finding(
                    f"broken-{name}",
                    "broken-install",
                    Severity.ERROR,
                    f"{view.describe(name, info)} is installed but broken: {problems[0]}",
                    LAYER,
                    evidence=problems,
                    fix=[
                        f"pip install --force-reinstall --no-deps {name}=={str(info.get('version') or '').split('+')[0]}"
                    ],
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
