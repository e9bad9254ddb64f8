"""The seed situations of issue 3, each built from real parts and checked end to end.

1. TF "Blas GEMM launch failed": GPU arch vs build, memory held by another process, a wrong
   LD_LIBRARY_PATH shadowing a framework's own library (real torch + a real system libgomp).
2. GEMM failing again: dtypes / shapes / memory (preflight, test_api.py) and the driver.
3. PyTorch THCBlas.cu / kernel failing: build CUDA vs GPU and driver, memory, device misuse.
4. TF 2.4.1 cannot invoke ptxas: misspelled CUDA_HOME, toolkit vs TF's tested configuration,
   two toolkits with the wrong one first (CUDA 12.9 ptxas from NVIDIA's wheel before CUDA 13.0).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from cudoctor.facts import packages
from cudoctor.facts.toolkits import follow_wrapper
from tests.conftest import cudoctor, needs_nvcc

GEMM_LOG = "tensorflow.python.framework.errors_impl.InternalError: Blas GEMM launch failed : a.shape=(32, 1000), b.shape=(1000, 512), m=32, n=512, k=1000\n"


def _write(tmp: Path, name: str, data: object) -> str:
    path = tmp / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def _explain(
    tmp: Path, log: str, facts: dict[str, str], env: dict[str, str] | None = None, live: bool = False
) -> dict:  # type: ignore[type-arg]
    args = [
        "explain",
        _write(tmp, "run.log", log),
        "--facts",
        _write(tmp, "facts.json", facts),
        "--format",
        "json",
    ]
    out = cudoctor(args + ([] if live else ["--no-live"]), env=env)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def _check(
    tmp: Path, facts: dict[str, str] | None, env: dict[str, str] | None = None, live: bool = True
) -> dict:  # type: ignore[type-arg]
    args = (
        ["check", "--format", "json"]
        + (["--facts", _write(tmp, "facts.json", facts)] if facts else [])
        + ([] if live else ["--no-live"])
    )
    out = cudoctor(args, env=env)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


# ---------------------------------------------------------------- 1. Blas GEMM launch failed
def test_gemm_launch_failed_on_a_gpu_newer_than_the_build(tmp_path: Path) -> None:
    doc = _explain(
        tmp_path,
        GEMM_LOG,
        {"gpu": "A100", "framework_version": "tensorflow-gpu 1.13.1", "system_cuda": "10.0"},
    )
    assert doc["causes"][0]["id"] == "arch-unsupported"
    assert any("A100" in e and "too new" in e for e in doc["causes"][0]["evidence"])


def test_gemm_launch_failed_after_cublas_could_not_allocate(tmp_path: Path) -> None:
    log = (
        "E tensorflow/stream_executor/cuda/cuda_blas.cc:464] failed to create cublas handle: CUBLAS_STATUS_ALLOC_FAILED\n"
        + GEMM_LOG
    )
    doc = _explain(
        tmp_path, log, {"gpu": "RTX 2080 8GB", "framework_version": "2.1.0", "system_cuda": "10.1"}
    )
    assert doc["root"]["line"] == 1 and doc["causes"][0]["id"] == "gpu-oom"


def test_wrong_ld_library_path_shadows_the_frameworks_own_library(tmp_path: Path) -> None:
    torch_dir = packages.find_package_dir(sys.path, "torch")
    system_gomp = next(
        (
            p
            for p in ("/usr/lib/x86_64-linux-gnu/libgomp.so.1", "/lib/x86_64-linux-gnu/libgomp.so.1")
            if os.path.exists(p)
        ),
        None,
    )
    if torch_dir is None or system_gomp is None:
        pytest.skip("needs torch and the system libgomp")
    shadow = tmp_path / "old-module" / "lib64"
    shadow.mkdir(parents=True)
    shutil.copy(system_gomp, shadow / "libgomp.so.1")
    doc = _check(tmp_path, None, env=dict(os.environ, LD_LIBRARY_PATH=str(shadow)))
    hit = [f for f in doc["findings"] if f["id"] == "shadowed-gomp"]
    assert hit and str(shadow) in hit[0]["title"] and hit[0]["fix"][0].startswith(f"Remove {shadow}")
    clean = _check(tmp_path, None, env={k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"})
    assert not [f for f in clean["findings"] if f["id"] == "shadowed-gomp"]


# ---------------------------------------------------------------- 2. GEMM failing again: the driver part
def test_gemm_failing_with_a_driver_too_old_for_the_wheel(tmp_path: Path) -> None:
    log = "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).\n"
    doc = _explain(
        tmp_path, log, {"gpu": "RTX 3090", "driver": "470.82.01", "framework_version": "torch 2.5.1+cu124"}
    )
    top = doc["causes"][0]
    assert top["id"] == "driver-too-old" and "470.82.01" in top["title"]
    assert any("whl/cu118" in f for f in top["fix"])


# ---------------------------------------------------------------- 3. THCBlas.cu / kernel failing
def test_thcblas_failure_on_a_gpu_newer_than_the_wheels_cuda(tmp_path: Path) -> None:
    log = "RuntimeError: cublas runtime error : the GPU program failed to execute at /opt/conda/conda-bld/pytorch/work/aten/src/THC/THCBlas.cu:450\n"
    doc = _explain(
        tmp_path, log, {"gpu": "RTX 2080 Ti", "framework_version": "1.0.1", "framework_cuda": "9.0"}
    )
    assert doc["causes"][0]["id"] == "arch-unsupported"


def test_kernel_failure_from_an_index_error_reported_late(tmp_path: Path) -> None:
    log = (
        "/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1146: indexSelectLargeIndex: block: [3,0,0], thread: [64,0,0] Assertion `srcIndex < srcSelectDimSize` failed.\n"
        "RuntimeError: cublas runtime error : the GPU program failed to execute at /pytorch/aten/src/THC/THCBlas.cu:450\n"
    )
    doc = _explain(tmp_path, log, {"gpu": "RTX 2080 Ti", "framework_version": "torch 1.4.0+cu101"})
    assert doc["root"]["line"] == 1 and doc["causes"][0]["id"] == "illegal-memory-access"


def test_device_misuse(tmp_path: Path) -> None:
    log = "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! (when checking argument for argument mat2 in method wrapper_CUDA_mm)\n"
    assert _explain(tmp_path, log, {})["causes"][0]["id"] == "device-mismatch"


# ---------------------------------------------------------------- 4. TF 2.4.1 cannot invoke ptxas
@needs_nvcc
def test_tf241_ptxas_two_toolkits_and_a_misspelled_cuda_home(
    tmp_path: Path, wheel_sites: dict[str, Path]
) -> None:
    old = tmp_path / "cuda-12.9"
    shutil.copytree(wheel_sites["full"] / "nvidia" / "cuda_nvcc", old, symlinks=True)
    cuda13 = os.path.dirname(os.path.dirname(follow_wrapper(shutil.which("ptxas") or "")))
    env = dict(
        os.environ,
        PATH=f"{old / 'bin'}:{cuda13}/bin:/usr/bin:/bin",
        CUDA_HOME=cuda13.replace("cuda-", "cdua-"),
    )
    facts = {"framework_version": "tensorflow 2.4.1", "os": "Ubuntu 20.04"}
    doc = _check(tmp_path, facts, env=env)
    ids = {f["id"] for f in doc["findings"]}
    assert {"env-cuda-home-missing", "ptxas-older-first-on-path", "tf-cuda-mismatch"} <= ids
    home = next(f for f in doc["findings"] if f["id"] == "env-cuda-home-missing")
    assert home["fix"][0] == f"export CUDA_HOME={cuda13}"
    tf = next(f for f in doc["findings"] if f["id"] == "tf-cuda-mismatch")
    assert "CUDA 11.0" in tf["title"] and "13.0" in tf["title"]
    log = "W tensorflow/stream_executor/gpu/asm_compiler.cc:80] Couldn't get ptxas version string: INTERNAL: Couldn't invoke ptxas --version\n"
    exp = _explain(tmp_path, log, facts, env=env, live=True)
    # the misspelled CUDA_HOME is confirmed by the facts, so it ranks with the compiler cause itself
    assert {c["id"] for c in exp["causes"][:2]} == {"toolchain-not-found", "env-path-misconfig"}
    assert any(f"export CUDA_HOME={cuda13}" in step for c in exp["causes"][:2] for step in c["fix"])
