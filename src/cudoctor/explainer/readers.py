"""Readers: what a log line *names*, read by table rather than by wording.

The readers, each pure (one line in, readings out; the tables come from knowledge/status_codes.toml and,
for exit-status, knowledge/exit_status.toml):

- status-code: a status name of a CUDA library (cudaErrorMemoryAllocation, CUBLAS_STATUS_ALLOC_FAILED,
  ncclSystemError, ...), or a number where the line says which enum it belongs to ("CUDA error = 999",
  "cudaGetDeviceProperties returned 802", "CUSOLVER_STATUS_SUCCESS (7 vs. 0)", or the number next to its
  own text: "Error 803: system has unsupported display driver ..."). A bare number is never a code.
- soname: a CUDA library's soname or DLL in a line that says it could not be loaded, and the version
  it carries (libcudnn.so.8 -> cuDNN 8, cudart64_110.dll -> CUDA 11.0).
- compiled-vs-loaded: a library built against one version and found at another, in any word order
  ("Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0"), or a driver said to
  be too old.
- versioned-symbol: a symbol a CUDA library exports per release, missing from the copy loaded
  ("undefined symbol: __nvJitLinkCreate_12_8, version libnvJitLink.so.12"): the caller needs that
  library of CUDA 12.8 or newer and an older one was loaded first.
- incompatible-pair: two packages' releases a message calls incompatible ("jaxlib version 0.4.14 is newer than
  and incompatible with jax version 0.4.6"): one was built for another release of the other.
- version-expected: a package's check naming the release of another package it wants and the one it got ("this
  tch version expects PyTorch 2.5.0, got 2.5.1", pip's "requires torch==2.1.0, but you have torch 2.2.0").
- built-without: a build that says it holds no GPU support ("Torch not compiled with CUDA enabled", "CUDA execution
  provider is not enabled in this build").
- resolver-refused: an installer that found no release it may install ("No matching distribution found for
  torch==1.13.1", Poetry's "Unable to find installation candidates", uv's "requirements are unsatisfiable").
- gpu-refused: work a library refuses on this GPU without naming its architecture ("This kernel is not supported on
  your GPU").
- symbol: an undefined C++ symbol in a library's namespace (_ZN3c10... is PyTorch's c10::): the module was
  built against another release of that library.
- capability: a compute capability (sm_XY, or an architecture's name) in a line that says something was not found
  for it, is not compatible with it, does not support it, or needs a newer one ("Could not find compatible
  tinycudann extension for compute capability 87", "GPUs with compute capability below 7.0 are not supported",
  "FlashAttention only supports Ampere GPUs or newer"): a build without code for that GPU, or work it cannot run.
- exit-status: how a process ended (a signal, an exit status 128+N, a Windows exception status), read
  by explainer.exit_status in every form a log prints it.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable
from typing import Any

from cudoctor import knowledge, versions
from cudoctor.explainer import exit_status

MAX_LINE = 4000  # characters of a line the readers look at


@dataclasses.dataclass(frozen=True)
class Reading:
    # "status-code" | "soname" | "compiled-vs-loaded" | "versioned-symbol" | "incompatible-pair" | "version-expected"
    # | "built-without" | "resolver-refused" | "gpu-refused" | "symbol"
    # | "capability" | "exit-status"
    reader: str
    causes: dict[str, float]
    what: str
    facts: dict[str, str]


def read_line(text: str) -> list[Reading]:
    line = text[:MAX_LINE]
    sonames = _sonames(line)
    return (
        _status_codes(line)
        + sonames
        + ([] if sonames else _library_symbol(line))
        + _compiled_vs_loaded(line)
        + _versioned_symbol(line)
        + _mangled_symbol(line)
        + _incompatible_pair(line)
        + _version_expected(line)
        + _phrases(line)
        + _capability(line)
        + _endings(line)
    )


# a GPU architecture named beside a word that says nothing was built for it, or that the work needs a newer one:
# 'Could not find compatible tinycudann extension for compute capability 87', 'sm_61 is not supported', 'no kernels
# for compute capability 6.0', 'GPUs with compute capability below 7.0 are not supported', 'SM80 kernel is not
# available', 'Device compute capability 9.x required', 'FlashAttention only supports Ampere GPUs or newer' (a C++
# file's line, 'cuda_prng_kernels.cc:30', is no 'cc 30')
CAPABILITY = re.compile(
    r"(?:compute capability|cuda capability):?\s*(?:of\s*)?"
    r"(?:at least\s*|[<>]=?\s*|\u2265\s*|below\s*|under\s*|(?:less|lower|greater|higher) than\s*)?"
    r"(?P<cc>\d{1,2}(?:\.[\dx])?)\b|(?<![.\w/])cc[ =:]+(?P<cc2>\d\.\d|\d{2})\b"
    r"|\b(?P<sm>sm_?\d{2,3}[a-z]?)\b"
    r"|\b(?P<arch>Kepler|Maxwell|Pascal|Volta|Turing|Ampere|Ada Lovelace|Hopper|Blackwell)\b",
    re.I,
)
SENTENCE_END = re.compile(r"[.;!?](?:\s|$)")  # the refusal must be in the architecture's own sentence
NOT_FOR_IT = re.compile(
    r"could not find|cannot find|can't find|not compatible|incompatible|not supported|unsupported|does not support"
    r"|doesn't support|no kernels?\b|not built for|not compiled for|no (?:compatible )?binary"
    r"|\brequire[sd]?\b|only support(?:s|ed)\b|too old|or (?:higher|newer|later|above)\b|at least|not available"
    r"|no longer support|minimum",
    re.I,
)


def _capability(line: str) -> list[Reading]:
    ends = [e.end() for e in SENTENCE_END.finditer(line)]
    for m in CAPABILITY.finditer(
        line
    ):  # the first architecture whose own sentence refuses it or asks for more
        start = max((e for e in ends if e <= m.start()), default=0)
        stop = min((e for e in ends if e > m.end()), default=len(line))
        if NOT_FOR_IT.search(line, start, stop) is None:
            continue
        named = m.group("sm") or m.group("arch") or f"compute capability {m.group('cc') or m.group('cc2')}"
        return [
            Reading(
                "capability",
                {"arch-unsupported": 0.7, "toolchain-not-found": 0.1},
                f"{named}: the line says nothing here was built for it, or that the work needs a newer GPU",
                {},
            )
        ]
    return []


# two packages' releases a message calls incompatible ("jaxlib version 0.4.14 is newer than and incompatible with
# jax version 0.4.6"): a compiled package from another release than the one it works with
INCOMPATIBLE_PAIR = re.compile(
    r"\b(?P<a>[a-z][\w.-]{1,30}) (?:version )?(?P<av>\d+\.\d+(?:\.\d+){0,2})\b[^.;]{0,40}?\b(?:is )?(?:not compatible|incompatible) "
    r"with (?P<b>[a-z][\w.-]{1,30}) (?:version )?(?P<bv>\d+\.\d+(?:\.\d+){0,2})",
    re.I,
)


def _incompatible_pair(line: str) -> list[Reading]:
    m = INCOMPATIBLE_PAIR.search(line)
    if m is None:
        return []
    what = f"{m.group('a')} {m.group('av')} and {m.group('b')} {m.group('bv')} are releases that do not work together"
    facts = {
        "package": m.group("a"),
        "version": m.group("av"),
        "with": m.group("b"),
        "with_version": m.group("bv"),
    }
    return [
        Reading("incompatible-pair", {"binary-incompatible": 0.8, "requirements-unmet": 0.3}, what, facts)
    ]


# a package's check of another package's release, which names the release it wants and the one it got: "this tch
# version expects PyTorch 2.5.0, got 2.5.1", pip's "torchvision 0.16.0 requires torch==2.1.0, but you have torch
# 2.2.0 which is incompatible", "needs numpy 1.26, found 2.0.1": one was installed beside a release of the other it
# was not made for. CUDA libraries and the driver are compiled-vs-loaded's.
VERSION_EXPECTED = re.compile(
    r"\b(?:expects?|expected|requires?|required|needs?|wants?)\s+(?P<pkg>[a-z][\w.-]{1,30}?)\s*(?:version\s*)?"
    # one release, or pip's specifier list ('torch<2.2,>=2.1'): the whole of it is what is wanted
    r"(?P<want>(?:[=<>!~]=?\s*)?v?\d+(?:\.\d+){1,3}(?:\s*,\s*[=<>!~]=?\s*v?\d+(?:\.\d+){0,3}){0,3})(?![\d.])[^.;\n]{0,40}?"
    r"\b(?:got|found|but (?:you have|found|got|have)|you have|installed(?: is)?)\s+(?:(?P=pkg)\s*)?(?:version\s*)?"
    r"v?(?P<have>\d+\.\d+(?:\.\d+){0,2})\b",
    re.I,
)
# words a check or an assertion compares values of, and the CUDA libraries compiled-vs-loaded reads
NOT_A_PACKAGE = re.compile(
    r"^(?:(?:lib)?(?:cudnn|cusolver|cublas(?:lt)?|cufft|cusparse|cupti|nccl|nvrtc|nvjitlink|cudart)\w*|ptxas|nvcc|cuda"
    r"|driver|nvidia|gpu|compute|capability|sm|python|version|value|values|output|input|result|shape|size|length"
    r"|dim|dims|number|count|a|an|at|the|v)$",
    re.I,
)


def _version_expected(line: str) -> list[Reading]:
    m = VERSION_EXPECTED.search(line)
    if m is None or NOT_A_PACKAGE.match(m.group("pkg")):
        return []
    want = re.sub(r"\s+", "", m.group("want")).lstrip("=v")
    if want == m.group("have"):
        return []
    facts = {"package": m.group("pkg"), "wanted": want, "found": m.group("have")}
    what = f"{m.group('pkg')} {want} is what is required, {m.group('have')} the release installed"
    return [Reading("version-expected", {"requirements-unmet": 0.8, "binary-incompatible": 0.3}, what, facts)]


# a build that says it holds no GPU support: "Torch not compiled with CUDA enabled", "The installed version of
# bitsandbytes was compiled without GPU support", ONNX Runtime's "CUDA execution provider is not enabled in this
# build", "jaxlib was built without CUDA support" (TensorFlow's "not built with CUDA kernel binaries compatible with
# compute capability 7.5" is an architecture's, not this)
BUILT_WITHOUT = re.compile(  # CUDA or the GPU only: a CUDA build without NCCL or cuDNN is no CPU build
    r"(?:\bnot|n't|\bnever)\s+(?:been\s+)?(?:compiled|built|enabled)\s+with\s+(?:CUDA|GPU)\b(?!\s+kernel)"
    r"|\b(?:compiled|built)\s+without\s+(?:CUDA|GPU)\b"
    r"|\b(?:CUDA|GPU)(?:\s+execution provider|\s+support|\s+backend)?\s+(?:is\s+)?not\s+(?:enabled|available|compiled)"
    r"\s+in\s+this\s+build",
    re.I,
)


# an installer that found no release it may install (pip, Poetry, uv, pixi, conda): "No matching distribution found
# for torch==1.13.1", "Could not find a version that satisfies the requirement torch (from versions: none)", Poetry's
# "Unable to find installation candidates for torch (2.5.1+cu124)", uv's "... we can conclude that your requirements
# are unsatisfiable", conda's UnsatisfiableError: no wheel for this Python or platform, or an index not configured
RESOLVER_REFUSED = re.compile(
    r"No matching distribution found for|Could not find a version that satisfies the requirement"
    r"|Unable to find installation candidates for|requirements are unsatisfiable|version solving failed"
    r"|failed to resolve (?:\w+ )?dependencies"
    r"|No solution found when resolving|ResolutionImpossible|UnsatisfiableError|PackagesNotFoundError"
    r"|is not a supported wheel on this platform",
    re.I,
)


# work a library refuses on this GPU without naming its architecture: nunchaku's "This kernel is not supported on
# your GPU", vLLM's "The quantization method awq is not supported for the current GPU" (the capability reader reads
# the numbers where the line has them)
GPU_REFUSED = re.compile(
    r"(?:not supported|unsupported|not available|no kernels?|not compatible|incompatible)\s+(?:on|for|with)\s+"
    r"(?:your|this|the current|the)\s+(?:GPU|graphics card)\b",  # not 'this device': CUDA's own statuses say that
    re.I,
)


# Readers of one phrase that names its cause, whatever else the line says: (reader, pattern, causes, what it means)
PHRASE_READERS: tuple[tuple[str, re.Pattern[str], dict[str, float], str], ...] = (
    (
        "built-without",
        BUILT_WITHOUT,
        {"cpu-only-build": 0.8, "library-bug": 0.1},
        "the build says it holds no GPU support",
    ),
    (
        "resolver-refused",
        RESOLVER_REFUSED,
        {"requirements-unmet": 0.8, "cpu-only-build": 0.1},
        "the installer found no release it may install here",
    ),
    (
        "gpu-refused",
        GPU_REFUSED,
        {"arch-unsupported": 0.6, "dtype-mismatch": 0.15},
        "the work is refused on this GPU: a build or a feature without code for its architecture",
    ),
)


def _phrases(line: str) -> list[Reading]:
    return [
        Reading(reader, dict(causes), f"{what} ('{m.group(0)}')", {})
        for reader, pattern, causes, what in PHRASE_READERS
        if (m := pattern.search(line))
    ]


# the module that failed to load, named before the symbol: '.../ops/build/correlation.so: undefined symbol'
MODULE_BEFORE = re.compile(
    r"(?<![\w-])([\w-]+)(?:\.cpython-[\w-]+|\.abi3)?\.(?:so|pyd|dll)(?:\.[\d.]+)?:\s*undefined symbol"
)
MANGLED = re.compile(r"undefined symbol: (?P<symbol>_ZN?[KVr]*(?P<len>\d{1,2})(?P<rest>\w+))")


@functools.cache
def _namespaces() -> dict[str, dict[str, Any]]:
    return {
        ns: row for row in knowledge.table("status_codes").get("namespace", []) for ns in row["namespaces"]
    }


def _mangled_symbol(line: str) -> list[Reading]:
    """An undefined C++ symbol in a library's namespace (_ZN3c10... is c10::...): the module calling it was
    built against another release of that library."""
    m = MANGLED.search(line)
    if m is None:
        return []
    first = m.group("rest")[: int(m.group("len"))]
    row = _namespaces().get(first)
    if row is None or len(first) != int(m.group("len")):
        return []
    what = f"{m.group('symbol')[:60]} is in {row['name']}'s namespace {first}:: and the {row['name']} loaded lacks it"
    facts = {"library": row["id"], "symbol": m.group("symbol"), "namespace": row["id"]}
    module = MODULE_BEFORE.search(line, 0, m.end())
    if module:
        facts["module"] = module.group(1)
    return [Reading("symbol", dict(row["causes"]), what, facts)]


# an undefined C symbol of a CUDA library's API, named by its prefix ('undefined symbol: cudnnSetFilterNdDescriptor_v3',
# 'cublasLtHSHMatmulAlgoInit'): the copy of that library loaded is another release than the one the module was built
# against (a versioned one, 'version libX.so.N', is _versioned_symbol's)
LIBRARY_SYMBOL = re.compile(
    r"undefined symbol: (?P<symbol>(?P<prefix>cudnn|cublasLt|cublas|cusparse|cusolver|cufft|curand|nccl|nvrtc|nvJitLink)"
    r"[A-Z]\w*)(?!,? version )"
)


def _library_symbol(line: str) -> list[Reading]:
    found = _library_named(LIBRARY_SYMBOL, "prefix", line)
    if found is None:
        return []
    m, row = found
    causes = _wrong_copy_causes(row)
    what = f"{m.group('symbol')[:60]} is {row['name']}'s, and the {row['name']} loaded lacks it: another release of it"
    return [Reading("symbol", causes, what, {"library": row["id"], "symbol": m.group("symbol")})]


def _endings(line: str) -> list[Reading]:
    return [
        Reading("exit-status", e.causes, f"{e.how}: {e.name}, {e.meaning}", {"ending": e.name})
        for e in exit_status.read(line)
    ]


# ------------------------------------------------------------------ status codes
@dataclasses.dataclass(frozen=True)
class _Tables:
    names: dict[str, tuple[dict[str, Any], dict[str, Any]]]  # NAME (upper) -> (enum, row)
    numbers: dict[tuple[str, int], list[tuple[dict[str, Any], bool]]]  # (enum id, n) -> [(row, old)]
    enums: list[dict[str, Any]]
    label_re: re.Pattern[str]
    label_of: dict[str, str]  # lower-case label -> enum id
    success_re: re.Pattern[str]


@functools.cache
def _tables() -> _Tables:
    data = knowledge.table("status_codes")
    names: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    numbers: dict[tuple[str, int], list[tuple[dict[str, Any], bool]]] = {}
    label_of: dict[str, str] = {}
    for enum in data["enum"]:
        for row in enum["code"]:
            for name in [row["name"], *row.get("aliases", [])]:
                names[name.upper()] = (enum, row)
            for key, old in (("code", False), ("old_code", True)):
                if key in row:
                    numbers.setdefault((enum["id"], row[key]), []).append((row, old))
        label_of.update({label.lower(): enum["id"] for label in enum.get("labels", [])})
    labels = "|".join(re.escape(x) for x in sorted(label_of, key=len, reverse=True))
    successes = "|".join(re.escape(e["success"]) for e in data["enum"])
    return _Tables(
        names,
        numbers,
        data["enum"],
        re.compile(rf"(?<![\w])({labels})[\s:=#(]{{0,4}}(\d{{1,5}})\b(?!\s*\(\w)", re.I),
        label_of,
        # glog's CHECK_EQ "CUBLAS_STATUS_SUCCESS (13 vs. 0)"; Caffe2's CAFFE_ENFORCE "error == cudaSuccess. 2 vs 0."
        re.compile(rf"\b({successes})(?:\s*\(|\.\s+)(\d{{1,5}}) vs\.? 0\b"),
    )


NAME_TOKEN = re.compile(
    r"\b(?:cudaError[A-Z]\w*|CUDA_ERROR_\w+|CU(?:BLAS|DNN|SOLVER|SPARSE)_STATUS_\w+|CUFFT_\w+"
    r"|NVRTC_ERROR_\w+|nccl[A-Z]\w*)"
)
CAMEL_RESULT = re.compile(
    r"\bCuda(?:Error|Result|DriverError)?(?:\(|::)([A-Z][a-z]{1,20}(?:[A-Z][a-z0-9]{0,20}){1,8})\b"
)
# Python, Julia and Rust wrappers name a library's status in camel case: libcudnn.cudnnStatusArchMismatch,
# cublasStatusNotSupported
CAMEL_STATUS = re.compile(
    r"\b(cudnn|cublas|cusolver|cusparse)Status([A-Z][a-z0-9]{1,20}(?:[A-Z][a-z0-9]{0,20}){0,8})\b"
)
CALL_RETURNED = re.compile(
    r"\b((?:cu|nccl|nvrtc)[a-zA-Z]\w*)(?:\([^()]{0,80}\))?:?\s+(?:failed with (?:error|status)(?: code)?|returned(?: error| status)?)"
    r"\s*[#=:]?\s*(\d{1,5})\b(?!\s*\(\w)"
)
FIXED_FORMATS = (  # number formats whose enum the format itself names
    (
        re.compile(r"\bline ?= ?\d+ error ?= ?(\d{1,4})\b"),
        "cudaError_t",
    ),  # THCudaCheck FAIL file=... line=... error=48
    (
        re.compile(r"\bCUDA error at \S+ code=(\d{1,4})\b(?!\()"),
        "cudaError_t",
    ),  # CUDA samples' checkCudaErrors
    (re.compile(r"\(code #?(\d{1,4}), ERROR_[A-Z_]+\)"), "CUresult"),  # CUDA.jl: (code 999, ERROR_UNKNOWN)
)
NUMBER = re.compile(r"(?<![\w.])(\d{1,5})(?![\w.]|\.\d)")


def _status_codes(line: str) -> list[Reading]:
    t = _tables()
    found: dict[str, Reading] = {}

    def add(enum: dict[str, Any], row: dict[str, Any], old: bool = False) -> None:
        if row["name"] in found:
            return
        if old:
            code = f"{row['old_code']}, {enum['old_numbering']} numbering"
        else:
            code = f"{row['code']}" + (
                f"; {row['old_code']} in {enum['old_numbering']}" if "old_code" in row else ""
            )
        found[row["name"]] = Reading(
            "status-code",
            dict(row["causes"]),
            f"{row['name']} ({enum['kind']} {code}): {row['meaning']}",
            {"status": row["name"], "enum": enum["id"], "code": str(row["old_code"] if old else row["code"])}
            | ({"min_cc": str(row["min_cc"])} if "min_cc" in row else {}),
        )

    read_at: set[int] = set()  # where a number was read by its format: the text reader leaves it

    def by_number(enum_id: str, m: re.Match[str], group: int) -> None:
        n, near = versions.integer(m.group(group)), line[m.end() : m.end() + 120]
        read_at.add(m.start(group))
        rows = t.numbers.get((enum_id, n), [])
        if len({id(r) for r, _ in rows}) > 1:  # two numberings disagree: the row's own text decides
            rows = [(r, old) for r, old in rows if r.get("text") and r["text"].lower() in near.lower()]
        if len({id(r) for r, _ in rows}) == 1:
            enum = next(e for e in t.enums if e["id"] == enum_id)
            add(enum, *rows[0])

    for m in NAME_TOKEN.finditer(line):
        hit = t.names.get(m.group(0).upper())
        if hit is not None:
            add(*hit)
    for m in CAMEL_RESULT.finditer(
        line
    ):  # Rust / .NET bindings: Cuda(NoBinaryForGpu), CudaError::OutOfMemory
        hit = t.names.get("CUDA_ERROR_" + _snake(m.group(1)).upper())
        if hit is not None:
            add(*hit)
    for m in CAMEL_STATUS.finditer(line):
        hit = t.names.get(f"{m.group(1)}_STATUS_{_snake(m.group(2))}".upper())
        if hit is not None:
            add(*hit)
    for m in t.label_re.finditer(line):
        by_number(t.label_of[m.group(1).lower()], m, 2)
    for m in CALL_RETURNED.finditer(line):
        enum_id = _enum_of_function(m.group(1))
        if enum_id:
            by_number(enum_id, m, 2)
    for m in t.success_re.finditer(line):
        enum_id = next(e["id"] for e in t.enums if e["success"] == m.group(1))
        by_number(enum_id, m, 2)
    for pattern, enum_id in FIXED_FORMATS:
        for m in pattern.finditer(line):
            by_number(enum_id, m, 1)
    _number_next_to_text(line, add, read_at)
    return list(found.values())


def _snake(camel: str) -> str:
    """ArchMismatch -> Arch_Mismatch (the caller upper-cases it)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", camel)


