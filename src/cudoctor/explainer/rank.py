"""From matches and facts to the root error and ranked causes.

Score of a cause = what the log says (each matched signature's prior for it, full weight for
the root error's signature, less for the others) + what the facts say (a check that confirms
a cause the log allows counts more than any prior) + general rules on captured values.
"""

from __future__ import annotations

import collections
import dataclasses
import re
from typing import Any

from cudoctor import knowledge, versions
from cudoctor.checks import run_checks, view
from cudoctor.explainer import (
    cpu_rules,
    evidence,
    gpu_rules,
    library_rules,
    memory_rules,
    readers,
    setting_rules,
    signatures,
    similar,
    summaries,
)
from cudoctor.explainer.ranked import CONFIRM, RULE_OUT, RankedCause, bump
from cudoctor.explainer.scan import Match, ScanResult
from cudoctor.explainer.summaries import Summary
from cudoctor.fixes import planner, scope
from cudoctor.model import Finding, Severity, Snapshot

UNRELATED = {Severity.ERROR: 0.2, Severity.WARNING: 0.1, Severity.INFO: 0.0}
ALONE = {Severity.ERROR: 0.5, Severity.WARNING: 0.3, Severity.INFO: 0.05}
BUILD_KERNELS = {"arch-unsupported", "arch-ptx-jit-only"}  # findings on the kernels a framework build holds
INT32 = 2**31
PRE_RELEASE = re.compile(r"\d\.?(?:dev|a|b|rc)\d*(?:\+|$)|\+git|nightly", re.I)


@dataclasses.dataclass
class Explanation:
    root: Match | None
    root_fallback: tuple[int, str] | None
    causes: list[RankedCause]
    matches: list[Match]
    findings: list[Finding]
    scan: ScanResult
    summary: Summary | None = None  # with no root: the fallback line is a launcher's summary of this kind
    learned: evidence.Evidence | None = None  # the model's distribution and the similar solved reports
    plan: planner.Context = dataclasses.field(
        default_factory=planner.Context
    )  # the facts fixes are planned from
    apart: list[Finding] = dataclasses.field(default_factory=list)  # findings of causes the log does not name


# a line a traceback prints about the code, not the error: a Python frame, a C++ backtrace frame, the source line
# of a raise or a warning (the message itself follows, as 'AssertionError: ...' or 'file.py:12: UserWarning: ...')
ECHO = re.compile(r"^\s*(?:File \"[^\"]*\", line \d+|frame #\d+:|raise \w|warnings\.warn\()")


def is_echo(text: str) -> bool:
    return ECHO.match(text) is not None


def pick_root(matches: list[Match]) -> Match | None:
    """The most specific error match, the earliest among equally specific ones (a framework's verdict that
    its build cannot use the GPU before any: a new build is the fix whatever else failed to load); a warning
    signature only when no error matched. Where that is a traceback's echo of the code ('raise
    AssertionError("Torch not compiled with CUDA enabled")'), the line where the same signature reads the
    message itself is the root."""
    errors = [m for m in matches if not m.sig.is_context]
    if not errors:
        return None
    best = min(errors, key=lambda m: (m.sig.warning, -m.sig.specificity, not m.sig.unusable_build, m.line))
    if is_echo(best.text):
        said = [m for m in errors if m.sig.id == best.sig.id and not is_echo(m.text)]
        if said:
            return min(said, key=lambda m: m.line)
    return best


def relevant(matches: list[Match]) -> list[Match]:
    """Error matches, plus the context lines (a path, a setting) that bear on one of those errors."""
    allowed = {c for m in matches if not m.sig.is_context for c in _weights(m)}
    return [m for m in matches if not m.sig.is_context or allowed.intersection(m.sig.context_for)]


ERROR_LOOKING = re.compile(
    r"\b\w*(?:Error|Exception|error|FAIL)\b|(?<![\w\[])ERROR:"  # 'ERROR:' as Python's logging prints it (a launcher's '[ERROR]' tag is its summary)
    r"|core dumped|Segmentation fault|Bus error|Floating point exception|\bSIG(?:SEGV|ABRT|BUS|FPE|ILL)\b"
    r"|^\s*Aborted\s*$|\b\d+\s+Aborted\b"  # the shell's word alone, or after the pid in a script
    # a Rust thread's panic with its message on the line ("panicked at 'called `Result::unwrap()` on an `Err`
    # value: ...'"; newer Rust puts the message on the next line, which is read on its own), Go's panic
    r"|\bpanicked at '|^\s*panic: "
)


