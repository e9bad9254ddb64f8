"""Fields in the causes' general steps that the other tables decide (causes.toml `{torch_index}`):
the wheel index of the newest PyTorch, the oldest GPU its wheels keep, JAX's current CUDA extras. A
step names what the tables say today, not what was true when the step was written.

Only the names in FIELDS are filled (a step may hold other braces: a Python dict, a shell `${X}`);
`knowledge.validate()` reports a `{name}` in a step that is not one of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from cudoctor import versions
from cudoctor.knowledge import jax_builds, table, torch_archs

FIELD = re.compile(r"\{([a-z][a-z0-9_]*)\}")
TORCH_INDEX = "https://download.pytorch.org/whl"


def _newest_torch() -> tuple[str, list[str]]:
    """The newest release with CUDA wheels ('2.13.0') and its CUDA variants, oldest CUDA first."""
    for row in reversed(table("torch")["release"]):
        cuda = [str(v) for v in row.get("variants") or [] if re.fullmatch(r"cu\d+", str(v))]
        if cuda:
            return str(row["version"]), sorted(
                cuda, key=lambda v: versions.parse(versions.cuda_from_variant(v) or "") or ()
            )
    raise LookupError("torch.toml has no release with CUDA wheels")


def torch_index() -> str:
    """The index of the newest release's oldest CUDA variant: the one that asks least of the driver."""
    return f"{TORCH_INDEX}/{_newest_torch()[1][0]}"


def torch_old_gpus() -> str:
    """'PyTorch 2.13's cu126 wheels keep sm_50 and newer': the variant of the newest release whose
    architecture list reaches back furthest, and how far."""
    version, variants = _newest_torch()
    best: tuple[versions.Version, str] | None = None
    for variant in variants:
        hit = torch_archs(version, variant)
        lows = [versions.cc_tuple(a.partition("+")[0]) for a in (hit[0] if hit else [])]
        low = min((c for c in lows if c is not None), default=None)
        if low is not None and (best is None or low < best[0]):
            best = (low, variant)
    mm = versions.major_minor(version) or (0, 0)
    if best is None:
        return f"the oldest CUDA variant of PyTorch {mm[0]}.{mm[1]}"
    return f"PyTorch {mm[0]}.{mm[1]}'s {best[1]} wheels keep sm_{best[0][0]}{best[0][1]} and newer"


def jax_install() -> str:
    """The install of JAX's oldest current CUDA extra ('pip install -U 'jax[cuda12]''), with its driver."""
    rows = jax_builds.current_installs()
    return f"{rows[0]['step']} (driver >= {rows[0]['min_driver']})" if rows else "pip install -U jax"


def jax_newer() -> str:
    """The newer extras and their drivers ('jax[cuda13] with a driver >= 580'), or nothing."""
    newer = jax_builds.current_installs()[1:]
    return " or ".join(
        f"{jax_builds.extra(r)} with a driver >= {r['min_driver']}" for r in newer if jax_builds.extra(r)
    )


FIELDS: dict[str, Callable[[], str]] = {
    "torch_index": torch_index,
    "torch_old_gpus": torch_old_gpus,
    "jax_install": jax_install,
    "jax_newer": jax_newer,
}


def fill(step: str, values: dict[str, str]) -> str:
    return FIELD.sub(lambda m: values.get(m.group(1), m.group(0)), step)


def values() -> dict[str, str]:
    return {name: compute() for name, compute in FIELDS.items()}


def unknown(step: str) -> list[str]:
    """The `{name}` fields of a step that no table fills."""
    return [m.group(1) for m in FIELD.finditer(step) if m.group(1) not in FIELDS]
