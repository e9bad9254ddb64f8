"""Run-time compiler contracts: ptxas / libdevice for XLA (TensorFlow, JAX) and Triton."""

from __future__ import annotations

import os
from typing import Any

from cudoctor import knowledge, versions
from cudoctor.checks import check, finding, view
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "CUDA toolkits & libraries"
XLA_FRAMEWORKS = ("tensorflow", "jax")


def compiler_step(cuda_major: int) -> str:
    """The step that installs a CUDA compiler of this major: NVIDIA's wheel where one exists."""
    wheel = knowledge.nvcc_wheel(str(cuda_major))
    return f"pip install {wheel}" if wheel else f"install a CUDA {cuda_major}.x toolkit"


def older_ptxas_step(driver_cuda: str) -> str:
    wheel = knowledge.nvcc_wheel(driver_cuda)
    where = f"pip install {wheel}" if wheel else f"a CUDA {driver_cuda} toolkit's bin first on PATH"
    return f"Upgrade the NVIDIA driver, or use a ptxas no newer than CUDA {driver_cuda} ({where})"


def _xla_builds(snap: Snapshot) -> list[tuple[str, dict[str, Any]]]:
    return [(n, i) for n, i in view.cuda_frameworks(snap) if n in XLA_FRAMEWORKS]


XLA_DATA_DIR = "XLA_FLAGS --xla_gpu_cuda_data_dir"


def _path_ptxas(snap: Snapshot) -> tuple[str | None, versions.Version | None]:
    """The ptxas a shell finds first on PATH, and its version (from the toolkit that owns it, else
    from its own answer to --version, wherever it sits)."""
    first = view.path_tool(snap, "ptxas")
    if not first:
        return None, None
    for tk in snap.value("cuda.toolkits") or []:
        if tk.get("ptxas") == first:
            pv = (tk.get("ptxas_version") or {}).get("version") or tk.get("version")
            return first, versions.parse(pv)
    return first, versions.parse((view.tool_asked(snap, first) or {}).get("version"))


def _xla_ptxas(snap: Snapshot) -> tuple[str | None, versions.Version | None, str]:
    """The ptxas XLA runs: the one in XLA_FLAGS' --xla_gpu_cuda_data_dir (looked at before PATH), else
    the first on PATH; its version; and where it was found."""
    flagged = view.tool_asked(snap, "", XLA_DATA_DIR)
    if flagged and flagged.get("tool") == "ptxas" and versions.parse(flagged.get("version")):
        return str(flagged["path"]), versions.parse(flagged.get("version")), "in --xla_gpu_cuda_data_dir"
    return (*_path_ptxas(snap), "first on PATH")


def _toolkits_inspected(snap: Snapshot) -> bool:
    """False when toolkits were only stated (their tools were never looked at)."""
    return not any(tk.get("stated") for tk in snap.value("cuda.toolkits") or [])


def _any_ptxas(snap: Snapshot) -> bool:
    if _path_ptxas(snap)[0]:
        return True
    if any(tk.get("ptxas") for tk in snap.value("cuda.toolkits") or []):
        return True
    return any(
        str(w.get("name", "")).startswith(("nvidia-cuda-nvcc", "nvidia-nvcc"))
        for w in snap.value("python.nvidia_wheels") or []
    )


@check("ptxas-missing", "toolchain-not-found", LAYER, requires=("cuda.toolkits",))
def ptxas_missing(snap: Snapshot) -> list[Finding]:
    """TensorFlow / JAX GPU builds compile kernels with ptxas, and none can be found."""
    builds = _xla_builds(snap)
    if not builds or not _toolkits_inspected(snap) or _any_ptxas(snap):
        return []
    names = ", ".join(view.describe(n, i) for n, i in builds)
    major = (versions.major_minor(str(builds[0][1]["cuda"])) or (12, 0))[0]
    return [
        finding(
            "ptxas-missing",
            "toolchain-not-found",
            Severity.WARNING,
            f'No ptxas on PATH, in any CUDA toolkit or pip wheel: {names} will fall back to slow driver JIT or fail with "Couldn\'t invoke ptxas"',
            LAYER,
            evidence=[
                "cuda.path_tools.ptxas: none",
                "cuda.toolkits: no bin/ptxas",
                "no nvidia-cuda-nvcc wheel",
            ],
            fix=[compiler_step(major)],
            about=[n for n, _ in builds],
        )
    ]


