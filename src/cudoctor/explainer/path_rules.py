"""Rules for a CUDA library the loader could not find, read against the toolkits the facts show: a
toolkit that ships that very file (cudart64_110.dll in every CUDA 11.x, libcublas.so.12 in every
12.x) means the file is on the machine and the loader's path does not lead to it."""

from __future__ import annotations

from typing import Any

from cudoctor import knowledge, versions
from cudoctor.checks import view
from cudoctor.explainer.ranked import RankedCause, bump
from cudoctor.model import Snapshot

CAUSE = "env-path-misconfig"
# the libraries whose file name carries the CUDA release it comes from: from CUDA 11 on the major alone
# (libcudart.so.11.0 and cudart64_110.dll in every 11.x, libcublas.so.12 in every 12.x), before it the
# exact minor (libcudart.so.10.1 only in 10.1)
BY_RELEASE = ("cudart", "cublas", "cublaslt")
ON_PATH = 0.35  # beside 'could not be loaded' (cuda-libs-missing 0.9): a strong second, the thread decides


def ships(toolkit: str, wanted: str) -> bool:
    """Whether a CUDA `toolkit` release ships the file of release `wanted` ('11.0', '12', '10.1')."""
    have, want = versions.parse(toolkit), versions.parse(wanted)
    if not have or not want:
        return False
    if want[0] >= 11:
        return have[0] == want[0] and (len(want) < 2 or want[1] == 0 or have[:2] == want[:2])
    return len(want) >= 2 and have[:2] == want[:2]


def toolkit_holds_it_rule(
    ranked: dict[str, RankedCause], read: dict[str, str], snap: Snapshot, line: int
) -> None:
    """The root line could not load a library a toolkit in the facts ships: its directory is off the path."""
    wanted, soname = read.get("cuda_wanted"), read.get("soname")
    if read.get("library") not in BY_RELEASE or not wanted or not soname or CAUSE not in ranked:
        return
    kit = next(
        (t for t in snap.value("cuda.toolkits") or [] if ships(str(t.get("version") or ""), wanted)), None
    )
    if kit is None:
        return
    bump(
        ranked,
        CAUSE,
        ON_PATH,
        f"fact: the CUDA {kit['version']} toolkit {_where(kit)}ships {soname}; the loader did not look where it is",
        _fix(kit, soname, view.platform(snap) == "windows" or soname.endswith(".dll")),
    )


def _where(kit: dict[str, Any]) -> str:
    return "" if kit.get("stated") else f"at {kit.get('root')} "


def _fix(kit: dict[str, Any], soname: str, windows: bool) -> str:
    version = str(kit["version"])
    root = str(kit["root"]) if not kit.get("stated") else knowledge.toolkit_root(version, windows)
    if windows:
        return (
            f"Put CUDA {version}'s bin directory, which holds {soname}, where the process looks: add {root}\\bin to "
            f"PATH and open a new terminal; Python 3.8+ loads a module's DLLs only from the system folders and "
            f"os.add_dll_directory(r'{root}\\bin'), called before the import"
        )
    return (
        f"Put CUDA {version}'s lib64, which holds {soname}, on the loader's path: "
        f"export LD_LIBRARY_PATH={root}/lib64:$LD_LIBRARY_PATH (for every shell: a file in /etc/ld.so.conf.d "
        "naming it, then sudo ldconfig)"
    )
