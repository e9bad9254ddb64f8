"""A self-contained HTML report: no network, inline CSS and SVG charts (formatting only).

A finding's box shows its own text first (only its title line takes the severity colour), then the
cause's general explanation in neutral grey under "About the cause ... in general", then the cause's
references as links. Charts write each value as the text output does, measure their labels instead of
cutting them, and name the red tick only when one is drawn.
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
from collections.abc import Sequence
from typing import Any

from cudoctor import __version__
from cudoctor.model import Finding, Report
from cudoctor.render.areas import Area, areas
from cudoctor.render.probes import throughput_text  # the probe table's own wording

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:960px;color:#1d232a;padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #dde}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #eef;padding:.35rem .5rem;text-align:left;vertical-align:top}
.ok{color:#137333}.warning{color:#b06000}.error{color:#c5221f}.unknown{color:#777}
.finding{border-left:4px solid #777;padding:.4rem .8rem;margin:.8rem 0;background:#f7f7f7}
.finding.sev-error{border-color:#c5221f;background:#fdf6f6}.finding.sev-warning{border-color:#b06000;background:#fffaf0}
.finding .own{margin:.2rem 0}.sev-error .own{color:#c5221f}.sev-warning .own{color:#b06000}
.own small,.finding .about{color:#555}.finding a{color:#1a56a8}
code{background:#f3f3f6;padding:0 .25rem;border-radius:3px}ol{margin:.3rem 0}
details{margin-top:1rem}pre{white-space:pre-wrap;font-size:12px;background:#f6f8fa;padding:.8rem}
svg{display:block;margin:.6rem 0}svg text{font-size:11px;font-family:system-ui,sans-serif}
"""
GLYPH = {"ok": "✓", "warning": "!", "error": "✗", "unknown": "?"}

# Chart geometry in px. The charts fit the page's 928 px column (960 less the padding).
FONT_PX = 11
LINE_PX = 14  # one line of chart text
ROW_PX = 22  # one bar's row, more when its label wraps
GAP_PX = 12  # between the label column and the bars
LABEL_MAX_PX = 300  # a wider label wraps at its spaces
CHART_PX = 900
MIN_SPAN_PX = 240  # the bars' scale never shrinks below this
TICK = "#c5221f"

# DejaVu Sans advance widths of ' ' .. '~' in hundredths of an em, rounded up (read from its hmtx table).
# It is what system-ui resolves to on most Linux desktops and wider than Segoe UI or SF, so the sums
# below are upper bounds there too; any other character counts as a full em.
_WIDTHS = (
    "32 41 46 84 64 96 78 28 40 40 50 84 32 37 32 34 64 64 64 64 64 64 64 64 64 64 34 34 84 84 84 54 100 "
    "69 69 70 78 64 58 78 76 30 30 66 56 87 75 79 61 79 70 64 62 74 69 99 69 62 69 40 34 40 84 50 50 "
    "62 64 55 64 62 36 64 64 28 28 58 28 98 64 62 64 64 42 53 40 64 60 82 60 60 53 64 34 64 84"
)
_EM = {chr(32 + i): int(w) / 100 for i, w in enumerate(_WIDTHS.split())}


def _e(text: Any) -> str:
    return html.escape(str(text))


def text_px(text: str, bold: bool = False) -> float:
    """An upper bound of the width of `text` in the charts' 11 px font (bold is 11% wider), 4% slack."""
    em = sum(_EM.get(c, 1.0) for c in text)
    return em * FONT_PX * (1.11 if bold else 1.0) * 1.04


def _links(urls: Sequence[str]) -> str:
    items = [
        f'<a href="{_e(u)}" rel="noreferrer">{_e(u)}</a>' if u.startswith(("https://", "http://")) else _e(u)
        for u in urls
    ]
    return f'<p class="refs">References: {" · ".join(items)}</p>' if items else ""


def _finding(f: Finding) -> str:
    """The finding's own text (title, evidence, fix steps), then its cause's general text and references."""
    sev = f.severity.value
    ev = "".join(f"<li><code>{_e(e)}</code></li>" for e in f.evidence)
    fix = "".join(f"<li><code>{_e(s)}</code></li>" for s in f.fix)
    about = (
        f'<p class="about">About the cause <code>{_e(f.cause)}</code> in general: {_e(f.why)}</p>'
        if f.why
        else ""
    )
    return (
        f'<div class="finding sev-{sev}" id="{_e(f.id)}">'
        f'<p class="own"><b>{_e(sev.upper())}</b> {_e(f.title)} <small>[{_e(f.id)}]</small></p>'
        + (f"<div>Evidence:<ul>{ev}</ul></div>" if ev else "")
        + (f"<div>Fix, least invasive first:<ol>{fix}</ol></div>" if fix else "")
        + about
        + _links(f.references)
        + "</div>"
    )


@dataclasses.dataclass(frozen=True)
class Bar:
    label: str
    value: float
    text: str  # the value as the text output writes it, unit included
    ref: float | None = None  # drawn as a red tick


def _wrap(label: str, limit: float) -> list[str]:
    """`label` in lines no wider than `limit`, broken at spaces only (a longer word keeps its own line)."""
    lines: list[str] = []
    for word in label.split(" "):
        if lines and text_px(f"{lines[-1]} {word}") <= limit:
            lines[-1] += f" {word}"
        else:
            lines.append(word)
    return lines


