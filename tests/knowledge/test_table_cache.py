"""knowledge.table keeps each parsed table as JSON in the user's cache folder and reads it from there
while the TOML file is unchanged (issue 43: parsing all tables costs ~90 ms, reading JSON ~4 ms)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cudoctor import knowledge

read = knowledge.table.__wrapped__  # the uncached function: each call reads the disk


@pytest.fixture
def tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "knowledge"
    folder.mkdir()
    (folder / "demo.toml").write_text('[[row]]\nid = "a"\nweight = 0.5\n')
    monkeypatch.setattr(knowledge, "HERE", str(folder))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("CUDOCTOR_NO_CACHE", raising=False)
    return tmp_path


def _cached(tmp: Path) -> list[Path]:
    return sorted((tmp / "cache" / "cudoctor" / "knowledge").glob("demo.*.json"))


def test_a_table_is_read_from_its_cached_copy_while_the_file_is_unchanged(tables: Path) -> None:
    assert read("demo") == {"row": [{"id": "a", "weight": 0.5}]}
    (copy,) = _cached(tables)
    copy.write_text('{"row": [{"id": "from the cache"}]}')  # proves the second read uses it
    assert read("demo") == {"row": [{"id": "from the cache"}]}


def test_an_edited_table_is_parsed_again_and_its_old_copy_removed(tables: Path) -> None:
    read("demo")
    (old,) = _cached(tables)
    toml = tables / "knowledge" / "demo.toml"
    toml.write_text('[[row]]\nid = "b"\nweight = 1.0\nextra = true\n')
    os.utime(toml, ns=(old.stat().st_mtime_ns + 10**9,) * 2)
    assert read("demo") == {"row": [{"id": "b", "weight": 1.0, "extra": True}]}
    (new,) = _cached(tables)
    assert new != old


def test_no_cache_is_written_when_asked_not_to(tables: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDOCTOR_NO_CACHE", "1")
    assert read("demo")["row"][0]["id"] == "a"
    assert not (tables / "cache").exists()


def test_an_unwritable_or_damaged_cache_only_costs_a_parse(tables: Path) -> None:
    (tables / "cache").write_text("a file where the folder should be")
    assert read("demo")["row"][0]["id"] == "a"
    (tables / "cache").unlink()
    read("demo")
    (copy,) = _cached(tables)
    copy.write_text('{"row": [')  # a truncated copy
    assert read("demo")["row"][0]["id"] == "a"


def test_the_shipped_tables_read_from_the_cache_equal_the_toml() -> None:
    from cudoctor.knowledge import tomllib

    for name in ("causes", "signatures/gpu-oom", "torch"):
        with open(os.path.join(knowledge.HERE, f"{name}.toml"), "rb") as fh:
            assert read(name) == tomllib.load(fh)
