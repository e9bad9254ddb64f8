"""Rules for a CUDA library the log names, read against the facts and the lines beside the root error:
a toolkit in the facts that ships the very file the loader could not find (cudart64_110.dll in every
CUDA 11.x, libcublas.so.12 in every 12.x) means the file is on the machine and the loader's path does
not lead to it; a line that compares the version a program was built with and the one it found says
what the root error's status code does not."""

from __future__ import annotations

import re
from typing import Any

from cudoctor import knowledge, versions
from cudoctor.checks import view
from cudoctor.explainer import readers
from cudoctor.explainer.ranked import RankedCause, bump
from cudoctor.explainer.scan import ScanResult
from cudoctor.model import Snapshot

CAUSE = "env-path-misconfig"
# the libraries whose file name carries the CUDA release it comes from: from CUDA 11 on the major alone
# (libcudart.so.11.0 and cudart64_110.dll in every 11.x, libcublas.so.12 in every 12.x), before it the
# exact minor (libcudart.so.10.1 only in 10.1)
BY_RELEASE = ("cudart", "cublas", "cublaslt")
ON_PATH = 0.35  # beside 'could not be loaded' (cuda-libs-missing 0.9): a strong second, the thread decides
# ... on native Windows the stronger reading: Python 3.8+ loads an extension's DLLs from the system folders
# and os.add_dll_directory only, no longer from PATH, so a toolkit that ships the DLL is usually just not
# where the loader looks
ON_PATH_WINDOWS = 0.7


def ships(toolkit: str, wanted: str) -> bool:
    """Whether a CUDA `toolkit` release ships the file of release `wanted` ('11.0', '12', '10.1')."""
    have, want = versions.parse(toolkit), versions.parse(wanted)
    if not have or not want:
        return False
    if want[0] >= 11:
        return have[0] == want[0] and (len(want) < 2 or want[1] == 0 or have[:2] == want[:2])
    return len(want) >= 2 and have[:2] == want[:2]


def toolkit_holds_it_rule(
    ranked: dict[str, RankedCause], read: dict[str, str], snap: Snapshot, line: int
) -> None:
    """The root line could not load a library a toolkit in the facts ships: its directory is off the path."""
    wanted, soname = read.get("cuda_wanted"), read.get("soname")
    if read.get("library") not in BY_RELEASE or not wanted or not soname or CAUSE not in ranked:
        return
    kit = next(
        (t for t in snap.value("cuda.toolkits") or [] if ships(str(t.get("version") or ""), wanted)), None
    )
    if kit is None:
        return
    windows = view.platform(snap) == "windows" or soname.endswith(".dll")
    bump(
        ranked,
        CAUSE,
        ON_PATH_WINDOWS if windows else ON_PATH,
        f"fact: the CUDA {kit['version']} toolkit {_where(kit)}ships {soname}; the loader did not look where it is",
        _fix(kit, soname, windows),
    )


OUTSIDE = 0.8  # NVIDIA's packages put the file elsewhere: installed, off the path, is the likelier reading


DRIVER_BELOW = 1.2  # the driver cannot run the library's CUDA even once it is found: that comes first


def driver_below_it_rule(ranked: dict[str, RankedCause], read: dict[str, str], snap: Snapshot) -> None:
    """The root line asks for a library of CUDA X (libcublas.so.10.0) and the facts' driver runs no CUDA X
    (a 384 driver tops out at CUDA 9.0): finding the file would not be enough, the driver is too old for it."""
    wanted, soname = read.get("cuda_wanted"), read.get("soname")
    driver_cuda = snap.value("driver.cuda_version")
    if read.get("library") not in BY_RELEASE or not wanted or not driver_cuda:
        return
    if knowledge.driver_runs(str(driver_cuda), wanted):
        return
    floor = knowledge.driver_floor(wanted, view.platform(snap) == "windows")
    bump(
        ranked,
        "driver-too-old",
        DRIVER_BELOW,
        f"fact: the driver runs CUDA {driver_cuda} at most, and {soname} is CUDA {wanted}'s"
        + (f" ({floor[1]})" if floor else ""),
    )


