"""ptxas-broken for a ptxas that is no toolkit's (issue 45): one first on PATH in a directory not named bin,
or one TRITON_PTXAS_PATH names, that does not run. Real parts: NVIDIA's CUDA 11.8 ptxas (conftest.cuda11_ptxas),
a truncated copy of it, and a copy that is not executable."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from cudoctor.facts import collect_live
from cudoctor.model import Severity
from tests.conftest import run_check, stated


def _copy(src: Path, dest: Path, size: int | None = None, mode: int = 0o755) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    if size is None:
        shutil.copy(src, dest)
    else:
        dest.write_bytes(src.read_bytes()[:size])
    dest.chmod(mode)
    return dest


def test_a_truncated_ptxas_first_on_path_is_named(cuda11_ptxas: Path, tmp_path: Path) -> None:
    broken = _copy(cuda11_ptxas, tmp_path / "my-tools" / "ptxas", size=64 * 1024)
    snap = collect_live(env={"PATH": f"{broken.parent}:/usr/bin:/bin"}, sys_path=[])
    [f] = run_check("ptxas-broken", snap).findings
    assert f.severity is Severity.WARNING and f.cause == "toolchain-not-found"
    assert f.title.startswith(f"{broken} (first on PATH) does not work: {broken} --version: ")
    assert f.fix[0].startswith(
        f"Remove {broken.parent} from PATH, or put a working ptxas there (pip install "
    )


def test_a_ptxas_triton_is_pointed_at_that_is_not_executable(cuda11_ptxas: Path, tmp_path: Path) -> None:
    """A shell skips a non-executable file on PATH; a variable naming one makes the program fail to run it."""
    plain = _copy(cuda11_ptxas, tmp_path / "ptxas-11.8", mode=0o644)
    on_path = _copy(cuda11_ptxas, tmp_path / "also" / "ptxas", mode=0o644)
    env = {"PATH": f"{on_path.parent}:/usr/bin:/bin", "TRITON_PTXAS_PATH": str(plain)}
    [f] = run_check("ptxas-broken", collect_live(env=env, sys_path=[])).findings
    assert (
        f.title == f"{plain} (TRITON_PTXAS_PATH) does not work: {plain} is not executable (its mode is 644)"
    )
    assert f.fix[0].startswith("unset TRITON_PTXAS_PATH (Triton then runs the ptxas it bundles)")


def test_a_truncated_ptxas_in_xla_s_cuda_data_dir(cuda11_ptxas: Path, tmp_path: Path) -> None:
    """XLA runs <--xla_gpu_cuda_data_dir>/bin/ptxas before PATH's; the directory is no toolkit cudoctor found."""
    broken = _copy(cuda11_ptxas, tmp_path / "xla-data" / "bin" / "ptxas", size=64 * 1024)
    env = {"PATH": "/usr/bin:/bin", "XLA_FLAGS": f"--xla_gpu_cuda_data_dir={broken.parent.parent}"}
    [f] = run_check("ptxas-broken", collect_live(env=env, sys_path=[])).findings
    assert f.title.startswith(f"{broken} (XLA_FLAGS --xla_gpu_cuda_data_dir) does not work: ")
    assert f.fix[0].startswith("Point --xla_gpu_cuda_data_dir at a CUDA toolkit whose bin/ptxas works")


def test_working_ptxas_copies_wherever_they_sit_are_silent(cuda11_ptxas: Path, tmp_path: Path) -> None:
    tools = _copy(cuda11_ptxas, tmp_path / "my-tools" / "ptxas")
    triton = _copy(cuda11_ptxas, tmp_path / "triton-ptxas")
    env = {"PATH": f"{tools.parent}:/usr/bin:/bin", "TRITON_PTXAS_PATH": str(triton)}
    snap = collect_live(env=env, sys_path=[])
    assert {t["resolved"]: t.get("version") for t in snap.value("cuda.run_tools")}[str(tools)] == "11.8.89"
    assert run_check("ptxas-broken", snap).outcome == "ok"


def test_a_broken_copy_not_first_on_path_is_not_run_and_not_said(cuda11_ptxas: Path, tmp_path: Path) -> None:
    good = _copy(cuda11_ptxas, tmp_path / "a" / "ptxas")
    broken = _copy(cuda11_ptxas, tmp_path / "b" / "ptxas", size=4096)
    snap = collect_live(env={"PATH": f"{good.parent}:{broken.parent}:/usr/bin:/bin"}, sys_path=[])
    assert run_check("ptxas-broken", snap).outcome == "ok"
    assert os.path.exists(broken)


def test_unknown_without_the_toolkit_facts() -> None:
    assert run_check("ptxas-broken", stated({"gpu": "A100"})).outcome == "unknown"
