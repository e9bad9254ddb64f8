"""Known harmless lines (knowledge/benign.toml): never the root error, named when nothing else is.

Log text is from the public threads named next to each case.
"""

from __future__ import annotations

import dataclasses
import json

from cudoctor.explainer import benign, signatures
from tests import regex_samples
from tests.conftest import cudoctor
from tests.explainer.helpers import explain_text, top

# tensorflow/tensorflow#79268 (TF 2.18 import on a GTX 1060): nothing but import notices
TF_IMPORT_NOISE = """\
2024-11-02 01:08:00.536542: E external/local_xla/xla/stream_executor/cuda/cuda_fft.cc:477] Unable to register cuFFT factory: Attempting to register factory for plugin cuFFT when one has already been registered
WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
E0000 00:00:1730497080.560232   55183 cuda_dnn.cc:8310] Unable to register cuDNN factory: Attempting to register factory for plugin cuDNN when one has already been registered
E0000 00:00:1730497080.565334   55183 cuda_blas.cc:1418] Unable to register cuBLAS factory: Attempting to register factory for plugin cuBLAS when one has already been registered
2024-11-02 01:08:00.584775: I tensorflow/core/platform/cpu_feature_guard.cc:210] This TensorFlow binary is optimized to use available CPU instructions in performance-critical operations.
To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow with the appropriate compiler flags.
"""

# DeepLabCut/DeepLabCut#2115: TensorRT absent, which the "Could not load dynamic library" signature reads as a missing CUDA library
TENSORRT_ABSENT = """\
2023-02-20 11:35:53.200200: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libnvinfer.so.7'; dlerror: libnvinfer.so.7: cannot open shared object file: No such file or directory; LD_LIBRARY_PATH: /usr/local/cuda-10.0/lib64:/usr/local/cuda-10.0/extras/CUPTI/lib64
2023-02-20 11:35:53.200264: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libnvinfer_plugin.so.7'; dlerror: libnvinfer_plugin.so.7: cannot open shared object file: No such file or directory; LD_LIBRARY_PATH: /usr/local/cuda-10.0/lib64:/usr/local/cuda-10.0/extras/CUPTI/lib64
2023-02-20 11:35:53.200276: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: Cannot dlopen some TensorRT libraries. If you would like to use Nvidia GPU with TensorRT, please make sure the missing libraries mentioned above are installed properly.
"""

# google/deepvariant#920: the same TensorRT lines next to a CUDA runtime that is really missing
CUDART_MISSING = """\
2024-12-28 16:10:57.196252: W tensorflow/compiler/xla/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: No such file or directory
2024-12-28 16:10:57.627780: W tensorflow/compiler/xla/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libnvinfer.so.7'; dlerror: libnvinfer.so.7: cannot open shared object file: No such file or directory
2024-12-28 16:10:57.627819: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: Cannot dlopen some TensorRT libraries. If you would like to use Nvidia GPU with TensorRT, please make sure the missing libraries mentioned above are installed properly.
"""

# JaidedAI/EasyOCR#568: the NNPACK notice, then the real failure (a CPU without AVX)
NNPACK_THEN_SIGILL = """\
[W NNPACK.cpp:64] Could not initialize NNPACK! Reason: Unsupported hardware.
Illegal instruction (core dumped)
"""

# dBeker/Faster-RCNN-TensorFlow-Python3#35: the CPU notice, then an error that is not a GPU error
CPU_NOTICE_THEN_TRACEBACK = """\
Your CPU supports instructions that this TensorFlow binary was not compiled to use: AVX AVX2
Traceback (most recent call last):
  File "C:/Users/lcc/Desktop/Faster-RCNN-TensorFlow-Python3.5-master/demo2.py", line 141, in <module>
    raise NotImplementedError
NotImplementedError
"""

# kscalelabs/ksim-gym#44: JAX's INFO line about TPUs before a real cuSolver failure on a Jetson Orin
JAX_TPU_INFO_THEN_CUSOLVER = """\
INFO:2025-05-20 13:08:38,816:jax._src.xla_bridge:867: Unable to initialize backend 'tpu': INTERNAL: Failed to open libtpu.so: libtpu.so: cannot open shared object file: No such file or directory
2025-05-20 13:08:38.897413: I external/xla/xla/service/service.cc:152] XLA service 0xb17d160 initialized for platform CUDA (this does not guarantee that XLA will be used). Devices:
jaxlib.xla_extension.XlaRuntimeError: INTERNAL: cuSolver internal error
"""

