"""explain on NaN, Inf and ill-conditioned matrices (cause numerical-instability): each error is
raised here by the real torch, numpy, jax and tensorflow-cpu (or printed by the LAPACK inside
torch), and its whole traceback is explained. Lines a healthy run prints stay silent."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest

from cudoctor.explainer import rank
from tests.conftest import python_output
from tests.explainer.helpers import explain_text, rooted
from tests.explainer.test_user_code import _explained

NAN = float("nan")
INF = float("inf")


def _steps(call: Callable[[], Any], sig: str) -> list[str]:
    return _explained(call, f"numerical-instability/{sig}")


def _anomalous_matmul(t: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # anomaly mode warns that it is on, and where the op came from
        with t.autograd.detect_anomaly():
            a = t.tensor([[1e30]], requires_grad=True)
            b = t.tensor([[INF]], requires_grad=True)
            (a @ b * 0).sum().backward()


TORCH: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "anomaly": ("autograd-anomaly-nan", _anomalous_matmul),
    "cholesky": ("not-positive-definite", lambda t: t.linalg.cholesky(t.tensor([[1.0, 2], [2, 1]]))),
    "cholesky_batch": ("not-positive-definite", lambda t: t.linalg.cholesky(t.tensor([[[1.0, 2], [2, 1]]]))),
    "inv": ("singular-matrix", lambda t: t.linalg.inv(t.zeros(2, 2))),
    "solve": ("singular-matrix", lambda t: t.linalg.solve(t.zeros(2, 2), t.ones(2))),
    "svd_nan": ("no-convergence", lambda t: t.linalg.svd(t.tensor([[1.0, NAN], [0, 1]]))),
    "bce_no_sigmoid": (
        "bce-input-out-of-range",
        lambda t: t.nn.functional.binary_cross_entropy(t.tensor([1.5]), t.tensor([1.0])),
    ),
    "bce_nan": (
        "bce-input-out-of-range",
        lambda t: t.nn.functional.binary_cross_entropy(t.tensor([NAN]), t.tensor([1.0])),
    ),
}


@pytest.mark.parametrize("case", sorted(TORCH))
def test_torch_numerics(case: str) -> None:
    torch = pytest.importorskip("torch")
    sig, call = TORCH[case]
    _steps(lambda: call(torch), sig)


def test_a_bce_target_outside_zero_one_is_a_label_problem() -> None:
    """A mask saved as 0/255 fed to binary_cross_entropy: what the installed torch raises."""
    torch = pytest.importorskip("torch")
    mask = torch.tensor([0.0, 255.0])
    steps = _explained(
        lambda: torch.nn.functional.binary_cross_entropy(torch.tensor([0.2, 0.9]), mask),
        "index-out-of-range/bce-target-out-of-range",
    )
    assert "0/255" in steps[0]


def test_the_anomaly_step_names_the_backward_op() -> None:
    torch = pytest.importorskip("torch")
    steps = _steps(lambda: _anomalous_matmul(torch), "autograd-anomaly-nan")
    assert "MmBackward0 returned NaN" in steps[0] and "Error detected in MmBackward0" in steps[0]
    assert any("bfloat16" in s for s in steps)


def _errstate(np: Any, call: Callable[[], Any]) -> Any:
    with np.errstate(all="raise"):
        return call()


NUMPY: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "svd_nan": ("no-convergence", lambda np: np.linalg.svd(np.array([[1.0, NAN], [0, 1]]))),
    "cholesky": ("not-positive-definite", lambda np: np.linalg.cholesky(np.array([[1.0, 2], [2, 1]]))),
    "inv": ("singular-matrix", lambda np: np.linalg.inv(np.zeros((2, 2)))),
    "divide": ("floating-point-error", lambda np: _errstate(np, lambda: np.ones(1) / np.zeros(1))),
    "overflow": ("floating-point-error", lambda np: _errstate(np, lambda: np.array([1e300]) * 1e300)),
    "log": ("floating-point-error", lambda np: _errstate(np, lambda: np.log(-np.ones(1)))),
}


@pytest.mark.parametrize("case", sorted(NUMPY))
def test_numpy_numerics(case: str) -> None:
    np = pytest.importorskip("numpy")
    sig, call = NUMPY[case]
    _steps(lambda: call(np), sig)


@pytest.mark.parametrize(
    ("flag", "call", "op"), [("jax_debug_nans", "log", "log"), ("jax_debug_infs", "div", "div")]
)
def test_jax_debug_flags_name_the_first_op(flag: str, call: str, op: str) -> None:
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    compute = {"log": lambda: jnp.log(-10.0), "div": lambda: jnp.divide(1.0, 0.0)}[call]
    jax.config.update(flag, True)
    try:
        steps = _steps(lambda: jax.jit(compute)(), "floating-point-error")
    finally:
        jax.config.update(flag, False)
    assert steps[0].startswith(f"{op} is the first operation")


def _tf_enable_check_numerics(tf: Any) -> None:
    tf.debugging.enable_check_numerics()
    try:
        tf.math.log(tf.constant([-1.0]))
    finally:
        tf.debugging.disable_check_numerics()


TF: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "check_nan": (
        "tf-check-numerics",
        lambda tf: tf.debugging.check_numerics(tf.constant([NAN]), "LossTensor is inf or nan."),
    ),
    "check_inf": ("tf-check-numerics", lambda tf: tf.debugging.check_numerics(tf.constant([INF]), "x")),
    "assert_all_finite": (
        "tf-check-numerics",
        lambda tf: tf.debugging.assert_all_finite(tf.constant([NAN]), "bad"),
    ),
    "enable_check_numerics": ("tf-check-numerics", _tf_enable_check_numerics),
    "inv": ("singular-matrix", lambda tf: tf.linalg.inv(tf.zeros((2, 2)))),
}


@pytest.mark.parametrize("case", sorted(TF))
def test_tensorflow_numerics(case: str) -> None:
    tf = pytest.importorskip("tensorflow")
    sig, call = TF[case]
    _steps(lambda: call(tf), sig)


def test_enable_check_numerics_roots_at_the_op_it_names() -> None:
    tf = pytest.importorskip("tensorflow")
    exp = rooted(
        _raised_text(lambda: _tf_enable_check_numerics(tf)), "numerical-instability/tf-check-numerics"
    )
    assert exp.root is not None and exp.root.captures.get("tf_op") == "Log"


def _raised_text(call: Callable[[], Any]) -> str:
    try:
        call()
    except Exception as e:  # the message, as TensorFlow prints it, holds the op's report
        return f"{type(e).__name__}: {e}"
    raise AssertionError("the call raised nothing")


# ------------------------------------------------------------------ LAPACK's own complaint
LSTSQ_OF_INF = (
    "import torch\n"
    "try:\n"
    "    torch.linalg.lstsq(torch.tensor([[float('inf'), 1.0], [1.0, 1.0]]), torch.ones(2, 1), driver='gelsd')\n"
    "except RuntimeError as e:\n"
    "    print(f'RuntimeError: {e}')\n"
)


def test_lapack_refusing_the_scale_of_a_matrix_holding_inf_is_not_a_blas_argument_bug() -> None:
    """torch's LAPACK prints 'Parameter 4 was incorrect on entry to SLASCL' itself (not in the
    traceback): the matrix's norm is NaN, not an argument torch passed wrong."""
    pytest.importorskip("torch")
    _, log = python_output(LSTSQ_OF_INF)
    if "LASCL" not in log:
        pytest.skip("this torch's LAPACK does not print its argument errors")
    exp = rooted(log, "numerical-instability/lapack-scale-nan")
    assert exp.causes[0].id == "numerical-instability"
    assert "library-bug/blas-illegal-parameter" not in {m.sig.id for m in rank.relevant(exp.matches)}


