"""Knowledge tables (TOML data shipped with the package) and the lookups over them.

Adding a row never needs code; `validate()` (run by the tests) keeps the tables honest.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from typing import Any

from cudoctor import versions

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

HERE = os.path.dirname(__file__)

# Library names: the CUDA libraries frameworks load, and the OpenMP runtimes they link to.
CUDA_LIB = re.compile(
    r"^lib(cudart|cublas|cublasLt|cudnn\w*|nccl|nvJitLink|cufft|cusparse|cusolver|curand|nvrtc|cupti)\.so"
)
RUNTIME_LIB = re.compile(r"^lib(gomp|iomp5|omp)\.so")


@functools.cache
def table(name: str) -> dict[str, Any]:
    """knowledge/<name>.toml, parsed (`name` may name a file in a folder: "signatures/gpu-oom").

    Parsing TOML costs about 90 ms for all the tables, reading the same data as JSON 4 ms: the parsed
    table is kept in the user's cache folder, under the file's size and modification time, and read
    from there while the file is unchanged (CUDOCTOR_NO_CACHE=1: never)."""
    path = os.path.join(HERE, f"{name}.toml")
    cached = _cache_file(name, path)
    if cached:
        try:
            with open(cached, encoding="utf-8") as fh:
                data: dict[str, Any] = json.load(fh)
            return data
        except (OSError, ValueError):
            pass
    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    if cached:
        _keep(cached, data)
    return data


def cache_dir(*parts: str) -> str | None:
    """cudoctor's folder in the user's cache ($XDG_CACHE_HOME, %LOCALAPPDATA% on Windows, else
    ~/.cache), with `parts` joined under it; None when CUDOCTOR_NO_CACHE is set. Nothing is created:
    whoever writes there makes the folder, and treats any failure as "no cache"."""
    if os.environ.get("CUDOCTOR_NO_CACHE"):
        return None
    base = (
        os.environ.get("XDG_CACHE_HOME")
        or (os.environ.get("LOCALAPPDATA") if sys.platform == "win32" else None)
        or os.path.join(os.path.expanduser("~"), ".cache")
    )
    return os.path.join(base, "cudoctor", *parts)


def _cache_file(name: str, path: str) -> str | None:
    """Where the parsed copy of one table lives: named by the table, its size and mtime, and the
    cudoctor version (so an upgrade or an edit never reads a stale copy)."""
    folder = cache_dir("knowledge")
    if folder is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    from cudoctor import __version__

    key = f"{name.replace('/', '+')}.{st.st_size}.{st.st_mtime_ns}.{__version__}.json"
    return os.path.join(folder, key)


def _keep(cached: str, data: dict[str, Any]) -> None:
    """Write the parsed table atomically (a partial file is never read); older copies of the same
    table are removed. Any failure (read-only home, full disk, a value JSON cannot hold) only means
    the next run parses the TOML again."""
    folder, file = os.path.split(cached)
    try:
        text = json.dumps(data)
        if json.loads(text) != data:  # a TOML date or time would come back as something else
            return
        os.makedirs(folder, exist_ok=True)
        tmp = f"{cached}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, cached)
        table_name = file.split(".", 1)[0]
        for other in os.listdir(folder):
            if other.split(".", 1)[0] == table_name and other != file and not other.endswith(".tmp"):
                os.remove(os.path.join(folder, other))
    except (OSError, TypeError, ValueError):
        return


def folder(name: str) -> tuple[str, ...]:
    """The tables in knowledge/<name>/, as names for `table`, in alphabetical order of file name (the
    order their rows are read in)."""
    return tuple(
        f"{name}/{file.removesuffix('.toml')}"
        for file in sorted(os.listdir(os.path.join(HERE, name)))
        if file.endswith(".toml")
    )


@functools.cache
def causes() -> dict[str, dict[str, Any]]:
    """causes.toml, each general step's table fields filled (knowledge/cause_fields.py)."""
    from cudoctor.knowledge import cause_fields

    values = cause_fields.values()
    return {
        cid: {**row, "fix": [cause_fields.fill(s, values) for s in row.get("fix") or []]}
        for cid, row in table("causes").items()
    }


def cause(cause_id: str) -> dict[str, Any]:
    return causes()[cause_id]


