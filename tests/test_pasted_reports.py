"""The plain nvidia-smi table, cupy.show_config() and jax.print_environment_info() as people paste
them into issues (tests/fixtures/reports, each from a public thread named in SOURCES.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cudoctor import pasted
from cudoctor.importers import load_report
from cudoctor.versions import cudnn_from_int
from tests.conftest import ROOT, cudoctor, run_check

REPORTS = Path(ROOT) / "tests" / "fixtures" / "reports"


def facts(name: str) -> dict[str, Any]:
    snap = load_report(str(REPORTS / name))
    return {f.key: f.value for f in snap if f.known}


def test_cupy_show_config_gives_build_runtime_driver_cudnn_and_gpus() -> None:
    old = facts("cupy_show_config_6_cuda10.txt")
    assert old["framework.cupy"]["version"] == "6.4.0" and old["framework.cupy"]["cuda"] == "10.0"
    assert (old["driver.cuda_version"], old["cudnn.versions"]) == ("10.1", ["7.6.3"])
    rtx = facts("cupy_show_config_8_rtx2080ti.txt")
    assert rtx["gpu.devices"][0]["name"] == "GeForce RTX 2080 Ti" and rtx["gpu.devices"][0]["cc"] == "7.5"
    assert rtx["driver.cuda_version"] == "11.0" and rtx["report.format"] == "cupy-show-config"
    local = facts("cupy_show_config_14_cuda12_local.txt")
    assert local["framework.cupy"]["cuda"] == "12.9"  # the CUDA it was built with
    assert [t["version"] for t in local["cuda.toolkits"]] == ["12.0"]  # the locally installed runtime
    assert local["host.os"]["system"] == "Linux" and "driver.version" not in local


def test_jax_environment_info_with_and_without_the_nvidia_smi_table() -> None:
    t4 = facts("jax_print_environment_info_t4.txt")
    assert (t4["framework.jax"]["version"], t4["framework.jax"]["build"]) == ("0.3.15", "cuda")
    assert (t4["driver.version"], t4["driver.cuda_version"]) == ("460.32.03", "11.2")
    assert [(g["name"], g["cc"]) for g in t4["gpu.devices"]] == [("Tesla T4", "7.5")]
    a10g = facts("jax_print_environment_info_8xa10g.txt")  # cut inside the first GPU row
    assert a10g["gpu.devices"][0]["name"] == "NVIDIA A10G" and a10g["driver.version"] == "550.127.05"
    cpu = facts("jax_print_environment_info_cpu.txt")
    assert cpu["framework.jax"]["build"] == "cpu" and "driver.version" not in cpu


def test_plain_nvidia_smi_tables_even_cut_mid_row() -> None:
    linux = facts("nvidia_smi_table_rtx3080.txt")
    gpu = linux["gpu.devices"][0]
    assert (gpu["name"], gpu["memory_used_mib"], gpu["memory_total_mib"]) == (
        "NVIDIA GeForce RTX 3080",
        9849,
        10240,
    )
    assert gpu["processes"] is None  # the paste ends before the process list: unknown, not empty
    windows = facts("nvidia_smi_table_windows_m40.txt")
    assert [g["name"] for g in windows["gpu.devices"]] == ["Tesla M40 24GB"]
    assert (windows["driver.version"], windows["driver.cuda_version"]) == ("537.13", "12.2")


def test_a_pasted_table_without_its_process_list_does_not_blame_invisible_processes() -> None:
    snap = load_report(str(REPORTS / "nvidia_smi_table_rtx3080.txt"))
    [held] = run_check("gpu-memory-held", snap).findings
    assert "processes the report does not list" in held.title and "container" not in held.title


def test_the_check_summary_of_pasted_reports() -> None:
    out = cudoctor(["check", "--snapshot", str(REPORTS / "jax_print_environment_info_t4.txt"), "--no-live"])
    assert "JAX 0.3.15 (CUDA build)" in out.stdout and "CUDA None" not in out.stdout
    out = cudoctor(
        ["check", "--snapshot", str(REPORTS / "cupy_show_config_14_cuda12_local.txt"), "--no-live"]
    )
    assert "driver unknown, CUDA 13.0" in out.stdout
    doc = json.loads(
        cudoctor(
            ["check", "--snapshot", str(REPORTS / "nvidia_smi_table_rtx3080.txt"), "--format", "json"]
        ).stdout
    )
    assert doc["snapshot"]["facts"]["report.format"]["value"] == "nvidia-smi-table"


@pytest.mark.parametrize(
    ("value", "version"), [("8401", "8.4.1"), ("7603", "7.6.3"), ("90100", "9.1.0"), ("None", None)]
)
def test_cudnn_integer_versions(value: str, version: str | None) -> None:
    assert cudnn_from_int(value) == version


def test_the_process_list_of_a_pasted_table_names_who_holds_the_memory() -> None:
    """Both layouts of the process table (R418's 'GPU PID Type', R450+'s GI/CI columns), a table
    quoted in an indented block, and the GPU whose memory one python process holds."""
    t4 = load_report(str(REPORTS / "nvidia_smi_table_t4_indented_one_process.txt"))
    [gpu] = t4.value("gpu.devices")
    assert (gpu["name"], gpu["memory_used_mib"]) == ("Tesla T4", 14315)
    assert gpu["processes"] == [{"pid": 1800353, "type": "C", "name": "python", "used_mib": 14305}]
    [held] = run_check("gpu-memory-held", t4).findings
    assert "pid 1800353 python (14305 MiB)" in held.title
    assert held.fix == ("If pid 1800353 is left over from an earlier run, stop it: kill 1800353",)

    shared = load_report(str(REPORTS / "nvidia_smi_table_2080ti_five_processes.txt"))
    [gpu] = shared.value("gpu.devices")
    assert [p["pid"] for p in gpu["processes"]][:2] == [1065593, 1065598] and len(gpu["processes"]) == 5
    assert not run_check("gpu-memory-held", shared).findings  # 1543 of 11264 MiB: room left


def test_eight_shared_gpus_point_at_the_idle_ones() -> None:
    snap = load_report(str(REPORTS / "nvidia_smi_table_8xa800_shared.txt"))
    gpus = snap.value("gpu.devices")
    assert [len(g["processes"]) for g in gpus] == [2, 1, 1, 1, 1, 0, 3, 1]
    assert gpus[0]["processes"][0]["type"] == "C+G"  # wide PID column, C+G type
    [held] = run_check("gpu-memory-held", snap).findings  # one thing to do, not one per GPU
    assert held.title.startswith("GPUs 0, 1, 2, 3 (NVIDIA A800-SXM4-80GB) have 68605 to 72750 of 81920 MiB")
    assert (
        "5 processes: pid 4110331 .../envs/galaxea_vla/bin/python3 on GPU 0, pid 4110338 on GPU 1"
        in held.title
    )
    assert held.title.endswith("on GPU 3 and 1 more")
    assert held.fix == (
        "If pids 4110331, 4110338, 4110339, 4110340 are left over from an earlier run, stop them: kill 4110331 4110338 4110339 4110340",
        "Or run on a GPU with free memory: export CUDA_VISIBLE_DEVICES=5,6",
    )
    assert "gpu 0 pid 2615020: 4126 MiB" in held.evidence  # the small C+G one is evidence, not a kill step
    out = cudoctor(["check", "--snapshot", str(REPORTS / "nvidia_smi_table_8xa800_shared.txt"), "--no-live"])
    assert "8x NVIDIA A800-SXM4-80GB (cc 8.0)" in out.stdout


def test_a_process_list_cut_off_is_unknown_not_empty(tmp_path: Path) -> None:
    whole = (REPORTS / "nvidia_smi_table_2080ti_five_processes.txt").read_text()
    cut = tmp_path / "cut.txt"
    cut.write_text(whole[: whole.index("|    0   N/A  N/A   1066283")])  # ends before the border
    [gpu] = load_report(str(cut)).value("gpu.devices")
    assert gpu["processes"] is None


@pytest.mark.parametrize(
    ("line", "pid", "kind", "used"),
    [  # WDDM (Windows) prints no per-process memory; lines from public pastes (code index 43597987536)
        (
            "|    0   N/A  N/A      9560    C+G   ..._8wekyb3d8bbwe\\Microsoft.Photos.exe    N/A      |",
            "9560",
            "C+G",
            None,
        ),
        (
            "|    0   N/A  N/A      7244    C+G   ...Programs\\Microsoft VS Code\\Code.exe    N/A      |",
            "7244",
            "C+G",
            None,
        ),
        (
            "|    0   1800353      C   python                                     14305MiB |",
            "1800353",
            "C",
            "14305",
        ),
    ],
)
def test_process_rows_of_every_layout(line: str, pid: str, kind: str, used: str | None) -> None:
    row = pasted.SMI_PROCESS_ROW.match(line)
    assert row is not None and (row.group(2), row.group(3), row.group(5)) == (pid, kind, used)


def test_a_library_cupy_show_config_could_not_load_is_a_missing_library() -> None:
    """CuPy 14 prints an ImportError in place of a library's version (cupy/cupy#9723: no cuBLAS in a
    CUDA 12.0 container); the library is named as CuPy's CUDA 12 build loads it."""
    snap = load_report(str(REPORTS / "cupy_show_config_14_cuda12_local.txt"))
    assert snap.value("framework.cupy")["missing_needed"] == [
        {"name": "libcublasLt.so.12", "reported_by": "cupy.show_config()"}
    ]
    [missing] = run_check("cuda-libs-missing", snap).findings
    assert missing.evidence == ("cupy.show_config() could not load it",)
    assert missing.fix[0].startswith("pip install nvidia-cublas-cu12")
    assert missing.fix[1].startswith(
        "Or bring all of CuPy's CUDA libraries: pip install 'cupy-cuda12x[ctk]==14.0.0'"
    )
    assert not any("tensorflow" in step or "torch" in step for step in missing.fix)  # CuPy's, no one else's
    whole = load_report(str(REPORTS / "cupy_show_config_8_rtx2080ti.txt"))
    assert "missing_needed" not in whole.value("framework.cupy")
    assert not run_check("cuda-libs-missing", whole).findings
