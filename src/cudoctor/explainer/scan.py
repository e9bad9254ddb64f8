"""Stream a log of any size through the signatures in constant memory.

Bytes are read in chunks; a literal-anchor prefilter (Hyperscan when installed, else
`bytes.find` per anchor) finds the few candidate lines, and only those are decoded,
normalised and matched against the full signature patterns.
"""

from __future__ import annotations

import bisect
import codecs
import collections
import dataclasses
import gzip
import io
import os
import re
import sys
import zlib
from collections.abc import Callable
from typing import IO, cast

from cudoctor import textfiles
from cudoctor.explainer import benign, logfacts, signatures
from cudoctor.explainer.benign import BenignHit
from cudoctor.explainer.signatures import Signature

CHUNK = 8 << 20
MAX_CARRY = 1 << 20  # a "line" longer than this is scanned in pieces
KEEP_LINE = 2000  # characters of a matched line kept for the report
LONG_LINE = KEEP_LINE  # bytes: a longer line is matched in pieces around its anchor hits
WINDOW = 1000  # bytes either side of an anchor hit in a long line
MAX_WINDOWS = 64  # pieces matched per long line
SPACING = 256  # bytes: hits closer than this on one line are kept once (a line of anchors stays small)
PIECE_CONTEXT = 80  # characters shown either side of a match in a piece of a long line
MAX_MATCHES_PER_SIG = 50
TAIL_LINES = 40

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
ANSI_BYTES = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")
PREFIXES = [
    re.compile(r"^\[?rank\s*(?P<rank>\d+)\]?\s*:\s*", re.I),
    re.compile(r"^\[\d+,(?P<rank>\d+)\]<std(?:out|err)>:\s*"),
    re.compile(r"^(?P<rank>\d{1,5}):\s+(?=\S)"),
    re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?:?\s*"),
    re.compile(r"^\[\s*\d+\.\d+\]\s*"),
    re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+\s+\S+:\d+\]\s*"),
    re.compile(r"^[IWEF] \S+\.(?:cc|cpp|h|py):\d+\]\s*"),
]


class LogError(ValueError):
    """The log cannot be read as text."""


@dataclasses.dataclass(frozen=True)
class Match:
    line: int  # 1-based
    text: str  # the line as written (ANSI and CR removed)
    body: str  # normalised: prefixes (timestamps, ranks) removed
    rank: int | None
    sig: Signature
    captures: dict[str, str]


@dataclasses.dataclass
class ScanResult:
    matches: list[Match] = dataclasses.field(default_factory=list)
    counts: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    lines: int = 0
    bytes: int = 0
    tail: list[tuple[int, str]] = dataclasses.field(default_factory=list)
    engine: str = ""
    # known harmless lines, by kind: those an error anchor led to, and those in the tail
    benign: dict[str, BenignHit] = dataclasses.field(default_factory=dict)
    harmless_tail: set[int] = dataclasses.field(default_factory=set)  # tail lines that are harmless
    facts: dict[str, tuple[int, str]] = dataclasses.field(default_factory=dict)  # stated by the log
    vetoed: collections.deque[int] = dataclasses.field(
        default_factory=lambda: collections.deque(maxlen=TAIL_LINES)
    )  # the last lines a signature would have matched, had they not been harmless

    def plain_tail(self) -> list[tuple[int, str]]:
        """The tail's lines, known harmless ones left out: where a root is looked for when no signature matched."""
        return [(n, raw) for n, raw in self.tail if n not in self.harmless_tail]


def normalise(raw: str) -> tuple[str, str, int | None]:
    """(display text, body without prefixes, rank) for one line."""
    text = ANSI.sub("", raw).replace("\r", "").rstrip()
    body, rank = text, None
    for _ in range(3):
        for rx in PREFIXES:
            m = rx.match(body)
            if m:
                if "rank" in rx.groupindex and m.group("rank") and rank is None:
                    rank = int(m.group("rank"))
                body = body[m.end() :]
                break
        else:
            break
    return text, body, rank


