#!/usr/bin/env python3
"""Explain each recorded broken run again on a GPU machine, with that machine's live facts and the
broken run's environment changes, and save what the fix planner proposes there.

    PYTHONPATH=src python3 bench/gpu_explain_live.py OUTDIR [FIXES_DIR]

FIXES_DIR defaults to tests/fixtures/gpu/h100/fixes (made by bench/gpu_fixes.py). Writes
OUTDIR/planned/<trial>.json (cudoctor explain --format json), OUTDIR/planned/check.json and
OUTDIR/planned/summary.json (each trial's first cause and first step). Standard library only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def run(argv: list[str], env: dict[str, str], timeout: float = 60) -> tuple[int, str, float]:
    start = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
        return done.returncode, done.stdout, time.monotonic() - start
    except subprocess.TimeoutExpired:
        return 124, "", time.monotonic() - start


def main() -> int:
    out = os.path.join(sys.argv[1], "planned")
    fixes = sys.argv[2] if len(sys.argv) > 2 else os.path.join("tests", "fixtures", "gpu", "h100", "fixes")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(fixes, "summary.json"), encoding="utf-8") as fh:
        trials = json.load(fh)["trials"]
    summary: dict[str, object] = {}
    for name, trial in trials.items():
        env = dict(os.environ, **(trial.get("broken", {}).get("env_changes") or {}))
        rc, text, wall = run(
            [
                sys.executable,
                "-m",
                "cudoctor",
                "explain",
                os.path.join(fixes, name, "broken.txt"),
                "--format",
                "json",
            ],
            env,
        )
        with open(os.path.join(out, f"{name}.json"), "w", encoding="utf-8") as fh:
            fh.write(text)
        try:
            doc = json.loads(text)
            first = doc["causes"][0] if doc["causes"] else {}
            summary[name] = {
                "rc": rc,
                "wall_s": round(wall, 2),
                "cause": first.get("id"),
                "fix": first.get("fix", [])[:3],
            }
        except (ValueError, KeyError):
            summary[name] = {"rc": rc, "wall_s": round(wall, 2), "error": "no JSON"}
        print(f"{name:34s} rc={rc} {wall:5.2f} s {summary[name].get('cause')}", flush=True)  # type: ignore[union-attr]
    rc, text, wall = run([sys.executable, "-m", "cudoctor", "check", "--format", "json"], dict(os.environ))
    with open(os.path.join(out, "check.json"), "w", encoding="utf-8") as fh:
        fh.write(text)
    summary["check"] = {"rc": rc, "wall_s": round(wall, 2)}
    with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as fh:
        json.dump(summary, fh, indent=1)
    print(f"check rc={rc} {wall:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
