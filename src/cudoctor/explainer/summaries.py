"""Lines that only summarise an error printed elsewhere (knowledge/summaries.toml), such as a
launcher's report that a worker failed. With no signature matched, explain names such a line and
says where the worker's own error is, instead of offering the summary as the root error."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable

from cudoctor import knowledge
from cudoctor.explainer import signatures


@dataclasses.dataclass(frozen=True)
class Summary:
    id: str
    title: str
    anchors: tuple[str, ...]
    regex: signatures.LazyRegex
    why: str
    find: tuple[str, ...]
    source: str
    examples: tuple[str, ...]
    counter_examples: tuple[str, ...]


@functools.lru_cache(maxsize=1)
def load() -> tuple[Summary, ...]:
    return tuple(
        Summary(
            id=row["id"],
            title=row["title"],
            **signatures.entry_fields(row),
            why=row["why"],
            find=tuple(row["find"]),
        )
        for row in knowledge.table("summaries")["summary"]
    )


def match(text: str) -> Summary | None:
    return signatures.first_known(load(), text)


# a Python exception line ("ValueError: bad config", "[rank1]: RuntimeError: ...", "KeyboardInterrupt"),
# not a frame that raises one ("    raise ChildFailedError(")
EXCEPTION_LINE = re.compile(
    r"^\s*(?:\[[^\]]*\]:?\s*)?(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt)\b(?::|\s*$)"
)


def locate(lines: Iterable[tuple[int, str]]) -> tuple[Summary | None, int, str] | None:
    """Among these (line number, text) lines, the last launcher summary: (its entry, number, text); or,
    when a worker's own exception line stands before it, (None, that line's number, its text); None
    when there is no summary, or an exception line comes after it."""
    worker: tuple[int, str] | None = None
    found: tuple[Summary | None, int, str] | None = None
    for n, text in lines:
        entry = match(text)
        if entry is not None:
            found = (None, *worker) if worker else (entry, n, text.rstrip())
        elif EXCEPTION_LINE.search(text):
            worker = (n, text.rstrip())
    if found is not None and worker is not None and worker[0] > found[1]:
        return None  # an exception after the last summary: the usual last-error choice applies
    return found


def validate() -> list[str]:
    """Problems: duplicate ids, examples not recognised, counter-examples that match, no steps."""
    return signatures.known_line_problems(load()) + [
        f"{entry.id}: needs steps, an example and a counter-example"
        for entry in load()
        if not entry.find or not entry.examples or not entry.counter_examples
    ]
