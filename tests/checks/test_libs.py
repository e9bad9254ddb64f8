"""Checks of the CUDA libraries a framework loads (checks/libs.py): missing libraries, libraries shadowed
by LD_LIBRARY_PATH or LD_PRELOAD, cuDNN and TensorFlow CUDA version mismatches."""

from __future__ import annotations

from cudoctor import fixes
from tests.checks.helpers import outcome, torch_cuda
from tests.conftest import finding_ids, run_check, stated


# ---------------------------------------------------------------- libraries
def test_cuda_libs_missing_and_cudnn_redirect() -> None:
    libs = {
        "libcublas.so.12": {"path": None, "via": "", "candidates": []},
        "libcudnn.so.9": {"path": None, "via": "", "candidates": []},
    }
    r = run_check("cuda-libs-missing", stated({}, framework__torch=torch_cuda(libs=libs)))
    assert sorted(finding_ids(r)) == ["lib-missing-cublas", "lib-missing-cudnn"]
    assert {f.cause for f in r.findings} == {"cuda-libs-missing", "cudnn-mismatch"}
    assert r.findings[0].fix[1] == (
        "Or bring all of PyTorch's CUDA libraries: pip install --force-reinstall 'torch==2.5.1+cu124'"
        " --index-url https://download.pytorch.org/whl/cu124  (torch's Linux wheels depend on the nvidia-* library wheels)"
    )
    assert (
        r.findings[0].fix[2]
        == "Or install the CUDA 12.x toolkit and put its lib64 directory on LD_LIBRARY_PATH"
    )
    assert r.findings[1].fix[0] == "pip install 'nvidia-cudnn-cu12==9.*'  (provides libcudnn.so.9)"
    lost8 = {"libcudnn.so.8": {"path": None, "via": "", "candidates": []}}
    cu11 = torch_cuda(version="2.0.1+cu118", cuda="11.8", libs=lost8)
    [cudnn8] = run_check("cuda-libs-missing", stated({}, framework__torch=cu11)).findings
    assert cudnn8.fix[0] == "pip install 'nvidia-cudnn-cu11==8.*'  (provides libcudnn.so.8)"
    lost7 = {"libcudnn.so.7": {"path": None, "via": "", "candidates": []}}
    cu10 = dict(cu11, version="1.8.1+cu102", cuda="10.2", libs=lost7)
    [cudnn7] = run_check("cuda-libs-missing", stated({}, framework__torch=cu10)).findings
    assert (
        cudnn7.fix[0].startswith("Install cuDNN 7 for CUDA 10.2") and len(cudnn7.fix) == 3
    )  # no wheel, no extra
    tf213 = {
        "version": "2.13.0",
        "build": "cuda",
        "cuda": "11.8",
        "missing_needed": [{"name": "libcudart.so.11.0"}],
    }
    [old_tf] = run_check("cuda-libs-missing", stated({}, framework__tensorflow=tf213)).findings
    assert not any("and-cuda" in step for step in old_tf.fix)  # TF 2.13 has no [and-cuda] extra
    tf215 = dict(tf213, version="2.15.0", cuda="12.2", missing_needed=[{"name": "libcublas.so.12"}])
    [new_tf] = run_check("cuda-libs-missing", stated({}, framework__tensorflow=tf215)).findings
    assert "pip install 'tensorflow[and-cuda]==2.15.0'" in new_tf.fix[1] and "torch" not in " ".join(
        new_tf.fix
    )
    assert outcome("cuda-libs-missing", stated({}, framework__torch=torch_cuda())) == ("ok", [])
    assert outcome("cuda-libs-missing", stated({}))[0] == "unknown"


def test_library_shadowed_by_ld_library_path() -> None:
    shadow = {
        "libnvJitLink.so.12": {
            "path": "/usr/local/cuda-12.1/lib64/libnvJitLink.so.12",
            "via": "LD_LIBRARY_PATH",
            "candidates": [
                ["/usr/local/cuda-12.1/lib64/libnvJitLink.so.12", "LD_LIBRARY_PATH"],
                ["/site/nvidia/nvjitlink/lib/libnvJitLink.so.12", "runpath"],
            ],
        }
    }
    r = run_check("library-shadowed", stated({}, framework__torch=torch_cuda(libs=shadow)))
    assert finding_ids(r) == ["shadowed-nvJitLink"] and "/usr/local/cuda-12.1/lib64" in r.findings[0].fix[0]
    assert outcome("library-shadowed", stated({}, framework__torch=torch_cuda())) == ("ok", [])
    assert outcome("library-shadowed", stated({}))[0] == "unknown"