@functools.lru_cache(maxsize=512)
def gpu_cc(name: str) -> tuple[str, str] | None:
    """('8.6', 'GeForce RTX 30 series') for a GPU name written any usual way, else None."""
    text = name.lower().replace("-", " ").replace("_", " ")
    for row in table("gpus")["gpu"]:
        if re.search(row["match"], text):
            return row["cc"], row["name"]
    return None


def every_release_floor(framework: str) -> dict[str, Any] | None:
    """The lowest compute capability any official GPU build of a framework had ([every_release] of its table)."""
    return dict(table(framework)["every_release"]) if framework in ("tensorflow", "jax", "torch") else None


def driver_row(cuda: str) -> dict[str, Any] | None:
    mm = versions.major_minor(cuda)
    if mm is None:
        return None
    for row in table("cuda_driver")["cuda"]:
        if versions.major_minor(row["version"]) == mm:
            return dict(row)
    return None


def _floor_of(row: dict[str, Any], windows: bool) -> str:
    """A table row's driver floor: Windows' where asked and the row has one ('N/A': none), else Linux's."""
    win = str(row.get("windows_min") or "")
    return win if windows and versions.parse(win) else str(row["linux_min"])


def release_driver_floor(cuda: str, windows: bool = False) -> str | None:
    """The lowest driver of CUDA release `cuda` itself (release notes table 3), without minor-version
    compatibility: what PTX from that release's compilers needs, which the driver JIT-compiles."""
    row = driver_row(cuda)
    return _floor_of(row, windows) if row else None


def minor_compat_floor(cuda_major: int, windows: bool = False) -> str | None:
    for row in table("cuda_driver")["minor_compat"]:
        if row["cuda_major"] == cuda_major:
            return _floor_of(row, windows)
    return None


def driver_floor(cuda: str, windows: bool = False) -> tuple[str, str] | None:
    """Lowest driver that runs code built with `cuda`, and the rule that says so: Linux's, or on native
    Windows its own numbering where the table has it (release notes table 3, the minor-compatibility floors)."""
    mm = versions.major_minor(cuda)
    if mm is None:
        return None
    row = driver_row(cuda)
    written_minor = len(versions.parse(cuda) or ()) >= 2  # 'CUDA 11' is the major's floor, '11.0' its own
    own = _floor_of(row, windows) if row and written_minor else None
    if mm[0] >= 11:
        floor = minor_compat_floor(mm[0], windows)
        # the release's own driver runs it even where that is below the major's compatibility floor (11.0)
        own_v, floor_v = versions.parse(own or ""), versions.parse(floor or "")
        if floor and not (own_v and floor_v and own_v < floor_v):
            return floor, f"CUDA {mm[0]}.x minor-version compatibility needs driver >= {floor}"
    if row:
        need = _floor_of(row, windows)
        return need, f"CUDA {cuda} needs driver >= {need} (release notes table 3)"
    return None


def driver_runs(driver_cuda: str, cuda: str | None) -> bool:
    """Whether a driver that supports `driver_cuda` runs code built with `cuda`: an older or equal
    CUDA, or, from CUDA 11 on, any minor of the driver's own major (minor-version compatibility)."""
    have, want = versions.major_minor(driver_cuda), versions.major_minor(cuda or "")
    if have is None or want is None:
        return True
    return want <= have or (want[0] == have[0] and have[0] >= 11)


def toolkit_root(cuda: str, windows: bool = False) -> str:
    """Where NVIDIA's installer puts CUDA X.Y: /usr/local/cuda-X.Y, or on Windows
    C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\vX.Y."""
    mm = ".".join(cuda.split(".")[:2])
    return (
        f"C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v{mm}"
        if windows
        else f"/usr/local/cuda-{mm}"
    )


def max_cuda_for_driver(driver: str, windows: bool = False) -> str | None:
    """Newest CUDA minor whose own table row the driver satisfies (a native Windows driver by Windows'
    numbering: 527.41 is CUDA 12.0 there, 11.8 on Linux's scale)."""
    dv = versions.parse(driver)
    if dv is None:
        return None
    best = None
    for row in table("cuda_driver")["cuda"]:
        low = versions.parse(_floor_of(row, windows))
        if low and versions.at_least(dv, low):
            best = row["version"]
    return best


