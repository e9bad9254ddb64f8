"""The same error read by the GPU in the facts: its compute capability decides between a build or a
GPU too old and a library defect."""

from __future__ import annotations

import io
from pathlib import Path

from cudoctor.explainer import rank, scan
from tests.conftest import ROOT
from tests.explainer.helpers import explain_text, top


def test_triton_shared_memory_limit_in_the_log_tells_old_gpu_from_untuned_kernel() -> None:
    line = "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: {r}, Hardware limit: {h}. Reducing block sizes or `num_stages` may help.\n"
    turing = explain_text(line.format(r=98304, h=65536))
    assert top(turing)[:2] == ["arch-unsupported", "library-bug"]
    assert "needs 98304 bytes" in turing.causes[0].fixes[0] and "allows 65536" in turing.causes[0].fixes[0]
    ampere = explain_text(line.format(r=163842, h=101376))
    assert top(ampere)[:2] == ["library-bug", "arch-unsupported"]
    assert "lower num_stages" in ampere.causes[0].fixes[0]


REPORTS = Path(ROOT) / "tests" / "fixtures" / "reports"


def explain_on(text: str, report: str) -> rank.Explanation:
    from cudoctor.importers import load_report

    return rank.explain(scan.scan(io.BytesIO(text.encode())), load_report(str(REPORTS / report)))


def test_cudnn_no_execution_plans_is_the_gpu_on_turing_and_the_library_elsewhere() -> None:
    """Same message, two causes (karpathy/llm.c#761: Turing; ostris/ai-toolkit#203: torch 2.5.0):
    the GPU in the facts decides, and without facts the more common library bug leads."""
    line = (
        "RuntimeError: cuDNN Frontend error: [cudnn_frontend] Error: No execution plans support the graph.\n"
    )
    assert top(explain_text(line))[:2] == ["library-bug", "arch-unsupported"]
    t4 = explain_on(line, "nvidia_smi_q_t4_exclusive_mps.txt")  # a real Tesla T4 (7.5)
    assert top(t4)[0] == "arch-unsupported"
    assert any("compute capability 7.5" in r and "needs 8.0" in r for r in t4.causes[0].reasons)
    ampere = explain_on(line, "nvidia_smi_q_x_rtx3080ti.xml")  # a real RTX 3080 Ti (8.6)
    assert top(ampere)[0] == "library-bug"
    assert not any("needs 8.0" in r for c in ampere.causes for r in c.reasons)


CUFFT = "RuntimeError: cuFFT error: CUFFT_INTERNAL_ERROR\n"


def test_cufft_internal_error_is_a_too_old_cuda_on_an_ada_gpu_but_not_on_an_older_one() -> None:
    # pytorch#88038 (RTX 4090 with cu117) and pytorch#119420 (low memory on older GPUs)
    assert top(explain_text(CUFFT))[0] == "arch-unsupported"  # no facts: the common reading
    assert top(explain_text(CUFFT, {"gpu": "NVIDIA GeForce RTX 4090"}))[0] == "arch-unsupported"
    older = explain_text(CUFFT, {"gpu": "NVIDIA GeForce GTX 1080 Ti"})
    assert top(older)[0] == "gpu-oom"
    arch = next(c for c in older.causes if c.id == "arch-unsupported")
    assert any("compute capability 6.1, older than the 8.9+" in r for r in arch.reasons)


def test_thc_invalid_argument_is_turing_on_a_cuda9_build() -> None:
    line = "RuntimeError: cuda runtime error (11) : invalid argument at /pytorch/aten/src/THC/THCGeneral.cpp:383\n"
    assert top(explain_text(line, {"gpu": "GeForce RTX 2080"}))[0] == "arch-unsupported"
    assert top(explain_text(line, {"gpu": "GeForce GTX 1080"}))[0] == "library-bug"


def test_round_15_sm80_attention_backward_reads_by_gpu() -> None:
    line = "RuntimeError: Expected is_sm80 || is_sm90 to be true, but got false.\n"
    consumer = explain_text(line, {"gpu": "NVIDIA GeForce RTX 3080 Ti", "framework_version": "torch 2.0.0"})
    assert top(consumer)[:2] == ["library-bug", "arch-unsupported"]
    fixes = rank.cause_json(consumer.causes, 0)["fix"]
    assert "pytorch#99105" in fixes[0] and "enable_flash_sdp(False)" in fixes[1]
    # a GPU below sm80 in the facts confirms that the kernel cannot run there
    t4 = explain_text(line, {"gpu": "Tesla T4"})
    assert top(t4)[0] == "arch-unsupported"


def test_round_24_cutlassf_is_bfloat16_on_a_pre_ampere_gpu() -> None:
    exp = explain_text("RuntimeError: cutlassF: no kernel found to launch!\n", {"gpu": "Tesla T4"})
    assert top(exp)[:2] == ["dtype-mismatch", "arch-unsupported"]
    assert "float16" in rank.cause_json(exp.causes, 0)["fix"][0]
    # its own two steps replace "cast one operand so both match", which does not apply here
    assert len(rank.cause_json(exp.causes, 0)["fix"]) == 2


