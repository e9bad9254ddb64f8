"""What people state about the container they run in: the runtime (docker, podman, Singularity, a pod), the CUDA
its image carries (a tag, NVIDIA_REQUIRE_CUDA, an NGC monthly release) and whether it was started without the GPUs;
and the Windows build under WSL2. Read from the container, OS and free-text fields (facts/stated.py)."""

from __future__ import annotations

import re

from cudoctor import knowledge, versions
from cudoctor.model import Fact, known

# the container a text names, as host.container names it live (docker, podman, ...)
# the runtime that starts the container before the image it names: a Singularity image built from
# 'docker://...', a pod or a podman container running a Docker image
CONTAINERS = (
    (re.compile(r"\bsingularity\b|\bapptainer\b", re.I), "singularity"),
    (re.compile(r"\budocker\b", re.I), "udocker"),
    (re.compile(r"\bpodman\b", re.I), "podman"),
    (re.compile(r"\bkubernetes\b|\bk8s\b|\bkubepods\b", re.I), "kubepods"),
    (re.compile(r"\blxc\b|\blxd\b", re.I), "lxc"),
    (re.compile(r"\bdocker\b|\bnvidia/cuda:|\bnvcr\.io/", re.I), "docker"),
)


# A container started without the GPUs: 'docker run ... (no --gpus)', plain docker rather than nvidia-docker,
# or nvidia-smi missing inside it.
NO_GPUS_PASSED = re.compile(
    r"(?:no|without) --(?:gpus|nv)\b|plain docker|not nvidia-docker|nvidia-smi: command not found|nvidia-smi\W+(?:is )?not found"
    # a docker run command (an option or an image after it) that asks for no GPU on its line: no --gpus, no nvidia
    # runtime, no NVIDIA_VISIBLE_DEVICES, no /dev/nvidia device; a line continued with a backslash says nothing
    r"|(?<![\w-])docker run\s+(?=-|[\w.-]+[:/])"
    r"(?![^\n]{0,2000}?(?:--gpus|runtime[= ]?nvidia|NVIDIA_VISIBLE_DEVICES|--device[= ]?/dev/nvidia|\\\s*$))"
    # a Singularity / Apptainer start without --nv (or --nvccli), which binds the GPUs and the driver in
    r"|(?<![\w-])(?:singularity|apptainer)\s+(?:run|exec|shell)\s+(?=-|[\w.-]+)(?![^\n]{0,2000}?(?:--nv\b|--nvccli|\\\s*$))",
    re.I,
)


# The CUDA a container image needs, as nvidia-container-cli checks it (NVIDIA_REQUIRE_CUDA "cuda>=12.8"),
# or as the image's tag or Dockerfile names it (nvidia/cuda:12.8.0-..., ARG CUDA_VERSION=12.6.0)
IMAGE_CUDA = re.compile(
    r"cuda\s*>=\s*(\d+\.\d+)|nvidia/cuda:(\d+\.\d+)|CUDA_VERSION\s*=\s*(\d+\.\d+)|<\s*image\s+(\d+\.\d+)",
    re.I,
)  # '< image 9.0.176': nvidia-docker 1.0's 'unsupported CUDA version: driver 8.0 < image 9.0.176'


# an NGC container by its monthly release: 'nvcr.io/nvidia/pytorch:21.07-py3', 'NGC PyTorch 23.10 container'
NGC_TAG = re.compile(
    r"\bnvcr\.io/nvidia/[\w./-]+:(\d{2}\.\d{2})(?:\.\d+)?(?![\d.])|\bNGC\b[^\n\d]{0,40}?(?<![\d.])(\d{2}\.\d{2})(?![\d.])",
    re.I,
)


# the container field naming its image's CUDA in words ('the CUDA 11.2 image', 'default image, CUDA 8.0'),
# never the host's ('CUDA 12.2 on the host', "the host's CUDA 12.2")
CONTAINER_SAYS_CUDA = re.compile(
    r"(?<!host )(?<!host's )\bcuda[\s_-]*v?(\d+\.\d+)(?![\d.])(?!\s+(?:on|of|from)\s+the\s+host)", re.I
)


# an nvidia/cuda image tag's flavour and cuDNN: '10.1-base-ubuntu18.04', '12.4.1-cudnn-runtime-ubuntu22.04',
# '11.8.0-cudnn8-devel-ubuntu22.04', the older '10.1-cudnn7-runtime-ubuntu18.04'
CUDA_IMAGE_TAG = re.compile(
    r"\bnvidia/cuda:\d+(?:\.\d+){1,2}-(?:(cudnn\d*)-)?(base|runtime|devel)(?:-(cudnn\d*))?\b", re.I
)


def image_flavour(text: str) -> dict[str, str | None] | None:
    """The flavour of the nvidia/cuda image a text names and the cuDNN its tag carries ('cudnn8', 'cudnn' or None)."""
    m = CUDA_IMAGE_TAG.search(text)
    return {"flavour": m.group(2).lower(), "cudnn": (m.group(1) or m.group(3) or None)} if m else None


def container_facts(text: str, key: str, own: str = "") -> list[Fact]:
    """The container a person names in `text` (`own`: the container field alone, whose words name the image's
    CUDA where nothing else does)."""
    name = next((name for pattern, name in CONTAINERS if pattern.search(text)), None)
    facts = [known("host.container", name, f"stated:{key}")] if name else []
    image = IMAGE_CUDA.search(text) or CONTAINER_SAYS_CUDA.search(own)
    ngc = NGC_TAG.search(text)
    row = knowledge.ngc_release(ngc.group(1) or ngc.group(2)) if ngc else None
    if image and (name or key == "container"):
        facts.append(known("container.cuda", next(g for g in image.groups() if g), f"stated:{key}"))
    elif row and (mm := versions.major_minor(row["cuda"])):
        facts.append(
            known(
                "container.cuda", f"{mm[0]}.{mm[1]}", f"stated:{key} (NGC {row['tag']}: knowledge/ngc.toml)"
            )
        )
    if row:
        facts.append(known("container.ngc", row, f"stated:{key}"))
    flavour = image_flavour(text)
    if flavour:
        facts.append(known("container.image", flavour, f"stated:{key}"))
    said = NO_GPUS_PASSED.search(text)
    if said and (name or key == "container"):
        facts.append(known("host.container_gpus", f"not passed ({said.group(0)})", f"stated:{key}"))
    return facts


# Windows 10's build as people write it ('build 18363', '10.0.19041', 'Version 1909'): each feature update's own
# build number (Microsoft's Windows 10 release information)
WINDOWS_BUILD = re.compile(
    r"\bbuild\s*(\d{5})\b|\b10\.0\.(\d{5})\b|\bversion\s*(1903|1909|2004|20H2|21H1|21H2|22H2)\b", re.I
)
RELEASE_BUILD = {
    "1903": 18362,
    "1909": 18363,
    "2004": 19041,
    "20H2": 19042,
    "21H1": 19043,
    "21H2": 19044,
    "22H2": 19045,
}


def windows_build(text: str) -> int | None:
    """The Windows build a text names, or None."""
    m = WINDOWS_BUILD.search(text)
    if m is None:
        return None
    return int(m.group(1) or m.group(2)) if m.group(1) or m.group(2) else RELEASE_BUILD[m.group(3).upper()]
