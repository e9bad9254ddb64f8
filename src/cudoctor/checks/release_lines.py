"""Libraries built for one CUDA major per release line (CTranslate2 4 and faster-whisper 1.x load CUDA 12,
onnxruntime-gpu before 1.19 CUDA 11: cuda_wheels.toml [[release_line]]) against the CUDA majors this
machine (or the facts stated) can give them: the toolkits, a container image's CUDA, NVIDIA's wheels."""

from __future__ import annotations

import re
from typing import Any

from cudoctor import knowledge, versions
from cudoctor.checks import check, finding
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "CUDA toolkits & libraries"
CAUSE = "cuda-libs-missing"


def _install(row: dict[str, Any]) -> str:
    """How to move to a release line: its own words where its package key is no pip name, else pip's."""
    return str(row.get("install") or f"pip install '{row['package']}{row['spec']}'")


def line_of(package: str, version: str) -> dict[str, Any] | None:
    """The release line a package's version is on, or None (not such a package, or its version unread)."""
    for row in knowledge.table("cuda_wheels")["release_line"]:
        if row["package"] == package and versions.satisfies(version, row["spec"]):
            return dict(row)
    return None


def cuda_majors(snap: Snapshot) -> dict[int, str]:
    """The CUDA majors whose libraries are here, each with where it comes from."""
    found: dict[int, str] = {}
    for t in snap.value("cuda.toolkits") or []:
        v = versions.parse(str(t.get("version") or ""))
        if v:
            found.setdefault(v[0], f"CUDA {t['version']} ({t.get('root')})")
    image = versions.parse(str(snap.value("container.cuda") or ""))
    if image:
        found.setdefault(image[0], f"the container image's CUDA {snap.value('container.cuda')}")
    for w in snap.value("python.nvidia_wheels") or []:
        m = re.search(r"-cu(\d+)$", str(w.get("name", "")))
        if m and re.match(r"nvidia-(?:cublas|cuda-runtime)", str(w.get("name", ""))):
            found.setdefault(int(m.group(1)), f"pip {w['name']} {w.get('version', '')}".strip())
    return found


def _lines_loading(package: str, key: str, majors: set[int]) -> list[dict[str, Any]]:
    """The package's release lines whose `key` (cuda_major, cudnn_major) is one of the majors here."""
    return [
        dict(r)
        for r in knowledge.table("cuda_wheels")["release_line"]
        if r["package"] == package and key in r and int(r[key]) in majors
    ]


@check("release-line-cuda", CAUSE, LAYER, requires=("python.packages",))
def release_line_cuda(snap: Snapshot) -> list[Finding]:
    """A library whose release line loads CUDA N, where the CUDA here is another major."""
    installed = snap.value("python.packages") or {}
    have = cuda_majors(snap)
    if not have:
        return []
    out = []
    for package, version in sorted(installed.items()):
        row = line_of(package, str(version))
        if row is None or int(row["cuda_major"]) in have:
            continue
        want = int(row["cuda_major"])
        here = "; ".join(have[m] for m in sorted(have))
        other = _lines_loading(package, "cuda_major", set(have))
        fix = [f"{_install(r)}  (its wheels load CUDA {r['cuda_major']}, the CUDA here)" for r in other]
        if want in (11, 12):
            fix.append(
                f"Or give it CUDA {want}'s libraries: pip install nvidia-cublas-cu{want} nvidia-cudnn-cu{want}"
                f"  (or a CUDA {want} toolkit / container image)"
            )
        out.append(
            finding(
                "release-line-cuda",
                CAUSE,
                Severity.ERROR,
                f"{row.get('name', package)} {version} loads CUDA {want}'s libraries, but the CUDA here is {here}",
                LAYER,
                evidence=[
                    f"{package} {row['spec']}: CUDA {want} ({row['source'].split(';')[0]})",
                    f"CUDA here: {here}",
                ],
                fix=fix,
                generic_fixes=False,
                subject=package,
            )
        )
    return out


@check("release-line-cudnn", "cudnn-mismatch", LAYER, requires=("python.packages", "cudnn.versions"))
def release_line_cudnn(snap: Snapshot) -> list[Finding]:
    """A library whose release line loads one cuDNN major (onnxruntime-gpu 1.19+: cuDNN 9, before: 8), where
    every cuDNN here is another major."""
    installed = snap.value("python.packages") or {}
    have = sorted({str(v) for v in snap.value("cudnn.versions") or [] if versions.parse(str(v))})
    majors = {(versions.parse(v) or (0,))[0] for v in have}
    out = []
    for package, version in sorted(installed.items()):
        row = line_of(package, str(version))
        if row is None or "cudnn_major" not in row or not majors or int(row["cudnn_major"]) in majors:
            continue
        want = int(row["cudnn_major"])
        other = _lines_loading(package, "cudnn_major", majors)
        fix = [f"{_install(r)}  (its wheels load cuDNN {r['cudnn_major']}, the cuDNN here)" for r in other]
        fix.append(
            f"Or give it cuDNN {want}: pip install 'nvidia-cudnn-cu{row['cuda_major']}=={want}.*' "
            f"(or NVIDIA's cuDNN {want} for CUDA {row['cuda_major']}, on the loader's path)"
        )
        out.append(
            finding(
                "release-line-cudnn",
                "cudnn-mismatch",
                Severity.ERROR,
                f"{row.get('name', package)} {version} loads cuDNN {want}, but the cuDNN here is {', '.join(have)}: a cuDNN of "
                f"another major does not load in its place",
                LAYER,
                evidence=[
                    f"{package} {row['spec']}: cuDNN {want} ({row['source'].split(';')[0]})",
                    f"cuDNN here: {', '.join(have)}",
                ],
                fix=fix,
                generic_fixes=False,
                subject=package,
            )
        )
    return out
