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
from cudoctor.model import FRAMEWORKS

if TYPE_CHECKING:
    from cudoctor.fixes.planner import Context

TORCH_INDEX = "https://download.pytorch.org/whl"
SHOW_DRIVER = "nvidia-smi (its header's 'CUDA Version' is the newest CUDA the driver runs)"
SHOW_GPU = "nvidia-smi --query-gpu=name,compute_cap --format=csv"
FIND_OUT = "To find out: "  # a step that names the command showing a fact the plan lacks: it goes last


def _releases() -> list[tuple[str, list[str]]]:
    """(release, its CUDA variants) for every official torch release, oldest first ('2.2.x' as 2.2.0)."""
    return [
        (
            str(row["version"]).replace(".x", ".0"),
            [str(v) for v in row.get("variants") or [] if str(v).startswith("cu")],
        )
        for row in knowledge.table("torch")["release"]
    ]


def _pin(version: str) -> str:
    mm = versions.major_minor(version)
    return f"torch=={mm[0]}.{mm[1]}.*" if mm else "torch"


def newest_torch_with(variant: str) -> str | None:
    """The newest torch release with wheels for this variant ('2.7.0' for cu118)."""
    return next((version for version, variants in reversed(_releases()) if variant in variants), None)


def _fits(version: str, variant: str, driver_cuda: str | None, cc: versions.Version | None) -> bool:
    """Whether this wheel runs here: the driver (where known) runs its CUDA, its arch list (where the
    GPU is known) holds SASS for the GPU. PTX alone is not enough: a build whose CUDA predates the GPU
    has PTX for it at most, and its cuBLAS and cuDNN have no kernels for it."""
    if driver_cuda and not knowledge.driver_runs(driver_cuda, versions.cuda_from_variant(variant)):
        return False
    if cc is not None:
        hit = knowledge.torch_archs(version, variant)
        return hit is not None and knowledge.arch_support(cc, hit[0]) == "sass"
    return True


def newest_torch_for(driver_cuda: str | None, cc: versions.Version | None) -> tuple[str, str] | None:
    """(release, variant) of the newest PyTorch whose wheels this driver runs and whose architecture
    list holds this GPU: of that release, the newest CUDA variant no newer than the driver's CUDA, else one that
    minor-version compatibility runs (_by_driver); with the driver unknown, the oldest variant that holds the GPU
    (it asks least of the driver)."""
    for version, variants in reversed(_releases()):
        for variant in _by_driver(variants, driver_cuda):
            if _fits(version, variant, driver_cuda, cc):
                return version, variant
    return None


def _cuda_key(variant: str) -> versions.Version:
    return versions.parse(versions.cuda_from_variant(variant) or "") or ()


def _by_driver(variants: list[str], driver_cuda: str | None) -> list[str]:
    """Variants in the order to try them: with the driver known, the newest CUDA no newer than the driver's first
    (cu128 on a 12.8 driver), then those that need minor-version compatibility (cu129 there), newest first; with
    the driver unknown, the oldest CUDA first (it asks least of the driver)."""
    if not driver_cuda:
        return sorted(variants, key=_cuda_key)
    have = versions.major_minor(driver_cuda) or ()
    return sorted(variants, key=lambda v: (_cuda_key(v)[:2] <= have, _cuda_key(v)), reverse=True)


def same_release_variant(ctx: Context, unknown_ok: bool = False) -> tuple[str, str] | None:
    """The installed torch release in another CUDA variant that runs here (it changes the least): the
    newest CUDA no newer than the driver's, then one minor-version compatibility runs (_by_driver), or with the driver
    unknown the oldest that holds the GPU (`unknown_ok`:
    with the GPU unknown too, the oldest, which asks least of the driver: a CPU build to replace)."""
    installed = versions.parse(ctx.version or "")
    if installed is None or (ctx.cc is None and not ctx.driver_cuda and not unknown_ok):
        return None
    own = re.search(r"\+(cu\d+)", ctx.version or "")
    version = versions.fmt(installed[:3])
    # the CUDA the facts name for the build ('cudatoolkit=11.1' beside a conda install that resolved to the CPU
    # build) comes first where that release has it
    for release, variants in _releases():  # one row per minor release ('2.2.x', '1.10.0')
        if versions.major_minor(release) != installed[:2]:
            continue
        named = _nearest_variant(variants, ctx.cuda)
        for variant in sorted(_by_driver(variants, ctx.driver_cuda), key=lambda v: v != named):
            if (own is None or variant != own.group(1)) and _fits(version, variant, ctx.driver_cuda, ctx.cc):
                return version, variant
    return None


def _nearest_variant(variants: list[str], cuda: str | None) -> str | None:
    """The variant of the CUDA the facts name, else the newest of its major below it ('cudatoolkit=11.3' for a
    release built for 10.2 and 11.1: cu111, which a driver for 11.3 runs)."""
    want = versions.parse(cuda or "")
    if want is None:
        return None
    fits = [v for v in variants if (c := _cuda_key(v)) and c[0] == want[0] and c[:2] <= want[:2]]
    return max(fits, key=_cuda_key) if fits else None


def _install_line(version: str, variant: str, exact: bool = False) -> str:
    """The pip line for one official wheel: the index of its variant (releases before 1.13 through
    the torch_stable page with the local version, as pytorch.org's previous-versions page has them)."""
    v = versions.parse(version) or (0,)
    if v < (1, 13):
        return (
            f"pip install --force-reinstall 'torch=={version}+{variant}' -f {TORCH_INDEX}/torch_stable.html"
        )
    pin = f"torch=={version}" if exact else _pin(version)
    return f"pip install --force-reinstall '{pin}' --index-url {TORCH_INDEX}/{variant}"


def older_driver_alternative(chosen: tuple[str, str], ctx: Context) -> tuple[str, str] | None:
    """With the driver unknown: the newest wheel of an older CUDA major than the chosen one that holds
    the GPU (it asks less of the driver)."""
    major = (_cuda_key(chosen[1]) or (0,))[0]
    for version, variants in reversed(_releases()):
        for variant in sorted(variants, key=_cuda_key, reverse=True):
            if (_cuda_key(variant) or (0,))[0] < major and _fits(version, variant, ctx.driver_cuda, ctx.cc):
                return version, variant
    return None


