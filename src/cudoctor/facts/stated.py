"""Facts a person stated in free text ("A100", "tensorflow-gpu 1.13.1", "CUDA 10.0") as a Snapshot.

Keys: gpu, compute_capability, driver, framework_version, framework_cuda, system_cuda, cudnn,
os, python, container, other. The result uses the same fact keys as a live snapshot, so every
check runs unchanged; each fact's source says `stated:<key>`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from cudoctor import knowledge, versions
from cudoctor.model import Fact, Snapshot, known

KEYS = (
    "gpu",
    "compute_capability",
    "driver",
    "framework_version",
    "framework_cuda",
    "system_cuda",
    "cudnn",
    "os",
    "python",
    "container",
    "other",
)

# Settings a person may state in prose ("the script exports CUDA_VISIBLE_DEVICES=3"); values only,
# never paths, which would name directories on their machine, not this one.
STATED_SETTINGS = (
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_MODULE_LOADING",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "XLA_CLIENT_MEM_FRACTION",
    "JAX_PLATFORMS",
    "TF_FORCE_GPU_ALLOW_GROWTH",
)
SETTING = re.compile(r"\b(" + "|".join(STATED_SETTINGS) + r")\s*=\s*[\"']?([^\s\"';]*)")

FRAMEWORK_WORDS = (
    (re.compile(r"\b(tensorflow|tf)\b", re.I), "tensorflow"),
    (re.compile(r"\b(torch|pytorch)\b", re.I), "torch"),
    (re.compile(r"\bjax(lib)?\b", re.I), "jax"),
    (re.compile(r"\bcupy\b", re.I), "cupy"),
    (re.compile(r"\bkeras\b", re.I), "tensorflow"),
)


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return "" if value is None else str(value)


MAX_STATED_GPUS = 64


def split_gpus(text: str) -> list[str]:
    """'2x Tesla P40' -> ['Tesla P40', 'Tesla P40'] (one per GPU); 'GTX 1080 Ti and RTX 2080 Ti' -> both."""
    parts = re.split(r"\s*(?:,|;|\band\b|\+|/(?=\s*[A-Za-z]))\s*", text)
    out: list[str] = []
    for p in parts:
        count = re.match(r"^(\d+)\s*[x×]\s*", p.strip())
        p = p.strip()[count.end() :] if count else p.strip()
        if p and re.search(r"[a-zA-Z]", p):
            out += [p] * min(int(count.group(1)) if count else 1, MAX_STATED_GPUS)
    return out[:MAX_STATED_GPUS]


def gpu_facts(gpu: str, cc_text: str) -> list[Fact]:
    names = split_gpus(gpu) if gpu else []
    stated_cc = versions.cc_tuple(cc_text) if cc_text else None
    devices = []
    for i, name in enumerate(names or ["GPU"]):
        hit = knowledge.gpu_cc(name)
        cc = versions.cc_str(stated_cc) if stated_cc else (hit[0] if hit else None)
        if not names and cc is None:
            continue
        devices.append({"index": i, "name": name, "cc": cc})
    return [known("gpu.devices", devices, "stated:gpu")] if devices else []


def driver_facts(text: str) -> list[Fact]:
    found = re.findall(r"\b(\d{3}(?:\.\d+){1,2}|\d{3})\b(?!\.)", text)
    m = re.search(r"\b(\d{3}(?:\.\d+){0,2})\b", text)
    facts = []
    if m:
        facts.append(known("driver.version", m.group(1), "stated:driver"))
    if len(set(found)) > 1 and re.search(r"user.?space|libcuda|dso|library", text, re.I):
        facts.append(known("driver.userspace_version", found[1], "stated:driver"))
    cuda = re.search(r"CUDA\s*(?:Version)?\s*:?\s*(\d+\.\d+)", text, re.I)
    if cuda:
        facts.append(known("driver.cuda_version", cuda.group(1), "stated:driver"))
    elif m:
        best = knowledge.max_cuda_for_driver(m.group(1) if "." in m.group(1) else m.group(1) + ".999")
        if best:
            facts.append(
                known("driver.cuda_version", best, "stated:driver (derived from the driver version)")
            )
    return facts


def guess_framework(text: str, hint: str | None) -> str | None:
    for pattern, name in FRAMEWORK_WORDS:
        if pattern.search(text):
            return name
    if re.search(r"\d\+(?:cu\d+|cpu|rocm)", text):
        return "torch"  # the local-version convention of PyTorch wheels
    return hint


def framework_facts(version_text: str, cuda_text: str, hint: str | None) -> list[Fact]:
    name = guess_framework(version_text, hint)
    if name is None:
        return []
    vm = re.search(r"(\d+\.\d+(?:\.\d+)?(?:\.?(?:dev|a|b|rc)\w*)?(?:\+[\w.]+)?)", version_text)
    version = vm.group(1) if vm else None
    variant = re.search(r"\b(cu\d{2,3})\b|\+(cu\d{2,3})", version_text)
    cuda = versions.cuda_from_variant(variant.group(1) or variant.group(2)) if variant else None
    if cuda_text:
        cuda = ".".join(str(p) for p in (versions.parse(cuda_text) or ())[:2]) or cuda
    build = (
        "cpu"
        if re.search(r"\+cpu|-cpu\b|\bcpu\b", version_text, re.I)
        else "cuda"
        if (cuda or _gpu_package(version_text, name, version))
        else "unknown"
    )
    info: dict[str, Any] = {"version": version, "cuda": cuda, "build": build, "stated": version_text}
    if name == "tensorflow" and build == "cuda" and cuda is None and version:
        row = knowledge.tf_build(version)
        if row:
            info["cuda"], info["cudnn"] = row["cuda"], row["cudnn"]
    if name == "torch" and version and cuda is None and build == "unknown":
        default = knowledge.torch_default_variant(version)
        if default:
            info.update(
                build="cuda",
                cuda=versions.cuda_from_variant(default),
                cuda_inferred=f"{default}: the default wheel of torch {version}",
            )
    return [known(f"framework.{name}", info, "stated:framework_version")]


def _gpu_package(text: str, name: str, version: str | None) -> bool:
    """'tensorflow-gpu', 'tensorflow[and-cuda]', jax[cuda12]: the build is a CUDA one."""
    if re.search(r"-gpu|and-cuda|\[cuda\d*\]|cuda\d+[-_]plugin", text, re.I):
        return True
    return (
        name == "tensorflow"
        and bool(version)
        and versions.parse(version or "") is not None
        and (versions.parse(version or "") or (0,)) >= (2, 1)
    )


def toolkit_facts(text: str) -> list[Fact]:
    found = re.findall(r"(?<![\d.])(\d{1,2}\.\d+(?:\.\d+)?)(?![\d.])", text)
    toolkits = [
        {"root": f"(stated) CUDA {v}", "version": v, "found_via": ["stated:system_cuda"], "stated": True}
        for v in found
    ]
    return [known("cuda.toolkits", toolkits, "stated:system_cuda")] if toolkits else []


def cudnn_versions(text: str) -> list[str]:
    """'8.9.2' as written; 8902 or 90100 (torch.backends.cudnn.version(), TF's 'Loaded cuDNN version') as 8.9.2, 9.1.0."""
    found = re.findall(r"(?<![\w.])\d+(?:\.\d+)*", text)
    return [(versions.cudnn_from_int(v) if len(v) >= 4 else None) or v for v in found]


DRIVE_PATH = re.compile(r"^[A-Za-z]:\\")  # C:\ (a log's Windows path stands for the OS)


def os_facts(text: str) -> list[Fact]:
    if DRIVE_PATH.match(text):
        text = f"Windows (paths like {text})"
    system = (
        "Windows"
        if re.search(r"windows|win1\d", text, re.I) and not re.search(r"\bwsl", text, re.I)
        else "Darwin"
        if re.search(r"mac ?os|os x|darwin", text, re.I)
        else "Linux"
    )
    return [
        known("host.os", {"system": system, "name": text}, "stated:os"),
        known("host.wsl", bool(re.search(r"\bwsl", text, re.I)), "stated:os"),
    ]


def env_facts(text: str) -> list[Fact]:
    """The settings (STATED_SETTINGS) a text assigns, as the `env` fact; the last assignment wins."""
    found = {m.group(1): m.group(2).rstrip(",.") for m in SETTING.finditer(text)}
    return [known("env", found, "stated:other")] if found else []


def from_stated(stated: Mapping[str, Any], framework_hint: str | None = None) -> Snapshot:
    """A Snapshot of the facts a person stated; keys not stated stay unknown."""
    snap = Snapshot(origin="stated")
    get = lambda k: _text(stated.get(k)).strip()  # noqa: E731
    for fact in gpu_facts(get("gpu"), get("compute_capability")):
        snap.add(fact)
    if get("driver"):
        for fact in driver_facts(get("driver")):
            snap.add(fact)
    if get("framework_version") or get("framework_cuda"):
        for fact in framework_facts(get("framework_version"), get("framework_cuda"), framework_hint):
            snap.add(fact)
    if get("system_cuda"):
        for fact in toolkit_facts(get("system_cuda")):
            snap.add(fact)
    if get("cudnn"):
        snap.add(known("cudnn.versions", cudnn_versions(get("cudnn")), "stated:cudnn"))
    if get("os"):
        for fact in os_facts(get("os")):
            snap.add(fact)
    for key in ("python", "container", "other"):
        if get(key):
            snap.add(known(f"stated.{key}", get(key), f"stated:{key}"))
    for fact in env_facts(get("container") + "\n" + get("other")):
        snap.add(fact)
    return snap
