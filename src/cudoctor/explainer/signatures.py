"""Signatures (knowledge/signatures/<cause>.toml) compiled for matching, plus their validation.

The files are read in alphabetical order of name, each one's rows as written (alphabetical by id), so
the order signatures are tried in, and the earliest of equally specific matches on one line, never
depends on where a row was added.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from cudoctor import knowledge, versions

PLACEHOLDER = re.compile(r"\{(\w+)\}")

# The contract between the signature files and code. A capture (a named group of a pattern) that its
# row uses only as a {name} placeholder in its own fix, fix_for or why needs no entry here; every other
# capture name is declared once: READ if code acts on it (the module that does, and what it holds), SHOWN
# if it is only reported (explain's JSON lists every match's captures). A new name in READ needs the
# code that reads it; tests/knowledge/test_tables.py fails on a capture declared nowhere, on a READ name no
# signature captures, and on a capture code reads that READ does not list.
READ: dict[str, str] = {
    "alloc_key": "rank.py -> setting_rules.alloc_key_rule: a PYTORCH_CUDA_ALLOC_CONF key, looked up by torch release",
    "arch": "rank.py: the compute_NN a compiler refused (digits), checked against the CUDA versions in the facts",
    "arch_entry": "rank.py -> setting_rules.arch_entry_rule: the TORCH_CUDA_ARCH_LIST entry torch refused",
    "ptxas_cc": "rank.py: the compute capability a ptxas does not support, checked against the CUDA versions in the facts",
    "cpu_op": "rank.py: an operation that ran on the CPU although the facts list a GPU",
    "driver_cuda_int": "rank.py: the driver's CUDA version as an integer (11020), said back as 11.2",
    "dtype": "rank.py: a cuBLAS data type (CUDA_R_16BF) checked against the GPU's compute capability",
    "gloo_iface": "rank.py -> setting_rules.gloo_iface_rule: the interface GLOO_SOCKET_IFNAME names",
    "home_list": "rank.py: a PATH-like list a CUDA_HOME holds, split into the directory it meant",
    "k": "rank.py: a GEMM dimension (with m and n): one of 2**20 or more hits cuBLAS size limits",
    "lib": "rank.py: the library that failed to load (a cuDNN one moves the weight to cudnn-mismatch; libcuda on WSL)",
    "m": "rank.py: a GEMM dimension (with n and k)",
    "mem_free": "rank.py: GPU memory free when a library could not start (with mem_total)",
    "mem_total": "rank.py: the GPU's memory (with mem_free)",
    "mkl_param": "rank.py: the number of the argument MKL refused (as param)",
    "mkl_routine": "rank.py: the routine MKL named (as routine)",
    "n": "rank.py: a GEMM dimension (with m and k)",
    "param": "rank.py: the number of the argument a BLAS routine refused, named from blas_args.toml",
    "routine": "rank.py: the BLAS routine that refused an argument (SGEMM)",
    "sm": "rank.py -> gpu_rules.dropped_arch_rule: the sm_NN of the root error, checked against the GPUs",
    "smem_limit": "rank.py: the shared memory per block the hardware allows, checked against the GPUs",
    "xid": "rank.py: an NVIDIA Xid number, looked up in xid.toml (its causes replace the signature's)",
}
SHOWN: frozenset[str] = frozenset(
    {
        *("a", "b", "ashape", "bshape", "d1", "d2", "dim", "index", "tf_index", "tf_size"),  # shapes, indices
        *("got", "got2", "got3", "got4", "want", "want2", "want3", "want4", "need"),  # dtypes, capabilities
        *(
            "built",
            "found",
            "lib_found",
            "lib2",
            "cuda",
            "cudnn",
            "cuda_major",
            "cuda_minor",
            "cc",
        ),  # versions
        *("driver_cuda", "ptx", "ptxas", "kernel", "dso", "gcc_max", "clang_max", "isa"),  # versions, tools
        *("builtins", "builtins_dll", "path", "symbol", "status", "call", "spec", "device", "gpu", "mode"),
        *("op", "tf_op", "tf_det_op", "method", "assertion", "param_name", "first_key"),  # operations, names
        *("alloc_bound", "alloc_value", "jax_allocator", "jax_fraction", "tf_env_type"),  # settings
        *("size", "size_old", "held", "held_old", "bytes", "threads", "max_threads"),  # amounts
        *("pid", "process", "rank", "task"),  # processes
        *("package", "package_version", "required", "required_version"),  # packages that do not go together
    }
)
# Signature ids that code names: each must be a row's id.
CODE_IDS: dict[str, str] = {
    "arch-unsupported/cpp-extension-unknown-arch": "rank.py -> setting_rules.arch_entry_rule (its capture may be empty)",
    "determinism-unmet/torch-cublas-workspace": "rank.py -> setting_rules.cublas_workspace_rule",
}


@dataclasses.dataclass(frozen=True)
class Signature:
    id: str
    anchors: tuple[str, ...]
    regex: LazyRegex
    causes: dict[str, float]
    specificity: int
    examples: tuple[str, ...]
    counter_examples: tuple[str, ...]
    source: str
    refines: tuple[str, ...] = ()  # less precise signatures this one replaces on the same line
    absorbs: tuple[str, ...] = ()  # signatures whose lines, anywhere in the log, this message accounts for
    fix: tuple[str, ...] = ()  # steps for this error, whichever cause wins; {name} is filled from the pattern
    fix_for: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)  # steps for one cause only
    context_for: tuple[str, ...] = ()  # a context line: counts only next to an error that allows one of these
    min_cc: str | None = None  # the failing feature needs this compute capability (facts can confirm)
    new_gpu_cc: str | None = None  # arch-unsupported means a GPU this new or newer (facts can rule it out)
    confirmed_by: tuple[str, ...] = ()  # checks whose findings bear on this error only, not on every log
    generic_fixes: bool = True  # False: as the root error, its own steps replace its causes' generic ones
    gpu_arch: bool = False  # the option refused is the GPU's own architecture (a stated GPU stands for it)
    library_ran: bool = False  # a status the CUDA library itself returned: the libraries were found
    build_step: bool = False  # a compiler refused to build code: the framework build's own kernels are moot
    warning: bool = False  # a warning beside the failure: the root error only when no error matched
    unusable_build: bool = False  # the framework's verdict that its build cannot use this GPU at all
    why: str | None = None  # what this error means, said in place of its primary cause's general why
    on_wsl: dict[str, float] = dataclasses.field(
        default_factory=dict
    )  # weights added when the facts say WSL2
    on_windows: dict[str, float] = dataclasses.field(
        default_factory=dict
    )  # weights added when the facts say native Windows

    @property
    def is_context(self) -> bool:
        return bool(self.context_for)

    def fixes_for(self, captures: dict[str, str], cause: str | None = None) -> list[str]:
        """The steps for `cause` (its own first, then the shared ones), with {name} replaced by what
        the pattern captured (or <name>)."""
        steps = (*self.fix_for.get(cause or "", ()), *self.fix)
        return [_filled(step, captures) for step in steps]

    def why_for(self, captures: dict[str, str], cause: str) -> str | None:
        """This error's own explanation when `cause` is its primary one (else the cause's general why)."""
        return _filled(self.why, captures) if self.why and cause == self.primary else None

    def placeholder_texts(self) -> tuple[str, ...]:
        """Every text with {name} placeholders: the steps and the why."""
        steps = (*self.fix, *(step for steps in self.fix_for.values() for step in steps))
        return (*steps, self.why) if self.why else steps

    @property
    def primary(self) -> str:
        return max(self.causes.items(), key=lambda kv: kv[1])[0]


class LazyRegex:
    """A case-insensitive pattern compiled when first used. A run tries only the patterns whose
    anchor a line of the log holds, so compiling all ~400 at start (about 50 ms) is mostly wasted;
    the tests compile every one (a bad pattern fails them, never a run)."""

    __slots__ = ("_compiled", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, re.I)
        return self._compiled

    @property
    def groupindex(self) -> Mapping[str, int]:
        return self.compiled.groupindex

    @property
    def flags(self) -> int:
        return self.compiled.flags

    def search(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.search(text, pos, endpos)

    def match(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.match(text, pos, endpos)

    def fullmatch(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.fullmatch(text, pos, endpos)

    def finditer(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(text, pos, endpos)

    def __repr__(self) -> str:
        return f"LazyRegex({self.pattern!r})"


def matcher_fields(row: dict[str, Any]) -> dict[str, Any]:
    """A data row's `anchors` (lower-cased, as the scanner compares them) and its `pattern`,
    case-insensitive and compiled when first used: the way every matcher table (signatures, benign
    lines, log facts) is read."""
    return {
        "anchors": tuple(a.lower() for a in row["anchors"]),
        "regex": LazyRegex(row["pattern"]),
    }


def entry_fields(row: dict[str, Any]) -> dict[str, Any]:
    """The fields every table of known lines shares (benign lines, launcher summaries): the matcher
    fields plus the row's source, examples and counter-examples."""
    return {
        **matcher_fields(row),
        "source": row["source"],
        "examples": tuple(row.get("examples", ())),
        "counter_examples": tuple(row.get("counter_examples", ())),
    }


