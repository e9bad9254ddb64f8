"""Live fact collection against the real frameworks installed here and real broken layouts."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cudoctor.facts import collect_live, packages, toolkits
from cudoctor.facts.frameworks import framework_facts
from cudoctor.facts.loader import Loader
from cudoctor.facts.stated import from_stated
from cudoctor.model import Status
from tests.conftest import needs_nvcc


def _site_of(pkg: str) -> str:
    spec = packages.find_package_dir(sys.path, pkg)
    if spec is None:
        pytest.skip(f"{pkg} is not installed in this environment (CI installs it)")
    return os.path.dirname(spec)


def test_live_snapshot_reads_frameworks_without_importing_them() -> None:
    code = (
        "import sys, json; from cudoctor.facts import collect_live; s = collect_live();"
        "print(json.dumps({'imported': [m for m in ('torch', 'tensorflow', 'jax') if m in sys.modules],"
        " 'torch': s.value('framework.torch'), 'tf': s.value('framework.tensorflow'), 'jax': s.value('framework.jax')}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    import json

    data = json.loads(out.stdout)
    assert data["imported"] == []
    if data["torch"] is not None:
        assert data["torch"]["build"] == "cpu" and data["torch"]["version"].startswith("2.13.0")
    if data["tf"] is not None:
        assert data["tf"]["build"] == "cpu" and data["tf"]["dist"] == "tensorflow-cpu"
    if data["jax"] is not None:
        assert data["jax"]["build"] == "cpu" and data["jax"]["plugins"] == {}


@needs_nvcc
def test_real_cuda_toolkit_is_found_with_its_version() -> None:
    snap = collect_live()
    tks = snap.value("cuda.toolkits")
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    real_root = os.path.dirname(os.path.dirname(toolkits.follow_wrapper(nvcc)))
    mine = [t for t in tks if t["realpath"] == os.path.realpath(real_root)]
    assert (
        mine
        and mine[0]["version"]
        and mine[0]["ptxas_version"].get("version", "").startswith(mine[0]["version"][:4])
    )
    assert snap.value("cuda.path_tools")["nvcc"]["resolved"] == toolkits.follow_wrapper(nvcc)


def test_torch_missing_libtorch_cpu_is_reported(tmp_path: Path) -> None:
    site = _site_of("torch")
    fake_site = tmp_path / "site"
    torch_dir = fake_site / "torch"
    (torch_dir / "lib").mkdir(parents=True)
    for name in ("__init__.py", "version.py"):
        shutil.copy(os.path.join(site, "torch", name), torch_dir / name)
    for lib in os.listdir(os.path.join(site, "torch", "lib")):
        if lib != "libtorch_cpu.so":
            os.symlink(os.path.join(site, "torch", "lib", lib), torch_dir / "lib" / lib)
    for c in Path(site, "torch").glob("_C*.so"):
        os.symlink(c, torch_dir / c.name)
    facts = {f.key: f for f in framework_facts([str(fake_site)], [], Loader((), {}))}
    torch = facts["framework.torch"].value
    assert any("libtorch_cpu.so is missing" in b for b in torch["broken"])
    assert any(m["name"] == "libtorch_cpu.so" for m in torch["missing_needed"])


def test_corrupt_metadata_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    dist = tmp_path / "torch-9.9.9.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_bytes(b"\x00\x01garbage without headers\n")
    dists, problems = packages.scan([str(tmp_path)])
    assert dists[0].error and "torch-9.9.9.dist-info" in dists[0].error
    assert problems == []


def test_unreadable_or_odd_path_entries_do_not_crash(tmp_path: Path) -> None:
    dangling = tmp_path / "cuda-12.9" / "bin"
    os.symlink("/nonexistent/cuda/bin", tmp_path / "cuda-link")
    locked = tmp_path / "locked"
    locked.mkdir()
    os.chmod(locked, 0)
    env = {
        "PATH": f"{dangling}:{tmp_path / 'cuda-link'}:{locked}:/usr/bin:/bin",
        "CUDA_HOME": str(tmp_path / "cuda-12.9"),
    }
    snap = collect_live(env=env, sys_path=[str(locked), str(tmp_path / "nope")])
    os.chmod(locked, stat.S_IRWXU)
    paths = snap.value("env.paths")
    assert paths["CUDA_HOME"][0]["exists"] is False
    assert not any(f.status is Status.ERROR and f.key.startswith("collector.") for f in snap)


def test_hanging_ptxas_is_killed_and_reported(tmp_path: Path) -> None:
    root = tmp_path / "cuda-12.6"
    (root / "bin").mkdir(parents=True)
    ptxas = root / "bin" / "ptxas"
    ptxas.write_text("#!/bin/sh\nsleep 300\n")
    ptxas.chmod(0o755)
    (root / "version.json").write_text(
        '{"cuda": {"name": "CUDA SDK", "version": "12.6.20241114"}, "cuda_nvcc": {"version": "12.6.85"}}'
    )
    found = toolkits.collect_toolkits({"PATH": f"{root / 'bin'}:/usr/bin"}, [], timeout=1.0)
    mine = next(t for t in found if t["realpath"] == str(root))
    assert mine["version"] == "12.6.85"
    assert "timed out" in mine["ptxas_version"]["error"]


def test_shell_wrapper_is_followed(tmp_path: Path) -> None:
    real = tmp_path / "real" / "bin"
    real.mkdir(parents=True)
    (real / "nvcc").write_text("#!/bin/sh\necho real\n")
    wrapper = tmp_path / "nvcc"
    wrapper.write_text(f'#!/bin/sh\nexec {real / "nvcc"} "$@"\n')
    assert toolkits.follow_wrapper(str(wrapper)) == str(real / "nvcc")


def test_stated_facts_become_snapshot_facts() -> None:
    snap = from_stated(
        {
            "gpu": "8x Tesla P40",
            "framework_version": "1.4.0+cu100",
            "driver": "470.82.01 (CUDA 11.4)",
            "cudnn": "8.5.0",
            "os": "Ubuntu 20.04 (WSL)",
        }
    )
    devices = snap.value("gpu.devices")
    assert len(devices) == 8 and devices[7] == {"index": 7, "name": "Tesla P40", "cc": "6.1"}
    assert snap.value("framework.torch")["cuda"] == "10.0"
    assert snap.value("driver.cuda_version") == "11.4"
    assert snap.value("cudnn.versions") == ["8.5.0"]
    assert snap.value("host.wsl") is True
    assert snap.get("driver.version").source == "stated:driver"  # type: ignore[union-attr]


def test_stated_settings_in_prose_become_env_facts() -> None:
    snap = from_stated(
        {
            "other": "local_test.sh exports CUDA_VISIBLE_DEVICES=3, and XLA_PYTHON_CLIENT_MEM_FRACTION='.9'; "
            "LD_LIBRARY_PATH=/usr/local/cuda-10.0/lib64; XLA_CLIENT_MEM_FRACTION=.5",
            "container": "docker run -e NVIDIA_VISIBLE_DEVICES=all",
        }
    )
    # values only: a stated path names a directory on their machine, not this one
    assert snap.value("env") == {
        "CUDA_VISIBLE_DEVICES": "3",
        "XLA_PYTHON_CLIENT_MEM_FRACTION": ".9",
        "XLA_CLIENT_MEM_FRACTION": ".5",
        "NVIDIA_VISIBLE_DEVICES": "all",
    }
    assert from_stated({"other": "CUDA_VISIBLE_DEVICES=0,1 python train.py"}).value("env") == {
        "CUDA_VISIBLE_DEVICES": "0,1"
    }
    assert from_stated({"other": "ran python train.py on 2 GPUs"}).status("env").value == "unknown"