@pytest.mark.parametrize(
    "line",
    [
        " ** On entry to DLASCL parameter number  4 had an illegal value",
        "ValueError: On entry to DLASCL parameter number 4 had an illegal value",
        "DLASCL: parameter number 4 is invalid",
    ],
)
def test_other_blas_builds_word_the_lascl_refusal_their_own_way(line: str) -> None:
    rooted(line, "numerical-instability/lapack-scale-nan")


def test_a_gemm_argument_error_stays_a_blas_argument_error() -> None:
    exp = rooted(
        " ** On entry to DGEMM  parameter number  8 had an illegal value",
        "library-bug/blas-illegal-parameter",
    )
    assert exp.causes[0].id == "library-bug"


# ------------------------------------------------------------------ loss scaling
def test_deepspeed_giving_up_on_the_loss_scale_says_bf16() -> None:
    exp = rooted(
        "Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.",
        "numerical-instability/loss-scale-exhausted",
    )
    assert "bf16" in rank.cause_json(exp.causes, 0)["fix"][0]


def test_a_loss_scale_fallen_below_one_is_an_error() -> None:
    log = "\n".join(
        f"Gradient overflow. Skipping step, loss scaler 0 reducing loss scale to {s}"
        for s in ("1.0", "0.5", "3.3e-257")
    )
    rooted(log, "numerical-instability/loss-scale-exhausted")


