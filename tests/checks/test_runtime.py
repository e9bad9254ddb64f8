"""libstdc++ symbol versions: a framework built with a newer GCC than the libstdc++ the loader
finds. Real ELF files built here with gcc and version scripts (the same mechanism libstdc++
uses for GLIBCXX_*), laid out as the broken installs of pytorch#157709 and executorch#2376."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudoctor.facts.elf import ElfError, read_symbol_versions
from cudoctor.facts.frameworks import read_torch
from cudoctor.facts.loader import Loader
from cudoctor.facts.symvers import interpreter_dirs, version_key
from cudoctor.model import Severity
from tests.conftest import build_shared_lib, finding_ids, needs_gcc, run_check, stated

# a version no real libstdc++ defines, so the system's own copy never satisfies the test build
NEW = "GLIBCXX_3.4.90"
OLD = "GLIBCXX_3.4.21"


def _runtime(directory: Path, versions: list[str], soname: str = "libstdc++.so.6") -> Path:
    """A stand-in runtime library that defines the given symbol versions, one function each."""
    directory.mkdir(parents=True, exist_ok=True)
    script, parent, src = [], "", []
    for i, v in enumerate(versions):
        src.append(f"int f{i}(void){{return {i};}}")
        script.append(f"{v} {{ global: f{i}; {'local: *; ' if i == 0 else ''}}} {parent};")
        parent = v
    (directory / "vers.map").write_text("\n".join(script) + "\n")
    return build_shared_lib(
        directory / soname,
        "\n".join(src),
        f"-Wl,-soname,{soname}",
        f"-Wl,--version-script={directory / 'vers.map'}",
    )


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cxx")
    _runtime(root / "new", [OLD, NEW])
    _runtime(root / "old", [OLD])
    (root / "unlinked").mkdir()
    shutil.copy(root / "new" / "libstdc++.so.6", root / "unlinked" / "libstdc++.so.6.0.90")
    torch = root / "site-packages" / "torch"
    (torch / "lib").mkdir(parents=True)
    (torch / "version.py").write_text("__version__ = '2.9.0+cpu'\ncuda = None\nhip = None\n")
    for name in ("libtorch_cpu.so", "libc10.so"):
        build_shared_lib(torch / "lib" / name, "int x(void){return 0;}")
    # the extension uses f1, the NEW symbol: the linker records a need for NEW from libstdc++.so.6
    build_shared_lib(
        torch / "_C.cpython-311-x86_64-linux-gnu.so",
        "int f1(void); int use(void){return f1();}",
        "-L",
        str(root / "new"),
        "-l:libstdc++.so.6",
        "-Wl,--enable-new-dtags,-rpath,$ORIGIN/lib",
    )
    return root


def _torch_fact(layout: Path, *ld_library_path: Path) -> dict:
    loader = Loader(ld_library_path=tuple(str(p) for p in ld_library_path), ldcache={})
    return read_torch(str(layout / "site-packages" / "torch"), None, loader)


@needs_gcc
def test_symbol_versions_are_read_from_the_elf_version_sections(layout: Path) -> None:
    ext = read_symbol_versions(str(layout / "site-packages" / "torch" / "_C.cpython-311-x86_64-linux-gnu.so"))
    assert ext.needs["libstdc++.so.6"] == (NEW,)
    assert read_symbol_versions(str(layout / "new" / "libstdc++.so.6")).defines == (OLD, NEW)
    assert read_symbol_versions(str(layout / "old" / "libstdc++.so.6")).defines == (OLD,)
    # the real system library agrees with readelf's view of it (GLIBCXX_3.4 is always there)
    system = (
        read_symbol_versions("/lib/x86_64-linux-gnu/libstdc++.so.6")
        if os.path.exists("/lib/x86_64-linux-gnu/libstdc++.so.6")
        else None
    )
    assert system is None or "GLIBCXX_3.4" in system.defines
    with pytest.raises(ElfError):
        read_symbol_versions(str(layout / "new" / "vers.map"))
    assert sorted(["GLIBCXX_3.4.9", "GLIBCXX_3.4.30", "GLIBCXX_3.4"], key=version_key)[-1] == "GLIBCXX_3.4.30"


@needs_gcc
def test_old_copy_first_with_a_good_one_behind_it_is_a_library_mix_up(layout: Path) -> None:
    fact = _torch_fact(layout, layout / "old", layout / "new")
    copies = fact["runtime_versions"]["libstdc++.so.6"]["copies"]
    assert copies[0]["path"] == str(layout / "old" / "libstdc++.so.6") and copies[0]["missing"] == [NEW]
    assert copies[1]["missing"] == [] and copies[1]["newest"] == NEW
    r = run_check("cxx-runtime-too-old", stated({}, framework__torch=fact))
    assert finding_ids(r) == ["cxx-runtime-too-old"]
    f = r.findings[0]
    assert f.severity is Severity.ERROR and f.cause == "multiple-toolkits"
    assert f"needs {NEW} from libstdc++" in f.title and "via LD_LIBRARY_PATH" in f.title
    assert f.fix[0].endswith(f"export LD_LIBRARY_PATH={layout / 'new'}:$LD_LIBRARY_PATH")


@needs_gcc
def test_no_copy_new_enough_needs_a_newer_runtime(layout: Path) -> None:
    fact = _torch_fact(layout, layout / "old")
    r = run_check("cxx-runtime-too-old", stated({}, framework__torch=fact))
    assert [f.cause for f in r.findings] == ["binary-incompatible"]
    assert "a newer libstdc++" in r.findings[0].fix[0]  # 3.4.90 maps to no GCC release


@needs_gcc
def test_a_copy_without_its_link_is_a_broken_install(layout: Path) -> None:
    """pytorch#157709: the env had libstdc++.so.6.0.34 but no libstdc++.so.6, so the system's loaded."""
    fact = _torch_fact(layout, layout / "unlinked")
    assert fact["runtime_versions"]["libstdc++.so.6"]["unlinked"] == [
        str(layout / "unlinked" / "libstdc++.so.6.0.90")
    ]
    r = run_check("cxx-runtime-too-old", stated({}, framework__torch=fact))
    assert [f.cause for f in r.findings] == ["broken-install"]
    assert "ln -s libstdc++.so.6.0.90 libstdc++.so.6" in r.findings[0].fix[0]