def open_log(path: str) -> IO[bytes]:
    """A binary stream for a path, '-' (stdin) or a gzip file; raises LogError with one line."""
    if path == "-":
        if sys.stdin is None:
            raise LogError("standard input is closed: nothing to explain")
        stream: IO[bytes] = sys.stdin.buffer
    else:
        if os.path.isdir(path):
            raise LogError(f"{path} is a directory, not a log file")
        try:
            stream = open(path, "rb")  # noqa: SIM115 - closed by the caller
        except FileNotFoundError:
            raise LogError(f"{path} does not exist") from None
        except OSError as exc:
            raise LogError(f"cannot read {path}: {exc.strerror}") from None
    name = "standard input" if path == "-" else path
    try:
        head = stream.peek(2)[:2] if isinstance(stream, io.BufferedReader) else b""
        if head == b"\x1f\x8b":
            stream = cast(IO[bytes], gzip.GzipFile(fileobj=stream))
        peek = getattr(stream, "peek", None)  # BufferedReader and GzipFile have it
        encoding = textfiles.utf16_encoding(peek(512)[:512]) if peek is not None else None
    except READ_ERRORS as exc:
        stream.close()
        raise LogError(f"cannot read {name}: {read_error(exc)}") from None
    return cast(IO[bytes], _AsUtf8(stream, encoding)) if encoding else stream


READ_ERRORS = (OSError, EOFError, zlib.error)  # a damaged gzip stream raises all three


def read_error(exc: BaseException) -> str:
    """One line for what went wrong reading a log (a truncated or damaged gzip file, an I/O error)."""
    if isinstance(exc, EOFError):
        return "the gzip file is truncated (it ends before its end-of-stream marker)"
    if isinstance(exc, gzip.BadGzipFile | zlib.error):
        return f"not a valid gzip file ({exc})"
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


class _AsUtf8(io.RawIOBase):
    """A UTF-16 stream read as UTF-8 bytes, chunk by chunk (memory stays bounded)."""

    def __init__(self, raw: IO[bytes], encoding: str) -> None:
        self.raw = raw
        self.decoder = codecs.getincrementaldecoder(encoding)("replace")

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        while True:
            data = self.raw.read(size)
            text = self.decoder.decode(data, final=not data)
            if text or not data:
                return text.encode("utf-8")

    def close(self) -> None:
        self.raw.close()
        super().close()