def _torch_install(ctx: Context, why: str, unknown_ok: bool = False) -> list[str]:
    steps = []
    same = same_release_variant(ctx, unknown_ok)
    if same is not None:
        version, variant = same
        cuda = versions.cuda_from_variant(variant)
        held = f", which holds compute capability {versions.fmt(ctx.cc)}" if ctx.cc is not None else ""
        runs = (
            f" and your driver (CUDA {ctx.driver_cuda}) runs"
            if ctx.driver_cuda
            else f"; check that your driver runs CUDA {cuda}: {SHOW_DRIVER}"
            if ctx.cc is None
            else ""
        )
        steps.append(
            f"{_install_line(version, variant, exact=True)}  ({why}, changing the least: the PyTorch {version} "
            f"you have, in its CUDA {cuda} build{held}{runs})"
        )
    best = newest_torch_for(ctx.driver_cuda, ctx.cc)
    if best is None or best == same:
        return steps
    version, variant = best
    cuda = versions.cuda_from_variant(variant)
    step = f"{_install_line(version, variant)}  ({why}: PyTorch {versions.fmt(versions.major_minor(version))} is the newest release with a CUDA {cuda} build"
    if ctx.driver_cuda:
        step += f" that your driver (CUDA {ctx.driver_cuda}) runs"
    else:
        step += f"; check that your driver runs CUDA {cuda}: {SHOW_DRIVER}"
    if ctx.cc is not None:
        step += f" and that holds compute capability {versions.fmt(ctx.cc)}"
    steps.append(("Or " + step[0].lower() + step[1:] if steps else step) + ")")
    alt = None if ctx.driver_cuda else older_driver_alternative(best, ctx)
    if alt is not None:
        floor = knowledge.driver_floor(versions.cuda_from_variant(variant) or "", ctx.platform == "windows")
        below = f" (below {floor[0]})" if floor else ""
        steps.append(
            f"Or, if nvidia-smi shows a driver too old for CUDA {cuda}{below}: {_install_line(*alt)}  "
            f"(PyTorch {versions.fmt(versions.major_minor(alt[0]))}, the newest release with a CUDA "
            f"{versions.cuda_from_variant(alt[1])} build{' that holds this GPU' if ctx.cc is not None else ''})"
        )
    return steps


def _driver_upgrade(ctx: Context) -> list[str]:
    if ctx.driver_needed:
        return [
            f"Or upgrade the NVIDIA driver to {ctx.driver_needed} or newer (the CUDA {ctx.library_cuda or ctx.cuda} the log asks for)"
        ]
    # CuPy built from source and programs built with nvcc use the toolkit's runtime: its CUDA is the one
    cuda = ctx.cuda or (ctx.system_cuda if ctx.framework in ("cupy", None) else None)
    toolkit = f"; CUDA {cuda} is the toolkit installed" if cuda and not ctx.cuda else ""
    newest = newest_torch_for(None, ctx.cc) if not cuda and ctx.framework == "torch" else None
    if newest is not None:  # a torch of unknown build: the driver the newest release's CUDA build needs
        cuda = versions.cuda_from_variant(newest[1])
        toolkit = f"; PyTorch {versions.fmt(versions.major_minor(newest[0]))}'s CUDA {cuda} build needs it"
    if not cuda:
        return []
    floor = knowledge.driver_floor(cuda, ctx.platform == "windows")
    if floor is None:
        return []
    return [f"Or upgrade the NVIDIA driver to {floor[0]} or newer ({floor[1]}{toolkit})"]


def _release_line_for_driver(ctx: Context) -> list[str]:
    """A library built for one CUDA major per release line (CTranslate2 4 = CUDA 12, 3 = CUDA 11): the
    line whose CUDA the driver runs (cuda_wheels.toml [[release_line]])."""
    have = versions.parse(ctx.driver_cuda or "")
    lines = [  # the pip packages' own lines (a variant read from an archive's name has no pip name)
        r
        for r in knowledge.table("cuda_wheels")["release_line"]
        if r["framework"] == ctx.framework and not r.get("install")
    ]
    fits = [r for r in lines if have and int(r["cuda_major"]) <= have[0]]
    if not fits:
        return []
    row = max(fits, key=lambda r: int(r["cuda_major"]))
    steps = [
        f"pip install '{row['package']}{row['spec']}'  (its wheels load CUDA {row['cuda_major']}, which your driver "
        f"(CUDA {ctx.driver_cuda}) runs)"
    ]
    newest = max(lines, key=lambda r: int(r["cuda_major"]))
    floor = knowledge.driver_floor(f"{newest['cuda_major']}.0", ctx.platform == "windows")
    if newest is not row and floor:
        steps.append(
            f"Or upgrade the NVIDIA driver to {floor[0]} or newer to keep {newest['package']}{newest['spec']} "
            f"(CUDA {newest['cuda_major']})"
        )
    return steps


# The driver's PTX JIT refusing PTX from a newer toolkit (the framework's or a program's own kernels,
# compiled by the toolkit installed here)
PTX_TOO_NEW = re.compile(r"unsupported toolchain|UNSUPPORTED_PTX_VERSION|Unsupported \.version", re.I)


def _ptx_from_toolkit(ctx: Context) -> list[str]:
    """PTX the driver cannot JIT, beside a toolkit newer than the driver's CUDA: that toolkit compiled it
    (XLA, Numba, CuPy and Triton compile with the one installed), so the driver must reach its CUDA."""
    have = versions.major_minor(ctx.driver_cuda or "")
    if not PTX_TOO_NEW.search(ctx.root) or have is None:
        return []
    # the toolkit installed here compiled it (a JIT compiler's), else the program's own build shipped it
    makers = (
        (
            ctx.system_cuda,
            "toolkit installed here",
            f"or put a toolkit no newer than CUDA {ctx.driver_cuda} first on PATH",
        ),
        (
            ctx.cuda,
            "build the program ships",
            f"or install a build of the program made with CUDA {ctx.driver_cuda} or older",
        ),
    )
    for cuda, maker, other in makers:
        kit = versions.major_minor(cuda or "")
        if kit is None or kit <= have:
            continue
        need = knowledge.release_driver_floor(str(cuda), ctx.platform == "windows")
        if need is None:
            continue
        return [
            f"Upgrade the NVIDIA driver to {need} or newer (CUDA {kit[0]}.{kit[1]}'s own minimum; PTX JIT gets no "
            f"minor-version compatibility): the CUDA {cuda} {maker} compiled the PTX, and the driver's CUDA "
            f"{ctx.driver_cuda} JIT cannot read it; {other}"
        ]
    return []


# XLA's nvptx_compiler.cc: parallel compilation (PTX linked by the driver) only where the driver's CUDA is at
# least its ptxas's major.minor ('driver_version >= ptxas major * 1000 + minor * 10')
XLA_DRIVER_OLDER = re.compile(
    r"driver's CUDA version is (\d+\.\d+)\S* which is older than the PTX compiler version (\d+)\.(\d+)"
)