@needs_gcc
def test_silent_when_the_first_copy_has_every_version(layout: Path) -> None:
    fact = _torch_fact(layout, layout / "new", layout / "old")
    assert fact["runtime_versions"]["libstdc++.so.6"]["copies"][0]["missing"] == []
    r = run_check("cxx-runtime-too-old", stated({}, framework__torch=fact))
    assert r.outcome == "ok" and r.findings == ()


def test_silent_on_this_real_environment_and_unknown_without_facts() -> None:
    from cudoctor.facts import collect_live

    snap = collect_live()
    torch = snap.value("framework.torch")
    assert isinstance(torch, dict) and torch["runtime_versions"]["libstdc++.so.6"]["newest_needed"][
        "GLIBCXX"
    ].startswith("GLIBCXX_3.4")
    assert run_check("cxx-runtime-too-old", snap).findings == ()
    assert run_check("cxx-runtime-too-old", stated({})).outcome == "unknown"
    # a framework fact from an older snapshot, without the C++ runtime part, is passed over
    assert run_check("cxx-runtime-too-old", stated({}, framework__torch={"version": "2.1.0"})).findings == ()


@needs_gcc
def test_interpreter_rpath_is_read_from_the_executable(tmp_path: Path) -> None:
    """A conda python carries RPATH $ORIGIN/../lib: its env's lib is searched first."""
    src = tmp_path / "main.c"
    src.write_text("int main(void){return 0;}")
    exe = tmp_path / "bin" / "python3"
    exe.parent.mkdir()
    subprocess.run(
        ["gcc", "-o", str(exe), str(src), "-Wl,--disable-new-dtags,-rpath,$ORIGIN/../lib"], check=True
    )
    assert interpreter_dirs(str(exe)) == (str(tmp_path / "lib"),)
    assert interpreter_dirs(sys.executable) == interpreter_dirs()


