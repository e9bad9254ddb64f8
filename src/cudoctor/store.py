"""Snapshots kept in an embedded SQLite database: save, list, show, last known good.

WAL journal and a busy timeout let several processes save at once; every save is one
transaction, so a process killed mid-save leaves every earlier snapshot readable. A file
that is not a cudoctor database (or one from a newer cudoctor) is refused, never modified.

Each snapshot names the Python environment it describes (`env`: its prefix and Python major.minor,
facts/target.py `env_key`), so the last known good of one environment is never the baseline of
another. The column came after schema 1 and is added in place (an older cudoctor reads and writes
the file as before; rows it writes, and rows from before, carry no `env` and are matched by what
their snapshot says about its Python).
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
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
    body TEXT NOT NULL,
    env TEXT
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
    env: str | None = None  # the Python environment the snapshot describes (None: saved before it was kept)


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
    if rows != ["ok"]:
        return "; ".join(rows)[:300]
    try:  # pages SQLite finds sound can still hold text that is not text (bytes flipped inside a row)
        conn.execute("SELECT id, created, label, host, good, findings, errors FROM snapshots").fetchall()
    except sqlite3.DatabaseError as exc:
        return f"a row cannot be read: {exc}"[:300]
    return None


def _has_env(conn: sqlite3.Connection) -> bool:
    return any(row[1] == "env" for row in conn.execute("PRAGMA table_info(snapshots)").fetchall())


def _initialise(conn: sqlite3.Connection) -> None:
    if conn.execute("PRAGMA application_id").fetchone()[0] == APP_ID:
        if not _has_env(conn):
            _add_env_column(conn)
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


def _add_env_column(conn: sqlite3.Connection) -> None:
    """A file from before `env` was kept gets the column (nullable: its rows, and those an older
    cudoctor still writes, stay as they are)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if not _has_env(conn):  # another process may have added it meanwhile
            conn.execute("ALTER TABLE snapshots ADD COLUMN env TEXT")
        conn.execute("COMMIT")
    except sqlite3.Error:
        conn.execute("ROLLBACK")
        raise


def env_of(facts: Any) -> str | None:
    """The environment key of a snapshot's facts (JSON form): from `host.target`, else from a
    `host.python` that names its prefix; None when it names neither (a snapshot from before)."""
    from cudoctor.facts.target import env_key

    if not isinstance(facts, dict):
        return None
    for name in ("host.target", "host.python"):
        fact = facts.get(name)
        value = fact.get("value") if isinstance(fact, dict) else None
        if isinstance(value, dict) and value.get("prefix") and value.get("version"):
            return env_key(str(value["prefix"]), str(value["version"]), str(value.get("executable") or ""))
    return None


def _legacy_match(facts: Any, env: str, executable: str | None) -> bool:
    """A snapshot saved without an `env`: the same environment when its facts give the same key, or,
    from before the prefix was kept, when its interpreter is the same file of the same major.minor."""
    key = env_of(facts)
    if key is not None:
        return key == env
    fact = facts.get("host.python") if isinstance(facts, dict) else None
    value = fact.get("value") if isinstance(fact, dict) else None
    if not executable or not isinstance(value, dict):
        return False
    minor = ".".join(str(value.get("version") or "").split(".")[:2])
    return value.get("executable") == executable and bool(minor) and env.endswith(f" python{minor}")


