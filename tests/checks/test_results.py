"""What running a check gives: a crashing check reported and not raised, an absent fact that skips it,
findings shown in the layer of what they are about."""

from __future__ import annotations

import pytest

from cudoctor.model import Severity, Status, absent
from tests.checks.helpers import GPU_BUSY
from tests.conftest import run_check, stated


def test_findings_about_a_library_or_setting_stay_in_their_layer() -> None:
    from cudoctor.checks import finding
    from cudoctor.model import CheckResult, Report
    from cudoctor.render.areas import areas

    snap = stated({}, framework__torch={"version": "2.5.1+cu124", "build": "cuda", "cuda": "12.4"})
    left_on = finding(
        "setting-left-on",
        "setting-left-on",
        Severity.WARNING,
        "x",
        "Environment",
        subject="CUDA_LAUNCH_BLOCKING",
    )
    about_torch = finding(
        "cpu-only-torch", "cpu-only-build", Severity.WARNING, "y", "Frameworks", subject="torch"
    )
    titles = {
        a.title: [f.id for f in a.findings]
        for a in areas(Report(snap, [CheckResult("t", "findings", (left_on, about_torch))]))
    }
    assert titles["Environment"] == ["setting-left-on"] and "Other" not in titles
    assert titles["PyTorch 2.5.1+cu124"] == ["cpu-only-torch"]


def test_crashing_check_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    from cudoctor import checks

    chk = next(c for c in checks.all_checks() if c.id == "gpu-memory-held")
    broken = checks.Check(chk.id, chk.cause, chk.layer, chk.requires, lambda snap: 1 / 0, chk.doc)  # type: ignore[arg-type,return-value]
    r = checks.run_one(broken, stated({}, gpu__devices=[GPU_BUSY]))
    assert r.outcome == "crashed" and "ZeroDivisionError" in r.detail


def test_absent_fact_skips_check() -> None:
    snap = stated({})
    snap.add(absent("gpu.devices", "test", "no driver"))
    assert run_check("gpu-memory-held", snap).outcome == "skipped"
    assert snap.status("gpu.devices") is Status.ABSENT
