"""What a stated framework build says about itself: the cuDNN it was compiled with (dotted or as cuDNN's
integer), a CPU build said in the framework's own words, versions in parentheses as remarks."""

from __future__ import annotations

import pytest

from cudoctor.facts import stated_builds
from cudoctor.facts.stated import cudnn_versions, from_stated, toolkit_facts


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("tensorflow (compiled with cuDNN 8.1.0)", "8.1.0"),
        ("jax (JAX was built against cuDNN version 8904)", "8.9.4"),
        ("tensorflow-gpu 1.x (compiled with 5110, compatibility version 5100)", "5.1.10"),
        ("source was compiled with: 8.6.0", None),  # no cuDNN word and dotted: could be anything
        ("jaxlib built against CUDA 12.2 (12020)", None),  # a CUDA, not a cuDNN
        ("paddlepaddle-gpu 2.2.1 (compiled with CUDNN 8.2)", "8.2"),
    ],
)
def test_the_cudnn_a_build_names(text: str, want: str | None) -> None:
    assert stated_builds.cudnn_built_with(text) == want


def test_the_cudnn_any_build_says_it_was_compiled_with() -> None:
    """Whatever the build (no framework fact need hold it), its words are kept beside the version."""
    said = stated_builds.cudnn_built_said(
        "paddle on Windows; paddlepaddle-gpu 2.1.0.post101 (compiled with cuDNN 7.6)"
    )
    assert said == ("7.6", "paddlepaddle-gpu 2.1.0.post101 (compiled with cuDNN 7.6)")
    assert stated_builds.cudnn_built_said("TensorFlow source was compiled with 7102") == (
        "7.1.2",
        "TensorFlow source was compiled with 7102",
    )
    assert stated_builds.cudnn_built_said("jaxlib built against CUDA 12.2 (12020)") is None
    facts = from_stated({"framework_version": "paddlepaddle-gpu (compiled with CUDNN 8.4)", "cudnn": "8.3"})
    assert facts.value("build.cudnn_said") == {
        "cudnn": "8.4",
        "said": "paddlepaddle-gpu (compiled with CUDNN 8.4)",
    }
    # a framework fact that holds the same cuDNN already says it: no second fact
    tf = from_stated({"framework_version": "tensorflow (compiled with cuDNN 8.1.0)", "cudnn": "8.0"})
    assert tf.value("framework.tensorflow")["cudnn"] == "8.1.0" and tf.value("build.cudnn_said") is None


def test_a_build_that_names_its_cudnn_is_a_cuda_build() -> None:
    _, info = stated_builds.framework_info("tensorflow (compiled with cuDNN 8.1.0)", "", None) or ("", {})
    assert info["build"] == "cuda" and info["cudnn"] == "8.1.0"
    _, plain = stated_builds.framework_info("tensorflow", "", None) or ("", {})
    assert plain["build"] == "unknown"


@pytest.mark.parametrize(
    ("facts", "framework"),
    [
        ({"framework_version": "torch (AssertionError: Torch not compiled with CUDA enabled)"}, "torch"),
        (
            {
                "framework_version": "torch==2.3.1",
                "other": "AssertionError: Torch not compiled with CUDA enabled",
            },
            "torch",
        ),
        (
            {
                "framework_version": "jax 0.4.30",
                "other": "a CUDA-enabled jaxlib is not installed. Falling back to cpu.",
            },
            "jax",
        ),
        ({"framework_version": "jax / jaxlib (no CUDA plugin)"}, "jax"),
    ],
)
def test_a_cpu_build_said_in_the_frameworks_words(facts: dict[str, str], framework: str) -> None:
    assert from_stated(facts).value(f"framework.{framework}")["build"] == "cpu"


def test_a_cuda_build_stays_one() -> None:
    snap = from_stated(
        {"framework_version": "torch 2.1.0+cu121", "other": "torch.cuda.is_available() is True"}
    )
    assert snap.value("framework.torch")["build"] == "cuda"