@pytest.mark.parametrize(
    "line",
    [
        "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 256.0",
        "Gradient overflow. Skipping step, loss scaler 0 reducing loss scale to 32768.0",
        "RuntimeWarning: invalid value encountered in divide",
        "UserWarning: Anomaly Detection has been enabled. This mode will increase the runtime and should only be enabled for debugging.",
    ],
)
def test_what_a_healthy_mixed_precision_run_prints_is_no_error(line: str) -> None:
    assert explain_text(line).causes == []


# ------------------------------------------------------------------ training that diverged
KERAS_TERMINATE_ON_NAN = (
    "import numpy as np, tensorflow as tf\n"
    "model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])\n"
    "model.compile(loss='mse', optimizer='sgd')\n"
    "x = np.array([[np.nan, 1.0]] * 4)\n"
    "model.fit(x, np.ones((4, 1)), verbose=0, callbacks=[tf.keras.callbacks.TerminateOnNaN()])\n"
)


def test_keras_stopping_on_a_nan_loss_is_a_diverged_training() -> None:
    pytest.importorskip("tensorflow")
    status, log = python_output(KERAS_TERMINATE_ON_NAN, {"TF_CPP_MIN_LOG_LEVEL": "3"})
    assert status == 0, log[-2000:]
    exp = rooted(log, "numerical-instability/training-diverged")
    assert "learning rate" in rank.cause_json(exp.causes, 0)["fix"][0]


@pytest.mark.parametrize(
    ("line", "sig"),
    [
        ("FloatingPointError: Loss became infinite or NaN at iteration=27!", "training-diverged"),
        (
            "FloatingPointError: Predicted boxes or scores contain Inf/NaN. Training has diverged.",
            "training-diverged",
        ),
        (
            "ValueError: The loss returned in `training_step` is tensor(nan, device='cuda:0').",
            "training-diverged",
        ),
        (
            "FloatingPointError: Minimum loss scale reached (0.0001). Your loss is probably exploding. "
            "Try lowering the learning rate, using gradient clipping or increasing the batch size.",
            "loss-scale-exhausted",
        ),
        ("| WARNING: overflow detected, setting loss scale to: 0.0001220703125", "loss-scale-exhausted"),
    ],
)
def test_what_training_frameworks_say_when_training_diverges(line: str, sig: str) -> None:
    """detectron2, Lightning and fairseq word it their own way (their texts, from their sources)."""
    rooted(line, f"numerical-instability/{sig}")


def test_a_fairseq_overflow_at_a_large_scale_is_no_error() -> None:
    assert explain_text("| WARNING: overflow detected, setting loss scale to: 64.0").causes == []