def toolkit_cc_range(cuda: str) -> tuple[versions.Version, versions.Version] | None:
    v = versions.major_minor(cuda)
    if v is None:
        return None
    for row in table("toolkit_archs")["toolkit"]:
        lo, hi = versions.major_minor(row["cuda_min"]), versions.major_minor(row["cuda_max"])
        if lo and hi and lo <= v <= hi:
            return versions.cc_tuple(row["min_cc"]) or (0, 0), versions.cc_tuple(row["max_cc"]) or (0, 0)
    return None


def library_without_forward_compat(cuda: str, cc: versions.Version) -> dict[str, Any] | None:
    """A CUDA library of this toolkit that fails on this GPU although the GPU's major is one the toolkit builds
    (cuFFT before CUDA 11.8 on compute capability 8.9): toolkit_archs.toml [[no_forward_compat]]."""
    v, rng = versions.major_minor(cuda) if "." in cuda else None, toolkit_cc_range(cuda)
    if (
        v is None or rng is None or rng[1][0] != cc[0]
    ):  # a toolkit that builds the GPU's major, its minor stated
        return None
    for row in table("toolkit_archs").get("no_forward_compat", []):
        below = versions.major_minor(row["cuda_below"])
        if below and v < below and versions.cc_tuple(row["cc"]) == cc:
            return dict(row)
    return None


def host_gcc_max(cuda: str) -> tuple[int, dict[str, Any]] | None:
    """The newest GCC major this CUDA release's nvcc accepts as its host compiler, and its row
    (toolkit_archs.toml [[host_gcc]]); None where the release is not in the table."""
    v = versions.major_minor(cuda)
    for row in table("toolkit_archs").get("host_gcc", []):
        lo, hi = versions.major_minor(row["cuda_min"]), versions.major_minor(row["cuda_max"])
        if v and lo and hi and lo <= v <= hi:
            return int(row["gcc_max"]), dict(row)
    return None


def host_gcc_toolkit(gcc_major: int) -> str | None:
    """The first CUDA release whose nvcc accepts this GCC major, or None: also where older releases than the
    table's first (11.7, the first with an nvcc wheel to read) may accept it too."""
    table_rows = table("toolkit_archs").get("host_gcc", [])
    if not table_rows or gcc_major <= int(table_rows[0]["gcc_max"]):
        return None
    rows = [r for r in table_rows if int(r["gcc_max"]) >= gcc_major]
    return str(rows[0]["cuda_min"]) if rows else None


def newest_toolkit() -> str:
    """The newest CUDA toolkit toolkit_archs.toml knows."""
    return str(table("toolkit_archs")["toolkit"][-1]["cuda_max"])


def cuda_span_for_cc(cc: str) -> tuple[str, str] | None:
    """The oldest and newest CUDA toolkit that can build for compute capability `cc`."""
    want = versions.cc_tuple(cc)
    rows = [
        r
        for r in table("toolkit_archs")["toolkit"]
        if want
        and (versions.cc_tuple(r["min_cc"]) or (0,)) <= want <= (versions.cc_tuple(r["max_cc"]) or (0,))
    ]
    return (rows[0]["cuda_min"], rows[-1]["cuda_max"]) if rows else None


def nvcc_wheel(cuda: str) -> str | None:
    """The pip requirement of NVIDIA's compiler wheel for CUDA '12.4' (that minor) or '12' (the newest
    of that major); None where no wheel exists (before 11.7), so a step names a toolkit instead."""
    want = versions.parse(cuda)
    for row in table("cuda_wheels")["nvcc_wheel"]:
        if not want or want[0] != row["cuda_major"]:
            continue
        if len(want) == 1:
            return str(row["package"])
        if want[:2] < (versions.major_minor(row["first"]) or (0,)):
            return None
        return f"'{row['package']}=={want[0]}.{want[1]}.*'"
    return None


def cupy_package(cuda: str | None) -> str | None:
    """CuPy's wheel for a CUDA release ('10.0' -> cupy-cuda100, '11.8' -> cupy-cuda11x, '12' ->
    cupy-cuda12x); None where the release names no minor that tells them apart, or CuPy has none."""
    want = versions.parse(cuda or "")
    if not want:
        return None
    for row in table("cuda_wheels")["cupy_package"]:
        first, last = versions.parse(row["first"]) or (0,), versions.parse(row["last"]) or (0,)
        if len(last) == 1 and want[0] == last[0] and (len(want) == 1 or want[:2] >= first[:2]):
            return str(row["package"])
        if len(want) >= 2 and first[:2] <= want[:2] <= last[:2]:
            return str(row["package"])
    return None


