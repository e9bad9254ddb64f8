"""What GPU-relevant distributions require (their Requires-Dist), against what is installed.

`jax-cuda12-plugin` installed without the `jax-cuda12-pjrt` it requires imports fine, and JAX
then finds no GPU; a torch whose nvidia-* wheels were left out (`--no-deps`, a partial
uninstall) cannot load CUDA. pip reports neither unless someone runs `pip check`.

Mismatches other checks already name are left to them: requirements on torch / jax / jaxlib /
tensorflow (companion-version-mismatch), on numpy (numpy-abi-mismatch) and NVIDIA wheels older
than asked for (cuda-wheel-pins, cudnn-version-mismatch).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from cudoctor import versions
from cudoctor.checks import check, finding, view
from cudoctor.checks.wheels import too_old
from cudoctor.facts.packages import COMPILED_AGAINST
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "CUDA toolkits & libraries"
CAUSE = "requirements-unmet"

# the framework a requiring distribution belongs to (its line shows the finding)
_FRAMEWORK = (
    ("jax", "jax"),
    ("torch", "torch"),
    ("xformers", "torch"),
    ("flash-attn", "torch"),
    ("bitsandbytes", "torch"),
    ("tensorflow", "tensorflow"),
    ("cupy", "cupy"),
)


def framework_of(dist: str) -> str:
    return next((fw for prefix, fw in _FRAMEWORK if dist.startswith(prefix)), "")


def _versioned(spec: str) -> str:
    """The version part of a requirement ('' for none, or for a direct URL: 'name @ https://...')."""
    return "" if spec.startswith("@") else spec


def _reported_elsewhere(req: dict[str, Any], have: str) -> bool:
    target, spec = str(req["requires"]), str(req["spec"])
    if target in COMPILED_AGAINST or target == "numpy":  # numpy: numpy-abi-mismatch
        return True
    return target.startswith(("nvidia-", "cuda-")) and too_old(have, spec)


@check("requirements-unmet", CAUSE, LAYER, requires=("python.requirements", "python.packages"))
def requirements_unmet(snap: Snapshot) -> list[Finding]:
    """A GPU-relevant package (a JAX CUDA plugin, jaxlib, torch, torchvision, cupy, an nvidia-* wheel,
    ...) requires a package that is not installed, or another version of it than the one installed."""
    installed = {str(k): str(v) for k, v in (snap.value("python.packages") or {}).items()}
    missing: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)  # by requiring distribution
    unmet: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for req in snap.value("python.requirements") or []:
        target, spec = str(req["requires"]), _versioned(str(req["spec"]))
        have = installed.get(target)
        if have is None:
            if not req.get("extra"):  # an extra nobody asked for requires nothing
                missing[(str(req["package"]), str(req["version"]))].append(req)
        elif spec and versions.satisfies(have, spec) is False and not _reported_elsewhere(req, have):
            unmet[target].append(req)
    known_frameworks = {name for name, _ in view.frameworks(snap)}
    out = [_missing(reqs, known_frameworks) for _, reqs in sorted(missing.items())]
    out += [_mismatch(t, installed[t], reqs, known_frameworks) for t, reqs in sorted(unmet.items())]
    return out


def _who(reqs: list[dict[str, Any]]) -> str:
    """'torch 2.5.1 requires' / 'a 1 and b 2 require'."""
    names = list(dict.fromkeys(f"{r['package']} {r['version']}" for r in reqs))
    return " and ".join(names) + (" requires" if len(names) == 1 else " require")


def _evidence(reqs: list[dict[str, Any]]) -> list[str]:
    return [f"{r['package']} {r['version']} Requires-Dist: {r['requires']}{r['spec']}" for r in reqs]


def _install(targets: dict[str, list[dict[str, Any]]]) -> str:
    """One pip command for every target, each with every clause asked of it."""
    args = []
    for target, reqs in targets.items():
        clauses = (c for r in reqs for c in _versioned(str(r["spec"])).split(",") if c)
        args.append(f'"{target}{",".join(dict.fromkeys(clauses))}"')
    return "pip install " + " ".join(args)


def _subject(reqs: list[dict[str, Any]], known_frameworks: set[str]) -> str:
    names = {framework_of(str(r["package"])) for r in reqs}
    return next(iter(names)) if len(names) == 1 and names <= known_frameworks else ""


def _missing(reqs: list[dict[str, Any]], known_frameworks: set[str]) -> Finding:
    """What one distribution requires and is not installed, in one finding with one pip command."""
    targets: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in reqs:
        targets[str(r["requires"])].append(r)
    names = list(targets)
    what = f"{names[0]}, which is" if len(names) == 1 else f"{len(names)} packages that are"
    jax = any(n.startswith("jax-cuda") for n in names)
    return finding(
        "requirements-unmet",
        CAUSE,
        Severity.ERROR,
        f"{_who(reqs)} {what} not installed"
        + (f" ({', '.join(names)})" if len(names) > 1 else "")
        + (": JAX finds no GPU without it" if jax else ""),
        LAYER,
        evidence=[*_evidence(reqs), *(f"{n}: no .dist-info on sys.path" for n in names)],
        fix=[_install(targets), f"Then `pip check` no longer names {', '.join(names)}"],
        subject=_subject(reqs, known_frameworks),
        generic_fixes=False,
    )


def _mismatch(target: str, have: str, reqs: list[dict[str, Any]], known_frameworks: set[str]) -> Finding:
    wheel = target.startswith(("nvidia-", "cuda-"))
    return finding(
        "requirements-unmet",
        CAUSE,
        # a newer NVIDIA wheel of the same major mostly keeps working; a plugin of another release does not
        Severity.WARNING if wheel else Severity.ERROR,
        f"{_who(reqs)} {' and '.join(dict.fromkeys(str(r['requires']) + str(r['spec']) for r in reqs))}, "
        f"but {target} {have} is installed",
        LAYER,
        evidence=[*_evidence(reqs), f"installed {target} = {have}"],
        fix=[_install({target: reqs}), f"Then `pip check` no longer names {target}"],
        subject=_subject(reqs, known_frameworks),
        generic_fixes=False,
    )
