"""Ranking rules that read facts and the log's own words beside the signatures: the list filled from
what was learned where the message does not name its cause, a failure told without the word error,
WSL's libcuda, NCCL in a container, and the framework a vendored path names."""

from __future__ import annotations

import io

from cudoctor.explainer import command, evidence, learned, rank, scan
from cudoctor.explainer.command import explain_stated
from tests.conftest import explained, stated
from tests.explainer.helpers import explain_text


def _ids(log: str, facts: dict[str, str] | None = None) -> list[str]:
    return [c["id"] for c in explain_stated(log + "\n", facts or {})["causes"]]


def test_a_line_no_signature_knows_gets_three_guesses_and_a_named_cause_is_not_padded() -> None:
    unknown = _ids("FooError: the frobnicator could not allocate a kernel workspace on the device")
    assert len(unknown) == 3
    named = explain_stated("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB\n", {})
    assert named["causes"][0]["id"] == "gpu-oom"
    possible = [c for c in named["causes"] if any("possible:" in r for r in c.get("evidence", []))]
    assert not possible  # a message that names its cause keeps its own list


def test_candidates_come_from_the_evidence_and_stay_below_the_ranked_causes() -> None:
    model = learned.train([(["a", "b"], "gpu-oom"), (["a", "c"], "host-oom"), (["c", "d"], "library-bug")])
    ev = evidence.Evidence(distribution=learned.distribution(model, ["a", "c"]))
    got = evidence.candidates(ev, {"gpu-oom"}, 2, {"gpu-oom", "host-oom", "library-bug"})
    assert [c.id for c in got] == ["host-oom", "library-bug"][: len(got)] and "gpu-oom" not in [
        c.id for c in got
    ]
    assert evidence.candidates(ev, set(), 0, {"host-oom"}) == []
    assert evidence.candidates(evidence.Evidence(), set(), 3, {"host-oom"}) == []


def test_failures_told_in_other_words_look_like_errors() -> None:
    for line in (
        "OpenBLAS Warining : The number of CPU/Cores(512) is beyond the limit(256). Terminated.",
        "installation problem: No such file or directory: '/usr/local/cuda/bin/nvcc'",
        "CUDA_ERROR_NO_BINARY_FOR_GPU",
        "CUBLAS_STATUS_SUCCESS(0 vs 13)",
        "Fused conv implementation does not support grouped convolutions for now",
        "the command `nvidia-smi` didn't work in docker",
        "torch.cuda.is_available() = False",
        "Cuda not compiled",  # a CPU-only build, in a script's own words
        "NVIDIA RTX5080 on ubuntu 24.04 is using 580 driver which is not compatible with cudatoolkit=11.8.0",
        # a GPU tool falling back to the CPU in its own words (held-out rounds 116 and 118)
        "2024-11-23 15:24:20.441 - INFO - separator - No hardware acceleration could be configured, running in CPU mode",
        'msg="CPU does not have AVX or AVX2, disabling GPU support."',
        ">> Using device_type cpu",
        "CUDA_PATH is set but CUDA wasn't able to be loaded. Please install the correct version of CUDA and cuDNN",
    ):
        assert rank.looks_like_error(line), line
    for line in (
        "Aborted training at epoch 3: loss is NaN, restoring the last checkpoint",
        "CUBLAS_STATUS_SUCCESS",
        "Epoch 3/10 - loss 0.25",
    ):
        assert not rank.looks_like_error(line), line


def test_a_cudnn_8_sublibrary_that_fails_to_load_on_wsl_is_the_loader_path() -> None:
    line = "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file"
    on_wsl = explain_stated(line + "\n", {"os": "Ubuntu 22.04 on WSL2"})["causes"]
    assert on_wsl[0]["id"] == "env-path-misconfig" and "/usr/lib/wsl/lib" in on_wsl[0]["fix"][0]
    assert (
        _ids("Could not load library libcudnn_cnn_infer.so.8", {"os": "Ubuntu 22.04"})[0] == "cudnn-mismatch"
    )


