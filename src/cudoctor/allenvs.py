"""`cudoctor check --all-envs`: every conda env and every venv under the current directory, each
checked as `check --python` checks one, then one table of environments x layers with the odd ones
named (the analysis `fleet aggregate` makes of nodes, made of environments)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from cudoctor.inputs import InputError


def check_all(args: argparse.Namespace) -> int:
    from cudoctor.facts import collect_live, tool_timeout
    from cudoctor.facts.target import TargetError, ask, discover, resolve_path
    from cudoctor.fixes import checked
    from cudoctor.fleet import analysis
    from cudoctor.model import Report, absent
    from cudoctor.render import documents, envs
    from cudoctor.render.areas import areas

    if args.python or args.from_file or args.no_live or args.facts or args.snapshot or args.since:
        raise InputError(
            "--all-envs checks every environment it finds: not with --python, --from, --facts, --snapshot, --no-live or --since"
        )
    if args.format == "markdown":
        raise InputError("--all-envs gives --format text or json")
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
        report = Report(snap, checked(snap))
        row.update(
            python=target.version,
            exit_code=report.exit_code,
            layers={a.title: a.status for a in areas(report)},
            findings=[{"id": f.id, "severity": f.severity.value, "title": f.title} for f in report.findings],
        )
        rows.append(row)
        nodes.append(analysis.NodeReport(path, "ok", snap.to_json()))
    odd = analysis.analyse(nodes).outliers
    if args.format == "json":
        doc = {"schema": 1, "root": root, "note": note or None, "envs": rows, "odd_ones": odd}
        sys.stdout.write(documents.dumps(doc))
    else:
        sys.stdout.write(envs.table(rows, odd, root, note))
    return 1 if any(r.get("error") or r.get("exit_code") for r in rows) else 0
