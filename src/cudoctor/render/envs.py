"""The table `cudoctor check --all-envs` prints: one row an environment, one column a layer."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from cudoctor.model import Severity
from cudoctor.render.text import Style


def _short(title: str) -> str:
    """'CUDA toolkits & libraries' -> 'CUDA', 'GPU & driver' -> 'GPU': a column heading."""
    return title.split(" & ")[0].replace(" toolkits", "")


def table(rows: Sequence[dict[str, Any]], odd: Sequence[dict[str, Any]], root: str, note: str = "") -> str:
    style = Style(sys.stdout)
    layers = list(dict.fromkeys(t for r in rows for t in r.get("layers", {})))
    heads = [_short(t) for t in layers]
    width = max([len(r["env"]) for r in rows] + [11])
    out = [f"cudoctor: {len(rows)} environment(s): conda envs, and venvs under {root}"]
    out.append(f"{'environment':{width}}  {'python':8}  " + "  ".join(heads))
    for r in rows:
        if r.get("error"):
            out.append(f"{r['env']:{width}}  {'?':8}  {r['error']}")
            continue
        cells = [
            f"{style.glyph(r['layers'][t]) if t in r['layers'] else '-':{len(h)}}"
            for t, h in zip(layers, heads, strict=True)
        ]
        out.append(f"{r['env']:{width}}  {r['python']:8}  " + "  ".join(cells).rstrip())
    bad = [r for r in rows if r.get("findings")]
    if bad:
        out.append("")
        for r in bad:
            errors = [f["id"] for f in r["findings"] if f["severity"] == "error"]
            warnings = [f["id"] for f in r["findings"] if f["severity"] == "warning"]
            parts = [f"{style.sev(Severity.ERROR)} {', '.join(errors)}"] if errors else []
            parts += [f"{style.sev(Severity.WARNING)} {', '.join(warnings)}"] if warnings else []
            if parts:
                out.append(f"  {r['env']}: " + "; ".join(parts))
    if odd:
        out.append("\nOdd ones out:")
        for o in odd:
            diffs = "; ".join(
                f"{d['fact']} {d['value']} where most have {d['majority']}" for d in o["differences"]
            )
            out.append(f"  {o['node']}: {diffs}")
    if note:
        out.append(f"\n(note: {note})")
    out.append("\ncudoctor check --python ENV shows one of them in full.")
    return "\n".join(out) + "\n"


def text(doc: dict[str, Any]) -> str:
    """`cudoctor check --all-envs`: its JSON document as the table."""
    return table(doc["envs"], doc["odd_ones"], doc["root"], doc["note"] or "")