def cudnn_wheel(cuda: str | None, cudnn_major: int) -> str | None:
    """The cuDNN wheel requirement for a build of this CUDA that loads libcudnn.so.<cudnn_major>
    ('nvidia-cudnn-cu12==9.*'); None where NVIDIA ships none (cuDNN 7, CUDA 10)."""
    want = versions.parse(cuda or "")
    for row in table("cuda_wheels")["cudnn_wheel"]:
        if want and want[0] == row["cuda_major"] and cudnn_major in row["cudnn_majors"]:
            return f"'{row['package']}=={cudnn_major}.*'"
    return None


def framework_libs_step(framework: str, version: str, cuda: str | None) -> str | None:
    """The install that brings all of this framework build's CUDA libraries as wheels
    (cuda_wheels.toml [[framework_libs]]); None where that release has none."""
    have, major = versions.parse(version.split("+")[0]), versions.parse(cuda or "")
    for row in table("cuda_wheels")["framework_libs"]:
        if row["framework"] != framework or not have:
            continue
        if "cuda_major" in row and (not major or major[0] != row["cuda_major"]):
            continue
        since, before = versions.parse(row["since"]) or (0,), versions.parse(row.get("before"))
        if have < since or (before and have >= before):
            continue
        variant = torch_variant(version, None)  # from a +cuXYZ tag only
        index = f" --index-url https://download.pytorch.org/whl/{variant}" if variant else ""
        return str(row["step"]).format(
            version=version.split("+")[0],
            local_version=version,
            torch_index=index,
            major=major[0] if major else "",
        )
    return None


def xid(code: str | int) -> dict[str, Any] | None:
    """What an NVIDIA Xid code means (xid.toml); None for a code the table does not know."""
    return next((r for r in table("xid")["xid"] if str(r["code"]) == str(code)), None)


def env_setting(variable: str) -> dict[str, Any] | None:
    """How a framework reads this environment variable (env_settings.toml)."""
    return next((r for r in table("env_settings")["setting"] if r["variable"] == variable), None)


def env_variables() -> set[str]:
    """Every environment variable the env_settings tables say how to read."""
    tables = table("env_settings")
    return {
        row["variable"] for key in ("setting", "left_on", "interface", "checked_read") for row in tables[key]
    }


def env_flag(variable: str, value: str | None) -> bool | None:
    """What a framework makes of a boolean variable's value, as it compares it: True, False, or
    None when it is unset or ignored ('True' for TF_FORCE_GPU_ALLOW_GROWTH)."""
    row = env_setting(variable)
    return None if row is None or not value else flag_reading(row, value)


def flag_reading(row: dict[str, Any], value: str) -> bool | None:
    """What the framework of an env_settings row of kind bool makes of a value: True, False, or
    None when it ignores it."""
    if row["kind"] != "bool" or not value:
        return None
    if value in row["true_values"]:
        return True
    if value in row["false_values"]:
        return False
    return {"true": True, "false": False}.get(row["other"])


def torch_variant(version: str, cuda: str | None) -> str | None:
    """'2.5.1+cu124' -> 'cu124'; '1.4.0' with cuda '10.1' -> 'cu101'."""
    m = re.search(r"\+(cu\d+)", version)
    if m:
        return m.group(1)
    mm = versions.major_minor(cuda)
    return f"cu{mm[0]}{mm[1]}" if mm else None


def torchvision_pair(
    torch_version: str | None = None, torchvision: str | None = None
) -> dict[str, str] | None:
    """The torch.toml [[torchvision]] row of a torch release (major.minor) or of a torchvision release."""
    for row in table("torch").get("torchvision", []):
        if torch_version and versions.major_minor(torch_version) == versions.major_minor(row["torch"]):
            return dict(row)
        if torchvision and versions.major_minor(torchvision) == versions.major_minor(row["torchvision"]):
            return dict(row)
    return None


def torch_archs(version: str, variant: str) -> tuple[list[str], dict[str, Any]] | None:
    """Arch list ('8.6', '9.0+PTX') of the official wheel for a torch version and variant."""
    v = versions.parse(version)
    if v is None:
        return None
    for row in table("torch")["arch_list"]:
        if row["variant"] == variant and versions.in_range(v, row["torch_min"], row["torch_max"]):
            return list(row["archs"]), row
    return None