def outside_toolkit_rule(ranked: dict[str, RankedCause], read: dict[str, str], snap: Snapshot) -> None:
    """The root line could not load a library that the CUDA release in the facts installs outside its own
    lib64 (CUDA 10.1's libcublas.so.10 in /usr/lib/x86_64-linux-gnu or /usr/local/cuda-10.2/lib64): the
    library table's `outside_toolkit` rows."""
    soname = read.get("soname") or ""
    if not soname or (CAUSE not in ranked and "cuda-libs-missing" not in ranked):
        return
    releases = {
        str(t.get("version") or "") for t in snap.value("cuda.toolkits") or []
    }  # installed, not built for
    for row in knowledge.table("status_codes")["library"]:
        for place in row.get("outside_toolkit", []):
            if soname != place["soname"] or not any(  # libcublas.so.10.0 is CUDA 10.0's, not this one
                versions.major_minor(r) == versions.major_minor(place["cuda"]) for r in releases if r
            ):
                continue
            dirs = " or ".join(place["dirs"])
            bump(
                ranked,
                CAUSE,
                OUTSIDE,
                f"fact: CUDA {place['cuda']}'s packages install {place['soname']} outside the toolkit's lib64 ({dirs})",
                f"Find {place['soname']} where CUDA {place['cuda']}'s packages put it: ls {' '.join(d + '/' + place['soname'] + '*' for d in place['dirs'])}; "
                "then add that directory to the loader's path: export LD_LIBRARY_PATH=<that directory>:$LD_LIBRARY_PATH "
                "(for every shell: a file in /etc/ld.so.conf.d naming it, then sudo ldconfig)",
            )
            if "cuda-libs-missing" in ranked:  # it is installed: not a library missing from the machine
                bump(
                    ranked,
                    "cuda-libs-missing",
                    -OUTSIDE / 2,
                    f"fact: {place['soname']} comes with CUDA {place['cuda']}",
                )
            return


def _where(kit: dict[str, Any]) -> str:
    return "" if kit.get("stated") else f"at {kit.get('root')} "


def _fix(kit: dict[str, Any], soname: str, windows: bool) -> str:
    version = str(kit["version"])
    root = str(kit["root"]) if not kit.get("stated") else knowledge.toolkit_root(version, windows)
    if windows:
        return (
            f"Put CUDA {version}'s bin directory, which holds {soname}, where the process looks: add {root}\\bin to "
            f"PATH and open a new terminal; Python 3.8+ loads a module's DLLs only from the system folders and "
            f"os.add_dll_directory(r'{root}\\bin'), called before the import"
        )
    if kit.get("conda"):
        return (
            f"Put the conda environment's lib, where its cudatoolkit {version} puts {soname}, on the loader's path: "
            "export LD_LIBRARY_PATH=$CONDA_PREFIX/lib:$LD_LIBRARY_PATH (for every activation: that line in "
            "$CONDA_PREFIX/etc/conda/activate.d/env_vars.sh, as TensorFlow's install guide has it)"
        )
    return (
        f"Put CUDA {version}'s lib64, which holds {soname}, on the loader's path: "
        f"export LD_LIBRARY_PATH={root}/lib64:$LD_LIBRARY_PATH (for every shell: a file in /etc/ld.so.conf.d "
        "naming it, then sudo ldconfig)"
    )


# A CUDA library that an extension module asks for (`from detectron2 import _C`, `import selective_scan_cuda`,
# `/site-packages/vllm/_C.abi3.so: libcudart.so.12 => not found`) was compiled into that extension for the
# CUDA of the torch it was built against: libcudart.so.11.0 missing under a CUDA 12 torch is a build for another
# torch, and installing CUDA 11 only hides it (corpus: detectron2, torchvision _C, mmcv, dgl, mamba-ssm, vLLM;
# a framework's own import is not one). Where the log shows only a package's frame, the facts decide: a torch
# built for another CUDA major than the library asked for.
EXTENSION_IMPORT = re.compile(
    r"^\s*(?:from\s+(?P<pkg>[A-Za-z_][\w.]*)\s+import\s+(?:_C|_ext|\w*cuda\w*|\w+_C)\b"
    r"|import\s+(?P<alone>\w*_cuda\w*|[A-Za-z_][\w.]*\._C)\b)"
    r"|[/\\](?P<site>[A-Za-z_]\w*)[/\\](?:[\w.-]+[/\\])*(?:_C|_ext|\w*_cuda\w*)(?:\.[\w-]+)*\.(?:so|pyd)\b"
)
PACKAGE_FRAME = re.compile(r"[/\\](?:site|dist)-packages[/\\](?P<pkg>[A-Za-z_]\w*)[/\\]")
FRAMEWORK_PACKAGES = frozenset(
    {
        "torch",
        "tensorflow",
        "jax",
        "jaxlib",
        "cupy",
        "cupy_backends",
        "mxnet",
        "onnxruntime",
        "paddle",
        "tensorrt",
        "nvidia",
        "numba",
        "ctranslate2",
        "llama_cpp",
    }
)
PATH_WORDS = frozenset({"site", "dist", "lib", "python3"})  # directories a path's `site` group may catch
EXTENSION_LINES = 6  # how far from the root error the import that failed is looked for
EXTENSION = 1.2  # beside a learned cuda-libs-missing (library names alone teach it): the extension decides


def _package(name: str | None) -> str | None:
    package = (name or "").split(".")[0]
    return None if not package or package in FRAMEWORK_PACKAGES | PATH_WORDS else package