def test_an_old_copy_in_the_interpreters_own_path_is_a_warning() -> None:
    """executorch#2376: the env's older libstdc++ (found through python's RPATH) was loaded first."""
    fact = {
        "version": "2.2.0",
        "runtime_versions": {
            "libstdc++.so.6": {
                "newest_needed": {"GLIBCXX": "GLIBCXX_3.4.30"},
                "needed_by": {
                    "GLIBCXX_3.4.30": "/env/lib/python3.10/site-packages/torch/lib/libtorch_python.so"
                },
                "copies": [
                    {
                        "path": "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
                        "via": "ldcache",
                        "missing": [],
                        "newest": "GLIBCXX_3.4.30",
                    },
                    {
                        "path": "/env/lib/libstdc++.so.6",
                        "via": "interpreter rpath",
                        "missing": ["GLIBCXX_3.4.30"],
                        "newest": "GLIBCXX_3.4.29",
                    },
                ],
                "unlinked": [],
            }
        },
    }
    r = run_check("cxx-runtime-too-old", stated({}, framework__torch=fact))
    f = r.findings[0]
    assert f.severity is Severity.WARNING and f.cause == "multiple-toolkits"
    assert (
        "if it is loaded first (/env/lib/libstdc++.so.6, via interpreter rpath) stops at GLIBCXX_3.4.29"
        in f.title
    )
    assert "libtorch_python.so needs GLIBCXX_3.4.30" in f.evidence[0]
    assert "conda install -c conda-forge 'libstdcxx-ng>=12.1.0'" in f.fix[0]


@pytest.fixture(scope="module")
def old_glibc(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """jax#854's layout: an extension built against a newer glibc on a system whose glibc is 2.17.
    The stand-in libc.so.6 defines GLIBC_2.17; the extension (linked without the real libc) needs
    GLIBC_2.90 from it."""
    root = tmp_path_factory.mktemp("glibc")
    _runtime(root / "build", ["GLIBC_2.17", "GLIBC_2.90"], soname="libc.so.6")
    _runtime(root / "system", ["GLIBC_2.17"], soname="libc.so.6")
    torch = root / "site-packages" / "torch"
    (torch / "lib").mkdir(parents=True)
    (torch / "version.py").write_text("__version__ = '2.9.0+cpu'\ncuda = None\nhip = None\n")
    build_shared_lib(
        torch / "_C.cpython-311-x86_64-linux-gnu.so",
        "int f1(void); int use(void){return f1();}",
        "-nostdlib",
        "-L",
        str(root / "build"),
        "-l:libc.so.6",
    )
    return root


@needs_gcc
def test_glibc_older_than_the_build_is_reported_with_the_wheel_tag_to_look_for(old_glibc: Path) -> None:
    loader = Loader(ld_library_path=(str(old_glibc / "system"),), ldcache={})
    fact = read_torch(str(old_glibc / "site-packages" / "torch"), None, loader)
    libc = fact["runtime_versions"]["libc.so.6"]
    assert libc["newest_needed"] == {"GLIBC": "GLIBC_2.90"} and libc["copies"][0]["missing"] == ["GLIBC_2.90"]
    r = run_check("glibc-too-old", stated({}, framework__torch=fact))
    assert finding_ids(r) == ["glibc-too-old"]
    f = r.findings[0]
    assert f.cause == "binary-incompatible" and f.severity is Severity.ERROR
    assert "needs GLIBC_2.90 from libc.so.6, but this system's glibc is 2.17" in f.title
    assert "manylinux_2_17 or lower" in f.fix[0]
    assert len(f.fix) == 2 and not any("numpy" in s for s in f.fix)  # no NumPy or MKL pin for a glibc
    # the same extension where the loader finds the glibc it was built against: silent
    build_first = Loader(ld_library_path=(str(old_glibc / "build"),), ldcache={})
    fine = read_torch(str(old_glibc / "site-packages" / "torch"), None, build_first)
    assert run_check("glibc-too-old", stated({}, framework__torch=fine)).findings == ()


def test_glibc_check_is_silent_here_and_unknown_without_facts() -> None:
    from cudoctor.facts import collect_live

    snap = collect_live()
    torch = snap.value("framework.torch")
    assert isinstance(torch, dict) and torch["runtime_versions"]["libc.so.6"]["newest_needed"]["GLIBC"]
    assert run_check("glibc-too-old", snap).findings == ()
    assert run_check("glibc-too-old", stated({})).outcome == "unknown"
