"""explain on a host compiler missing for torch.compile: raised by the real torch's Inductor."""

from __future__ import annotations

from typing import Any

import pytest

from cudoctor.explainer import rank
from tests.conftest import python_output
from tests.test_explain import rooted

COMPILE_ONCE = "import torch\nprint(torch.compile(lambda x: torch.sin(x) + 1)(torch.ones(4)))\n"


def test_torch_compile_without_a_cpp_compiler_is_a_missing_toolchain(tmp_path: Any) -> None:
    """What torch's Inductor raises on Linux when CXX names no compiler (Windows says 'Compiler: cl
    is not found.', tested as a line in the signature's examples)."""
    pytest.importorskip("torch")
    status, log = python_output(
        COMPILE_ONCE, {"CXX": "/nonexistent/g++", "TORCHINDUCTOR_CACHE_DIR": str(tmp_path)}, timeout=600
    )
    assert status != 0
    exp = rooted(log, "toolchain-not-found/no-host-c-compiler")
    assert "install gcc and g++" in rank.cause_json(exp.causes, 0)["fix"][1]
