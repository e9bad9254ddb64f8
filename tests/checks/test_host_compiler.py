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
        assert "CC=gcc-" in r.findings[0].fix[0]


def test_the_fix_names_the_gcc_and_the_toolkit_that_take_it() -> None:
    r = run_check(
        "host-compiler-too-new", stated({"system_cuda": "12.1", "other": "gcc (GCC) 13.2.1 20231011"})
    )
    assert "gcc-12" in r.findings[0].fix[0] and "CUDA 12.4 or newer" in r.findings[0].fix[2]
    assert "gcc_linux-64=12" in r.findings[0].fix[1]
    assert not any(
        "nvidia-cuda-nvcc" in s or "XLA_FLAGS" in s for s in r.findings[0].fix
    )  # not ptxas's steps


def test_missing_facts() -> None:
    assert run_check("host-compiler-too-new", stated({"system_cuda": "12.1"})).outcome == "unknown"


def test_the_table_holds_every_release_the_wheels_gave() -> None:
    assert knowledge.host_gcc_max("11.8")[0] == 11  # type: ignore[index]
    assert knowledge.host_gcc_max("12.6")[0] == 13  # type: ignore[index]
    assert knowledge.host_gcc_max("13.0")[0] == 15  # type: ignore[index]
    assert knowledge.host_gcc_max("11.2") is None  # no wheel to read
    assert knowledge.host_gcc_toolkit(14) == "12.8" and knowledge.host_gcc_toolkit(30) is None


@pytest.mark.parametrize(
    ("facts", "fires", "limit"),
    [
        # a release without its minor is no row's: 12.4-12.9 take GCC 13 (review of session 46)
        ({"system_cuda": "CUDA 12", "other": "gcc (Ubuntu 13.2.0-23ubuntu4) 13.2.0"}, False, None),
        # the nvcc that ran refused: its word wins over the table's row for the release stated
        (
            {"system_cuda": "12.4", "other": "gcc 13.2.0; gcc versions later than 12 are not supported!"},
            True,
            12,
        ),
        # collect_env's form, and the GCC chosen with CC= over the default
        ({"system_cuda": "12.1", "other": "GCC version: (Ubuntu 13.2.0-23ubuntu4) 13.2.0"}, True, 12),
        ({"system_cuda": "12.1", "other": "ships gcc 13.2.0 but I build with CC=gcc-12"}, False, None),
        # the nvcc quoted answering, not the first toolkit listed
        ({"system_cuda": "12.4 and 11.8 (nvcc -V: release 11.8)", "other": "gcc 12.3.0"}, True, 11),
        # native Windows: nvcc builds with MSVC
        ({"os": "Windows 11", "system_cuda": "12.1", "other": "MSYS2 gcc 13.2.0 on PATH"}, False, None),
    ],
)
def test_the_nvcc_in_use_and_the_gcc_chosen(facts: dict[str, str], fires: bool, limit: int | None) -> None:
    r = run_check("host-compiler-too-new", stated(facts))
    assert finding_ids(r) == (["host-compiler-too-new"] if fires else [])
    if limit is not None:
        assert f"GCC {limit} at most" in r.findings[0].title and f"gcc-{limit}" in r.findings[0].fix[0]


def test_no_newer_toolkit_is_named_below_the_tables_first_row() -> None:
    """GCC 9 under an nvcc that takes 8: CUDA 11.0 already takes 9, but the table starts at 11.7."""
    r = run_check(
        "host-compiler-too-new", stated({"other": "gcc 9.3.0; gcc versions later than 8 are not supported!"})
    )
    assert finding_ids(r) == ["host-compiler-too-new"] and not any(
        "toolkit, whose nvcc" in s for s in r.findings[0].fix
    )


def test_an_error_where_a_build_is_in_evidence_a_warning_where_only_wheels_run() -> None:
    wheels = {"system_cuda": "12.1", "other": "gcc 13.2.0; running inference with pip wheels"}
    assert run_check("host-compiler-too-new", stated(wheels)).findings[0].severity is Severity.WARNING
    building = {"system_cuda": "12.1", "other": "gcc 13.2.0; pip install flash-attn builds the extension"}
    assert run_check("host-compiler-too-new", stated(building)).findings[0].severity is Severity.ERROR
    refused = {"other": "gcc 13.2.0; gcc versions later than 12 are not supported!"}
    assert run_check("host-compiler-too-new", stated(refused)).findings[0].severity is Severity.ERROR