def test_versions_in_parentheses_are_remarks() -> None:
    assert cudnn_versions("8.0.4 (after 'I have already upgrade the cudnn to 8.1.0')") == ["8.0.4"]
    assert cudnn_versions("5005 (compatibility version 5000)") == ["5.0.5"]
    assert cudnn_versions("(8.9.2)") == ["8.9.2"]  # nothing outside: what is inside counts
    assert cudnn_versions("cudnn8") == ["8"]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("cudnn-11.2-windows-x64-v8.1.1.33", ["8.1.1.33"]),  # NVIDIA's archive: CUDA 11.2, cuDNN 8.1.1.33
        ("cudnn-windows-x86_64-8.9.2.26_cuda12-archive", ["8.9.2.26"]),
        ("cudnn.h: CUDNN_MAJOR 8, CUDNN_MINOR 6, CUDNN_PATCHLEVEL 0", ["8.6.0"]),
        ("cuDNN 8.9.2", ["8.9.2"]),
    ],
)
def test_a_cudnn_archive_or_header_names_the_cudnn_not_its_cuda(text: str, want: list[str]) -> None:
    assert cudnn_versions(text) == want
    toolkits = toolkit_facts("12.5 (V12.5.82)")[0].value
    assert [t["version"] for t in toolkits] == ["12.5"]
    assert [t["version"] for t in toolkit_facts("10.2 and 11.6")[0].value] == ["10.2", "11.6"]


def test_framework_names_run_into_their_version() -> None:
    info = from_stated({"framework_version": "torch1.7.1", "framework_cuda": "cuda10.2"}).value(
        "framework.torch"
    )
    assert (info["version"], info["cuda"], info["build"]) == ("1.7.1", "10.2", "cuda")


def test_a_cuda11_jaxlib_tag_names_its_cuda_floor() -> None:
    """jaxlib +cuda11.cudnn82 wheels need CUDA 11.4, +cuda11.cudnn805 ones 11.1 (the extras' names)."""
    cudnn82 = from_stated({"framework_version": "jaxlib 0.1.74+cuda11.cudnn82"}).value("framework.jax")
    cudnn805 = from_stated({"framework_version": "jaxlib 0.1.74+cuda11.cudnn805"}).value("framework.jax")
    assert cudnn82["cuda"] == "11.4" and cudnn805["cuda"] == "11.1"


@pytest.mark.parametrize(
    ("facts", "wanted"),
    [
        ({"framework_version": "torch 2.1.0+cpu", "other": "GPU: cuda"}, True),
        ({"framework_version": "torch 2.1.0+cpu", "system_cuda": "12.3"}, True),
        ({"framework_version": "torch 2.1.0+cpu", "python": "3.10"}, False),
        # a GPU CI image (rapidsai/clx#319, blind set 63) and a conda GPU build string
        ({"framework_version": "pytorch-1.7.1 |cpu_py37hf1c21f6_1", "container": "gpuci/rapidsai"}, True),
        (
            {
                "framework_version": "pytorch-1.7.1 |cpu_py37hf1c21f6_1",
                "other": "tensorflow gpu_py38h8a7d6ce_0",
            },
            True,
        ),
        (
            {"framework_version": "pytorch-1.7.1 |cpu_py37hf1c21f6_1", "other": "gpustat-free container"},
            False,
        ),
        ({}, False),
    ],
)
def test_when_the_facts_say_the_gpu_is_wanted(facts: dict[str, str], wanted: bool) -> None:
    assert bool(from_stated(facts).value("stated.gpu_wanted")) is wanted


def test_packages_named_with_a_version_keep_it() -> None:
    snap = from_stated(
        {
            "framework_version": "faster-whisper 0.10.0 (via whisperX)",
            "other": "faster-whisper < 1.0 uses CTranslate2 3.x",
        }
    )
    assert snap.value("python.packages")["faster-whisper"] == "0.10.0"
    assert "onnxruntime" not in (
        from_stated({"other": "optimum.onnxruntime inference"}).value("python.packages") or {}
    )


