"""arch-unsupported: SASS runs within its compute-capability major (sm_80 on 8.6 and 8.9), never on an
older minor (sm_86 on 8.0), arch-specific variants (sm_90a) only on their own GPU."""

from __future__ import annotations

from typing import Any

import pytest

from cudoctor import knowledge
from cudoctor.model import Severity
from tests.checks.helpers import outcome
from tests.conftest import finding_ids, run_check, stated

SUPPORT = [
    ((8, 6), ["sm_80"], "sass"),
    ((8, 9), ["sm_80"], "sass"),
    ((8, 9), ["8.0", "8.6"], "sass"),
    ((8, 0), ["sm_86"], "none"),
    ((8, 0), ["sm_86", "compute_86"], "none"),
    ((9, 0), ["sm_90a"], "sass"),
    ((10, 0), ["sm_90a"], "none"),
    ((10, 3), ["sm_100a"], "none"),
    ((10, 0), ["sm_90a", "compute_90a"], "none"),
    ((9, 0), ["sm_80", "compute_80"], "ptx"),
    ((9, 0), ["7.5", "8.0+PTX"], "ptx"),
    ((7, 5), ["sm_70"], "sass"),
    ((9, 0), ["8.0", "9.0+PTX"], "sass"),  # '9.0+PTX' holds 9.0 SASS as well as the PTX
    ((8, 6), ["8.0+PTX"], "sass"),
    ((12, 0), ["8.0", "9.0+PTX"], "ptx"),
]


@pytest.mark.parametrize(("cc", "archs", "want"), SUPPORT)
def test_arch_support(cc: tuple[int, int], archs: list[str], want: str) -> None:
    assert knowledge.arch_support(cc, archs) == want


def torch_build(cuda: str, archs: list[str]) -> dict[str, Any]:
    return {"version": "2.5.1", "cuda": cuda, "build": "cuda", "archs": archs}


@pytest.mark.parametrize("gpu", ["RTX 3090", "RTX 4090", "A100"])
def test_a_gpu_of_the_builds_newest_sass_major_runs_it(gpu: str) -> None:
    snap = stated({"gpu": gpu}, framework__torch=torch_build("12.4", ["sm_70", "sm_75", "sm_80"]))
    assert run_check("arch-unsupported", snap).outcome == "ok"


def test_a_gpu_past_the_builds_cuda_in_the_same_major_is_a_note_not_an_error() -> None:
    """sm_80 SASS from CUDA 11.0 on an RTX 3090 (8.6): it runs; only the libraries predate the GPU."""
    snap = stated({"gpu": "RTX 3090"}, framework__torch=torch_build("11.0", ["sm_75", "sm_80"]))
    r = run_check("arch-unsupported", snap)
    assert finding_ids(r) == ["arch-newer-than-build-cuda"]
    assert r.findings[0].severity is Severity.INFO and "8.x" in r.findings[0].title


def test_without_an_arch_list_the_same_major_past_the_cuda_is_a_note_with_the_command() -> None:
    """A source build of torch (no wheel's list to read) with CUDA 11.0 on an RTX 3090."""
    snap = stated(
        {"gpu": "RTX 3090"}, framework__torch={"version": "2.1.0a0+git", "cuda": "11.0", "build": "cuda"}
    )
    r = run_check("arch-unsupported", snap)
    assert finding_ids(r) == ["arch-newer-than-build-cuda"] and r.findings[0].severity is Severity.INFO
    assert "get_arch_list" in r.findings[0].fix[0]


