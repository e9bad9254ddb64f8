"""`--python` and the active environment (issue 46): cudoctor in its own venv checks another one.

The environments are real: venvs made with `python -m venv` from the interpreters pyenv has on this
machine (skipped with a reason where one is missing), numpy installed into the 3.9 one with its own
pip (skipped without the package index). Every run goes through the real CLI in a child process.
"""

from __future__ import annotations

import glob
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from cudoctor.facts import packages
from tests.conftest import cudoctor

PYENV = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
NUMPY_39 = "numpy==1.26.4"  # a cp39 wheel; cudoctor's own venv has another numpy (2.x) and torch


def interpreter(version: str) -> str | None:
    """A real interpreter of `version` (e.g. '3.9'): pyenv's, else the system's; None when absent."""
    for pattern in (f"{PYENV}/versions/{version}.*/bin/python{version}", f"/usr/bin/python{version}"):
        found = sorted(glob.glob(pattern))
        if found and os.access(found[-1], os.X_OK):
            return found[-1]
    return None


def need(version: str) -> str:
    python = interpreter(version)
    if python is None:
        pytest.skip(f"no Python {version} on this machine (pyenv versions or /usr/bin)")
    return python


def make_venv(python: str, where: Path, with_pip: bool = False) -> Path:
    args = [python, "-m", "venv", *([] if with_pip else ["--without-pip"]), str(where)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        pytest.skip(f"{python} -m venv failed: {done.stderr.strip()[-200:]}")
    return where


@pytest.fixture(scope="session")
def venv39(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(need("3.9"), tmp_path_factory.mktemp("py39") / "train", with_pip=True)


@pytest.fixture(scope="session")
def numpy39(venv39: Path) -> Path:
    """The 3.9 venv with numpy installed by its own pip (from the package index, or pip's cache)."""
    cmd = [str(venv39 / "bin" / "python"), "-m", "pip", "install", "-q", "--only-binary", ":all:", NUMPY_39]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        pytest.skip(f"cannot install {NUMPY_39} into a 3.9 venv here: {done.stderr.strip()[-200:]}")
    return venv39


def without_choice(**env: str) -> dict[str, str]:
    """This environment without what picks the target (CUDOCTOR_PYTHON, VIRTUAL_ENV, CONDA_PREFIX), plus `env`."""
    base = {
        k: v for k, v in os.environ.items() if k not in ("CUDOCTOR_PYTHON", "VIRTUAL_ENV", "CONDA_PREFIX")
    }
    return {**base, **env}


def facts_of(args: list[str], env: Mapping[str, str] | None = None) -> dict[str, Any]:
    out = cudoctor([*args, "--format", "json"], env=env)
    assert out.returncode in (0, 1), out.stderr
    facts: dict[str, Any] = json.loads(out.stdout)["snapshot"]["facts"]
    return facts


def value(facts: Mapping[str, Any], key: str) -> Any:
    return facts[key]["value"]


def test_check_python_reports_that_environment_not_cudoctors(numpy39: Path) -> None:
    facts = facts_of(["check", "--python", str(numpy39 / "bin" / "python")])
    assert value(facts, "host.python")["version"].startswith("3.9.")
    assert value(facts, "host.python")["executable"] == str(numpy39 / "bin" / "python")
    target = value(facts, "host.target")
    assert target["self"] is False and target["chosen_by"] == "--python"
    assert target["prefix"] == str(numpy39)
    assert target["cudoctor_python"]["version"] == platform.python_version()
    installed = value(facts, "python.packages")
    assert installed.get("numpy") == "1.26.4" and "torch" not in installed
    assert facts["framework.torch"]["status"] == "absent"
    blas = [lib for lib in value(facts, "cpu.runtime_libs") if lib["kind"] == "blas"]
    assert blas and all(lib["path"].startswith(str(numpy39)) for lib in blas), blas


def test_an_environment_directory_names_its_interpreter(venv39: Path) -> None:
    facts = facts_of(["check", "--python", str(venv39)])
    assert value(facts, "host.target")["prefix"] == str(venv39)
    assert value(facts, "host.python")["version"].startswith("3.9.")


def test_the_activated_venv_is_the_default_and_the_first_line_says_so(numpy39: Path) -> None:
    env = without_choice(VIRTUAL_ENV=str(numpy39), PATH=f"{numpy39 / 'bin'}{os.pathsep}{os.environ['PATH']}")
    out = cudoctor(["check"], env=env)
    assert out.returncode in (0, 1), out.stderr
    version = value(facts_of(["check"], env), "host.python")["version"]
    first = out.stdout.splitlines()[0]
    assert first == f"checking {numpy39} (Python {version}, the active environment: VIRTUAL_ENV)"
    assert out.stdout.splitlines()[1].startswith("cudoctor summary")
    facts = facts_of(["check"], env)
    assert value(facts, "host.target")["chosen_by"] == "VIRTUAL_ENV"
    assert "numpy" in value(facts, "python.packages") and "torch" not in value(facts, "python.packages")


def test_a_conda_prefix_is_the_default_too(venv39: Path) -> None:
    facts = facts_of(["check"], without_choice(CONDA_PREFIX=str(venv39)))
    assert value(facts, "host.target")["chosen_by"] == "CONDA_PREFIX"
    assert value(facts, "host.python")["version"].startswith("3.9.")


def test_the_python_first_on_path_is_the_default_without_an_active_environment(venv39: Path) -> None:
    env = without_choice(PATH=f"{venv39 / 'bin'}{os.pathsep}{os.environ['PATH']}")
    facts = facts_of(["check"], env)
    target = value(facts, "host.target")
    assert target["chosen_by"] == "PATH" and target["prefix"] == str(venv39)


def test_cudoctors_own_venv_activated_keeps_todays_behaviour() -> None:
    """The test suite's and CI's case: the venv running cudoctor is the active one (VIRTUAL_ENV)."""
    env = without_choice(
        VIRTUAL_ENV=sys.prefix, PATH=f"{Path(sys.prefix) / 'bin'}{os.pathsep}{os.environ['PATH']}"
    )
    out = cudoctor(["check"], env=env)
    assert out.stdout.startswith("cudoctor summary"), out.stdout[:300]
    target = value(facts_of(["check"], env), "host.target")
    assert target["self"] is True and target["chosen_by"] == "VIRTUAL_ENV"


def test_python_self_gives_todays_facts() -> None:
    facts = facts_of(["check", "--python", "self"], without_choice(VIRTUAL_ENV="/nonexistent/env"))
    assert value(facts, "host.python")["version"] == platform.python_version()
    assert value(facts, "host.target")["self"] is True
    dists, _ = packages.scan(sys.path)
    assert value(facts, "python.packages") == {d.name: d.version for d in dists}


def test_a_python_37_environment_is_checked(tmp_path: Path) -> None:
    env37 = make_venv(need("3.7"), tmp_path / "tf1")
    out = cudoctor(["check", "--python", str(env37 / "bin" / "python"), "--format", "json"])
    assert out.returncode in (0, 1), out.stderr
    assert json.loads(out.stdout)["snapshot"]["facts"]["host.python"]["value"]["version"].startswith("3.7.")


def test_a_python_27_interpreter_answers() -> None:
    facts = facts_of(["check", "--python", need("2.7")])
    assert value(facts, "host.python")["version"].startswith("2.7.")
    assert value(facts, "host.target")["self"] is False


def test_probes_run_in_the_target_interpreter(numpy39: Path) -> None:
    out = cudoctor(
        ["probe", "--python", str(numpy39 / "bin" / "python"), "--framework", "numpy", "--format", "json"]
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr
    facts = json.loads(out.stdout)["snapshot"]["facts"]
    (result,) = facts["probe.results"]["value"]
    assert result["status"] == "ok" and result["info"]["version"] == "1.26.4"  # not cudoctor's numpy
    assert facts["host.target"]["value"]["prefix"] == str(numpy39)


def test_a_python_too_old_for_the_probe_child_is_not_probed() -> None:
    out = cudoctor(["probe", "--python", need("3.6"), "--format", "json"])
    fact = json.loads(out.stdout)["snapshot"]["facts"]["probe.results"]
    assert fact["status"] == "unknown" and "needs Python 3.7+" in fact["detail"]


def test_report_and_snapshot_save_take_python(venv39: Path, tmp_path: Path) -> None:
    py = str(venv39 / "bin" / "python")
    out = cudoctor(["report", "--python", py, "--format", "json", "--no-redact"])
    assert out.returncode in (0, 1), out.stderr
    assert json.loads(out.stdout)["snapshot"]["facts"]["host.python"]["value"]["version"].startswith("3.9.")
    db = str(tmp_path / "s.db")
    assert cudoctor(["snapshot", "save", "--python", py, "--db", db]).returncode == 0
    shown = cudoctor(["snapshot", "show", "latest", "--db", db])
    assert shown.stdout.splitlines()[1].startswith(f"checking {venv39} (Python 3.9.")


def _script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize(
    "kind, expect",
    [
        ("missing", "no such file"),
        ("not-executable", "is not executable"),
        ("directory", "no bin/python"),
        ("hangs", "did not answer within"),
        ("exits-1", "failed on start (exit status 1): boom"),
        ("not-python", "did not answer as a Python interpreter does"),
        ("not-a-program", "cannot be run"),
    ],
)
def test_a_python_that_cannot_be_asked_is_one_line_and_exit_2(tmp_path: Path, kind: str, expect: str) -> None:
    path = {
        "missing": lambda: str(tmp_path / "nope" / "python"),
        "not-executable": lambda: str(_not_executable(tmp_path / "python")),
        "directory": lambda: str(tmp_path),
        "hangs": lambda: _script(tmp_path / "python", "exec sleep 600"),
        "exits-1": lambda: _script(tmp_path / "python", "echo boom >&2; exit 1"),
        "not-python": lambda: _script(tmp_path / "python", "echo hello"),
        "not-a-program": lambda: str(_binary(tmp_path / "python")),
    }[kind]()
    start = time.monotonic()
    out = cudoctor(["check", "--python", path], env={**os.environ, "CUDOCTOR_TIMEOUT": "0.5"})
    assert out.returncode == 2, out.stdout[-500:] + out.stderr
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("cudoctor: error: "), out.stderr
    assert expect in out.stderr and out.stdout == ""
    assert time.monotonic() - start < 30


def test_a_broken_active_environment_is_exit_2_and_names_the_variable(tmp_path: Path) -> None:
    env_dir = tmp_path / "broken"
    (env_dir / "bin").mkdir(parents=True)
    _script(env_dir / "bin" / "python", "exit 3")
    out = cudoctor(["check"], env=without_choice(VIRTUAL_ENV=str(env_dir)))
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "VIRTUAL_ENV's python" in out.stderr and "--python self" in out.stderr


def test_python_is_refused_where_no_facts_are_collected() -> None:
    out = cudoctor(["check", "--python", sys.executable, "--no-live"])
    assert out.returncode == 2 and "not with --from or --no-live" in out.stderr


def _not_executable(path: Path) -> Path:
    path.write_text("#!/bin/sh\n")
    path.chmod(0o644)
    return path


def _binary(path: Path) -> Path:
    path.write_bytes(b"\x00\x01garbage")
    path.chmod(0o755)
    return path


def test_all_envs_checks_every_venv_under_the_current_directory(tmp_path: Path, venv39: Path) -> None:
    make_venv(need("3.7"), tmp_path / "projects" / "tf1" / ".venv")
    make_venv(str(venv39 / "bin" / "python"), tmp_path / "train")
    (tmp_path / "not-an-env" / "bin").mkdir(parents=True)
    env = without_choice(HOME=str(tmp_path / "home"))

    def all_envs(*more: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "cudoctor", "check", "--all-envs", *more]
        return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)

    out = all_envs("--format", "json")
    assert out.returncode in (0, 1), out.stderr
    rows = {r["env"]: r for r in json.loads(out.stdout)["envs"]}
    tf1, train = str(tmp_path / "projects" / "tf1" / ".venv"), str(tmp_path / "train")
    assert {tf1, train} <= set(rows), rows.keys()  # conda envs, where conda is installed, come too
    assert rows[tf1]["python"].startswith("3.7.") and rows[train]["python"].startswith("3.9.")
    assert rows[train]["layers"]["GPU & driver"] in ("ok", "warning", "error", "unknown")
    text = all_envs().stdout
    assert text.startswith("cudoctor: ") and "environment" in text.splitlines()[1]
    assert any(line.startswith(tf1) and " 3.7." in line for line in text.splitlines())
    assert "python 3.7" in text or "python 3.9" in text  # the odd one out is named


def test_all_envs_with_none_found_is_exit_2(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "cudoctor", "check", "--all-envs"]
    env = without_choice(HOME=str(tmp_path), PATH="/usr/bin:/bin")
    out = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 2 and "no conda env and no venv" in out.stderr
