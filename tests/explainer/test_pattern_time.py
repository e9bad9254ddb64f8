"""Every pattern that reads a log or a stated text is linear on hostile lines (issue 44, point 5):
no crafted line of 2,000 characters (what the scanner matches of a line) makes one search take
more than a few milliseconds. A backtracking pattern took 36-73 ms per line, 188 s on a 10 MB log."""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator

import pytest

from cudoctor.explainer import benign, logfacts, signatures
from tests import hostile_lines

LIMIT_S = 0.008  # linear patterns take well under 1 ms; the backtracking ones took 15-75 ms
# modules whose patterns read text a user gives cudoctor (a log, stated prose, a pasted report)
READERS = (
    "cudoctor.explainer.scan",
    "cudoctor.explainer.rank",
    "cudoctor.explainer.readers",
    "cudoctor.explainer.evidence",
    "cudoctor.explainer.whose",
    "cudoctor.facts.stated",
    "cudoctor.facts.stated_builds",
    "cudoctor.facts.stated_containers",
    "cudoctor.facts.stated_words",
    "cudoctor.pasted",
    "cudoctor.redact",
    "cudoctor.versions",
)


def _module_patterns() -> Iterator[tuple[str, re.Pattern[str]]]:
    for name in READERS:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        for attr, value in vars(module).items():
            values = value if isinstance(value, list | tuple) else (value,)
            for i, item in enumerate(values):
                if isinstance(item, re.Pattern) and isinstance(item.pattern, str):
                    yield f"{name}.{attr}[{i}]", item


def _slow(regex: re.Pattern[str], anchors: tuple[str, ...], examples: tuple[str, ...]) -> str | None:
    took, line = hostile_lines.worst(regex, anchors, examples)
    return None if took <= LIMIT_S else f"{took * 1000:.1f} ms on {line[:60]!r}..."


def test_signature_patterns_are_linear_on_hostile_lines() -> None:
    slow = {}
    for sig in signatures.load():
        why = _slow(sig.regex, sig.anchors, sig.examples)
        if why:
            slow[sig.id] = why
    assert slow == {}


def test_benign_and_log_fact_patterns_are_linear_on_hostile_lines() -> None:
    slow = {}
    for row in (*benign.load(), *logfacts.load()):
        why = _slow(row.regex, row.anchors, tuple(getattr(row, "examples", ())))
        if why:
            slow[row.id] = why
    assert slow == {}


def test_reader_module_patterns_are_linear_on_hostile_lines() -> None:
    slow = {}
    for name, regex in _module_patterns():
        why = _slow(regex, (), ())
        if why:
            slow[name] = why
    assert slow == {}


def test_the_hostile_lines_find_a_backtracking_pattern() -> None:
    """The generator is worth something: the pattern issue 44 found is caught by it."""
    backtracking = re.compile(
        r"(?P<det_op>[A-Za-z_][\w.]*(?: [A-Za-z_][\w.]*){0,4}) does not have a deterministic implementation"
    )
    took, _ = hostile_lines.worst(backtracking, ("does not have a deterministic implementation",))
    assert took > LIMIT_S


@pytest.mark.parametrize("module", READERS)
def test_reader_modules_exist(module: str) -> None:
    importlib.import_module(module)
