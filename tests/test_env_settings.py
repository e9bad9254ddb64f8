"""env-setting-misread: framework settings in the environment read otherwise than meant. JAX's
reading is checked against the real jaxlib function that reads them."""

from __future__ import annotations

from typing import Any

import pytest

from cudoctor import knowledge
from cudoctor.model import Severity, absent
from tests.conftest import run_check, stated

TF = {"version": "2.15.0", "build": "cuda", "cuda": "12.2"}
JAX = {"version": "0.4.30", "build": "cuda", "cuda": "12.3"}
GPU = {"index": 0, "name": "NVIDIA A100", "cc": "8.0", "memory_total_mib": 81920, "memory_used_mib": 60000}


def _misread(env: dict[str, str], **frameworks: Any) -> list[str]:
    snap = stated({}, env=env, **{f"framework__{k}": v for k, v in frameworks.items()})
    return [f.title for f in run_check("env-setting-misread", snap).findings]


@pytest.mark.parametrize(
    ("variable", "value", "framework", "says"),
    [
        ("TF_FORCE_GPU_ALLOW_GROWTH", "True", "tensorflow", "is ignored"),
        ("TF_FORCE_GPU_ALLOW_GROWTH", "1", "tensorflow", "is ignored"),
        ("XLA_PYTHON_CLIENT_PREALLOCATE", "FALSE", "jax", "is read as true"),
        ("XLA_PYTHON_CLIENT_PREALLOCATE", "no", "jax", "is read as true"),
        ("XLA_PYTHON_CLIENT_MEM_FRACTION", "90%", "jax", "is not a number"),
        ("XLA_PYTHON_CLIENT_MEM_FRACTION", "90", "jax", "is outside 0 to 1"),
        ("XLA_PYTHON_CLIENT_ALLOCATOR", "async", "jax", "is not one of default, platform"),
        ("JAX_PLATFORMS", "cpu", "jax", "names no GPU platform"),
    ],
)
def test_a_setting_the_framework_reads_otherwise_fires(
    variable: str, value: str, framework: str, says: str
) -> None:
    info = TF if framework == "tensorflow" else JAX
    [title] = _misread({variable: value}, **{framework: info})
    assert title.startswith(f"{variable}={value!r} {says}")


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("TF_FORCE_GPU_ALLOW_GROWTH", "true"),
        ("TF_FORCE_GPU_ALLOW_GROWTH", "False"),  # ignored, but TensorFlow's default is what was meant
        ("XLA_PYTHON_CLIENT_PREALLOCATE", "false"),
        ("XLA_PYTHON_CLIENT_PREALLOCATE", "0"),
        ("XLA_PYTHON_CLIENT_PREALLOCATE", "true"),
        ("XLA_PYTHON_CLIENT_MEM_FRACTION", ".95"),
        ("XLA_PYTHON_CLIENT_ALLOCATOR", "PLATFORM"),  # JAX lower-cases it
        ("JAX_PLATFORMS", "cuda,cpu"),
        ("JAX_PLATFORMS", ""),
    ],
)
def test_a_setting_read_as_meant_stays_silent(variable: str, value: str) -> None:
    assert _misread({variable: value}, tensorflow=TF, jax=JAX) == []


def test_a_setting_for_a_framework_that_is_not_a_cuda_build_does_not_apply() -> None:
    cpu_jax = dict(JAX, build="cpu")
    assert _misread({"JAX_PLATFORMS": "cpu", "XLA_PYTHON_CLIENT_PREALLOCATE": "FALSE"}, jax=cpu_jax) == []
    assert _misread({"TF_FORCE_GPU_ALLOW_GROWTH": "True"}, jax=JAX) == []  # no TensorFlow here


