"""hsdb keeps the prefilter's compiled Hyperscan database in the user's cache folder (issue 43: it was
compiled in every run); a damaged, foreign or unwritable cache only costs a compile."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cudoctor.explainer import hsdb, scan

hyperscan = pytest.importorskip("hyperscan")

EXPRS = [b"out of memory", b"cublas_status_", b"device-side assert"]
FLAGS = hyperscan.HS_FLAG_CASELESS
LOG = b"epoch 1\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\nCUBLAS_STATUS_ALLOC_FAILED\n"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty cache folder for this test, and no database in this process."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("CUDOCTOR_NO_CACHE", raising=False)
    hsdb.forget()
    yield tmp_path / "cache" / "cudoctor" / "hyperscan"
    hsdb.forget()  # the next tests' scans use the usual cache folder again


def kept(folder: Path) -> list[Path]:
    return sorted(folder.glob("*" + hsdb.SUFFIX)) if folder.exists() else []


def hits(db: object) -> list[tuple[int, int]]:
    found: list[tuple[int, int]] = []
    db.scan(  # type: ignore[attr-defined]
        LOG,
        match_event_handler=lambda i, _s, end, _f, _c: found.append((i, end)),
        scratch=hyperscan.Scratch(db),
    )
    return found


def fresh(exprs: list[bytes] = EXPRS) -> tuple[object, str]:
    """The database as a new process gets it, and how ("compiled" or "loaded")."""
    hsdb.forget()
    before = hsdb.stats.copy()
    db = hsdb.database(exprs, FLAGS)
    (how,) = (hsdb.stats - before).keys()
    return db, how


def test_the_second_run_loads_the_database_the_first_compiled(cache: Path) -> None:
    first, how = fresh()
    assert how == "compiled"
    (path,) = kept(cache)
    assert path.name == hsdb.cache_key(EXPRS, FLAGS, hyperscan.__version__) + hsdb.SUFFIX
    second, how = fresh()
    assert how == "loaded"
    assert hits(second) == hits(first) == [(0, 40), (1, 83)]
    assert hsdb.database(EXPRS, FLAGS) is second  # the same process asks once


def test_a_real_second_process_loads_it_and_scans_with_hyperscan(cache: Path) -> None:
    code = (
        "import io\nfrom cudoctor.explainer import hsdb, scan\n"
        "r = scan.scan(io.BytesIO(b'RuntimeError: CUDA error: device-side assert triggered\\n'))\n"
        "print(r.engine, sorted(hsdb.stats), [m.line for m in r.matches])"
    )
    runs = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True) for _ in "12"
    ]
    assert [r.stdout.split()[:2] for r in runs] == [
        ["hyperscan", "['compiled']"],
        ["hyperscan", "['loaded']"],
    ]
    assert runs[0].stdout.split()[2:] == runs[1].stdout.split()[2:] == ["[1]"]
    assert len(kept(cache)) == 1


def damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    head = len(hsdb.MAGIC) + 65  # magic, key and newline
    if how == "flipped":  # one byte of the database changed: the checksum no longer fits
        pos = len(data) - 100
        path.write_bytes(data[:pos] + bytes([data[pos] ^ 0xFF]) + data[pos + 1 :])
    elif how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "garbage":
        path.write_bytes(os.urandom(4096))
    elif how == "refused by hyperscan":  # the checksum fits, but the bytes are no database
        import hashlib

        payload = b"\0" * 64 + data[head + 65 + 64 :]
        path.write_bytes(data[:head] + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
    else:
        raise AssertionError(how)


@pytest.mark.parametrize("how", ["flipped", "truncated", "empty", "garbage", "refused by hyperscan"])
def test_a_damaged_file_is_ignored_compiled_again_and_replaced(cache: Path, how: str) -> None:
    good, _ = fresh()
    (path,) = kept(cache)
    damage(path, how)
    again, made = fresh()
    assert made == "compiled" and hits(again) == hits(good)
    assert fresh()[1] == "loaded"  # the file was written again, whole


def test_another_lists_file_under_this_name_is_not_used(cache: Path) -> None:
    """A file copied or renamed from another key (foreign) says so in its header: compiled again."""
    fresh([b"nccl warn"])
    (other,) = kept(cache)
    mine = cache / (hsdb.cache_key(EXPRS, FLAGS, hyperscan.__version__) + hsdb.SUFFIX)
    other.rename(mine)
    db, how = fresh()
    assert how == "compiled" and hits(db) == [(0, 40), (1, 83)]


def test_a_changed_anchor_list_flags_or_version_gets_a_new_key(cache: Path) -> None:
    key = hsdb.cache_key(EXPRS, FLAGS, "0.9.1")
    assert hsdb.cache_key(list(EXPRS), FLAGS, "0.9.1") == key
    assert hsdb.cache_key([*EXPRS, b"nccl warn"], FLAGS, "0.9.1") != key
    assert hsdb.cache_key(EXPRS[:2], FLAGS, "0.9.1") != key
    assert hsdb.cache_key([b"out of memorycublas_status_", b"", EXPRS[2]], FLAGS, "0.9.1") != key
    assert hsdb.cache_key(EXPRS, 0, "0.9.1") != key
    assert hsdb.cache_key(EXPRS, FLAGS, "0.9.2") != key
    fresh()
    fresh([*EXPRS, b"nccl warn"])
    assert len(kept(cache)) == 2
    assert fresh()[1] == "loaded" and fresh([*EXPRS, b"nccl warn"])[1] == "loaded"


def test_an_unwritable_cache_folder_still_scans(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cache").write_text("a file where the folder should be")  # unwritable even for root
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("CUDOCTOR_NO_CACHE", raising=False)
    try:
        assert fresh()[1] == "compiled" and fresh()[1] == "compiled"
        hsdb.forget()
        result = scan.scan(io.BytesIO(LOG))
        assert result.engine == "hyperscan" and [m.line for m in result.matches] == [2, 3]
    finally:
        hsdb.forget()
    assert not list(tmp_path.glob("**/*.tmp"))


def test_no_cache_means_no_file(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDOCTOR_NO_CACHE", "1")
    assert fresh()[1] == "compiled" and fresh()[1] == "compiled"
    assert not cache.exists()


def test_only_the_newest_databases_are_kept(cache: Path) -> None:
    for i in range(hsdb.KEEP + 3):
        fresh([*EXPRS, f"anchor {i}".encode()])
    assert len(kept(cache)) == hsdb.KEEP
    assert fresh([*EXPRS, f"anchor {hsdb.KEEP + 2}".encode()])[1] == "loaded"  # the newest stays


def test_the_key_names_the_cpu_features_hyperscan_compiles_for() -> None:
    features = hsdb.cpu_features().split()
    assert features == sorted(features) and set(features) <= hsdb.CPU_FEATURES
