"""onnxruntime's CUDA provider: the CPU package beside (or instead of) onnxruntime-gpu, read from the
installed distributions, and the provider that could not be created, read from the log. Lines are
from the threads the signature's source names; the site-packages here are real dist-info folders."""

from __future__ import annotations

from pathlib import Path

from cudoctor import importers
from cudoctor.facts import packages
from tests.conftest import explained, first, fixes, ids, run_check, stated

CREATE_FAILED = (
    "2023-07-31 14:22:06.483132863 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:640 "
    "CreateExecutionProviderInstance] Failed to create CUDAExecutionProvider. Please reference "
    "https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements to ensure all "
    "dependencies are met.\n"
)


def site_with(tmp_path: Path, *dists: tuple[str, str]) -> dict[str, str]:
    """python.packages as cudoctor reads it from a site-packages holding these dist-info folders."""
    for name, version in dists:
        info = tmp_path / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n")
    found, _ = packages.scan([str(tmp_path)])
    return {d.name: d.version for d in found}


def test_both_packages_installed_is_an_error(tmp_path: Path) -> None:
    installed = site_with(tmp_path, ("onnxruntime", "1.19.2"), ("onnxruntime-gpu", "1.19.2"))
    (f,) = run_check("onnxruntime-cpu-package", stated({}, python__packages=installed)).findings
    assert f.severity.value == "error" and "share one onnxruntime/ folder" in f.title
    assert f.fix[0].startswith("pip uninstall -y onnxruntime onnxruntime-gpu && pip install onnxruntime-gpu")


def test_the_cpu_package_alone_on_a_gpu_machine_is_a_warning(tmp_path: Path) -> None:
    installed = site_with(tmp_path, ("onnxruntime", "1.15.0"))
    result = run_check("onnxruntime-cpu-package", stated({"gpu": "RTX 3090"}, python__packages=installed))
    (f,) = result.findings
    assert f.severity.value == "warning" and "CPU-only package on a machine with an NVIDIA GPU" in f.title


def test_the_gpu_package_alone_or_a_cpu_machine_stays_silent(tmp_path: Path) -> None:
    gpu_only = site_with(tmp_path / "a", ("onnxruntime-gpu", "1.19.2"))
    assert (
        run_check("onnxruntime-cpu-package", stated({"gpu": "RTX 3090"}, python__packages=gpu_only)).outcome
        == "ok"
    )
    cpu_only = site_with(tmp_path / "b", ("onnxruntime", "1.19.2"))
    assert run_check("onnxruntime-cpu-package", stated({}, python__packages=cpu_only)).outcome == "ok"
    assert run_check("onnxruntime-cpu-package", stated({})).outcome == "unknown"


def test_a_pasted_pip_list_with_both_packages_is_caught(tmp_path: Path) -> None:
    report = tmp_path / "pip-list.txt"
    report.write_text(
        "Package          Version\n---------------- -------\nonnxruntime      1.12.0\nonnxruntime-gpu  1.12.0\n"
    )
    snap = importers.load_report(str(report))
    assert [f.id for f in run_check("onnxruntime-cpu-package", snap).findings] == ["onnxruntime-cpu-package"]


def test_a_provider_that_was_not_created_is_the_package_first() -> None:
    """microsoft/onnxruntime#16931: onnxruntime, not onnxruntime-gpu."""
    exp = explained(CREATE_FAILED)
    assert ids(exp)[:2] == ["cpu-only-build", "cuda-libs-missing"]
    steps = fixes(exp)
    assert steps[0].startswith("See which package is installed: pip list | grep -i onnxruntime")
    assert any("onnxruntime.preload_dlls()" in s for s in steps)


def test_the_installed_pair_confirms_the_package_reading() -> None:
    both = stated({}, python__packages={"onnxruntime": "1.12.0", "onnxruntime-gpu": "1.12.0"})
    exp = explained(CREATE_FAILED, both)
    assert first(exp)["id"] == "cpu-only-build"
    assert [f.id for f in exp.causes[0].findings] == ["onnxruntime-cpu-package"]


def test_the_library_named_on_the_line_before_is_the_root() -> None:
    """UselessToys/Ecosystem_WebUI#229: a cuDNN 8 build of onnxruntime-gpu beside cuDNN 9."""
    exp = explained(
        "[E:onnxruntime:Default, provider_bridge_ort.cc:1548 TryGetProviderInfo_CUDA] ... [ONNXRuntimeError] : 1 : "
        "FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: libcudnn.so.8: cannot open "
        "shared object file: No such file or directory\n" + CREATE_FAILED
    )
    assert exp.root is not None and exp.root.line == 1 and first(exp)["id"] == "cudnn-mismatch"
