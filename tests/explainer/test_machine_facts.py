"""The same error read by what the facts say about the machine: WSL, the framework's build, a stated
CUDA_VISIBLE_DEVICES, the install path, the library an error came from."""

from __future__ import annotations

import pytest

from cudoctor.explainer import rank
from tests.explainer.helpers import explain_text, rooted, top

NUMBA_SYSINFO = """numba.cuda.cudadrv.driver.LinkerError: [999] Call to cuLinkAddData results in UNKNOWN_CUDA_ERROR
__CUDA Information__
CUDA Driver Version                           : 11.5
CUDA Runtime Version                          : 11.8
CUDA Minor Version Compatibility Needed       : True
CUDA Minor Version Compatibility In Use       : False
"""


def test_numba_linker_error_with_a_runtime_newer_than_the_driver() -> None:
    """numba/numba#7006: `numba -s` shows the runtime needs minor version compatibility; the warning
    line adds weight to the linker error's driver cause and is never the root."""
    exp = rooted(NUMBA_SYSINFO, "driver-too-old/numba-linker-unknown-error")
    assert top(exp)[0] == "driver-too-old"
    alone = explain_text(NUMBA_SYSINFO.splitlines()[0] + "\n")
    assert exp.causes[0].score > alone.causes[0].score
    assert top(explain_text("CUDA Minor Version Compatibility Needed       : False\n")) == []


WSL_LIBCUDA = "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file: No such file or directory\nAborted\n"


def test_libcuda_missing_on_wsl_points_at_the_wsl_loader_path() -> None:
    """nougat#105/#115: the Windows driver's libcuda sits in /usr/lib/wsl/lib. cuDNN's convolution library
    loads only after CUDA itself started through libcuda.so.1, so a driver is there wherever this line
    appears: its development name libcuda.so is what the loader cannot find, on WSL or not."""
    wsl = explain_text(WSL_LIBCUDA, {"os": "Ubuntu 22.04 on WSL2"})
    assert top(wsl)[0] == "env-path-misconfig"
    doc = rank.cause_json(wsl.causes, 0)
    assert doc["fix"][0].startswith("export LD_LIBRARY_PATH=/usr/lib/wsl/lib")
    native = explain_text(WSL_LIBCUDA, {"os": "Ubuntu 22.04"})
    assert top(native)[0] == "env-path-misconfig"
    assert any("sudo ln -s libcuda.so.1" in f for f in rank.cause_json(native.causes, 0)["fix"])
    assert top(explain_text(WSL_LIBCUDA, {}))[0] == "env-path-misconfig"


BRACKET_LOG = (
    "py executable:  C:\\X\\[Goods]\\CoL\\BallonsTranslator_dev_src_with_gitpython\\ballontrans_pylibs_win\\python.exe\n"
    "[INFO   ] module_manager:on_finish_setinpainter:909 - Inpainter set to lama_large_512px\n"
    "Could not locate cudnn_ops_infer64_8.dll. Please make sure it is in your library path!\n"
)  # dmMaze/BallonsTranslator#621: the DLL is in torch\lib, the install path has [Goods]


def test_a_bracketed_install_path_explains_a_cudnn_dll_that_is_there_but_not_found() -> None:
    exp = explain_text(BRACKET_LOG)
    assert exp.root is not None and exp.root.sig.id == "cudnn-mismatch/windows-cudnn-dll-not-located"
    env = next(c for c in exp.causes if c.id == "env-path-misconfig")
    assert exp.causes.index(env) <= 1
    assert env.fixes[0].startswith("Rename the folder C:\\X\\[Goods] (no [ ] in the name)")
    # Without the path in the log the DLL is simply missing: cuDNN first, the path second.
    alone = explain_text(BRACKET_LOG.splitlines()[-1] + "\n")
    assert top(alone)[:2] == ["cudnn-mismatch", "env-path-misconfig"]
    assert "Rename the folder" not in " ".join(alone.causes[1].fixes)


def test_a_context_line_alone_is_neither_root_nor_cause() -> None:
    """A bracketed path next to an unrelated error, or next to none, says nothing."""
    path = BRACKET_LOG.splitlines()[0] + "\n"
    assert not explain_text(path).causes and explain_text(path).root is None
    oom = explain_text(
        path + "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB\n"
    )
    assert top(oom) == ["gpu-oom"]


DESERIALIZE = (
    "RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. "
    "If you are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') "
    "to map your storages to the CPU.\n"
)


def test_a_cuda_checkpoint_on_a_machine_without_cuda_reads_the_build_from_the_facts() -> None:
    assert top(explain_text(DESERIALIZE)) == [
        "cpu-only-build",
        "no-gpu-visible",
    ]  # no facts: the usual reading
    cpu = explain_text(
        DESERIALIZE, {"framework_version": "torch 2.3.0+cpu", "gpu": "NVIDIA GeForce RTX 3090"}
    )
    assert top(cpu)[0] == "cpu-only-build" and cpu.causes[0].findings
    cuda = explain_text(DESERIALIZE, {"framework_version": "torch 2.3.0+cu121"})
    assert top(cuda)[0] == "no-gpu-visible"
    ruled_out = next(c for c in cuda.causes if c.id == "cpu-only-build")
    assert ruled_out.reasons == ["fact: PyTorch 2.3.0+cu121 (CUDA 12.1) is a CUDA build"]
    assert "map_location='cpu'" in rank.cause_json(cuda.causes, 0)["fix"][0]


HALF_ON_CPU = "RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'\n"


