"""Checks of the CPU (checks/cpu.py): two OpenMP runtimes in one process, a CPU without AVX."""

from __future__ import annotations

from tests.checks.helpers import outcome
from tests.conftest import stated


# ---------------------------------------------------------------- CPU
def test_duplicate_openmp() -> None:
    libs = [
        {"kind": "openmp", "lib": "libgomp.so.1", "path": "/site/torch/lib/libgomp.so.1", "package": "torch"},
        {
            "kind": "openmp",
            "lib": "libiomp5.so",
            "path": "/site/../../libiomp5.so",
            "package": "intel-openmp",
        },
    ]
    assert outcome("duplicate-openmp", stated({}, cpu__runtime_libs=libs))[1] == ["duplicate-openmp"]
    assert outcome("duplicate-openmp", stated({}, cpu__runtime_libs=libs[:1])) == ("ok", [])
    assert outcome("duplicate-openmp", stated({}))[0] == "unknown"


def test_cpu_lacks_avx() -> None:
    tf = {"version": "2.15.0", "build": "cpu"}
    snap = stated(
        {},
        host__cpu={"model": "Intel Celeron N4000", "flags": ["sse4_1", "sse4_2"], "all_flags_known": True},
        framework__tensorflow=tf,
    )
    assert outcome("cpu-lacks-avx", snap)[1] == ["cpu-lacks-avx"]
    avx = stated(
        {},
        host__cpu={"model": "EPYC", "flags": ["avx", "avx2"], "all_flags_known": True},
        framework__tensorflow=tf,
    )
    assert outcome("cpu-lacks-avx", avx) == ("ok", [])
    assert outcome("cpu-lacks-avx", stated({}))[0] == "unknown"