def _xla_ptxas_newer(ctx: Context) -> list[str]:
    m = XLA_DRIVER_OLDER.search(ctx.root)
    if m is None:
        return []
    ptxas = f"{m.group(2)}.{m.group(3)}"
    need = knowledge.release_driver_floor(ptxas, ctx.platform == "windows")
    upgrade = (
        f"to {need} or newer (a driver for CUDA {ptxas}" if need else f"to one for CUDA {ptxas} or newer ("
    )
    return [
        f"Upgrade the NVIDIA driver {upgrade}: XLA links its kernels in parallel only where the driver's CUDA "
        f"({m.group(1)} here) is at least its ptxas's, {ptxas}; nvidia-smi's 'CUDA Version' shows the driver's)",
        f"Or use a JAX/TensorFlow build, container image or nvidia-cuda-nvcc wheel whose ptxas is no newer than "
        f"CUDA {m.group(1)}",
    ]


# nvidia-container-cli refusing to start an image whose CUDA the host's driver does not reach: nothing
# installed inside the image helps (explainer/readers.py reads the CUDA it asks for)
CONTAINER_REFUSED = re.compile(r"nvidia-container-cli: requirement error", re.I)


def driver_too_old(ctx: Context) -> list[str]:
    ptx = _ptx_from_toolkit(ctx) or _xla_ptxas_newer(ctx)
    if ptx:
        return ptx
    if ctx.framework and ctx.framework not in FRAMEWORKS:
        return _release_line_for_driver(ctx) + _driver_upgrade(ctx)
    if ctx.image:  # the framework and its CUDA come with the image: the host's driver must run that CUDA
        steps = [s.replace("Or upgrade", "Upgrade", 1) + " on the host" for s in _driver_upgrade(ctx)]
        older = (
            f"Or run an older release of {ctx.image.removeprefix('the ')} whose CUDA your driver runs (its release "
            "notes name the CUDA and the driver each release needs; nvidia-smi on the host shows the driver)"
        )
        return [*steps, older]
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
        if row["platform"] == "linux" and knowledge.driver_runs(ctx.driver_cuda, str(row["cuda"])):
            mm = versions.major_minor(str(row["version"]))
            if mm is None:
                continue
            return [
                f"pip install 'tensorflow[and-cuda]=={mm[0]}.{mm[1]}.*'  (TensorFlow {mm[0]}.{mm[1]} was built with "
                f"CUDA {row['cuda']}, which your driver (CUDA {ctx.driver_cuda}) runs)"
            ]
    return []


MACOS_TORCH = (
    "On macOS PyTorch has no CUDA build: run on the Apple GPU through MPS (device='mps'; "
    "torch.backends.mps.is_available(), PyTorch 1.12+ on Apple silicon) or on the CPU; an NVIDIA GPU needs Linux or Windows"
)


def cpu_only_build(ctx: Context) -> list[str]:
    if ctx.platform == "darwin" and ctx.framework in ("torch", None):
        return [MACOS_TORCH]
    if ctx.framework == "torch":
        return _torch_conda(ctx) + _torch_install(ctx, "a CUDA build", unknown_ok=True)
    if ctx.framework == "tensorflow" and ctx.platform == "windows":
        return []  # the tf-windows-cpu-only finding carries the documented steps
    if ctx.framework == "tensorflow":
        return _tf_cuda_build(ctx)
    if ctx.framework == "jax":
        return _jax_cuda_wheels(ctx)
    return []


CONDA_PLAN = re.compile(r"::(?:pytorch|pyg|torchvision|torchaudio|pytorch-mutex)-\d", re.I)


def _torch_conda(ctx: Context) -> list[str]:
    """Where conda planned the CPU build (the log's root is conda's plan) or installed it (a conda build string
    stated): the same release's CUDA variant asked
    for in conda's terms, pytorch-cuda (1.13 to 2.5, channel nvidia) or cudatoolkit (before 1.13)."""
    conda = CONDA_PLAN.search(ctx.root) or ctx.installer == "conda"
    same = same_release_variant(ctx, unknown_ok=True) if conda else None
    if same is None:
        return []
    version, variant = same
    cuda = versions.cuda_from_variant(variant)
    v = versions.parse(version) or (0,)
    if v > (2, 5, 99):
        return []  # PyTorch's conda channel stops at 2.5
    pin = f"pytorch-cuda={cuda} -c pytorch -c nvidia" if v >= (1, 13) else f"cudatoolkit={cuda} -c pytorch"
    return [
        f"conda install pytorch={version} {pin}  (the CUDA variant asked for in the same command, so the solver "
        f"cannot pick the CPU build; conda remove cpuonly first where conda list shows it)"
    ]


def _tf_cuda_build(ctx: Context) -> list[str]:
    """TensorFlow's GPU build in place of a CPU-only one, the same release where it is known: from
    2.14 on with its CUDA and cuDNN as wheels ([and-cuda], tensorflow.toml [and_cuda]); before that the
    `tensorflow` package (`tensorflow-gpu` before 2.1) and the CUDA and cuDNN it was tested with."""
    drop = "pip uninstall -y tensorflow-cpu && " if "cpu" in (ctx.dist or "") else ""
    since = versions.major_minor(str(knowledge.table("tensorflow")["and_cuda"]["since"])) or (0, 0)
    mm = versions.major_minor(ctx.version or "")
    if mm is None:
        return [
            f"{drop}pip install 'tensorflow[and-cuda]'  (TensorFlow with its CUDA and cuDNN as wheels; Linux, WSL2)"
        ]
    pin = f"{mm[0]}.{mm[1]}.*"
    if mm >= since:
        return [
            f"{drop}pip install 'tensorflow[and-cuda]=={pin}'  (the same TensorFlow with its CUDA and cuDNN as wheels)"
        ]
    tf = knowledge.tf_build(str(ctx.version))
    package = "tensorflow-gpu" if mm < (2, 1) else "tensorflow"  # one package for CPU and GPU from 2.1 on
    needs = f": it loads CUDA {tf['cuda']} and cuDNN {tf['cudnn']}, installed apart" if tf else ""
    step = f"{drop}pip install '{package}=={pin}'  (TensorFlow {mm[0]}.{mm[1]}'s GPU build{needs})"
    return [step] + (
        _tf_conda_pair(str(ctx.version), tf, "was built and tested with", ctx.platform) if tf else []
    )