def _enum_of_function(name: str) -> str | None:
    """cudaMalloc -> cudaError_t, cuInit -> CUresult, cublasCreate_v2 -> cublasStatus_t."""
    fits = [
        (len(prefix), enum["id"])
        for enum in _tables().enums
        for prefix in enum.get("prefixes", [])
        if name.startswith(prefix) and name[len(prefix) : len(prefix) + 1].isupper()
    ]
    return max(fits)[1] if fits else None


def _number_next_to_text(line: str, add: Callable[..., None], read_at: set[int]) -> None:
    """A number right beside its own row's text ("Error 803: system has unsupported display driver",
    "unknown error (code 999"); in a line that names the enum's context (NCCL), the text alone where
    the line quotes it ("NCCL error in: ...cpp:264, unhandled system error"); a CUDA runtime error's text
    alone where NCCL quotes it ("NCCL WARN Cuda failure 'invalid device function'")."""
    t = _tables()
    low = line.lower()
    enums = [e for e in t.enums if e.get("text_context", "") in low]
    for m in NUMBER.finditer(line):
        for enum in enums if m.start() not in read_at else []:
            for row, old in t.numbers.get((enum["id"], versions.integer(m.group(1))), []):
                text = row.get("text", "").lower()
                after = low[m.end() : m.end() + len(text) + 6].lstrip(" :,)]-")
                if text and (after.startswith(text) or _text_before(low[: m.start()], text)):
                    add(enum, row, old)
    quoting = [e for e in t.enums if any(q in low for q in _quoted_by(e))]
    for enum in enums + quoting:
        quoted = [
            row
            for row in (enum["code"] if enum.get("text_context") or enum in quoting else [])
            if row.get("text")
            and (
                re.search(rf"[,:'\"]\s?{re.escape(row['text'].lower())}\b", low)
                or any(f"{q}{row['text'].lower()}" in low for q in _quoted_by(enum))
            )
        ]
        for row in quoted:  # the longest text quoted, not a shorter one inside it ('operation not permitted')
            if not any(o is not row and row["text"].lower() in o["text"].lower() for o in quoted):
                add(enum, row)


