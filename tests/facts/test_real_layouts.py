"""Layouts built from real parts: NVIDIA's pip wheels (see conftest.wheel_sites), the CUDA 13.0 toolkit."""

from __future__ import annotations

import io
import os
import shutil
import sys
from pathlib import Path

import pytest

from cudoctor.checks import run_checks
from cudoctor.facts import collect_live, packages
from cudoctor.facts.toolkits import follow_wrapper
from cudoctor.model import Finding, Report, known
from cudoctor.render.areas import areas
from cudoctor.render.text import render as render_text
from tests.conftest import needs_nvcc, stated


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


def test_a_framework_line_is_never_ok_above_errors_about_it(wheel_sites: dict[str, Path]) -> None:
    """Issue 45, point 3: JAX's CUDA plugin without its CUDA libraries; JAX's line showed [✓]."""
    snap = collect_live(env={"PATH": "/usr/bin:/bin"}, sys_path=[str(wheel_sites["bare"]), _jax_site()])
    report = Report(snap, run_checks(snap))
    jax = next(a for a in areas(report) if a.title == "JAX 0.10.2")
    assert jax.status == "error"
    assert {"lib-missing-cudart", "lib-missing-cudnn"} <= {f.id for f in jax.findings}
    text = render_text(report, stream=io.StringIO())
    assert "[✗] JAX 0.10.2 (CUDA 12.0, cuDNN 9.8)" in text.replace("[X]", "[✗]")


def test_a_contract_finding_shown_elsewhere_counts_in_its_frameworks_line() -> None:
    """A driver too old for a JAX build stays under GPU & driver; JAX's line shows the error and points there."""
    snap = stated(
        {"driver": "470.82.01"},
        framework__jax={"version": "0.4.35", "build": "cuda", "cuda": "12.6", "jaxlib": "0.4.35"},
    )
    report = Report(snap, run_checks(snap))
    by_title = {a.title: a for a in areas(report)}
    driver = by_title["GPU & driver"]
    assert "driver-too-old" in [f.id for f in driver.findings]
    jax = by_title["JAX 0.4.35"]
    assert "driver-too-old" not in [f.id for f in jax.findings] and jax.status == "error"
    assert ("GPU & driver", "driver-too-old") in [(w, f.id) for w, f in jax.related]
    lines = render_text(report, stream=io.StringIO()).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("[") and "JAX 0.4.35" in line)
    assert lines[at].startswith(("[✗]", "[X]"))
    assert any("see under GPU & driver: driver-too-old" in line for line in lines[at + 1 : at + 4])


def test_a_cuda11_ptxas_first_on_path_is_judged_wherever_it_sits(
    wheel_sites: dict[str, Path], cuda11_ptxas: Path, tmp_path: Path
) -> None:
    """Issue 45, point 1: a real CUDA 11.8 ptxas copied into a directory not called bin, first on PATH,
    before the CUDA 13 toolkit, with JAX's CUDA 12 plugin: it was found only under a .../bin/."""
    tools = tmp_path / "my-tools"
    tools.mkdir()
    shutil.copy(cuda11_ptxas, tools / "ptxas")
    path = f"{tools}:/usr/bin:/bin"
    cuda13_bin = os.path.dirname(follow_wrapper(shutil.which("ptxas") or "")) if shutil.which("ptxas") else ""
    if cuda13_bin:
        path = f"{tools}:{cuda13_bin}:/usr/bin:/bin"
    snap = collect_live(env={"PATH": path}, sys_path=[str(wheel_sites["full"]), _jax_site()])
    asked = {t["path"]: t for t in snap.value("cuda.run_tools")}
    assert asked[str(tools / "ptxas")]["version"] == "11.8.89" and asked[str(tools / "ptxas")]["via"] == [
        "PATH"
    ]
    results = {f.id: f for r in run_checks(snap) for f in r.findings}
    too_old = results["ptxas-too-old"]
    assert too_old.title.startswith(
        f"ptxas 11.8.89 first on PATH ({tools / 'ptxas'}) is older than the CUDA 12.0"
    )
    assert too_old.about == ("jax",)
    if cuda13_bin:
        assert (
            f"ptxas 11.8.89 ({tools / 'ptxas'}) comes first on PATH"
            in results["ptxas-older-first-on-path"].title
        )


def test_the_ptxas_xla_and_triton_are_pointed_at_is_asked_its_version(
    wheel_sites: dict[str, Path], cuda11_ptxas: Path, tmp_path: Path
) -> None:
    """--xla_gpu_cuda_data_dir's bin/ptxas (XLA runs it before PATH's), CUDA_DIR, TRITON_PTXAS_PATH: each
    identified by its own --version, none of them a toolkit cudoctor found."""
    data = tmp_path / "xla-data"
    (data / "bin").mkdir(parents=True)
    shutil.copy(cuda11_ptxas, data / "bin" / "ptxas")
    triton = tmp_path / "triton-ptxas"
    shutil.copy(cuda11_ptxas, triton)
    env = {
        "PATH": "/usr/bin:/bin",
        "XLA_FLAGS": f"--xla_gpu_autotune_level=0 --xla_gpu_cuda_data_dir={data}",
        "CUDA_DIR": str(data),
        "TRITON_PTXAS_PATH": str(triton),
    }
    snap = collect_live(env=env, sys_path=[str(wheel_sites["full"]), _jax_site()])
    asked = {t["resolved"]: t for t in snap.value("cuda.run_tools")}
    assert asked[str(data / "bin" / "ptxas")]["via"] == ["CUDA_DIR", "XLA_FLAGS --xla_gpu_cuda_data_dir"]
    assert asked[str(triton)]["via"] == ["TRITON_PTXAS_PATH"]
    assert {asked[str(p)]["version"] for p in (data / "bin" / "ptxas", triton)} == {"11.8.89"}
    [f] = [f for r in run_checks(snap) for f in r.findings if f.id == "ptxas-too-old"]
    assert f.title.startswith(f"ptxas 11.8.89 in --xla_gpu_cuda_data_dir ({data / 'bin' / 'ptxas'}) is older")
