"""Applications that bring their own CUDA build, read from what a person stated: ollama (its release,
and the CUDA runner it says it used). Their GPU support is their own, not a Python framework's: the
checks read it against knowledge/ollama.toml (checks/ollama.py).
"""

from __future__ import annotations

import re
from typing import Any

from cudoctor import knowledge
from cudoctor.model import Fact, known

OLLAMA = re.compile(r"(?<![\w-])ollama(?![\w])", re.I)
# every ollama release is 0.x.y: 'ollama 0.1.20', 'Ollama v0.4.0', 'ollama version is 0.11.11'
OLLAMA_RELEASE = re.compile(r"(?<![\w-])ollama(?![\w])[^\d\n]{0,24}?v?(0\.\d+\.\d+)(?![\d.])", re.I)
# the CUDA runner it says it used: 'CUDA 13.0 backend', 'cuda_v13', 'the CUDA 12 runner'
RUNNER = re.compile(
    r"\bcuda[_ ]v(1[1-3])\b|\bcuda[ -]?(1[1-3])(?:\.\d)?[ -](?:backend|runner|library|variant|build)\b", re.I
)
# a build of ollama made with the machine's own CUDA toolkit: Arch's ollama-cuda package, one built
# from source, one that says it uses the system CUDA
SYSTEM_BUILD = re.compile(
    r"\bollama-cuda\b|\b(?:uses|built with|against) the system cuda\b|\bfrom source\b", re.I
)


def ollama_facts(text: str, system_cuda: str | None) -> list[Fact]:
    """`app.ollama`: {'release', 'runner' (the CUDA major it says it used), 'system_cuda' (a build made
    with the machine's toolkit), 'stated'} where the text names ollama, else nothing."""
    if not OLLAMA.search(text):
        return []
    info: dict[str, Any] = {"stated": " ".join(text.split())[:200]}
    release = OLLAMA_RELEASE.search(text)
    if release:
        info["release"] = release.group(1)
    runner = RUNNER.search(text)
    if runner:
        info["runner"] = runner.group(1) or runner.group(2)
    toolkit = re.search(r"\d+\.\d+", system_cuda or "")
    if toolkit and SYSTEM_BUILD.search(text):
        info["system_cuda"] = toolkit.group(0)
    return [known("app.ollama", info, "stated")]


# PaddlePaddle, named by its package or its own log ('paddlepaddle-gpu 2.3.2.post116', 'Paddle version: 2.5.0',
# 'PaddlePaddle 2.1.2', 'paddlepaddle-gpu==3.2.2 (-i .../packages/stable/cu126/)'): the CUDA of its wheel from
# the wheel's tag, its index or its own start-up line ('Runtime API Version: 10.2'; 'Driver API Version' is the
# driver's), else the untagged PyPI wheel of its release (knowledge/paddle.toml)
PADDLE = re.compile(
    r"(?<![\w-])paddle(?:paddle)?(?:[-_]gpu)?(?![\w-])(?:\s*(?:version|==|:|=))*\s*v?"
    r"(?P<release>\d+\.\d+(?:\.\d+)?(?:(?:\.post|\.dev|rc|b)\d+)?)?",
    re.I,
)
PADDLE_GPU = re.compile(
    r"(?<![\w-])paddle(?:paddle)?[-_]gpu\b|\.post\d{2,3}\b|/packages/\w+/cu\d{3}/|Paddle With CUDA:\s*True",
    re.I,
)
# the cuDNN major a wheel is said to load ('loads cudnn64_7.dll', 'wants libcudnn.so.8')
LOADS_CUDNN = re.compile(
    r"\b(?:loads?|wants?|looks for|needs?)\s+(?:cudnn64_(\d)\.dll|libcudnn\.so\.(\d))", re.I
)
POST_TAG = re.compile(r"\.post(\d{2,3})\b")  # post112: CUDA 11.2, post90: CUDA 9.0
INDEX = re.compile(r"/packages/(?:stable|nightly)/cu(\d{3})/", re.I)  # .../packages/stable/cu126/
RUNTIME_API = re.compile(r"Runtime API Version:?\s*(\d+\.\d+)", re.I)
DRIVER_API = re.compile(r"Driver API Version:?\s*(\d+\.\d+)", re.I)


def _paddle_cuda(text: str, release: str | None) -> tuple[str, str] | None:
    """The CUDA of the Paddle wheel and what says so."""
    for rx, what in ((POST_TAG, "its tag"), (INDEX, "its index")):
        m = rx.search(text)
        if m:  # the CUDA's digits without the dot: 112 is 11.2, 90 is 9.0, 126 is 12.6
            return f"{m.group(1)[:-1]}.{m.group(1)[-1]}", what
    m = RUNTIME_API.search(text)
    if m:
        return m.group(1), "its own 'Runtime API Version'"
    row = knowledge.paddle_build(release, None) if release else None
    return (str(row["cuda"]), f"the untagged PyPI wheel of {release}") if row else None


def paddle_facts(text: str, gpu_stated: bool = False) -> list[Fact]:
    """`app.paddle`: {'release', 'cuda' and 'cuda_from' (the wheel's CUDA and what says so), 'cudnn' (the cuDNN
    it was compiled with), 'system_libs' (a 2.x wheel loading the system's CUDA), 'stated'} where the text names a PaddlePaddle GPU wheel or its start-up line (or
    PaddlePaddle beside a stated GPU: `gpu_stated`)."""
    m = next((m for m in PADDLE.finditer(text) if m.group("release")), None) or PADDLE.search(text)
    # its start-up line names it by its form alone; 'PaddlePaddle 2.1.2' names no package: the GPU wheel where
    # a GPU is stated beside it
    own_line = RUNTIME_API.search(text) and DRIVER_API.search(text)
    if not own_line and (
        m is None or not (PADDLE_GPU.search(text) or RUNTIME_API.search(text) or gpu_stated)
    ):
        return []
    release = re.sub(r"\.post\d+$", "", m.group("release") or "") or None if m else None
    info: dict[str, Any] = {"stated": " ".join(text.split())[:200]}
    if release:
        info["release"] = release
    found = _paddle_cuda(text, release)
    if found:
        info["cuda"], info["cuda_from"] = found
        row = knowledge.paddle_build(release, found[0]) if release else None
        if row:
            info["cudnn"] = row.get("cudnn")
            info["system_libs"] = bool(row.get("system_libs"))
    loads = LOADS_CUDNN.search(text)
    if loads and not info.get("cudnn"):
        info["cudnn"] = loads.group(1) or loads.group(2)
    return [known("app.paddle", info, "stated")]
