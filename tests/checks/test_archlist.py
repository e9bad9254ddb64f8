"""torch-cuda-arch-list: TORCH_CUDA_ARCH_LIST read as the installed torch.utils.cpp_extension reads
it. The accepted architectures come from the releases' own cpp_extension.py: recorded for older
releases (tests/fixtures/torch_arches), live for the installed one, whose own parser is run to
check the reading."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cudoctor.checks import archlist
from cudoctor.facts import buildinfo
from cudoctor.model import Severity
from tests.conftest import run_check, stated
from tests.explainer.helpers import rooted, top

ARCHES = Path(__file__).parents[1] / "fixtures" / "torch_arches"
A100 = {"index": 0, "name": "NVIDIA A100-SXM4-80GB", "cc": "8.0", "memory_total_mib": 81920}
RTX4090 = {"index": 0, "name": "NVIDIA GeForce RTX 4090", "cc": "8.9", "memory_total_mib": 24564}


def _arches(version: str) -> dict[str, Any]:
    return dict(json.loads((ARCHES / f"{version}.json").read_text()))


def _torch(version: str) -> dict[str, Any]:
    return {
        "version": f"{version}+cu117",
        "build": "cuda",
        "cuda": "11.7",
        "cpp_extension_arches": _arches(version),
    }


def _findings(value: str, version: str = "2.4.0", gpus: list[dict[str, Any]] | None = None) -> list[Any]:
    extra: dict[str, Any] = {"gpu__devices": gpus} if gpus is not None else {}
    snap = stated({}, env={"TORCH_CUDA_ARCH_LIST": value}, framework__torch=_torch(version), **extra)
    return list(run_check("torch-cuda-arch-list", snap).findings)


@pytest.mark.parametrize(
    ("value", "version", "says"),
    [
        (
            "5.2 6.0 6.1 7.0 7.5 8.0 8.6 9.0+PTX",
            "1.13.0",
            "torch 1.13.0 does not know 9.0+PTX (its newest is 8.6",
        ),
        ("8.0;8.9", "1.13.0", "torch 1.13.0 does not know 8.9"),
        ("8.6,8.9", "2.4.0", "commas do not separate entries"),
        ("sm_86", "2.4.0", "not sm_86 or 86"),
        ("86", "2.4.0", "not sm_86 or 86"),
        ("8.0;8.6;", "2.4.0", "an empty entry"),
        ("8.0 ", "2.4.0", "an empty entry"),
        ("8.6+ptx", "2.4.0", "write +PTX in capitals"),
        ("Hopper", "1.13.0", "'Hopper' is neither an architecture nor a name this torch knows"),
        ("native", "2.4.0", "'native' is neither"),  # 'native' came later
    ],
)
def test_an_entry_the_installed_torch_refuses_is_an_error(value: str, version: str, says: str) -> None:
    [f] = _findings(value, version)
    assert f.severity is Severity.ERROR and f.cause == "env-setting-invalid"
    assert says in f.title and "Unknown CUDA arch" in f.title


def test_the_step_keeps_the_entries_torch_accepts() -> None:
    [f] = _findings("5.2 6.0 6.1 7.0 7.5 8.0 8.6 9.0+PTX", "1.13.0")
    assert f.fix[0].startswith("export TORCH_CUDA_ARCH_LIST='5.2;6.0;6.1;7.0;7.5;8.0;8.6'")


@pytest.mark.parametrize(
    ("value", "version"),
    [("8.0;8.6+PTX", "1.13.0"), ("Ampere", "1.10.0"), ("Ada Hopper", "2.0.0"), ("7.5 8.0 8.6 9.0a", "2.4.0")],
)
def test_entries_the_installed_torch_accepts_stay_silent(value: str, version: str) -> None:
    assert _findings(value, version) == []


def test_a_list_that_leaves_out_this_machines_gpu_warns() -> None:
    [f] = _findings("7.0;7.5", "2.4.0", [A100])
    assert f.severity is Severity.WARNING and f.cause == "arch-unsupported"
    assert "leaves out GPU 0 NVIDIA A100-SXM4-80GB (compute capability 8.0)" in f.title
    assert f.fix[0].startswith("export TORCH_CUDA_ARCH_LIST='7.0;7.5;8.0'")
    assert _findings("8.0", "2.4.0", [RTX4090]) == []  # sm_80 code runs on 8.9
    assert _findings("7.5+PTX", "2.4.0", [A100]) == []  # the driver JIT-compiles the PTX
    assert _findings("9.0a", "2.4.0", [RTX4090]) != []  # arch-specific code runs only on 9.0


def test_missing_facts_make_it_silent_or_unknown() -> None:
    no_env = stated({}, framework__torch=_torch("2.4.0"))
    assert run_check("torch-cuda-arch-list", no_env).outcome == "unknown"
    unread = dict(_torch("2.4.0"), cpp_extension_arches=None)
    snap = stated({}, env={"TORCH_CUDA_ARCH_LIST": "sm_86"}, framework__torch=unread)
    assert run_check("torch-cuda-arch-list", snap).findings == ()
    cpu = {"version": "2.4.0+cpu", "build": "cpu", "cuda": None}
    snap = stated({}, env={"TORCH_CUDA_ARCH_LIST": "sm_86"}, framework__torch=cpu)
    assert run_check("torch-cuda-arch-list", snap).findings == ()


def test_every_recorded_release_reads() -> None:
    for path in ARCHES.glob("*.json"):
        arches = json.loads(path.read_text())
        assert "8.0" in arches["supported"] and ["Ampere", "8.0;8.6+PTX"] in arches["named"]


PARSER = """
import json, os, sys
from torch.utils.cpp_extension import _get_cuda_arch_flags
out = []
for value in json.loads(sys.argv[1]):
    os.environ["TORCH_CUDA_ARCH_LIST"] = value
    try:
        _get_cuda_arch_flags()
        out.append(False)
    except ValueError:
        out.append(True)
