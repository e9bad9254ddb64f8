"""The Python API under odd arguments (issue 44, points 12 and 15)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import cudoctor
from cudoctor.preflight import PreflightError


@pytest.mark.parametrize("thing", [None, 123, object(), ["RuntimeError"], 1.5])
def test_explain_refuses_what_is_not_an_exception_or_text_with_a_type_error(thing: object) -> None:
    with pytest.raises(TypeError, match="takes an exception, a str or bytes"):
        cudoctor.explain(thing)  # type: ignore[arg-type]


def test_explain_reads_bytes_as_utf8_text() -> None:
    diagnosis = cudoctor.explain(b"RuntimeError: CUDA error: out of memory\n\xff", live=False)
    assert diagnosis.matched and diagnosis.top is not None and diagnosis.top["id"] == "gpu-oom"


def test_explain_defaults_to_this_machines_facts_like_the_cli() -> None:
    import inspect

    assert inspect.signature(cudoctor.explain).parameters["live"].default is True


def test_value_checks_read_a_broadcast_view_without_materialising_it() -> None:
    """A broadcast 10^6 x 10^6 view once allocated 931 GiB for its NaN count."""
    big = np.broadcast_to(np.float32(2.0), (1_000_000, 1_000_000))
    col = np.broadcast_to(np.array([[1.0], [np.nan]], dtype=np.float32), (2, 1_000_000))
    with pytest.warns(cudoctor.preflight.PreflightWarning, match="1000000 NaN or Inf"):
        cudoctor.preflight.matmul(col, big, values=True)


def test_value_checks_of_a_broadcast_view_equal_those_of_its_copy() -> None:
    from cudoctor import preflight_values

    row = np.arange(4, dtype=np.float32).reshape(1, 4)
    view = np.broadcast_to(row, (1000, 4))
    assert preflight_values.read("numpy", view, "float32") == preflight_values.read(
        "numpy", np.ascontiguousarray(view), "float32"
    )
    col = np.broadcast_to(np.array([[1.5], [-3.0]]), (2, 500))
    assert preflight_values.read("numpy", col, "float64") == preflight_values.read(
        "numpy", np.ascontiguousarray(col), "float64"
    )


@pytest.mark.parametrize(
    "dtype", ["datetime64[s]", "timedelta64[s]", "U3", "S3", "V4", [("a", "f4"), ("b", "i4")]]
)
def test_dtypes_a_product_has_no_loop_for_are_named(dtype: object) -> None:
    a = np.zeros((2, 2), dtype=dtype)  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        np.matmul(a, a)  # numpy refuses it: preflight must say so first
    with pytest.raises(PreflightError, match="has no loop for them"):
        cudoctor.preflight.matmul(a, a)


def test_an_object_array_is_a_warning() -> None:
    a = np.array([[1, None], [2, 3]], dtype=object)
    with pytest.warns(cudoctor.preflight.PreflightWarning, match="dtype object"):
        cudoctor.preflight.matmul(a, a)


_ARRAYS = hnp.arrays(
    dtype=st.one_of(
        hnp.floating_dtypes(), hnp.integer_dtypes(), hnp.boolean_dtypes(), hnp.datetime64_dtypes()
    ),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=4),
)


@given(_ARRAYS, _ARRAYS)
def test_preflight_answers_any_numpy_operands_with_a_result_or_its_own_error(
    a: np.ndarray, b: np.ndarray
) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            cudoctor.preflight.matmul(a, b, values=True)
        except PreflightError:
            return
