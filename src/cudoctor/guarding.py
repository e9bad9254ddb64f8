"""`with cudoctor.guard():` / `@cudoctor.guard()`: explained exceptions, nothing swallowed.

When a CUDA / cuBLAS / cuDNN / XLA / shape / dtype / device error escapes, the same exception
object (same type, same traceback) propagates with a PEP 678 note holding the diagnosis.
Entering and leaving the block costs two attribute stores: the diagnosis runs only on error.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Literal

NOTE_MARK = "cudoctor: "


def add_note(exc: BaseException, note: str) -> None:
    """exc.add_note on Python >= 3.11; the same __notes__ list on 3.10."""
    if hasattr(exc, "add_note"):
        exc.add_note(note)
    else:  # pragma: no cover - Python 3.10
        notes = getattr(exc, "__notes__", None)
        if notes is None:
            notes = []
            exc.__notes__ = notes
        notes.append(note)


def already_diagnosed(exc: BaseException) -> bool:
    return any(str(n).startswith(NOTE_MARK) for n in getattr(exc, "__notes__", ()) or ())


def diagnose_into(exc: BaseException, facts: Mapping[str, Any] | None = None, live: bool = False) -> bool:
    """Attach a diagnosis note when cudoctor recognises the error; True if it did."""
    if already_diagnosed(exc) or not isinstance(exc, Exception):
        return False
    try:
        from cudoctor.api import explain

        diagnosis = explain(exc, facts=facts, live=live)
    except Exception as inner:  # the doctor must never replace the patient's error
        add_note(exc, f"{NOTE_MARK}could not diagnose this error ({type(inner).__name__}: {inner})")
        return False
    if not diagnosis.matched:
        return False
    add_note(exc, diagnosis.summary())
    return True


class guard(contextlib.ContextDecorator):  # lower case: used like a function, `with cudoctor.guard():`
    """Context manager and decorator; `facts` are stated facts, `live` mixes in this machine's."""

    def __init__(self, facts: Mapping[str, Any] | None = None, live: bool = False) -> None:
        self.facts = facts
        self.live = live

    def __enter__(self) -> guard:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> Literal[False]:
        if exc is not None:
            diagnose_into(exc, self.facts, self.live)
        return False  # never swallow
