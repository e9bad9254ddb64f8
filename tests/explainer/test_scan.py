"""scan: the line numbers of hits, the line count and the tail stay right wherever the chunks end
(lines straddling chunks, a newline as a chunk's last byte, lines longer than a chunk), with CRLF, no
final newline and gzip, whichever way the log is read (a file into a reused buffer, a gzip stream as
it comes) and with either prefilter engine."""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import IO

import pytest

from cudoctor.explainer import scan

ERRORS = [
    "RuntimeError: CUDA error: device-side assert triggered",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle)`",
]
ENGINES = ["python", "auto"]


def make_log(lines: int = 400, every: int = 37) -> list[str]:
    """Filler lines of varying length, an error line every `every` lines, some blank lines."""
    out = []
    for i in range(1, lines + 1):
        if i % every == 0:
            out.append(f"[rank{i % 8}]: " + ERRORS[(i // every) % len(ERRORS)])
        elif i % 29 == 0:
            out.append("")
        else:
            out.append(f"epoch {i % 5} step {i} loss 0.{i:04d}" + " ." * (i % 23))
    return out


def expected(lines: list[str]) -> list[tuple[int, str]]:
    return [(n, line) for n, line in enumerate(lines, 1) if any(e in line for e in ERRORS)]


def stream(tmp_path: Path, data: bytes, kind: str) -> IO[bytes]:
    if kind == "bytesio":
        return io.BytesIO(data)
    path = tmp_path / ("log.gz" if kind == "gzip" else "log")
    path.write_bytes(gzip.compress(data) if kind == "gzip" else data)
    return scan.open_log(str(path))  # a file: BufferedReader; gzip: GzipFile


def scanned(tmp_path: Path, data: bytes, kind: str, engine: str) -> scan.ScanResult:
    with stream(tmp_path, data, kind) as fh:
        return scan.scan(fh, engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kind", ["file", "bytesio", "gzip"])
@pytest.mark.parametrize("chunk", [7, 64, 97, 1000, scan.CHUNK])
def test_hit_lines_and_count_are_right_wherever_chunks_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, kind: str, engine: str
) -> None:
    """Chunks of 7 bytes: every line straddles chunks and the error lines are longer than a chunk."""
    monkeypatch.setattr(scan, "CHUNK", chunk)
    lines = make_log()
    result = scanned(tmp_path, ("\n".join(lines) + "\n").encode(), kind, engine)
    assert [(m.line, m.text) for m in result.matches] == expected(lines)
    assert result.lines == len(lines) and result.bytes == len("\n".join(lines)) + 1
    assert result.tail == [(n, t) for n, t in enumerate(lines, 1) if t.strip()][-scan.TAIL_LINES :]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_newline_as_the_last_byte_of_a_chunk(monkeypatch: pytest.MonkeyPatch, engine: str) -> None:
    head = "x" * 63  # with its newline, exactly one 64-byte chunk
    lines = [head, ERRORS[0], head, head, ERRORS[1]]
    monkeypatch.setattr(scan, "CHUNK", 64)
    result = scan.scan(io.BytesIO(("\n".join(lines) + "\n").encode()), engine=engine)
    assert [(m.line, m.text) for m in result.matches] == [(2, ERRORS[0]), (5, ERRORS[1])]
    assert result.lines == 5


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("chunk", [5, 64, scan.CHUNK])
def test_crlf_lines_number_as_lf_lines_and_lose_their_cr(
    monkeypatch: pytest.MonkeyPatch, chunk: int, engine: str
) -> None:
    monkeypatch.setattr(scan, "CHUNK", chunk)
    lines = make_log(200, every=13)
    result = scan.scan(io.BytesIO(("\r\n".join(lines) + "\r\n").encode()), engine=engine)
    assert [(m.line, m.text) for m in result.matches] == expected(lines)
    assert result.lines == len(lines)
    assert [n for n, _ in result.tail] == [n for n, t in enumerate(lines, 1) if t.strip()][-scan.TAIL_LINES :]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kind", ["file", "gzip"])
@pytest.mark.parametrize("chunk", [6, 64, scan.CHUNK])
def test_a_last_line_without_a_newline_is_counted_and_matched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, kind: str, engine: str
) -> None:
    monkeypatch.setattr(scan, "CHUNK", chunk)
    lines = [*make_log(100, every=31), ERRORS[2]]
    result = scanned(tmp_path, "\n".join(lines).encode(), kind, engine)
    assert [(m.line, m.text) for m in result.matches] == expected(lines)
    assert result.matches[-1].line == result.lines == len(lines) == 101
    assert result.tail[-1] == (101, ERRORS[2])


@pytest.mark.parametrize("engine", ENGINES)
def test_a_line_longer_than_the_carry_limit_is_matched_in_pieces(
    monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    monkeypatch.setattr(scan, "CHUNK", 4096)
    monkeypatch.setattr(scan, "MAX_CARRY", 10_000)
    long = "x" * 30_000 + " " + ERRORS[0] + " " + "y" * 20_000
    lines = ["epoch 1", long, ERRORS[1]]
    result = scan.scan(io.BytesIO(("\n".join(lines) + "\n").encode()), engine=engine)
    assert [m.line for m in result.matches] == [2, 3]
    assert ERRORS[0] in result.matches[0].text and result.lines == 3


def test_the_tail_is_the_last_non_blank_lines_after_many_blank_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan, "CHUNK", 4096)
    lines = [f"line {i}" for i in range(1, 101)] + [""] * 5000 + ["  ", ERRORS[0], ""] + [""] * 3000
    result = scan.scan(io.BytesIO(("\n".join(lines) + "\n").encode()))
    assert result.tail[-1] == (5102, ERRORS[0]) and result.lines == len(lines)
    assert all(t.strip() for _, t in result.tail)


def test_a_reused_read_buffer_leaves_no_stale_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file longer than a chunk is read into one buffer; its last, short chunk must not show the
    bytes the chunk before left in it (an error there would be matched twice, or at a wrong line)."""
    monkeypatch.setattr(scan, "CHUNK", 100)
    data = ("a" * 40 + "\n") * 4 + ERRORS[0] + "\n" + "b\n"
    result = scanned(tmp_path, data.encode(), "file", "auto")
    assert [(m.line, m.text) for m in result.matches] == [(5, ERRORS[0])]
    assert result.lines == 6 and result.tail[-2:] == [(5, ERRORS[0]), (6, "b")]


def test_both_engines_find_the_same_lines_in_a_hostile_mix() -> None:
    """ANSI colours splitting an anchor, rank prefixes, carriage returns, a line of many anchors."""
    raw = (
        b"\x1b[31mRuntimeError: CUDA error: device-side \x1b[0massert triggered\n"
        + b"progress 10%\rprogress 99%\r" + ERRORS[1].encode() + b"\n"
        + (b"CUDA out of memory " * 400) + b"\n"
        + b"[rank3]: " + ERRORS[2].encode()
    )  # fmt: skip
    a, b = (scan.scan(io.BytesIO(raw), engine=e) for e in ENGINES)
    assert [(m.line, m.sig.id) for m in a.matches] == [(m.line, m.sig.id) for m in b.matches]
    assert {m.line for m in b.matches} >= {2, 3, 4} and a.lines == b.lines == 4
    # a piece of a long line is cut around where each engine reports a hit (its end, its start)
    assert [m.text for m in a.matches if m.line != 3] == [m.text for m in b.matches if m.line != 3]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("data", [b"", b"\n", b"no newline"])
def test_empty_and_one_line_logs(engine: str, data: bytes) -> None:
    result = scan.scan(io.BytesIO(data), engine=engine)
    assert (result.lines, result.bytes, result.matches) == (len(data.splitlines()), len(data), [])
