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
from cudoctor.facts import companions, stated_apps, stated_builds, stated_containers, stated_words
from cudoctor.facts.stated_containers import container_facts
from cudoctor.model import Fact, Snapshot, absent, known

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
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
)
SETTING = re.compile(r"\b(" + "|".join(STATED_SETTINGS) + r")\s*=\s*[\"']?([^\s\"';]*)")


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return "" if value is None else str(value)


MAX_STATED_GPUS = 64


def split_gpus(text: str) -> list[str]:
    """'2x Tesla P40' -> ['Tesla P40', 'Tesla P40'] (one per GPU); 'GTX 1080 Ti and RTX 2080 Ti' -> both."""
    # a separator inside parentheses is not one between GPUs ('RTX 5090 (Blackwell, sm_120)')
    text = re.sub(r"\([^()]*\)", lambda m: m.group(0).replace(",", "").replace(";", ""), text)
    parts = re.split(r"\s*(?:,|;|\band\b|\+|/(?=\s*[A-Za-z]))\s*", text)
    out: list[str] = []
    for p in parts:
        count = re.match(r"^(\d+)\s*[x×]\s*", p.strip())
        p = p.strip()[count.end() :] if count else p.strip()
        if p and (re.search(r"[a-zA-Z]", p) or re.fullmatch(r"[1-9]\d{3}", p)):  # '3090' alone is a GeForce
            out += [p] * min(versions.integer(count.group(1)) if count else 1, MAX_STATED_GPUS)
    return out[:MAX_STATED_GPUS]


GPU_MEMORY = re.compile(r"(?:^|[\s(-])(\d{1,3})\s*GB\)?(?=\s|$)", re.I)


def gpu_memory(written: str) -> tuple[str, int | None]:
    """'GeForce RTX 3090 24GB' -> ('GeForce RTX 3090', 24576): the size a GPU's name states, in MiB
    as NVML counts it (a 24 GB card has 24576 MiB); a size inside the model name ('A100-SXM4-80GB',
    as nvidia-smi writes it) stays in the name."""
    m = GPU_MEMORY.search(written)
    if m is None:
        return written, None
    inside = m.group(0)[:1] == "-"
    name = written if inside else (written[: m.start()] + written[m.end() :]).strip(" ,")
    return name or written, versions.integer(m.group(1)) * 1024


# A compute capability as tools print it beside a GPU: TensorFlow's 'major: 3 minor: 0', PyTorch's 'which is
# of cuda capability 3.5', TensorFlow's 'compute capability: 8.6' and 'with Cuda compute capability 3.0'.
CC_SAID = re.compile(
    r"\bmajor:\s*(\d+)\s*minor:\s*(\d+)|(?:which is of cuda capability|compute capability:?)\s*(\d+\.\d+)"
    r"|\bsm_(\d{1,2})(\d)\b"  # the architecture's name: 'RTX 50 series (Blackwell, sm_120)', 'sm_86'
    r"|\bcompute[- ](\d{1,2}\.\d)\b",  # 'a compute-12.0 card'
    re.I,
)


def cc_said(text: str) -> str | None:
    m = CC_SAID.search(text)
    if m is None:
        return None
    if m.group(4):
        return f"{m.group(4)}.{m.group(5)}"
    return f"{m.group(1)}.{m.group(2)}" if m.group(1) else m.group(3) or m.group(6)


def _model_cc(name: str) -> tuple[str, str] | None:
    """The compute capability of a GPU written any usual way, a bare model number too ('3090',
    '5070 Ti Laptop GPU', 'GPU: 960M'): in the gpu field it is a GeForce, RTX from the 20 series on."""
    hit = knowledge.gpu_cc(name)
    bare = re.fullmatch(r"(?:gpu:?\s*)?(\d{3,4}\s*(?:ti|m|super|laptop|gpu|\s)*)", name.strip(), re.I)
    if hit is None and bare:
        for series in ("RTX", "GTX"):
            hit = knowledge.gpu_cc(f"{series} {bare.group(1)}")
            if hit:
                break
    return hit


# A GPU CUDA cannot use, as people name it beside or instead of an NVIDIA one ('integrated Intel Iris Xe
# Graphics (no NVIDIA GPU)', 'AMD Radeon RX 6800', 'Apple M2'); an NVIDIA name anywhere in the part wins
NOT_NVIDIA = re.compile(
    r"\b(?:intel|iris|(?:u?hd|arc) graphics|arc a\d{3}|amd|radeon|apple m[1-9]|mali|adreno)\b|\bno nvidia\b",
    re.I,
)
NVIDIA_WORDS = re.compile(r"\b(?:nvidia|geforce|gtx|rtx|quadro|tesla|titan|jetson)\b", re.I)


def _not_nvidia(name: str) -> bool:
    if NVIDIA_WORDS.search(re.sub(r"\bno nvidia\b", " ", name, flags=re.I)) or _model_cc(name):
        return False
    return NOT_NVIDIA.search(name) is not None


def gpu_facts(gpu: str, cc_text: str) -> list[Fact]:
    names = split_gpus(gpu) if gpu else []
    others = [n for n in names if _not_nvidia(n)]
    names = [n for n in names if n not in others]
    if others and not names:  # only GPUs CUDA cannot use: no NVIDIA GPU, as stated
        return [known("gpu.devices", [], "stated:gpu"), known("gpu.not_nvidia", others, "stated:gpu")]
    said = cc_text or cc_said(gpu)
    stated_cc = versions.cc_tuple(said) if said else None
    devices = []
    for i, written in enumerate(names or ["GPU"]):
        name, memory = gpu_memory(written)
        hit = _model_cc(name)
        cc = versions.cc_str(stated_cc) if stated_cc else (hit[0] if hit else None)
        if not names and cc is None:
            continue
        devices.append(
            {"index": i, "name": name, "cc": cc, **({"memory_total_mib": memory} if memory else {})}
        )
    return [known("gpu.devices", devices, "stated:gpu")] if devices else []


DRIVER_CUDA_NUMBER = re.compile(
    r"(?:cuda(?: driver)?(?: version)?|found version|driver version)\s*[:=]?\s*\b(\d{4,5})\b", re.I
)


BARE_DRIVER_CUDA = re.compile(r"(?<![\w.])v?(\d{1,2}\.\d)(?![\d.])")


