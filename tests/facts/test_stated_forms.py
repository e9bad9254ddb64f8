"""Stated facts read as people write them: each form gives the facts a live snapshot would hold
under the same keys, so every check runs on them unchanged."""

from __future__ import annotations

from typing import Any

import pytest

from cudoctor.facts import stated_builds
from cudoctor.facts.stated import from_stated

# (stated key, text as people write it, framework hint, {fact key: the part of its value it must hold})
FORMS: list[tuple[str, str, str | None, dict[str, Any]]] = [
    (
        "framework_version",
        "jaxlib 0.4.20+cuda12.cudnn89",
        None,
        {
            "framework.jax": {
                "version": "0.4.20",
                "jaxlib": "0.4.20+cuda12.cudnn89",
                "build": "cuda",
                "cuda": "12.2",
                "cudnn": "8.9",
            }
        },
    ),
    (
        "framework_version",
        "jax[cuda12_pip]==0.4.13",
        None,
        {"framework.jax": {"version": "0.4.13", "build": "cuda", "cuda": "12.0", "cudnn": "8.9"}},
    ),
    (
        "framework_version",
        "jax 0.4.25, jaxlib 0.4.25+cuda11.cudnn86",
        None,
        {
            "framework.jax": {
                "version": "0.4.25",
                "jaxlib": "0.4.25+cuda11.cudnn86",
                "build": "cuda",
                "cuda": "11.8",
                "cudnn": "8.6",
            }
        },
    ),
    (
        "framework_version",
        "jaxlib 0.1.65+cuda111",
        None,
        {"framework.jax": {"jaxlib": "0.1.65+cuda111", "build": "cuda", "cuda": "11.1"}},
    ),
    (
        "framework_version",
        "jax 0.6.1 (jax[cuda12] via uv)",
        None,
        {"framework.jax": {"version": "0.6.1", "build": "cuda", "cuda": "12.8"}},
    ),
    (
        "framework_version",
        "jax-cuda12-plugin 0.4.30",
        None,
        {"framework.jax": {"version": "0.4.30", "build": "cuda", "cuda": "12.3", "cudnn": "9.1"}},
    ),
    (
        "framework_version",
        "jax 0.2.13, jaxlib 0.1.67",
        None,
        {"framework.jax": {"version": "0.2.13", "jaxlib": "0.1.67", "build": "unknown", "cuda": None}},
    ),
    (
        "framework_version",
        "torch==2.1.0+cu118",
        None,
        {"framework.torch": {"version": "2.1.0+cu118", "build": "cuda", "cuda": "11.8"}},
    ),
    (
        "framework_version",
        "torch 2.0.1+cpu",
        None,
        {"framework.torch": {"version": "2.0.1+cpu", "build": "cpu", "cuda": None}},
    ),
    (
        "framework_version",
        "pytorch 1.13.1 py3.9_cuda11.6_cudnn8.3.2_0",
        None,
        {"framework.torch": {"version": "1.13.1", "build": "cuda", "cuda": "11.6", "cudnn": "8.3.2"}},
    ),
    (
        "framework_version",
        "1.2 (conda 1.2.0-py3.7_cuda10.0.130_cudnn7.6.2_0)",
        "torch",
        {"framework.torch": {"version": "1.2", "build": "cuda", "cuda": "10.0", "cudnn": "7.6.2"}},
    ),
    (
        "framework_version",
        "pytorch 1.12.1 cuda112py38habe9d5a_201",
        None,
        {"framework.torch": {"version": "1.12.1", "build": "cuda", "cuda": "11.2"}},
    ),
    (
        "framework_version",
        "pytorch 2.0.1 cpu_py310hab5cca8_0",
        None,
        {"framework.torch": {"version": "2.0.1", "build": "cpu", "cuda": None}},
    ),
    (
        "framework_version",
        "pytorch 1.13.1 py3.9_cpu_0",
        None,
        {"framework.torch": {"version": "1.13.1", "build": "cpu", "cuda": None}},
    ),
    (
        "framework_version",
        "tensorflow-gpu 1.13.1",
        None,
        {
            "framework.tensorflow": {
                "version": "1.13.1",
                "dist": "tensorflow-gpu",
                "build": "cuda",
                "cuda": "10.0",
                "cudnn": "7.4",
            }
        },
    ),
    (
        "framework_version",
        "tensorflow[and-cuda]==2.15.0",
        None,
        {
            "framework.tensorflow": {
                "version": "2.15.0",
                "dist": "tensorflow",
                "build": "cuda",
                "cuda": "12.2",
                "cudnn": "8.9",
            }
        },
    ),
    (
        "framework_version",
        "tf-nightly 2.16.0.dev20231101",
        None,
        {
            "framework.tensorflow": {
                "version": "2.16.0.dev20231101",
                "dist": "tf-nightly",
                "build": "cuda",
                "cuda": "12.3",
            }
        },
    ),
    (
        "framework_version",
        "tensorflow-cpu 2.13.0",
        None,
        {
            "framework.tensorflow": {
                "version": "2.13.0",
                "dist": "tensorflow-cpu",
                "build": "cpu",
                "cuda": None,
            }
        },
    ),
    (
        "framework_version",
        "cupy-cuda12x 13.0.0",
        None,
        {"framework.cupy": {"version": "13.0.0", "build": "cuda", "cuda": "12.0"}},
    ),
    (
        "framework_version",
        "cupy-cuda112 10.6.0",
        None,
        {"framework.cupy": {"version": "10.6.0", "build": "cuda", "cuda": "11.2"}},
    ),
    ("system_cuda", "cudatoolkit 11.3 (conda)", None, {"cuda.toolkits": [{"version": "11.3"}]}),
    (
        "system_cuda",
        "CUDA 11.8 / cuDNN 8.9.2",
        None,
        {"cuda.toolkits": [{"version": "11.8"}], "cudnn.versions": ["8.9.2"]},
    ),
    (
        "system_cuda",
        "10.2 system-wide plus 11.6 installed locally and added to PATH",
        None,
        {"cuda.toolkits": [{"version": "10.2"}, {"version": "11.6"}]},
    ),
    (
        "os",
        "Windows 11, WSL2 Ubuntu 22.04",
        None,
        {"host.os": {"system": "Linux"}, "host.wsl": True},
    ),
    ("os", "Ubuntu 20.04 (WSL)", None, {"host.os": {"system": "Linux"}, "host.wsl": True}),
    ("os", "Windows 10", None, {"host.os": {"system": "Windows"}, "host.wsl": False}),
    (  # the system named first is the one: the other is a remark
        "os",
        "Linux (Ubuntu; the exact same installation works on Windows)",
        None,
        {"host.os": {"system": "Linux"}, "host.wsl": False},
    ),
    ("os", "Windows 10 (also tried Ubuntu)", None, {"host.os": {"system": "Windows"}, "host.wsl": False}),
    (
        "os",
        "Ubuntu 20.04 in docker",
        None,
        {"host.os": {"system": "Linux"}, "host.wsl": False, "host.container": "docker"},
    ),
    ("container", "nvidia/cuda:12.1.0-runtime-ubuntu22.04 (docker)", None, {"host.container": "docker"}),
    (
        "gpu",
        "GeForce RTX 3090 24GB",
        None,
        {"gpu.devices": [{"name": "GeForce RTX 3090", "cc": "8.6", "memory_total_mib": 24576}]},
    ),
    (
        "gpu",
        "NVIDIA GeForce RTX 4090 Laptop GPU",
        None,
        {"gpu.devices": [{"name": "NVIDIA GeForce RTX 4090 Laptop GPU", "cc": "8.9"}]},
    ),
    (
        "gpu",
        "2x A100-SXM4-80GB",
        None,
        {
            "gpu.devices": [
                {"index": 0, "name": "A100-SXM4-80GB", "cc": "8.0", "memory_total_mib": 81920},
                {"index": 1, "name": "A100-SXM4-80GB", "cc": "8.0", "memory_total_mib": 81920},
            ]
        },
    ),
    (
        "gpu",
        "Tesla V100-SXM2-16GB",
        None,
        {"gpu.devices": [{"name": "Tesla V100-SXM2-16GB", "cc": "7.0", "memory_total_mib": 16384}]},
    ),
    (
        "driver",
        "535.104.05",
        None,
        {"driver.version": "535.104.05", "driver.cuda_version": "12.2"},
    ),
    (
        "driver",
        "Driver Version: 470.82.01 CUDA Version: 11.4",
        None,
        {"driver.version": "470.82.01", "driver.cuda_version": "11.4"},
    ),
    ("driver", "470.82.01 (CUDA 11.4)", None, {"driver.version": "470.82.01", "driver.cuda_version": "11.4"}),
    ("python", "python 3.8.10", None, {"host.python": {"version": "3.8.10"}}),
    ("python", "3.13.3", None, {"host.python": {"version": "3.13.3"}}),
]


