"""Framework build ↔ GPU architecture: a GPU's compute capability against the architectures a build
carries (read from its files, or the official wheels' lists), else the range its CUDA can build for.

SASS (sm_XY) runs on GPUs of the same major with an equal or higher minor (sm_80 on 8.6 and 8.9,
never sm_86 on 8.0); arch-specific variants (sm_90a) only on their own compute capability; PTX
(compute_XY) is JIT-compiled for any newer GPU (knowledge.arch_support)."""

from __future__ import annotations

import re
from typing import Any

from cudoctor import knowledge, versions
from cudoctor.checks import check, finding, view
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "Frameworks"


@check("arch-unsupported", "arch-unsupported", LAYER, requires=("gpu.devices",))
def arch_unsupported(snap: Snapshot) -> list[Finding]:
    """A GPU's compute capability is missing from a framework build (GPU too new or dropped), or is below
    Triton's floor (7.0) where the facts say the work compiles with Triton (torch.compile, inductor)."""
    out = []
    for gpu in view.gpus(snap):
        cc = gpu.get("cc_t")
        if cc is None:
            continue
        for name, info in view.arch_frameworks(snap):
            hit = _arch_finding(gpu, cc, name, info)
            if hit:
                out.append(hit)
            broken = _library_fails(gpu, cc, name, info)
            if broken:
                out.append(broken)
        for name, info in view.frameworks(snap):
            hit = (
                _no_build_fits(gpu, cc, name, info)
                or _below_said_floor(gpu, cc, name, info)
                or _below_every_release(gpu, cc, name, info)
            )
            if hit and not any(f.subject == name and f.id == hit.id for f in out):
                out.append(hit)
        triton = _below_triton_floor(snap, gpu, cc)
        if triton and not out:
            out.append(triton)
        ngc = _below_ngc_floor(snap, gpu, cc)
        if ngc and not out:
            out.append(ngc)
        out += _below_library_floors(snap, gpu, cc)
        said = (
            _said_build_lacks(snap, gpu, cc)
            or _said_cuda_predates(snap, gpu, cc)
            or _said_cuda_dropped(snap, gpu, cc)
        )
        if said and not out:
            out.append(said)
    return out


def _said_build_lacks(snap: Snapshot, gpu: dict[str, Any], cc: versions.Version) -> Finding | None:
    """A build whose architectures the facts state as numbers ('compiled with CUDA compute 50, 60, and 70', any
    library) and none of which runs on this GPU."""
    said = snap.value("build.archs_said")
    if not isinstance(said, dict) or knowledge.arch_support(cc, list(said["archs"])) != "none":
        return None
    return finding(
        "arch-unsupported",
        "arch-unsupported",
        Severity.ERROR,
        f"The build stated ('{said['said']}') holds code for {', '.join(said['archs'])} only; "
        f"{gpu.get('name', 'the GPU')} is compute capability {versions.cc_str(cc)}, which none of them runs on",
        LAYER,
        evidence=[f"stated: {said['said']}"],
        fix=[
            f"Install a build of it whose architectures include sm_{cc[0]}{cc[1]} (or PTX of an older one), or build "
            f"it from source for this GPU (CMAKE_CUDA_ARCHITECTURES={cc[0]}{cc[1]}, or TORCH_CUDA_ARCH_LIST="
            f"{versions.cc_str(cc)} for a PyTorch extension)"
        ],
    )


def _said_cuda(snap: Snapshot) -> tuple[str, tuple[versions.Version, versions.Version]] | None:
    """A build's CUDA stated without its framework, and the range of GPUs that CUDA compiles for; None where the
    build's architectures are stated (they decide) or the CUDA is unknown."""
    if isinstance(snap.value("build.archs_said"), dict):
        return None
    cuda = str(snap.value("build.cuda_said") or "")
    rng = knowledge.toolkit_cc_range(cuda)
    return (cuda, rng) if rng is not None else None


