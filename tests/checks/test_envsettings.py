"""env-setting-misread: framework settings in the environment read otherwise than meant. JAX's
reading is checked against the real jaxlib function that reads them."""

from __future__ import annotations

from typing import Any

import pytest

from cudoctor import knowledge
from cudoctor.model import Severity, absent
from tests.checks.test_jax_env_settings import jaxlib_backend_error
from tests.conftest import run_check, stated
from tests.explainer.helpers import explain_text, rooted, top

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
    [big] = run_check(
        "env-setting-misread", stated({}, env={"XLA_PYTHON_CLIENT_MEM_FRACTION": "100"}, framework__jax=JAX)
    ).findings
    assert "JAX starts, but" in big.title and "Unable to initialize" not in big.title  # jaxlib takes 100


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
        ("XLA_PYTHON_CLIENT_MEM_FRACTION", "100"),  # taken at start, fails later (jax-ml/jax#17426)
        ("XLA_PYTHON_CLIENT_ALLOCATOR", "async"),
        ("XLA_PYTHON_CLIENT_ALLOCATOR", "Cuda_Async"),
    ],
)
def test_jax_refuses_exactly_the_values_the_check_calls_errors(
    variable: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused = jaxlib_backend_error({variable: value}, monkeypatch)
    flagged = [t for t in _misread({variable: value}, jax=JAX) if "is not" in t]
    assert bool(flagged) is (refused is not None)


# ---------------------------------------------------------------- setting-left-on
TORCH = {"version": "2.5.1+cu124", "build": "cuda", "cuda": "12.4"}
TORCH_CPU = {"version": "2.5.1+cpu", "build": "cpu", "cuda": None}
TURING = {"index": 0, "name": "Tesla T4", "cc": "7.5", "memory_total_mib": 15360, "memory_used_mib": 0}


def _left_on(env: dict[str, str], gpus: list[dict[str, Any]] | None = None, **frameworks: Any) -> list[Any]:
    extra: dict[str, Any] = {f"framework__{k}": v for k, v in frameworks.items()}
    if gpus is not None:
        extra["gpu__devices"] = gpus
    return list(run_check("setting-left-on", stated({}, env=env, **extra)).findings)


def test_cuda_launch_blocking_left_on_warns_with_the_slowdown() -> None:
    found = _left_on({"CUDA_LAUNCH_BLOCKING": "1"}, torch=TORCH)
    assert [f.severity for f in found] == [Severity.WARNING]
    assert "CUDA_LAUNCH_BLOCKING=1 is set: every kernel launch waits" in found[0].title
    assert found[0].fix[0].startswith("unset CUDA_LAUNCH_BLOCKING")


@pytest.mark.parametrize(
    ("env", "frameworks"),
    [
        ({"CUDA_LAUNCH_BLOCKING": "0"}, {"torch": TORCH}),  # asynchronous, the default
        ({"CUDA_LAUNCH_BLOCKING": "1"}, {"torch": TORCH_CPU}),  # no CUDA framework to slow down
        ({"TF_CPP_MIN_LOG_LEVEL": "1"}, {"tensorflow": TF}),  # hides only INFO lines
        ({"TF_CPP_MIN_LOG_LEVEL": "3"}, {"torch": TORCH}),  # TensorFlow is not here
        ({}, {"torch": TORCH, "jax": JAX}),
    ],
)
def test_settings_that_cost_nothing_here_stay_silent(env: dict[str, str], frameworks: dict[str, Any]) -> None:
    assert _left_on(env, **frameworks) == []


def test_jax_disable_jit_is_read_as_jax_reads_a_boolean() -> None:
    assert len(_left_on({"JAX_DISABLE_JIT": "Yes"}, jax=JAX)) == 1
    assert _left_on({"JAX_DISABLE_JIT": "off"}, jax=JAX) == []


def test_tf_log_level_that_hides_the_library_warnings_is_noted() -> None:
    found = _left_on({"TF_CPP_MIN_LOG_LEVEL": "2"}, tensorflow=TF)
    assert [f.severity for f in found] == [Severity.INFO] and "Could not load dynamic library" in found[
        0
    ].title


def test_gpu_dependent_settings_need_the_gpus_they_matter_for() -> None:
    p2p, tf32 = {"NCCL_P2P_DISABLE": "1"}, {"NVIDIA_TF32_OVERRIDE": "0"}
    assert _left_on(p2p, [GPU], torch=TORCH) == []
    assert len(_left_on(p2p, [GPU, dict(GPU, index=1)], torch=TORCH)) == 1
    assert _left_on(tf32, [TURING], torch=TORCH) == []  # no TF32 before Ampere
    assert len(_left_on(tf32, [GPU], torch=TORCH)) == 1
    assert _left_on(tf32, None, torch=TORCH) == []  # GPUs unknown: no claim


def test_setting_left_on_without_the_environment_is_unknown() -> None:
    assert run_check("setting-left-on", stated({}, framework__torch=TORCH)).outcome == "unknown"


def test_every_left_on_row_names_frameworks_the_check_knows() -> None:
    rows = knowledge.table("env_settings")["left_on"]
    assert {f for row in rows for f in row["frameworks"]} <= {"torch", "tensorflow", "jax", "cupy"}
    assert all(row["severity"] in ("warning", "info") and row["values"] for row in rows)


@pytest.mark.parametrize(
    ("variable", "value"),
    [("XLA_PYTHON_CLIENT_MEM_FRACTION", "90%"), ("XLA_PYTHON_CLIENT_ALLOCATOR", "async")],
)
def test_explain_reads_what_jax_raises_for_a_refused_setting(
    variable: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The installed jaxlib's own error, wrapped the way jax's xla_bridge reports a backend that
    failed to start."""
    line = jaxlib_backend_error({variable: value}, monkeypatch)
    assert line is not None
    exp = rooted(line, "env-setting-invalid/jax-client-setting")
    assert top(exp)[0] == "env-setting-invalid"


GROWTH_IGNORED = (
    "E tensorflow/core/common_runtime/gpu/gpu_process_state.cc:123] The TF_FORCE_GPU_ALLOW_GROWTH environment "
    'variable is set but could not be parsed: "True". Valid values are "true" or "false". Using original config '
    "value of 0."
)
TF_OOM = (
    "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with "
    "shape[32768,16384] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc"
)


def test_explain_puts_the_ignored_growth_setting_first_under_an_oom() -> None:
    exp = explain_text(GROWTH_IGNORED + "\n" + TF_OOM)
    assert exp.root is not None and exp.root.line == 2 and top(exp)[0] == "gpu-oom"
    assert exp.causes[0].fixes[0].startswith("TensorFlow ignored TF_FORCE_GPU_ALLOW_GROWTH=True")


def test_the_ignored_growth_line_alone_is_not_an_error() -> None:
    exp = explain_text(GROWTH_IGNORED)
    assert exp.root is None and exp.causes == []