def test_a_conda_cuda_pin_is_the_builds_cuda_and_the_frameworks_own_version_wins() -> None:
    name, info = stated_builds.framework_info("pytorch (conda, cudatoolkit=10.2)", "", None) or ("", {})
    assert (name, info["version"], info["cuda"], info["build"]) == ("torch", None, "10.2", "cuda")
    _, info = stated_builds.framework_info("pytorch 1.13 pytorch-cuda=11.7", "", None) or ("", {})
    assert (info["version"], info["cuda"]) == ("1.13", "11.7")
    _, info = stated_builds.framework_info("vllm 0.9.1 (pip) with torch 2.7.0", "", None) or ("", {})
    assert info["version"] == "2.7.0"
    _, info = stated_builds.framework_info("Python 3.10, torch==1.13.1", "", None) or ("", {})
    assert info["version"] == "1.13.1"
    _, info = stated_builds.framework_info("torch 2.1.0 (vllm 0.2.0)", "", None) or ("", {})
    assert info["version"] == "2.1.0"
    _, info = stated_builds.framework_info(
        "pytorch 1.0.0 py3.7_cuda90_cudnn7_1; asked for cudatoolkit=10.1", "", None
    ) or ("", {})
    assert (info["cuda"], info["cudnn"]) == (
        "9.0",
        "7",
    )  # the installed build's string wins over what was asked for


def test_a_cuda_written_next_to_cudnn_is_a_cuda_and_cuda_version_n_is_a_major() -> None:
    facts = {
        f.key: f.value for f in toolkit_facts("latest CUDA/cuDNN 10.1 (DLL files titled cudart64_101.dll)")
    }
    assert "cudnn.versions" not in facts  # no cuDNN has major 10
    assert [t["version"] for t in facts["cuda.toolkits"]] == ["10.1"]
    facts = {f.key: f.value for f in toolkit_facts("CUDA 11.8 / cuDNN 8.9.2")}
    assert facts["cudnn.versions"] == ["8.9.2"] and facts["cuda.toolkits"][0]["version"] == "11.8"
    assert [
        t["version"]
        for t in dict((f.key, f.value) for f in toolkit_facts("cuda version 11"))["cuda.toolkits"]
    ] == ["11"]


def test_one_toolkit_written_twice_is_one_toolkit() -> None:
    """nvcc's 'release 10.1, V10.1.243' and '11.2 installed at .../CUDA/v11.2' name one toolkit each."""
    versions_of = lambda text: [t["version"] for t in toolkit_facts(text)[-1].value]  # noqa: E731
    assert versions_of("release 10.1, V10.1.243 (in WSL)") == ["10.1.243"]
    assert versions_of("11.2 installed at C:/Program Files/NVIDIA GPU Computing Toolkit/CUDA/v11.2") == [
        "11.2"
    ]
    assert versions_of("10.2 and 11.6") == ["10.2", "11.6"]  # two toolkits stay two


@pytest.mark.parametrize(
    ("text", "build", "libs"),
    [
        (
            "tensorflow/tensorflow:latest-gpu-jupyter (2.16.1-gpu-jupyter)",
            "cuda",
            "tensorflow/tensorflow:latest-gpu-jupyter",
        ),
        (
            "pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime",
            "cuda",
            "pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime",
        ),
        ("nvcr.io/nvidia/pytorch:24.01-py3", "cuda", "nvcr.io/nvidia/pytorch:24.01-py3"),
        ("tensorflow/tensorflow:2.15.0-jupyter", "cpu", None),  # the tags without -gpu are CPU-only
        ("tensorflow 2.15.0 (pip) in a docker container", "cuda", None),  # no official image named
    ],
)
def test_an_official_framework_image_brings_its_own_cuda(text: str, build: str, libs: str | None) -> None:
    _, info = stated_builds.framework_info(text, "", None) or ("", {})
    assert info["build"] == build
    assert (libs in info.get("cuda_libs", "")) if libs else "cuda_libs" not in info


