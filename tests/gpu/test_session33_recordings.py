"""Replays of what cudoctor recorded on an H100 in session 33 (tests/fixtures/gpu/h100/session33/README.md):
--python on a GPU machine describes the target environment; CUDA_VISIBLE_DEVICES naming a GPU that is not there
is said with the GPU that is; a real failing `cudoctor run` is explained as the GPU index it asked for."""

from __future__ import annotations

import json
import os
import re

from cudoctor.api import explain
from cudoctor.checks import run_checks
from cudoctor.model import Snapshot
from tests.conftest import ROOT

HERE = os.path.join(ROOT, "tests", "fixtures", "gpu", "h100", "session33")


def _recorded(name: str) -> dict:
    with open(os.path.join(HERE, name), encoding="utf-8") as fh:
        return json.load(fh)


def _snapshot(name: str) -> Snapshot:
    return Snapshot.from_json(_recorded(name)["snapshot"])


def _errors(snap: Snapshot) -> dict[str, str]:
    return {f.id: f.title for r in run_checks(snap) for f in r.findings if f.severity.name.lower() == "error"}


def test_python_names_the_environment_checked_and_its_packages() -> None:
    snap = _snapshot("check_target.json")
    target = snap.value("host.target")
    assert target["chosen_by"] == "--python" and target["executable"] == "/tmp/t/bin/python"
    assert snap.value("framework.torch") is None  # the system Python has no torch; cudoctor's own has one
    assert snap.value("gpu.devices")  # the machine's GPU is still read
    assert not _errors(snap)


def test_a_visible_devices_value_naming_no_gpu_is_an_error_with_the_gpu_there() -> None:
    for name, value in (("check_bad_uuid.json", "GPU-00000000"), ("check_index3.json", "'3'")):
        errors = _errors(_snapshot(name))
        title = errors["cuda-visible-devices-bad-index"]
        assert value in title and "PyTorch 2.11.0+cu130" in title


def test_the_real_failing_run_is_explained_as_a_gpu_index_out_of_range() -> None:
    run = _recorded("run_bad_ordinal.json")
    assert run["status"] == 1 and run["python"]["chosen_by"] == "--python"
    with open(os.path.join(HERE, "run_bad_ordinal.txt"), encoding="utf-8") as fh:
        text = fh.read()
    output = text.split("\n\ncudoctor:", 1)[0]  # the program's own output, before cudoctor's lines
    assert "invalid device ordinal" in output and re.search(r"GPU 0: NVIDIA H100", text)
    again = explain(output.encode(), live=False)  # today's explain on the recorded output
    assert again.causes[0]["id"] == "no-gpu-visible" == run["causes"][0]["id"]