def torch_variant_archs(variant: str) -> tuple[list[str], list[dict[str, Any]]] | None:
    """Every architecture some official wheel of this variant carries ('cu128': the union over its
    releases), for a torch whose release nobody stated: a GPU none of them covers is covered by no
    release of that variant."""
    releases = table("torch")["release"]
    having = [r["version"] for r in releases if variant in r["variants"]]
    if not having or having[0] == releases[0]["version"]:
        return None  # the variant may have releases older than the table: their lists are unknown
    rows = [row for row in table("torch")["arch_list"] if row["variant"] == variant]
    covered = (
        any(versions.in_range(versions.parse(v) or (), r["torch_min"], r["torch_max"]) for r in rows)
        for v in having
    )
    if not rows or not all(covered):
        return None  # a release of the variant without a list: what it holds is unknown
    union: list[str] = []
    for row in rows:
        union += [a for a in row["archs"] if a not in union]
    return sorted(union, key=lambda a: versions.parse(a.split("+")[0]) or ()), rows


def torch_variant_exists(variant: str) -> bool:
    """Whether any official torch release shipped wheels for this CUDA variant ('cu128')."""
    return any(variant in row["variants"] for row in table("torch")["release"])


def torch_variant_for_driver(driver_cuda: str) -> str | None:
    """The CUDA variant of the newest torch release that runs on a driver supporting `driver_cuda`:
    one no newer than it (of its major first), else, from CUDA 11 on, the oldest of its major, which
    runs through minor-version compatibility (cu126 on a 12.2 driver)."""
    dv = versions.major_minor(driver_cuda)
    if dv is None:
        return None
    for row in reversed(table("torch")["release"]):
        cudas: list[tuple[versions.Version, str]] = sorted(
            (cv, str(v))
            for v in row["variants"]
            if (cv := versions.major_minor(versions.cuda_from_variant(v)))
        )
        fits = [v for cv, v in cudas if cv <= dv]
        own_major = [v for cv, v in cudas if cv[0] == dv[0] and dv[0] >= 11]
        if own_major and not fits:
            return own_major[0]
        if fits:
            return next((v for cv, v in reversed(cudas) if cv <= dv and cv[0] == dv[0]), fits[-1])
    return None


def torch_default_variant(version: str) -> str | None:
    """The CUDA variant `pip install torch==version` gave: the PyPI default, else the newest cuXXX."""
    mm = versions.major_minor(version)
    for row in table("torch")["release"]:
        if versions.major_minor(row["version"]) != mm:
            continue
        if re.fullmatch(r"cu\d+", str(row.get("pypi_default", ""))):
            return str(row["pypi_default"])
        cuda = [v for v in row["variants"] if re.fullmatch(r"cu\d+", v)]
        return max(cuda, key=lambda v: versions.parse(versions.cuda_from_variant(v)) or ()) if cuda else None
    return None


def torch_pin(package: str, version: str) -> str | None:
    """The torch release a release of a package compiled against torch pins exactly (torch_pins.toml: vllm 0.4.3 ->
    2.3.0), else None."""
    package, version = package.lower(), version.lower()
    for row in table("torch_pins")["pin"]:
        if row["package"] == package and row["version"] == version:
            return str(row["torch"])
    return None


def ngc_release(tag: str) -> dict[str, Any] | None:
    """ngc.toml's row of an NGC container release ('19.02'), else None."""
    return next((dict(r) for r in table("ngc")["release"] if r["tag"] == tag), None)


def cuda_image_flavour(name: str) -> dict[str, Any] | None:
    """cuda_images.toml's row of an nvidia/cuda image flavour ('base', 'runtime', 'devel'), else None."""
    return next((dict(r) for r in table("cuda_images")["flavour"] if r["name"] == name), None)


def gpu_floor(package: str, version: str) -> dict[str, Any] | None:
    """gpu_floors.toml's row of a library release ('flash-attn', '2.6.0'; '?' where no version was stated: the
    newest line), else None."""
    rows = [dict(r) for r in table("gpu_floors")["library"] if r["package"] == package]
    if version == "?":
        return rows[0] if rows else None
    return next((r for r in rows if versions.satisfies(version, str(r["spec"]))), None)


def container_gpus_step(kind: str | None) -> str | None:
    """container_gpus.toml's start that passes the GPUs into a container of this kind ('singularity'), else None."""
    return next((str(r["step"]) for r in table("container_gpus")["runtime"] if r["kind"] == kind), None)