def test_a_jax_extra_that_names_its_cudnn_floor() -> None:
    """'jax[cuda11_cudnn82]' asks for cuDNN 8.2 or newer (the Kaggle image held 8.0.5); the 11.4 after it is CUDA's."""
    info = from_stated(
        {"framework_version": "jax[cuda11_cudnn82] (wheel for CUDA >= 11.4 and cuDNN >= 8.2)"}
    ).value("framework.jax")
    assert (info["cudnn"], info["build"], info["version"]) == ("8.2", "cuda", None)
    assert from_stated({"framework_version": "0.4.12"}, "jax").value("framework.jax")["version"] == "0.4.12"


def test_a_torch_of_unstated_build_on_a_jetson_is_the_cpu_wheel_unless_it_is_nvidias() -> None:
    """NVIDIA-ISAAC-ROS/isaac_ros_common#29: torch 1.12.0 from PyPI on an AGX Orin, cuda.is_available() False.
    PyPI's aarch64 wheels carry no CUDA for Jetson; NVIDIA's Jetson builds are tagged +nvYY.MM."""
    from cudoctor.facts.stated import from_stated

    pypi = from_stated({"gpu": "Jetson AGX Orin", "framework_version": "torch 1.12.0"}).value(
        "framework.torch"
    )
    assert pypi["build"] == "cpu" and pypi["cuda"] is None and "Jetson" in pypi["build_inferred"]
    nvidia = from_stated({"gpu": "Jetson AGX Orin", "framework_version": "torch 2.0.0+nv23.05"}).value(
        "framework.torch"
    )
    assert nvidia["build"] == "cuda"
    desktop = from_stated({"gpu": "RTX 3090", "framework_version": "torch 1.12.0"}).value("framework.torch")
    assert desktop["build"] == "cuda"
    # the Jetson named in the OS field (dusty-nv/jetson-inference#1932, set 54: JetPack 5.1.2, pytorch.org's pip)
    jetpack = from_stated(
        {"os": "JetPack 5.1.2 (Ubuntu 20.04), Jetson", "framework_version": "torch from pip3 install torch"}
    ).value("framework.torch")
    assert jetpack["build"] == "cpu"


def test_a_jaxlib_from_googles_cuda_folder_is_that_cudas_build() -> None:
    """jax-ml/jax#1418: jaxlib 0.1.29 from storage.googleapis.com/jax-releases/cuda100/ (2019): a CUDA 10.0
    build, not PyPI's CPU-only jaxlib of before 0.4."""
    from cudoctor.facts.stated import from_stated

    text = "jaxlib 0.1.29 cuda100 wheel (storage.googleapis.com/jax-releases/cuda100/jaxlib-0.1.29-cp37-none-linux_x86_64.whl) + jax from pip"
    info = from_stated({"framework_version": text}).value("framework.jax")
    assert info["build"] == "cuda" and info["cuda"] == "10.0"
    pypi = from_stated({"framework_version": "jaxlib 0.1.29 (pip install jaxlib)"}).value("framework.jax")
    assert pypi["build"] == "cpu"


def test_conda_build_strings_and_requests_name_the_build() -> None:
    """ContinuumIO/anaconda-issues#11063: tensorflow 1.14.0 mkl_py36h... is conda's CPU build; pytorch/pytorch#67108:
    a CPU torch resolved from 'conda install pytorch cudatoolkit=11.3' keeps the CUDA asked for."""
    from cudoctor.facts.stated import from_stated

    mkl = from_stated({"framework_version": "tensorflow 1.14.0 mkl_py36h2526735_0"}).value(
        "framework.tensorflow"
    )
    assert mkl["build"] == "cpu"
    gpu = from_stated({"framework_version": "tensorflow 1.14.0 gpu_py36h57d4e1d_0"}).value(
        "framework.tensorflow"
    )
    assert gpu["build"] == "cuda"
    asked = from_stated(
        {
            "framework_version": "pytorch 1.10.0 py3.8_cpu_0",
            "other": "conda install pytorch cudatoolkit=11.3 -c pytorch",
        }
    ).value("framework.torch")
    assert asked["build"] == "cpu" and asked["cuda_if_gpu"] == "11.3"