class KnownLine(Protocol):
    """A row of a table of known lines (benign lines, launcher summaries)."""

    @property
    def id(self) -> str: ...
    @property
    def anchors(self) -> tuple[str, ...]: ...
    @property
    def regex(self) -> LazyRegex: ...
    @property
    def examples(self) -> tuple[str, ...]: ...
    @property
    def counter_examples(self) -> tuple[str, ...]: ...


K = TypeVar("K", bound=KnownLine)


def first_known(entries: Iterable[K], text: str) -> K | None:
    """The first entry that recognises this line: one of its anchors in it, then its pattern."""
    low = text.lower()
    return next((e for e in entries if any(a in low for a in e.anchors) and e.regex.search(text)), None)


def known_line_problems(entries: Sequence[KnownLine]) -> list[str]:
    """What every table of known lines must hold: unique ids, each example recognised as its own entry
    (first_known over the whole table), no counter-example matched by the entry's pattern."""
    ids = [e.id for e in entries]
    problems = [f"{i}: duplicate id" for i in sorted({i for i in ids if ids.count(i) > 1})]
    for entry in entries:
        problems += [
            f"{entry.id}: does not recognise example {ex[:60]!r}"
            for ex in entry.examples
            if first_known(entries, ex) is not entry
        ]
        problems += [
            f"{entry.id}: matches counter-example {ex[:60]!r}"
            for ex in entry.counter_examples
            if entry.regex.search(ex)
        ]
    return problems