def _said_cuda_predates(snap: Snapshot, gpu: dict[str, Any], cc: versions.Version) -> Finding | None:
    """A build's CUDA stated without its framework ('framework_cuda: 12.6') that compiles no code of this GPU's
    major (CUDA 12.6 stops at 9.0, an RTX 5090 is 12.0): its own code can be at most PTX of an older
    architecture, JIT-compiled, and its CUDA libraries have no kernels for the GPU. Architectures stated for the
    build decide instead (_said_build_lacks)."""
    said = _said_cuda(snap)
    if said is None or cc[0] <= said[1][1][0]:
        return None
    cuda, rng = said
    span = knowledge.cuda_span_for_cc(versions.cc_str(cc))
    return finding(
        "arch-newer-than-build-cuda",
        "arch-unsupported",
        Severity.WARNING,
        f"{gpu.get('name', 'the GPU')} is compute capability {versions.cc_str(cc)}, and the build stated was made with "
        f"CUDA {cuda}, which compiles up to {versions.cc_str(rng[1])}: it can hold no native code for this GPU",
        LAYER,
        evidence=[
            f"stated: the build's CUDA {cuda}",
            f"CUDA {cuda} can target up to sm_{rng[1][0]}{rng[1][1]}",
        ],
        fix=[
            f"Install a build made with CUDA {span[0] if span else 'new enough'} or newer, which compiles sm_{cc[0]}{cc[1]} "
            f"(for PyTorch: a cu{(span[0] if span else '').replace('.', '')} wheel or newer; the framework's own command "
            'shows its list: python -c "import torch; print(torch.cuda.get_arch_list())")'
        ],
        confidence="likely",
    )


def _said_cuda_dropped(snap: Snapshot, gpu: dict[str, Any], cc: versions.Version) -> Finding | None:
    """A build's CUDA stated without its framework that no longer compiles for this GPU (CUDA 13 starts at 7.5: a
    GTX 1070 under a 'cuda13.1' build): neither its code nor its CUDA libraries hold anything this GPU runs."""
    said = _said_cuda(snap)
    if said is None or cc >= said[1][0]:
        return None
    cuda, rng = said
    span = knowledge.cuda_span_for_cc(versions.cc_str(cc))
    last = f" (CUDA {span[1]} is the last that compiles it)" if span else ""
    return finding(
        "arch-unsupported",
        "arch-unsupported",
        Severity.ERROR,
        f"{gpu.get('name', 'the GPU')} is compute capability {versions.cc_str(cc)}, and the build stated was made with "
        f"CUDA {cuda}, which compiles from {versions.cc_str(rng[0])} on: it holds no code this GPU runs",
        LAYER,
        evidence=[
            f"stated: the build's CUDA {cuda}",
            f"CUDA {cuda} targets sm_{rng[0][0]}{rng[0][1]} and newer",
        ],
        fix=[
            f"Install a build of it made with an older CUDA{last}, or build it from source for sm_{cc[0]}{cc[1]}"
        ],
        confidence="likely",
    )


def _below_library_floors(snap: Snapshot, gpu: dict[str, Any], cc: versions.Version) -> list[Finding]:
    """A library with CUDA kernels of its own (flash-attn 2, vLLM) whose builds start above this GPU
    (knowledge/gpu_floors.toml): its kernels do not run here, whatever the framework under it holds."""
    out = []
    for package, version in sorted((snap.value("python.packages") or {}).items()):
        row = knowledge.gpu_floor(str(package), str(version))
        floor = versions.cc_tuple(str(row["min_cc"])) if row else None
        if row is None or floor is None or cc >= floor:
            continue
        release = "" if version == "?" else f" {version}"
        out.append(
            finding(
                "library-gpu-floor",
                "arch-unsupported",
                Severity.WARNING,
                f"{package}{release} has kernels for compute capability {row['min_cc']} and newer only; "
                f"{gpu.get('name', 'the GPU')} is {versions.cc_str(cc)}: code that calls it fails on this GPU",
                LAYER,
                evidence=[f"{package} {row['spec']}: {row['source']}"],
                fix=[f"Use {row['instead']}"],
                subject=str(package),
            )
        )
    return out


