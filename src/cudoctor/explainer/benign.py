"""Known harmless lines (knowledge/benign.toml): never a root error, named when nothing else is."""

from __future__ import annotations

import dataclasses
import functools

from cudoctor import knowledge
from cudoctor.explainer import signatures


@dataclasses.dataclass(frozen=True)
class Benign:
    id: str
    title: str
    anchors: tuple[str, ...]
    regex: signatures.LazyRegex
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
    return signatures.first_known(load(), text)


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
    """Problems: duplicate ids, examples that fail, counter-examples that match, no source."""
    return signatures.known_line_problems(load()) + [
        f"{entry.id}: needs an example, a counter-example and a source"
        for entry in load()
        if not entry.examples or not entry.counter_examples or not entry.source
    ]
