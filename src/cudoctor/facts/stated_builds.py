"""A framework build as people state it ("torch==2.1.0+cu118", "jaxlib 0.4.20+cuda12.cudnn89",
"pytorch 1.13.1 py3.9_cuda11.6_cudnn8.3.2_0", "tensorflow-gpu 1.13.1") read into the fields a live
`framework.<name>` fact holds: version, build (cuda / cpu / rocm / unknown), cuda, cudnn, and for
JAX jaxlib, for TensorFlow dist. What a package name says is knowledge/stated_packages.toml; the
CUDA a jaxlib release was built with, knowledge/jax.toml; TensorFlow's, tensorflow.toml.
"""

from __future__ import annotations

import re
from typing import Any

from cudoctor import knowledge, versions
from cudoctor.knowledge import jax_builds

FRAMEWORK_WORDS = (
    (re.compile(r"\b(tensorflow|tf)\b|\btf(?=\d)", re.I), "tensorflow"),
    # tf.version.GIT_VERSION beside VERSION, as TensorFlow's issue template asks for it: v2.11.0-rc2-15-g6290819256d
    (re.compile(r"\bv\d+\.\d+\.\d+(?:-rc\d+)?-\d+-g[0-9a-f]{7,}\b"), "tensorflow"),
    (re.compile(r"\b(torch|pytorch)\b|\b(?:py)?torch(?=\d)", re.I), "torch"),  # 'torch1.7.1' too
    (re.compile(r"\bjax(lib)?\b", re.I), "jax"),
    (re.compile(r"\bcupy\b", re.I), "cupy"),
    (re.compile(r"\bkeras\b", re.I), "tensorflow"),
)
VERSION = r"\d+\.\d+(?:\.\d+)?(?:\.?(?:dev|a|b|rc)\w*)?(?:\+[\w.]+)?"
# jaxlib's local version: +cuda12.cudnn89, +cuda11.cudnn805, +cuda111 (CUDA 11.1, before 0.1.73)
# jaxlib's local version (+cuda11.cudnn86) and the extras of its cuDNN floor (jax[cuda11_cudnn82])
# Google's 2019-2021 wheel folders named the CUDA: storage.googleapis.com/jax-releases/cuda100/jaxlib-0.1.29-...
JAX_RELEASES_DIR = re.compile(r"jax[-_]releases/cuda(\d{2,3})(?:[._]cudnn(\d+))?/", re.I)
JAX_TAG = re.compile(r"(?:\+|\b(?=cuda\d+[._]cudnn))cuda(\d+)(?:[._]cudnn(\d+))?", re.I)
# conda build strings: pytorch's py3.9_cuda11.6_cudnn8.3.2_0 (py3.7_cuda90_cudnn7_1 before 1.1), conda-forge's
# cuda112py38h..._201
CONDA_CUDA = re.compile(
    r"_cuda(\d+\.\d+)(?:\.\d+)*(?:_cudnn(\d+(?:\.\d+)*))?|\bcuda(\d{2,3})py\d|_cuda(\d{2,3})_cudnn(\d+(?:\.\d+)*)",
    re.I,
)
# conda's build strings say it too: TensorFlow's mkl_py36h... and eigen_py37h... are its CPU builds (gpu_py37h... the CUDA one)
CPU_WORD = re.compile(r"\+cpu|(?:^|[\W_])cpu(?:[\W_]|$)|(?:^|[\W_])(?:mkl|eigen)_py\d", re.I)
GPU_WORD = re.compile(r"(?:^|[\W_])gpu(?:[\W_]|$)", re.I)  # tensorflow-gpu, 1.14.0-gpu: the CUDA build
# What a framework prints of its own build when it has no CUDA: collect_env's "CUDA used to build PyTorch:
# None", torch's "Torch not compiled with CUDA enabled", JAX's "a CUDA-enabled jaxlib is not installed"
CPU_SAID = re.compile(
    r"CUDA used to build PyTorch: (?:None|Could not collect)|Torch not compiled with CUDA enabled"
    # the framework's own answer, as people paste it: 'tf.test.is_built_with_cuda() -> False', 'built with CUDA: False'
    r"|is_built_with_cuda\(\)\W{0,6}(?:returns?\W{1,3}|gives\W{1,3}|is\W{1,3})?False\b|\bbuilt with CUDA\W{0,3}False\b"
    # torch.version.cuda, the CUDA a torch build was made with: None for a CPU build
    r"|torch\.version\.cuda\W{0,6}(?:(?:prints?|returns?|gives|is|shows)\W{1,3})?None\b",
    re.I,
)
JAX_CPU_SAID = re.compile(r"CUDA-enabled jaxlib is not installed|\bno CUDA plugin\b", re.I)
# The cuDNN a build names as its own: 'compiled with cuDNN 8.1.0', 'JAX was built against cuDNN version 8904',
# TensorFlow 1.x's 'source was compiled with 5110 (compatibility version 5100)': cuDNN's integer form
# below 9 has four digits (a CUDA's has five), so a bare four-digit integer is a cuDNN
BUILT_CUDNN = re.compile(
    r"(?:compiled|built)\s+(?:with|against)(?::|\s)\s*(?:cu?DNN\s*(?:version\s*)?v?(\d+(?:\.\d+)+|\d{4,5}\b)"
    r"|(?:version\s+)?([5-8]\d{3})\b(?![.\d]))",
    re.I,
)