@pytest.mark.parametrize(
    ("gpu", "release", "want", "severity"),
    [
        # TensorFlow's wheels list sm_35..sm_75 + compute_80 (2.4-2.14): 8.6 and 8.9 JIT-compile the PTX
        ("RTX 3090", "2.4.0", "arch-ptx-jit-only", Severity.INFO),
        (
            "RTX 4060",
            "2.10.0",
            "arch-ptx-jit-only",
            Severity.INFO,
        ),  # past CUDA 11.2, but its 8.x libraries run
        ("Tesla K80", "2.14.0", None, None),  # sm_35 SASS runs on 3.7
        ("Tesla K80", "2.15.0", "arch-unsupported", Severity.ERROR),  # 2.15 starts at sm_50
        ("GTX 970", "2.16.1", None, None),
        ("GTX 970", "2.17.0", "arch-unsupported", Severity.ERROR),  # 2.17 starts at sm_60
        ("H100", "2.17.0", "arch-ptx-jit-only", Severity.INFO),  # compute_90
        ("RTX 4090", "2.18.0", None, None),  # sm_89
    ],
)
def test_tensorflow_wheels_arch_lists(
    gpu: str, release: str, want: str | None, severity: Severity | None
) -> None:
    """The lists tools/read_tf_archs.py read from each release's PyPI wheel (build_info.py)."""
    r = run_check("arch-unsupported", stated({"gpu": gpu, "framework_version": f"tensorflow {release}"}))
    arch = [f for f in r.findings if f.cause == "arch-unsupported"]  # not cuFFT 11.2's on the RTX 4060
    assert [f.id for f in arch] == ([want] if want else [])
    if severity is not None:
        assert arch[0].severity is severity and "sm_" in " ".join(arch[0].evidence)


def test_a_newer_major_or_an_older_minor_is_still_an_error() -> None:
    older_minor = stated({"gpu": "A100"}, framework__torch=torch_build("12.4", ["sm_86"]))
    r = run_check("arch-unsupported", older_minor)
    assert finding_ids(r) == ["arch-unsupported"] and r.findings[0].severity is Severity.ERROR
    arch_specific = stated({"gpu": "B200"}, framework__torch=torch_build("12.8", ["sm_90a"]))
    assert run_check("arch-unsupported", arch_specific).findings[0].severity is Severity.ERROR
    tf1 = stated({"gpu": "RTX 3090", "framework_version": "tensorflow-gpu 1.13.1"})
    assert run_check("arch-unsupported", tf1).findings[0].severity is Severity.ERROR


def test_missing_facts() -> None:
    assert (
        run_check("arch-unsupported", stated({"framework_version": "torch 2.5.1+cu124"})).outcome == "unknown"
    )
    assert run_check("arch-unsupported", stated({"gpu": "RTX 3090"})).outcome == "ok"  # no CUDA framework


MIN_37 = "PyTorch no longer supports this GPU because it is too old. The minimum cuda capability supported by this library is 3.7."


def test_a_gpu_below_the_minimum_the_frameworks_message_states() -> None:
    below = stated({"gpu": "GeForce GTX 660 Ti", "framework_version": "PyTorch (conda env)", "other": MIN_37})
    r = run_check("arch-unsupported", below)
    assert finding_ids(r) == ["arch-unsupported"] and "3.7 and newer" in r.findings[0].title
    above = stated({"gpu": "GTX 1080", "framework_version": "PyTorch (conda env)", "other": MIN_37})
    assert finding_ids(run_check("arch-unsupported", above)) == []
    no_floor = stated({"gpu": "GeForce GTX 660 Ti", "framework_version": "PyTorch (conda env)"})
    assert finding_ids(run_check("arch-unsupported", no_floor)) == []  # nothing known of the build


def test_a_gpu_the_frameworks_message_refuses() -> None:
    said = "Quadro P2000 with CUDA capability sm_61 is not compatible with the current PyTorch installation."
    r = run_check("arch-unsupported", stated({"gpu": "Quadro P2000", "other": said}))
    assert (
        finding_ids(r) == ["arch-unsupported"] and "6.1" in r.findings[0].title
    )  # the message names its capability
    too_old = "Found GPU0 Tesla K20m which is of cuda capability 3.5. PyTorch no longer supports this GPU because it is too old."
    assert finding_ids(run_check("arch-unsupported", stated({"gpu": "Tesla K20m", "other": too_old}))) == [
        "arch-unsupported"
    ]
    other_gpu = (
        "GeForce RTX 4090 with CUDA capability sm_89 is not compatible with the current PyTorch installation."
    )
    assert finding_ids(run_check("arch-unsupported", stated({"gpu": "Tesla T4", "other": other_gpu}))) == []
    assert finding_ids(run_check("arch-unsupported", stated({"gpu": "Quadro P2000"}))) == []


