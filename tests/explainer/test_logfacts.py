"""Facts a log states about its own machine (knowledge/log_facts.toml), read while scanning and used
where the snapshot knows nothing better. The lines are real (see each row's source); a test log
puts a device line from one thread above an error line from another."""

from __future__ import annotations

import io
import json
from pathlib import Path

from cudoctor.explainer import logfacts, scan
from cudoctor.facts.stated import from_stated
from tests.conftest import cudoctor

XLA_1070TI = (
    "2021-11-06 17:02:08.904480: I tensorflow/compiler/xla/service/service.cc:176]   StreamExecutor device "
    "(0): NVIDIA GeForce GTX 1070 Ti, Compute Capability 6.1\n"
)
SM61 = "ptxas fatal   : Value 'sm_61' is not defined for option 'gpu-name'\n"


def test_every_row_matches_its_examples_and_names_stated_keys() -> None:
    assert logfacts.validate() == []
    assert {r.id for r in logfacts.load()} >= {
        "tensorflow-device",
        "xla-streamexecutor-device",
        "nvidia-smi-header",
    }


def test_the_scanner_records_the_first_line_that_states_each_fact() -> None:
    tf = (
        "I tensorflow/core/common_runtime/gpu/gpu_device.cc:1525] Created device /job:localhost/replica:0/task:0/"
        "device:GPU:0 with 5468 MB memory:  -> device: 0, name: NVIDIA GeForce RTX 3070, pci bus id: 0000:01:00.0, "
        "compute capability: 8.6\n"
    )
    result = scan.scan(io.BytesIO((tf + XLA_1070TI).encode()))
    assert result.facts == {"gpu": (1, "NVIDIA GeForce RTX 3070"), "compute_capability": (1, "8.6")}
    assert scan.scan(io.BytesIO(b"epoch 1 loss 0.3\n")).facts == {}


def test_a_gpu_named_in_the_log_drives_the_rules_that_need_it(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(XLA_1070TI + SM61)
    doc = json.loads(cudoctor(["explain", str(log), "--no-live", "--format", "json"]).stdout)
    assert doc["stats"]["facts_from_log"]["gpu"] == {"line": 1, "value": "NVIDIA GeForce GTX 1070 Ti"}
    top = doc["causes"][0]
    assert top["id"] == "arch-unsupported" and any(
        "GTX 1070 Ti" in e and "12.9" in e for e in top["evidence"]
    )
    # without the device line the same error reads as a second, older toolkit
    log.write_text(SM61)
    doc = json.loads(cudoctor(["explain", str(log), "--no-live", "--format", "json"]).stdout)
    assert doc["causes"][0]["id"] == "multiple-toolkits" and doc["stats"]["facts_from_log"] == {}


def test_a_fact_the_snapshot_knows_wins_over_the_log(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(XLA_1070TI + SM61)
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"gpu": "NVIDIA GeForce RTX 3090"}))
    doc = json.loads(
        cudoctor(["explain", str(log), "--facts", str(facts), "--no-live", "--format", "json"]).stdout
    )
    # the stated 3090 is not the sm_61 the build asks for: the log's 1070 Ti is not taken as a fact
    assert "multiple-toolkits" in [c["id"] for c in doc["causes"][:2]]
    assert not any("GTX 1070 Ti" in e for c in doc["causes"] for e in c["evidence"] if e.startswith("fact"))


def test_torchs_capability_warning_names_the_gpu_it_warns_about() -> None:
    line = "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.\n"
    result = scan.scan(io.BytesIO(("UserWarning: \n" + line).encode()))
    assert result.facts == {"gpu": (2, "NVIDIA GeForce RTX 5090"), "compute_capability": (2, "sm_120")}
    assert [m.sig.id for m in result.matches] == ["arch-unsupported/torch-capability-not-compatible"]


