"""preflight.labels / preflight.indices: class labels and lookup indices checked before the call.
Each error is checked against what the real framework does with the same operands on the CPU
(on a GPU the same values become an asynchronous device-side assert)."""

from __future__ import annotations

from typing import Any

import pytest

import cudoctor
from cudoctor.preflight import PreflightError


def _raised(call: Any) -> PreflightError:
    with pytest.raises(PreflightError) as info:
        call()
    return info.value


def test_a_label_past_the_last_class_is_named_before_torch_fails() -> None:
    torch = pytest.importorskip("torch")
    logits, target = torch.randn(4, 10), torch.tensor([0, 2, 3, 10])
    err = _raised(lambda: cudoctor.preflight.labels(logits, target))
    assert err.cause == "index-out-of-range"
    assert "the value 10 outside the 10 classes [0, 10)" in err.title
    assert "11 outputs" in err.fix[0] and not any("1-based" in f for f in err.fix)
    with pytest.raises(IndexError, match="Target 10 is out of bounds"):
        torch.nn.functional.cross_entropy(logits, target)


def test_labels_counted_from_one_get_the_minus_one_fix() -> None:
    torch = pytest.importorskip("torch")
    err = _raised(lambda: cudoctor.preflight.labels(torch.randn(3, 4), torch.tensor([1, 4, 2])))
    assert err.fix[0] == "the labels look 1-based (1..4): pass target - 1"


def test_a_255_mask_is_named_and_ignore_index_lets_it_through() -> None:
    """Segmentation: logits [N, C, H, W], a mask [N, H, W] whose border pixels are 255."""
    torch = pytest.importorskip("torch")
    logits = torch.randn(2, 3, 4, 4)
    mask = torch.randint(0, 3, (2, 4, 4))
    mask[:, 0, :] = 255
    err = _raised(lambda: cudoctor.preflight.labels(logits, mask))
    assert "8 values (255)" in err.title
    assert any("ignore_index=255" in f for f in err.fix)
    cudoctor.preflight.labels(logits, mask, ignore_index=255)
    assert torch.isfinite(torch.nn.functional.cross_entropy(logits, mask, ignore_index=255))


def test_valid_labels_and_torchs_default_ignore_index_pass() -> None:
    torch = pytest.importorskip("torch")
    logits, target = torch.randn(4, 5), torch.tensor([0, 4, -100, 2])
    cudoctor.preflight.labels(logits, target)
    assert torch.isfinite(torch.nn.functional.cross_entropy(logits, target))
    cudoctor.preflight.labels(torch.randn(5), torch.tensor(3))  # unbatched


def test_class_probabilities_are_not_read_and_float_indices_are_a_dtype_error() -> None:
    torch = pytest.importorskip("torch")
    logits = torch.randn(4, 3)
    cudoctor.preflight.labels(logits, torch.softmax(torch.randn(4, 3), dim=1))
    err = _raised(lambda: cudoctor.preflight.labels(logits, torch.tensor([0.0, 1.0, 2.0, 1.0])))
    assert err.cause == "dtype-mismatch" and err.fix == [
        "pass integer class indices: target = target.to(torch.int64)"
    ]
    with pytest.raises(RuntimeError):
        torch.nn.functional.cross_entropy(logits, torch.tensor([0.0, 1.0, 2.0, 1.0]))


def test_a_target_of_another_batch_size_is_a_shape_error() -> None:
    torch = pytest.importorskip("torch")
    logits, target = torch.randn(4, 3), torch.tensor([0, 1])
    err = _raised(lambda: cudoctor.preflight.labels(logits, target))
    assert err.cause == "shape-mismatch" and "need shape [4]" in err.title
    with pytest.raises(ValueError, match="batch_size"):
        torch.nn.functional.cross_entropy(logits, target)


@pytest.mark.parametrize("framework", ["numpy", "jax", "tensorflow"])
def test_classes_are_the_last_dimension_outside_torch(framework: str) -> None:
    np = pytest.importorskip("numpy")
    logits_np = np.zeros((3, 6), dtype=np.float32)
    good_np, bad_np = np.array([0, 5, 2]), np.array([0, 6, 7])
    if framework == "jax":
        jnp = pytest.importorskip("jax.numpy")
        logits, good, bad = jnp.asarray(logits_np), jnp.asarray(good_np), jnp.asarray(bad_np)
    elif framework == "tensorflow":
        tf = pytest.importorskip("tensorflow")
        logits, good, bad = tf.constant(logits_np), tf.constant(good_np), tf.constant(bad_np)
    else:
        logits, good, bad = logits_np, good_np, bad_np
    cudoctor.preflight.labels(logits, good, ignore_index=None)
    err = _raised(lambda: cudoctor.preflight.labels(logits, bad, ignore_index=None))
    assert "2 values (6, 7) outside the 6 classes" in err.title


def test_tensorflow_refuses_the_same_labels_on_the_cpu() -> None:
    tf = pytest.importorskip("tensorflow")
    logits, labels = tf.zeros((2, 4)), tf.constant([1, 4])
    with pytest.raises(PreflightError):
        cudoctor.preflight.labels(logits, labels, ignore_index=None)
    with pytest.raises(tf.errors.InvalidArgumentError, match="outside the valid range"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)


def test_an_embedding_lookup_past_the_vocabulary_is_named_before_torch_fails() -> None:
    torch = pytest.importorskip("torch")
    emb, ids = torch.nn.Embedding(8, 4), torch.tensor([[1, 7, 8], [12, 0, 3]])
    err = _raised(lambda: cudoctor.preflight.indices(ids, emb.num_embeddings, name="input_ids"))
    assert err.cause == "index-out-of-range"
    assert err.title.startswith("input_ids holds 2 values (8, 12) outside [0, 8)")
    assert "largest id (12)" in err.fix[0]
    with pytest.raises(IndexError, match="index out of range"):
        emb(ids)
    cudoctor.preflight.indices(torch.tensor([0, 7]), 8)


def test_negative_indices_only_where_the_library_takes_them() -> None:
    np = pytest.importorskip("numpy")
    idx = np.array([-1, 2])
    err = _raised(lambda: cudoctor.preflight.indices(idx, 4))
    assert "-1" in err.title and any("negative" in f for f in err.fix)
    cudoctor.preflight.indices(idx, 4, allow_negative=True)
    assert np.take(np.arange(4), idx).tolist() == [3, 2]
    assert _raised(lambda: cudoctor.preflight.indices(np.array([0.5]), 4)).cause == "dtype-mismatch"


def test_many_offenders_show_the_smallest_and_the_largest() -> None:
    torch = pytest.importorskip("torch")
    err = _raised(lambda: cudoctor.preflight.indices(torch.arange(100), 10))
    assert "90 values (10, 11, 12, 13, 99)" in err.title


class _UnknownArray:
    """An array type cudoctor cannot read values from: its checks must stay silent."""

    shape = (3,)
    dtype = "int64"


def test_values_of_an_unknown_array_type_are_not_guessed() -> None:
    np = pytest.importorskip("numpy")
    cudoctor.preflight.indices(_UnknownArray(), 2)
    cudoctor.preflight.labels(np.zeros((3, 2)), _UnknownArray(), ignore_index=None)
    with pytest.raises(TypeError, match="is not an array"):
        cudoctor.preflight.indices([1, 2], 2)
