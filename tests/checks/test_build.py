"""Checks of framework builds and their companions (checks/build.py, checks/gpu_arch.py): CPU-only
builds, architectures, broken installs, torchvision & co. versions, the NumPy 2 ABI."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudoctor.fixes import checked
from cudoctor.model import Snapshot
from tests.checks.helpers import A100_CU124, REPORTS, outcome, torch_cuda
from tests.conftest import finding_ids, run_check, stated


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


def _planned_fix(check_id: str, snap: Snapshot) -> tuple[str, ...]:
    (result,) = checked(snap, only=[check_id])
    return result.findings[0].fix


def test_a_cpu_only_finding_names_only_its_own_framework_install() -> None:
    snap = stated({"gpu": "A100"}, framework__jax={"version": "0.4.30", "build": "cpu"})
    assert run_check("cpu-only-build", snap).findings[0].fix == ()  # the planner computes it
    fix = _planned_fix("cpu-only-build", snap)
    # the driver unknown: the CUDA major current JAX ships that asks least of it, and what the next needs
    assert (
        fix[0].startswith("pip install -U 'jax[cuda12]'") and "525.60.13" in fix[0] and "nvidia-smi" in fix[0]
    )
    assert fix[1].startswith("Or, with driver 580 or newer: pip install -U 'jax[cuda13]'")
    assert not any("torch" in s or "tensorflow" in s for s in fix)  # not the cause's steps for the others
    known_driver = stated(
        {"gpu": "A100", "driver": "470.82.01"}, framework__jax={"version": "0.4.30", "build": "cpu"}
    )
    assert "jax[cuda11_pip]==0.4.25" in _planned_fix("cpu-only-build", known_driver)[0]


def test_a_cpu_only_tensorflow_gets_its_own_release_as_a_gpu_build() -> None:
    cpu_package = stated(
        {"gpu": "RTX 3090", "framework_version": "tensorflow-cpu 2.15.0", "os": "Ubuntu 22.04"}
    )
    assert _planned_fix("cpu-only-build", cpu_package)[0].startswith(
        "pip uninstall -y tensorflow-cpu && pip install 'tensorflow[and-cuda]==2.15.*'"
    )
    tf1 = stated(
        {"gpu": "GTX 1080", "os": "Ubuntu 18.04"}, framework__tensorflow={"version": "1.14.0", "build": "cpu"}
    )
    fix = _planned_fix("cpu-only-build", tf1)
    # before [and-cuda] (2.14) and before one package for both (2.1): tensorflow-gpu, with its tested CUDA/cuDNN
    assert fix[0].startswith("pip install 'tensorflow-gpu==1.14.*'") and "CUDA 10.0 and cuDNN 7.4" in fix[0]
    assert fix[1].startswith("conda install -c conda-forge cudatoolkit=10.0 cudnn=7.4")
    assert not any("and-cuda" in s for s in fix)


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
    assert not any("whl/cu" in s for s in r.findings[0].fix)  # the planner computes the index
    assert any(
        "whl/cu126" in s and "holds compute capability 6.1" in s
        for s in _planned_fix("arch-unsupported", dropped)
    )
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


# ---------------------------------------------------------------- NumPy 2 ABI
def test_numpy_abi_mismatch_fires_for_torch_built_against_numpy_1() -> None:
    """openfederatedlearning#999: torch 2.2.2 with NumPy 2 - 'Numpy is not available'."""
    snap = stated({}, python__packages={"torch": "2.2.2+cpu", "numpy": "2.0.0"})
    r = run_check("numpy-abi-mismatch", snap)
    assert finding_ids(r) == ["numpy-abi-mismatch"] and r.findings[0].cause == "binary-incompatible"
    assert "torch 2.2.2+cpu" in r.findings[0].title and "NumPy 2.0.0" in r.findings[0].title
    assert r.findings[0].fix[0] == "pip install 'numpy<2'" and "'torch>=2.3.0'" in r.findings[0].fix[1]
    assert len(r.findings[0].fix) == 2  # the cause's MKL and glibc steps are not this
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
