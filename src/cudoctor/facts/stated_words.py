"""What people write of a build, a library or a framework without naming it as a framework fact would: a framework
named only by its API ('torch.cuda.is_available()') or by an application built on it ('spleeter'), a build's
architectures written as numbers, the CUDA a build was made with stated alone, and the libraries whose GPU floor or
CUDA line a check reads, in the names their other packages carry. Pure readers of text; facts/stated.py turns what
they return into facts."""

from __future__ import annotations

import re

from cudoctor import knowledge
from cudoctor.facts import stated_builds

# A framework named only by its API in what a person says ('torch.cuda.is_available() => True',
# 'tf.config.list_physical_devices("GPU") returns []'): that framework, release and build unknown
FRAMEWORK_CALLED = (
    (re.compile(r"\btorch\.(?:cuda|version|backends)\.", re.I), "torch"),
    (re.compile(r"\b(?:tf|tensorflow)\.(?:config|test|sysconfig)\.", re.I), "tensorflow"),
    (re.compile(r"\bjax\.(?:devices|local_devices|default_backend)\(", re.I), "jax"),
    (re.compile(r"\bcupy\.cuda\.", re.I), "cupy"),
)


def application_framework(text: str) -> str:
    """The framework an application named in the text is built on (knowledge/applications.toml: 'spleeter',
    'DeepFaceLab', 'ComfyUI'), where the facts name no framework; '' for none."""
    return knowledge.application_framework(text) or ""


def framework_called(text: str) -> str:
    """The one framework whose API the text calls, as a framework_version would name it; '' for none or several."""
    named = {name for pattern, name in FRAMEWORK_CALLED if pattern.search(text)}
    return named.pop() if len(named) == 1 else ""


# A build's architectures written as numbers ('compiled with CUDA compute 50, 60, and 70', 'Paddle installation
# with arch: 52 60 61 70 75', 'compiled 61 75 80 86', Paddle's 'package was compiled for 60 61 70 75 80 86'): three or more, after a word that says what they are
ARCH_NUMBERS_SAID = re.compile(
    r"\b(?:arch(?:itecture)?s?|compute(?:\s+capabilit(?:y|ies))?|compiled(?:\s+(?:with|for))?(?:\s+cuda)?(?:\s+compute)?)"
    r"\W{0,3}((?:(?:[3-9]\d|1[0-2]\d)(?:\s*,\s*|\s+)(?:and\s+)?){2,}(?:[3-9]\d|1[0-2]\d))(?![\d.])",
    re.I,
)


def archs_said(text: str) -> dict[str, object] | None:
    """A build's architectures written as numbers, and the words that say them; None where the text has none."""
    m = ARCH_NUMBERS_SAID.search(text)
    if m is None:
        return None
    start = max(text.rfind(sep, 0, m.start()) for sep in (";", "\n", ". "))
    return {
        "archs": [f"sm_{n}" for n in re.findall(r"\d+", m.group(1))],
        "said": text[start + 1 : m.end()].strip(" ;.\n")[-160:],
    }


# a build's CUDA said in prose: 'binaries compiled with CUDA 11.8', 'built against CUDA 12.1'
BUILT_WITH_CUDA = re.compile(
    r"\b(?:compiled|built|made)\s+(?:with|against|for|using)\s+CUDA\s*(\d{1,2}\.\d)\b", re.I
)


def built_with_cuda(text: str) -> str | None:
    """The CUDA a build is said in prose to be compiled with, or None."""
    m = BUILT_WITH_CUDA.search(text)
    return m.group(1) if m else None


def build_cuda(text: str) -> str | None:
    """The CUDA a framework_cuda field states ('cudatoolkit 10.0.130', 'CUDA 11.8 build', '12.1'), or None."""
    m = stated_builds.CUDA_WRITTEN.search(text) or re.search(
        r"(?<![\d.])(\d{1,2}\.\d)(?:\.\d+)*(?![\d.])", text
    )
    return m.group(1) if m else None


# Libraries whose GPU floor knowledge/gpu_floors.toml holds, as people write them: flash-attn by its name or
# FlashAttention's ('flash attention 2', 'FlashAttention-2', 'flash_attn 2.5.8'), vLLM with its release or none
GPU_LIBRARY_WRITTEN = re.compile(
    r"\b(flash[-_ ]?(?:attn|attention))(?:[-_ ]?v?(\d+(?:\.\d+)*(?:\.post\d+)?))?(?![\w.])"
    r"|\bvllm\b(?:\s*(?:==|=|:|\s)\s*v?(\d+\.\d+(?:\.\d+)*(?:\.post\d+)?))?",
    re.I,
)


# onnxruntime's GPU build as its other packages name it: the NuGet package ('Microsoft.ML.OnnxRuntime.Gpu
# (nuget package VERSION 1.16.0)'), the release archives ('onnxruntime-win-x64-gpu-1.6.0.zip'), or 'ONNX Runtime
# 1.19.1' beside a GPU word; its CUDA and cuDNN are those of the PyPI wheel of the same release (onnxruntime.ai
# CUDA-ExecutionProvider requirements, one table for all packages)
ORT_GPU_WRITTEN = re.compile(
    r"microsoft\.ml\.onnxruntime\.gpu\b[^\d\n]{0,40}?(\d+\.\d+(?:\.\d+)?)"
    r"|\bonnxruntime-(?:win|linux)-[a-z0-9_]+-gpu-(\d+\.\d+(?:\.\d+)?)"
    r"|\bonnx\s?runtime\s+v?(\d+\.\d+(?:\.\d+)?)(?=[^\n]{0,60}?(?<![\w-])(?:gpu|cuda)\b)",
    re.I,
)


# the CUDA 12 builds of onnxruntime before 1.19 (the default then was CUDA 11.8), as their archives name them
ORT_CUDA12_WRITTEN = re.compile(
    r"\bonnxruntime-(?:win|linux)-[a-z0-9_]+-(?:gpu-)?cuda12-(\d+\.\d+(?:\.\d+)?)", re.I
)


def library_pins(text: str) -> dict[str, str]:
    """The libraries with a GPU floor or a CUDA line that the text names, each with the release written ('?' for
    none): {'flash-attn': '2', 'vllm': '0.9.1', 'onnxruntime-gpu': '1.16.0'}; the first release written wins."""
    pins: dict[str, str] = {}
    for m in GPU_LIBRARY_WRITTEN.finditer(text):  # 'flash attention 2', 'FlashAttention-2', 'vllm 0.9.1'
        key = "flash-attn" if m.group(1) else "vllm"
        if pins.get(key, "?") == "?":
            pins[key] = m.group(2) or m.group(3) or "?"
    cuda12 = ORT_CUDA12_WRITTEN.search(text)
    gpu_ort = None if cuda12 else ORT_GPU_WRITTEN.search(text)
    if cuda12:
        pins["onnxruntime-gpu-cuda12"] = cuda12.group(1)
    if gpu_ort:
        pins["onnxruntime-gpu"] = next(g for g in gpu_ort.groups() if g)
    return pins