def _quoted_by(enum: dict[str, Any]) -> list[str]:
    """The words after which an enum's error-string texts count alone (one, or a list)."""
    quoted = enum.get("quoted_by") or []
    return [quoted] if isinstance(quoted, str) else list(quoted)


def _text_before(before: str, text: str) -> bool:
    """'<text> (code #214' / '<text>, error 4': the row's text right before its number."""
    tail = before[-len(text) - 12 :]
    at = tail.rfind(text)
    return (
        at >= 0
        and re.fullmatch(r"[\s(,]{0,4}(?:code|error)?[\s#=:]{0,3}", tail[at + len(text) :]) is not None
    )


# ------------------------------------------------------------------ sonames
LOAD_FAILED = re.compile(
    r"cannot open shared object|(?:could not|couldn't|can't|cannot|unable to|failed to) (?:load|open|find|locate|dlopen)"
    r"|not found|no such file|DLL load failed|\bOSError\b|\bImportError\b|Error loading|LoadLibrary failed"
    r"|undefined symbol|not defined in file|error while loading shared libraries|Cannot dlopen|is not installed",
    re.I,
)
WRONG_COPY = re.compile(r"^: (?:undefined symbol|symbol \S+, version)|^[^:]{0,3}not defined in file")
SONAME = re.compile(
    r"(?<![\w.-])lib([A-Za-z][\w-]*?)\.so((?:\.\d+){0,3})(?![\w-])"
    r"|(?<![\w.-])([A-Za-z][\w-]*?)(?:64|32)?_(\d+)(?:_\d+)?\.dll\b|(?<![\w.-])(nvcuda|nvml)\.dll\b"
    r"|(?<![\w.-])([A-Za-z][\w-]*?) (?:shared |dynamic |dso )?librar(?:y|ies)\b",  # "cannot load cudnn shared library"
    re.I,
)
SYMBOL_VERSION = re.compile(r"undefined symbol: \S+,? version $")  # the soname is the copy that lacks it
# a copy of a library that does not fit the module that loads it (a symbol it lacks): cuDNN's is cudnn-mismatch
WRONG_CUDNN = {"cudnn-mismatch": 0.85, "multiple-toolkits": 0.5}
WRONG_LIBRARY = {"multiple-toolkits": 0.7, "env-path-misconfig": 0.45, "library-bug": 0.1}
NOT_THE_FAILURE = re.compile(r"(?:required|needed) by\b", re.I)  # the soname after it is not the one missing


