"""The fix planner: every step of every fix passes through here, so no step contradicts a known fact.

Inputs: a cause, the steps proposed for it (a check's finding, a signature, a rule, the cause's
general steps, in that order) and the merged facts (live, stated, another machine's report, and what
the log says about itself) read into a `Context`. Output: steps computed from the facts and the
knowledge tables first (the PyTorch release and wheel index the driver runs, the cuDNN wheel of the
build's CUDA major, the ptxas of the build's own CUDA, ...), then the proposed steps that agree with
every fact, each once. A step is dropped when it names a wheel index, an NVIDIA wheel, a JAX extra or
a TensorFlow install that a fact rules out, another framework than the one that failed, a GPU
architecture that is not this GPU's, or a placeholder meant for a finding that is not there.
Where a fact the step needs is unknown, the step says which command shows it.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from cudoctor import knowledge, versions
from cudoctor.checks import view
from cudoctor.fixes import scope
from cudoctor.fixes import steps as compute
from cudoctor.model import CheckResult, Snapshot

FRAMEWORKS = view.FRAMEWORKS


@dataclasses.dataclass(frozen=True)
class Context:
    """The facts a plan reads. None: unknown."""

    framework: str | None = None  # the framework that failed (the log's), else the only one known
    version: str | None = None  # its version as installed or stated ('2.1.0+cu121')
    dist: str | None = None  # the package it was installed as, where that says more ('tensorflow-cpu')
    build: str | None = None  # 'cuda', 'cpu', 'rocm'
    cuda: str | None = None  # the CUDA its build needs ('12.1')
    driver: str | None = None
    driver_cuda: str | None = None  # the newest CUDA the driver runs ('11.0')
    cc: versions.Version | None = None  # the GPU's compute capability
    gpu: str | None = None
    platform: str | None = None  # 'windows' (native), 'wsl', 'linux', 'darwin'
    system_cuda: str | None = None  # a toolkit the person has (stated, or the first one found)
    toolkit_root: str | None = None  # where that toolkit is, where it was found on this machine (not stated)
    cudnn_wanted: int | None = None  # the cuDNN major the log says the program asked for
    python: str | None = None  # the Python the framework runs under ('3.11.4')
    # the cuDNN the build was compiled with: the log's ('8.2'), else the build's own
    cudnn_compiled: str | None = None
    cuda_found: str | None = None  # a CUDA the log says is older than the one the build needs ('12.1') ...
    cuda_needed: str | None = None  # ... and that one ('12.2')
    driver_needed: str | None = None  # the driver the log says it needs (a container image's CUDA)
    library_wheel: str | None = None  # NVIDIA's wheel of the library the log could not load
    library_cuda: str | None = None  # the CUDA its name carries (libcublas.so.8.0, cudart64_90.dll)
    soname: str | None = None  # that library as the log names it
    # the CUDA releases that ship that soname ('10.1-11.0': libcusolver.so.10)
    library_range: str | None = None
    # the CUDA release of a symbol the loaded library lacks (__nvJitLinkCreate_12_8)
    symbol_cuda: str | None = None
    # the library whose C++ namespace an undefined symbol is in ('tensorflow': status_codes.toml [[namespace]]) and
    # the module that lacks it ('correlation'): that module was built against another release of the library
    symbol_namespace: str | None = None
    symbol_library: str | None = None  # the CUDA library whose C symbol the log says is missing ('cudnn')
    module: str | None = None
    # the package whose wheel pins the torch release, where the torch is known only through it ('vllm 0.4.3'):
    # its compiled kernels need that torch build, so no step swaps torch alone
    torch_pinned_by: str | None = None
    pythonpath_copy: str | None = None  # the PYTHONPATH entry the framework is imported from, if it is
    image: str | None = None  # the framework comes with this container image ('the nvcr.io/... image')
    root: str = ""  # the log's root error line: a setting or tool it names is relevant whatever the framework
    # a Jetson whose CUDA comes with JetPack (not Thor's JetPack 7, which runs the SBSA wheels): 'JetPack 4.4',
    # or '' where the JetPack is not stated; None: not a Jetson
    jetpack: str | None = None
    # the container the program runs in, as host.container names it ('singularity')
    container: str | None = None
    # 'conda' where the framework was installed with conda (facts/stated.py reads its build string), else None
    installer: str | None = None

    @property
    def pinning_package(self) -> str | None:
        """The package name of torch_pinned_by ('vllm' of 'vllm 0.4.3')."""
        return self.torch_pinned_by.split()[0].lower() if self.torch_pinned_by else None

    @property
    def cuda_major(self) -> int | None:
        v = versions.parse(self.cuda or "")
        return v[0] if v else None


def context(
    snap: Snapshot,
    framework: str | None = None,
    log_facts: dict[str, str] | None = None,
    root: str = "",
    log_platform: str | None = None,
) -> Context:
    """Read the facts a plan needs from a snapshot; `framework` is the one the log comes from,
    `log_facts` what the readers read on its root line `root`, `log_platform` what its paths show."""
    infos = dict(view.frameworks(snap))
    if framework is None and len(infos) == 1:
        framework = next(iter(infos))
    info: dict[str, Any] = infos.get(framework or "", {})
    gpu = next((g for g in view.gpus(snap) if g.get("cc_t")), None)
    driver = snap.value("driver.version")
    platform = view.platform(snap) or log_platform
    driver_cuda = snap.value("driver.cuda_version") or (
        knowledge.max_cuda_for_driver(str(driver), platform == "windows") if driver else None
    )
    toolkit = next((t for t in snap.value("cuda.toolkits") or [] if t.get("version")), None)
    facts = log_facts or {}
    if not driver_cuda and facts.get("library") == "driver" and facts.get("loaded"):
        driver_cuda = facts["loaded"]  # the log's own 'driver too old (found version 11040)': CUDA 11.4
    wanted = facts.get("cudnn_wanted") or (
        str((versions.parse(facts.get("compiled", "")) or ("",))[0])
        if facts.get("library") == "cudnn"
        else None
    )
    # 'Found CUDA version 12010, but JAX was built against version 12020, which is newer'
    older_cuda = facts.get("library") == "cuda" and facts.get("older") == "loaded" and facts.get("compiled")
    ptxas = compute.PTXAS_OLDER.search(root)  # XLA's 'You are using ptxas 11.0.221, which is older than 11.1'
    # a TF 1.x of unnamed package: its GPU build's CUDA; with no framework known, a build's CUDA stated alone
    built_cuda = (
        info.get("cuda") or info.get("cuda_if_gpu") or (None if infos else snap.value("build.cuda_said"))
    )
    return Context(
        framework=framework,
        version=str(info["version"]) if info.get("version") else None,
        dist=str(info["dist"]) if info.get("dist") else None,
        build=info.get("build"),
        cuda=str(built_cuda)
        if built_cuda
        else facts.get("cuda_wanted") or (ptxas.group(2) if ptxas else None),
        driver=str(driver) if driver else None,
        driver_cuda=str(driver_cuda) if driver_cuda else None,
        cc=gpu["cc_t"] if gpu else None,
        gpu=gpu.get("name") if gpu else None,
        platform=platform,
        system_cuda=str(toolkit["version"]) if toolkit else None,
        toolkit_root=str(toolkit["root"]) if toolkit and not toolkit.get("stated") else None,
        cudnn_wanted=int(wanted) if wanted and str(wanted).isdigit() else None,
        root=root,
        python=str((snap.value("host.python") or {}).get("version") or "") or None,
        cudnn_compiled=(facts.get("compiled") if facts.get("library") == "cudnn" else None)
        or (str(info["cudnn"]) if info.get("cudnn") else None),
        cuda_found=facts.get("loaded") if older_cuda else None,
        cuda_needed=facts.get("compiled") if older_cuda else None,
        driver_needed=facts.get("driver_needed"),
        library_wheel=facts.get("wheel"),
        library_cuda=facts.get("cuda_wanted"),
        soname=facts.get("soname"),
        library_range=facts.get("cuda_range"),
        symbol_cuda=facts.get("symbol_cuda"),
        symbol_namespace=facts.get("namespace"),
        symbol_library=facts.get("library") if facts.get("symbol") and not facts.get("namespace") else None,
        torch_pinned_by=str(info["pinned_by"]) if framework == "torch" and info.get("pinned_by") else None,
        module=facts.get("module"),
        pythonpath_copy=view.pythonpath_entry(info, snap),
        image=str(info["cuda_libs"])
        if "image" in str(info.get("cuda_libs") or "")
        else "this image"
        if compute.CONTAINER_REFUSED.search(root)
        else None,
        jetpack=_jetpack(snap),
        container=str(snap.value("host.container") or "") or None,
        installer=str(info["installer"]) if info.get("installer") else None,
    )


JETSON = re.compile(r"jetson|\borin\b|\bxavier\b|\btx2\b|\bl4t\b|jetpack", re.I)
JETPACK = re.compile(r"jetpack\s*v?(\d+(?:\.\d+)*)", re.I)


def _jetpack(snap: Snapshot) -> str | None:
    """The JetPack a Jetson runs ('JetPack 4.4'), '' where it is not said, None where the machine is no
    Jetson or one whose CUDA is not JetPack's own (Thor, JetPack 7: NVIDIA's SBSA wheels run there)."""
    said = " ".join(
        [str(g.get("name") or "") for g in view.gpus(snap)]
        + [str((snap.value("host.os") or {}).get("name") or "")]
    )
    if not JETSON.search(said) or re.search(r"\bthor\b", said, re.I):
        return None
    m = JETPACK.search(said)
    if m and (versions.parse(m.group(1)) or (0,))[0] >= 7:
        return None
    return f"JetPack {m.group(1)}" if m else ""


def plan(
    cause: str,
    specific: list[str],
    ctx: Context,
    generic: list[str] | None = None,
    beside_finding: bool = True,
) -> list[str]:
    """The steps for a cause, in this order: the specific ones (a finding's, computed from facts by a
    check; the log's own, from its signature and rules), then those computed here from the facts and
    the knowledge tables, then the cause's general ones; each once, none that contradicts a fact.

    A computed install that pins a release replaces, in place, an unpinned one from the same wheel
    index; a computed torch install is left out where a specific step already installs torch from an
    index (the log named the build it needs). `beside_finding`: the steps are shown under the finding
    they came from (check), so "the arch list in the finding" points somewhere; explain drops such
    placeholders.
    """
    computed = compute.for_cause(cause, ctx)
    lookups = [s for s in computed if s.startswith(compute.FIND_OUT)]
    # a cause's template ('pip install ... <package>==<version>') comes after what the facts made concrete
    templates = [s for s in specific if TEMPLATE.search(s)] if computed else []
    specific = [s for s in specific if s not in templates]
    generic = templates + (generic or [])
    # a specific install from an index the computed ones do not refine: the log named the build it needs
    specific_index = any(
        TORCH_INDEX.search(s) and not contradicts(s, ctx) and not any(subsumes(c, s) for c in computed)
        for s in specific
    )
    # computed installs that refine a specific one (pin its release, add the least-change variant) take
    # its place together, in their own order
    block = [c for c in computed if (TORCH_INDEX.search(c) or PIP_PACKAGE.search(c)) and c not in lookups]
    proposals: list[str] = []
    for s in specific:
        if block and any(subsumes(c, s) for c in block) and not set(block) <= set(proposals):
            proposals += block
        else:
            proposals.append(s)
    proposals += [c for c in computed if c not in lookups and c not in proposals]
    out: list[str] = []
    for proposed in proposals + generic + lookups:
        step = scope.trim(with_pinning_package(proposed, ctx), ctx.framework)
        if step is None or step in out or contradicts(step, ctx):
            continue
        if not beside_finding and PLACEHOLDER.search(step):
            continue
        if TEMPLATE.search(step) and any(PIP_PACKAGE.search(e) for e in out):
            continue  # '<package><version>' after a step that already names them
        replaced = next((i for i, earlier in enumerate(out) if subsumes(step, earlier)), None)
        if replaced is not None:
            out[replaced] = step
            continue
        if any(subsumes(earlier, step) for earlier in out):
            continue
        if step in computed and specific_index and TORCH_INDEX.search(step):
            continue
        out.append(step)
    return finish(out, ctx)


EXPORT = re.compile(r"\bexport (\w+)=(\S+)")
LINUX_ONLY = re.compile(
    r"/usr/local/cuda|/usr/lib/x86_64-linux-gnu|\bldconfig\b|\bLD_LIBRARY_PATH\b|\bapt(?:-get)? install\b"
)


def finish(out: list[str], ctx: Context) -> list[str]:
    """The steps as a person runs them: a step for GPUs older than this one's architecture first; on
    native Windows `export X=1` becomes `set X=1` (PowerShell: $env:X="1"); the first step does not
    begin with "Or"."""
    # a step for GPUs older than an architecture ('float16 instead of bfloat16 on GPUs older than Ampere') is
    # the one the facts single out where the GPU is one of them
    older = [
        s
        for s in out
        if (m := OLDER_THAN_ARCH.search(s)) and ctx.cc is not None and ctx.cc < ARCH_CC[m.group(1)]
    ]
    out = older + [s for s in out if s not in older]
    if ctx.platform == "windows":
        # a step that only works on Linux contradicts native Windows: dropped where another step is left
        out = [s for s in out if not LINUX_ONLY.search(s)] or out
        out = [EXPORT.sub(lambda m: f'set {m[1]}={m[2]} (PowerShell: $env:{m[1]}="{m[2]}")', s) for s in out]
    if out and out[0].startswith("Or "):
        rest = out[0][3:]
        out[0] = rest if COMMAND_START.match(rest) else rest[0].upper() + rest[1:]
    return out


COMMAND_START = re.compile(r"(?:pip|conda|export|set|sudo|python|apt|docker|nvidia-smi)\b")
PLACEHOLDER = re.compile(r"\bin the finding\b", re.I)
TORCH_INDEX = re.compile(r"download\.pytorch\.org/whl/(?:nightly/)?(cu\d+)")
NVIDIA_WHEEL = re.compile(r"\bnvidia-[a-z-]+?-cu(\d+)\b|\(or -cu(\d+)\)")
JAX_EXTRA = re.compile(r"jax\[cuda(\d+)(?:_pip|_local)?\]|jax-cuda(\d+)-plugin")
ARCH_LIST = re.compile(r"TORCH_CUDA_ARCH_LIST=\"?(\d+\.\d+)")
KEEPS_RANGE = re.compile(r"keeps sm_(\d)(\d)\.\.sm_(\d)(\d)")
TORCH_PIN = re.compile(r"\btorch==(\d+\.\d+(?:\.\d+)?)")
TORCH_LOCAL = re.compile(r"\btorch==\d+\.\d+(?:\.\d+)?\+(cu\d+)")  # 'torch==1.4.0+cu92' from the stable page
LABEL = re.compile(rf"^({scope.LABELS})\b[^:]{{0,40}}:")
LABEL_NAME = scope.LABEL_NAME


def contradicts(step: str, ctx: Context) -> bool:
    """Whether a step goes against a known fact."""
    return any(rule(step, ctx) for rule in RULES)


def _other_framework(step: str, ctx: Context) -> bool:
    """A step for another framework than the one that failed: labelled for it, or naming only what
    another framework reads."""
    if ctx.framework is None:
        return False
    m = LABEL.match(step)
    if m:
        return LABEL_NAME[m.group(1)] != ctx.framework
    return scope.for_other_framework(step, ctx)


def _torch_index_too_new(step: str, ctx: Context) -> bool:
    """A PyTorch wheel index for a CUDA the driver cannot run, or whose builds lack this GPU (no SASS,
    and PTX at most from a CUDA that predates the GPU)."""
    m = TORCH_INDEX.search(step) or TORCH_LOCAL.search(step)
    if m is None:
        return False
    variant = m.group(1)
    cuda = versions.cuda_from_variant(variant)
    if ctx.driver_cuda and not knowledge.driver_runs(ctx.driver_cuda, cuda):
        return True
    if ctx.cc is not None:
        pin = TORCH_PIN.search(step)
        version = pin.group(1) if pin else compute.newest_torch_with(variant)
        hit = knowledge.torch_archs(version, variant) if version else None
        support = knowledge.arch_support(ctx.cc, hit[0]) if hit else None
        if support == "none":
            return True
        known = knowledge.toolkit_cc_range(cuda or "")
        if support == "ptx" and known is not None and ctx.cc > known[1]:
            return True  # PTX only, from a CUDA older than the GPU: its cuBLAS/cuDNN have no kernels for it
    return False


def _nvidia_wheel_other_major(step: str, ctx: Context) -> bool:
    """An NVIDIA wheel (nvidia-cudnn-cu12) of another CUDA major than the build's."""
    major = ctx.cuda_major or (versions.parse(ctx.system_cuda or "") or (None,))[0]
    if major is None:
        return False
    return any(int(a or b) != major for a, b in NVIDIA_WHEEL.findall(step))


def _nvidia_wheel_beyond_driver(step: str, ctx: Context) -> bool:
    """An NVIDIA wheel of a CUDA major the driver does not reach (nvidia-cublas-cu12 on a CUDA 11.4 driver)."""
    have = versions.parse(ctx.driver_cuda or "")
    if have is None or UPGRADES_DRIVER.search(step):
        return False
    return any(int(a or b) > have[0] for a, b in NVIDIA_WHEEL.findall(step))


def _jax_extra_other_major(step: str, ctx: Context) -> bool:
    """jax[cuda12] beside a JAX built for CUDA 11 (jaxlib +cuda11): an install of another build than the
    one whose libraries failed, unless the step is about the driver (a driver too old for the build's
    major is a reason to change major)."""
    if ctx.framework != "jax" or ctx.cuda_major is None or "driver" in step.lower():
        return False
    return any(int(a or b) != ctx.cuda_major for a, b in JAX_EXTRA.findall(step))


def _jax_extra_unrunnable(step: str, ctx: Context) -> bool:
    """jax[cuda12] on a driver too old for CUDA 12 (and no driver upgrade in the same step)."""
    if not ctx.driver_cuda or UPGRADES_DRIVER.search(step):
        return False
    return any(not knowledge.driver_runs(ctx.driver_cuda, f"{a or b}.0") for a, b in JAX_EXTRA.findall(step))


def _tf_gpu_on_native_windows(step: str, ctx: Context) -> bool:
    """tensorflow[and-cuda] on native Windows, where TensorFlow has had no GPU build since 2.10."""
    return ctx.platform == "windows" and "tensorflow[and-cuda]" in step and "WSL" not in step


def _jax_cuda_on_native_windows(step: str, ctx: Context) -> bool:
    """jax[cuda12] on native Windows, where JAX publishes no CUDA wheels (jax.toml [native_windows])."""
    return ctx.platform == "windows" and bool(JAX_EXTRA.search(step)) and "WSL" not in step


def _tf_extra_before_its_release(step: str, ctx: Context) -> bool:
    """tensorflow[and-cuda] added next to a TensorFlow older than the extra (2.14), or pinned to one:
    pip installs no CUDA then (an unpinned install of the newest release is another matter)."""
    if ctx.framework != "tensorflow" or "tensorflow[and-cuda]" not in step:
        return False
    since = versions.major_minor(knowledge.table("tensorflow")["and_cuda"]["since"])
    pin = re.search(r"tensorflow\[and-cuda\]\s*[=<~]=?\s*(\d+\.\d+)", step)
    have = versions.major_minor(pin.group(1) if pin else ctx.version if "next to" in step else None)
    if (
        have is None and "next to" in step and ctx.cuda
    ):  # the version unknown, its CUDA older than the extra's
        first = knowledge.tf_build(str(knowledge.table("tensorflow")["and_cuda"]["since"]))
        build, extra = versions.parse(ctx.cuda), versions.parse(str(first["cuda"])) if first else None
        return bool(build and extra and build < extra)
    return bool(have and since and have < since)


PYTHON_RANGE = re.compile(r"needs Python (\d\.\d+)\s*[-–]\s*(\d\.\d+)")


TF_PIN = re.compile(r"tensorflow(?:-gpu)?(?:\[[\w-]+\])?\s*(<|==)\s*(\d+\.\d+)")


def _python_outside(step: str, ctx: Context) -> bool:
    """A step for a release whose wheels need a Python range this Python is outside of: said in the step
    ("needs Python 3.7-3.10"), or a TensorFlow pin whose tested build row names its Pythons."""
    have = versions.major_minor(ctx.python or "")
    if have is None:
        return False
    ranges = [(m.group(1), m.group(2)) for m in PYTHON_RANGE.finditer(step)]
    for op, version in TF_PIN.findall(step):
        mm = versions.major_minor(version) or (0, 0)
        release = f"{mm[0]}.{mm[1] - 1}" if op == "<" and mm[1] else version
        row = knowledge.tf_build(release, "windows" if ctx.platform == "windows" else "linux")
        if row and "-" in str(row.get("python", "")):
            ranges.append(tuple(str(row["python"]).split("-", 1)))  # type: ignore[arg-type]
    for lo, hi in ranges:
        low, high = versions.major_minor(lo), versions.major_minor(hi)
        if low and high and not low <= have <= high:
            return True
    return False


OLDER_THAN_ARCH = re.compile(r"older than (Volta|Turing|Ampere|Ada|Hopper|Blackwell)\b")
ARCH_CC = {
    "Volta": (7, 0),
    "Turing": (7, 5),
    "Ampere": (8, 0),
    "Ada": (8, 9),
    "Hopper": (9, 0),
    "Blackwell": (10, 0),
}


def _for_older_gpus(step: str, ctx: Context) -> bool:
    """A step for GPUs older than an architecture, where this GPU is that one or newer."""
    m = OLDER_THAN_ARCH.search(step)
    return bool(m and ctx.cc is not None and ctx.cc >= ARCH_CC[m.group(1)])


OLD_GPU_STEP = re.compile(r"\bold GPU dropped by new builds|wheels keep sm_\d+ and newer")


def _gpu_newer_than_build(ctx: Context) -> bool:
    """The GPU is newer than anything the build's CUDA knows (an RTX 3070 Ti, 8.6, under CUDA 10.1)."""
    rng = knowledge.toolkit_cc_range(ctx.cuda) if ctx.cuda and ctx.cc else None
    return rng is not None and ctx.cc is not None and ctx.cc > rng[1]


def _old_gpu_step_for_a_new_gpu(step: str, ctx: Context) -> bool:
    """A step for a GPU that new builds dropped, where this GPU is newer than the build's CUDA knows: the
    build is too old for it, not the GPU for the build."""
    return OLD_GPU_STEP.search(step) is not None and _gpu_newer_than_build(ctx)


CONDA_TOOLKIT = re.compile(r"\bcudatoolkit[=<>]=?(\d+\.\d+)")


def _toolkit_older_than_gpu(step: str, ctx: Context) -> bool:
    """A CUDA toolkit to install that cannot build for this GPU (cudatoolkit=10.0 for an Ampere GPU)."""
    if ctx.cc is None:
        return False
    for cuda in CONDA_TOOLKIT.findall(step):
        rng = knowledge.toolkit_cc_range(cuda)
        if rng is not None and ctx.cc[0] > rng[1][0]:
            return True
    return False


def _other_gpu_arch(step: str, ctx: Context) -> bool:
    """An architecture list or range written for another GPU than this one."""
    if ctx.cc is None:
        return False
    m = ARCH_LIST.search(step)
    if m and versions.cc_tuple(m.group(1)) != ctx.cc and "e.g." in step:
        return True
    r = KEEPS_RANGE.search(step)
    if r:
        lo, hi = (int(r.group(1)), int(r.group(2))), (int(r.group(3)), int(r.group(4)))
        return not lo <= ctx.cc <= hi
    return False


def _unpinned_cudnn_of_another_major(step: str, ctx: Context) -> bool:
    """An unpinned cuDNN wheel (it brings cuDNN 9) where the build wants another cuDNN major."""
    if ctx.cudnn_wanted is None or ctx.cudnn_wanted == 9:
        return False
    bounded = re.search(r"\bnvidia-cudnn-cu\d+(?:==|[^'\s]*,<\d)", step) is not None
    return re.search(r"\bnvidia-cudnn-cu\d+\b", step) is not None and not bounded


# GPUs that refuse CUDA forward compatibility (cuda-compat): GeForce and TITAN cards, and a log that says so
INSTALLS_COMPAT = re.compile(r"install cuda-compat|forward-compatibility package runs", re.I)
COMPAT_REFUSED = re.compile(
    r"forward compatibility was attempted on non supported HW|COMPAT_NOT_SUPPORTED|Error 804", re.I
)


def _desktop_cuda_on_jetson(step: str, ctx: Context) -> bool:
    """A desktop CUDA install (a toolkit from NVIDIA's archive, PyTorch's x86/SBSA CUDA wheels, NVIDIA's CUDA
    wheels) on a Jetson, whose CUDA comes with JetPack."""
    return ctx.jetpack is not None and bool(DESKTOP_CUDA.search(step))


DESKTOP_CUDA = re.compile(
    r"cuda-toolkit-archive|download\.pytorch\.org/whl/cu|\bnvidia-[a-z-]+-cu1\d\b|\bapt(?:-get)? install cuda-\d",
    re.I,
)


def _cuda_on_macos(step: str, ctx: Context) -> bool:
    """A CUDA install on macOS, where NVIDIA's CUDA has not run since 10.2 and no framework ships a CUDA build."""
    return ctx.platform == "darwin" and bool(DESKTOP_CUDA.search(step) or CUDA_WORDS_MACOS.search(step))


CUDA_WORDS_MACOS = re.compile(r"\bcudatoolkit\b|pytorch-cuda|jax\[cuda|\[and-cuda\]|nvidia-smi", re.I)


def _compat_on_unsupported_gpu(step: str, ctx: Context) -> bool:
    """The forward-compatibility package offered where the GPU refuses it (a GeForce card, or the log's
    error 804 saying it was tried and refused)."""
    if not INSTALLS_COMPAT.search(step):  # a step naming it beside other advice keeps that advice
        return False
    return bool(view.CONSUMER_GPU.search(ctx.gpu or "") or COMPAT_REFUSED.search(ctx.root))


DOCKER_GPUS = re.compile(r"--gpus\b|\bdocker run\b|\bnvidia-docker\b", re.I)


def _docker_start_in_another_runtime(step: str, ctx: Context) -> bool:
    """Docker's way to pass the GPUs (--gpus all) where the container runs under another runtime (Singularity's
    --nv, a pod's nvidia.com/gpu limit, podman's CDI device): it does not apply there."""
    return (
        ctx.container not in (None, "docker", "containerd")
        and bool(DOCKER_GPUS.search(step))
        and not re.search(rf"\b{re.escape(str(ctx.container))}\b|--nv\b|nvidia\.com/gpu", step, re.I)
    )


def _driver_floor_already_met(step: str, ctx: Context) -> bool:
    """'Upgrade the NVIDIA driver to 525.60.13' when the driver is already that new."""
    m = re.search(r"upgrade the NVIDIA driver to (\d+(?:\.\d+)+)", step, re.I)
    have, floor = versions.parse(ctx.driver or ""), versions.parse(m.group(1)) if m else None
    return bool(have and floor and have >= floor)


def _reinstall_inside_image(step: str, ctx: Context) -> bool:
    """A framework install from a wheel index where the framework and its CUDA come with a container image
    (NGC, pytorch/pytorch): the image's build is the one that runs; another image or the host's driver is
    the fix. Unless the image's CUDA predates the GPU: then no build of that image runs on it, and a wheel of a
    newer CUDA installed in it (or another image) is the fix."""
    return (
        ctx.image is not None
        and not _gpu_newer_than_build(ctx)
        and (
            TORCH_INDEX.search(step) is not None
            or any(IMAGE_FRAMEWORK.match(m.group(1)) for m in PIP_PACKAGE.finditer(step))
        )
    )


IMAGE_FRAMEWORK = re.compile(r"(?:torch|tensorflow|jax|jaxlib)\b")  # a package PIP_PACKAGE names


TORCH_INSTALL = re.compile(r"\bpip install\b[^;]*?'?\btorch(?:==|\b)(?![-_])|download\.pytorch\.org/whl/")


def _torch_swap_under_a_pin(step: str, ctx: Context) -> bool:
    """A torch install, alone, where the torch is the one a package's wheel pins (vllm 0.4.3: torch 2.3.0): that
    package's kernels are built against that torch and its CUDA, so swapping torch under them breaks them."""
    package = ctx.pinning_package
    if package is None or not TORCH_INSTALL.search(step):
        return False
    return re.search(rf"\b{re.escape(package)}\b", step, re.I) is None


# packages the PyTorch index hosts a build of per CUDA variant: a torch install from it takes them along
ON_TORCH_INDEX = ("xformers",)
TORCH_ARG = re.compile(r"(\bpip install\b[^;]*?)('?torch(?:==[\w.*+]+)?'?)(?=\s)")


def with_pinning_package(step: str, ctx: Context) -> str:
    """A torch install from the PyTorch index beside xFormers, which pins one torch release and is built per CUDA
    variant there too: the same command installs both, so the pair stays matched."""
    package = ctx.pinning_package
    if package not in ON_TORCH_INDEX or not TORCH_INDEX.search(step) or package in step.lower():
        return step
    return TORCH_ARG.sub(lambda m: f"{m.group(1)}{m.group(2)} {package}", step, count=1)


NUMPY_OR_MKL = re.compile(r"\bnumpy\b|\bmkl\b", re.I)


def _abi_of_another_library(step: str, ctx: Context) -> bool:
    """A NumPy or MKL remedy where the log's missing symbol is in another library's C++ namespace (a
    TensorFlow custom op lacking a tensorflow:: symbol was built against another TensorFlow, not NumPy) or is a
    CUDA library's (cudnnSetFilterNdDescriptor_v3)."""
    return (ctx.symbol_namespace or ctx.symbol_library) is not None and bool(NUMPY_OR_MKL.search(step))


RULES = (
    _other_framework,
    _abi_of_another_library,
    _torch_swap_under_a_pin,
    _reinstall_inside_image,
    _unpinned_cudnn_of_another_major,
    _driver_floor_already_met,
    _docker_start_in_another_runtime,
    _compat_on_unsupported_gpu,
    _desktop_cuda_on_jetson,
    _cuda_on_macos,
    scope.for_other_platform,
    _torch_index_too_new,
    _nvidia_wheel_other_major,
    _nvidia_wheel_beyond_driver,
    _jax_extra_other_major,
    _jax_extra_unrunnable,
    _tf_gpu_on_native_windows,
    _jax_cuda_on_native_windows,
    _tf_extra_before_its_release,
    _python_outside,
    _toolkit_older_than_gpu,
    _for_older_gpus,
    _old_gpu_step_for_a_new_gpu,
    _other_gpu_arch,
)


TEMPLATE = re.compile(r"<(?:package|version)>")
TEMPLATE_COMMAND = re.compile(r"(pip install [-\w ]*?)'?<package>")
PIP_PACKAGE = re.compile(r"\bpip install (?:-[-\w]+ )*'?([A-Za-z][\w.-]*(?:\[[\w,-]+\])?)(==[^'\s]+)?")
GENERAL_BUILD = re.compile(r"Install an? [\w ]+ build made with a CUDA that supports compute capability")
UPGRADES_DRIVER = re.compile(r"upgrad\w* (?:the |your )?(?:NVIDIA )?driver", re.I)
DRIVER_UPGRADE = re.compile(r"upgrade the NVIDIA driver", re.I)
DRIVER_FLOOR = re.compile(r"upgrade the NVIDIA driver to \d", re.I)


def subsumes(earlier: str, later: str) -> bool:
    """A pinned install from a wheel index makes a later unpinned install from the same index
    redundant; a driver upgrade to a named version makes a later, vaguer driver upgrade redundant."""
    a, b = TORCH_INDEX.search(earlier), TORCH_INDEX.search(later)
    if a and b and a.group(1) == b.group(1) and TORCH_PIN.search(earlier) and not TORCH_PIN.search(later):
        return True
    pa, pb = PIP_PACKAGE.search(earlier), PIP_PACKAGE.search(later)
    if pa and pb and pa.group(1) == pb.group(1) and pa.group(2) and not pb.group(2) and not (a or b):
        return True  # the same package, pinned: pip install 'tensorflow[and-cuda]==2.21.*' over --upgrade
    template = TEMPLATE_COMMAND.search(later)
    if template and earlier.startswith(template.group(1)):
        return True  # the command with its package and version filled in
    if GENERAL_BUILD.match(later) and earlier.startswith("pip install"):
        return True  # "Install a CuPy build made with a CUDA that supports ..." said as the command
    return bool(
        DRIVER_FLOOR.search(earlier) and DRIVER_UPGRADE.search(later) and not TORCH_INDEX.search(later)
    )


def planned(results: list[CheckResult], snap: Snapshot) -> list[CheckResult]:
    """Check results whose findings' steps went through the planner (with the facts of `snap`, and
    the framework each finding is about)."""
    contexts: dict[str | None, Context] = {}
    out = []
    for r in results:
        if not r.findings:
            out.append(r)
            continue
        findings = []
        for f in r.findings:
            subject = f.subject if f.subject in FRAMEWORKS else None
            ctx = contexts.get(subject) or contexts.setdefault(subject, context(snap, subject))
            steps = tuple(plan(f.cause, list(f.fix), ctx))
            findings.append(f if steps == f.fix else dataclasses.replace(f, fix=steps))
        out.append(dataclasses.replace(r, findings=tuple(findings)))
    return out