def _jax_cuda_wheels(ctx: Context) -> list[str]:
    """JAX's CUDA wheels in place of a CPU-only jaxlib (jax.toml [[install]]): with the driver known,
    the newest CUDA major it runs and the driver that reaches the next; unknown, the oldest CUDA major
    current JAX still ships (it asks least of the driver), the driver it needs and how to see it."""
    if ctx.platform == "windows":  # jax.toml [native_windows]: no CUDA wheels for native Windows
        return [
            "JAX publishes CUDA wheels for Linux only (docs.jax.dev, installation): on Windows, run JAX inside WSL2 "
            "and install its CUDA extra there as on Linux. A community jaxlib built with CUDA for native Windows "
            "is installed by its exact name and index (pip install jaxlib==<version>+cuda<NNN> -f <that index>): "
            "jax's extras do not pull it in"
        ]
    if ctx.driver_cuda:
        upgrade = jax_builds.upgrade_step(ctx.driver_cuda)
        return [jax_builds.install_step(ctx.driver_cuda)] + ([upgrade] if upgrade else [])
    current = jax_builds.current_installs()
    if not current:
        return [jax_builds.install_step(None)]
    low, newer = current[0], current[1:]
    step = (
        f"{low['step']}  (JAX's CUDA {low['cuda_major']} wheels need driver {low['min_driver']} or newer; "
        f"{SHOW_DRIVER})"
    )
    return [step] + [
        f"Or, with driver {r['min_driver']} or newer: {r['step']}  (CUDA {r['cuda_major']})" for r in newer
    ]


def cudnn_mismatch(ctx: Context) -> list[str]:
    cuda = ctx.cuda or ctx.system_cuda
    major = ctx.cudnn_wanted or _build_cudnn_major(ctx)
    if major is None:
        return []
    named = versions.major_minor(ctx.cudnn_compiled or "")
    if named and named[0] == major:  # the log names the build's cuDNN: that one, or a newer minor
        mm = versions.fmt(named)
        wheel = knowledge.cudnn_wheel(cuda, major) if cuda else None
        pip = f", or pip install {wheel.replace(f'=={major}.*', f'>={mm},<{major + 1}')}" if wheel else ""
        return [
            f"Install cuDNN {mm} or a newer {major}.x, the oldest the build accepts: conda install "
            f"-c conda-forge 'cudnn>={mm},<{major + 1}'{pip} (or NVIDIA's cuDNN archive for your CUDA), and put it "
            "before the older copy on the library path"
        ]
    tf = knowledge.tf_build(ctx.version or "") if ctx.framework == "tensorflow" and ctx.version else None
    steps = []
    if tf is not None:
        steps += _tf_conda_pair(str(ctx.version), tf, "was built and tested with", ctx.platform)
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


def _tf_conda_pair(version: str, tf: dict[str, object], what: str, platform: str | None = None) -> list[str]:
    """TensorFlow's tested CUDA and cuDNN as conda packages (conda-forge's cudatoolkit stops at CUDA 11);
    on native Windows an active environment's Library\\bin is on PATH already."""
    if (versions.parse(str(tf["cuda"])) or (0,))[0] >= 12:
        return []
    then = (
        "an activated environment puts them on PATH"
        if platform == "windows"
        else "then put $CONDA_PREFIX/lib on LD_LIBRARY_PATH"
    )
    return [
        f"conda install -c conda-forge cudatoolkit={tf['cuda']} cudnn={tf['cudnn']}  (TensorFlow {version} {what} "
        f"CUDA {tf['cuda']} and cuDNN {tf['cudnn']}; {then})"
    ]


def _build_cudnn_major(ctx: Context) -> int | None:
    if ctx.framework == "tensorflow" and ctx.version:
        tf = knowledge.tf_build(ctx.version)
        v = versions.parse(str(tf["cudnn"])) if tf else None
        return v[0] if v else None
    own = versions.parse(ctx.cudnn_compiled or "")  # the build names its cuDNN (jaxlib +cuda11.cudnn86)
    return own[0] if own else None


TOO_OLD = re.compile(
    r"current version is|Unsupported \.version|does not support|too old|newer than|older than", re.I
)
PTXAS_OLDER = re.compile(r"\bptxas ([\d.]+\d),? which is older than (\d+\.\d+)")


# torch.utils.cpp_extension and the extensions that copy it: no CUDA_HOME, and no nvcc where it looked
CUDA_HOME_UNSET = re.compile(
    r"CUDA_HOME environment variable is not set|CUDA_HOME does not exist|please set the CUDA_HOME", re.I
)


def cuda_home(ctx: Context) -> list[str]:
    """CUDA_HOME unset: the root of the toolkit the facts show (found here, or stated), else how to get one."""
    if not CUDA_HOME_UNSET.search(ctx.root):
        return []
    rerun = "then run the build again from that shell (pip install --no-build-isolation keeps the variable)"
    if ctx.toolkit_root:
        return [
            f"export CUDA_HOME={ctx.toolkit_root}  (the CUDA {ctx.system_cuda} toolkit found here: its bin/ holds nvcc); {rerun}"
        ]
    if ctx.system_cuda:
        v = ctx.system_cuda
        if ctx.platform == "windows":
            where = knowledge.toolkit_root(v, windows=True)
            return [
                f"set CUDA_HOME={where}  (the root of the CUDA {v} you installed: its bin\\ holds nvcc.exe); {rerun}"
            ]
        return [
            f"export CUDA_HOME={knowledge.toolkit_root(v)}  (the root of the CUDA {v} you installed: the directory whose bin/ "
            f"holds nvcc; ls -d /usr/local/cuda* lists them); {rerun}"
        ]
    build = (
        f"CUDA {ctx.cuda}"
        if ctx.cuda
        else "the CUDA your framework was built with (python -c 'import torch; print(torch.version.cuda)')"
    )
    return [
        f"Install a CUDA toolkit with nvcc of {build} and point CUDA_HOME at its root: export CUDA_HOME=/usr/local/cuda-X.Y; "
        "in a conda env, conda install -c nvidia cuda-nvcc cuda-toolkit of that version and export CUDA_HOME=$CONDA_PREFIX"
    ]


# nvlink given a cubin of a newer CUDA than its own toolkit: 'Input file ... newer than toolkit (118 vs 114)'
NEWER_THAN_TOOLKIT = re.compile(r"newer than toolkit \((\d{1,2})(\d) vs ?(\d{1,2})(\d)\)")


def _nvlink_older(ctx: Context) -> list[str]:
    m = NEWER_THAN_TOOLKIT.search(ctx.root)
    if m is None:
        return []
    made, tool = f"{m.group(1)}.{m.group(2)}", f"{m.group(3)}.{m.group(4)}"
    if ctx.platform == "windows":
        root = knowledge.toolkit_root(made, windows=True)
        first = f"add {root}\\bin before CUDA {tool}'s in PATH and open a new terminal"
    else:
        root = knowledge.toolkit_root(made)
        first = f"export PATH={root}/bin:$PATH (XLA: XLA_FLAGS=--xla_gpu_cuda_data_dir={root})"
    return [
        f"Link with CUDA {made}'s tools: the code was compiled by CUDA {made} and the nvlink found is CUDA {tool}'s; "
        f"install the CUDA {made} toolkit and put it first: {first}, or take the CUDA {tool} toolkit off PATH"
    ]