def test_cuinit_finding_no_device_on_wsl_is_a_linux_libcuda_in_the_way() -> None:
    """numba / cuML and Genesis under WSL2 (blind round 105): cuInit said CUDA_ERROR_NO_DEVICE, and a Linux
    driver's libcuda installed inside WSL was loaded instead of the Windows driver's in /usr/lib/wsl/lib."""
    line = "numba.cuda.cudadrv.error.CudaSupportError: Error at driver init: Call to cuInit results in CUDA_ERROR_NO_DEVICE (100)"
    on_wsl = explain_stated(line + "\n", {"os": "Windows WSL2"})["causes"]
    assert on_wsl[0]["id"] == "multiple-toolkits" and "/usr/lib/wsl/lib" in on_wsl[0]["fix"][0]
    assert _ids(line, {"os": "Ubuntu 22.04"})[0] == "no-gpu-visible"
    assert _ids(line, {})[0] == "no-gpu-visible"


def test_nccl_system_error_in_a_container_names_dev_shm() -> None:
    log = "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:825, unhandled system error, NCCL version 2.7.8"
    boxed = explain_stated(log + "\n", {"container": "docker"})["causes"]
    assert boxed[0]["id"] == "multi-gpu-comm" and "--ipc=host" in boxed[0]["fix"][0]
    assert "shm-exhausted" in [c["id"] for c in boxed[:3]]
    bare = explain_stated(log + "\n", {})["causes"]
    assert bare[0]["id"] == "multi-gpu-comm" and not any("--ipc=host" in s for s in bare[0]["fix"])


def test_jaxlibs_vendored_xla_paths_say_jax() -> None:
    log = (
        "E external/org_tensorflow/tensorflow/stream_executor/cuda/cuda_driver.cc:682] failed to get PTX kernel\n"
        "W external/org_tensorflow/tensorflow/stream_executor/gpu/asm_compiler.cc:191] ptxas does not support CC 8.6\n"
    )
    result = scan.scan(io.BytesIO(log.encode()))
    assert command.guess_framework(result) == "jax"
    tf = scan.scan(
        io.BytesIO(b"W tensorflow/stream_executor/gpu/asm_compiler.cc:191] Couldn't invoke ptxas\n")
    )
    assert command.guess_framework(tf) == "tensorflow"


def test_pytorchs_own_libraries_say_torch() -> None:
    """openmm/openmm-ml#67: only libtorch_cuda.so names the framework; its CPU-build step is PyTorch's alone."""
    line = b"ImportError: libtorch_cuda.so: cannot open shared object file: No such file or directory\n"
    assert command.guess_framework(scan.scan(io.BytesIO(line))) == "torch"
    first = explain_stated(line.decode(), {})["causes"][0]
    assert first["id"] == "cpu-only-build"
    assert not any("tensorflow" in s or "jax" in s for s in first["fix"])
    libgomp = b"OSError: libgomp.so.1: cannot open shared object file: No such file or directory\n"
    assert command.guess_framework(scan.scan(io.BytesIO(libgomp))) is None


NO_KERNEL = "CUDA error: no kernel image is available for execution on the device\n"


def test_torchs_own_error_advice_and_applications_built_on_torch_say_torch() -> None:
    """FramePack#267 (torch's TORCH_USE_CUDA_DSA advice under the error) and ComfyUI#7380 (only the
    application named): an RTX 50 GPU then gets PyTorch's cu128/cu130 wheels."""
    advice = scan.scan(
        io.BytesIO(
            (NO_KERNEL + "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n").encode()
        )
    )
    assert command.guess_framework(advice) == "torch"
    wording = scan.scan(io.BytesIO(b"RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED\n"))
    assert (
        command.guess_framework(wording) == "torch"
    )  # AT_CUDNN_CHECK's wording: a bare '1.4.0' stated is torch's
    bare = scan.scan(io.BytesIO(NO_KERNEL.encode()))
    assert command.guess_framework(bare) is None
    assert command.guess_framework(bare, {"other": "ComfyUI"}) == "torch"
    fix = explain_stated(NO_KERNEL, {"gpu": "GPU RTX 5070", "other": "ComfyUI"})["causes"][0]["fix"]
    assert any("whl/cu128" in s or "whl/cu130" in s for s in fix[:2])
    # another CUDA library named beside an application stays that library's
    whisper = scan.scan(io.BytesIO(b"ctranslate2 RuntimeError: CUDA failed with error out of memory\n"))
    assert command.guess_framework(whisper, {"other": "faster-whisper in ComfyUI"}) != "torch"


