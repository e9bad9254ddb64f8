"""PaddlePaddle's wheels against the driver, cuDNN, CUDA libraries and GPU (checks/paddle.py, knowledge/paddle.toml):
facts as people stated them in Paddle's threads, each check with a case that fires, one that stays silent and
one whose facts are missing."""

from __future__ import annotations

import pytest

from cudoctor import knowledge
from tests.conftest import finding_ids, run_check, stated


def test_the_wheels_cuda_comes_from_its_tag_its_index_its_own_line_or_the_releases_default() -> None:
    def cuda(facts: dict[str, str]) -> str | None:
        return (stated(facts).value("app.paddle") or {}).get("cuda")

    assert cuda({"framework_version": "paddlepaddle-gpu 2.3.2.post116"}) == "11.6"
    assert (
        cuda(
            {
                "framework_version": "paddlepaddle-gpu==3.2.2 (-i https://www.paddlepaddle.org.cn/packages/stable/cu126/)"
            }
        )
        == "12.6"
    )
    assert (
        cuda({"framework_version": "Paddle version: 2.5.0", "framework_cuda": "Runtime API Version: 11.7"})
        == "11.7"
    )
    assert cuda({"framework_version": "paddlepaddle-gpu==2.2.1"}) == "10.2"  # PyPI's untagged 2.2 wheel
    assert cuda({"framework_version": "paddlepaddle-gpu==2.6.1"}) == "11.8"
    assert stated({"framework_version": "paddlepaddle 2.5.0"}).value("app.paddle") is None  # the CPU package


def test_a_driver_older_than_the_wheels_cuda_fires_and_a_newer_one_is_silent() -> None:
    """PaddleX#1211-like: AI Studio's 2.1.2 (the untagged CUDA 10.2 wheel) on a 418 driver (CUDA 10.1)."""
    old = run_check(
        "paddle-driver",
        stated(
            {"gpu": "Tesla V100-SXM2 32GB", "framework_version": "PaddlePaddle 2.1.2", "driver": "418.67"}
        ),
    )
    assert finding_ids(old) == ["paddle-driver"]
    assert "440.33" in old.findings[0].fix[0]  # CUDA 10.2's driver floor
    assert "post101" in old.findings[0].fix[1]  # the 2.1 wheel the driver runs
    new = run_check(
        "paddle-driver",
        stated(
            {
                "framework_version": "paddlepaddle-gpu 2.1.1",
                "framework_cuda": "Runtime API Version: 10.2",
                "driver": "Driver API Version: 11.3",
            }
        ),
    )
    assert new.findings == ()
    assert (
        run_check("paddle-driver", stated({"framework_version": "paddlepaddle-gpu 2.1.1"})).outcome
        == "unknown"
    )


@pytest.mark.parametrize(
    ("facts", "fires"),
    [
        # Paddle#79388: 3.2's cu126 wheel is compiled with cuDNN 9.9 and pins nvidia-cudnn-cu12 9.5.1.17
        (
            {
                "framework_version": "paddlepaddle-gpu==3.2.2 (-i https://www.paddlepaddle.org.cn/packages/stable/cu126/)",
                "other": "nvidia-cudnn-cu12==9.5.1.17",
            },
            True,
        ),
        ({"framework_version": "paddlepaddle-gpu 2.5.1.post112", "cudnn": "8.0"}, True),  # built with 8.2
        (
            {
                "framework_version": "paddlepaddle-gpu 2.1.1",
                "framework_cuda": "Runtime API Version: 10.2",
                "cudnn": "cudnn-11.2-windows-x64-v8.1.1.33",
            },
            True,
        ),
        (
            {
                "framework_version": "Paddle version: 2.5.0",
                "framework_cuda": "Runtime API Version: 11.7",
                "cudnn": "8.4",
            },
            False,
        ),
        (
            {"framework_version": "paddlepaddle-gpu 2.5.1.post112", "cudnn": "8.6"},
            False,
        ),  # a newer 8.x serves
        ({"framework_version": "paddlepaddle-gpu 2.5.1.post112"}, False),  # no cuDNN stated
    ],
)
def test_a_cudnn_of_another_major_or_an_older_minor_fires(facts: dict[str, str], fires: bool) -> None:
    assert finding_ids(run_check("paddle-cudnn", stated(facts))) == (["paddle-cudnn"] if fires else [])


def test_a_gpu_newer_than_the_wheels_newest_sass_fires_with_the_index_that_builds_it() -> None:
    """Paddle#39090-like: the default 2.2.1 wheel (CUDA 10.2: SASS up to sm_75) on an RTX 3090; Paddle#76037: the
    50 series needs the CUDA 12.9 wheel."""
    ampere = run_check(
        "paddle-arch", stated({"gpu": "RTX3090", "framework_version": "paddlepaddle-gpu==2.2.1"})
    )
    assert finding_ids(ampere) == ["paddle-arch"]
    assert "packages/stable/cu118/" in ampere.findings[0].fix[0]
    blackwell = run_check(
        "paddle-arch", stated({"gpu": "RTX 5070 Ti", "framework_version": "paddlepaddle-gpu 2.6.1.post117"})
    )
    assert "packages/stable/cu129/" in blackwell.findings[0].fix[0]
    # sm_86 under a CUDA 11.0 wheel runs its sm_80 SASS (same major); sm_89 under CUDA 11.2's sm_86
    for facts in (
        {"gpu": "RTX 3090", "framework_version": "paddlepaddle-gpu 2.2.2.post110"},
        {"gpu": "RTX 4090", "framework_version": "paddlepaddle-gpu 2.4.2.post112"},
        {"framework_version": "paddlepaddle-gpu==2.2.1"},  # no GPU stated
    ):
        assert run_check("paddle-arch", stated(facts)).findings == (), facts


def test_a_2x_wheel_on_a_system_cuda_of_another_major_fires() -> None:
    facts = {"framework_version": "Paddle version: 2.1.2, Paddle With CUDA: True", "system_cuda": "11.1.74"}
    found = run_check("paddle-cuda-libs", stated(facts))
    assert finding_ids(found) == ["paddle-cuda-libs"] and "post110" in found.findings[0].fix[0]
    assert run_check("paddle-cuda-libs", stated({**facts, "system_cuda": "10.2"})).findings == ()
    three = {
        "framework_version": "paddlepaddle-gpu==3.2.2 (-i https://www.paddlepaddle.org.cn/packages/stable/cu126/)",
        "system_cuda": "11.8",
    }
    assert run_check("paddle-cuda-libs", stated(three)).findings == ()  # 3.x loads NVIDIA's pip wheels


def test_every_paddle_row_names_its_source_and_parses() -> None:
    assert not [p for p in knowledge.validate() if "paddle" in p]
    assert knowledge.paddle_install("2.5.2", "11.7").startswith(
        "python -m pip install paddlepaddle-gpu==2.5.2.post117 -f "
    )
    assert knowledge.paddle_index_for("12.8") == next(
        r for r in knowledge.table("paddle")["index"] if r["cuda"] == "12.9"
    )
