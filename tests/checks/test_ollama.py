"""ollama's own GPU support, read per release from ollama's repository (knowledge/ollama.toml): facts as
people stated them in ollama's threads (the check scenarios' sources), compared with the table."""

from __future__ import annotations

from cudoctor import knowledge, versions
from cudoctor.model import Severity
from tests.conftest import finding_ids, run_check, stated


def test_a_gpu_below_the_stated_releases_floor_fires_with_the_first_release_that_takes_it() -> None:
    """ollama#1865-like: 0.1.20 accepts compute capability 6.0 and up (gpu/gpu.go CudaComputeMajorMin = 6);
    0.1.23 lowered it to 5.0 with a runner built for sm_50/52."""
    result = run_check(
        "ollama",
        stated({"gpu": "GeForce GTX 970", "compute_capability": "5.2", "framework_version": "ollama 0.1.20"}),
    )
    assert finding_ids(result) == ["ollama-gpu-too-old"]
    found = result.findings[0]
    assert found.cause == "arch-unsupported" and found.severity == Severity.ERROR
    assert "6.0" in found.title and "runs the model on the CPU" in found.title
    assert found.fix[0].startswith("Upgrade ollama to 0.1.23 or newer")


def test_a_gpu_the_release_takes_is_silent() -> None:
    for facts in (
        {"gpu": "GeForce GTX 970", "compute_capability": "5.2", "framework_version": "ollama 0.1.23"},
        {"gpu": "GeForce RTX 3090", "driver": "550.54.14", "framework_version": "Ollama v0.5.13"},
        {"gpu": "Tesla V100", "driver": "535.104.05", "framework_version": "ollama 0.9.3"},
    ):
        assert run_check("ollama", stated(facts)).findings == (), facts


def test_with_no_release_stated_only_a_gpu_below_every_release_fires() -> None:
    k80 = run_check("ollama", stated({"gpu": "3x Tesla K80", "framework_version": "ollama (Jan 2024)"}))
    assert finding_ids(k80) == ["ollama-gpu-too-old"]
    assert "no ollama release uses a GPU below compute capability 5.0" in k80.findings[0].title
    assert run_check("ollama", stated({"gpu": "GTX 1060", "framework_version": "ollama"})).findings == ()


def test_a_cuda_13_runner_or_a_build_with_the_system_cuda_13_has_no_code_for_pascal_or_volta() -> None:
    """CUDA 13 builds for compute capability 7.5 and newer (toolkit_archs.toml): Arch's ollama-cuda built
    with CUDA 13.0 on a GTX 1060, and a V100 under ollama's CUDA 13 runner."""
    arch = run_check(
        "ollama",
        stated(
            {
                "gpu": "NVIDIA GeForce GTX 1060 6GB",
                "system_cuda": "13.0.1",
                "framework_version": "ollama-cuda (Arch repo package, uses the system CUDA)",
            }
        ),
    )
    assert finding_ids(arch) == ["ollama-gpu-too-old"]
    assert "built with CUDA 13.0" in arch.findings[0].title
    runner = run_check(
        "ollama", stated({"gpu": "Tesla V100", "framework_version": "ollama 0.12.7 with its CUDA 13 runner"})
    )
    assert finding_ids(runner) == ["ollama-gpu-too-old"]
    assert "OLLAMA_LLM_LIBRARY=cuda_v12" in runner.findings[0].fix[0]
    turing = stated({"gpu": "Tesla T4", "framework_version": "ollama 0.12.7 with its CUDA 13 runner"})
    assert run_check("ollama", turing).findings == ()


def test_a_driver_older_than_every_runner_of_the_release_fires() -> None:
    """0.9.3 to 0.11.10 ship one CUDA runner, 12.8: a 470 driver (CUDA 11.4) runs none of them."""
    result = run_check("ollama", stated({"driver": "470.182.03", "framework_version": "ollama 0.9.3"}))
    assert finding_ids(result) == ["ollama-driver-too-old"]
    assert result.findings[0].cause == "driver-too-old"
    assert "525.60.13" in result.findings[0].fix[0]
    # 0.5.13 still ships a CUDA 11.3 runner beside the 12.8 one, which that driver runs
    assert (
        run_check("ollama", stated({"driver": "470.182.03", "framework_version": "ollama 0.5.13"})).findings
        == ()
    )


def test_without_ollama_in_the_facts_the_check_does_not_apply() -> None:
    result = run_check("ollama", stated({"gpu": "GeForce GTX 970", "framework_version": "torch 2.1.0"}))
    assert result.outcome == "unknown" and result.findings == ()


def test_the_table_reads_in_release_order_with_parseable_runners() -> None:
    rows = knowledge.table("ollama")["release"]
    last = (0,)
    for row in rows:
        first, end = versions.parse(row["first"]), versions.parse(row["last"])
        assert first and end and last < first <= end, row
        last = end
        for runner in row["runners"]:
            assert versions.major_minor(runner["cuda"]), row
            assert not runner["archs"] or knowledge.ollama_archs(runner["archs"]), row
    assert knowledge.ollama_archs("61;86-virtual;90a") == ["sm_61", "compute_86", "sm_90a"]
    assert knowledge.ollama_release("0.1.20") == {**rows[2]}
    assert knowledge.ollama_release("9.9.9") is None


def test_ollamas_own_driver_floors_from_030_on() -> None:
    """discover/cuda_compat.go (read into ollama.toml): from 0.31 a driver below 550 loses every CUDA GPU, and one
    below 570 a GPU under compute capability 7.0 (ollama/ollama#17290: two P40s on 535 under 0.32.1; 580 fixed it)."""
    p40 = {"gpu": "2x NVIDIA Tesla P40", "framework_version": "Ollama 0.32.1"}
    result = run_check("ollama", stated({**p40, "driver": "535.309.01"}))
    assert finding_ids(result) == ["ollama-driver-too-old"]
    assert "570" in result.findings[0].fix[0]  # the higher of the two floors that apply to a P40
    assert run_check("ollama", stated({**p40, "driver": "580.159.03"})).findings == ()
    ampere = run_check(
        "ollama", stated({"gpu": "RTX 3090", "driver": "535.309.01", "framework_version": "ollama 0.32.1"})
    )
    assert "550" in ampere.findings[0].fix[0]
    assert (
        run_check(
            "ollama", stated({"gpu": "RTX 3090", "driver": "560.35.03", "framework_version": "ollama 0.32.1"})
        ).findings
        == ()
    )
    # before cuda_compat.go (0.24) no such floor: a 535 driver runs the CUDA 12.8 runner through minor-version compatibility
    assert (
        run_check(
            "ollama", stated({**p40, "driver": "535.309.01", "framework_version": "ollama 0.24.0"})
        ).findings
        == ()
    )
