"""triton-ptxas-too-old: TRITON_PTXAS_PATH / TRITON_PTXAS_BLACKWELL_PATH against the ptxas Triton bundles.

Real parts: the triton 3.9.0 wheel from PyPI (its bin/ptxas is CUDA 12.9.86, bin/ptxas-blackwell 13.4.59,
and its compiler.py runs ptxas-blackwell for compute capability 9.0 and newer), of which the package's
__init__.py, backends/nvidia/*.py, bin/ptxas* and dist-info are unpacked as pip lays them out; NVIDIA's
CUDA 11.8 ptxas (conftest.cuda11_ptxas). GPUs are stated (none here).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cudoctor.facts import collect_live
from cudoctor.model import Severity, Snapshot, known
from tests.conftest import run_check, stated

TRITON = "3.9.0"
CACHE = Path.home() / ".cache" / "cudoctor-bench" / "wheels"  # shared with bench/side_by_side.py


@pytest.fixture(scope="session")
def triton_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if sys.version_info[:2] != (3, 11):
        pytest.skip(f"triton {TRITON} is pinned for CPython 3.11 here")
    CACHE.mkdir(parents=True, exist_ok=True)
    wheel = next(CACHE.glob(f"triton-{TRITON}-cp311-*.whl"), None)
    if wheel is None:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "-d",
            str(CACHE),
            f"triton=={TRITON}",
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        wheel = next(CACHE.glob(f"triton-{TRITON}-cp311-*.whl"), None)
        if wheel is None:
            pytest.skip(f"cannot download triton here: {done.stderr.strip().splitlines()[-1:]}")
    site = tmp_path_factory.mktemp("triton-site")
    keep = ("triton/__init__.py", "triton/backends/nvidia/", f"triton-{TRITON}.dist-info/")
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            name = info.filename
            if name.startswith(keep) and (
                name.endswith(".py") or "/bin/ptxas" in name or ".dist-info/" in name
            ):
                path = Path(zf.extract(info, site))
                if "/bin/" in name:
                    path.chmod(0o755)  # pip keeps the executable bit the wheel's RECORD carries
    return site


def _ptxas_copy(src: Path, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, dest)
    return dest


def _live(site: Path, gpu: tuple[str, str] | None = None, **env: str) -> Snapshot:
    snap = collect_live(env={"PATH": "/usr/bin:/bin", **env}, sys_path=[str(site)])
    if gpu:
        snap.add(known("gpu.devices", [{"index": 0, "name": gpu[0], "cc": gpu[1]}], "stated"))
    return snap


def test_triton_s_own_ptxas_binaries_are_asked_with_the_archs_each_compiles_for(triton_site: Path) -> None:
    snap = _live(triton_site)
    bundled = {t["triton_binary"]: t for t in snap.value("cuda.run_tools") if t.get("triton_binary")}
    assert bundled["ptxas"]["version"] == "12.9.86" and bundled["ptxas"]["for_arch"] == [None, 90]
    assert bundled["ptxas-blackwell"]["version"] == "13.4.59" and bundled["ptxas-blackwell"]["for_arch"] == [
        90,
        None,
    ]
    assert bundled["ptxas"]["via"] == ["triton bin/ptxas"]
    assert run_check("triton-ptxas-too-old", snap).outcome == "ok"  # no variable: Triton runs its own


def test_a_cuda11_ptxas_in_triton_ptxas_path_is_older_than_triton_s(
    triton_site: Path, cuda11_ptxas: Path, tmp_path: Path
) -> None:
    old = _ptxas_copy(cuda11_ptxas, tmp_path / "tools" / "ptxas")
    [f] = run_check("triton-ptxas-too-old", _live(triton_site, TRITON_PTXAS_PATH=str(old))).findings
    assert f.severity is Severity.ERROR
    assert f.title == (
        f"TRITON_PTXAS_PATH names ptxas 11.8.89 ({old}), older than the ptxas 12.9.86 that triton 3.9.0 bundles "
        "and would run otherwise: Triton writes PTX for CUDA 11.8 and kernels fail to compile"
    )
    assert f.fix[0] == "unset TRITON_PTXAS_PATH  (Triton then runs its own ptxas 12.9.86)"
    # an A100 (cc 8.0) compiles with bin/ptxas, which the variable replaces; CUDA 11.8 can build for it
    [f] = run_check(
        "triton-ptxas-too-old", _live(triton_site, ("A100", "8.0"), TRITON_PTXAS_PATH=str(old))
    ).findings
    assert "too old to compile" not in f.title


def test_the_gpu_decides_which_variable_counts(triton_site: Path, cuda11_ptxas: Path, tmp_path: Path) -> None:
    """Triton 3.9 runs ptxas-blackwell for cc 9.0 and newer: TRITON_PTXAS_PATH changes nothing on an H100,
    TRITON_PTXAS_BLACKWELL_PATH does, and CUDA 11.8 cannot write sm_90a (arch-specific targets start at 12.0)."""
    old = _ptxas_copy(cuda11_ptxas, tmp_path / "tools" / "ptxas")
    h100 = ("H100", "9.0")
    assert (
        run_check("triton-ptxas-too-old", _live(triton_site, h100, TRITON_PTXAS_PATH=str(old))).outcome
        == "ok"
    )
    snap = _live(triton_site, h100, TRITON_PTXAS_BLACKWELL_PATH=str(old))
    [f] = run_check("triton-ptxas-too-old", snap).findings
    assert f.severity is Severity.ERROR
    assert f.title.startswith(
        f"TRITON_PTXAS_BLACKWELL_PATH names ptxas 11.8.89 ({old}), older than the ptxas 13.4.59"
    )
    assert "too old to compile for H100 (cc 9.0, from CUDA 12.0)" in f.title


def test_triton_s_own_ptxas_or_a_newer_one_named_is_silent(triton_site: Path, tmp_path: Path) -> None:
    own = triton_site / "triton" / "backends" / "nvidia" / "bin"
    newer = _ptxas_copy(own / "ptxas-blackwell", tmp_path / "ptxas-13.4")
    for env in ({"TRITON_PTXAS_PATH": str(own / "ptxas")}, {"TRITON_PTXAS_PATH": str(newer)}):
        assert run_check("triton-ptxas-too-old", _live(triton_site, None, **env)).outcome == "ok", env


def test_without_triton_the_variable_is_not_judged(cuda11_ptxas: Path, tmp_path: Path) -> None:
    old = _ptxas_copy(cuda11_ptxas, tmp_path / "ptxas")
    snap = collect_live(env={"PATH": "/usr/bin:/bin", "TRITON_PTXAS_PATH": str(old)}, sys_path=[])
    assert run_check("triton-ptxas-too-old", snap).outcome == "ok"
    assert os.path.exists(old)


def test_unknown_without_the_tool_facts() -> None:
    assert run_check("triton-ptxas-too-old", stated({"gpu": "H100"})).outcome == "unknown"
