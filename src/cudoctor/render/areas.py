"""Group a Report into the areas every renderer shows: one per layer and one per framework.

Formatting only: the statuses come from the findings' severities, the summaries from facts.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from cudoctor.model import FRAMEWORK_LABEL, Finding, Report, Severity, Snapshot


@dataclasses.dataclass
class Area:
    title: str
    summary: str
    findings: list[Finding]
    fact_keys: list[str]
    inspected: bool = True  # False when none of the area's facts are known (stated facts, say)
    # findings about this area's framework that another area lists (a driver too old for it): they count
    # in its status, so a framework's line never shows [✓] above errors about it
    related: list[tuple[str, Finding]] = dataclasses.field(default_factory=list)

    @property
    def status(self) -> str:
        counted = self.findings + [f for _, f in self.related]
        if any(f.severity is Severity.ERROR for f in counted):
            return "error"
        if any(f.severity is Severity.WARNING for f in counted):
            return "warning"
        return "ok" if self.inspected else "unknown"


def _gpu_names(gpus: list[dict[str, Any]]) -> str:
    """'8x NVIDIA A800-SXM4-80GB (cc 8.0)': alike GPUs counted once, in the order they come."""
    counts: dict[str, int] = {}
    for g in gpus:
        label = f"{g.get('name')} (cc {g.get('cc') or '?'})"
        counts[label] = counts.get(label, 0) + 1
    return ", ".join(label if n == 1 else f"{n}x {label}" for label, n in counts.items())


def _gpu_summary(snap: Snapshot) -> str:
    driver = snap.get("driver.version")
    gpus = snap.value("gpu.devices") or []
    names = _gpu_names(gpus) or "no GPU listed"
    cuda = snap.value("driver.cuda_version")
    if driver is None or not driver.known:
        absent = driver is not None and driver.status.value == "absent"
        what = "no NVIDIA driver" if absent else "driver unknown" + (f", CUDA {cuda}" if cuda else "")
        return what + (f"; {names}" if gpus else "")
    return f"driver {driver.value}" + (f", CUDA {cuda}" if cuda else "") + f"; {names}"


def _toolkit_summary(snap: Snapshot) -> str:
    tks = snap.value("cuda.toolkits")
    if tks is None:
        return "not inspected"
    if not tks:
        return "no CUDA toolkit found"
    return "; ".join(f"CUDA {t.get('version') or '?'} at {t.get('root')}" for t in tks)


def _framework_summary(info: dict[str, Any]) -> str:
    build = info.get("build")
    if build == "cuda":
        parts = [f"CUDA {info['cuda']}" if info.get("cuda") else "CUDA build"]
        if info.get("cudnn"):
            parts.append(f"cuDNN {info['cudnn']}")
        if info.get("archs"):
            parts.append(" ".join(info["archs"]))
        return ", ".join(parts)
    if build == "cpu" and info.get("mps"):
        return "no CUDA; Apple GPU through MPS"
    return {"cpu": "CPU-only build", "rocm": "ROCm build"}.get(str(build), f"build {build}")


def _cpu_summary(snap: Snapshot) -> str:
    cpu = snap.value("host.cpu") or {}
    libs = snap.value("cpu.runtime_libs") or []
    names = sorted({str(r.get("lib", "")).split(".so")[0] for r in libs})
    cpus = (snap.value("host.limits") or {}).get("cpus")
    model = f"{cpu.get('model') or 'CPU'}" + (f", {cpus} usable CPUs" if cpus else "")
    return model + (f"; {', '.join(names)}" if names else "")


def areas(report: Report) -> list[Area]:
    snap = report.snapshot
    found = report.findings
    by_layer: dict[str, list[Finding]] = {}
    for f in found:
        key = f"framework:{f.subject}" if f.subject in FRAMEWORK_LABEL else f.layer
        by_layer.setdefault(key, []).append(f)
    out = [
        Area(
            "GPU & driver",
            _gpu_summary(snap),
            by_layer.pop("GPU & driver", []),
            ["driver.version", "driver.cuda_version", "gpu.devices", "gpu.pci"],
        ),
        Area(
            "CUDA toolkits & libraries",
            _toolkit_summary(snap),
            by_layer.pop("CUDA toolkits & libraries", []),
            ["cuda.toolkits", "cuda.path_tools", "python.nvidia_wheels"],
        ),
    ]
    frameworks: dict[str, Area] = {}
    for name, label in FRAMEWORK_LABEL.items():
        info = snap.value(f"framework.{name}")
        fact = snap.get(f"framework.{name}")
        mine = by_layer.pop(f"framework:{name}", [])
        if isinstance(info, dict):
            title = f"{label} {info.get('version') or ''}".strip()
            frameworks[name] = Area(title, _framework_summary(info), mine, [f"framework.{name}"])
        elif (fact is not None and fact.status.value == "error") or mine:
            frameworks[name] = Area(label, "installed but unreadable", mine, [f"framework.{name}"])
        if name in frameworks:
            out.append(frameworks[name])
    out.append(
        Area(
            "Environment",
            "",
            by_layer.pop("Environment", []),
            ["env", "env.paths", "host.os", "host.container", "host.wsl", "host.target"],
        )
    )
    out.append(
        Area(
            "CPU BLAS",
            _cpu_summary(snap),
            by_layer.pop("CPU BLAS", []),
            ["host.cpu", "host.limits", "cpu.runtime_libs"],
        )
    )
    probes = snap.value("probe.results")
    if probes is not None or "Probes" in by_layer:
        failed = sum(r.get("status") != "ok" for r in probes or [])
        summary = f"{len(probes or [])} framework(s) probed, {failed} failed"
        out.append(Area("Probes", summary, by_layer.pop("Probes", []), ["probe.results"]))
    rest = [f for fs in by_layer.values() for f in fs]
    if rest:
        out.append(Area("Other", "", rest, []))
    for area in out:
        area.inspected = not area.fact_keys or any(snap.status(k).value != "unknown" for k in area.fact_keys)
    _relate(out, frameworks)
    return out


def _relate(out: list[Area], frameworks: dict[str, Area]) -> None:
    """Give each framework's area the findings about it (Finding.about) that other areas list."""
    for area in out:
        for f in area.findings:
            for name in dict.fromkeys(f.about):
                mine = frameworks.get(name)
                if mine is not None and mine is not area:
                    mine.related.append((area.title, f))
