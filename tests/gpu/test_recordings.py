"""Replays of what real GPU machines printed (tests/fixtures/gpu/README.md says how each file was made):
an H100 80GB HBM3 and an H200, driver 580.159.04, torch 2.11.0+cu130, JAX 0.11.2, CuPy 14.2.0.

Nothing here is invented: probe results, snapshots and error text are the machines' own output. The
one exception is marked where it stands (a thermal slowdown the lent GPU could not be made to show).
"""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest

from cudoctor import inputs, probe
from cudoctor.checks import probe as probe_checks
from cudoctor.explainer import rank, scan
from cudoctor.model import Severity, Snapshot
from cudoctor.render import probes as probe_table
from tests.conftest import run_check, stated

GPU = Path(__file__).parents[1] / "fixtures" / "gpu"
H100, H200 = GPU / "h100", GPU / "h200"
BROKEN = H100 / "broken"


def probe_results(machine: Path) -> list[dict[str, Any]]:
    return json.loads((machine / "probe.json").read_text())["snapshot"]["facts"]["probe.results"]["value"]


def row(results: list[dict[str, Any]], framework: str, dtype: str, device: str = "cuda:0") -> dict[str, Any]:
    [fw] = [r for r in results if r["framework"] == framework]
    [rec] = [r for r in fw["results"] if r["dtype"] == dtype and r["device"] == device]
    return rec


# ------------------------------------------------------------------ the probe bar
@pytest.mark.parametrize(("machine", "name"), [(H100, "NVIDIA H100 80GB HBM3"), (H200, "NVIDIA H200")])
def test_bf16_8192_cubed_through_torch_reaches_75_percent_of_the_datasheet_peak(
    machine: Path, name: str
) -> None:
    rec = row(probe_results(machine), "torch", "bfloat16")
    assert rec["name"] == name and rec["n"] == 8192 and rec["correct"]
    # recomputed from the recorded seconds per product, not taken from the file
    again = probe.evaluate(
        {k: rec[k] for k in ("device", "dtype", "rel_err", "seconds", "sustained_seconds", "n", "name")}
    )
    assert again["peak_tflops"] == 989.4 and again["pct_of_peak"] == rec["pct_of_peak"] >= 75.0
    # sustained under the board's power cap: lower, and reported, not hidden
    assert again["sustained_tflops"] < again["tflops"]


@pytest.mark.parametrize("machine", [H100, H200])
def test_every_recorded_gemm_is_correct_and_repeats_bit_for_bit(machine: Path) -> None:
    results = probe_results(machine)
    assert {r["framework"] for r in results} == {"numpy", "torch", "jax", "cupy"}
    assert all(r["status"] == "ok" for r in results)
    for r in results:
        for rec in r["results"]:
            assert rec["correct"] and rec["stress_mismatches"] == 0, (r["framework"], rec)


def test_jax_default_float32_precision_is_tf32_on_hopper_and_its_own_row() -> None:
    results = probe_results(H100)
    highest, default = row(results, "jax", "float32"), row(results, "jax", "tf32")
    assert highest["rel_err"] < 1e-6 < 1e-4 < default["rel_err"] < default["tolerance"]
    assert default["precision"] == "default"


# ------------------------------------------------------------------ clocks: probe-clocks-limited
def test_the_h200s_power_cap_is_a_note_naming_clock_and_reason() -> None:
    snap = inputs.load_snapshot(str(H200 / "probe.json"))
    [f] = run_check("probe-clocks-limited", snap).findings
    assert f.severity is Severity.INFO and f.title.startswith("NVIDIA H200 holds its 700.0 W power limit")
    assert "NVML clock-event reasons: sw-power-cap" in f.evidence
    for check_id in ("probe-failed", "probe-wrong-result", "probe-slow"):
        assert run_check(check_id, snap).findings == ()