@functools.cache
def _libraries() -> list[tuple[re.Pattern[str], dict[str, Any]]]:
    return [
        (re.compile(rf"(?:{row['match']})", re.I), row) for row in knowledge.table("status_codes")["library"]
    ]


def _library_row(base: str) -> dict[str, Any] | None:
    """The library table's row of a library named by its base name ('cublas', 'nvinfer', 'cudnn')."""
    return next((r for p, r in _libraries() if p.fullmatch(base)), None)


def _load_causes(row: dict[str, Any], versioned: bool) -> dict[str, float]:
    """What a library of this row that could not be loaded means: the unversioned name (libcuda.so, a
    development link) has causes of its own where the table gives them."""
    return dict(row["causes"] if versioned or "unversioned_causes" not in row else row["unversioned_causes"])


def _library_named(rx: re.Pattern[str], group: str, line: str) -> tuple[re.Match[str], dict[str, Any]] | None:
    """The match of `rx` on the line and the library table's row of the library its `group` names, or None."""
    m = rx.search(line)
    row = _library_row(m.group(group)) if m else None
    return (m, row) if m is not None and row is not None else None


def _wrong_copy_causes(row: dict[str, Any]) -> dict[str, float]:
    """What a copy of this library that lacks a symbol its caller needs means (cuDNN's: cudnn-mismatch)."""
    return dict(WRONG_CUDNN if row["name"] == "cuDNN" else WRONG_LIBRARY)


