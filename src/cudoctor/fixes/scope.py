"""Which framework and which platform a step is written for, read from the step itself: a label
("PyTorch: ...", "TensorFlow (Linux/WSL2): ...") or what it names (a PyTorch wheel index,
TORCH_CUDA_ARCH_LIST, XLA_FLAGS, tf.config, sudo and LD_LIBRARY_PATH). The planner drops, or trims
to its other parts, a step written for another framework or platform than the facts describe."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from cudoctor.model import FRAMEWORK_LABEL, FRAMEWORKS

if TYPE_CHECKING:
    from cudoctor.fixes.planner import Context

LABELS = "|".join(FRAMEWORK_LABEL.values())  # PyTorch|TensorFlow|JAX|CuPy
LABEL = re.compile(rf"^\s*({LABELS})\b[^:;]{{0,40}}:")
LABEL_NAME = {label: name for name, label in FRAMEWORK_LABEL.items()}
# What a step names -> the frameworks it can be for (an unlabelled step naming none is for any).
MARKERS = (
    (
        re.compile(
            r"download\.pytorch\.org|\bpip install (?:-\S+ )*'?torch\b|TORCH_CUDA_ARCH_LIST|torch\.(?:cuda|multiprocessing|backends|use_)"
            r"|\bPyTorch cu\d+|PYTORCH_\w+|\bDataLoader\b|collate_fn|pin_memory"
        ),
        frozenset({"torch"}),
    ),
    (re.compile(r"XLA_FLAGS|--xla_gpu"), frozenset({"tensorflow", "jax"})),
    (re.compile(r"\btf\.config|TF_FORCE_GPU_ALLOW_GROWTH|tensorflow\[and-cuda\]"), frozenset({"tensorflow"})),
    (re.compile(r"XLA_PYTHON_CLIENT_\w+|\bjax\[cuda|jax-cuda\d+-plugin"), frozenset({"jax"})),
)
LINUX_ONLY = re.compile(
    r"\bsudo\b|\brmmod\b|\bmodprobe\b|\bldconfig\b|LD_LIBRARY_PATH|\bapt(?:-get)? install\b"
)
WINDOWS_PATH = re.compile(
    r"\b[A-Z]:\\(?:Users|Program Files|ProgramData|Windows|Python\d*|ProgramFiles)\\"
    r"|%PATH%|\b(?:cudart|cublas|cudnn|cufft|curand|cusolver|cusparse|nvrtc)\w*?(?:64|32)_\d+\.dll\b"
    r"|\bDLL load failed\b|\[WinError \d+\]",
    re.I,
)


def trim(step: str, framework: str | None) -> str | None:
    """The step without its parts labelled for other frameworks ("...; JAX: ..." for a PyTorch log);
    None when nothing is left."""
    if framework is None:
        return step
    parts = re.split(r";\s+(?=(?:PyTorch|TensorFlow|JAX|CuPy)\b[^:;]{0,40}:)", step)
    kept = [p for p in parts if not ((m := LABEL.match(p)) and LABEL_NAME[m.group(1)] != framework)]
    if not kept:
        return None
    alt = _alternatives(step if len(kept) == len(parts) else "; ".join(kept), framework)
    return _listed(alt, framework) if alt is not None else None


def _listed(step: str, framework: str) -> str:
    """ "(torch >= 2.3, tensorflow >= 2.18 for NumPy 2, or the module's latest release)": of a list in
    parentheses, the items that name no other framework (the list stays whole if that would empty it)."""

    def keep(m: re.Match[str]) -> str:
        items = m.group(1).split(", ")
        named = {f for i in items for f in FRAMEWORK_NAMES if names(f, i)}
        if len(items) < 2 or len(named) < 2:  # a list of one entry per framework, not prose about one
            return m.group(0)
        other = [
            any(names(f, i) for f in FRAMEWORK_NAMES if f != framework) and not names(framework, i)
            for i in items
        ]
        kept = [i for i, o in zip(items, other, strict=True) if not o]
        return m.group(0) if not kept or len(kept) == len(items) else f"({', '.join(kept)})"

    return re.sub(r"\(([^()]*)\)", keep, step)


FRAMEWORK_NAMES = FRAMEWORKS


def _alternatives(step: str, framework: str) -> str | None:
    """ "...: pip install 'tensorflow[and-cuda]' / the torch wheel for your CUDA / jax[cuda12]": of the
    alternatives one per framework, the failing framework's (None when none is its)."""
    head, sep, tail = step.rpartition(": ")
    alts = tail.split(" / ")
    if not sep or len(alts) < 2:
        return step
    named = [{f for f in FRAMEWORK_NAMES if names(f, alt)} for alt in alts]
    if len(set().union(*named)) < 2:
        return step
    kept = [alt for alt, fws in zip(alts, named, strict=True) if not fws or framework in fws]
    if not any(framework in fws for fws in named):
        return None
    return f"{head}{sep}{' / '.join(kept)}"