def cudnn_built_with(text: str) -> str | None:
    """The cuDNN a build says it was compiled with, as a dotted version."""
    said = cudnn_built_said(text)
    return said[0] if said else None


def cudnn_built_said(text: str) -> tuple[str, str] | None:
    """(the cuDNN, the words that say it) where a build names the cuDNN it was compiled with, in any stated
    text and of any library ('paddlepaddle-gpu 2.1.0.post101 (compiled with cuDNN 7.6)', 'TensorFlow source
    was compiled with cuDNN 9.3.0', 'PyTorch compiled against cuDNN 8.7.0')."""
    m = BUILT_CUDNN.search(text)
    if m is None:
        return None
    written = m.group(1) or m.group(2)
    version = written if "." in written else versions.cudnn_from_int(written)
    if not version:
        return None
    start = max(text.rfind(sep, 0, m.start()) for sep in (";", "\n", ". ", ", "))
    end = m.end() + (text[m.end() : m.end() + 1] == ")" and "(" in text[start + 1 : m.start()])
    return version, text[start + 1 : end].strip(" ;,.\n")[-160:]


CUDA_WRITTEN = re.compile(
    r"(?<![\w.])CUDA(?: used to build PyTorch:)?\s*v?(\d{1,2}\.\d)(?:\.\d+)?(?![\d.])", re.I
)  # collect_env's line too
NO_CUDA = re.compile(
    r"^\s*(?:none|could not collect|cpu|n/a|false)\s*$", re.I
)  # a build's CUDA, as tools print "none"
TORCH_VARIANT = re.compile(r"\b(cu\d{2,3})\b|\+(cu\d{2,3})")
# what a build needs of another component ('needs CUDA >= 11.8 and cuDNN >= 8.6', 'Python>=3.9'): those
# numbers are not the framework's own version
REQUIREMENT = re.compile(
    r"\b(?:cuda|cudnn|python|driver|gcc|glibc|numpy|nccl)\s*(?:>=|<=|>|<|==|≥|≤)\s*v?\d+(?:\.\d+)*", re.I
)
NEEDS_CUDA = re.compile(r"\bcuda\s*(?:>=|≥)\s*v?(?P<cuda>(?P<major>\d+)\.\d+)", re.I)
# conda's CUDA pin beside the framework ('pytorch (conda, cudatoolkit=10.2)', 'pytorch-cuda=11.8'): the build's CUDA
CONDA_TOOLKIT = re.compile(
    r"\b(?:cudatoolkit|pytorch-cuda|cuda-version)\s*(?:==|=|\s)\s*(\d+\.\d+)(?:\.\d+)*", re.I
)


# How people misspell the frameworks' names ('tenserflow-gpu 1.13.1', 'pytroch 1.7'): a word this close to
# one of them (its letters, at most this many edits) is read as it
CANONICAL = ("tensorflow", "pytorch")
MAX_EDITS = {"tensorflow": 2, "pytorch": 1}
WORD = re.compile(r"[A-Za-z]{6,12}")


