"""TensorFlow on native Windows (not WSL2): releases after the last one with Windows GPU support
(tensorflow.toml [native_windows], 2.10) install a CPU-only build there."""

from __future__ import annotations

from typing import Any

from cudoctor import knowledge, versions
from cudoctor.checks import check, finding, view
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "Frameworks"


def rule() -> dict[str, Any]:
    return dict(knowledge.table("tensorflow")["native_windows"])


def native_windows(snap: Snapshot) -> bool:
    return view.platform(snap) == "windows"


def cpu_only_there(snap: Snapshot, info: dict[str, Any]) -> bool:
    """A TensorFlow newer than the last Windows GPU release, not a CUDA build, on native Windows."""
    have = versions.major_minor(str(info.get("version") or ""))
    last = versions.major_minor(rule()["gpu_last"])
    return (
        native_windows(snap)
        and have is not None
        and last is not None
        and have > last
        and info.get("build") != "cuda"
    )


def _no_gpu_here(snap: Snapshot) -> bool:
    """The facts show this machine has no NVIDIA GPU (not merely that nobody said)."""
    gpus, pci = snap.get("gpu.devices"), snap.get("gpu.pci")
    seen = [f for f in (gpus, pci) if f is not None and f.known]
    return bool(seen) and not any(f.value for f in seen)


@check("tensorflow-native-windows", "cpu-only-build", LAYER, requires=("host.os", "framework.tensorflow"))
def tensorflow_native_windows(snap: Snapshot) -> list[Finding]:
    """TensorFlow >= 2.11 on native Windows is a CPU-only build: GPU support there ended with 2.10."""
    info = snap.value("framework.tensorflow") or {}
    if not cpu_only_there(snap, info) or _no_gpu_here(snap) or view.has_gpu_hardware(snap):
        return []  # with the GPU known, cpu-only-build reports it (windows_finding)
    return [windows_finding(snap, info, "tensorflow-native-windows")]


def windows_finding(snap: Snapshot, info: dict[str, Any], finding_id: str) -> Finding:
    """The finding for a TensorFlow that cpu_only_there() holds for, with the ways back to a GPU."""
    r = rule()
    os_name = (snap.value("host.os") or {}).get("name") or "Windows"
    return finding(
        finding_id,
        "cpu-only-build",
        Severity.ERROR,
        f"{view.LABEL['tensorflow']} {info.get('version')} on native Windows ({os_name}) is a CPU-only "
        f"build: {r['gpu_last']} was the last TensorFlow release with GPU support on native Windows",
        LAYER,
        evidence=[
            f"host.os = {os_name}",
            f"host.wsl = {snap.value('host.wsl')}",
            f"framework.tensorflow.version = {info.get('version')}",
            f"TensorFlow's install page: GPU on native Windows up to {r['gpu_last']} ({r['source']})",
        ],
        fix=_steps(snap, r),
        subject="tensorflow",
        generic_fixes=False,  # the cause's steps install Linux CUDA builds, which this OS has not
    )


def _steps(snap: Snapshot, r: dict[str, Any]) -> list[str]:
    last = knowledge.tf_build(r["gpu_last"], "windows") or {}
    python = str((snap.value("host.python") or {}).get("version") or "")
    span = str(last.get("python") or "")
    fits = _python_fits(python, span)
    if not python:
        need = f" (it needs Python {span}: check yours with python --version)"
    elif fits is False:
        need = f" (it needs Python {span} and this is {python}: create an environment with Python {span.split('-')[-1]} first)"
    else:
        need = ""
    return [
        f"Use WSL2, where TensorFlow's Linux builds use the GPU: {r['wsl_step']}",
        f"Or stay on native Windows with TensorFlow {r['gpu_last']}, the last release that uses the GPU there "
        f"(CUDA {last.get('cuda', '?')}, cuDNN {last.get('cudnn', '?')}){need}: {r['conda_step']}, then {r['pip_step']}",
        f"Check that TensorFlow sees the GPU: {r['check_step']}",
    ]


def _python_fits(python: str, span: str) -> bool | None:
    """Whether Python `python` is within a tested span such as '3.7-3.10'; None when either is unknown."""
    have = versions.major_minor(python)
    low, _, high = span.partition("-")
    lo, hi = versions.major_minor(low), versions.major_minor(high or low)
    if have is None or lo is None or hi is None:
        return None
    return lo <= have <= hi