def test_collect_envs_no_driver_is_a_driver_absent() -> None:
    """pytorch/pytorch#47038: 'Nvidia driver version: No CUDA' on a node without GPUs."""
    from cudoctor.facts.stated import from_stated

    snap = from_stated(
        {"framework_version": "PyTorch 1.7.0", "other": "collect_env: 'Nvidia driver version: No CUDA'"}
    )
    assert snap.status("driver.version").value == "absent"
    stated = from_stated({"driver": "450.80", "other": "Nvidia driver version: No CUDA"})
    assert stated.value("driver.version") == "450.80"  # a stated driver wins


@pytest.mark.parametrize(
    ("text", "version", "cuda"),
    [
        # what a build needs of another component is not its own version
        ("jax (cuda11 wheels, needs CUDA >= 11.8 and cuDNN >= 8.6)", None, "11.8"),
        ("torch 2.1 (needs Python>=3.8)", "2.1", None),
        ("tensorflow 2.15 with CUDA 12.2", "2.15", "12.2"),
        ("jax cuda12 wheels", None, "12.0"),
    ],
)
def test_a_requirement_is_not_the_frameworks_version(
    text: str, version: str | None, cuda: str | None
) -> None:
    found = stated_builds.framework_info(text, "", None)
    assert found is not None and found[1]["version"] == version and found[1]["cuda"] == cuda


def test_pypi_torch_on_linux_aarch64_is_the_cpu_build() -> None:
    """PyPI's Linux aarch64 torch wheels are CPU builds (pytorch/pytorch#168065: a GB200 got one from a plain
    pip install); PyTorch's own index, a Jetson (another rule) or an x86 machine are not read so."""
    gb200 = {
        "os": "Linux aarch64",
        "gpu": "GB200",
        "framework_version": "torch stable via plain pip install torch",
    }
    assert from_stated(gb200).value("framework.torch")["build"] == "cpu"
    indexed = {
        **gb200,
        "framework_version": "torch 2.9.1 (pip install torch --index-url https://download.pytorch.org/whl/cu128)",
    }
    assert from_stated(indexed).value("framework.torch")["build"] != "cpu"
    x86 = {"os": "Ubuntu 22.04 x86_64", "framework_version": "torch 2.9.1 via plain pip install torch"}
    assert from_stated(x86).value("framework.torch")["build"] == "cuda"


def test_a_windows_torch_said_to_lack_its_cuda_tag_is_the_cpu_build_and_not_wsl_is_native() -> None:
    said = {"os": "Windows", "framework_version": "torch==2.5.1 (pip freeze, no +cu local version)"}
    assert from_stated(said).value("framework.torch")["build"] == "cpu"
    assert from_stated({**said, "os": "Linux"}).value("framework.torch")["build"] == "cuda"
    native = from_stated({"os": "Windows (native, not WSL)"})
    assert native.value("host.wsl") is False and native.value("host.os")["system"] == "Windows"
    assert from_stated({"os": "Windows 11, WSL2 Ubuntu 22.04"}).value("host.wsl") is True


def test_a_conda_cudatoolkit_is_marked_so_its_libraries_are_looked_for_in_the_environment() -> None:
    kits = from_stated({"system_cuda": "11.2 (conda install cudatoolkit=11.2)"}).value("cuda.toolkits")
    assert kits[0]["conda"] is True
    assert "conda" not in from_stated({"system_cuda": "11.2"}).value("cuda.toolkits")[0]