def _filled(text: str, captures: dict[str, str]) -> str:
    return PLACEHOLDER.sub(lambda m: captures.get(m.group(1)) or f"<{m.group(1)}>", text)


FOLDER = "signatures"  # knowledge/signatures/: one file per cause id


def files() -> tuple[str, ...]:
    """The signature files, in the order they are read (alphabetical by name)."""
    return tuple(os.path.join(knowledge.HERE, f"{name}.toml") for name in knowledge.folder(FOLDER))


def rows() -> list[dict[str, Any]]:
    """Every signature row as its file holds it, files in alphabetical order."""
    return [row for name in knowledge.folder(FOLDER) for row in knowledge.table(name).get("signature", ())]


@functools.lru_cache(maxsize=1)
def load() -> tuple[Signature, ...]:
    return tuple(
        Signature(
            id=row["id"],
            **matcher_fields(row),
            causes=dict(row["causes"]),
            specificity=int(row.get("specificity", 1)),
            examples=tuple(row.get("examples", ())),
            counter_examples=tuple(row.get("counter_examples", ())),
            source=row.get("source", ""),
            refines=tuple(row.get("refines", ())),
            absorbs=tuple(row.get("absorbs", ())),
            fix=tuple(row.get("fix", ())),
            fix_for={cause: tuple(steps) for cause, steps in row.get("fix_for", {}).items()},
            context_for=tuple(row.get("context_for", ())),
            min_cc=row.get("min_cc"),
            new_gpu_cc=row.get("new_gpu_cc"),
            confirmed_by=tuple(row.get("confirmed_by", ())),
            generic_fixes=bool(row.get("generic_fixes", True)),
            gpu_arch=bool(row.get("gpu_arch", False)),
            library_ran=bool(row.get("library_ran", False)),
            build_step=bool(row.get("build_step", False)),
            warning=bool(row.get("warning", False)),
            unusable_build=bool(row.get("unusable_build", False)),
            why=row.get("why"),
            on_wsl={str(k): float(v) for k, v in row.get("on_wsl", {}).items()},
            on_windows={str(k): float(v) for k, v in row.get("on_windows", {}).items()},
        )
        for row in rows()
    )


