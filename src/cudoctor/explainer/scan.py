"""Stream a log of any size through the signatures in constant memory.

Bytes are read in chunks into one reused buffer; a literal-anchor prefilter (Hyperscan when
installed, its compiled database kept between runs by `hsdb`, else `bytes.find` per anchor) finds
the few candidate lines, and only those are decoded, normalised and matched against the full
signature patterns. Besides the prefilter, a chunk costs one `bytes.count` of its newlines (the
log's line count, which the report shows) and a look at its last lines.
"""

from __future__ import annotations

import bisect
import codecs
import collections
import dataclasses
import functools
import gzip
import io
import os
import re
import sys
import zlib
from collections.abc import Callable, Iterator
from typing import IO, Any, cast

from cudoctor import textfiles
from cudoctor.explainer import benign, hsdb, logfacts, signatures
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


Buffer = bytes | bytearray


class _Prefilter:
    """Finds byte offsets of anchor hits in a window of a buffer."""

    def __init__(self, engine: str = "auto") -> None:
        self.anchors = tuple(sorted(set(signatures.anchor_index()) | set(logfacts.anchor_index())))
        self.encoded, exprs = _encoded(self.anchors)
        self.db: Any = None
        self.scratch: Any = None
        self.order: dict[str, int] = {}  # signature anchor -> its place in the order they are tried
        self.engine = "python"
        if engine == "python":
            return
        try:
            import hyperscan

            db = hsdb.database(exprs, hyperscan.HS_FLAG_CASELESS)
            self.scratch = hyperscan.Scratch(db)  # this scan's own: a database may serve several threads
            self.order = {a: i for i, a in enumerate(signatures.anchor_index())}
            self.db = db
            self.engine = "hyperscan"
        except Exception:  # no wheel for this platform, or it failed to build: fall back
            self.db = None

    def offsets(self, data: Buffer, start: int = 0, end: int | None = None) -> list[int]:
        """Offsets in `data` of the anchor hits in data[start:end]: where a hit ends (Hyperscan; a hit
        close to the one before on the same line is left out) or starts (Python)."""
        end = len(data) if end is None else end
        hits: list[int] = []
        if self.db is not None:

            def on_match(_id: int, _start: int, stop: int, _flags: int, _ctx: object) -> None:
                hit = start + stop - 1
                if hits and 0 <= hit - hits[-1] < SPACING and data.find(b"\n", hits[-1], hit) < 0:
                    return  # the same line, close to the last hit: its piece covers this one
                hits.append(hit)

            with memoryview(data) as view, view[start:end] as window:
                self.db.scan(window, match_event_handler=on_match, scratch=self.scratch)
            return hits
        low = data[start:end].lower()
        for anchor in self.encoded:
            pos = low.find(anchor)
            while pos >= 0:
                hits.append(start + pos)
                pos = low.find(anchor, pos + 1)
        return hits

    def line_anchors(self, low: str) -> list[str]:
        """The signature anchors that may be in a lowercased line, in the order they are tried: with
        Hyperscan, those it finds in the line (one scan instead of ~700 substring tests, which were
        most of the ~50 us a line with a hit cost); else all of them."""
        if self.db is None:
            return list(signatures.anchor_index())
        found: set[int] = set()

        def on_match(idx: int, _start: int, _stop: int, _flags: int, _ctx: object) -> None:
            found.add(idx)

        self.db.scan(low.encode(), match_event_handler=on_match, scratch=self.scratch)
        present = [self.anchors[i] for i in found if self.anchors[i] in self.order]
        return sorted(present, key=self.order.__getitem__)


@functools.lru_cache(maxsize=8)
def _encoded(anchors: tuple[str, ...]) -> tuple[tuple[bytes, ...], tuple[bytes, ...]]:
    """The anchors as bytes (the Python engine's) and as Hyperscan expressions, once per process."""
    return tuple(a.encode() for a in anchors), tuple(re.escape(a).encode() for a in anchors)


def _chunks(stream: IO[bytes]) -> Iterator[tuple[Buffer, int]]:
    """The stream's bytes CHUNK at a time, as (buffer, length). After a full first chunk, a file,
    pipe or BytesIO is read into one reused buffer (not a new 8 MiB object per chunk), which the next
    chunk overwrites; a small log never allocates that buffer. Other streams (gzip, UTF-16
    re-encoded) are read as they come. The chunks are those `read(CHUNK)` gives either way."""
    first = stream.read(CHUNK)
    if first:
        yield first, len(first)
    if len(first) == CHUNK and isinstance(stream, io.BufferedReader | io.BytesIO | io.FileIO):
        buf = bytearray(CHUNK)
        while n := stream.readinto(buf):
            yield buf, n
    elif first:
        for chunk in iter(lambda: stream.read(CHUNK), b""):
            yield chunk, len(chunk)


