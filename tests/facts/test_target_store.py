"""Last known good snapshots are kept per Python environment (issue 46): a snapshot of env A is never
the baseline of env B, and a store written before the key was kept still works (built here with
sqlite3 directly, in the shape the previous schema had)."""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import sys
from pathlib import Path

import pytest

from cudoctor import store
from cudoctor.facts import collect_live
from cudoctor.facts.target import Target, ask, resolve_path, self_target
from tests.conftest import cudoctor
from tests.facts.test_target_python import make_venv, need, without_choice

OLD_TABLE = """
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


@pytest.fixture(scope="module")
def envs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("store-envs")
    return {"a": make_venv(need("3.9"), base / "a"), "b": make_venv(need("3.9"), base / "b")}


def target(path: Path) -> Target:
    env = dict(os.environ)
    return ask(resolve_path(str(path), env), env, 20, "--python", given=str(path))


def test_good_is_kept_per_environment(envs: dict[str, Path], tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    a, b = target(envs["a"]), target(envs["b"])
    sid = store.save(db, collect_live(target=a), good=True, auto=True)
    entry, snap = store.load(db, "good", env=a.key, executable=a.executable)
    assert entry.id == sid and entry.env == a.key and snap.value("host.target")["prefix"] == str(envs["a"])
    with pytest.raises(store.StoreError, match=f"no last known good snapshot of {envs['b']}"):
        store.load(db, "good", env=b.key, executable=b.executable)
    assert store.load(db, "good")[0].id == sid  # without an environment: any, as before
    assert a.key == f"{os.path.realpath(envs['a'])} python3.9" != b.key


def test_automatic_records_are_pruned_per_environment(envs: dict[str, Path], tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    a, b = target(envs["a"]), target(envs["b"])
    snap_a, snap_b = collect_live(target=a), collect_live(target=b)
    kept = store.save(db, snap_b, good=True, auto=True)
    for _ in range(store.KEEP_AUTO + 3):
        store.save(db, snap_a, good=True, auto=True)
    assert store.load(db, "good", env=b.key)[0].id == kept
    assert sum(e.env == a.key for e in store.entries(db)) == store.KEEP_AUTO


def _old_store(path: Path, bodies: list[dict[str, object]]) -> None:
    """A database as cudoctor wrote it before the environment was kept: no env column, schema 1."""
    conn = sqlite3.connect(path)
    conn.execute(OLD_TABLE)
    conn.execute(f"PRAGMA application_id = {store.APP_ID}")
    conn.execute("PRAGMA user_version = 1")
    for body in bodies:
        conn.execute(
            "INSERT INTO snapshots (created, label, host, good, findings, errors, auto, body) VALUES (?, ?, ?, 1, 0, 0, 1, ?)",
            ("2026-01-01T00:00:00+00:00", None, "node", json.dumps(body)),
        )
    conn.commit()
    conn.close()


def _pre46_body(executable: str, version: str) -> dict[str, object]:
    """A snapshot from before issue 46: host.python named the interpreter and its version only."""
    fact = {"status": "known", "value": {"version": version, "executable": executable}, "source": "sys"}
    return {
        "schema": 1,
        "origin": "live",
        "created": "2026-01-01T00:00:00+00:00",
        "facts": {"host.python": fact},
    }


def test_an_old_store_keeps_working(envs: dict[str, Path], tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    own = self_target()
    _old_store(db, [_pre46_body(sys.executable, platform.python_version())])
    before = db.read_bytes()
    (entry,) = store.entries(str(db))
    assert entry.env is None and entry.good
    assert store.load(str(db), "good", env=own.key, executable=own.executable)[0].id == entry.id
    a = target(envs["a"])
    with pytest.raises(store.StoreError):  # another interpreter: never its baseline
        store.load(str(db), "good", env=a.key, executable=a.executable)
    assert db.read_bytes() == before  # reading never changes an old file

    new = store.save(str(db), collect_live(target=a), good=True)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1  # an older cudoctor still reads it
    old_reader = "SELECT id, created, label, host, good, findings, errors, body FROM snapshots ORDER BY id"
    assert [r[0] for r in conn.execute(old_reader)] == [entry.id, new]
    conn.execute(  # an older cudoctor still writes it (no env): read as an unkeyed row
        "INSERT INTO snapshots (created, label, host, good, findings, errors, auto, body) VALUES (?, ?, ?, 1, 0, 0, 1, ?)",
        ("2026-01-02T00:00:00+00:00", None, "node", json.dumps(_pre46_body("/usr/bin/python9", "9.9.0"))),
    )
    conn.commit()
    conn.close()
    assert store.load(str(db), "good", env=a.key, executable=a.executable)[0].id == new
    assert store.load(str(db), "good", env=own.key, executable=own.executable)[0].id == entry.id


def test_check_since_good_never_compares_with_another_environment(
    envs: dict[str, Path], tmp_path: Path
) -> None:
    env = without_choice(CUDOCTOR_DB=str(tmp_path / "s.db"))
    a, b = str(envs["a"]), str(envs["b"])
    first = cudoctor(["check", "--python", a], env=env)
    if first.returncode != 0:
        pytest.skip(
            f"a fresh venv is not clean on this machine, so no good is recorded: {first.stdout[-300:]}"
        )
    out = cudoctor(["check", "--python", b, "--since", "good"], env=env)
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert f"no last known good snapshot of {b}" in out.stderr
    since = cudoctor(["check", "--python", a, "--since", "good", "--format", "json"], env=env)
    assert json.loads(since.stdout)["since"]["ref"].startswith("snapshot 1 ")
    listed = cudoctor(["snapshot", "list", "--format", "json"], env=env)
    assert [row["env"] for row in json.loads(listed.stdout)] == [f"{os.path.realpath(a)} python3.9"] * 2
    shown = cudoctor(["snapshot", "show", "good", "--python", b], env=env)
    assert shown.returncode == 2 and "no last known good snapshot of" in shown.stderr


def test_an_old_store_with_check_since_good(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    _old_store(db, [_pre46_body(sys.executable, platform.python_version())])
    env = without_choice(CUDOCTOR_DB=str(db), CUDOCTOR_PYTHON="self")
    out = cudoctor(["check", "--since", "good", "--format", "json", "--no-record"], env=env)
    assert out.returncode in (0, 1), out.stderr
    assert json.loads(out.stdout)["since"]["ref"].startswith("snapshot 1 ")
