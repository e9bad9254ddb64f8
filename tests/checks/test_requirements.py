"""requirements-unmet: what GPU-relevant distributions require (Requires-Dist), against what is installed.

Layouts are real: JAX's CUDA plugin wheel as pip installs it with --no-deps (conftest.wheel_sites, without
the jax-cuda12-pjrt it requires), the jax and jaxlib of this environment, and a dist-info made beside them.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from cudoctor.facts import collect_live, markers, packages
from cudoctor.model import Severity, Snapshot
from tests.checks.test_wheels import LINUX_X86, site_of
from tests.conftest import run_check, stated


def _jax_site() -> str:
    d = packages.find_package_dir(sys.path, "jax")
    if d is None:
        pytest.skip("jax is not installed (CI installs it)")
    return os.path.dirname(d)


def _dist_info(site: Path, name: str, version: str, *requires: str) -> Path:
    """A dist-info as pip writes it (METADATA headers; the files' RECORD does not matter here)."""
    d = site / f"{name.replace('-', '_')}-{version}.dist-info"
    d.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (d / "METADATA").write_text("\n".join(lines) + "\n\nlong description\nRequires-Dist: not-a-header\n")
    return d


def _live(*sites: Path | str) -> Snapshot:
    return collect_live(env={"PATH": "/usr/bin:/bin"}, sys_path=[*map(str, sites), _jax_site()])


def test_a_jax_cuda_plugin_without_its_pjrt_is_said_with_the_pip_command(
    wheel_sites: dict[str, Path],
) -> None:
    snap = _live(wheel_sites["bare"])
    [f] = run_check("requirements-unmet", snap).findings
    assert f.severity is Severity.ERROR and f.cause == "requirements-unmet"
    assert f.title == (
        "jax-cuda12-plugin 0.10.2 requires jax-cuda12-pjrt, which is not installed: JAX finds no GPU without it"
    )
    assert f.fix[0] == 'pip install "jax-cuda12-pjrt==0.10.2"'
    assert "jax-cuda12-plugin 0.10.2 Requires-Dist: jax-cuda12-pjrt==0.10.2" in f.evidence
    assert f.subject == "jax"  # shown under JAX's line
    # the plugin's `with-cuda` extra names 12 NVIDIA wheels; nobody asked for it: nothing is missing there


def test_the_plugin_with_its_pjrt_is_silent_and_another_pjrt_release_is_not(
    wheel_sites: dict[str, Path], tmp_path: Path
) -> None:
    _dist_info(tmp_path / "ok", "jax-cuda12-pjrt", "0.10.2")
    assert run_check("requirements-unmet", _live(tmp_path / "ok", wheel_sites["bare"])).outcome == "ok"
    _dist_info(tmp_path / "old", "jax-cuda12-pjrt", "0.10.1")
    [f] = run_check("requirements-unmet", _live(tmp_path / "old", wheel_sites["bare"])).findings
    assert f.severity is Severity.ERROR
    assert (
        f.title
        == "jax-cuda12-plugin 0.10.2 requires jax-cuda12-pjrt==0.10.2, but jax-cuda12-pjrt 0.10.1 is installed"
    )
    assert f.fix[0] == 'pip install "jax-cuda12-pjrt==0.10.2"'


def test_an_extra_binds_the_version_of_a_wheel_that_is_installed(
    wheel_sites: dict[str, Path], tmp_path: Path
) -> None:
    """The `with-cuda` extra asks for nvidia-cudnn-cu12<10.0,>=9.8: a cuDNN 10 wheel beside the plugin is said
    (a warning: a newer NVIDIA wheel mostly keeps working); the NVIDIA wheels it leaves out are not."""
    _dist_info(tmp_path, "jax-cuda12-pjrt", "0.10.2")
    _dist_info(tmp_path, "nvidia-cudnn-cu12", "10.0.0.1")
    [f] = run_check("requirements-unmet", _live(tmp_path, wheel_sites["full"])).findings
    assert f.severity is Severity.WARNING
    # this environment's tensorflow-cpu, when installed, asks for it under its `and-cuda` extra too
    assert f.title.startswith("jax-cuda12-plugin 0.10.2 ") and "nvidia-cudnn-cu12<10.0,>=9.8" in f.title
    assert f.title.endswith("but nvidia-cudnn-cu12 10.0.0.1 is installed")
    assert f.fix[0].startswith('pip install "nvidia-cudnn-cu12<10.0,>=9.8')


def test_real_requirements_from_this_environment_are_silent() -> None:
    """torch 2.13.0+cpu, jax, jaxlib and the rest of this environment: everything they require is here."""
    snap = collect_live(env={"PATH": "/usr/bin:/bin"})
    assert snap.status("python.requirements").value == "known"
    assert run_check("requirements-unmet", snap).outcome == "ok"


def test_a_torch_copy_without_the_nvidia_wheel_it_requires(tmp_path: Path) -> None:
    """torch's real METADATA (this environment's CPU build) with a CUDA wheel requirement as torch's
    CUDA builds state it; the marker is evaluated for this Python, a requirement for another platform is not."""
    torch_info = next(iter(Path(_jax_site()).glob("torch-*.dist-info")), None)
    if torch_info is None:
        pytest.skip("torch is not installed")
    copy = tmp_path / torch_info.name
    shutil.copytree(torch_info, copy)
    head, _, body = (copy / "METADATA").read_text().partition("\n\n")
    here = markers.environment()["sys_platform"]
    head += (
        f'\nRequires-Dist: nvidia-cublas-cu12==12.8.4.1; sys_platform == "{here}"'
        '\nRequires-Dist: nvidia-cufft-cu12==11.3.3.83; sys_platform == "nowhere"'
    )
    (copy / "METADATA").write_text(head + "\n\n" + body)
    [f] = run_check("requirements-unmet", collect_live(env={}, sys_path=[str(tmp_path)])).findings
    assert f.title.startswith("torch 2.13.0+cpu requires nvidia-cublas-cu12, which is not installed")
    assert f.fix[0] == 'pip install "nvidia-cublas-cu12==12.8.4.1"'


@LINUX_X86
def test_what_one_package_lacks_is_one_finding_with_one_command(tmp_path: Path) -> None:
    """torch 2.5.1's real Requires-Dist (test_wheels.site_of) with two of its NVIDIA wheels."""
    site = site_of(
        tmp_path, "torch-2.5.1", "nvidia-cusparse-cu12-12.3.1.170", "nvidia-nvjitlink-cu12-12.1.105"
    )
    [f] = run_check("requirements-unmet", collect_live(env={}, sys_path=[str(site)])).findings
    assert f.title.startswith(
        "torch 2.5.1 requires 11 packages that are not installed (nvidia-cuda-nvrtc-cu12, nvidia-cuda-runtime-cu12, "
    ) and f.title.endswith(", nvidia-nvtx-cu12, triton)")
    assert f.fix[0].startswith(
        'pip install "nvidia-cuda-nvrtc-cu12==12.4.127" "nvidia-cuda-runtime-cu12==12.4.127" '
    )
    assert f.fix[0].endswith(' "nvidia-nvtx-cu12==12.4.127" "triton==3.1.0"')
    assert "cusparse" not in f.fix[0]  # installed; that it is too old is cuda-wheel-pins' finding


def test_unknown_without_the_requirements_fact() -> None:
    assert run_check("requirements-unmet", stated({"gpu": "A100"})).outcome == "unknown"
    snap = stated({}, python__packages={"torch": "2.13.0"})
    assert run_check("requirements-unmet", snap).outcome == "unknown"  # stated packages: Requires-Dist unread


def test_gpu_requirements_reads_only_gpu_packages_and_markers_that_hold() -> None:
    env = {**markers.environment(), "sys_platform": "linux", "python_version": "3.11"}
    dists = [
        packages.Dist("jax-cuda12-plugin", "0.4.35", "s", "d", ("jax-cuda12-pjrt==0.4.35",)),
        packages.Dist(
            "torchvision",
            "0.20.0",
            "s",
            "d",
            ("torch==2.5.0", "pillow!=8.3.*", 'numpy; python_version < "3"'),
        ),
        packages.Dist("numba", "0.60.0", "s", "d", ("numpy<2.1,>=1.22",)),  # not a GPU package
        packages.Dist(
            "tensorflow", "2.18.0", "s", "d", ('nvidia-cublas-cu12==12.5.3.2; extra == "and-cuda"',)
        ),
    ]
    rows = packages.gpu_requirements(dists, env)
    assert [(r["package"], r["requires"], r["spec"]) for r in rows] == [
        ("jax-cuda12-plugin", "jax-cuda12-pjrt", "==0.4.35"),
        ("torchvision", "torch", "==2.5.0"),  # pillow: cannot be judged (not scanned); numpy: marker false
    ]  # tensorflow's extra names a wheel that is not installed: pip never asked for it
