"""onnxruntime's packages: only onnxruntime-gpu has the CUDA execution provider, and onnxruntime and
onnxruntime-gpu install into the same onnxruntime/ folder, so with both the CPU package's files can
replace the GPU one's. Read from the installed distributions, before anything is imported."""

from __future__ import annotations

from cudoctor.checks import check, finding, view
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "Frameworks"
CAUSE = "cpu-only-build"
REINSTALL = "pip uninstall -y onnxruntime onnxruntime-gpu && pip install onnxruntime-gpu"


@check("onnxruntime-cpu-package", CAUSE, LAYER, requires=("python.packages",))
def onnxruntime_cpu_package(snap: Snapshot) -> list[Finding]:
    """onnxruntime (the CPU-only package) is installed beside onnxruntime-gpu, or alone on a machine with an
    NVIDIA GPU: sessions asked for CUDAExecutionProvider fall back to the CPU."""
    installed = snap.value("python.packages") or {}
    cpu, gpu = installed.get("onnxruntime"), installed.get("onnxruntime-gpu")
    if cpu is None:
        return []
    if gpu is not None:
        severity = Severity.ERROR
        title = (
            f"onnxruntime {cpu} and onnxruntime-gpu {gpu} are both installed: they share one onnxruntime/ folder, "
            "and the CPU package's files can replace the GPU one's, leaving no CUDA provider "
            "('Failed to create CUDAExecutionProvider')"
        )
    elif view.has_gpu_hardware(snap):
        severity = Severity.WARNING
        title = (
            f"onnxruntime {cpu} is the CPU-only package on a machine with an NVIDIA GPU: its sessions run on the "
            "CPU (the CUDA provider is in onnxruntime-gpu)"
        )
    else:
        return []
    return [
        finding(
            "onnxruntime-cpu-package",
            CAUSE,
            severity,
            title,
            LAYER,
            evidence=[f"installed onnxruntime = {cpu}"]
            + ([f"installed onnxruntime-gpu = {gpu}"] if gpu else []),
            fix=[
                f"{REINSTALL} (a package that depends on onnxruntime pulls the CPU one back in: install it first, then this)",
                'Check: python -c "import onnxruntime as ort; print(ort.get_available_providers())" lists CUDAExecutionProvider',
            ],
            subject="onnxruntime",
            generic_fixes=False,
        )
    ]