def paddle_build(release: str, cuda: str | None) -> dict[str, Any] | None:
    """paddle.toml's row of a paddlepaddle-gpu release's wheel for CUDA `cuda` ('11.7'), or of its untagged PyPI
    wheel where `cuda` is None; None where the table has no such wheel."""
    for row in table("paddle")["build"]:
        if not versions.satisfies(release, row["releases"]):
            continue
        if (cuda is None and row.get("default")) or (
            cuda is not None and versions.major_minor(cuda) == versions.major_minor(str(row["cuda"]))
        ):
            return dict(row)
    return None


def paddle_install(release: str | None, cuda: str) -> str:
    """The command that installs Paddle's wheel for CUDA `cuda`: a 3.x index from paddle.toml, else the 2.x
    release's tagged wheel (2.5.2.post117) from Paddle's wheel page."""
    index = next((r for r in table("paddle")["index"] if r["cuda"] == cuda), None)
    if index is not None:
        return f"python -m pip install paddlepaddle-gpu=={index['release']} -i {index['url']}"
    base = re.match(r"\d+\.\d+\.\d+", release or "")
    tag = "post" + cuda.replace(".", "")
    pin = f"=={base.group(0)}.{tag}" if base else f" (the release's .{tag} wheel)"
    return (
        f"python -m pip install paddlepaddle-gpu{pin} -f https://www.paddlepaddle.org.cn/whl/linux/mkl/avx/stable.html"
        " (on Windows: .../whl/windows/mkl/avx/stable.html)"
    )


def paddle_index_for(cuda_min: str) -> dict[str, Any] | None:
    """The oldest-CUDA 3.x index of Paddle's wheels whose CUDA is `cuda_min` or newer (paddle.toml [[index]])."""
    rows = [
        r
        for r in table("paddle")["index"]
        if (versions.parse(r["cuda"]) or ()) >= (versions.parse(cuda_min) or ())
    ]
    return min(rows, key=lambda r: versions.parse(r["cuda"]) or (), default=None)


def paddle_newest_sass(cuda: str) -> str | None:
    """The newest architecture a Paddle release build of this CUDA compiles (SASS only), or None."""
    row = next((r for r in table("paddle")["archs"] if versions.satisfies(cuda, r["cuda"])), None)
    return str(row["newest_sass"]) if row else None


def ollama_release(version: str) -> dict[str, Any] | None:
    """ollama.toml's row of an ollama release ('0.1.20'), else None."""
    v = versions.parse(version)
    for row in table("ollama")["release"]:
        first, last = versions.parse(row["first"]), versions.parse(row["last"])
        if v and first and last and first <= v <= last:
            return dict(row)
    return None


def ollama_archs(archs: str) -> list[str]:
    """An ollama runner's CMAKE_CUDA_ARCHITECTURES ('61;86-virtual;90a') as arch_support reads them
    (sm_61, compute_86, sm_90a)."""
    out = []
    for entry in archs.split(";"):
        code = entry.strip().removesuffix("-virtual")
        if re.fullmatch(r"\d{2,3}a?", code):
            out.append(("compute_" if entry.strip().endswith("-virtual") else "sm_") + code)
    return out


@functools.cache
def _applications() -> list[tuple[re.Pattern[str], str]]:
    return [
        (re.compile(row["match"], re.I), str(row["framework"]))
        for row in table("applications")["application"]
    ]


def application_framework(text: str) -> str | None:
    """The framework an application named in `text` is built on (applications.toml), else None."""
    return next((name for rx, name in _applications() if rx.search(text)), None)


def tf_build(version: str, platform: str = "linux") -> dict[str, Any] | None:
    """The tested build row for a TensorFlow version (same major.minor)."""
    mm = versions.major_minor(version)
    for row in table("tensorflow")["build"]:
        if row["platform"] == platform and versions.major_minor(row["version"]) == mm:
            return dict(row)
    return None


