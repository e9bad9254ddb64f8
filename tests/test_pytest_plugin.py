"""`pytest --cudoctor` (loaded through the pytest11 entry point of the installed package): a failing test
with a GPU/CUDA/BLAS error gets a cudoctor section; a passing test
and an unrelated failure get none; without the option nothing changes (real pytest runs)."""

from __future__ import annotations

import importlib.util

import pytest

pytest_plugins = ["pytester"]

TESTS = """
def test_passes():
    assert 1 == 1

def test_unrelated_failure():
    assert [1, 2] == [1, 3]

def test_cuda_error():
    raise RuntimeError("CUDA error: an illegal memory access was encountered")
"""


def test_a_cuda_error_is_explained_and_counted(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TESTS)
    result = pytester.runpytest_subprocess("--cudoctor")
    result.assert_outcomes(passed=1, failed=2)
    out = result.stdout.str()
    assert out.count("- cudoctor -") == 1  # the section of test_cuda_error only
    assert "[illegal-memory-access," in out
    assert "cudoctor: 1 failing test with a GPU/CUDA/BLAS error explained" in out


def test_without_the_option_nothing_is_added(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TESTS)
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1, failed=2)
    out = result.stdout.str()
    assert "- cudoctor -" not in out and "explained" not in out


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_an_error_raised_by_torch_itself(pytester: pytest.Pytester) -> None:
    """A real exception from the installed torch: a device index past the devices there."""
    pytester.makepyfile(
        """
        import torch

        def test_bad_device():
            torch.zeros(2, device="cuda:99")
        """
    )
    result = pytester.runpytest_subprocess("--cudoctor")
    result.assert_outcomes(failed=1)
    assert "- cudoctor -" in result.stdout.str()