def driver_facts(text: str, windows: bool = False) -> list[Fact]:
    """The driver's version and the CUDA it runs, as stated (`windows`: a native Windows driver, numbered
    on Windows' scale)."""
    versions_only = DRIVER_CUDA_NUMBER.sub(" ", text)  # the driver's CUDA integer is not its version
    found = re.findall(r"(?<![\w.])v?(\d{3}(?:\.\d+){1,2}|\d{3})\b(?!\.)", versions_only)
    m = re.search(r"(?<![\w.])v?(\d{3}(?:\.\d+){0,2})\b", versions_only)
    facts = []
    if m:
        facts.append(known("driver.version", m.group(1), "stated:driver"))
    if len(set(found)) > 1 and re.search(r"user.?space|libcuda|dso|library", text, re.I):
        facts.append(known("driver.userspace_version", found[1], "stated:driver"))
    cuda = re.search(r"CUDA\s*(?:Version)?\s*:?\s*(\d+\.\d+)", text, re.I)
    number = DRIVER_CUDA_NUMBER.search(text)  # cudaDriverGetVersion's integer: 12020 is CUDA 12.2
    if cuda:
        facts.append(known("driver.cuda_version", cuda.group(1), "stated:driver"))
    elif number:
        facts.append(
            known(
                "driver.cuda_version",
                versions.cuda_from_int(versions.integer(number.group(1))),
                "stated:driver",
            )
        )
    # 'driver 8.0': no driver is numbered so, it is the CUDA the driver runs
    elif not m and (bare := BARE_DRIVER_CUDA.search(text)):
        facts.append(known("driver.cuda_version", bare.group(1), "stated:driver"))
    elif m:
        best = knowledge.max_cuda_for_driver(
            m.group(1) if "." in m.group(1) else m.group(1) + ".999", windows
        )
        if best:
            facts.append(
                known("driver.cuda_version", best, "stated:driver (derived from the driver version)")
            )
    return facts


def framework_facts(
    version_text: str, cuda_text: str, hint: str | None, native_windows: bool = False
) -> list[Fact]:
    found = stated_builds.framework_info(version_text, cuda_text, hint)
    if found is None:
        return []
    name, info = found
    # an NGC image's framework is NVIDIA's own build, with the CUDA of its release (25.01: CUDA 12.8), not
    # the pip wheel's tested one
    libs = str(info.get("cuda_libs") or "").lower()
    ngc = "nvcr.io" in libs or "ngc" in libs
    if (
        name == "tensorflow"
        and info["build"] == "cuda"
        and info["cuda"] is None
        and info["version"]
        and not ngc
    ):
        row = knowledge.tf_build(info["version"], "windows" if native_windows else "linux")
        row = row or knowledge.tf_build(info["version"])
        if row:
            info["cuda"], info["cudnn"] = row["cuda"], row["cudnn"]
    if name == "tensorflow" and info["build"] == "unknown" and info["version"]:
        row = knowledge.tf_build(info["version"], "windows" if native_windows else "linux")
        if row:  # TF 1.x: 'tensorflow' was the CPU package, 'tensorflow-gpu' the CUDA one
            info["cuda_if_gpu"] = row["cuda"]
    if name == "tensorflow" and native_windows:
        info = stated_builds.tf_on_native_windows(info)
    if name == "jax" and native_windows and not stated_builds.JAX_TAG.search(version_text):
        info = {  # JAX's CUDA wheels are Linux's (WSL2's); a native Windows jaxlib is the CPU build
            **info,
            "build": "cpu",
            "cuda": None,
            "build_inferred": knowledge.table("jax")["native_windows"]["source"].split(" (")[0],
        }
    version = info["version"]
    # PyPI's torch wheels for Windows are CPU-only and the CUDA ones carry +cuXXX, so an untagged
    # version there says nothing sure about the build: the Linux default is not assumed
    if (
        name == "torch"
        and version
        and info["cuda"] is None
        and info["build"] == "unknown"
        and not native_windows
        and "+git" not in version  # a source build (2.0.0a0+git7f2b5ea): built with whatever CUDA was there
    ):
        default = knowledge.torch_default_variant(version)
        if default:
            info.update(
                build="cuda",
                cuda=versions.cuda_from_variant(default),
                cuda_inferred=f"{default}: the default wheel of torch {version}",
            )
    return [known(f"framework.{name}", info, "stated:framework_version")]


CUDNN_NEWEST_MAJOR = 9
CUDNN_WRITTEN = re.compile(r"\bcu?dnn\s*v?\s*(\d+(?:\.\d+)*)", re.I)  # 'cuDNN 8.9.2' beside a CUDA


def outside_remarks(pattern: str, text: str) -> list[str]:
    """The matches of `pattern` outside parentheses: a version in parentheses after one written outside them
    is a remark on it ('12.5 (V12.5.82)', '5005 (compatibility version 5000)'); inside them only when
    nothing outside matches."""
    return re.findall(pattern, re.sub(r"\([^()]*\)", " ", text)) or re.findall(pattern, text)


def toolkit_facts(text: str) -> list[Fact]:
    """'11.8', 'cudatoolkit 11.3 (conda)', '10.2 system-wide plus 11.6 ...'; a cuDNN named beside
    them ('CUDA 11.8 / cuDNN 8.9.2') is the `cudnn.versions` fact, not a toolkit."""
    facts = []
    # 'CUDA/cuDNN 10.1' names a CUDA: no cuDNN has a major past 9
    is_cudnn = lambda m: int(m.group(1).split(".")[0]) <= CUDNN_NEWEST_MAJOR  # noqa: E731
    cudnn = [m.group(1) for m in CUDNN_WRITTEN.finditer(text) if is_cudnn(m)]
    if cudnn:
        facts.append(known("cudnn.versions", cudnn, "stated:system_cuda"))
    rest = CUDNN_WRITTEN.sub(lambda m: " " if is_cudnn(m) else m.group(1), text)
    number = r"(?<![\d.])(\d{1,2}\.\d+(?:\.\d+)?)(?![\d.])"
    found = outside_remarks(number, rest)  # '12.5 (V12.5.82)': one toolkit
    if not found:  # 'cuda 9', 'Cuda 11', '12 (the cluster's module)': the major alone (compared as X.0)
        majors = re.findall(
            r"\bcuda(?:toolkit)?\s*(?:version\s*)?v?(\d{1,2})\b(?![.\d])|^\s*(\d{1,2})\b(?![.\d])", rest, re.I
        )
        found = [a or b for a, b in majors]
    # conda's cudatoolkit: its libraries are in $CONDA_PREFIX/lib
    conda = CONDA_TOOLKIT_SAID.search(text) is not None
    toolkits = [
        {"root": f"(stated) CUDA {v}", "version": v, "found_via": ["stated:system_cuda"], "stated": True}
        | ({"conda": True} if conda else {})
        for v in _one_per_toolkit(found)
    ]
    return facts + ([known("cuda.toolkits", toolkits, "stated:system_cuda")] if toolkits else [])


