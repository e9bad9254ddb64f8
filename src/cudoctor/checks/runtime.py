"""Framework ↔ system runtime libraries: the libstdc++ and glibc the loader gives a framework
must define every symbol version (GLIBCXX_*, CXXABI_*, GLIBC_*) its libraries were linked against."""

from __future__ import annotations

import os
from typing import Any

from cudoctor import knowledge
from cudoctor.checks import FRAMEWORK_FACTS, check, finding, view
from cudoctor.facts.symvers import CXX_LIB, version_key
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "Frameworks"


def gcc_for(glibcxx: str | None) -> str | None:
    """The first GCC release whose libstdc++ defines this GLIBCXX version (knowledge data)."""
    rows = {r["glibcxx"]: r["gcc"] for r in knowledge.table("libstdcxx")["release"]}
    return rows.get(glibcxx or "")


def _needed_by(runtime: dict[str, Any], version: str) -> str:
    """The library that needs `version`, else any that needs the newest of its family ('' if none)."""
    needed_by = runtime.get("needed_by", {})
    return needed_by.get(version) or next(iter(needed_by.values()), "")


def _fixes(cxx: dict[str, Any], bad: dict[str, Any]) -> tuple[str, list[str]]:
    """The cause and fix steps: a missing link, a better copy elsewhere, or none new enough."""
    good = [c for c in cxx["copies"] if not c.get("missing") and not c.get("error")]
    if cxx.get("unlinked"):
        target = cxx["unlinked"][-1]
        where, name = os.path.dirname(target), os.path.basename(target)
        return "broken-install", [
            f"{where} has {name} but no libstdc++.so.6 link to it, so the loader passes it by: "
            f"cd {where} && ln -s {name} libstdc++.so.6 (or reinstall the package that owns it: conda install --force-reinstall libstdcxx-ng)"
        ]
    needed = cxx.get("newest_needed", {}).get("GLIBCXX")
    gcc = gcc_for(needed)
    if good and bad["via"] == "interpreter rpath":
        return "multiple-toolkits", [
            f"The environment's own {bad['path']} is older than the {good[0]['path']} the framework needs; python's RPATH "
            f"puts it first. Update it: conda install -c conda-forge 'libstdcxx-ng>={gcc or '12'}' (or remove it so the newer one is used)",
        ]
    if good:
        where = os.path.dirname(good[0]["path"])
        return "multiple-toolkits", [
            f"{good[0]['path']} defines them: put its directory first for this job: export LD_LIBRARY_PATH={where}:$LD_LIBRARY_PATH",
            f"or remove the old copy's directory ({os.path.dirname(bad['path'])}) from LD_LIBRARY_PATH / the environment that puts it first",
        ]
    runtime = f"a libstdc++ from GCC {gcc} or newer" if gcc else "a newer libstdc++"
    return "binary-incompatible", [
        f"Install {runtime}: in a conda env, conda install -c conda-forge 'libstdcxx-ng>={gcc or '12'}'; on the system, the distribution's newer libstdc++6 (or a newer OS release)",
        "Or install a build of the framework made for an older C++ runtime (an older release, or the manylinux wheel from PyPI instead of a source build)",
    ]


def _finding(name: str, info: dict[str, Any], bad: dict[str, Any], severity: Severity) -> Finding:
    cxx = info["runtime_versions"][CXX_LIB]
    cause, fix = _fixes(cxx, bad)
    missing = bad["missing"]
    first = missing[-1]
    needed_by = _needed_by(cxx, first)
    maybe = "" if severity is Severity.ERROR else " if it is loaded first"
    return finding(
        "cxx-runtime-too-old",
        cause,
        severity,
        f"{view.describe(name, info)} needs {first} from libstdc++, but the copy it would get{maybe} "
        f"({bad['path']}, via {bad['via']}) stops at {bad.get('newest') or 'an older version'}: "
        f'import fails with "version `{first}\' not found"',
        LAYER,
        evidence=[
            f"{os.path.basename(needed_by)} needs {', '.join(missing)}"
            if needed_by
            else f"needs {', '.join(missing)}",
            *(f"libstdc++.so.6: {c['path']} via {c['via']}, newest {c.get('newest')}" for c in cxx["copies"]),
            *(f"unlinked: {p}" for p in cxx.get("unlinked") or []),
        ],
        fix=fix,
        subject=name,
        generic_fixes=False,  # both ways out are above; the cause's steps pin NumPy or MKL
    )


