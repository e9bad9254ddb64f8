"""Layouts built from real parts: NVIDIA's pip wheels (see conftest.wheel_sites), the CUDA 13.0 toolkit."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from cudoctor.checks import run_checks
from cudoctor.facts import collect_live, packages
from cudoctor.facts.toolkits import follow_wrapper
from cudoctor.model import Finding, known
from tests.conftest import needs_nvcc


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
    cudart = next(f for r in run_checks(snap) for f in r.findings if f.id == "lib-missing-cudart")
    assert cudart.fix[:2] == (
        "pip install nvidia-cuda-runtime-cu12  (provides libcudart.so.12)",
        f"Or bring all of JAX's CUDA libraries: pip install -U 'jax[cuda12]=={jax['version']}'",
    )


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


@needs_nvcc
def test_torch_extensions_would_build_with_another_cuda_major(tmp_path: Path) -> None:
    """The real CUDA 13 toolkit as CUDA_HOME next to a torch cu128 build (stated: its wheel is gigabytes)."""
    root = os.path.dirname(os.path.dirname(follow_wrapper(shutil.which("nvcc") or "")))
    torch_cu128 = {"version": "2.8.0+cu128", "build": "cuda", "cuda": "12.8"}

    def findings(env: dict[str, str]) -> list[Finding]:
        snap = collect_live(env=env, sys_path=[str(tmp_path)])
        snap.add(known("framework.torch", torch_cu128, "stated"))
        return [f for r in run_checks(snap) for f in r.findings if f.id == "torch-extension-toolkit"]

    [f] = findings({"PATH": "/usr/bin:/bin", "CUDA_HOME": root})
    assert (
        f"CUDA_HOME={root}" in f.title
        and "mismatches the version that was used to compile PyTorch (12.8)" in f.title
    )
    assert f.fix[0].startswith("Install a CUDA 12.8 toolkit with nvcc") and "whl/cu130" in f.fix[1]
    assert "pip nvcc wheels hold ptxas, not nvcc" in f.fix[0]  # checked: 11.8.89, 12.4.131, 12.9.86
    assert f.cause == "multiple-toolkits" and f.also == ("toolchain-not-found",)  # two CUDAs: taxonomy rule
    [g] = findings({"PATH": f"{root}/bin:/usr/bin:/bin"})
    assert f"nvcc on PATH: {root}/bin/nvcc" in g.title
    torch_cu128["cuda"] = "13.0"
    assert findings({"PATH": "/usr/bin:/bin", "CUDA_HOME": root}) == []
