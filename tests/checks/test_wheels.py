"""NVIDIA CUDA wheels against what the installed frameworks ask for, on site-packages made of real
wheel metadata (tests/fixtures/metadata, see its SOURCES.md)."""

from __future__ import annotations

import io
import platform
import shutil
import sys
from pathlib import Path

import pytest

from cudoctor import versions
from cudoctor.explainer import rank, scan
from cudoctor.facts import collect_live, markers, packages
from cudoctor.model import Snapshot
from tests.checks.helpers import outcome, torch_cuda
from tests.conftest import finding_ids, run_check, stated

METADATA = Path(__file__).parents[1] / "fixtures" / "metadata"
LINUX = {
    "os_name": "posix",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "python_version": "3.11",
    "python_full_version": "3.11.9",
    "implementation_name": "cpython",
}
WINDOWS = {
    **LINUX,
    "os_name": "nt",
    "sys_platform": "win32",
    "platform_system": "Windows",
    "platform_machine": "AMD64",
}


def site_of(path: Path, *names: str) -> Path:
    """A site-packages holding one dist-info per fixture, e.g. 'torch-2.5.1'."""
    for name in names:
        stem, _, version = name.rpartition("-")
        info = path / f"{stem.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        shutil.copy(METADATA / f"{name}.METADATA", info / "METADATA")
    return path


def wheels_snapshot(site: Path, env: dict[str, str] = LINUX, **extra: object) -> Snapshot:
    dists, _ = packages.scan([str(site)])
    return stated(
        {},
        python__packages={d.name: d.version for d in dists},
        python__nvidia_wheels=[d.to_json() for d in dists if d.name.startswith("nvidia-")],
        python__cuda_wheel_pins=packages.wheel_pins(dists, env),
        **extra,
    )


# ---------------------------------------------------------------- markers and floors
@pytest.mark.parametrize(
    ("marker", "env", "expected"),
    [
        ('platform_system == "Linux" and platform_machine == "x86_64"', LINUX, True),
        ('platform_system == "Linux" and platform_machine == "x86_64"', WINDOWS, False),
        ('platform_system == "Linux" and python_version < "3.13"', LINUX, True),
        ('python_version >= "3.12"', LINUX, False),
        ('python_version == "3.8"', LINUX, False),
        ('"3.10" < python_version', LINUX, True),
        (
            '(sys_platform == "win32" or os_name == "posix") and platform_machine in "x86_64 aarch64"',
            LINUX,
            True,
        ),
        ("extra == 'and-cuda'", WINDOWS, True),
        ('platform_system != "Windows" and extra == "with-cuda"', WINDOWS, False),
        ('unknown_var == "x"', LINUX, None),
        ("platform_system ==", LINUX, None),
        ('(platform_system == "Linux"', LINUX, None),
    ],
)
def test_markers_are_evaluated_for_the_given_environment(
    marker: str, env: dict[str, str], expected: bool | None
) -> None:
    assert markers.holds(marker, env) is expected


def test_marker_environment_describes_this_interpreter() -> None:
    env = markers.environment()
    assert env["platform_system"] == platform.system()
    assert env["python_version"] == "{}.{}".format(*sys.version_info[:2])


@pytest.mark.parametrize(
    ("spec", "floor"),
    [
        ("==12.4.127", ("==", "12.4.127")),
        ("<10.0,>=9.8", (">=", "9.8")),
        (">=9.1, <10", (">=", "9.1")),
        ("~=2.18", (">=", "2.18")),
        ("<13", None),
        ("==12.*", None),
    ],
)
def test_floor_is_the_lowest_version_a_spec_accepts(spec: str, floor: tuple[str, str] | None) -> None:
    assert versions.floor(spec) == floor


def test_wheel_pins_keep_versioned_requirements_on_installed_cuda_wheels(tmp_path: Path) -> None:
    site = site_of(
        tmp_path, "torch-2.5.1", "nvidia-cusparse-cu12-12.3.1.170", "nvidia-nvjitlink-cu12-12.1.105"
    )
    dists, _ = packages.scan([str(site)])
    pins = packages.wheel_pins(dists, LINUX)
    # torch's pins on wheels that are installed; cusparse's unversioned nvjitlink says nothing
    assert pins == [
        {"package": "torch", "version": "2.5.1", "requires": "nvidia-cusparse-cu12", "spec": "==12.3.1.170"},
        {"package": "torch", "version": "2.5.1", "requires": "nvidia-nvjitlink-cu12", "spec": "==12.4.127"},
    ]
    assert packages.wheel_pins(dists, WINDOWS) == []  # torch's markers: Linux x86_64 only


