"""Checks: small pure functions, Snapshot in, Findings out. No I/O.

The engine, not the check, handles missing facts: a required fact that is absent skips the
check (it does not apply), one that is unknown or failed makes the result `unknown`, and a
check that raises becomes `crashed` while the others still run. A check that finds the fact
it needs lacks the one field it reads raises `FactMissing`, which also makes it `unknown`.
"""

from __future__ import annotations

import dataclasses
import re
import traceback
from collections.abc import Callable, Iterable, Sequence

from cudoctor import knowledge
from cudoctor.model import FRAMEWORKS, CheckResult, Finding, Severity, Snapshot, Status

CheckFn = Callable[[Snapshot], list[Finding]]


@dataclasses.dataclass(frozen=True)
class Check:
    id: str
    cause: str
    layer: str
    requires: tuple[str, ...]
    fn: CheckFn
    doc: str
    requires_any: tuple[str, ...] = ()


REGISTRY: list[Check] = []
ANY_CAUSE = (
    "any"  # a check whose findings take their cause from what they read (an error quoted in the facts)
)


class FactMissing(Exception):
    """Raised by a check whose required fact is known but lacks the part it reads."""


FRAMEWORK_FACTS = tuple(f"framework.{name}" for name in FRAMEWORKS)


def check(
    check_id: str, cause: str, layer: str, requires: Sequence[str] = (), requires_any: Sequence[str] = ()
) -> Callable[[CheckFn], CheckFn]:
    """Register a check; its docstring is what `cudoctor check --list-checks` prints.

    `requires`: every fact must be known. `requires_any`: at least one must be known (all
    absent: the check does not apply).
    """

    def wrap(fn: CheckFn) -> CheckFn:
        if any(c.id == check_id for c in REGISTRY):
            raise ValueError(f"duplicate check id {check_id}")
        REGISTRY.append(
            Check(
                check_id, cause, layer, tuple(requires), fn, (fn.__doc__ or "").strip(), tuple(requires_any)
            )
        )
        return fn

    return wrap


def finding(
    check_id: str,
    cause: str,
    severity: Severity,
    title: str,
    layer: str,
    evidence: Iterable[str] = (),
    fix: Iterable[str] = (),
    confidence: str = "certain",
    subject: str = "",
    also: Iterable[str] = (),
    generic_fixes: bool = True,
    about: Iterable[str] = (),
) -> Finding:
    """A Finding whose explanation, generic fix steps and references come from causes.toml
    (generic_fixes=False: the check's own steps cover every way out, the cause's would mislead).
    `subject`: the framework it is about, shown under that framework's line; `about`: frameworks a finding
    shown under its own layer concerns (a contract between a layer and a framework), whose lines count it."""
    text = knowledge.cause(cause)
    steps = list(fix) + ([s for s in text["fix"] if s not in fix] if generic_fixes else [])
    return Finding(
        id=check_id,
        cause=cause,
        severity=severity,
        title=title,
        layer=layer,
        evidence=tuple(evidence),
        why=text["why"],
        fix=tuple(steps),
        references=tuple(text["references"]),
        confidence=confidence,
        subject=subject,
        also=tuple(also),
        about=tuple(about),
    )


def _load_all() -> None:
    from cudoctor.checks import (  # noqa: F401
        allocconf,
        archlist,
        build,
        caches,
        companions,
        cpu,
        determinism,
        device_order,
        driver,
        driverlibs,
        env,
        envsettings,
        gpu_arch,
        host_compiler,
        images,
        interfaces,
        libs,
        memory,
        ollama,
        onnxruntime,
        paddle,
        probe,
        quoted,
        release_lines,
        requirements,
        runtime,
        tf_windows,
        toolchain,
        triton_ptxas,
        wheels,
        wsl,
        xid,
        xlaflags,
    )


LAYER_ORDER = (
    "GPU & driver",
    "Frameworks",
    "CUDA toolkits & libraries",
    "Environment",
    "CPU BLAS",
    "Quoted errors",
    "Probes",
)


def all_checks() -> list[Check]:
    """Every registered check, in layer order (stable: the order output is printed in)."""
    _load_all()
    return sorted(
        REGISTRY, key=lambda c: LAYER_ORDER.index(c.layer) if c.layer in LAYER_ORDER else len(LAYER_ORDER)
    )


