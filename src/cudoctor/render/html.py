"""A self-contained HTML report: no network, inline CSS and SVG charts (formatting only)."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

from cudoctor import __version__
from cudoctor.model import Finding, Report
from cudoctor.render.areas import areas

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:960px;color:#1d232a;padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #dde}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #eef;padding:.35rem .5rem;text-align:left;vertical-align:top}
.ok{color:#137333}.warning{color:#b06000}.error{color:#c5221f}.unknown{color:#777}
.finding{border-left:4px solid #c5221f;padding:.4rem .8rem;margin:.8rem 0;background:#fdf6f6}
.finding.warning{border-color:#b06000;background:#fffaf0}.finding.info{border-color:#777;background:#f7f7f7}
code{background:#f3f3f6;padding:0 .25rem;border-radius:3px}ol{margin:.3rem 0}
details{margin-top:1rem}pre{white-space:pre-wrap;font-size:12px;background:#f6f8fa;padding:.8rem}
svg text{font-size:11px;font-family:system-ui,sans-serif}
"""
GLYPH = {"ok": "✓", "warning": "!", "error": "✗", "unknown": "?"}


def _e(text: Any) -> str:
    return html.escape(str(text))


def _finding(f: Finding) -> str:
    ev = "".join(f"<li><code>{_e(e)}</code></li>" for e in f.evidence)
    fix = "".join(f"<li><code>{_e(s)}</code></li>" for s in f.fix)
    return (
        f'<div class="finding {f.severity.value}" id="{_e(f.id)}"><b class="{f.severity.value}">{_e(f.severity.value.upper())}</b> '
        f"{_e(f.title)} <small>[{_e(f.id)} · {_e(f.cause)}]</small><p>{_e(f.why)}</p>"
        + (f"<div>Evidence:<ul>{ev}</ul></div>" if ev else "")
        + (f"<div>Fix, least invasive first:<ol>{fix}</ol></div>" if fix else "")
        + "</div>"
    )


def _bars(title: str, rows: Sequence[tuple[str, float, float | None, str]], unit: str) -> str:
    """Horizontal bars: (label, value, reference or None, note); the reference is drawn as a tick."""
    if not rows:
        return ""
    top = max(max(v, r or 0) for _, v, r, _ in rows) or 1.0
    h, width, left = 22, 600, 240
    parts = [
        f'<svg role="img" aria-label="{_e(title)}" width="{left + width + 120}" height="{h * len(rows) + 30}">'
    ]
    parts.append(f'<text x="0" y="14" font-weight="bold">{_e(title)}</text>')
    for i, (label, value, ref, note) in enumerate(rows):
        y = 24 + i * h
        w = max(1.0, width * value / top)
        parts.append(f'<text x="0" y="{y + 14}">{_e(label)}</text>')
        parts.append(
            f'<rect x="{left}" y="{y + 3}" width="{w:.1f}" height="{h - 8}" fill="#4a78c2"><title>{_e(note)}</title></rect>'
        )
        if ref:
            x = left + width * ref / top
            parts.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y}" y2="{y + h - 2}" stroke="#c5221f" stroke-width="2"/>'
            )
        parts.append(
            f'<text x="{left + w + 6:.1f}" y="{y + 14}">{value:.3g} {unit}{_e(" " + note if note else "")}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def probe_chart(results: list[dict[str, Any]]) -> str:
    rows = []
    for r in results:
        for rec in r.get("results") or []:
            if rec.get("tflops") is None:
                continue
            note = f"({rec['pct_of_peak']:.0f}% of peak)" if rec.get("pct_of_peak") is not None else ""
            rows.append(
                (
                    f"{r['framework']} {rec['dtype']} {rec['device']}"[:32],
                    rec["tflops"],
                    rec.get("peak_tflops"),
                    note,
                )
            )
    return _bars("GEMM throughput per dtype (red tick: datasheet peak)", rows, "TFLOP/s")


def memory_chart(gpus: list[dict[str, Any]]) -> str:
    rows = [
        (
            f"GPU {g.get('index')} {g.get('name', '')}"[:32],
            float(g["memory_used_mib"]) / 1024,
            float(g["memory_total_mib"]) / 1024,
            "",
        )
        for g in gpus
        if g.get("memory_total_mib") and g.get("memory_used_mib") is not None
    ]
    return _bars("GPU memory in use (red tick: total)", rows, "GiB")


def report_html(report: Report, redacted_snapshot: dict[str, Any]) -> str:
    snap = report.snapshot
    found = report.findings
    rows = "".join(
        f'<tr><td class="{a.status}">{GLYPH[a.status]} {_e(a.title)}</td><td>{_e(a.summary if a.inspected else "not inspected")}</td>'
        f"<td>{len(a.findings)}</td></tr>"
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
    facts = _e(json.dumps(redacted_snapshot, indent=1, default=str))
    body.append(f"<details><summary>All facts (cudoctor snapshot)</summary><pre>{facts}</pre></details>")
    return f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>cudoctor report</title><style>{CSS}</style></head><body>{"".join(body)}</body></html>\n'
