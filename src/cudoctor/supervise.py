"""Run a command the way a person runs it, and keep a bounded record of what it printed.

On a terminal the child gets a pseudo-terminal (colours and progress bars stay as they are); in a
pipe its stdout and stderr are copied byte for byte to ours. stdin is the child's own. SIGINT, SIGTERM
and SIGHUP are passed on to the child's process group. The record keeps the head and a large tail of
the output, so a run that prints for days costs bounded memory. `cudoctor run` explains the record when
the child fails (explainer/command.py); nothing here knows about GPUs.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence

HEAD_BYTES = 1 << 20  # the start of the output: the versions and device lines a program prints first
TAIL_BYTES = 32 << 20  # the end: the error and what led to it
CHUNK = 1 << 16
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Record:
    """The first HEAD_BYTES and the last TAIL_BYTES of a stream, and how much fell between them."""

    def __init__(self, head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> None:
        self.head_limit, self.tail_limit = head, tail
        self.head = bytearray()
        self.tail: collections.deque[bytes] = collections.deque()
        self.tail_size = 0
        self.dropped = 0

    def add(self, data: bytes) -> None:
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.tail.append(data)
        self.tail_size += len(data)
        while self.tail_size - len(self.tail[0]) >= self.tail_limit:
            gone = self.tail.popleft()
            self.tail_size -= len(gone)
            self.dropped += len(gone)

    @property
    def size(self) -> int:
        return len(self.head) + self.tail_size + self.dropped

    def text(self) -> str:
        middle = f"\n[cudoctor: {self.dropped} bytes of output not kept here]\n" if self.dropped else ""
        raw = (
            bytes(self.head).decode("utf-8", "replace")
            + middle
            + b"".join(self.tail).decode("utf-8", "replace")
        )
        return raw.replace("\r\n", "\n")


@dataclasses.dataclass
class Outcome:
    status: int  # the shell's convention: the exit code, or 128+N for a death by signal N
    signal: int | None
    duration_s: float
    record: Record


class CommandNotFound(Exception):
    pass


def exit_status(returncode: int) -> tuple[int, int | None]:
    """(status as a shell reports it, the signal that killed the child or None)."""
    if returncode < 0:
        return 128 - returncode, -returncode
    return returncode, None


@contextlib.contextmanager
def _forwarding(pid: int) -> Iterator[None]:
    """While the child runs, the signals a person or a scheduler sends go to its process group."""

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signum)

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run(argv: Sequence[str], use_pty: bool | None = None) -> Outcome:
    """Run argv with its output shown as it comes; raises CommandNotFound when it cannot start."""
    if use_pty is None:
        use_pty = sys.stdout.isatty()
    record = Record()
    started = time.monotonic()
    try:
        returncode = _run_pty(argv, record) if use_pty else _run_pipes(argv, record)
    except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
        raise CommandNotFound(f"{argv[0]}: {exc.strerror or exc}") from None
    status, sig = exit_status(returncode)
    return Outcome(status, sig, time.monotonic() - started, record)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BrokenPipeError:
            return  # the reader went away (| head): keep recording, stop showing
        view = view[n:]


def _run_pipes(argv: Sequence[str], record: Record) -> int:
    proc = subprocess.Popen(
        list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    assert proc.stdout is not None and proc.stderr is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, sys.stdout.fileno())
    sel.register(proc.stderr, selectors.EVENT_READ, sys.stderr.fileno())
    sys.stdout.flush()
    sys.stderr.flush()
    with _forwarding(proc.pid):
        open_streams = 2
        while open_streams:
            for key, _ in sel.select():
                data = os.read(key.fd, CHUNK)
                if not data:
                    sel.unregister(key.fileobj)
                    open_streams -= 1
                    continue
                _write_all(key.data, data)
                record.add(data)
        return proc.wait()


def _run_pty(argv: Sequence[str], record: Record) -> int:
    import pty

    master, slave = pty.openpty()
    _copy_window_size(slave)
    try:
        proc = subprocess.Popen(list(argv), stdout=slave, stderr=slave, start_new_session=True)
    finally:
        os.close(slave)
    sys.stdout.flush()
    with _forwarding(proc.pid):
        while True:
            try:
                data = os.read(master, CHUNK)
            except OSError:  # EIO: the child closed its end
                break
            if not data:
                break
            _write_all(sys.stdout.fileno(), data)
            record.add(data)
        os.close(master)
        return proc.wait()


def _copy_window_size(slave: int) -> None:
    """The child's terminal is as wide as ours (progress bars measure it)."""
    with contextlib.suppress(OSError, ImportError):
        import fcntl
        import termios

        size = fcntl.ioctl(sys.stdout.fileno(), termios.TIOCGWINSZ, b"\0" * 8)
        fcntl.ioctl(slave, termios.TIOCSWINSZ, size)