def _below_ngc_floor(snap: Snapshot, gpu: dict[str, Any], cc: versions.Version) -> Finding | None:
    """An NGC container release supports GPUs from a compute capability on (6.0 from 18.12, 7.5 from 25.01, as
    its release notes say: knowledge/ngc.toml); below it its frameworks carry no kernels for the GPU."""
    row = snap.value("container.ngc") or {}
    floor = versions.cc_tuple(row.get("min_cc"))
    if floor is None or cc >= floor:
        return None
    older = [
        r["tag"]
        for r in knowledge.table("ngc")["release"]
        if (versions.cc_tuple(r.get("min_cc")) or (99, 0)) <= cc
    ]
    return finding(
        "arch-unsupported",
        "arch-unsupported",
        Severity.ERROR,
        f"{gpu.get('name', 'GPU')} (compute capability {versions.cc_str(cc)}) is below what NGC release {row['tag']} "
        f"supports (compute capability {row['min_cc']} and higher, its release notes say)",
        LAYER,
        evidence=[f"NGC {row['tag']}: {row['source']}"],
        fix=[
            f"Use an NGC release that still supports it ({older[-1]} is the newest whose notes say so) or a framework "
            "build outside the container that does"
            if older
            else f"No NGC release in knowledge/ngc.toml supports compute capability {versions.cc_str(cc)}: use a "
            "framework build outside NGC's containers that does, or a newer GPU"
        ],
        subject="container",
    )


# the stated work compiles GPU kernels with Triton: torch.compile / inductor, or Triton named itself
TRITON_USED = re.compile(r"\btriton\b|torch\.compile\b|\binductor\b", re.I)


def _below_triton_floor(snap: Snapshot, gpu: dict[str, Any], cc: versions.Version) -> Finding | None:
    """The facts say the work runs Triton kernels (torch.compile, inductor, a Triton backend) on a GPU below
    Triton's floor (compute capability 7.0: a Pascal or older card)."""
    said = " ".join(
        [str(snap.value(f"stated.{k}") or "") for k in ("other", "container")]
        + [str(info.get("stated") or "") for _, info in view.frameworks(snap)]
    )
    m = TRITON_USED.search(said)
    if m is None:
        return None
    row = knowledge.table("torch")["triton"]
    floor = versions.cc_tuple(str(row["min_cc"]))
    if floor is None or cc >= floor:
        return None
    return finding(
        "arch-unsupported",
        "arch-unsupported",
        Severity.WARNING,
        f"{gpu.get('name', 'GPU')} (compute capability {versions.cc_str(cc)}) is below Triton's floor "
        f"({versions.cc_str(floor)}), and the facts say the work uses it ({m.group(0)!r}): its kernels cannot be "
        "compiled for this GPU",
        LAYER,
        evidence=[row["source"]],
        fix=[
            "Run without Triton: turn compilation off (TORCHDYNAMO_DISABLE=1, or the application's own switch for "
            "torch.compile or its Triton backend), or run on a GPU of compute capability 7.0 or newer (Volta on)"
        ],
        subject="triton",
    )


def _below_said_floor(
    gpu: dict[str, Any], cc: versions.Version, name: str, info: dict[str, Any]
) -> Finding | None:
    """The framework's own message, pasted into the facts, names the lowest compute capability its build
    supports ('The minimum cuda capability supported by this library is 3.7') and the GPU is below it, or
    refuses this GPU ('with CUDA capability sm_61 is not compatible with the current PyTorch installation')."""
    gname = f"{gpu.get('name', 'GPU')} (compute capability {versions.cc_str(cc)})"
    refused = versions.cc_tuple(info.get("refused_cc"))
    floor = versions.cc_tuple(info.get("min_cc"))
    if refused is not None and refused == cc:
        title = f"{gname} is not in {view.describe(name, info)}'s build"
        said = f"the GPU's compute capability {versions.cc_str(cc)} is not supported"
    elif floor is not None and cc < floor:
        title = (
            f"{gname} is too old for {view.describe(name, info)}: its build supports compute capability "
            f"{versions.cc_str(floor)} and newer"
        )
        said = f"minimum compute capability {versions.cc_str(floor)}"
    else:
        return None
    return finding(
        "arch-unsupported",
        "arch-unsupported",
        Severity.ERROR,
        f"{title}, as its own message says",
        LAYER,
        evidence=[f"the framework's message: {said}"],
        fix=[_arch_fix(name, cc)],
        subject=name,
    )