def test_a_cupy_built_from_source_compiles_for_the_toolkit_it_found() -> None:
    """A Quadro K2000 (3.0) with CuPy 8.4 built from source against CUDA 11.2, which builds 3.5 and newer."""
    source = stated(
        {
            "framework_version": "CuPy 8.4 (pip install cupy, built from source)",
            "system_cuda": "11.2",
            "gpu": "Quadro K2000",
        }
    )
    r = run_check("arch-unsupported", source)
    assert finding_ids(r) == ["arch-unsupported"] and "too old" in r.findings[0].title
    assert source.value("framework.cupy")["cuda_inferred"].startswith("the source package cupy")
    # a binary wheel names its own CUDA; two toolkits do not say which one built it; a GPU it builds for is fine
    wheel = stated({"framework_version": "cupy-cuda11x 12.0", "system_cuda": "11.2", "gpu": "Quadro K2000"})
    assert "cuda_inferred" not in (wheel.value("framework.cupy") or {})
    two = stated({"framework_version": "cupy 8.4", "system_cuda": "10.2 and 11.2", "gpu": "Quadro K2000"})
    assert two.value("framework.cupy").get("cuda") is None
    fine = stated({"framework_version": "cupy 8.4", "system_cuda": "11.2", "gpu": "GeForce GTX 1080"})
    assert finding_ids(run_check("arch-unsupported", fine)) == []


def test_a_variant_stated_without_its_release_is_judged_by_every_wheel_of_that_variant() -> None:
    """jamiepine/voicebox#994: a GTX 1070 (6.1) under 'PyTorch cu128'; no cu128 wheel of any release holds
    Pascal (cu126 does). The number before 'PyTorch' is voicebox's version, not torch's."""
    pascal = stated({"gpu": "GTX1070 (Pascal)", "framework_version": "voicebox 4.0 with PyTorch cu128 build"})
    assert pascal.value("framework.torch")["version"] is None
    r = run_check("arch-unsupported", pascal)
    assert finding_ids(r) == ["arch-unsupported"] and "release was not stated" in r.findings[0].evidence[0]
    turing = stated(
        {"gpu": "RTX 2080", "framework_version": "PyTorch cu128"}
    )  # 7.5: some cu128 wheels hold it
    assert finding_ids(run_check("arch-unsupported", turing)) == []
    assert knowledge.torch_variant_archs("cu999") is None


def test_tensorflow_2_3_has_no_code_for_compute_capability_5_0_and_jits_on_turing() -> None:
    """TensorFlow 2.3's GPU wheels carry sm_35, sm_37, sm_52, sm_60, sm_61 and compute_70 (their build_info):
    a GTX 950M/960M or 940MX (5.0) cannot run it (four blind check scenarios of sets 20 and 23); a Turing GPU
    runs its compute_70 PTX through the JIT, by design (a note, not a warning: blind set 20's TITAN RTX)."""
    old = stated({"framework_version": "tensorflow-gpu 2.3.0", "gpu": "GeForce GTX 960M"})
    [f] = run_check("arch-unsupported", old).findings
    assert f.severity is Severity.ERROR and "sm_52" in " ".join(f.evidence)
    turing = stated({"framework_version": "tensorflow 2.3.0", "gpu": "TITAN RTX"})
    assert [g.severity for g in run_check("arch-unsupported", turing).findings] == [Severity.INFO]
    assert (
        run_check(
            "arch-unsupported", stated({"framework_version": "tensorflow 2.3.0", "gpu": "GTX 1080"})
        ).findings
        == ()
    )