# CMake's Visual Studio generator finding the CUDA toolkit but not its MSBuild integration
NO_CUDA_TOOLSET = re.compile(r"No CUDA toolset found", re.I)


def _vs_integration(ctx: Context) -> list[str]:
    """CUDA's Visual Studio integration (CUDA X.Y.props/.targets) missing from the Visual Studio that CMake
    generates for: installed CUDA before Visual Studio, or Build Tools the installer did not see."""
    if not NO_CUDA_TOOLSET.search(ctx.root):
        return []
    cuda = ctx.system_cuda  # a toolkit installed (the build's own CUDA may not be)
    # its folder, else where CUDA's installer points CUDA_PATH
    where = knowledge.toolkit_root(cuda, windows=True) if cuda else "%CUDA_PATH%"
    named = f"CUDA {versions.fmt(versions.major_minor(cuda) or ())}" if cuda else "the CUDA toolkit"
    return [
        f"Give Visual Studio {named}'s build customizations: copy every file of {where}\\extras\\visual_studio_integration"
        "\\MSBuildExtensions into <Visual Studio or Build Tools>\\MSBuild\\Microsoft\\VC\\v170\\BuildCustomizations (v160 for "
        "Visual Studio 2019) "
        f"(or rerun {named}'s installer after Visual Studio with its Visual Studio Integration component), then build "
        "again in a new terminal"
    ]


def toolchain_not_found(ctx: Context) -> list[str]:
    if CUDA_HOME_UNSET.search(ctx.root):
        return cuda_home(ctx)
    special = _nvlink_older(ctx) or _vs_integration(ctx)
    if special:
        return special
    cuda = ctx.cuda or (ctx.system_cuda if ctx.framework in ("tensorflow", "jax") else None)
    if cuda is None:
        return []
    major = (versions.parse(cuda) or (0,))[0]
    if TOO_OLD.search(ctx.root):  # the log says the ptxas it found is too old: the build's own one was
        newest = knowledge.nvcc_wheel(str(major))
        said = PTXAS_OLDER.search(ctx.root)
        why = (
            f"a ptxas of CUDA {said.group(2)} or newer: the log says ptxas {said.group(1)} is older than that"
            if said
            else f"the newest ptxas of CUDA {major}: the one found is older than the code it compiles"
        )
        return [f"pip install -U {newest}  ({why})"] if newest else []
    wheel = knowledge.nvcc_wheel(cuda)
    if wheel:
        return [f"pip install {wheel}  (ptxas and nvcc of CUDA {cuda}, the CUDA your build was made with)"]
    row = knowledge.table("tensorflow")["conda_nvcc"]
    if (
        ctx.framework == "tensorflow"
        and ctx.platform != "windows"
        and ctx.version
        and versions.satisfies(ctx.version, f">={row['min']}")
        and versions.satisfies(ctx.version, f"<={row['max']}")
    ):  # TensorFlow's own guide for these releases
        return [
            f"{row['step']}  (TensorFlow {ctx.version}'s install guide: its XLA finds ptxas and libdevice there)"
        ]
    # on native Windows the toolkit's own folder; XLA's flag is Linux's (no XLA GPU on native Windows)
    if ctx.platform == "windows":
        root = knowledge.toolkit_root(cuda, windows=True)
        return [
            f"Put the CUDA {cuda} toolkit's bin folder (it holds ptxas.exe) first on PATH: add {root}\\bin to PATH and "
            f"open a new terminal (install that toolkit if it is missing; NVIDIA ships no ptxas wheel for CUDA {cuda})"
        ]
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
        steps += _torch_install(
            ctx, f"a build for compute capability {versions.fmt(ctx.cc)} (sm_{ctx.cc[0]}{ctx.cc[1]})"
        )
    if ctx.framework == "tensorflow":
        steps += _tf_for_gpu(ctx)
    span = knowledge.cuda_span_for_cc(versions.fmt(ctx.cc))
    if span and ctx.framework == "cupy":
        steps += _cupy_for(span[0], ctx)
    if span and ctx.framework == "jax":
        steps += _jax_for(span[0], ctx)
    if span and ctx.framework in (None, "torch"):
        steps.append(
            f"For your own CUDA extensions: rebuild with a CUDA {span[0]} or newer toolkit and "
            f"TORCH_CUDA_ARCH_LIST={versions.fmt(ctx.cc)}"
        )
    index = knowledge.paddle_index_for(span[0]) if span and ctx.framework == "paddle" else None
    if index:  # Paddle's 3.x wheels come from one index per CUDA
        steps.append(
            f"Install Paddle's wheel for CUDA {index['cuda']}, which builds sm_{ctx.cc[0]}{ctx.cc[1]}: "
            + knowledge.paddle_install(None, str(index["cuda"]))
        )
    elif span and ctx.framework and ctx.framework not in FRAMEWORKS:
        steps.append(_library_for_gpu(ctx.framework, ctx.cc, span))
    return steps


def _library_for_gpu(library: str, cc: versions.Version, span: tuple[str, str]) -> str:
    """A library with CUDA code of its own (onnxruntime, CTranslate2, llama.cpp, ...): a build that holds this
    GPU's architecture, which only a CUDA of `span` can compile."""
    sm = f"{cc[0]}{cc[1]}"
    cudas = (
        f"CUDA {span[0]} or newer"
        if span[1] == knowledge.newest_toolkit()
        else f"CUDA {span[0]} to {span[1]}"
    )
    return (
        f"Install a build of {library} whose CUDA code includes sm_{sm} (compute capability {versions.fmt(cc)}; only "
        f"{cudas} can compile it) or PTX of an older architecture, as its release notes list them; or build it from "
        f"source with CMAKE_CUDA_ARCHITECTURES={sm}"
    )


