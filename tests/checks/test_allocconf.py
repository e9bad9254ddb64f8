"""torch-alloc-conf: PYTORCH_CUDA_ALLOC_CONF read as the installed torch reads it, and explain's
reading of the errors torch raises for it. Which release knows which key comes from the releases'
own libraries (knowledge/torch_alloc_conf.toml); the syntax is checked against the real torch
parser of the installed wheel."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from cudoctor import versions
from cudoctor.knowledge import torch_alloc_conf as alloc_conf
from cudoctor.model import Severity, absent
from tests.conftest import run_check, stated
from tests.explainer.helpers import explain_text, rooted, top


def _torch(version: str, build: str = "cuda") -> dict[str, Any]:
    return {"version": version, "build": build, "cuda": "12.1" if build == "cuda" else None}


def _findings(env: dict[str, str], version: str = "2.5.1+cu121", build: str = "cuda") -> list[Any]:
    return list(
        run_check("torch-alloc-conf", stated({}, env=env, framework__torch=_torch(version, build))).findings
    )


@pytest.mark.parametrize(
    ("value", "version", "says"),
    [
        (
            "expandable_segments:True",
            "2.0.1+cu118",
            "torch 2.0.1 does not know expandable_segments (it came in torch 2.1)",
        ),
        ("backend:cudaMallocAsync", "1.13.1", "torch 1.13.1 does not know backend (it came in torch 2.0)"),
        (
            "roundup_bypass_threshold_mb:100",
            "2.1.0",
            "torch 2.1.0 no longer knows roundup_bypass_threshold_mb",
        ),
        ("max_split_size_mb=8000", "2.0.0", "is written with '='"),
        ("C:\\Users\\hp\\cache", "2.0.0", "a Windows path"),
        ("expandable_segment:True", "2.5.1", "did you mean expandable_segments?"),
        ("expandable_segments:true", "2.5.1", "must be True or False"),
        ("backend:cudamallocasync", "2.5.1", "must be one of native, cudaMallocAsync"),
        ("max_split_size_mb:8GB", "2.5.1", "is not a whole number"),
        ("max_split_size_mb:10", "2.5.1", "below the smallest value torch accepts, 20"),
        ("garbage_collection_threshold:1.5", "2.5.1", "is outside (0, 1)"),
        ("max_split_size_mb:128 garbage_collection_threshold:0.6", "2.5.1", "separated by spaces"),
        ("max_split_size_mb", "2.5.1", "has no value"),
    ],
)
def test_an_option_the_installed_torch_refuses_is_an_error(value: str, version: str, says: str) -> None:
    [f] = _findings({"PYTORCH_CUDA_ALLOC_CONF": value}, version)
    assert f.severity is Severity.ERROR and f.cause == "env-setting-invalid"
    assert says in f.title and "The first CUDA call raises" in f.title


@pytest.mark.parametrize(
    ("value", "version"),
    [
        ("expandable_segments:True", "2.1.0"),
        ("max_split_size_mb:512", "1.10.0"),
        (
            "max_split_size_mb:128 garbage_collection_threshold:0.6",
            "1.13.1",
        ),  # spaces separated options before 2.0
        (
            "max_split_size_mb:128, garbage_collection_threshold:0.6",
            "2.5.1",
        ),  # spaces beside commas are dropped
        ("roundup_power2_divisions:[256:1,512:2,>:4],expandable_segments:True", "2.5.1"),
        ("backend:cudaMallocAsync", "2.0.0"),
        ("roundup_bypass_threshold_mb:100", "1.13.0"),
        ("per_process_memory_fraction:1", "2.13.0"),
        ("", "2.5.1"),
    ],
)
def test_options_the_installed_torch_reads_stay_silent(value: str, version: str) -> None:
    assert _findings({"PYTORCH_CUDA_ALLOC_CONF": value}, version) == []


def test_the_steps_say_how_to_make_torch_read_it() -> None:
    [old] = _findings({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}, "2.0.1+cu118")
    assert (
        old.fix[0]
        == "Remove expandable_segments from PYTORCH_CUDA_ALLOC_CONF, or upgrade torch to 2.1 or newer"
    )
    [equals] = _findings({"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb=512"})
    assert equals.fix[0] == "export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:512"
    [spaces] = _findings(
        {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128 garbage_collection_threshold:0.6"}
    )
    assert (
        spaces.fix[0]
        == "export PYTORCH_CUDA_ALLOC_CONF='max_split_size_mb:128,garbage_collection_threshold:0.6'"
    )


def test_an_unknown_release_is_checked_only_for_what_no_release_reads() -> None:
    assert _findings({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}, "unknown") == []
    [f] = _findings({"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb=512"}, "unknown")
    assert "is written with '='" in f.title


def test_a_cpu_build_never_reads_it() -> None:
    assert _findings({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segment:True"}, "2.5.1+cpu", build="cpu") == []


def test_missing_facts_make_it_unknown_or_skip() -> None:
    no_env = stated({}, framework__torch=_torch("2.0.1"))
    assert run_check("torch-alloc-conf", no_env).outcome == "unknown"
    torch_unknown = stated({}, env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
    assert run_check("torch-alloc-conf", torch_unknown).outcome == "unknown"
    no_torch = stated({}, env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
    no_torch.add(absent("framework.torch", "test", "not installed"))
    assert run_check("torch-alloc-conf", no_torch).outcome == "skipped"


@pytest.mark.parametrize(
    ("version", "how"),
    [
        ("2.0.1+cu118", "torch 2.0.1 does not read it at all (torch reads it from 2.9)"),
        ("2.9.1+cu128", "torch 2.9.1 reads it only for its device-generic settings"),
    ],
)
def test_pytorch_alloc_conf_before_the_cuda_allocator_reads_it_is_ignored(version: str, how: str) -> None:
    [f] = _findings({"PYTORCH_ALLOC_CONF": "expandable_segments:True"}, version)
    assert f.severity is Severity.WARNING and how in f.title
    assert f.fix[0].startswith("export PYTORCH_CUDA_ALLOC_CONF='expandable_segments:True'")


def test_moving_it_to_the_variable_torch_reads_names_what_that_torch_would_refuse() -> None:
    [f] = _findings({"PYTORCH_ALLOC_CONF": "expandable_segments:True"}, "2.0.1+cu118")
    assert "would refuse it there (torch 2.0.1 does not know expandable_segments" in f.fix[1]


@pytest.mark.parametrize(
    "env",
    [
        {"PYTORCH_ALLOC_CONF": "expandable_segments:True"},  # 2.10 reads it for CUDA
        {
            "PYTORCH_ALLOC_CONF": "expandable_segments:True",
            "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        },
    ],
)
def test_pytorch_alloc_conf_read_by_the_cuda_allocator_stays_silent(env: dict[str, str]) -> None:
    version = "2.10.0+cu128" if len(env) == 1 else "2.9.1+cu128"
    assert _findings(env, version) == []


# What the torch wheel installed here does with each setting: its device-generic parser (the one a
# CPU build has from 2.9) reads these keys itself, so its verdict is the real one for them.
REAL_PARSER_CASES = [
    ("expandable_segments:True", False),
    ("max_split_size_mb:128,garbage_collection_threshold:0.6", False),
    ("max_split_size_mb:128, garbage_collection_threshold:0.6", False),
    ("roundup_power2_divisions:[256:1,512:2,>:4]", False),
    ("expandable_segments:False,max_split_size_mb:20", False),
    ("pinned_use_background_threads:True", False),
    ("expandable_segments:true", True),
    ("max_split_size_mb=8000", True),
    ("max_split_size_mb:128 garbage_collection_threshold:0.6", True),
    ("max_split_size_mb", True),
    ("garbage_collection_threshold:2", True),
    ("garbage_collection_threshold:0", True),
    ("max_split_size_mb:10", True),
    ("max_split_size_mb:abc", True),
]
REAL_PARSER = """
import json, sys, torch
out = {"version": torch.__version__, "raised": []}
for value in json.loads(sys.argv[1]):
    try:
        torch._C._accelerator_setAllocatorSettings(value)
        out["raised"].append(False)
    except Exception:
        out["raised"].append(True)