def test_half_precision_on_the_cpu_is_a_dtype_problem_unless_the_machine_has_a_gpu() -> None:
    alone = explain_text(HALF_ON_CPU)
    assert top(alone)[0] == "dtype-mismatch"
    assert "addmm_impl_cpu_ is a CPU kernel with no Half version" in alone.causes[0].fixes[0]
    # huatuo#43: a GPU machine whose torch ran fp16 on the CPU had a CPU-only torch
    with_gpu = explain_text(HALF_ON_CPU, {"gpu": "NVIDIA GeForce RTX 3070 Ti"})
    assert top(with_gpu)[:2] == ["cpu-only-build", "no-gpu-visible"]
    assert "+cpu" in with_gpu.causes[0].fixes[0]
    # Sparse4D#73: autocast's warning that CUDA is not available points at visibility too
    warned = explain_text(
        "UserWarning: User provided device_type of 'cuda', but CUDA is not available. Disabling\n"
        "RuntimeError: \"slow_conv2d_cpu\" not implemented for 'Half'\n"
    )
    assert top(warned)[0] == "no-gpu-visible"
    assert (
        explain_text(
            "UserWarning: User provided device_type of 'cuda', but CUDA is not available. Disabling\n"
        ).causes
        == []
    )


def test_a_stated_cuda_visible_devices_is_the_first_suspect_when_no_gpu_was_seen() -> None:
    log = (
        "UserWarning: User provided device_type of 'cuda', but CUDA is not available. Disabling\n"
        "RuntimeError: \"slow_conv2d_cpu\" not implemented for 'Half'\n"
    )
    # Sparse4D#73, stated in prose: the setting is the suspect while the GPU count is unknown
    before = explain_text(log, {"other": "local_test.sh runs train.py"})
    prose = explain_text(log, {"other": "local_test.sh exports CUDA_VISIBLE_DEVICES=3"})
    assert top(prose)[0] == top(before)[0] == "no-gpu-visible"
    gap = lambda exp: exp.causes[0].score - exp.causes[1].score  # noqa: E731
    assert gap(prose) == pytest.approx(gap(before) + 0.2)
    assert "CUDA_VISIBLE_DEVICES='3' was set" in prose.causes[0].reasons[0]
    assert any("nvidia-smi -L" in f for f in prose.causes[0].fixes)
    # with the GPUs known, the no-gpu-visible check decides: index 3 of one GPU is confirmed
    one_gpu = {"gpu": "RTX 3090", "framework_version": "torch 2.1.0+cu121"}
    confirmed = explain_text(log, {**one_gpu, "other": "CUDA_VISIBLE_DEVICES=3"})
    assert top(confirmed)[0] == "no-gpu-visible" and confirmed.causes[0].findings
    # ... and index 0 of one GPU is no suspect at all
    fine = explain_text(log, {**one_gpu, "other": "CUDA_VISIBLE_DEVICES=0"})
    assert not fine.causes[0].findings
    assert all("CUDA_VISIBLE_DEVICES" not in r for c in fine.causes for r in c.reasons)
    # no setting stated: no such reason
    silent = explain_text(log, {"other": "ran it with python test.py"})
    assert all("CUDA_VISIBLE_DEVICES" not in r for c in silent.causes for r in c.reasons)
    # an error that does not allow no-gpu-visible gains nothing from the setting
    shape = explain_text(
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (1x3 and 4x5)\n",
        {"other": "CUDA_VISIBLE_DEVICES=3"},
    )
    assert "no-gpu-visible" not in [c.id for c in shape.causes]


def test_a_status_from_inside_a_cuda_library_is_not_explained_by_missing_libraries() -> None:
    """TF 2.3 stated with 'CUDA 11.0' (tensorflow/tensorflow#47661): tf-cuda-mismatch says TF's CUDA 10.1
    libraries are missing, but cuSOLVER returned the status, so they were found; the defect stays first."""
    line = "InternalError: tensorflow/core/util/cuda_solvers.cc:648: cuSolverDN call failed with status =7 [Op:SelfAdjointEigV2]\n"
    facts = {"framework_version": "tensorflow 2.3.1", "system_cuda": "11.0", "gpu": "Tesla T4"}
    exp = explain_text(line, facts)
    assert top(exp)[0] == "library-bug"
    assert any(f.id == "tf-cuda-mismatch" for f in exp.findings)  # the fact is still reported
    missing = next(c for c in exp.causes if c.id == "cuda-libs-missing")
    assert any(r.startswith("not this error: the library it came from was loaded") for r in missing.reasons)
    # an error from loading keeps the same fact as its confirmation
    load = explain_text(
        "ImportError: libcudart.so.10.1: cannot open shared object file: No such file or directory\n", facts
    )
    assert top(load)[0] == "cuda-libs-missing"


def test_the_raw_cuda_out_of_memory_under_wsl_is_pinned_host_memory() -> None:
    """'CUDA error: out of memory' (not the caching allocator's 'Tried to allocate') under WSL2 is
    usually a failed pinned allocation (microsoft/WSL#8447): pin_memory=False, more WSL memory."""
    line = "RuntimeError: CUDA error: out of memory\n"
    wsl = explain_text(line, {"os": "Windows 11, WSL2"})
    assert top(wsl)[:2] == ["host-oom", "gpu-oom"]
    assert "pin_memory=False" in rank.cause_json(wsl.causes, 0)["fix"][0]
    assert top(explain_text(line, {"os": "Ubuntu 22.04"}))[0] == "gpu-oom"
    assert top(explain_text(line))[0] == "gpu-oom"  # no facts: the usual meaning
    allocator = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB\n"
    assert top(explain_text(allocator, {"os": "WSL2"}))[0] == "gpu-oom"
