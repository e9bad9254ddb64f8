"""Checks of the driver layer (checks/driver.py): a driver too old for the build, cuInit failures, no GPU
visible, NVML and userspace mismatches. Each: a case that fires, a healthy case, missing facts."""

from __future__ import annotations

import pytest

from cudoctor.model import Severity, absent
from tests.checks.helpers import A100_CU124, outcome, torch_cuda
from tests.conftest import finding_ids, run_check, stated


# ---------------------------------------------------------------- driver layer
def test_driver_too_old_fires_with_values_in_title() -> None:
    snap = stated({"gpu": "A100", "driver": "470.82.01", "framework_version": "torch 2.5.1+cu124"})
    r = run_check("driver-too-old", snap)
    assert finding_ids(r) == ["driver-too-old"]
    assert "470.82.01" in r.findings[0].title and "525.60.13" in r.findings[0].title
    assert any("download.pytorch.org/whl/cu118" in s for s in r.findings[0].fix)


def test_a_vllm_stated_alone_is_held_to_the_torch_it_pins_and_keeps_it() -> None:
    """vllm 0.4.3 pins torch 2.3.0 (+cu121 by default): a 470 driver is too old, the finding says whose torch it is,
    and no fix swaps torch under vLLM's kernels (a cu118 torch would break them)."""
    from cudoctor.fixes import planner

    snap = stated({"driver": "470.82", "gpu": "Tesla T4", "framework_version": "vllm 0.4.3"})
    r = run_check("driver-too-old", snap)
    assert finding_ids(r) == ["driver-too-old"] and "which vllm 0.4.3 pins" in r.findings[0].title
    steps = planner.plan("driver-too-old", r.findings[0].fix, planner.context(snap))  # what check prints
    assert not any("download.pytorch.org" in s for s in steps) and any("525.60.13" in s for s in steps)
    healthy = stated({"driver": "550.54.14", "gpu": "Tesla T4", "framework_version": "vllm 0.4.3"})
    assert finding_ids(run_check("driver-too-old", healthy)) == []


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


def test_a_cuda_build_beside_only_gpus_cuda_cannot_use() -> None:
    igpu = stated(
        {"gpu": "integrated Intel Iris Xe Graphics (no NVIDIA GPU)", "framework_version": "torch 2.0.0+cu118"}
    )
    r = run_check("no-gpu-visible", igpu)
    assert finding_ids(r) == ["no-nvidia-gpu"] and "Iris Xe" in r.findings[0].title
    both = stated({"gpu": "RTX 3060 + Intel UHD 630", "framework_version": "torch 2.0.0+cu118"})
    assert finding_ids(run_check("no-gpu-visible", both)) == []  # the NVIDIA GPU is the one CUDA uses
    no_build = stated({"gpu": "AMD Radeon RX 6800"})
    assert finding_ids(run_check("no-gpu-visible", no_build)) == []  # no CUDA framework stated


def test_cuda_wanted_where_only_another_vendors_gpu_is_stated() -> None:
    # roop-unleashed#457 (set 55): an Intel-only machine asked for the CUDA provider; no framework fact
    intel = {
        "os": "Windows",
        "gpu": "Intel",
        "framework_version": "roop unleashed 3.5.1 (onnxruntime, CUDA execution provider)",
    }
    r = run_check("no-gpu-visible", stated(intel))
    assert finding_ids(r) == ["no-nvidia-gpu"] and "CUDA runs on NVIDIA GPUs only" in r.findings[0].title
    # no CUDA wanted: another vendor's GPU alone is no problem; an NVIDIA GPU beside it is the one CUDA uses
    assert finding_ids(run_check("no-gpu-visible", stated({"gpu": "Intel", "os": "Windows"}))) == []
    both = stated({**intel, "gpu": "RTX 3060 + Intel UHD 630"})
    assert finding_ids(run_check("no-gpu-visible", both)) == []


def test_a_container_started_without_the_gpus_gets_its_runtimes_start() -> None:
    # apptainer/singularity#6203 (set 54): 'singularity shell nemo.sif', no --nv
    sing = stated(
        {
            "container": "singularity version 3.6.4; singularity build nemo.sif docker:zhan0502/nemo; "
            "singularity shell nemo.sif"
        }
    )
    [f] = run_check("no-gpu-visible", sing).findings
    assert f.id == "container-without-gpus" and "--nv" in f.fix[0] and "--gpus" not in f.fix[0]
    docker = stated({"container": "docker run -it pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime bash"})
    assert "docker run --gpus all" in run_check("no-gpu-visible", docker).findings[0].fix[0]
    # started with the GPUs: silent
    assert (
        finding_ids(
            run_check("no-gpu-visible", stated({"container": "singularity exec --nv img.sif python"}))
        )
        == []
    )