CONDA_TOOLKIT_SAID = re.compile(r"\bconda\b[^\n]{0,40}\bcuda(?:toolkit|-toolkit)?\b|\bcudatoolkit\b", re.I)


def _one_per_toolkit(found: list[str]) -> list[str]:
    """'release 10.1, V10.1.243' or '11.2 installed at .../CUDA/v11.2' name one toolkit: the most precise
    version of each is kept, where it was first written."""
    out: list[str] = []
    for v in found:
        same = next(
            (i for i, u in enumerate(out) if v == u or v.startswith(u + ".") or u.startswith(v + ".")), None
        )
        if same is None:
            out.append(v)
        elif len(v) > len(out[same]):
            out[same] = v
    return out


CUDNN_HEADER = re.compile(r"CUDNN_MAJOR\W*(\d+)\W+CUDNN_MINOR\W*(\d+)\W+CUDNN_PATCHLEVEL\W*(\d+)")


def cudnn_versions(text: str) -> list[str]:
    """'8.9.2' as written; 8902 or 90100 (torch.backends.cudnn.version(), TF's 'Loaded cuDNN version') as 8.9.2, 9.1.0.
    Versions in parentheses after one written outside them are remarks ('8.0.4 (after upgrading to 8.1.0)',
    '5005 (compatibility version 5000)'), not other copies."""
    # NVIDIA's archive names carry the CUDA they are for: 'cudnn-11.2-windows-x64-v8.1.1.33' is cuDNN 8.1.1.33,
    # 'cudnn-windows-x86_64-8.9.2.26_cuda12-archive' cuDNN 8.9.2.26
    text = re.sub(r"\bcudnn-\d+\.\d+-(?=\w+-x64-v\d)|_cuda\d+(?:\.\d+)?-archive\b", " ", text, flags=re.I)
    # cudnn.h's macros: 'CUDNN_MAJOR 8, CUDNN_MINOR 6, CUDNN_PATCHLEVEL 0'
    text = CUDNN_HEADER.sub(r"\1.\2.\3", text)
    text = re.sub(
        r"\bcu?dnn\s*v?(?=\d)|\blibcudnn\.so\.|(?<![\w.])v(?=\d)", " ", text, flags=re.I
    )  # 'cudnn8', 'cuDNN v8.9', 'v8.0.1'
    found = outside_remarks(r"(?<![\w.])\d+(?:\.\d+)*", text)
    return [(versions.cudnn_from_int(v) if len(v) >= 4 else None) or v for v in found]


DRIVE_PATH = re.compile(r"^[A-Za-z]:\\")  # C:\ (a log's Windows path stands for the OS)


OS_WORDS = (
    ("Windows", r"windows|win1\d|\bwin(?:dow)?\s?(?:7|8|10|11)(?!\d)"),  # 'Window 7x64', 'win 10'
    ("Darwin", r"mac ?os|os x|darwin"),
    ("Linux", r"linux|ubuntu|debian|cent ?os|fedora|red ?hat|rhel|rocky|almalinux|suse|\bmint\b|pop!?_os"),
)


def os_facts(text: str) -> list[Fact]:
    """'Windows 10' (native), 'Windows 11, WSL2 Ubuntu 22.04' (Linux under WSL), 'Ubuntu 20.04 in docker'."""
    if DRIVE_PATH.match(text):
        text = f"Windows (paths like {text})"
    # 'Windows (native, not WSL)', 'no WSL': a WSL that is denied is not one
    wsl = bool(re.search(r"(?<!not )(?<!no )(?<!without )\bwsl", text, re.I))
    named = [  # the system named first: 'Linux (Ubuntu; the same install works on Windows)' is Linux
        (m.start(), system)
        for system, pattern in OS_WORDS
        if (m := re.search(pattern, text, re.I)) and not (wsl and system == "Windows")
    ]
    system = min(named)[1] if named else "Linux"
    facts = [
        known("host.os", {"system": system, "name": text}, "stated:os"),
        known("host.wsl", wsl, "stated:os"),
    ]
    build = stated_containers.windows_build(text)
    if build:
        facts.append(known("host.windows_build", build, "stated:os"))
    return facts + container_facts(text, "os")


def python_facts(text: str) -> list[Fact]:
    """'python 3.8.10', '3.10': the `host.python` fact a live snapshot holds."""
    m = re.search(r"(?<![\d.])(\d\.\d+(?:\.\d+)?)(?![\d.])", text)
    return [known("host.python", {"version": m.group(1)}, "stated:python")] if m else []


def env_facts(text: str) -> list[Fact]:
    """The settings (STATED_SETTINGS) a text assigns, as the `env` fact; the last assignment wins."""
    found = {m.group(1): m.group(2).rstrip(",.") for m in SETTING.finditer(text)}
    return [known("env", found, "stated:other")] if found else []


# A build's arch list as people quote it: torch's own warning ("The current PyTorch install supports CUDA
# capabilities sm_37 sm_50 sm_60 sm_70"), torch.cuda.get_arch_list(), "arch list sm_50 sm_70 ..."
ARCHS_WRITTEN = re.compile(
    r"(?:supports?(?: cuda capabilities)?|arch(?:itecture)?s?(?: list)?)\W{0,3}((?:'?(?:sm|compute)_\d+a?'?[\s,]*){2,})"
    r"|((?:'?(?:sm|compute)_\d+a?'?[\s,]*){3,})",  # three or more arch names in a row need no word before them
    re.I,
)
PINNED = re.compile(r"(?<![\w.-])([A-Za-z][\w.-]*[A-Za-z0-9])==(\d+(?:\.\d+)+[\w.+-]*)")