def save(
    path: str,
    snap: Snapshot,
    label: str | None = None,
    good: bool = False,
    findings: int = 0,
    errors: int = 0,
    auto: bool = False,
) -> int:
    """Store a snapshot in one transaction, with the environment it describes; `auto` records (clean
    checks) keep only the newest KEEP_AUTO of that environment."""
    data = snap.to_json()
    env = env_of(data.get("facts"))
    body = json.dumps(data, default=str)
    with connect(path) as conn:
        conn.execute("BEGIN IMMEDIATE")
        try:
            cur = conn.execute(
                "INSERT INTO snapshots (created, label, host, good, findings, errors, auto, body, env) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    snap.created or _now(),
                    label,
                    platform.node(),
                    int(good),
                    findings,
                    errors,
                    int(auto),
                    body,
                    env,
                ),
            )
            if auto:
                conn.execute(
                    "DELETE FROM snapshots WHERE auto = 1 AND env IS ? AND id NOT IN "
                    "(SELECT id FROM snapshots WHERE auto = 1 AND env IS ? ORDER BY id DESC LIMIT ?)",
                    (env, env, KEEP_AUTO),
                )
            conn.execute("COMMIT")
        except sqlite3.Error:
            conn.execute("ROLLBACK")
            raise
        return int(cur.lastrowid or 0)


def _now() -> str:
    import datetime

    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _env_column(conn: sqlite3.Connection) -> str:
    """`env`, or NULL in a file from before it was kept (read-only: never added there)."""
    return "env" if _has_env(conn) else "NULL"


def entries(path: str, limit: int = 50) -> list[Entry]:
    try:
        with connect(path, create=False) as conn:
            query = f"SELECT id, created, label, host, good, findings, errors, {_env_column(conn)} FROM snapshots ORDER BY id DESC LIMIT ?"
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


def load(
    path: str, ref: str, env: str | None = None, executable: str | None = None
) -> tuple[Entry, Snapshot]:
    """A snapshot by id, label or `good`; raises StoreError when absent. `good` is the last known
    good of the environment `env` (a Target's key; `executable` its interpreter, for snapshots saved
    before the key was kept); without `env`, of any environment."""
    if ref == "good" and env is not None:
        return _good_of(path, env, executable)
    where, args = _where(ref)
    with connect(path, create=False) as conn:
        row = conn.execute(
            f"SELECT id, created, label, host, good, findings, errors, {_env_column(conn)}, body FROM snapshots WHERE {where} ORDER BY id DESC LIMIT 1",
            args,
        ).fetchone()
    if row is None:
        raise StoreError(f"no snapshot {ref!r} in {path} (see: cudoctor snapshot list)")
    return _entry(path, row), _body(path, row)


def _body(path: str, row: tuple[Any, ...]) -> Snapshot:
    try:
        return Snapshot.from_json(textfiles.load_json(row[8]))
    except (ValueError, TypeError) as exc:
        raise StoreError(f"snapshot {row[0]} in {path} is unreadable: {exc}") from None


def _good_of(path: str, env: str, executable: str | None) -> tuple[Entry, Snapshot]:
    """The newest good snapshot of `env`: one saved with that key, or one saved without a key whose
    facts name the same environment (read newest first; a few rows in practice)."""
    with connect(path, create=False) as conn:
        column = _env_column(conn)
        rows = conn.execute(
            f"SELECT id, created, label, host, good, findings, errors, {column}, body FROM snapshots "
            f"WHERE good = 1 AND ({column} = ? OR {column} IS NULL) ORDER BY id DESC",
            (env,),
        )
        for row in rows:
            if row[7] == env:
                return _entry(path, row), _body(path, row)
            try:
                facts = textfiles.load_json(row[8]).get("facts")
            except (ValueError, TypeError, AttributeError):
                continue
            if _legacy_match(facts, env, executable):
                return _entry(path, row), _body(path, row)
    raise StoreError(
        f"no last known good snapshot of {env.rsplit(' python', 1)[0]} in {path} (a clean cudoctor check "
        "of that environment records one; cudoctor snapshot list shows what there is)"
    )


COLUMNS = (
    ("id", int),
    ("created", str),
    ("label", str),
    ("host", str),
    ("good", int),
    ("findings", int),
    ("errors", int),
    ("env", str),
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
        if value is None and name not in ("label", "host", "env"):
            raise StoreError(
                f"{path}: snapshot {row[0]!r} has no {name}: the database was changed by another program"
            )
    return Entry(row[0], row[1], row[2], row[3], bool(row[4]), row[5], row[6], row[7])


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