def test_a_native_windows_driver_is_held_to_windows_floors() -> None:
    win = stated({"os": "Windows 10", "framework_version": "torch 2.1.0+cu118", "driver": "451.48"})
    r = run_check("driver-too-old", win)
    assert finding_ids(r) == ["driver-too-old"] and "452.39" in r.findings[0].title
    linux = stated({"os": "Ubuntu 22.04", "framework_version": "torch 2.1.0+cu118", "driver": "451.48"})
    assert finding_ids(run_check("driver-too-old", linux)) == []  # 450.80.02 is Linux's floor
    old = stated({"os": "Windows 7", "framework_version": "torch 1.2.0+cu100", "driver": "342.01"})
    assert "411.31" in run_check("driver-too-old", old).findings[0].title


def test_a_bare_cuda_major_takes_the_majors_floor_and_11_0_its_own() -> None:
    from cudoctor import knowledge

    assert knowledge.driver_floor("11")[0] == knowledge.minor_compat_floor(11)
    assert knowledge.driver_floor("11.0")[0] == "450.36.06"


def test_a_jaxlib_on_a_local_toolkit_needs_its_cudas_own_driver() -> None:
    """jaxlib 0.1.x/0.3.x ran on a local toolkit, and JAX made the driver a strict floor (no minor-version
    compatibility): 0.1.74 (CUDA 11.4) on 465.19.01 (CUDA 11.3) fails (jax-ml/jax#8731); a 0.4.x CUDA 11 wheel
    on the same driver is held to the CUDA 11.x floor; no driver, nothing to compare."""
    old = stated({"driver": "465.19.01", "framework_version": "jaxlib 0.1.74+cuda11.cudnn82"})
    r = run_check("driver-too-old", old)
    assert finding_ids(r) == ["driver-too-old"] and "470.42.01" in r.findings[0].title
    new = stated({"driver": "465.19.01", "framework_version": "jaxlib 0.4.25+cuda11.cudnn86"})
    assert outcome("driver-too-old", new) == ("ok", [])
    assert (
        outcome("driver-too-old", stated({"framework_version": "jaxlib 0.1.74+cuda11.cudnn82"}))[0]
        == "unknown"
    )


def test_a_driver_written_as_its_cuda_and_nvidia_dockers_refusal() -> None:
    """'driver 8.0' is no driver version but the CUDA it runs; nvidia-docker 1.0's 'unsupported CUDA version:
    driver 8.0 < image 9.0.176' (NVIDIA/nvidia-docker#497) names both sides: the image's CUDA 9.0 needs 384.81."""
    snap = stated({"driver": "375.66", "container": "nvidia-docker run --rm nvidia/cuda (< image 9.0.176)"})
    r = run_check("driver-too-old", snap)
    assert finding_ids(r) == ["container-needs-newer-driver"]
    assert "384.81" in r.findings[0].fix[0] and "nvidia/cuda:8.0" in r.findings[0].fix[1]
    assert stated({"driver": "driver 8.0"}).value("driver.cuda_version") == "8.0"
    fits = stated({"driver": "384.81", "container": "nvidia-docker (< image 9.0.176)"})
    assert outcome("driver-too-old", fits) == ("ok", [])


def test_the_container_field_names_its_images_cuda_in_words_never_the_hosts() -> None:
    assert stated({"container": "the CUDA 11.2 image"}).value("container.cuda") == "11.2"
    assert stated({"container": "docker, CUDA 12.2 on the host"}).value("container.cuda") is None
    # another field's words ('README minimum CUDA 11.6') are not the image's
    said = stated({"container": "docker", "other": "README minimum CUDA 11.6"})
    assert said.value("container.cuda") is None


def test_an_ngc_container_by_its_monthly_release_brings_that_releases_cuda_and_data_center_branches() -> None:
    """NVIDIA's container release notes (knowledge/ngc.toml): 19.02 is CUDA 10.0 (driver 410, Tesla also 384),
    20.07 is CUDA 11.0 (450; data center GPUs also 418.40 and 440.30). triton-inference-server/server#139 ran
    tensorrtserver:19.02 on 396.26; NVIDIA/TensorRT#1160 ran tensorrt:20.07.1 on 440.33.01."""
    old = stated(
        {"driver": "396.26", "gpu": "Tesla P4", "container": "nvcr.io/nvidia/tensorrtserver:19.02-py3"}
    )
    assert old.value("container.cuda") == "10.0" and old.value("container.ngc")["tag"] == "19.02"
    assert finding_ids(run_check("driver-too-old", old)) == ["container-needs-newer-driver"]
    trt = "nvcr.io/nvidia/tensorrt:20.07.1-py3"
    assert stated({"container": trt}).value("container.cuda") == "11.0"
    geforce = run_check(
        "driver-too-old", stated({"driver": "440.33.01", "gpu": "RTX 2080", "container": trt})
    )
    assert finding_ids(geforce) == ["container-needs-newer-driver"]
    tesla = stated({"driver": "440.33.01", "gpu": "Tesla T4", "container": trt})
    assert outcome("driver-too-old", tesla) == (
        "ok",
        [],
    )  # its notes admit the R440 branch on data center GPUs
    assert stated({"container": "NGC PyTorch 23.10 container"}).value("container.cuda") == "12.2"
    assert stated({"container": "nvcr.io/nvidia/pytorch:99.99-py3"}).value("container.ngc") is None
