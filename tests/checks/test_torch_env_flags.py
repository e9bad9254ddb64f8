"""PyTorch's boolean environment variables, which c10's check_env reads as exactly "0" or "1":
the check names a value the installed release ignores (TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=true) and,
before 2.7, PYTORCH_NO_CUDA_MEMORY_CACHING set to anything (0 included); explain reads the warning
PyTorch prints. The readings are checked against the real torch in a child process."""

from __future__ import annotations

from typing import Any

import pytest

from cudoctor import knowledge
from cudoctor.explainer import rank
from tests.conftest import python_output, run_check, stated
from tests.explainer.helpers import explain_text, rooted

TORCH = {"version": "2.5.1+cu124", "build": "cuda", "cuda": "12.4"}
IGNORED = "Ignoring invalid value for boolean flag"
TF32_WARNING = (
    "/opt/conda/lib/python3.11/site-packages/torch/__init__.py:1236: UserWarning: Ignoring invalid value for "
    "boolean flag TORCH_ALLOW_TF32_CUBLAS_OVERRIDE: truevalid values are 0 or 1. (Triggered internally at "
    "../c10/util/env.cpp:89.)"
)
CUBLAS_FAILED = (
    "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, opb, "
    "m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`"
)


def _titles(check_id: str, env: dict[str, str], version: str | None) -> list[str]:
    snap = stated({}, env=env, framework__torch=dict(TORCH, version=version))
    return [f.title for f in run_check(check_id, snap).findings]


@pytest.mark.parametrize(
    ("variable", "value", "version"),
    [
        ("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "true", "2.5.1+cu124"),
        ("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", " 1", "2.13.0"),
        ("TORCH_SHOW_CPP_STACKTRACES", "yes", "2.13.0"),
        ("PYTORCH_NO_CUDA_MEMORY_CACHING", "True", "2.7.0"),
    ],
)
def test_a_torch_flag_written_otherwise_than_1_is_named_as_ignored(
    variable: str, value: str, version: str
) -> None:
    [title] = _titles("env-setting-misread", {variable: value}, version)
    assert title.startswith(f"{variable}={value!r} is ignored: PyTorch warns '{IGNORED}'")


@pytest.mark.parametrize(
    ("env", "version"),
    [
        ({"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1", "TORCH_SHOW_CPP_STACKTRACES": "0"}, "2.13.0"),
        ({"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "false"}, "2.13.0"),  # ignored, but off is what was meant
        ({"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "true"}, None),  # a release not known: not judged
        ({"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "true"}, "1.13.1"),  # older than the reading's source
        ({"PYTORCH_NO_CUDA_MEMORY_CACHING": "true"}, "2.6.0"),  # read as set: setting-left-on's case
    ],
)
def test_a_torch_flag_read_as_meant_or_not_judged_stays_silent(
    env: dict[str, str], version: str | None
) -> None:
    assert _titles("env-setting-misread", env, version) == []


@pytest.mark.parametrize(
    ("value", "version", "fires", "note"),
    [
        ("0", "2.5.1+cu124", True, True),  # pytorch/pytorch#145661: 0 turned caching off too
        ("true", "2.6.0", True, True),
        ("1", "2.5.1+cu124", True, False),  # meant: no note about other values
        ("1", "2.13.0", True, False),
        ("0", "2.7.0", False, False),
        ("true", "2.13.0", False, False),  # ignored since 2.7: env-setting-misread's case
        ("0", None, False, False),  # release not known: only the documented value counts
    ],
)
def test_no_memory_caching_before_2_7_is_on_whatever_its_value(
    value: str, version: str | None, fires: bool, note: bool
) -> None:
    titles = _titles("setting-left-on", {"PYTORCH_NO_CUDA_MEMORY_CACHING": value}, version)
    assert len(titles) == int(fires)
    assert any("PyTorch before 2.7 turns its caching allocator off whenever" in t for t in titles) is note


def _torch_reads(variable: str, value: str, code: str) -> tuple[str, bool]:
    """What `code` printed after 'read:' with the variable set, and whether PyTorch warned."""
    status, out = python_output(code, env={variable: value})
    assert status == 0, out
    [read] = [line.removeprefix("read: ") for line in out.splitlines() if line.startswith("read: ")]
    return read, IGNORED in out


@pytest.mark.parametrize("value", ["1", "0", "true", "TRUE", "yes", " 1", ""])
def test_tf32_override_reading_matches_the_real_torch(value: str) -> None:
    pytest.importorskip("torch")
    row: Any = knowledge.env_setting("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE")
    allow_tf32, warned = _torch_reads(
        "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
        value,
        "import torch; print('read:', torch.backends.cuda.matmul.allow_tf32)",
    )
    read = knowledge.flag_reading(row, value)
    assert allow_tf32 == str(read is True)
    assert warned is (value not in ("0", "1"))  # an empty value is ignored with the warning too


@pytest.mark.parametrize("value", ["1", "true"])
def test_cpp_stacktrace_reading_matches_the_real_torch(value: str) -> None:
    pytest.importorskip("torch")
    row: Any = knowledge.env_setting("TORCH_SHOW_CPP_STACKTRACES")
    code = (
        "import torch\n"
        "try:\n    torch.ops.aten.mm(torch.ones(2, 3), torch.ones(2, 3))\n"
        "except RuntimeError as e:\n    print('read:', len(str(e)) > 1000)"
    )
    with_trace, warned = _torch_reads("TORCH_SHOW_CPP_STACKTRACES", value, code)
    assert with_trace == str(knowledge.flag_reading(row, value) is True)
    assert warned is (value != "1")


def test_explain_reads_the_warning_the_real_torch_prints() -> None:
    pytest.importorskip("torch")
    _, out = python_output("import torch", env={"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "yes"})
    exp = rooted(out, "env-setting-invalid/torch-bool-flag-ignored")
    assert exp.causes[0].id == "env-setting-invalid"
    assert exp.causes[0].fixes[0].startswith("PyTorch ignored TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=yes:")
    assert "Set TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1" in exp.causes[0].fixes[0]


def test_the_warning_gives_way_to_the_error_that_follows_it() -> None:
    """The warning comes first and is as specific as the cuBLAS failure: the failure is the root,
    and the ignored setting is a lesser cause."""
    exp = explain_text(TF32_WARNING + "\nTraceback (most recent call last):\n" + CUBLAS_FAILED)
    assert exp.root is not None and exp.root.sig.id == "library-bug/cublas-execution-failed"
    causes = [c.id for c in exp.causes]
    assert causes[0] == "library-bug" and "env-setting-invalid" in causes[1:]
    assert rank.pick_root([m for m in exp.matches if m.sig.warning]) is not None  # alone, it is the root


def test_amd_serialize_kernel_3_is_harmless_and_never_the_root() -> None:
    """The HIP runtime reads AMD_SERIALIZE_KERNEL=3 itself; PyTorch's warning about it is noise
    before the HIP error that matters."""
    warning = (
        "/opt/conda/envs/py_3.12/lib/python3.12/site-packages/torch/utils/_device.py:104: UserWarning: Ignoring "
        "invalid value for boolean flag AMD_SERIALIZE_KERNEL: 3valid values are 0 or 1. (Triggered internally at "
        "/app/pytorch/c10/util/env.cpp:86.)"
    )
    alone = explain_text(warning)
    assert alone.root is None and alone.causes == []
    assert list(alone.scan.benign) == ["torch-amd-serialize-kernel-3"]
    before = explain_text(
        warning + "\nERROR 06-10 07:32:06 [engine.py:448] HIP error: invalid device function"
    )
    assert before.root is not None and before.root.line == 2