def library_causes(name: str) -> dict[str, float] | None:
    """The causes the library table gives a soname or DLL that could not be loaded ('libnvinfer.so.8' and
    'nvinfer_10.dll' are TensorRT's, most often installed off the loader's path; 'nvcuda.dll' is the
    driver's), or None for a library it does not hold."""
    m = SONAME.fullmatch(name.strip())
    base = m and (m.group(1) or m.group(3) or m.group(5))
    if m is None or not base:
        return None
    row = _library_row(base)
    return None if row is None else _load_causes(row, bool(m.group(2) or m.group(4) or m.group(5)))


def _sonames(line: str) -> list[Reading]:
    if not LOAD_FAILED.search(line):
        return []
    hits = []
    for m in SONAME.finditer(line):
        base = m.group(1) or m.group(3) or m.group(5) or m.group(6)
        row = _library_row(base)
        if row is None or NOT_THE_FAILURE.search(line, 0, m.start()):
            continue
        if m.group(6):  # named in words: no version
            ver = ""
        else:
            ver = (m.group(2) or "").lstrip(".") if m.group(1) else _dll_version(base, m.group(4) or "")
        after = line[m.end() : m.end() + 120]
        rank = (
            0
            if after.startswith((": cannot open", " => not found"))
            else 1
            if WRONG_COPY.search(after) or SYMBOL_VERSION.search(line, 0, m.start())
            else 2
        )
        hits.append((rank, m.group(0), ver, row, rank == 1))
    if not hits:
        return []
    _, soname, ver, row, wrong_copy = min(hits, key=lambda h: h[0])
    causes = _wrong_copy_causes(row) if wrong_copy else _load_causes(row, bool(ver))
    facts = {"library": row["id"], "soname": soname}
    if ver:
        facts["wanted"] = ver
        if row.get("fact"):
            facts[row["fact"]] = ver
        major = ver.split(".")[0]
        if row.get("wheel") and major in ("11", "12", "13"):
            facts["wheel"] = str(row["wheel"]).format(major=major)
    span = (row.get("cuda_by_major") or {}).get(ver) if ver and "." not in ver else None
    if span:  # the library's own major (libcusolver.so.10): the CUDA releases that ship it
        facts["cuda_range"] = f"{span[0]}-{span[1]}"
    how = "is a copy that does not fit the others" if wrong_copy else "could not be loaded"
    shipped = f", in CUDA {span[0]} to {span[1]}" if span else ""
    return [
        Reading("soname", causes, f"{soname} ({row['name']}{' ' + ver if ver else ''}{shipped}) {how}", facts)
    ]


