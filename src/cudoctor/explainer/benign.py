"""Known harmless lines (knowledge/benign.toml): never a root error, named when nothing else is."""

from __future__ import annotations

import dataclasses
import functools
import re

from cudoctor import knowledge
from cudoctor.explainer import signatures


@dataclasses.dataclass(frozen=True)
class Benign:
    id: str
    title: str
    anchors: tuple[str, ...]
    regex: re.Pattern[str]
    why: str
    matters: str
    source: str
    examples: tuple[str, ...]
    counter_examples: tuple[str, ...]


@dataclasses.dataclass
class BenignHit:
    """The earliest line of one kind of harmless message, and how many of that kind explain saw
    (it looks only at lines an error anchor led to and at the last lines: a log can hold millions)."""

    entry: Benign
    line: int
    text: str
    seen: int = 1


@functools.lru_cache(maxsize=1)
def load() -> tuple[Benign, ...]:
    return tuple(
        Benign(
            id=row["id"],
            title=row["title"],
            **signatures.entry_fields(row),
            why=row["why"],
            matters=row.get("matters", ""),
        )
        for row in knowledge.table("benign")["benign"]
    )


def match(text: str) -> Benign | None:
    """The harmless message this line is, if it is one."""
    low = text.lower()
    for entry in load():
        if any(a in low for a in entry.anchors) and entry.regex.search(text):
            return entry
    return None


def record(hits: dict[str, BenignHit], entry: Benign, line: int, text: str) -> None:
    """Count a harmless line, keeping the earliest of its kind."""
    if entry.id in hits:
        hit = hits[entry.id]
        hit.seen += 1
        if line < hit.line:
            hit.line, hit.text = line, text
    else:
        hits[entry.id] = BenignHit(entry, line, text)


def to_json(hits: dict[str, BenignHit]) -> list[dict[str, object]]:
    return [
        {
            "id": h.entry.id,
            "title": h.entry.title,
            "line": h.line,
            "text": h.text[:500],
            "seen": h.seen,
            "why": h.entry.why,
            "matters": h.entry.matters,
            "source": h.entry.source,
        }
        for h in sorted(hits.values(), key=lambda h: h.line)
    ]


def validate() -> list[str]:
    """Problems: duplicate ids, anchors missing from examples, examples that fail, counter-examples that match."""
    problems: list[str] = []
    seen: set[str] = set()
    for entry in load():
        if entry.id in seen:
            problems.append(f"{entry.id}: duplicate id")
        seen.add(entry.id)
        if not entry.examples or not entry.counter_examples or not entry.source:
            problems.append(f"{entry.id}: needs an example, a counter-example and a source")
        for ex in entry.examples:
            if match(ex) is not entry:
                problems.append(f"{entry.id}: does not recognise example {ex[:60]!r}")
        problems += [
            f"{entry.id}: matches counter-example {ex[:60]!r}"
            for ex in entry.counter_examples
            if entry.regex.search(ex)
        ]
    return problems
