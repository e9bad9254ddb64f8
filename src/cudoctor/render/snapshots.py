"""`cudoctor snapshot list` and `snapshot show` (formatting only)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from cudoctor.render.documents import dumps
from cudoctor.render.text import render

if TYPE_CHECKING:
    from cudoctor.model import Report
    from cudoctor.store import Entry


def listing_text(entries: Sequence[Entry]) -> str:
    out = [f"{'id':>5}  {'created':25}  {'label':16}  {'good':4}  findings  host  environment"]
    out += [
        f"{e.id:>5}  {e.created:25}  {(e.label or ''):16}  {'yes' if e.good else '':4}  {e.findings:>8}  {e.host or ''}  {e.env or '?'}"
        for e in entries
    ]
    return "\n".join(out) + "\n"


def listing_json(entries: Sequence[Entry]) -> str:
    return dumps([dataclasses.asdict(e) for e in entries])


def shown_text(report: Report, entry: Entry) -> str:
    """A saved snapshot's report, headed by where and when it was taken."""
    label = f" ({entry.label})" if entry.label else ""
    return f"snapshot {entry.id}{label}, taken {entry.created} on {entry.host}\n" + render(report)
