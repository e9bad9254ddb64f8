"""PYTORCH_CUDA_ALLOC_CONF read as the installed torch reads it: an option that release refuses
(expandable_segments before 2.1, max_split_size_mb=512, expandable_segments:true) makes the first
CUDA call raise; PYTORCH_ALLOC_CONF is not read by the CUDA allocator before torch 2.10. Which
release knows which key is data: knowledge/torch_alloc_conf.toml."""

from __future__ import annotations

from typing import Any

from cudoctor import versions
from cudoctor.checks import check, finding, view
from cudoctor.knowledge import torch_alloc_conf as alloc_conf
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "Environment"
CAUSE = "env-setting-invalid"


@check("torch-alloc-conf", CAUSE, LAYER, requires=("env", "framework.torch"))
def torch_alloc_conf(snap: Snapshot) -> list[Finding]:
    """PyTorch's allocator setting holds an option the installed torch refuses when CUDA starts, or
    sits in a variable its CUDA allocator does not read."""
    info = dict(view.cuda_frameworks(snap)).get("torch")
    if info is None:
        return []
    env = view.env(snap)
    version = versions.parse(info.get("version"))
    out = []
    for row in alloc_conf.variables():
        value = env.get(row["name"])
        if value is None or not value.strip():
            continue
        if alloc_conf.reads(row["since"], version) is not False:
            refused = _refused(row["name"], value, version, info)
            out += [refused] if refused else []
        unread = _unread(row, value, version, info, env)
        out += [unread] if unread else []
    return out


def _refused(
    variable: str, value: str, version: versions.Version | None, info: dict[str, Any]
) -> Finding | None:
    problems = alloc_conf.problems(value, version, variable)
    if not problems:
        return None
    torch = view.describe("torch", info)
    return finding(
        "torch-alloc-conf",
        CAUSE,
        Severity.ERROR,
        f"{variable}={value!r} is refused by {torch}: "
        + "; ".join(p.text for p in problems)
        + ". The first CUDA call raises RuntimeError (torch._C._cuda_init)",
        LAYER,
        evidence=[f"env:{variable} = {value!r}", torch],
        fix=[p.fix for p in problems],
        subject="torch",
    )


def _unread(
    row: dict[str, Any],
    value: str,
    version: versions.Version | None,
    info: dict[str, Any],
    env: dict[str, str],
) -> Finding | None:
    """The variable is set, but this torch's CUDA allocator does not read it (and no variable it
    reads holds the same options)."""
    if alloc_conf.reads(row["cuda_since"], version) is not False:
        return None
    read_by_cuda = [
        other["name"] for other in alloc_conf.variables() if alloc_conf.reads(other["cuda_since"], version)
    ]
    if any(env.get(name, "").strip() == value.strip() for name in read_by_cuda):
        return None
    torch = view.describe("torch", info)
    release = f"torch {versions.fmt(version)}"
    how = (
        f"{release} reads it only for its device-generic settings; the CUDA allocator reads it from torch {row['cuda_since']}"
        if alloc_conf.reads(row["since"], version)
        else f"{release} does not read it at all (torch reads it from {row['since']})"
    )
    fix = []
    if read_by_cuda:
        target = read_by_cuda[0]
        fix.append(f"export {target}='{value}'  (the variable the CUDA allocator of {release} reads)")
        fix += [
            f"Then {p.fix[0].lower()}{p.fix[1:]}: {release} would refuse it there ({p.text})"
            for p in alloc_conf.problems(value, version, target)
        ]
    fix.append(f"{'Or u' if fix else 'U'}pgrade torch to {row['cuda_since']} or newer")
    return finding(
        "torch-alloc-conf",
        CAUSE,
        Severity.WARNING,
        f"{row['name']}={value!r} is ignored by the CUDA allocator of {torch}: {how}. "
        "The allocator silently keeps its defaults",
        LAYER,
        evidence=[f"env:{row['name']} = {value!r}", torch],
        fix=fix,
        generic_fixes=False,
        subject="torch",
    )
