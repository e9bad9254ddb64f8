"""Framework installs as macOS and Windows wheels lay them out: their core libraries are not
Linux .so files, and a complete install must not read as a broken one. The file names are those
of the real wheels (torch-2.5.1-cp311-none-macosx_11_0_arm64.whl lists torch/lib/libtorch_cpu.dylib
and torch/lib/libc10.dylib; Windows wheels ship torch/lib/torch_cpu.dll and c10.dll)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudoctor.facts.frameworks import read_torch
from cudoctor.facts.loader import Loader
from cudoctor.render.areas import _framework_summary

LIBS = {
    "darwin": ("libtorch_cpu.dylib", "libc10.dylib"),
    "win32": ("torch_cpu.dll", "c10.dll"),
    "linux": ("libtorch_cpu.so", "libc10.so"),
}


def torch_dir(tmp_path: Path, platform: str) -> Path:
    root = tmp_path / platform / "torch"
    (root / "lib").mkdir(parents=True)
    (root / "version.py").write_text("__version__ = '2.5.1'\ncuda = None\nhip = None\n")
    for name in LIBS[platform]:
        (root / "lib" / name).write_bytes(b"")
    return root


def read(root: Path, platform: str) -> dict:
    return read_torch(str(root), None, Loader(ld_library_path=(), ldcache={}), platform=platform)


@pytest.mark.parametrize("platform", ["darwin", "win32", "linux"])
def test_a_complete_torch_of_each_platform_is_not_broken(tmp_path: Path, platform: str) -> None:
    assert read(torch_dir(tmp_path, platform), platform)["broken"] == []


def test_a_macos_torch_missing_its_core_library_is_broken(tmp_path: Path) -> None:
    root = torch_dir(tmp_path, "darwin")
    (root / "lib" / "libc10.dylib").unlink()
    assert read(root, "darwin")["broken"] == [f"{root / 'lib' / 'libc10.dylib'} is missing"]


def test_a_linux_reading_of_a_macos_install_would_call_it_broken(tmp_path: Path) -> None:
    # what cudoctor said on a Mac before the names were per platform
    assert len(read(torch_dir(tmp_path, "darwin"), "linux")["broken"]) == 2


def test_a_macos_torch_is_summarised_as_mps_not_cpu_only(tmp_path: Path) -> None:
    mac, linux = read(torch_dir(tmp_path, "darwin"), "darwin"), read(torch_dir(tmp_path, "linux"), "linux")
    assert _framework_summary(mac) == "no CUDA; Apple GPU through MPS"
    assert _framework_summary(linux) == "CPU-only build"
