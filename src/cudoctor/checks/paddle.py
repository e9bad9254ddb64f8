"""PaddlePaddle ↔ driver, cuDNN, CUDA libraries and GPU: a paddlepaddle-gpu wheel is built for one CUDA and one
cuDNN (knowledge/paddle.toml, from Paddle's install pages per release); its 2.x wheels load the system's CUDA
and cuDNN, and its release builds hold SASS only (cmake/cuda.cmake), so a GPU of a newer major than the
newest architecture they compile has no code at all. Read from what a person stated (facts/stated_apps.py)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from cudoctor import knowledge, versions
from cudoctor.checks import check, finding, release_lines, view
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "Frameworks"
SUBJECT = "paddle"


def _name(info: dict[str, Any]) -> str:
    release = f" {info['release']}" if info.get("release") else ""
    cuda = f" (CUDA {info['cuda']}, by {info['cuda_from']})" if info.get("cuda") else ""
    return f"PaddlePaddle{release}{cuda}"


def _build_for(release: str | None, fits: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    """The newest-CUDA wheel of the release (any release where none is stated) whose row `fits`."""
    rows = [
        r
        for r in knowledge.table("paddle")["build"]
        if (not release or versions.satisfies(release, r["releases"])) and fits(r)
    ]
    return max(rows, key=lambda r: versions.parse(str(r["cuda"])) or (0,), default=None)


@check("paddle-driver", "driver-too-old", LAYER, requires=("app.paddle", "driver.cuda_version"))
def paddle_driver(snap: Snapshot) -> list[Finding]:
    """A Paddle wheel built for a CUDA the driver does not run (minor-version compatibility from CUDA 11 on)."""
    info = snap.value("app.paddle") or {}
    driver_cuda = str(snap.value("driver.cuda_version"))
    cuda = info.get("cuda")
    if not cuda or knowledge.driver_runs(driver_cuda, cuda):
        return []
    floor = knowledge.driver_floor(cuda, view.platform(snap) == "windows")
    fix = []
    if floor:
        fix.append(f"Upgrade the NVIDIA driver to {floor[0]} or newer ({floor[1]})")
    other = _build_for(info.get("release"), lambda r: knowledge.driver_runs(driver_cuda, str(r["cuda"])))
    if other:
        fix.append(
            f"Or install Paddle's wheel for CUDA {other['cuda']}, which this driver runs: {knowledge.paddle_install(info.get('release'), str(other['cuda']))}"
        )
    return [
        finding(
            "paddle-driver",
            "driver-too-old",
            Severity.ERROR,
            f"{_name(info)} needs a driver for CUDA {cuda}; this driver runs CUDA {driver_cuda} at most",
            LAYER,
            evidence=[f"driver's CUDA: {driver_cuda}", f"Paddle's CUDA: {cuda} ({info['cuda_from']})"],
            fix=fix,
            subject=SUBJECT,
            generic_fixes=False,
        )
    ]


def _cudnn_here(snap: Snapshot) -> list[str]:
    """The cuDNN releases the facts give: stated ones and NVIDIA's cuDNN wheels among the packages."""
    found = [str(v) for v in snap.value("cudnn.versions") or [] if versions.parse(str(v))]
    for package, version in (snap.value("python.packages") or {}).items():
        if re.fullmatch(r"nvidia-cudnn-cu\d+", package):
            found.append(str(version))
    return found


def _serves(here: str, built: str) -> bool:
    """Paddle's own rule: the cuDNN loaded must be of the major it was compiled with, and no older minor."""
    have, want = versions.major_minor(here), versions.major_minor(built)
    return have is not None and want is not None and have[0] == want[0] and have >= want