print(json.dumps(out))
"""


def test_the_reading_agrees_with_the_installed_torchs_own_parser() -> None:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        pytest.skip("torch is not installed")
    arches = buildinfo.cpp_extension_arches(
        os.path.join(os.path.dirname(spec.origin), "utils", "cpp_extension.py")
    )
    assert arches is not None
    values = [
        "8.0;8.6+PTX",
        "Ampere",
        "Ada Hopper",
        "8.6,8.9",
        "sm_86",
        "86",
        "8.0;8.6;",
        "8.6+ptx",
        "Hopper+PTX",
        "7.0 7.5",
    ]
    done = subprocess.run(
        [sys.executable, "-c", PARSER, json.dumps(values)], capture_output=True, text=True, timeout=300
    )
    real = json.loads(done.stdout.strip().splitlines()[-1])
    valid = set(arches["supported"]) | {a + "+PTX" for a in arches["supported"]}
    ours = [any(e not in valid for e in archlist.expand(v, arches["named"])) for v in values]
    assert dict(zip(values, ours, strict=True)) == dict(zip(values, real, strict=True))
    assert real[:3] == [False, False, False] and real[3:7] == [True, True, True, True]


@pytest.mark.parametrize(
    ("entry", "first"),
    [
        ("9.0+PTX", "arch-unsupported"),
        ("8.9", "arch-unsupported"),
        ("8.6,8.9", "env-setting-invalid"),
        ("", "env-setting-invalid"),
    ],
)
def test_explain_tells_a_gpu_newer_than_torch_from_a_list_written_wrong(entry: str, first: str) -> None:
    exp = rooted(
        f"ValueError: Unknown CUDA arch ({entry}) or GPU not supported",
        "arch-unsupported/cpp-extension-unknown-arch",
    )
    assert top(exp)[0] == first


def test_a_cuda_torch_layout_carries_its_own_cpp_extension_arches(tmp_path: Path) -> None:
    """read_torch on a CUDA torch laid out in a temporary directory, with the installed torch's own
    cpp_extension.py: the fact holds what that file accepts."""
    from cudoctor.facts.frameworks import read_torch
    from cudoctor.facts.loader import Loader

    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        pytest.skip("torch is not installed")
    root = tmp_path / "torch"
    (root / "utils").mkdir(parents=True)
    (root / "lib").mkdir()
    (root / "version.py").write_text("__version__ = '2.13.0+cu128'\ncuda = '12.8'\nhip = None\n")
    real = Path(spec.origin).parent / "utils" / "cpp_extension.py"
    (root / "utils" / "cpp_extension.py").write_text(real.read_text())
    info = read_torch(str(root), None, Loader(ld_library_path=(), ldcache={}), platform="linux")
    assert info["build"] == "cuda"
    assert info["cpp_extension_arches"] == buildinfo.cpp_extension_arches(str(real))
    assert "8.0" in info["cpp_extension_arches"]["supported"]
    (root / "utils" / "cpp_extension.py").unlink()
    assert (
        read_torch(str(root), None, Loader(ld_library_path=(), ldcache={}), platform="linux")[
            "cpp_extension_arches"
        ]
        is None
    )
