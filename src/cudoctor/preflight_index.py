"""Check class labels and lookup indices before the call.

On a GPU an index outside its range is not an error where it happens: the kernel's assert
fires, the error surfaces later ("device-side assert triggered", CUBLAS_STATUS_EXECUTION_FAILED,
"an illegal memory access") at an unrelated call, and the CUDA context is lost. These checks
read the integer values once (a reduction, and on a GPU one synchronisation) and raise a
PreflightError naming the offending values instead. No framework is imported here: each array
is read through the module that made it, already loaded in the caller's process.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from cudoctor.preflight import Operand, PreflightError, cast_hint, describe

INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
SHOWN = 5  # offending values named in the error


@dataclasses.dataclass(frozen=True)
class Outside:
    """The values of an integer array outside [low, high), ignore_index left out."""

    count: int
    examples: tuple[int, ...]  # the smallest and largest offenders, at most SHOWN
    lowest: int | None
    highest: int | None
    minimum: int | None = None  # the smallest value read, in range or not


def labels(
    logits: Any, target: Any, *, ignore_index: int | None = -100, class_dim: int | None = None
) -> None:
    """Check a classification loss on class indices before it runs: torch's cross_entropy /
    nll_loss (logits [N, C, ...], target [N, ...]), TensorFlow's and optax's sparse losses
    (logits [..., C], labels [...]). Each label must be in [0, C) or equal ignore_index (torch's
    default -100; pass None where the loss has none). class_dim defaults to 1 for torch, the last
    dimension otherwise. A float target of the logits' shape holds class probabilities: not read."""
    ol, ot = describe(logits), describe(target)
    if not ol.shape:
        raise PreflightError(
            "shape-mismatch", "logits must have a class dimension, got a scalar", [], [ol.describe()]
        )
    if ot.dtype not in INT_DTYPES:
        if ot.shape == ol.shape:
            return  # class probabilities
        raise PreflightError(
            "dtype-mismatch",
            f"class indices must be integers, got {ot.dtype}",
            [f"pass integer class indices: {cast_hint(ot, 'target', 'int64')}"],
            [ot.describe(), ol.describe()],
        )
    default_dim = 1 if ol.framework == "torch" and len(ol.shape) >= 2 else -1
    dim = (default_dim if class_dim is None else class_dim) % len(ol.shape)
    classes = ol.shape[dim]
    _check_label_shape(ol, ot, (*ol.shape[:dim], *ol.shape[dim + 1 :]))
    if classes is None:
        return
    outside = read_outside(ot, 0, classes, ignore_index)
    if outside is not None and outside.count:
        raise PreflightError(
            "index-out-of-range",
            f"target holds {_values(outside)} outside the {classes} classes [0, {classes}) the logits have",
            _label_fixes(outside, classes, ignore_index),
            [ot.describe(), ol.describe()],
        )


def indices(index: Any, size: int, *, name: str = "index", allow_negative: bool = False) -> None:
    """Check lookup indices (embedding, index_select, gather, take) against a dimension of `size`
    entries: each must be in [0, size), or in [-size, size) with allow_negative (numpy, jax)."""
    oi = describe(index)
    if oi.dtype not in INT_DTYPES:
        raise PreflightError(
            "dtype-mismatch",
            f"{name} must hold integers, got {oi.dtype}",
            [f"cast it to integers: {cast_hint(oi, name, 'int64')}"],
            [oi.describe()],
        )
    low = -size if allow_negative else 0
    outside = read_outside(oi, low, size, None)
    if outside is not None and outside.count:
        raise PreflightError(
            "index-out-of-range",
            f"{name} holds {_values(outside)} outside [{low}, {size}), the {size} entries it selects from",
            _index_fixes(outside, size),
            [oi.describe()],
        )


def _check_label_shape(logits: Operand, target: Operand, expected: tuple[int | None, ...]) -> None:
    if target.shape != expected:
        raise PreflightError(
            "shape-mismatch",
            f"target shape {list(target.shape)} does not fit logits {list(logits.shape)}: "
            f"class indices need shape {list(expected)} (the logits without their class dimension)",
            [
                "a one-hot target needs target.argmax(dim=1), or pass it as float class probabilities "
                "of the logits' shape",
                "a batch size that differs comes from a reshape or view that mixed the batch and other "
                "dimensions: check x.view(x.size(0), -1) before the classifier",
            ],
            [target.describe(), logits.describe()],
        )


