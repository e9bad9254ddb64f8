"""Check matrix-product operands before the call: one clear error instead of an opaque one.

Works on numpy, torch, tensorflow and jax arrays without importing any framework: operands
are described through their own attributes. Errors raise PreflightError (a ValueError) that
names the cause id and the fix; hazards that do not fail the call are PreflightWarnings.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import warnings
from typing import Any

from cudoctor import preflight_values

INT32_MAX = 2**31 - 1
FLOAT_RANK = {"float16": 1, "bfloat16": 1, "float32": 2, "float64": 3, "complex64": 4, "complex128": 5}
ITEMSIZE = {
    "float16": 2,
    "bfloat16": 2,
    "float32": 4,
    "float64": 8,
    "complex64": 8,
    "complex128": 16,
    "int8": 1,
    "int32": 4,
    "int64": 8,
}
STRICT_DTYPES = ("torch", "tensorflow")  # frameworks that refuse mixed dtypes in a matmul


class PreflightError(ValueError):
    """Operands that would make the library call fail; `cause` is a taxonomy id."""

    def __init__(self, cause: str, title: str, fix: list[str], evidence: list[str]) -> None:
        self.cause, self.title, self.fix, self.evidence = cause, title, fix, evidence
        lines = [f"[{cause}] {title}"] + [f"  evidence: {e}" for e in evidence] + [f"  fix: {f}" for f in fix]
        super().__init__("\n".join(lines))


class PreflightWarning(UserWarning):
    """Operands that work but are slow or fragile (copies, misalignment, huge element counts)."""


@dataclasses.dataclass(frozen=True)
class Operand:
    framework: str
    shape: tuple[int | None, ...]
    dtype: str
    device: str
    contiguous: bool | None
    ptr: int | None
    itemsize: int
    raw: Any = dataclasses.field(repr=False, compare=False, default=None)

    @property
    def numel(self) -> int:
        return math.prod(d or 0 for d in self.shape) if self.shape else 1

    @property
    def on_gpu(self) -> bool:
        d = self.device.lower()
        return "cuda" in d or "gpu" in d

    def describe(self) -> str:
        return f"{self.framework} {self.dtype}{list(self.shape)} on {self.device}"


@dataclasses.dataclass(frozen=True)
class Preflight:
    """What a call will produce when the operands pass."""

    out_shape: tuple[int | None, ...]
    out_dtype: str
    out_bytes: int
    warnings: tuple[str, ...]


def describe(x: Any) -> Operand:
    """An Operand from an array of any supported framework (no framework import)."""
    mod = type(x).__module__.split(".")[0]
    if mod == "torch":
        contiguous = bool(x.is_contiguous() or (x.dim() >= 2 and x.transpose(-1, -2).is_contiguous()))
        ptr = int(x.data_ptr()) if x.device.type != "meta" else None
        return Operand(
            "torch",
            tuple(int(d) for d in x.shape),
            str(x.dtype).removeprefix("torch."),
            str(x.device),
            contiguous,
            ptr,
            int(x.element_size()),
            x,
        )
    if mod == "numpy":
        contiguous = bool(x.flags.c_contiguous or x.flags.f_contiguous)
        return Operand(
            "numpy",
            tuple(int(d) for d in x.shape),
            str(x.dtype),
            "cpu",
            contiguous,
            int(x.ctypes.data),
            int(x.itemsize),
            x,
        )
    if mod in ("tensorflow", "keras"):
        device = getattr(x, "device", "") or "unplaced"
        return Operand(
            "tensorflow",
            tuple(x.shape.as_list()),
            x.dtype.name,
            str(device),
            None,
            None,
            int(x.dtype.size),
            x,
        )
    if mod in ("jax", "jaxlib"):
        devices = ",".join(sorted(str(d) for d in x.devices())) if hasattr(x, "devices") else "unknown"
        return Operand(
            "jax", tuple(int(d) for d in x.shape), str(x.dtype), devices, None, None, int(x.dtype.itemsize), x
        )
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return Operand(
            mod, tuple(x.shape), str(x.dtype), "unknown", None, None, ITEMSIZE.get(str(x.dtype), 4), x
        )
    raise TypeError(
        f"cudoctor.preflight: {type(x).__name__} is not an array (numpy, torch, tensorflow or jax)"
    )


def cast_hint(op: Operand, name: str, dtype: str) -> str:
    return {
        "torch": f"{name} = {name}.to(torch.{dtype})",
        "tensorflow": f"{name} = tf.cast({name}, tf.{dtype})",
        "jax": f"{name} = {name}.astype(jnp.{dtype})",
        "numpy": f"{name} = {name}.astype(np.{dtype})",
    }.get(op.framework, f"cast {name} to {dtype}")


def promoted(a: str, b: str) -> str:
    if a == b:
        return a
    if a in FLOAT_RANK and b in FLOAT_RANK:
        if {a, b} == {"float16", "bfloat16"}:
            return "float32"
        return a if FLOAT_RANK[a] >= FLOAT_RANK[b] else b
    return a if a in FLOAT_RANK else b if b in FLOAT_RANK else a


NO_PRODUCT_KINDS = {
    "M": "dates",
    "m": "time differences",
    "V": "structured records",
    "U": "strings",
    "S": "bytes",
}


def _kind_notes(**ops: Operand | None) -> list[str]:
    """NumPy dtypes a matrix product has no loop for (an error), and object arrays (a warning)."""
    notes = []
    for name, op in ops.items():
        kind = getattr(getattr(op.raw, "dtype", None), "kind", "") if op is not None else ""
        if op is None or op.framework != "numpy" or not kind:
            continue
        if kind in NO_PRODUCT_KINDS:
            raise PreflightError(
                "dtype-mismatch",
                f"{name} holds {NO_PRODUCT_KINDS[kind]} (dtype {op.dtype}): a matrix product has no loop for them",
                [
                    f"{name} = {name}.astype(np.float32) for numbers stored as {NO_PRODUCT_KINDS[kind]}"
                    + (
                        f", or take one numeric field: {name}['field'] (np.lib.recfunctions.structured_to_unstructured for all)"
                        if kind == "V"
                        else ""
                    )
                ],
                [op.describe()],
            )
        if kind == "O":
            notes.append(
                f"{name} has dtype object: each element is multiplied as a Python object (slow), and the product "
                f"fails on an element without * and + (None, a string). Convert it: {name}.astype(np.float32)"
            )
    return notes


def _check_dtypes(a: Operand, b: Operand) -> str:
    if a.dtype == b.dtype:
        return a.dtype
    target = promoted(a.dtype, b.dtype)
    if a.framework in STRICT_DTYPES or b.framework in STRICT_DTYPES:
        lower, name = (b, "b") if target == a.dtype else (a, "a")
        other = "float32" if target == "float64" else target
        raise PreflightError(
            "dtype-mismatch",
            f"operands have different dtypes: a is {a.dtype}, b is {b.dtype}; {a.framework} does not promote them in a matmul",
            [
                cast_hint(lower, name, target),
                f"or cast both to {other} (usually what a GPU wants: float64 is slow on most GPUs)",
            ],
            [f"a: {a.describe()}", f"b: {b.describe()}"],
        )
    return target


def _batch(a: tuple[int | None, ...], b: tuple[int | None, ...]) -> tuple[int | None, ...] | None:
    """Broadcast two batch shapes, None when they cannot be broadcast."""
    out: list[int | None] = []
    for x, y in zip(
        reversed((1,) * (len(b) - len(a)) + a), reversed((1,) * (len(a) - len(b)) + b), strict=True
    ):
        if x is None or y is None or x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            return None
    return tuple(reversed(out))


def matmul_shape(a: Operand, b: Operand) -> tuple[int | None, ...]:
    """Result shape of a @ b (numpy/torch matmul rules); raises PreflightError(shape-mismatch)."""
    sa, sb = a.shape, b.shape
    if not sa or not sb:
        raise PreflightError(
            "shape-mismatch",
            "matmul needs at least 1-D operands (got a scalar)",
            ["use * for scalar products"],
            [f"a: {a.describe()}", f"b: {b.describe()}"],
        )
    ka, kb = sa[-1], (sb[0] if len(sb) == 1 else sb[-2])
    if ka is not None and kb is not None and ka != kb:
        which = "dimension 0" if len(sb) == 1 else f"dimension {len(sb) - 2}"
        raise PreflightError(
            "shape-mismatch",
            f"shapes {list(sa)} and {list(sb)} cannot be multiplied: a's last dimension ({ka}) != b's {which} ({kb})",
            [
                "check the layer sizes and the input size the model was built for (print the shapes just before the call)",
                "if b is a weight stored as [out, in], use b.T (or linear)",
            ],
            [f"a: {a.describe()}", f"b: {b.describe()}"],
        )
    batch = _batch(sa[:-2], sb[:-2])
    if batch is None:
        raise PreflightError(
            "shape-mismatch",
            f"batch dimensions {list(sa[:-2])} and {list(sb[:-2])} cannot be broadcast together",
            ["make the batch dimensions equal or 1"],
            [f"a: {a.describe()}", f"b: {b.describe()}"],
        )
    rows = sa[-2:-1] if len(sa) >= 2 else ()
    cols = sb[-1:] if len(sb) >= 2 else ()
    return (*batch, *rows, *cols)


def _check_devices(a: Operand, b: Operand) -> None:
    if a.framework != b.framework and "numpy" not in (a.framework, b.framework):
        raise PreflightError(
            "device-mismatch",
            f"operands come from different frameworks: {a.framework} and {b.framework}",
            ["convert one (e.g. torch.from_numpy / tf.convert_to_tensor / jnp.asarray)"],
            [a.describe(), b.describe()],
        )
    meta = "meta" in (a.device, b.device)  # torch lets meta tensors mix with any device
    if a.framework in ("torch", "jax") and a.framework == b.framework and a.device != b.device and not meta:
        move = (
            f"b = b.to('{a.device}')"
            if a.framework == "torch"
            else "b = jax.device_put(b, a.devices().pop())"
        )
        raise PreflightError(
            "device-mismatch",
            f"operands are on different devices: a on {a.device}, b on {b.device}",
            [move, "or create both on one device from the start"],
            [a.describe(), b.describe()],
        )
    if {a.framework, b.framework} == {"torch", "numpy"} and (a.on_gpu or b.on_gpu):
        raise PreflightError(
            "device-mismatch",
            "a numpy array (host memory) and a CUDA tensor cannot be multiplied",
            ["torch.from_numpy(arr).to(device)"],
            [a.describe(), b.describe()],
        )


def _check_hardware(a: Operand, b: Operand) -> None:
    for op in (a, b):
        if op.dtype == "bfloat16" and op.framework == "torch" and op.on_gpu:
            torch = sys.modules.get("torch")
            cc = torch.cuda.get_device_capability(op.raw.device) if torch is not None else None
            if cc is not None and tuple(cc) < (8, 0):
                raise PreflightError(
                    "dtype-mismatch",
                    f"bfloat16 matmul on a GPU of compute capability {cc[0]}.{cc[1]} (bf16 GEMMs need 8.0+): cuBLAS answers CUBLAS_STATUS_NOT_SUPPORTED",
                    ["use float16 (or float32) on this GPU"],
                    [op.describe()],
                )


def _free_bytes(op: Operand) -> int | None:
    """Free memory of the device an operand lives on, when it can be read without side effects."""
    if op.framework == "torch" and op.on_gpu:
        torch = sys.modules.get("torch")
        return int(torch.cuda.mem_get_info(op.raw.device)[0]) if torch is not None else None
    if not op.on_gpu:
        try:
            return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError):
            return None
    return None


def _check_size(
    a: Operand, b: Operand, out_shape: tuple[int | None, ...], out_dtype: str
) -> tuple[int, list[str]]:
    notes: list[str] = []
    dims = [d for d in (*a.shape[-2:], *b.shape[-2:]) if d is not None]
    if (a.on_gpu or b.on_gpu) and dims and max(dims) > INT32_MAX:
        raise PreflightError(
            "library-bug",
            f"a matrix dimension of {max(dims)} exceeds cuBLAS's 32-bit m/n/k",
            ["split the product into blocks of fewer than 2^31 rows/columns"],
            [a.describe(), b.describe()],
        )
    itemsize = ITEMSIZE.get(out_dtype, max(a.itemsize, b.itemsize))
    out_elems = math.prod(d or 0 for d in out_shape) if out_shape else 1
    out_bytes = out_elems * itemsize
    for name, count in (("a", a.numel), ("b", b.numel), ("output", out_elems)):
        if count > INT32_MAX:
            notes.append(
                f"{name} has {count} elements (> 2^31): kernels with 32-bit index math are known to fail on such tensors"
            )
    free = _free_bytes(a)
    if free is not None and out_bytes > free:
        where = a.device if a.on_gpu else "host memory"
        cause = "gpu-oom" if a.on_gpu else "host-oom"
        raise PreflightError(
            cause,
            f"the output {list(out_shape)} {out_dtype} needs {out_bytes / 2**30:.1f} GiB but {where} has {free / 2**30:.1f} GiB free",
            ["multiply in blocks, or reduce the batch", "free memory held elsewhere (nvidia-smi for GPUs)"],
            [a.describe(), b.describe()],
        )
    return out_bytes, notes


def _layout_notes(a: Operand, b: Operand) -> list[str]:
    notes = []
    for name, op in (("a", a), ("b", b)):
        if op.contiguous is False:
            notes.append(
                f"{name} is neither contiguous nor a transposed contiguous matrix: it is copied before every product (call .contiguous() once outside the loop)"
            )
        if op.ptr is not None and op.on_gpu and op.itemsize <= 2 and op.ptr % 16:
            notes.append(
                f"{name}'s data pointer is not 16-byte aligned: cuBLAS cannot use tensor cores for it"
            )
    return notes


def matmul(a: Any, b: Any, *, values: bool = False) -> Preflight:
    """Check `a @ b` before running it; raises PreflightError, warns PreflightWarning.
    values=True also reads the operands (one pass each, a device sync on a GPU): NaN or Inf in
    them, and a float16 product that can overflow, become warnings."""
    oa, ob = describe(a), describe(b)
    kinds = _kind_notes(a=oa, b=ob)
    _check_devices(oa, ob)
    out_dtype = _check_dtypes(oa, ob)
    _check_hardware(oa, ob)
    out_shape = matmul_shape(oa, ob)
    out_bytes, notes = _check_size(oa, ob, out_shape, out_dtype)
    notes += kinds + _layout_notes(oa, ob)
    if values:
        notes += _value_notes(oa, ob, out_dtype)
    for note in notes:
        warnings.warn(note, PreflightWarning, stacklevel=2)
    return Preflight(out_shape, out_dtype, out_bytes, tuple(notes))


def _value_notes(
    a: Operand, b: Operand, out_dtype: str, b_name: str = "b", bias: Operand | None = None
) -> list[str]:
    def read(op: Operand | None) -> preflight_values.Values | None:
        return preflight_values.read(op.framework, op.raw, op.dtype) if op is not None else None

    return preflight_values.notes(read(a), read(b), out_dtype, b_name, read(bias))


def bmm(a: Any, b: Any, *, values: bool = False) -> Preflight:
    """Batched product of two 3-D operands with the same batch size (torch.bmm rules)."""
    oa, ob = describe(a), describe(b)
    if len(oa.shape) != 3 or len(ob.shape) != 3 or oa.shape[0] != ob.shape[0]:
        raise PreflightError(
            "shape-mismatch",
            f"bmm needs two 3-D operands with one batch size, got {list(oa.shape)} and {list(ob.shape)}",
            ["use matmul for broadcasting batches"],
            [oa.describe(), ob.describe()],
        )
    return matmul(a, b, values=values)


def linear(x: Any, weight: Any, bias: Any = None, *, values: bool = False) -> Preflight:
    """`x @ weight.T + bias` with weight stored [out_features, in_features] (torch Linear layout);
    values=True reads the operands as matmul does."""
    ox, ow = describe(x), describe(weight)
    if len(ow.shape) != 2:
        raise PreflightError(
            "shape-mismatch",
            f"linear weight must be 2-D [out, in], got {list(ow.shape)}",
            ["reshape the weight"],
            [ow.describe()],
        )
    if ox.shape and ox.shape[-1] is not None and ox.shape[-1] != ow.shape[1]:
        raise PreflightError(
            "shape-mismatch",
            f"input features {ox.shape[-1]} != the layer's in_features {ow.shape[1]} (x {list(ox.shape)}, weight {list(ow.shape)})",
            [
                f"make the layer nn.Linear({ox.shape[-1]}, {ow.shape[0]}), or fix the flatten/reshape before it"
            ],
            [ox.describe(), ow.describe()],
        )
    ob = describe(bias) if bias is not None else None
    kinds = _kind_notes(x=ox, weight=ow, bias=ob)
    _check_devices(ox, ow)
    _check_dtypes(ox, ow)
    if ob is not None:
        _check_devices(ox, ob)
        if ob.shape not in ((ow.shape[0],), ()):
            raise PreflightError(
                "shape-mismatch",
                f"bias shape {list(ob.shape)} != [out_features] [{ow.shape[0]}]",
                ["bias must have out_features elements"],
                [ob.describe()],
            )
    out_shape = (*ox.shape[:-1], ow.shape[0])
    out_dtype = promoted(ox.dtype, ow.dtype)
    out_bytes, notes = _check_size(ox, ow, out_shape, out_dtype)
    notes += kinds
    if values:
        notes += _value_notes(ox, ow, out_dtype, b_name="weight", bias=ob)
    for note in notes:
        warnings.warn(note, PreflightWarning, stacklevel=2)
    return Preflight(out_shape, out_dtype, out_bytes, tuple(notes))


def labels(
    logits: Any, target: Any, *, ignore_index: int | None = -100, class_dim: int | None = None
) -> None:
    """Class indices against the logits' classes before a loss runs (cudoctor.preflight_index.labels)."""
    from cudoctor import preflight_index

    preflight_index.labels(logits, target, ignore_index=ignore_index, class_dim=class_dim)


def indices(index: Any, size: int, *, name: str = "index", allow_negative: bool = False) -> None:
    """Lookup indices against the `size` entries they select from (cudoctor.preflight_index.indices)."""
    from cudoctor import preflight_index

    preflight_index.indices(index, size, name=name, allow_negative=allow_negative)