def _below_every_release(
    gpu: dict[str, Any], cc: versions.Version, name: str, info: dict[str, Any]
) -> Finding | None:
    """A GPU below the lowest compute capability any official GPU build of the framework has had (a GRID K520,
    3.0, under a TensorFlow of any release): whichever release it is, none runs on it. Read only where no
    arch list of the build itself is known."""
    if info.get("build") == "cpu" or view.framework_archs(name, info)[0]:
        return None
    row = knowledge.every_release_floor(name)
    floor = versions.cc_tuple(row["min_cc"]) if row else None
    if row is None or floor is None or cc >= floor:
        return None
    return finding(
        "arch-unsupported",
        "arch-unsupported",
        Severity.ERROR,
        f"{gpu.get('name', 'GPU')} (compute capability {versions.cc_str(cc)}) is too old for every official "
        f"{view.describe(name, info)} GPU build: none has supported below {row['min_cc']}",
        LAYER,
        evidence=[f"{row['min_cc']}: {row['source']}"],
        fix=[
            f"No official {view.LABEL.get(name, name)} GPU build runs on it: build it from source for compute "
            f"capability {versions.cc_str(cc)}, or run on the CPU or a newer GPU"
        ],
        subject=name,
    )


def _no_build_fits(
    gpu: dict[str, Any], cc: versions.Version, name: str, info: dict[str, Any]
) -> Finding | None:
    """A release whose build nobody stated, but whose every GPU build is made with a CUDA too old for
    this GPU (TensorFlow 1.14: CUDA 10.0, on an Ampere GPU): whichever build it is, it cannot use it."""
    cuda = info.get("cuda_if_gpu")
    rng = knowledge.toolkit_cc_range(str(cuda)) if info.get("build") == "unknown" and cuda else None
    if rng is None or cc[0] <= rng[1][0]:
        return None
    return finding(
        "arch-unsupported",
        "arch-unsupported",
        Severity.ERROR,
        f"{gpu.get('name', 'GPU')} (compute capability {versions.cc_str(cc)}) is too new for {view.describe(name, info)}: "
        f"its GPU builds are made with CUDA {cuda}, which builds up to {versions.cc_str(rng[1])} (and a CPU build would not use it at all)",
        LAYER,
        evidence=[f"CUDA {cuda} can target sm_{rng[0][0]}{rng[0][1]}..sm_{rng[1][0]}{rng[1][1]}"],
        fix=[_arch_fix(name, cc)],
        confidence="likely",
        subject=name,
    )


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
            # SASS runs on any GPU of its major with an equal or higher minor (sm_80 on 8.6 and 8.9):
            # the build runs natively; only its libraries were made before this GPU
            return finding(
                "arch-newer-than-build-cuda",
                "arch-unsupported",
                Severity.INFO,
                f"{gname} is newer than CUDA {info['cuda']} (which knows up to {versions.cc_str(rng[1])}): {view.describe(name, info)} runs its compute capability {cc[0]}.x code on it (binary compatible within a major), but its cuBLAS/cuDNN have no kernels tuned for this GPU",
                LAYER,
                evidence=evidence,
                fix=[_arch_fix(name, cc)],
                confidence="possible",
                subject=name,
            )
        if support == "sass":
            return None
        if support == "ptx" and beyond and rng is not None and cc[0] > rng[1][0]:
            # a newer major than the build's CUDA knows: its libraries hold no code of this major either (an sm_89
            # GPU under CUDA 11.2 runs the libraries' sm_80/sm_86 code and JIT-compiles the build's compute_80)
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
            # TensorFlow's pip builds ship PTX for their newest architecture on purpose (2.3: compute_70 for
            # Turing and newer): by design, a slow first start, not a fault
            return finding(
                "arch-ptx-jit-only",
                "arch-unsupported",
                Severity.INFO if name == "tensorflow" else Severity.WARNING,
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
    if cc[0] == rng[1][0]:
        return _same_major_beyond(gname, cc, rng[1], name, info)
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


# The command that lists the architectures a build carries, where cudoctor has not read them.
ARCH_LIST_COMMAND = {
    "torch": 'python -c "import torch; print(torch.cuda.get_arch_list())"',
    "tensorflow": "python -c \"import tensorflow as tf; print(tf.sysconfig.get_build_info().get('cuda_compute_capabilities'))\"",
}


def _same_major_beyond(
    gname: str, cc: versions.Version, newest: versions.Version, name: str, info: dict[str, Any]
) -> Finding:
    """A GPU one minor past the build's CUDA within the same major (8.6 under CUDA 11.0, which builds
    up to sm_80): it runs sm_X0..sm_{newest} SASS if the build ships it, or JIT-compiles PTX."""
    sm = f"sm_{newest[0]}{newest[1]}"
    shows = ARCH_LIST_COMMAND.get(
        name, "cudoctor check (on that machine: it reads them from the build's files)"
    )
    return finding(
        "arch-newer-than-build-cuda",
        "arch-unsupported",
        Severity.INFO,
        f"{gname} is newer than CUDA {info['cuda']} (which builds up to {sm}): {view.describe(name, info)} runs on it "
        f"through compute capability {cc[0]}.x code it ships (binary compatible within a major) or PTX JIT",
        LAYER,
        evidence=[f"CUDA {info['cuda']} can target sm_{newest[0]}{newest[1]} at most"],
        fix=[f"Which architectures the build carries: {shows}", _arch_fix(name, cc)],
        confidence="possible",
        subject=name,
    )


def _library_fails(
    gpu: dict[str, Any], cc: versions.Version, name: str, info: dict[str, Any]
) -> Finding | None:
    """A CUDA library of the build's toolkit that fails on this GPU although the build's own code runs (cuFFT of
    CUDA 11.7 on an RTX 4090): a defect of that library's release, fixed by a build of a newer CUDA. Only where the
    build brings that library itself: PyTorch before 2.0 bundles it, conda's pytorch-cuda installs its CUDA's; from
    2.0 PyPI's wheels pin NVIDIA's (2.0.1's cu117 wheel pins nvidia-cufft-cu11 10.9.0.58, CUDA 11.8's), and
    TensorFlow and CuPy load the one installed."""
    if name != "torch":
        return None
    release = versions.parse(str(info.get("version") or ""))
    if release is not None and release >= (2, 0) and info.get("installer") != "conda":
        return None
    row = knowledge.library_without_forward_compat(str(info.get("cuda") or ""), cc)
    if row is None:
        return None
    return finding(
        "library-without-forward-compat",
        "library-bug",
        Severity.WARNING,
        f"{view.describe(name, info)} on {gpu.get('name', 'the GPU')} (compute capability {versions.cc_str(cc)}): "
        + _broken_library(row, str(info["cuda"])),
        LAYER,
        evidence=[f"{row['library']}: {row['source']}"],
        fix=[f"Install a {view.LABEL.get(name, name)} build made with CUDA {row['cuda_below']} or newer"],
        confidence="likely",
        subject=name,
    )


def _broken_library(row: dict[str, Any], cuda: str) -> str:
    """The words for a CUDA library of this toolkit that fails on the GPU (toolkit_archs.toml [[no_forward_compat]])."""
    return (
        f"its {row['library']} (CUDA {cuda}) fails on this GPU ('{row['symptom']}'): {row['library']} keeps no forward "
        f"compatibility, CUDA {row['cuda_below']} or newer runs"
    )


def _arch_fix(name: str, cc: versions.Version) -> str:
    """What to install, in words: the fix planner puts the command first (the release and wheel index
    whose architecture list holds this GPU and that the driver runs, from the knowledge tables), and
    drops this line where it did."""
    return f"Install a {view.LABEL.get(name, name)} build made with a CUDA that supports compute capability {versions.cc_str(cc)}"
