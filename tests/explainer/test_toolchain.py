"""explain on a host compiler missing for torch.compile: raised by the real torch's Inductor."""

from __future__ import annotations

from typing import Any

import pytest

from cudoctor.explainer import rank
from tests.conftest import python_output
from tests.explainer.helpers import rooted

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


# NVRTC's builtins library, as torch (yolact_edge#115), Theano (Theano#6010) and CuPy (cutile-python#57) report it
NVRTC_BUILTINS_TORCH = """RuntimeError: nvrtc: error: failed to open libnvrtc-builtins.so.11.1.
  Make sure that libnvrtc-builtins.so.11.1 is installed correctly.
nvrtc compilation failed:
"""


@pytest.mark.parametrize(
    "text",
    [
        NVRTC_BUILTINS_TORCH,
        "NVRTC compile log::\nnvrtc: error: failed to load builtins\n",
        "cupy_backends.cuda.libs.nvrtc.NVRTCError: NVRTC_ERROR_BUILTIN_OPERATION_FAILURE (7)\n",
    ],
)
def test_nvrtc_without_its_builtins_library_is_a_library_the_loader_cannot_find(text: str) -> None:
    exp = rooted(text, "cuda-libs-missing/nvrtc-builtins-not-found")
    assert [c.id for c in exp.causes[:2]] == ["cuda-libs-missing", "env-path-misconfig"]
    first = rank.cause_json(exp.causes, 0)
    assert "libnvrtc-builtins" in first["why"]
    assert any("nvidia-cuda-nvrtc" in f for f in first["fix"])
    assert any("LD_LIBRARY_PATH" in f for f in first["fix"])


def test_other_nvrtc_errors_keep_their_own_reading() -> None:
    arch = "cupy.cuda.compiler.CompileException: nvrtc: error: invalid value for --gpu-architecture (-arch)\n"
    assert rooted(arch, "arch-unsupported/nvrtc-invalid-gpu-architecture").causes[0].id == "arch-unsupported"
