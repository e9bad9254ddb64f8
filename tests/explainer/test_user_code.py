"""explain on the errors a model's own code raises (shapes, indices, dtypes, devices): each error is
raised here by the real numpy, torch, jax and tensorflow-cpu, and its whole traceback is explained.
On a GPU the same bugs often surface as a device-side assert; on the CPU the framework names them."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

import pytest

from cudoctor.explainer import rank
from tests.explainer.helpers import explain_text, rooted, top


def _raised(call: Callable[[], Any]) -> str:
    """The whole traceback `call` raises, as a user would paste it."""
    try:
        call()
    except Exception:
        return traceback.format_exc()
    raise AssertionError("the call raised nothing")


def _explained(call: Callable[[], Any], sig_id: str) -> list[str]:
    """The steps for the error `call` raises, after checking that signature `sig_id` matched its
    root error and that the cause it is named after ranks first."""
    exp = explain_text(_raised(call))
    assert exp.root is not None and exp.root.sig.id == sig_id, exp.root and exp.root.text
    assert top(exp)[0] == sig_id.split("/")[0]
    return exp.causes[0].fixes


def _torch() -> Any:
    return pytest.importorskip("torch")


TORCH_SHAPES: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "bmm": ("matmul-shapes", lambda t: t.bmm(t.ones(2, 2, 3), t.ones(2, 4, 5))),
    "mv": ("matmul-shapes", lambda t: t.mv(t.ones(2, 3), t.ones(4))),
    "broadcast": ("broadcast", lambda t: t.ones(3) + t.ones(4)),
    "mse_loss": ("broadcast", lambda t: t.nn.functional.mse_loss(t.ones(2, 3), t.ones(2, 4))),
    "einsum": ("broadcast", lambda t: t.einsum("ij,jk->ik", t.ones(2, 3), t.ones(4, 5))),
    "view": ("reshape", lambda t: t.ones(2, 3).view(4)),
    "view_after_t": ("view-of-non-contiguous", lambda t: t.ones(3, 2).t().view(-1)),
    "cat": ("concat", lambda t: t.cat([t.ones(2, 3), t.ones(3, 4)], dim=1)),
    "stack": ("concat", lambda t: t.stack([t.ones(2), t.ones(3)])),
    "conv_channels": ("layer-input", lambda t: t.nn.Conv2d(3, 8, 3)(t.ones(1, 4, 8, 8))),
    "conv_rank": ("layer-input", lambda t: t.nn.Conv2d(3, 8, 3)(t.ones(8, 8))),
    "lstm": ("layer-input", lambda t: t.nn.LSTM(4, 8)(t.ones(5, 2, 6))),
    "batchnorm": ("layer-input", lambda t: t.nn.BatchNorm1d(4)(t.ones(2, 5))),
    "layernorm": ("layer-input", lambda t: t.nn.LayerNorm(4)(t.ones(2, 5))),
    "ce_batch": (
        "loss-target",
        lambda t: t.nn.functional.cross_entropy(t.ones(2, 3), t.tensor([0, 1, 2])),
    ),
    "bce_target": (
        "loss-target",
        lambda t: t.nn.functional.binary_cross_entropy(t.rand(2, 1), t.ones(2)),
    ),
}


@pytest.mark.parametrize("case", sorted(TORCH_SHAPES))
def test_torch_shape_errors_are_shape_mismatch(case: str) -> None:
    torch = _torch()
    sig, call = TORCH_SHAPES[case]
    _explained(lambda: call(torch), f"shape-mismatch/{sig}")


TORCH_INDICES: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "embedding": ("embedding-or-index-select", lambda t: t.nn.Embedding(10, 3)(t.tensor([12]))),
    "index_select": ("embedding-or-index-select", lambda t: t.ones(3).index_select(0, t.tensor([7]))),
    "indexing": ("index-out-of-bounds", lambda t: t.ones(3)[t.tensor([5])]),
    "gather": ("index-out-of-bounds", lambda t: t.gather(t.ones(2, 3), 1, t.tensor([[5]]))),
    "scatter": ("index-out-of-bounds", lambda t: t.zeros(3).scatter_(0, t.tensor([9]), 1.0)),
    "ce_label": (
        "class-label",
        lambda t: t.nn.functional.cross_entropy(t.ones(2, 3), t.tensor([0, 5])),
    ),
    "nll_padding": ("class-label", lambda t: t.nn.functional.nll_loss(t.ones(2, 3), t.tensor([0, -1]))),
    "one_hot": ("class-label", lambda t: t.nn.functional.one_hot(t.tensor([5]), 3)),
}


@pytest.mark.parametrize("case", sorted(TORCH_INDICES))
def test_torch_index_errors_are_index_out_of_range(case: str) -> None:
    torch = _torch()
    sig, call = TORCH_INDICES[case]
    _explained(lambda: call(torch), f"index-out-of-range/{sig}")


def test_the_embedding_steps_name_the_usual_causes() -> None:
    torch = _torch()
    fixes = _explained(
        lambda: torch.nn.Embedding(10, 3)(torch.tensor([12])),
        "index-out-of-range/embedding-or-index-select",
    )
    assert "num_embeddings" in fixes[0] and "resize_token_embeddings" in fixes[1]
    assert "max_position_embeddings" in fixes[2]
    label = _explained(
        lambda: torch.nn.functional.nll_loss(torch.ones(2, 3), torch.tensor([0, -1])),
        "index-out-of-range/class-label",
    )
    assert any("ignore_index" in f for f in label)


TORCH_DTYPES: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "conv_bias": ("expected-scalar-type", lambda t: t.nn.Conv2d(3, 8, 3)(t.ones(1, 3, 8, 8, dtype=t.double))),
    "inplace_cast": ("expected-scalar-type", lambda t: t.ones(3, dtype=t.long).add_(0.5)),
    "embedding_float": ("index-needs-integer", lambda t: t.nn.Embedding(10, 3)(t.tensor([1.0]))),
    "gather_float": ("index-needs-integer", lambda t: t.gather(t.ones(2, 3), 1, t.tensor([[1.0]]))),
    "target_float": (
        "index-needs-integer",
        lambda t: t.nn.functional.nll_loss(t.ones(2, 3), t.tensor([0.0, 1.0])),
    ),
    "index_float": ("index-needs-integer", lambda t: t.ones(3)[t.tensor([0.0])]),
    "sdpa_qkv": (
        "attention-qkv-dtype",
        lambda t: t.nn.functional.scaled_dot_product_attention(
            t.ones(1, 1, 2, 4), t.ones(1, 1, 2, 4).half(), t.ones(1, 1, 2, 4).half()
        ),
    ),
    "sdpa_mask": (
        "attention-qkv-dtype",
        lambda t: t.nn.functional.scaled_dot_product_attention(
            *[t.ones(1, 1, 2, 4)] * 3, attn_mask=t.ones(2, 2).half()
        ),
    ),
}


@pytest.mark.parametrize("case", sorted(TORCH_DTYPES))
def test_torch_dtype_errors_are_dtype_mismatch(case: str) -> None:
    torch = _torch()
    sig, call = TORCH_DTYPES[case]
    fixes = _explained(lambda: call(torch), f"dtype-mismatch/{sig}")
    if sig == "index-needs-integer":  # its own steps replace the generic "cast one operand"
        assert fixes[0].startswith("Indices, token ids and class labels must be integer tensors")
        assert not any("Cast one operand" in f for f in fixes)


NUMPY: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "broadcast": ("shape-mismatch/broadcast", lambda np: np.ones(3) + np.ones(4)),
    "einsum": (
        "shape-mismatch/broadcast",
        lambda np: np.einsum("ij,jk->ik", np.ones((2, 3)), np.ones((4, 5))),
    ),
    "reshape": ("shape-mismatch/reshape", lambda np: np.ones(6).reshape(4)),
    "concat": (
        "shape-mismatch/concat",
        lambda np: np.concatenate([np.ones((2, 3)), np.ones((3, 4))], axis=1),
    ),
    "index": ("index-out-of-range/index-out-of-bounds", lambda np: np.ones(3)[5]),
}


@pytest.mark.parametrize("case", sorted(NUMPY))
def test_numpy_errors(case: str) -> None:
    np = pytest.importorskip("numpy")
    sig, call = NUMPY[case]
    _explained(lambda: call(np), sig)


JAX: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "broadcast": ("shape-mismatch/broadcast", lambda jnp: jnp.ones(3) + jnp.ones(4)),
    "einsum": (
        "shape-mismatch/broadcast",
        lambda jnp: jnp.einsum("ij,jk->ik", jnp.ones((2, 3)), jnp.ones((4, 5))),
    ),
    "reshape": ("shape-mismatch/reshape", lambda jnp: jnp.ones(6).reshape(4)),
}


@pytest.mark.parametrize("case", sorted(JAX))
def test_jax_errors(case: str) -> None:
    jnp = pytest.importorskip("jax.numpy")
    sig, call = JAX[case]
    _explained(lambda: call(jnp), sig)


def _keras_fit(tf: Any, labels: Any, loss: str) -> None:
    import numpy as np

    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(10, activation="softmax")])
    model.compile(loss=loss, optimizer="sgd")
    model.fit(np.ones((4, 3)), labels, verbose=0)


TF: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "batch_matmul": (
        "shape-mismatch/matmul-shapes",
        lambda tf: tf.linalg.matmul(tf.ones((2, 2, 3)), tf.ones((3, 3, 5))),
    ),
    "add": ("shape-mismatch/broadcast", lambda tf: tf.ones((3,)) + tf.ones((4,))),
    "reshape": ("shape-mismatch/reshape", lambda tf: tf.reshape(tf.ones(6), (4,))),
    "concat": (
        "shape-mismatch/concat",
        lambda tf: tf.concat([tf.ones((2, 3)), tf.ones((3, 4))], axis=1),
    ),
    "conv_depth": (
        "shape-mismatch/layer-input",
        lambda tf: tf.nn.conv2d(tf.ones((1, 8, 8, 4)), tf.ones((3, 3, 3, 8)), 1, "SAME"),
    ),
    "dense_input": (
        "shape-mismatch/layer-input",
        lambda tf: tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(4)])(tf.ones((2, 5))),
    ),
    "xent_shape": (
        "shape-mismatch/broadcast",
        lambda tf: tf.nn.softmax_cross_entropy_with_logits(labels=tf.ones((2, 3)), logits=tf.ones((2, 4))),
    ),
    "cce_int_labels": (
        "shape-mismatch/loss-target",
        lambda tf: _keras_fit(tf, tf.ones((4, 1)), "categorical_crossentropy"),
    ),
    "gather": (
        "index-out-of-range/index-out-of-bounds",
        lambda tf: tf.gather(tf.ones((3,)), [5]),
    ),
    "embedding": (
        "index-out-of-range/index-out-of-bounds",
        lambda tf: tf.keras.layers.Embedding(10, 3)(tf.constant([12])),
    ),
    "scce_label": (
        "index-out-of-range/class-label",
        lambda tf: _keras_fit(tf, tf.fill((4,), 12), "sparse_categorical_crossentropy"),
    ),
}


@pytest.mark.parametrize("case", sorted(TF))
def test_tensorflow_errors(case: str) -> None:
    tf = pytest.importorskip("tensorflow")
    sig, call = TF[case]
    _explained(lambda: call(tf), sig)


# ------------------------------------------------------------------ counter-examples and old forms
def test_plain_python_index_errors_are_not_tensor_indices() -> None:
    assert explain_text(_raised(lambda: [1, 2][5])).causes == []
    assert explain_text(_raised(lambda: (1,)[3])).causes == []


def test_the_mse_warning_alone_is_no_error_but_bce_raising_it_is() -> None:
    torch = _torch()
    with pytest.warns(UserWarning) as warned:
        torch.nn.functional.mse_loss(torch.ones(2, 1), torch.ones(2))
    warning = f"/x/loss.py:610: UserWarning: {warned[0].message}"
    assert "Using a target size" in warning and explain_text(warning).causes == []


GPU_ASSERTS = {  # the kernel assertion lines torch prints before "device-side assert triggered"
    "indexSelectLargeIndex: block: [0,0,0], thread: [0,0,0] Assertion `srcIndex < srcSelectDimSize` failed.": (
        "assert-embedding-index",
        "index_select's, which nn.Embedding uses",
    ),
    "nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.": (
        "assert-class-label",
        "NLL / cross-entropy loss kernel's",
    ),
    'operator(): block: [492,0,0], thread: [127,0,0] Assertion `index >= -sizes[i] && index < sizes[i] && "index out of bounds"` failed.': (
        "assert-index-out-of-bounds",
        "tensor-indexing kernel's",
    ),
    "operator(): block: [134,0,0], thread: [127,0,0] Assertion `input_val >= zero && input_val <= one` failed.": (
        "assert-bce-input",
        "binary_cross_entropy's",
    ),
}


@pytest.mark.parametrize("line", sorted(GPU_ASSERTS))
def test_a_gpu_assertion_stays_illegal_memory_access_with_the_step_its_check_names(line: str) -> None:
    sig, step = GPU_ASSERTS[line]
    exp = rooted(
        f"../aten/src/ATen/native/cuda/Kernel.cu:92: {line}\nRuntimeError: CUDA error: device-side assert triggered\n",
        f"illegal-memory-access/{sig}",
    )
    steps = rank.cause_json(exp.causes, 0)["fix"]  # its own step first, then the cause's
    assert top(exp)[0] == "illegal-memory-access"
    own = len(exp.root.sig.fix)
    assert step in steps[0] and steps[own].startswith("Re-run with CUDA_LAUNCH_BLOCKING=1")


def test_an_assertion_without_a_known_check_keeps_the_generic_steps() -> None:
    exp = rooted(
        "kernel.cu:10: block: [0,0,0], thread: [0,0,0] Assertion `n > 0` failed.\n",
        "illegal-memory-access/device-side-assert",
    )
    assert rank.cause_json(exp.causes, 0)["fix"][0].startswith("Re-run with CUDA_LAUNCH_BLOCKING=1")


def test_torch_1_cpu_label_assertion_is_an_index_out_of_range() -> None:
    line = "RuntimeError: Assertion `cur_target >= 0 && cur_target < n_classes' failed.  at ../aten/src/THNN/generic/ClassNLLCriterion.c:94\n"
    assert top(rooted(line, "index-out-of-range/class-label"))[0] == "index-out-of-range"


@pytest.mark.parametrize(
    ("line", "cause"),
    [
        (
            "RuntimeError: Expected object of type torch.cuda.FloatTensor but found type torch.FloatTensor for argument #3 'other'",
            "device-mismatch",
        ),
        (
            "RuntimeError: Expected object of type torch.DoubleTensor but found type torch.FloatTensor for argument #2 'weight'",
            "dtype-mismatch",
        ),
        (
            "RuntimeError: Expected object of scalar type Long but got scalar type Float for argument #2 'target' in call to _thnn_nll_loss2d_forward",
            "dtype-mismatch",
        ),
        ("ValueError: Shapes (None, 4) and (None, 10) are incompatible", "shape-mismatch"),
        (
            "RuntimeError: Expected tensor to have size 441 at dimension 1, but got size 121 for argument #2 'batch2' (while checking arguments for bmm)",
            "shape-mismatch",
        ),
        (
            "tensorflow.python.framework.errors_impl.InvalidArgumentError: indices[2968] = 30523 is not in [0, 30522)",
            "index-out-of-range",
        ),
    ],
)
def test_forms_older_releases_printed(line: str, cause: str) -> None:
    assert top(explain_text(line + "\n"))[0] == cause


def test_a_shape_error_under_a_generic_wrapper_is_still_the_root() -> None:
    exp = rooted(
        "ValueError: Exception encountered when calling Sequential.call().\n\n"
        '\x1b[1mInput 0 of layer "dense_2" is incompatible with the layer: expected axis -1 of input shape '
        "to have value 16384, but received input with shape (None, 65536)\x1b[0m\n",
        "shape-mismatch/layer-input",
    )
    assert "Flatten" in exp.causes[0].fixes[2]