print(json.dumps(out))
"""


def test_the_reading_agrees_with_the_real_torch_parser() -> None:
    pytest.importorskip("torch")
    values = [value for value, _ in REAL_PARSER_CASES]
    done = subprocess.run(
        [sys.executable, "-c", REAL_PARSER, json.dumps(values)], capture_output=True, text=True, timeout=300
    )
    real = json.loads(done.stdout.strip().splitlines()[-1])
    version = versions.parse(real["version"])
    if version is None or version < (2, 9):
        pytest.skip("the device-generic parser came in torch 2.9")
    ours = [bool(alloc_conf.problems(v, version, "PYTORCH_ALLOC_CONF")) for v in values]
    assert real["raised"] == [raised for _, raised in REAL_PARSER_CASES]
    assert ours == real["raised"]


def test_every_key_is_known_by_a_release_and_has_a_reading() -> None:
    assert alloc_conf.known_keys(versions.parse("1.10.0")) == ["max_split_size_mb"]
    assert "expandable_segments" not in alloc_conf.known_keys(versions.parse("2.0.1"))
    assert "expandable_segments" in alloc_conf.known_keys(versions.parse("2.1.0"))
    assert "roundup_bypass_threshold_mb" not in alloc_conf.known_keys(None)


# ------------------------------------------------------------------ explain

UNKNOWN_OPTION = "RuntimeError: Unrecognized CachingAllocator option: expandable_segments"


def test_explain_names_the_release_that_added_the_option() -> None:
    exp = explain_text(UNKNOWN_OPTION, {"framework_version": "torch 2.0.1+cu118"})
    assert top(exp)[0] == "env-setting-invalid"
    assert (
        exp.causes[0].fixes[0]
        == "Remove expandable_segments from PYTORCH_CUDA_ALLOC_CONF, or upgrade torch to 2.1 or newer"
    )


def test_explain_without_a_release_says_which_one_added_it() -> None:
    exp = explain_text(UNKNOWN_OPTION, {})
    assert "expandable_segments came in torch 2.1" in exp.causes[0].fixes[0]


def test_explain_with_a_torch_that_knows_the_option_points_at_another_environment() -> None:
    exp = explain_text(UNKNOWN_OPTION, {"framework_version": "torch 2.5.1+cu121"})
    assert (
        exp.causes[0]
        .fixes[0]
        .startswith("The torch that failed is not this one (torch 2.5.1 knows expandable_segments")
    )


@pytest.mark.parametrize(
    ("line", "signature"),
    [
        (
            "RuntimeError: Unrecognized key 'expandable_segment' in Accelerator allocator config.",
            "torch-alloc-conf-unknown-key",
        ),
        (
            "ValueError: Expected 'True' or 'False' at index 2 in ConfigTokenizer but got 'true'",
            "torch-alloc-conf-bad-value",
        ),
        (
            'RuntimeError: i < config_.size() INTERNAL ASSERT FAILED at "/__w/pytorch/pytorch/c10/core/AllocatorConfig.h":124, '
            "please report a bug to PyTorch. Index out of bounds in ConfigTokenizer",
            "torch-alloc-conf-bad-value",
        ),
    ],
)
def test_explain_reads_the_newer_parser_errors_as_the_setting(line: str, signature: str) -> None:
    exp = rooted(line, f"env-setting-invalid/{signature}")
    assert top(exp)[0] == "env-setting-invalid"


def test_explain_suggests_the_key_a_misspelling_meant() -> None:
    exp = explain_text(
        "RuntimeError: Unrecognized key 'expandable_segment' in Accelerator allocator config.", {}
    )
    assert (
        exp.causes[0].fixes[0]
        == "Write expandable_segments instead of expandable_segment in PYTORCH_CUDA_ALLOC_CONF"
    )
