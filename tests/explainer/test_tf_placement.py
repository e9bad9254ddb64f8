"""Round 43: TensorFlow's placer refusing an explicit device. Which half of the message follows
'because' decides the reading: an op with no GPU kernel pinned to the GPU, or a process that
registered no GPU at all. Lines are from the threads the signatures name."""

from __future__ import annotations

from tests.explainer.helpers import rooted, top

SPEC = "Could not satisfy explicit device specification '/device:GPU:0' because "


def test_an_op_without_a_gpu_kernel_pinned_to_the_gpu_is_placement() -> None:
    exp = rooted(
        SPEC + "no supported kernel for GPU devices is available", "device-mismatch/tf-op-without-gpu-kernel"
    )
    assert top(exp)[0] == "device-mismatch"
    assert "set_soft_device_placement(True)" in exp.causes[0].fixes[0]


def test_a_process_without_a_gpu_device_is_no_gpu_not_placement() -> None:
    line = (
        "InvalidArgumentError: Cannot assign a device to node 'x': "
        + SPEC
        + "no devices matching that specification are registered in this process; "
        "available devices: /job:localhost/replica:0/task:0/cpu:0"
    )
    exp = rooted(line, "no-gpu-visible/tf-no-gpu-device-registered")
    assert top(exp)[:2] == ["no-gpu-visible", "cpu-only-build"]
    assert "device-mismatch" not in top(exp)
