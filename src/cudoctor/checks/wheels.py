"""Contracts between installed packages and the NVIDIA CUDA wheels (nvidia-*-cu12) they ask for.

One environment holds one version of each wheel. When two frameworks ask for different ones
(torch pins nvidia-nvjitlink-cu12==12.4.127, an older TensorFlow pins ==12.2.140), whichever
pip installed last wins, and a library built against a newer CUDA minor than the one installed
fails with "undefined symbol: __nvJitLinkAddData_12_4" (pytorch#111469, pytorch#134929).
cuDNN is left to cudnn-version-mismatch, which also knows the cuDNN of builds without pins.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from cudoctor import versions
from cudoctor.checks import check, finding
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "CUDA toolkits & libraries"


def too_old(have: str, spec: str) -> bool:
    """Installed `have` fails `spec` because it is below its floor (an upper bound alone is not this)."""
    floor = versions.floor(spec)
    hv, fv = versions.parse(have), versions.parse(floor[1]) if floor else None
    if versions.satisfies(have, spec) is not False or hv is None or fv is None:
        return False
    return versions.cmp(hv, fv) < 0


def pins_by_wheel(snap: Snapshot) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for pin in snap.value("python.cuda_wheel_pins") or []:
        out[str(pin["requires"])].append(pin)
    return out


def pin_label(pin: dict[str, Any]) -> str:
    return f"{pin['package']} {pin['version']} ({pin['requires']}{pin['spec']})"


@check(
    "cuda-wheel-pins", "multiple-toolkits", LAYER, requires=("python.cuda_wheel_pins", "python.nvidia_wheels")
)
def cuda_wheel_pins(snap: Snapshot) -> list[Finding]:
    """An NVIDIA CUDA wheel (nvidia-*-cu12) is older than a package installed with it asks for,
    often because another framework pinned an older one: symbols the newer build needs are missing."""
    installed = {str(w["name"]): str(w["version"]) for w in snap.value("python.nvidia_wheels") or []}
    out = []
    for wheel, pins in sorted(pins_by_wheel(snap).items()):
        have = installed.get(wheel)
        if have is None or wheel.startswith("nvidia-cudnn"):
            continue
        short = [p for p in pins if too_old(have, str(p["spec"]))]
        if short:
            out.append(_older_wheel(wheel, have, short, pins))
    return out


def _older_wheel(wheel: str, have: str, short: list[dict[str, Any]], pins: list[dict[str, Any]]) -> Finding:
    who = " and ".join(pin_label(p) for p in short)
    held = [p for p in pins if p not in short]
    title = f"{wheel} {have} is older than {who} asks for: libraries built against the newer one fail to load or run (undefined symbol ...)"
    evidence = [f"{p['package']} {p['version']} Requires-Dist: {wheel}{p['spec']}" for p in pins]
    return finding(
        "cuda-wheel-pins",
        "multiple-toolkits",
        Severity.ERROR,
        title,
        LAYER,
        evidence=[*evidence, f"installed {wheel} = {have}"],
        fix=wheel_fix(wheel, short, held),
        subject=wheel,
    )


def wheel_fix(wheel: str, short: list[dict[str, Any]], held: list[dict[str, Any]]) -> list[str]:
    """Steps out: the newest floor anyone asks for (the wheels of one name share a CUDA major, and
    a newer minor serves those that pinned an older one)."""
    floors = [f for p in short + held if (f := versions.floor(str(p["spec"])))]
    op, target = max(floors, key=lambda f: versions.parse(f[1]) or ())
    steps = [f"pip install '{wheel}{op}{target}'"]
    below = [
        p for p in held if versions.floor(str(p["spec"])) != (op, target) and str(p["spec"]).startswith("==")
    ]
    if below:
        names = ", ".join(pin_label(p) for p in below)
        steps.append(
            f"pip will then say that {names} asks for another version; a newer {wheel} of the same major "
            "keeps working for it (CUDA libraries are compatible within a major version, not with older minors)"
        )
    steps.append(f"Then `pip check` no longer lists {wheel}")
    return steps
