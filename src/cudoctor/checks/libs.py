"""Framework ↔ CUDA library contracts: missing libraries, shadowed copies, cuDNN and CUDA versions."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

from cudoctor import knowledge, versions
from cudoctor.checks import FRAMEWORK_FACTS, check, finding, view
from cudoctor.model import Finding, Severity, Snapshot
from cudoctor.paths import is_under

LAYER = "CUDA toolkits & libraries"


def _lib_cause(soname: str) -> str:
    return "cudnn-mismatch" if soname.startswith("libcudnn") else "cuda-libs-missing"


@check("cuda-libs-missing", "cuda-libs-missing", LAYER, requires_any=FRAMEWORK_FACTS)
def cuda_libs_missing(snap: Snapshot) -> list[Finding]:
    """A CUDA library a framework build loads cannot be resolved by the dynamic loader."""
    out = []
    for name, info in view.cuda_frameworks(snap):
        missing = sorted(
            {n for n, r in (info.get("libs") or {}).items() if not r.get("path") and view.CUDA_LIB.match(n)}
        )
        needed = info.get("missing_needed") or []
        missing += sorted({m["name"] for m in needed if view.CUDA_LIB.match(m["name"])} - set(missing))
        reported = {m["name"]: m["reported_by"] for m in needed if m.get("reported_by")}
        for soname in missing:
            cause = _lib_cause(soname)
            searched = (
                f"{reported[soname]} could not load it"
                if soname in reported
                else f"searched: RPATH/RUNPATH of {name}, LD_LIBRARY_PATH={view.env(snap).get('LD_LIBRARY_PATH', '(unset)')}, ld.so cache"
            )
            out.append(
                finding(
                    f"lib-missing-{soname.split('.so')[0].removeprefix('lib')}",
                    cause,
                    Severity.ERROR,
                    f"{view.describe(name, info)} needs {soname}, which the loader cannot find",
                    LAYER,
                    evidence=[searched],
                    fix=_missing_lib_steps(soname, name, info),
                    generic_fixes=False,
                    subject=name,  # the framework's own libraries: shown under its line
                )
            )
    return out


def _missing_lib_steps(soname: str, name: str, info: dict[str, Any]) -> list[str]:
    """The library's own wheel, then this framework's way to bring all of its libraries (never
    another framework's), a toolkit, and how to see what resolves."""
    whole = knowledge.framework_libs_step(name, str(info.get("version") or ""), info.get("cuda"))
    cuda = versions.major_minor(info.get("cuda"))
    toolkit = f"the CUDA {cuda[0]}.x toolkit" if cuda else "the matching CUDA toolkit"
    return [
        _wheel_for(soname, info.get("cuda")),
        *([f"Or bring all of {view.LABEL.get(name, name)}'s CUDA libraries: {whole}"] if whole else []),
        f"Or install {toolkit} and put its lib64 directory on LD_LIBRARY_PATH",
        "Check what resolves: cudoctor check -v (shows each library and where it was found)",
    ]


def _wheel_for(soname: str, cuda: str | None) -> str:
    base, _, major = soname.partition(".so.")
    major = major.split(".")[0]
    comp = {
        "libcudart": "cuda-runtime",
        "libcublas": "cublas",
        "libcublasLt": "cublas",
        "libcudnn": "cudnn",
        "libnccl": "nccl",
        "libnvJitLink": "nvjitlink",
        "libcufft": "cufft",
        "libcusparse": "cusparse",
        "libcusolver": "cusolver",
        "libcurand": "curand",
    }.get(base)
    if comp is None:
        return f"Install the library that provides {soname}"
    if comp == "cudnn":
        if not cuda or not major.isdigit():
            return f"pip install nvidia-cudnn-cu12  (provides {soname}; use -cu11 / -cu13 for CUDA 11 / 13 builds)"
        wheel = knowledge.cudnn_wheel(cuda, int(major))
        if wheel:
            return f"pip install {wheel}  (provides {soname})"
        return f"Install cuDNN {major} for CUDA {cuda} and put its lib directory on LD_LIBRARY_PATH (NVIDIA ships no pip wheel of it)"
    if major in ("11", "12"):
        return f"pip install nvidia-{comp}-cu{major}  (provides {soname})"
    return f"pip install nvidia-{comp}  (CUDA 13 wheels install into nvidia/cu13/lib)"


@check("library-shadowed", "multiple-toolkits", LAYER, requires_any=FRAMEWORK_FACTS)
def library_shadowed(snap: Snapshot) -> list[Finding]:
    """LD_LIBRARY_PATH (or the ld cache) makes the loader pick another copy of a library than the framework's own."""
    out = []
    for name, info in view.frameworks(snap):
        for soname, res in sorted((info.get("libs") or {}).items()):
            hit = _shadow(soname, res, info)
            if not hit:
                continue
            openmp = not view.CUDA_LIB.match(soname)
            out.append(
                finding(
                    f"shadowed-{soname.split('.so')[0].removeprefix('lib')}",
                    "cpu-blas-runtime" if openmp else "multiple-toolkits",
                    Severity.WARNING,
                    f"{view.describe(name, info)} would load {soname} from {hit[0]} ({_via_label(res['via'])}) instead of its own copy {hit[1]}",
                    LAYER,
                    evidence=[f"{soname}: {c[0]} via {c[1]}" for c in res.get("candidates", [])],
                    fix=_unshadow_fixes([{"path": hit[0], "via": res["via"]}]),
                    subject=name,
                )
            )
    return out


@check("own-library-shadowed", "multiple-toolkits", LAYER, requires_any=FRAMEWORK_FACTS)
def own_library_shadowed(snap: Snapshot) -> list[Finding]:
    """A library the framework ships itself (libtorch_cpu.so, libc10.so, libtensorflow_framework)
    would be taken from another place, e.g. a libtorch for C++ work on LD_LIBRARY_PATH: import
    then fails with an undefined symbol or a segmentation fault."""
    out = []
    for name, info in view.frameworks(snap):
        own_elsewhere = info.get("own_libs_elsewhere") or {}
        if not own_elsewhere:
            continue
        same_size = all(r["sizes"][0] == r["sizes"][1] for r in own_elsewhere.values())
        first_name, first = sorted(own_elsewhere.items())[0]
        more = f" and {len(own_elsewhere) - 1} more of its own libraries" if len(own_elsewhere) > 1 else ""
        out.append(
            finding(
                "own-library-shadowed",
                "multiple-toolkits",
                Severity.WARNING if same_size else Severity.ERROR,
                f"{view.describe(name, info)} would load {first_name}{more} from {_origin(first)} "
                f"({_via_label(first['via'])}) instead of its own copy"
                + (
                    " (same size: the same build, for now)"
                    if same_size
                    else ": import fails with an undefined symbol or a segmentation fault"
                ),
                LAYER,
                evidence=[
                    f"{n}: {r['path']} via {r['via']} before {r['own']}"
                    for n, r in sorted(own_elsewhere.items())
                ],
                fix=_unshadow_fixes(own_elsewhere.values()),
                generic_fixes=False,  # they speak of CUDA copies on LD_LIBRARY_PATH
                subject=name,
            )
        )
    return out


def _via_label(via: str) -> str:
    return "LD_PRELOAD" if via == "preloaded" else via


def _origin(winner: dict[str, Any]) -> str:
    """Where a foreign copy comes from: the file itself when preloaded, else its directory."""
    path = str(winner["path"])
    return path if winner.get("via") == "preloaded" else os.path.dirname(path)


def _unshadow_fixes(winners: Iterable[dict[str, Any]]) -> list[str]:
    """How to stop each way a foreign copy wins: LD_PRELOAD, LD_LIBRARY_PATH, or the ld.so cache."""
    by_via: dict[str, set[str]] = {}
    for w in winners:
        by_via.setdefault(str(w.get("via")), set()).add(str(w["path"]))
    fixes = []
    if "preloaded" in by_via:
        fixes.append(
            f"Remove {', '.join(sorted(by_via.pop('preloaded')))} from LD_PRELOAD: "
            "preload it only for the one program that needs it, not in ~/.bashrc or the job script"
        )
    if "LD_LIBRARY_PATH" in by_via:
        dirs = sorted({os.path.dirname(p) for p in by_via.pop("LD_LIBRARY_PATH")})
        fixes.append(
            f"Remove {', '.join(dirs)} from LD_LIBRARY_PATH (or unset it); if it holds a libtorch or another "
            "framework build unpacked for C++ work, set it only in the shell or script that runs that program"
        )
    if by_via:
        dirs = sorted({os.path.dirname(p) for paths in by_via.values() for p in paths})
        fixes.append(
            f"Take {', '.join(dirs)} out of /etc/ld.so.conf.d (then sudo ldconfig), or remove the stray copies there"
        )
    return fixes


def _shadow(soname: str, res: dict[str, Any], info: dict[str, Any]) -> tuple[str, str] | None:
    cands = res.get("candidates") or []
    if not cands or res.get("via") not in ("preloaded", "LD_LIBRARY_PATH", "ldcache", "default"):
        return None
    site = os.path.dirname(str(info.get("location") or ""))
    own = next((c for c in cands if c[1] in ("rpath", "runpath") or (site and is_under(c[0], site))), None)
    if own is None or os.path.realpath(own[0]) == os.path.realpath(cands[0][0]):
        return None
    return cands[0][0], own[0]


def _installed_cudnn(snap: Snapshot) -> list[tuple[str, str]]:
    """(version, where) of every cuDNN we know of: pip wheels and stated versions."""
    found = [
        (str(w["version"]), f"pip {w['name']}")
        for w in snap.value("python.nvidia_wheels") or []
        if str(w.get("name", "")).startswith("nvidia-cudnn")
    ]
    found += [(str(v), "stated") for v in snap.value("cudnn.versions") or []]
    return found


NIGHTLY = re.compile(r"\.dev\d", re.I)


@check(
    "cudnn-version-mismatch", "cudnn-mismatch", LAYER, requires_any=("python.nvidia_wheels", "cudnn.versions")
)
def cudnn_version_mismatch(snap: Snapshot) -> list[Finding]:
    """The cuDNN installed has another major version than the framework build, or an older minor."""
    installed = _installed_cudnn(snap)
    out = []
    # a CUDA build whose CUDA nobody stated still names its cuDNN ('compiled with cuDNN 8.1.0')
    builds = [
        (n, i)
        for n, i in view.frameworks(snap)
        if (i.get("build") == "cuda" and (i.get("cuda") or i.get("cudnn"))) or _tf_maybe_gpu(n, i)
    ]
    for name, info in builds:
        if info.get("cuda_libs") and not snap.value("python.nvidia_wheels"):
            continue  # its image's cuDNN is the one it loads, not the host's stated one
        if name == "tensorflow" and NIGHTLY.search(str(info.get("version") or "")):
            continue  # a nightly is built before its release's stack is settled (tf-nightly 2.5.0.dev20201108
            # ran cuDNN 8.0, 2.5.0 shipped with 8.1): the release's tested cuDNN says nothing about it
        want = info.get("cudnn")
        if not want and name == "tensorflow":
            row = knowledge.tf_build(str(info.get("version") or ""))
            want = row["cudnn"] if row else None
        wv = versions.parse(str(want)) if want else None
        if wv is None or not installed:
            continue
        vs = [(versions.parse(v), v, where) for v, where in installed]
        # a cuDNN stated by its major alone ('cuDNN 7') is only compared by its major
        if any(v and _cudnn_serves(v, wv) for v, _, _ in vs):
            continue
        have = ", ".join(f"{v} ({where})" for _, v, where in vs)
        cuda_major = (versions.parse(str(info.get("cuda") or info.get("cuda_if_gpu") or "")) or (12,))[0]
        maybe = _tf_maybe_gpu(name, info)
        rivals = _cudnn_rivals(snap, wv[0])
        out.append(
            finding(
                "cudnn-version-mismatch",
                "cudnn-mismatch",
                Severity.ERROR,
                f"{view.describe(name, info)}{GPU_BUILD if maybe else ''} was built with cuDNN {want}, but the cuDNN found is {have}",
                LAYER,
                evidence=[f"framework.{name}.cudnn = {want}", f"installed: {have}"]
                + [
                    f"{p['package']} {p['version']} Requires-Dist: {p['requires']}{p['spec']}" for p in rivals
                ],
                fix=[
                    *(
                        f"{p['package']} {p['version']} needs {p['requires']}{p['spec']} and {view.LABEL.get(name, name)} needs cuDNN {wv[0]}: "
                        f"one environment holds one {p['requires']}, so install them in separate virtual environments "
                        f"(or move {p['package']} to a release built for cuDNN {wv[0]})"
                        for p in rivals
                    ),
                    _cudnn_install(cuda_major, wv, str(want)),
                ],
                about=[name],
                confidence="likely" if maybe else "certain",
            )
        )
    said = snap.value("build.cudnn_said")
    if not out and isinstance(said, dict):
        out += _said_build_mismatch(said, installed)
    return out


def _said_build_mismatch(said: dict[str, Any], installed: list[tuple[str, str]]) -> list[Finding]:
    """A build that says which cuDNN it was compiled with (any library: 'paddlepaddle-gpu (compiled with
    cuDNN 8.4)') beside a cuDNN found of another major or an older minor."""
    want = versions.parse(str(said.get("cudnn") or ""))
    vs = [(versions.parse(v), v, where) for v, where in installed]
    if want is None or not vs or any(v and _cudnn_serves(v, want) for v, _, _ in vs):
        return []
    have = ", ".join(f"{v} ({where})" for _, v, where in vs)
    return [
        finding(
            "cudnn-version-mismatch",
            "cudnn-mismatch",
            Severity.ERROR,
            f"A build says it was compiled with cuDNN {said['cudnn']} ('{said.get('said')}'), but the cuDNN found is {have}",
            LAYER,
            evidence=[f"stated: {said.get('said')}", f"installed: {have}"],
            fix=[
                f"Install cuDNN {versions.fmt(want[:2])} or a newer {want[0]}.x where this build loads it, or a "
                f"release of the build made for the cuDNN {have.split(' ')[0]} you have",
            ],
            confidence="likely",
        )
    ]


def _cudnn_serves(have: versions.Version, want: versions.Version) -> bool:
    """A cuDNN serves a build made with `want`: the same major, and no older minor where both state one."""
    return have[0] == want[0] and (len(want) < 2 or len(have) < 2 or versions.cmp(have[:2], want[:2]) >= 0)


GPU_BUILD = "'s GPU build (tensorflow-gpu)"


def _tf_maybe_gpu(name: str, info: dict[str, Any]) -> bool:
    """A TensorFlow 1.x whose package nobody named ('tensorflow' was the CPU package, 'tensorflow-gpu' the
    CUDA one) beside a cuDNN someone installed for it: its GPU build's needs are the ones to compare."""
    return name == "tensorflow" and info.get("build") == "unknown" and bool(info.get("cuda_if_gpu"))


def _cudnn_install(cuda_major: int, want: versions.Version, written: str) -> str:
    """NVIDIA's cuDNN wheel for this CUDA major at the version wanted, or, where NVIDIA ships none (cuDNN 7,
    CUDA 10), that cuDNN from its archive."""
    if knowledge.cudnn_wheel(f"{cuda_major}.0", want[0]):
        return f"pip install 'nvidia-cudnn-cu{cuda_major}>={versions.fmt(want[:2])}'"
    return (
        f"Install cuDNN {written} for CUDA {cuda_major} from NVIDIA's cuDNN archive "
        "(https://developer.nvidia.com/rdp/cudnn-archive; no pip wheel holds it)"
    )


def _cudnn_rivals(snap: Snapshot, major: int) -> list[dict[str, Any]]:
    """Installed packages that ask for a pip cuDNN of another major than `major`: the two cannot share one environment."""
    out = []
    for pin in snap.value("python.cuda_wheel_pins") or []:
        floor = versions.floor(str(pin["spec"])) if str(pin["requires"]).startswith("nvidia-cudnn") else None
        if floor and (versions.parse(floor[1]) or (major,))[0] != major:
            out.append(pin)
    return out


@check("tf-cuda-mismatch", "cuda-libs-missing", LAYER, requires=("cuda.toolkits",))
def tf_cuda_mismatch(snap: Snapshot) -> list[Finding]:
    """TensorFlow's tested CUDA version is not the CUDA toolkit installed (and no pip CUDA wheels supply it)."""
    tf = snap.value("framework.tensorflow")
    toolkits = [t for t in snap.value("cuda.toolkits") or [] if t.get("version")]
    # a TensorFlow 1.x whose package nobody named ('TF1.6': tensorflow was the CPU package, tensorflow-gpu
    # the CUDA one) beside a CUDA toolkit someone installed for it: what its GPU build would need
    maybe_gpu = isinstance(tf, dict) and _tf_maybe_gpu("tensorflow", tf)
    if not isinstance(tf, dict) or (tf.get("build") != "cuda" and not maybe_gpu) or not toolkits:
        return []
    if tf.get("cuda_libs"):  # an official GPU image carries its own CUDA: the host's toolkit is not loaded
        return []
    row = knowledge.tf_build(str(tf.get("version") or ""))
    if row is None:
        return []
    want = versions.major_minor(row["cuda"]) or (0, 0)
    wheels = [
        w
        for w in snap.value("python.nvidia_wheels") or []
        if str(w.get("name", "")).endswith(f"-cu{want[0]}")
    ]
    if wheels:
        return []
    # before CUDA 11 TF loads libcudart.so.X.Y, an exact minor; CUDA 11.0 still shipped libcusolver.so.10,
    # which 11.1 replaced by .so.11 (a TF 2.4 on CUDA 11.1 fails to load it: tensorflow/tensorflow#45848)
    exact = want < (11, 1)
    have = [versions.major_minor(str(t["version"])) for t in toolkits]
    if any(h and (h == want if exact else h[0] == want[0]) for h in have):
        return []
    have_s = ", ".join(str(t["version"]) for t in toolkits)
    build = GPU_BUILD if maybe_gpu else ""
    # TensorFlow's table writes '9' for 1.5-1.12, whose wheels load libcublas.so.9.0: an exact minor is named
    cuda = f"{want[0]}.{want[1]}" if exact else row["cuda"]
    return [
        finding(
            "tf-cuda-mismatch",
            "cuda-libs-missing",
            Severity.ERROR,
            f"TensorFlow {tf.get('version')}{build} is built for CUDA {cuda} / cuDNN {row['cudnn']}, but the CUDA installed is {have_s}",
            LAYER,
            evidence=[
                f"TensorFlow tested build: CUDA {row['cuda']}, cuDNN {row['cudnn']} ({row['source']})",
                f"cuda.toolkits: {have_s}",
            ],
            fix=[
                f"Install CUDA {cuda} and cuDNN {row['cudnn']} (or a TensorFlow version built for CUDA {have_s})"
            ],
            about=["tensorflow"],
            confidence="likely" if maybe_gpu else "certain",
        )
    ]


# JAX installed with pip's CUDA wheels (jax[cuda12], jax[cuda12_pip], the plugin) does not read the toolkit
JAX_PIP_CUDA = re.compile(r"\[cuda\d*(?:[-_]pip)?\]|plugin|pjrt", re.I)


@check("jax-cuda-older", "cuda-libs-missing", LAYER, requires=("cuda.toolkits", "framework.jax"))
def jax_cuda_older(snap: Snapshot) -> list[Finding]:
    """A JAX built against CUDA X.Y finds an older CUDA X of the same major: 'The copy of CUDA that is installed
    must be at least as new as the version against which JAX was built'."""
    jax = snap.value("framework.jax")
    if (
        not isinstance(jax, dict)
        or jax.get("build") != "cuda"
        or JAX_PIP_CUDA.search(str(jax.get("stated") or ""))
        or jax.get("cuda_libs")  # an official image's own CUDA
    ):
        return []
    built = versions.major_minor(str(jax.get("cuda") or ""))
    if built is None or any(
        str(w.get("name", "")).startswith("nvidia-cuda-runtime")
        for w in snap.value("python.nvidia_wheels") or []
    ):
        return []
    found = [
        (v, t)
        for t in snap.value("cuda.toolkits") or []
        if (v := versions.major_minor(str(t.get("version") or "")))
    ]
    same = [(v, t) for v, t in found if v[0] == built[0]]
    if not same or any(v >= built for v, _ in same):
        return []
    have = ", ".join(str(t["version"]) for _, t in same)
    return [
        finding(
            "jax-cuda-older",
            "cuda-libs-missing",
            Severity.ERROR,
            f"{view.describe('jax', jax)} was built against CUDA {versions.fmt(built)}, but the CUDA it finds is {have}: "
            "the copy of CUDA installed must be at least as new as the one JAX was built against",
            LAYER,
            evidence=[f"framework.jax.cuda = {versions.fmt(built)}", f"cuda.toolkits: {have}"],
            fix=[
                f"pip install -U 'jax[cuda{built[0]}]'  (JAX with NVIDIA's CUDA {built[0]} wheels, whatever the toolkit)",
                f"Or install CUDA {versions.fmt(built)} or newer and put it first on LD_LIBRARY_PATH",
            ],
            about=["jax"],
        )
    ]
