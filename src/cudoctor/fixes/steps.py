"""Steps computed from the facts and the knowledge tables, per cause: the concrete command a person
pastes (which PyTorch release and wheel index this driver runs, which cuDNN wheel this build loads,
which ptxas this build's CUDA needs). A fact a step needs but nobody knows is named with the command
that shows it, never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from cudoctor import knowledge, versions
from cudoctor.knowledge import jax_builds

if TYPE_CHECKING:
    from cudoctor.fixes.planner import Context

TORCH_INDEX = "https://download.pytorch.org/whl"
SHOW_DRIVER = "nvidia-smi (its header's 'CUDA Version' is the newest CUDA the driver runs)"
SHOW_GPU = "nvidia-smi --query-gpu=name,compute_cap --format=csv"
FIND_OUT = "To find out: "  # a step that names the command showing a fact the plan lacks: it goes last


def driver_runs(driver_cuda: str, cuda: str | None) -> bool:
    """Whether a driver that supports `driver_cuda` runs code built with `cuda`: an older or equal
    CUDA, or, from CUDA 11 on, any minor of the driver's own major (minor-version compatibility)."""
    have, want = versions.major_minor(driver_cuda), versions.major_minor(cuda or "")
    if have is None or want is None:
        return True
    return want <= have or (want[0] == have[0] and have[0] >= 11)


def _releases() -> list[dict[str, object]]:
    return list(knowledge.table("torch")["release"])


def _pin(version: str) -> str:
    mm = versions.major_minor(version)
    return f"torch=={mm[0]}.{mm[1]}.*" if mm else "torch"


def newest_torch_with(variant: str) -> str | None:
    """The newest torch release with wheels for this variant ('2.7.0' for cu118)."""
    for row in reversed(_releases()):
        if variant in (row.get("variants") or []):  # type: ignore[operator]
            return str(row["version"]).replace(".x", ".0")
    return None


def newest_torch_for(driver_cuda: str | None, cc: versions.Version | None) -> tuple[str, str] | None:
    """(release, variant) of the newest PyTorch whose wheels this driver runs and whose architecture
    list holds this GPU: the newest CUDA variant of that release the driver runs, or, with the driver
    unknown, the oldest variant that holds the GPU (it asks least of the driver)."""
    for row in reversed(_releases()):
        version = str(row["version"]).replace(".x", ".0")
        variants = [str(v) for v in row.get("variants") or [] if str(v).startswith("cu")]  # type: ignore[attr-defined]
        variants.sort(
            key=lambda v: versions.parse(versions.cuda_from_variant(v) or "") or (), reverse=bool(driver_cuda)
        )
        for variant in variants:
            if driver_cuda and not driver_runs(driver_cuda, versions.cuda_from_variant(variant)):
                continue
            if cc is not None:
                hit = knowledge.torch_archs(version, variant)
                if hit is None or knowledge.arch_support(cc, hit[0]) == "none":
                    continue
            return version, variant
    return None


def _torch_install(ctx: Context, why: str) -> list[str]:
    best = newest_torch_for(ctx.driver_cuda, ctx.cc)
    if best is None:
        return []
    version, variant = best
    cuda = versions.cuda_from_variant(variant)
    step = f"pip install --force-reinstall '{_pin(version)}' --index-url {TORCH_INDEX}/{variant}  ({why}: PyTorch {versions.fmt(versions.major_minor(version))} is the newest release with a CUDA {cuda} build"
    if ctx.driver_cuda:
        step += f" that your driver (CUDA {ctx.driver_cuda}) runs"
    else:
        step += f"; check that your driver runs CUDA {cuda}: {SHOW_DRIVER}"
    if ctx.cc is not None:
        step += f" and that holds compute capability {versions.fmt(ctx.cc)}"
    return [step + ")"]


def _driver_upgrade(ctx: Context) -> list[str]:
    if not ctx.cuda:
        return []
    floor = knowledge.driver_floor(ctx.cuda)
    if floor is None:
        return []
    return [f"Or upgrade the NVIDIA driver to {floor[0]} or newer ({floor[1]})"]


def driver_too_old(ctx: Context) -> list[str]:
    if ctx.framework == "torch":
        return _torch_install(ctx, "a build your driver runs") + _driver_upgrade(ctx)
    if ctx.framework == "jax":
        steps = _driver_upgrade(ctx)
        if steps:
            steps[0] = steps[0].replace("Or upgrade", "Upgrade", 1) + ": JAX's CUDA builds need it"
        return steps
    if ctx.framework == "tensorflow":
        return _tf_for_driver(ctx) + _driver_upgrade(ctx)
    return _driver_upgrade(ctx)


