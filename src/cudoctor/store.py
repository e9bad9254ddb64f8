"""Snapshots kept in an embedded SQLite database: save, list, show, last known good.

WAL journal and a busy timeout let several processes save at once; every save is one
transaction, so a process killed mid-save leaves every earlier snapshot readable. A file
that is not a cudoctor database (or one from a newer cudoctor) is refused, never modified.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import sqlite3
import time
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from cudoctor import textfiles
from cudoctor.model import Snapshot

DB_SCHEMA = 1
APP_ID = 0x43554444  # "CUDD": marks the file as cudoctor's
TABLE = """
CREATE TABLE IF NOT EXISTS snapshots (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created TEXT NOT NULL,
    label TEXT,
    host TEXT,
    good INTEGER NOT NULL DEFAULT 0,
    findings INTEGER NOT NULL DEFAULT 0,
    errors INTEGER NOT NULL DEFAULT 0,
    auto INTEGER NOT NULL DEFAULT 0,
    body TEXT NOT NULL
)"""
MAX_ID = 2**63 - 1  # SQLite's largest integer
KEEP_AUTO = 20  # automatic "last known good" records kept; saved ones are never pruned


class StoreError(Exception):
    """The database cannot be used (corrupt, foreign, newer schema, unreadable)."""


class EmptyStore(StoreError):
    """The file exists but holds no cudoctor table yet (new, or being created right now)."""


@dataclasses.dataclass(frozen=True)
class Entry:
    id: int
    created: str
    label: str | None
    host: str | None
    good: bool
    findings: int
    errors: int


def default_path() -> str:
    """$CUDOCTOR_DB, else the user data directory (platformdirs when installed, XDG otherwise)."""
    if os.environ.get("CUDOCTOR_DB"):
        return os.environ["CUDOCTOR_DB"]
    try:
        import platformdirs

        base = platformdirs.user_data_dir("cudoctor", appauthor=False)
    except ImportError:
        base = os.path.join(
            os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"), "cudoctor"
        )
    return os.path.join(base, "snapshots.db")


@contextmanager
def connect(path: str, create: bool = True) -> Iterator[sqlite3.Connection]:
    """A connection to a checked cudoctor database; read-only unless `create` (a save).

    An existing file is first validated through a read-only connection, so a foreign,
    corrupt or newer file is refused without a single byte written to it.
    """
    if os.path.isdir(path):
        raise StoreError(f"{path} is a directory, not a snapshot database")
    exists = os.path.exists(path)
    if not create and not exists:
        raise StoreError(f"{path}: no snapshot database there (save one with: cudoctor snapshot save)")
    uri = _uri(path)
    if exists:
        with _open(f"{uri}?mode=ro", path) as ro:
            _retry_while_locked(lambda: _validate(ro, path, allow_empty=create))
    if not create:
        with _open(f"{uri}?mode=ro", path) as conn:
            yield conn
        return
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"cannot create {folder} for the snapshot database ({exc.strerror}): "
            "choose another file with CUDOCTOR_DB=/path/to/snapshots.db or --db"
        ) from None
    with _open(uri, path) as conn:
        _retry_while_locked(lambda: _initialise(conn))
        yield conn


def _uri(path: str) -> str:
    """The path as an SQLite URI: '?', '#' and '%' in a file name are part of the name, never a
    query, fragment or escape (a --db of 'x?mode=memory' must not become an in-memory database)."""
    return "file:" + urllib.parse.quote(os.path.abspath(path), safe="/")


def _retry_while_locked(step: Callable[[], None], patience_s: float = 60.0) -> None:
    """Run `step` again while another process holds a lock SQLite does not wait for on its own:
    a fresh database switching to WAL, or its first WAL index being built (seen with 32 processes
    saving into one new file at once)."""
    deadline, delay = time.monotonic() + patience_s, 0.005
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            if ("locked" not in str(exc) and "busy" not in str(exc)) or time.monotonic() > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.25)


@contextmanager
def _open(uri: str, path: str) -> Iterator[sqlite3.Connection]:
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=60, isolation_level=None)
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot open: {exc}") from None
    try:
        conn.execute("PRAGMA busy_timeout = 60000")
        yield conn
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: not a usable cudoctor database ({exc})") from None
    finally:
        conn.close()


def _validate(conn: sqlite3.Connection, path: str, allow_empty: bool) -> None:
    conn.execute("BEGIN")  # one read transaction: another process may be initialising the file
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        damage = _damage(conn) if app_id == APP_ID else None
    finally:
        conn.execute("ROLLBACK")
    if app_id == 0 and tables == 0 and version == 0:
        if allow_empty:
            return
        raise EmptyStore(f"{path}: no snapshots saved yet")
    if app_id != APP_ID:
        raise StoreError(f"{path} is not a cudoctor snapshot database (application id {app_id:#x})")
    if version > DB_SCHEMA:
        raise StoreError(
            f"{path} was written by a newer cudoctor (schema {version} > {DB_SCHEMA}); upgrade cudoctor to read it"
        )
    if damage:
        raise StoreError(
            f"{path} is damaged ({damage}); it was left as it is: "
            f"copy what can be read with: sqlite3 {path} .recover, or use another file with --db"
        )
    conn.execute("SELECT count(*) FROM snapshots").fetchone()


def _damage(conn: sqlite3.Connection) -> str | None:
    """SQLite's own quick check of every page and index (milliseconds for a snapshot database):
    a damaged file must be refused before anything is written into it."""
    rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check(3)").fetchall()]
    return None if rows == ["ok"] else "; ".join(rows)[:300]


def _initialise(conn: sqlite3.Connection) -> None:
    if conn.execute("PRAGMA application_id").fetchone()[0] == APP_ID:
        return
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN IMMEDIATE")
    try:
        if conn.execute("PRAGMA application_id").fetchone()[0] == 0:  # nobody initialised it meanwhile
            conn.execute(TABLE)
            conn.execute(f"PRAGMA application_id = {APP_ID}")
            conn.execute(f"PRAGMA user_version = {DB_SCHEMA}")
        conn.execute("COMMIT")
    except sqlite3.Error:
        conn.execute("ROLLBACK")
        raise


def save(
    path: str,
    snap: Snapshot,
    label: str | None = None,
    good: bool = False,
    findings: int = 0,
    errors: int = 0,
    auto: bool = False,
) -> int:
    """Store a snapshot in one transaction; `auto` records (clean checks) keep only the newest KEEP_AUTO."""
    body = json.dumps(snap.to_json(), default=str)
    with connect(path) as conn:
        conn.execute("BEGIN IMMEDIATE")
        try:
            cur = conn.execute(
                "INSERT INTO snapshots (created, label, host, good, findings, errors, auto, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    snap.created or _now(),
                    label,
                    socket.gethostname(),
                    int(good),
                    findings,
                    errors,
                    int(auto),
                    body,
                ),
            )
            if auto:
                conn.execute(
                    "DELETE FROM snapshots WHERE auto = 1 AND id NOT IN (SELECT id FROM snapshots WHERE auto = 1 ORDER BY id DESC LIMIT ?)",
                    (KEEP_AUTO,),
                )
            conn.execute("COMMIT")
        except sqlite3.Error:
            conn.execute("ROLLBACK")
            raise
        return int(cur.lastrowid or 0)


def _now() -> str:
    import datetime

    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def entries(path: str, limit: int = 50) -> list[Entry]:
    try:
        with connect(path, create=False) as conn:
            query = "SELECT id, created, label, host, good, findings, errors FROM snapshots ORDER BY id DESC LIMIT ?"
            rows = conn.execute(query, (min(max(limit, 0), MAX_ID),)).fetchall()
    except EmptyStore:
        return []
    return [_entry(path, r) for r in rows]


def count(path: str) -> int:
    try:
        with connect(path, create=False) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM snapshots").fetchone()[0])
    except EmptyStore:
        return 0


def load(path: str, ref: str) -> tuple[Entry, Snapshot]:
    """A snapshot by id, label or `good` (the last known good); raises StoreError when absent."""
    where, args = _where(ref)
    with connect(path, create=False) as conn:
        row = conn.execute(
            f"SELECT id, created, label, host, good, findings, errors, body FROM snapshots WHERE {where} ORDER BY id DESC LIMIT 1",
            args,
        ).fetchone()
    if row is None:
        raise StoreError(f"no snapshot {ref!r} in {path} (see: cudoctor snapshot list)")
    try:
        snap = Snapshot.from_json(textfiles.load_json(row[7]))
    except (ValueError, TypeError) as exc:
        raise StoreError(f"snapshot {row[0]} in {path} is unreadable: {exc}") from None
    return _entry(path, row), snap


COLUMNS = (
    ("id", int),
    ("created", str),
    ("label", str),
    ("host", str),
    ("good", int),
    ("findings", int),
    ("errors", int),
)


def _entry(path: str, row: tuple[Any, ...]) -> Entry:
    """A row as cudoctor wrote it; one changed by another program (a column of the wrong type) is
    refused with one line."""
    for (name, kind), value in zip(COLUMNS, row, strict=False):
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            raise StoreError(
                f"{path}: snapshot {row[0]!r} has a {name} of type {type(value).__name__}, not "
                f"{'text' if kind is str else 'a number'}: the database was changed by another program"
            )
        if value is None and name not in ("label", "host"):
            raise StoreError(
                f"{path}: snapshot {row[0]!r} has no {name}: the database was changed by another program"
            )
    return Entry(row[0], row[1], row[2], row[3], bool(row[4]), row[5], row[6])


def _where(ref: str) -> tuple[str, tuple[Any, ...]]:
    if ref == "good":
        return "good = 1", ()
    if ref == "latest":
        return "1 = 1", ()
    if ref.isascii() and ref.isdigit():  # '²' is a digit to Python, not an id
        digits = ref.lstrip("0") or "0"
        if len(digits) > 19 or int(digits) > MAX_ID:
            return "0 = 1", ()  # no row has an id beyond SQLite's integers
        return "id = ?", (int(digits),)
    return "label = ?", (ref,)
