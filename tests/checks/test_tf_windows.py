"""tensorflow-native-windows: TensorFlow >= 2.11 on native Windows (not WSL2) is a CPU-only build."""

from __future__ import annotations

from cudoctor.model import Severity
from tests.conftest import finding_ids, run_check, stated

NATIVE = {"os": "Windows 10", "framework_version": "tensorflow 2.13.0"}


def test_fires_for_tensorflow_2_13_stated_on_native_windows() -> None:
    r = run_check("tensorflow-native-windows", stated(NATIVE))
    assert finding_ids(r) == ["tensorflow-native-windows"]
    f = r.findings[0]
    assert f.cause == "cpu-only-build" and f.severity is Severity.ERROR
    assert "2.13.0" in f.title and "2.10" in f.title and "native Windows" in f.title
    assert "WSL2" in f.fix[0] and "tensorflow[and-cuda]" in f.fix[0]
    assert '"tensorflow<2.11"' in f.fix[1] and "cudatoolkit=11.2 cudnn=8.1.0" in f.fix[1]
    assert "python --version" in f.fix[1]  # the Python is not known: say how to see it
    assert any("tensorflow.org/install/pip" in e for e in f.evidence)


def test_a_stated_python_decides_the_step_for_tensorflow_2_10() -> None:
    too_new = run_check("tensorflow-native-windows", stated({**NATIVE, "python": "3.11.4"})).findings[0]
    assert "this is 3.11.4" in too_new.fix[1] and "Python 3.10" in too_new.fix[1]
    fits = run_check("tensorflow-native-windows", stated({**NATIVE, "python": "3.9.13"})).findings[0]
    assert "Python 3.7-3.10" not in fits.fix[1] and "python --version" not in fits.fix[1]


def test_silent_where_tensorflow_uses_the_gpu() -> None:
    for facts in (
        {"os": "Windows 11, WSL2 Ubuntu 22.04", "framework_version": "tensorflow 2.13.0"},
        {"os": "Windows 10", "framework_version": "tensorflow-gpu 2.10.0"},
        {"os": "Ubuntu 22.04", "framework_version": "tensorflow 2.13.0"},
    ):
        assert run_check("tensorflow-native-windows", stated(facts)).outcome == "ok", facts


def test_silent_on_a_windows_machine_known_to_have_no_gpu() -> None:
    r = run_check("tensorflow-native-windows", stated(NATIVE, gpu__devices=[], gpu__pci=[]))
    assert r.outcome == "ok"


def test_one_finding_when_the_gpu_is_known() -> None:
    """With the GPU known, cpu-only-build says it (with the same steps); this check stays out."""
    snap = stated({**NATIVE, "gpu": "RTX 3080"})
    assert run_check("tensorflow-native-windows", snap).outcome == "ok"
    r = run_check("cpu-only-build", snap)
    assert finding_ids(r) == ["cpu-only-tensorflow"]
    assert "native Windows" in r.findings[0].title and "WSL2" in r.findings[0].fix[0]


def test_missing_facts() -> None:
    assert run_check("tensorflow-native-windows", stated({"os": "Windows 10"})).outcome == "unknown"
    no_os = stated({"framework_version": "tensorflow 2.13.0"})
    assert run_check("tensorflow-native-windows", no_os).outcome == "unknown"
