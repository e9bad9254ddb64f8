"""Rules on compute capability: what the log says a GPU needs or was built for, against the GPUs
and CUDA versions the facts name."""

from __future__ import annotations

from typing import Any

from cudoctor import knowledge, versions
from cudoctor.checks import view
from cudoctor.explainer.ranked import CONFIRM, RULE_OUT, RankedCause, bump
from cudoctor.model import Snapshot

NEW_GPU = 0.3  # a GPU new enough for the too-old-library reading: it stays a reading, not a confirmation


def _older_than(gpus: list[dict[str, Any]], cc: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(GPUs whose compute capability the facts know, those of them older than `cc`)."""
    cc_t = versions.cc_tuple(cc)
    known = [g for g in gpus if g.get("cc_t")]
    return known, [g for g in known if cc_t and g["cc_t"] < cc_t]


def _gpu_cc(g: dict[str, Any]) -> str:
    return f"{g.get('name') or 'the GPU'} has compute capability {'.'.join(map(str, g['cc_t']))}"


def min_cc_rule(ranked: dict[str, RankedCause], need: str, gpus: list[dict[str, Any]]) -> None:
    """The failing feature needs compute capability `need`: the facts say whether this GPU has it. A GPU
    older than that confirms the reading; when every GPU the facts name has it, the reading is out."""
    known, older = _older_than(gpus, need)
    if older:
        bump(
            ranked,
            "arch-unsupported",
            CONFIRM,
            f"fact: {_gpu_cc(older[0])}; this feature needs {need} or newer",
        )
    elif known:
        bump(
            ranked,
            "arch-unsupported",
            -RULE_OUT,
            f"fact: {_gpu_cc(known[0])}, which has what this feature needs ({need} or newer)",
        )


def toolkit_versions(snap: Snapshot) -> list[str]:
    """The versions of the CUDA toolkits found or stated."""
    return [str(t.get("version")) for t in snap.value("cuda.toolkits") or [] if t.get("version")]


def cuda_versions(snap: Snapshot) -> list[str]:
    """CUDA versions the facts name: toolkits found or stated, and the frameworks' builds."""
    found = toolkit_versions(snap)
    found += [str(info["cuda"]) for _, info in view.frameworks(snap) if info.get("cuda")]
    return list(dict.fromkeys(found))


def arch_option_rule(
    ranked: dict[str, RankedCause], cc: str, cudas: list[str], gpu: str | None = None, tool: str = "NVRTC"
) -> None:
    """The log names the architecture NVRTC (or ptxas, `tool`) was asked for (-arch=compute_21), or `gpu`
    names the GPU whose own architecture it was: say which CUDA versions can build for it, and whether
    the CUDA the facts name is one of them."""
    asked = (
        f"{tool} was asked for {gpu}'s compute capability {cc}"
        if gpu
        else f"the log asks {tool} for compute capability {cc}"
    )
    span = knowledge.cuda_span_for_cc(cc)
    if span is None:
        return
    want = versions.cc_tuple(cc) or (0,)
    for cuda in cudas:
        lo_hi = knowledge.toolkit_cc_range(cuda)
        if lo_hi is None or lo_hi[0] <= want <= lo_hi[1]:
            continue
        old = want < lo_hi[0]
        reason = f"{asked}; CUDA {cuda} builds for {versions.cc_str(lo_hi[0])} to {versions.cc_str(lo_hi[1])}"
        fix = (
            f"This GPU (compute capability {cc}) is older than CUDA {cuda} supports: CUDA {span[1]} is the last "
            f"toolkit that builds for it. Use CUDA {span[1]} with a CuPy/PyTorch built for it, or a newer GPU"
            if old
            else f"This GPU (compute capability {cc}) is newer than CUDA {cuda} knows: install a CuPy/PyTorch "
            f"built with CUDA {span[0]} or newer (e.g. pip install cupy-cuda12x)"
        )
        bump(ranked, "arch-unsupported", CONFIRM, reason, fix)
        return
    bump(
        ranked,
        "arch-unsupported",
        0.0,
        f"{asked}, which CUDA {span[0]} to {span[1]} can build for",
        f"Compute capability {cc} needs a CuPy/PyTorch whose CUDA is between {span[0]} and {span[1]}: "
        "check which CUDA yours uses (python -c 'import cupy; cupy.show_config()')",
    )


def new_gpu_rule(ranked: dict[str, RankedCause], newest: str, gpus: list[dict[str, Any]]) -> None:
    """The message means a library too old for a GPU of compute capability `newest` or newer: every GPU
    the facts name is older, so that reading is out (the library knows these GPUs); every one is that
    new or newer, so the reading gains weight."""
    known, older = _older_than(gpus, newest)
    if known and len(older) == len(known):
        bump(
            ranked,
            "arch-unsupported",
            -RULE_OUT,
            f"fact: {_gpu_cc(known[0])}, older than the {newest}+ GPUs this message fails on when the library is too old",
        )
    elif known and not older:
        bump(
            ranked,
            "arch-unsupported",
            NEW_GPU,
            f"fact: {_gpu_cc(known[0])}, one of the {newest}+ GPUs this message fails on when the library's CUDA is too old for it",
        )


def dropped_arch_rule(ranked: dict[str, RankedCause], sm: str, gpus: list[dict[str, Any]]) -> None:
    """The build asks for an architecture that newer CUDA toolkits dropped, and the facts name a GPU
    of exactly that architecture: the GPU is too old for this CUDA, not a stale arch list."""
    want = versions.cc_tuple(sm)
    span = knowledge.cuda_span_for_cc(versions.cc_str(want)) if want else None
    if span is None or span[1] == knowledge.newest_toolkit():
        return
    own = [g for g in gpus if g.get("cc_t") == want]
    if own:
        bump(
            ranked,
            "arch-unsupported",
            CONFIRM,
            f"fact: {_gpu_cc(own[0])}, the architecture the build asks for ({sm}); no CUDA after {span[1]} builds for it",
            f"This GPU ({own[0].get('name') or sm}) is older than this CUDA supports: CUDA {span[1]} is the last "
            f"toolkit that builds for {sm}. Install CUDA {span[1]} (or older) and rebuild with it, or use a newer GPU",
        )


def refused_arch_rule(ranked: dict[str, RankedCause], sm: str, gpus: list[dict[str, Any]]) -> None:
    """A compiler refused an architecture newer than every GPU in the facts (nvcc's 'Unsupported gpu
    architecture compute_90' on a Jetson Orin, 8.7): it came from the build's architecture list, not from
    the GPU, so the toolkit is too old for that list, and building for the GPU's own architecture (or a
    newer toolkit) is the way round it."""
    want = versions.cc_tuple(sm)
    known = [g for g in gpus if g.get("cc_t")]
    if want is None or not known or any(g["cc_t"] >= want for g in known):
        return  # an old arch refused beside a newer GPU is an old nvcc's default (ptxas-dropped-gpu-arch)
    ccs = sorted({versions.cc_str(g["cc_t"]) for g in known})
    span = knowledge.cuda_span_for_cc(versions.cc_str(want))
    toolkit = f"; or a CUDA toolkit that builds for {sm} (CUDA {span[0]} to {span[1]})" if span else ""
    cc, first = ",".join(ccs), ccs[0].replace(".", "")
    bump(
        ranked,
        "toolchain-not-found",
        CONFIRM,
        f"fact: {_gpu_cc(known[0])}: the {sm} the compiler refused is not this GPU's, so it comes from the "
        "build's architecture list, which this toolkit cannot build",
        f"Build only for this GPU's architecture ({cc}): JAX: python build/build.py --cuda_compute_capabilities={cc}; "
        f"TensorFlow: TF_CUDA_COMPUTE_CAPABILITIES={cc}; PyTorch: export TORCH_CUDA_ARCH_LIST={cc}; CuPy: "
        f"export CUPY_NVCC_GENERATE_CODE=arch=compute_{first},code=sm_{first}{toolkit}",
    )
    bump(
        ranked,
        "arch-unsupported",
        -RULE_OUT,
        f"fact: {_gpu_cc(known[0])} is not the {sm} the compiler refused",
    )


def toolkit_too_old_rule(
    ranked: dict[str, RankedCause], sm: str, toolkits: list[str], compiler: bool = False
) -> None:
    """A compiler refused an architecture newer than the CUDA toolkit in the facts can build ('Unsupported gpu
    architecture compute_86' from CUDA 11.0's nvcc): the step is the toolkit that builds it, whichever of
    the GPU's architecture or the tool's version the reader ranks first."""
    want = versions.cc_tuple(sm)
    span = knowledge.cuda_span_for_cc(versions.cc_str(want)) if want else None
    if want is None or span is None:
        return
    ranges = [(cuda, knowledge.toolkit_cc_range(cuda)) for cuda in toolkits]
    builds = [cuda for cuda, r in ranges if r is not None and r[0] <= want <= r[1]]
    if builds and len(builds) == len(ranges):
        if compiler:  # nvcc itself refused it (not a framework's list of the architectures it holds)
            _another_compiler(ranked, sm, builds[0])
        return
    for cuda, known in ranges:
        if known is None or want <= known[1]:
            continue
        newest = versions.cc_str(known[1])
        reason = f"fact: the CUDA {cuda} toolkit builds up to compute capability {newest}; {sm} needs CUDA {span[0]} or newer"
        fix = (
            f"Install CUDA {span[0]} or newer and build with it (CUDA {cuda}'s nvcc builds up to {newest}): put its "
            "bin/ first on PATH and point CUDA_HOME at it"
        )
        # nvcc itself is older than the architecture: the toolkit is the fault, not a build's list
        if compiler:
            bump(ranked, "toolchain-not-found", 0.35, reason, fix)
            return
        for cause in ("arch-unsupported", "toolchain-not-found"):
            if cause in ranked:
                bump(ranked, cause, 0.1, reason, fix)
        return


def _another_compiler(ranked: dict[str, RankedCause], sm: str, cuda: str) -> None:
    """Every toolkit in the facts builds the architecture the compiler refused ('compute_61' with CUDA 10.1
    installed): the compiler that ran is another, older one (Ubuntu's /usr/bin/nvcc of nvidia-cuda-toolkit)."""
    root = knowledge.toolkit_root(cuda)
    bump(
        ranked,
        "toolchain-not-found",
        0.35,
        f"fact: the CUDA {cuda} toolkit builds {sm}, so the nvcc that refused it is another, older one",
        f"Build with CUDA {cuda}'s nvcc: which -a nvcc and nvcc --version show which one ran (a distribution's "
        f"/usr/bin/nvcc is often older); export PATH={root}/bin:$PATH CUDA_HOME={root}, "
        "or remove the older toolkit (sudo apt remove nvidia-cuda-toolkit)",
    )
    bump(ranked, "multiple-toolkits", 0.15, f"fact: a compiler other than CUDA {cuda}'s ran")


def display_watchdog_rule(ranked: dict[str, RankedCause], gpus: list[dict[str, Any]]) -> None:
    """The display watchdog kills long kernels only on a GPU that drives a display or runs under
    Windows' WDDM driver model: a GPU the facts show doing so confirms it; GPUs that all do neither
    (display inactive, and TCC or no Windows driver model) rule it out."""
    watched = [g for g in gpus if g.get("display_active") is True or g.get("driver_model") == "WDDM"]
    if watched:
        g = watched[0]
        how = (
            "runs under Windows' WDDM driver model" if g.get("driver_model") == "WDDM" else "drives a display"
        )
        bump(
            ranked,
            "gpu-watchdog",
            CONFIRM,
            f"fact: GPU {g.get('index', 0)} ({g.get('name')}) {how}: the watchdog applies",
        )
    elif gpus and all(g.get("display_active") is False and g.get("driver_model") != "WDDM" for g in gpus):
        bump(
            ranked,
            "gpu-watchdog",
            -RULE_OUT,
            "fact: no GPU drives a display or runs under WDDM: no watchdog applies",
        )


def compiled_here_rule(
    ranked: dict[str, RankedCause], snap: Snapshot, gpus: list[dict[str, Any]], named_by_root: bool
) -> None:
    """CuPy compiles its kernels for the GPU it runs on (NVRTC), so its build holds every architecture its
    CUDA can target: where the facts say that CUDA covers every GPU here, a status that only may mean an
    architecture problem (CUDA_ERROR_INVALID_VALUE at a kernel launch) does not mean one (recorded on an
    H200: tests/fixtures/gpu/h200/session38/broken/cupy_block_too_large.txt, 4096 threads in a block)."""
    if "arch-unsupported" not in ranked or named_by_root:
        return
    known = [g for g in gpus if g.get("cc_t")]
    for name, info in view.frameworks(snap):
        cuda = str(info.get("cuda") or "")
        rng = knowledge.toolkit_cc_range(cuda) if name == "cupy" and info.get("build") == "cuda" else None
        if rng is None or not known or not all(rng[0] <= g["cc_t"] <= rng[1] for g in known):
            continue
        bump(
            ranked,
            "arch-unsupported",
            -RULE_OUT,
            f"fact: {view.describe(name, info)} compiles its kernels for the GPU at run time, and CUDA {cuda} "
            f"targets {', '.join(_gpu_cc(g) for g in known)}",
        )
        return


NEWER_THAN_CUDA = 0.6  # as strong as a library's own words: the libraries of that CUDA predate the GPU


def newer_than_every_cuda_rule(
    ranked: dict[str, RankedCause], gpus: list[dict[str, Any]], cudas: list[str]
) -> None:
    """Every CUDA the facts name (toolkits, the frameworks' builds) was made before every GPU they name
    (CUDA 9.0 knows up to 7.0, an RTX 2080 is 7.5): its cuBLAS and cuDNN have no kernels for the GPU, which
    is how 'Blas GEMM launch failed' or CUDNN_STATUS_EXECUTION_FAILED come from a working install."""
    known = [g for g in gpus if g.get("cc_t")]
    ranges = [knowledge.toolkit_cc_range(c) for c in cudas]
    if not known or not ranges or any(rng is None for rng in ranges):
        return
    newest = max(rng[1] for rng in ranges if rng is not None)
    if all(g["cc_t"] > newest for g in known):
        bump(
            ranked,
            "arch-unsupported",
            NEWER_THAN_CUDA,
            f"fact: {_gpu_cc(known[0])}, newer than CUDA {', '.join(cudas)} knows (up to "
            f"{versions.cc_str(newest)}): its libraries have no kernels for this GPU",
        )
