"""Whose facts explain a log (issue 40, point 4): this machine's only when the log comes from it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from cudoctor.explainer import whose
from cudoctor.model import Snapshot, known
from tests.conftest import cudoctor


def _machine(**facts: object) -> Snapshot:
    snap = Snapshot(origin="live")
    for key, value in facts.items():
        snap.add(known(key.replace("__", "."), value, "test"))
    return snap


HERE = _machine(
    gpu__devices=[{"index": 0, "name": "NVIDIA GeForce RTX 3090", "cc": "8.6"}],
    driver__version="550.120",
    framework__torch={"version": "2.4.1+cu121", "build": "cuda", "cuda": "12.1"},
    host__python={"version": "3.11.7"},
    host__os={"system": "Linux"},
)


def test_what_the_log_says_of_its_machine_is_compared_with_this_one() -> None:
    assert whose.differences({"gpu": "RTX 3090"}, "", HERE) == []
    assert whose.differences({"gpu": "NVIDIA GeForce RTX 4090"}, "", HERE) == [
        "the log's GPU is NVIDIA GeForce RTX 4090, this machine's NVIDIA GeForce RTX 3090"
    ]
    assert whose.differences({"driver": "470.82.01"}, "", HERE)[0].startswith("the log's driver is 470.82.01")
    assert whose.differences({"framework_version": "1.5.0+cu101"}, "", HERE)
    assert whose.differences({"framework_version": "2.4.1+cu121"}, "", HERE) == []
    path = '  File "/home/bob/.local/lib/python3.8/site-packages/torch/nn/modules/module.py", line 1130'
    assert whose.differences({}, path, HERE) == ["the log's Python is 3.8 (its paths), this machine's 3.11.7"]
    assert whose.differences({}, path.replace("3.8", "3.11"), HERE) == []
    assert whose.differences({}, "C:\\Users\\bob\\AppData\\x.py", HERE)
    assert whose.differences({"gpu": "Tesla T4"}, "", _machine()) == [
        "the log's GPU is Tesla T4, and this machine shows none"
    ]


def test_a_log_from_another_machine_is_not_explained_with_this_ones_facts(tmp_path: Path) -> None:
    """The issue's case: a log from an RTX 4090 box, whose torch lives under python3.8; this machine's torch
    (a CPU build in CI) must not become one of its causes."""
    log = tmp_path / "issue.log"
    log.write_text(
        "I tensorflow/core/common_runtime/gpu/gpu_device.cc:1525] Created device with 22000 MB memory:  -> device: 0, "
        "name: NVIDIA GeForce RTX 4090, pci bus id: 0000:01:00.0, compute capability: 8.9\n"
        '  File "/home/bob/.local/lib/python3.8/site-packages/torch/nn/modules/module.py", line 1130, in _call_impl\n'
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    )
    doc = json.loads(cudoctor(["explain", str(log), "--format", "json"]).stdout)
    assert doc["facts_used"]["this_machine"] is False and doc["facts_used"]["left_out_because"]
    assert "cpu-only-build" not in [c["id"] for c in doc["causes"]]
    text = cudoctor(["explain", str(log)]).stdout
    assert "this machine's left out, the log comes from another" in text


def test_a_log_that_agrees_with_this_machine_uses_its_facts(tmp_path: Path) -> None:
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    log = tmp_path / "mine.log"
    log.write_text(
        f'  File "/usr/lib/python{version}/site-packages/x.py", line 3, in f\n'
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    )
    doc = json.loads(cudoctor(["explain", str(log), "--format", "json"]).stdout)
    assert doc["facts_used"]["this_machine"] is True
    none = json.loads(cudoctor(["explain", str(log), "--no-live", "--format", "json"]).stdout)
    assert none["facts_used"]["this_machine"] is False and none["facts_used"]["left_out_because"] == [
        "--no-live"
    ]


OLD_DRIVER = {"gpu": "Tesla T4", "driver": "418.87", "framework_version": "torch 2.1.0+cu121"}
OOM = "RuntimeError: CUDA error: out of memory\n"


def _doc(log: str, live: bool) -> dict[str, Any]:
    """explain's JSON for a log with OLD_DRIVER's facts, taken as this machine's (`live`) or as stated."""
    import io

    from cudoctor.explainer import command, scan
    from cudoctor.facts.stated import from_stated

    result = scan.scan(io.BytesIO(log.encode()))
    explained = command._explained(result, from_stated(OLD_DRIVER, "torch"), {}, "torch", live=live)
    return command.to_json(explained, "torch")


def test_this_machines_finding_the_log_does_not_point_to_is_listed_apart_never_ranked() -> None:
    """Issue 40, point 4: this machine's driver is too old for its build; the log is an out-of-memory."""
    from cudoctor.render.explanation import to_markdown, to_text

    doc = _doc(OOM, live=True)
    assert doc["causes"][0]["id"] == "gpu-oom"
    assert "driver-too-old" not in [c["id"] for c in doc["causes"]]
    assert [a["id"] for a in doc["apart"]] == ["driver-too-old"]
    assert "not what this log points to" in to_text(doc, verbose=False)
    assert "`driver-too-old`" in to_markdown(doc)


def test_stated_facts_of_the_failing_machine_still_count_a_little() -> None:
    """A person's statement is about the machine that failed: a cause its message does not name stays
    in the list, low (the corpus has such cases), and nothing is set apart."""
    doc = _doc(OOM, live=False)
    ids = [c["id"] for c in doc["causes"]]
    assert ids[0] == "gpu-oom" and "driver-too-old" in ids and doc["apart"] == []


def test_a_finding_the_log_points_to_is_ranked_and_not_apart() -> None:
    doc = _doc(
        "RuntimeError: The NVIDIA driver on your system is too old (found version 10010).\n", live=True
    )
    assert doc["causes"][0]["id"] == "driver-too-old" and doc["apart"] == []


def test_with_no_known_error_the_facts_alone_still_rank() -> None:
    doc = _doc("Traceback (most recent call last):\n  something odd happened\n", live=True)
    assert "driver-too-old" in [c["id"] for c in doc["causes"]] and doc["apart"] == []
