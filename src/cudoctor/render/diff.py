"""`cudoctor diff` (and `check --since`) in text, from the diff's JSON document (formatting only)."""

from __future__ import annotations

from typing import Any

MARKS = {"added": "+", "removed": "-", "changed": "~"}


def text(doc: dict[str, Any]) -> str:
    """{"a", "b", "changes", "findings_appeared", "findings_gone"}: what changed from a to b, layer by layer."""
    out = [f"cudoctor diff: {doc['a']} -> {doc['b']}"]
    appeared, gone = doc["findings_appeared"], doc["findings_gone"]
    if not doc["changes"] and not appeared and not gone:
        return out[0] + "\nNo differences.\n"
    layer = None
    for c in doc["changes"]:
        if c["layer"] != layer:
            layer = c["layer"]
            out.append(f"\n{layer}:")
        out.append(f"  {MARKS[c['kind']]} {c['key']}: {c['before'] or '(none)'} -> {c['after'] or '(none)'}")
    if appeared or gone:
        out.append("\nFindings:")
        out += [f"  + [{f['severity']}] {f['title']}  [{f['id']}]" for f in appeared]
        out += [f"  - [{f['severity']}] {f['title']}  [{f['id']}]" for f in gone]
    return "\n".join(out) + "\n"