def arch_support(cc: versions.Version, archs: list[str]) -> str:
    """How a GPU of compute capability `cc` can run a build: 'sass', 'ptx' (JIT) or 'none'.

    `archs` holds 'sm_86' / 'compute_90' / 'sm_90a' entries or '8.6' / '9.0+PTX' ones.
    SASS runs on the same major with an equal or higher minor (arch-specific 'a' only on the
    exact CC); PTX JIT-compiles for any newer GPU, except arch-specific PTX (compute_90a), which
    runs only on its own CC too.
    """
    best = "none"
    for entry in archs:
        text = entry.strip().lower()
        ptx = text.startswith("compute_") or text.endswith("+ptx")
        exact = bool(re.search(r"\d[a]$", text.replace("+ptx", "")))
        target = versions.cc_tuple(text.replace("+ptx", ""))
        if target is None:
            continue
        sass_fits = (exact and target == cc) or (not exact and target[0] == cc[0] and target[1] <= cc[1])
        if not ptx and sass_fits:
            return "sass"
        if text.endswith("+ptx") and sass_fits:
            return "sass"  # '9.0+PTX': SASS for 9.0 and PTX for newer GPUs
        if ptx and (target == cc if exact else target <= cc):
            best = "ptx"
    return best


BLAS_TYPE = re.compile(r"^(?:cblas_)?[sdczh](\w+)$", re.I)


def blas_argument(routine: str, number: int) -> str | None:
    """The name of argument `number` (counted from 1, as BLAS errors count) of a BLAS routine
    written as its error names it ('DGEMM', 'cblas_sgemm'), or None for a routine not in the table."""
    m = BLAS_TYPE.match(routine.strip())
    if m is None:
        return None
    args = next(
        (r["fortran"] for r in table("blas_args")["routine"] if r["kind"] == m.group(1).lower()), None
    )
    if args is None:
        return None
    args = ["layout", *args] if routine.lower().startswith("cblas_") else args
    return str(args[number - 1]) if 1 <= number <= len(args) else None


def validate() -> list[str]:
    """Problems in the tables: missing sources, unparsable versions, unknown cause ids."""
    problems: list[str] = []
    for name, key in (
        ("cuda_driver", "cuda"),
        ("tensorflow", "build"),
        ("torch", "arch_list"),
        ("gpus", "gpu"),
        ("toolkit_archs", "toolkit"),
        ("numpy_abi", "module"),
        ("libstdcxx", "release"),
        ("cuinit", "code"),
        ("xid", "xid"),
        ("jit_caches", "cache"),
        ("driver_libs", "library"),
        ("log_facts", "fact"),
        ("cuda_wheels", "nvcc_wheel"),
        ("cuda_wheels", "framework_libs"),
        ("cuda_wheels", "cudnn_wheel"),
        ("cuda_wheels", "release_line"),
        ("cuda_wheels", "cupy_package"),
        ("status_codes", "namespace"),
        ("cpus", "no_avx"),
        ("env_settings", "setting"),
        ("env_settings", "left_on"),
        ("env_settings", "interface"),
        ("env_settings", "checked_read"),
        ("env_settings", "xla_flag_renamed"),
        ("blas_args", "routine"),
        ("torch_alloc_conf", "variable"),
        ("torch_alloc_conf", "key"),
        ("jax", "wheel"),
        ("jax", "archs"),
        ("jax", "install"),
        ("jax", "cudnn_tag"),
        ("jax", "minor_tag_cudnn"),
        ("applications", "application"),
        ("stated_packages", "package"),
        ("torch_pins", "pin"),
        ("ngc", "release"),
        ("container_gpus", "runtime"),
        ("gpu_floors", "library"),
        ("cuda_images", "flavour"),
        ("paddle", "build"),
        ("paddle", "archs"),
        ("paddle", "index"),
    ):
        for i, row in enumerate(table(name)[key]):
            if not row.get("source"):
                problems.append(f"{name}.toml [[{key}]] #{i}: no source")
    if not table("tensorflow")["native_windows"].get("source"):
        problems.append("tensorflow.toml [native_windows]: no source")
    problems += _cause_field_problems()
    for row in table("cuda_driver")["cuda"]:
        if versions.parse(row["linux_min"]) is None:
            problems.append(
                f"cuda_driver.toml: {row['version']}: linux_min {row['linux_min']!r} does not parse"
            )
    for row in table("driver_libs")["library"]:
        if "min_driver" in row and versions.parse(row["min_driver"]) is None:
            problems.append(
                f"driver_libs.toml: {row['soname']}: min_driver {row['min_driver']!r} does not parse"
            )
    for row in table("gpus")["gpu"]:
        if versions.cc_tuple(row["cc"]) is None:
            problems.append(f"gpus.toml: {row['name']}: cc {row['cc']!r} does not parse")
        try:
            re.compile(row["match"])
        except re.error as exc:
            problems.append(f"gpus.toml: {row['name']}: bad pattern: {exc}")
    for row in table("numpy_abi")["module"]:
        if versions.parse(row["numpy2_from"]) is None:
            problems.append(f"numpy_abi.toml: {row['package']}: numpy2_from does not parse")
    for row in table("cuinit")["code"]:
        if row["cause"] not in causes() or not row.get("title"):
            problems.append(f"cuinit.toml: code {row.get('code')}: unknown cause, or no title")
    problems += _env_settings_problems()
    problems += [
        f"xid.toml: code {row.get('code')}: unknown cause, or no meaning or fix"
        for row in table("xid")["xid"]
        if not set(row.get("causes", {"?": 0})) <= set(causes())
        or not row.get("meaning")
        or not row.get("fix")
    ]
    problems += _alloc_conf_problems()
    for cid, body in causes().items():
        for field in ("title", "why", "fix", "references"):
            if not body.get(field):
                problems.append(f"causes.toml [{cid}]: no {field}")
    return problems