@functools.lru_cache(maxsize=1)
def scoped_checks() -> frozenset[str]:
    """Check ids that some signature names in confirmed_by: their findings speak to those errors only."""
    return frozenset(c for sig in load() for c in sig.confirmed_by)


def _confirmed_by_problems(sig: Signature) -> list[str]:
    from cudoctor.checks import all_checks

    checks = {c.id: c for c in all_checks()}
    return [
        f"{sig.id}: confirmed_by names {c}, which is no check whose cause this signature lists"
        for c in sig.confirmed_by
        if c not in checks or checks[c].cause not in sig.causes
    ]


class Anchored(Protocol):
    @property
    def anchors(self) -> tuple[str, ...]: ...


A = TypeVar("A", bound=Anchored)


def by_anchor(rows: Iterable[A]) -> dict[str, tuple[A, ...]]:
    """Anchor -> the rows (signatures, log facts) that declared it."""
    index: dict[str, list[A]] = {}
    for row in rows:
        for anchor in row.anchors:
            index.setdefault(anchor, []).append(row)
    return {a: tuple(r) for a, r in index.items()}


# Where equally specific signatures match one line, the root error is the one the scan tried first:
# the signatures are tried in the order they are read (files by name, rows by id), except that each
# signature here is tried before those it names. These are the ties whose winner the order of the single
# file they came from decided; tests/knowledge/test_tables.py checks that each pair still matches one line and
# that the first one wins.
TRIED_BEFORE: dict[str, tuple[str, ...]] = {
    # TensorFlow's message around dlopen's: the same library, said by the framework that wanted it
    "cuda-libs-missing/tf-could-not-load-dynamic-library": ("cuda-libs-missing/cannot-open-shared-object",),
    # cuDNN's "Could not load library X. Error: Y": the error Y inside names the cause
    "env-path-misconfig/libcuda-dev-name-not-found": ("cudnn-mismatch/could-not-load-cudnn-sublibrary",),
    "multiple-toolkits/undefined-symbol": ("cudnn-mismatch/could-not-load-cudnn-sublibrary",),
    # ptxas refusing an architecture: the unknown name first, a dropped one as its other reading
    "toolchain-not-found/ptxas-unknown-gpu-name": ("multiple-toolkits/ptxas-dropped-gpu-arch",),
}
# Not here, so the order of ids decides and each signature's own examples get its own cause:
# arch-unsupported/named-symbol-not-found over multi-gpu-comm/nccl-error (an NCCL WARN line that
# carries a kernel missing from the build), driver-too-old/numba-linker-unknown-error over
# no-gpu-visible/cuda-unknown-error (numba's linker call failing with the unknown-error status).


def try_order(sigs: Sequence[Signature]) -> list[Signature]:
    """`sigs` in the order the scan tries them: as read, each signature of TRIED_BEFORE moved just
    before the first of those it names."""
    order = list(sigs)
    for first, later in TRIED_BEFORE.items():
        pos = {sig.id: i for i, sig in enumerate(order)}
        if first not in pos:
            continue
        target = min((pos[i] for i in later if i in pos), default=pos[first])
        if target < pos[first]:
            order.insert(target, order.pop(pos[first]))
    return order