@check("cxx-runtime-too-old", "binary-incompatible", LAYER, requires_any=FRAMEWORK_FACTS)
def cxx_runtime_too_old(snap: Snapshot) -> list[Finding]:
    """The libstdc++ a framework would load lacks GLIBCXX/CXXABI versions the framework needs
    (built with a newer GCC): import fails with "version `GLIBCXX_3.4.30' not found"."""
    out = []
    for name, info in view.frameworks(snap):
        cxx = (info.get("runtime_versions") or {}).get(CXX_LIB)
        if not isinstance(cxx, dict) or not cxx.get("copies"):
            continue
        winner, *others = cxx["copies"]
        if winner.get("missing"):
            out.append(_finding(name, info, winner, Severity.ERROR))
            continue
        early = next((c for c in others if c["via"] == "interpreter rpath" and c.get("missing")), None)
        if early is not None:
            out.append(_finding(name, info, early, Severity.WARNING))
    return out


GLIBC_LIBS = ("libc.so.6", "libm.so.6")


def _glibc_finding(name: str, info: dict[str, Any], runtimes: dict[str, Any]) -> Finding | None:
    short = [(lib, runtimes[lib]) for lib in GLIBC_LIBS if lib in runtimes and runtimes[lib]["copies"]]
    bad = [(lib, r, r["copies"][0]) for lib, r in short if r["copies"][0].get("missing")]
    if not bad:
        return None
    needs = sorted({v for _, _, c in bad for v in c["missing"]}, key=version_key)
    lib, r, copy = bad[0]
    libc = runtimes.get("libc.so.6", {}).get("copies") or [copy]
    have = libc[0].get("newest") or "an older version"
    needed_by = _needed_by(r, needs[-1])
    minor = have.rsplit(".", 1)[-1] if have.startswith("GLIBC_2.") else "17"
    return finding(
        "glibc-too-old",
        "binary-incompatible",
        Severity.ERROR,
        f"{view.describe(name, info)} needs {needs[-1]} from {lib}, but this system's glibc is {have.removeprefix('GLIBC_')}: "
        f'import fails with "version `{needs[-1]}\' not found" (built on a newer Linux than this one)',
        LAYER,
        evidence=[
            f"{os.path.basename(needed_by)} needs {', '.join(needs)}",
            *(f"{lib}: {c['path']} defines up to {c.get('newest')}" for lib, _, c in bad),
        ],
        fix=[
            f"Install a build of the framework made for this glibc: a release whose Linux wheels are tagged "
            f"manylinux_2_{minor} or lower (manylinux2014 means glibc 2.17), or build it from source here; "
            "a conda package or a wheel copied from another machine is the usual way a newer one arrives",
            "Or run it on a newer distribution: a container image whose glibc is recent enough (ldd --version shows it)",
        ],
        subject=name,
        generic_fixes=False,  # the cause's steps pin NumPy or MKL: not what a glibc needs
    )


@check("glibc-too-old", "binary-incompatible", LAYER, requires_any=FRAMEWORK_FACTS)
def glibc_too_old(snap: Snapshot) -> list[Finding]:
    """A framework's libraries need GLIBC_* versions this system's glibc does not define (built on
    a newer distribution): import fails with "version `GLIBC_2.28' not found"."""
    out = []
    for name, info in view.frameworks(snap):
        hit = _glibc_finding(name, info, info.get("runtime_versions") or {})
        if hit is not None:
            out.append(hit)
    return out