def test_library_shadowed_by_ld_preload_says_to_drop_the_preload() -> None:
    preloaded = "/opt/old-cuda/lib64/libcublasLt.so.12"
    shadow = {
        "libcublasLt.so.12": {
            "path": preloaded,
            "via": "preloaded",
            "candidates": [
                [preloaded, "preloaded"],
                ["/site/nvidia/cublas/lib/libcublasLt.so.12", "runpath"],
            ],
        }
    }
    f = run_check("library-shadowed", stated({}, framework__torch=torch_cuda(libs=shadow))).findings[0]
    assert f"from {preloaded} (LD_PRELOAD)" in f.title
    assert f.fix[0].startswith(f"Remove {preloaded} from LD_PRELOAD")


def test_cudnn_version_mismatch() -> None:
    snap = stated(
        {"cudnn": "8.9.7", "framework_version": "torch 2.5.1+cu124"},
        framework__torch=torch_cuda(cudnn="9.1.0.70"),
    )
    assert outcome("cudnn-version-mismatch", snap)[1] == ["cudnn-version-mismatch"]
    ok = stated({"cudnn": "9.3.0"}, framework__torch=torch_cuda(cudnn="9.1.0.70"))
    assert outcome("cudnn-version-mismatch", ok) == ("ok", [])
    assert outcome("cudnn-version-mismatch", stated({}, framework__torch=torch_cuda()))[0] == "unknown"


def test_a_build_of_any_library_that_names_its_cudnn_is_held_to_it() -> None:
    # PaddlePaddle (no framework fact) states its build's cuDNN; the one loaded is older: check scenario
    # paddle-post101-cudnn74-vs-76 (PaddlePaddle/Paddle issue, cuDNN 7.4 under a 7.6 build)
    paddle = {"framework_version": "paddlepaddle-gpu 2.1.0.post101 (compiled with cuDNN 7.6)", "cudnn": "7.4"}
    [f] = run_check("cudnn-version-mismatch", stated(paddle)).findings
    assert f.cause == "cudnn-mismatch" and "compiled with cuDNN 7.6" in f.title and "7.4 (stated)" in f.title
    # the words may be in 'other', about a framework named only there (TensorFlow's own message, pasted)
    kaggle = {
        "other": "TensorFlow source was compiled with cuDNN 9.3.0",
        "cudnn": "9.0.0 (loaded at runtime)",
    }
    assert outcome("cudnn-version-mismatch", stated(kaggle))[1] == ["cudnn-version-mismatch"]
    # silent: the cuDNN found is the build's, or a newer minor of its major
    for have in ("7.6.5", "7.8"):
        assert outcome("cudnn-version-mismatch", stated({**paddle, "cudnn": have})) == ("ok", [])
    # missing facts: no cuDNN stated, nothing to compare
    assert (
        outcome("cudnn-version-mismatch", stated({"framework_version": paddle["framework_version"]}))[0]
        == "unknown"
    )


def test_a_tensorflow_nightly_is_not_held_to_its_releases_cudnn() -> None:
    """tf-nightly 2.5.0.dev20201108 ran with cuDNN 8.0.4 (tensorflow/tensorflow#44750, a working setup;
    2.5.0 shipped with cuDNN 8.1): a blind check scenario of set 23 drew a false alarm."""
    nightly = stated({"framework_version": "tf-nightly 2.5.0.dev20201108", "cudnn": "8.0.4.30"})
    assert outcome("cudnn-version-mismatch", nightly)[1] == []
    release = stated({"framework_version": "tensorflow 2.5.0", "cudnn": "8.0.4.30"})
    assert outcome("cudnn-version-mismatch", release)[1] == ["cudnn-version-mismatch"]


def test_tf_cuda_mismatch() -> None:
    snap = stated({"framework_version": "tensorflow-gpu 1.13.1", "system_cuda": "10.1"})
    r = run_check("tf-cuda-mismatch", snap)
    assert finding_ids(r) == ["tf-cuda-mismatch"] and "10.0" in r.findings[0].title
    assert outcome(
        "tf-cuda-mismatch", stated({"framework_version": "tensorflow-gpu 1.13.1", "system_cuda": "10.0"})
    ) == ("ok", [])
    assert outcome("tf-cuda-mismatch", stated({"framework_version": "tensorflow-gpu 1.13.1"}))[0] == "unknown"
    # tensorflow/tensorflow#68710: the official GPU image carries CUDA 12.3 whatever the host (WSL) has
    image = {"framework_version": "tensorflow/tensorflow:latest-gpu-jupyter (2.16.1-gpu-jupyter)"}
    assert outcome("tf-cuda-mismatch", stated({**image, "system_cuda": "release 10.1, V10.1.243"})) == (
        "ok",
        [],
    )
    host_cudnn = stated({**image, "cudnn": "7.6"})
    assert outcome("cudnn-version-mismatch", host_cudnn) == ("ok", [])
    assert finding_ids(
        run_check(
            "cudnn-version-mismatch", stated({"framework_version": "tensorflow 2.16.1", "cudnn": "7.6"})
        )
    ) == ["cudnn-version-mismatch"]


