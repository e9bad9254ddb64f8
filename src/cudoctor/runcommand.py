"""`cudoctor run -- CMD`: run a command as it is (supervise.py) and, when it fails, explain what it
printed with this machine's facts (explainer/command.py), on stderr after the command's own output."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from typing import TYPE_CHECKING, Any

from cudoctor import supervise

if TYPE_CHECKING:
    from cudoctor.facts.target import Target


def run_and_explain(args: argparse.Namespace) -> int:
    argv = list(args.cmd)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        print(
            "usage: cudoctor run [--no-live] [--python PATH] [--json-out FILE] [--save] -- CMD [ARGS...]",
            file=sys.stderr,
        )
        print("cudoctor run: error: no command given (put it after --)", file=sys.stderr)
        return 2
    named = getattr(args, "python", None)
    if named and args.no_live:
        print(
            "cudoctor run: error: --python names the environment whose facts count: not with --no-live",
            file=sys.stderr,
        )
        return 2
    target = _target(args) if named else None  # a --python that cannot be asked stops here, before CMD runs
    if named and target is None:
        return 2
    try:
        outcome = supervise.run(argv)
    except supervise.CommandNotFound as exc:
        print(f"cudoctor run: cannot run {exc}", file=sys.stderr)
        return 127
    if outcome.status == 0:
        return 0
    from cudoctor.explainer.command import explain_output
    from cudoctor.render.explanation import to_brief

    live = not args.no_live
    if live and target is None:  # the default environment is chosen only when there is a failure to explain
        target = _target(args)
        live = target is not None
    doc, snap = explain_output(outcome.record.text(), live=live, target=target)
    how = (
        f"was killed by signal {outcome.signal}" if outcome.signal else f"exited with status {outcome.status}"
    )
    # a run's output may fail for any reason: causes are shown where a known GPU/CUDA/BLAS error is there
    known = bool((doc["root"] or {}).get("signature"))
    brief = to_brief(doc) if known else ""
    facts = f" and the facts of {target.describe()}" if brief and live and target is not None else ""
    sys.stderr.write(
        f"\ncudoctor: `{_short(argv)}` {how} after {outcome.duration_s:.1f} s"
        + (
            f" (explained from its output{facts}):\n" + brief
            if brief
            else "; no known GPU, CUDA or BLAS error in its output.\n"
        )
    )
    if args.json_out:
        _write_json(args.json_out, argv, outcome, doc)
    if args.save:
        _save(args, argv, outcome, snap)
    return outcome.status


def _target(args: argparse.Namespace) -> Target | None:
    """The environment whose facts explain a failure (--python, else as `check` chooses); None, with
    one line on stderr, when it cannot be asked: `run` never fails for it after the command ran."""
    from cudoctor.commands import target_for
    from cudoctor.inputs import InputError

    try:
        return target_for(args)
    except InputError as exc:
        if getattr(args, "python", None):
            print(f"cudoctor run: error: {exc}", file=sys.stderr)
        else:
            print(f"cudoctor: note: explained without this machine's facts: {exc}", file=sys.stderr)
        return None


def _short(argv: list[str], limit: int = 80) -> str:
    text = shlex.join(argv)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _write_json(path: str, argv: list[str], outcome: supervise.Outcome, doc: dict[str, Any]) -> None:
    data = {
        "command": argv,
        "status": outcome.status,
        "signal": outcome.signal,
        "duration_s": round(outcome.duration_s, 3),
        "output_bytes": outcome.record.size,
        **doc,
    }
    try:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, default=str)
    except OSError as exc:
        print(f"cudoctor run: cannot write {path}: {exc.strerror}", file=sys.stderr)


def _save(args: argparse.Namespace, argv: list[str], outcome: supervise.Outcome, snap: Any) -> None:
    """The output as a log beside the snapshot database, and this machine's snapshot labelled with it."""
    from cudoctor import store
    from cudoctor.commands import db_path

    db = db_path(args)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    log = os.path.join(os.path.dirname(os.path.abspath(db)), "runs", f"{stamp}.log")
    try:
        os.makedirs(os.path.dirname(log), exist_ok=True)
        with open(log, "w", encoding="utf-8") as fh:
            fh.write(outcome.record.text())
        sid = store.save(db, snap, label=f"run {stamp}: {shlex.join(argv)[:80]}", good=False, findings=0)
    except (OSError, store.StoreError) as exc:
        print(f"cudoctor run: could not save: {exc}", file=sys.stderr)
        return
    print(
        f"cudoctor: saved the output to {log} and this machine as snapshot {sid} "
        f"(a report to share: cudoctor report --log {shlex.quote(log)})",
        file=sys.stderr,
    )
