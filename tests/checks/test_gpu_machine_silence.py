"""A healthy GPU machine keeps the newer checks silent: the facts `cudoctor check` collected on an
H200 (torch 2.11.0+cu130, JAX 0.11.2 with jax-cuda13-plugin and its pjrt, CuPy 14.2.0, CUDA 13.0 at
/usr/local/cuda; tests/fixtures/gpu/h200/session32, see tests/fixtures/gpu/README.md) are checked
again here with today's checks: no requirement unmet, no ptxas out of step, no error."""

from __future__ import annotations

import json
import os

from cudoctor.checks import run_checks
from cudoctor.model import Snapshot
from tests.conftest import ROOT

RECORDED = os.path.join(ROOT, "tests", "fixtures", "gpu", "h200", "session32", "check.json")


def _snapshot() -> Snapshot:
    with open(RECORDED, encoding="utf-8") as fh:
        return Snapshot.from_json(json.load(fh)["snapshot"])


def test_the_recorded_machine_has_what_the_checks_read() -> None:
    snap = _snapshot()
    requires = {(r["package"], r["requires"]) for r in snap.value("python.requirements")}
    assert ("jax-cuda13-plugin", "jax-cuda13-pjrt") in requires and ("torch", "nvidia-cudnn-cu13") in requires
    assert {t["tool"] for t in snap.value("cuda.run_tools")} == {"nvcc", "ptxas"}


def test_requirements_and_toolchain_checks_stay_silent_on_a_healthy_gpu_machine() -> None:
    results = {r.check_id: r for r in run_checks(_snapshot())}
    for check_id in (
        "requirements-unmet",
        "ptxas-version-mismatch",
        "ptxas-missing",
        "toolkits-shadow-on-path",
    ):
        assert results[check_id].outcome == "ok", (check_id, results[check_id])


def test_no_error_on_a_healthy_gpu_machine() -> None:
    errors = [f.id for r in run_checks(_snapshot()) for f in r.findings if f.severity.value == "error"]
    assert errors == []
