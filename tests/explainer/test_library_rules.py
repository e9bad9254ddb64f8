"""A CUDA library the loader could not find, read against the toolkits the facts show: a toolkit that
ships that very file means the loader's path does not lead to it (explainer/library_rules.py)."""

from __future__ import annotations

import pytest

from cudoctor.explainer import library_rules, rank
from tests.conftest import explained, stated
from tests.explainer.helpers import explain_text, top

WINDOWS = "Could not load dynamic library 'cudart64_110.dll'; dlerror: cudart64_110.dll not found\n"
LINUX = (
    "./a.out: error while loading shared libraries: libcudart.so.11.0: cannot open shared object file: "
    "No such file or directory\n"
)


def reasons(exp: object, cause: str = library_rules.CAUSE) -> list[str]:
    rc = next((c for c in exp.causes if c.id == cause), None)  # type: ignore[attr-defined]
    return [] if rc is None else [r for r in rc.reasons if "ships" in r]


@pytest.mark.parametrize(
    ("toolkit", "wanted", "ships"),
    [
        ("11.2", "11.0", True),  # cudart64_110.dll / libcudart.so.11.0 in every CUDA 11.x
        ("12.4", "12", True),
        ("11.8", "12", False),
        ("10.1.243", "10.1", True),  # before CUDA 11, the exact minor
        ("10.2", "10.1", False),
        ("11.2", "", False),
    ],
)
def test_which_toolkit_ships_which_file(toolkit: str, wanted: str, ships: bool) -> None:
    assert library_rules.ships(toolkit, wanted) is ships


def test_a_windows_toolkit_that_holds_the_dll_is_a_path_to_add() -> None:
    """Round 89 (a tensorflow thread): CUDA 11.2 installed, TensorFlow 2.4 could not find cudart64_110.dll."""
    facts = {
        "os": "Windows 10",
        "system_cuda": "11.2 installed at C:/Program Files/NVIDIA GPU Computing Toolkit/CUDA/v11.2",
    }
    exp = explained(WINDOWS, stated(facts))
    assert reasons(exp) and "CUDA 11.2 toolkit ships cudart64_110.dll" in reasons(exp)[0]
    rc = next(c for c in exp.causes if c.id == library_rules.CAUSE)
    assert "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.2\\bin" in rc.fixes[0]
    assert "os.add_dll_directory" in rc.fixes[0]


def test_a_linux_toolkit_that_holds_the_library_goes_on_ld_library_path() -> None:
    exp = explained(LINUX, stated({"system_cuda": "11.4", "os": "Ubuntu 20.04"}))
    rc = next(c for c in exp.causes if c.id == library_rules.CAUSE)
    assert "export LD_LIBRARY_PATH=/usr/local/cuda-11.4/lib64:$LD_LIBRARY_PATH" in rc.fixes[0]
    without = explained(LINUX, stated({"os": "Ubuntu 20.04"}))
    assert next(c for c in exp.causes if c.id == library_rules.CAUSE).score > max(
        (c.score for c in without.causes if c.id == library_rules.CAUSE), default=0.0
    )


def test_a_toolkit_of_another_release_or_none_says_nothing() -> None:
    assert reasons(explained(LINUX, stated({"system_cuda": "12.1"}))) == []  # 12.1 has no libcudart.so.11.0
    assert reasons(explained(LINUX, stated({"os": "Ubuntu 20.04"}))) == []  # no toolkit known
    cudnn = "Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file\n"
    assert reasons(explained(cudnn, stated({"system_cuda": "11.8"}))) == []  # not a file a toolkit ships


PADDLE = (
    "W0801 device: 0. The installed Paddle is compiled with CUDNN 7.6, but CUDNN version in your machine is 7.3, "
    "which may cause serious incompatible bug. Please recompile or reinstall Paddle with compatible CUDNN version.\n"
    "ExternalError: Cudnn error, CUDNN_STATUS_BAD_PARAM at (/paddle/paddle/fluid/operators/batch_norm_op.cu:319)\n"
)


def test_a_version_mismatch_said_beside_the_root_error_weighs_on_it() -> None:
    """A status code names no version; the line before it does (a PaddlePaddle report, set 14)."""
    exp = explained(PADDLE)
    assert exp.root is not None and "CUDNN_STATUS_BAD_PARAM" in exp.root.text
    cudnn = next(c for c in exp.causes if c.id == "cudnn-mismatch")
    assert any("cuDNN 7.3 is the one found" in r for r in cudnn.reasons)
    alone = explained(PADDLE.splitlines()[1] + "\n")  # the status code without the line: not cuDNN's version
    assert not any("is the one found" in r for c in alone.causes for r in c.reasons)
    assert cudnn.score > max((c.score for c in alone.causes if c.id == "cudnn-mismatch"), default=0.0) + 0.4


JAX_OUTDATED = (
    "CUDA backend failed to initialize: Unable to use CUDA because of the following issues with CUDA components:\n"
    "Outdated cuDNN installation found.\n"
    "Version JAX was built against: 8907\n"
    "Minimum supported: 9100\n"
    "Installed version: 8907\n"
    "The local installation version must be no lower than 9100..(Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)\n"
)  # conda-forge/jax-feedstock#149 (corpus)


