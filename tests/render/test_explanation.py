"""Explain's text and Markdown (render/explanation.py), on documents explain builds from real logs: what
`cudoctor explain` prints is the explanation plus whose facts ranked it; `cudoctor run`'s brief lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cudoctor.explainer.command import explain_stated
from cudoctor.render import explanation
from tests.conftest import ROOT

BROKEN = Path(ROOT) / "tests" / "fixtures" / "gpu" / "h100" / "broken"
STATED = {"gpu": "H100", "framework_version": "torch 2.9.0+cu128"}
TF_NOTICES = (
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
    "2024-11-02 01:08:00.584775: I tensorflow/core/platform/cpu_feature_guard.cc:210] This TensorFlow binary "
    "is optimized to use available CPU instructions in performance-critical operations.\n"
)


def _doc(name: str) -> dict[str, Any]:
    return explain_stated((BROKEN / name).read_text(encoding="utf-8"), STATED)


def test_explains_text_is_the_explanation_then_whose_facts() -> None:
    doc = _doc("oom_accumulate.txt")
    doc["facts_used"]["left_out_because"] = ["--no-live"]  # as `cudoctor explain --no-live` says it
    line = explanation.facts_line(doc["facts_used"])
    assert line == "Facts used: stated"
    assert explanation.text(doc) == explanation.to_text(doc, False) + "\n" + line + "\n"
    assert explanation.text(doc, verbose=True).startswith(explanation.to_text(doc, True))
    del doc["facts_used"]
    assert explanation.text(doc) == explanation.to_text(doc, False)


def test_an_error_gives_its_root_line_and_each_step_once() -> None:
    doc = _doc("oom_accumulate.txt")
    assert explanation.shows_error(doc["root"])
    root = doc["root"]
    assert explanation.to_text(doc, False).startswith(f"Root error (line {root['line']}): ")
    assert f"**Root error** (line {root['line']}):" in explanation.to_markdown(doc)
    steps = [s for own in explanation.new_steps(doc["causes"]) for s in own]
    assert len(steps) == len(set(steps)) and set(steps) == {s for c in doc["causes"] for s in c["fix"]}
    brief = explanation.to_brief(doc)
    assert brief.startswith(f"cudoctor: root error (line {root['line']})")
    assert f"cudoctor: 1. {doc['causes'][0]['title']} [{doc['causes'][0]['id']}," in brief


def test_harmless_lines_alone_are_no_error() -> None:
    doc = explain_stated(TF_NOTICES, {})
    assert doc["root"] is None and doc["benign"] and not explanation.shows_error(doc["root"])
    assert explanation.to_brief(doc) == ""
    text = explanation.to_text(doc, False)
    assert text.startswith("No error found: every line here that looks like one is a known harmless message.")
    assert explanation.RERUN_HINT in text
    assert "### Known harmless lines" in explanation.to_markdown(doc)
    assert "    harmless: " in explanation.to_text(doc, True)