# glibc's 'undefined symbol: NAME, version libX.so.N' for a symbol whose name carries the CUDA release that
# added it (nvJitLink's __nvJitLinkCreate_12_8)
VERSIONED_SYMBOL = re.compile(
    r"undefined symbol: (?P<symbol>\w+?_(?P<major>1\d)_(?P<minor>\d))\b,? version (?P<soname>lib(?P<base>\w+?)\.so\.\d+)"
)


def _versioned_symbol(line: str) -> list[Reading]:
    found = _library_named(VERSIONED_SYMBOL, "base", line)
    if found is None:
        return []
    m, row = found
    cuda = f"{m.group('major')}.{m.group('minor')}"
    facts = {
        "library": row["id"],
        "soname": m.group("soname"),
        "symbol_cuda": cuda,
        "symbol": m.group("symbol"),
    }
    if row.get("wheel"):
        facts["wheel"] = str(row["wheel"]).format(major=m.group("major"))
    what = f"{m.group('symbol')} is {row['name']}'s of CUDA {cuda}: the {m.group('soname')} loaded is older"
    return [Reading("versioned-symbol", {"multiple-toolkits": 0.6, "requirements-unmet": 0.4}, what, facts)]


def _dll_version(base: str, digits: str) -> str:
    """cudart64_110 -> 11.0, cudart64_101 -> 10.1, cudart64_92 -> 9.2, cublas64_12 -> 12, cudnn64_8 -> 8."""
    if len(digits) == 3:
        return f"{digits[:2]}.{digits[2]}"
    if len(digits) == 2 and not digits.startswith("1") and re.match(r"cudart|nvrtc", base, re.I):
        return f"{digits[0]}.{digits[1]}"
    return digits