class _Prefilter:
    """Finds byte offsets of anchor hits in a chunk."""

    def __init__(self, engine: str = "auto") -> None:
        self.anchors = sorted(set(signatures.anchor_index()) | set(logfacts.anchor_index()))
        self.encoded = [a.encode() for a in self.anchors]
        self.db = None
        self.engine = "python"
        if engine == "python":
            return
        try:
            import hyperscan

            db = hyperscan.Database()
            exprs = [re.escape(a).encode() for a in self.anchors]
            db.compile(
                expressions=exprs,
                ids=list(range(len(exprs))),
                flags=[hyperscan.HS_FLAG_CASELESS] * len(exprs),
            )
            self.db = db
            self.engine = "hyperscan"
        except Exception:  # no wheel for this platform, or it failed to build: fall back
            self.db = None

    def offsets(self, data: bytes) -> list[int]:
        hits: list[int] = []
        if self.db is not None:

            def on_match(_id: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
                hit = end - 1
                if hits and 0 <= hit - hits[-1] < SPACING and data.find(b"\n", hits[-1], hit) < 0:
                    return  # the same line, close to the last hit: its piece covers this one
                hits.append(hit)

            self.db.scan(data, match_event_handler=on_match)
            return hits
        low = data.lower()
        for anchor in self.encoded:
            pos = low.find(anchor)
            while pos >= 0:
                hits.append(pos)
                pos = low.find(anchor, pos + 1)
        return hits


def scan(
    stream: IO[bytes], engine: str = "auto", progress: Callable[[int], None] | None = None
) -> ScanResult:
    """Scan a log stream; memory stays bounded by CHUNK + MAX_CARRY whatever the input.

    `progress` is called with the number of bytes read so far after every chunk.
    """
    pre = _Prefilter(engine)
    result = ScanResult(engine=pre.engine)
    tail: collections.deque[tuple[int, bytes]] = collections.deque(maxlen=TAIL_LINES)
    carry, line_base, last = b"", 1, b"\n"
    for chunk in iter(lambda: stream.read(CHUNK), b""):
        if result.bytes == 0 and b"\x00" in chunk[:8192]:
            raise LogError("this looks like a binary file, not a text log")
        result.bytes += len(chunk)
        last = chunk[-1:]
        if progress is not None:
            progress(result.bytes)
        first_nl = chunk.find(b"\n")
        if first_nl < 0:
            carry += chunk
            if len(carry) > MAX_CARRY:  # one enormous line: scan it piece by piece
                _window(carry, 0, len(carry), line_base, pre.offsets(carry), result, tail)
                carry = b""
            continue
        head = carry + chunk[: first_nl + 1]  # the line that straddles two chunks
        line_base += _window(head, 0, len(head), line_base, pre.offsets(head), result, tail)
        last_nl = chunk.rfind(b"\n")
        if last_nl > first_nl:  # whole lines, scanned in place without copying the chunk
            line_base += _window(
                chunk, first_nl + 1, last_nl + 1, line_base, pre.offsets(chunk), result, tail
            )
        carry = chunk[last_nl + 1 :]
    if carry:
        _window(carry, 0, len(carry), line_base, pre.offsets(carry), result, tail)
    result.lines = line_base - 1 + (0 if last == b"\n" else 1)
    result.tail = [(n, _decode(b)) for n, b in tail]
    _harmless_tail(result)
    return result


def _window(
    buf: bytes,
    start: int,
    end: int,
    line_base: int,
    offsets: list[int],
    result: ScanResult,
    tail: collections.deque[tuple[int, bytes]],
) -> int:
    """Match the lines of buf[start:end] (line_base = number of its first line); returns its newline count."""
    _match_lines(buf, sorted({o for o in offsets if start <= o < end}), start, end, line_base, result)
    newlines = buf.count(b"\n", start, end)
    _remember_tail(buf, start, end, line_base + newlines, tail)
    return newlines


def _harmless_tail(result: ScanResult) -> None:
    """Known harmless lines among the last ones; harmless lines have no anchor of their own in the
    prefilter (a log can hold millions of them), so only the tail and anchored lines are looked at."""
    for n, raw in result.tail:
        if n in result.vetoed:
            result.harmless_tail.add(n)
            continue
        text = normalise(raw)[0]
        harmless = benign.match(text)
        if harmless is not None:
            benign.record(result.benign, harmless, n, text)
            result.harmless_tail.add(n)


def _decode(raw: bytes) -> str:
    return raw[: KEEP_LINE * 4].decode("utf-8", "replace")[:KEEP_LINE]


def _remember_tail(
    buf: bytes, start: int, end: int, line_after: int, tail: collections.deque[tuple[int, bytes]]
) -> None:
    """Keep the window's last lines; `line_after` is the number of the line after its last newline."""
    ts = max(start, end - 64 * 1024)
    piece = buf[ts:end]
    first = line_after - piece.count(b"\n")
    lines = piece.split(b"\n")  # the first may be the end of a longer line: kept, as its end
    for i, raw in enumerate(lines):
        if raw.strip():
            tail.append((first + i, _line_end(raw)))


def _line_end(raw: bytes) -> bytes:
    """A tail line as a terminal shows it: a long one by its end, after its last carriage return."""
    if len(raw) <= LONG_LINE:
        return raw
    raw = raw[-LONG_LINE:]
    cr = raw.rfind(b"\r")
    return raw[cr + 1 :] if cr >= 0 and raw[cr + 1 :].strip() else raw


def _match_lines(
    buf: bytes, offsets: list[int], start: int, end: int, line_base: int, result: ScanResult
) -> None:
    """Match each line holding an anchor hit once; linear in the window whatever the hits: a line's
    start is looked for only back to the end of the line matched before it."""
    counted_to, line_no, line_end, i = start, line_base, start - 1, 0
    while i < len(offsets):
        off = offsets[i]
        nl = buf.rfind(b"\n", max(start, line_end), off)
        line_start = start if nl < 0 else nl + 1
        line_no += buf.count(b"\n", counted_to, line_start)
        counted_to = line_start
        line_end = buf.find(b"\n", off, end)
        line_end = end if line_end < 0 else line_end
        j = bisect.bisect_left(offsets, line_end, i)  # the hits on this line
        if line_end - line_start <= LONG_LINE:
            _match_one(line_no, _decode(buf[line_start:line_end]), result)
        else:
            for w_start, w_end in _windows(buf, offsets[i:j], line_start, line_end):
                _match_one(line_no, _decode(buf[w_start:w_end]), result, piece=True)
        i = j


def _windows(buf: bytes, hits: list[int], line_start: int, line_end: int) -> list[tuple[int, int]]:
    """Pieces of a long line around its anchor hits: the first MAX_WINDOWS - 1 and the last one (an
    error is often printed at the end of a line that progress bars rewrote with carriage returns).
    A piece starts after the last carriage return before its hit, as a terminal would show it."""
    found: list[tuple[int, int]] = []
    k = 0
    while k < len(hits) and len(found) < MAX_WINDOWS - 1:
        found.append(_window_at(buf, hits[k], line_start, line_end))
        k = bisect.bisect_left(hits, found[-1][1], k + 1)
    if k < len(hits):
        found.append(_window_at(buf, hits[-1], max(line_start, found[-1][1]), line_end))
    return found


def _window_at(buf: bytes, hit: int, line_start: int, line_end: int) -> tuple[int, int]:
    w_start = max(line_start, hit - WINDOW)
    cr = buf.rfind(b"\r", w_start, hit)
    if cr >= 0:
        w_start = cr + 1
    else:  # not in the middle of a colour code
        esc = buf.rfind(b"\x1b", max(line_start, w_start - 16), w_start)
        code = ANSI_BYTES.match(buf, esc) if esc >= 0 else None
        if code is not None and code.end() > w_start:
            w_start = code.end()
    return w_start, min(line_end, hit + WINDOW)


def _around(body: str, start: int, end: int) -> str:
    """What is shown of a match in a piece of a long line: the match with a little on either side."""
    left, right = max(0, start - PIECE_CONTEXT), min(len(body), end + PIECE_CONTEXT)
    return ("…" if left else "") + body[left:right] + ("…" if right < len(body) else "")


def _match_one(line_no: int, raw: str, result: ScanResult, piece: bool = False) -> None:
    """Match one line (or, `piece`, a piece of a long one) against the signatures."""
    text, body, rank = normalise(raw)
    logfacts.record(body, body.lower(), line_no, result.facts)
    harmless = benign.match(text)
    if harmless is not None:  # never a root error, even where a signature would match
        benign.record(result.benign, harmless, line_no, text)
        result.vetoed.append(line_no)
        return
    low = body.lower()
    tried: set[str] = set()
    for anchor, sigs in signatures.anchor_index().items():
        if anchor not in low:
            continue
        for sig in sigs:
            if sig.id in tried:
                continue
            tried.add(sig.id)
            m = sig.regex.search(body)
            if not m:
                continue
            result.counts[sig.id] += 1
            if result.counts[sig.id] <= MAX_MATCHES_PER_SIG:
                caps = {k: v for k, v in m.groupdict().items() if v}
                shown = _around(body, m.start(), m.end()) if piece else text
                result.matches.append(Match(line_no, shown, body, rank, sig, caps))
