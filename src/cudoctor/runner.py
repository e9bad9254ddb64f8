"""The one way cudoctor runs another program: argv list, no shell, a timeout, a process group.

A child that hangs is killed with its whole process group; a child that crashes becomes a
result with its signal. Nothing here raises for a failing program.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence

DEFAULT_TIMEOUT_S = 10.0


@dataclasses.dataclass(frozen=True)
class RunResult:
    argv: tuple[str, ...]
    returncode: int | None  # None: could not start or timed out
    stdout: str
    stderr: str
    duration_s: float
    error: str = ""  # "timeout after 10 s", "not found: ptxas", ...

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.error

    @property
    def signal_name(self) -> str:
        if self.returncode is not None and self.returncode < 0:
            try:
                return signal.Signals(-self.returncode).name
            except ValueError:
                return f"signal {-self.returncode}"
        return ""

    def describe(self) -> str:
        if self.error:
            return self.error
        if self.signal_name:
            return f"killed by {self.signal_name}"
        return f"exit status {self.returncode}"


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    for sig, grace in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def run(
    argv: Sequence[str],
    timeout: float = DEFAULT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
    stdin_data: bytes | None = None,
    cwd: str | None = "/",
) -> RunResult:
    """Run argv with a timeout; never raises for the child's failures."""
    start = time.perf_counter()
    child_env = dict(os.environ if env is None else env)
    child_env.setdefault("LC_ALL", "C")
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_env,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        return RunResult(
            tuple(argv),
            None,
            "",
            "",
            time.perf_counter() - start,
            f"cannot run {argv[0]}: {exc.strerror or exc}",
        )
    try:
        out, err = proc.communicate(stdin_data, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        return RunResult(
            tuple(argv),
            None,
            _text(out),
            _text(err),
            time.perf_counter() - start,
            f"timed out after {timeout:g} s",
        )
    return RunResult(tuple(argv), proc.returncode, _text(out), _text(err), time.perf_counter() - start)


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", "replace")


def run_python(
    code: str, timeout: float, python: str | None = None, env: Mapping[str, str] | None = None
) -> RunResult:
    """Run a snippet in an isolated interpreter (-I: no user site, no cwd on sys.path)."""
    argv = [python or sys.executable, "-I", "-X", "faulthandler", "-c", code]
    child_env = dict(os.environ if env is None else env)
    child_env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    child_env["PYTHONFAULTHANDLER"] = "1"
    return run(argv, timeout=timeout, env=child_env)


SENTINEL = "@@CUDOCTOR@@"


def last_sentinel_line(stdout: str) -> str | None:
    """The payload of the last line a probe printed with the sentinel prefix."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(SENTINEL):
            return line[len(SENTINEL) :]
    return None