@check("ptxas-version-mismatch", "toolchain-not-found", LAYER, requires=("cuda.path_tools",))
def ptxas_version_mismatch(snap: Snapshot) -> list[Finding]:
    """The ptxas on PATH is older than the framework's CUDA, or newer than the CUDA the driver supports."""
    path, pv, where = _xla_ptxas(snap)
    builds = _xla_builds(snap)
    if not path or pv is None or not builds:
        return []
    out = []
    for name, info in builds:
        want = versions.major_minor(str(info["cuda"]))
        if want and pv[0] < want[0]:
            out.append(
                finding(
                    "ptxas-too-old",
                    "toolchain-not-found",
                    Severity.ERROR,
                    f"ptxas {versions.fmt(pv)} {where} ({path}) is older than the CUDA {info['cuda']} that {view.describe(name, info)} was built with",
                    LAYER,
                    evidence=[f"ptxas {where}: {path}", f"ptxas version {versions.fmt(pv)}"],
                    fix=[
                        compiler_step(want[0]),
                        "Or put a newer toolkit's bin first: export PATH=/usr/local/cuda/bin:$PATH",
                    ],
                    about=[name],
                )
            )
    driver_cuda = versions.major_minor(snap.value("driver.cuda_version"))
    if driver_cuda and versions.cmp(pv[:2], driver_cuda) > 0:
        out.append(
            finding(
                "ptxas-newer-than-driver",
                "toolchain-not-found",
                Severity.WARNING,
                f"ptxas {versions.fmt(pv)} ({path}) is newer than the CUDA {versions.fmt(driver_cuda)} the driver supports: XLA disables parallel compilation and PTX it emits may not load",
                LAYER,
                evidence=[f"ptxas {versions.fmt(pv)}", f"driver.cuda_version = {versions.fmt(driver_cuda)}"],
                fix=[older_ptxas_step(versions.fmt(driver_cuda))],
            )
        )
    return out


@check("libdevice-missing", "toolchain-not-found", LAYER, requires=("cuda.toolkits",))
def libdevice_missing(snap: Snapshot) -> list[Finding]:
    """XLA needs nvvm/libdevice/libdevice.10.bc and no toolkit or wheel provides it."""
    builds = _xla_builds(snap)
    if not builds or not _toolkits_inspected(snap):
        return []
    if any(tk.get("libdevice") for tk in snap.value("cuda.toolkits") or []):
        return []
    if "xla_gpu_cuda_data_dir" in view.env(snap).get("XLA_FLAGS", ""):
        return []
    if any(
        str(w.get("name", "")).startswith(("nvidia-cuda-nvcc", "nvidia-nvvm"))
        for w in snap.value("python.nvidia_wheels") or []
    ):
        return []
    return [
        finding(
            "libdevice-missing",
            "toolchain-not-found",
            Severity.WARNING,
            f'No libdevice.10.bc found: XLA in {", ".join(view.describe(n, i) for n, i in builds)} cannot compile kernels ("libdevice not found")',
            LAYER,
            evidence=[
                "no <toolkit>/nvvm/libdevice/libdevice*.bc",
                "XLA_FLAGS has no --xla_gpu_cuda_data_dir",
            ],
            about=[n for n, _ in builds],
        )
    ]


@check("ptxas-broken", "toolchain-not-found", LAYER, requires=("cuda.toolkits",))
def ptxas_broken(snap: Snapshot) -> list[Finding]:
    """A ptxas that would be run (a toolkit's, the first on PATH, or one XLA_FLAGS, CUDA_HOME or
    TRITON_PTXAS_PATH names) does not answer `--version`: it hangs, crashes, is not executable, or is
    not a working binary (a truncated copy), wherever it sits."""
    out, seen = [], set()
    for tk in snap.value("cuda.toolkits") or []:
        answer = tk.get("ptxas_version") or {}
        if not answer.get("error"):
            continue
        seen.add(os.path.realpath(str(tk.get("ptxas"))))
        fix = f"Reinstall the toolkit at {tk.get('root')} or remove {os.path.dirname(str(tk.get('ptxas')))} from PATH"
        out.append(_broken(str(tk.get("ptxas")), "", answer, fix))
    for tool in snap.value("cuda.run_tools") or []:
        if tool.get("tool") != "ptxas" or not tool.get("error") or tool.get("resolved") in seen:
            continue
        reached = [v for v in tool.get("via") or [] if v != "PATH (not first)"]
        if reached:
            seen.add(str(tool.get("resolved")))
            fix = _broken_fix(snap, str(tool["path"]), reached[0])
            out.append(_broken(str(tool["path"]), reached[0], tool, fix))
    return out


