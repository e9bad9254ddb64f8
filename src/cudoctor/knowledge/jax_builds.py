"""Lookups over jax.toml: the CUDA, cuDNN and architectures of a jaxlib release's CUDA build."""

from __future__ import annotations

import re
from typing import Any

from cudoctor import versions
from cudoctor.knowledge import table


def _rows(kind: str, version: str, cuda_major: int | None) -> list[dict[str, Any]]:
    have = versions.parse(version.split("+")[0])
    if have is None:
        return []
    return [
        dict(row)
        for row in table("jax")[kind]
        if versions.in_range(have, row["min"], row["max"])
        and (cuda_major is None or row.get("cuda_major", cuda_major) == cuda_major)
    ]


def wheel(version: str, cuda_major: int) -> dict[str, Any] | None:
    """The CUDA / cuDNN the CUDA `cuda_major` wheels of jaxlib `version` were built for."""
    rows = _rows("wheel", version, cuda_major)
    return rows[-1] if rows else None


def cudnn_tag_cuda(cuda_major: int, cudnn: str) -> dict[str, Any] | None:
    """The CUDA floor of a jaxlib wheel whose tag names cuDNN `cudnn` (jax.toml [[cudnn_tag]])."""
    want = versions.parse(cudnn)
    for row in table("jax")["cudnn_tag"]:
        have = versions.parse(row["cudnn"])
        if want and have and row["cuda_major"] == cuda_major and want[: len(have)] == have:
            return dict(row)
    return None


def minor_tag_cudnn(cuda_major: int) -> str | None:
    """The cuDNN major of a per-minor tagged jaxlib (+cuda101) of CUDA `cuda_major` (jax.toml [[minor_tag_cudnn]])."""
    return next(
        (str(r["cudnn"]) for r in table("jax")["minor_tag_cudnn"] if r["cuda_major"] == cuda_major), None
    )


def archs(version: str, cuda_major: int | None) -> tuple[list[str], dict[str, Any]] | None:
    """The architectures (sm_80, compute_90) the CUDA build of jaxlib `version` compiles in."""
    rows = _rows("archs", version, cuda_major)
    return (list(rows[-1]["archs"]), rows[-1]) if rows else None


def current_installs() -> list[dict[str, Any]]:
    """jax.toml [[install]] rows of the CUDA majors current JAX releases ship (no `last`), oldest first."""
    rows = [r for r in table("jax")["install"] if not r.get("last")]
    return sorted(rows, key=lambda r: int(r["cuda_major"]))


def extra(row: dict[str, Any]) -> str | None:
    """The extra an [[install]] row's step installs ('jax[cuda12]')."""
    m = re.search(r"jax\[\w+\]", str(row["step"]))
    return m.group(0) if m else None


def install_step(driver_cuda: str | None) -> str:
    """The install of the newest JAX whose CUDA wheels run on a driver for CUDA `driver_cuda`
    (jax.toml [[install]]); where the driver's CUDA is not known, the command that shows it."""
    have = versions.parse(driver_cuda or "")
    if have is None:
        return "Run nvidia-smi: its 'CUDA Version' is the newest CUDA the driver runs; then install JAX for that CUDA major"
    rows = [r for r in table("jax")["install"] if r["cuda_major"] <= have[0]]
    if not rows:
        return f"No JAX CUDA wheel runs on a driver for CUDA {driver_cuda}: upgrade the NVIDIA driver"
    row = max(rows, key=lambda r: int(r["cuda_major"]))
    return f"Install JAX for the CUDA your driver supports ({driver_cuda}): {row['step']}"


def upgrade_step(driver_cuda: str | None) -> str | None:
    """Where the driver runs only an older CUDA major than JAX's current wheels: the driver to install
    for the next major, and the install that then runs (jax.toml [[install]] min_driver)."""
    have = versions.parse(driver_cuda or "")
    if have is None:
        return None
    newer = [r for r in table("jax")["install"] if r["cuda_major"] > have[0]]
    if not newer:
        return None
    row = min(newer, key=lambda r: int(r["cuda_major"]))
    return (
        f"Or upgrade the NVIDIA driver to {row['min_driver']} or newer (CUDA {row['cuda_major']}), then "
        f"{row['step']}  (current JAX releases)"
    )


def strict_driver(info: dict[str, Any]) -> str | None:
    """Why a JAX build needs the driver of its CUDA release itself (a jaxlib from before NVIDIA's pip wheels,
    run on a local toolkit: no minor-version compatibility), else None."""
    row = table("jax")["local_cuda_driver"]
    version = str(info.get("jaxlib") or info.get("version") or "").split("+")[0]
    if versions.parse(version) and versions.satisfies(version, f"<={row['max']}"):
        return str(row["source"]).split(":")[0]
    return None
