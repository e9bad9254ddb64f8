"""Extensions compiled on the user's machine (torch C++/CUDA extensions, DeepSpeed ops, apex): no nvcc,
no ninja, or a toolkit of another CUDA than torch's. Two messages are made for real here by the
installed torch's cpp_extension in a child process; the others are from the threads each signature's
source names."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudoctor.explainer import rank
from tests.conftest import explained, first, fixes, ids, python_output, stated
from tests.explainer.helpers import explain_text, top


def test_ninja_missing_from_path_is_made_by_torch_and_says_where_pip_puts_it(tmp_path: Path) -> None:
    pytest.importorskip("torch.utils.cpp_extension")
    code = "from torch.utils.cpp_extension import verify_ninja_availability as v; v()"
    rc, out = python_output(code, env={"PATH": str(tmp_path)})  # a PATH with no ninja on it
    assert rc != 0 and "Ninja is required to load C++ extensions" in out
    exp = explained(out)
    assert exp.root is not None and exp.root.sig.id == "toolchain-not-found/ninja-missing"
    cause = first(exp)
    assert cause["id"] == "toolchain-not-found" and "not for the Python package" in str(cause["why"])
    fixes = cause["fix"]
    assert isinstance(fixes, list) and fixes[0].startswith("pip install ninja")
    assert any("sys.executable" in f for f in fixes)  # installed but not on PATH
    assert not any("XLA_FLAGS" in f for f in fixes)  # the cause's XLA steps do not apply


CHECK_CUDA = (
    "from torch.utils import cpp_extension as c\n"
    "from torch.torch_version import TorchVersion\n"
    "if not hasattr(c, '_check_cuda_version'): raise SystemExit(77)\n"
    "{setup}"
    "c._check_cuda_version('g++', TorchVersion('12.0'))\n"
)


def torch_checks_cuda(setup: str = "", env: dict[str, str] | None = None) -> str:
    """What the installed torch's cpp_extension says when it looks for the toolkit to build with."""
    pytest.importorskip("torch.utils.cpp_extension")
    rc, out = python_output(CHECK_CUDA.format(setup=setup), env=env)
    if rc == 77:
        pytest.skip("this torch has no _check_cuda_version")
    return out


def test_no_toolkit_found_is_made_by_torch_and_says_torch_brings_no_compiler() -> None:
    """A CPU torch finds no CUDA_HOME (it looks only when built with CUDA): the real message of a
    machine without a toolkit."""
    out = torch_checks_cuda()
    if "CUDA was not found on the system" not in out:
        pytest.skip("this torch found a CUDA toolkit")
    exp = explained(out)
    assert exp.root is not None and exp.root.sig.id == "toolchain-not-found/extension-build-without-nvcc"
    assert first(exp)["id"] == "toolchain-not-found"


def test_a_cuda_home_without_nvcc_is_made_by_torch_and_names_the_directory(tmp_path: Path) -> None:
    """CUDA_HOME as a CUDA build of torch would have taken it from the environment (a CPU torch leaves it None)."""
    out = torch_checks_cuda(
        "import os; c.CUDA_HOME = os.environ['CUDA_HOME']\n", {"CUDA_HOME": str(tmp_path)}
    )
    assert f"nvcc not found at '{tmp_path}/bin/nvcc'" in out
    exp = explained(out)
    assert exp.root is not None and exp.root.sig.id == "toolchain-not-found/nvcc-missing-under-cuda-home"
    assert exp.root.captures["home"] == str(tmp_path)
    cause = first(exp)
    assert cause["id"] == "toolchain-not-found" and f"{tmp_path}/bin/nvcc does not exist" in str(cause["why"])
    assert any(f"ls {tmp_path}/bin/nvcc" in f for f in fixes(exp))


@pytest.mark.parametrize(
    "log",
    [
        # deepspeedai/DeepSpeed#2772, CCmahua/ChatTTS-Enhanced#3
        "      op_builder.builder.MissingCUDAException: CUDA_HOME does not exist, unable to compile CUDA op(s)\n",
        # deepspeedai/DeepSpeed#2871 (older DeepSpeed asserts)
        "      AssertionError: CUDA_HOME does not exist, unable to compile CUDA op(s)\n",
        # torch 2.13's CUDA_NOT_FOUND_MESSAGE (its two literals join without a space)
        "RuntimeError: CUDA was not found on the system, please set the CUDA_HOME or the CUDA_PATHenvironment "
        "variable or add NVCC to your system PATH. The extension compilation will fail.\n",
    ],
)
def test_no_toolkit_for_an_extension_build_says_torch_brings_the_runtime_not_nvcc(log: str) -> None:
    exp = explained(log)
    assert exp.root is not None and exp.root.sig.id == "toolchain-not-found/extension-build-without-nvcc"
    cause = first(exp)
    assert cause["id"] == "toolchain-not-found" and "not the compiler" in str(cause["why"])
    assert any("-devel" in f for f in fixes(exp))


