"""Terminal rendering in the shape people know from `flutter doctor`."""

from __future__ import annotations

import os
import sys
from typing import TextIO

from cudoctor.model import Finding, Report, Severity
from cudoctor.render.areas import Area, areas
from cudoctor.render.probes import table as probe_table

GLYPHS = {"ok": ("✓", "OK"), "warning": ("!", "!"), "error": ("✗", "X"), "unknown": ("?", "?")}
COLOURS = {"ok": "32", "warning": "33", "error": "31", "unknown": "2"}
SEV_GLYPH = {Severity.ERROR: "✗", Severity.WARNING: "!", Severity.INFO: "•"}


class Style:
    def __init__(self, stream: TextIO, colour: bool | None = None) -> None:
        encoding = (getattr(stream, "encoding", None) or "ascii").lower()
        self.unicode = "utf" in encoding
        tty = hasattr(stream, "isatty") and stream.isatty()
        self.colour = tty and not os.environ.get("NO_COLOR") if colour is None else colour

    def paint(self, text: str, status: str) -> str:
        return f"\x1b[{COLOURS[status]}m{text}\x1b[0m" if self.colour else text

    def glyph(self, status: str) -> str:
        return GLYPHS[status][0] if self.unicode else GLYPHS[status][1]

    def sev(self, sev: Severity) -> str:
        g = SEV_GLYPH[sev]
        return g if self.unicode else {"✗": "x", "!": "!", "•": "*"}[g]


def _finding_lines(f: Finding, style: Style, verbose: bool) -> list[str]:
    lines = [f"    {style.sev(f.severity)} {f.title}  [{f.id}]"]
    if verbose:
        lines.append(f"      why: {f.why}")
        lines += [f"      evidence: {e}" for e in f.evidence]
    for i, step in enumerate(f.fix[: None if verbose else 2], 1):
        lines.append(f"      fix {i}: {step}")
    return lines


def _related_lines(area: Area, style: Style) -> list[str]:
    """One line a severity pointing to where the findings about this framework that count in its status are."""
    lines = []
    for sev in (Severity.ERROR, Severity.WARNING):
        ids = [(where, f.id) for where, f in area.related if f.severity is sev]
        if ids:
            where = ", ".join(dict.fromkeys(w for w, _ in ids))
            names = ", ".join(dict.fromkeys(i for _, i in ids))
            lines.append(f"    {style.sev(sev)} see under {where}: {names}")
    return lines


def target_line(value: object) -> str:
    """'checking /home/u/envs/train (Python 3.9.18, the active environment: VIRTUAL_ENV)' when the
    facts describe another Python environment than cudoctor's own (`host.target`); else ''."""
    if not isinstance(value, dict) or value.get("self", True):
        return ""
    from cudoctor.facts.target import CHOSEN_BY  # only when another environment was checked

    how = str(value.get("chosen_by") or "")
    where = value.get("prefix") or value.get("executable")
    return f"checking {where} (Python {value.get('version')}, {CHOSEN_BY.get(how, how)})"


def render(
    report: Report, verbose: bool = False, stream: TextIO | None = None, only_areas: tuple[str, ...] = ()
) -> str:
    style = Style(stream or sys.stdout)
    checking = target_line(report.snapshot.value("host.target"))
    out = [checking] if checking else []
    out.append(
        "cudoctor summary:" if verbose else "cudoctor summary (to see all details, run cudoctor check -v):"
    )
    for area in areas(report):
        if only_areas and area.title not in only_areas:
            continue
        status = area.status
        summary = area.summary if area.inspected else "not inspected"
        head = f"[{style.glyph(status)}] {area.title}" + (f" ({summary})" if summary else "")
        out.append(style.paint(head, status) if status != "ok" else head)
        for f in area.findings:
            out += _finding_lines(f, style, verbose)
        out += _related_lines(area, style)
        if area.title == "Probes":
            out += ["    " + line for line in probe_table(report.snapshot.value("probe.results") or [])]
        if verbose:
            for key in area.fact_keys:
                fact = report.snapshot.get(key)
                if fact is not None:
                    out += fact_lines(key, fact.value if fact.known else None, fact.source, fact)
    out.append("")
    out += _footer(report, verbose)
    return "\n".join(out) + "\n"


def check_report(report: Report, verbose: bool = False) -> str:
    """What `cudoctor check` prints: the areas, then whether the run was partial, then what changed
    since the snapshot --since named."""
    out = render(report, verbose=verbose)
    if "partial" in report.extra:
        out += f"(a partial run: {report.extra['partial']}; not recorded as last known good)\n"
    if "since" in report.extra:
        from cudoctor.render.diff import text as diff_text

        since = report.extra["since"]
        out += "\n" + diff_text({**since, "a": since["ref"], "b": "now"})
    return out


def probe_report(report: Report) -> str:
    """What `cudoctor probe` prints: the Probes area alone."""
    return render(report, only_areas=("Probes",))


def _scalar(value: object) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={_scalar(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(_scalar(v) for v in value)
    return str(value)


def fact_lines(key: str, value: object, source: str, fact: object = None) -> list[str]:
    """One fact under -v, whole and readable: a value on its line, a mapping one field a line, a list one
    item a line (issue 40, point 5: no JSON cut at 400 characters)."""
    if fact is not None and not getattr(fact, "known", True):
        return [f"    • {key}: ({fact.status.value}) {fact.detail}  <- {source}"]  # type: ignore[attr-defined]
    if isinstance(value, dict) and value:
        return [f"    • {key}  <- {source}"] + [f"        {k}: {_scalar(v)}" for k, v in value.items()]
    if (
        isinstance(value, (list, tuple))
        and value
        and not all(isinstance(v, (str, int, float)) for v in value)
    ):
        return [f"    • {key}  <- {source}"] + [f"        - {_scalar(v)}" for v in value]
    return [f"    • {key} = {_scalar(value)}  <- {source}"]


def _footer(report: Report, verbose: bool) -> list[str]:
    found = report.findings
    errors = sum(f.severity is Severity.ERROR for f in found)
    warnings = sum(f.severity is Severity.WARNING for f in found)
    lines = []
    unknown = [r for r in report.results if r.outcome in ("unknown", "crashed")]
    if verbose and report.snapshot.timings_ms:
        times = ", ".join(f"{k} {v:.0f} ms" for k, v in report.snapshot.timings_ms.items())
        lines.append(f"  collected: {times}")
    if verbose and unknown:
        lines += [
            f"  ? {r.check_id}: {r.outcome}: {r.detail.splitlines()[0] if r.detail else ''}" for r in unknown
        ]
    skipped = [r for r in report.results if r.outcome == "skipped"]
    if verbose and skipped:  # a check that stays silent because it does not apply says why
        lines += [
            f"  - {r.check_id}: {r.detail.splitlines()[0] if r.detail else 'not applicable'}" for r in skipped
        ]
    crashed = [r for r in report.results if r.outcome == "crashed"]
    if crashed:
        lines.append(
            f"! {len(crashed)} check(s) crashed: {', '.join(r.check_id for r in crashed)} (cudoctor bug; run with -v)"
        )
    if not found:
        lines.append("• No issues found!")
    else:
        lines.append(
            f"{'!' if not errors else 'x'} cudoctor found {errors} error(s) and {warnings} warning(s)."
        )
    return lines
