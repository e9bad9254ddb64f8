"""`cudoctor.check(python=...)` and `cudoctor.explain(python=...)` (issue 46): the same meaning as
`--python`; without it, the environment of the interpreter running the code (a program or notebook
calling the API is the environment it is about), whatever is activated in the shell."""

from __future__ import annotations

import pathlib
import platform
import sys

import pytest

import cudoctor
from cudoctor.facts.target import TargetError
from tests.facts.test_target_python import make_venv, need

LOG = "RuntimeError: CUDA error: no kernel image is available for execution on the device"


@pytest.fixture(scope="module")
def env39(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return make_venv(need("3.9"), tmp_path_factory.mktemp("api") / "train")


def test_check_python_checks_that_environment(env39: pathlib.Path) -> None:
    for spec in (env39, str(env39 / "bin" / "python")):  # an os.PathLike directory, an interpreter
        report = cudoctor.check(python=spec)
        target = report.snapshot.value("host.target")
        assert target["self"] is False and target["prefix"] == str(env39) and target["chosen_by"] == "python="
        assert report.snapshot.value("host.python")["version"].startswith("3.9.")
        assert report.snapshot.value("python.packages") == {}  # made --without-pip: nothing installed
        assert report.exit_code in (0, 1)


def test_check_default_is_the_running_interpreter_not_the_shells(
    env39: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VIRTUAL_ENV", str(env39))
    monkeypatch.delenv("CUDOCTOR_PYTHON", raising=False)
    target = cudoctor.check().snapshot.value("host.target")
    assert target["self"] is True and target["executable"] == sys.executable
    assert cudoctor.check(python="self").snapshot.value("host.python")["version"] == platform.python_version()


def test_check_with_stated_facts_merges_that_environment(env39: pathlib.Path) -> None:
    report = cudoctor.check({"gpu": "A100"}, python=env39)
    assert report.snapshot.value("host.target")["prefix"] == str(env39)


def test_explain_python_says_whose_facts_ranked(env39: pathlib.Path) -> None:
    diagnosis = cudoctor.explain(LOG, python=env39)
    assert diagnosis.python is not None and diagnosis.python["prefix"] == str(env39)
    assert cudoctor.explain(LOG).python["self"] is True  # type: ignore[index]
    assert cudoctor.explain(LOG, live=False).python is None


@pytest.mark.parametrize(
    "python, error, text",
    [
        ("/nonexistent/bin/python", TargetError, "python=/nonexistent/bin/python: no such file"),
        ("", TargetError, "python is empty"),
        (3, TypeError, "not int"),
        (b"/usr/bin/python3", TypeError, "not bytes"),
    ],
)
def test_bad_python_raises_one_line(python: object, error: type[Exception], text: str) -> None:
    with pytest.raises(error) as info:
        cudoctor.check(python=python)  # type: ignore[arg-type]
    assert text in str(info.value) and "\n" not in str(info.value)
    assert issubclass(TargetError, ValueError)


def test_a_python_that_hangs_is_bounded(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hangs = tmp_path / "python"
    hangs.write_text("#!/bin/sh\nexec sleep 600\n")
    hangs.chmod(0o755)
    monkeypatch.setenv("CUDOCTOR_TIMEOUT", "0.5")
    with pytest.raises(TargetError, match="did not answer within 1 s"):
        cudoctor.explain(LOG, python=hangs)


def test_python_with_live_false_is_refused() -> None:
    with pytest.raises(ValueError, match="not with live=False"):
        cudoctor.check({"gpu": "A100"}, live=False, python="self")
    with pytest.raises(ValueError, match="not with live=False"):
        cudoctor.explain(LOG, live=False, python="self")