def _extension(text: str) -> str | None:
    m = EXTENSION_IMPORT.search(text)
    return _package(m.group("pkg") or m.group("alone") or m.group("site")) if m else None


def _framed_package(before: list[str], wanted: str, snap: Snapshot) -> str | None:
    """The package whose frame is nearest above the root, where the facts' torch is built for another CUDA
    major than the library the root asks for."""
    torch = snap.value("framework.torch") or {}
    built, want = versions.parse(str(torch.get("cuda") or "")), versions.parse(wanted)
    if not built or not want or built[0] == want[0]:
        return None
    for text in reversed(before):
        m = PACKAGE_FRAME.search(text)
        if m:
            return _package(m.group("pkg"))
    return None


def extension_build_rule(
    ranked: dict[str, RankedCause],
    read: dict[str, str],
    scan: ScanResult,
    snap: Snapshot,
    root: tuple[int, str],
) -> None:
    """The root line could not load a CUDA library of one release (libcudart.so.11.0) for an extension
    module of a package built on the framework: the extension was built for that CUDA."""
    wanted = read.get("cuda_wanted")
    line, text = root
    if read.get("library") not in BY_RELEASE or not wanted or not line:
        return
    before = [t for n, t in scan.tail if line - EXTENSION_LINES <= n < line]
    after = [t for n, t in scan.tail if line < n <= line + EXTENSION_LINES]
    package = next((p for p in map(_extension, [text, *reversed(before), *after]) if p), None)
    package = package or _framed_package(before, wanted, snap)
    if package is None:
        return
    bump(
        ranked,
        "binary-incompatible",
        EXTENSION,
        f"line {line}: {read.get('soname')} is asked for by {package}'s compiled extension, built for CUDA "
        f"{wanted} and the torch of its build",
        f"Install the {package} build made for the installed torch and its CUDA (a prebuilt wheel names both), "
        f"or rebuild it against this torch: pip install --no-build-isolation --no-cache-dir --force-reinstall {package}",
    )


# A line beside the root error that compares the version a program was built with and the one it found
# ("compiled with CUDNN 7.6, but CUDNN version in your machine is 7.3") says what the root error's status code
# does not; it counts half of what it would as the root line.
ELSEWHERE = 0.5
BUILT_WORDS = re.compile(r"\b(?:compiled|built|source)\b", re.I)


def versions_elsewhere_rule(
    ranked: dict[str, RankedCause], scan: ScanResult, root_line: int
) -> dict[str, str]:
    """Weigh the first such line on the ranking; what it states (the version compiled with) is for the plan."""
    if not root_line:  # nothing failed: a version remark alone is not an error
        return {}
    for line, text in scan.tail:
        if line == root_line or line in scan.harmless_tail or not BUILT_WORDS.search(text):
            continue
        for reading in readers.read_line(text):
            if reading.reader == "compiled-vs-loaded" and reading.facts.get("older"):
                for cause, weight in reading.causes.items():
                    bump(ranked, cause, weight * ELSEWHERE, f"line {line}: {reading.what}")
                return reading.facts
    return {}


# JAX's check of the CUDA libraries it loaded writes the versions on the lines under its verdict:
#   Outdated cuDNN installation found.
#   Version JAX was built against: 8907
#   Minimum supported: 9100
#   Installed version: 8907
OUTDATED = re.compile(
    r"Outdated (cuDNN|CUDA|cuBLAS|cuFFT|cuSPARSE|cuSOLVER|cuPTI|NCCL|NVRTC) installation found"
)
BLOCK_LINE = re.compile(
    r"^\s*(Minimum supported|Installed version|Version JAX was built against):\s*(\d{4,6})\b"
)
BLOCK_LINES = 5  # how far under the verdict its versions are looked for


def outdated_block(scan: ScanResult, root_line: int, root_text: str) -> dict[str, str]:
    """The versions under JAX's 'Outdated X installation found' root: the minimum it supports is what the
    plan installs, the installed one what it replaces."""
    m = OUTDATED.search(root_text)
    if m is None:
        return {}
    lib = m.group(1).lower()
    seen: dict[str, str] = {}
    for line, text in scan.tail:
        if root_line < line <= root_line + BLOCK_LINES:
            field = BLOCK_LINE.match(text)
            if field:
                seen.setdefault(field.group(1), field.group(2))
    wanted = seen.get("Minimum supported") or seen.get("Version JAX was built against")
    found = seen.get("Installed version")
    if not wanted or not found:
        return {}
    compiled, loaded = readers.normalise(wanted, lib), readers.normalise(found, lib)
    if (versions.parse(loaded) or ()) >= (versions.parse(compiled) or ()):
        return {}
    return {"library": lib, "compiled": compiled, "loaded": loaded, "older": "loaded"}
