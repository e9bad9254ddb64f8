"""torch ↔ torchvision/torchaudio CUDA builds, read from the libcudart their compiled library links
(DT_NEEDED), never by importing them. The libraries are real ELF files gcc builds here: a libcudart
stub with the soname a CUDA 13 (or 12) build links, and a torchvision library linked against it, as
the torchvision 0.29.2 wheel's _C_stable.so is (it names libcudart.so.13)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cudoctor import importers
from cudoctor.checks import all_checks, run_one
from cudoctor.facts import companions
from cudoctor.model import Status
from tests.conftest import build_shared_lib, explained, needs_gcc, run_check, stated

TORCH_CU128 = {"version": "2.8.0+cu128", "cuda": "12.8", "build": "cuda"}
TORCH_CPU = {"version": "2.13.0+cpu", "cuda": None, "build": "cpu"}


def site_with(tmp_path: Path, name: str, library: str, cudart: str | None) -> Path:
    """A site-packages holding package `name` whose compiled `library` links `cudart` (a soname)."""
    site = tmp_path / "site"
    pkg = site / name
    (pkg / Path(library).parent).mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    flags: list[str] = []
    if cudart is not None:
        stubs = tmp_path / "stubs"
        stubs.mkdir(exist_ok=True)
        build_shared_lib(
            stubs / cudart, "int cudaGetDeviceCount(int *n) { *n = 0; return 0; }\n", f"-Wl,-soname,{cudart}"
        )
        flags = ["-Wl,--no-as-needed", f"-L{stubs}", f"-l:{cudart}"]
    build_shared_lib(pkg / library, "int torchvision_ops(void) { return 1; }\n", *flags)
    return site


def companions_of(site: Path, name: str = "torchvision", version: str = "0.29.2") -> Any:
    return companions.collect([str(site)], {name: version})


@pytest.mark.parametrize(
    ("needed", "major"),
    [
        (["libc10.so", "libcudart.so.13", "libtorch_cuda.so"], "13"),
        (["libcudart.3eda8113.so.13"], "13"),  # auditwheel's name, as in torchvision 0.29.2's image_stable.so
        (["libcudart-1a2b3c4d.so.11.0"], "11"),
        (["libcudart.so.11.0", "libc10_cuda.so"], "11"),  # torchvision 0.15.2's _C.so (PyPI, CUDA 11.7)
        (["libcudart.so.12", "libtorch_cuda.so"], "12"),  # torchvision 0.16.0's _C.so (PyPI, CUDA 12.1)
        (["libc10.so", "libtorch_cpu.so"], None),
        (["libcudart_static.a"], None),
    ],
)
def test_the_cuda_major_is_read_from_the_libcudart_soname(needed: list[str], major: str | None) -> None:
    assert companions.cuda_major(needed) == major


@needs_gcc
def test_a_cuda_13_torchvision_beside_a_cuda_12_torch_is_an_error(tmp_path: Path) -> None:
    fact = companions_of(site_with(tmp_path, "torchvision", "_C_stable.so", "libcudart.so.13"))
    assert fact.value["torchvision"]["cuda_major"] == "13"
    result = run_check(
        "companion-cuda-mismatch",
        stated({}, python__torch_companions=fact.value, framework__torch=TORCH_CU128),
    )
    (f,) = result.findings
    assert f.severity.value == "error" and "built for CUDA 13 and torch 2.8.0+cu128 for CUDA 12.8" in f.title
    assert f.fix[0].endswith(
        "pip install --force-reinstall 'torch==2.8.0' torchvision --index-url https://download.pytorch.org/whl/cu128"
    )
    assert f.also == ("binary-incompatible",)


@needs_gcc
def test_a_cuda_torchvision_beside_a_cpu_torch_points_at_the_cpu_index(tmp_path: Path) -> None:
    fact = companions_of(site_with(tmp_path, "torchvision", "_C.so", "libcudart.3eda8113.so.12"))
    result = run_check(
        "companion-cuda-mismatch", stated({}, python__torch_companions=fact.value, framework__torch=TORCH_CPU)
    )
    (f,) = result.findings
    assert "is a CUDA 12 build and torch 2.13.0+cpu has no CUDA" in f.title
    assert f.fix[0].endswith("--index-url https://download.pytorch.org/whl/cpu")


@needs_gcc
def test_a_cpu_torchaudio_beside_a_cuda_torch_is_a_warning(tmp_path: Path) -> None:
    fact = companions_of(
        site_with(tmp_path, "torchaudio", "lib/libtorchaudio.abi3.so", None), "torchaudio", "2.8.0"
    )
    library = str(tmp_path / "site/torchaudio/lib/libtorchaudio.abi3.so")  # torchaudio 2.11's layout
    assert fact.value["torchaudio"] == {
        "version": "2.8.0",
        "library": library,
        "cuda_major": None,
        "evidence": f"{library} links no libcudart (a build without CUDA)",
    }
    result = run_check(
        "companion-cuda-mismatch",
        stated({}, python__torch_companions=fact.value, framework__torch=TORCH_CU128),
    )
    (f,) = result.findings
    assert f.severity.value == "warning" and "with arguments from the 'CUDA'" in f.title


@needs_gcc
@pytest.mark.parametrize(
    ("cudart", "torch"),
    [("libcudart.so.12", TORCH_CU128), (None, TORCH_CPU)],
    ids=["both-cuda-12", "both-cpu"],
)
def test_a_matching_pair_stays_silent(tmp_path: Path, cudart: str | None, torch: dict[str, Any]) -> None:
    fact = companions_of(site_with(tmp_path, "torchvision", "_C.so", cudart))
    result = run_check(
        "companion-cuda-mismatch", stated({}, python__torch_companions=fact.value, framework__torch=torch)
    )
    assert result.outcome == "ok"


def test_without_torchvision_or_torchaudio_the_check_does_not_apply(tmp_path: Path) -> None:
    assert companions.collect([str(tmp_path)], {"torch": "2.13.0"}).status is Status.ABSENT
    snap = stated({}, framework__torch=TORCH_CU128)
    snap.add(companions.collect([str(tmp_path)], {}))
    assert run_check("companion-cuda-mismatch", snap).outcome == "skipped"


def test_without_torchs_build_facts_the_pair_is_unknown(tmp_path: Path) -> None:
    snap = stated(
        {},
        python__torch_companions={"torchvision": {"version": "0.29.2", "library": "x", "cuda_major": "13"}},
    )
    assert run_check("companion-cuda-mismatch", snap).outcome == "unknown"


@needs_gcc
def test_an_unreadable_library_is_an_error_fact_not_a_crash(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "torchvision").mkdir(parents=True)
    (site / "torchvision" / "__init__.py").write_text("")
    (site / "torchvision" / "_C.so").write_bytes(b"not an ELF file")
    fact = companions_of(site)
    assert fact.status is Status.ERROR and "torchvision's compiled library cannot be read" in fact.detail


@needs_gcc
def test_the_finding_confirms_torchvisions_own_refusal(tmp_path: Path) -> None:
    fact = companions_of(site_with(tmp_path, "torchvision", "_C_stable.so", "libcudart.so.13"))
    line = (
        "RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA major versions. "
        "PyTorch has CUDA Version=12.8 and torchvision has CUDA Version=13.0.\n"
    )
    pair = explained(line, stated({}, python__torch_companions=fact.value, framework__torch=TORCH_CU128))
    assert pair.causes[0].id == "multiple-toolkits"
    assert [f.id for f in pair.causes[0].findings] == ["companion-cuda-mismatch"]
    # the same finding says nothing about an unrelated error
    other = explained(
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
        stated({}, python__torch_companions=fact.value, framework__torch=TORCH_CU128),
    )
    assert all(f.id != "companion-cuda-mismatch" for c in other.causes for f in c.findings)


@pytest.fixture(scope="module")
def real_torchvision(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """torchvision 0.29.2 from PyPI (a CUDA 13 build, about 8 MB), installed without its dependencies."""
    target = tmp_path_factory.mktemp("torchvision-wheel")
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--target", str(target)]
    done = subprocess.run([*cmd, "torchvision==0.29.2"], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        pytest.skip(f"cannot install torchvision here: {done.stderr.strip().splitlines()[-1:]}")
    return target


def test_the_real_torchvision_wheel_reads_as_a_cuda_13_build(real_torchvision: Path) -> None:
    fact = companions.collect([str(real_torchvision)], {"torchvision": "0.29.2"})
    info = fact.value["torchvision"]
    assert info["library"].endswith("torchvision/_C_stable.so") and info["cuda_major"] == "13"
    result = run_check(
        "companion-cuda-mismatch",
        stated({}, python__torch_companions=fact.value, framework__torch=TORCH_CU128),
    )
    assert "built for CUDA 13 and torch 2.8.0+cu128 for CUDA 12.8" in result.findings[0].title


@pytest.mark.parametrize(
    ("versions", "want"),
    [
        ({"torchvision": "0.16.0+cu118"}, {"cuda_major": "11", "cuda": "11.8"}),
        ({"torchaudio": "2.1.0+cu121"}, {"cuda_major": "12", "cuda": "12.1"}),
        ({"torchvision": "0.6.0+cu92"}, {"cuda_major": "9", "cuda": "9.2"}),
        ({"torchvision": "0.12.0+cpu"}, {"cuda_major": None, "cuda": None}),
    ],
)
def test_a_reports_version_tag_gives_the_cuda_build(versions: dict[str, str], want: dict[str, Any]) -> None:
    (info,) = companions.from_version_tags(versions).value.values()
    assert {k: info[k] for k in want} == want


@pytest.mark.parametrize("version", ["0.16.0", "0.16.0+rocm5.6", "0.16.0+git1234abc"])
def test_a_version_without_a_cuda_or_cpu_tag_says_nothing(version: str) -> None:
    assert companions.from_version_tags({"torchvision": version}).status is Status.ABSENT


def report_findings(path: Path) -> list[Any]:
    snap = importers.load_report(str(path))
    chk = next(c for c in all_checks() if c.id == "companion-cuda-mismatch")
    return list(run_one(chk, snap).findings)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (  # m-bain/whisperX#320: torch from the cu117 index, torchvision from cu118 (before 0.16: minors too)
            "torch==2.0.1+cu117\ntorchvision==0.15.2+cu118\n",
            "was built for CUDA 11.8 and torch 2.0.1+cu117 for CUDA 11.7: this torchvision refuses another minor",
        ),
        (  # cj-mills/pytorch-mask-rcnn-tutorial-code#1: majors differ
            "Package     Version\n----------- -----------\ntorch       2.1.0+cu118\ntorchvision 0.16.0+cu121\n",
            "was built for CUDA 12 and torch 2.1.0+cu118 for CUDA 11.8",
        ),
        (  # conda: the pytorch channel's build strings
            "pytorch       2.1.0    py3.10_cuda12.1_cudnn8.9.2_0    pytorch\n"
            "torchvision   0.16.0   py310_cu118    pytorch\n",
            "torchvision 0.16.0+cu118 was built for CUDA 11 and torch",
        ),
        (  # torchaudio compares major.minor (its 2.11.0 wheel does)
            "torch==2.8.0+cu128\ntorchaudio==2.8.0+cu126\n",
            "torchaudio 2.8.0+cu126 was built for CUDA 12.6 and torch 2.8.0+cu128 for CUDA 12.8",
        ),
    ],
    ids=["pip-freeze-minor", "pip-list-major", "conda-list", "torchaudio-minor"],
)
def test_a_pasted_package_list_shows_the_pair_that_does_not_match(
    tmp_path: Path, text: str, says: str
) -> None:
    report = tmp_path / "report.txt"
    report.write_text(text)
    (f,) = report_findings(report)
    assert says in f.title and f.subject == "torch"


@pytest.mark.parametrize(
    "name",
    [
        "collect_env_windows_titan_rtx.txt",  # torch 1.5.0+cu101 with torchvision 0.6.0+cu101
        "conda_list_grep_pytorch_cpu_and_cuda.txt",  # CPU pytorch, torchvision and torchaudio
        "conda_list_grep_pytorch_cuda.txt",  # pytorch cuda11.3 with torchaudio py38_cu113
    ],
)
def test_real_reports_of_matching_pairs_stay_silent(name: str) -> None:
    assert report_findings(Path(__file__).parents[1] / "fixtures" / "reports" / name) == []


def test_newer_releases_that_compare_majors_only_stay_silent_on_a_minor(tmp_path: Path) -> None:
    report = tmp_path / "freeze.txt"
    report.write_text("torch==2.8.0+cu128\ntorchvision==0.23.0+cu126\n")
    assert report_findings(report) == []


def _release(facts: dict[str, str]) -> list[str]:
    from cudoctor import api

    return [f.id for f in api.check(facts, live=False).findings if f.cause == "requirements-unmet"]


def test_a_torchvision_of_another_torch_release_is_a_requirement_unmet() -> None:
    fired = {
        "framework_version": "torch 2.4.0+cu121",
        "other": "torchvision 0.20.1+cu124 (pip show torchvision)",
    }
    assert _release(fired) == ["companion-release-mismatch"]
    assert _release({"framework_version": "torch 2.4.0+cu121", "other": "torchvision 0.19.1+cu121"}) == []
    assert (
        _release({"framework_version": "torch 2.13.0", "other": "torchvision 0.28.0"}) == []
    )  # past the table
    assert _release({"framework_version": "torch 2.4.0"}) == []  # no torchvision stated


def test_an_untagged_stated_torchvision_says_nothing_of_its_cuda() -> None:
    from cudoctor import api

    found = api.check(
        {"framework_version": "torch 2.6.0+cu124", "other": "torchvision 0.21.0"}, live=False
    ).findings
    assert not [f for f in found if f.id == "companion-cuda-mismatch"]
