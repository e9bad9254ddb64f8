"""The Python API behind `cudoctor.check()` and `cudoctor.explain()`."""

from __future__ import annotations

import dataclasses
import os
import traceback
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cudoctor.model import Report, Snapshot

if TYPE_CHECKING:
    from cudoctor.facts.target import Target

PythonSpec = str | os.PathLike[str] | None


def target(python: PythonSpec = None) -> Target:
    """The Python environment whose facts the API gathers: `python` as `--python` takes it (an
    interpreter, an environment directory, a command on PATH, or "self"); None is "self", the
    interpreter running this code (a program or notebook calling the API is the environment it is
    about). Raises TargetError (a ValueError) with one line when that Python cannot be asked."""
    from cudoctor.facts import tool_timeout
    from cudoctor.facts.target import choose, self_target

    if python is None:
        return self_target()
    if not isinstance(python, str | os.PathLike):
        raise TypeError(f"python must be a path (str or os.PathLike) or 'self', not {type(python).__name__}")
    spec = os.fspath(python)
    if not isinstance(spec, str):
        raise TypeError("python must be a text path, not bytes")
    env = dict(os.environ)
    return choose(spec, env, 2 * tool_timeout(env), label="python=")


def check(facts: Mapping[str, Any] | None = None, live: bool = True, python: PythonSpec = None) -> Report:
    """Check this machine (and/or facts a person stated) and return the Report (findings, snapshot).

    `python`: the Python environment whose packages, framework builds and libraries are checked, as
    `cudoctor check --python` takes it (default: the one running this code)."""
    from cudoctor.facts import collect_live
    from cudoctor.facts.stated import from_stated
    from cudoctor.fixes import checked

    if python is not None and not live:
        raise ValueError("python= names the environment to collect facts from: not with live=False")
    chosen = target(python) if live else None
    snap = Snapshot(origin="none")
    if facts:
        snap = from_stated(facts)
    if live:
        here = collect_live(target=chosen)
        snap = snap.merged_with(here) if facts else here
    return Report(snap, checked(snap))


@dataclasses.dataclass
class Diagnosis:
    """What `cudoctor.explain` found: the root error line and the ranked causes (JSON-ready)."""

    root: dict[str, Any] | None
    causes: list[dict[str, Any]]
    matched: bool  # True when a known GPU / BLAS / operand error signature was found
    harmless: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # known harmless lines seen
    python: dict[str, Any] | None = None  # the environment this machine's facts describe (None: not gathered)

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
    exc_or_text: BaseException | str | bytes,
    facts: Mapping[str, Any] | None = None,
    live: bool = True,
    python: PythonSpec = None,
) -> Diagnosis:
    """Explain an exception (with its chained causes) or a log text (str, or bytes read as UTF-8).

    As `cudoctor explain` does: this machine's facts rank the causes when the text comes from this
    machine (its GPU, versions, Python and paths agree); live=False leaves them out, which is faster
    (guard() and the pytest plugin do, so an exception handler stays quick). `python`: whose
    environment "this machine's facts" describe, as in check() (default: the one running this code).
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
    if python is not None and not live:
        raise ValueError("python= names the environment whose facts count: not with live=False")
    doc = explain_text(text, facts or {}, live, target(python) if live else None)
    root = doc["root"]
    python_used = doc.get("facts_used", {}).get("python")
    return Diagnosis(root, doc["causes"], bool(root and root.get("signature")), doc["benign"], python_used)
