"""host-compiler-too-new: a GCC newer than the toolkit's nvcc accepts (toolkit_archs.toml [[host_gcc]], read from
NVIDIA's nvcc wheels by tools/read_nvcc_gcc.py), or nvcc's own refusal quoted."""

from __future__ import annotations

import pytest

from cudoctor import knowledge
from cudoctor.model import Severity
from tests.conftest import finding_ids, run_check, stated


@pytest.mark.parametrize(
    ("facts", "fires"),
    [
        # NVlabs/instant-ngp#1562 (blind set 65): Ubuntu 24.04's gcc 13 under CUDA 12.1 (gcc <= 12)
        ({"system_cuda": "cuda_12.1", "other": "gcc (Ubuntu 13.2.0-23ubuntu4) 13.2.0"}, True),
        # open-mmlab/mmcv#2900: Debian 12's gcc 12.2 under nvcc 11.8 (gcc <= 11)
        ({"system_cuda": "11.8", "other": "GCC: gcc (Debian 12.2.0-14) 12.2.0"}, True),
        # nvcc's refusal quoted, the toolkit unknown (ashawkey/stable-dreamfusion#116)
        (
            {
                "other": "host_config.h:132:2: error: #error -- unsupported GNU version! gcc versions later than 11 are not supported!"
            },
            True,
        ),
        (
            {"system_cuda": "12.4", "other": "gcc (Ubuntu 13.2.0-23ubuntu4) 13.2.0"},
            False,
        ),  # 12.4 takes gcc 13
        ({"system_cuda": "11.8", "other": "gcc 9.4.0"}, False),
        ({"other": "gcc 14.2.1"}, False),  # no toolkit known: nothing to compare with
    ],
)
def test_a_gcc_newer_than_the_nvcc_takes(facts: dict[str, str], fires: bool) -> None:
    r = run_check("host-compiler-too-new", stated(facts))
    assert finding_ids(r) == (["host-compiler-too-new"] if fires else [])
    if fires:
        assert r.findings[0].severity is Severity.ERROR and "CC=gcc-" in r.findings[0].fix[0]


def test_the_fix_names_the_gcc_and_the_toolkit_that_take_it() -> None:
    r = run_check(
        "host-compiler-too-new", stated({"system_cuda": "12.1", "other": "gcc (GCC) 13.2.1 20231011"})
    )
    assert "gcc-12" in r.findings[0].fix[0] and "CUDA 12.4 or newer" in r.findings[0].fix[1]


def test_missing_facts() -> None:
    assert run_check("host-compiler-too-new", stated({"system_cuda": "12.1"})).outcome == "unknown"


def test_the_table_holds_every_release_the_wheels_gave() -> None:
    assert knowledge.host_gcc_max("11.8")[0] == 11  # type: ignore[index]
    assert knowledge.host_gcc_max("12.6")[0] == 13  # type: ignore[index]
    assert knowledge.host_gcc_max("13.0")[0] == 15  # type: ignore[index]
    assert knowledge.host_gcc_max("11.2") is None  # no wheel to read
    assert knowledge.host_gcc_toolkit(14) == "12.8" and knowledge.host_gcc_toolkit(30) is None