@check("paddle-cudnn", "cudnn-mismatch", LAYER, requires=("app.paddle",))
def paddle_cudnn(snap: Snapshot) -> list[Finding]:
    """The cuDNN here is another major than the one the wheel was compiled with, or an older minor (Paddle
    itself warns: 'which may cause serious incompatible bug')."""
    info = snap.value("app.paddle") or {}
    built, here = info.get("cudnn"), _cudnn_here(snap)
    if not built or not here or any(_serves(v, built) for v in here):
        return []
    cuda = str(info.get("cuda") or "")
    major = built.split(".")[0]
    for_cuda = f" for CUDA {cuda}" if cuda else ""
    fix = [
        f"Give it cuDNN {built} or a newer {major}.x{for_cuda}: "
        + (
            f"pip install 'nvidia-cudnn-cu{cuda.split('.')[0]}>={built}' (Paddle 3 loads NVIDIA's pip wheels)"
            if cuda and not info.get("system_libs")
            else f"NVIDIA's cuDNN {built}{for_cuda}, on the loader's path (LD_LIBRARY_PATH; on Windows its bin folder on PATH)"
        )
    ]
    release = info.get("release")
    other = (  # a release's wheel built with a cuDNN here (no release stated: none is named)
        _build_for(release, lambda r: any(_serves(v, str(r.get("cudnn") or "0")) for v in here))
        if release
        else None
    )
    if other:
        fix.append(
            f"Or install Paddle's wheel built with the cuDNN here (CUDA {other['cuda']}, cuDNN {other['cudnn']}): {knowledge.paddle_install(info.get('release'), str(other['cuda']))}"
        )
    return [
        finding(
            "paddle-cudnn",
            "cudnn-mismatch",
            Severity.ERROR,
            f"{_name(info)} was compiled with cuDNN {built}, and the cuDNN here is {', '.join(here)}",
            LAYER,
            evidence=[
                f"Paddle's cuDNN: {built} (paddle.toml: its CUDA {cuda} wheel)",
                f"cuDNN here: {', '.join(here)}",
            ],
            fix=fix,
            subject=SUBJECT,
            generic_fixes=False,
        )
    ]


@check("paddle-arch", "arch-unsupported", LAYER, requires=("app.paddle",))
def paddle_arch(snap: Snapshot) -> list[Finding]:
    """A GPU of a newer major than the newest architecture the wheel's CUDA builds compile: no code for it."""
    info = snap.value("app.paddle") or {}
    newest = knowledge.paddle_newest_sass(str(info.get("cuda") or ""))
    top = versions.cc_tuple(newest or "")
    if top is None:
        return []
    for gpu in view.gpus(snap):
        cc = gpu.get("cc_t")
        if not cc or cc[0] <= top[0]:
            continue
        span = knowledge.cuda_span_for_cc(versions.cc_str(cc))
        index = knowledge.paddle_index_for(span[0]) if span else None
        fix = [
            f"Install Paddle's wheel for a CUDA that builds compute capability {versions.cc_str(cc)}: "
            f"{knowledge.paddle_install(None, index['cuda'])}"
            if index
            else f"Install a Paddle wheel built with CUDA {span[0] if span else 'new enough'} or newer for compute "
            f"capability {versions.cc_str(cc)}"
        ]
        return [
            finding(
                "paddle-arch",
                "arch-unsupported",
                Severity.ERROR,
                f"{gpu.get('name', 'GPU')} (compute capability {versions.cc_str(cc)}) has no code in {_name(info)}: "
                f"its builds compile up to sm_{newest.replace('.', '') if newest else ''}, no PTX",
                LAYER,
                evidence=[
                    f"newest architecture of Paddle's CUDA {info['cuda']} builds: {newest} (paddle.toml [[archs]])"
                ],
                fix=fix,
                subject=SUBJECT,
                generic_fixes=False,
            )
        ]
    return []


@check("paddle-cuda-libs", "cuda-libs-missing", LAYER, requires=("app.paddle",))
def paddle_cuda_libs(snap: Snapshot) -> list[Finding]:
    """A 2.x wheel, which loads the system's CUDA libraries, where every CUDA here is another major."""
    info = snap.value("app.paddle") or {}
    cuda = versions.parse(str(info.get("cuda") or ""))
    have = release_lines.cuda_majors(snap)
    if not info.get("system_libs") or not cuda or not have or cuda[0] in have:
        return []
    here = "; ".join(have[m] for m in sorted(have))
    kits = [versions.major_minor(str(t.get("version") or "")) for t in snap.value("cuda.toolkits") or []]
    other = _build_for(  # the newest wheel whose CUDA a toolkit here has, at its minor or newer
        info.get("release"),
        lambda r: any(
            k and (m := versions.major_minor(str(r["cuda"]))) and m[0] == k[0] and m <= k for k in kits
        ),
    )
    fix = [
        f"Install CUDA {info['cuda']}'s libraries (the toolkit, with cuDNN {info.get('cudnn') or 'for it'}) and put them on the loader's path"
    ]
    if other:
        fix.insert(
            0,
            f"Install Paddle's wheel for the CUDA here ({other['cuda']}): {knowledge.paddle_install(info.get('release'), str(other['cuda']))}",
        )
    return [
        finding(
            "paddle-cuda-libs",
            "cuda-libs-missing",
            Severity.ERROR,
            f"{_name(info)} loads CUDA {info['cuda']}'s libraries from the system, and the CUDA here is {here}",
            LAYER,
            evidence=[f"CUDA here: {here}"],
            fix=fix,
            subject=SUBJECT,
            generic_fixes=False,
        )
    ]