def _edits(a: str, b: str) -> int:
    """Levenshtein distance, transpositions counting one (optimal string alignment)."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def canonical_names(text: str) -> str:
    """The text with misspelt framework names written as the frameworks spell them."""

    def fix(m: re.Match[str]) -> str:
        word = m.group(0)
        low = word.lower()
        for name in CANONICAL:
            if low != name and _edits(low, name) <= MAX_EDITS[name]:
                return name
        return word

    return WORD.sub(fix, text)


def guess_framework(text: str, hint: str | None) -> str | None:
    """The framework `text` names (misspellings already written as canonical_names writes them), else `hint`."""
    for pattern, name in FRAMEWORK_WORDS:
        if pattern.search(text):
            return name
    if re.search(r"\d\+(?:cu\d+|cpu|rocm)", text):
        return "torch"  # the local-version convention of PyTorch wheels
    return hint


def cuda_from_digits(digits: str) -> str:
    """A CUDA named in a package or tag: '12' -> '12.0' (a major), '112' -> '11.2', '92' -> '9.2'."""
    if len(digits) == 2 and digits.startswith("1"):
        return f"{digits}.0"
    return versions.cuda_from_variant(f"cu{digits}") or f"{digits}.0"


def cudnn_from_tag(digits: str) -> str:
    """jaxlib's cudnn tag: '89' -> '8.9', '805' -> '8.0.5', '91' -> '9.1'."""
    return ".".join([digits[0], digits[1:2] or "0", *([digits[2:]] if len(digits) > 2 else [])])


def package_row(text: str, name: str) -> tuple[dict[str, Any], str | None]:
    """The stated_packages.toml row the text names for this framework, and the CUDA it gives."""
    for row in knowledge.table("stated_packages")["package"]:
        if row["framework"] != name:
            continue
        m = re.search(row["match"], text, re.I)
        if m:
            digits = m.groupdict().get("cuda")
            return dict(row), cuda_from_digits(digits) if digits else None
    return {}, None


def _version_after(word: str, text: str) -> str | None:
    """The version written after `word` ('jaxlib 0.4.25+cuda11.cudnn86', 'jax==0.4.13', 'jax[cuda12]==0.6.0')."""
    m = re.search(rf"\b{word}(?![\w-])(?:\[[^\]]*\])?\s*(?:==|=|:|\s)\s*v?({VERSION})", text, re.I)
    return m.group(1) if m else None


OWN_WORD = {
    "torch": r"(?:py)?torch",
    "tensorflow": r"tensorflow(?:-gpu|-cpu)?|tf",
    "jax": r"jax",
    "cupy": r"cupy(?:-cuda\w+)?",
}


def _own_version(name: str, text: str) -> re.Match[str] | None:
    """The version right after the framework's name, where another package's version comes first."""
    word = OWN_WORD.get(name)
    first = re.search(f"({VERSION})", text)
    if word is None or first is None:
        return None
    own = re.search(rf"\b(?:{word})(?:\[[^\]]*\])?\s*(?:==|=|:|\s)\s*v?({VERSION})", text, re.I)
    return own if own is not None and own.start(1) > first.start(1) else None


def _first_version(name: str, text: str) -> re.Match[str] | None:
    """The first version written, unless it is another package's: right after another name, with the
    framework's own name only after it ('voicebox 4.0 with PyTorch cu128')."""
    first = re.search(f"({VERSION})", text)
    word = OWN_WORD.get(name)
    if first is None or word is None:
        return first
    own = re.search(rf"\b(?:{word})\b", text, re.I)
    named_before = re.search(r"([A-Za-z][\w.-]*)\s*(?:==|=|:|\s)\s*v?$", text[: first.start(1)])
    if (
        own is not None
        and own.start() > first.start(1)
        and named_before
        and not re.fullmatch(r"(?:version|v|release|pip|conda|python\d*)", named_before.group(1), re.I)
    ):
        return None
    return first


