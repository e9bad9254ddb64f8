"""Windows DLL failures at import: Python's 'DLL load failed' (TensorFlow's _pywrap_tensorflow_internal,
torch's _C) and torch's own warning that the Visual C++ runtime is missing. Lines are from the threads
each signature's source names; none of them can be made on this Linux machine."""

from __future__ import annotations

import pytest

from tests.conftest import explained, first, fixes, ids, stated


@pytest.mark.parametrize(
    "line",
    [
        # tensorflow/tensorflow#36407: the 2019 redistributable fixed it
        "ImportError: DLL load failed while importing _pywrap_tensorflow_internal: The specified module could not be found.",
        # pytorch/pytorch#4518
        "ImportError: DLL load failed while importing _C: The specified module could not be found.",
        # the wording before Python 3.8, and a Chinese Windows
        "ImportError: DLL load failed: The specified module could not be found.",
        "from torch._C import * ImportError: DLL load failed: 找不到指定的模块。",
    ],
)
def test_a_dll_windows_could_not_find_starts_with_the_cpp_runtime(line: str) -> None:
    exp = explained(line + "\n")
    assert exp.root is not None and exp.root.sig.id == "cuda-libs-missing/windows-dll-load-failed"
    assert ids(exp)[:2] == ["cuda-libs-missing", "broken-install"]
    assert fixes(exp)[0].startswith("Install or repair the latest Microsoft Visual C++ Redistributable")


def test_a_dll_that_failed_to_initialise_is_not_a_missing_one() -> None:
    """WinError 1114 / 'initialization routine failed' is a different failure (a CPU without AVX, a broken runtime)."""
    exp = explained(
        "ImportError: DLL load failed while importing _pywrap_tensorflow_internal: A dynamic link library (DLL) "
        "initialization routine failed.\n"
    )
    assert exp.root is None or exp.root.sig.id != "cuda-libs-missing/windows-dll-load-failed"


def test_torchs_own_runtime_warning_puts_the_redistributable_first() -> None:
    """pytorch/pytorch#126507: torch's warning, then its DLL error."""
    exp = explained(
        "Microsoft Visual C++ Redistributable is not installed, this may lead to the DLL load failure.\n"
        'OSError: [WinError 126] The specified module could not be found. Error loading "C:\\x\\torch\\lib\\c10.dll" '
        "or one of its dependencies.\n"
    )
    assert exp.root is not None and exp.root.sig.id == "cuda-libs-missing/windows-dll-dependencies"
    assert fixes(exp)[0].startswith("Install the Microsoft Visual C++ Redistributable for x64")
    assert "broken-install" in ids(exp)


def test_tensorflow_skipping_its_gpus_is_a_library_it_could_not_load() -> None:
    """JdeRobot/BehaviorMetrics#385: the line alone, as a pasted tail shows it."""
    exp = explained("Skipping registering GPU devices...\n")
    assert first(exp)["id"] == "cuda-libs-missing" and "TF_CPP_MAX_VLOG_LEVEL=3" in str(first(exp)["why"])


GRADSCALER = (
    "C:\\Python39\\lib\\site-packages\\torch\\cuda\\amp\\grad_scaler.py:115: UserWarning: torch.cuda.amp.GradScaler "
    "is enabled, but CUDA is not available.  Disabling.\n"
)


def test_cuda_not_available_on_windows_is_first_the_cpu_wheel_pypi_gives() -> None:
    """lucidrains/deep-daze#161: PyPI's torch for Windows is the CPU build; the warning alone is only context."""
    windows = explained(GRADSCALER, stated({"os": "Windows 10", "gpu": "RTX 2080 super"}))
    assert ids(windows)[0] == "cpu-only-build"
    assert any("the machine runs Windows" in r for r in windows.causes[0].reasons)
    linux = explained(
        GRADSCALER.replace("C:\\Python39\\lib", "/usr/lib/python3.9"), stated({"os": "Ubuntu 22.04"})
    )
    assert not any("the machine runs Windows" in r for c in linux.causes for r in c.reasons)


def test_a_torch_dll_that_loads_no_cuda_library_is_a_broken_install_first() -> None:
    """Acly/krita-ai-diffusion: c10.dll (which needs only the Visual C++ runtime) could not load on a clean
    Windows 11; the redistributable fixed it. A torch release's own packaging comes next (the corpus's torch\\lib
    DLL reports: 7 of 19 fixed by another release). caffe2_nvrtc.dll stays a CUDA library's matter."""
    host = explained(
        'OSError: [WinError 126] The specified module could not be found. Error loading "C:\\\\Users\\\\b\\\\python\\\\lib\\\\site-packages\\\\torch\\\\lib\\\\c10.dll" or one of its dependencies.\n'
    )
    assert ids(host)[0] == "broken-install" and "library-bug" in ids(host)[:3]
    cuda = explained(
        'OSError: [WinError 126] The specified module could not be found. Error loading "C:\\\\Python\\\\lib\\\\site-packages\\\\torch\\\\lib\\\\caffe2_nvrtc.dll" or one of its dependencies.\n'
    )
    assert ids(cuda)[0] == "cuda-libs-missing"
