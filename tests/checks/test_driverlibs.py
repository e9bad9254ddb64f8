"""libcuda and the companions it opens itself: the loader-side fact, its check, the driver version
it gives the kernel-module check, and the explain signature the finding confirms.

The layouts are real shared libraries built here with gcc under the file names and SONAMEs the
NVIDIA driver installs (libcuda.so.580.95.05 with SONAME libcuda.so.1 and a libcuda.so.1 link),
resolved with the loader emulation; no GPU driver exists on these machines. The default
directories are emptied so a machine that has a real driver sees the same results.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import pytest

from cudoctor.explainer import rank, scan
from cudoctor.facts import driverlibs, loader
from cudoctor.model import Fact, Severity, Snapshot
from tests.conftest import build_shared_lib, finding_ids, needs_gcc, run_check, stated

pytestmark = needs_gcc


@pytest.fixture(autouse=True)
def no_default_dirs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader, "DEFAULT_DIRS", ())


def driver_lib(directory: Path, soname: str, version: str, *flags: str) -> Path:
    """A driver-style library: file <stem>.so.<version>, SONAME `soname`, and the soname link."""
    directory.mkdir(parents=True, exist_ok=True)
    stem = soname.split(".so")[0]
    real = build_shared_lib(
        directory / f"{stem}.so.{version}", "int f(void){return 0;}\n", f"-Wl,-soname,{soname}", *flags
    )
    link = directory / soname
    if not link.exists():
        link.symlink_to(real.name)
    return real


NVVM70 = "libnvidia-nvvm70.so.4"  # R575+: one file name for every driver version
H100_TORCH = {
    "version": "2.11.0+cu130",
    "cuda": "13.0",
    "build": "cuda",
}  # tests/fixtures/gpu/h100/check.json


def legacy_jit_lto(directory: Path) -> Path:
    return driver_lib(directory, NVVM70, "4")


def libs_of(*lib_path: Path) -> dict[str, Fact]:
    facts = driverlibs.collect({"LD_LIBRARY_PATH": ":".join(map(str, lib_path))}, {})
    return {f.key: f for f in facts}


def check_on(facts: dict[str, Fact]) -> list[str]:
    snap = stated({}, driver__libraries=facts["driver.libraries"].value)
    return finding_ids(run_check("driver-libs-incomplete", snap))


def test_a_complete_driver_install_is_silent_and_gives_libcudas_version(tmp_path: Path) -> None:
    driver_lib(tmp_path / "lib", "libcuda.so.1", "580.95.05")
    driver_lib(tmp_path / "lib", "libnvidia-ptxjitcompiler.so.1", "580.95.05")
    legacy_jit_lto(tmp_path / "lib")
    facts = libs_of(tmp_path / "lib")
    cuda = facts["driver.libraries"].value["libcuda.so.1"]
    assert (cuda["version"], cuda["via"], cuda["compat"]) == ("580.95.05", "LD_LIBRARY_PATH", False)
    assert facts["driver.userspace_version"].value == "580.95.05"
    assert check_on(facts) == []


def test_libcuda_without_the_ptx_jit_compiler_warns_with_its_symptom(tmp_path: Path) -> None:
    driver_lib(tmp_path / "lib", "libcuda.so.1", "580.95.05")
    legacy_jit_lto(tmp_path / "lib")
    facts = libs_of(tmp_path / "lib")
    r = run_check("driver-libs-incomplete", stated({}, driver__libraries=facts["driver.libraries"].value))
    assert [f.id for f in r.findings] == ["driver-libs-incomplete"]
    f = r.findings[0]
    assert "libnvidia-ptxjitcompiler is not" in f.title and "PTX JIT compiler library not found" in f.title
    assert "libnvidia-ptxjitcompiler.so.580.95.05" in f.fix[0] and "ptxjitcompiler'" in f.fix[0]
    assert any("NVIDIA_DRIVER_CAPABILITIES=compute" in step for step in f.fix)


def test_a_ptx_jit_compiler_of_another_driver_is_reported_as_skew(tmp_path: Path) -> None:
    driver_lib(tmp_path / "new", "libcuda.so.1", "580.95.05")
    legacy_jit_lto(tmp_path / "new")
    driver_lib(tmp_path / "stale", "libnvidia-ptxjitcompiler.so.1", "535.104.05")
    facts = libs_of(tmp_path / "new", tmp_path / "stale")
    r = run_check("driver-libs-incomplete", stated({}, driver__libraries=facts["driver.libraries"].value))
    assert "finds is driver 535.104.05" in r.findings[0].title
    assert any("535.104.05" in e and "LD_LIBRARY_PATH" in e for e in r.findings[0].evidence)


def test_the_versioned_companion_beside_libcuda_counts_even_when_the_soname_points_elsewhere(
    tmp_path: Path,
) -> None:
    driver_lib(tmp_path / "stale", "libnvidia-ptxjitcompiler.so.1", "535.104.05")
    driver_lib(tmp_path / "drv", "libcuda.so.1", "580.95.05")
    driver_lib(tmp_path / "drv", "libnvidia-ptxjitcompiler.so.1", "580.95.05")
    legacy_jit_lto(tmp_path / "drv")
    facts = libs_of(tmp_path / "stale", tmp_path / "drv")
    entry = facts["driver.libraries"].value["libnvidia-ptxjitcompiler.so.1"]
    assert entry["version"] == "535.104.05" and entry["beside_libcuda"].endswith(".so.580.95.05")
    assert check_on(facts) == []


def test_libcudas_runpath_is_searched_for_its_companion_as_on_nix(tmp_path: Path) -> None:
    store = tmp_path / "store-l4t-core" / "lib"
    driver_lib(store, "libnvidia-ptxjitcompiler.so.1", "580.95.05")
    legacy_jit_lto(store)
    driver_lib(
        tmp_path / "store-l4t-cuda" / "lib",
        "libcuda.so.1",
        "580.95.05",
        f"-Wl,--enable-new-dtags,-rpath,{store}",
    )
    facts = libs_of(tmp_path / "store-l4t-cuda" / "lib")
    assert facts["driver.libraries"].value["libnvidia-ptxjitcompiler.so.1"]["via"] == "runpath"
    assert check_on(facts) == []


def test_an_r575_libcuda_without_libnvidia_nvvm70_warns_for_cuda_11_applications(tmp_path: Path) -> None:
    driver_lib(tmp_path / "lib", "libcuda.so.1", "610.43.03")
    driver_lib(tmp_path / "lib", "libnvidia-ptxjitcompiler.so.1", "610.43.03")
    facts = libs_of(tmp_path / "lib")
    [f] = run_check(
        "driver-libs-incomplete", stated({}, driver__libraries=facts["driver.libraries"].value)
    ).findings
    assert f.subject == NVVM70 and "libnvidia-nvvm70 is not" in f.title and "CUDA 11.x or older" in f.title
    assert "(libnvidia-nvvm70.so.4)" in f.fix[0] and "nvvm70'" in f.fix[0] and "#1876" in f.fix[-1]
    # only CUDA 11-or-older builds need it: a warning beside one, a note where all is CUDA 12+ (the
    # recorded H100 machine, tests/fixtures/gpu/h100, lacks it and runs CUDA 13 builds)
    libs = facts["driver.libraries"].value
    for torch, severity in (
        ({"version": "2.0.1+cu118", "cuda": "11.8"}, Severity.WARNING),
        (H100_TORCH, Severity.INFO),
    ):
        [f] = run_check(
            "driver-libs-incomplete", stated({}, driver__libraries=libs, framework__torch=torch)
        ).findings
        assert f.severity is severity and any(torch["cuda"] in e or "below 12" in e for e in f.evidence)
    assert f.severity is Severity.INFO and f.evidence[-1] == "nothing here is built for CUDA below 12"
    [f] = run_check(
        "driver-libs-incomplete",
        stated(
            {}, driver__libraries=libs, cuda__toolkits=[{"version": "11.8", "root": "/usr/local/cuda-11.8"}]
        ),
    ).findings
    assert (
        f.severity is Severity.WARNING and f.evidence[-1] == "the CUDA 11.8 toolkit at /usr/local/cuda-11.8"
    )
    # found beside libcuda under its unversioned name: silent
    legacy_jit_lto(tmp_path / "lib")
    facts = libs_of(tmp_path / "lib")
    assert facts["driver.libraries"].value[NVVM70]["beside_libcuda"].endswith(NVVM70)
    assert check_on(facts) == []


def test_a_driver_before_r575_or_of_unknown_version_does_not_need_libnvidia_nvvm70(tmp_path: Path) -> None:
    driver_lib(tmp_path / "r570", "libcuda.so.1", "570.172.08")
    driver_lib(tmp_path / "r570", "libnvidia-ptxjitcompiler.so.1", "570.172.08")
    assert check_on(libs_of(tmp_path / "r570")) == []
    driver_lib(tmp_path / "wsl", "libcuda.so.1", "1.1")  # WSL's libcuda carries no driver version
    driver_lib(tmp_path / "wsl", "libnvidia-ptxjitcompiler.so.1", "1.1")
    assert check_on(libs_of(tmp_path / "wsl")) == []


def test_a_forward_compat_libcuda_gives_no_userspace_version(tmp_path: Path) -> None:
    compat = tmp_path / "cuda-12.4" / "compat"
    driver_lib(compat, "libcuda.so.1", "550.54.15")
    driver_lib(compat, "libnvidia-ptxjitcompiler.so.1", "550.54.15")
    facts = libs_of(compat)
    assert facts["driver.libraries"].value["libcuda.so.1"]["compat"] is True
    assert "driver.userspace_version" not in facts


def test_no_libcuda_anywhere_is_absent_and_a_report_without_it_is_unknown(tmp_path: Path) -> None:
    facts = libs_of(tmp_path)
    assert facts["driver.libraries"].status.value == "absent"
    assert run_check("driver-libs-incomplete", stated({"driver": "580.95.05"})).outcome == "unknown"


def mismatch(via: str) -> Any:
    libcuda = {"real": "/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05", "via": via, "version": "580.95.05"}
    snap = stated(
        {"driver": "580.82.07"},
        driver__userspace_version="580.95.05",
        driver__libraries={"libcuda.so.1": libcuda},
    )
    return run_check("driver-userspace-mismatch", snap).findings


def test_a_system_libcuda_newer_than_the_module_says_reboot() -> None:
    [f] = mismatch("ldcache")
    assert "without a reboot" in f.title and f.fix[0].startswith("Reboot")


def test_a_libcuda_from_ld_library_path_is_a_stale_copy() -> None:
    [f] = mismatch("LD_LIBRARY_PATH")
    assert "stale copy" in f.title and any("LD_LIBRARY_PATH" in e for e in f.evidence)


PTX_JIT = "RuntimeError: UNKNOWN: PTX JIT compiler library not found\n"
CUBLAS_MISSING = "OSError: libcublas.so.12: cannot open shared object file: No such file or directory\n"


def explain(text: str, snap: Snapshot) -> rank.Explanation:
    return rank.explain(scan.scan(io.BytesIO(text.encode())), snap)


def incomplete(tmp_path: Path) -> Snapshot:
    driver_lib(tmp_path / "lib", "libcuda.so.1", "580.95.05")
    facts = libs_of(tmp_path / "lib")
    return stated({}, driver__libraries=facts["driver.libraries"].value)


def test_the_finding_confirms_ptx_jit_not_found_and_no_other_missing_library(tmp_path: Path) -> None:
    snap = incomplete(tmp_path)
    bare, confirmed = explain(PTX_JIT, Snapshot()), explain(PTX_JIT, snap)
    assert confirmed.causes[0].id == "cuda-libs-missing"
    assert confirmed.causes[0].score >= bare.causes[0].score + rank.CONFIRM
    assert any("libnvidia-ptxjitcompiler" in e for e in rank.cause_json(confirmed.causes, 0)["evidence"])
    other = explain(CUBLAS_MISSING, snap)
    assert all(not rc.findings for rc in other.causes)


def test_a_missing_jit_compiler_explains_no_binary_for_gpu(tmp_path: Path) -> None:
    # Theano/libgpuarray#289: the PTX could not be JIT-compiled without libnvidia-ptxjitcompiler
    no_binary = "CUDA_ERROR_NO_BINARY_FOR_GPU\n"
    assert explain(no_binary, Snapshot()).causes[0].id == "arch-unsupported"
    assert explain(no_binary, incomplete(tmp_path)).causes[0].id == "cuda-libs-missing"


def test_live_collection_on_this_machine_does_not_fail() -> None:
    facts = driverlibs.collect(dict(os.environ), loader.read_ldcache()[0])
    assert facts and facts[0].key == "driver.libraries" and facts[0].status.value in ("known", "absent")


def test_diff_shows_the_driver_libraries_that_changed_and_the_finding(tmp_path: Path) -> None:
    from cudoctor.diff import diff

    driver_lib(tmp_path / "ok", "libcuda.so.1", "580.95.05")
    driver_lib(tmp_path / "ok", "libnvidia-ptxjitcompiler.so.1", "580.95.05")
    legacy_jit_lto(tmp_path / "ok")
    driver_lib(tmp_path / "broken", "libcuda.so.1", "580.95.05")
    legacy_jit_lto(tmp_path / "broken")
    before = stated({}, driver__libraries=libs_of(tmp_path / "ok")["driver.libraries"].value)
    after = stated({}, driver__libraries=libs_of(tmp_path / "broken")["driver.libraries"].value)
    d = diff(before, after)
    changed = {c.key: (c.before, c.after) for c in d.changes if c.layer == "GPU & driver"}
    assert changed["libnvidia-ptxjitcompiler.so.1"][1] == "(not found)"
    assert changed["libcuda.so.1"][1] and changed["libcuda.so.1"][1].endswith("broken/libcuda.so.580.95.05")
    assert [f["id"] for f in d.appeared] == ["driver-libs-incomplete"]