# jax-ml/jax#24987: the same words as a real error, when the TPU backend was the one asked for
JAX_TPU_REQUESTED = """\
RuntimeError: Unable to initialize backend 'tpu': INTERNAL: Failed to open /home/x/.local/lib/python3.10/site-packages/libtpu/libtpu.so: /home/x/.local/lib/python3.10/site-packages/libtpu/libtpu.so: cannot open shared object file: No such file or directory (set JAX_PLATFORMS='' to automatically choose an available backend)
"""


def test_benign_table_validates() -> None:
    assert benign.validate() == []


def test_every_alternative_of_a_harmless_line_holds_an_anchor() -> None:
    assert [
        text for entry in benign.load() for text in regex_samples.unanchored(entry.regex, entry.anchors)
    ] == []


def test_known_line_problems_name_a_twin_id_a_lost_example_and_a_matched_counter_example() -> None:
    first, second, *rest = benign.load()
    broken = dataclasses.replace(first, examples=("an ordinary line",), counter_examples=first.examples[:1])
    problems = signatures.known_line_problems((broken, second, *rest, second))
    assert problems == [
        f"{second.id}: duplicate id",
        f"{first.id}: does not recognise example 'an ordinary line'",
        f"{first.id}: matches counter-example {first.examples[0][:60]!r}",
    ]


def test_import_notices_alone_are_no_error() -> None:
    exp = explain_text(TF_IMPORT_NOISE)
    assert exp.root is None and exp.root_fallback is None
    assert set(exp.scan.benign) == {
        "tf-plugin-registered-twice",
        "absl-initializelog-notice",
        "tf-cpu-feature-guard",
    }
    assert exp.scan.benign["tf-plugin-registered-twice"].seen == 3


def test_tensorrt_absent_is_not_a_missing_cuda_library() -> None:
    exp = explain_text(TENSORRT_ABSENT)
    assert exp.root is None and exp.matches == []
    assert exp.scan.benign["tf-tensorrt-not-found"].seen == 3


def test_a_missing_cuda_runtime_next_to_tensorrt_is_still_the_root() -> None:
    exp = explain_text(CUDART_MISSING)
    assert exp.root is not None and "libcudart.so.11.0" in exp.root.text
    assert top(exp)[0] == "cuda-libs-missing"
    assert exp.scan.benign["tf-tensorrt-not-found"].seen == 2


def test_noise_never_hides_the_real_failure() -> None:
    exp = explain_text(NNPACK_THEN_SIGILL)
    assert exp.root is not None and exp.root.text == "Illegal instruction (core dumped)"
    assert top(exp)[0] == "cpu-blas-runtime"
    exp = explain_text(TF_IMPORT_NOISE + JAX_TPU_INFO_THEN_CUSOLVER)
    assert exp.root is not None and "cuSolver internal error" in exp.root.text
    assert "jax-optional-backend-absent" in exp.scan.benign


def test_fallback_passes_over_harmless_lines() -> None:
    exp = explain_text(CPU_NOTICE_THEN_TRACEBACK)
    assert exp.root is None and exp.root_fallback == (5, "NotImplementedError")
    # a harmless line after the error, with "error" in it (dlerror), is passed over too
    exp = explain_text("KeyError: 'model'\n" + TENSORRT_ABSENT)
    assert exp.root_fallback == (1, "KeyError: 'model'")


def test_the_backend_that_was_asked_for_is_not_harmless() -> None:
    exp = explain_text(JAX_TPU_REQUESTED)
    assert exp.scan.benign == {}
    assert exp.root is not None and exp.root.text.startswith("RuntimeError: Unable to initialize backend")