# ---------------------------------------------------------------- cuda-wheel-pins
def test_cuda_wheel_pins_fires_when_a_wheel_is_older_than_torch_was_built_for(tmp_path: Path) -> None:
    # pytorch#111469: torch's libcusparse needs __nvJitLinkAddData_12_x of a newer nvJitLink
    site = site_of(
        tmp_path, "torch-2.5.1", "nvidia-cusparse-cu12-12.3.1.170", "nvidia-nvjitlink-cu12-12.1.105"
    )
    r = run_check("cuda-wheel-pins", wheels_snapshot(site))
    assert finding_ids(r) == ["cuda-wheel-pins"]
    f = r.findings[0]
    assert f.subject == "nvidia-nvjitlink-cu12"
    assert f.title.startswith(
        "nvidia-nvjitlink-cu12 12.1.105 is older than torch 2.5.1 (nvidia-nvjitlink-cu12==12.4.127) asks for"
    )
    assert f.fix[0] == "pip install 'nvidia-nvjitlink-cu12==12.4.127'"
    assert "installed nvidia-nvjitlink-cu12 = 12.1.105" in f.evidence


def test_cuda_wheel_pins_names_the_framework_that_pinned_the_older_wheel(tmp_path: Path) -> None:
    # tensorflow[and-cuda] 2.15 installed after torch 2.5.1 leaves its nvJitLink 12.2.140
    site = site_of(tmp_path, "torch-2.5.1", "tensorflow-2.15.0", "nvidia-nvjitlink-cu12-12.2.140")
    r = run_check("cuda-wheel-pins", wheels_snapshot(site))
    assert finding_ids(r) == ["cuda-wheel-pins"]
    f = r.findings[0]
    assert f.fix[0] == "pip install 'nvidia-nvjitlink-cu12==12.4.127'"
    assert f.fix[1].startswith(
        "pip will then say that tensorflow 2.15.0 (nvidia-nvjitlink-cu12==12.2.140) asks for another version"
    )
    assert "tensorflow 2.15.0 Requires-Dist: nvidia-nvjitlink-cu12==12.2.140" in f.evidence


def test_cuda_wheel_pins_is_silent_when_every_ask_is_met_or_exceeded(tmp_path: Path) -> None:
    # TF 2.15 pins 12.2.140, torch 12.4.127, JAX asks >=12.1.105: 12.4.127 serves all (same major)
    site = site_of(
        tmp_path,
        "torch-2.5.1",
        "tensorflow-2.15.0",
        "jax-cuda12-plugin-0.6.0",
        "nvidia-nvjitlink-cu12-12.4.127",
        "nvidia-cusparse-cu12-12.3.1.170",
    )
    assert outcome("cuda-wheel-pins", wheels_snapshot(site)) == ("ok", [])


def test_cuda_wheel_pins_leaves_cudnn_to_cudnn_version_mismatch(tmp_path: Path) -> None:
    site = site_of(tmp_path, "jax-cuda12-plugin-0.6.0", "nvidia-cudnn-cu12-9.1.0.70")
    assert outcome("cuda-wheel-pins", wheels_snapshot(site)) == ("ok", [])


def test_cuda_wheel_pins_ignores_pins_whose_markers_do_not_hold(tmp_path: Path) -> None:
    site = site_of(tmp_path, "torch-2.5.1", "nvidia-nvjitlink-cu12-12.1.105")
    assert outcome("cuda-wheel-pins", wheels_snapshot(site, WINDOWS)) == ("ok", [])


def test_cuda_wheel_pins_is_unknown_without_the_pins_fact() -> None:
    assert outcome("cuda-wheel-pins", stated({}))[0] == "unknown"


