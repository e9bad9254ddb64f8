"""TORCH_CUDA_ARCH_LIST read the way the installed torch.utils.cpp_extension reads it: an entry it
does not know ("9.0+PTX" with torch 1.13, "sm_86", "8.6,8.9", a trailing ';') stops every CUDA
extension build (pip install flash-attn, apex, a CUDAExtension setup.py) with "Unknown CUDA arch";
a list that leaves out this machine's GPU builds extensions that cannot run on it. The architectures
the torch accepts are read from its own cpp_extension.py (facts: framework.torch
cpp_extension_arches)."""

from __future__ import annotations

import re
from typing import Any

from cudoctor import knowledge, versions
from cudoctor.checks import check, finding, view
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "Environment"
VARIABLE = "TORCH_CUDA_ARCH_LIST"


@check("torch-cuda-arch-list", "env-setting-invalid", LAYER, requires=("env", "framework.torch"))
def torch_cuda_arch_list(snap: Snapshot) -> list[Finding]:
    """TORCH_CUDA_ARCH_LIST holds an entry the installed torch refuses when it builds a CUDA
    extension, or leaves out the architecture of a GPU in this machine."""
    info = dict(view.cuda_frameworks(snap)).get("torch")
    value = view.env(snap).get(VARIABLE)
    arches = (info or {}).get("cpp_extension_arches")
    if info is None or not value or not isinstance(arches, dict):
        return []
    torch = view.describe("torch", info)
    if value == "native" and arches.get("native"):
        return []
    entries = expand(value, arches["named"])
    valid = set(arches["supported"]) | {a + "+PTX" for a in arches["supported"]}
    bad = [e for e in entries if e not in valid]
    if bad:
        return [_refused(value, entries, bad, arches, info, torch)]
    missed = [
        g for g in view.gpus(snap) if g.get("cc_t") and knowledge.arch_support(g["cc_t"], entries) == "none"
    ]
    return [_gpus_left_out(value, missed, torch)] if missed else []


def expand(value: str, named: list[list[str]]) -> list[str]:
    """cpp_extension's own steps: spaces become ';', names are replaced in order, then split on ';'."""
    text = value.replace(" ", ";")
    for name, expansion in named:
        text = text.replace(name, expansion)
    return text.split(";")


def _reason(entry: str, arches: dict[str, Any], release: str) -> str:
    names = ", ".join(n for n, _ in arches["named"] if "+" not in n)
    if not entry:
        return "an empty entry (a ';' or space at the end, or two in a row)"
    if "," in entry:
        return f"{entry!r}: commas do not separate entries, ';' or spaces do"
    if re.fullmatch(r"(?:sm_|compute_)?\d{2,3}a?(?:\+PTX)?", entry, re.I):
        return f"{entry!r}: write compute capabilities as major.minor (8.6, 9.0+PTX), not sm_86 or 86"
    if re.fullmatch(r"\d+\.\d+a?(?:\+ptx)?", entry, re.I):
        newest = max(arches["supported"], key=lambda a: versions.cc_tuple(a) or (0,))
        if not entry.endswith("+PTX") and entry.lower().endswith("+ptx"):
            return f"{entry!r}: write +PTX in capitals"
        return f"{release} does not know {entry} (its newest is {newest}: the GPU generation is newer than this torch)"
    return f"{entry!r} is neither an architecture nor a name this torch knows ({names})"


def _refused(
    value: str, entries: list[str], bad: list[str], arches: dict[str, Any], info: dict[str, Any], torch: str
) -> Finding:
    release = f"torch {versions.fmt(versions.parse(info.get('version')))}"
    reasons = list(dict.fromkeys(_reason(e, arches, release) for e in bad))
    kept = [e for e in entries if e and e not in bad]
    return finding(
        "torch-cuda-arch-list",
        "env-setting-invalid",
        Severity.ERROR,
        f"{VARIABLE}={value!r} is refused by {torch}: "
        + "; ".join(reasons)
        + '. Building any CUDA extension fails with "ValueError: Unknown CUDA arch (...) or GPU not supported"',
        LAYER,
        evidence=[f"env:{VARIABLE} = {value!r}", f"{release} accepts: " + " ".join(arches["supported"])],
        fix=[
            f"export {VARIABLE}='{';'.join(kept)}'  (the entries {release} accepts)"
            if kept
            else f"unset {VARIABLE}  (to build for the GPUs in this machine)",
            "A GPU newer than the installed torch needs a newer torch (its extensions are built with it); "
            "until then build the newest architecture it knows with +PTX, which the driver compiles for the new GPU",
        ],
        generic_fixes=False,
        subject="torch",
    )


def _gpus_left_out(value: str, missed: list[dict[str, Any]], torch: str) -> Finding:
    gpus = ", ".join(
        f"GPU {g.get('index', '?')} {g.get('name') or ''} (compute capability {versions.cc_str(g['cc_t'])})"
        for g in missed
    )
    cc = versions.cc_str(missed[0]["cc_t"])
    return finding(
        "torch-cuda-arch-list",
        "arch-unsupported",
        Severity.WARNING,
        f"{VARIABLE}={value!r} leaves out {gpus}: CUDA extensions built here (flash-attn, apex, a "
        "CUDAExtension) will hold no code for it and fail with 'no kernel image is available'",
        LAYER,
        evidence=[f"env:{VARIABLE} = {value!r}", torch],
        fix=[
            f"export {VARIABLE}='{value.strip().rstrip(';')};{cc}'  (or unset it to build for this machine's GPUs), "
            "then rebuild the extensions: pip install --no-build-isolation --force-reinstall --no-cache-dir <package>",
        ],
        generic_fixes=False,
        subject="torch",
    )
