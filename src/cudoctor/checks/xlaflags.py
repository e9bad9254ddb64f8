"""XLA_FLAGS naming a flag the installed XLA does not have: JAX, and TensorFlow at its first XLA
compile, abort with "Unknown flag in XLA_FLAGS". Flags are renamed and removed between releases,
and one XLA_FLAGS often serves two frameworks of different ages in one environment. The flags each
build knows come from the fact xla.flags; known renames from knowledge/env_settings.toml."""

from __future__ import annotations

from typing import Any

from cudoctor import knowledge
from cudoctor.checks import FactMissing, check, finding, view
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "Environment"
WHO = {
    "jax": ("jaxlib", "at start"),
    "tensorflow": ("TensorFlow", "at its first XLA compile (jit_compile, Keras on a GPU)"),
}


@check("xla-flags-unknown", "env-setting-invalid", LAYER, requires=("xla.flags",))
def xla_flags_unknown(snap: Snapshot) -> list[Finding]:
    """XLA_FLAGS sets a flag an installed XLA build (jaxlib, TensorFlow) does not have: it aborts
    with 'Unknown flag in XLA_FLAGS'."""
    fact = snap.value("xla.flags")
    if not isinstance(fact, dict) or not isinstance(fact.get("readers"), dict):
        raise FactMissing("xla.flags has no readers")
    out = []
    for framework, reader in sorted(fact["readers"].items()):
        if reader.get("unknown"):
            out.append(_unknown_flags(framework, reader["unknown"], snap))
    return out


def _unknown_flags(framework: str, names: list[str], snap: Snapshot) -> Finding:
    who, when = WHO.get(framework, (framework, "when it starts"))
    info = snap.value(f"framework.{framework}")
    version = _version(framework, info)
    flags = ", ".join(f"--{n}" for n in names)
    steps = [step for step in map(_rename_step, names) if step]
    steps.append(
        f"Remove {flags} from XLA_FLAGS (env | grep XLA_FLAGS; grep -rn XLA_FLAGS ~/.bashrc .): XLA renames and removes "
        "flags between releases, so flags copied from an older guide or set for another framework's XLA fail here"
    )
    steps.append(
        "If XLA_FLAGS is meant for one framework only, set it on that program's command line "
        "(XLA_FLAGS='...' python train.py) instead of exporting it for every process"
    )
    return finding(
        "xla-flags-unknown",
        "env-setting-invalid",
        Severity.ERROR,
        f"XLA_FLAGS sets {flags}, which {who}{version} does not have: it aborts {when} with "
        "'Unknown flag in XLA_FLAGS'",
        LAYER,
        evidence=[f"env:XLA_FLAGS = {view.env(snap).get('XLA_FLAGS', '?')!r}"],
        fix=steps,
        generic_fixes=False,
        subject=framework,
    )


def _version(framework: str, info: Any) -> str:
    if not isinstance(info, dict):
        return ""
    version = info.get("jaxlib") if framework == "jax" else info.get("version")
    return f" {version}" if version else ""


def _rename_step(name: str) -> str | None:
    row = next((r for r in knowledge.table("env_settings")["xla_flag_renamed"] if r["flag"] == name), None)
    return f"--{name} was replaced by {row['replacement']}: {row['how']}" if row else None