def test_cli_says_no_error_and_why(tmp_path) -> None:
    log = tmp_path / "run.log"
    log.write_text(TF_IMPORT_NOISE + TENSORRT_ABSENT)
    out = cudoctor(["explain", str(log), "--no-live"])
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("No error found")
    assert "TensorRT is an optional add-on" in out.stdout and "tee run.log" in out.stdout
    doc = json.loads(cudoctor(["explain", str(log), "--no-live", "--format", "json"]).stdout)
    assert doc["root"] is None
    assert [h["id"] for h in doc["benign"]][:2] == ["tf-plugin-registered-twice", "absl-initializelog-notice"]
    assert {h["id"]: h["seen"] for h in doc["benign"]}["tf-tensorrt-not-found"] == 3


def test_cli_names_ignored_lines_under_a_real_error(tmp_path) -> None:
    log = tmp_path / "run.log"
    log.write_text(TF_IMPORT_NOISE + CUDART_MISSING)
    out = cudoctor(["explain", str(log), "--no-live"])
    assert out.returncode == 1 and out.stdout.startswith("Root error (line 7)")
    assert (
        "Ignored known harmless lines (TensorFlow registering" in out.stdout and "harmless:" not in out.stdout
    )
    verbose = cudoctor(["explain", str(log), "--no-live", "-v"]).stdout
    assert "harmless: TensorRT is an optional add-on" in verbose
    markdown = cudoctor(["explain", str(log), "--no-live", "--format", "markdown"]).stdout
    assert "### Known harmless lines" in markdown and "tee run.log" not in markdown


def test_harmless_lines_far_from_the_end_still_never_become_the_root() -> None:
    progress = "".join(f"Epoch {i}/100 - loss: 0.{i:04d}\n" for i in range(100))
    exp = explain_text(TENSORRT_ABSENT + progress)
    assert exp.root is None and exp.matches == []
    # the two lines an error anchor led to are seen; the TF-TRT notice, far from the end, is not looked at
    assert exp.scan.benign["tf-tensorrt-not-found"].seen == 2
    assert exp.root_fallback == (103, "Epoch 99/100 - loss: 0.0099")


def test_facts_only_problems_are_not_presented_as_the_logs_cause(tmp_path) -> None:
    log = tmp_path / "run.log"
    log.write_text("Epoch 1/2 - loss: 0.31\nEpoch 2/2 - loss: 0.12\n")
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"gpu": "GeForce RTX 3090", "framework_version": "torch 1.7.1+cu101"}))
    out = cudoctor(["explain", str(log), "--facts", str(facts), "--no-live"])
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("No error found in this log; its last line (2): Epoch 2/2")
    heading = "Problems found on this machine (from its facts; the log does not show them failing):"
    assert heading in out.stdout and "[arch-unsupported" in out.stdout and "tee run.log" in out.stdout
    doc = json.loads(
        cudoctor(["explain", str(log), "--facts", str(facts), "--no-live", "--format", "json"]).stdout
    )
    assert doc["root"]["error_looking"] is False and doc["causes"][0]["id"] == "arch-unsupported"
    markdown = cudoctor(
        ["explain", str(log), "--facts", str(facts), "--no-live", "--format", "markdown"]
    ).stdout
    assert (
        "No error found in this log." in markdown and heading in markdown and "**Root error**" not in markdown
    )
    # an unknown error line keeps the facts' problems as its possible causes, without the heading
    log.write_text("ValueError: my own bug\n")
    out = cudoctor(["explain", str(log), "--facts", str(facts), "--no-live"])
    assert "last error-looking line (1): ValueError" in out.stdout and heading not in out.stdout


XFORMERS_NO_TRITON = (
    "A matching Triton is not available, some optimizations will not be enabled.\n"
    "Error caught was: No module named 'triton'\n"
)


def test_xformers_without_triton_is_harmless_but_torch_compile_without_it_is_not() -> None:
    exp = explain_text(XFORMERS_NO_TRITON)
    assert exp.root is None and exp.root_fallback is None and "xformers-triton-absent" in exp.scan.benign
    # the vetoed line would otherwise match the Triton signature
    exp = explain_text(
        XFORMERS_NO_TRITON
        + "torch._inductor.exc.TritonMissing: Cannot find a working triton installation. Either the package is not installed or it is too old.\n"
    )
    assert exp.root is not None and exp.root.line == 3 and top(exp)[0] == "toolchain-not-found"
