"""NVIDIA's CUDA images by flavour (checks/images.py, knowledge/cuda_images.toml): a framework that loads its CUDA
libraries from the system finds only cudart in a -base image, and cuDNN only in a tag that names it."""

from __future__ import annotations

from tests.checks.helpers import outcome
from tests.conftest import finding_ids, run_check, stated


def test_tensorflow_in_a_base_image_lacks_the_libraries_and_cudnn() -> None:
    # StatCan/aaw-kubeflow-containers#122 (set 54): 'FROM nvidia/cuda:10.1-base-ubuntu18.04' under TensorFlow
    base = stated(
        {
            "container": "GPU dockerfile stack FROM nvidia/cuda:10.1-base-ubuntu18.04",
            "framework_version": "tensorflow",
        }
    )
    r = run_check("image-lacks-libraries", base)
    assert finding_ids(r) == ["image-lacks-libraries", "image-lacks-cudnn"]
    assert {f.cause for f in r.findings} == {"cuda-libs-missing", "cudnn-mismatch"}
    assert "cudnn-runtime" in r.findings[0].fix[0]
    runtime = stated(
        {"container": "nvidia/cuda:11.2.2-runtime-ubuntu20.04", "framework_version": "tensorflow 2.6.0"}
    )
    assert finding_ids(run_check("image-lacks-libraries", runtime)) == ["image-lacks-cudnn"]


def test_an_image_with_cudnn_or_a_framework_with_its_own_libraries_stays_silent() -> None:
    cudnn = stated(
        {
            "container": "nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04",
            "framework_version": "tensorflow 2.6.0",
        }
    )
    assert outcome("image-lacks-libraries", cudnn) == ("ok", [])
    older_tag = stated(
        {"container": "nvidia/cuda:10.1-cudnn7-devel-ubuntu18.04", "framework_version": "tensorflow 2.3"}
    )
    assert outcome("image-lacks-libraries", older_tag) == ("ok", [])
    torch = stated(
        {"container": "nvidia/cuda:12.1.0-base-ubuntu22.04", "framework_version": "torch 2.1.0+cu121"}
    )
    assert outcome("image-lacks-libraries", torch) == ("ok", [])  # torch's wheels bring their own libraries
    new_tf = stated(
        {"container": "nvidia/cuda:12.3.2-base-ubuntu22.04", "framework_version": "tensorflow 2.16.1"}
    )
    assert outcome("image-lacks-libraries", new_tf) == ("ok", [])  # tensorflow[and-cuda]'s wheels
    assert outcome("image-lacks-libraries", stated({"framework_version": "tensorflow 2.6.0"}))[0] == "unknown"