def _stated_archs(snap: Snapshot, text: str) -> None:
    """An arch list written in the facts goes to the framework it names (torch, the one stated)."""
    m = ARCHS_WRITTEN.search(text)
    if m is None:
        return
    archs = re.findall(r"(?:sm|compute)_\d+a?", m.group(1) or m.group(2))
    names = [k.split(".", 1)[1] for k in snap.facts if k.startswith("framework.")]
    name = "torch" if re.search(r"torch|pytorch", text, re.I) or not names else names[0]
    info = dict(snap.value(f"framework.{name}") or {"version": None, "cuda": None, "stated": m.group(0)})
    info.update(archs=archs, build="cuda")
    snap.add(known(f"framework.{name}", info, "stated:other"))


# What a framework's own message says, pasted into the facts: the lowest GPU its build supports (PyTorch's
# "The minimum cuda capability supported by this library is 3.7" / "that we support is 3.5", TensorFlow's
# "The minimum required Cuda capability is 3.5"), and the driver's CUDA ("The NVIDIA driver on your system
# is too old (found version 11040)").
MIN_CC_SAID = re.compile(
    r"minimum (?:required )?(?:cuda|compute) capability ?(?:supported by this library |that we support )?(?:is|:) ?(\d+\.\d+)",
    re.I,
)
# PyTorch's verdict on the GPU, pasted: "... with CUDA capability sm_61 is not compatible with the current PyTorch
# installation" (the build lacks it) and "Found GPU0 ... which is of cuda capability 3.0. PyTorch no longer
# supports this GPU because it is too old"
REFUSED_SAID = re.compile(
    r"capability sm_(\d)(\d+) is not compatible|(PyTorch) no longer supports this GPU because it is too old",
    re.I,
)
DRIVER_FOUND_SAID = re.compile(
    r"driver\b[^.]{0,60}?too old \(found version (\d{4,5})\)|(?:getDriverVersion|cudaDriverGetVersion)\(\)\s*"
    r"(?:returns|=|->|:)\s*(\d{4,5})\b",
    re.I,
)


def _unnamed_framework(snap: Snapshot, get: Any, said: str, native_windows: bool) -> None:
    """Where no framework fact was stated: the one whose API the free text calls or an application it names is
    built on (release and build unknown), else the build's CUDA stated alone ('cudatoolkit 10.0.130'), which the
    fix planner takes as the build's."""
    if any(k.startswith("framework.") for k in snap.facts):
        return
    called = stated_words.framework_called(get("other")) or stated_words.application_framework(said)
    for fact in framework_facts(called, get("framework_cuda"), None, native_windows) if called else []:
        snap.add(fact)
    cuda = (
        None
        if called
        else stated_words.build_cuda(get("framework_cuda")) or stated_words.built_with_cuda(said)
    )
    if cuda:
        snap.add(known("build.cuda_said", cuda, "stated:framework_cuda"))


def _archs_built_said(snap: Snapshot, text: str) -> None:
    """A build's architectures written as numbers, whatever the build: the fact build.archs_said, which the
    architecture check compares with the GPU where no framework fact holds an arch list."""
    said = None if ARCHS_WRITTEN.search(text) else stated_words.archs_said(text)  # sm_XY: _stated_archs's
    if said:
        snap.add(known("build.archs_said", said, "stated (a build's own words)"))


def _cudnn_built_said(snap: Snapshot, text: str) -> None:
    """The cuDNN a build says it was compiled with, whatever the build (PaddlePaddle, ONNX Runtime, a
    framework named only in prose): the fact build.cudnn_said, which the cuDNN check compares with the cuDNN
    found where no framework fact holds that cuDNN already."""
    said = stated_builds.cudnn_built_said(text)
    if said is None:
        return
    held = {
        str(v.value.get("cudnn"))
        for k, v in snap.facts.items()
        if k.startswith("framework.") and isinstance(v.value, dict)
    }
    if said[0] not in held:
        snap.add(
            known("build.cudnn_said", {"cudnn": said[0], "said": said[1]}, "stated (a build's own words)")
        )


def _said(snap: Snapshot, text: str) -> None:
    """Facts a framework's message states, where the facts do not already hold them."""
    floor = MIN_CC_SAID.search(text)
    if floor:
        names = [k.split(".", 1)[1] for k in snap.facts if k.startswith("framework.")]
        name = "tensorflow" if re.search(r"required cuda capability", text, re.I) else "torch"
        name = names[0] if len(names) == 1 else name
        info = dict(
            snap.value(f"framework.{name}") or {"version": None, "cuda": None, "stated": floor.group(0)}
        )
        info["min_cc"] = floor.group(1)
        snap.add(known(f"framework.{name}", info, "stated:other (the framework's message)"))
    cc = cc_said(text)
    gpus = snap.value("gpu.devices") or []
    if cc and gpus and not gpus[0].get("cc"):
        snap.add(known("gpu.devices", [{**gpus[0], "cc": cc}, *gpus[1:]], "stated:gpu, other"))
    found = DRIVER_FOUND_SAID.search(text)
    if found and snap.value("driver.cuda_version") is None:
        cuda = versions.cuda_from_int(versions.integer(found.group(1) or found.group(2)))
        snap.add(known("driver.cuda_version", cuda, "stated:other (the framework's message)"))
    _driver_versions_said(snap, text)
    refused = None if floor else REFUSED_SAID.search(text)  # a stated minimum says more than 'too old'
    if refused is not None:
        _refused(snap, refused)


# TensorFlow's own report of the two halves of the driver: 'libcuda reported version is: 450.142.0' and
# 'kernel reported version is: 450.66.0'
LIBCUDA_SAID = re.compile(r"libcuda reported version is:?\s*(\d{3}(?:\.\d+){1,2})", re.I)
KERNEL_SAID = re.compile(r"kernel reported version is:?\s*(\d{3}(?:\.\d+){1,2})", re.I)


# PyTorch's collect_env on a machine where no driver answers: 'Nvidia driver version: No CUDA' (and 'GPU models
# and configuration: No CUDA')
NO_DRIVER_SAID = re.compile(r"Nvidia driver version:?\s*(?:No CUDA|None|N/?A)\b", re.I)


