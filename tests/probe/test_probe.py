"""Probes run for real on this CPU machine; crashes, hangs and OOMs become results."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cudoctor import probe
from tests.conftest import cudoctor, finding_ids, run_check, stated

FAST = {"check_n": 128, "cpu_n": 256, "min_time": 0.02}


@pytest.mark.parametrize("framework", ["numpy", "torch", "jax", "tensorflow"])
def test_real_probe_per_framework(framework: str) -> None:
    if framework not in probe.installed():
        pytest.skip(f"{framework} is not installed (CI installs it)")
    r = probe.run_probe(framework, timeout=180, **FAST)
    assert r["status"] == "ok", r.get("stderr_tail")
    dtypes = {rec["dtype"] for rec in r["results"]}
    assert {"float64", "float32"} <= dtypes
    for rec in r["results"]:
        assert rec["correct"], rec
        assert rec["rel_err"] <= rec["tolerance"] and rec["tflops"] > 0
    assert r["info"]["import_s"] >= 0


def test_segfault_becomes_a_result() -> None:
    r = probe.run_probe(
        "numpy", timeout=60, inject="import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", **FAST
    )
    assert r["status"] == "killed" and r["signal"] == "SIGSEGV"
    assert "Segmentation fault" in r["stderr_tail"]
    diagnosis = r["diagnosis"]  # faulthandler's line is explained, with how to find the frame
    assert diagnosis["root"] == "Fatal Python error: Segmentation fault" and diagnosis["confidence"] < 0.7
    assert any("python -X faulthandler" in step for step in diagnosis["fix"])
    found = run_check("probe-failed", stated({}, probe__results=[r])).findings[0]
    assert list(found.fix[: len(diagnosis["fix"])]) == diagnosis["fix"]
    assert ": perhaps several copies" in found.title and found.confidence == "possible"  # a guess says so


def test_hang_is_killed_and_the_run_goes_on() -> None:
    results = [
        probe.run_probe("numpy", timeout=2, inject="import time; time.sleep(300)", **FAST),
        probe.run_probe("numpy", timeout=60, **FAST),
    ]
    assert results[0]["status"] == "timeout" and "timed out" in results[0]["detail"]
    assert results[0]["wall_s"] < 10 and results[1]["status"] == "ok"


def test_out_of_memory_under_lowered_rlimit_as_is_explained() -> None:
    inject = "import numpy as np; np.ones((1 << 31,), dtype=np.float64)"
    r = probe.run_probe("numpy", timeout=60, memory_limit_mb=3000, inject=inject, **FAST)
    assert r["status"] == "failed" and "MemoryError" in r["stderr_tail"]
    assert r["diagnosis"]["cause"] == "host-oom"


def test_async_cuda_error_is_rerun_with_launch_blocking() -> None:
    inject = (
        "import os\n"
        "if os.environ.get('CUDA_LAUNCH_BLOCKING') == '1':\n"
        "    raise RuntimeError('CUDA error: device-side assert triggered')\n"
        "raise RuntimeError('CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle)`\\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.')\n"
    )
    r = probe.run_probe("numpy", timeout=60, inject=inject, **FAST)
    assert r["status"] == "failed" and r["rerun_with_launch_blocking"]["status"] == "failed"
    assert r["diagnosis"]["cause"] == "illegal-memory-access"


def test_probe_checks() -> None:
    failed = {
        "framework": "torch",
        "status": "killed",
        "signal": "SIGSEGV",
        "detail": "killed by SIGSEGV",
        "stderr_tail": "Fatal Python error: Segmentation fault",
        "results": [],
    }
    wrong = {
        "framework": "numpy",
        "status": "ok",
        "results": [
            probe.evaluate({"device": "cpu", "dtype": "float32", "rel_err": 3e-2, "n": 64, "seconds": 0.001})
        ],
    }
    good = {
        "framework": "numpy",
        "status": "ok",
        "results": [
            probe.evaluate({"device": "cpu", "dtype": "float32", "rel_err": 2e-7, "n": 64, "seconds": 0.001})
        ],
    }
    assert finding_ids(run_check("probe-failed", stated({}, probe__results=[failed]))) == [
        "probe-failed-torch"
    ]
    assert finding_ids(run_check("probe-wrong-result", stated({}, probe__results=[wrong]))) == [
        "probe-wrong-numpy-float32"
    ]
    for check_id in ("probe-failed", "probe-wrong-result", "probe-slow"):
        assert run_check(check_id, stated({}, probe__results=[good])).outcome == "ok"
        assert run_check(check_id, stated({})).outcome == "unknown"


def test_peak_lookup_and_percentage() -> None:
    rec = probe.evaluate(
        {
            "device": "cuda:0",
            "dtype": "bfloat16",
            "rel_err": 1e-3,
            "n": 8192,
            "seconds": 2 * 8192**3 / 790e12,
            "name": "NVIDIA H200",
        }
    )
    assert (
        rec["peak_of"] == "H100 SXM5 / H200 SXM"
        and rec["peak_tflops"] == 989.4
        and 79 < rec["pct_of_peak"] < 81
    )
    assert probe.peak_for("NVIDIA H100 PCIe", "float32")[1] == "H100 PCIe"  # type: ignore[index]
    assert probe.peak_for("Tesla K80", "float32") is None


def test_probe_cli_json() -> None:
    out = cudoctor(["probe", "--framework", "numpy", "--format", "json"])
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    results = doc["snapshot"]["facts"]["probe.results"]["value"]
    assert results[0]["framework"] == "numpy" and results[0]["status"] == "ok"
    text = cudoctor(["probe", "--framework", "numpy", "--stress", "3"]).stdout
    assert "Probes" in text and "float32" in text and "GFLOP/s" in text


def test_framework_that_fails_to_import_is_explained(tmp_path: Path) -> None:
    """The planted fault from PEERS.md: a torch whose import raises OSError for a missing cuDNN."""
    site = tmp_path / "site" / "torch"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text(
        "raise OSError('libcudnn.so.9: cannot open shared object file: No such file or directory')\n"
    )
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "site"))
    r = probe.run_probe("torch", timeout=60, env=env, **FAST)
    assert r["status"] == "failed" and r["diagnosis"]["cause"] == "cudnn-mismatch"
    out = cudoctor(["probe", "--framework", "torch", "--format", "json"], env=env)
    findings = json.loads(out.stdout)["findings"]
    assert (
        out.returncode == 1
        and findings[0]["id"] == "probe-failed-torch"
        and findings[0]["cause"] == "cudnn-mismatch"
    )
    assert "perhaps" not in findings[0]["title"] and findings[0]["confidence"] == "likely"


def _child_module():  # the child is a script, never imported by cudoctor itself
    import importlib.util

    spec = importlib.util.spec_from_file_location("probe_child", probe.CHILD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gpu_timing_takes_the_median_burst_after_warm_up_then_a_sustained_run() -> None:
    child = _child_module()
    calls: list[int] = []
    per_call = iter([9.0, 3.0, 1.0, 2.0] + [5.0] * 1000)  # warm-up, three bursts, then sustained

    def window(n: int) -> float:
        calls.append(n)
        return next(per_call)

    out = child.gpu_timing(window, {"settle_s": 0.0, "sustained_s": 0.01}, None)
    assert calls[:4] == [3, 10, 10, 10] and len(calls) >= 7  # at least three sustained windows
    assert out["seconds"] == 2.0 and out["sustained_seconds"] == 5.0
    # without a GPU (or without nvidia-ml-py) no clock is invented: nothing, or NVML's own error
    assert "clocks" not in out or set(out["clocks"]) == {"error"}


def test_clock_reasons_decode_nvml_bits_from_the_knowledge_table() -> None:
    assert probe.clock_reasons(0) == []
    assert probe.clock_reasons(0x4) == [{"name": "sw-power-cap", "kind": "cap"}]
    assert [r["kind"] for r in probe.clock_reasons(0x1 | 0x20 | 0x80)] == ["idle", "slowdown", "slowdown"]