def _tf_for_gpu(ctx: Context) -> list[str]:
    """The newest TensorFlow whose CUDA builds for this GPU (and that the driver runs); for TF1 code,
    NVIDIA's 1.15 build where the GPU is newer than CUDA 10 (tensorflow.toml)."""
    if ctx.cc is None:
        return []
    table = knowledge.table("tensorflow")
    have = versions.major_minor(ctx.version or "")
    floor = versions.cc_tuple((knowledge.every_release_floor("tensorflow") or {}).get("min_cc"))
    fits = []
    for row in table["build"]:  # newest first
        rng = knowledge.toolkit_cc_range(str(row["cuda"]))
        covers = rng is not None and (rng[0] <= ctx.cc <= rng[1] or ctx.cc[0] == rng[1][0])
        if row.get("archs"):  # the release's own GPU builds, where known, not only what its CUDA could build
            covers = covers and knowledge.arch_support(ctx.cc, list(row["archs"])) in ("sass", "ptx")
        covers = covers and (floor is None or ctx.cc >= floor)
        mm = versions.major_minor(str(row["version"]))
        if row["platform"] != "linux" or not covers or mm is None or (have and mm <= have):
            continue
        if ctx.driver_cuda and not knowledge.driver_runs(ctx.driver_cuda, str(row["cuda"])):
            continue
        fits.append((mm, row))
    # the least change first (the oldest release after yours that builds for this GPU), then the newest
    chosen = [fits[-1], fits[0]] if have and len(fits) > 1 else fits[:1]
    steps = []
    for i, (mm, row) in enumerate(chosen):
        extra = "[and-cuda]" if mm >= (2, 14) else ""
        runs = (
            f", which your driver (CUDA {ctx.driver_cuda}) runs"
            if ctx.driver_cuda
            else f"; check that your driver runs it: {SHOW_DRIVER}"
        )
        what = (
            "the oldest release after yours whose CUDA"
            if i == 0 and len(chosen) > 1
            else "the newest release; its CUDA"
        )
        install = f"pip install 'tensorflow{extra}=={versions.fmt(mm)}.*'"
        if (
            ctx.image and "tensorflow/tensorflow" in ctx.image
        ):  # the image brings TF and its CUDA: change image
            install = f"run the tensorflow/tensorflow:{versions.fmt(mm)}.0-gpu image in place of {ctx.image.removeprefix('the ')}"
        steps.append(
            (f"Or {install}" if i else install.replace("run the", "Run the", 1))
            + f"  (TensorFlow {versions.fmt(mm)}, {what} "
            f"({row['cuda']}) builds for compute capability {versions.fmt(ctx.cc)}{runs})"
        )
    if have and have < (2, 0) and ctx.cc >= (8, 0):
        steps.append("Or, to keep TensorFlow 1 code: " + str(table["tf1_new_gpus"]["step"]))
    return steps


def _jax_for(cuda_min: str, ctx: Context) -> list[str]:
    """The JAX install of the oldest CUDA major that builds for this GPU and that the driver runs
    (jax.toml [[install]]): its jaxlib and the ptxas it compiles with must both be that new."""
    low = versions.parse(cuda_min) or (0,)
    rows = [
        r
        for r in knowledge.table("jax")["install"]
        if r["cuda_major"] >= low[0]
        and (not ctx.driver_cuda or knowledge.driver_runs(ctx.driver_cuda, f"{r['cuda_major']}.0"))
    ]
    if not rows:
        return []
    row = min(rows, key=lambda r: int(r["cuda_major"]))
    runs = "" if ctx.driver_cuda else f"; check that your driver runs CUDA {row['cuda_major']}: {SHOW_DRIVER}"
    return [
        f"{row['step']}  (compute capability {versions.fmt(ctx.cc)} needs a jaxlib, and a ptxas, of CUDA {cuda_min} or "
        f"newer{runs})"
    ]


def _cupy_steps() -> dict[int, str]:
    """CUDA major -> the unpinned install of the CuPy package that brings that CUDA's libraries as wheels
    (cuda_wheels.toml [[framework_libs]])."""
    return {
        int(r["cuda_major"]): str(r["step"]).replace("=={version}", "")
        for r in knowledge.table("cuda_wheels")["framework_libs"]
        if r["framework"] == "cupy"
    }


def _cupy_for(cuda_min: str, ctx: Context) -> list[str]:
    """The CuPy package of the oldest CUDA major that can build for this GPU (and that the driver runs),
    with the CUDA libraries as wheels (cuda_wheels.toml [[framework_libs]])."""
    low = versions.parse(cuda_min) or (0,)
    have = knowledge.toolkit_cc_range(ctx.cuda) if ctx.cuda and ctx.cc else None
    if have and ctx.cc and have[0] <= ctx.cc <= have[1]:
        return []  # the CuPy installed compiles for this GPU already: another package is no fix
    majors = [
        major
        for major in _cupy_steps()
        if major >= low[0] and (not ctx.driver_cuda or knowledge.driver_runs(ctx.driver_cuda, f"{major}.0"))
    ]
    if not majors:
        return []
    step = _cupy_steps()[min(majors)]
    return [
        f"{step}; compute capability {versions.fmt(ctx.cc)} needs CUDA {cuda_min} or newer, so a toolkit of "
        f"your own (CUDA_PATH, conda cudatoolkit) must be {cuda_min}+ too. Uninstall the other CuPy package "
        "first (pip list | grep -i cupy)"
    ]


def _library_wheel(ctx: Context) -> list[str]:
    """NVIDIA's wheel of the library the log could not load, and where its files land."""
    if not ctx.library_wheel:
        return []
    folder = re.sub(r"^nvidia-|-cu\d+$", "", ctx.library_wheel).replace("-", "_")
    return [
        f"pip install {ctx.library_wheel}  (the {ctx.soname} the program loads, as NVIDIA's wheel; a program that "
        f"does not look there itself needs its folder on the library path: site-packages/nvidia/{folder}/lib)"
    ]


def _cupy_installed(cuda: str | None) -> str | None:
    """The CuPy wheel of a build's CUDA; '11.0' is how a package name's bare major reads (cupy-cuda11x
    says 11), and that wheel is far more common than cupy-cuda110."""
    have = versions.parse(cuda or "")
    if have and have[0] >= 11 and (len(have) < 2 or have[1] == 0):
        return knowledge.cupy_package(str(have[0]))
    return knowledge.cupy_package(cuda)


def _cupy_libs(ctx: Context) -> list[str]:
    """CuPy wheels are made per CUDA major: the package of the toolkit this machine has, or the one that
    brings its CUDA libraries as wheels."""
    have = (versions.parse(ctx.system_cuda or "") or (None,))[0]
    own = ctx.cuda_major
    package = knowledge.cupy_package(ctx.system_cuda)
    if have and own and have != own and package:
        installed = ctx.dist if (ctx.dist or "").startswith("cupy-cuda") else _cupy_installed(ctx.cuda)
        uninstall = f"pip uninstall -y {installed} && " if installed else ""
        return [
            f"{uninstall}pip install {package}  (CuPy wheels are made per CUDA release: "
            f"{installed or 'the CuPy installed'} loads CUDA {ctx.cuda if (own or 0) < 11 else own} libraries, and this machine's toolkit is "
            f"CUDA {ctx.system_cuda}, which {package} is built for)"
        ]
    step = _cupy_steps().get(own or 0)
    return [step] if step else []