def test_the_versions_under_jax_outdated_verdict_reach_the_plan() -> None:
    exp = explained(JAX_OUTDATED)
    assert exp.plan is not None and exp.plan.cudnn_compiled == "9.1.0" and exp.plan.cudnn_wanted == 9
    fix = rank.cause_json(exp.causes, 0, plan=exp.plan)["fix"]
    assert exp.causes[0].id == "cudnn-mismatch" and "cuDNN 9.1 or a newer 9.x" in fix[0]


@pytest.mark.parametrize(
    "text",
    [
        JAX_OUTDATED.replace("Installed version: 8907", "Installed version: 9100"),  # not older: nothing read
        JAX_OUTDATED.replace("Installed version: 8907\n", ""),  # a version missing: nothing read
        "Outdated cuDNN installation found.\nSomething else: 9100\nInstalled version: 8907\n",  # no minimum
    ],
)
def test_an_outdated_verdict_without_an_older_installed_version_states_nothing(text: str) -> None:
    exp = explained(text)
    assert exp.plan is not None and exp.plan.cudnn_compiled is None


def test_an_outdated_cusparse_reads_its_own_encoding() -> None:
    block = "Outdated cuSPARSE installation found.\nMinimum supported: 12100\nInstalled version: 12002\n"
    exp = explained(block)
    root = exp.root.line if exp.root else 0
    facts = library_rules.outdated_block(exp.scan, root, exp.root.text if exp.root else "")
    assert facts == {"library": "cusparse", "compiled": "12.1.0", "loaded": "12.0.2", "older": "loaded"}


def test_a_library_cuda_10_1_installs_outside_its_toolkit_reads_as_off_the_path() -> None:
    """tensorflow/tensorflow#43236: TF 2.3 on CUDA 10.1 cannot open libcublas.so.10, which CUDA 10.1's packages
    put in /usr/lib/x86_64-linux-gnu or /usr/local/cuda-10.2/lib64 (status_codes.toml outside_toolkit)."""
    line = "Could not load dynamic library 'libcublas.so.10'; dlerror: libcublas.so.10: cannot open shared object file: No such file or directory\n"
    exp = explain_text(line, {"framework_version": "tensorflow 2.3.0", "system_cuda": "10.1"})
    assert top(exp)[0] == "env-path-misconfig"
    assert any("/usr/local/cuda-10.2/lib64" in f for f in exp.causes[0].fixes)
    other = explain_text(line, {"framework_version": "tensorflow 2.3.0", "system_cuda": "10.2"})
    assert not any("outside the toolkit" in r for c in other.causes for r in c.reasons)
    # CUDA 10.0's soname (mozilla/DeepSpeech#2861: a build for 10.0 on a 10.1 install) is another file
    ten = explain_text(
        "ImportError: libcublas.so.10.0: cannot open shared object file: No such file or directory\n",
        {"system_cuda": "10.1"},
    )
    assert top(ten)[0] == "cuda-libs-missing"


MAMBA = (
    '  File "/env/lib/python3.10/site-packages/mamba_ssm/ops/selective_scan_interface.py", line 20, in <module>\n'
    "    import selective_scan_cuda\n"
    "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory\n"
)


@pytest.mark.parametrize(
    "log",
    [
        MAMBA,  # state-spaces/mamba (round 212): its extension built for CUDA 11 under a CUDA 12 torch
        "    from detectron2 import _C\nImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory\n",
        # llm-d (round 217): ldd of vLLM's own extension, under the error
        "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory\n"
        "python -c 'import vllm._C'\n/opt/vllm-source/vllm/_C.abi3.so:\n  libcudart.so.12 => not found\n",
    ],
)
def test_a_library_an_extension_asks_for_is_a_build_for_another_torch(log: str) -> None:
    exp = explained(log, stated({"system_cuda": "12.1"}))
    assert top(exp)[0] == "binary-incompatible"
    rc = next(c for c in exp.causes if c.id == "binary-incompatible")
    assert any("compiled extension, built for CUDA" in r for r in rc.reasons)
    assert "--no-build-isolation" in rc.fixes[0]


@pytest.mark.parametrize(
    "log",
    [
        # the framework's own modules: its CUDA libraries are missing, not an add-on's build
        "    from cupy._core import core\nImportError: libcudart.so.12: cannot open shared object file: No such file or directory\n",
        "    from torch._C import *\nImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory\n",
        LINUX,
    ],
)
def test_a_framework_or_program_of_its_own_asking_is_no_extension_build(log: str) -> None:
    exp = explained(log, stated({"system_cuda": "12.1"}))
    assert not any("compiled extension" in r for c in exp.causes for r in c.reasons), [
        c.reasons for c in exp.causes
    ]


FRAMED = (
    '  File "/env/lib/python3.10/site-packages/cudacanvas/__init__.py", line 13, in <module>\n'
    "    from .cudaGLStream import CudaGLStreamer\n"
    "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory\n"
)


def test_a_package_frame_counts_only_beside_a_torch_of_another_cuda() -> None:
    """cudacanvas (round 219): a CUDA 12 wheel under torch 1.12.1+cu113; without the torch, only the frame."""
    assert (
        top(explained(FRAMED, stated({"framework_version": "torch 1.12.1+cu113"})))[0]
        == "binary-incompatible"
    )
    same = explained(FRAMED, stated({"framework_version": "torch 2.1.0+cu121"}))
    unknown = explained(FRAMED, stated({}))
    for exp in (same, unknown):
        assert not any("compiled extension" in r for c in exp.causes for r in c.reasons)
