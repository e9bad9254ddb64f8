"""Round 40: Apple GPUs through PyTorch's MPS backend. The steps must speak of the Mac, not of
nvidia-smi. Lines are from the threads the signatures name."""

from __future__ import annotations

import pytest

from tests.explainer.helpers import explain_text, rooted, top


@pytest.mark.parametrize(
    ("line", "sig", "cause"),
    [
        (
            "RuntimeError: Placeholder storage has not been allocated on MPS device!",
            "device-mismatch/mps-placeholder-storage",
            "device-mismatch",
        ),
        (
            "TypeError: Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64. Please use float32 instead.",
            "dtype-mismatch/mps-float64",
            "dtype-mismatch",
        ),
        (
            "NotImplementedError: The operator 'torchvision::nms' is not currently implemented for the MPS device. If you want this op to be added in priority during the prototype phase of this feature, please comment on https://github.com/pytorch/pytorch/issues/77764.",
            "library-bug/mps-op-not-implemented",
            "library-bug",
        ),
    ],
)
def test_mps_errors_name_their_cause(line: str, sig: str, cause: str) -> None:
    exp = rooted(line, sig)
    assert top(exp)[0] == cause
    assert not any("nvidia-smi" in f for f in exp.causes[0].fixes)


def test_mps_out_of_memory_reads_the_limit_and_speaks_of_the_mac() -> None:
    line = (
        "RuntimeError: MPS backend out of memory (MPS allocated: 1.45 GB, other allocations: 7.42 GB, "
        "max allowed: 9.07 GB). Tried to allocate 563.62 MB on private pool. Use "
        "PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory allocations (may cause system failure)."
    )
    exp = rooted(line, "gpu-oom/mps-backend-out-of-memory")
    fixes = exp.causes[0].fixes
    assert top(exp)[0] == "gpu-oom" and "stops at 9.07 GB" in fixes[0] and "7.42 GB" in fixes[0]
    assert not any("nvidia-smi" in f or "PYTORCH_CUDA_ALLOC_CONF" in f for f in fixes)


def test_the_fallback_step_names_the_missing_op() -> None:
    exp = explain_text(
        "NotImplementedError: The operator 'aten::upsample_bicubic2d.out' is not currently implemented for the MPS device."
    )
    assert "no kernel for aten::upsample_bicubic2d.out" in exp.causes[0].fixes[0]
    assert "PYTORCH_ENABLE_MPS_FALLBACK=1" in exp.causes[0].fixes[0]
