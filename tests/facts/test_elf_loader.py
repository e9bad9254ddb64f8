"""ELF reading, fatbin arch lists and loader emulation on real files built here with gcc / nvcc."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cudoctor.facts.elf import ElfError, read_elf
from cudoctor.facts.fatbin import fatbin_archs, sm_list
from cudoctor.facts.loader import Loader, needed_closure, parse_ldconfig, preloads, resolve_needed
from tests.conftest import build_shared_lib, needs_gcc, needs_nvcc


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("elf")
    for d in ("a", "b", "app"):
        (root / d).mkdir()
    for d in ("a", "b"):
        build_shared_lib(root / d / "libdep.so.1", "int dep(void){return 1;}", "-Wl,-soname,libdep.so.1")
    dep = ["-L", str(root / "a"), "-l:libdep.so.1"]
    build_shared_lib(
        root / "app" / "librunpath.so",
        "int dep(void); int top(void){return dep();}",
        *dep,
        "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../a",
    )
    build_shared_lib(
        root / "app" / "librpath.so",
        "int dep(void); int top2(void){return dep();}",
        *dep,
        "-Wl,--disable-new-dtags,-rpath,$ORIGIN/../a",
    )
    build_shared_lib(root / "libmissing.so.3", "int gone(void){return 3;}", "-Wl,-soname,libmissing.so.3")
    build_shared_lib(
        root / "app" / "libbroken.so",
        "int gone(void); int f(void){return gone();}",
        "-L",
        str(root),
        "-l:libmissing.so.3",
    )
    return root


@needs_gcc
def test_read_elf_dynamic_entries(layout: Path) -> None:
    info = read_elf(str(layout / "app" / "librunpath.so"))
    assert "libdep.so.1" in info.needed
    assert info.runpath == ("$ORIGIN/../a",) and info.rpath == ()
    assert read_elf(str(layout / "a" / "libdep.so.1")).soname == "libdep.so.1"
    assert read_elf(str(layout / "app" / "librpath.so")).rpath == ("$ORIGIN/../a",)


def test_read_elf_rejects_non_elf(tmp_path: Path) -> None:
    bad = tmp_path / "libfake.so"
    bad.write_bytes(b"not an elf file at all, just text" * 4)
    with pytest.raises(ElfError, match="not an ELF"):
        read_elf(str(bad))
    with pytest.raises(ElfError):
        read_elf(str(tmp_path / "absent.so"))


@needs_gcc
def test_ld_library_path_beats_runpath_but_not_rpath(layout: Path) -> None:
    loader = Loader((str(layout / "b"),), {})
    runpath = resolve_needed(str(layout / "app" / "librunpath.so"), loader, ["libdep.so.1"])["libdep.so.1"]
    assert runpath.path == str(layout / "b" / "libdep.so.1") and runpath.via == "LD_LIBRARY_PATH"
    assert [c[1] for c in runpath.candidates][:2] == ["LD_LIBRARY_PATH", "runpath"]
    rpath = resolve_needed(str(layout / "app" / "librpath.so"), loader, ["libdep.so.1"])["libdep.so.1"]
    assert rpath.path == str(layout / "a" / "libdep.so.1") and rpath.via == "rpath"


@needs_gcc
def test_ld_preload_entries_map_sonames_to_files(layout: Path, tmp_path: Path) -> None:
    a, b = layout / "a" / "libdep.so.1", layout / "b" / "libdep.so.1"
    (tmp_path / "notes.so").write_text("not an ELF file")
    value = f" {a}:{tmp_path / 'notes.so'} {tmp_path / 'absent.so'}  {b}"
    assert preloads(value, {}) == {"libdep.so.1": str(a)}  # the first copy of a SONAME wins, junk is skipped
    assert preloads("libdep.so.1", {"libdep.so.1": [str(b)]}) == {
        "libdep.so.1": str(b)
    }  # a bare name: ld cache
    assert preloads("", {}) == {}


@needs_gcc
def test_a_preloaded_copy_wins_even_over_rpath_as_ld_so_decides(layout: Path, tmp_path: Path) -> None:
    """The emulation agrees with the real loader: a program linked against a/libdep.so.1 through
    DT_RPATH calls b's copy when b's is in LD_PRELOAD."""
    other = build_shared_lib(tmp_path / "libdep.so.1", "int dep(void){return 7;}", "-Wl,-soname,libdep.so.1")
    src = tmp_path / "main.c"
    src.write_text('#include <stdio.h>\nint dep(void);\nint main(void){printf("%d", dep());return 0;}\n')
    exe = tmp_path / "main"
    subprocess.run(
        [
            "gcc",
            "-o",
            str(exe),
            str(src),
            "-L",
            str(layout / "a"),
            "-l:libdep.so.1",
            "-Wl,--disable-new-dtags,-rpath," + str(layout / "a"),
        ],
        check=True,
        capture_output=True,
    )
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "LD_LIBRARY_PATH")}
    assert subprocess.run([str(exe)], env=env, capture_output=True, text=True).stdout == "1"
    real = subprocess.run([str(exe)], env={**env, "LD_PRELOAD": str(other)}, capture_output=True, text=True)
    assert real.stdout == "7"
    got = resolve_needed(str(exe), Loader((), {}, preloads(str(other), {})), ["libdep.so.1"])["libdep.so.1"]
    assert (got.path, got.via) == (str(other), "preloaded")
    assert [c[1] for c in got.candidates] == ["preloaded", "rpath"]


@needs_gcc
def test_unresolvable_needed_is_reported(layout: Path) -> None:
    starts = [str(layout / "app" / "libbroken.so"), str(layout / "app" / "librunpath.so")]
    closure = needed_closure(starts, Loader((), {}), follow_under=(str(layout),))
    assert closure.missing == [("libmissing.so.3", starts[0])]
    assert closure.resolved["libmissing.so.3"].path is None
    assert closure.resolved["libdep.so.1"].path == str(layout / "a" / "libdep.so.1")


def test_parse_ldconfig_keeps_64bit_entries() -> None:
    text = "2 libs found in cache `/etc/ld.so.cache'\n\tlibcudart.so.13 (libc6,x86-64) => /usr/local/cuda-13.0/lib/libcudart.so.13\n\tlibfoo.so.1 (libc6) => /usr/lib32/libfoo.so.1\n"
    assert parse_ldconfig(text) == {"libcudart.so.13": ["/usr/local/cuda-13.0/lib/libcudart.so.13"]}


@needs_nvcc
def test_fatbin_arch_list_from_real_nvcc_output(tmp_path: Path) -> None:
    src = tmp_path / "k.cu"
    src.write_text(
        "__global__ void k(float *x){ x[threadIdx.x] *= 2.0f; }\nvoid launch(float *x){ k<<<1, 32>>>(x); }\n"
    )
    out = tmp_path / "libk.so"
    gencode = [
        "-gencode",
        "arch=compute_80,code=sm_80",
        "-gencode",
        "arch=compute_90a,code=sm_90a",
        "-gencode",
        "arch=compute_90,code=compute_90",
    ]
    subprocess.run(
        ["nvcc", "-shared", "-Xcompiler", "-fPIC", *gencode, "-o", str(out), str(src)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    archs = fatbin_archs(str(out))
    assert archs == {"sm_80", "sm_90a", "compute_90"}
    assert sm_list(archs) == ["sm_80", "sm_90a", "compute_90"]


@needs_gcc
def test_fatbin_archs_empty_for_plain_library(layout: Path) -> None:
    assert fatbin_archs(str(layout / "a" / "libdep.so.1")) == set()
    assert fatbin_archs(os.devnull) is None