def test_a_power_cap_that_keeps_the_sustained_speed_stays_silent() -> None:
    rec = row(probe_results(H200), "torch", "float64")  # sw-power-cap, sustained 98.6% of the burst
    assert [r["name"] for r in rec["clocks"]["reasons"]] == ["sw-power-cap"]
    assert probe_checks._clock_finding("NVIDIA H200", "torch", rec) is None


def test_a_recording_without_clocks_says_nothing_about_them() -> None:
    snap = inputs.load_snapshot(
        str(H100 / "probe.json")
    )  # nvidia-ml-py was there, the lookup was not yet right
    assert all("clocks" not in rec for r in snap.value("probe.results") for rec in r["results"])
    assert run_check("probe-clocks-limited", snap).findings == ()


def test_a_thermal_slowdown_is_a_warning() -> None:
    # Counterfactual: the real H200 bf16 row with NVML's bit 0x40 (hw-thermal-slowdown) in place of its
    # 0x4; the lent GPU could not be made to overheat.
    rec = copy.deepcopy(row(probe_results(H200), "torch", "bfloat16"))
    rec["clocks"]["reasons"] = probe.clock_reasons(0x40)
    f = probe_checks._clock_finding("NVIDIA H200", "torch", rec)
    assert f is not None and f.severity is Severity.WARNING and "hw-thermal-slowdown" in f.title


def test_the_table_shows_burst_and_sustained_with_the_clock() -> None:
    lines = probe_table.table(probe_results(H200))
    recorded = (H200 / "probe_text.txt").read_text()
    assert lines[0].split() == [
        "framework",
        "device",
        "dtype",
        "rel.",
        "error",
        "ok",
        "n",
        "throughput",
        "sustained",
    ]
    assert (
        lines[0].split()
        == next(ln for ln in recorded.splitlines() if ln.split()[:1] == ["framework"]).split()
    )
    [bf16] = [ln for ln in lines if ln.split()[:3] == ["torch", "cuda:0", "bfloat16"]]
    assert "% of 989.4)" in bf16 and "/1980 MHz sw-power-cap" in bf16


# ------------------------------------------------------------------ the machine's own snapshot
def check_json(args: list[str]) -> dict[str, Any]:
    from tests.conftest import cudoctor

    return json.loads(cudoctor(["check", *args, "--no-live", "--no-record", "--format", "json"]).stdout)


def test_the_healthy_h100_replays_without_a_false_alarm() -> None:
    doc = check_json(["--snapshot", str(H100 / "check.json")])
    warnings = {f["id"] for f in doc["findings"] if f["severity"] in ("warning", "error")}
    # onnxruntime's CPU package beside the GPU is true of that image; nothing else may warn
    assert warnings == {"onnxruntime-cpu-package"}
    [nvvm] = [f for f in doc["findings"] if f["id"] == "driver-libs-incomplete"]
    assert nvvm["severity"] == "info" and "nothing here is built for CUDA below 12" in nvvm["evidence"]


def test_the_h100_with_cuda_visible_devices_empty_names_the_variable() -> None:
    doc = check_json(["--snapshot", str(H100 / "check_hidden_gpu.json")])
    [f] = [f for f in doc["findings"] if f["id"] == "cuda-visible-devices-hides-gpus"]
    assert f["severity"] == "error" and "CUDA_VISIBLE_DEVICES=''" in f["title"]


def test_nvidia_smi_xml_of_the_h100_reads_as_facts() -> None:
    snap = inputs.load_snapshot(str(H100 / "nvidia_smi_q_x.xml"))
    [gpu] = snap.value("gpu.devices")
    assert gpu["name"] == "NVIDIA H100 80GB HBM3" and snap.value("driver.version") == "580.159.04"
    assert snap.value("driver.cuda_version") == "13.0"


# ------------------------------------------------------------------ deliberately broken runs
def explain_file(path: Path, snap: Snapshot | None = None) -> rank.Explanation:
    return rank.explain(scan.scan(io.BytesIO(path.read_bytes())), snap or Snapshot())


