"""The data every layer shares: facts, snapshots and findings.

Facts know nothing of findings; findings only point at facts by key. Everything here
serialises to plain JSON so a snapshot taken on one machine can be checked on another.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterator, Mapping
from typing import Any

SCHEMA_VERSION = 1

# The frameworks cudoctor reads (framework.<name> facts), in the order it lists them, and their names
# as people write them. Every layer takes them from here.
FRAMEWORKS = ("torch", "tensorflow", "jax", "cupy")
FRAMEWORK_LABEL = {"torch": "PyTorch", "tensorflow": "TensorFlow", "jax": "JAX", "cupy": "CuPy"}


class Status(str, enum.Enum):
    """How much we know about one fact."""

    KNOWN = "known"  # value holds what was found
    ABSENT = "absent"  # looked, and the thing is not there (no driver, no torch)
    UNKNOWN = "unknown"  # could not tell (timed out, not readable, not stated)
    ERROR = "error"  # the collector itself failed; detail says how


class Severity(str, enum.Enum):
    ERROR = "error"  # the GPU path cannot work
    WARNING = "warning"  # it works but is wrong, slow or fragile
    INFO = "info"  # notable, no action needed

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "info": 2}[self.value]


@dataclasses.dataclass(frozen=True)
class Fact:
    """One thing known (or not) about a machine, with where it came from."""

    key: str
    value: Any = None
    status: Status = Status.KNOWN
    source: str = ""
    detail: str = ""

    @property
    def known(self) -> bool:
        return self.status is Status.KNOWN

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status.value, "value": self.value, "source": self.source}
        if self.detail:
            out["detail"] = self.detail
        return out

    @classmethod
    def from_json(cls, key: str, data: Mapping[str, Any]) -> Fact:
        return cls(
            key=key,
            value=data.get("value"),
            status=Status(data.get("status", "known")),
            source=str(data.get("source", "")),
            detail=str(data.get("detail", "")),
        )


def known(key: str, value: Any, source: str, detail: str = "") -> Fact:
    return Fact(key, value, Status.KNOWN, source, detail)


def absent(key: str, source: str, detail: str = "") -> Fact:
    return Fact(key, None, Status.ABSENT, source, detail)


def unknown(key: str, source: str, detail: str = "") -> Fact:
    return Fact(key, None, Status.UNKNOWN, source, detail)


def failed(key: str, source: str, detail: str) -> Fact:
    return Fact(key, None, Status.ERROR, source, detail)


@dataclasses.dataclass
class Snapshot:
    """Every fact cudoctor knows about one machine."""

    facts: dict[str, Fact] = dataclasses.field(default_factory=dict)
    origin: str = "live"  # live | stated | file | merged
    created: str = ""
    timings_ms: dict[str, float] = dataclasses.field(default_factory=dict)

    def add(self, fact: Fact) -> None:
        self.facts[fact.key] = fact

    def get(self, key: str) -> Fact | None:
        return self.facts.get(key)

    def value(self, key: str, default: Any = None) -> Any:
        fact = self.facts.get(key)
        return fact.value if fact is not None and fact.known else default

    def status(self, key: str) -> Status:
        fact = self.facts.get(key)
        return fact.status if fact is not None else Status.UNKNOWN

    def __iter__(self) -> Iterator[Fact]:
        return iter(self.facts[k] for k in sorted(self.facts))

    def merged_with(self, other: Snapshot) -> Snapshot:
        """Facts of `other` fill in and override this snapshot's unknown or stated gaps.

        A known fact of `other` wins over a non-known fact here; a known fact here is kept.
        """
        out = Snapshot(dict(self.facts), origin="merged", created=self.created or other.created)
        for key, fact in other.facts.items():
            mine = out.facts.get(key)
            if mine is None or (not mine.known and fact.known):
                out.facts[key] = fact
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "origin": self.origin,
            "created": self.created,
            "facts": {f.key: f.to_json() for f in self},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Snapshot:
        if not isinstance(data, Mapping) or not isinstance(data.get("facts"), Mapping):
            raise ValueError("not a cudoctor snapshot: no 'facts' object")
        check_schema(data.get("schema", SCHEMA_VERSION), "snapshot")
        facts = {k: Fact.from_json(k, v) for k, v in data["facts"].items() if isinstance(v, Mapping)}
        return cls(facts, origin="file", created=str(data.get("created", "")))


def check_schema(schema: Any, what: str) -> None:
    """A document's schema number: 1..SCHEMA_VERSION; anything else is refused with one line."""
    if isinstance(schema, bool) or not isinstance(schema, int) or schema < 1:
        raise ValueError(f"{what} schema {schema!r} is not one cudoctor writes (1 to {SCHEMA_VERSION})")
    if schema > SCHEMA_VERSION:
        raise ValueError(f"{what} schema {schema} is newer than this cudoctor understands ({SCHEMA_VERSION})")


@dataclasses.dataclass(frozen=True)
class Finding:
    """One problem found, ready to render: what, why, evidence and the fix."""

    id: str  # the check or signature that produced it (stable, kebab-case)
    cause: str  # taxonomy id
    severity: Severity
    title: str
    layer: str = "general"
    evidence: tuple[str, ...] = ()
    why: str = ""
    fix: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    confidence: str = "certain"
    subject: str = ""  # the framework a finding is about, when it is about one
    also: tuple[str, ...] = ()  # other taxonomy ids the same fact supports (a contract has two sides)
    about: tuple[str, ...] = ()  # frameworks it concerns while shown under its layer (their lines count it)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "cause": self.cause,
            "severity": self.severity.value,
            "title": self.title,
            "layer": self.layer,
            "evidence": list(self.evidence),
            "why": self.why,
            "fix": list(self.fix),
            "references": list(self.references),
            "confidence": self.confidence,
            "subject": self.subject,
            "also": list(self.also),
            "about": list(self.about),
        }


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """What one check said: findings, or that it could not decide and why."""

    check_id: str
    outcome: str  # "ok" | "findings" | "unknown" | "skipped" | "crashed"
    findings: tuple[Finding, ...] = ()
    detail: str = ""


@dataclasses.dataclass
class Report:
    """A snapshot and what the checks made of it."""

    snapshot: Snapshot
    results: list[CheckResult] = dataclasses.field(default_factory=list)
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def findings(self) -> list[Finding]:
        found = [f for r in self.results for f in r.findings]
        return sorted(found, key=lambda f: f.severity.rank)

    @property
    def exit_code(self) -> int:
        return 1 if any(f.severity is Severity.ERROR for f in self.findings) else 0