def _broken(path: str, via: str, answer: dict[str, Any], fix: str) -> Finding:
    how = {"PATH": " (first on PATH)", "": ""}.get(via, f" ({via})")
    return finding(
        "ptxas-broken",
        "toolchain-not-found",
        Severity.WARNING,
        f"{path}{how} does not work: {answer['error']}",
        LAYER,
        evidence=[str(answer["error"])] + ([f"stderr: {answer['stderr']}"] if answer.get("stderr") else []),
        fix=[fix],
    )


def _broken_fix(snap: Snapshot, path: str, via: str) -> str:
    where = os.path.dirname(path)
    if via == "PATH":
        return f"Remove {where} from PATH, or put a working ptxas there ({compiler_step(12)})"
    if via.startswith("TRITON_"):
        return f"unset {via} (Triton then runs the ptxas it bundles), or point it at a working ptxas"
    if via.startswith("triton bin/"):
        triton = (snap.value("python.packages") or {}).get("triton")
        pin = f"triton=={triton}" if triton else "triton"
        return f"pip install --force-reinstall --no-deps {pin}  (its bundled ptxas is damaged)"
    if via.startswith("XLA_FLAGS"):
        return "Point --xla_gpu_cuda_data_dir at a CUDA toolkit whose bin/ptxas works, or drop the flag"
    return f"Point {via} at a CUDA toolkit whose bin/ptxas works ({os.path.dirname(where)} has a broken one)"


def _extension_toolkit(snap: Snapshot) -> tuple[dict[str, Any] | None, str]:
    """The toolkit torch.utils.cpp_extension builds with: CUDA_HOME, CUDA_PATH, nvcc on PATH, /usr/local/cuda."""
    env = view.env(snap)
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(var):
            return view.toolkit_at(env[var], snap), f"{var}={env[var]}"
    nvcc = view.path_tool(snap, "nvcc")
    if nvcc:
        return view.toolkit_at(os.path.dirname(os.path.dirname(nvcc)), snap), f"nvcc on PATH: {nvcc}"
    default = view.toolkit_at("/usr/local/cuda", snap)
    if default:
        return default, "/usr/local/cuda"
    stated = [tk for tk in snap.value("cuda.toolkits") or [] if tk.get("stated")]
    return (stated[0], "the stated system CUDA") if len(stated) == 1 else (None, "")


def _extension_fixes(snap: Snapshot, tv: tuple[int, ...], bv: tuple[int, ...]) -> list[str]:
    same_major = [
        tk
        for tk in snap.value("cuda.toolkits") or []
        if not tk.get("stated") and (versions.major_minor(str(tk.get("version") or "")) or (0,))[0] == bv[0]
    ]
    fixes = [
        f"export CUDA_HOME={same_major[0].get('root')}"
        if same_major
        else f"Install a CUDA {versions.fmt(bv)} toolkit with nvcc (NVIDIA's installer with --toolkit, apt's cuda-toolkit, "
        "or conda's cuda-toolkit; NVIDIA's pip nvcc wheels hold ptxas, not nvcc) and point CUDA_HOME at it"
    ]
    variant = f"cu{tv[0]}{tv[1]}"
    if knowledge.torch_variant_exists(variant):
        fixes.append(
            f"or install the torch build for CUDA {versions.fmt(tv)}: pip install torch --index-url https://download.pytorch.org/whl/{variant}"
        )
    return fixes


