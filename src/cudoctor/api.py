"""The Python API behind `cudoctor.check()` and `cudoctor.explain()`."""

from __future__ import annotations

import dataclasses
import traceback
from collections.abc import Mapping
from typing import Any

from cudoctor.model import Report, Snapshot


def check(facts: Mapping[str, Any] | None = None, live: bool = True) -> Report:
    """Check this machine (and/or facts a person stated) and return the Report (findings, snapshot)."""
    from cudoctor.facts import collect_live
    from cudoctor.facts.stated import from_stated
    from cudoctor.fixes import checked

    snap = Snapshot(origin="none")
    if facts:
        snap = from_stated(facts)
    if live:
        snap = snap.merged_with(collect_live()) if facts else collect_live()
    return Report(snap, checked(snap))


@dataclasses.dataclass
class Diagnosis:
    """What `cudoctor.explain` found: the root error line and the ranked causes (JSON-ready)."""

    root: dict[str, Any] | None
    causes: list[dict[str, Any]]
    matched: bool  # True when a known GPU / BLAS / operand error signature was found
    harmless: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # known harmless lines seen

    @property
    def top(self) -> dict[str, Any] | None:
        return self.causes[0] if self.causes else None

    def summary(self, max_causes: int = 2) -> str:
        """A few lines for a PEP 678 note or a notebook: root, best causes, first fixes."""
        if not self.matched or not self.causes:
            if self.harmless:
                titles = "; ".join(h["title"] for h in self.harmless)
                return f"cudoctor: no error found; these lines are known to be harmless: {titles}."
            return "cudoctor: no known GPU/BLAS error signature in this error."
        lines = []
        if self.root:
            lines.append(f"cudoctor: root error: {self.root['text'][:300]}")
        for i, c in enumerate(self.causes[:max_causes], 1):
            lines.append(f"cudoctor: cause {i}: {c['title']} [{c['id']}, confidence {c['confidence']:.2f}]")
            for step in c["fix"][:2]:
                lines.append(f"    fix: {step}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary(max_causes=3)


def exception_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def explain(
    exc_or_text: BaseException | str | bytes, facts: Mapping[str, Any] | None = None, live: bool = True
) -> Diagnosis:
    """Explain an exception (with its chained causes) or a log text (str, or bytes read as UTF-8).

    As `cudoctor explain` does: this machine's facts rank the causes when the text comes from this
    machine (its GPU, versions, Python and paths agree); live=False leaves them out, which is faster
    (guard() and the pytest plugin do, so an exception handler stays quick).
    """
    from cudoctor.explainer.command import explain_text

    if isinstance(exc_or_text, bytes | bytearray):
        text = bytes(exc_or_text).decode("utf-8", "replace")
    elif isinstance(exc_or_text, str):
        text = exc_or_text
    elif isinstance(exc_or_text, BaseException):
        text = exception_text(exc_or_text)
    else:
        raise TypeError(
            f"cudoctor.explain() takes an exception, a str or bytes, not {type(exc_or_text).__name__}"
        )
    if facts is not None and not isinstance(facts, Mapping):
        raise TypeError(f"facts must be a mapping of stated facts, not {type(facts).__name__}")
    doc = explain_text(text, facts or {}, live)
    root = doc["root"]
    return Diagnosis(root, doc["causes"], bool(root and root.get("signature")), doc["benign"])