def test_an_insufficient_driver_in_a_container_with_no_driver_stated_suspects_the_gpus_were_not_passed() -> (
    None
):
    """TabbyML/tabby under udocker on Kaggle, panda_autograsp under singularity without --nv: the driver the
    container reports as insufficient was never mounted into it."""
    line = "CUDA error 35 at ggml-cuda.cu:478: CUDA driver version is insufficient for CUDA runtime version\n"
    inside = explain_text(line, {"container": "tabbyml/tabby image run with udocker --allow-root"})
    suspect = next(c for c in inside.causes if c.id == "no-gpu-visible")
    assert any("no driver is stated" in r for r in suspect.reasons)
    assert any(
        "udocker setup --nvidia" in f for f in suspect.fixes
    )  # the runtime's own start (container_gpus.toml)
    assert not any("--gpus all" in f for f in suspect.fixes)
    sing = explain_text(line, {"container": "singularity run image.sif"})
    assert any("singularity exec --nv" in f for c in sing.causes for f in c.fixes)
    # the same container with its driver stated: the driver's age is what the facts can judge
    stated_driver = explain_text(line, {"container": "docker", "driver": "470.57"})
    assert not any("no driver is stated" in r for c in stated_driver.causes for r in c.reasons)
    assert not any("no driver is stated" in r for c in explain_text(line, {}).causes for r in c.reasons)


def test_what_was_learned_does_not_bring_back_a_cpu_build_the_facts_rule_out() -> None:
    """A symptom line alone ('False' from torch.cuda.is_available()): the learned model says CPU build, the
    facts say torch 1.3.0 (CUDA 10.1) on driver 410.48, which is too old for it (pytorch/pytorch#28321)."""
    out = explain_stated(
        ">>> import torch\n>>> torch.cuda.is_available()\nFalse\n",
        {
            "framework_version": "torch 1.3.0 (pip -f https://download.pytorch.org/whl/torch_stable.html)",
            "driver": "410.48",
        },
    )
    ids = [c["id"] for c in out["causes"]]
    assert ids[0] == "driver-too-old" and ids.index("cpu-only-build") > 0


def test_a_status_whose_row_needs_a_gpu_reads_the_facts_gpu() -> None:
    """CUBLAS_STATUS_NOT_SUPPORTED: cuBLAS's half-precision GEMMs need compute capability 5.3 (status_codes.toml
    min_cc; ollama/ollama#1874's cuBLAS error 15 on 5.2 cards)."""
    line = "cuBLAS error 15 at ggml-cuda.cu:7956: the requested functionality is not supported\n"
    old = explained(line, stated({"compute_capability": "5.2"}))
    assert old.causes[0].id == "arch-unsupported"
    assert any("5.3 or newer" in r for r in old.causes[0].reasons)
    new = explained(line, stated({"compute_capability": "8.6"}))
    assert new.causes[0].id != "arch-unsupported"
    unknown = explained(line, stated({}))
    assert not any("5.3" in r for c in unknown.causes for r in c.reasons)


def test_a_cpu_build_in_the_facts_comes_before_the_no_gpu_it_causes() -> None:
    """ogkalu2/comic-translate#17: ultralytics' 'Invalid CUDA device=0 requested' under torch-2.1.0+cpu; what was
    learned says no-gpu-visible (a Radeon card in a thread of the same wording), the facts say the CPU build."""
    log = (
        "An Error occurred: Invalid CUDA 'device=0' requested. Use 'device=cpu' or pass valid CUDA device(s) if "
        "available, i.e. 'device=0' or 'device=0,1,2,3' for Multi-GPU.\ntorch.cuda.is_available(): False\n"
    )
    cpu = explain_stated(log, {"gpu": "3060ti", "framework_version": "torch-2.1.0+cpu"})["causes"]
    assert cpu[0]["id"] == "cpu-only-build"
    assert any("a CPU-only build sees no GPU" in e for e in cpu[0]["evidence"])
    cuda = explain_stated(log, {"gpu": "3060ti", "framework_version": "torch 2.1.0+cu121"})["causes"]
    assert cuda and cuda[0]["id"] != "cpu-only-build"
