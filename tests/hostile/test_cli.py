"""Any arguments to the commands that read files and facts: the contract holds (exit 0/1/2, one
line for bad input, no traceback). `run` and `probe` start other programs and are left out."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.hostile.contract import run, write

TOKENS = [
    "--format",
    "json",
    "markdown",
    "html",
    "text",
    "-v",
    "--only",
    "--ignore",
    "driver-too-old",
    "toolkit-needs-newer-driver,cpu-only-build",
    "x,,y",
    "--facts",
    "FACTS",
    "--from",
    "REPORT",
    "--since",
    "good",
    "latest",
    "1",
    "--snapshot",
    "REPORT",
    "--no-live",
    "--no-record",
    "--no-redact",
    "-o",
    "OUTFILE",
    "--log",
    "LOG",
    "--limit",
    "0",
    "--label",
    "a b",
    "--",
    "-",
    "",
]
COMMANDS = [
    ["check", "--no-live"],
    ["explain", "LOG"],
    ["report", "--no-live"],
    ["diff"],
    ["snapshot", "show"],
    ["snapshot", "list"],
    ["fleet", "aggregate"],
]


@given(
    st.sampled_from(COMMANDS), st.lists(st.one_of(st.sampled_from(TOKENS), st.text(max_size=12)), max_size=6)
)
def test_any_arguments_are_answered_or_refused_in_one_line(command: list[str], extra: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        files = {
            "FACTS": write(
                tmp / "facts.json",
                '{"gpu": "A100", "driver": "450.80", "framework_version": "torch 2.1.0+cu121"}',
            ),
            "REPORT": write(
                tmp / "report.txt", "Nvidia driver version: 450.80\nPyTorch version: 2.1.0+cu121\n"
            ),
            "LOG": write(tmp / "x.log", "RuntimeError: CUDA error: no kernel image is available\n"),
            "OUTFILE": str(tmp / "out.html"),
        }
        argv = [files.get(a, a) for a in (*command, *extra)]
        here = os.getcwd()
        os.chdir(tmp)  # a generated '-o NAME' writes there, where it was asked to
        try:
            run(argv, env={"CUDOCTOR_DB": str(tmp / "s.db")})
        finally:
            os.chdir(here)
        ours = {"facts.json", "report.txt", "x.log", "out.html", "s.db", "s.db-wal", "s.db-shm"}
        made = {p.name for p in tmp.iterdir()} - ours
        assert made <= {a for a in extra if a and "/" not in a}  # only what an -o named
