"""A CUDA library the loader could not find, read against the toolkits the facts show: a toolkit that
ships that very file means the loader's path does not lead to it (explainer/path_rules.py)."""

from __future__ import annotations

import pytest

from cudoctor.explainer import path_rules
from tests.conftest import explained, stated

WINDOWS = "Could not load dynamic library 'cudart64_110.dll'; dlerror: cudart64_110.dll not found\n"
LINUX = (
    "./a.out: error while loading shared libraries: libcudart.so.11.0: cannot open shared object file: "
    "No such file or directory\n"
)


def reasons(exp: object, cause: str = path_rules.CAUSE) -> list[str]:
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
    assert path_rules.ships(toolkit, wanted) is ships


def test_a_windows_toolkit_that_holds_the_dll_is_a_path_to_add() -> None:
    """Round 89 (a tensorflow thread): CUDA 11.2 installed, TensorFlow 2.4 could not find cudart64_110.dll."""
    facts = {
        "os": "Windows 10",
        "system_cuda": "11.2 installed at C:/Program Files/NVIDIA GPU Computing Toolkit/CUDA/v11.2",
    }
    exp = explained(WINDOWS, stated(facts))
    assert reasons(exp) and "CUDA 11.2 toolkit ships cudart64_110.dll" in reasons(exp)[0]
    rc = next(c for c in exp.causes if c.id == path_rules.CAUSE)
    assert "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.2\\bin" in rc.fixes[0]
    assert "os.add_dll_directory" in rc.fixes[0]


def test_a_linux_toolkit_that_holds_the_library_goes_on_ld_library_path() -> None:
    exp = explained(LINUX, stated({"system_cuda": "11.4", "os": "Ubuntu 20.04"}))
    rc = next(c for c in exp.causes if c.id == path_rules.CAUSE)
    assert "export LD_LIBRARY_PATH=/usr/local/cuda-11.4/lib64:$LD_LIBRARY_PATH" in rc.fixes[0]
    without = explained(LINUX, stated({"os": "Ubuntu 20.04"}))
    assert next(c for c in exp.causes if c.id == path_rules.CAUSE).score > max(
        (c.score for c in without.causes if c.id == path_rules.CAUSE), default=0.0
    )


def test_a_toolkit_of_another_release_or_none_says_nothing() -> None:
    assert reasons(explained(LINUX, stated({"system_cuda": "12.1"}))) == []  # 12.1 has no libcudart.so.11.0
    assert reasons(explained(LINUX, stated({"os": "Ubuntu 20.04"}))) == []  # no toolkit known
    cudnn = "Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file\n"
    assert reasons(explained(cudnn, stated({"system_cuda": "11.8"}))) == []  # not a file a toolkit ships
