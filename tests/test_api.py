"""The Python API on real operands and real exceptions of numpy, torch, tensorflow and jax."""

from __future__ import annotations

import os
import subprocess
import sys
import traceback
import warnings
from typing import Any

import numpy as np
import pytest

import cudoctor
from cudoctor.preflight import PreflightError, PreflightWarning

torch = pytest.importorskip("torch")


def _real_error(fn: Any) -> BaseException:
    try:
        fn()
    except Exception as exc:
        return exc
    raise AssertionError("the framework accepted operands preflight rejects")


# ---------------------------------------------------------------- preflight, each rule against the real call
def test_shape_rule_matches_every_framework() -> None:
    tf = pytest.importorskip("tensorflow")
    jnp = pytest.importorskip("jax.numpy")
    cases = [
        (np.ones((2, 3)), np.ones((2, 3)), lambda a, b: a @ b),
        (torch.ones(2, 3), torch.ones(2, 3), torch.matmul),
        (tf.ones((2, 3)), tf.ones((2, 3)), tf.matmul),
        (jnp.ones((2, 3)), jnp.ones((2, 3)), jnp.matmul),
    ]
    for a, b, op in cases:
        with pytest.raises(PreflightError) as info:
            cudoctor.preflight.matmul(a, b)
        assert info.value.cause == "shape-mismatch" and "[2, 3] and [2, 3]" in info.value.title
        _real_error(lambda: op(a, b))  # noqa: B023 - the real library rejects the same operands


def test_valid_shapes_predict_the_real_result() -> None:
    tf = pytest.importorskip("tensorflow")
    jnp = pytest.importorskip("jax.numpy")
    for a, b, op in [
        (np.ones((5, 2, 3)), np.ones((3, 4)), lambda a, b: a @ b),
        (torch.ones(7, 1, 2, 3), torch.ones(5, 3, 4), torch.matmul),
        (torch.ones(3), torch.ones(3, 4), torch.matmul),
        (tf.ones((2, 3)), tf.ones((3, 4)), tf.matmul),
        (jnp.ones((6, 2, 3)), jnp.ones((6, 3, 4)), jnp.matmul),
    ]:
        expected = tuple(op(a, b).shape)
        assert cudoctor.preflight.matmul(a, b).out_shape == expected


def test_dtype_rule_strict_frameworks_refuse_mixed_dtypes() -> None:
    tf = pytest.importorskip("tensorflow")
    for a, b, op in [
        (torch.ones(2, 3), torch.ones(3, 4, dtype=torch.float64), torch.matmul),
        (tf.ones((2, 3)), tf.ones((3, 4), dtype=tf.float64), tf.matmul),
    ]:
        with pytest.raises(PreflightError) as info:
            cudoctor.preflight.matmul(a, b)
        assert info.value.cause == "dtype-mismatch" and "float64" in info.value.fix[0]
        _real_error(lambda: op(a, b))  # noqa: B023


def test_dtype_rule_promoting_frameworks_predict_the_result_dtype() -> None:
    jnp = pytest.importorskip("jax.numpy")
    a, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float64)
    assert cudoctor.preflight.matmul(a, b).out_dtype == str((a @ b).dtype)
    ja, jb = jnp.ones((2, 3), jnp.bfloat16), jnp.ones((3, 4), jnp.float32)
    assert cudoctor.preflight.matmul(ja, jb).out_dtype == str(jnp.matmul(ja, jb).dtype)


def test_device_rule_with_two_real_jax_devices() -> None:
    code = (
        "import jax, jax.numpy as jnp, cudoctor\n"
        "d = jax.devices()\n"
        "a = jax.device_put(jnp.ones((2, 3)), d[0]); b = jax.device_put(jnp.ones((3, 4)), d[1])\n"
        "try:\n    cudoctor.preflight.matmul(a, b)\nexcept cudoctor.PreflightError as e:\n    print('PREFLIGHT', e.cause)\n"
        "try:\n    jnp.matmul(a, b)\nexcept Exception as e:\n    print('REAL', cudoctor.explain(e).top['id'])\n"
    )
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert "PREFLIGHT device-mismatch" in out.stdout and "REAL device-mismatch" in out.stdout, out.stderr[
        -500:
    ]


def test_output_that_cannot_fit_in_memory() -> None:
    a, b = torch.empty(200_000, 1), torch.empty(1, 200_000)  # a 149 GiB result from 1.6 MB of inputs
    with pytest.raises(PreflightError) as info:
        cudoctor.preflight.matmul(a, b)
    assert info.value.cause == "host-oom" and "GiB" in info.value.title
    with pytest.raises(PreflightError):
        cudoctor.preflight.matmul(np.empty((200_000, 1), np.float32), np.empty((1, 200_000), np.float32))


def test_layout_and_element_count_warnings() -> None:
    strided = torch.ones(64, 64)[:, ::2]
    with pytest.warns(PreflightWarning, match="neither contiguous"):
        cudoctor.preflight.matmul(strided, torch.ones(32, 8))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        cudoctor.preflight.matmul(torch.ones(4, 4).t(), torch.ones(4, 4))  # a transposed matrix is fine
    assert [str(w.message) for w in record] == []
    huge = torch.empty(1).expand(2**31 + 1)  # no memory behind it
    with pytest.warns(PreflightWarning, match="2\\^31"):
        cudoctor.preflight.matmul(huge, huge)