# ------------------------------------------------------------------ compiled vs loaded
VERSION = re.compile(
    r"(?<![\w.:/-])(?:\((\d+), ?(\d+), ?(\d+)\)|(\d+(?:\.\d+){1,3})|(\d{4,6}))(?![\w-]|\.\d)"
)
SIDE_WORDS = re.compile(
    r"\b(compiled?|built|build|source|requires?)\b"
    r"|\b(loaded|found|runtime|installed|linked|detected|current|got|machine|system|have)\b",
    re.I,
)
LIBRARY_WORDS = re.compile(
    r"\b(cudnn|cusolver|cublas(?:lt)?|cufft|cusparse|cupti|nccl|nvrtc|nvjitlink|ptxas|cuda)\b", re.I
)
DRIVER_OLD = re.compile(
    r"\bdriver\b[^.]{0,60}?\b(?:is insufficient|too old|(?:is )?older than)|insufficient (?:NVIDIA |CUDA )?driver",
    re.I,
)
FOUND_VERSION = re.compile(r"found version (\d{4,6})", re.I)
# nvidia-container-cli refuses an image whose CUDA the driver does not reach: "requirement error:
# unsatisfied condition: cuda>=12.4, please update your driver to a newer version"
CONTAINER_CUDA = re.compile(r"unsatisfied condition: cuda\s*>=?\s*(\d+\.\d+)", re.I)
# ... or names the last alternative it tried, an image's exception for Tesla boards on an older driver
# ("--require=cuda>=10.0 brand=tesla,driver>=384,driver<385 ... unsatisfied condition: brand = tesla"):
# the CUDA the image requires, written on the same line, is what the driver did not reach
CONTAINER_ALTERNATIVE = re.compile(r"unsatisfied condition: (?:brand|driver)\s*[=<>]", re.I)
REQUIRED_CUDA = re.compile(r"(?:--require=|NVIDIA_REQUIRE_CUDA=)\s*[\"']?cuda\s*>=?\s*(\d+\.\d+)", re.I)


