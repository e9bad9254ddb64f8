"""`cudoctor run -- CMD`: the child's output comes through unchanged, its exit status is kept, and a
failure is explained after it (real child processes, real signals)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from cudoctor import supervise
from tests.conftest import ROOT, cudoctor

PY = sys.executable


def test_a_failing_child_keeps_its_output_and_status_and_is_explained() -> None:
    code = "import sys; print('epoch 1'); print('RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB', file=sys.stderr); sys.exit(3)"
    out = cudoctor(["run", "--no-live", "--", PY, "-c", code])
    assert out.returncode == 3
    assert out.stdout == "epoch 1\n"
    assert out.stderr.startswith("RuntimeError: CUDA out of memory")
    assert "[gpu-oom," in out.stderr and "exited with status 3" in out.stderr


def test_a_successful_child_comes_through_byte_for_byte_with_nothing_added() -> None:
    code = "import sys; sys.stdout.buffer.write(bytes(range(256)) * 3); sys.stderr.write('progress 50%\\r')"
    out = subprocess.run(
        [PY, "-m", "cudoctor", "run", "--", PY, "-c", code], capture_output=True, cwd=ROOT, timeout=60
    )
    assert out.returncode == 0
    assert out.stdout == bytes(range(256)) * 3 and out.stderr == b"progress 50%\r"


def test_what_cannot_run_or_is_missing_is_one_line() -> None:
    missing = cudoctor(["run", "--", "no-such-command-cudoctor"])
    assert missing.returncode == 127 and len(missing.stderr.strip().splitlines()) == 1
    empty = cudoctor(["run"])
    assert empty.returncode == 2 and "no command" in empty.stderr and "Traceback" not in empty.stderr


def test_a_failure_without_a_gpu_error_says_so_in_one_line() -> None:
    out = cudoctor(["run", "--no-live", "--", PY, "-c", "import sys; print('KeyError: x'); sys.exit(1)"])
    assert out.returncode == 1
    assert out.stderr.strip().startswith("cudoctor:") and len(out.stderr.strip().splitlines()) <= 6


def test_a_death_by_signal_is_128_plus_n() -> None:
    out = cudoctor(
        ["run", "--no-live", "--", PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"]
    )
    assert out.returncode == 128 + signal.SIGTERM and "killed by signal 15" in out.stderr


def test_sigint_goes_to_the_child_which_decides_the_status(tmp_path: Path) -> None:
    code = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGINT, lambda *a: (print('child got SIGINT', flush=True), sys.exit(7)))\n"
        "print('ready', flush=True)\n"
        "time.sleep(30)\n"
    )
    proc = subprocess.Popen(
        [PY, "-m", "cudoctor", "run", "--no-live", "--", PY, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "src")},
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=30)
    assert proc.returncode == 7 and b"child got SIGINT" in rest


def test_json_out_holds_the_status_and_the_explanation(tmp_path: Path) -> None:
    path = tmp_path / "why.json"
    code = (
        "import sys; print('RuntimeError: CUDA error: an illegal memory access was encountered'); sys.exit(1)"
    )
    cudoctor(["run", "--no-live", "--json-out", str(path), "--", PY, "-c", code])
    doc = json.loads(path.read_text())
    assert (
        doc["status"] == 1 and doc["command"][0] == PY and doc["causes"][0]["id"] == "illegal-memory-access"
    )


def test_save_keeps_the_output_and_a_snapshot(tmp_path: Path) -> None:
    db = tmp_path / "snaps.sqlite"
    code = "import sys; print('RuntimeError: CUDA error: out of memory'); sys.exit(1)"
    out = cudoctor(["run", "--no-live", "--save", "--db", str(db), "--", PY, "-c", code])
    logs = list((tmp_path / "runs").glob("*.log"))
    assert (
        logs and "out of memory" in logs[0].read_text() and f"cudoctor report --log {logs[0]}" in out.stderr
    )
    listed = cudoctor(["snapshot", "list", "--db", str(db)])
    assert "run " in listed.stdout


def test_a_pseudo_terminal_is_a_terminal_to_the_child(capfd: object) -> None:
    outcome = supervise.run([PY, "-c", "import sys; print(sys.stdout.isatty())"], use_pty=True)
    assert outcome.status == 0 and outcome.record.text().strip() == "True"


def test_the_record_keeps_the_head_and_the_tail_within_bounds() -> None:
    record = supervise.Record(head=10, tail=20)
    for i in range(100):
        record.add(f"line {i:03d}\n".encode())
    text = record.text()
    assert text.startswith("line 000\nl") and text.endswith("line 099\n")
    assert record.size == 900 and record.dropped > 0 and f"{record.dropped} bytes" in text
    assert len(record.head) == 10 and record.tail_size < 20 + 9


def test_a_saved_run_goes_into_a_report_with_its_explanation(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(
        "epoch 1\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (/home/bob/train.py)\n"
    )
    md = cudoctor(["report", "--log", str(log), "--no-live"])
    assert "### The log (run.log)" in md.stdout and "[gpu-oom" not in md.stdout and "`gpu-oom`" in md.stdout
    assert "/home/bob" not in md.stdout  # redacted like the rest of the report
    doc = json.loads(cudoctor(["report", "--log", str(log), "--no-live", "--format", "json"]).stdout)
    assert doc["log"]["file"] == "run.log" and doc["log"]["causes"][0]["id"] == "gpu-oom"
