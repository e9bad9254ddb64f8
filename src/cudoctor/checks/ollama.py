"""ollama ↔ GPU and driver: ollama brings its own CUDA runners, so its GPU support is its own, read from
ollama's repository per release (knowledge/ollama.toml, tools/read_ollama.py): the lowest compute
capability its discovery accepts (below it ollama runs on the CPU), each runner's CUDA (a driver floor)
and architectures. Read from what a person stated (facts/stated_apps.py)."""

from __future__ import annotations

from typing import Any

from cudoctor import knowledge, versions
from cudoctor.checks import check, finding, view
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "Frameworks"
SOURCE = "ollama's own repository per release (knowledge/ollama.toml, read by tools/read_ollama.py)"


@check("ollama", "arch-unsupported", LAYER, requires=("app.ollama",))
def ollama(snap: Snapshot) -> list[Finding]:
    """ollama's GPU support against the GPU and the driver: a GPU below the release's compute capability
    floor or outside its CUDA runner's architectures (it runs on the CPU or fails), a driver too old for
    every CUDA runner of the release."""
    info = snap.value("app.ollama") or {}
    row = knowledge.ollama_release(info["release"]) if info.get("release") else None
    out = []
    for gpu in view.gpus(snap):
        cc = gpu.get("cc_t")
        hit = cc and (_below_floor(gpu, cc, info, row) or _runner_lacks(gpu, cc, info, row))
        if hit:
            out.append(hit)
            break
    driver_cuda = snap.value("driver.cuda_version")
    ccs = [g["cc_t"] for g in view.gpus(snap) if g.get("cc_t")]
    if row and not info.get("system_cuda"):
        hit = _below_ollama_driver_floor(snap, info, row, min(ccs) if ccs else None) or (
            _driver_runs_no_runner(str(driver_cuda), info, row, min(ccs) if ccs else None)
            if driver_cuda
            else None
        )
        if hit:
            out.append(hit)
    return out


def _name(info: dict[str, Any]) -> str:
    return f"ollama {info['release']}" if info.get("release") else "ollama"


def _gpu(gpu: dict[str, Any], cc: versions.Version) -> str:
    return f"{gpu.get('name', 'GPU')} (compute capability {versions.cc_str(cc)})"


def _first_fitting(cc: versions.Version) -> str | None:
    """The first release whose floor admits this GPU and whose every CUDA runner with known architectures
    builds for it."""
    for row in knowledge.table("ollama")["release"]:
        floor = versions.cc_tuple(row.get("min_cc") or "")
        archs = [r["archs"] for r in row["runners"] if r["archs"]]
        if (
            floor
            and cc >= floor
            and archs
            and any(knowledge.arch_support(cc, knowledge.ollama_archs(a)) != "none" for a in archs)
        ):
            return str(row["first"])
    return None


def _below_floor(
    gpu: dict[str, Any], cc: versions.Version, info: dict[str, Any], row: dict[str, Any] | None
) -> Finding | None:
    """Below the stated release's floor, or, with no release stated, below every release's."""
    if row is not None:
        floor = versions.cc_tuple(row.get("min_cc") or "")
        scope = f"{_name(info)} uses only GPUs of compute capability {row.get('min_cc')} or newer"
    else:
        floors = [versions.cc_tuple(r.get("min_cc") or "") for r in knowledge.table("ollama")["release"]]
        floor = min((f for f in floors if f), default=None)
        scope = f"no ollama release uses a GPU below compute capability {versions.cc_str(floor or (0, 0))}"
    if floor is None or cc >= floor:
        return None
    newer = _first_fitting(cc)
    fix = (
        f"Upgrade ollama to {newer} or newer, whose GPU discovery and CUDA runners include compute capability "
        f"{versions.cc_str(cc)} (curl -fsSL https://ollama.com/install.sh | sh, or the release's Docker image)"
        if newer
        else f"No ollama release runs on compute capability {versions.cc_str(cc)}: run it on the CPU, or on a newer GPU"
    )
    return finding(
        "ollama-gpu-too-old",
        "arch-unsupported",
        Severity.ERROR,
        f"{_gpu(gpu, cc)} is below what ollama uses: {scope}, so it runs the model on the CPU",
        LAYER,
        evidence=[SOURCE],
        fix=[fix],
        subject="ollama",
        generic_fixes=False,
    )


def _runner_lacks(
    gpu: dict[str, Any], cc: versions.Version, info: dict[str, Any], row: dict[str, Any] | None
) -> Finding | None:
    """The CUDA runner the facts name (a 'CUDA 13 backend', or a build made with the machine's CUDA) has no
    code for this GPU: its architectures where the release is known, else the range its CUDA can build for."""
    major = info.get("runner") or (info.get("system_cuda") or "").split(".")[0]
    if not major:
        return None
    runner = next((r for r in (row or {}).get("runners", []) if r["cuda"].split(".")[0] == major), None)
    cuda = info.get("system_cuda") or (runner["cuda"] if runner else f"{major}.0")
    if runner and runner["archs"] and not info.get("system_cuda"):
        if knowledge.arch_support(cc, knowledge.ollama_archs(runner["archs"])) != "none":
            return None
        why = f"its CUDA {runner['cuda']} runner is built for {runner['archs'].replace(';', ', ')}"
    else:
        rng = knowledge.toolkit_cc_range(cuda)
        if rng is None or cc >= rng[0]:
            return None
        why = f"it is built with CUDA {cuda}, which builds for compute capability {versions.cc_str(rng[0])} and newer"
    other = [
        r["cuda"]
        for r in (row or knowledge.table("ollama")["release"][-1])["runners"]
        if r["cuda"].split(".")[0] != major
    ]
    fixes = [
        f"Use an ollama CUDA runner built for this GPU: OLLAMA_LLM_LIBRARY=cuda_v{other[-1].split('.')[0]} ollama serve "
        f"(its CUDA {other[-1]} runner; docs/troubleshooting.md), or ollama's own release build, which picks the runner by the GPU"
        if other
        else "Use an ollama build whose CUDA runner includes this GPU's architecture"
    ]
    return finding(
        "ollama-gpu-too-old",
        "arch-unsupported",
        Severity.ERROR,
        f"{_gpu(gpu, cc)} has no code in {_name(info)}'s CUDA {major} runner: {why}",
        LAYER,
        evidence=[SOURCE, f"stated: {info.get('stated', '')}"],
        fix=fixes,
        subject="ollama",
        generic_fixes=False,
    )


