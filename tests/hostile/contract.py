"""The contract every command keeps under hostile input (issue 44), checked in this process so a
fuzz run can try hundreds of inputs a minute: exit status 0, 1 or 2; for 2, the reason in one
line on stderr; never a traceback, never cudoctor's own 'internal error' line."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from cudoctor import cli


@dataclass
class Outcome:
    status: int
    out: str
    err: str

    def json(self) -> object:
        return json.loads(self.out)


@contextlib.contextmanager
def _captured() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    out, err = io.StringIO(), io.StringIO()
    old = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        yield out, err
    finally:
        sys.stdout, sys.stderr = old


def run(argv: Sequence[str], env: dict[str, str] | None = None) -> Outcome:
    """cudoctor's main() with argv, in this process; asserts the contract."""
    saved = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    try:
        with _captured() as (out, err):
            try:
                status = cli.main(list(argv))
            except SystemExit as exc:  # argparse refusing an argument
                status = int(exc.code or 0)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    outcome = Outcome(status, out.getvalue(), err.getvalue())
    holds(outcome, argv)
    return outcome


def holds(outcome: Outcome, argv: Sequence[str]) -> None:
    where = f"cudoctor {' '.join(str(a)[:80] for a in argv)}"
    assert outcome.status in (0, 1, 2), f"{where}: exit {outcome.status}\n{outcome.err[-2000:]}"
    assert "Traceback" not in outcome.err, f"{where}:\n{outcome.err[-3000:]}"
    assert "internal error" not in outcome.err, f"{where}: {outcome.err[-1000:]}"
    if outcome.status == 2:
        said = [line for line in outcome.err.splitlines() if "error:" in line]
        assert len(said) == 1, f"{where}: exit 2 must say why in one line, said {outcome.err[-1000:]!r}"


def write(path: Path, data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    path.write_bytes(data)
    return str(path)
