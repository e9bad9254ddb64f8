"""Checks of the environment (checks/env.py): paths that do not exist, CUDA_HOME and PATH, Windows
install and temp paths, a small /dev/shm."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cudoctor.facts import host
from cudoctor.model import Severity
from tests.checks.helpers import SHM_64_MIB, outcome, torch_cuda
from tests.conftest import cudoctor, finding_ids, run_check, stated


# ---------------------------------------------------------------- environment
def test_env_path_missing_suggests_installed_toolkit() -> None:
    paths = {
        "CUDA_HOME": [{"path": "/usr/local/cuda-13.1", "exists": False, "readable": False}],
        "LD_LIBRARY_PATH": [
            {"path": "/usr/local/cuda-11.8/lib64", "exists": False, "readable": False},
            {"path": "/opt/other/lib", "exists": False, "readable": False},
        ],
    }
    snap = stated(
        {},
        env__paths=paths,
        env={"CUDA_HOME": "/usr/local/cuda-13.1"},
        cuda__toolkits=[
            {"root": "/usr/local/cuda-13.0", "realpath": "/usr/local/cuda-13.0", "version": "13.0"}
        ],
    )
    r = run_check("env-path-missing", snap)
    assert finding_ids(r) == ["env-cuda-home-missing", "env-ld-library-path-missing"]
    assert r.findings[0].fix[0] == "export CUDA_HOME=/usr/local/cuda-13.0"
    healthy = stated(
        {}, env__paths={"CUDA_HOME": [{"path": "/usr/local/cuda", "exists": True, "readable": True}]}
    )
    assert outcome("env-path-missing", healthy) == ("ok", [])
    assert outcome("env-path-missing", stated({}))[0] == "unknown"


def test_cuda_home_written_like_a_path_list_is_named_so(tmp_path: Path) -> None:
    """Real layout: two real toolkit dirs joined by ':' (mmdetection#944, detectron2#540, #1991)."""
    for name in ("cuda-12.4", "cuda"):
        (tmp_path / name).mkdir()
    value = f"{tmp_path / 'cuda-12.4'}:{tmp_path / 'cuda'}"
    paths = host.path_entries({"CUDA_HOME": value, "PATH": value})
    assert [e["exists"] for e in paths["PATH"]] == [True, True]
    assert len(paths["CUDA_HOME"]) == 1 and paths["CUDA_HOME"][0]["exists"] is False
    root = str(tmp_path / "cuda")
    snap = stated({}, env__paths=paths, cuda__toolkits=[{"root": root, "realpath": root, "version": "12.4"}])
    r = run_check("env-path-missing", snap)
    assert finding_ids(r) == ["env-cuda-home-path-list"]
    assert r.findings[0].fix[0] == f"export CUDA_HOME={root}"
    assert f"'{value}/bin/nvcc'" in r.findings[0].title
    leading = host.path_entries({"CUDA_HOME": f":{root}"})
    assert finding_ids(run_check("env-path-missing", stated({}, env__paths=leading))) == [
        "env-cuda-home-path-list"
    ]
    one = host.path_entries({"CUDA_HOME": root})
    assert outcome("env-path-missing", stated({}, env__paths=one)) == ("ok", [])


def test_cuda_home_not_path_toolkit_and_path_order() -> None:
    tks = [
        {"root": "/usr/local/cuda-11.8", "realpath": "/usr/local/cuda-11.8", "version": "11.8"},
        {"root": "/usr/local/cuda-12.4", "realpath": "/usr/local/cuda-12.4", "version": "12.4"},
    ]
    tools = {
        "nvcc": {
            "first": "/usr/local/cuda-11.8/bin/nvcc",
            "resolved": "/usr/local/cuda-11.8/bin/nvcc",
            "all": ["/usr/local/cuda-11.8/bin/nvcc", "/usr/local/cuda-12.4/bin/nvcc"],
        },
        "ptxas": {"all": []},
    }
    snap = stated({}, env={"CUDA_HOME": "/usr/local/cuda-12.4"}, cuda__toolkits=tks, cuda__path_tools=tools)
    assert outcome("cuda-home-not-path-toolkit", snap)[1] == ["cuda-home-not-path-toolkit"]
    assert outcome("toolkits-shadow-on-path", snap)[1] == ["nvcc-older-first-on-path"]
    same = stated(
        {},
        env={"CUDA_HOME": "/usr/local/cuda-11.8"},
        cuda__toolkits=tks[:1],
        cuda__path_tools={
            "nvcc": {"resolved": "/usr/local/cuda-11.8/bin/nvcc", "all": ["/usr/local/cuda-11.8/bin/nvcc"]}
        },
    )
    assert outcome("cuda-home-not-path-toolkit", same) == ("ok", [])
    assert outcome("toolkits-shadow-on-path", same) == ("ok", [])
    assert outcome("cuda-home-not-path-toolkit", stated({}))[0] == "unknown"


# ---------------------------------------------------------------- Windows install path
WIN = {"system": "Windows", "release": "10", "machine": "AMD64"}
BRACKETED = "C:\\X\\[Goods]\\CoL\\ballontrans_pylibs_win\\Lib\\site-packages\\torch"  # BallonsTranslator#621


def test_install_path_brackets_fires_on_windows_with_the_folder_named() -> None:
    r = run_check(
        "install-path-brackets", stated({}, host__os=WIN, framework__torch=torch_cuda(location=BRACKETED))
    )
    assert finding_ids(r) == ["install-path-brackets"]
    assert "C:\\X\\[Goods]," in r.findings[0].title
    assert r.findings[0].fix[0].startswith("Rename C:\\X\\[Goods] without [ ]")


def test_install_path_brackets_is_silent_on_a_plain_path_and_off_windows() -> None:
    plain = "C:\\Users\\me\\venv\\Lib\\site-packages\\torch"
    assert outcome(
        "install-path-brackets", stated({}, host__os=WIN, framework__torch=torch_cuda(location=plain))
    ) == ("ok", [])
    linux = {"system": "Linux", "release": "6.1", "machine": "x86_64"}
    # glob's pattern reading only matters for torch's Windows DLL preload
    assert outcome(
        "install-path-brackets",
        stated({}, host__os=linux, framework__torch=torch_cuda(location="/srv/[x]/torch")),
    ) == ("ok", [])


CHINESE_TEMP = "C:\\Users\\黄\\AppData\\Local\\Temp"  # cupy/cupy#2100


def test_temp_path_non_ascii_fires_on_windows_for_cupy() -> None:
    facts = stated({}, host__os=WIN, host__temp_dir=CHINESE_TEMP, python__packages={"cupy-cuda12x": "13.3.0"})
    r = run_check("temp-path-non-ascii", facts)
    assert finding_ids(r) == ["temp-path-non-ascii"] and r.findings[0].severity is Severity.WARNING
    assert CHINESE_TEMP in r.findings[0].title and "cupy-cuda12x" in r.findings[0].title
    assert "set TEMP=C:\\tmp" in r.findings[0].fix[0] and "CUPY_CACHE_DIR" in r.findings[0].fix[0]


def test_temp_path_non_ascii_is_silent_for_ascii_paths_without_cupy_and_off_windows() -> None:
    cupy = {"cupy-cuda12x": "13.3.0"}
    ascii_temp = "C:\\Users\\huang\\AppData\\Local\\Temp"
    assert outcome(
        "temp-path-non-ascii", stated({}, host__os=WIN, host__temp_dir=ascii_temp, python__packages=cupy)
    ) == ("ok", [])
    assert outcome(
        "temp-path-non-ascii",
        stated({}, host__os=WIN, host__temp_dir=CHINESE_TEMP, python__packages={"torch": "2.5.1"}),
    ) == ("ok", [])
    linux = {"system": "Linux", "release": "6.1", "machine": "x86_64"}
    assert outcome(
        "temp-path-non-ascii", stated({}, host__os=linux, host__temp_dir="/tmp/黄", python__packages=cupy)
    ) == ("ok", [])
    # a snapshot from before the fact existed
    assert outcome("temp-path-non-ascii", stated({}, host__os=WIN, python__packages=cupy))[0] == "unknown"


def test_the_temp_dir_fact_follows_tmpdir_temp_tmp(tmp_path: Path) -> None:
    chinese = tmp_path / "黄"
    chinese.mkdir()
    assert host.temp_dir({"TMPDIR": str(chinese)}) == str(chinese)
    assert host.temp_dir({"TMPDIR": str(tmp_path / "absent"), "TEMP": str(tmp_path)}) == str(tmp_path)
    out = cudoctor(["check", "--format", "json"], env={**os.environ, "TMPDIR": str(chinese)})
    facts = json.loads(out.stdout)["snapshot"]["facts"]
    assert facts["host.temp_dir"]["value"] == str(chinese)


def test_install_path_brackets_unknown_without_the_location() -> None:
    info = torch_cuda()
    del info["location"]
    assert outcome("install-path-brackets", stated({}, host__os=WIN, framework__torch=info))[0] == "unknown"
    assert outcome("install-path-brackets", stated({}, framework__torch=torch_cuda()))[0] in (
        "unknown",
        "skipped",
    )


def test_shared_memory_small_cases(tmp_path: Path) -> None:
    docker = stated({}, framework__torch=torch_cuda(), host__shm=SHM_64_MIB, host__container="docker")
    r = run_check("shared-memory-small", docker)
    assert finding_ids(r) == ["shared-memory-small"] and "64 MiB" in r.findings[0].title
    assert r.findings[0].fix[0].startswith("Start the container with more: docker run --shm-size=16g")
    bare = stated({}, framework__torch=torch_cuda(), host__shm=SHM_64_MIB)
    assert "remount" in run_check("shared-memory-small", bare).findings[0].fix[0]
    big = dict(SHM_64_MIB, size_bytes=16 << 30)
    assert outcome("shared-memory-small", stated({}, framework__torch=torch_cuda(), host__shm=big)) == (
        "ok",
        [],
    )
    # DataLoader workers are PyTorch's: without torch a small /dev/shm is no finding
    assert outcome("shared-memory-small", stated({}, host__shm=SHM_64_MIB)) == ("ok", [])
    assert outcome("shared-memory-small", stated({}, framework__torch=torch_cuda()))[0] == "unknown"
    # the fact itself, read from real filesystems
    fact = host.shared_memory(str(tmp_path))
    assert fact.value["size_bytes"] > 0 and fact.value["free_bytes"] <= fact.value["size_bytes"]
    assert host.shared_memory(str(tmp_path / "missing")).status.value == "absent"


@pytest.mark.parametrize(
    ("system_cuda", "fires"),
    [
        # mmartial/ComfyUI-Nvidia-Docker#36 (blind set 65): apt's /usr/bin/nvcc 12.0 before the image's 12.8
        ("/usr/bin/nvcc: release 12.0, V12.0.140; /usr/local/cuda/bin/nvcc: release 12.8, V12.8.93", True),
        # FahimFBA/CUDA-WSL2-Ubuntu#3: 11.8 installed, nvcc -V answers 11.5 (Ubuntu's nvidia-cuda-toolkit)
        (
            "installed Cuda 11.8 per the tutorial; nvcc -V: Cuda compilation tools, release 11.5, V11.5.119",
            True,
        ),
        ("12.4 (nvcc: release 12.4, V12.4.131)", False),  # one toolkit, the nvcc its own
        ("/usr/local/cuda/bin/nvcc: release 12.8; /usr/bin/nvcc: release 12.0", False),  # the newer first
    ],
)
def test_a_quoted_nvcc_older_than_a_toolkit_stated_beside_it(system_cuda: str, fires: bool) -> None:
    r = run_check("stated-nvcc-shadowed", stated({"system_cuda": system_cuda}))
    assert finding_ids(r) == (["stated-nvcc-shadowed"] if fires else [])
    if fires:
        assert "export PATH=/usr/local/cuda-1" in r.findings[0].fix[0]


def test_a_quoted_nvcc_with_no_toolkit_stated_is_unknown() -> None:
    assert run_check("stated-nvcc-shadowed", stated({"other": "nvcc -V: release 11.5"})).outcome == "unknown"


@pytest.mark.parametrize(
    "facts",
    [
        # nvidia-smi's 'CUDA Version' is the driver's CUDA, not a second toolkit (review of session 46)
        {"system_cuda": "nvcc -V: release 12.1; nvidia-smi shows CUDA Version: 12.8"},
        # the older nvcc is the one torch's build needs: putting 12.4 first would break its extensions
        {"system_cuda": "11.8 and 12.4; nvcc -V: release 11.8", "framework_version": "torch 2.1.0+cu118"},
    ],
)
def test_a_quoted_nvcc_is_not_shadowed_by_the_drivers_cuda_or_against_the_builds_own(
    facts: dict[str, str],
) -> None:
    assert finding_ids(run_check("stated-nvcc-shadowed", stated(facts))) == []
