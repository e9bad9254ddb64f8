"""`cudoctor check` end to end: formats, exit codes, stated facts, broken installs planted for real."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from cudoctor.facts import packages
from tests.conftest import cudoctor


def test_check_json_document_on_this_machine() -> None:
    out = cudoctor(["check", "--format", "json"])
    assert out.returncode in (0, 1), out.stderr
    doc = json.loads(out.stdout)
    assert doc["schema"] == 1 and doc["tool"]["name"] == "cudoctor"
    facts = doc["snapshot"]["facts"]
    assert {"driver.version", "cuda.toolkits", "framework.torch", "env", "host.cpu"} <= set(facts)
    assert all(set(f) >= {"status", "value", "source"} for f in facts.values())
    assert doc["exit_code"] == out.returncode
    for f in doc["findings"]:
        assert set(f) >= {"id", "cause", "severity", "title", "evidence", "fix"}


def test_check_text_and_markdown() -> None:
    text = cudoctor(["check"]).stdout
    assert text.startswith("cudoctor summary") and "GPU & driver" in text and "CPU BLAS" in text
    verbose = cudoctor(["check", "-v"]).stdout
    assert "<- " in verbose and "driver.version" in verbose
    md = cudoctor(["check", "--format", "markdown"]).stdout
    assert md.startswith("## cudoctor report") and "<details>" in md


def test_check_on_stated_facts_only(tmp_path: Path) -> None:
    facts = tmp_path / "f.json"
    facts.write_text(
        json.dumps({"gpu": "A100", "framework_version": "tensorflow-gpu 1.13.1", "system_cuda": "10.0"})
    )
    out = cudoctor(["check", "--facts", str(facts), "--no-live", "--format", "json"])
    assert out.returncode == 1
    doc = json.loads(out.stdout)
    arch = [f for f in doc["findings"] if f["id"] == "arch-unsupported"]
    assert (
        arch
        and arch[0]["cause"] == "arch-unsupported"
        and arch[0]["severity"] == "error"
        and "A100" in arch[0]["title"]
    )
    assert doc["snapshot"]["facts"]["gpu.devices"]["source"] == "stated:gpu"


def test_saved_snapshot_can_be_checked_again(tmp_path: Path) -> None:
    doc = cudoctor(["check", "--format", "json"]).stdout
    saved = tmp_path / "snap.json"
    saved.write_text(doc)
    again = cudoctor(["check", "--snapshot", str(saved), "--no-live", "--format", "json"])
    assert json.loads(again.stdout)["snapshot"]["facts"].keys() == json.loads(doc)["snapshot"]["facts"].keys()


def test_list_checks_and_selection() -> None:
    listing = cudoctor(["check", "--list-checks"]).stdout
    assert "driver-too-old" in listing and "arch-unsupported" in listing
    bad = cudoctor(["check", "--only", "no-such-check"])
    assert bad.returncode == 2 and "unknown check or finding id" in bad.stderr


def test_bad_inputs_exit_2(tmp_path: Path) -> None:
    arr = tmp_path / "facts.json"
    arr.write_text("[1, 2]")
    out = cudoctor(["check", "--facts", str(arr), "--no-live"])
    assert out.returncode == 2 and "JSON object" in out.stderr
    newer = tmp_path / "snap.json"
    newer.write_text(json.dumps({"schema": 99, "facts": {}}))
    out = cudoctor(["check", "--snapshot", str(newer), "--no-live"])
    assert out.returncode == 2 and "newer" in out.stderr
    assert cudoctor([]).returncode == 2


def test_planted_broken_torch_is_named(tmp_path: Path) -> None:
    real = packages.find_package_dir(sys.path, "torch")
    if real is None:
        import pytest

        pytest.skip("torch is not installed here (CI installs it)")
    site = tmp_path / "site"
    (site / "torch" / "lib").mkdir(parents=True)
    for name in ("__init__.py", "version.py"):
        shutil.copy(os.path.join(real, name), site / "torch" / name)
    env = dict(os.environ, PYTHONPATH=str(site))
    out = cudoctor(["check", "--format", "json"], env=env)
    doc = json.loads(out.stdout)
    broken = [f for f in doc["findings"] if f["id"] == "broken-torch"]
    assert out.returncode == 1 and broken and "libtorch_cpu.so" in broken[0]["title"]
    # issue 45, point 4: where the broken copy comes from, and the same build from its own index
    assert any("PYTHONPATH" in e and str(site) in e for e in broken[0]["evidence"])
    first, second = broken[0]["fix"][:2]
    assert first.startswith(f"Take {site} out of PYTHONPATH")
    version = doc["snapshot"]["facts"]["framework.torch"]["value"]["version"]
    release, _, variant = version.partition("+")
    assert f"'torch=={release}'" in second and "--no-deps" in second
    assert not variant or f"download.pytorch.org/whl/{variant}" in second


def test_hanging_ptxas_on_path_does_not_hang_check(tmp_path: Path) -> None:
    root = tmp_path / "cuda-12.6"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "ptxas").write_text("#!/bin/sh\nsleep 300\n")
    (root / "bin" / "ptxas").chmod(0o755)
    env = dict(os.environ, PATH=f"{root / 'bin'}:{os.environ['PATH']}", CUDOCTOR_TIMEOUT="1")
    out = cudoctor(["check", "--format", "json"], env=env, timeout=60)
    doc = json.loads(out.stdout)
    hung = [f for f in doc["findings"] if f["id"] == "ptxas-broken"]
    assert hung and "timed out" in hung[0]["title"] and str(root / "bin" / "ptxas") in hung[0]["title"]


def test_every_command_says_its_exit_statuses_in_its_help() -> None:
    """Issue 40, point 6: report exits 1 with findings and diff with a new error; each help says so."""
    for command in ("check", "explain", "probe", "run", "snapshot", "diff", "report", "fleet"):
        out = cudoctor([command, "--help"])
        assert out.returncode == 0 and "exit status:" in out.stdout, command


def test_verbose_check_shows_each_fact_whole_one_field_a_line() -> None:
    """Issue 40, point 5: -v was a JSON dump cut at 400 characters, with the -v hint above it."""
    import torch

    out = cudoctor(["check", "-v", "--no-record"]).stdout
    lines = out.splitlines()
    assert lines[0] == "cudoctor summary:"
    location = os.path.dirname(torch.__file__)
    assert f"        location: {location}" in lines
    from cudoctor.render.text import fact_lines

    long = {"libdevice": "/usr/local/cuda-13.0/nvvm/libdevice/" + "x" * 500 + ".bc"}
    assert fact_lines("cuda.toolkits", [long], "dirs") == [
        "    • cuda.toolkits  <- dirs",
        f"        - libdevice={long['libdevice']}",
    ]
    assert fact_lines("driver.version", "550.120", "nvml") == ["    • driver.version = 550.120  <- nvml"]


def test_silent_checks_say_why_under_verbose_and_causes_show_their_references(tmp_path: Path) -> None:
    """Issue 40, point 5: the references were in JSON only; a check that did not apply said nothing."""
    facts = tmp_path / "f.json"
    facts.write_text(json.dumps({"framework_version": "torch 2.1.0+cu121"}))
    out = cudoctor(["check", "-v", "--facts", str(facts), "--no-live"]).stdout
    assert "  - probe-slow: not applicable: probe.results" in out
    assert "  - probe-slow" not in cudoctor(["check", "--facts", str(facts), "--no-live"]).stdout
    log = tmp_path / "run.log"
    log.write_text("RuntimeError: CUDA error: an illegal memory access was encountered\n")
    doc = json.loads(cudoctor(["explain", str(log), "--no-live", "--format", "json"]).stdout)
    refs = doc["causes"][0]["references"]
    assert refs and f"   see: {refs[0]}" in cudoctor(["explain", str(log), "--no-live"]).stdout
    assert f"<{refs[0]}>" in cudoctor(["explain", str(log), "--no-live", "--format", "markdown"]).stdout
