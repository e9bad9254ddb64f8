"""The Python API behind `cudoctor.check()` and `cudoctor.explain()`."""

from __future__ import annotations

import dataclasses
import io
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
    exc_or_text: BaseException | str, facts: Mapping[str, Any] | None = None, live: bool = False
) -> Diagnosis:
    """Explain an exception (with its chained causes) or a log text.

    live=False by default: an exception handler should not spend time collecting this
    machine's facts unless asked; pass live=True to rank with them.
    """
    from cudoctor.explainer import rank, scan
    from cudoctor.explainer.command import guess_framework, to_json
    from cudoctor.facts.stated import from_stated

    text = exc_or_text if isinstance(exc_or_text, str) else exception_text(exc_or_text)
    result = scan.scan(io.BytesIO(text.encode("utf-8", "replace")))
    framework = guess_framework(result)
    snap = from_stated(facts or {}, framework)
    if live:
        from cudoctor.facts import collect_live

        snap = snap.merged_with(collect_live())
    exp = rank.explain(result, snap, other=str((facts or {}).get("other", "")))
    doc = to_json(exp, framework)
    return Diagnosis(doc["root"], doc["causes"], exp.root is not None, doc["benign"])
