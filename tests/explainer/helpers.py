"""Helpers shared by the explain tests: explain a log text in process, the top causes, a checked root."""

from __future__ import annotations

import io

from cudoctor.explainer import rank, scan
from cudoctor.facts.stated import from_stated
from cudoctor.model import Snapshot


def explain_text(text: str, facts: dict[str, str] | None = None, engine: str = "auto") -> rank.Explanation:
    result = scan.scan(io.BytesIO(text.encode()), engine=engine)
    snap = from_stated(facts or {}) if facts is not None else Snapshot()
    return rank.explain(result, snap)


def top(exp: rank.Explanation) -> list[str]:
    return [c.id for c in exp.causes[:3]]


def rooted(text: str, sig_id: str) -> rank.Explanation:
    """The explanation of `text`, after checking that signature `sig_id` matched its root error."""
    exp = explain_text(text)
    assert exp.root is not None and exp.root.sig.id == sig_id
    return exp


ASYNC = """epoch 1 step 10 loss 2.31
/pytorch/aten/src/ATen/native/cuda/Loss.cu:242: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.
Traceback (most recent call last):
  File "train.py", line 88, in <module>
    out = model(x)
RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
"""
