"""Framework settings in the environment that the framework reads otherwise than meant: a value
it ignores (TF_FORCE_GPU_ALLOW_GROWTH=True), reads the other way (XLA_PYTHON_CLIENT_PREALLOCATE=FALSE),
refuses at start (XLA_PYTHON_CLIENT_MEM_FRACTION=90%), or that keeps it off the GPU
(JAX_PLATFORMS=cpu). How each variable is read is data: knowledge/env_settings.toml."""

from __future__ import annotations

from typing import Any

from cudoctor import knowledge
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
        misread = _misread(row, value)
        if misread is None:
            continue
        severity, how = misread
        out.append(
            finding(
                "env-setting-misread",
                row["cause"],
                severity,
                f"{row['variable']}={value!r} {how}: {row['effect']}",
                LAYER,
                evidence=[f"env:{row['variable']} = {value!r}", f"{view.describe(row['framework'], info)}"],
                fix=[row["fix"]],
                generic_fixes=False,
                subject=row["framework"],
            )
        )
    return out


def _misread(row: dict[str, Any], value: str) -> tuple[Severity, str] | None:
    """(severity, how the framework reads it) when it is not read as meant; None when it is."""
    kind = row["kind"]
    if kind == "bool":
        return _misread_bool(row, value)
    if kind == "fraction":
        try:
            number = float(value)
        except ValueError:
            return Severity.ERROR, "is not a number"
        if not row["low"] < number <= row["high"]:
            return Severity.ERROR, f"is outside {row['low']:g} to {row['high']:g}"
        return None
    if kind == "choice":
        return (
            None
            if value.lower() in row["values"]
            else (Severity.ERROR, "is not one of " + ", ".join(row["values"]))
        )
    platforms = [p.strip().lower() for p in value.split(",") if p.strip()]
    if platforms and not set(platforms) & set(row["gpu_values"]):
        return Severity.WARNING, "names no GPU platform"
    return None


def _misread_bool(row: dict[str, Any], value: str) -> tuple[Severity, str] | None:
    read = knowledge.env_flag(row["variable"], value)
    meant = row["meant"] == "true"
    if read is meant or value.strip().lower() not in row["meant_words"]:
        return None  # read as meant, or not a spelling of the meant value (a deliberate other setting)
    if read is None:
        return Severity.WARNING, "is ignored"
    return Severity.WARNING, f"is read as {str(read).lower()}"