def _driver_versions_said(snap: Snapshot, text: str) -> None:
    """The user-space libcuda and the kernel module's versions as TensorFlow reports them; no driver at
    all, as collect_env reports it."""
    if NO_DRIVER_SAID.search(text) and snap.get("driver.version") is None:
        snap.add(absent("driver.version", "stated:other (collect_env: 'Nvidia driver version: No CUDA')"))
    user, kernel = LIBCUDA_SAID.search(text), KERNEL_SAID.search(text)
    if kernel and snap.value("driver.version") is None:
        snap.add(known("driver.version", kernel.group(1), "stated:other (the framework's message)"))
    if user and snap.value("driver.userspace_version") is None:
        snap.add(known("driver.userspace_version", user.group(1), "stated:other (the framework's message)"))


def _refused(snap: Snapshot, said: re.Match[str]) -> None:
    """PyTorch's verdict on a GPU: the capability it names (else the stated GPU's) is not in the build."""
    gpus = snap.value("gpu.devices") or []
    refused_cc = f"{said.group(1)}.{said.group(2)}" if said.group(1) else gpus[0].get("cc") if gpus else None
    if refused_cc and gpus and not gpus[0].get("cc"):  # the message names the GPU's own capability
        snap.add(known("gpu.devices", [{**gpus[0], "cc": refused_cc}, *gpus[1:]], "stated:gpu, other"))
    if refused_cc:
        info = dict(snap.value("framework.torch") or {"version": None, "cuda": None, "stated": said.group(0)})
        info["refused_cc"] = refused_cc
        snap.add(known("framework.torch", info, "stated:other (the framework's message)"))


def _torch_cpu_said(snap: Snapshot, text: str) -> None:
    """collect_env's 'CUDA used to build PyTorch: None' (or 'Could not collect') quoted in the prose:
    the stated torch is a build without CUDA. A CPU build beside the CUDA a conda command asked for
    ('conda install pytorch cudatoolkit=11.3 -c pytorch' that resolved to py3.8_cpu_0): that CUDA is the
    one its GPU build should have."""
    info = snap.value("framework.torch")
    if isinstance(info, dict) and stated_builds.CPU_SAID.search(text):
        info = {**info, "build": "cpu", "cuda": None}
        snap.add(known("framework.torch", info, "stated:other"))
    asked = stated_builds.CONDA_TOOLKIT.search(text)
    if isinstance(info, dict) and info.get("build") == "cpu" and asked and not info.get("cuda_if_gpu"):
        snap.add(known("framework.torch", {**info, "cuda_if_gpu": asked.group(1)}, "stated:other"))


# A person saying torch found the GPU ('torch.cuda.is_available() is True', 'torch.cuda.is_available() returns true',
# '=> True'): only a CUDA build answers True
AVAILABLE_SAID = re.compile(
    r"torch\.cuda\.is_available\(\)['\"`)]{0,3}\s*(?:(?:is|returns?|gives|prints|shows|outputs?|=>|->|==|:)\s*){0,2}"
    r"['\"`]?True\b",
    re.I,
)


def _torch_available_said(snap: Snapshot, text: str) -> None:
    """torch.cuda.is_available() said to be True: the stated torch (or the one its API names), build unknown, is a
    CUDA build; where a log of the same person says False, the process hid the GPU (not a CPU-only build)."""
    info = snap.value("framework.torch")
    if isinstance(info, dict) and info.get("build") == "unknown" and AVAILABLE_SAID.search(text):
        said = "torch.cuda.is_available() was True (stated)"
        snap.add(known("framework.torch", {**info, "build": "cuda", "build_inferred": said}, "stated:other"))


# the nvcc that answers, as a person quotes it beside the toolkits they installed: 'nvcc -V: Cuda compilation tools,
# release 11.5, V11.5.119', '/usr/bin/nvcc: release 12.0', 'nvcc points to the 10.1 install'
NVCC_ANSWER_SAID = re.compile(
    r"\bnvcc\b(?:\s*(?:-V|--version))?\s*:?\s*(?:Cuda compilation tools,\s*)?release (\d{1,2}\.\d)"
    r"|\bnvcc (?:points to|is|resolves to|comes from) the (\d{1,2}\.\d)\b"
    r"|Cuda compilation tools,\s*release (\d{1,2}\.\d)",  # a whole `nvcc -V` pasted: its banner lines come first
    re.I,
)


def _nvcc_said(snap: Snapshot, text: str) -> None:
    """The release the first nvcc a person quotes answers with (the one a build picks), where they state toolkits:
    the fact cuda.nvcc_said, which the stated-nvcc check compares with the toolkits stated."""
    m = NVCC_ANSWER_SAID.search(text)
    if m and snap.value("cuda.toolkits"):
        # nvidia-smi's 'CUDA Version: 12.8' beside it is the driver's CUDA, not a toolkit installed
        driver = re.findall(r"CUDA Version:?\s*(\d{1,2}\.\d)", text, re.I)
        value = {"release": m.group(1) or m.group(2) or m.group(3), "driver_cuda_said": driver}
        snap.add(known("cuda.nvcc_said", value, "stated:system_cuda"))


# a framework stated with a conda build string ('pytorch 2.5.1 py3.12_cpu_0', 'pytorch-1.7.1 |cpu_py37hf1c21f6_1',
# 'cuda110py37h...', '(conda)'): conda installed it; never a pip local version ('+cpu', '+cu121') or 'pip'
CONDA_BUILD_SAID = re.compile(
    r"\bpy\d\.?\d+_(?:cpu|cuda)|\bcpu_py\d+h|\bcuda\d+_?py\d+h|\(conda(?:-forge)?\)|\bconda (?:list|install)",
    re.I,
)
PIP_SAID = re.compile(r"\+(?:cpu|cu\d+)\b|\bpip\b", re.I)


def _conda_installed(snap: Snapshot) -> None:
    """The framework's `installer` ('conda'), where its stated text is conda's; the fix planner then writes conda's
    own command first."""
    for key, fact in list(snap.facts.items()):
        info = fact.value
        if not key.startswith("framework.") or not isinstance(info, dict):
            continue
        text = str(info.get("stated") or "")
        if CONDA_BUILD_SAID.search(text) and not PIP_SAID.search(text):
            snap.add(known(key, {**info, "installer": "conda"}, fact.source))


