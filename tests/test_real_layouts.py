"""Scenarios built from real parts: NVIDIA's pip wheels, the CUDA 13.0 toolkit here, temp dirs.

The wheels (jax-cuda12-plugin, nvidia-cuda-runtime-cu12, nvidia-cuda-nvcc-cu12; about 52 MB)
are installed with pip into a temporary target; without the package index the tests skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudoctor.checks import run_checks
from cudoctor.facts import collect_live, packages
from cudoctor.facts.toolkits import follow_wrapper
from tests.conftest import needs_nvcc

WHEELS = ["jax-cuda12-plugin==0.10.2", "nvidia-cuda-runtime-cu12==12.9.79", "nvidia-cuda-nvcc-cu12==12.9.86"]


def _pip_target(target: Path, reqs: list[str]) -> None:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "-q",
        "--no-deps",
        "--no-compile",
        "--target",
        str(target),
        *reqs,
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        pytest.skip(f"cannot install NVIDIA wheels here: {out.stderr.strip().splitlines()[-1:]}")


@pytest.fixture(scope="module")
def wheel_sites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if sys.version_info[:2] != (3, 11):
        pytest.skip("jax-cuda12-plugin 0.10.2 is pinned for CPython 3.11 here")
    base = tmp_path_factory.mktemp("nvidia-wheels")
    full, bare = base / "full", base / "plugin-only"
    _pip_target(full, WHEELS)
    bare.mkdir()
    for name in os.listdir(full):
        if name.startswith("jax_cuda12_plugin"):
            shutil.copytree(full / name, bare / name, symlinks=True)
    return {"full": full, "bare": bare}


def _jax_site() -> str:
    d = packages.find_package_dir(sys.path, "jax")
    if d is None:
        pytest.skip("jax is not installed (CI installs it)")
    return os.path.dirname(d)


def _ids(snap) -> set[str]:  # type: ignore[no-untyped-def]
    return {f.id for r in run_checks(snap) for f in r.findings}


def test_jax_cuda_plugin_without_cuda_wheels_is_missing_libraries(wheel_sites: dict[str, Path]) -> None:
    env = {"PATH": "/usr/bin:/bin"}
    snap = collect_live(env=env, sys_path=[str(wheel_sites["bare"]), _jax_site()])
    jax = snap.value("framework.jax")
    assert (
        jax["build"] == "cuda" and jax["cuda"] == "12.0" and jax["plugins"] == {"jax-cuda12-plugin": "0.10.2"}
    )
    assert jax["libs"]["libcudart.so.12"]["path"] is None
    assert {"lib-missing-cudart", "lib-missing-cublas", "lib-missing-cudnn"} <= _ids(snap)


def test_jax_cuda_plugin_finds_the_runtime_wheel_through_rpath(
    wheel_sites: dict[str, Path], tmp_path: Path
) -> None:
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    real = wheel_sites["full"] / "nvidia" / "cuda_runtime" / "lib" / "libcudart.so.12"
    shutil.copy(real, shadow / "libcudart.so.12")
    env = {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": str(shadow)}
    snap = collect_live(env=env, sys_path=[str(wheel_sites["full"]), _jax_site()])
    res = snap.value("framework.jax")["libs"]["libcudart.so.12"]
    assert res["via"] == "rpath" and os.path.realpath(res["path"]) == os.path.realpath(real)
    assert [c[1] for c in res["candidates"]] == ["rpath", "LD_LIBRARY_PATH"]  # DT_RPATH beats LD_LIBRARY_PATH
    ids = _ids(snap)
    assert "lib-missing-cudart" not in ids and not any(i.startswith("shadowed-") for i in ids)


@needs_nvcc
def test_two_toolkits_wrong_one_first_and_misspelled_cuda_home(
    wheel_sites: dict[str, Path], tmp_path: Path
) -> None:
    old = tmp_path / "cuda-12.9"
    shutil.copytree(wheel_sites["full"] / "nvidia" / "cuda_nvcc", old, symlinks=True)
    cuda13_bin = os.path.dirname(follow_wrapper(shutil.which("ptxas") or ""))
    cuda13 = os.path.dirname(cuda13_bin)
    env = {"PATH": f"{old / 'bin'}:{cuda13_bin}:/usr/bin:/bin", "CUDA_HOME": cuda13[:-1] + "O"}
    snap = collect_live(env=env, sys_path=[str(wheel_sites["full"]), _jax_site()])
    versions = {t["realpath"]: t["version"] for t in snap.value("cuda.toolkits")}
    assert versions[str(old)] == "12.9.86" and versions[cuda13].startswith("13.0")
    results = {f.id: f for r in run_checks(snap) for f in r.findings}
    assert "ptxas-older-first-on-path" in results
    assert str(old / "bin" / "ptxas") in results["ptxas-older-first-on-path"].title
    missing = results["env-cuda-home-missing"]
    assert missing.fix[0] == f"export CUDA_HOME={cuda13}"
