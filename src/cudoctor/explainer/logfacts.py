"""Facts a log states about the machine that wrote it (knowledge/log_facts.toml): the GPU and
its compute capability as TensorFlow and XLA print them, the driver and cuDNN they report, the
nvidia-smi header, nvcc's release, collect_env's lines. The scanner records them on the lines its prefilter already visits; `fill` adds
them to a snapshot where it knows nothing better, so a log pasted from another machine brings
its own GPU and driver to the rules that need them.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from cudoctor import knowledge
from cudoctor.explainer import signatures
from cudoctor.facts.stated import KEYS, from_stated
from cudoctor.model import Snapshot, known


@dataclasses.dataclass(frozen=True)
class LogFact:
    id: str
    anchors: tuple[str, ...]
    regex: signatures.LazyRegex
    examples: tuple[str, ...]
    gives: dict[str, str]
    source: str


@functools.lru_cache(maxsize=1)
def load() -> tuple[LogFact, ...]:
    return tuple(
        LogFact(
            id=row["id"],
            **signatures.matcher_fields(row),
            examples=tuple(row["examples"]),
            gives=dict(row.get("gives", {})),
            source=row.get("source", ""),
        )
        for row in knowledge.table("log_facts")["fact"]
    )


@functools.lru_cache(maxsize=1)
def anchor_index() -> dict[str, tuple[LogFact, ...]]:
    return signatures.by_anchor(load())


def record(body: str, low: str, line_no: int, found: dict[str, tuple[int, str]]) -> None:
    """Add what this line states to `found` (key -> (line, value)), keeping each key's first line."""
    for anchor, rows in anchor_index().items():
        if anchor not in low:
            continue
        for row in rows:
            m = row.regex.search(body)
            if m:
                for key, value in m.groupdict().items():
                    if value and key not in found:
                        found[key] = (line_no, value.strip())


def fill(snap: Snapshot, found: dict[str, tuple[int, str]], framework_hint: str | None) -> Snapshot:
    """The facts the log states, added where `snap` does not know them (a live fact always wins)."""
    if not found:
        return snap
    stated = from_stated({key: value for key, (_, value) in found.items()}, framework_hint)
    first = min(line for line, _ in found.values())
    for fact in stated:
        have = snap.get(fact.key)
        if fact.known and (have is None or not have.known or _only_inferred(have.value, fact.value)):
            snap.add(known(fact.key, fact.value, f"log line {first}+: {fact.source}"))
    return snap


def _only_inferred(have: Any, new: Any) -> bool:
    """A framework build the snapshot only inferred (the default wheel of a stated version) or does not
    know gives way to the one the log states (collect_env's 'CUDA used to build PyTorch: None')."""
    return (
        isinstance(have, dict)
        and isinstance(new, dict)
        and (bool(have.get("cuda_inferred")) or have.get("build") == "unknown")
        and have.get("build") != new.get("build")
        and new.get("build") in ("cpu", "cuda")
        and not new.get("cuda_inferred")
    )


def validate() -> list[str]:
    problems = []
    for row in load():
        for key in row.regex.groupindex:
            if key not in KEYS:
                problems.append(f"log_facts {row.id}: group {key!r} is no stated-fact key")
        for example in row.examples:
            m = row.regex.search(example)
            if m is None:
                problems.append(f"log_facts {row.id}: example does not match: {example[:80]}")
            elif not any(a in m.group(0).lower() for a in row.anchors):
                problems.append(f"log_facts {row.id}: no anchor inside the match of {example[:80]}")
        first = row.regex.search(row.examples[0]) if row.examples else None
        got: dict[str, Any] = {k: v.strip() for k, v in first.groupdict().items() if v} if first else {}
        if row.gives and got != row.gives:
            problems.append(f"log_facts {row.id}: first example gives {got}, not {row.gives}")
    return problems
