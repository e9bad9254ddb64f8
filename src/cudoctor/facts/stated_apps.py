"""Applications that bring their own CUDA build, read from what a person stated: ollama (its release,
and the CUDA runner it says it used). Their GPU support is their own, not a Python framework's: the
checks read it against knowledge/ollama.toml (checks/ollama.py).
"""

from __future__ import annotations

import re
from typing import Any

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
