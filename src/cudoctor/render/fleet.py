"""`cudoctor fleet` in text and JSON (formatting only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cudoctor.render.documents import dumps

if TYPE_CHECKING:
    from cudoctor.fleet.analysis import FleetResult


def text(result: FleetResult) -> str:
    """The configurations, each with its nodes and findings, then the odd ones out and silent nodes."""
    total = sum(len(g.nodes) for g in result.groups) + len(result.failed)
    out = [
        f"cudoctor fleet: {total} node(s), {len(result.groups)} configuration(s), {len(result.failed)} without an answer"
    ]
    for i, g in enumerate(result.groups, 1):
        errors = sum(f["severity"] == "error" for f in g.findings)
        out.append(
            f"\n[{i}] {len(g.nodes)} node(s): {', '.join(g.nodes[:6])}{' ...' if len(g.nodes) > 6 else ''}"
        )
        out += [f"    {k}: {v}" for k, v in g.fingerprint.items()]
        out.append(f"    findings: {len(g.findings)} ({errors} error(s))")
        out += [
            f"      {'x' if f['severity'] == 'error' else '!'} {f['title']}  [{f['id']}]"
            for f in g.findings[:8]
        ]
    if result.outliers:
        out.append("\nOdd ones out:")
        out += [f"  {o['text']}" for o in result.outliers]
    if result.failed:
        out.append("\nNo answer:")
        out += [f"  {f.node}: {f.status}: {f.error}" for f in result.failed]
    return "\n".join(out) + "\n"


def as_json(result: FleetResult) -> str:
    return dumps(result.to_json())