@functools.lru_cache(maxsize=1)
def anchor_index() -> dict[str, tuple[Signature, ...]]:
    """Anchor -> the signatures that declared it, anchors and signatures in the order they are tried."""
    return by_anchor(try_order(load()))


def validate() -> list[str]:
    """Problems: duplicate ids, unknown causes, examples that fail, counter-examples that match."""
    problems: list[str] = []
    causes = set(knowledge.causes())
    seen: set[str] = set()
    ids = {sig.id for sig in load()}
    for sig in load():
        problems += [
            f"{sig.id}: {field} unknown signature {r}"
            for field, named in (("refines", sig.refines), ("absorbs", sig.absorbs))
            for r in named
            if r not in ids
        ]
        if sig.id in seen:
            problems.append(f"{sig.id}: duplicate id")
        seen.add(sig.id)
        problems += [
            f"{sig.id}: unknown cause {c}" for c in (*sig.causes, *sig.context_for) if c not in causes
        ]
        problems += _confirmed_by_problems(sig)
        problems += [
            f"{sig.id}: {field} names {c}, which causes does not list"
            for field, named in (
                ("fix_for", sig.fix_for),
                ("on_wsl", sig.on_wsl),
                ("on_windows", sig.on_windows),
            )
            for c in named
            if c not in sig.causes
        ]
        if not sig.examples or not sig.counter_examples:
            problems.append(f"{sig.id}: needs at least one example and one counter-example")
        for ex in sig.examples:
            low = ex.lower()
            if not any(a in low for a in sig.anchors):
                problems.append(f"{sig.id}: no anchor occurs in example {ex[:60]!r}")
            if not sig.regex.search(ex):
                problems.append(f"{sig.id}: pattern does not match example {ex[:60]!r}")
        problems += [
            f"{sig.id}: {name} {value!r} does not parse"
            for name, value in (("min_cc", sig.min_cc), ("new_gpu_cc", sig.new_gpu_cc))
            if value is not None and versions.cc_tuple(value) is None
        ]
        groups = set(sig.regex.groupindex)
        problems += [
            f"{sig.id}: fix names {{{name}}}, which the pattern does not capture"
            for step in sig.placeholder_texts()
            for name in PLACEHOLDER.findall(step)
            if name not in groups
        ]
        for ex in sig.counter_examples:
            if sig.regex.search(ex):
                problems.append(f"{sig.id}: pattern matches counter-example {ex[:60]!r}")
        problems += capture_problems(sig)
    return problems


def capture_problems(sig: Signature) -> list[str]:
    """Captures of `sig` declared nowhere: neither a placeholder of its own texts nor in READ or SHOWN."""
    placeholders = {name for text in sig.placeholder_texts() for name in PLACEHOLDER.findall(text)}
    return [
        f"{sig.id}: captures {name}, which is no placeholder of its fix or why and not in READ or SHOWN"
        for name in sig.regex.groupindex
        if name not in placeholders and name not in READ and name not in SHOWN
    ]


def registry_problems() -> list[str]:
    """Declared names that no signature provides; ids that code or TRIED_BEFORE names and no row has."""
    sigs = load()
    captured = {name for sig in sigs for name in sig.regex.groupindex}
    ids = {sig.id for sig in sigs}
    named = [*CODE_IDS, *TRIED_BEFORE, *(i for later in TRIED_BEFORE.values() for i in later)]
    return [
        *(f"READ declares {name}, which no signature captures" for name in READ if name not in captured),
        *(f"SHOWN declares {name}, which no signature captures" for name in SHOWN if name not in captured),
        *(f"SHOWN declares {name}, which READ declares too" for name in SHOWN if name in READ),
        *(f"code names signature {i}, which no row has" for i in dict.fromkeys(named) if i not in ids),
    ]