def framework_info(version_text: str, cuda_text: str, hint: str | None) -> tuple[str, dict[str, Any]] | None:
    """(framework, the fields of its `framework.<name>` fact) from what a person wrote."""
    version_text = canonical_names(version_text)
    name = guess_framework(version_text, hint)
    if name is None:
        return None
    cudnn_built = cudnn_built_with(version_text)  # 'tensorflow (compiled with cuDNN 8.1.0)'
    written_cuda = CUDA_WRITTEN.search(version_text)  # 'torch 1.12 (CUDA 11.6 build)'
    toolkit = CONDA_TOOLKIT.search(version_text)
    bare = CUDA_WRITTEN.sub(
        " ", BUILT_CUDNN.sub(" ", CONDA_TOOLKIT.sub(" ", REQUIREMENT.sub(" ", version_text)))
    )
    # the version written after the framework's own word ('vllm 0.9.1 (pip) with torch 2.7.0'), else the first
    vm = _own_version(name, bare) or _first_version(name, bare)
    row, cuda = package_row(version_text, name)
    info: dict[str, Any] = {"version": vm.group(1) if vm else None, "cuda": cuda, "stated": version_text}
    if row.get("dist"):
        info["dist"] = row["dist"]
    conda = CONDA_CUDA.search(version_text)
    if conda:
        info["cuda"] = conda.group(1) or cuda_from_digits(conda.group(3) or conda.group(4))
        if conda.group(2) or conda.group(5):
            info["cudnn"] = conda.group(2) or conda.group(5)
    variant = TORCH_VARIANT.search(version_text)
    if variant and info["cuda"] is None:
        info["cuda"] = versions.cuda_from_variant(variant.group(1) or variant.group(2))
    if info["cuda"] is None and toolkit:
        info["cuda"] = toolkit.group(1)
    if info["cuda"] is None and written_cuda:
        info["cuda"] = written_cuda.group(1)
    needs = NEEDS_CUDA.search(version_text)  # 'cuda11 wheels, needs CUDA >= 11.8': the build's own floor
    if needs and info["cuda"] in (None, f"{needs['major']}.0"):
        info["cuda"] = needs["cuda"]
    if cudnn_built:
        info["cudnn"] = cudnn_built
    if name == "jax":
        _jax(version_text, info)
    if cuda_text and not NO_CUDA.match(cuda_text):
        # '11.8', 'cuda10.2', 'CUDA 12.1 (cu121)'; a bare major from CUDA 11 on ('12': libcudart.so.12)
        written = re.search(r"\d+(?:\.\d+)+|(?<![\d.])1[1-9](?![\d.])", cuda_text)
        parsed = (versions.parse(written.group(0)) if written else None) or ()
        info["cuda"] = ".".join(str(p) for p in parsed[:2]) or info["cuda"]
    info["build"] = (
        "cpu"
        if CPU_WORD.search(version_text)
        or info.get("build") == "cpu"  # read so above (a tagless jaxlib from PyPI)
        or row.get("build") == "cpu"
        or NO_CUDA.match(cuda_text or "x")
        or CPU_SAID.search(version_text)
        or (name == "jax" and JAX_CPU_SAID.search(version_text))
        else row.get("build")
        or (
            "cuda"
            if info["cuda"]
            or cudnn_built  # a build that names its cuDNN is a CUDA build
            or GPU_WORD.search(version_text)
            or _cuda_by_default(name, info["version"])
            else "unknown"
        )
    )
    if info["build"] == "cpu":
        if info["cuda"] and toolkit:  # a CUDA build asked for ('cudatoolkit=11.3'), a CPU one installed
            info["cuda_if_gpu"] = info["cuda"]
        info["cuda"] = None
    _image(version_text, info)
    return name, info


# An official framework image (tensorflow/tensorflow:2.16.1-gpu, pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime,
# nvcr.io/nvidia/pytorch:24.01-py3): its CUDA libraries ship inside it, whatever toolkit the host has. The
# tensorflow/tensorflow tags without -gpu are CPU-only (tensorflow.org/install/docker).
FRAMEWORK_IMAGE = re.compile(
    r"\b(?P<image>tensorflow/tensorflow|pytorch/pytorch|nvcr\.io/nvidia/(?:pytorch|tensorflow|jax)|ghcr\.io/nvidia/jax)"
    r":(?P<tag>[\w.-]+)"
    # NGC's images as people name them: 'NGC pytorch:19.08-py3', 'NGC PyTorch container 24.01'
    r"|\b(?P<ngc>NGC\s+(?:pytorch|tensorflow|jax))(?:\s+container)?[:\s]+(?P<ngc_tag>\d{2}\.\d{2}(?:-[\w.]+)?)",
    re.I,
)


def _image(text: str, info: dict[str, Any]) -> None:
    """The libraries of a framework run from its official image come from the image."""
    m = FRAMEWORK_IMAGE.search(text)
    if m is None:
        return
    image = (m.group("image") or "nvcr.io/nvidia/" + m.group("ngc").split()[-1]).lower()
    tag = m.group("tag") or m.group("ngc_tag")
    if image == "tensorflow/tensorflow" and not GPU_WORD.search(tag):
        info["build"], info["cuda"] = "cpu", None
        info["build_inferred"] = (
            f"{m.group(0)}: tensorflow/tensorflow tags without -gpu are CPU-only (tensorflow.org/install/docker)"
        )
        return
    info["cuda_libs"] = f"the {m.group(0)} image"
    if info.get("build") == "unknown":
        info["build"] = "cuda"
    if image.startswith("nvcr.io") and info.get("version") and info["version"] in tag:
        info["version"] = None  # NGC's release (24.01), not the framework's