SM30 = "ptxas fatal   : Value 'sm_30' is not defined for option 'gpu-name'\n"


def test_round_30_a_dropped_arch_that_is_the_gpus_own_means_the_gpu_is_too_old() -> None:
    kepler = explain_text(SM30, {"gpu": "NVIDIA GeForce GTX 770"})
    assert top(kepler)[0] == "arch-unsupported"
    assert any("GTX 770" in r and "10.2" in r for r in kepler.causes[0].reasons)
    assert "CUDA 10.2 is the last toolkit" in rank.cause_json(kepler.causes, 0)["fix"][0]
    # a newer GPU asked for sm_30 by an old nvcc: a second toolkit, as before
    assert top(explain_text(SM30, {"gpu": "NVIDIA GeForce GTX 1650"}))[0] == "multiple-toolkits"
    assert top(explain_text(SM30, {}))[0] == "multiple-toolkits"
    # an architecture the newest CUDA still builds for is never "dropped"
    spark = "ptxas fatal   : Value 'sm_121a' is not defined for option 'gpu-name'\n"
    assert top(explain_text(spark, {"gpu": "NVIDIA GB10"}))[0] == "toolchain-not-found"


def test_an_architecture_newer_than_the_stated_toolkit_names_the_toolkit_that_builds_it() -> None:
    refused = "nvcc fatal   : Unsupported gpu architecture 'compute_86'\n"
    old = explain_text(refused, {"system_cuda": "cuda 11.0"})
    first = rank.cause_json(old.causes, 0)["fix"][0]
    assert first.startswith("Install CUDA 11.1 or newer") and "up to 8.0" in first
    # a toolkit that builds compute_86 is not the problem: no such step
    new = explain_text(refused, {"system_cuda": "12.4"})
    assert not any("Install CUDA 11.1" in f for c in new.causes for f in c.fixes)
    assert not any("Install CUDA 11.1" in f for c in explain_text(refused, {}).causes for f in c.fixes)


def test_cudnn_mapping_error_on_a_gpu_newer_than_old_builds_reads_as_the_build_too_old() -> None:
    """mrnabati/CenterFusion#53: CUDNN_STATUS_MAPPING_ERROR on an RTX 3090 under a CUDA 10 build. An
    Ampere GPU (8.0+) gives the too-old-build reading weight; a Pascal GPU rules it out; no GPU, no change."""
    line = "RuntimeError: cuDNN error: CUDNN_STATUS_MAPPING_ERROR\n"
    assert top(explain_text(line))[0] == "library-bug"
    ampere = explain_text(line, {"gpu": "RTX 3090"})
    assert top(ampere)[0] == "arch-unsupported"
    assert any("8.0+ GPUs" in r for r in ampere.causes[0].reasons)
    pascal = explain_text(line, {"gpu": "GTX 1080"})
    assert "arch-unsupported" not in top(pascal)[:2]


def test_a_frameworks_verdict_that_its_build_cannot_use_the_gpu_is_the_root_over_a_library_load() -> None:
    """Whisper-GUI on an RTX 5080: a cuDNN 8 DLL of the old build is missing, and PyTorch says the build
    has no code for sm_120; a build for the GPU (which brings its own cuDNN) is the fix."""
    log = (
        "Could not locate cudnn_ops_infer64_8.dll. Please make sure it is in your library path!\n"
        "UserWarning:\n"
        "NVIDIA GeForce RTX 5080 with CUDA capability sm_120 is not compatible with the current PyTorch installation.\n"
    )
    exp = explain_text(log, {"gpu": "NVIDIA GeForce RTX 5080"})
    assert exp.root is not None and exp.root.sig.id == "arch-unsupported/torch-capability-not-compatible"
    assert top(exp)[0] == "arch-unsupported"
    alone = explain_text(log.splitlines()[0] + "\n")
    assert alone.root is not None and top(alone)[0] == "cudnn-mismatch"


def test_a_gpu_newer_than_every_cuda_the_facts_name_leads_an_ambiguous_library_failure() -> None:
    """DGCNN/PointConv threads: 'Blas xGEMMBatched launch failed' on an RTX 2080 (7.5) with CUDA 9.0 (which knows
    up to 7.x): CUDA 10 fixed it. With a CUDA that knows the GPU, the rule says nothing."""
    line = "IternalError:  Blas xGEMMBatched launch failed.\n"
    old = explain_text(line, {"gpu": "RTX 2080", "system_cuda": "9.0"})
    assert top(old)[0] == "arch-unsupported"
    assert any("newer than CUDA 9.0 knows" in r for r in old.causes[0].reasons)
    new = explain_text(line, {"gpu": "RTX 2080", "system_cuda": "10.0"})
    assert not any("newer than CUDA" in r for c in new.causes for r in c.reasons)