def holds(value: Any, want: Any) -> bool:
    """`value` holds `want`: equal, a dict with want's keys equal, a list whose items hold want's in order."""
    if isinstance(want, dict):
        return isinstance(value, dict) and all(holds(value.get(k), v) for k, v in want.items())
    if isinstance(want, list) and want and isinstance(want[0], dict):
        return isinstance(value, list) and len(value) == len(want) and all(map(holds, value, want))
    return bool(value == want)


@pytest.mark.parametrize(("key", "text", "hint", "want"), FORMS, ids=[f[1] for f in FORMS])
def test_stated_form_gives_the_facts(key: str, text: str, hint: str | None, want: dict[str, Any]) -> None:
    snap = from_stated({key: text}, framework_hint=hint)
    for fact_key, expected in want.items():
        fact = snap.get(fact_key)
        assert fact is not None and fact.known, f"{text!r}: no {fact_key}"
        assert holds(fact.value, expected), f"{text!r}: {fact_key} = {fact.value!r}, want {expected!r}"
        assert str(fact.source).startswith("stated:"), fact.source


def test_a_tag_names_the_cuda_major_even_where_the_table_has_no_row() -> None:
    """A jaxlib release the table does not know still gives the CUDA major its tag names."""
    info = from_stated({"framework_version": "jaxlib 0.4.35+cuda12.cudnn95"}).value("framework.jax")
    assert info["build"] == "cuda" and info["cuda"] == "12.0" and info["cudnn"] == "9.5"


