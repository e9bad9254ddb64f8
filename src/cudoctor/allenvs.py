"""`cudoctor check --all-envs`: every conda env and every venv under the current directory, each
checked as `check --python` checks one, then one table of environments x layers with the odd ones
named (the analysis `fleet aggregate` makes of nodes, made of environments)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from cudoctor.inputs import InputError

if TYPE_CHECKING:
    from cudoctor.model import Report


def check_all(args: argparse.Namespace) -> int:
    from cudoctor import render
    from cudoctor.facts import collect_live, tool_timeout
    from cudoctor.facts.target import TargetError, ask, discover, resolve_path
    from cudoctor.fixes import checked
    from cudoctor.fleet import analysis
    from cudoctor.model import Report, absent

    if args.python or args.from_file or args.no_live or args.facts or args.snapshot or args.since:
        raise InputError(
            "--all-envs checks every environment it finds: not with --python, --from, --facts, --snapshot, --no-live or --since"
        )
    if args.format not in render.choices("all-envs"):
        raise InputError(f"--all-envs gives --format {' or '.join(render.choices('all-envs'))}")
    env = dict(os.environ)
    root = os.getcwd()
    found, note = discover(root, env, 4 * tool_timeout(env))
    if not found:
        raise InputError(f"no conda env and no venv (a pyvenv.cfg) under {root} found")
    rows: list[dict[str, Any]] = []
    nodes: list[analysis.NodeReport] = []
    for path, how in found:
        row: dict[str, Any] = {"env": path, "found_by": how}
        try:
            target = ask(resolve_path(path, env, how), env, 2 * tool_timeout(env), how, given=path)
        except TargetError as exc:
            rows.append({**row, "error": str(exc)})
            nodes.append(analysis.NodeReport(path, "failed", None, str(exc)))
            continue
        snap = collect_live(env, target=target)
        snap.add(absent("probe.results", "cudoctor", "not probed (--all-envs does not probe)"))
        rows.append({**row, **summary(target.version, Report(snap, checked(snap)))})
        nodes.append(analysis.NodeReport(path, "ok", snap.to_json()))
    odd = analysis.analyse(nodes).outliers
    doc = {"schema": 1, "root": root, "note": note or None, "envs": rows, "odd_ones": odd}
    sys.stdout.write(render.emit("all-envs", args.format, doc))
    return 1 if any(r.get("error") or r.get("exit_code") for r in rows) else 0


def summary(python: str, report: Report) -> dict[str, Any]:
    """One environment's row of the table, less where it is: its Python, exit status, layers, findings."""
    from cudoctor.render.areas import areas

    return {
        "python": python,
        "exit_code": report.exit_code,
        "layers": {a.title: a.status for a in areas(report)},
        "findings": [{"id": f.id, "severity": f.severity.value, "title": f.title} for f in report.findings],
    }