def run_one(chk: Check, snap: Snapshot) -> CheckResult:
    statuses = {key: snap.status(key) for key in chk.requires}
    if any(s is Status.ABSENT for s in statuses.values()):
        return CheckResult(
            chk.id,
            "skipped",
            detail="not applicable: " + ", ".join(k for k, s in statuses.items() if s is Status.ABSENT),
        )
    missing = [k for k, s in statuses.items() if s is not Status.KNOWN]
    if missing:
        return CheckResult(chk.id, "unknown", detail="facts not available: " + ", ".join(missing))
    if chk.requires_any:
        any_status = [snap.status(k) for k in chk.requires_any]
        if all(s is Status.ABSENT for s in any_status):
            return CheckResult(
                chk.id, "skipped", detail="not applicable: none of " + ", ".join(chk.requires_any)
            )
        if not any(s is Status.KNOWN for s in any_status):
            return CheckResult(
                chk.id, "unknown", detail="facts not available: any of " + ", ".join(chk.requires_any)
            )
    try:
        found = chk.fn(snap)
    except FactMissing as exc:
        return CheckResult(chk.id, "unknown", detail=f"facts not available: {exc}")
    except Exception as exc:  # a check bug must not take the run down
        return CheckResult(
            chk.id, "crashed", detail=f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}"
        )
    return CheckResult(chk.id, "findings" if found else "ok", tuple(found))


# Findings whose id is not the id of the check that reports them: finding id (a pattern where a framework
# or tool name is part of it) -> that check. Every id the tool prints is accepted by --only and --ignore;
# tests/checks/test_ids.py keeps this table and the finding() calls of the checks in step.
FINDING_IDS = {
    "library-without-forward-compat": "arch-unsupported",
    "container-without-gpus": "no-gpu-visible",
    "container-without-gpu-compute": "no-gpu-visible",
    "no-driver": "no-gpu-visible",
    "ollama-(gpu|driver)-too-old": "ollama",
    "no-nvidia-gpu": "no-gpu-visible",
    "toolkit-needs-newer-driver": "toolkit-newer-than-driver",
    "container-needs-newer-driver": "driver-too-old",
    "ptxas-newer-than-driver-cuda": "toolkit-newer-than-driver",
    "arch-newer-than-build-cuda": "arch-unsupported",
    "arch-ptx-jit-only": "arch-unsupported",
    "library-gpu-floor": "arch-unsupported",
    "image-lacks-cudnn": "image-lacks-libraries",
    "(nvcc|ptxas)-older-first-on-path": "toolkits-shadow-on-path",
    "(torch|tensorflow|jax|cupy)-preallocates": "preallocation-with-shared-gpu",
    "ptxas-too-old": "ptxas-version-mismatch",
    "ptxas-newer-than-driver": "ptxas-version-mismatch",
    "cpu-only-(torch|tensorflow|jax|cupy)": "cpu-only-build",
    "broken-[a-z0-9_.-]+": "broken-install",
    "broken-metadata": "broken-install",
}


def check_of(some_id: str) -> str | None:
    """The check that reports an id the tool printed (a check id, or one of its findings' ids)."""
    if any(c.id == some_id for c in all_checks()):
        return some_id
    return next((chk for pattern, chk in FINDING_IDS.items() if re.fullmatch(pattern, some_id)), None)


def split_ids(values: Sequence[str]) -> list[str]:
    """--only a,b --only c -> [a, b, c]."""
    return [part.strip() for v in values for part in v.split(",") if part.strip()]


def run_checks(snap: Snapshot, only: Sequence[str] = (), ignore: Sequence[str] = ()) -> list[CheckResult]:
    """The checks `only` names (check ids or finding ids; all when empty) less those `ignore` names. A
    finding id selects or drops that finding alone; its check still runs for the others."""
    only, ignore = split_ids(only), split_ids(ignore)
    check_ids = {c.id for c in all_checks()}
    wanted = {check_of(i) for i in only}
    dropped_checks = {i for i in ignore if i in check_ids}
    chosen = [c for c in all_checks() if (not only or c.id in wanted) and c.id not in dropped_checks]
    only_findings = {i for i in only if i not in check_ids}
    whole = {i for i in only if i in check_ids}
    out = []
    for c in chosen:
        r = run_one(c, snap)
        keep = [
            f
            for f in r.findings
            if f.id not in ignore and (c.id in whole or not only_findings or f.id in only_findings)
        ]
        if len(keep) != len(r.findings):
            r = dataclasses.replace(r, findings=tuple(keep), outcome="findings" if keep else "ok")
        out.append(r)
    return out