# the host compiler a person states ('gcc (GCC) 13.2.1', 'GCC: gcc (Debian 12.2.0-14) 12.2.0', 'gcc-12 (Ubuntu
# 12.3.0-1ubuntu1) 12.3.0', collect_env's 'GCC version: (Ubuntu 13.2.0-23ubuntu4) 13.2.0')
GCC_SAID = re.compile(
    r"\bgcc(?:-\d{1,2})?\b(?: version)?\s*:?\s*(?:\([^)]{0,60}\)\s*)?:?\s*v?(\d{1,2}\.\d+(?:\.\d+)?)\b", re.I
)
# the host compiler chosen over the default: 'CC=gcc-12', '-ccbin g++-11', 'CUDAHOSTCXX=g++-12', 'NVCC_CCBIN=gcc-11'
GCC_CHOSEN_SAID = re.compile(r"(?:\bCC|CUDAHOSTCXX|NVCC_CCBIN|-ccbin)[= ]\s*\S*?[gc]\+?\+?-(\d{1,2})\b")
# nvcc's refusal quoted ('gcc versions later than 12 are not supported')
GCC_REFUSED_SAID = re.compile(r"gcc versions later than (\d{1,2}) are not supported", re.I)


def _host_gcc(snap: Snapshot, text: str) -> None:
    """The GCC that builds CUDA code here, as stated, and the newest one an nvcc's quoted refusal names: the fact
    host.gcc, which the host-compiler check compares with the toolkit's nvcc."""
    said, refused, chosen = GCC_SAID.search(text), GCC_REFUSED_SAID.search(text), GCC_CHOSEN_SAID.search(text)
    if said is None and refused is None:
        return
    # another GCC chosen for the build (CC=gcc-12): its major is the one nvcc meets
    version = chosen.group(1) if chosen else said.group(1) if said else None
    value = {"version": version, "nvcc_gcc_max": int(refused.group(1)) if refused else None}
    snap.add(known("host.gcc", value, "stated"))


JETSON = re.compile(r"jetson|\borin\b|\bxavier\b|\btx2\b|\bthor\b", re.I)
# NVIDIA's own Jetson builds of torch: '2.0.0+nv23.05', '1.12.0a0+2c916ef.nv22.3', or named as such
JETSON_TORCH = re.compile(
    r"\bnv\d{2}\.\d{1,2}\b|\+nv|jetson|\bl4t\b|jetpack|\bjp\d|dustynv|jetson-ai-lab", re.I
)


def _torch_on_jetson(snap: Snapshot, text: str) -> None:
    """A torch whose CUDA nobody stated, on a Jetson: PyPI's aarch64 torch wheels carry no CUDA for Jetson's
    integrated GPUs; only NVIDIA's Jetson builds (+nvYY.MM, JetPack's index, the l4t images) do."""
    info = snap.value("framework.torch")
    names = " ".join(str(g.get("name") or "") for g in snap.value("gpu.devices") or [])
    # the Jetson may be named in the OS field ('JetPack 5.1.2 (Ubuntu 20.04), Jetson')
    names += " " + str((snap.value("host.os") or {}).get("name") or "")
    if (
        not isinstance(info, dict)
        or not JETSON.search(names)
        or JETSON_TORCH.search(f"{info.get('version') or ''} {text}")
        or info.get("cuda_libs")
        or (info.get("build") == "cuda" and not info.get("cuda_inferred"))
    ):
        return
    _cpu_wheel(
        snap,
        info,
        "PyPI's aarch64 torch wheels carry no CUDA for Jetson GPUs; NVIDIA's Jetson builds (+nvYY.MM) do",
    )


def _cpu_wheel(snap: Snapshot, info: dict[str, Any], why: str) -> None:
    """The stated torch is a CPU wheel, for `why`; the default CUDA wheel it was inferred to be is not it."""
    info = {k: v for k, v in info.items() if k != "cuda_inferred"}
    snap.add(
        known("framework.torch", {**info, "build": "cpu", "cuda": None, "build_inferred": why}, "stated")
    )


# PyPI's torch named as such: a wheel file without a local version tag (PyTorch's own index names its builds:
# torch-2.3.1+cu121-cp39-cp39-win_amd64.whl), or the words 'from PyPI'
PYPI_TORCH = re.compile(
    r"\btorch-\d+\.\d+(?:\.\d+)?-cp\d+-\w+-win_amd64\.whl|\b(?:from|via|off|on)\s+(?:the\s+)?(?:default\s+)?PyPI\b"
    r"|\bdefault\s+PyPI\b|\bPyPI(?:'s)?\s+(?:index|wheel)"
    # a version said to lack its CUDA tag ('torch==2.5.1 (pip freeze, no +cu local version)'): Windows CUDA
    # wheels always carry one
    r"|\b(?:no|without)\s+(?:a\s+|the\s+)?\+cu|\bno\s+cuda\s+(?:local\s+)?(?:tag|suffix)",
    re.I,
)
TORCH_INDEX_NAMED = re.compile(r"download\.pytorch\.org/whl/(?:nightly/)?cu", re.I)


def _stated_pypi_torch(info: Any, text: str, plain_pip: bool = False) -> bool:
    """A torch whose build nobody stated (or only inferred), without a local version tag, said to come from
    PyPI (`plain_pip`: a plain `pip install torch` says so too), with no PyTorch CUDA index named beside it."""
    return (
        isinstance(info, dict)
        and (info.get("build") in ("unknown", None) or bool(info.get("cuda_inferred")))
        and "+" not in str(info.get("version") or "")
        and bool(PYPI_TORCH.search(text) or (plain_pip and PLAIN_PIP_TORCH.search(text)))
        and not TORCH_INDEX_NAMED.search(text)  # pip was pointed at PyTorch's CUDA index as well
    )


def _torch_from_pypi_on_windows(snap: Snapshot, text: str) -> None:
    """A torch on native Windows, stated as PyPI's wheel: PyPI's Windows torch wheels are CPU-only (CUDA
    builds come from download.pytorch.org/whl/cuXXX, whose versions carry +cuXXX)."""
    info = snap.value("framework.torch")
    windows = (snap.value("host.os") or {}).get("system") == "Windows" or "win_amd64" in text
    if not windows or snap.value("host.wsl") or not _stated_pypi_torch(info, text):
        return
    _cpu_wheel(
        snap,
        info,
        "PyPI's torch wheels for Windows are CPU-only; CUDA builds come from PyTorch's index (+cuXXX)",
    )