def _compiled_vs_loaded(line: str) -> list[Reading]:
    image = CONTAINER_CUDA.search(line) or (CONTAINER_ALTERNATIVE.search(line) and REQUIRED_CUDA.search(line))
    if image:
        row = knowledge.driver_row(image.group(1))
        facts = {"library": "driver", "older": "driver", "cuda_wanted": image.group(1)}
        if row:  # the container checks the CUDA itself, not its minor-version compatibility
            facts["driver_needed"] = str(row["linux_min"])
        what = f"the container image needs CUDA {image.group(1)}, which this driver does not reach"
        return [Reading("compiled-vs-loaded", {"driver-too-old": 0.95}, what, facts)]
    sides: dict[str, str] = {}  # "compiled" / "loaded" -> the first version written on that side
    for m in VERSION.finditer(line):
        words = list(SIDE_WORDS.finditer(line[max(0, m.start() - 48) : m.start()]))
        if words:  # the nearest word before the version says which side it is
            sides.setdefault("compiled" if words[-1].group(1) else "loaded", m.group(0))
    driver = DRIVER_OLD.search(line)
    if driver and "ptxas" not in line.lower():
        found = FOUND_VERSION.search(line)
        facts = {"library": "driver", "older": "driver"}
        if found:
            facts["loaded"] = versions.cuda_from_int(versions.integer(found.group(1)))
        what = "the NVIDIA driver is older than the CUDA the program was built with"
        return [Reading("compiled-vs-loaded", {"driver-too-old": 0.95, "no-gpu-visible": 0.1}, what, facts)]
    if driver:  # XLA: the driver's CUDA version is older than the ptxas CUDA version
        nums = VERSION.findall(line[driver.start() :])
        facts = {"library": "ptxas", "older": "driver"}
        if len(nums) >= 2:
            facts["loaded"], facts["compiled"] = (next(x for x in n if x) for n in nums[:2])
        what = "ptxas is newer than the CUDA version the NVIDIA driver supports"
        return [
            Reading("compiled-vs-loaded", {"toolchain-not-found": 0.7, "driver-too-old": 0.6}, what, facts)
        ]
    named = [x.lower() for x in LIBRARY_WORDS.findall(line)]
    if len(sides) < 2 or not named:
        return []
    lib = next((x for x in named if x != "cuda"), "cuda")
    compiled, loaded = (normalise(sides[s], lib) for s in ("compiled", "loaded"))
    c, f = versions.parse(compiled), versions.parse(loaded)
    if c is None or f is None or c == f:
        return []
    older = "loaded" if f < c else "compiled"
    if lib == "cudnn":
        causes = {"cudnn-mismatch": 0.95, "multiple-toolkits": 0.3}
    elif lib != "cuda" or re.search(r"\bruntime\b", line, re.I):
        causes = (
            {"cuda-libs-missing": 0.85, "multiple-toolkits": 0.4, "env-path-misconfig": 0.2}
            if older == "loaded"
            else {"multiple-toolkits": 0.6, "cuda-libs-missing": 0.4}
        )
    else:  # a CUDA toolkit (nvcc) other than the one the framework was built with
        causes = {"multiple-toolkits": 0.7, "env-path-misconfig": 0.35, "toolchain-not-found": 0.3}
    name = {"cudnn": "cuDNN", "cuda": "CUDA"}.get(lib, lib)
    facts = {"library": lib, "compiled": compiled, "loaded": loaded, "older": older}
    what = f"{name} {loaded} is the one found, but the program was built against {name} {compiled} ({older} is older)"
    return [Reading("compiled-vs-loaded", causes, what, facts)]


def normalise(raw: str, lib: str) -> str:
    """(8, 9, 2) -> 8.9.2; integer encodings: cuDNN 8600 -> 8.6.0, CUDA 11020 -> 11.2, NCCL 21803 ->
    2.18.3, other CUDA libraries (cuSOLVER 11401) -> 11.4.1."""
    if raw.startswith("("):
        return ".".join(re.findall(r"\d+", raw))
    if "." in raw:
        return raw
    n = versions.integer(raw)
    if lib == "cudnn":
        return versions.cudnn_from_int(raw) or raw
    if lib in ("cuda", "driver"):
        return versions.cuda_from_int(n)
    if lib == "nccl":
        return f"{n // 10000}.{n % 10000 // 100}.{n % 100}"
    return f"{n // 1000}.{n % 1000 // 100}.{n % 100}"
