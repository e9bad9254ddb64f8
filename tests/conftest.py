"""Shared helpers: snapshots built from stated facts, real tools found on this machine."""

from __future__ import annotations

import atexit
import importlib.util
import io
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

if "CUDOCTOR_DB" not in os.environ:  # one snapshot store per test session, removed when it ends
    _TEST_DB_DIR = tempfile.mkdtemp(prefix="cudoctor-test-db-")
    os.environ["CUDOCTOR_DB"] = os.path.join(_TEST_DB_DIR, "snapshots.db")
    atexit.register(shutil.rmtree, _TEST_DB_DIR, True)
# `cudoctor check` in a child inspects cudoctor's own environment (the venv running the tests), not the
# python3 first on PATH when that venv is not activated (issue 46); tests of that choice unset this.
os.environ.setdefault("CUDOCTOR_PYTHON", "self")

from cudoctor.checks import all_checks, run_one
from cudoctor.explainer import rank, scan
from cudoctor.facts.stated import from_stated
from cudoctor.model import CheckResult, Snapshot, known

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")


def python_output(
    code: str, env: Mapping[str, str] | None = None, timeout: int = 300, cwd: str | Path | None = None
) -> tuple[int, str]:
    """Exit status and stdout + stderr of `code` run by this Python in a child process, with `env`
    added to this environment (what a user would paste from a terminal), from `cwd` when given."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )
    return done.returncode, done.stdout + done.stderr


needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")


def torch_error(code: str) -> str:
    """What `code` printed when it failed, run by this Python in a child process with torch imported first."""
    status, out = python_output("import torch\n" + code, timeout=180)
    assert status != 0, out
    return out


def stated(facts: Mapping[str, Any], hint: str | None = None, **extra: Any) -> Snapshot:
    """A snapshot of facts a person stated, plus extra facts given as key=value (dots as __)."""
    snap = from_stated(facts, hint)
    for key, value in extra.items():
        snap.add(known(key.replace("__", "."), value, "test"))
    return snap


def run_check(check_id: str, snap: Snapshot) -> CheckResult:
    chk = next(c for c in all_checks() if c.id == check_id)
    return run_one(chk, snap)


def finding_ids(result: CheckResult) -> list[str]:
    return [f.id for f in result.findings]


def cudoctor(
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a child process."""
    return subprocess.run(
        [sys.executable, "-m", "cudoctor", *args],
        capture_output=True,
        text=stdin is None,
        input=stdin,
        env=dict(os.environ if env is None else env),
        timeout=timeout,
        cwd=ROOT,
    )


# NVIDIA's pip wheels for real CUDA 12 parts (about 52 MB), installed once per session into a
# temporary target with pip; without the package index the tests that need them skip.
WHEELS = ["jax-cuda12-plugin==0.10.2", "nvidia-cuda-runtime-cu12==12.9.79", "nvidia-cuda-nvcc-cu12==12.9.86"]


def _pip_target(target: Path, reqs: list[str]) -> None:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "-q",
        "--no-deps",
        "--no-compile",
        "--target",
        str(target),
        *reqs,
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        pytest.skip(f"cannot install NVIDIA wheels here: {out.stderr.strip().splitlines()[-1:]}")


@pytest.fixture(scope="session")
def wheel_sites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if sys.version_info[:2] != (3, 11):
        pytest.skip("jax-cuda12-plugin 0.10.2 is pinned for CPython 3.11 here")
    base = tmp_path_factory.mktemp("nvidia-wheels")
    full, bare = base / "full", base / "plugin-only"
    _pip_target(full, WHEELS)
    bare.mkdir()
    for name in os.listdir(full):
        if name.startswith("jax_cuda12_plugin"):
            shutil.copytree(full / name, bare / name, symlinks=True)
    return {"full": full, "bare": bare}


@pytest.fixture(scope="session")
def cuda11_ptxas(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real CUDA 11.8 ptxas: NVIDIA's nvidia-cuda-nvcc-cu11 wheel (about 46 MB unpacked), installed
    once per session like wheel_sites; without the package index the tests that need it skip."""
    target = tmp_path_factory.mktemp("nvcc-cu11")
    _pip_target(target, ["nvidia-cuda-nvcc-cu11==11.8.89"])
    return target / "nvidia" / "cuda_nvcc" / "bin" / "ptxas"


needs_nvcc = pytest.mark.skipif(
    shutil.which("nvcc") is None, reason="needs the CUDA toolkit's nvcc (present on these machines)"
)
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def build_shared_lib(out: Path, src: str, *flags: str) -> Path:
    """Compile C source `src` into the shared library `out` with gcc (source kept beside it)."""
    c = out.with_suffix(".c")
    c.write_text(src)
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-o", str(out), str(c), *flags], check=True, capture_output=True
    )
    return out


# ---------------------------------------------------------------- explain: a pasted log and what it says
def explained(text: str, snap: Snapshot | None = None) -> rank.Explanation:
    """`text` as a user would paste it, explained against the facts in `snap` (none when None)."""
    return rank.explain(scan.scan(io.BytesIO(text.encode())), snap if snap is not None else Snapshot())


def first(exp: rank.Explanation) -> dict[str, object]:
    """The first-ranked cause as `cudoctor explain --format json` gives it."""
    return rank.cause_json(exp.causes, 0)


def ids(exp: rank.Explanation) -> list[str]:
    """The ids of the first three causes, in rank order."""
    return [c.id for c in exp.causes[:3]]


def fixes(exp: rank.Explanation) -> list[str]:
    """The first-ranked cause's steps, in order."""
    steps = first(exp)["fix"]
    assert isinstance(steps, list)
    return steps


def load_tool(name: str) -> Any:
    """A script of tools/ as a module (tools/score_scenarios.py judges the scenario tables the way the
    blind figures were made)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "tools", f"{name}.py"))
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_as_marked(row: dict[str, Any], problems: list[str]) -> None:
    """A scenario row passes, or fails while it carries known_miss (which must go once it passes)."""
    if "known_miss" in row:
        assert problems, f"{row['id']} passes now: remove its known_miss ({row['known_miss']})"
    else:
        assert not problems, problems