@check("torch-extension-toolkit", "multiple-toolkits", LAYER, requires=("cuda.toolkits",))
def torch_extension_toolkit(snap: Snapshot) -> list[Finding]:
    """torch C++/CUDA extensions would build with a toolkit of another CUDA major than torch's (cpp_extension
    refuses): two CUDAs on one machine, the system toolkit and the one inside torch (taxonomy: multiple-toolkits)."""
    torch = dict(view.cuda_frameworks(snap)).get("torch")
    tk, how = _extension_toolkit(snap)
    if torch is None or tk is None:
        return []
    tv, bv = versions.major_minor(str(tk.get("version") or "")), versions.major_minor(str(torch["cuda"]))
    if tv is None or bv is None or tv[0] == bv[0]:
        return []
    return [
        finding(
            "torch-extension-toolkit",
            "multiple-toolkits",
            Severity.WARNING,
            f"torch C++/CUDA extensions would build with CUDA {tk.get('version')} ({how}) but {view.describe('torch', torch)} was built with CUDA {torch['cuda']}: the build stops with 'The detected CUDA version ({versions.fmt(tv)}) mismatches the version that was used to compile PyTorch ({versions.fmt(bv)})'",
            LAYER,
            evidence=[
                f"extension toolkit: {tk.get('root')} (CUDA {tk.get('version')}, from {how})",
                f"torch built with CUDA {torch['cuda']}",
            ],
            fix=_extension_fixes(snap, tv, bv),
            subject="torch",
            also=["toolchain-not-found"],
            generic_fixes=False,  # the cause's steps are about shadowing libraries and XLA, not a build's nvcc
        )
    ]


@check("toolkit-older-than-gpu", "toolchain-not-found", LAYER, requires=("cuda.toolkits", "gpu.devices"))
def toolkit_older_than_gpu(snap: Snapshot) -> list[Finding]:
    """The CUDA toolkit that builds CUDA code here (CUDA_HOME, nvcc on PATH, /usr/local/cuda, the stated one) is
    older than the GPU: its nvcc cannot target it ('nvcc fatal : Unsupported gpu architecture compute_86'), so a
    torch extension or other CUDA code built with it fails or has no kernels for it. A warning where the facts say
    code is compiled here, a note otherwise (wheels bring their own CUDA)."""
    tk, how = _extension_toolkit(snap)
    rng = knowledge.toolkit_cc_range(str((tk or {}).get("version") or ""))
    newest = [g for g in view.gpus(snap) if g.get("cc_t") and rng and g["cc_t"] > rng[1]]
    if tk is None or rng is None or not newest:
        return []
    gpu, cc = newest[0], newest[0]["cc_t"]
    span = knowledge.cuda_span_for_cc(versions.cc_str(cc))
    torch = dict(view.cuda_frameworks(snap)).get("torch") or {}
    torch_rng = knowledge.toolkit_cc_range(str(torch.get("cuda") or ""))
    if (
        torch_rng and cc <= torch_rng[1]
    ):  # torch's own CUDA builds for the GPU, and extensions must match its major
        step = (
            f"Build with a CUDA {torch['cuda']} toolkit, the CUDA {view.describe('torch', torch)} was built with, which "
            "builds for this GPU: put its bin/ first on PATH and point CUDA_HOME at it"
        )
    elif span:
        step = (
            f"Build with a CUDA {span[0]} or newer toolkit (of the same major as the framework's CUDA): put its bin/ "
            "first on PATH and point CUDA_HOME at it"
        )
    else:
        step = "Build with a CUDA toolkit that supports this GPU"
    return [
        finding(
            "toolkit-older-than-gpu",
            "toolchain-not-found",
            Severity.WARNING if view.built_here(snap) else Severity.INFO,
            f"CUDA {tk.get('version')} ({how}) builds for compute capability up to {versions.cc_str(rng[1])}, older than "
            f"{gpu.get('name', 'the GPU')} ({versions.cc_str(cc)}): CUDA code compiled with it here (a torch extension, "
            f"a from-source build) fails with 'Unsupported gpu architecture' or has no kernels for this GPU",
            LAYER,
            evidence=[
                f"toolkit: CUDA {tk.get('version')} ({how})",
                f"GPU compute capability {versions.cc_str(cc)}",
            ],
            fix=[step],
            subject="toolkit",
            generic_fixes=False,
        )
    ]