# A line that reports a failure without the word error: a library not found, a process killed,
# a GPU count of zero, a warning that something will hang.
SYMPTOM = re.compile(
    r"\b(?:cannot|can't|could not|couldn't|unable to|failed|failure|not found|not implemented|not supported"
    r"|not available|not compiled|not compatible|unsupported|insufficient|incompatible|killed|out of memory|will hang|may hang"
    r"|warning|illegal (?:hardware )?instruction|illegal value|invalid|fatal|fault|terminated"
    r"|mismatch(?:es|ed)?|only supported|requires? (?:a |an )?(?:gpu|cuda|compute capability|\d)"
    r"|without (?:gpu|cuda) support|without support for|not enough|too (?:old|new|many|large|small)|beyond the limit"
    r"|falling back to cpu|slow on (?:the )?cpu|(?:running|runs) on (?:the )?cpu|duplicate gpu|larger than the maximum|out of resources?|unavailable"
    r"|no such file or directory|does not support|doesn't support|minimum required|ignoring visible gpu"
    r"|dispatched on the cpu|xid|running in cpu mode|disabling gpu support|gpu support disabled"
    r"|using device(?:_type)?\W{0,3}cpu|(?:wasn't|was not|weren't|were not) able to)\b"
    r"|\b[A-Z]+_ERROR_[A-Z_]+|\b[A-Z]+_STATUS_(?!SUCCESS\b)[A-Z_]+|\(\w+ vs\.? \w+\)"  # a status name; glog's CHECK
    r"|\b(?:cudnn|cublas|cusolver|cusparse)Status(?!Success\b)[A-Z]\w+"  # the same in a wrapper's camel case
    r"|didn't work|does not work|doesn't work|not working|refuse[sd]"
    r"|\bundefined (?:symbol|reference)\b"  # the loader or the linker, quoted without its ImportError: or ld:
    # something looked for and not there: Python's 'No module named', nvidia-smi's 'No devices were found'
    r"|\bno module named|\bno (?:\w+ )?(?:devices?|gpus?)\W{0,3}(?:were |was )?(?:found|detected|available)"
    r"|available\W{1,6}(?:0|false)\b|\bwith cuda\W{1,3}false\b|\bdevice count\W{1,3}0\b"
    r"|\b(?:number of gpus|num_gpus|n_gpus?|gpu count)\W{1,3}0\b"  # a GPU count of zero, as a server logs it
    r"|\bnumber of (?:cuda |gpu )?devices\W{1,3}(?:is\s+)?0\b"  # a CUDA sample's 'WSL: Number of devices is 0'
    # a check and its answer, as a REPL shows them joined: device_count() 0, list_physical_devices('GPU') []
    r"|device_count\(\)\W{1,4}0\b|list_physical_devices\([^)]{0,20}\)\W{1,3}\[\]|is_built_with_cuda\(\)\W{1,3}False\b"
    r"|^\s*\[PhysicalDevice\(name='/physical_device:CPU:0', device_type='CPU'\)\]\s*$",  # TF lists no GPU
    re.I,
)


PASTED_LINES = 3


def pasted_excerpt(
    scan: ScanResult, fallback: tuple[int, str] | None, learned: evidence.Evidence | None
) -> bool:
    """A log of a few lines, none of them error-looking, that resembles a solved report (a close one)."""
    return (
        fallback is not None
        and scan.lines <= PASTED_LINES
        and learned is not None
        and any(h.score >= similar.EXCERPT_AT for h in learned.hits)
    )


def looks_like_error(text: str) -> bool:
    """Whether a line reads like an exception, an error report (Error, Exception, FAIL), a process
    that died on a signal (Segmentation fault, Aborted (core dumped), SIGBUS), or a failure told in
    other words (could not locate, Killed, Num GPUs Available: 0)."""
    line = text.rstrip("\r\n")
    return ERROR_LOOKING.search(line) is not None or SYMPTOM.search(line) is not None


def fallback_root(scan: ScanResult) -> tuple[int, str] | None:
    """With no signature match: the last line that looks like an exception, else the last line that
    tells a failure in other words, else the last line; known harmless lines are passed over (None
    when they are all the log has)."""
    lines = _answers_joined(scan.plain_tail())
    for rx in (ERROR_LOOKING, SYMPTOM):
        for n, raw in reversed(lines):
            if rx.search(raw.rstrip("\r\n")) and not is_echo(raw):
                return _with_cmake_message(lines, *_first_saying(lines, n, raw.rstrip()))
    return lines[-1] if lines else None


# CMake's own header, whose message follows on the indented lines below it: 'CMake Error at CMakeLists.txt:12
# (project):' then '  No CUDA toolset found.'
CMAKE_HEADER = re.compile(r"^\s*CMake (?:Error|Warning)(?: \(dev\))? at [^\n]*:\d+ \([\w]+\):\s*$")


def _with_cmake_message(lines: list[tuple[int, str]], n: int, text: str) -> tuple[int, str]:
    """A CMake header chosen as the error carries its message: the indented line after it, joined."""
    if not CMAKE_HEADER.match(text):
        return n, text
    after = next((raw for m, raw in lines if m > n and raw.strip()), "")
    return (n, f"{text.strip()} {after.strip()}") if after[:1].isspace() else (n, text)


# a logger's or a rank's prefix before a message: '[E 04/17/23 11:09:22.656 3152] ', 'host:4766:4780 [0] '
LINE_PREFIX = re.compile(r"^\S*\s*\[[^\]]{1,60}\]\s+")


def _first_saying(lines: list[tuple[int, str]], n: int, text: str) -> tuple[int, str]:
    """The first line that says what the chosen one says: the same message from another rank, or the one a
    later line quotes when it re-raises it ('RuntimeError: '[dynamic_loader.cpp...] Function X not found'
    occurred')."""
    for m, raw in lines:
        if m >= n:
            break
        body = LINE_PREFIX.sub("", raw.strip())
        # the same words, but not the call an answer was joined to ('>>> torch.cuda.is_available() False')
        if len(body) >= 25 and body in text and not text.startswith(raw.strip()):
            return m, raw.rstrip()
    return n, text


# A check's answer printed on the line after it, as a REPL or a notebook shows it: '>>> torch.cuda.is_available()'
# then 'False' (or '# False', '0')
ASKED = re.compile(r"is_available\(\)|device_count\(\)|is_built_with_cuda\(\)|list_physical_devices\(", re.I)
ANSWER = re.compile(r"^\W*(?:Out\[\d+\]:\s*)?(?:False|0|\[\])\W*$")
OUT_PROMPT = re.compile(r"^Out\[\d+\]:\s*")  # IPython's output prompt