def test_bmm_and_linear_rules() -> None:
    with pytest.raises(PreflightError, match="bmm needs"):
        cudoctor.preflight.bmm(torch.ones(2, 3, 4), torch.ones(3, 4, 5))
    assert cudoctor.preflight.bmm(torch.ones(2, 3, 4), torch.ones(2, 4, 5)).out_shape == (2, 3, 5)
    layer = torch.nn.Linear(25088, 512)
    x = torch.ones(1, 32768)
    with pytest.raises(PreflightError) as info:
        cudoctor.preflight.linear(x, layer.weight, layer.bias)
    assert "32768" in info.value.title and "nn.Linear(32768, 512)" in info.value.fix[0]
    _real_error(lambda: layer(x))
    assert cudoctor.preflight.linear(torch.ones(3, 25088), layer.weight, layer.bias).out_shape == (3, 512)


def test_non_array_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="not an array"):
        cudoctor.preflight.matmul([[1, 2]], [[3], [4]])


# ---------------------------------------------------------------- guard and explain on real exceptions
def _guarded(fn: Any) -> BaseException:
    try:
        with cudoctor.guard():
            fn()
    except Exception as exc:
        return exc
    raise AssertionError("nothing was raised")


def test_guard_adds_a_note_and_keeps_type_and_traceback() -> None:
    exc = _guarded(lambda: torch.ones(2, 3) @ torch.ones(2, 3))
    assert type(exc) is RuntimeError and "mat1 and mat2 shapes cannot be multiplied" in str(exc)
    notes = getattr(exc, "__notes__", [])
    assert len(notes) == 1 and "[shape-mismatch" in notes[0]
    frames = [f.name for f in traceback.extract_tb(exc.__traceback__)]
    assert "<lambda>" in frames and "_guarded" in frames


@pytest.mark.parametrize(
    ("framework", "cause"),
    [
        ("tensorflow-dtype", "dtype-mismatch"),
        ("jax-shape", "shape-mismatch"),
        ("numpy-shape", "shape-mismatch"),
        ("torch-dtype", "dtype-mismatch"),
    ],
)
def test_guard_explains_real_framework_errors(framework: str, cause: str) -> None:
    if framework.startswith("tensorflow"):
        tf = pytest.importorskip("tensorflow")
        fn = lambda: tf.matmul(tf.ones((2, 3)), tf.ones((3, 4), dtype=tf.float64))  # noqa: E731
    elif framework.startswith("jax"):
        jnp = pytest.importorskip("jax.numpy")
        fn = lambda: jnp.matmul(jnp.ones((2, 3)), jnp.ones((2, 3)))  # noqa: E731
    elif framework.startswith("numpy"):
        fn = lambda: np.ones((2, 3)) @ np.ones((2, 3))  # noqa: E731
    else:
        fn = lambda: torch.mm(torch.ones(2, 3, dtype=torch.float64), torch.ones(3, 4))  # noqa: E731
    exc = _guarded(fn)
    assert f"[{cause}" in "\n".join(getattr(exc, "__notes__", []))


def test_guard_leaves_unrelated_errors_alone_and_works_as_decorator() -> None:
    exc = _guarded(lambda: {}["missing"])
    assert isinstance(exc, KeyError) and not getattr(exc, "__notes__", None)

    @cudoctor.guard()
    def step() -> Any:
        return torch.ones(2, 3) @ torch.ones(2, 3)

    with pytest.raises(RuntimeError) as info:
        step()
    assert "[shape-mismatch" in info.value.__notes__[0]


def test_explain_text_and_check_api() -> None:
    d = cudoctor.explain("RuntimeError: CUDA error: device-side assert triggered")
    assert (
        d.matched
        and d.top is not None
        and d.top["id"] == "illegal-memory-access"
        and "CUDA_LAUNCH_BLOCKING=1" in str(d)
    )
    assert not cudoctor.explain("all good").matched
    # tensorflow/tensorflow#64809: a notebook cell's TensorRT notice is not the error
    notice = cudoctor.explain(
        "W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: Could not find TensorRT"
    )
    assert not notice.matched and [h["id"] for h in notice.harmless] == ["tf-tensorrt-not-found"]
    assert str(notice).startswith("cudoctor: no error found") and "TensorRT not installed" in str(notice)
    report = cudoctor.check(facts={"gpu": "A100", "framework_version": "tensorflow-gpu 1.13.1"}, live=False)
    assert [f.id for f in report.findings][:1] == ["arch-unsupported"] and report.exit_code == 1


def test_import_is_cheap_and_imports_no_framework() -> None:
    code = "import sys, cudoctor; print(sorted(m for m in ('torch','tensorflow','jax','numpy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_ipython_extension_explains_cell_errors() -> None:
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.run_line_magic("load_ext", "cudoctor")
        result = shell.run_cell("import torch\ntorch.ones(2, 3) @ torch.ones(2, 3)")
        exc = result.error_in_exec
        assert isinstance(exc, RuntimeError) and "[shape-mismatch" in exc.__notes__[0]
        plain = shell.run_cell("{}['x']").error_in_exec
        assert isinstance(plain, KeyError) and not getattr(plain, "__notes__", None)
    finally:
        shell.run_line_magic("unload_ext", "cudoctor")
        InteractiveShell.clear_instance()
