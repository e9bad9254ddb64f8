"""A cause being ranked for one log, and the one way rules add to its score."""

from __future__ import annotations

import dataclasses

from cudoctor.model import Finding

CONFIRM = 1.0  # a fact-based finding for a cause the log permits
RULE_OUT = 0.4  # a fact that rules out the reading a message usually has


@dataclasses.dataclass
class RankedCause:
    id: str
    score: float
    evidence: list[str] = dataclasses.field(default_factory=list)
    findings: list[Finding] = dataclasses.field(default_factory=list)
    reasons: list[str] = dataclasses.field(default_factory=list)
    fixes: list[str] = dataclasses.field(default_factory=list)  # steps a rule found for this log
    generic: bool = True  # False: the root error's own steps replace the cause's generic ones
    why: str | None = None  # the root error's own explanation, in place of the cause's general one


def bump(
    ranked: dict[str, RankedCause], cause: str, amount: float, reason: str, fix: str | None = None
) -> None:
    rc = ranked.setdefault(cause, RankedCause(cause, 0.0))
    rc.score += amount
    rc.reasons.append(reason)
    if fix and fix not in rc.fixes:  # a step the facts back comes before the log's own steps
        rc.fixes.insert(0 if amount > 0 else len(rc.fixes), fix)
