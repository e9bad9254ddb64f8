"""`cudoctor causes` in text, JSON and Markdown, from the data causes_command gathers (formatting only)."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from typing import Any

WIDTH = 100


def as_json(data: Any) -> str:
    return json.dumps(data, indent=2) + "\n"


def listing_text(rows: list[dict[str, Any]]) -> str:
    width = max(len(r["id"]) for r in rows) + 2
    lines = [f"{r['id']:{width}s}{r['title']}" for r in rows]
    lines += ["", f"{len(rows)} causes. cudoctor causes ID: what one means, how it is found, what fixes it."]
    return "\n".join(lines) + "\n"


def _wrap(text: str, indent: str, first: str | None = None) -> list[str]:
    return textwrap.wrap(
        text, WIDTH, initial_indent=indent if first is None else first, subsequent_indent=indent
    ) or [indent.rstrip()]


def page_text(page: dict[str, Any]) -> str:
    out: list[str] = []
    if page["note"]:
        out += [f"({page['note']})", ""]
    out += [f"{page['id']}: {page['title']}", "", *_wrap(page["why"], ""), ""]
    checks, sigs, reports = page["checks"], page["signatures"], page["reports"]
    out.append("How cudoctor finds it")
    if checks:
        out.append(f"  cudoctor check: {len(checks)} check(s) report it")
        for c in checks:
            out += _wrap(c["doc"], " " * 6, f"    {c['id']}: ")
            if c["finding_ids"]:
                out.append(f"      also reported as: {', '.join(c['finding_ids'])}")
    else:
        out.append("  cudoctor check: no check reports it (it shows in logs only)")
    if sigs["count"]:
        out.append(
            f"  cudoctor explain: {sigs['count']} log signature(s) name it, "
            f"{sigs['primary']} as their main cause; typical messages:"
        )
        out += [line for m in sigs["messages"] for line in _wrap(m, " " * 6, "    - ")]
    else:
        out.append("  cudoctor explain: no log signature names it (checks and readers find it)")
    out += ["", "Fixes (least invasive first)"]
    out += [line for i, step in enumerate(page["fix"], 1) for line in _wrap(step, " " * 5, f"  {i}. ")]
    if sigs["fix"]:
        out.append("  steps log signatures give for it:")
        out += [line for step in sigs["fix"] for line in _wrap(step, " " * 6, "    - ")]
    out += ["", "References", *(f"  {url}" for url in page["references"])]
    if reports["count"]:
        out += [
            "",
            f"Solved reports ({len(reports['shown'])} of {reports['count']} in the shipped corpus, "
            f"{reports['confirmed']} confirmed as this cause)",
        ]
        for r in reports["shown"]:
            out.append(f"  {r['source']}")
            out += _wrap(r["resolution"], " " * 4)
    return "\n".join(out) + "\n"


def _md(text: str) -> str:
    """Prose for Markdown: `<name>` placeholders and stars shown as written."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace("*", "\\*")


def _code(text: str) -> str:
    fence = "``" if "`" in text else "`"
    return f"{fence} {text} {fence}" if fence == "``" else f"`{text}`"


def page_markdown(page: dict[str, Any], level: int = 1) -> str:
    h = "#" * level
    checks, sigs, reports = page["checks"], page["signatures"], page["reports"]
    out = [f"{h} {page['id']}", "", f"**{_md(page['title'])}**", "", _md(page["why"]), ""]
    out += [f"{h}# How cudoctor finds it", ""]
    if checks:
        out.append(f"`cudoctor check`: {len(checks)} check(s) report it.")
        out.append("")
        for c in checks:
            also = (
                f" Also reported as {', '.join(_code(f) for f in c['finding_ids'])}."
                if c["finding_ids"]
                else ""
            )
            out.append(f"- `{c['id']}` ({c['layer']}): {_md(c['doc'])}{also}")
    else:
        out.append("`cudoctor check`: no check reports it (it shows in logs only).")
    out.append("")
    if sigs["count"]:
        out += [
            f"`cudoctor explain`: {sigs['count']} log signature(s) name it, {sigs['primary']} as their main "
            "cause. Typical messages:",
            "",
            *(f"- {_code(m)}" for m in sigs["messages"]),
        ]
    else:
        out.append("`cudoctor explain`: no log signature names it (checks and readers find it).")
    out += ["", f"{h}# Fixes", "", *(f"{i}. {_md(step)}" for i, step in enumerate(page["fix"], 1))]
    if sigs["fix"]:
        out += ["", "Steps log signatures give for it:", "", *(f"- {_md(s)}" for s in sigs["fix"])]
    out += ["", f"{h}# References", "", *(f"- <{url}>" for url in page["references"])]
    if reports["count"]:
        out += [
            "",
            f"{h}# Solved reports",
            "",
            f"{len(reports['shown'])} of {reports['count']} in the shipped corpus "
            f"({reports['confirmed']} confirmed as this cause):",
            "",
            *(f"- <{r['source']}>: {_md(r['resolution'])}" for r in reports["shown"]),
        ]
    return "\n".join(out) + "\n"


def document(rows: list[dict[str, Any]], pages: list[dict[str, Any]]) -> str:
    """docs/causes.md: a table of every cause, then each cause's page."""
    out = [
        "# Causes",
        "",
        "<!-- Generated by `python tools/gen_causes_doc.py` (or `cudoctor causes --format markdown`) from",
        "     knowledge/causes.toml, the checks, the log signatures and the shipped corpus. Do not edit. -->",
        "",
        "Every finding of `cudoctor check` and every ranked cause of `cudoctor explain` carries one of these",
        "cause ids. `cudoctor causes ID` prints a page below; `cudoctor causes` lists them.",
        "",
        "| cause | what it is |",
        "| --- | --- |",
        *(f"| [{r['id']}](#{r['id']}) | {_md(r['title']).replace('|', '&#124;')} |" for r in rows),
    ]
    return "\n".join(out) + "\n" + "".join("\n" + page_markdown(p, level=2) for p in pages)


def reference(rows: list[dict[str, Any]], describe: Callable[[str], dict[str, Any]]) -> str:
    """`cudoctor causes --format markdown`: the whole reference (docs/causes.md), each page from `describe`."""
    return document(rows, [describe(r["id"]) for r in rows])