def _cause_field_problems() -> list[str]:
    """A `{name}` in a cause's step that no table fills, or a field the tables cannot fill."""
    from cudoctor.knowledge import cause_fields

    problems = [
        f"causes.toml [{cid}]: unknown field {{{name}}} in a step"
        for cid, row in table("causes").items()
        for step in row.get("fix") or []
        for name in cause_fields.unknown(step)
    ]
    for name, compute in cause_fields.FIELDS.items():
        try:
            compute()
        except (LookupError, ValueError, TypeError) as exc:
            problems.append(f"causes.toml field {{{name}}}: the tables cannot fill it: {exc}")
    return problems


def _env_settings_problems() -> list[str]:
    kinds = {
        "bool": ("true_values", "false_values", "other", "meant", "meant_words"),
        "fraction": ("low", "high", "effect_range"),
        "int": (),
        "exclusive": ("with",),
        "choice": ("values",),
        "platforms": ("gpu_values",),
    }
    problems = [
        f"env_settings.toml: {row.get('variable')}: parse must be bool or int64, builds any or cuda"
        for row in table("env_settings")["checked_read"]
        if row.get("parse") not in ("bool", "int64")
        or row.get("builds") not in ("any", "cuda")
        or not row.get("reads")
    ]
    if not table("env_settings")["cublas_workspace"].get("source"):
        problems.append("env_settings.toml [cublas_workspace]: no source")
    for key, field in (("setting", "since"), ("left_on", "any_value_until")):
        problems += [
            f"env_settings.toml: {row['variable']}: {field} {row[field]!r} does not parse"
            for row in table("env_settings")[key]
            if field in row and versions.parse(row[field]) is None
        ]
    problems += [
        f"env_settings.toml: {row['variable']}: any_value_until without any_value_note"
        for row in table("env_settings")["left_on"]
        if "any_value_until" in row and not row.get("any_value_note")
    ]
    for row in table("env_settings")["setting"]:
        wanted = (*kinds.get(row.get("kind", ""), ("kind",)), "cause", "effect", "fix")
        missing = [f for f in wanted if f not in row]
        if missing or row["cause"] not in causes():
            problems.append(
                f"env_settings.toml: {row.get('variable')}: unknown cause, or no {', '.join(missing)}"
            )
    return problems


def _alloc_conf_problems() -> list[str]:
    """torch_alloc_conf.toml: releases that parse, `until` after `since`, a known value kind with
    its bounds, no key twice."""
    kinds = {"int": (), "fraction": ("low", "high"), "bool": (), "choice": ("values",), "any": ()}
    problems, seen = [], set()
    for row in table("torch_alloc_conf")["key"]:
        name = row.get("name", "?")
        since, until = versions.parse(row.get("since")), versions.parse(row.get("until"))
        if since is None or ("until" in row and (until is None or not versions.cmp(until, since) > 0)):
            problems.append(f"torch_alloc_conf.toml: {name}: since/until do not parse or are out of order")
        missing = [f for f in kinds.get(row.get("value", ""), ("value",)) if f not in row]
        if missing or name in seen or not row.get("means"):
            problems.append(f"torch_alloc_conf.toml: {name}: duplicate, no means, or no {', '.join(missing)}")
        seen.add(name)
    return problems