def _cuda_by_default(name: str, version: str | None) -> bool:
    """`pip install tensorflow` has been the CUDA build on Linux since 2.1."""
    return name == "tensorflow" and (versions.parse(version) or (0,)) >= (2, 1)


def _jax(text: str, info: dict[str, Any]) -> None:
    """jax and jaxlib versions; the CUDA major a jaxlib tag or an extra names, and from jax.toml the
    CUDA and cuDNN the wheels of that release were built with."""
    jaxlib = _version_after("jaxlib", text)
    plugin = _version_after(r"jax[-_]cuda\d+[-_](?:plugin|pjrt)", text)
    jax = _version_after("jax", text) or plugin
    # an extra (jax[cuda11_cudnn82]): a number not after jax or jaxlib is not theirs
    named = re.search(r"\bjax\[", text, re.I) is not None
    info["version"] = (jax or (jaxlib or ("" if named else info["version"]) or "").split("+")[0]) or None
    if jaxlib:
        info["jaxlib"] = jaxlib
    tag = JAX_TAG.search(jaxlib or "") or JAX_TAG.search(text) or JAX_RELEASES_DIR.search(text)
    old = knowledge.table("jax")["pypi_jaxlib"]
    pinned = re.search(r"jaxlib\s*==|\bpip\b|pypi", text, re.I)
    tagless = (
        jaxlib
        and "+" not in jaxlib
        and not re.search(r"jax\[cuda|cuda\d*[-_]plugin|jax[-_]releases", text, re.I)
    )
    if jaxlib and tagless and pinned and versions.satisfies(jaxlib, f"<{old['cpu_before']}"):
        info["build"] = "cpu"  # framework_info keeps a build set here
        info["build_inferred"] = f"jaxlib {jaxlib} from PyPI: {old['source'].split(';')[0]}"
        return
    if tag:
        info["cuda"] = cuda_from_digits(tag.group(1))
        if tag.group(2):
            info["cudnn"] = cudnn_from_tag(tag.group(2))
    named_minor = bool(tag and len(tag.group(1)) > 2)
    major = versions.parse(info["cuda"] or "")
    if named_minor and major is not None and not info.get("cudnn"):
        info["cudnn"] = jax_builds.minor_tag_cudnn(major[0])
    if named_minor or major is None:
        return  # 'jax[cuda]' names no major: a CUDA build, its CUDA unknown
    row = jax_builds.wheel(jaxlib or info["version"] or "", major[0])
    floor = (
        jax_builds.cudnn_tag_cuda(major[0], cudnn_from_tag(tag.group(2))) if tag and tag.group(2) else None
    )
    if (
        floor
        and row
        and versions.cmp(versions.parse(floor["cuda"]) or (0,), versions.parse(row["cuda"]) or (0,)) > 0
    ):
        row = {**row, "cuda": floor["cuda"], "source": floor["source"]}
    if row:
        info["cuda"] = row["cuda"]
        info.setdefault("cudnn", row.get("cudnn"))
        info["cuda_inferred"] = (
            f"jaxlib {versions.fmt(versions.parse(jaxlib or info['version']))}: {row['source']}"
        )


def tf_on_native_windows(info: dict[str, Any]) -> dict[str, Any]:
    """TensorFlow stated on native Windows: after the last release whose Windows wheels use the GPU
    (tensorflow.toml [native_windows]) the build is CPU-only, as a live snapshot there reads it."""
    rule = knowledge.table("tensorflow")["native_windows"]
    have = versions.major_minor(str(info.get("version") or ""))
    last = versions.major_minor(rule["gpu_last"])
    if have is None or last is None or have <= last or info.get("build") != "cuda":
        return info
    return {
        **info,
        "build": "cpu",
        "cuda": None,
        "cudnn": None,
        "build_inferred": f"TensorFlow {rule['gpu_last']} was the last release with GPU support on native "
        f"Windows ({rule['source'].split(';')[0]})",
    }
