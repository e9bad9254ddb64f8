"""The causes' general steps name what the other tables say today (knowledge/cause_fields.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from cudoctor import knowledge
from cudoctor.knowledge import cause_fields, jax_builds

CAUSES_TOML = Path(knowledge.HERE) / "causes.toml"


def _with_rows(monkeypatch: pytest.MonkeyPatch, name: str, key: str, rows: list[dict[str, Any]]) -> None:
    real = knowledge.table

    def patched(table_name: str) -> dict[str, Any]:
        data = real(table_name)
        return {**data, key: [*data[key], *rows]} if table_name == name else data

    monkeypatch.setattr(cause_fields, "table", patched)
    monkeypatch.setattr(jax_builds, "table", patched)


def test_no_general_step_writes_a_wheel_index_or_jax_extra_out() -> None:
    """What goes stale with a release comes from the tables: causes.toml holds the fields, not the values."""
    text = CAUSES_TOML.read_text(encoding="utf-8")
    assert not re.search(r"download\.pytorch\.org/whl/cu\d+", text)
    assert "jax[cuda12]" not in text and "jax[cuda13]" not in text


def test_the_fields_are_filled_in_the_steps_a_cause_shows() -> None:
    steps = " ".join(knowledge.cause("cpu-only-build")["fix"])
    assert "{" not in steps
    assert f"--index-url {cause_fields.torch_index()}" in steps
    assert "jax[cuda12]" in steps and "525.60.13" in steps  # jax.toml [[install]] cuda_major 12
    assert re.search(
        r"PyTorch \d+\.\d+'s cu\d+ wheels keep sm_\d+", " ".join(knowledge.cause("arch-unsupported")["fix"])
    )


def test_a_new_torch_release_moves_the_index(monkeypatch: pytest.MonkeyPatch) -> None:
    _with_rows(monkeypatch, "torch", "release", [{"version": "9.1.0", "variants": ["cpu", "cu140", "cu139"]}])
    assert cause_fields.torch_index() == "https://download.pytorch.org/whl/cu139"  # its oldest CUDA


def test_a_release_without_cuda_wheels_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    before = cause_fields.torch_index()
    _with_rows(monkeypatch, "torch", "release", [{"version": "9.1", "variants": []}])
    assert cause_fields.torch_index() == before


def test_jax_extras_follow_the_install_table(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "jax[cuda13] with a driver >= 580" in cause_fields.jax_newer()
    _with_rows(
        monkeypatch,
        "jax",
        "install",
        [{"cuda_major": 14, "step": "pip install -U 'jax[cuda14]'", "min_driver": "600"}],
    )
    assert cause_fields.jax_newer().endswith("jax[cuda14] with a driver >= 600")
    assert "jax[cuda12]" in cause_fields.jax_install()  # still the oldest current one


def test_other_braces_in_a_step_are_left_alone() -> None:
    step = "sd = {k: v for k, v in sd.items()}; {torch_index}; ${HOME}; {not_a_field}"
    filled = cause_fields.fill(step, {"torch_index": "X"})
    assert filled == "sd = {k: v for k, v in sd.items()}; X; ${HOME}; {not_a_field}"
    assert cause_fields.unknown(step) == ["not_a_field"]


def test_validate_reports_a_field_no_table_fills(monkeypatch: pytest.MonkeyPatch) -> None:
    real = knowledge.table
    bad = {"x-cause": {"title": "t", "why": "w", "fix": ["pip install {torch_wheel}"]}}

    def patched(name: str) -> dict[str, Any]:
        return {**real(name), **bad} if name == "causes" else real(name)

    monkeypatch.setattr(knowledge, "table", patched)
    assert knowledge._cause_field_problems() == [
        "causes.toml [x-cause]: unknown field {torch_wheel} in a step"
    ]
