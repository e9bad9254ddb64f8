"""Opt-in value checks for a matrix product: NaN or Inf in an operand, and a float16 result that
can overflow. Reading values costs one pass over each operand (and, on a GPU, a synchronisation),
so preflight reads them only when asked (`values=True`). No framework is imported here: each
operand is read through the module that made it, already loaded in the caller's process.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

FLOAT16_MAX = 65504.0
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")


@dataclasses.dataclass(frozen=True)
class Values:
    """What the product needs to know of one operand's values."""

    nonfinite: int  # NaN and Inf entries
    max_abs: float  # largest |x| (0 for an empty operand)
    max_row_sum: float  # largest sum of |x| along the last dimension


def read(framework: str, raw: Any, dtype: str) -> Values | None:
    """The operand's values, or None when they cannot be read (not a float, unknown framework)."""
    if dtype not in FLOAT_DTYPES:
        return None
    reader = {"torch": _torch, "numpy": _numpy_like, "jax": _numpy_like, "tensorflow": _tensorflow}.get(
        framework
    )
    if reader is None:
        return None
    return reader(raw, framework)


def _stored(x: Any, shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[Any, int, int]:
    """A broadcast view (stride 0: np.broadcast_to, torch's expand) read through the values it
    stores, never materialised: (the stored part, how many times each value repeats, how many
    times along the last dimension)."""
    if not any(s == 0 and n > 1 for s, n in zip(strides, shape, strict=False)):
        return x, 1, 1
    core = x[
        tuple(slice(0, 1) if s == 0 and n > 1 else slice(None) for s, n in zip(strides, shape, strict=False))
    ]
    total = 1
    for n in shape:
        total *= n
    stored = 1
    for n in core.shape:
        stored *= int(n)
    along_last = shape[-1] if strides[-1] == 0 and shape[-1] > 1 else 1
    return core, total // max(stored, 1), along_last


def _torch(x: Any, _: str) -> Values:
    torch = sys.modules["torch"]
    t, repeat, along_last = _stored(x.detach(), tuple(x.shape), tuple(x.stride()))
    nonfinite = int((~torch.isfinite(t)).sum()) * repeat
    if nonfinite or t.numel() == 0:
        return Values(nonfinite, 0.0, 0.0)
    row_sums = torch.linalg.vector_norm(t, 1, dim=-1, dtype=torch.float32)
    return Values(0, float(t.abs().max()), float(row_sums.max()) * along_last)


def _numpy_like(x: Any, framework: str) -> Values:
    xp = sys.modules["numpy" if framework == "numpy" else "jax.numpy"]
    repeat, along_last = 1, 1
    if framework == "numpy" and x.ndim:
        x, repeat, along_last = _stored(x, tuple(x.shape), tuple(x.strides))
    nonfinite = int(x.size - xp.isfinite(x).sum()) * repeat
    if nonfinite or x.size == 0:
        return Values(nonfinite, 0.0, 0.0)
    magnitude = xp.abs(x).astype(xp.float32 if framework == "jax" else xp.float64)
    return Values(0, float(magnitude.max()), float(magnitude.sum(axis=-1).max()) * along_last)


def _tensorflow(x: Any, _: str) -> Values:
    tf = sys.modules["tensorflow"]
    magnitude = tf.abs(tf.cast(x, tf.float32))
    nonfinite = int(tf.size(x)) - int(tf.reduce_sum(tf.cast(tf.math.is_finite(magnitude), tf.int32)))
    if nonfinite or int(tf.size(x)) == 0:
        return Values(nonfinite, 0.0, 0.0)
    return Values(0, float(tf.reduce_max(magnitude)), float(tf.reduce_max(tf.reduce_sum(magnitude, -1))))


def notes(
    a: Values | None, b: Values | None, out_dtype: str, b_name: str = "b", bias: Values | None = None
) -> list[str]:
    """Warnings for `a @ b (+ bias)` (b as the product uses it: a Linear layer's weight is read
    transposed, which leaves its largest entry unchanged)."""
    out = [
        f"{name} holds {v.nonfinite} NaN or Inf value(s): every output they touch is NaN or Inf. Find where "
        "they first appear (torch.isfinite(x).all() after each step, torch.autograd.set_detect_anomaly(True), "
        "jax_debug_nans, tf.debugging.enable_check_numerics())"
        for name, v in (("a", a), (b_name, b), ("bias", bias))
        if v is not None and v.nonfinite
    ]
    if out_dtype != "float16" or a is None or b is None or out:
        return out
    bound = a.max_row_sum * b.max_abs + (bias.max_abs if bias is not None else 0.0)
    if bound > FLOAT16_MAX:
        out.append(
            f"the float16 product can reach {bound:.3g}: a row of a sums to {a.max_row_sum:.3g} in absolute value "
            f"and {b_name}'s largest entry is {b.max_abs:.3g}"
            + (f" (plus a bias up to {bias.max_abs:.3g})" if bias is not None else "")
            + ", above float16's largest value 65504, and an entry "
            "that passes it becomes inf. Scale the inputs down, or multiply in bfloat16 or float32 "
            "(torch.autocast(..., dtype=torch.bfloat16) on Ampere or newer GPUs)"
        )
    return out
