"""The solved public reports shipped with cudoctor (knowledge/corpus/*.jsonl): what the similar-report
search shows and what the learned model is trained on.

Each row: id, source (the public thread), framework, log (an excerpt as posted), context (facts the
reporter stated), causes (taxonomy ids, the confirmed one first), resolution, confidence.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import re
from typing import Any

HERE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "knowledge", "corpus")
# dev.jsonl (the shared seed), then the rounds' reports in order, in shards kept under SHARD_BYTES each: a round
# is appended to the last shard, and a new shard, listed here, is started when it would pass the bound (or a
# session's rounds would leave the last one within a few KB of it: extra-4 from session 45)
FILES = ("dev.jsonl", "extra-1.jsonl", "extra-2.jsonl", "extra-3.jsonl", "extra-4.jsonl")
EXTRA = FILES[1:]
SHARD_BYTES = 1 << 20


class CorpusError(Exception):
    """The shipped corpus is missing or unreadable (the message is one line)."""


@dataclasses.dataclass(frozen=True)
class Report:
    id: str
    source: str
    log: str
    context: dict[str, Any]
    causes: tuple[str, ...]
    resolution: str
    framework: str = ""

    @property
    def thread(self) -> str:
        return thread(self.source)


def thread(url: str) -> str:
    """One key per public thread: the URL without its fragment, query and trailing slash."""
    return re.sub(r"[#?].*$", "", url.strip()).rstrip("/").lower()


def paths() -> list[str]:
    return [os.path.join(HERE, name) for name in FILES]


def _row(data: dict[str, Any]) -> Report:
    return Report(
        id=str(data["id"]),
        source=str(data["source"]),
        log=str(data["log"]),
        context=dict(data.get("context") or {}),
        causes=tuple(data["causes"]),
        resolution=str(data.get("resolution") or ""),
        framework=str(data.get("framework") or ""),
    )


@functools.cache
def load() -> tuple[Report, ...]:
    rows: list[Report] = []
    for path in paths():
        try:
            with open(path, encoding="utf-8") as fh:
                rows += [_row(json.loads(line)) for line in fh if line.strip()]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CorpusError(f"{os.path.basename(path)}: {exc}") from None
    return tuple(rows)


def stamp(extra: bytes = b"") -> str:
    """A digest of the corpus files (and any other training input passed in): a model trained on
    other data carries another stamp."""
    digest = hashlib.sha256(extra)
    for path in paths():
        with open(path, "rb") as fh:
            digest.update(fh.read())
    return digest.hexdigest()[:16]
