#!/usr/bin/env python3
"""Score fix scenarios and stated-facts check scenarios (TOML tables) against this build.

    python tools/score_scenarios.py tests/fixtures/fix_scenarios.toml [--show]
    python tools/score_scenarios.py tests/fixtures/check_scenarios.toml [--show]

A fix scenario (it has `log`): `cudoctor explain LOG --facts F --no-live` must rank `cause` first, the
first cause's steps must hold every `want_first` substring, and no step of any cause may hold a
`not_anywhere` one. A check scenario (it has `fires`): `cudoctor check --facts F --no-live` must
report a finding (warning or error) of each cause in `fires` and none of those in `silent`.
Used on blind tables (scenarios gathered from threads the project never held) before anything is
changed for them, and by the tests on the project's own tables.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import tomllib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))

from cudoctor import api
from cudoctor.explainer.command import explain_stated
from cudoctor.model import Severity

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def fix_problems(row: dict[str, Any]) -> list[str]:
    """What a fix scenario gets wrong (empty: it passes)."""
    doc = explain_stated(row["log"] + "\n", row["facts"])
    causes = doc["causes"]
    if not causes:
        return ["no cause at all"]
    out = []
    if causes[0]["id"] != row["cause"]:
        out.append(
            f"first cause {causes[0]['id']}, want {row['cause']} (got {[c['id'] for c in causes[:3]]})"
        )
    first = next((c for c in causes if c["id"] == row["cause"]), causes[0])
    steps = "\n".join(first["fix"])
    missing = [w for w in row.get("want_first", []) if w not in steps]
    if missing:
        out.append(f"missing {missing} in the steps of {first['id']}: {first['fix'][:4]}")
    every = [s for c in causes for s in c["fix"]]
    bad = sorted({w for w in row.get("not_anywhere", []) for s in every if w in s})
    if bad:
        out.append(f"contradicting steps hold {bad}")
    return out


def check_problems(row: dict[str, Any]) -> list[str]:
    """What a check scenario gets wrong (empty: it passes)."""
    report = api.check(row["facts"], live=False)
    fired = {f.cause for f in report.findings if f.severity is not Severity.INFO}
    out = [f"no {c} finding" for c in row.get("fires", []) if c not in fired]
    out += [f"false alarm {c}" for c in row.get("silent", []) if c in fired]
    if not row.get("fires") and row.get("healthy_means_nothing") and fired:
        out.append(f"findings on a healthy stack: {sorted(fired)}")
    return out


def read_table(path: str) -> list[dict[str, Any]]:
    """The [[scenario]] rows of a table."""
    with open(path, "rb") as fh:
        return list(tomllib.load(fh)["scenario"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("table", help="a TOML file of [[scenario]] rows")
    ap.add_argument("--show", action="store_true", help="print every failing scenario and why")
    args = ap.parse_args()
    try:
        rows = read_table(args.table)
    except (OSError, tomllib.TOMLDecodeError, KeyError) as exc:
        print(f"cannot read {args.table}: {exc}", file=sys.stderr)
        return 2
    passed = 0
    for row in rows:
        problems = fix_problems(row) if "log" in row else check_problems(row)
        passed += not problems
        if problems and args.show:
            print(f"FAIL {row['id']}: " + "; ".join(problems))
    print(f"{os.path.basename(args.table)}: {passed}/{len(rows)} pass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
