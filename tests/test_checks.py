"""Every check: a case that fires, a healthy case that stays silent, a case with missing facts."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from cudoctor.facts import host, loader
from cudoctor.model import Severity, Snapshot, Status, absent
from tests.conftest import cudoctor, finding_ids, run_check, stated

A100_CU124 = {"gpu": "A100", "driver": "550.54.15", "framework_version": "torch 2.5.1+cu124"}
TORCH_LIBS_OK = {
    "libcudart.so.12": {
        "path": "/site/nvidia/cuda_runtime/lib/libcudart.so.12",
        "via": "rpath",
        "candidates": [["/site/nvidia/cuda_runtime/lib/libcudart.so.12", "rpath"]],
    }
}


def torch_cuda(**over: Any) -> dict[str, Any]:
    info = {
        "version": "2.5.1+cu124",
        "cuda": "12.4",
        "build": "cuda",
        "cudnn": "9.1.0.70",
        "location": "/site/torch",
        "libs": TORCH_LIBS_OK,
        "missing_needed": [],
        "broken": [],
    }
    info.update(over)
    return info


def outcome(check_id: str, snap: Snapshot) -> tuple[str, list[str]]:
    r = run_check(check_id, snap)
    return r.outcome, finding_ids(r)


# ---------------------------------------------------------------- driver layer
def test_driver_too_old_fires_with_values_in_title() -> None:
    snap = stated({"gpu": "A100", "driver": "470.82.01", "framework_version": "torch 2.5.1+cu124"})
    r = run_check("driver-too-old", snap)
    assert finding_ids(r) == ["driver-too-old"]
    assert "470.82.01" in r.findings[0].title and "525.60.13" in r.findings[0].title
    assert any("download.pytorch.org/whl/cu118" in s for s in r.findings[0].fix)


def test_a_driver_from_before_cuda_11_gets_a_torch_build_it_can_run() -> None:
    """A CUDA 10.2 driver (440.33) cannot run cu118 (nor anything through minor-version
    compatibility, which starts at 11): the newest release with a variant it runs is 1.12's cu102."""
    snap = stated({"driver": "440.33", "framework_version": "torch 2.1.0+cu121"})
    fix = run_check("driver-too-old", snap).findings[0].fix[0]
    assert "whl/cu102" in fix and "(10.2)" in fix
    r575 = run_check(
        "driver-too-old", stated({"driver": "575.51.03", "framework_version": "torch 2.13.0+cu130"})
    )
    assert "(12.9)" in r575.findings[0].fix[0] and "whl/cu129" in r575.findings[0].fix[0]


def test_driver_too_old_silent_with_minor_version_compatibility() -> None:
    assert outcome(
        "driver-too-old", stated({"driver": "525.60.13", "framework_version": "torch 2.5.1+cu124"})
    ) == ("ok", [])
    assert outcome("driver-too-old", stated(A100_CU124)) == ("ok", [])


def test_driver_given_as_a_bare_branch_is_compared_by_branch() -> None:
    # "nvidia-410" may be any 410.x: too old only when the whole branch is older than the floor
    cu100 = {"framework_version": "torch 1.0.0+cu100"}  # floor 410.48
    assert outcome("driver-too-old", stated({"driver": "410", **cu100})) == ("ok", [])
    assert outcome("driver-too-old", stated({"driver": "396", **cu100})) == ("findings", ["driver-too-old"])
    assert outcome("driver-too-old", stated({"driver": "410.10", **cu100})) == (
        "findings",
        ["driver-too-old"],
    )


def test_driver_too_old_unknown_without_driver_fact() -> None:
    assert outcome("driver-too-old", stated({"framework_version": "torch 2.5.1+cu124"}))[0] == "unknown"