def _label(x: float, y: float, label: str, lines: list[str]) -> str:
    spans = "".join(
        f'<tspan x="{x:.0f}" dy="{0 if i == 0 else LINE_PX}">{_e(line)}</tspan>'
        for i, line in enumerate(lines)
    )
    return f'<text class="label" x="{x:.0f}" y="{y:.0f}"><title>{_e(label)}</title>{spans}</text>'


def _bars(title: str, bars: Sequence[Bar], tick: str) -> str:
    """Horizontal bars, one row each; a bar's reference is a red tick, named in the heading when drawn."""
    if not bars:
        return ""
    heading = f"{title} (red tick: {tick})" if any(b.ref for b in bars) else title
    words = max(text_px(w) for b in bars for w in b.label.split(" "))
    column = min(max(text_px(b.label) for b in bars), max(LABEL_MAX_PX, words))
    wrapped = [_wrap(b.label, column) for b in bars]
    left = math.ceil(column) + GAP_PX
    value_w = math.ceil(max(text_px(b.text) for b in bars))
    span = max(MIN_SPAN_PX, CHART_PX - left - 6 - value_w)
    width = max(left + span + 6 + value_w, math.ceil(text_px(heading, bold=True)))
    top = max(max(b.value, b.ref or 0) for b in bars) or 1.0
    rows, y = [], 24
    for bar, lines in zip(bars, wrapped, strict=True):
        w = max(1.0, span * bar.value / top)
        end = w
        rows.append(_label(0, y + LINE_PX, bar.label, lines))
        rows.append(
            f'<rect x="{left}" y="{y + 3}" width="{w:.1f}" height="{LINE_PX}" fill="#4a78c2">'
            f"<title>{_e(bar.label)}: {_e(bar.text)}</title></rect>"
        )
        if bar.ref:
            x = span * bar.ref / top
            end = max(end, x + 1)
            rows.append(
                f'<line class="tick" x1="{left + x:.1f}" x2="{left + x:.1f}" y1="{y}" y2="{y + LINE_PX + 6}" '
                f'stroke="{TICK}" stroke-width="2"/>'
            )
        rows.append(f'<text class="value" x="{left + end + 6:.1f}" y="{y + LINE_PX}">{_e(bar.text)}</text>')
        y += max(ROW_PX, LINE_PX * len(lines) + 8)
    return (
        f'<svg role="img" aria-label="{_e(heading)}" width="{width}" height="{y + 6}">'
        f'<text x="0" y="14" font-weight="bold">{_e(heading)}</text>{"".join(rows)}</svg>'
    )


def probe_chart(results: list[dict[str, Any]]) -> str:
    bars = [
        Bar(
            f"{r['framework']} {rec['dtype']} {rec['device']}",
            rec["tflops"],
            throughput_text(rec),
            rec.get("peak_tflops"),
        )
        for r in results
        for rec in r.get("results") or []
        if rec.get("tflops") is not None
    ]
    return _bars("GEMM throughput per dtype", bars, "datasheet peak")


def memory_chart(gpus: list[dict[str, Any]]) -> str:
    bars = []
    for g in gpus:
        if g.get("memory_total_mib") and g.get("memory_used_mib") is not None:
            used, total = float(g["memory_used_mib"]) / 1024, float(g["memory_total_mib"]) / 1024
            label = f"GPU {g.get('index')} {g.get('name', '')}".strip()
            bars.append(Bar(label, used, f"{used:.3g} of {total:.3g} GiB", total))
    return _bars("GPU memory in use", bars, "total")


def _related_count(area: Area) -> str:
    """Findings about a framework listed under another layer, which count in its line's status."""
    if not area.related:
        return ""
    where = ", ".join(dict.fromkeys(w for w, _ in area.related))
    return f" (+{len(area.related)} under {_e(where)})"


def page(report: Report) -> str:
    """`cudoctor report --format html` (the command has redacted the report unless told not to)."""
    snap = report.snapshot
    found = report.findings
    rows = "".join(
        f'<tr><td class="{a.status}">{GLYPH[a.status]} {_e(a.title)}</td><td>{_e(a.summary if a.inspected else "not inspected")}</td>'
        f"<td>{len(a.findings)}{_related_count(a)}</td></tr>"
        for a in areas(report)
    )
    charts = probe_chart(snap.value("probe.results") or []) + memory_chart(snap.value("gpu.devices") or [])
    body = [
        f"<h1>cudoctor report</h1><p>{_e(snap.created or snap.origin)} · cudoctor {__version__} · "
        f"{sum(f.severity.value == 'error' for f in found)} error(s), {sum(f.severity.value == 'warning' for f in found)} warning(s)</p>",
        f"<h2>Layers</h2><table><tr><th>area</th><th>summary</th><th>findings</th></tr>{rows}</table>",
        "<h2>Findings</h2>" + ("".join(_finding(f) for f in found) or "<p>No issues found.</p>"),
    ]
    if charts:
        body.append(f"<h2>Charts</h2>{charts}")
    facts = _e(json.dumps(snap.to_json(), indent=1, default=str))
    body.append(f"<details><summary>All facts (cudoctor snapshot)</summary><pre>{facts}</pre></details>")
    return f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>cudoctor report</title><style>{CSS}</style></head><body>{"".join(body)}</body></html>\n'