def names(framework: str, step: str) -> bool:
    """Whether a step names this framework itself (then it is written for it too, whatever else it names)."""
    own = {"torch": r"\btorch\b|PyTorch", "tensorflow": r"tensorflow|\btf\.", "jax": r"\bjax\b|\bJAX\b"}
    return re.search(own.get(framework, re.escape(framework)), step, re.I) is not None


LEAD = re.compile(rf"^\s*(?:Or\s+)?({LABELS})\b(?!\s*[:/(])")


def for_other_framework(step: str, ctx: Context) -> bool:
    """A step that names only what another framework reads (a PyTorch index for a JAX log, XLA_FLAGS
    for a PyTorch or numba one), or whose subject is another framework ('TensorFlow could not load the CUDA
    runtime its build needs ...' under a JAX log)."""
    if ctx.framework is None:
        return False
    lead = LEAD.match(step)
    if lead and ctx.framework in FRAMEWORKS and LABEL_NAME[lead.group(1)] != ctx.framework:
        return True
    if names(ctx.framework, step):
        return False
    for rx, frameworks in MARKERS:
        if rx.search(step) and ctx.framework not in frameworks and not rx.search(ctx.root):
            labelled = LABEL.match(step)
            if labelled is None or LABEL_NAME[labelled.group(1)] != ctx.framework:
                return True
    return False


def for_other_platform(step: str, ctx: Context) -> bool:
    """A Linux-only step (sudo, kernel modules, LD_LIBRARY_PATH) on native Windows."""
    return ctx.platform == "windows" and LINUX_ONLY.search(step) is not None and "WSL" not in step


def platform_from_log(text: str) -> str | None:
    """'windows' when the log's paths are Windows paths (C:\\Users\\..., C:\\Program Files\\...), it names
    %PATH% or a CUDA library by its DLL name (cudart64_110.dll), or Windows' loader speaks ('DLL load failed',
    '[WinError 126]')."""
    return "windows" if WINDOWS_PATH.search(text) else None


# Libraries with CUDA code of their own, named in a log that none of the four frameworks' hints fit:
# the steps written for PyTorch, TensorFlow or JAX are not theirs.
OTHER_FRAMEWORKS = (
    ("numba", re.compile(r"\bnumba\b", re.I)),
    ("pycuda", re.compile(r"\bpycuda\b", re.I)),
    ("ctranslate2", re.compile(r"ctranslate2|faster[_-]whisper", re.I)),
    ("onnxruntime", re.compile(r"onnxruntime", re.I)),
    ("jittor", re.compile(r"\bjittor\b", re.I)),
    ("mxnet", re.compile(r"\bmxnet\b", re.I)),
    ("paddle", re.compile(r"\bpaddle(?:paddle)?\b", re.I)),
    ("cntk", re.compile(r"\bcntk\b", re.I)),
    ("llama.cpp", re.compile(r"\bggml\b|llama\.cpp|llama_model_load", re.I)),
)


def framework_from_log(text: str) -> str | None:
    """The other CUDA library a log comes from, when one is named and none of the four frameworks is."""
    for name, rx in OTHER_FRAMEWORKS:
        if rx.search(text):
            return name
    return None
