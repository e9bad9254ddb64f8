"""Which framework and platform a step is for, read from the step; the planner drops or trims the rest."""

from __future__ import annotations

from cudoctor.fixes import planner, scope

OOM = "Reduce the batch size; PyTorch: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; JAX: XLA_PYTHON_CLIENT_PREALLOCATE=false"


def test_parts_labelled_for_other_frameworks_are_trimmed() -> None:
    assert scope.trim(OOM, "tensorflow") == "Reduce the batch size"
    assert scope.trim(OOM, "jax") == "Reduce the batch size; JAX: XLA_PYTHON_CLIENT_PREALLOCATE=false"
    assert scope.trim(OOM, None) == OOM  # framework unknown: every part stays
    assert scope.trim("PyTorch: pip install torch", "jax") is None


def test_a_step_naming_only_another_frameworks_setting_is_for_that_framework() -> None:
    numba = planner.Context(framework="numba")
    assert scope.for_other_framework("export XLA_FLAGS=--xla_gpu_cuda_data_dir=/usr/local/cuda", numba)
    assert scope.for_other_framework(
        "rebuild with TORCH_CUDA_ARCH_LIST=8.6", planner.Context(framework="jax")
    )
    assert not scope.for_other_framework(
        "rebuild with TORCH_CUDA_ARCH_LIST=8.6", planner.Context(framework="torch")
    )
    assert not scope.for_other_framework("export XLA_FLAGS=...", planner.Context())  # unknown framework
    # a step that names the failing framework too is for it as well
    cupy = planner.Context(framework="cupy")
    assert not scope.for_other_framework(
        "count them (torch.cuda.device_count()) and use cupy.cuda.Device(0)", cupy
    )
    # the root error names the setting: the step is about it, whichever framework was guessed
    flagged = planner.Context(framework="torch", root="Unknown flag in XLA_FLAGS: --xla_gpu_graph_level=0")
    assert not scope.for_other_framework("remove --xla_gpu_graph_level from XLA_FLAGS", flagged)


def test_linux_only_steps_are_dropped_on_native_windows() -> None:
    windows = planner.Context(platform="windows")
    assert scope.for_other_platform("sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm", windows)
    assert scope.for_other_platform("put its lib64 on LD_LIBRARY_PATH", windows)
    assert not scope.for_other_platform("In WSL2: sudo apt install cuda-toolkit", windows)
    assert not scope.for_other_platform("sudo rmmod nvidia_uvm", planner.Context(platform="linux"))
    assert not scope.for_other_platform("sudo rmmod nvidia_uvm", planner.Context())


def test_the_platform_and_other_libraries_are_read_from_the_log() -> None:
    assert (
        scope.platform_from_log(r'File "C:\Users\me\miniconda3\lib\site-packages\torch\cuda\__init__.py"')
        == "windows"
    )
    assert (
        scope.platform_from_log('File "/home/me/.local/lib/python3.10/site-packages/torch/cuda/__init__.py"')
        is None
    )
    assert (
        scope.framework_from_log("numba.cuda.cudadrv.driver.LinkerError: [222] Call to cuLinkAddData")
        == "numba"
    )
    assert scope.framework_from_log("pycuda._driver.LogicError: cuInit failed: unknown error") == "pycuda"
    assert scope.framework_from_log("RuntimeError: CUDA error: out of memory") is None


def test_dll_names_and_percent_path_mean_native_windows() -> None:
    assert (
        scope.platform_from_log("ImportError: Could not find 'cudart64_100.dll'. TensorFlow requires ...")
        == "windows"
    )
    assert (
        scope.platform_from_log("installed in a directory that is named in your %PATH% environment variable")
        == "windows"
    )
    assert scope.platform_from_log("OSError: libcudart.so.10.0: cannot open shared object file") is None
    assert scope.platform_from_log("loading mydll.dll from the plugin folder") is None
    # Windows' loader speaking: no step about LD_LIBRARY_PATH for it
    assert (
        scope.platform_from_log(
            "ImportError: DLL load failed while importing _C: The specified procedure could not be found."
        )
        == "windows"
    )
    assert (
        scope.platform_from_log("OSError: [WinError 126] The specified module could not be found.")
        == "windows"
    )


def test_a_list_of_one_entry_per_framework_keeps_the_failing_frameworks() -> None:
    step = "Or upgrade it (torch >= 2.3, tensorflow >= 2.18 for NumPy 2, or the module's latest release)"
    assert scope.trim(step, "torch") == "Or upgrade it (torch >= 2.3, or the module's latest release)"
    prose = "conda install x  (TensorFlow 1.14.0 was built with CUDA 10.0, cuDNN 7.4)"
    assert scope.trim(prose, "torch") == prose  # prose about one framework, not a list of them
    assert scope.trim(step, None) == step


def test_a_step_whose_subject_is_another_framework_is_not_for_this_one() -> None:
    """A TensorFlow signature's step ('TensorFlow could not load the CUDA runtime its build needs ...') showed
    under a jaxlib's 'cudaGetErrorString symbol not found' (a blind fix scenario of set 22)."""
    step = (
        "TensorFlow could not load the CUDA runtime its build needs (TF 2.0/2.1: cudart64_100.dll, CUDA 10.0)"
    )
    assert scope.for_other_framework(step, planner.Context(framework="jax"))
    assert not scope.for_other_framework(step, planner.Context(framework="tensorflow"))
    assert not scope.for_other_framework(step, planner.Context(framework=None))
    # a label is for it, whatever comes after: 'TensorFlow: ...' and 'PyTorch (Linux): ...' are handled as labels
    assert not scope.for_other_framework(
        "JAX: pip install -U 'jax[cuda12]'", planner.Context(framework="jax")
    )