def test_the_driver_cudnn_and_compiler_a_tensorflow_log_reports_drive_the_checks(tmp_path: Path) -> None:
    """TF's diagnostics name the kernel driver (not the libcuda line above it, which can differ),
    'Loaded cuDNN version 8005' is cuDNN 8.0.5, nvcc's release is a system toolkit; together with the
    error they name the driver floor of that toolkit."""
    log = tmp_path / "tf.log"
    log.write_text(
        "2023-11-15 00:16:57.452351: I tensorflow/compiler/xla/stream_executor/cuda/cuda_diagnostics.cc:199] "
        "libcuda reported version is: 470.223.2\n"
        "2018-08-13 11:01:51.739308: I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:192] kernel reported "
        "version is: 384.130.0\n"
        "2022-09-20 23:42:32.874717: I tensorflow/stream_executor/cuda/cuda_dnn.cc:369] Loaded cuDNN version 8005\n"
        "Cuda compilation tools, release 11.8, V11.8.89\n"
        "RuntimeError: CUDA driver version is insufficient for CUDA runtime version\n"
    )
    doc = json.loads(cudoctor(["explain", str(log), "--no-live", "--format", "json"]).stdout)
    assert {k: v["value"] for k, v in doc["stats"]["facts_from_log"].items()} == {
        "driver": "384.130.0",
        "cudnn": "8005",
        "system_cuda": "11.8",
    }
    top = doc["causes"][0]
    assert top["id"] == "driver-too-old"
    assert any("needs driver >= 450.80.02, but the driver is 384.130.0" in e for e in top["evidence"])


def test_a_rocm_build_s_unimplemented_kernel_version_is_no_driver() -> None:
    line = (
        "I external/local_xla/xla/stream_executor/rocm/rocm_diagnostics.cc:145] kernel reported version is: "
        "UNIMPLEMENTED: kernel reported driver version not implemented\n"
    )
    assert scan.scan(io.BytesIO(line.encode())).facts == {}


def test_cudnn_s_integer_version_is_read_as_its_release() -> None:
    assert from_stated({"cudnn": "8005"}).value("cudnn.versions") == ["8.0.5"]
    assert from_stated({"cudnn": "90300"}).value("cudnn.versions") == ["9.3.0"]
    assert from_stated({"cudnn": "8.9.2 and 7"}).value("cudnn.versions") == ["8.9.2", "7"]


def test_xlas_newer_device_line_brings_the_kernel_driver_and_cudnn() -> None:
    """XLA since 2025 prints 'StreamExecutor [N]: ...' with the kernel driver in brackets and cuDNN."""
    line = (
        "I0922 20:58:39.863502 1830646 service.cc:194]   StreamExecutor [0]: NVIDIA GB10, Compute Capability "
        "12.1a (Driver: 13.0.0[580.126.9]; Runtime: 12.9.0; Toolkit: 12.9.0; DNN: 9.21.1)\n"
    )
    assert scan.scan(io.BytesIO(line.encode())).facts == {
        "gpu": (1, "NVIDIA GB10"),
        "compute_capability": (1, "12.1"),
        "driver": (1, "580.126.9"),
        "cudnn": (1, "9.21.1"),
    }
    plain = "StreamExecutor [0]: NVIDIA GeForce GTX 1050 Ti, Compute Capability 6.1\n"
    assert scan.scan(io.BytesIO(plain.encode())).facts == {
        "gpu": (1, "NVIDIA GeForce GTX 1050 Ti"),
        "compute_capability": (1, "6.1"),
    }


def test_a_collect_env_block_pasted_above_the_error_brings_its_facts(tmp_path: Path) -> None:
    """Issue bodies paste collect_env next to the traceback: its driver, nvcc's CUDA, GPU 0 and torch
    lines become the log's facts (a CPU machine's 'No CUDA' lines give none)."""
    reports = Path(__file__).parents[1] / "fixtures" / "reports"
    log = tmp_path / "issue.txt"
    log.write_text(
        (reports / "collect_env_windows_titan_rtx.txt").read_text()
        + "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    )
    doc = json.loads(cudoctor(["explain", str(log), "--no-live", "--format", "json"]).stdout)
    assert {k: v["value"] for k, v in doc["stats"]["facts_from_log"].items()} == {
        "framework_version": "1.5.0+cu101",
        "framework_cuda": "10.1",
        "system_cuda": "10.1",
        "gpu": "TITAN RTX",
        "driver": "442.92",
        "os": "Microsoft Windows Server 2019 Standard",
    }
    log.write_text((reports / "collect_env_macos_cpu.txt").read_text())
    doc = json.loads(cudoctor(["explain", str(log), "--no-live", "--format", "json"]).stdout)
    # 'CUDA used to build PyTorch: None' is a CPU-only build
    assert set(doc["stats"]["facts_from_log"]) == {"framework_version", "framework_cuda", "os"}
    assert doc["stats"]["facts_from_log"]["framework_cuda"]["value"] == "None"
    assert doc["stats"]["facts_from_log"]["os"]["value"].startswith("macOS")
