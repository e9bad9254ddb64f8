"""The snapshot database under hostile paths, damaged files and odd ids (issue 44, points 1-3, 10)."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cudoctor import store
from cudoctor.model import Snapshot, known
from tests.hostile.contract import run


def _snap() -> Snapshot:
    snap = Snapshot()
    snap.add(known("driver.version", "550.54.15", "test"))
    return snap


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("name", ["new?mode=memory", "victim#x.db", "pct%41.db"])
def test_a_db_path_is_a_file_name_never_a_uri_query(tmp_path: Path, name: str) -> None:
    victim = tmp_path / "victim"
    store.save(str(victim), _snap(), label="kept")
    before = _digest(victim)
    path = tmp_path / name
    number = store.save(str(path), _snap(), label="mine")
    assert path.is_file()  # the file of that very name, not an in-memory database or another file
    assert store.load(str(path), str(number))[0].label == "mine"
    assert _digest(victim) == before and not (tmp_path / "pctA.db").exists()


def test_a_damaged_database_is_refused_before_any_write(tmp_path: Path) -> None:
    path = tmp_path / "d.db"
    for i in range(49):
        store.save(str(path), _snap(), label=f"l{i}")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()  # the last connection closing removes the -wal file
    assert not Path(f"{path}-wal").exists()
    raw = bytearray(path.read_bytes())
    for i in range(200, len(raw), 997):
        raw[i] ^= 0xFF
    path.write_bytes(bytes(raw))
    before = _digest(path)
    outcome = run(["snapshot", "save", "--db", str(path)])
    assert outcome.status == 2 and "damaged" in outcome.err
    wal = Path(f"{path}-wal")  # SQLite's reader may leave an empty one beside a WAL database
    assert _digest(path) == before and (not wal.exists() or wal.stat().st_size == 0)
    assert run(["snapshot", "list", "--db", str(path)]).status == 2


def test_a_foreign_sqlite_file_with_a_user_version_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "foreign.db"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 7")
    before = _digest(path)
    with pytest.raises(store.StoreError, match=r"not a cudoctor snapshot database|not a usable"):
        store.save(str(path), _snap())
    assert _digest(path) == before
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 7


@pytest.mark.parametrize("ref", ["9" * 5000, "²", "99999999999999999999", "-1", "1e3", ""])
def test_odd_snapshot_ids_are_not_found_in_one_line(tmp_path: Path, ref: str) -> None:
    path = tmp_path / "s.db"
    store.save(str(path), _snap())
    outcome = run(["snapshot", "show", ref, "--db", str(path)])
    assert outcome.status == 2 and "no snapshot" in outcome.err


@pytest.mark.parametrize("limit", [str(10**30), "-1", "0", "nan", "1" * 5000])
def test_a_list_limit_out_of_range_is_refused(tmp_path: Path, limit: str) -> None:
    outcome = run(["snapshot", "list", "--limit", limit, "--db", str(tmp_path / "s.db")])
    assert outcome.status == 2 and "--limit" in outcome.err


def test_columns_of_the_wrong_type_are_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    store.save(str(path), _snap())
    store.save(str(path), _snap(), label="x")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE snapshots SET created = x'00ff', findings = 'many' WHERE id = 1")
        conn.execute("UPDATE snapshots SET body = 12 WHERE id = 2")
    for argv in (
        ["snapshot", "list"],
        ["snapshot", "show", "1"],
        ["snapshot", "show", "2"],
        ["diff", "1", "2"],
    ):
        outcome = run([*argv, "--db", str(path)])
        assert outcome.status == 2, argv


@given(st.binary(min_size=0, max_size=4096))
def test_any_bytes_as_a_database_are_refused_or_read_never_changed_when_refused(data: bytes) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "x.db"
        path.write_bytes(data)
        outcome = run(["snapshot", "list", "--db", str(path)])
        if outcome.status == 2:
            assert path.read_bytes() == data


@given(st.text(min_size=1, max_size=40))
def test_any_snapshot_reference_is_answered_in_one_line(ref: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "s.db")
        store.save(path, _snap(), label="a")
        outcome = run(["snapshot", "show", ref, "--db", path])
        assert outcome.status in (0, 2)