def test_tensorflow_from_2_11_on_native_windows_is_a_cpu_build() -> None:
    """TensorFlow's own Windows wheels stopped carrying CUDA after 2.10: stated together with a
    native Windows, the build is the CPU one a live snapshot would read; under WSL2 it is not."""
    native = from_stated({"os": "Windows 10", "framework_version": "tensorflow 2.13.0"})
    info = native.value("framework.tensorflow")
    assert info["build"] == "cpu" and info["cuda"] is None and "2.10" in info["build_inferred"]
    wsl = from_stated({"os": "Windows 11, WSL2 Ubuntu 22.04", "framework_version": "tensorflow 2.13.0"})
    assert wsl.value("framework.tensorflow")["build"] == "cuda"
    old = from_stated({"os": "Windows 10", "framework_version": "tensorflow-gpu 2.10.0"})
    assert old.value("framework.tensorflow")["cuda"] == "11.2"


# Forms met in the blind scenario tables of session 31 (tests/fixtures/check_scenarios.toml): each gives the
# fact a check needs; the value after it is what the fact must hold.
MORE_FORMS: list[tuple[dict[str, str], str, Any]] = [
    (
        {"driver": "reports CUDA 12020 (12.2)"},
        "driver.cuda_version",
        "12.2",
    ),  # cudaDriverGetVersion's integer
    ({"driver": "found version 11040"}, "driver.cuda_version", "11.4"),
    ({"driver": "CUDA Driver Version 11010"}, "driver.cuda_version", "11.1"),
    ({"driver": "470.82.01"}, "driver.cuda_version", "11.4"),
    ({"system_cuda": "cuda 9"}, "cuda.toolkits", [{"version": "9"}]),  # the major alone
    ({"framework_version": "tf2.12.0"}, "framework.tensorflow", {"version": "2.12.0"}),
    (
        {"framework_version": "v2.11.0-rc2-15-g6290819256d 2.11.0"},  # tf.version.GIT_VERSION beside VERSION
        "framework.tensorflow",
        {"version": "2.11.0"},
    ),
    (
        {"framework_version": "tensorflow 1.14.0-gpu"},
        "framework.tensorflow",
        {"build": "cuda", "cuda": "10.0"},
    ),
    (
        {"framework_version": "PyTorch version: 2.2.2 (CUDA used to build PyTorch: Could not collect)"},
        "framework.torch",
        {"build": "cpu"},
    ),
    ({"framework_version": "torch 2.2.2", "framework_cuda": "None"}, "framework.torch", {"build": "cpu"}),
    (
        {"gpu": "A100", "other": "torch supports sm_37 sm_50 sm_60 sm_70"},
        "framework.torch",
        {"build": "cuda", "archs": ["sm_37", "sm_50", "sm_60", "sm_70"]},
    ),
    (
        {
            "framework_version": "preinstalled PyTorch (sm_37 sm_50 sm_60 sm_61 sm_70 sm_75 sm_80 sm_86 compute_37)"
        },
        "framework.torch",
        {"archs": ["sm_37", "sm_50", "sm_60", "sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "compute_37"]},
    ),
    (
        {"framework_version": "onnxruntime-gpu==1.20.1 + onnxruntime==1.20.1 (uv add)"},
        "python.packages",
        {"onnxruntime-gpu": "1.20.1", "onnxruntime": "1.20.1"},
    ),
    (
        {"framework_version": "jax: 0.4.31, jaxlib: 0.4.31", "other": "jax.devices: [CpuDevice(id=0)]"},
        "framework.jax",
        {"build": "cpu"},
    ),
    (
        {"container": "docker run -it test (no --gpus)"},
        "host.container_gpus",
        "not passed (no --gpus)",
    ),
    ({"gpu": "Nvidia Geforce 3070 8gb"}, "gpu.devices", [{"cc": "8.6"}]),
    ({"gpu": "A6000"}, "gpu.devices", [{"cc": "8.6"}]),
    # session 44's sets: the runtime that starts a container before the image it names; Singularity without --nv
    (
        {"container": "singularity build nemo.sif docker:zhan0502/nemo; singularity shell nemo.sif"},
        "host.container_gpus",
        "not passed (singularity shell )",
    ),
    (
        {"container": "singularity build nemo.sif docker://nvcr.io/nvidia/pytorch:24.01-py3"},
        "host.container",
        "singularity",
    ),
    ({"container": "k8s pod running the docker image vllm/vllm-openai"}, "host.container", "kubepods"),
    # a framework named only by its API, release and build unknown
    (
        {"other": "torch.cuda.get_device_name(0), then invalid device function"},
        "framework.torch",
        {"build": "unknown"},
    ),
    (
        {"other": "tf.config.list_physical_devices('GPU') returns []"},
        "framework.tensorflow",
        {"version": None},
    ),
    # onnxruntime's GPU build by its NuGet, archive and prose names
    (
        {"framework_version": "Microsoft.ML.OnnxRuntime.GPU (nuget package VERSION 1.16.0)"},
        "python.packages",
        {"onnxruntime-gpu": "1.16.0"},
    ),
    (
        {"framework_version": "onnxruntime-win-x64-gpu-1.6.0.zip"},
        "python.packages",
        {"onnxruntime-gpu": "1.6.0"},
    ),
    (
        {"framework_version": "ONNX Runtime 1.19.1 (YoloV8.Gpu)"},
        "python.packages",
        {"onnxruntime-gpu": "1.19.1"},
    ),
    # libraries with a GPU floor of their own
    ({"framework_version": "FlashAttention-2"}, "python.packages", {"flash-attn": "2"}),
    ({"other": "vanilla vllm installation"}, "python.packages", {"vllm": "?"}),
    # the Windows build under WSL2, and a compute capability written as 'compute-12.0'
    ({"os": "Windows 10 Version 1909 build 18363, Ubuntu 18.04 on WSL2"}, "host.windows_build", 18363),
    ({"os": "Windows 10 Version 21H2, WSL2"}, "host.windows_build", 19044),
    ({"gpu": "compute-12.0 card (Blackwell)"}, "gpu.devices", [{"cc": "12.0"}]),
    # set 57-58: an application's framework (knowledge/applications.toml), a stated build CUDA with no framework,
    # a GPU asked for by its index, DeepFaceLab's own floor message
    (
        {"framework_version": "spleeter (sudo pip install spleeter)"},
        "framework.tensorflow",
        {"version": None},
    ),
    ({"framework_cuda": "cudatoolkit 10.0.130", "cudnn": "7.6.0"}, "build.cuda_said", "10.0"),
    (
        {"framework_version": "Ultralytics YOLOv8.0.88 torch-2.0.0+cpu", "other": "track.py --device 0"},
        "stated.gpu_wanted",
        "the facts say '--device 0'",
    ),
    (
        {
            "other": "Tesla K40m does not meet minimum required compute capability: 3.7. Falling back to CPU mode."
        },
        "framework.torch",
        {"min_cc": "3.7"},
    ),
    # an nvidia/cuda image's flavour and the cuDNN its tag names, in both tag orders
    (
        {"container": "FROM nvidia/cuda:10.1-base-ubuntu18.04"},
        "container.image",
        {"flavour": "base", "cudnn": None},
    ),
    (
        {"container": "nvidia/cuda:10.1-cudnn7-runtime-ubuntu18.04"},
        "container.image",
        {"flavour": "runtime", "cudnn": "cudnn7"},
    ),
    (
        {"container": "nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04"},
        "container.image",
        {"flavour": "devel", "cudnn": "cudnn"},
    ),
    # a build's architectures written as numbers, any library
    (
        {"other": "Paddle installation with arch: 52 60 61 70 75; for PaddleOCR"},
        "build.archs_said",
        {
            "archs": ["sm_52", "sm_60", "sm_61", "sm_70", "sm_75"],
            "said": "Paddle installation with arch: 52 60 61 70 75",
        },
    ),
]


def _holds(value: Any, want: Any) -> bool:
    if isinstance(want, dict):
        return isinstance(value, dict) and all(_holds(value.get(k), v) for k, v in want.items())
    if isinstance(want, list) and want and isinstance(want[0], dict):
        return (
            isinstance(value, list)
            and len(value) >= len(want)
            and all(_holds(a, b) for a, b in zip(value, want, strict=False))
        )
    return bool(value == want)


@pytest.mark.parametrize(("stated", "key", "want"), MORE_FORMS, ids=[str(f[0])[:60] for f in MORE_FORMS])
def test_more_forms_people_write(stated: dict[str, str], key: str, want: Any) -> None:
    assert _holds(from_stated(stated).value(key), want), from_stated(stated).value(key)


def test_forms_that_name_no_fact_stay_silent() -> None:
    """Counter-examples: a bare version names no framework, an unnamed Windows torch is no sure build,
    a container with its GPUs passed is not flagged, a jax.devices() with a GPU is not a CPU build."""
    assert from_stated({"framework_version": "2.17.0"}).value("framework.tensorflow") is None
    windows = from_stated({"framework_version": "torch 2.2.2", "os": "Windows 11"}).value("framework.torch")
    assert windows["build"] == "unknown"  # PyPI's Windows wheels are CPU-only; CUDA ones carry +cuXXX
    linux = from_stated({"framework_version": "torch 2.2.2"}).value("framework.torch")
    assert linux["build"] == "cuda"
    assert from_stated({"container": "docker run --gpus all img"}).value("host.container_gpus") is None
    gpu = from_stated({"framework_version": "jax 0.4.31", "other": "[CpuDevice(id=0)] and CudaDevice(id=0)"})
    assert gpu.value("framework.jax")["build"] != "cpu"
    assert from_stated({"driver": "525.60.13"}).value("driver.version") == "525.60.13"
    assert (
        from_stated({"container": "singularity exec --nv img.sif python"}).value("host.container_gpus")
        is None
    )
    # two frameworks' APIs, or one next to a stated framework: no framework is made from the API
    both = from_stated({"other": "torch.cuda.is_available() True but tf.config.list_physical_devices() []"})
    assert both.value("framework.torch") is None and both.value("framework.tensorflow") is None
    stated_too = from_stated({"framework_version": "jax 0.4.31", "other": "torch.cuda.is_available() True"})
    assert stated_too.value("framework.torch") is None
    assert from_stated({"os": "Ubuntu 22.04"}).value("host.windows_build") is None
    collect_env = from_stated({"driver": "No CUDA", "framework_version": "PyTorch version: 2.1.2+cu121"})
    assert collect_env.status("driver.version").value == "absent"  # vllm#4858: collect_env's 'No CUDA'
    assert (
        from_stated({"framework_cuda": "12.1", "framework_version": "torch 2.1.0"}).value("build.cuda_said")
        is None
    )
    for words in ("compiled with CUDA 11 and 12", "python 3.10 3.11 3.12 support", "compute capability 8.6"):
        assert from_stated({"other": words}).value("build.archs_said") is None, words


def test_a_build_described_in_words_gives_its_cuda_and_cudnn() -> None:
    tf = from_stated({"framework_version": "tensorflow (compiled with cuDNN 8.1.0)"}).value(
        "framework.tensorflow"
    )
    assert tf["cudnn"] == "8.1.0" and tf["version"] is None
    torch = from_stated({"framework_version": "torch 1.12 (CUDA 11.6 build)"}).value("framework.torch")
    assert (torch["version"], torch["cuda"]) == ("1.12", "11.6")
    jax = from_stated({"framework_version": "jaxlib 0.4.13 cuda11.cudnn86 (conda env)"}).value(
        "framework.jax"
    )
    assert jax["cudnn"] == "8.6" and jax["build"] == "cuda"
    ort = from_stated({"framework_version": "onnxruntime 1.23.2 and onnxruntime-gpu (both installed)"})
    assert ort.value("python.packages") == {"onnxruntime": "1.23.2", "onnxruntime-gpu": "?"}
    assert (
        from_stated({"system_cuda": "12 (the cluster's cudatoolkit module)"}).value("cuda.toolkits")[0][
            "version"
        ]
        == "12"
    )


def test_collect_env_quoted_in_the_prose_can_say_the_torch_build_has_no_cuda() -> None:
    said = "collect_env: CUDA used to build PyTorch: Could not collect; Is CUDA available: False"
    snap = from_stated({"framework_version": "torch 2.1.0", "other": said})
    assert snap.value("framework.torch")["build"] == "cpu" and snap.value("framework.torch")["cuda"] is None
    plain = from_stated({"framework_version": "torch 2.1.0", "other": "CUDA used to build PyTorch: 12.1"})
    assert plain.value("framework.torch")["build"] == "cuda"


def test_a_source_build_does_not_take_the_default_wheels_cuda() -> None:
    info = from_stated({"framework_version": "PyTorch version: 2.0.0a0+git7f2b5ea"}).value("framework.torch")
    assert info["build"] == "unknown" and info["cuda"] is None
    wheel = from_stated({"framework_version": "torch 2.0.0"}).value("framework.torch")
    assert wheel["build"] == "cuda" and wheel["cuda"] == "11.7"


def test_windows_is_read_as_people_write_it() -> None:
    system = lambda text: from_stated({"os": text}).value("host.os")["system"]  # noqa: E731
    assert [system(t) for t in ("Window 7x64", "win 10", "Win11 Pro", "Windows 8.1")] == ["Windows"] * 4
    assert [system(t) for t in ("Windows 11, WSL2 Ubuntu 22.04", "window manager: i3, Ubuntu 22.04")] == [
        "Linux"
    ] * 2


def test_a_bare_cuda_major_from_11_on_is_a_build_cuda() -> None:
    """libcudart.so.12 names CUDA 12 without a minor; before 11 a bare '10' says too little."""
    assert from_stated({"framework_cuda": "12"}, "tensorflow").value("framework.tensorflow")["cuda"] == "12"
    assert from_stated({"framework_cuda": "10"}, "tensorflow").value("framework.tensorflow")["cuda"] is None


def test_a_gpu_written_as_its_bare_model_number() -> None:
    gpus = lambda text: [(g["name"], g["cc"]) for g in from_stated({"gpu": text}).value("gpu.devices") or []]  # noqa: E731
    assert gpus("3090") == [("3090", "8.6")]
    assert gpus("gpu 3090") == [("gpu 3090", "8.6")]
    assert gpus("5070 Ti Laptop GPU") == [("5070 Ti Laptop GPU", "12.0")]
    assert gpus("GPU: 960M") == [
        ("GPU: 960M", "5.0")
    ]  # the laptop GTX 960M is GM107, not the desktop's GM206
    assert gpus("1080 Ti") == [("1080 Ti", "6.1")]
    assert gpus("GeForce GT 750M major: 3 minor: 0") == [("GeForce GT 750M major: 3 minor: 0", "3.0")]
    assert gpus("750") == [] and gpus("2") == []  # not a model


def test_a_gpu_named_by_its_architecture_inside_parentheses_is_one_gpu() -> None:
    """'RTX 50 series (Blackwell, sm_120)' was two GPUs of unknown capability: the comma inside the
    parentheses split it, and sm_120 was not read (a blind check scenario of set 21)."""
    gpus = lambda text: [(g["name"], g["cc"]) for g in from_stated({"gpu": text}).value("gpu.devices") or []]  # noqa: E731
    assert gpus("RTX 50 series (Blackwell, sm_120)") == [("RTX 50 series (Blackwell sm_120)", "12.0")]
    assert gpus("RTX 3090 (sm_86)") == [("RTX 3090 (sm_86)", "8.6")]
    assert gpus("GTX 1080 Ti, RTX 2080 Ti") == [("GTX 1080 Ti", "6.1"), ("RTX 2080 Ti", "7.5")]
    assert gpus("GeForce GTX 950M") == [("GeForce GTX 950M", "5.0")] and gpus("GTX 960") == [
        ("GTX 960", "5.2")
    ]


def test_a_geforce_series_of_one_compute_capability_is_that_capability() -> None:
    """'GeForce GTX 10-series and older' (AUTOMATIC1111/stable-diffusion-webui#17172, scenario set 45): every GTX 10xx
    is a GP10x at 6.1, every RTX 30xx a GA10x at 8.6, so a series written as people write it names one capability."""
    gpus = lambda text: [(g["name"], g["cc"]) for g in from_stated({"gpu": text}).value("gpu.devices") or []]  # noqa: E731
    assert gpus("GeForce GTX 10-series and older")[0] == ("GeForce GTX 10-series", "6.1")
    assert gpus("RTX 30 series") == [("RTX 30 series", "8.6")] and gpus("RTX 40xx") == [("RTX 40xx", "8.9")]
    assert gpus("GTX 16 series") == [("GTX 16 series", "7.5")] and gpus("RTX 20xx") == [("RTX 20xx", "7.5")]
    assert gpus("RTX 50-series") == [("RTX 50-series", "12.0")] and gpus("GTX 9 series") == [
        ("GTX 9 series", "5.2")
    ]
    assert gpus("RTX 3000")[0][1] != "8.6"  # a Quadro RTX 3000 (Turing), not the RTX 30 series


def test_a_frameworks_message_pasted_into_the_facts_states_facts() -> None:
    torch_floor = from_stated(
        {
            "gpu": "GeForce GT 720",
            "framework_version": "torch (voice-changer client)",
            "other": "Found GPU0 GeForce GT 720 which is of cuda capability 3.5. PyTorch no longer supports this GPU "
            "because it is too old. The minimum cuda capability supported by this library is 3.7.",
        }
    )
    assert torch_floor.value("framework.torch")["min_cc"] == "3.7"
    assert torch_floor.value("gpu.devices")[0]["cc"] == "3.5"  # the table does not know a GT 720
    tf_floor = from_stated(
        {"framework_version": "tensorflow", "other": "The minimum required Cuda capability is 3.5."}
    )
    assert tf_floor.value("framework.tensorflow")["min_cc"] == "3.5"
    driver = from_stated(
        {"other": "AssertionError: The NVIDIA driver on your system is too old (found version 10000)."}
    )
    assert driver.value("driver.cuda_version") == "10.0"
    stated_driver = from_stated(
        {
            "driver": "535.104.05",
            "other": "The NVIDIA driver on your system is too old (found version 10000).",
        }
    )
    assert stated_driver.value("driver.cuda_version") == "12.2"  # what the facts say wins
    assert (
        from_stated({"other": "the driver was updated; found version 12.2 of the toolkit"}).value(
            "driver.cuda_version"
        )
        is None
    )


def test_jaxlib_builds_read_from_where_they_came_from() -> None:
    """Before 0.4 a jaxlib from PyPI was the CPU build (CUDA ones carried +cudaNNN, from Google's index);
    JAX's CUDA wheels are Linux's, so on native Windows it is the CPU build."""
    pypi = from_stated({"framework_version": "jax==0.2.6, jaxlib==0.1.57 (pip)"}).value("framework.jax")
    assert pypi["build"] == "cpu" and "PyPI" in pypi["build_inferred"]
    tagged = from_stated({"framework_version": "jaxlib==0.1.57+cuda101 (pip)"}).value("framework.jax")
    assert tagged["build"] == "cuda"
    newer = from_stated({"framework_version": "jax==0.4.30, jaxlib==0.4.30 (pip)"}).value("framework.jax")
    assert newer["build"] != "cpu"  # from 0.4 the CUDA parts may come from elsewhere: not known
    windows = from_stated({"framework_version": "jax = 0.4.13", "os": "Windows 11"}).value("framework.jax")
    assert windows["build"] == "cpu"
    wsl = from_stated({"framework_version": "jax = 0.4.13", "os": "Windows 11, WSL2 Ubuntu"}).value(
        "framework.jax"
    )
    assert wsl["build"] != "cpu"


def test_versions_written_the_way_tools_print_them() -> None:
    torch = from_stated({"framework_version": "PyTorch version: 1.12.1 (CUDA used to build PyTorch: 11.6)"})
    assert torch.value("framework.torch")["cuda"] == "11.6"
    assert from_stated({"cudnn": "v8.0.1"}).value("cudnn.versions") == ["8.0.1"]
    assert from_stated({"cudnn": "libcudnn.so.5.1.10 only"}).value("cudnn.versions") == ["5.1.10"]
    driver = from_stated({"other": "torch._C._cuda_getDriverVersion() returns 9010"})
    assert driver.value("driver.cuda_version") == "9.1"


def test_gpus_cuda_cannot_use_are_not_devices() -> None:
    only = from_stated({"gpu": "integrated Intel Iris Xe Graphics (no NVIDIA GPU)"})
    assert only.value("gpu.devices") == [] and only.value("gpu.not_nvidia")
    mixed = from_stated({"gpu": "AMD Ryzen 9 5900X, RTX 3090"})
    assert [d["name"] for d in mixed.value("gpu.devices")] == ["RTX 3090"] and mixed.value(
        "gpu.not_nvidia"
    ) is None
    assert (
        from_stated({"gpu": "NVIDIA GeForce RTX 4090 (no Intel GPU)"}).value("gpu.devices")[0]["cc"] == "8.9"
    )


@pytest.mark.parametrize(
    ("written", "framework", "version"),
    [
        ("tenserflow-gpu 1.13.1", "tensorflow", "1.13.1"),  # tensorflow/tensorflow#28285
        ("Tensorflw 2.4", "tensorflow", "2.4"),
        ("pytroch 1.7.1", "torch", "1.7.1"),
    ],
)
def test_a_misspelt_framework_name_is_read_as_the_framework(
    written: str, framework: str, version: str
) -> None:
    info = from_stated({"framework_version": written}).value(f"framework.{framework}")
    assert info is not None and str(info["version"]).startswith(version)


def test_words_that_only_look_like_a_framework_stay_what_they_are() -> None:
    for text in ("tensorrt 8.6.1", "torchvision 0.15.2", "pytest 7.4"):
        snap = from_stated({"framework_version": text})
        assert snap.value("framework.tensorflow") is None, text
    assert stated_builds.canonical_names("TensorFlow 2.4 and PyTorch") == "TensorFlow 2.4 and PyTorch"


def test_the_frameworks_own_answer_that_it_has_no_cuda_makes_a_cpu_build() -> None:
    """conda-forge's tensorflow 2.15.0 cuda120 build _1 was compiled without CUDA, and the reporter pasted
    tf.test.is_built_with_cuda() -> False beside its build string (blind check scenario of set 22)."""
    build = lambda text: from_stated({"framework_version": text}).value("framework.tensorflow")["build"]  # noqa: E731
    stated = "tensorflow 2.15.0 cuda120py311h5cbd639_1 (conda-forge); tf.test.is_built_with_cuda() -> False"
    assert build(stated) == "cpu"
    assert build("tensorflow 2.15.0 (built with CUDA: False)") == "cpu"
    assert build("TensorFlow 2.3 (tf.test.is_built_with_cuda() returns False)") == "cpu"  # set 27
    assert build("tensorflow 2.15.0 cuda120py311h5cbd639_1") == "cuda"
    assert build("tensorflow 2.4, tf.test.is_built_with_cuda() True") == "cuda"


def test_a_vllm_release_stated_alone_runs_the_torch_its_wheel_pins() -> None:
    """vllm 0.4.3's metadata pins torch == 2.3.0 (torch_pins.toml, read from the package index), whose default wheel
    is CUDA 12.1: a 470 driver is then too old, which nothing said while the torch was unknown."""
    torch = from_stated({"framework_version": "vllm 0.4.3", "driver": "470.82"}).value("framework.torch")
    assert (torch["version"], torch["cuda"], torch["pinned_by"]) == ("2.3.0", "12.1", "vllm 0.4.3")
    assert (
        from_stated({"framework_version": "vllm==0.6.3.post1"}).value("framework.torch")["version"] == "2.4.0"
    )
    stated = from_stated({"framework_version": "vllm 0.7.3, torch 2.5.1+cu124"}).value("framework.torch")
    assert stated["version"] == "2.5.1+cu124" and "pinned_by" not in stated  # a torch stated beside it wins
    unpinned = from_stated({"framework_version": "vllm 0.0.1"}).value(
        "framework.torch"
    )  # pins none: a torch of
    assert unpinned["version"] is None and "pinned_by" not in unpinned  # unknown release (applications.toml)


@pytest.mark.parametrize(
    ("other", "build"),
    [
        ("reporter says torch.cuda.is_available() is True; running run_demo.py", "cuda"),
        ("torch.cuda.is_available() returns true in a plain shell", "cuda"),
        ("print(torch.cuda.is_available()) => True", "cuda"),
        ("torch.cuda.is_available() is False", "unknown"),
        ("torch.cuda.is_available() returns False even though nvidia-smi shows True", "unknown"),
    ],
)
def test_torch_said_to_find_the_gpu_is_a_cuda_build(other: str, build: str) -> None:
    """Only a CUDA build of torch answers is_available() True: where the same person's log says False, the process
    hid the GPU (CUDA_VISIBLE_DEVICES, a rank's device), which the explainer then ranks before a CPU-only build."""
    snap = from_stated({"other": other})
    assert snap.value("framework.torch")["build"] == build
    stated_cpu = from_stated({"framework_version": "torch 2.1.0+cpu", "other": other})
    assert stated_cpu.value("framework.torch")["build"] == "cpu"  # what the version says is not overruled


def test_a_gpu_torch_found_elsewhere_puts_the_hidden_gpu_before_a_cpu_build() -> None:
    from cudoctor.explainer.command import explain_stated

    log = (
        "RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. "
        "If you are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') "
        "to map your storages to the CPU."
    )
    said = explain_stated(log, {"other": "torch.cuda.is_available() is True when I run it in a shell"})
    unsaid = explain_stated(log, {})
    assert said["causes"][0]["id"] == "no-gpu-visible"
    assert unsaid["causes"][0]["id"] == "cpu-only-build"