@pytest.mark.parametrize(
    "log",
    [
        # rusty1s/pytorch_sparse#189, ByungKwanLee/MoAI#7: older torch prints it over two lines
        "RuntimeError:\n    The detected CUDA version (12.3) mismatches the version that was used to compile\n"
        "    PyTorch (11.8). Please make sure to use the same CUDA versions.\n",
        # current torch raises it with its arguments unformatted (torch/utils/cpp_extension.py)
        "RuntimeError: ('The detected CUDA version (%s) mismatches the version that was used to compilePyTorch (%s). "
        "Please make sure to use the same CUDA versions.', '12.9', '13.0')\n",
        # bytedance/lightseq#158 (DeepSpeed's op builder)
        "Exception: Installed CUDA version 9.0 does not match the version torch was compiled with 10.1, unable to "
        "compile cuda/cpp extensions without a matching cuda version.\n",
        # NVIDIA/apex#550
        "RuntimeError: Cuda extensions are being compiled with a version of Cuda that does not match the version "
        "used to compile Pytorch binaries.  Pytorch binaries were compiled with C\n",
    ],
)
def test_an_extension_toolkit_other_than_torchs_cuda_is_two_cudas(log: str) -> None:
    exp = explained(log)
    assert exp.root is not None and exp.root.sig.id == "multiple-toolkits/extension-build-cuda-mismatch"
    assert ids(exp)[:2] == ["multiple-toolkits", "toolchain-not-found"]
    assert any("DS_SKIP_CUDA_CHECK" in f for f in fixes(exp))


def test_the_facts_confirm_the_mismatch_and_give_the_exact_index() -> None:
    snap = stated({"framework_version": "2.1.0+cu118", "system_cuda": "12.1"})
    log = "RuntimeError: The detected CUDA version (12.1) mismatches the version that was used to compile\n"
    exp = explained(log, snap)
    assert ids(exp)[0] == "multiple-toolkits"
    assert [f.id for f in exp.causes[0].findings] == ["torch-extension-toolkit"]
    steps = fixes(exp)
    assert "whl/cu121" in steps[1]
    assert not any("XLA_FLAGS" in f or "LD_LIBRARY_PATH" in f for f in steps)


@pytest.mark.parametrize(
    "line",
    [
        "Installed CUDA version 12.6 does not match the version torch was compiled with 12.4 but since the APIs "
        "are compatible, accepting this combination",
        "The detected CUDA version (12.6) has a minor version mismatch with the version that was used to compile "
        "PyTorch (12.4). Most likely this shouldn't be a problem.",
    ],
)
def test_a_minor_mismatch_that_the_build_accepts_is_not_an_error(line: str) -> None:
    log = f"{line}\nUsing /home/u/.cache/torch_extensions/py39_cu124 as PyTorch extensions root...\n"
    exp = explained(log)
    assert exp.root is None and exp.causes == []
    assert "extension-cuda-minor-mismatch-accepted" in exp.scan.benign


def test_a_cuda_home_written_like_a_path_list_stays_a_path_problem() -> None:
    """deepspeedai/DeepSpeed#5511: the ':' comes from CUDA_HOME=$CUDA_HOME:/usr/local/cuda."""
    exp = explained("FileNotFoundError: [Errno 2] No such file or directory: ':/usr/local/cuda/bin/nvcc'\n")
    assert exp.root is not None and exp.root.sig.id == "env-path-misconfig/cuda-home-path-list"
    assert ids(exp)[0] == "env-path-misconfig"


def test_an_extension_asking_for_torch_1x_split_cuda_library_was_built_for_another_torch() -> None:
    """MCG-NJU/SparseBEV#83: mmcv-full 1.6.0 under torch 2.0.0, whose wheels no longer ship libtorch_cuda_cu.so."""
    exp = explain_text(
        "ImportError: libtorch_cuda_cu.so: cannot open shared object file: No such file or directory\n"
    )
    assert top(exp)[0] == "binary-incompatible"
    fix = rank.cause_json(exp.causes, 0, plan=exp.plan)["fix"]
    assert "torch" in fix[0] and not any("nvidia-" in s or "LD_LIBRARY_PATH" in s for s in fix)
    runtime = explain_text(
        "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory\n"
    )
    assert top(runtime)[0] == "cuda-libs-missing"  # a CUDA library of the toolkit is another matter