# a plain `pip install torch` (no PyTorch index named on the line): the wheel PyPI has for the platform
PLAIN_PIP_TORCH = re.compile(
    r"\bpip3?\s+install\s+(?:-U\s+|--upgrade\s+)?torch\b(?![^\n]*--(?:extra-)?index-url)", re.I
)
AARCH64 = re.compile(r"\b(?:aarch64|arm64|sbsa)\b|\bg[bh]200\b|\bgrace\b", re.I)
PYPI_AARCH64_CPU_UNTIL = (2, 9)


def _torch_from_pypi_on_aarch64(snap: Snapshot, text: str, machine: str) -> None:
    """A torch on Linux aarch64 (a Grace server, a GB200), stated as PyPI's wheel: PyPI's aarch64 torch wheels
    are CPU builds (CUDA ones come from download.pytorch.org/whl/cuXXX), through 2.9 at least."""
    info = snap.value("framework.torch")
    version = versions.major_minor(str((info or {}).get("version") or ""))
    if (
        not AARCH64.search(machine)
        or JETSON.search(machine)  # _torch_on_jetson's
        or (version is not None and version > PYPI_AARCH64_CPU_UNTIL)
        or not _stated_pypi_torch(info, text, plain_pip=True)
    ):
        return
    _cpu_wheel(
        snap,
        info,
        "PyPI's Linux aarch64 torch wheels are CPU builds; CUDA ones come from PyTorch's index "
        "(download.pytorch.org/whl/cuXXX; pytorch/pytorch#168065)",
    )


def _jax_on_cpu(snap: Snapshot, text: str) -> None:
    """JAX's own warning that no CUDA jaxlib is installed, or jax.devices() quoted with only the CPU in
    it, for a JAX whose build nobody stated: a CPU jaxlib (PyPI's jaxlib is CPU-only; CUDA comes from a
    plugin or a +cuda wheel, which would list CudaDevice)."""
    info = snap.value("framework.jax")
    if not isinstance(info, dict) or info.get("build") != "unknown":
        return
    said = stated_builds.JAX_CPU_SAID.search(text)
    if said:
        info = {**info, "build": "cpu", "build_inferred": f"the facts say: {said.group(0)!r}"}
        snap.add(known("framework.jax", info, "stated:other"))
    elif re.search(r"\[CpuDevice\(id=0\)\]", text) and not re.search(
        r"CudaDevice|GpuDevice|\bcuda:\d|\bgpu:\d", text, re.I
    ):
        info = {**info, "build": "cpu", "build_inferred": "jax.devices() lists only the CPU"}
        snap.add(known("framework.jax", info, "stated:other"))


# Packages whose presence a check reads, written without a pin ('onnxruntime 1.23.2 and onnxruntime-gpu')
# and the libraries built for one CUDA major per release line ('faster-whisper 0.10.0', 'ctranslate2 3.24')
NAMED_PACKAGES = re.compile(
    r"(?<![\w.-])(onnxruntime-gpu|onnxruntime|faster[-_]whisper|ctranslate2)(?![\w-])"
    r"(?:\s*=?=?\s*v?(\d+(?:\.\d+)+))?",
    re.I,
)


def _cpu_without_avx(snap: Snapshot, text: str) -> None:
    """A CPU named in the stated text whose family has no AVX (knowledge/cpus.toml): the live fact's shape,
    with no AVX among its flags."""
    for row in knowledge.table("cpus")["no_avx"]:
        m = re.search(row["match"], text, re.I)
        if m:
            info = {
                "model": m.group(0),
                "flags": [],
                "all_flags_known": True,
                "flags_inferred": row["family"],
            }
            snap.add(known("host.cpu", info, "stated:other"))
            return


def _stated_packages(snap: Snapshot, text: str) -> None:
    """Packages written with their pins ('onnxruntime-gpu==1.20.1 + onnxruntime==1.20.1'), as pip list has
    them, and the few a check reads by name written with a version or none ('?')."""
    pins: dict[str, str] = {}
    for name, version in NAMED_PACKAGES.findall(text):  # the first version written wins over a bare name
        key = name.lower().replace("_", "-")
        if pins.get(key, "?") == "?":
            pins[key] = version or "?"
    pins.update({name.lower(): version for name, version in PINNED.findall(text)})
    for name, version in stated_words.library_pins(text).items():  # flash-attn, vLLM, onnxruntime's GPU build
        if pins.get(name, "?") == "?":
            pins[name] = version
    if pins:
        snap.add(known("python.packages", {**(snap.value("python.packages") or {}), **pins}, "stated"))


# A person who states a CUDA toolkit, or writes of the GPU or CUDA, is after the GPU even when they name none
# a CUDA build asked for counts too: conda's cudatoolkit=10.1 or pytorch-cuda=11.8
GPU_WANTED = re.compile(
    r"\b(?:gpus?|cuda|nvidia|geforce|rtx|tesla|cudatoolkit|pytorch-cuda)\b|\bgpu(?=ci\b|[-_:/])"  # gpuci/, -gpu images
    r"|--device[= ]\d\b|\bdevice=['\"]?\d\b",  # a GPU asked for by its index (Ultralytics' --device 0, device=0)
    re.I,
)


COMPANION_WRITTEN = re.compile(
    r"\b(torchvision|torchaudio)\s*(?:==|=|:|\s)\s*v?(\d+\.\d+(?:\.\d+)?(?:\+(?:cu\d+|cpu))?)", re.I
)


def _stated_companions(snap: Snapshot, text: str) -> None:
    """torchvision / torchaudio written with their version ('torchvision 0.20.1+cu124 (pip show torchvision)'):
    the same fact a package list gives, with the CUDA a +cuXY tag names."""
    out: dict[str, Any] = {}
    for m in COMPANION_WRITTEN.finditer(text):
        out.setdefault(m.group(1).lower(), companions.by_tag(m.group(2), f"stated: {m.group(0)}"))
    if out and snap.value("python.torch_companions") is None:
        snap.add(known("python.torch_companions", out, "stated"))


# CuPy's binary wheels name their CUDA (cupy-cuda11x, cupy-cuda102); the source package 'cupy' is compiled
# against the toolkit it finds (CUDA_PATH, nvcc on PATH) and compiles its kernels with that toolkit's NVRTC
# (docs.cupy.dev install: 'Installing CuPy from Source')
CUPY_WHEEL = re.compile(r"cupy-cuda\d+x?|cupy-rocm", re.I)


