"""explain under hostile logs (issue 44, points 4, 7, 8) and a fuzz run over log bytes."""

from __future__ import annotations

import gzip
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import cudoctor
from cudoctor.explainer import signatures
from tests.conftest import ROOT
from tests.hostile.contract import run, write

OOM = "RuntimeError: CUDA error: out of memory"


def _root(path: str) -> dict[str, object]:
    outcome = run(["explain", "--no-live", "--format", "json", path])
    doc = outcome.json()
    assert isinstance(doc, dict)
    return doc["root"] or {}


def test_one_long_line_full_of_anchors_is_scanned_in_linear_time(tmp_path: Path) -> None:
    """'os: ' * 2,000,000 (8 MB, one line) took 89 s: each hit searched back to the line's start."""
    path = write(tmp_path / "os.log", "os: " * 2_000_000)
    proc = subprocess.run(
        [sys.executable, "-m", "cudoctor", "explain", "--no-live", path],
        capture_output=True,
        timeout=30,
        cwd=ROOT,
    )
    assert proc.returncode in (0, 1)


@pytest.mark.parametrize(
    "text",
    [
        "\x1b[0m" * 1_000_000 + OOM + "\n",  # after a million colour codes
        "x" * 20_000_000 + " " + OOM,  # at the end of a 20 MB line
        "loss 0.1 " * 600 + OOM + " tail" * 300 + "\n",  # in the middle of a 7 KB line
        "10%|█         |\r" * 5000 + OOM + "\n",  # after a progress bar rewritten with carriage returns
    ],
    ids=["after-ansi", "end-of-20mb-line", "middle-of-7kb-line", "after-progress-bar"],
)
def test_an_error_deep_inside_a_long_line_is_found(tmp_path: Path, text: str) -> None:
    root = _root(write(tmp_path / "long.log", text))
    text = str(root.get("text"))
    assert root.get("signature") and OOM in text and len(text) < 300  # the piece around it, not the line


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (gzip.compress(b"RuntimeError: CUDA error: out of memory\n" * 2000)[:300], "truncated"),
        (b"\x1f\x8bxxxxxxxxxxxxxxxxxxxxxxxx", "not a valid gzip file"),
        (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbagegarbage", "not a valid gzip file"),
    ],
    ids=["truncated", "bad-header", "bad-deflate"],
)
def test_a_damaged_gzip_log_is_refused_in_one_line(tmp_path: Path, data: bytes, said: str) -> None:
    outcome = run(["explain", "--no-live", write(tmp_path / "log.gz", data)])
    assert outcome.status == 2 and said in outcome.err


def test_an_unreadable_file_is_refused_in_one_line() -> None:
    outcome = run(["explain", "--no-live", "/proc/self/mem"])
    assert outcome.status == 2 and "Input/output error" in outcome.err


def _shell(command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=60, cwd=ROOT)


@pytest.mark.parametrize(
    ("redirect", "said"),
    [
        ("- <&-", "standard input is closed"),
        ("LOG >/dev/full", "cannot write the output: No space left on device"),
        ("LOG >&-", "standard output is closed"),
    ],
    ids=["stdin-closed", "stdout-full", "stdout-closed"],
)
def test_closed_or_full_standard_streams_are_said_in_one_line(
    tmp_path: Path, redirect: str, said: str
) -> None:
    log = write(tmp_path / "x.log", OOM + "\n")
    proc = _shell(f"{sys.executable} -m cudoctor explain --no-live {redirect.replace('LOG', log)}")
    assert proc.returncode == 2 and proc.stderr.startswith(f"cudoctor: error: {said}"), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_reader_that_goes_away_is_not_an_error(tmp_path: Path) -> None:
    log = write(tmp_path / "x.log", (OOM + "\n") * 50)
    proc = _shell(f"{sys.executable} -m cudoctor explain --no-live -v {log} | head -c 10")
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr


# ------------------------------------------------------------------ fuzzing: lines explain reads

_EXAMPLES = sorted({e for sig in signatures.load() for e in sig.examples[:1]})
_PIECES = st.one_of(
    st.sampled_from(_EXAMPLES),
    st.text(max_size=200),
    st.sampled_from(
        [
            "\x1b[31m",
            "\x1b[0m",
            "\r",
            "\n",
            "\t",
            "\x00",
            "\ufeff",
            "[rank3]: ",
            "E1120 10:00:00.1 1 x.cc:1] ",
        ]
    ),
    st.builds(lambda s, n: s * n, st.sampled_from(["os: ", "a", "9", "cuda", " "]), st.integers(1, 3000)),
)


@given(st.lists(_PIECES, max_size=30), st.sampled_from(["plain", "gzip", "utf-16", "truncated-gzip"]))
def test_any_log_is_explained_or_refused_in_one_line(pieces: list[str], form: str) -> None:
    data = "".join(pieces).encode("utf-8", "surrogatepass")
    if form == "gzip":
        data = gzip.compress(data)
    elif form == "truncated-gzip":
        data = gzip.compress(data)[: max(2, len(data) // 3)]
    elif form == "utf-16":
        data = "".join(pieces).encode("utf-16", "surrogatepass")
    with tempfile.TemporaryDirectory() as folder:
        path = write(Path(folder) / "fuzz.log", data)
        outcome = run(["explain", "--no-live", "--format", "json", path])
        if outcome.status in (0, 1):
            assert isinstance(outcome.json(), dict)


@given(st.binary(max_size=3000))
def test_any_bytes_are_explained_by_the_python_api(data: bytes) -> None:
    try:
        diagnosis = cudoctor.explain(data, live=False)
    except ValueError as exc:  # a NUL byte near the start: binary, not a log
        assert "binary" in str(exc)
        return
    assert diagnosis.matched in (True, False)


def test_hits_close_together_on_different_lines_are_each_matched() -> None:
    """Hits closer than scan.SPACING are kept once only when no newline lies between them."""
    import io

    from cudoctor.explainer import scan

    result = scan.scan(io.BytesIO((("os: " * 10 + "\n" + OOM + "\n") * 300).encode()))
    assert sum(result.counts.values()) >= 300 and result.lines == 600