# ---------------------------------------------------------------- cuDNN: the two-framework clash
def test_cudnn_mismatch_says_two_frameworks_cannot_share_one_cudnn(tmp_path: Path) -> None:
    # tensorflow[and-cuda] 2.15 installed after torch 2.5.1: cuDNN 8.9.4.25 replaces torch's 9.1.0.70
    site = site_of(tmp_path, "torch-2.5.1", "tensorflow-2.15.0", "nvidia-cudnn-cu12-8.9.4.25")
    r = run_check("cudnn-version-mismatch", wheels_snapshot(site, framework__torch=torch_cuda()))
    assert finding_ids(r) == ["cudnn-version-mismatch"]
    f = r.findings[0]
    assert f.fix[0].startswith(
        "tensorflow 2.15.0 needs nvidia-cudnn-cu12==8.9.4.25 and PyTorch needs cuDNN 9: one environment holds one"
    )
    assert f.fix[1] == "pip install 'nvidia-cudnn-cu12>=9.1'"


def test_cudnn_mismatch_without_a_rival_gives_the_upgrade_first(tmp_path: Path) -> None:
    site = site_of(tmp_path, "torch-2.5.1", "nvidia-cudnn-cu12-8.9.4.25")
    r = run_check("cudnn-version-mismatch", wheels_snapshot(site, framework__torch=torch_cuda()))
    assert r.findings[0].fix[0] == "pip install 'nvidia-cudnn-cu12>=9.1'"


LINUX_X86 = pytest.mark.skipif(
    (platform.system(), platform.machine()) != ("Linux", "x86_64"),
    reason="torch's CUDA pins hold on Linux x86_64",
)


def _with_real_jax(site: Path) -> Path:
    """Add this environment's real jax and jaxlib dist-info (the JAX that reads the plugin's pins)."""
    found = {d.name: d for d in packages.scan(sys.path)[0] if d.name in ("jax", "jaxlib")}
    if len(found) < 2:
        pytest.skip("jax is not installed here")
    for d in found.values():
        shutil.copytree(d.dist_info, site / Path(d.dist_info).name)
    return site


def test_live_snapshot_of_torch_and_jax_sharing_an_old_cudnn(tmp_path: Path) -> None:
    # maxtext#1509: torch 2.5.1's cuDNN 9.1.0.70 under a JAX plugin built with cuDNN 9.8
    site = _with_real_jax(
        site_of(tmp_path, "torch-2.5.1", "jax-cuda12-plugin-0.6.0", "nvidia-cudnn-cu12-9.1.0.70")
    )
    snap = collect_live(env={"PATH": "/usr/bin:/bin"}, sys_path=[str(site)])
    assert snap.value("framework.jax")["cudnn"] == "9.8"
    r = run_check("cudnn-version-mismatch", snap)
    assert finding_ids(r) == ["cudnn-version-mismatch"]
    assert (
        "was built with cuDNN 9.8, but the cuDNN found is 9.1.0.70 (pip nvidia-cudnn-cu12)"
        in r.findings[0].title
    )
    assert r.findings[0].fix[0] == "pip install 'nvidia-cudnn-cu12>=9.8'"


@LINUX_X86
def test_live_snapshot_reads_pins_and_explain_puts_the_wheel_fix_first(tmp_path: Path) -> None:
    site = site_of(
        tmp_path, "torch-2.5.1", "nvidia-cusparse-cu12-12.3.1.170", "nvidia-nvjitlink-cu12-12.1.105"
    )
    snap = collect_live(env={"PATH": "/usr/bin:/bin"}, sys_path=[str(site)])
    assert {p["requires"] for p in snap.value("python.cuda_wheel_pins")} == {
        "nvidia-cusparse-cu12",
        "nvidia-nvjitlink-cu12",
    }
    log = (
        "ImportError: /venv/lib/python3.11/site-packages/torch/lib/../../nvidia/cusparse/lib/libcusparse.so.12: "
        "undefined symbol: __nvJitLinkComplete_12_4, version libnvJitLink.so.12\n"
    )
    exp = rank.explain(scan.scan(io.BytesIO(log.encode())), snap)
    assert exp.causes[0].id == "multiple-toolkits"
    assert rank.cause_json(exp.causes, 0)["fix"][0] == "pip install 'nvidia-nvjitlink-cu12==12.4.127'"