def test_a_gpu_below_every_official_build_of_the_framework() -> None:
    """TensorFlow's and JAX's GPU builds never went below compute capability 3.5: a GRID K520 (3.0) gets nothing
    from any release, even one not named (tensorflow/tensorflow#25); a 3.5 GPU is not flagged by this rule; a CPU
    build is not; no GPU, nothing to compare."""
    k520 = stated(
        {
            "gpu": "GRID K520",
            "compute_capability": "3.0",
            "framework_version": "TensorFlow GPU pip binary (Nov 2015)",
        }
    )
    r = run_check("arch-unsupported", k520)
    assert finding_ids(r) == ["arch-unsupported"] and "3.5" in r.findings[0].title
    assert "build it from source" in r.findings[0].fix[0]
    jax = stated({"gpu": "Quadro K4000", "framework_version": "jaxlib (2019 GPU wheels)"})
    assert finding_ids(run_check("arch-unsupported", jax)) == ["arch-unsupported"]
    k40 = stated({"gpu": "Tesla K40m", "framework_version": "TensorFlow GPU pip binary"})
    assert finding_ids(run_check("arch-unsupported", k40)) == []
    cpu = stated({"gpu": "GRID K520", "compute_capability": "3.0", "framework_version": "tensorflow-cpu"})
    assert finding_ids(run_check("arch-unsupported", cpu)) == []
    assert outcome("arch-unsupported", stated({"framework_version": "tensorflow"}))[0] == "unknown"


def test_a_fermi_gpu_is_below_every_pytorch_build() -> None:
    """No official PyTorch binary ran below compute capability 3.0 (torch/cuda/__init__.py: 'capability == (3, 0)
    or major < 3' is too old): a Fermi card gets nothing from a torch named only by its API (set 53,
    pytorch/pytorch.github.io#72), nor from a release whose arch list is unknown; a Kepler 3.0 is not flagged here."""
    fermi = stated(
        {"gpu": "GeForce GM630m", "compute_capability": "2.1", "other": "torch.cuda.is_available() => True"}
    )
    r = run_check("arch-unsupported", fermi)
    assert finding_ids(r) == ["arch-unsupported"] and "3.0" in r.findings[0].title
    kepler = stated(
        {"gpu": "GeForce GT 740M", "compute_capability": "3.0", "other": "torch.cuda.is_available()"}
    )
    assert finding_ids(run_check("arch-unsupported", kepler)) == []
    assert (
        outcome("arch-unsupported", stated({"other": "torch.cuda.is_available() => False"}))[0] == "unknown"
    )


def test_a_library_whose_kernels_start_above_the_gpu() -> None:
    """flash-attn 2 builds for Ampere and newer, 1.x for Turing and Ampere, vLLM for 7.0 and newer
    (knowledge/gpu_floors.toml): MInference#51's V100S, flash-attention#562's Quadro RTX 8000."""
    v100s = stated(
        {"gpu": "Tesla V100S", "framework_version": "flash-attn==2.6.0.post1, transformers==4.42.4"}
    )
    [f] = run_check("arch-unsupported", v100s).findings
    assert f.id == "library-gpu-floor" and f.severity.value == "warning" and "8.0" in f.title
    assert "sdpa" in f.fix[0]
    rtx8000 = stated({"gpu": "Quadro RTX 8000", "framework_version": "flash attention 2"})
    assert finding_ids(run_check("arch-unsupported", rtx8000)) == ["library-gpu-floor"]
    fa1 = stated({"gpu": "Tesla T4", "framework_version": "flash-attn==1.0.9"})
    assert finding_ids(run_check("arch-unsupported", fa1)) == []
    a100 = stated({"gpu": "A100", "framework_version": "flash-attn==2.6.0"})
    assert finding_ids(run_check("arch-unsupported", a100)) == []
    pascal = stated({"gpu": "GTX 1080 Ti", "framework_version": "vllm 0.9.1 (pip) with torch 2.7.0"})
    assert "library-gpu-floor" in finding_ids(run_check("arch-unsupported", pascal))
    assert outcome("arch-unsupported", stated({"framework_version": "flash-attn==2.6.0"}))[0] == "unknown"


