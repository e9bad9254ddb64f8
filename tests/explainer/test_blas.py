"""Round 39: a BLAS routine refusing an argument ("parameter number N had an illegal value",
MKL's "Parameter N was incorrect on entry to X"). Lines are from the threads the signature names."""

from __future__ import annotations

import pytest

from cudoctor import knowledge
from tests.explainer.helpers import explain_text, rooted, top


@pytest.mark.parametrize(
    ("routine", "number", "name"),
    [
        ("DGEMM", 8, "lda"),  # torch/torch7#58: an expanded (stride 0) operand
        ("SGEMM", 10, "ldb"),  # torch/cutorch#213
        ("SGEMM", 13, "ldc"),  # OpenMathLib/OpenBLAS#1014: ldc < m
        ("SGEMV", 6, "lda"),  # torch/cutorch#55
        ("cblas_sgemm", 11, "ldb"),  # PaddlePaddle/Paddle#3579: wrong ldb for a transposed operand
        ("cblas_sgemm", 9, "lda"),
        ("ZGEMM", 1, "transa"),
    ],
)
def test_blas_argument_names_the_refused_argument(routine: str, number: int, name: str) -> None:
    assert knowledge.blas_argument(routine, number) == name


@pytest.mark.parametrize(
    ("routine", "number"), [("SGEMM", 14), ("SGEMM", 0), ("HgemmStridedBatched", 10), ("GEMM_EX", 9)]
)
def test_blas_argument_knows_nothing_it_was_not_told(routine: str, number: int) -> None:
    assert knowledge.blas_argument(routine, number) is None


def test_a_refused_leading_dimension_is_named_in_the_first_step() -> None:
    exp = explain_text(
        " ** On entry to SGEMM  parameter number 10 had an illegal value\nSegmentation fault (core dumped)\n"
    )
    assert exp.root is not None and exp.root.sig.id == "library-bug/blas-illegal-parameter"
    assert top(exp)[0] == "library-bug"
    assert exp.causes[0].fixes[0].startswith("SGEMM refused argument 10, ldb: the leading dimension of B")


def test_mkl_parameter_errors_are_not_a_cpu_runtime_conflict() -> None:
    exp = rooted(
        "121: Intel MKL ERROR: Parameter 11 was incorrect on entry to cblas_sgemm.\n",
        "library-bug/blas-illegal-parameter",
    )
    assert top(exp)[0] == "library-bug"
    assert "cblas_sgemm refused argument 11, ldb" in exp.causes[0].fixes[0]


def test_a_routine_outside_the_table_keeps_the_general_step_first() -> None:
    exp = explain_text(" ** On entry to HgemmStridedBatched parameter number 10 had an illegal value\n")
    assert top(exp)[0] == "library-bug"
    assert not exp.causes[0].fixes[0].startswith("HgemmStridedBatched refused")
