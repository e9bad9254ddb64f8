"""`cudoctor explain` and `cudoctor run` gather the facts of the environment being debugged (issue 46):
the same default and `--python` as check, and they say which interpreter the facts describe.

Real venvs from the interpreters pyenv has here (skipped with a reason where one is missing); every
run goes through the real CLI in a child process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, cudoctor
from tests.facts.test_target_python import make_venv, need, without_choice

LOG = "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"


@pytest.fixture(scope="module")
def env39(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(need("3.9"), tmp_path_factory.mktemp("explain") / "train")


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "run.log"
    path.write_text('Traceback (most recent call last):\n  File "t.py", line 1, in <module>\n' + LOG)
    return path


def explain_json(args: list[str], env: dict[str, str]) -> dict[str, object]:
    out = cudoctor(["explain", *args, "--format", "json"], env=env)
    assert out.returncode == 1, out.stderr  # the log holds an error
    doc: dict[str, object] = json.loads(out.stdout)
    return doc


def test_explain_python_uses_that_environments_facts_and_says_so(env39: Path, log: Path) -> None:
    doc = explain_json([str(log), "--python", str(env39 / "bin" / "python")], without_choice())
    used = doc["facts_used"]
    assert isinstance(used, dict) and used["this_machine"] is True
    assert used["python"]["prefix"] == str(env39) and used["python"]["version"].startswith("3.9.")
    assert used["python"]["chosen_by"] == "--python" and used["python"]["self"] is False
    text = cudoctor(["explain", str(log), "--python", str(env39)], env=without_choice()).stdout
    line = text.rstrip().splitlines()[-1]
    assert (
        line.startswith("Facts used: this machine's (Python 3.9.")
        and f"at {env39}, given by --python" in line
    )


def test_explain_defaults_to_the_active_environment(env39: Path, log: Path) -> None:
    env = without_choice(VIRTUAL_ENV=str(env39), PATH=f"{env39 / 'bin'}{os.pathsep}{os.environ['PATH']}")
    used = explain_json([str(log)], env)["facts_used"]
    assert isinstance(used, dict) and used["python"]["chosen_by"] == "VIRTUAL_ENV"
    assert used["python"]["prefix"] == str(env39)


def test_explain_self_is_cudoctors_own_environment(log: Path) -> None:
    used = explain_json([str(log), "--python", "self"], without_choice(VIRTUAL_ENV="/nonexistent"))[
        "facts_used"
    ]
    assert isinstance(used, dict) and used["python"]["self"] is True
    assert used["python"]["executable"] == sys.executable


@pytest.mark.parametrize(
    "args, expect",
    [
        (["--python", "/nonexistent/bin/python"], "--python /nonexistent/bin/python: no such file"),
        (["--python", ""], "--python is empty"),
        (["--python", sys.executable, "--no-live"], "not with --no-live"),
    ],
)
def test_explain_bad_python_is_one_line_exit_2(log: Path, args: list[str], expect: str) -> None:
    out = cudoctor(["explain", str(log), *args], env=without_choice())
    assert out.returncode == 2 and out.stdout == "", out.stdout[-300:]
    assert out.stderr.count("\n") == 1 and expect in out.stderr, out.stderr


def _failing(tmp_path: Path) -> Path:
    script = tmp_path / "fail.py"
    script.write_text(f"import sys\nsys.stderr.write({LOG!r})\nsys.exit(3)\n")
    return script


def test_run_explains_with_the_active_environments_facts(env39: Path, tmp_path: Path) -> None:
    env = without_choice(VIRTUAL_ENV=str(env39), PATH=f"{env39 / 'bin'}{os.pathsep}{os.environ['PATH']}")
    why = tmp_path / "why.json"
    out = cudoctor(["run", "--json-out", str(why), "--", sys.executable, str(_failing(tmp_path))], env=env)
    assert out.returncode == 3, out.stderr
    head = next(line for line in out.stderr.splitlines() if "exited with status 3" in line)
    assert "the facts of Python 3.9." in head and f"at {env39} (the active environment: VIRTUAL_ENV)" in head
    doc = json.loads(why.read_text())
    assert doc["python"]["prefix"] == str(env39) and doc["python"]["chosen_by"] == "VIRTUAL_ENV"


def test_run_python_names_the_environment(env39: Path, tmp_path: Path) -> None:
    why = tmp_path / "why.json"
    argv = [
        "run",
        "--python",
        str(env39),
        "--json-out",
        str(why),
        "--",
        sys.executable,
        str(_failing(tmp_path)),
    ]
    out = cudoctor(argv, env=without_choice())
    assert out.returncode == 3, out.stderr
    assert json.loads(why.read_text())["python"]["chosen_by"] == "--python"


def test_run_bad_python_stops_before_the_command_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    cmd = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    out = cudoctor(["run", "--python", str(tmp_path / "nope"), "--", *cmd], env=without_choice())
    assert out.returncode == 2 and not marker.exists()
    assert out.stderr.count("\n") == 1 and "no such file" in out.stderr, out.stderr
    out = cudoctor(["run", "--python", sys.executable, "--no-live", "--", *cmd], env=without_choice())
    assert out.returncode == 2 and "not with --no-live" in out.stderr and not marker.exists()


def test_run_with_a_broken_active_environment_keeps_the_commands_status(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    (broken / "bin").mkdir(parents=True)
    (broken / "bin" / "python").write_text("#!/bin/sh\nexit 3\n")
    (broken / "bin" / "python").chmod(0o755)
    out = cudoctor(
        ["run", "--", sys.executable, str(_failing(tmp_path))], env=without_choice(VIRTUAL_ENV=str(broken))
    )
    assert out.returncode == 3 and "Traceback" not in out.stderr
    assert "cudoctor: note: explained without this machine's facts: VIRTUAL_ENV's python" in out.stderr


def test_a_relative_python_path_is_taken_from_the_current_directory(env39: Path) -> None:
    """The child that asks the interpreter runs from /: a relative path must still name the same file."""
    argv = [sys.executable, "-m", "cudoctor", "check", "--python", "train/bin/python", "--format", "json"]
    env = without_choice(PYTHONPATH=os.path.join(ROOT, "src"))
    out = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=env39.parent, timeout=120)
    assert out.returncode in (0, 1), out.stderr
    facts = json.loads(out.stdout)["snapshot"]["facts"]
    assert facts["host.target"]["value"]["prefix"] == str(env39)
    assert facts["host.python"]["value"]["executable"] == str(env39 / "bin" / "python")