def test_a_builds_architectures_stated_as_numbers_are_held_against_the_gpu() -> None:
    """spacemeshos/gpu-post#15 (set 56): a library 'compiled with CUDA compute 50, 60, and 70' on a K80 (3.7); the
    same build runs on a T4 (7.5 runs sm_70's code); no GPU stated, nothing to compare."""
    lib = {"framework_version": "spacemesh gpu-post lib compiled with CUDA compute 50, 60, and 70"}
    r = run_check("arch-unsupported", stated({**lib, "gpu": "TESLA K80", "compute_capability": "3.7"}))
    assert finding_ids(r) == ["arch-unsupported"] and "sm_50, sm_60, sm_70" in r.findings[0].title
    assert "CMAKE_CUDA_ARCHITECTURES=37" in r.findings[0].fix[0]
    assert finding_ids(run_check("arch-unsupported", stated({**lib, "gpu": "Tesla T4"}))) == []
    assert outcome("arch-unsupported", stated(lib))[0] == "unknown"


@pytest.mark.parametrize(
    ("name", "cc"),
    [
        ("GeForce GT 540M (GF108M)", "2.1"),
        ("Quadro P2000 (GP106GL)", "6.1"),
        ("NVIDIA GB202", "12.0"),
        ("an old Fermi card", "2.0"),
        ("TU117", "7.5"),
    ],
)
def test_chip_codes_and_single_cc_architectures_give_a_compute_capability(name: str, cc: str) -> None:
    hit = knowledge.gpu_cc(name)
    assert hit is not None and hit[0] == cc


@pytest.mark.parametrize("name", ["Kepler GPU", "Pascal card", "Blackwell GPU", "GFX 1030"])
def test_architectures_of_several_compute_capabilities_give_none(name: str) -> None:
    assert knowledge.gpu_cc(name) is None


def test_a_gpu_below_tritons_floor_fires_where_the_facts_say_the_work_uses_triton() -> None:
    """oobabooga/textgen#5665 (set 46): a GTX 1080 Ti (6.1) under a loader with a Triton backend; Triton builds for
    7.0 and newer (torch/_inductor's GPUTooOldForTriton)."""
    pascal = {"gpu": "NVIDIA GeForce GTX 1080 Ti", "driver": "550.54"}
    r = run_check("arch-unsupported", stated({**pascal, "other": "HQQ model loader (Triton backend)"}))
    assert finding_ids(r) == ["arch-unsupported"] and r.findings[0].severity is Severity.WARNING
    assert "TORCHDYNAMO_DISABLE=1" in r.findings[0].fix[0]
    compiled = stated(
        {**pascal, "framework_version": "torch 2.3.0+cu121", "other": "model = torch.compile(model)"}
    )
    assert finding_ids(run_check("arch-unsupported", compiled)) == ["arch-unsupported"]
    assert finding_ids(run_check("arch-unsupported", stated(pascal))) == []  # no Triton said
    volta = stated({"gpu": "Tesla V100", "other": "torch.compile with the inductor backend"})
    assert finding_ids(run_check("arch-unsupported", volta)) == []  # at the floor


def test_a_gpu_below_the_ngc_releases_floor_is_arch_unsupported() -> None:
    """NGC releases support compute capability 6.0 and up (7.5 from 25.01): a K80 under 21.07, a V100 under 25.01
    (their release notes, knowledge/ngc.toml); an A100 under 25.01 is fine; no NGC release, nothing."""
    k80 = run_check(
        "arch-unsupported", stated({"gpu": "Tesla K80", "container": "NGC PyTorch 21.07 container"})
    )
    assert [f.subject for f in k80.findings] == ["container"] and "6.0" in k80.findings[0].title
    v100 = run_check(
        "arch-unsupported", stated({"gpu": "Tesla V100", "container": "nvcr.io/nvidia/pytorch:25.01-py3"})
    )
    assert "24.10" in v100.findings[0].fix[0]
    a100 = stated({"gpu": "A100", "container": "nvcr.io/nvidia/pytorch:25.01-py3"})
    assert run_check("arch-unsupported", a100).findings == ()
    assert run_check("arch-unsupported", stated({"gpu": "Tesla K80", "container": "docker"})).findings == ()


