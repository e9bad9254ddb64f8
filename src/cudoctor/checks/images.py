"""NVIDIA's CUDA container images by flavour (knowledge/cuda_images.toml): a -base image holds only cudart, a
-runtime or -devel one the CUDA math libraries, and cuDNN only where its tag names it. A framework that loads
its CUDA libraries from the system (TensorFlow before its pip CUDA wheels) finds none of the missing ones."""

from __future__ import annotations

from typing import Any

from cudoctor import knowledge, versions
from cudoctor.checks import check, finding, view
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "CUDA toolkits & libraries"
SOURCE = "knowledge/cuda_images.toml"


def _loads_system_libraries(name: str, info: dict[str, Any], image_cuda: str | None) -> bool:
    """TensorFlow before 2.14 (no pip CUDA wheels of its own), or of unknown release in an image of CUDA 11 or
    older: it dlopens cuBLAS, cuFFT and cuDNN from the system's paths."""
    if name != "tensorflow" or info.get("build") == "cpu":
        return False
    version = versions.parse(str(info.get("version") or ""))
    if version:
        return version < (2, 14)
    image = versions.parse(image_cuda or "")
    return bool(image and image[0] <= 11)


@check("image-lacks-libraries", "cuda-libs-missing", LAYER, requires=("container.image",))
def image_lacks_libraries(snap: Snapshot) -> list[Finding]:
    """The nvidia/cuda image's flavour lacks the CUDA libraries or the cuDNN a framework there loads from the
    system: a -base image (cudart only), or a tag without cuDNN."""
    image = snap.value("container.image") or {}
    row = knowledge.cuda_image_flavour(str(image.get("flavour")))
    cuda = snap.value("container.cuda")
    builds = [(n, i) for n, i in view.frameworks(snap) if _loads_system_libraries(n, i, cuda)]
    if row is None or not builds:
        return []
    names = ", ".join(view.describe(n, i) for n, i in builds)
    tag = f"nvidia/cuda:{cuda or '...'}-{image['flavour']}"
    better = f"nvidia/cuda:{cuda or '<version>'}-cudnn-runtime (or -cudnn8-runtime for the older tags)"
    out = []
    if not row["libraries"]:
        out.append(
            finding(
                "image-lacks-libraries",
                "cuda-libs-missing",
                Severity.WARNING,
                f"The image is a {image['flavour']} flavour ({tag}): it holds only the CUDA runtime (cudart), none of the "
                f"cuBLAS, cuFFT, cuSOLVER or cuDNN that {names} loads from the system",
                LAYER,
                evidence=[f"container.image = {image}", f"{SOURCE}: {row['source']}"],
                fix=[f"Build FROM {better}, which holds the CUDA math libraries and cuDNN"],
            )
        )
    if not image.get("cudnn"):
        out.append(
            finding(
                "image-lacks-cudnn",
                "cudnn-mismatch",
                Severity.WARNING,
                f"The image's tag names no cuDNN ({tag}): {names} loads cuDNN from the system, and NVIDIA's CUDA "
                "images carry it only in their -cudnn tags",
                LAYER,
                evidence=[
                    f"container.image = {image}",
                    f"{SOURCE}: the cuDNN images are the tags that name it",
                ],
                fix=[f"Build FROM {better}, or install the cuDNN the framework was built with in the image"],
            )
        )
    return out
