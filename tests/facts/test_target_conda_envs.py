"""`cudoctor check --all-envs` finds conda environments where conda keeps them (issue 46).

conda and micromamba cannot be installed here (neither is on PyPI in a working form, nor in
Debian's archive), so the layout is conda's, made of real environments: venvs of the interpreters
pyenv has, each with the `conda-meta/` folder conda writes, in a base installation (~/miniconda3),
its `envs/`, a folder named by `envs_dirs` in ~/.condarc and one in CONDA_ENVS_PATH. No conda runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudoctor.facts import conda_dirs
from tests.conftest import ROOT
from tests.facts.test_target_python import make_venv, need, without_choice


def conda_env(python: str, where: Path) -> Path:
    env = make_venv(python, where)
    (env / "conda-meta").mkdir()
    (env / "conda-meta" / "history").write_text("==> 2026-01-01 00:00:00 <==\n# cmd: conda create\n")
    return env


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("conda-layout")
    home = base / "home"
    home.mkdir()
    envs = {
        "base": conda_env(need("3.9"), home / "miniconda3"),
        "tf1": conda_env(need("3.7"), home / "miniconda3" / "envs" / "tf1"),
        "train": conda_env(need("3.9"), base / "shared-envs" / "train"),
        "extra": conda_env(need("3.9"), base / "more-envs" / "extra"),
    }
    (home / ".condarc").write_text(
        "channels:\n  - conda-forge\nenvs_dirs:\n  - " + str(base / "shared-envs") + "  # the team's\n"
    )
    (base / "more-envs" / "not-an-env").mkdir()  # no conda-meta: not an environment
    return {"home": home, "more": base / "more-envs", **envs}


def test_envs_dirs_roots_and_condarc_are_read(layout: dict[str, Path]) -> None:
    env = {"HOME": str(layout["home"]), "PATH": "/usr/bin:/bin", "CONDA_ENVS_PATH": str(layout["more"])}
    found = dict(conda_dirs.find(env, 5)[0])
    assert found[str(layout["base"])] == "conda (base)"
    for name in ("tf1", "train", "extra"):
        assert found[str(layout[name])] == "conda (envs_dirs)", found
    assert str(layout["more"] / "not-an-env") not in found


def test_condarc_forms() -> None:
    assert conda_dirs.condarc_envs_dirs("envs_dirs: [/a, '~/b']\n") == ["/a", "~/b"]
    text = '# comment\nenvs_dirs:\n  - /x\n  - "/y z"  # mine\npkgs_dirs:\n  - /p\n'
    assert conda_dirs.condarc_envs_dirs(text) == ["/x", "/y z"]
    assert conda_dirs.condarc_envs_dirs("channels:\n  - defaults\n") == []


def test_all_envs_checks_every_conda_env(layout: dict[str, Path], tmp_path: Path) -> None:
    env = without_choice(
        HOME=str(layout["home"]),
        CONDA_ENVS_PATH=str(layout["more"]),
        PATH="/usr/bin:/bin",
        PYTHONPATH=os.path.join(ROOT, "src"),
    )
    argv = [sys.executable, "-m", "cudoctor", "check", "--all-envs"]
    out = subprocess.run(
        [*argv, "--format", "json"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600
    )
    assert out.returncode in (0, 1), out.stderr
    rows = {r["env"]: r for r in json.loads(out.stdout)["envs"]}
    for name, version in (("base", "3.9."), ("tf1", "3.7."), ("train", "3.9."), ("extra", "3.9.")):
        row = rows[os.path.realpath(layout[name])]
        assert row["python"].startswith(version) and "error" not in row, row
        assert row["found_by"].startswith("conda")
    text = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600).stdout
    assert any(
        line.startswith(os.path.realpath(layout["tf1"])) and " 3.7." in line for line in text.splitlines()
    )
