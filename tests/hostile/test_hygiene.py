"""Redaction of short host names and bounded external tools (issue 44, points 13 and 14)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from cudoctor.facts import kernel_log
from cudoctor.redact import Redactor


def test_a_short_host_name_is_redacted_where_it_names_the_host() -> None:
    r = Redactor(home="/root", host="vm", user="root")
    out = r.data({"host.name": {"value": "vm"}, "prompt": "root@vm:~$ nvidia-smi", "other": "the vm image"})
    assert out == {
        "host.name": {"value": "<host>"},
        "prompt": "root@<host>:~$ nvidia-smi",
        "other": "the vm image",
    }


def test_a_long_host_name_is_redacted_as_a_word() -> None:
    r = Redactor(home="/root", host="gpu-node-7", user="root")
    assert r.text("ssh gpu-node-7 failed on gpu-node-70") == "ssh <host> failed on gpu-node-70"


def test_a_timed_out_kernel_log_reader_leaves_no_child_running(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    fact = kernel_log.xid_events(("sh", "-c", f"sleep 60 & echo $! > {pid_file}; wait"), timeout=0.5)
    assert fact.status.value == "unknown" and "timed out" in fact.detail
    pid = int(pid_file.read_text())
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, 9)
    raise AssertionError("the reader's child outlived its timeout")
