"""Checks of WSL2 (checks/wsl.py): a Linux driver's libcuda in front of the Windows one, libcuda.so
missing from the loader cache."""

from __future__ import annotations

from cudoctor.facts import loader
from tests.checks.helpers import outcome
from tests.conftest import finding_ids, run_check, stated


def test_wsl_linux_driver() -> None:
    bad = {"libcuda.so.1": ["/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib/wsl/lib/libcuda.so.1"]}
    assert outcome("wsl-linux-driver", stated({"os": "Ubuntu 22.04 (WSL2)"}, loader__ldcache=bad))[1] == [
        "wsl-linux-driver"
    ]
    good = {"libcuda.so.1": ["/usr/lib/wsl/lib/libcuda.so.1"]}
    assert outcome("wsl-linux-driver", stated({"os": "Ubuntu 22.04 (WSL2)"}, loader__ldcache=good)) == (
        "ok",
        [],
    )
    assert outcome("wsl-linux-driver", stated({"os": "Ubuntu 22.04"}, loader__ldcache=bad)) == ("ok", [])
    assert outcome("wsl-linux-driver", stated({}))[0] == "unknown"


# `ldconfig -p | grep libcuda` inside WSL2, as posted in microsoft/WSL#8587 (libcuda.so missing from the cache)
WSL_8587_LDCONFIG = """\
\tlibcudart.so.11.0 (libc6,x86-64) => /usr/local/cuda/targets/x86_64-linux/lib/libcudart.so.11.0
\tlibcudart.so (libc6,x86-64) => /usr/local/cuda/targets/x86_64-linux/lib/libcudart.so
\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/wsl/lib/libcuda.so.1
"""


def test_wsl_libcuda_not_found() -> None:
    wsl = {"os": "Ubuntu 22.04 (WSL2)"}
    cache = loader.parse_ldconfig(WSL_8587_LDCONFIG)
    r = run_check("wsl-libcuda-not-found", stated(wsl, loader__ldcache=cache))
    assert finding_ids(r) == ["wsl-libcuda-not-found"] and r.findings[0].severity.value == "warning"
    assert "libcuda.so: cannot open shared object file" in r.findings[0].title
    assert r.findings[0].fix[0].startswith("export LD_LIBRARY_PATH=/usr/lib/wsl/lib:")
    none = run_check("wsl-libcuda-not-found", stated(wsl, loader__ldcache={}))
    assert none.findings[0].severity.value == "error"
    on_path = {"LD_LIBRARY_PATH": [{"path": "/usr/lib/wsl/lib/", "exists": True, "readable": True}]}
    assert outcome("wsl-libcuda-not-found", stated(wsl, loader__ldcache=cache, env__paths=on_path)) == (
        "ok",
        [],
    )
    full = dict(cache, **{"libcuda.so": ["/usr/lib/wsl/lib/libcuda.so"]})
    assert outcome("wsl-libcuda-not-found", stated(wsl, loader__ldcache=full)) == ("ok", [])
    assert outcome("wsl-libcuda-not-found", stated({"os": "Ubuntu 22.04"}, loader__ldcache={})) == ("ok", [])
    assert outcome("wsl-libcuda-not-found", stated(wsl))[0] == "unknown"


def test_wsl2_on_a_windows_that_gives_it_no_gpu() -> None:
    # NVIDIA/nvidia-docker#1437 (set 53): Windows 10 1909 (build 18363) under WSL2: CUDA calls it an old driver
    old = stated({"os": "Windows 10 Version 1909 build 18363, Ubuntu 18.04 on WSL2", "driver": "465.21"})
    r = run_check("wsl-windows-too-old", old)
    assert finding_ids(r) == ["wsl-windows-too-old"] and "18363" in r.findings[0].title
    assert r.findings[0].cause == "no-gpu-visible"
    for ok in (
        "Windows 10 22H2 (build 19045), WSL2",
        "Windows 10 Version 21H2, WSL2",
        "Windows 11 build 22631, WSL2",
    ):
        assert outcome("wsl-windows-too-old", stated({"os": ok})) == ("ok", []), ok
    assert outcome("wsl-windows-too-old", stated({"os": "Windows 10 build 18363 (native)"})) == ("ok", [])
    assert outcome("wsl-windows-too-old", stated({"os": "Ubuntu 22.04 on WSL2"}))[0] == "unknown"