def _below_ollama_driver_floor(
    snap: Snapshot, info: dict[str, Any], row: dict[str, Any], cc: versions.Version | None
) -> Finding | None:
    """ollama's own driver floors (discover/cuda_compat.go, from 0.30): below min_driver it drops every CUDA GPU,
    below legacy_min_driver the GPUs under legacy_below_cc (their code is PTX it has the driver compile)."""
    dv = versions.parse(str(snap.value("driver.version") or ""))
    if dv is None:
        return None
    floors = []  # (branch, for whom): the highest that applies is the one to reach
    if row.get("min_driver"):
        floors.append((int(row["min_driver"]), "for every CUDA GPU"))
    below = versions.cc_tuple(row.get("legacy_below_cc"))
    if row.get("legacy_min_driver") and cc and below and cc < below:
        floors.append(
            (int(row["legacy_min_driver"]), f"for a GPU below compute capability {row['legacy_below_cc']}")
        )
    floor, why = max(floors, default=(0, ""))
    if dv[0] >= floor:
        return None
    return finding(
        "ollama-driver-too-old",
        "driver-too-old",
        Severity.ERROR,
        f"Driver {snap.value('driver.version')} is below the {floor} branch {_name(info)} asks {why} "
        "('NVIDIA driver too old' in its debug log): it runs the model on the CPU",
        LAYER,
        evidence=[SOURCE, f"{_name(info)}: discover/cuda_compat.go"],
        fix=[f"Upgrade the NVIDIA driver to the {floor} branch or newer"],
        subject="ollama",
        generic_fixes=False,
    )


def _support(runner: dict[str, str], cc: versions.Version | None) -> str:
    """What a runner holds for this GPU: 'sass', 'ptx', 'none', or 'unknown' (no GPU or no architecture list)."""
    if cc is None or not runner["archs"]:
        return "unknown"
    return knowledge.arch_support(cc, knowledge.ollama_archs(runner["archs"]))


def _runs(driver_cuda: str, runner: dict[str, str], support: str) -> bool:
    """Whether a driver runs a CUDA runner on this GPU: where the runner holds only PTX for it ('61-virtual'),
    the driver JIT-compiles that PTX and must support the runner's CUDA itself (no minor-version
    compatibility: ollama's own cuda_compat.go asks 570 for CUDA 12.8's PTX on compute capability 6.x)."""
    if support == "ptx":
        have, want = versions.major_minor(driver_cuda), versions.major_minor(runner["cuda"])
        return bool(have and want and have >= want)
    return support in ("sass", "unknown") and knowledge.driver_runs(driver_cuda, runner["cuda"])


def _driver_runs_no_runner(
    driver_cuda: str, info: dict[str, Any], row: dict[str, Any], cc: versions.Version | None
) -> Finding | None:
    """A driver too old for every CUDA runner the release ships for this GPU (ollama 0.9.3's only runner is
    CUDA 12.8; from 0.30 a Pascal GPU gets only PTX from the CUDA 12.8 runner, which a 535 driver cannot JIT)."""
    runners = row["runners"]
    supports = [_support(r, cc) for r in runners]
    if not runners or any(_runs(driver_cuda, r, s) for r, s in zip(runners, supports, strict=True)):
        return None
    if all(s == "none" for s in supports):
        return None  # no runner has code for this GPU at all: that is the architecture's finding, not the driver's
    ptx = [r for r, s in zip(runners, supports, strict=True) if s == "ptx"]
    if ptx:
        oldest = min((r["cuda"] for r in ptx), key=lambda c: versions.parse(c) or ())
        need = knowledge.release_driver_floor(oldest)
        why = (
            f"its CUDA {oldest} runner holds only PTX for compute capability {versions.cc_str(cc or (0, 0))}, which the "
            f"driver compiles itself, so it must be CUDA {oldest}'s own driver (no minor-version compatibility)"
        )
        floor = (need, why) if need else None
    else:
        oldest = min((r["cuda"] for r in runners), key=lambda c: versions.parse(c) or ())
        floor = knowledge.driver_floor(oldest)
    cudas = ", ".join(r["cuda"] for r in runners)
    return finding(
        "ollama-driver-too-old",
        "driver-too-old",
        Severity.ERROR,
        f"The driver runs CUDA {driver_cuda}, too old for every CUDA runner of {_name(info)} ({cudas})"
        + (" on this GPU" if ptx else "")
        + ": it runs the model on the CPU",
        LAYER,
        evidence=[SOURCE] + ([floor[1]] if floor else []),
        fix=[f"Upgrade the NVIDIA driver to {floor[0]} or newer" if floor else "Upgrade the NVIDIA driver"],
        subject="ollama",
        generic_fixes=False,
    )