def scan(
    stream: IO[bytes], engine: str = "auto", progress: Callable[[int], None] | None = None
) -> ScanResult:
    """Scan a log stream; memory stays bounded by CHUNK + MAX_CARRY whatever the input.

    `progress` is called with the number of bytes read so far after every chunk.
    """
    pre = _Prefilter(engine)
    result = ScanResult(engine=pre.engine)
    tail: collections.deque[tuple[int, bytes]] = collections.deque(maxlen=TAIL_LINES)
    carry: Buffer = b""
    line_base, last = 1, 10  # the last byte read: a newline, or a last line without one
    for chunk, n in _chunks(stream):
        if result.bytes == 0 and chunk.find(b"\x00", 0, min(n, 8192)) >= 0:
            raise LogError("this looks like a binary file, not a text log")
        result.bytes += n
        last = chunk[n - 1]
        if progress is not None:
            progress(result.bytes)
        first_nl = chunk.find(b"\n", 0, n)
        if first_nl < 0:
            carry += chunk[:n]
            if len(carry) > MAX_CARRY:  # one enormous line: scan it piece by piece
                _window(carry, 0, len(carry), line_base, pre, result, tail)
                carry = b""
            continue
        head = carry + chunk[: first_nl + 1]  # the line that straddles two chunks
        line_base += _window(head, 0, len(head), line_base, pre, result, tail)
        last_nl = chunk.rfind(b"\n", 0, n)
        if last_nl > first_nl:  # whole lines, scanned in place without copying the chunk
            line_base += _window(chunk, first_nl + 1, last_nl + 1, line_base, pre, result, tail)
        carry = chunk[last_nl + 1 : n]  # a copy: the buffer is read into again
    if carry:
        _window(carry, 0, len(carry), line_base, pre, result, tail)
    result.lines = line_base - 1 + (0 if last == 10 else 1)
    result.tail = [(n, _decode(b)) for n, b in tail]
    _harmless_tail(result)
    return result


def _window(
    buf: Buffer,
    start: int,
    end: int,
    line_base: int,
    pre: _Prefilter,
    result: ScanResult,
    tail: collections.deque[tuple[int, bytes]],
) -> int:
    """Match the lines of buf[start:end] (line_base = number of its first line) that hold an anchor
    hit; returns its newline count (each byte counted once: up to the last hit while matching)."""
    offsets = sorted(set(pre.offsets(buf, start, end)))
    counted_to, line_no = _match_lines(buf, offsets, start, end, line_base, pre, result)
    newlines = line_no - line_base + buf.count(b"\n", counted_to, end)
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


def _decode(raw: Buffer) -> str:
    return raw[: KEEP_LINE * 4].decode("utf-8", "replace")[:KEEP_LINE]


def _remember_tail(
    buf: Buffer, start: int, end: int, line_after: int, tail: collections.deque[tuple[int, bytes]]
) -> None:
    """Keep the window's last non-blank lines (of its last 64 KiB; the first of those may be the end
    of a longer line: kept, as its end); `line_after` is the number of the line after its last
    newline. Read backwards and only as far as the tail holds: older lines would be pushed out."""
    ts = max(start, end - 64 * 1024)
    found: list[tuple[int, bytes]] = []
    pos, number = end, line_after
    while len(found) < TAIL_LINES:
        nl = buf.rfind(b"\n", ts, pos)
        raw = buf[nl + 1 if nl >= 0 else ts : pos]
        if raw.strip():
            found.append((number, _line_end(bytes(raw))))
        if nl < 0:
            break
        pos, number = nl, number - 1
    tail.extend(reversed(found))


def _line_end(raw: bytes) -> bytes:
    """A tail line as a terminal shows it: a long one by its end, after its last carriage return."""
    if len(raw) <= LONG_LINE:
        return raw
    raw = raw[-LONG_LINE:]
    cr = raw.rfind(b"\r")
    return raw[cr + 1 :] if cr >= 0 and raw[cr + 1 :].strip() else raw


def _match_lines(
    buf: Buffer,
    offsets: list[int],
    start: int,
    end: int,
    line_base: int,
    pre: _Prefilter,
    result: ScanResult,
) -> tuple[int, int]:
    """Match each line holding an anchor hit once; linear in the window whatever the hits: a line's
    start is looked for only back to the end of the line matched before it. Returns where newlines
    were counted to and the number of the line there."""
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
            _match_one(line_no, _decode(buf[line_start:line_end]), pre, result)
        else:
            for w_start, w_end in _windows(buf, offsets[i:j], line_start, line_end):
                _match_one(line_no, _decode(buf[w_start:w_end]), pre, result, piece=True)
        i = j
    return counted_to, line_no


def _windows(buf: Buffer, hits: list[int], line_start: int, line_end: int) -> list[tuple[int, int]]:
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


def _window_at(buf: Buffer, hit: int, line_start: int, line_end: int) -> tuple[int, int]:
    w_start = max(line_start, hit - WINDOW)
    cr = buf.rfind(b"\r", w_start, hit)
    if cr >= 0:
        w_start = cr + 1
    else:  # not in the middle of a colour code
        esc = buf.rfind(b"\x1b", max(line_start, w_start - 16), w_start)
        code = ANSI_BYTES.match(buf, esc, line_end) if esc >= 0 else None
        if code is not None and code.end() > w_start:
            w_start = code.end()
    return w_start, min(line_end, hit + WINDOW)


def _around(body: str, start: int, end: int) -> str:
    """What is shown of a match in a piece of a long line: the match with a little on either side."""
    left, right = max(0, start - PIECE_CONTEXT), min(len(body), end + PIECE_CONTEXT)
    return ("…" if left else "") + body[left:right] + ("…" if right < len(body) else "")


def _match_one(line_no: int, raw: str, pre: _Prefilter, result: ScanResult, piece: bool = False) -> None:
    """Match one line (or, `piece`, a piece of a long one) against the signatures."""
    text, body, rank = normalise(raw)
    low = body.lower()
    logfacts.record(body, low, line_no, result.facts)
    harmless = benign.match(text)
    if harmless is not None:  # never a root error, even where a signature would match
        benign.record(result.benign, harmless, line_no, text)
        result.vetoed.append(line_no)
        return
    index = signatures.anchor_index()
    tried: set[str] = set()
    for anchor in pre.line_anchors(low):
        if anchor not in low:
            continue
        for sig in index[anchor]:
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
