"""JSON and Markdown documents for a Report (check, probe, report), and JSON for any document."""

from __future__ import annotations

import json
from typing import Any

from cudoctor import __version__
from cudoctor.model import SCHEMA_VERSION, Finding, Report
from cudoctor.render.areas import areas

MD_STATUS = {"ok": "✅", "warning": "⚠️", "error": "❌", "unknown": "❔"}


def report_json(report: Report) -> dict[str, Any]:
    return {
        "schema": SCHEMA_VERSION,
        "tool": {"name": "cudoctor", "version": __version__},
        "exit_code": report.exit_code,
        "findings": [f.to_json() for f in report.findings],
        "checks": [{"id": r.check_id, "outcome": r.outcome, "detail": r.detail} for r in report.results],
        "snapshot": report.snapshot.to_json(),
        **report.extra,
    }


def dumps(data: Any) -> str:
    """A document that is JSON data, as every --format json prints it."""
    return json.dumps(data, indent=2, sort_keys=False, default=str) + "\n"


def report_json_text(report: Report) -> str:
    return dumps(report_json(report))


def _md_finding(f: Finding) -> list[str]:
    lines = [
        f"#### {f.severity.value.upper()}: {f.title}",
        "",
        f"`{f.id}` · cause `{f.cause}` · confidence {f.confidence}",
        "",
        f.why,
        "",
    ]
    if f.evidence:
        lines += ["Evidence:", ""] + [f"- `{e}`" for e in f.evidence] + [""]
    if f.fix:
        lines += (
            ["Fix (least invasive first):", ""]
            + [f"{i}. `{s}`" if _looks_like_command(s) else f"{i}. {s}" for i, s in enumerate(f.fix, 1)]
            + [""]
        )
    return lines


def _looks_like_command(step: str) -> bool:
    return step.split(" ", 1)[0] in ("pip", "export", "unset", "nvidia-smi", "sudo", "conda", "python")


def report_markdown(report: Report) -> str:
    from cudoctor.render.text import target_line

    checking = target_line(report.snapshot.value("host.target"))
    lines = ["## cudoctor report", "", *([checking, ""] if checking else []), "| area | status | summary |"]
    lines.append("|---|---|---|")
    for area in areas(report):
        lines.append(f"| {area.title} | {MD_STATUS[area.status]} | {area.summary.replace('|', '/')} |")
    lines.append("")
    found = report.findings
    if found:
        lines += ["### Findings", ""]
        for f in found:
            lines += _md_finding(f)
    else:
        lines += ["No issues found.", ""]
    facts = json.dumps(report.snapshot.to_json(), indent=1, default=str)
    lines += [
        "<details><summary>All facts (cudoctor snapshot)</summary>",
        "",
        "```json",
        facts,
        "```",
        "",
        "</details>",
        "",
    ]
    out = "\n".join(lines)
    if "log" in report.extra:  # cudoctor report --log: the log, explained with the report's facts
        from cudoctor.render.explanation import to_markdown

        log = report.extra["log"]
        out += f"\n### The log ({log['file']})\n\n" + to_markdown(log)
    return out
