"""Settings that decide whether a deterministic run can start: TensorFlow variables read through a
CHECK, where a value it cannot parse aborts the process (TF_DETERMINISTIC_OPS=yes), and
CUBLAS_WORKSPACE_CONFIG, which PyTorch's deterministic mode compares as exact text. How each is
read is data: knowledge/env_settings.toml ([[checked_read]], [cublas_workspace])."""

from __future__ import annotations

import re
from typing import Any

from cudoctor import knowledge, versions
from cudoctor.checks import check, finding, view
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "Environment"
BOOL_WORDS = ("0", "1", "true", "false")
INT64 = re.compile(r"[ \t\n\v\f\r]*[+-]?\d+[ \t\n\v\f\r]*")  # absl::SimpleAtoi
INT64_MAX = 2**63 - 1


def tf_parses(parse: str, value: str) -> bool:
    """Whether tsl's ReadBoolFromEnvVar / ReadInt64FromEnvVar accepts the value."""
    if parse == "bool":
        return value.lower() in BOOL_WORDS
    if not INT64.fullmatch(value):
        return False
    return abs(int(value.strip())) <= INT64_MAX


def _meant_value(parse: str, value: str) -> str:
    """What the value was most likely meant to say, written so TensorFlow reads it."""
    if parse == "int64":
        digits = re.fullmatch(r"[\s'\"]*([+-]?\d+)[\s'\"]*", value)
        return digits.group(1) if digits else "<a whole number>"
    word = value.strip().strip("'\"").lower()
    return "0" if word in ("no", "off", "n", "f", "disable", "disabled") else "1"


@check(
    "tf-env-unparsable",
    "env-setting-invalid",
    LAYER,
    requires=("env", "framework.tensorflow"),
)
def tf_env_unparsable(snap: Snapshot) -> list[Finding]:
    """A TensorFlow variable read through a CHECK holds a value TensorFlow cannot parse
    (TF_DETERMINISTIC_OPS=yes): the process aborts the first time TensorFlow reads it."""
    env = view.env(snap)
    info = snap.value("framework.tensorflow")
    if not isinstance(info, dict):
        return []
    cuda = info.get("build") == "cuda"
    out = []
    for row in knowledge.table("env_settings")["checked_read"]:
        value = env.get(row["variable"])
        if value is None or tf_parses(row["parse"], value) or (row["builds"] == "cuda" and not cuda):
            continue
        out.append(_unparsable(row, value, info))
    return out


def _unparsable(row: dict[str, Any], value: str, info: dict[str, Any]) -> Finding:
    variable = row["variable"]
    accepts = "0, 1, true or false (any case, no spaces)" if row["parse"] == "bool" else "a whole number"
    meant = _meant_value(row["parse"], value)
    step = (
        f"unset {variable}  (an empty value is not read as unset: TensorFlow aborts on it; or export {variable}={meant})"
        if not value.strip()
        else f"export {variable}={meant}  (or unset {variable}; TensorFlow reads {accepts} and aborts on anything "
        "else, an empty value included)"
    )
    return finding(
        "tf-env-unparsable",
        "env-setting-invalid",
        Severity.ERROR,
        f"{variable}={value!r} is not {accepts}: TensorFlow aborts the process (SIGABRT, 'Check failed: ... "
        f"Failed to parse the env-var ${{{variable}}}') the first time it reads it",
        LAYER,
        evidence=[
            f"env:{variable} = {value!r}",
            view.describe("tensorflow", info),
            f"{variable}: {row['reads']}",
        ],
        fix=[step],
        generic_fixes=False,
        subject=variable,
    )


@check(
    "cublas-workspace-config",
    "determinism-unmet",
    LAYER,
    requires=("env", "framework.torch"),
)
def cublas_workspace_config(snap: Snapshot) -> list[Finding]:
    """CUBLAS_WORKSPACE_CONFIG is set for determinism but not as the exact text PyTorch compares
    (' :4096:8', '4096:8', quotes kept from a YAML file), or in a form PyTorch cannot read."""
    value = view.env(snap).get("CUBLAS_WORKSPACE_CONFIG")
    info = snap.value("framework.torch")
    if value is None or not isinstance(info, dict) or info.get("build") != "cuda":
        return []
    table = knowledge.table("env_settings")["cublas_workspace"]
    exact = table["deterministic"]
    if value in exact:
        return []
    evidence = [f"env:CUBLAS_WORKSPACE_CONFIG = {value!r}", view.describe("torch", info)]
    still_checked = _deterministic_check_applies(info, table)
    intended = _intended_config(value, exact)
    if intended is not None and still_checked:
        return [_near_miss(value, intended, exact, evidence)]
    if re.search(table["syntax"], value) is None:
        return [_unread(value, evidence, still_checked)]
    return []


def _deterministic_check_applies(info: dict[str, Any], table: dict[str, Any]) -> bool:
    """Whether this torch's deterministic mode still compares CUBLAS_WORKSPACE_CONFIG (unknown: yes)."""
    version = versions.parse(info.get("version"))
    removed = versions.parse(table["deterministic_check_removed_in"])
    return version is None or removed is None or not versions.at_least(version, removed)


def _intended_config(value: str, exact: list[str]) -> str | None:
    """The deterministic setting a value was meant to be, when it is one written loosely."""
    squeezed = re.sub(r"[\s'\"]", "", value)
    for config in exact:
        if squeezed in (
            config,
            config.lstrip(":"),
            f"CUBLAS_WORKSPACE_CONFIG={config}",
        ) or squeezed.startswith(f"{config}:"):
            return config
    return None


def _near_miss(value: str, intended: str, exact: list[str], evidence: list[str]) -> Finding:
    return finding(
        "cublas-workspace-config",
        "determinism-unmet",
        Severity.WARNING,
        f"CUBLAS_WORKSPACE_CONFIG={value!r} is not exactly {' or '.join(exact)}: PyTorch compares the exact "
        "text, so torch.use_deterministic_algorithms(True) raises 'Deterministic behavior was enabled ... "
        "it uses CuBLAS' at the first matrix product on the GPU",
        LAYER,
        evidence=evidence,
        fix=[
            f"export CUBLAS_WORKSPACE_CONFIG={intended}  (no quotes or spaces inside the value; in YAML or a "
            'Dockerfile write the value alone, and check with: python -c "import os; '
            "print(repr(os.environ['CUBLAS_WORKSPACE_CONFIG']))\")"
        ],
        generic_fixes=False,
        subject="CUBLAS_WORKSPACE_CONFIG",
    )


def _unread(value: str, evidence: list[str], still_checked: bool) -> Finding:
    refuses = ", and its deterministic mode refuses it" if still_checked else ""
    return finding(
        "cublas-workspace-config",
        "determinism-unmet",
        Severity.INFO,
        f"CUBLAS_WORKSPACE_CONFIG={value!r} has no :SIZE:COUNT pair: PyTorch warns 'Could not parse "
        f"CUBLAS_WORKSPACE_CONFIG' and uses its default cuBLAS workspace{refuses}",
        LAYER,
        evidence=evidence,
        fix=[
            "export CUBLAS_WORKSPACE_CONFIG=:4096:8  (a colon before each number: :SIZE_KiB:COUNT), or unset it "
            "if deterministic cuBLAS was not the goal"
        ],
        generic_fixes=False,
        subject="CUBLAS_WORKSPACE_CONFIG",
    )
