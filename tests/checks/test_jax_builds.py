"""JAX versions written with their build tags decide the CUDA major for the driver and architecture checks."""

from __future__ import annotations

from cudoctor.knowledge import jax_builds
from cudoctor.model import Severity
from tests.conftest import finding_ids, run_check, stated

CUDA12_JAXLIB = "jaxlib 0.4.20+cuda12.cudnn89"


def test_a_cuda_12_jaxlib_on_a_cuda_11_4_driver_is_driver_too_old() -> None:
    snap = stated({"driver": "470.82.01", "framework_version": CUDA12_JAXLIB})
    r = run_check("driver-too-old", snap)
    assert finding_ids(r) == ["driver-too-old"]
    assert "JAX 0.4.20 (CUDA 12.2)" in r.findings[0].title and "525.60.13" in r.findings[0].title
    # the step fits the driver: the last JAX with CUDA 11 wheels, not jax[cuda12]
    assert "cuda11_pip" in r.findings[0].fix[0] and "0.4.25" in r.findings[0].fix[0]


def test_driver_too_old_silent_for_a_cuda_11_jaxlib_on_that_driver() -> None:
    snap = stated({"driver": "470.82.01", "framework_version": "jax 0.4.25, jaxlib 0.4.25+cuda11.cudnn86"})
    assert run_check("driver-too-old", snap).outcome == "ok"
    plugin = stated({"driver": "535.104.05", "framework_version": "jax[cuda12_pip]==0.4.13"})
    assert run_check("driver-too-old", plugin).outcome == "ok"


def test_driver_too_old_unknown_without_the_driver() -> None:
    assert run_check("driver-too-old", stated({"framework_version": CUDA12_JAXLIB})).outcome == "unknown"


def test_the_install_step_names_the_command_that_shows_an_unknown_driver_cuda() -> None:
    assert "nvidia-smi" in jax_builds.install_step(None)
    assert "jax[cuda12]" in jax_builds.install_step("12.2")
    assert "jax[cuda13]" in jax_builds.install_step("13.0")
    assert "upgrade the NVIDIA driver" in jax_builds.install_step("10.2")


def test_jax_build_targets_decide_the_arch_check() -> None:
    """jaxlib 0.4.17+ CUDA builds carry sm_52..sm_80 SASS and compute_90 PTX (jax.toml [[archs]])."""
    ampere = stated({"gpu": "RTX 3090", "framework_version": CUDA12_JAXLIB})
    assert run_check("arch-unsupported", ampere).outcome == "ok"
    ada = stated({"gpu": "RTX 4090", "framework_version": "jax 0.4.25, jaxlib 0.4.25+cuda11.cudnn86"})
    assert run_check("arch-unsupported", ada).outcome == "ok"
    hopper = run_check("arch-unsupported", stated({"gpu": "H100", "framework_version": CUDA12_JAXLIB}))
    assert finding_ids(hopper) == ["arch-ptx-jit-only"] and hopper.findings[0].severity is Severity.WARNING
    assert any("jax .bazelrc" in e for e in hopper.findings[0].evidence)


def test_a_jax_without_a_build_tag_stays_unknown_to_the_checks() -> None:
    snap = stated(
        {"driver": "470.82.01", "gpu": "RTX 3090", "framework_version": "jax 0.2.13, jaxlib 0.1.67"}
    )
    assert run_check("driver-too-old", snap).outcome == "ok"
    assert run_check("arch-unsupported", snap).outcome == "ok"