def test_a_tensorflow_1x_of_unnamed_package_beside_a_cuda_of_another_minor() -> None:
    # 'TF1.6' names neither tensorflow (CPU) nor tensorflow-gpu; a CUDA 9.1 installed for it cannot give
    # the GPU build its libcublas.so.9.0
    r = run_check("tf-cuda-mismatch", stated({"framework_version": "TF1.6", "system_cuda": "9.1.85"}))
    assert finding_ids(r) == ["tf-cuda-mismatch"] and "GPU build" in r.findings[0].title
    assert r.findings[0].confidence == "likely"
    assert outcome("tf-cuda-mismatch", stated({"framework_version": "TF1.6", "system_cuda": "9.0"})) == (
        "ok",
        [],
    )
    assert outcome("tf-cuda-mismatch", stated({"framework_version": "tensorflow 2.15"}))[0] == "unknown"


def test_a_cudnn_no_wheel_holds_is_named_from_nvidias_archive() -> None:
    snap = stated({"framework_version": "tensorflow-gpu 1.14.0", "cudnn": "7.1"})
    fix = [s for f in run_check("cudnn-version-mismatch", snap).findings for s in f.fix]
    assert any("cuDNN 7.4 for CUDA 10 from NVIDIA's cuDNN archive" in s for s in fix), fix
    assert not any("nvidia-cudnn-cu10" in s for s in fix)


def test_a_per_minor_jaxlib_links_the_cudnn_major_of_its_cuda() -> None:
    """jax-ml/jax#7867: jaxlib 0.1.70+cuda101 beside only cuDNN 8.0.5 found no GPU; CUDA 10 jaxlib wheels
    link cuDNN 7 (shared/compat/jax.toml)."""
    facts = {"framework_version": "jaxlib==0.1.70+cuda101", "system_cuda": "10.1"}
    fired = run_check("cudnn-version-mismatch", stated({**facts, "cudnn": "cudnn v8.0.5 for CUDA 10.1"}))
    assert [f.cause for f in fired.findings] == ["cudnn-mismatch"] and "cuDNN 7" in fired.findings[0].title
    assert not run_check("cudnn-version-mismatch", stated({**facts, "cudnn": "7.6.5"})).findings
    assert not run_check(
        "cudnn-version-mismatch", stated(facts)
    ).findings  # no cuDNN stated: nothing to compare


def test_a_tensorflow_1x_of_unnamed_package_beside_a_cudnn_is_compared_as_its_gpu_build() -> None:
    """tensorflow/tensor2tensor: 'tensorflow 1.3.0' (the GPU package was tensorflow-gpu) beside only cuDNN 5.1.10;
    TF 1.3's GPU build was tested with cuDNN 6."""
    fired = run_check(
        "cudnn-version-mismatch",
        stated({"framework_version": "tensorflow 1.3.0", "cudnn": "libcudnn.so.5.1.10 only"}),
    )
    assert [f.confidence for f in fired.findings] == ["likely"] and "tensorflow-gpu" in fired.findings[
        0
    ].title
    (planned,) = fixes.checked(
        stated({"framework_version": "tensorflow 1.3.0", "cudnn": "5.1.10"}), only=["cudnn-version-mismatch"]
    )
    steps = planned.findings[0].fix  # as check prints them: planned against the facts
    assert "CUDA 8" in steps[0] and not any("cu12" in s for s in steps)
    assert not run_check(
        "cudnn-version-mismatch", stated({"framework_version": "tensorflow 1.3.0", "cudnn": "6.0.21"})
    ).findings
    cpu = stated({"framework_version": "tensorflow-cpu 1.3.0", "cudnn": "5.1.10"})
    assert not run_check("cudnn-version-mismatch", cpu).findings  # a named CPU package needs no cuDNN


def test_a_cudnn_stated_by_its_major_alone_is_compared_by_its_major() -> None:
    """tensorflow/tensorflow#35195: TF 2.0.0 (tested with cuDNN 7.4) beside 'cuDNN 7': nothing says it is older."""
    facts = {"framework_version": "TensorFlow version: 2.0.0", "system_cuda": "CUDA 10.0"}
    assert not run_check("cudnn-version-mismatch", stated({**facts, "cudnn": "cuDNN 7"})).findings
    assert run_check("cudnn-version-mismatch", stated({**facts, "cudnn": "cuDNN 6"})).findings