# a package whose wheels pin one torch release, written with its version: 'vllm 0.4.3', 'vllm==0.6.3.post1'
PINS_TORCH = re.compile(r"\b(vllm|xformers)\s*(?:==|=|:|\s)\s*v?(\d+\.\d+(?:\.\d+)*(?:\.post\d+)?)\b", re.I)


def _torch_pinned(snap: Snapshot, text: str, native_windows: bool) -> None:
    """A vLLM (or xFormers) release stated with no torch beside it runs the torch its wheel pins (torch_pins.toml),
    and that torch's default wheel: what `pip install vllm==X` installs."""
    if (snap.value("framework.torch") or {}).get("version"):
        return
    for m in PINS_TORCH.finditer(text):
        pin = knowledge.torch_pin(m.group(1), m.group(2))
        if pin is None:
            continue
        for fact in framework_facts(f"torch {pin}", "", "torch", native_windows):
            info = dict(fact.value)
            info["version_inferred"] = f"torch {pin}: what {m.group(1)} {m.group(2)} pins"
            info["pinned_by"] = f"{m.group(1)} {m.group(2)}"
            snap.add(known("framework.torch", info, "stated:framework_version"))
        return


def _cupy_from_source(snap: Snapshot) -> None:
    """A CuPy stated without a CUDA wheel beside one stated toolkit is built with, and compiles for, that toolkit."""
    info = snap.value("framework.cupy")
    kits = [str(t["version"]) for t in snap.value("cuda.toolkits") or [] if t.get("version")]
    if not isinstance(info, dict) or info.get("cuda") or info.get("build") == "cpu" or len(kits) != 1:
        return
    if CUPY_WHEEL.search(str(info.get("stated") or "")):
        return
    snap.add(
        known(
            "framework.cupy",
            {
                **info,
                "cuda": kits[0],
                "build": "cuda",
                "cuda_inferred": f"the source package cupy is built with the CUDA {kits[0]} toolkit it finds",
            },
            "stated:framework_version",
        )
    )


# a driver or GPU field that says there is none, as collect_env prints it ('No CUDA') or people write it (matched
# against the whole field)
NO_DRIVER_FIELD = re.compile(r"no cuda|none|n/?a|not installed|no (?:nvidia )?driver", re.I)


def _gpu_wanted(snap: Snapshot, text: str) -> str | None:
    """Why the stated facts say a GPU is wanted, or None."""
    if snap.value("cuda.toolkits"):
        return "a CUDA toolkit is stated"
    m = GPU_WANTED.search(text)
    return f"the facts say {m.group(0)!r}" if m else None


def from_stated(stated: Mapping[str, Any], framework_hint: str | None = None) -> Snapshot:
    """A Snapshot of the facts a person stated; keys not stated stay unknown."""
    snap = Snapshot(origin="stated")
    get = lambda k: _text(stated.get(k)).strip()  # noqa: E731
    for fact in gpu_facts(get("gpu"), get("compute_capability")):
        snap.add(fact)
    if get("os"):
        for fact in os_facts(get("os")):
            snap.add(fact)
    native_windows = (snap.value("host.os") or {}).get("system") == "Windows"
    # collect_env's 'Nvidia driver version: No CUDA', as the driver field
    if NO_DRIVER_FIELD.fullmatch(get("driver")):
        snap.add(absent("driver.version", f"stated:driver ({get('driver')!r})"))
    elif get("driver"):
        for fact in driver_facts(get("driver"), native_windows):
            snap.add(fact)
    if get("system_cuda"):
        for fact in toolkit_facts(get("system_cuda")):
            snap.add(fact)
    if get("cudnn"):
        snap.add(known("cudnn.versions", cudnn_versions(get("cudnn")), "stated:cudnn"))
    if get("framework_version") or get("framework_cuda"):
        for fact in framework_facts(
            get("framework_version"), get("framework_cuda"), framework_hint, native_windows
        ):
            snap.add(fact)
    said_of_builds = " ; ".join(get(k) for k in ("framework_version", "other", "container"))
    _unnamed_framework(snap, get, said_of_builds, native_windows)
    _cupy_from_source(snap)
    _cudnn_built_said(snap, said_of_builds)
    _archs_built_said(snap, said_of_builds)
    build_text = get("framework_version") + "\n" + get("other")  # what is said of the build
    _torch_pinned(snap, build_text + "\n" + get("container"), native_windows)
    _stated_archs(snap, build_text)
    _torch_cpu_said(snap, build_text)
    _torch_available_said(snap, build_text)
    _conda_installed(snap)
    _host_gcc(
        snap, " ; ".join(get(k) for k in ("other", "os", "framework_version", "container", "system_cuda"))
    )
    _nvcc_said(snap, get("system_cuda") + " ; " + get("other"))
    _torch_from_pypi_on_windows(snap, build_text)
    _torch_on_jetson(snap, " ".join(get(k) for k in ("framework_version", "container", "other")))
    _torch_from_pypi_on_aarch64(snap, build_text, " ".join(get(k) for k in ("os", "gpu", "other")))
    _said(snap, get("other"))
    _jax_on_cpu(snap, get("other"))
    _cpu_without_avx(snap, " ".join([get("other"), get("os"), get("container")]))
    _stated_packages(snap, build_text)
    _stated_companions(snap, build_text)
    said_of_apps = " ".join(get(k) for k in ("framework_version", "container", "other"))
    for fact in stated_apps.ollama_facts(said_of_apps, get("system_cuda")):
        snap.add(fact)
    paddle_text = " ; ".join(
        get(k) for k in ("framework_version", "framework_cuda", "driver", "system_cuda", "container", "other")
    )
    for fact in stated_apps.paddle_facts(paddle_text, bool(snap.value("gpu.devices"))):
        snap.add(fact)
    for fact in python_facts(get("python")) + container_facts(
        get("container") + " " + get("other"), "container", get("container")
    ):
        snap.add(fact)
    for key in ("python", "container", "other"):
        if get(key):
            snap.add(known(f"stated.{key}", get(key), f"stated:{key}"))
    wanted = _gpu_wanted(snap, " ".join(get(k) for k in ("framework_version", "container", "other")))
    if wanted:
        snap.add(known("stated.gpu_wanted", wanted, "stated"))
    for fact in env_facts(get("container") + "\n" + get("other")):
        snap.add(fact)
    return snap