def _toolkit_of_old_cuda(ctx: Context) -> list[str]:
    """A build of CUDA 10.2 or older loads the libraries of that exact CUDA (libcublas.so.8.0,
    cudart64_100.dll: the log's soname or its own words name it), which no NVIDIA pip wheel holds: that
    toolkit from NVIDIA's archive, its libraries on the loader's path (PATH on native Windows)."""
    have = versions.parse(ctx.library_cuda or "")
    if have is None or len(have) < 2:
        have = versions.parse(ctx.cuda or "")
    if have is None or len(have) < 2 or have[0] >= 11:
        return []
    cuda = versions.fmt(have[:2])
    named = f" (it holds the {ctx.soname} the program asks for)" if ctx.soname else ""
    where = (
        f"put its bin folder ({knowledge.toolkit_root(cuda, windows=True)}\\bin) on PATH and open a new terminal"
        if ctx.platform == "windows"
        else f"put its lib64 folder on the library path: export LD_LIBRARY_PATH={knowledge.toolkit_root(cuda)}/lib64:$LD_LIBRARY_PATH"
    )
    return [
        f"Install CUDA {cuda}, the CUDA this build loads{named}: NVIDIA's CUDA Toolkit archive "
        f"(https://developer.nvidia.com/cuda-toolkit-archive) has it (no pip wheel does); {where}"
    ]


def _cuda_the_soname_names(ctx: Context, tested: str) -> list[str]:
    """The log's soname ships only with CUDA releases the build's tested CUDA is not among (a nightly built
    before its release, a build from source): the log is right about its own build. The newest of those
    releases of the tested CUDA's major (else the newest), whose libraries go where the loader looks."""
    lo, _, hi = (ctx.library_range or "").partition("-")
    low, high, want = versions.major_minor(lo), versions.major_minor(hi), versions.major_minor(tested)
    if low is None or high is None or want is None or low <= want <= high:
        return []
    # the newest release of the tested CUDA's major that ships it; where the range goes on into the next major,
    # its first release (the newest of this major is not in the range's two ends); else the newest of all
    cuda = versions.fmt(high if high[0] == want[0] else low if low[0] == want[0] else high)
    where = (
        f"put its bin folder ({knowledge.toolkit_root(cuda, windows=True)}\\bin) on PATH and open a new terminal"
        if ctx.platform == "windows"
        else f"put its lib64 folder on the library path: export LD_LIBRARY_PATH={knowledge.toolkit_root(cuda)}/lib64:$LD_LIBRARY_PATH"
    )
    return [
        f"Install CUDA {cuda}: the build asks for {ctx.soname}, which CUDA {lo} to {hi} ship (not the CUDA {tested} "
        f"this TensorFlow release was tested with: the log names its own build); {where}"
    ]


def cuda_libs_missing(ctx: Context) -> list[str]:
    """TensorFlow loads the CUDA libraries of the CUDA it was built with: install that CUDA (its tested
    pair, as conda packages), or move to the oldest release built for the CUDA major you have. CuPy: the
    package of the CUDA major there. Others: NVIDIA's wheel of the library the log names."""
    old = older_cuda_found(ctx) or _toolkit_of_old_cuda(ctx)
    if ctx.framework == "cupy":
        return _cupy_libs(ctx) + old + _library_wheel(ctx)
    if ctx.framework != "tensorflow" or not ctx.version:
        return old + (_library_wheel(ctx) if ctx.framework not in ("torch", "jax") else [])
    tf = knowledge.tf_build(ctx.version)
    if tf is None:
        return old
    named = _cuda_the_soname_names(ctx, str(tf["cuda"]))
    if named:
        return named
    steps = _tf_conda_pair(ctx.version, tf, "loads the libraries of", ctx.platform)
    if ctx.platform == "windows":  # its self-check names the CUDA's DLLs, which the toolkit installs
        steps = old + steps
    have, system = versions.major_minor(ctx.version), versions.major_minor(ctx.system_cuda or "")
    if have and system and system != versions.major_minor(str(tf["cuda"])):
        later = [
            r
            for r in reversed(knowledge.table("tensorflow")["build"])  # oldest first
            if r["platform"] == "linux"
            and (versions.major_minor(str(r["version"])) or (0, 0)) > have
            and (versions.parse(str(r["cuda"])) or (0,))[0] == system[0]
            and (system[0] >= 11 or versions.major_minor(str(r["cuda"])) == system)
        ]
        if later:
            mm = versions.major_minor(str(later[0]["version"]))
            steps.append(
                f"Or pip install 'tensorflow=={versions.fmt(mm)}.*'  (TensorFlow {versions.fmt(mm)}, the oldest release "
                f"built for CUDA {system[0]}.x ({later[0]['cuda']}), loads the libraries of the CUDA {ctx.system_cuda} you have)"
            )
    return steps


def broken_install(ctx: Context) -> list[str]:
    """A framework copy with files missing: where it comes from when that is PYTHONPATH (the
    environment's own copy may be whole), then the same build again: PyTorch's variant (+cpu, +cu121)
    from its own index, which PyPI does not have."""
    name = ctx.framework
    if not name:
        return []
    steps = []
    via = ctx.pythonpath_copy
    if via:
        steps.append(
            f"Take {via} out of PYTHONPATH (unset PYTHONPATH if nothing else needs it): the environment's own "
            f"{name} is imported again"
        )
    package = {"tensorflow": "tensorflow", "jax": "jaxlib", "cupy": ctx.dist or "cupy"}.get(name, name)
    release, _, variant = (ctx.version or "").partition("+")
    own = _cupy_installed(ctx.cuda) if name == "cupy" and not ctx.dist else None
    if own:  # PyPI's 'cupy' is the source package: the wheel is the one of the build's CUDA
        line = f"pip install --force-reinstall --no-deps {own}  (conda: conda install --force-reinstall -c conda-forge cupy)"
    elif name == "cupy" and not ctx.dist:
        line = (
            "pip install --force-reinstall --no-deps cupy-cuda12x  (or the cupy-cuda11x / cupy-cuda13x wheel you had: "
            "pip list | grep -i cupy names it; conda: conda install --force-reinstall -c conda-forge cupy)"
        )
    elif name == "torch" and release and re.fullmatch(r"cpu|cu\d{2,3}|rocm[\d.]+", variant):
        line = _install_line(release, variant, exact=True).replace(
            "--force-reinstall", "--force-reinstall --no-deps"
        )
    elif release:
        line = f"pip install --force-reinstall --no-deps '{package}=={release}'"
    else:
        line = f"pip install --force-reinstall --no-deps {package}"
    steps.append(
        line + (f" (to repair the copy on PYTHONPATH itself instead: add --target {via})" if via else "")
    )
    return steps


