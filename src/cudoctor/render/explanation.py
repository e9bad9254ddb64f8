"""`cudoctor explain` in text and Markdown (and `cudoctor run`'s few lines), from the JSON document
explainer/command.py builds (formatting only)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def text(doc: dict[str, Any], verbose: bool = False) -> str:
    """What `cudoctor explain` prints: the explanation, then whose facts ranked the causes."""
    line = facts_line(doc.get("facts_used"))
    return to_text(doc, verbose) + ("\n" + line + "\n" if line else "")


def new_steps(causes: list[dict[str, Any]]) -> list[list[str]]:
    """Each cause's fix steps less those an earlier cause already lists (a signature's shared
    `fix` steps are attached to every cause it allows; a reader needs them once)."""
    seen: set[str] = set()
    out = []
    for c in causes:
        out.append([s for s in c["fix"] if s not in seen])
        seen.update(c["fix"])
    return out


def _first_listing(causes: list[dict[str, Any]], step: str) -> int:
    """The number (from 1) of the first cause whose steps include this one."""
    return next(i for i, c in enumerate(causes, 1) if step in c["fix"])


def _root_evidence(root: dict[str, Any] | None) -> str | None:
    return f"line {root['line']}: {root['text'][:300]}" if root and root.get("signature") else None


def _summary_text(root: dict[str, Any]) -> list[str]:
    """A launcher's summary line: what it is, and where the worker's own error is."""
    summary = root["summary"]
    return [
        f"No known GPU/BLAS error signature matched; line {root['line']} is {summary['title']}, not the error itself.",
        f"   line {root['line']}: {root['text'][:300]}",
        f"   why: {summary['why']}",
        *(f"   find {i}: {step}" for i, step in enumerate(summary["find"], 1)),
    ]


def to_text(doc: dict[str, Any], verbose: bool) -> str:
    out = []
    root = doc["root"]
    if root and root.get("signature"):
        out.append(f"Root error (line {root['line']}): {root['text'][:400]}")
    elif root and root.get("summary"):
        out += _summary_text(root)
    elif root and root.get("error_looking", True):
        out.append(
            f"No known GPU/BLAS error signature matched; last error-looking line ({root['line']}): {root['text'][:400]}"
        )
    elif root:
        out.append(f"No error found in this log; its last line ({root['line']}): {root['text'][:400]}")
    elif doc["benign"]:
        out.append("No error found: every line here that looks like one is a known harmless message.")
    else:
        out.append("No known GPU/BLAS error signature matched.")
    if doc["causes"] and not shows_error(root):
        out += ["", FACTS_ONLY_HEADING]
    shown_root = _root_evidence(root)
    for i, (c, steps) in enumerate(zip(doc["causes"], new_steps(doc["causes"]), strict=True), 1):
        out.append("")
        out.append(f"{i}. {c['title']}  [{c['id']}, confidence {c['confidence']:.2f}]")
        if verbose or i == 1:
            out.append(f"   why: {c['why']}")
        evidence = c["evidence"] if verbose else [e for e in c["evidence"] if e != shown_root][:3]
        for e in evidence:
            out.append(f"   evidence: {e}")
        for j, step in enumerate(steps[: None if verbose else (3 if i == 1 else 1)], 1):
            out.append(f"   fix {j}: {step}")
        if c["fix"] and not steps:
            out.append(f"   fix: the steps under {_first_listing(doc['causes'], c['fix'][0])} above")
        refs = c.get("references") or []
        if refs and (verbose or i == 1):
            out.append(f"   see: {' '.join(refs[: None if verbose else 2])}")
    out += _apart_text(doc.get("apart", []))
    out += _similar_text(doc["similar"])
    out += [f"note: {n}" for n in doc["notes"]]
    out += _benign_text(doc["benign"], full=verbose or not root)
    if (doc["benign"] or root) and not shows_error(root):
        out += ["", RERUN_HINT]
    if verbose:
        out.append("")
        out.append(
            f"scanned {doc['stats']['lines']} lines ({doc['stats']['bytes']} bytes) with {doc['stats']['engine']}; matches: {doc['stats']['matches_by_signature']}"
        )
    return "\n".join(out) + "\n"


FACTS_ONLY_HEADING = "Problems found on this machine (from its facts; the log does not show them failing):"


def shows_error(root: dict[str, Any] | None) -> bool:
    """Whether the log holds an error: a known signature or a line that reads like one."""
    if root is None:
        return False
    return bool(root.get("signature")) or bool(root.get("error_looking", True))


RERUN_HINT = (
    "If your program failed, its error is not in this log. Capture all of its output "
    "(python train.py 2>&1 | tee run.log) and run: cudoctor explain run.log"
)


APART_HEADING = "Also in the facts, but not what this log points to (not ranked):"


def _apart_text(apart: list[dict[str, Any]]) -> list[str]:
    """Findings of the facts whose causes the log does not name: true of that machine, listed apart."""
    if not apart:
        return []
    return ["", APART_HEADING] + [f"- {a['title']}  [{a['id']}]" for a in apart[:8]]


def _similar_text(similar: list[dict[str, Any]]) -> list[str]:
    """The solved reports most like this log: how close, what the cause was, what fixed it, where."""
    if not similar:
        return []
    out = ["", "Similar solved reports:"]
    for s in similar:
        out.append(f"- {s['score']:.2f}  {', '.join(s['causes'])}: {s['resolution'][:300]}")
        out.append(f"    {s['source']}")
    return out


def _benign_text(hits: list[dict[str, Any]], full: bool) -> list[str]:
    """Known harmless lines: one summary line, or each kind with why it is harmless."""
    if not hits:
        return []
    if not full:
        titles = "; ".join(h["title"] for h in hits)
        return ["", f"Ignored known harmless lines ({titles}); -v says why."]
    out = ["", "Known harmless lines:"]
    for h in hits:
        more = f" (+{h['seen'] - 1} more like it)" if h["seen"] > 1 else ""
        out.append(f"- line {h['line']}{more}: {h['title']}")
        out.append(f"    {h['text'][:200]}")
        out.append(f"    harmless: {h['why']}")
        if h["matters"]:
            out.append(f"    matters: {h['matters']}")
    return out


def to_markdown(doc: dict[str, Any]) -> str:
    root = doc["root"]
    lines = ["## cudoctor explain", ""]
    if root and root.get("summary"):
        summary = root["summary"]
        lines += [
            f"**No known error signature matched**: line {root['line']} is {summary['title']}, not the error itself.",
            "",
        ]
        lines += ["```", root["text"], "```", "", summary["why"], "", "To find it:", ""]
        lines += [f"{i}. {step}" for i, step in enumerate(summary["find"], 1)] + [""]
    elif root and shows_error(root):
        lines += [f"**Root error** (line {root['line']}):", "", "```", root["text"], "```", ""]
    else:
        lines += ["No error found in this log.", ""]
    if doc["causes"] and not shows_error(root):
        lines += [f"**{FACTS_ONLY_HEADING}**", ""]
    for i, (c, steps) in enumerate(zip(doc["causes"], new_steps(doc["causes"]), strict=True), 1):
        lines += [f"### {i}. {c['title']} (`{c['id']}`, confidence {c['confidence']:.2f})", "", c["why"], ""]
        lines += ["Evidence:", ""] + [f"- `{e}`" for e in c["evidence"]] + [""]
        if steps:
            lines += ["Fix:", ""] + [f"{j}. {s}" for j, s in enumerate(steps, 1)] + [""]
        elif c["fix"]:
            lines += [f"Fix: the steps under {_first_listing(doc['causes'], c['fix'][0])} above.", ""]
        if c.get("references"):
            lines += ["See: " + ", ".join(f"<{r}>" for r in c["references"]), ""]
    if doc.get("apart"):
        lines += [f"**{APART_HEADING}**", ""] + [f"- {a['title']} (`{a['id']}`)" for a in doc["apart"]] + [""]
    if doc["similar"]:
        lines += ["### Similar solved reports", ""]
        lines += [
            f"- [{s['source']}]({s['source']}) ({s['score']:.2f}, `{', '.join(s['causes'])}`): {s['resolution']}"
            for s in doc["similar"]
        ] + [""]
    if doc["benign"]:
        lines += ["### Known harmless lines", ""]
        lines += [f"- line {h['line']}: {h['title']}. {h['why']}" for h in doc["benign"]] + [""]
    if not shows_error(root) and (doc["benign"] or root):
        lines += [RERUN_HINT, ""]
    if doc.get("facts_used"):
        lines += [f"_{facts_line(doc['facts_used'])}_", ""]
    return "\n".join(lines)


def facts_line(used: dict[str, Any] | None) -> str:
    """One line saying whose facts ranked the causes."""
    if not used:
        return ""
    whose = [
        name
        for name, on in (
            ("this machine's", used["this_machine"]),
            ("stated", used["stated"]),
            ("the saved snapshot's", used["snapshot"]),
            ("the log's own", bool(used["log"])),
        )
        if on
    ]
    python = used.get("python")
    if used["this_machine"] and isinstance(python, dict):  # which environment "this machine's" describes
        whose[0] = f"this machine's ({_python_words(python)})"
    line = "Facts used: " + (", ".join(whose) if whose else "none")
    if used["left_out_because"] and used["left_out_because"] != ["--no-live"]:
        line += "; this machine's left out, the log comes from another: " + "; ".join(
            used["left_out_because"]
        )
    return line


def _python_words(python: Mapping[str, Any]) -> str:
    """'Python 3.9.18 at /home/u/envs/train, the active environment: VIRTUAL_ENV'."""
    from cudoctor.facts.target import CHOSEN_BY, SELF

    how = str(python.get("chosen_by") or "")
    how = CHOSEN_BY[SELF] if python.get("self") and how == SELF else CHOSEN_BY.get(how, how)
    return f"Python {python.get('version')} at {python.get('prefix') or python.get('executable')}, {how}"


def to_brief(doc: dict[str, Any], causes: int = 3, steps: int = 2) -> str:
    """A few lines after a failed run: the root error, the first causes with their first steps."""
    root = doc["root"]
    if not shows_error(root) and not doc["causes"]:
        return ""
    lines = []
    if root and shows_error(root):
        lines.append(f"cudoctor: root error (line {root['line']}): {root['text'][:300]}")
    for i, c in enumerate(doc["causes"][:causes], 1):
        lines.append(f"cudoctor: {i}. {c['title']} [{c['id']}, confidence {c['confidence']:.2f}]")
        lines += [f"     fix: {s}" for s in c["fix"][:steps]]
    if doc["similar"]:
        s = doc["similar"][0]
        lines.append(f"cudoctor: most similar solved report ({s['score']:.2f}): {s['source']}")
    return "\n".join(lines) + "\n"