def _answers_joined(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Each bare answer joined to the call it answers ('torch.cuda.is_available() False'), so that it reads
    as the symptom it is."""
    out = []
    for i, (n, raw) in enumerate(lines):
        if i and ANSWER.match(raw) and ASKED.search(lines[i - 1][1]):
            raw = f"{lines[i - 1][1].rstrip()} {OUT_PROMPT.sub('', raw.strip())}"
        out.append((n, raw))
    return out


# torch's Windows DLLs that depend on no CUDA library, only on the Visual C++ runtime and on each other
# (torch/lib: c10.dll, torch_cpu.dll, torch_python.dll, shm.dll, asmjit.dll, uv.dll; the CUDA ones are
# c10_cuda.dll, torch_cuda.dll, caffe2_nvrtc.dll)
TORCH_HOST_DLLS = frozenset(
    {"c10.dll", "torch_cpu.dll", "torch_python.dll", "shm.dll", "asmjit.dll", "uv.dll"}
)


def _weights(m: Match) -> dict[str, float]:
    """The signature's priors, redirected by what it captured (which library failed to load)."""
    xid = _xid_row(m)
    if xid is not None:
        return dict(xid["causes"])
    w = dict(m.sig.causes)
    lib = m.captures.get("lib", "").lower()
    if lib.startswith(("libcudnn", "cudnn")) and "cuda-libs-missing" in w:
        w["cudnn-mismatch"] = max(w.pop("cuda-libs-missing"), w.get("cudnn-mismatch", 0))
    elif lib.startswith(("libcudnn", "cudnn")):
        # taxonomy: a wrong cuDNN library is cudnn-mismatch first, whatever else the message allows
        w["cudnn-mismatch"] = max(w.values()) + 0.05
    elif lib in TORCH_HOST_DLLS and "broken-install" in w:
        # torch's own DLLs that load no CUDA library: what they miss is the Visual C++ runtime or a file of the install
        w["broken-install"] = max(w.values()) + 0.05
    elif (
        re.match(r"libcuda\.so|libnvidia-ml|cuda$", lib)
        and "cuda-libs-missing" in w
        and m.sig.id.endswith(("shared-object", "dynamic-library"))
    ):
        w["no-gpu-visible"] = max(w.pop("cuda-libs-missing"), w.get("no-gpu-visible", 0))
    elif lib and max(w, key=w.__getitem__) == "cuda-libs-missing" and (row := readers.library_causes(lib)):
        # a library that could not be loaded: the library table says what its absence most often means
        scale = max(w.values()) / max(row.values())
        w = {**{c: v * 0.5 for c, v in w.items()}, **{c: v * scale for c, v in row.items()}}
    return w


def _xid_row(m: Match) -> dict[str, Any] | None:
    """The xid.toml row of the Xid code the match captured, if it captured a known one."""
    return knowledge.xid(m.captures["xid"]) if "xid" in m.captures else None


def _xid_steps(m: Match) -> list[str]:
    """What the captured Xid code means and its steps (knowledge/xid.toml), first."""
    row = _xid_row(m)
    if row is None:
        return []
    return [f"Xid {row['code']} is '{row['name']}': {row['meaning']}", *row["fix"]]


def log_scores(matches: list[Match], root: Match | None) -> dict[str, RankedCause]:
    ranked: dict[str, RankedCause] = {}
    by_sig: dict[str, Match] = {}
    context = [m for m in matches if m.sig.is_context]  # they name this log's path or setting
    for m in context + ([root] if root is not None else []) + matches:  # then the root's steps
        by_sig.setdefault(m.sig.id, m)
    for sig_id, m in by_sig.items():
        is_root = root is not None and sig_id == root.sig.id
        factor = 1.0 if is_root or m.sig.is_context else 0.6 * m.sig.specificity / 3
        for cause, w in _weights(m).items():
            rc = ranked.setdefault(cause, RankedCause(cause, 0.0))
            rc.score += w * factor
            rc.evidence.append(f"line {m.line}: {m.text[:300]}")
            steps = _xid_steps(m) + m.sig.fixes_for(m.captures, cause)
            rc.fixes += [f for f in steps if f not in rc.fixes]
            if is_root and not m.sig.generic_fixes:
                rc.generic = False
            if is_root:
                rc.why = m.sig.why_for(m.captures, cause)
    return ranked


def _numbers_product(text: str) -> int:
    best = 0
    for shape in re.findall(r"\b\d+(?:\s*[x×,]\s*\d+){2,}\b", text):
        dims = [versions.integer(d) for d in re.findall(r"\d+", shape)]
        prod = 1
        for d in dims:
            prod *= d
        best = max(best, prod)
    return best


def capture_rules(ranked: dict[str, RankedCause], matches: list[Match], snap: Snapshot, other: str) -> None:
    """General rules on values the log captured, checked against the facts."""
    gpus = view.gpus(snap)
    seen_lists: set[str] = set()
    for m in matches:
        caps = m.captures
        dims = [versions.integer(caps[k]) for k in ("m", "n", "k") if caps.get(k, "").isdigit()]
        if dims and max(dims) >= 2**20:
            bump(
                ranked,
                "library-bug",
                0.5,
                f"line {m.line}: a GEMM dimension of {max(dims)} hits cuBLAS size limits / 32-bit index bugs",
            )
        if caps.get("dtype", "").upper() == "CUDA_R_16BF" and any(
            g.get("cc_t") and g["cc_t"] < (8, 0) for g in gpus
        ):
            bump(
                ranked,
                "dtype-mismatch",
                0.5,
                "bfloat16 GEMM on a GPU older than compute capability 8.0 (no bf16 support)",
            )
            bump(ranked, "arch-unsupported", 0.3, "the GPU predates bfloat16 tensor cores")
        if caps.get("driver_cuda_int", "").isdigit():
            found = versions.cuda_from_int(versions.integer(caps["driver_cuda_int"]))
            bump(
                ranked,
                "driver-too-old",
                0.0,
                f"the driver supports CUDA {found} (found version {caps['driver_cuda_int']})",
            )
        if caps.get("cpu_op") and gpus:
            _gpu_left_idle_rule(ranked, m.line, caps["cpu_op"], gpus)
        if caps.get("smem_limit", "").isdigit():
            _shared_memory_rule(ranked, m.line, versions.integer(caps["smem_limit"]))
        if caps.get("home_list") and caps["home_list"] not in seen_lists:
            seen_lists.add(caps["home_list"])
            _path_list_rule(ranked, m.line, caps["home_list"])
        routine, number = (
            caps.get("routine") or caps.get("mkl_routine"),
            caps.get("param") or caps.get("mkl_param"),
        )
        if routine and number and number.isdigit():
            _blas_argument_rule(ranked, m.line, routine, versions.integer(number))
        if caps.get("alloc_key"):
            setting_rules.alloc_key_rule(ranked, m.line, caps["alloc_key"], snap)
        if m.sig.id == "arch-unsupported/cpp-extension-unknown-arch":  # its capture may be empty
            setting_rules.arch_entry_rule(ranked, m.line, caps.get("arch_entry") or "")
        if m.sig.id == "determinism-unmet/torch-cublas-workspace":
            setting_rules.cublas_workspace_rule(ranked, m.line, snap)
        if caps.get("gloo_iface"):
            setting_rules.gloo_iface_rule(ranked, m.line, caps["gloo_iface"], snap)
        if caps.get("mem_free", "").isdigit() and caps.get("mem_total", "").isdigit():
            _memory_left_rule(
                ranked, m.line, versions.integer(caps["mem_free"]), versions.integer(caps["mem_total"])
            )
    text = " ".join(m.text for m in matches) + " " + other
    if _numbers_product(text) >= INT32:
        bump(
            ranked,
            "library-bug",
            0.5,
            "a tensor with more than 2^31 elements: kernels with 32-bit index math overflow",
        )


def _gpu_left_idle_rule(
    ranked: dict[str, RankedCause], line: int, op: str, gpus: list[dict[str, Any]]
) -> None:
    """A half-precision op ran on the CPU of a machine that has a GPU: the GPU was not usable."""
    name = gpus[0].get("name") or "a GPU"
    reason = f"line {line}: {op} ran on the CPU, yet the machine has {name}"
    bump(ranked, "cpu-only-build", 0.5, reason + ": a CPU-only framework build never uses it")
    bump(ranked, "no-gpu-visible", 0.4, reason + ": hidden from the process, or no driver")


def _blas_argument_rule(ranked: dict[str, RankedCause], line: int, routine: str, number: int) -> None:
    """Name the argument a BLAS routine refused ('parameter number 10' of SGEMM is ldb), first."""
    name = knowledge.blas_argument(routine, number)
    if name is None or "library-bug" not in ranked:
        return
    rc = ranked["library-bug"]
    rc.reasons.append(f"line {line}: argument {number} of {routine} is {name}")
    if name.startswith("ld"):
        matrix = name[2:].upper()
        rc.fixes.insert(
            0,
            f"{routine} refused argument {number}, {name}: the leading dimension of {matrix} must be at least "
            f"the rows {matrix} spans as stored (max(1, rows)); a stride-0 (expanded or broadcast) or "
            "transposed operand passed as it is gives a smaller one",
        )


HANDLE_MEMORY = 2 * 2**30  # bytes: far more than a cuDNN or cuBLAS handle needs


def _memory_left_rule(ranked: dict[str, RankedCause], line: int, free: int, total: int) -> None:
    """The log says how much GPU memory was free when a library could not start: plenty rules out memory."""
    if free < HANDLE_MEMORY:
        return
    bump(
        ranked,
        "gpu-oom",
        -RULE_OUT,
        f"line {line}: {free / 2**30:.1f} of {total / 2**30:.1f} GiB of GPU memory were free when it failed; "
        "a cuDNN or cuBLAS handle needs far less, so memory is not what stopped it",
    )


TURING_SHARED_MEMORY = 65536  # bytes per block: Turing and older consumer GPUs; Ampere+ allow more


def _shared_memory_rule(ranked: dict[str, RankedCause], line: int, limit: int) -> None:
    """A kernel asked for more shared memory per block than the GPU allows (the log says how much)."""
    if limit <= TURING_SHARED_MEMORY:
        bump(
            ranked,
            "arch-unsupported",
            0.3,
            f"line {line}: the GPU allows {limit} bytes of shared memory per block (Turing or older); "
            "kernels tuned for Ampere and newer need more, and many libraries do not support these GPUs",
        )
    else:
        bump(
            ranked,
            "library-bug",
            0.3,
            f"line {line}: the GPU allows {limit} bytes per block (an Ampere-or-newer GPU); "
            "the kernel's config was tuned for a GPU with more (A100/H100), so it needs retuning for this one",
        )


def _path_list_rule(ranked: dict[str, RankedCause], line: int, tool_path: str) -> None:
    """'/usr/local/cuda-10.0:$CUDA_HOME/bin/nvcc': the directory a PATH-list-shaped CUDA_HOME meant."""
    home = re.sub(r"/(?:bin/)?nvcc$", "", tool_path)
    parts = [re.sub(r"(?:/bin)+/?$", "", p) for p in home.split(":") if p.strip("/")]
    bump(
        ranked,
        "env-path-misconfig",
        0.0,
        f"line {line}: the compiler path was built from CUDA_HOME={home!r}, which is several paths joined by ':'",
        f"export CUDA_HOME={parts[0]}  (one directory; fix the line in ~/.bashrc that appends to CUDA_HOME)"
        if parts
        else None,
    )


def context_rules(
    ranked: dict[str, RankedCause], matches: list[Match], root: Match | None, snap: Snapshot
) -> None:
    """Taxonomy rules: a CUDA directory on LD_LIBRARY_PATH next to a version conflict means two copies."""
    gpus = view.gpus(snap)  # each GPU's compute capability, looked up once for every rule below
    shows_path = any(m.sig.id.startswith("multiple-toolkits/") and m.sig.specificity == 1 for m in matches)
    if (
        shows_path
        and root is not None
        and "multiple-toolkits" in root.sig.causes
        and root.sig.specificity >= 2
    ):
        bump(
            ranked,
            "multiple-toolkits",
            0.6,
            "the log shows a CUDA library directory on the loader path next to a version conflict",
        )
    if root is not None:
        _platform_rule(ranked, root, snap)
        _container_rule(ranked, root, snap)
    if root is not None and root.sig.min_cc:
        gpu_rules.min_cc_rule(ranked, root.sig.min_cc, gpus)
    if "gpu-watchdog" in ranked:
        gpu_rules.display_watchdog_rule(ranked, gpus)
    arch = next((m.captures["arch"] for m in matches if m.captures.get("arch")), None)
    if arch and arch.isdigit() and "arch-unsupported" in ranked:  # compute_21, not '9.0+PTX'
        gpu_rules.arch_option_rule(ranked, f"{arch[:-1]}.{arch[-1]}", gpu_rules.cuda_versions(snap))
    elif root is not None and root.sig.gpu_arch and "arch-unsupported" in ranked:
        own = next((g for g in gpus if g.get("cc")), None)  # the arch it was asked for
        if own:
            gpu_rules.arch_option_rule(ranked, str(own["cc"]), gpu_rules.cuda_versions(snap), own.get("name"))
    ptxas_cc = root.captures.get("ptxas_cc") if root is not None else None
    if (
        ptxas_cc and "arch-unsupported" in ranked
    ):  # 'ptxas does not support CC 8.6': is every CUDA here too old?
        gpu_rules.arch_option_rule(ranked, ptxas_cc, gpu_rules.cuda_versions(snap), tool="ptxas")
    sm = root.captures.get("sm") if root is not None else None
    if sm and "arch-unsupported" in ranked:
        gpu_rules.dropped_arch_rule(ranked, sm, gpus)
    if sm and "toolchain-not-found" in ranked:  # a compiler refused it: the GPU's, or the build list's?
        gpu_rules.refused_arch_rule(ranked, sm, gpus)
    if sm:
        compiler = root is not None and "unsupported gpu architecture" in root.text.lower()
        gpu_rules.toolkit_too_old_rule(ranked, sm, gpu_rules.toolkit_versions(snap), compiler)
    if root is not None and root.sig.new_gpu_cc:
        gpu_rules.new_gpu_rule(ranked, root.sig.new_gpu_cc, gpus)
    if root is not None and "arch-unsupported" in root.sig.causes and root.sig.specificity <= 2:
        gpu_rules.newer_than_every_cuda_rule(ranked, gpus, gpu_rules.cuda_versions(snap))
    if "cpu-only-build" in ranked:
        _cuda_build_rule(ranked, view.frameworks(snap))
    if root is not None:
        setting_rules.jax_fraction_rule(ranked, root.text, snap)
        memory_rules.fragmentation_rule(ranked, root.line, root.text)
        memory_rules.fraction_cap_rule(ranked, root.line, root.text)
        memory_rules.larger_than_the_gpu_rule(ranked, root.line, root.text, _gpu_bytes(snap))
    if "no-gpu-visible" in ranked:
        _visible_devices_rule(ranked, view.env(snap).get("CUDA_VISIBLE_DEVICES"), gpus)
    for name, info in view.frameworks(snap):
        if PRE_RELEASE.search(str(info.get("version") or "")):
            bump(ranked, "library-bug", 0.15, f"{view.describe(name, info)} is a pre-release build")


def _cuda_build_rule(ranked: dict[str, RankedCause], frameworks: list[tuple[str, dict[str, Any]]]) -> None:
    """Every framework the facts know is a CUDA build: a CPU-only build is not what failed."""
    builds = {name: info.get("build") for name, info in frameworks}
    if builds and all(build == "cuda" for build in builds.values()):
        named = ", ".join(view.describe(name, info) for name, info in frameworks)
        bump(ranked, "cpu-only-build", -RULE_OUT, f"fact: {named} is a CUDA build")


def _cpu_build_rule(ranked: dict[str, RankedCause], findings: list[Finding]) -> None:
    """A framework the facts show to be a CPU-only build sees no CUDA device whatever the machine holds: where
    what was learned puts 'no GPU visible' (the symptom) above it with no fact of its own, the build comes first."""
    cpu = next((f for f in findings if f.cause == "cpu-only-build" and f.severity is Severity.ERROR), None)
    seen, build = ranked.get("no-gpu-visible"), ranked.get("cpu-only-build")
    if cpu is None or seen is None or build is None or seen.findings or seen.score <= build.score:
        return
    bump(
        ranked,
        "cpu-only-build",
        seen.score - build.score + 0.05,
        f"fact: {cpu.title}; a CPU-only build sees no GPU",
    )


def _visible_devices_rule(
    ranked: dict[str, RankedCause], cvd: str | None, gpus: list[dict[str, Any]]
) -> None:
    """The process saw no GPU and CUDA_VISIBLE_DEVICES was set: that setting is the first suspect.
    (With the GPU count known, the no-gpu-visible check decides instead, and confirms it.)"""
    if cvd is None or gpus:
        return
    bump(
        ranked,
        "no-gpu-visible",
        0.2,
        f"fact: CUDA_VISIBLE_DEVICES={cvd!r} was set; it hides GPUs, and renumbers the ones it shows from 0",
        "Check CUDA_VISIBLE_DEVICES against nvidia-smi -L: it lists indices from that list (0..N-1), "
        "and an index the machine lacks hides the GPU",
    )


def fact_scores(
    ranked: dict[str, RankedCause],
    findings: list[Finding],
    permitted: set[str],
    library_ran: bool = False,
    set_apart: bool = False,
    build_step: bool = False,
) -> list[Finding]:
    """Credit each finding to its cause. Where the log names its causes (`permitted`), a finding of
    another cause counts little; with `set_apart` (this machine's facts are in) it is not ranked at all
    but returned, to be listed apart: true of this machine, not what this log points to."""
    scoped = signatures.scoped_checks()
    apart = []
    for f in findings:
        if permitted and f.id in scoped:
            continue  # it bears only on the errors whose signatures name it (scoped_scores)
        if library_ran and f.cause == "cuda-libs-missing":
            if "cuda-libs-missing" in ranked:
                bump(ranked, f.cause, 0.0, f"not this error: the library it came from was loaded ({f.title})")
            continue
        _other_side(ranked, f, permitted)
        if build_step and f.id in BUILD_KERNELS:  # a compiler refused the code: the build's kernels are moot
            _credit(ranked, f, UNRELATED[f.severity])
            continue
        if permitted and f.cause not in permitted:
            if set_apart:
                apart.append(f)
            else:  # stated facts of the failing machine: a cause its message need not name
                _credit(ranked, f, UNRELATED[f.severity])
            continue
        confirms = CONFIRM if f.severity is not Severity.INFO else 0.15
        _credit(ranked, f, confirms if permitted else ALONE[f.severity])
    return apart


def _credit(ranked: dict[str, RankedCause], f: Finding, amount: float) -> None:
    """The finding counts `amount` for its cause, and its steps and title go with that cause."""
    rc = ranked.setdefault(f.cause, RankedCause(f.cause, 0.0))
    rc.score += amount
    rc.findings.append(f)


def scoped_scores(ranked: dict[str, RankedCause], matches: list[Match], findings: list[Finding]) -> None:
    """A finding of a check that a matched signature names in confirmed_by confirms that signature's cause."""
    named = {c for m in matches for c in m.sig.confirmed_by}
    for f in findings:
        if f.id in named and f.severity is not Severity.INFO:
            _credit(ranked, f, CONFIRM)


def _other_side(ranked: dict[str, RankedCause], f: Finding, permitted: set[str]) -> None:
    """A broken contract has two sides: the fact confirms each other cause it names that the log allows."""
    if f.severity is Severity.INFO:
        return
    for cause in f.also:
        if cause in permitted and cause != f.cause:
            bump(ranked, cause, CONFIRM, f"fact: {f.title}")


def drop_refined(matches: list[Match]) -> list[Match]:
    """Where a precise signature and the generic one it refines match the same line, keep the precise
    one; drop the lines of signatures that a matched message absorbs (it printed them itself)."""
    refined = {(m.line, r) for m in matches for r in m.sig.refines}
    absorbed = {a for m in matches for a in m.sig.absorbs}
    return [m for m in matches if (m.line, m.sig.id) not in refined and m.sig.id not in absorbed]


LIBCUDA = re.compile(
    r"\blibcuda\.so|\bnvcuda\b|\bcuda lib\b", re.I
)  # cudarc: 'Unable to find cuda lib under the names ["cuda", "nvcuda"]'
# cuDNN 8's sub-libraries dlopen the unversioned libcuda.so, which WSL has only in /usr/lib/wsl/lib
CUDNN8_SUBLIBRARY = re.compile(r"\blibcudnn_\w+\.so\.8\b", re.I)


def _wsl_libcuda_rule(
    ranked: dict[str, RankedCause], matches: list[Match], root_text: str, snap: Snapshot
) -> None:
    """On WSL the driver's libcuda is the Windows driver's copy in /usr/lib/wsl/lib: a libcuda that
    cannot be loaded there, or a cuDNN 8 sub-library that fails to load (it dlopens libcuda.so), is a
    loader path that misses it (NVIDIA's CUDA on WSL guide)."""
    if not snap.value("host.wsl"):
        return
    if (
        LIBCUDA.search(root_text)
        or CUDNN8_SUBLIBRARY.search(root_text)
        or any(LIBCUDA.match(m.captures.get("lib") or "") for m in matches)
    ):
        bump(
            ranked,
            "env-path-misconfig",
            CONFIRM,
            "on WSL the driver's libcuda is the Windows driver's copy in /usr/lib/wsl/lib, which the loader must be told about",
            "export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH  (and sudo ldconfig; conda environments often drop it)",
        )
    elif WSL_NO_DEVICE.search(root_text):
        bump(
            ranked,
            "multiple-toolkits",
            CONFIRM,
            "on WSL the GPU is reached through the Windows driver's libcuda in /usr/lib/wsl/lib: cuInit finding no "
            "device there most often means a Linux driver's libcuda, installed inside WSL, is loaded instead",
            "Inside WSL use only the Windows driver's libcuda: ls -l $(ldconfig -p | grep -o '/.*libcuda.so.1') shows "
            "which one loads; remove a Linux driver installed in WSL (sudo apt remove --purge 'nvidia-driver-*' "
            "'libnvidia-compute-*'), or put /usr/lib/wsl/lib first: export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH",
        )


# cuInit's 'no device' (numba, Taichi, JAX, TensorFlow wordings): on WSL, a Linux libcuda shadowing the WSL one
WSL_NO_DEVICE = re.compile(r"CUDA_ERROR_NO_DEVICE|no CUDA-capable device is detected", re.I)
NCCL_SYSTEM_ERROR = re.compile(r"unhandled system error|ncclSystemError", re.I)


INSUFFICIENT_DRIVER = re.compile(
    r"driver version is insufficient|cudaErrorInsufficientDriver|CUDA_ERROR_INSUFFICIENT_DRIVER", re.I
)


def _container_rule(ranked: dict[str, RankedCause], root: Match, snap: Snapshot) -> None:
    """NCCL's processes on one node share buffers through /dev/shm; a container's 64 MiB default is too
    small for them, and NCCL reports the failed call as a system error (NCCL troubleshooting, Docker).
    A container and no driver in the facts, and CUDA says the driver is insufficient: the container was
    most often started without the host's driver (docker --gpus, singularity --nv)."""
    container = snap.value("host.container")
    driver = snap.get("driver.version")
    if (
        container
        and "driver-too-old" in root.sig.causes
        and INSUFFICIENT_DRIVER.search(root.text)
        and (driver is None or not driver.known)
    ):
        bump(
            ranked,
            "no-gpu-visible",
            0.9,
            f"fact: the program runs in a container ({container}) and no driver is stated: one started without "
            "the host's GPUs has no driver library, which CUDA reports as an insufficient driver",
            knowledge.container_gpus_step(str(container))
            or "Start the container with the host's GPUs and driver: docker run --gpus all (NVIDIA Container Toolkit), "
            "singularity / apptainer run --nv; then nvidia-smi inside it shows the host's driver",
        )
    if container and "multi-gpu-comm" in root.sig.causes and NCCL_SYSTEM_ERROR.search(root.text):
        why = (
            f"fact: the job runs in a container ({container}), whose small /dev/shm NCCL's shared-memory "
            "transport outgrows, and NCCL reports that as a system error"
        )
        step = (
            "Give the container the host's IPC namespace or a larger /dev/shm: docker run --ipc=host ... "
            "(or --shm-size=8g; Kubernetes: an emptyDir with medium: Memory at /dev/shm)"
        )
        bump(ranked, "multi-gpu-comm", 0.3, why, step)  # the corpus files these under NCCL's trouble
        bump(ranked, "shm-exhausted", 0.3, why, step)


def _gpu_bytes(snap: Snapshot) -> float | None:
    """The memory of the first GPU the facts list (nvidia-smi's MiB, or a stated '24GB')."""
    for g in snap.value("gpu.devices") or []:
        mib = g.get("memory_total_mib")
        if mib:
            return float(mib) * 2**20
    return None


def _platform_rule(ranked: dict[str, RankedCause], root: Match, snap: Snapshot) -> None:
    """Where the facts name the platform (WSL2, native Windows), add the weights the root error's
    signature gives for it: the same message has another usual cause there."""
    wsl = view.platform(snap) == "wsl"
    windows = view.platform(snap) == "windows"
    for applies, weights, where in (
        (wsl, root.sig.on_wsl, "the machine runs WSL2"),
        (windows, root.sig.on_windows, "the machine runs Windows"),
    ):
        for cause, weight in weights.items() if applies else ():
            bump(ranked, cause, weight, f"fact: {where}, where this message usually has this cause")


# Where the root error's own words do not name their cause, the list is filled up to this many from
# the learned model and the similar reports, at the low scores they earned (so they come last).
SHOWN = 3


def explain(
    scan: ScanResult,
    snap: Snapshot,
    other: str = "",
    learned: evidence.Evidence | None = None,
    framework: str | None = None,
    set_apart: bool = False,
) -> Explanation:
    """Rank the causes of a scanned log with the facts; `learned` (the model's distribution and the
    similar reports) adds to them when the log holds an error, matched or only error-looking."""
    matches = relevant(drop_refined(sorted(scan.matches, key=lambda m: m.line)))
    root = pick_root(matches)
    ranked = log_scores(matches, root)
    permitted = {c for m in matches for c in _weights(m)}
    findings = [f for r in run_checks(snap) for f in r.findings]
    apart = fact_scores(
        ranked,
        findings,
        permitted,
        root is not None and root.sig.library_ran,
        set_apart,
        root is not None and root.sig.build_step,
    )
    scoped_scores(ranked, matches, findings)
    capture_rules(ranked, matches, snap, other)
    context_rules(ranked, matches, root, snap)
    if root is None:  # a warning that only gives context ('GradScaler is enabled, but CUDA is not available')
        for m in {m.sig.id: m for m in scan.matches if m.sig.on_windows or m.sig.on_wsl}.values():
            _platform_rule(ranked, m, snap)  # says on Windows what it usually means there
    located = summaries.locate(scan.plain_tail()) if root is None else None
    fallback = None if root is not None or located is not None else fallback_root(scan)
    read = reader_scores(ranked, root, fallback)
    if read.get("min_cc") and "arch-unsupported" in ranked and (root is None or not root.sig.min_cc):
        gpu_rules.min_cc_rule(ranked, read["min_cc"], view.gpus(snap))  # a status whose table row needs a GPU
    named = root is not None and root.sig.causes.get("arch-unsupported", 0.0) >= 0.5
    gpu_rules.compiled_here_rule(ranked, snap, view.gpus(snap), named)
    root_text = root.text if root is not None else (fallback[1] if fallback else "")
    root_line = root.line if root else fallback[0] if fallback else 0
    library_rules.toolkit_holds_it_rule(ranked, read, snap, root_line)
    library_rules.outside_toolkit_rule(ranked, read, snap)
    library_rules.driver_below_it_rule(ranked, read, snap)
    read = {
        **library_rules.versions_elsewhere_rule(ranked, scan, root_line),
        **library_rules.outdated_block(scan, root_line, root_text),
        **read,
    }  # the root line's own first
    library_rules.extension_build_rule(ranked, read, scan, snap, (root_line, root_text))
    _wsl_libcuda_rule(ranked, matches, root_text, snap)
    text = evidence.excerpt(scan)
    cpu_rules.arm_sigill_rule(ranked, root_text, snap, text)
    plan = planner.context(
        snap,
        framework or scope.framework_from_log(text + "\n" + other),
        read,
        root=root_text,
        log_platform=scope.platform_from_log(text),
    )
    # a log of a few lines is a pasted excerpt: the person chose those lines as the error, whatever their
    # words; one that resembles a solved report is explained as one
    excerpt = pasted_excerpt(scan, fallback, learned)
    erring = root is not None or (fallback is not None and (looks_like_error(fallback[1]) or excerpt))
    if learned is not None and erring:
        ruled = "cpu-only-build" in ranked  # the facts have had their say on it already
        evidence.apply(ranked, learned, evidence.weight_for(root.sig.specificity if root else None))
        if not ruled and "cpu-only-build" in ranked:  # what was learned brought it: the facts still rule
            _cuda_build_rule(ranked, view.frameworks(snap))
        _cpu_build_rule(ranked, findings)
    causes = sorted(
        (rc for rc in ranked.values() if rc.score > 0.04 and rc.id in knowledge.causes()),
        key=lambda rc: -rc.score,
    )
    if learned is not None and erring and (root is None or root.sig.specificity < 3):
        causes += evidence.candidates(
            learned, {rc.id for rc in causes}, SHOWN - len(causes), knowledge.causes()
        )
    if root is not None:
        return Explanation(
            root, None, causes, matches, findings, scan, learned=learned, plan=plan, apart=apart
        )
    if located is not None:  # a launcher's summary, or the worker's own exception line above one
        entry, line, text = located
        return Explanation(None, (line, text), causes, matches, findings, scan, entry, learned, plan, apart)
    return Explanation(
        None, fallback, causes, matches, findings, scan, learned=learned, plan=plan, apart=apart
    )


# How much a reader's reading of the root line counts: nothing beside a signature of the error itself
# (it was written for the same words and weighed them; counted again they would tip its careful
# ranking), most beside a symptom's signature, and on a line no signature knows it is the message's
# own word.
READER_FACTOR = {3: 0.0, 2: 0.0, 1: 0.8, None: 1.0}


def reader_scores(
    ranked: dict[str, RankedCause], root: Match | None, fallback: tuple[int, str] | None
) -> dict[str, str]:
    """What the root line names (a status code, a library's soname and version, a version built
    against and one found), read by table whatever its wording; returns the values it states
    (the cuDNN major a program wanted, say) for the fix planner."""
    if root is not None:
        line, text, factor = root.line, root.text, READER_FACTOR.get(root.sig.specificity, 0.5)
    elif fallback is not None and looks_like_error(fallback[1]):
        line, text, factor = fallback[0], fallback[1], READER_FACTOR[None]
    else:
        return {}
    stated: dict[str, str] = {}
    adds = root is None or root.sig.specificity <= 1  # beside a signature, a reading only weighs its causes
    for reading in readers.read_line(text):
        if reading.reader == "exit-status" and root is not None:
            continue  # the signal signatures weigh the same endings: counted twice they would tip them
        stated.update(reading.facts)
        for cause, weight in reading.causes.items():
            if factor and (adds or cause in ranked):
                bump(ranked, cause, weight * factor, f"line {line}: {reading.what}")
    return stated


def confidence(causes: list[RankedCause], i: int) -> float:
    top = causes[0].score if causes else 1.0
    return round(min(0.99, causes[i].score / (top + 0.3) * (1.0 if i == 0 else 0.9)), 2)


FIX_LABEL = re.compile(rf"(?:^|;\s*)({scope.LABELS})\b[^:;]*:")
FIX_FRAMEWORK = scope.LABEL_NAME


def for_framework(fixes: list[str], framework: str | None) -> list[str]:
    """Drop the generic fixes written for other frameworks ("PyTorch: ...") when the log names one."""
    if framework is None:
        return fixes
    kept = []
    for fix in fixes:
        labels = {FIX_FRAMEWORK[label] for label in FIX_LABEL.findall(fix)}
        if not labels or framework in labels:
            kept.append(fix)
    return kept or fixes


def cause_json(
    causes: list[RankedCause], i: int, framework: str | None = None, plan: planner.Context | None = None
) -> dict[str, Any]:
    rc = causes[i]
    text = knowledge.cause(rc.id)
    specific: list[str] = []
    leading = [f for f in rc.findings if f.severity is not Severity.INFO]
    notes = [
        f for f in rc.findings if f.severity is Severity.INFO
    ]  # an echo of the error (a program's Xid 43)
    for f in leading:  # this machine's facts name the culprit: their steps come first
        specific += [s for s in f.fix if s not in specific]
    specific += [s for s in rc.fixes if s not in specific]
    for f in notes:  # ... a fact that only echoes the log's error comes after the log's own steps
        specific += [s for s in f.fix if s not in specific]
    generic = for_framework(text["fix"], framework) if rc.generic or not specific else []
    ctx = plan or planner.Context(framework=framework)
    fixes = planner.plan(rc.id, specific, ctx, generic, beside_finding=False)
    title = leading[0].title if leading else text["title"]
    shown = rc.evidence[:5] + [f"fact: {f.title}" for f in rc.findings] + rc.reasons
    return {
        "id": rc.id,
        "confidence": confidence(causes, i),
        "title": title,
        "why": rc.why or text["why"],
        "evidence": shown,
        "fix": fixes,
        "references": text["references"],
    }


def count_by_signature(matches: list[Match]) -> dict[str, int]:
    return dict(collections.Counter(m.sig.id for m in matches))