@pytest.mark.parametrize(
    ("name", "cause", "root"),
    [
        ("hidden_gpu", "no-gpu-visible", "No CUDA GPUs are available"),
        ("bad_ordinal", "no-gpu-visible", "invalid device ordinal"),
        ("cupy_hidden_gpu", "no-gpu-visible", "cudaErrorNoDevice"),
        ("jax_hidden_gpu", "no-gpu-visible", "cuInit(0) failed: CUDA_ERROR_NO_DEVICE"),
        ("alloc_too_large", "gpu-oom", "Tried to allocate 1024.00 GiB"),
        ("oom_accumulate", "gpu-oom", "78.00 GiB is allocated by PyTorch"),
        ("jax_alloc_too_large", "gpu-oom", "RESOURCE_EXHAUSTED: Out of memory"),
        ("cupy_alloc_too_large", "gpu-oom", "Out of memory allocating 1,099,511,627,776 bytes"),
        ("dtype_mismatch", "dtype-mismatch", "float != c10::Half"),
        ("device_mismatch", "device-mismatch", "mat2 is on cpu"),
        ("shape_mismatch", "shape-mismatch", "(2x3 and 4x5)"),
        ("index_out_of_range", "illegal-memory-access", "IndexKernel.cu"),
        ("index_out_of_range_then_gemm", "illegal-memory-access", "indexSelectSmallIndex"),
        ("illegal_address_then_gemm", "illegal-memory-access", "CUDA_ERROR_ILLEGAL_ADDRESS"),
        ("no_kernel_image", "arch-unsupported", "cudaErrorNoKernelImageForDevice"),
        ("torch_lib_hidden", "cudnn-mismatch", "libcudnn.so.9: cannot open shared object file"),
        ("jax_lib_hidden", "cudnn-mismatch", "Unable to load cuDNN"),
    ],
)
def test_each_recorded_failure_is_explained(name: str, cause: str, root: str) -> None:
    exp = explain_file(BROKEN / f"{name}.txt")
    assert exp.root is not None and root in exp.root.text, exp.root
    assert exp.causes[0].id == cause, [c.id for c in exp.causes]


def test_an_out_of_bounds_kernel_surfaces_at_cublas_handle_creation() -> None:
    text = (BROKEN / "illegal_address_then_gemm.txt").read_text()
    assert "CUBLAS_STATUS_INTERNAL_ERROR when calling `cublasCreate(handle)`" in text
    exp = explain_file(BROKEN / "illegal_address_then_gemm.txt")
    assert "library-bug" in [c.id for c in exp.causes][1:]  # the cuBLAS line stays a lesser reading


# ------------------------------------------------------------------ torch 2.11's deterministic mode
def test_torch_2_11_runs_deterministic_gemms_without_the_workspace_setting() -> None:
    for name in ("deterministic_cublas_really_unset", "deterministic_cublas_empty_paths"):
        text = (BROKEN / f"{name}.txt").read_text()
        stdout = text.split("# ---- stdout\n")[1].split("# ---- stderr")[0]
        assert stdout.count(" ok\n") == 10 and "raised" not in stdout and "# exit: 0" in text
    torch = inputs.load_snapshot(str(H100 / "check.json")).value("framework.torch")
    assert torch["version"] == "2.11.0+cu130"
    loose = stated({}, env={"CUBLAS_WORKSPACE_CONFIG": " :4096:8"}, framework__torch=torch)
    assert run_check("cublas-workspace-config", loose).findings == ()
    # an empty value still draws torch's 'Could not parse' warning (recorded), without the refusal
    empty = stated({}, env={"CUBLAS_WORKSPACE_CONFIG": ""}, framework__torch=torch)
    [f] = run_check("cublas-workspace-config", empty).findings
    assert f.severity is Severity.INFO and "refuses" not in f.title
    assert (
        "Could not parse CUBLAS_WORKSPACE_CONFIG" in (BROKEN / "deterministic_cublas_unset.txt").read_text()
    )