def test_a_builds_cuda_stated_alone_that_predates_the_gpus_major_warns() -> None:
    """vladmandic/sdnext#3896-like: a CUDA 12.6 build (framework unnamed) on an RTX 5090: CUDA 12.6 compiles up
    to 9.0, so the build has no native code for 12.0."""
    facts = {"gpu": "NVIDIA GeForce RTX 5090", "framework_cuda": "12.6", "driver": "576.02"}
    found = [
        f
        for f in run_check("arch-unsupported", stated(facts)).findings
        if f.id == "arch-newer-than-build-cuda"
    ]
    assert found and found[0].severity == Severity.WARNING and "cu128" in found[0].fix[0]
    for quiet in ({**facts, "gpu": "NVIDIA GeForce RTX 4090"}, {**facts, "gpu": ""}):
        assert not [f for f in run_check("arch-unsupported", stated(quiet)).findings], quiet


@pytest.mark.parametrize(
    ("gpu", "cuda", "fires"),
    [
        ("GTX 1070", "13.1", True),  # CUDA 13 compiles from 7.5 on (scragnog/HOT-Step-CPP#63, blind set 64)
        ("Tesla V100", "13.0", True),
        ("RTX 3090", "13.1", False),
        ("GTX 1070", "12.8", False),
        (None, "13.1", False),  # the GPU unknown
    ],
)
def test_a_build_whose_stated_cuda_no_longer_compiles_for_the_gpu(
    gpu: str | None, cuda: str, fires: bool
) -> None:
    facts = {
        "framework_version": "an application's cuda13.1 release bundle (ggml-cuda.dll)",
        "framework_cuda": cuda,
    }
    r = run_check("arch-unsupported", stated({**facts, **({"gpu": gpu} if gpu else {})}))
    assert finding_ids(r) == (["arch-unsupported"] if fires else [])
    if fires:
        assert r.findings[0].severity is Severity.ERROR and "12.9" in r.findings[0].fix[0]


@pytest.mark.parametrize(
    ("gpu", "build", "broken"),
    [
        ("RTX 4090", "torch 1.13.1+cu117", True),  # cuFFT 11.7 on 8.9 (pytorch/pytorch#88038)
        ("RTX 6000 Ada", "pytorch-cuda=11.7", True),  # m-bain/whisperX#255 (blind set 64)
        ("RTX 3090", "torch 1.7.1+cu110", False),  # 8.6 past CUDA 11.0: no library known to fail
        ("RTX 4090", "torch 2.0.1+cu118", False),
        (
            "RTX 4090",
            "torch 2.0.1",
            False,
        ),  # PyPI's 2.0.1 (cu117) pins nvidia-cufft-cu11 10.9.0.58, CUDA 11.8's
        ("RTX 4090", "tensorflow 2.10.0", False),  # TensorFlow loads the cuFFT installed, not its build's
        ("RTX 4090", "torch 1.12.1+cu102", False),  # no code for 8.x at all: the architecture's error says it
    ],
)
def test_a_library_without_forward_compatibility_is_its_own_warning(
    gpu: str, build: str, broken: bool
) -> None:
    """The build's own code runs (the architecture note stays a note); the library that fails is a library-bug
    warning beside it."""
    r = run_check("arch-unsupported", stated({"gpu": gpu, "framework_version": build}))
    warned = [f for f in r.findings if f.id == "library-without-forward-compat"]
    assert bool(warned) is broken
    if broken:
        assert warned[0].cause == "library-bug" and warned[0].severity is Severity.WARNING
        assert "CUFFT_INTERNAL_ERROR" in warned[0].title and "11.8" in warned[0].fix[0]
        arch = [f for f in r.findings if f.cause == "arch-unsupported"]  # the build's own code runs: a note
        assert arch and all(f.severity is Severity.INFO and "cuFFT" not in f.title for f in arch)