def test_missing_facts_make_it_unknown_or_skip() -> None:
    assert run_check("env-setting-misread", stated({}, framework__jax=JAX)).outcome == "unknown"  # no env
    frameworks_unknown = stated({}, env={"JAX_PLATFORMS": "cpu"})
    assert run_check("env-setting-misread", frameworks_unknown).outcome == "unknown"
    no_frameworks = stated({}, env={"JAX_PLATFORMS": "cpu"})
    for name in ("torch", "tensorflow", "jax", "cupy"):
        no_frameworks.add(absent(f"framework.{name}", "test", "not installed"))
    assert run_check("env-setting-misread", no_frameworks).outcome == "skipped"


def test_the_finding_says_what_happens_and_how_to_set_it() -> None:
    snap = stated({}, env={"TF_FORCE_GPU_ALLOW_GROWTH": "True"}, framework__tensorflow=TF)
    [f] = run_check("env-setting-misread", snap).findings
    assert (f.cause, f.severity) == ("gpu-oom", Severity.WARNING)
    assert "maps nearly all GPU memory at start" in f.title
    assert f.fix[0].startswith("export TF_FORCE_GPU_ALLOW_GROWTH=true")
    [bad] = run_check(
        "env-setting-misread", stated({}, env={"XLA_PYTHON_CLIENT_MEM_FRACTION": "90%"}, framework__jax=JAX)
    ).findings
    assert bad.severity == Severity.ERROR and "Unable to initialize backend 'cuda'" in bad.title


def test_preallocation_reads_the_value_as_the_framework_does() -> None:
    """TF_FORCE_GPU_ALLOW_GROWTH=True leaves TensorFlow preallocating on a shared GPU, and
    XLA_PYTHON_CLIENT_PREALLOCATE=0 does turn JAX's preallocation off."""
    shared = [dict(GPU, processes=[{"pid": 7, "used_mib": 60000}])]

    def preallocates(env: dict[str, str], **frameworks: Any) -> list[str]:
        snap = stated(
            {}, env=env, gpu__devices=shared, **{f"framework__{k}": v for k, v in frameworks.items()}
        )
        return [f.id for f in run_check("preallocation-with-shared-gpu", snap).findings]

    assert preallocates({"TF_FORCE_GPU_ALLOW_GROWTH": "True"}, tensorflow=TF) == ["tensorflow-preallocates"]
    assert preallocates({"TF_FORCE_GPU_ALLOW_GROWTH": "true"}, tensorflow=TF) == []
    assert preallocates({"XLA_PYTHON_CLIENT_PREALLOCATE": "0"}, jax=JAX) == []
    assert preallocates({"XLA_PYTHON_CLIENT_PREALLOCATE": "FALSE"}, jax=JAX) == ["jax-preallocates"]


@pytest.mark.parametrize("value", ["false", "False", "0", "FALSE", "no", "off", "true", "1", "anything"])
def test_jax_preallocate_reading_matches_the_real_jaxlib(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    xla_client = pytest.importorskip("jaxlib.xla_client")
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", value)
    real = xla_client.generate_pjrt_gpu_plugin_options()["preallocate"]
    assert knowledge.env_flag("XLA_PYTHON_CLIENT_PREALLOCATE", value) is real


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("XLA_PYTHON_CLIENT_MEM_FRACTION", "90%"),
        ("XLA_PYTHON_CLIENT_MEM_FRACTION", ".9"),
        ("XLA_PYTHON_CLIENT_ALLOCATOR", "async"),
        ("XLA_PYTHON_CLIENT_ALLOCATOR", "Cuda_Async"),
    ],
)
def test_jax_refuses_exactly_the_values_the_check_calls_errors(
    variable: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    xla_client = pytest.importorskip("jaxlib.xla_client")
    monkeypatch.setenv(variable, value)
    try:
        xla_client.generate_pjrt_gpu_plugin_options()
        refused = False
    except ValueError:
        refused = True
    flagged = [t for t in _misread({variable: value}, jax=JAX) if "is not" in t]
    assert bool(flagged) is refused
