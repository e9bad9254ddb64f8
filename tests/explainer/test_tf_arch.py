"""Round 54: TensorFlow saying, in a warning or an info line, that its build has no kernels for this
GPU. Lines are from the threads the signatures name."""

from __future__ import annotations

from tests.explainer.helpers import explain_text, rooted, top

PTX_WARNING = (
    "W0000 00:00:1753232013.685876   24341 gpu_device.cc:2431] TensorFlow was not built with CUDA kernel "
    "binaries compatible with compute capability 12.0. CUDA kernels will be jit-compiled from PTX, which "
    "could take 30 minutes or longer."
)


def test_tensorflow_without_kernels_for_the_gpu_is_read_from_its_warning() -> None:
    """tensorflow/tensorflow#97387: an RTX 5080 (12.0) under a nightly without sm_120 kernels."""
    exp = rooted(PTX_WARNING + "\n\nCUDA_ERROR_INVALID_HANDLE\n", "arch-unsupported/tf-ptx-jit-for-this-gpu")
    assert top(exp)[0] == "arch-unsupported"
    assert "compute capability 12.0" in exp.causes[0].fixes[0]


def test_the_ptx_warning_gives_way_to_a_real_error_after_it() -> None:
    oom = (
        PTX_WARNING
        + "\ntensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor"
    )
    exp = explain_text(oom)
    assert exp.root is not None and exp.root.sig.id != "arch-unsupported/tf-ptx-jit-for-this-gpu"


def test_a_gpu_below_the_builds_minimum_is_named_with_both_capabilities() -> None:
    """tensorflow/tensorflow#25329: TF 1.13's binaries start at 6.0; a GTX 970 is 5.2."""
    line = (
        "I tensorflow/core/common_runtime/gpu/gpu_device.cc:1483] Ignoring visible gpu device (device: 0, "
        "name: GeForce GTX 970, pci bus id: 0000:01:00.0, compute capability: 5.2) with Cuda compute "
        "capability 5.2. The minimum required Cuda capability is 6.0."
    )
    exp = rooted(line, "arch-unsupported/tf-gpu-below-minimum-capability")
    assert top(exp)[0] == "arch-unsupported"
    assert (
        exp.causes[0]
        .fixes[0]
        .startswith("This TensorFlow build starts at compute capability 6.0 and the GPU is 5.2")
    )