def read_outside(op: Operand, low: int, high: int, ignore: int | None) -> Outside | None:
    """The values of an integer operand outside [low, high), or None for an unknown framework."""
    reader = {"torch": _torch, "numpy": _numpy_like, "jax": _numpy_like, "tensorflow": _tensorflow}.get(
        op.framework
    )
    return reader(op.raw, op.framework, low, high, ignore) if reader else None


def _summary(offenders: list[int], count: int, minimum: int | None) -> Outside:
    shown = sorted(set(offenders))
    picked = shown if len(shown) <= SHOWN else shown[: SHOWN - 1] + shown[-1:]
    return Outside(count, tuple(picked), shown[0] if shown else None, shown[-1] if shown else None, minimum)


def _torch(x: Any, _: str, low: int, high: int, ignore: int | None) -> Outside:
    t = x.detach().reshape(-1)
    outside = (t < low) | (t >= high)
    if ignore is not None:
        outside &= t != ignore
    count = int(outside.sum())  # the healthy path: comparisons and one reduction, no copy
    if not count:
        return Outside(0, (), None, None)
    unique = t[outside].unique()
    ends = unique if unique.numel() <= SHOWN else unique[[*range(SHOWN - 1), -1]]
    kept = t if ignore is None else t[t != ignore]
    return _summary([int(v) for v in ends.cpu().tolist()], count, int(kept.min()))


def _numpy_like(x: Any, framework: str, low: int, high: int, ignore: int | None) -> Outside:
    np = sys.modules["numpy"]
    flat = np.asarray(x).reshape(-1)  # jax: one device-to-host copy
    outside = (flat < low) | (flat >= high)
    if ignore is not None:
        outside &= flat != ignore
    count = int(outside.sum())
    if not count:
        return Outside(0, (), None, None)
    kept = flat if ignore is None else flat[flat != ignore]
    return _summary([int(v) for v in np.unique(flat[outside])], count, int(kept.min()))


def _tensorflow(x: Any, _: str, low: int, high: int, ignore: int | None) -> Outside:
    tf = sys.modules["tensorflow"]
    flat = tf.reshape(x, [-1])
    if ignore is not None:
        flat = tf.boolean_mask(flat, tf.not_equal(flat, ignore))
    bad = tf.boolean_mask(flat, tf.logical_or(flat < low, flat >= high))
    minimum = int(tf.reduce_min(flat)) if int(tf.size(flat)) else None
    return _summary([int(v) for v in tf.unique(bad).y.numpy()], int(tf.size(bad)), minimum)


def _values(outside: Outside) -> str:
    listed = ", ".join(str(v) for v in outside.examples)
    return f"{outside.count} values ({listed})" if outside.count > 1 else f"the value {listed}"


def _label_fixes(outside: Outside, classes: int, ignore_index: int | None) -> list[str]:
    fixes = []
    if outside.minimum is not None and outside.minimum >= 1 and outside.highest == classes:
        fixes.append(f"the labels look 1-based (1..{classes}): pass target - 1")
    if outside.highest == 255 or outside.lowest == -1:
        marker = 255 if outside.highest == 255 else -1
        fixes.append(
            f"{marker} usually marks pixels or tokens to skip: pass ignore_index={marker} to the loss (and here)"
        )
    if outside.highest is not None and outside.highest >= classes:
        fixes.append(
            f"if there really are {outside.highest + 1} classes, give the last layer {outside.highest + 1} "
            "outputs (nn.Linear(..., num_classes)), and check the label map the dataset was built with"
        )
    if outside.lowest is not None and outside.lowest < 0 and outside.lowest != ignore_index:
        fixes.append(f"negative labels are never classes; ignore_index is {ignore_index}")
    fixes.append(
        "on a GPU this error is an asynchronous device-side assert: run once on the CPU, or with "
        "CUDA_LAUNCH_BLOCKING=1, to see where it starts"
    )
    return fixes


def _index_fixes(outside: Outside, size: int) -> list[str]:
    fixes = []
    if outside.highest is not None and outside.highest >= size:
        fixes.append(
            f"an embedding needs num_embeddings > the largest id ({outside.highest}): build it from the "
            "tokenizer or vocabulary actually used (model.resize_token_embeddings(len(tokenizer)) after "
            "adding tokens), or map unknown ids to an <unk> entry"
        )
    if outside.lowest is not None and outside.lowest < 0:
        fixes.append("negative indices: a padding or missing-value marker (-1) that must be replaced first")
    fixes.append("on a GPU the out-of-range lookup surfaces later as a device-side assert or illegal access")
    return fixes