def test_no_gpu_visible_cases() -> None:
    hidden = stated({"gpu": "A100"}, framework__torch=torch_cuda(), env={"CUDA_VISIBLE_DEVICES": ""})
    assert outcome("no-gpu-visible", hidden)[1] == ["cuda-visible-devices-hides-gpus"]
    bad_index = stated({"gpu": "A100"}, framework__torch=torch_cuda(), env={"CUDA_VISIBLE_DEVICES": "3"})
    assert outcome("no-gpu-visible", bad_index)[1] == ["cuda-visible-devices-bad-index"]
    no_driver = stated(
        {}, framework__torch=torch_cuda(), env={}, gpu__pci=[{"slot": "0000:01:00.0", "driver": "none"}]
    )
    no_driver.add(absent("driver.version", "test", "no driver"))
    assert outcome("no-gpu-visible", no_driver)[1] == ["no-driver"]
    healthy = stated(A100_CU124, env={"CUDA_VISIBLE_DEVICES": "0"})
    assert outcome("no-gpu-visible", healthy) == ("ok", [])
    utility_only = stated(
        {"gpu": "A100"},
        framework__torch=torch_cuda(),
        env={"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "utility"},
    )
    r = run_check("no-gpu-visible", utility_only)
    assert finding_ids(r) == ["container-without-gpu-compute"] and "compute" in r.findings[0].title
    with_compute = stated(
        A100_CU124, env={"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"}
    )
    assert outcome("no-gpu-visible", with_compute) == ("ok", [])
    no_gpus = stated({"gpu": "A100"}, framework__torch=torch_cuda(), env={"NVIDIA_VISIBLE_DEVICES": "void"})
    assert outcome("no-gpu-visible", no_gpus)[1] == ["container-without-gpu-compute"]
    assert outcome("no-gpu-visible", stated({}))[0] == "unknown"


@pytest.mark.parametrize(("rc", "ids"), [(100, ["cuinit-failed"]), (804, ["cuinit-failed"]), (0, [])])
def test_cuinit_failed(rc: int, ids: list[str]) -> None:
    assert outcome("cuinit-failed", stated({}, driver__cuinit=rc))[1] == ids
    assert outcome("cuinit-failed", stated({}))[0] == "unknown"


HGX_NODES = [
    "/dev/nvidia-nvswitch0",
    "/dev/nvidia-nvswitch1",
    "/dev/nvidia-nvswitchctl",
    "/dev/nvidia0",
    "/dev/nvidiactl",
]


def test_cuinit_802_names_the_fabric_manager_and_the_nvswitch_nodes() -> None:
    f = run_check("cuinit-failed", stated({}, driver__cuinit=802, gpu__device_nodes=HGX_NODES)).findings[0]
    assert "Fabric Manager" in f.title and f.cause == "no-gpu-visible"
    assert "2 NVSwitch device(s) in /dev" in f.evidence[1]
    assert f.fix[0].startswith("Check it: systemctl status nvidia-fabricmanager")
    without_nodes = run_check("cuinit-failed", stated({}, driver__cuinit=802)).findings[0]
    assert without_nodes.evidence == ("driver.cuinit = 802",)


def test_cuinit_999_points_at_a_missing_nvidia_uvm_node() -> None:
    nodes = ["/dev/nvidia0", "/dev/nvidiactl"]
    f = run_check("cuinit-failed", stated({}, driver__cuinit=999, gpu__device_nodes=nodes)).findings[0]
    assert "/dev/nvidia-uvm is missing" in f.evidence[1] and "sudo rmmod nvidia_uvm" in f.fix[0]
    present = run_check(
        "cuinit-failed", stated({}, driver__cuinit=999, gpu__device_nodes=[*nodes, "/dev/nvidia-uvm"])
    )
    assert len(present.findings[0].evidence) == 1


def test_a_cuinit_code_without_a_row_is_still_an_error() -> None:
    f = run_check("cuinit-failed", stated({}, driver__cuinit=217)).findings[0]
    assert f.severity is Severity.ERROR and f.title.startswith("cuInit returned 217")
    busy = run_check("cuinit-failed", stated({}, driver__cuinit=46)).findings[0]
    assert "CUDA_ERROR_DEVICES_UNAVAILABLE" in busy.title and "nvidia-smi -c DEFAULT" in busy.fix[0]


def test_nvml_driver_mismatch() -> None:
    assert outcome("nvml-driver-mismatch", stated({}, driver__nvml_error="Driver/library version mismatch"))[
        1
    ] == ["nvml-driver-mismatch"]
    assert outcome("nvml-driver-mismatch", stated({}, driver__nvml_error="Insufficient Permissions")) == (
        "ok",
        [],
    )
    assert outcome("nvml-driver-mismatch", stated({}))[0] == "unknown"


def test_toolkit_newer_than_driver() -> None:
    fired = outcome(
        "toolkit-newer-than-driver",
        stated({"driver": "470.82.01 (CUDA 11.4)", "system_cuda": "11.7 (nvcc/ptxas)"}),
    )[1]
    assert fired == ["ptxas-newer-than-driver-cuda"]
    too_old = outcome("toolkit-newer-than-driver", stated({"driver": "440.33", "system_cuda": "12.1"}))[1]
    assert "toolkit-needs-newer-driver" in too_old
    assert outcome("toolkit-newer-than-driver", stated({"driver": "550.54.15", "system_cuda": "12.4"})) == (
        "ok",
        [],
    )
    assert outcome("toolkit-newer-than-driver", stated({"system_cuda": "12.4"}))[0] == "unknown"


def test_driver_userspace_mismatch() -> None:
    snap = stated({"driver": "384.130 kernel module, 375.66 user-space libcuda"})
    assert outcome("driver-userspace-mismatch", snap)[1] == ["driver-userspace-mismatch"]
    assert outcome("driver-userspace-mismatch", stated({"driver": "550.54.15"}))[0] == "unknown"
    same = stated({"driver": "550.54.15"}, driver__userspace_version="550.54.15")
    assert outcome("driver-userspace-mismatch", same) == ("ok", [])


# ---------------------------------------------------------------- frameworks
def test_cpu_only_build() -> None:
    snap = stated({"gpu": "RTX 3090", "framework_version": "torch 2.3.0+cpu"})
    r = run_check("cpu-only-build", snap)
    assert finding_ids(r) == ["cpu-only-torch"] and "RTX 3090" in r.findings[0].title
    windows_tf = stated(
        {"gpu": "RTX 3090", "os": "Windows 11"}, framework__tensorflow={"version": "2.15.0", "build": "cpu"}
    )
    assert "native Windows" in run_check("cpu-only-build", windows_tf).findings[0].title
    assert outcome("cpu-only-build", stated(A100_CU124)) == ("ok", [])
    assert outcome("cpu-only-build", stated({"framework_version": "torch 2.3.0+cpu"}))[0] == "unknown"


def test_a_cpu_only_finding_names_only_its_own_framework_install() -> None:
    snap = stated({"gpu": "A100"}, framework__jax={"version": "0.4.30", "build": "cpu"})
    fix = run_check("cpu-only-build", snap).findings[0].fix
    assert fix == ("pip install -U 'jax[cuda12]'",)  # not the cause's PyTorch and TensorFlow steps


def test_findings_about_a_library_or_setting_stay_in_their_layer() -> None:
    from cudoctor.checks import finding
    from cudoctor.model import CheckResult, Report
    from cudoctor.render.areas import areas

    snap = stated({}, framework__torch={"version": "2.5.1+cu124", "build": "cuda", "cuda": "12.4"})
    left_on = finding(
        "setting-left-on",
        "setting-left-on",
        Severity.WARNING,
        "x",
        "Environment",
        subject="CUDA_LAUNCH_BLOCKING",
    )
    about_torch = finding(
        "cpu-only-torch", "cpu-only-build", Severity.WARNING, "y", "Frameworks", subject="torch"
    )
    titles = {
        a.title: [f.id for f in a.findings]
        for a in areas(Report(snap, [CheckResult("t", "findings", (left_on, about_torch))]))
    }
    assert titles["Environment"] == ["setting-left-on"] and "Other" not in titles
    assert titles["PyTorch 2.5.1+cu124"] == ["cpu-only-torch"]


def test_arch_unsupported_both_directions() -> None:
    too_new = stated({"gpu": "A100", "framework_version": "tensorflow-gpu 1.13.1"})
    assert outcome("arch-unsupported", too_new)[1] == ["arch-unsupported"]
    dropped = stated({"gpu": "GTX 1080", "framework_version": "torch 2.13.0+cu130"})
    r = run_check("arch-unsupported", dropped)
    assert (
        finding_ids(r) == ["arch-unsupported"]
        and "sm_61" not in r.findings[0].title
        and "7.5" in r.findings[0].title
    )
    assert any("cu126" in s for s in r.findings[0].fix)
    turing_cuda9 = stated(
        {"gpu": "RTX 2080 Ti", "framework_version": "1.0.1", "framework_cuda": "9.0"}, hint="torch"
    )
    assert outcome("arch-unsupported", turing_cuda9)[1] == ["arch-newer-than-build-cuda"]
    fatbin = stated({"gpu": "H100"}, framework__torch=torch_cuda(archs=["sm_80", "compute_80"]))
    assert outcome("arch-unsupported", fatbin)[1] == ["arch-ptx-jit-only"]
    assert outcome("arch-unsupported", stated(A100_CU124)) == ("ok", [])
    assert outcome("arch-unsupported", stated({"framework_version": "torch 2.5.1+cu124"}))[0] == "unknown"


def test_broken_install() -> None:
    broken = stated({}, framework__torch=torch_cuda(broken=["/site/torch/lib/libtorch_cpu.so is missing"]))
    r = run_check("broken-install", broken)
    assert finding_ids(r) == ["broken-torch"] and "libtorch_cpu.so" in r.findings[0].title
    meta = stated(
        {},
        python__package_problems=[
            "/site/foo-1.0.dist-info: unreadable metadata (METADATA has no Name or Version header)"
        ],
    )
    assert outcome("broken-install", meta)[1] == ["broken-metadata"]
    assert outcome("broken-install", stated({}, framework__torch=torch_cuda())) == ("ok", [])
    assert outcome("broken-install", stated({}))[0] == "unknown"


# ---------------------------------------------------------------- libraries
def test_cuda_libs_missing_and_cudnn_redirect() -> None:
    libs = {
        "libcublas.so.12": {"path": None, "via": "", "candidates": []},
        "libcudnn.so.9": {"path": None, "via": "", "candidates": []},
    }
    r = run_check("cuda-libs-missing", stated({}, framework__torch=torch_cuda(libs=libs)))
    assert sorted(finding_ids(r)) == ["lib-missing-cublas", "lib-missing-cudnn"]
    assert {f.cause for f in r.findings} == {"cuda-libs-missing", "cudnn-mismatch"}
    assert r.findings[0].fix[1] == (
        "Or bring all of PyTorch's CUDA libraries: pip install --force-reinstall 'torch==2.5.1+cu124'"
        " --index-url https://download.pytorch.org/whl/cu124  (torch's Linux wheels depend on the nvidia-* library wheels)"
    )
    assert (
        r.findings[0].fix[2]
        == "Or install the CUDA 12.x toolkit and put its lib64 directory on LD_LIBRARY_PATH"
    )
    assert r.findings[1].fix[0] == "pip install 'nvidia-cudnn-cu12==9.*'  (provides libcudnn.so.9)"
    lost8 = {"libcudnn.so.8": {"path": None, "via": "", "candidates": []}}
    cu11 = torch_cuda(version="2.0.1+cu118", cuda="11.8", libs=lost8)
    [cudnn8] = run_check("cuda-libs-missing", stated({}, framework__torch=cu11)).findings
    assert cudnn8.fix[0] == "pip install 'nvidia-cudnn-cu11==8.*'  (provides libcudnn.so.8)"
    lost7 = {"libcudnn.so.7": {"path": None, "via": "", "candidates": []}}
    cu10 = dict(cu11, version="1.8.1+cu102", cuda="10.2", libs=lost7)
    [cudnn7] = run_check("cuda-libs-missing", stated({}, framework__torch=cu10)).findings
    assert (
        cudnn7.fix[0].startswith("Install cuDNN 7 for CUDA 10.2") and len(cudnn7.fix) == 3
    )  # no wheel, no extra
    tf213 = {
        "version": "2.13.0",
        "build": "cuda",
        "cuda": "11.8",
        "missing_needed": [{"name": "libcudart.so.11.0"}],
    }
    [old_tf] = run_check("cuda-libs-missing", stated({}, framework__tensorflow=tf213)).findings
    assert not any("and-cuda" in step for step in old_tf.fix)  # TF 2.13 has no [and-cuda] extra
    tf215 = dict(tf213, version="2.15.0", cuda="12.2", missing_needed=[{"name": "libcublas.so.12"}])
    [new_tf] = run_check("cuda-libs-missing", stated({}, framework__tensorflow=tf215)).findings
    assert "pip install 'tensorflow[and-cuda]==2.15.0'" in new_tf.fix[1] and "torch" not in " ".join(
        new_tf.fix
    )
    assert outcome("cuda-libs-missing", stated({}, framework__torch=torch_cuda())) == ("ok", [])
    assert outcome("cuda-libs-missing", stated({}))[0] == "unknown"


def test_library_shadowed_by_ld_library_path() -> None:
    shadow = {
        "libnvJitLink.so.12": {
            "path": "/usr/local/cuda-12.1/lib64/libnvJitLink.so.12",
            "via": "LD_LIBRARY_PATH",
            "candidates": [
                ["/usr/local/cuda-12.1/lib64/libnvJitLink.so.12", "LD_LIBRARY_PATH"],
                ["/site/nvidia/nvjitlink/lib/libnvJitLink.so.12", "runpath"],
            ],
        }
    }
    r = run_check("library-shadowed", stated({}, framework__torch=torch_cuda(libs=shadow)))
    assert finding_ids(r) == ["shadowed-nvJitLink"] and "/usr/local/cuda-12.1/lib64" in r.findings[0].fix[0]
    assert outcome("library-shadowed", stated({}, framework__torch=torch_cuda())) == ("ok", [])
    assert outcome("library-shadowed", stated({}))[0] == "unknown"


def test_library_shadowed_by_ld_preload_says_to_drop_the_preload() -> None:
    preloaded = "/opt/old-cuda/lib64/libcublasLt.so.12"
    shadow = {
        "libcublasLt.so.12": {
            "path": preloaded,
            "via": "preloaded",
            "candidates": [
                [preloaded, "preloaded"],
                ["/site/nvidia/cublas/lib/libcublasLt.so.12", "runpath"],
            ],
        }
    }
    f = run_check("library-shadowed", stated({}, framework__torch=torch_cuda(libs=shadow))).findings[0]
    assert f"from {preloaded} (LD_PRELOAD)" in f.title
    assert f.fix[0].startswith(f"Remove {preloaded} from LD_PRELOAD")


def test_cudnn_version_mismatch() -> None:
    snap = stated(
        {"cudnn": "8.9.7", "framework_version": "torch 2.5.1+cu124"},
        framework__torch=torch_cuda(cudnn="9.1.0.70"),
    )
    assert outcome("cudnn-version-mismatch", snap)[1] == ["cudnn-version-mismatch"]
    ok = stated({"cudnn": "9.3.0"}, framework__torch=torch_cuda(cudnn="9.1.0.70"))
    assert outcome("cudnn-version-mismatch", ok) == ("ok", [])
    assert outcome("cudnn-version-mismatch", stated({}, framework__torch=torch_cuda()))[0] == "unknown"


def test_tf_cuda_mismatch() -> None:
    snap = stated({"framework_version": "tensorflow-gpu 1.13.1", "system_cuda": "10.1"})
    r = run_check("tf-cuda-mismatch", snap)
    assert finding_ids(r) == ["tf-cuda-mismatch"] and "10.0" in r.findings[0].title
    assert outcome(
        "tf-cuda-mismatch", stated({"framework_version": "tensorflow-gpu 1.13.1", "system_cuda": "10.0"})
    ) == ("ok", [])
    assert outcome("tf-cuda-mismatch", stated({"framework_version": "tensorflow-gpu 1.13.1"}))[0] == "unknown"


# ---------------------------------------------------------------- compilers
def _toolkit(version: str, ptxas: str | None = "/opt/cuda/bin/ptxas", **more: Any) -> dict[str, Any]:
    return {
        "root": "/opt/cuda",
        "realpath": "/opt/cuda",
        "version": version,
        "ptxas": ptxas,
        "libdevice": "/opt/cuda/nvvm/libdevice/libdevice.10.bc",
        **more,
    }


JAX_CUDA12 = {"version": "0.6.1", "build": "cuda", "cuda": "12.0", "plugins": {"jax-cuda12-plugin": "0.6.1"}}


def test_ptxas_missing() -> None:
    snap = stated(
        {},
        framework__jax=JAX_CUDA12,
        cuda__toolkits=[],
        cuda__path_tools={"ptxas": {"first": None}},
        python__nvidia_wheels=[],
    )
    assert outcome("ptxas-missing", snap)[1] == ["ptxas-missing"]
    ok = stated({}, framework__jax=JAX_CUDA12, cuda__toolkits=[_toolkit("12.4")], python__nvidia_wheels=[])
    assert outcome("ptxas-missing", ok) == ("ok", [])
    assert outcome("ptxas-missing", stated({}, framework__jax=JAX_CUDA12))[0] == "unknown"


def test_an_older_ptxas_step_names_only_a_compiler_wheel_that_exists() -> None:
    """NVIDIA's nvcc wheels start at CUDA 11.7 (knowledge/cuda_wheels.toml): a CUDA 9.0 driver gets a
    toolkit, a CUDA 11.4 one too, a CUDA 12.2 one the wheel of exactly that minor."""

    def step(driver: str, toolkit: str) -> str:
        snap = stated({"driver": driver, "system_cuda": toolkit})
        return run_check("toolkit-newer-than-driver", snap).findings[0].fix[0]

    assert "pip install" not in step("384.130", "11.8") and "CUDA 9.0 toolkit's bin" in step(
        "384.130", "11.8"
    )
    assert "pip install" not in step("470.82.01 (CUDA 11.4)", "11.7")
    assert "pip install 'nvidia-cuda-nvcc-cu12==12.2.*'" in step("535.54.03 (CUDA 12.2)", "12.8")


def test_ptxas_version_mismatch() -> None:
    tools = {
        "ptxas": {
            "first": "/opt/cuda/bin/ptxas",
            "resolved": "/opt/cuda/bin/ptxas",
            "all": ["/opt/cuda/bin/ptxas"],
        }
    }
    old = stated(
        {},
        framework__jax=JAX_CUDA12,
        cuda__toolkits=[_toolkit("11.2", ptxas_version={"version": "11.2.152"})],
        cuda__path_tools=tools,
    )
    assert outcome("ptxas-version-mismatch", old)[1] == ["ptxas-too-old"]
    newer = stated(
        {"driver": "550.54.15 (CUDA 12.4)"},
        framework__jax=JAX_CUDA12,
        cuda__toolkits=[_toolkit("12.8", ptxas_version={"version": "12.8.93"})],
        cuda__path_tools=tools,
    )
    assert outcome("ptxas-version-mismatch", newer)[1] == ["ptxas-newer-than-driver"]
    on_122 = stated(
        {"driver": "535.54.03 (CUDA 12.2)"},
        framework__jax=JAX_CUDA12,
        cuda__toolkits=[_toolkit("12.8", ptxas_version={"version": "12.8.93"})],
        cuda__path_tools=tools,
    )
    assert "'nvidia-cuda-nvcc-cu12==12.2.*'" in run_check("ptxas-version-mismatch", on_122).findings[0].fix[0]
    ok = stated(
        {"driver": "550.54.15 (CUDA 12.4)"},
        framework__jax=JAX_CUDA12,
        cuda__toolkits=[_toolkit("12.4", ptxas_version={"version": "12.4.131"})],
        cuda__path_tools=tools,
    )
    assert outcome("ptxas-version-mismatch", ok) == ("ok", [])
    assert outcome("ptxas-version-mismatch", stated({}, framework__jax=JAX_CUDA12))[0] == "unknown"


def test_libdevice_missing() -> None:
    snap = stated(
        {},
        framework__jax=JAX_CUDA12,
        cuda__toolkits=[_toolkit("12.4", libdevice=None)],
        env={},
        python__nvidia_wheels=[],
    )
    assert outcome("libdevice-missing", snap)[1] == ["libdevice-missing"]
    flagged = stated(
        {},
        framework__jax=JAX_CUDA12,
        cuda__toolkits=[_toolkit("12.4", libdevice=None)],
        env={"XLA_FLAGS": "--xla_gpu_cuda_data_dir=/opt/cuda"},
        python__nvidia_wheels=[],
    )
    assert outcome("libdevice-missing", flagged) == ("ok", [])
    assert outcome("libdevice-missing", stated({}, framework__jax=JAX_CUDA12))[0] == "unknown"


def test_ptxas_broken() -> None:
    snap = stated(
        {},
        cuda__toolkits=[
            _toolkit("12.4", ptxas_version={"error": "/opt/cuda/bin/ptxas --version: timed out after 5 s"})
        ],
    )
    r = run_check("ptxas-broken", snap)
    assert finding_ids(r) == ["ptxas-broken"] and "/opt/cuda/bin/ptxas" in r.findings[0].title
    assert outcome(
        "ptxas-broken", stated({}, cuda__toolkits=[_toolkit("12.4", ptxas_version={"version": "12.4.131"})])
    ) == ("ok", [])
    assert outcome("ptxas-broken", stated({}))[0] == "unknown"


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


# ---------------------------------------------------------------- memory and health
GPU_BUSY = {
    "index": 0,
    "name": "NVIDIA A100",
    "cc": "8.0",
    "memory_total_mib": 81920,
    "memory_used_mib": 79000,
    "processes": [{"pid": 4242, "used_mib": 78000}],
}


def test_gpu_memory_held_and_preallocation() -> None:
    tf = {"version": "2.15.0", "build": "cuda", "cuda": "12.2"}
    snap = stated({}, gpu__devices=[GPU_BUSY], framework__tensorflow=tf, env={})
    assert outcome("gpu-memory-held", snap)[1] == ["gpu-memory-held"]
    assert outcome("preallocation-with-shared-gpu", snap)[1] == ["tensorflow-preallocates"]
    grown = stated(
        {}, gpu__devices=[GPU_BUSY], framework__tensorflow=tf, env={"TF_FORCE_GPU_ALLOW_GROWTH": "true"}
    )
    assert outcome("preallocation-with-shared-gpu", grown) == ("ok", [])
    idle = dict(GPU_BUSY, memory_used_mib=10, processes=[])
    assert outcome("gpu-memory-held", stated({}, gpu__devices=[idle])) == ("ok", [])
    assert outcome("gpu-memory-held", stated({}))[0] == "unknown"


def test_gpu_memory_held_never_says_to_stop_a_desktop() -> None:
    """Graphics-only processes (type G: Xorg, a shell) hold no CUDA context to stop: they are named
    but get no kill step; an idle second GPU is offered instead."""
    xorg = {"pid": 1011, "type": "G", "name": "/usr/lib/xorg/Xorg", "used_mib": 60000}
    busy = dict(GPU_BUSY, processes=[xorg])
    idle = dict(GPU_BUSY, index=1, memory_used_mib=4, processes=[])
    [held] = run_check("gpu-memory-held", stated({}, gpu__devices=[busy, idle])).findings
    assert "pid 1011 /usr/lib/xorg/Xorg" in held.title
    assert not any("kill" in step for step in held.fix)
    assert "export CUDA_VISIBLE_DEVICES=1" in held.fix[1]


def test_gpu_memory_held_on_two_gpus_is_one_finding() -> None:
    """Two busy GPUs, one whose holders this container cannot see: one finding whose kill step
    names the biggest process of each GPU (the two biggest when only one GPU is busy), and the
    holders it cannot see are still said."""
    two = dict(GPU_BUSY, processes=[{"pid": 4242, "used_mib": 70000}, {"pid": 4343, "used_mib": 8000}])
    hidden = dict(GPU_BUSY, index=1, memory_used_mib=50000, processes=[])
    [held] = run_check("gpu-memory-held", stated({}, gpu__devices=[two, hidden])).findings
    assert held.title.startswith(
        "GPUs 0, 1 (NVIDIA A100) have 50000 to 79000 of 81920 MiB in use by 2 processes"
    )
    assert held.fix == ("If pid 4242 is left over from an earlier run, stop it: kill 4242",)
    [alone] = run_check("gpu-memory-held", stated({}, gpu__devices=[two])).findings
    assert alone.fix == ("If pids 4242, 4343 are left over from an earlier run, stop them: kill 4242 4343",)
    [unseen] = run_check("gpu-memory-held", stated({}, gpu__devices=[hidden])).findings
    assert unseen.title.endswith("in use by processes this container cannot see")


def test_gpu_memory_errors() -> None:
    bad = dict(GPU_BUSY, ecc_uncorrected_volatile=3, remapped_rows=[0, 2, 0, 1])
    assert outcome("gpu-memory-errors", stated({}, gpu__devices=[bad]))[1] == ["gpu-memory-errors"]
    good = dict(GPU_BUSY, ecc_uncorrected_volatile=0, remapped_rows=[0, 0, 0, 0])
    assert outcome("gpu-memory-errors", stated({}, gpu__devices=[good])) == ("ok", [])
    assert outcome("gpu-memory-errors", stated({}))[0] == "unknown"


REPORTS = Path(__file__).parent / "fixtures" / "reports"


def test_gpu_compute_mode_on_real_nvidia_smi_reports() -> None:
    from cudoctor.importers import load_report

    # A T4 in Exclusive_Process whose one process is the MPS server: the intended setup, silent.
    t4 = load_report(str(REPORTS / "nvidia_smi_q_t4_exclusive_mps.txt"))
    assert outcome("gpu-compute-mode", t4) == ("ok", [])
    # Default mode with three graphics processes (nvidia-smi -q -x): silent.
    rtx = load_report(str(REPORTS / "nvidia_smi_q_x_rtx3080ti.xml"))
    assert outcome("gpu-compute-mode", rtx) == ("ok", [])
    # The same T4 with a training process in place of the MPS server: nobody else gets a context.
    gpu = dict(t4.value("gpu.devices")[0], processes=[{"pid": 4242, "name": "python", "type": "C"}])
    r = run_check("gpu-compute-mode", stated({}, gpu__devices=[gpu]))
    assert finding_ids(r) == ["gpu-compute-mode"] and r.findings[0].severity.value == "warning"
    assert "busy or unavailable" in r.findings[0].title and "pid 4242 (python)" in r.findings[0].title
    assert r.findings[0].fix[0].startswith("sudo nvidia-smi -i 0 -c DEFAULT")


def test_gpu_compute_mode_prohibited_and_missing_facts() -> None:
    prohibited = dict(GPU_BUSY, compute_mode="Prohibited", processes=[])
    r = run_check("gpu-compute-mode", stated({}, gpu__devices=[prohibited]))
    assert finding_ids(r) == ["gpu-compute-mode"] and r.findings[0].severity.value == "error"
    assert r.findings[0].cause == "no-gpu-visible"
    idle_exclusive = dict(GPU_BUSY, compute_mode="Exclusive_Process", processes=[])
    assert outcome("gpu-compute-mode", stated({}, gpu__devices=[idle_exclusive])) == ("ok", [])
    # A snapshot recorded before compute mode was collected: unknown, not a silent pass.
    assert outcome("gpu-compute-mode", stated({}, gpu__devices=[GPU_BUSY]))[0] == "unknown"
    assert outcome("gpu-compute-mode", stated({}))[0] == "unknown"


# ---------------------------------------------------------------- CPU
def test_duplicate_openmp() -> None:
    libs = [
        {"kind": "openmp", "lib": "libgomp.so.1", "path": "/site/torch/lib/libgomp.so.1", "package": "torch"},
        {
            "kind": "openmp",
            "lib": "libiomp5.so",
            "path": "/site/../../libiomp5.so",
            "package": "intel-openmp",
        },
    ]
    assert outcome("duplicate-openmp", stated({}, cpu__runtime_libs=libs))[1] == ["duplicate-openmp"]
    assert outcome("duplicate-openmp", stated({}, cpu__runtime_libs=libs[:1])) == ("ok", [])
    assert outcome("duplicate-openmp", stated({}))[0] == "unknown"


def test_cpu_lacks_avx() -> None:
    tf = {"version": "2.15.0", "build": "cpu"}
    snap = stated(
        {},
        host__cpu={"model": "Intel Celeron N4000", "flags": ["sse4_1", "sse4_2"], "all_flags_known": True},
        framework__tensorflow=tf,
    )
    assert outcome("cpu-lacks-avx", snap)[1] == ["cpu-lacks-avx"]
    avx = stated(
        {},
        host__cpu={"model": "EPYC", "flags": ["avx", "avx2"], "all_flags_known": True},
        framework__tensorflow=tf,
    )
    assert outcome("cpu-lacks-avx", avx) == ("ok", [])
    assert outcome("cpu-lacks-avx", stated({}))[0] == "unknown"


def test_crashing_check_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    from cudoctor import checks

    chk = next(c for c in checks.all_checks() if c.id == "gpu-memory-held")
    broken = checks.Check(chk.id, chk.cause, chk.layer, chk.requires, lambda snap: 1 / 0, chk.doc)  # type: ignore[arg-type,return-value]
    r = checks.run_one(broken, stated({}, gpu__devices=[GPU_BUSY]))
    assert r.outcome == "crashed" and "ZeroDivisionError" in r.detail


def test_absent_fact_skips_check() -> None:
    snap = stated({})
    snap.add(absent("gpu.devices", "test", "no driver"))
    assert run_check("gpu-memory-held", snap).outcome == "skipped"
    assert snap.status("gpu.devices") is Status.ABSENT


def test_wsl_linux_driver() -> None:
    bad = {"libcuda.so.1": ["/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib/wsl/lib/libcuda.so.1"]}
    assert outcome("wsl-linux-driver", stated({"os": "Ubuntu 22.04 (WSL2)"}, loader__ldcache=bad))[1] == [
        "wsl-linux-driver"
    ]
    good = {"libcuda.so.1": ["/usr/lib/wsl/lib/libcuda.so.1"]}
    assert outcome("wsl-linux-driver", stated({"os": "Ubuntu 22.04 (WSL2)"}, loader__ldcache=good)) == (
        "ok",
        [],
    )
    assert outcome("wsl-linux-driver", stated({"os": "Ubuntu 22.04"}, loader__ldcache=bad)) == ("ok", [])
    assert outcome("wsl-linux-driver", stated({}))[0] == "unknown"


# `ldconfig -p | grep libcuda` inside WSL2, as posted in microsoft/WSL#8587 (libcuda.so missing from the cache)
WSL_8587_LDCONFIG = """\
\tlibcudart.so.11.0 (libc6,x86-64) => /usr/local/cuda/targets/x86_64-linux/lib/libcudart.so.11.0
\tlibcudart.so (libc6,x86-64) => /usr/local/cuda/targets/x86_64-linux/lib/libcudart.so
\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/wsl/lib/libcuda.so.1
"""


def test_wsl_libcuda_not_found() -> None:
    wsl = {"os": "Ubuntu 22.04 (WSL2)"}
    cache = loader.parse_ldconfig(WSL_8587_LDCONFIG)
    r = run_check("wsl-libcuda-not-found", stated(wsl, loader__ldcache=cache))
    assert finding_ids(r) == ["wsl-libcuda-not-found"] and r.findings[0].severity.value == "warning"
    assert "libcuda.so: cannot open shared object file" in r.findings[0].title
    assert r.findings[0].fix[0].startswith("export LD_LIBRARY_PATH=/usr/lib/wsl/lib:")
    none = run_check("wsl-libcuda-not-found", stated(wsl, loader__ldcache={}))
    assert none.findings[0].severity.value == "error"
    on_path = {"LD_LIBRARY_PATH": [{"path": "/usr/lib/wsl/lib/", "exists": True, "readable": True}]}
    assert outcome("wsl-libcuda-not-found", stated(wsl, loader__ldcache=cache, env__paths=on_path)) == (
        "ok",
        [],
    )
    full = dict(cache, **{"libcuda.so": ["/usr/lib/wsl/lib/libcuda.so"]})
    assert outcome("wsl-libcuda-not-found", stated(wsl, loader__ldcache=full)) == ("ok", [])
    assert outcome("wsl-libcuda-not-found", stated({"os": "Ubuntu 22.04"}, loader__ldcache={})) == ("ok", [])
    assert outcome("wsl-libcuda-not-found", stated(wsl))[0] == "unknown"


def test_torch_extension_toolkit_from_stated_facts() -> None:
    """A report: 'torch 2.1.0+cu118, system CUDA 12.1' (the only toolkit known is the stated one)."""
    r = run_check(
        "torch-extension-toolkit", stated({"framework_version": "2.1.0+cu118", "system_cuda": "12.1"})
    )
    assert finding_ids(r) == ["torch-extension-toolkit"]
    assert "the stated system CUDA" in r.findings[0].title and "whl/cu121" in r.findings[0].fix[1]
    same = stated({"framework_version": "2.1.0+cu121", "system_cuda": "12.4"})
    assert outcome("torch-extension-toolkit", same) == ("ok", [])
    assert outcome(
        "torch-extension-toolkit", stated({"framework_version": "2.1.0+cpu", "system_cuda": "12.1"})
    ) == ("ok", [])
    assert outcome("torch-extension-toolkit", stated({"framework_version": "2.1.0+cu118"}))[0] == "unknown"


# ---------------------------------------------------------------- companions (torchvision & co.)
def test_version_specifiers() -> None:
    from cudoctor.versions import satisfies

    assert satisfies("2.13.0+cpu", "==2.13.0") is True
    assert satisfies("2.14.0", "==2.13.0") is False
    assert satisfies("0.4.28", "<=0.4.30,>=0.4.27") is True
    assert satisfies("8.3.1", "!=8.3.*") is False
    assert satisfies("2.0", "~=1.4") is False and satisfies("1.9", "~=1.4") is True
    assert satisfies("2.13.0", "^2") is None  # not PEP 440: cannot tell, so no finding


def _site_with(tmp_path: Path, torchvision_metadata: str) -> Snapshot:
    """A site-packages made of the real torch dist-info of this environment and a real torchvision METADATA."""
    import shutil
    import sys

    from cudoctor.facts import packages

    torch = next((d for d in packages.scan(sys.path)[0] if d.name == "torch"), None)
    if torch is None:
        pytest.skip("torch is not installed here")
    site = tmp_path / "site"
    shutil.copytree(torch.dist_info, site / Path(torch.dist_info).name)
    tv = site / f"{Path(torchvision_metadata).stem}.dist-info"
    tv.mkdir()
    shutil.copy(REPORTS.parent / "metadata" / torchvision_metadata, tv / "METADATA")
    dists, _ = packages.scan([str(site)])
    return stated({}, python__packages={d.name: d.version for d in dists}, python__pins=packages.pins(dists))


def test_companion_version_mismatch_with_real_wheel_metadata(tmp_path: Path) -> None:
    # torchvision 0.28.0 pins torch (==2.13.0): the torch installed here. Silent.
    assert outcome(
        "companion-version-mismatch", _site_with(tmp_path / "a", "torchvision-0.28.0.METADATA")
    ) == (
        "ok",
        [],
    )
    # torchvision 0.29.2 needs torch (>=2.14.0): what `pip install -U torchvision` alone leaves behind.
    r = run_check("companion-version-mismatch", _site_with(tmp_path / "b", "torchvision-0.29.2.METADATA"))
    assert finding_ids(r) == ["companion-version-mismatch"]
    assert r.findings[0].title.startswith("torchvision 0.29.2 was built for torch>=2.14.0, but torch 2.13.0")
    assert "pip install 'torch==2.13.0" in r.findings[0].fix[0]
    assert not any("LD_LIBRARY_PATH" in s for s in r.findings[0].fix)  # not a loader-path problem
    assert outcome("companion-version-mismatch", stated({}))[0] == "unknown"


@pytest.mark.parametrize(
    ("requires", "have", "index"),
    [
        ("torch", "2.13.0+cpu", " --index-url https://download.pytorch.org/whl/cpu"),
        ("torch", "2.8.0+cu128", " --index-url https://download.pytorch.org/whl/cu128"),
        ("torch", "2.8.0", ""),  # PyPI's default build: PyPI's companions match it
        ("jaxlib", "0.4.30+cuda12.cudnn89", ""),
    ],
)
def test_a_companion_is_installed_from_the_index_of_torchs_own_build(
    requires: str, have: str, index: str
) -> None:
    from cudoctor.checks.build import _build_index

    assert _build_index(requires, have) == index


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


def test_preallocation_ignores_a_desktop_s_graphics_processes() -> None:
    """The real RTX 3080 Ti report has three type-G processes (Xorg, a shell): no CUDA context,
    so TensorFlow preallocating is no conflict; a compute process on the same GPU is."""
    from cudoctor.importers import load_report

    tf = {"version": "2.15.0", "build": "cuda", "cuda": "12.2"}
    rtx = load_report(str(REPORTS / "nvidia_smi_q_x_rtx3080ti.xml")).value("gpu.devices")
    assert len(rtx[0]["processes"]) == 3 and {p["type"] for p in rtx[0]["processes"]} == {"G"}
    desktop = stated({}, gpu__devices=rtx, framework__tensorflow=tf, env={})
    assert outcome("preallocation-with-shared-gpu", desktop) == ("ok", [])
    job = dict(rtx[0], processes=[*rtx[0]["processes"], {"pid": 4242, "name": "python", "type": "C"}])
    shared = stated({}, gpu__devices=[job], framework__tensorflow=tf, env={})
    r = run_check("preallocation-with-shared-gpu", shared)
    assert finding_ids(r) == ["tensorflow-preallocates"]
    assert r.findings[0].evidence == ("gpu 0: 1 process(es)",)


# ---------------------------------------------------------------- NumPy 2 ABI
def test_numpy_abi_mismatch_fires_for_torch_built_against_numpy_1() -> None:
    """openfederatedlearning#999: torch 2.2.2 with NumPy 2 - 'Numpy is not available'."""
    snap = stated({}, python__packages={"torch": "2.2.2+cpu", "numpy": "2.0.0"})
    r = run_check("numpy-abi-mismatch", snap)
    assert finding_ids(r) == ["numpy-abi-mismatch"] and r.findings[0].cause == "binary-incompatible"
    assert "torch 2.2.2+cpu" in r.findings[0].title and "NumPy 2.0.0" in r.findings[0].title
    assert r.findings[0].fix[0] == "pip install 'numpy<2'" and "'torch>=2.3.0'" in r.findings[0].fix[1]
    tf = stated({}, python__packages={"tensorflow-cpu": "2.17.1", "numpy": "2.1.3"})
    assert outcome("numpy-abi-mismatch", tf)[1] == ["numpy-abi-mismatch"]
    jax_old = stated({}, python__packages={"jaxlib": "0.4.25", "jax": "0.4.25", "numpy": "2.0.1"})
    assert outcome("numpy-abi-mismatch", jax_old)[1] == ["numpy-abi-mismatch"]
    jax_new = stated({}, python__packages={"jaxlib": "0.4.26", "jax": "0.4.26", "numpy": "2.0.1"})
    assert outcome("numpy-abi-mismatch", jax_new) == ("ok", [])
    # opencv-python/opencv#943: the rolling build before 4.10.0.84 was built against NumPy 1.x
    cv_old = stated({}, python__packages={"opencv-python-headless": "4.10.0.82", "numpy": "2.0.0"})
    r = run_check("numpy-abi-mismatch", cv_old)
    assert (
        finding_ids(r) == ["numpy-abi-mismatch"]
        and "'opencv-python-headless>=4.10.0.84'" in r.findings[0].fix[1]
    )
    cv_new = stated({}, python__packages={"opencv-python": "4.10.0.84", "numpy": "2.0.0"})
    assert outcome("numpy-abi-mismatch", cv_new) == ("ok", [])


def test_numpy_abi_mismatch_is_silent_on_this_real_environment_and_on_numpy_1() -> None:
    """This venv really has torch 2.13, tensorflow-cpu 2.21 and NumPy 2 (all built against NumPy 2)."""
    import sys

    from cudoctor.facts import packages

    dists, _ = packages.scan(sys.path)
    real = {d.name: d.version for d in dists}
    assert real["numpy"].startswith("2.") and "torch" in real
    assert outcome("numpy-abi-mismatch", stated({}, python__packages=real)) == ("ok", [])
    old = stated({}, python__packages={"torch": "2.2.2+cpu", "numpy": "1.26.4"})
    assert outcome("numpy-abi-mismatch", old) == ("ok", [])
    assert outcome("numpy-abi-mismatch", stated({}))[0] == "unknown"


SHM_64_MIB = {"path": "/dev/shm", "size_bytes": 64 << 20, "free_bytes": 60 << 20}


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
