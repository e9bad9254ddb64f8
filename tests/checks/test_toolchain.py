"""Checks of the compilers a framework calls (checks/toolchain.py): ptxas missing, of another version or
broken, libdevice missing, the toolkit torch extensions would build with."""

from __future__ import annotations

from typing import Any

from cudoctor.model import Severity
from tests.checks.helpers import outcome
from tests.conftest import finding_ids, run_check, stated


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


def test_a_toolkit_older_than_the_gpu_cannot_build_for_it() -> None:
    """facebookresearch/detectron2: nvcc 9.1 (up to sm_72) with a GTX 1660 Ti (7.5), detectron2._C failing to
    import; a warning where the facts say code is compiled here, a note where they do not; CUDA 11.8 builds for a
    3090; no GPU stated, nothing to compare."""
    d2 = stated(
        {
            "gpu": "GeForce GTX 1660 Ti",
            "system_cuda": "Cuda compilation tools, release 9.1, V9.1.85",
            "other": "CUDA_HOME /usr; detectron2._C failed to import",
        }
    )
    (found,) = run_check("toolkit-older-than-gpu", d2).findings
    assert found.severity == Severity.WARNING and "up to 7.2" in found.title
    assert "CUDA 10.0 or newer" in found.fix[0]
    plain = stated({"gpu": "GeForce GTX 1660 Ti", "system_cuda": "9.1"})
    assert [f.severity for f in run_check("toolkit-older-than-gpu", plain).findings] == [Severity.INFO]
    with_torch = stated(
        {
            "gpu": "GeForce GTX 1660 Ti",
            "framework_version": "torch 1.4.0",
            "framework_cuda": "10.1",
            "system_cuda": "9.1",
        }
    )
    (step,) = run_check("toolkit-older-than-gpu", with_torch).findings[0].fix
    assert step.startswith("Build with a CUDA 10.1 toolkit")  # torch's own CUDA, which builds for the GPU
    fits = stated({"gpu": "RTX 3090", "system_cuda": "11.8", "other": "python setup.py install"})
    assert run_check("toolkit-older-than-gpu", fits).findings == ()
    assert run_check("toolkit-older-than-gpu", stated({"system_cuda": "9.1"})).outcome == "unknown"
