"""Deterministic mode: TensorFlow variables read through a CHECK (tf-env-unparsable), PyTorch's
exact-text CUBLAS_WORKSPACE_CONFIG (cublas-workspace-config), and explain on the errors deterministic
mode raises. TensorFlow's reading is checked against the installed tensorflow-cpu, aborts included;
PyTorch's per-operation error is the one the installed torch raises."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
from typing import Any

import pytest

from cudoctor import knowledge
from cudoctor.checks import determinism
from cudoctor.explainer import rank, scan
from cudoctor.facts import host
from cudoctor.model import Severity, Snapshot, absent
from tests.conftest import run_check, stated
from tests.explainer.helpers import explain_text, rooted, top

TF_CPU = {"version": "2.21.0", "build": "cpu"}
TF_CUDA = {"version": "2.15.0", "build": "cuda", "cuda": "12.2"}
TORCH_CUDA = {"version": "2.5.1+cu124", "build": "cuda", "cuda": "12.4"}
TORCH_CPU = {"version": "2.13.0+cpu", "build": "cpu"}


def _tf_findings(env: dict[str, str], tf: dict[str, Any] = TF_CPU) -> list[Any]:
    return list(run_check("tf-env-unparsable", stated({}, env=env, framework__tensorflow=tf)).findings)


# ------------------------------------------------------------------ tf-env-unparsable
@pytest.mark.parametrize("value", ["yes", "on", "", " 1", "1 ", "'1'", "2"])
def test_a_bool_tensorflow_cannot_parse_is_an_error(value: str) -> None:
    [f] = _tf_findings({"TF_DETERMINISTIC_OPS": value})
    assert f.severity is Severity.ERROR and f.cause == "env-setting-invalid"
    assert f.title.startswith(f"TF_DETERMINISTIC_OPS={value!r} is not 0, 1, true or false")
    assert "aborts the process" in f.title


@pytest.mark.parametrize("value", ["1", "0", "true", "TRUE", "False"])
def test_a_bool_tensorflow_reads_stays_silent(value: str) -> None:
    assert _tf_findings({"TF_DETERMINISTIC_OPS": value, "TF_ONEDNN_USE_SYSTEM_ALLOCATOR": value}) == []


@pytest.mark.parametrize(
    ("value", "parses"), [("8GB", False), ("0x10", False), ("", False), (" 8 ", True), ("+8", True)]
)
def test_an_int64_is_read_as_absl_reads_a_whole_number(value: str, parses: bool) -> None:
    assert determinism.tf_parses("int64", value) is parses
    assert bool(_tf_findings({"TF_PFLR_PARALLEL_INSTANTIATE_THRESHOLD": value})) is not parses


def test_gpu_only_variables_matter_only_to_a_cuda_build() -> None:
    env = {"TF_CUDNN_DETERMINISTIC": "on", "TF_PER_DEVICE_MEMORY_LIMIT_MB": "4GB"}
    assert _tf_findings(env, TF_CPU) == []
    titles = [f.title for f in _tf_findings(env, TF_CUDA)]
    assert len(titles) == 2 and titles[1].startswith(
        "TF_PER_DEVICE_MEMORY_LIMIT_MB='4GB' is not a whole number"
    )


def test_the_step_keeps_what_the_value_meant() -> None:
    [yes] = _tf_findings({"TF_DETERMINISTIC_OPS": "yes"})
    assert yes.fix[0].startswith("export TF_DETERMINISTIC_OPS=1")
    [off] = _tf_findings({"TF_USE_CUBLASLT": "off"}, TF_CUDA)
    assert off.fix[0].startswith("export TF_USE_CUBLASLT=0")
    [empty] = _tf_findings({"TF_DETERMINISTIC_OPS": ""})
    assert empty.fix[0].startswith("unset TF_DETERMINISTIC_OPS")
    [unit] = _tf_findings({"TF_PER_DEVICE_MEMORY_LIMIT_MB": "4GB"}, TF_CUDA)
    assert unit.fix[0].startswith("export TF_PER_DEVICE_MEMORY_LIMIT_MB=<a whole number>")


def test_without_tensorflow_or_the_environment_it_is_skipped_or_unknown() -> None:
    no_tf = stated({}, env={"TF_DETERMINISTIC_OPS": "yes"})
    no_tf.add(absent("framework.tensorflow", "test", "not installed"))
    assert run_check("tf-env-unparsable", no_tf).outcome == "skipped"
    assert run_check("tf-env-unparsable", stated({}, framework__tensorflow=TF_CPU)).outcome == "unknown"


def test_every_checked_variable_is_collected_from_the_environment() -> None:
    env = {row["variable"]: "1" for row in knowledge.table("env_settings")["checked_read"]}
    collected = host.relevant_env({**env, "AWS_SECRET_ACCESS_KEY": "x", "CUBLAS_WORKSPACE_CONFIG": ":4096:8"})
    assert set(collected) == set(env) | {"CUBLAS_WORKSPACE_CONFIG"}


def _run_tensorflow(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("tensorflow")
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "0", **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


TF_FUNCTION = "import tensorflow as tf\nf = tf.function(lambda x: x + 1)\nprint(float(f(tf.ones([]))))"
TF_ONEDNN_OP = (
    "import tensorflow as tf\nprint(float(tf.reduce_sum(tf.matmul(tf.ones([2, 2]), tf.ones([2, 2])))))"
)


@pytest.mark.parametrize(
    ("variable", "value", "code"),
    [
        ("TF_PFLR_PARALLEL_INSTANTIATE_THRESHOLD", "8GB", TF_FUNCTION),
        ("TF_PFLR_PARALLEL_INSTANTIATE_THRESHOLD", " 8 ", TF_FUNCTION),
        ("TF_ONEDNN_USE_SYSTEM_ALLOCATOR", "yes", TF_ONEDNN_OP),
        ("TF_ONEDNN_USE_SYSTEM_ALLOCATOR", "TRUE", TF_ONEDNN_OP),
    ],
)
def test_the_check_agrees_with_the_installed_tensorflow(variable: str, value: str, code: str) -> None:
    """The real tensorflow-cpu aborts exactly where the check says it does, and explain reads the
    line it prints before dying."""
    # TensorFlow turns oneDNN on by default only on Intel CPUs with AVX512_VNNI, AVX512_BF16 or AMX;
    # TF_ENABLE_ONEDNN_OPTS=1 turns it on elsewhere (an AMD EPYC), so the variable is read there too
    onednn = {"TF_ENABLE_ONEDNN_OPTS": "1"} if variable.startswith("TF_ONEDNN_") else {}
    done = _run_tensorflow(code, {variable: value, **onednn})
    row = next(r for r in knowledge.table("env_settings")["checked_read"] if r["variable"] == variable)
    parses = determinism.tf_parses(row["parse"], value)
    assert (done.returncode == 0) is parses, done.stderr[-2000:]
    if not parses:
        assert done.returncode == -signal.SIGABRT
        exp = explain_text(done.stderr)
        assert exp.root is not None and exp.root.sig.id == "env-setting-invalid/tf-env-unparsable"
        assert top(exp)[0] == "env-setting-invalid" and variable in exp.causes[0].fixes[0]


def test_explain_reads_tensorflows_unseeded_random_op_under_determinism() -> None:
    done = _run_tensorflow(
        "import tensorflow as tf\nprint(tf.random.normal([2]))", {"TF_DETERMINISTIC_OPS": "1"}
    )
    assert done.returncode == 1
    exp = explain_text(done.stderr)
    assert exp.root is not None and exp.root.sig.id == "determinism-unmet/tf-random-op-needs-seed"
    assert top(exp)[0] == "determinism-unmet" and "set_random_seed" in exp.causes[0].fixes[0]


# ------------------------------------------------------------------ cublas-workspace-config
def _workspace(value: str, torch: dict[str, Any] = TORCH_CUDA) -> list[Any]:
    snap = stated({}, env={"CUBLAS_WORKSPACE_CONFIG": value}, framework__torch=torch)
    return list(run_check("cublas-workspace-config", snap).findings)


@pytest.mark.parametrize(
    ("value", "meant"),
    [(" :4096:8", ":4096:8"), ("4096:8", ":4096:8"), ("':16:8'", ":16:8"), (":4096:8:16:8", ":4096:8")],
)
def test_a_deterministic_setting_written_loosely_warns(value: str, meant: str) -> None:
    [f] = _workspace(value)
    assert f.severity is Severity.WARNING and f.cause == "determinism-unmet"
    assert "PyTorch compares the exact text" in f.title
    assert f.fix[0].startswith(f"export CUBLAS_WORKSPACE_CONFIG={meant}  (no quotes")


def test_a_setting_pytorch_cannot_read_is_noted() -> None:
    [f] = _workspace("16MB")
    assert f.severity is Severity.INFO and "Could not parse CUBLAS_WORKSPACE_CONFIG" in f.title


@pytest.mark.parametrize("value", [":4096:8", ":16:8", ":4096:2:16:8"])
def test_exact_and_sizing_settings_stay_silent(value: str) -> None:
    assert _workspace(value) == []


def test_a_cpu_torch_never_reads_it_and_no_environment_is_unknown() -> None:
    assert _workspace("4096:8", TORCH_CPU) == []
    assert run_check("cublas-workspace-config", stated({}, framework__torch=TORCH_CUDA)).outcome == "unknown"


# ------------------------------------------------------------------ explain
CUBLAS_DETERMINISM = (
    "RuntimeError: Deterministic behavior was enabled with either `torch.use_deterministic_algorithms(True)` or "
    "`at::Context::setDeterministicAlgorithms(true)`, but this operation is not deterministic because it uses CuBLAS "
    "and you have CUDA >= 10.2. To enable deterministic behavior in this case, you must set an environment variable "
    "before running your PyTorch application: CUBLAS_WORKSPACE_CONFIG=:4096:8 or CUBLAS_WORKSPACE_CONFIG=:16:8."
)


def _explain_with_env(text: str, env: dict[str, str]) -> rank.Explanation:
    snap: Snapshot = stated({}, env=env)
    return rank.explain(scan.scan(io.BytesIO(text.encode())), snap)


def test_explain_of_the_cublas_error_says_what_this_environment_holds() -> None:
    plain = rooted(CUBLAS_DETERMINISM, "determinism-unmet/torch-cublas-workspace")
    assert top(plain)[0] == "determinism-unmet"
    assert plain.causes[0].fixes[0].startswith("PyTorch's deterministic mode")
    right = _explain_with_env(CUBLAS_DETERMINISM, {"CUBLAS_WORKSPACE_CONFIG": ":4096:8"})
    assert "the failing process did not" in right.causes[0].fixes[0]
    loose = _explain_with_env(CUBLAS_DETERMINISM, {"CUBLAS_WORKSPACE_CONFIG": "':4096:8'"})
    assert (
        loose.causes[0]
        .fixes[0]
        .startswith("CUBLAS_WORKSPACE_CONFIG is \"':4096:8'\"; torch compares the exact text")
    )


def test_explain_reads_what_the_installed_torch_raises_for_an_operation_without_a_deterministic_kernel() -> (
    None
):
    torch = pytest.importorskip("torch")
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        with pytest.raises(RuntimeError) as raised:
            torch.zeros(5).put_(torch.tensor([0, 0]), torch.tensor([1.0, 2.0]), accumulate=False)
    finally:
        torch.use_deterministic_algorithms(before)
    exp = rooted(f"RuntimeError: {raised.value}", "determinism-unmet/torch-op-no-deterministic-impl")
    assert top(exp)[0] == "determinism-unmet" and exp.causes[0].fixes[0].startswith(
        "put_ has no deterministic"
    )


def test_the_warn_only_warnings_are_not_the_root_error() -> None:
    torch = pytest.importorskip("torch")
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        with pytest.warns(UserWarning) as warned:
            torch.zeros(5).put_(torch.tensor([0, 0]), torch.tensor([1.0, 2.0]), accumulate=False)
    finally:
        torch.use_deterministic_algorithms(before)
    exp = explain_text(f"train.py:4: UserWarning: {warned[0].message}")
    assert exp.root is None and exp.causes == []


def test_torch_17s_set_deterministic_wording_is_the_same_cause() -> None:
    """pytorch/pytorch#50469: torch 1.7 called the switch torch.set_deterministic."""
    line = (
        "RuntimeError: scatter_add_cuda_kernel does not have a deterministic implementation, but you set "
        "'torch.set_deterministic(True)'. You can turn off determinism just for this operation if that's "
        "acceptable for your application."
    )
    exp = rooted(line, "determinism-unmet/torch-op-no-deterministic-impl")
    assert top(exp)[0] == "determinism-unmet"
    assert exp.causes[0].fixes[0].startswith("scatter_add_cuda_kernel has no deterministic")


def test_the_deterministic_index_put_assert_is_a_torch_bug_not_a_bad_index() -> None:
    """pytorch/pytorch#105819: a[[64]] = 1.0 on CUDA under deterministic mode trips an internal assert."""
    line = (
        "RuntimeError: linearIndex.numel()*sliceSize*nElemBefore == expandedValue.numel() INTERNAL ASSERT FAILED "
        'at "/pytorch/aten/src/ATen/native/cuda/Indexing.cu":392, please report a bug to PyTorch. number of '
        "flattened indices did not match number of elements in the value tensor: 4 vs 1"
    )
    exp = rooted(line, "library-bug/torch-deterministic-index-put")
    assert top(exp)[:2] == ["library-bug", "determinism-unmet"]
    assert "index-out-of-range" not in top(exp)
    out_of_range = explain_text("IndexError: index 64 is out of bounds for dimension 0 with size 10")
    assert (
        out_of_range.root is None or out_of_range.root.sig.id != "library-bug/torch-deterministic-index-put"
    )