def _tf_for_driver(ctx: Context) -> list[str]:
    if not ctx.driver_cuda:
        return []
    for row in knowledge.table("tensorflow")["build"]:  # newest first
        if row["platform"] == "linux" and driver_runs(ctx.driver_cuda, str(row["cuda"])):
            mm = versions.major_minor(str(row["version"]))
            if mm is None:
                continue
            return [
                f"pip install 'tensorflow[and-cuda]=={mm[0]}.{mm[1]}.*'  (TensorFlow {mm[0]}.{mm[1]} was built with "
                f"CUDA {row['cuda']}, which your driver (CUDA {ctx.driver_cuda}) runs)"
            ]
    return []


def cpu_only_build(ctx: Context) -> list[str]:
    if ctx.framework == "torch":
        return _torch_install(ctx, "a CUDA build")
    if ctx.framework == "tensorflow" and ctx.platform == "windows":
        return []  # the tf-windows-cpu-only finding carries the documented steps
    if ctx.framework == "jax":
        return [jax_builds.install_step(ctx.driver_cuda)]
    return []


def cudnn_mismatch(ctx: Context) -> list[str]:
    cuda = ctx.cuda or ctx.system_cuda
    major = ctx.cudnn_wanted or _build_cudnn_major(ctx)
    if major is None:
        return []
    tf = knowledge.tf_build(ctx.version or "") if ctx.framework == "tensorflow" and ctx.version else None
    steps = []
    if tf is not None and (versions.parse(str(tf["cuda"])) or (0,))[0] < 12:
        steps.append(
            f"conda install -c conda-forge cudatoolkit={tf['cuda']} cudnn={tf['cudnn']}  (TensorFlow "
            f"{ctx.version} was built and tested with CUDA {tf['cuda']} and cuDNN {tf['cudnn']}; then put "
            "$CONDA_PREFIX/lib on LD_LIBRARY_PATH)"
        )
    wheel = knowledge.cudnn_wheel(cuda, major) if cuda else None
    cuda_major = (versions.parse(cuda or "") or ("?",))[0]
    if wheel:
        steps.append(
            f"pip install {wheel}  (cuDNN {major} for CUDA {cuda_major}, the libcudnn.so.{major} the build loads)"
        )
    elif cuda is None:
        steps.append(
            f'Install cuDNN {major} for the CUDA major your framework was built with (python -c "import torch; print(torch.version.cuda)" or tf.sysconfig.get_build_info() shows it)'
        )
    return steps


def _build_cudnn_major(ctx: Context) -> int | None:
    if ctx.framework == "tensorflow" and ctx.version:
        tf = knowledge.tf_build(ctx.version)
        v = versions.parse(str(tf["cudnn"])) if tf else None
        return v[0] if v else None
    return None


TOO_OLD = re.compile(r"current version is|Unsupported \.version|does not support|too old|newer than", re.I)


def toolchain_not_found(ctx: Context) -> list[str]:
    cuda = ctx.cuda or (ctx.system_cuda if ctx.framework in ("tensorflow", "jax") else None)
    if cuda is None:
        return []
    major = (versions.parse(cuda) or (0,))[0]
    if TOO_OLD.search(ctx.root):  # the log says the ptxas it found is too old: the build's own one was
        newest = knowledge.nvcc_wheel(str(major))
        return (
            [
                f"pip install -U {newest}  (the newest ptxas of CUDA {major}: the one found is older than the code it compiles)"
            ]
            if newest
            else []
        )
    wheel = knowledge.nvcc_wheel(cuda)
    if wheel:
        return [f"pip install {wheel}  (ptxas and nvcc of CUDA {cuda}, the CUDA your build was made with)"]
    return [
        f"Put the CUDA {cuda} toolkit's bin directory (it holds ptxas) first on PATH: export PATH=/usr/local/cuda-{cuda}/bin:$PATH "
        f"(install that toolkit if it is missing; NVIDIA ships no ptxas wheel for CUDA {cuda}); "
        f"XLA also reads export XLA_FLAGS=--xla_gpu_cuda_data_dir=/usr/local/cuda-{cuda}"
    ]


def arch_unsupported(ctx: Context) -> list[str]:
    if ctx.cc is None:
        return [f"{FIND_OUT}which GPU this is and its compute capability: {SHOW_GPU}"]
    steps = []
    if ctx.framework == "torch":
        steps += _torch_install(ctx, f"a build for compute capability {versions.fmt(ctx.cc)}")
    span = knowledge.cuda_span_for_cc(versions.fmt(ctx.cc))
    if span and ctx.framework in (None, "torch"):
        steps.append(
            f"For your own CUDA extensions: rebuild with a CUDA {span[0]} or newer toolkit and "
            f"TORCH_CUDA_ARCH_LIST={versions.fmt(ctx.cc)}"
        )
    return steps


BY_CAUSE: dict[str, Callable[[Context], list[str]]] = {
    "driver-too-old": driver_too_old,
    "cpu-only-build": cpu_only_build,
    "cudnn-mismatch": cudnn_mismatch,
    "toolchain-not-found": toolchain_not_found,
    "arch-unsupported": arch_unsupported,
}


def for_cause(cause: str, ctx: Context) -> list[str]:
    rule = BY_CAUSE.get(cause)
    return rule(ctx) if rule else []
