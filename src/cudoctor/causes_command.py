"""`cudoctor causes [ID]`: what each cause of the taxonomy means and how cudoctor finds it (like `ruff rule`).

The data comes from one place for every output (text, JSON, Markdown, docs/causes.md): the cause's text in
causes.toml, the checks whose findings carry it, the log signatures that name it, and the solved reports of
the shipped corpus confirmed for it. Gathering is here; render/causes.py only formats.
"""

from __future__ import annotations

import argparse
import collections
import difflib
import sys
from typing import Any

from cudoctor import knowledge, render
from cudoctor.inputs import InputError

MESSAGES = 5  # typical log messages shown per cause
SIGNATURE_FIXES = 5  # steps taken from signatures' fix per cause
REPORTS = 3  # solved reports shown per cause
DOC = "docs/causes.md"


def listing() -> list[dict[str, Any]]:
    """Every cause: id, title, why (the order of causes.toml)."""
    return [{"id": cid, "title": row["title"], "why": row["why"]} for cid, row in knowledge.causes().items()]


def resolve(some_id: str) -> tuple[str, str]:
    """The cause an id stands for, and a note saying how it was read ('' for a cause id). A check id, a
    finding id or a signature id maps to its cause; anything else is an InputError naming the nearest ids."""
    from cudoctor.checks import FINDING_IDS, all_checks, check_of
    from cudoctor.explainer import signatures

    if some_id in knowledge.causes():
        return some_id, ""
    checks = {c.id: c for c in all_checks()}
    check_id = check_of(some_id)
    if check_id is not None:
        cause = checks[check_id].cause
        if check_id == some_id:
            return cause, f"{some_id} is a check; its findings carry the cause {cause}"
        return cause, f"{some_id} is a finding of the check {check_id}, whose cause is {cause}"
    sig = next((s for s in signatures.load() if s.id == some_id), None)
    if sig is not None:
        return sig.primary, f"{some_id} is a log signature; its main cause is {sig.primary}"
    known = [*knowledge.causes(), *checks, *(f for f in FINDING_IDS if f.replace("-", "").isalnum())]
    near = difflib.get_close_matches(some_id, known, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    raise InputError(
        f"unknown cause, check or finding id {some_id[:80]!r}{hint} (cudoctor causes lists every cause)"
    )


def describe(some_id: str) -> dict[str, Any]:
    """Everything known about the cause `some_id` stands for (a cause, check, finding or signature id)."""
    cause, note = resolve(some_id)
    row = knowledge.cause(cause)
    generic = list(row["fix"])
    return {
        "id": cause,
        "asked": some_id,
        "note": note,
        "title": row["title"],
        "why": row["why"],
        "checks": _checks(cause),
        "signatures": _signatures(cause, generic),
        "fix": generic,
        "references": list(row["references"]),
        "reports": _reports(cause),
    }


def _checks(cause: str) -> list[dict[str, Any]]:
    from cudoctor.checks import FINDING_IDS, LAYER_ORDER, all_checks

    return [
        {
            "id": c.id,
            "layer": c.layer,
            "doc": " ".join(c.doc.split("\n\n")[0].split()),
            "finding_ids": [pattern for pattern, chk in FINDING_IDS.items() if chk == c.id],
        }
        # by layer, then id: the registry's order within a layer is the order modules were imported in
        for c in sorted(
            all_checks(), key=lambda c: (LAYER_ORDER.index(c.layer) if c.layer in LAYER_ORDER else 99, c.id)
        )
        if c.cause == cause
    ]


def _signatures(cause: str, generic: list[str]) -> dict[str, Any]:
    """The signatures that name the cause; their typical messages (the shortest first examples of those whose
    main cause it is) and the steps they give most often. Independent of the order signatures are stored in."""
    from cudoctor.explainer import signatures

    naming = sorted((s for s in signatures.load() if cause in s.causes), key=lambda s: s.id)
    primary = [s for s in naming if s.primary == cause]
    examples = sorted({" ".join(s.examples[0].split()) for s in primary or naming if s.examples})
    steps: collections.Counter[str] = collections.Counter()
    for s in naming:
        own = s.fixes_for({}, cause)  # fix_for[cause] first, then the steps for this error whatever the cause
        steps.update(own if s.primary == cause else own[: len(s.fix_for.get(cause, ()))])
    fixes = sorted((step for step in steps if step not in generic), key=lambda t: (-steps[t], len(t), t))
    return {
        "count": len(naming),
        "primary": len(primary),
        "ids": [s.id for s in naming],
        "messages": sorted(examples, key=lambda t: (len(t), t))[:MESSAGES],
        "fix": fixes[:SIGNATURE_FIXES],
    }


def _reports(cause: str) -> dict[str, Any]:
    """Solved reports of the shipped corpus with this cause: those where it is the confirmed one first."""
    from cudoctor.explainer import corpus

    rows = [r for r in corpus.load() if cause in r.causes]
    rows.sort(key=lambda r: r.causes[0] != cause)  # stable: corpus order within each group
    return {
        "count": len(rows),
        "confirmed": sum(1 for r in rows if r.causes[0] == cause),
        "shown": [
            {
                "source": r.source,
                "framework": r.framework,
                "causes": list(r.causes),
                "resolution": r.resolution,
            }
            for r in rows[:REPORTS]
        ],
    }


def docs_markdown() -> str:
    """docs/causes.md: every cause's page (python tools/gen_causes_doc.py writes it; a test keeps it fresh)."""
    return render.emit("causes", "markdown", listing(), describe=describe)


CHECK_DOC = "docs/check.md"
CHECKS_BEGIN = "<!-- every check, by layer: generated by python tools/gen_causes_doc.py -->"
CHECKS_END = "<!-- end of the generated list -->"


def checks_markdown() -> str:
    """The list of every check in docs/check.md, by layer: its id, its cause, what it finds (the first
    paragraph of its docstring), and the finding ids it reports under."""
    from cudoctor.checks import ANY_CAUSE, LAYER_ORDER, all_checks

    by_layer: dict[str, list[dict[str, Any]]] = {}
    for cause in [*knowledge.causes(), ANY_CAUSE]:  # 'any': the cause of what it read (a quoted error)
        for c in _checks(cause):
            by_layer.setdefault(c["layer"], []).append({**c, "cause": cause})
    out = [CHECKS_BEGIN, ""]
    for layer in sorted(by_layer, key=lambda name: LAYER_ORDER.index(name) if name in LAYER_ORDER else 99):
        out += [f"### {layer}", "", "| check | cause | what it finds |", "| --- | --- | --- |"]
        for c in sorted(by_layer[layer], key=lambda c: c["id"]):
            also = f" (findings: {', '.join(c['finding_ids'])})" if c["finding_ids"] else ""
            what = (c["doc"] + also).replace("|", "\\|")  # a finding id may be a pattern: (nvcc|ptxas)-...
            out.append(f"| `{c['id']}` | {c['cause']} | {what} |")
        out.append("")
    listed = sum(len(v) for v in by_layer.values())
    assert listed == len(all_checks()), "every check has a cause of causes.toml (or reads it: 'any')"
    return "\n".join([*out, CHECKS_END])


def with_checks(page: str) -> str:
    """docs/check.md with its generated list replaced by today's."""
    head, _, rest = page.partition(CHECKS_BEGIN)
    _, _, tail = rest.partition(CHECKS_END)
    return head + checks_markdown() + tail


def run_causes(args: argparse.Namespace) -> int:
    if args.id is not None:
        out = render.emit("cause", args.format, describe(args.id))
    else:  # the list in Markdown is the whole reference: docs/causes.md
        out = render.emit("causes", args.format, listing(), describe=describe)
    sys.stdout.write(out)
    return 0
