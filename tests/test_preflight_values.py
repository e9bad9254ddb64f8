"""preflight's opt-in value checks (values=True): NaN or Inf in an operand, and a float16 product
that can overflow. Each warning is checked against what the real framework then computes."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

import cudoctor
from cudoctor.preflight import PreflightWarning
from cudoctor.preflight_values import FLOAT16_MAX, read

NAN = float("nan")


def _silent(call: Any) -> Any:
    """The call's result, failing the test on any PreflightWarning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", PreflightWarning)
        return call()


def test_a_float16_product_that_can_overflow_is_named_and_does_overflow() -> None:
    torch = pytest.importorskip("torch")
    a = torch.full((4, 1000), 100.0, dtype=torch.float16)  # rows sum to 1e5
    b = torch.ones(1000, 4, dtype=torch.float16)
    with pytest.warns(PreflightWarning, match=r"float16 product can reach 1e\+05"):
        cudoctor.preflight.matmul(a, b, values=True)
    assert torch.isinf(a @ b).all()


def test_a_float16_product_within_range_stays_silent_and_finite() -> None:
    torch = pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(64, 512, generator=gen).half()
    b = torch.randn(512, 64, generator=gen).half()
    _silent(lambda: cudoctor.preflight.matmul(a, b, values=True))
    assert torch.isfinite(a @ b).all()


def test_the_bound_holds_only_for_float16_results() -> None:
    torch = pytest.importorskip("torch")
    big = torch.full((2, 1000), 100.0)
    for dtype in (torch.bfloat16, torch.float32):
        _silent(
            lambda d=dtype: cudoctor.preflight.matmul(big.to(d), torch.ones(1000, 2, dtype=d), values=True)
        )


@pytest.mark.parametrize("framework", ["numpy", "torch", "jax", "tensorflow"])
def test_nan_in_an_operand_is_named_in_every_framework(framework: str) -> None:
    np = pytest.importorskip("numpy")
    host = np.array([[NAN, 1.0], [2.0, 3.0]], dtype=np.float32)
    if framework == "numpy":
        a = host
    elif framework == "torch":
        a = pytest.importorskip("torch").from_numpy(host)
    elif framework == "jax":
        a = pytest.importorskip("jax.numpy").asarray(host)
    else:
        a = pytest.importorskip("tensorflow").constant(host)
    with pytest.warns(PreflightWarning, match=r"a holds 1 NaN or Inf value"):
        cudoctor.preflight.matmul(a, a, values=True)


def test_a_linear_layer_weight_holding_inf_is_called_the_weight() -> None:
    torch = pytest.importorskip("torch")
    layer = torch.nn.Linear(3, 2)
    with torch.no_grad():
        layer.weight[0, 0] = float("inf")
    with pytest.warns(PreflightWarning, match=r"weight holds 1 NaN or Inf"):
        cudoctor.preflight.linear(torch.ones(4, 3), layer.weight, layer.bias, values=True)
    assert not torch.isfinite(layer(torch.ones(4, 3))).all()


def test_values_are_read_only_when_asked() -> None:
    np = pytest.importorskip("numpy")
    a = np.array([[NAN, 1.0]])
    _silent(lambda: cudoctor.preflight.matmul(a, np.ones((2, 2))))


def test_tensorflow_float16_overflow_is_named_and_does_overflow() -> None:
    tf = pytest.importorskip("tensorflow")
    a = tf.fill((2, 1000), tf.constant(100.0, tf.float16))
    b = tf.ones((1000, 2), tf.float16)
    with pytest.warns(PreflightWarning, match="float16 product can reach"):
        cudoctor.preflight.matmul(a, b, values=True)
    assert bool(tf.reduce_all(tf.math.is_inf(tf.cast(tf.matmul(a, b), tf.float32))))


def test_integer_operands_and_unknown_frameworks_are_not_read() -> None:
    np = pytest.importorskip("numpy")
    assert read("numpy", np.ones((2, 2), dtype=np.int64), "int64") is None
    assert read("cupy", np.ones((2, 2)), "float32") is None
    values = read("numpy", np.array([[1.0, -2.0], [3.0, 4.0]]), "float64")
    assert values is not None and (values.max_abs, values.max_row_sum) == (4.0, 7.0)
    assert float(np.finfo(np.float16).max) == FLOAT16_MAX


def test_a_linear_layer_bias_counts_in_the_bound_and_is_read_for_nan() -> None:
    torch = pytest.importorskip("torch")
    x = torch.full((2, 10), 1000.0, dtype=torch.float16)  # rows sum to 1e4
    weight = torch.full((3, 10), 6.0, dtype=torch.float16)  # 6e4 without the bias: within range
    bias = torch.full((3,), 6000.0, dtype=torch.float16)  # 6.6e4 with it: past 65504
    _silent(lambda: cudoctor.preflight.linear(x, weight, None, values=True))
    with pytest.warns(PreflightWarning, match=r"float16 product can reach 6\.6e\+04"):
        cudoctor.preflight.linear(x, weight, bias, values=True)
    assert torch.isinf(torch.nn.functional.linear(x, weight, bias)).all()
    with pytest.warns(PreflightWarning, match=r"bias holds 1 NaN or Inf"):
        cudoctor.preflight.linear(x, weight, torch.tensor([NAN, 0.0, 0.0], dtype=torch.float16), values=True)
