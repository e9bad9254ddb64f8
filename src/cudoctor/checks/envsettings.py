"""Framework settings in the environment that the framework reads otherwise than meant: a value
it ignores (TF_FORCE_GPU_ALLOW_GROWTH=True), reads the other way (XLA_PYTHON_CLIENT_PREALLOCATE=FALSE),
refuses at start (XLA_PYTHON_CLIENT_MEM_FRACTION=90%), or that keeps it off the GPU
(JAX_PLATFORMS=cpu); and debugging or workaround settings left on (CUDA_LAUNCH_BLOCKING=1, and
PYTORCH_NO_CUDA_MEMORY_CACHING=0, which PyTorch before 2.7 takes as set). How each variable is read,
and from which release, is data: knowledge/env_settings.toml."""

from __future__ import annotations

from typing import Any

from cudoctor import knowledge, versions
from cudoctor.checks import FRAMEWORK_FACTS, check, finding, view
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "Environment"


@check("env-setting-misread", "gpu-oom", LAYER, requires=("env",), requires_any=FRAMEWORK_FACTS)
def env_setting_misread(snap: Snapshot) -> list[Finding]:
    """A framework setting in the environment has a value the framework ignores, reads the other
    way, refuses at start, or that keeps it off the GPU."""
    env = view.env(snap)
    builds = dict(view.cuda_frameworks(snap))
    out = []
    for row in knowledge.table("env_settings")["setting"]:
        value = env.get(row["variable"])
        info = builds.get(row["framework"])
        if value is None or info is None:
            continue
        version = versions.parse(info.get("version"))
        if not _reads_this_way(row, version):
            continue
        misread = _misread(row, value, env, version)
        if misread is None:
            continue
        severity, how, effect = misread
        out.append(
            finding(
                "env-setting-misread",
                row["cause"],
                severity,
                f"{row['variable']}={value!r} {how}: {row[effect]}",
                LAYER,
                evidence=[f"env:{row['variable']} = {value!r}", f"{view.describe(row['framework'], info)}"],
                fix=[row["fix"]],
                generic_fixes=False,
                subject=row["framework"],
            )
        )
    return out


def _reads_this_way(row: dict[str, Any], version: versions.Version | None) -> bool:
    """Whether the installed release reads the variable as the row says (a row with `since`
    holds from that release on; an unknown version is not judged)."""
    if "since" not in row:
        return True
    since = versions.parse(row["since"])
    return version is not None and since is not None and versions.at_least(version, since)


def _misread(
    row: dict[str, Any], value: str, env: dict[str, str], version: versions.Version | None
) -> tuple[Severity, str, str] | None:
    """(severity, how the framework reads it, the row's field that says what follows) when it is
    not read as meant; None when it is."""
    kind = row["kind"]
    if not value.strip() and row.get("empty_ignored"):
        return None
    if kind == "bool":
        return _misread_bool(row, value)
    if kind in ("fraction", "int"):
        return _misread_number(row, value)
    if kind == "choice":
        return _misread_choice(row, value, version)
    if kind == "exclusive":
        return (
            (Severity.ERROR, f"is set together with {row['with']}", "effect")
            if env.get(row["with"])
            else None
        )
    platforms = [p.strip().lower() for p in value.split(",") if p.strip()]
    if platforms and not set(platforms) & set(row["gpu_values"]):
        return Severity.WARNING, "names no GPU platform", "effect"
    return None


def _misread_number(row: dict[str, Any], value: str) -> tuple[Severity, str, str] | None:
    """A value read with float() (a fraction in a range) or int() (a whole number)."""
    try:
        number = float(value) if row["kind"] == "fraction" else int(value)
    except ValueError:
        return (
            Severity.ERROR,
            "is not a number" if row["kind"] == "fraction" else "is not a whole number",
            "effect",
        )
    if row["kind"] == "fraction" and not row["low"] < number <= row["high"]:
        return Severity.ERROR, f"is outside {row['low']:g} to {row['high']:g}", "effect_range"
    return None


def _misread_choice(
    row: dict[str, Any], value: str, version: versions.Version | None
) -> tuple[Severity, str, str] | None:
    """One of `values`, lower-cased; a value newer than the installed release (`values_since`) is
    refused by it too (an unknown release is given every value)."""
    since = {v: versions.parse(s) for v, s in row.get("values_since", {}).items()}
    read = [v for v in row["values"] if version is None or versions.at_least(version, since.get(v) or ())]
    if value.lower() in read:
        return None
    return Severity.ERROR, "is not one of " + ", ".join(read), "effect"


def _misread_bool(row: dict[str, Any], value: str) -> tuple[Severity, str, str] | None:
    read = knowledge.flag_reading(row, value)
    meant = row["meant"] == "true"
    if read is meant or value.strip().lower() not in row["meant_words"]:
        return None  # read as meant, or not a spelling of the meant value (a deliberate other setting)
    if read is None:
        return Severity.WARNING, "is ignored", "effect"
    return Severity.WARNING, f"is read as {str(read).lower()}", "effect"


@check("setting-left-on", "setting-left-on", LAYER, requires=("env",), requires_any=FRAMEWORK_FACTS)
def setting_left_on(snap: Snapshot) -> list[Finding]:
    """A setting made to debug or work around a problem is still in the environment, and slows
    every run (CUDA_LAUNCH_BLOCKING=1, PYTORCH_NO_CUDA_MEMORY_CACHING=1) or hides its errors."""
    env = view.env(snap)
    builds = dict(view.cuda_frameworks(snap))
    gpus = view.gpus(snap)
    out = []
    for row in knowledge.table("env_settings")["left_on"]:
        value = env.get(row["variable"])
        users = [name for name in row["frameworks"] if name in builds]
        listed = value is not None and value.strip().lower() in {v.lower() for v in row["values"]}
        any_value = value is not None and any(_reads_any_value(row, builds[name]) for name in users)
        if not (listed or any_value) or not users or not _applies(row, gpus):
            continue
        note = "" if listed else f" ({row['any_value_note']})"
        out.append(
            finding(
                "setting-left-on",
                "setting-left-on",
                Severity.WARNING if row["severity"] == "warning" else Severity.INFO,
                f"{row['variable']}={value} is set{note}: {row['effect']}",
                LAYER,
                evidence=[f"env:{row['variable']} = {value!r}"]
                + [view.describe(name, builds[name]) for name in users],
                fix=[row["fix"]],
                generic_fixes=False,
                subject=row["variable"],
            )
        )
    return out


def _reads_any_value(row: dict[str, Any], info: dict[str, Any]) -> bool:
    """Whether this release turns the behaviour on whatever the variable's value (known versions
    up to the row's `any_value_until`)."""
    version = versions.parse(info.get("version"))
    until = row.get("any_value_until")
    return version is not None and until is not None and versions.in_range(version, "0", until)


def _applies(row: dict[str, Any], gpus: list[dict[str, Any]]) -> bool:
    """Whether the GPUs the facts know are the kind the setting matters for (unknown GPUs: no)."""
    if "min_gpus" in row and len(gpus) < row["min_gpus"]:
        return False
    if "min_cc" in row:
        floor = versions.cc_tuple(row["min_cc"])
        return floor is not None and any(g.get("cc_t") and g["cc_t"] >= floor for g in gpus)
    return True