def older_cuda_found(ctx: Context) -> list[str]:
    """The CUDA the program found is older than the one its build needs: that CUDA or newer, first where it looks."""
    if not ctx.cuda_needed or not ctx.cuda_found:
        return []
    major = (versions.parse(ctx.cuda_needed) or (0,))[0]
    mine = (
        f"pip install -U 'jax[cuda{major}]'  (NVIDIA's CUDA {major} wheels, {ctx.cuda_needed} or newer, which JAX "
        f"loads before a system CUDA); or "
        if ctx.framework == "jax"
        else ""
    )
    return [
        f"{mine}install CUDA {ctx.cuda_needed} or newer and put its lib64 first on LD_LIBRARY_PATH: the build needs CUDA "
        f"{ctx.cuda_needed} and found {ctx.cuda_found} (echo $LD_LIBRARY_PATH; ldconfig -p | grep libcudart show "
        f"where the CUDA {ctx.cuda_found} copy comes from; remove it from the path)"
    ]


def older_library_loaded(ctx: Context) -> list[str]:
    """A symbol of CUDA X.Y's library missing from the copy loaded: NVIDIA's wheel at X.Y or newer, and the
    older copy off the loader's path."""
    if not ctx.symbol_cuda or not ctx.library_wheel or not ctx.soname:
        return older_cuda_found(ctx)
    return [
        f"pip install -U '{ctx.library_wheel}>={ctx.symbol_cuda}'  (what calls {ctx.soname} needs its CUDA "
        f"{ctx.symbol_cuda} release or newer; an older copy was loaded first: ldconfig -p | grep "
        f"{ctx.soname.split('.so')[0]} and echo $LD_LIBRARY_PATH show where from, and a system CUDA's lib64 there "
        "goes before the pip wheel's)"
    ]


def requirements_unmet(ctx: Context) -> list[str]:
    """JAX's packages at one release: its CUDA extra pinned to the installed jax pulls jaxlib, the CUDA
    plugin and the PJRT of that release together (jax.toml [[install]] names the extra of each CUDA major)."""
    if ctx.symbol_cuda:
        return older_library_loaded(ctx)
    if ctx.framework != "jax" or not versions.parse(ctx.version or ""):
        return []
    major = ctx.cuda_major or 12
    row = next((r for r in jax_builds.current_installs() if int(r["cuda_major"]) == major), None)
    extra = jax_builds.extra(row) if row else None
    if extra is None:
        return []
    version = (ctx.version or "").split("+")[0]
    return [
        f"pip install -U '{extra}=={version}'  (jax, jaxlib, the CUDA {major} plugin and its PJRT at jax's own "
        f"release {version}: pip list | grep -E 'jax|pjrt' shows the four, whose versions must agree)"
    ]


def gpu_oom(ctx: Context) -> list[str]:
    """TensorFlow 1.x grows its GPU memory through the session's config (tf.config's memory growth is the 2.x
    API): a TF 1.x log gets that form first."""
    version = versions.parse(ctx.version or "")
    if ctx.framework != "tensorflow" or version is None or version[0] != 1:
        return []
    return [
        "TensorFlow 1.x: let the session grow its memory instead of reserving the whole GPU: config = "
        "tf.ConfigProto(); config.gpu_options.allow_growth = True; sess = tf.Session(config=config) (Keras: "
        "tf.keras.backend.set_session(tf.Session(config=config))); or cap it with "
        "config.gpu_options.per_process_gpu_memory_fraction = 0.5"
    ]


def binary_incompatible(ctx: Context) -> list[str]:
    """A module lacking a symbol in a framework's C++ namespace was built against another release of it: rebuild it
    the way that framework says (status_codes.toml [[namespace]] rebuild), for the framework the log comes from."""
    if ctx.symbol_namespace is None or ctx.framework not in (ctx.symbol_namespace, None):
        return []
    row = next(
        (r for r in knowledge.table("status_codes").get("namespace", []) if r["id"] == ctx.symbol_namespace),
        None,
    )
    if row is None or not row.get("rebuild"):
        return []
    module = f"the module {ctx.module}" if ctx.module else "the extension that fails to load"
    return [str(row["rebuild"]).format(module=module)]


def no_gpu_visible(ctx: Context) -> list[str]:
    """In a container, the start that passes the GPUs in, for the runtime it is (knowledge/container_gpus.toml):
    one started without them has no GPU and no driver library inside."""
    step = knowledge.container_gpus_step(ctx.container)
    return [step] if step else []


BY_CAUSE: dict[str, Callable[[Context], list[str]]] = {
    "no-gpu-visible": no_gpu_visible,
    "binary-incompatible": binary_incompatible,
    "gpu-oom": gpu_oom,
    "cuda-libs-missing": cuda_libs_missing,
    "driver-too-old": driver_too_old,
    "cpu-only-build": cpu_only_build,
    "cudnn-mismatch": cudnn_mismatch,
    "toolchain-not-found": toolchain_not_found,
    "arch-unsupported": arch_unsupported,
    "broken-install": broken_install,
    "requirements-unmet": requirements_unmet,
    "multiple-toolkits": older_library_loaded,
    "env-path-misconfig": lambda ctx: cuda_home(ctx) or older_library_loaded(ctx),
}


def for_cause(cause: str, ctx: Context) -> list[str]:
    rule = BY_CAUSE.get(cause)
    jetson = _jetson_torch(ctx) if cause in ("cuda-libs-missing", "cpu-only-build", "cudnn-mismatch") else []
    return jetson + (rule(ctx) if rule else [])


def _jetson_torch(ctx: Context) -> list[str]:
    """On a Jetson, torch's CUDA libraries come with JetPack: the wheel NVIDIA builds for that JetPack, never a
    desktop CUDA or PyTorch's own CUDA wheels."""
    if ctx.jetpack is None or ctx.framework not in ("torch", None):
        return []
    which = ctx.jetpack or "your JetPack (cat /etc/nv_tegra_release, or dpkg -l nvidia-jetpack, shows it)"
    return [
        f"Install the PyTorch wheel NVIDIA builds for {which}: its CUDA and cuDNN come with JetPack and are not "
        "swapped; NVIDIA's PyTorch for Jetson wheels (https://forums.developer.nvidia.com/t/pytorch-for-jetson/72048) "
        "or, from JetPack 6, the Jetson AI Lab's pip index"
    ]
