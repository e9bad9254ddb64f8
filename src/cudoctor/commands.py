"""Wiring for `snapshot`, `diff` and `report` (and the snapshot side of `check`)."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from typing import TYPE_CHECKING, Any

from cudoctor import render, store
from cudoctor.inputs import InputError
from cudoctor.model import CheckResult, Report, Snapshot

if TYPE_CHECKING:
    from cudoctor.facts.target import Target


def db_path(args: argparse.Namespace) -> str:
    return getattr(args, "db", None) or store.default_path()


def resolve(ref: str, db: str, args: argparse.Namespace | None = None) -> tuple[str, Snapshot]:
    """`now`, a file (any report format cudoctor reads), `good` (the last known good of the
    environment `check` would inspect now), `latest`, an id or a label."""
    args = argparse.Namespace() if args is None else args
    if ref == "now":
        from cudoctor.facts import collect_live

        target = target_for(args)  # the environment `check` would inspect now
        where = "" if target.is_self else f", {target.prefix}"
        return f"now (this machine{where})", collect_live(target=target)
    if os.path.exists(ref) and not os.path.isdir(ref) and not ref.isdigit():
        from cudoctor.importers import load_report

        return ref, load_report(ref)
    try:
        if ref == "good":
            target = target_for(args)
            entry, snap = store.load(db, ref, env=target.key, executable=target.executable)
        else:
            entry, snap = store.load(db, ref)
    except store.StoreError as exc:
        raise InputError(str(exc)) from None
    return f"snapshot {entry.id}" + (
        f" ({entry.label})" if entry.label else ""
    ) + f" of {entry.created}", snap


def target_for(args: argparse.Namespace) -> Target:
    """The Python environment to check: --python, else CUDOCTOR_PYTHON, else the active one
    (chosen once per command; a Python that cannot be asked is an input error)."""
    from cudoctor.facts import tool_timeout
    from cudoctor.facts.target import TargetError, choose

    chosen = getattr(args, "_target", None)
    if chosen is None:
        try:
            chosen = choose(getattr(args, "python", None), os.environ, 2 * tool_timeout(os.environ))
        except TargetError as exc:
            raise InputError(str(exc)) from None
        args._target = chosen
    return chosen


def probe_fact(frameworks: list[str], stress: int, timeout: float, target: Target | None = None) -> Any:
    """Run the probes (progress on a terminal) with the interpreter of `target` (default: cudoctor's
    own) and return them as the `probe.results` fact."""
    from cudoctor import probe
    from cudoctor.facts.target import PROBE_MIN
    from cudoctor.model import known, unknown

    if target is not None and not target.is_self and target.version_info[:2] < PROBE_MIN:
        need = ".".join(map(str, PROBE_MIN))
        return unknown(
            "probe.results",
            "cudoctor probe",
            f"not probed: the probe child needs Python {need}+, {target.executable} is {target.version}",
        )
    chosen = frameworks or probe.installed(None if target is None else target.sys_path)

    def progress(result: dict[str, Any]) -> None:
        print(
            f"probe {result['framework']}: {result['status']} in {result['wall_s']:.1f} s",
            file=sys.stderr,
            flush=True,
        )

    if sys.stderr.isatty():
        print(f"probing {', '.join(chosen)} (one child process each) ...", file=sys.stderr, flush=True)
    results = probe.run_all(
        chosen,
        timeout=timeout,
        progress=progress if sys.stderr.isatty() else None,
        python=None if target is None else target.probe_python,
        stress=stress,
    )
    return known("probe.results", results, "cudoctor probe (child processes)")


def snapshot_for(args: argparse.Namespace) -> Snapshot:
    """The snapshot `check` and `report` work on: a foreign report, or stated/saved/live facts, plus probes."""
    if getattr(args, "from_file", None):
        from cudoctor.importers import load_report

        snap = load_report(args.from_file)
    else:
        from cudoctor.inputs import build_snapshot

        live = not args.no_live
        target = target_for(args) if live or args.probe else None
        snap = build_snapshot(args.facts, args.snapshot, live=live, target=target)
    if getattr(args, "python", None) and (args.from_file or args.no_live) and not args.probe:
        raise InputError("--python names the environment to collect facts from: not with --from or --no-live")
    if args.probe:
        snap.add(probe_fact([], 0, 180.0, target_for(args)))
    elif snap.get("probe.results") is None:
        from cudoctor.model import absent

        snap.add(absent("probe.results", "cudoctor", "not probed (--probe runs them)"))
    return snap


def build_report(snap: Snapshot) -> Report:
    from cudoctor.fixes import checked

    return Report(snap, checked(snap))


def redacted(report: Report) -> Report:
    """The same report with secrets, home and user names, host name and GPU ids removed."""
    from cudoctor.redact import Redactor

    r = Redactor()
    snap = Snapshot.from_json(r.data(report.snapshot.to_json()))
    snap.origin, snap.created = report.snapshot.origin, report.snapshot.created

    def clean(f: Any) -> Any:
        return dataclasses.replace(
            f,
            title=r.text(f.title),
            evidence=tuple(r.text(e) for e in f.evidence),
            fix=tuple(r.text(s) for s in f.fix),
        )

    results = [
        CheckResult(x.check_id, x.outcome, tuple(clean(f) for f in x.findings), r.text(x.detail))
        for x in report.results
    ]
    return Report(snap, results, r.data(report.extra))


def record_good(report: Report, args: argparse.Namespace) -> None:
    """After a clean live check, remember this machine as last known good (never fails the check)."""
    if (
        getattr(args, "no_record", False)
        or report.exit_code != 0
        or report.snapshot.origin not in ("live", "merged")
    ):
        return
    try:
        store.save(
            db_path(args), report.snapshot, label=None, good=True, findings=len(report.findings), auto=True
        )
    except (store.StoreError, OSError) as exc:
        print(f"cudoctor: note: could not record this machine as last known good: {exc}", file=sys.stderr)


def cmd_snapshot(args: argparse.Namespace) -> int:
    db = db_path(args)
    try:
        if args.action == "save":
            from cudoctor.facts import collect_live

            report = build_report(collect_live(target=target_for(args)))
            errors = sum(f.severity.value == "error" for f in report.findings)
            sid = store.save(
                db,
                report.snapshot,
                args.label,
                good=errors == 0,
                findings=len(report.findings),
                errors=errors,
            )
            print(f"saved snapshot {sid}" + (f" ({args.label})" if args.label else "") + f" to {db}")
            return 0
        if args.action == "list":
            sys.stdout.write(render.emit("snapshot-list", args.format, store.entries(db, args.limit)))
            return 0
        if args.ref == "good":  # of the environment `check` would inspect now
            target = target_for(args)
            entry, snap = store.load(db, args.ref, env=target.key, executable=target.executable)
        else:
            entry, snap = store.load(db, args.ref)
    except store.StoreError as exc:
        raise InputError(str(exc)) from None
    sys.stdout.write(render.emit("snapshot-show", args.format, build_report(snap), entry=entry))
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from cudoctor.diff import diff

    db = db_path(args)
    a_name, a = resolve(args.a, db, args)
    b_name, b = resolve(args.b, db, args)
    d = diff(a, b)
    sys.stdout.write(render.emit("diff", args.format, {"a": a_name, "b": b_name, **d.to_json()}))
    return 1 if d.appeared and any(f["severity"] == "error" for f in d.appeared) else 0


def cmd_report(args: argparse.Namespace) -> int:
    snap = snapshot_for(args)
    report = build_report(snap)
    if getattr(args, "log", None):  # a run's output (cudoctor run --save), explained with these facts
        from cudoctor.explainer.command import explain_file

        report.extra["log"] = {"file": os.path.basename(args.log), **explain_file(args.log, snap)}
    shared = redacted(report) if render.redacts("report", args.format) and not args.no_redact else report
    out = render.emit("report", args.format, shared)
    if args.out:
        try:
            with open(args.out, "w", encoding="utf-8") as fh:
                fh.write(out)
        except OSError as exc:
            raise InputError(f"cannot write {args.out}: {exc.strerror}") from None
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(out)
    return report.exit_code


def _fleet_python(args: argparse.Namespace) -> str | None:
    """--python for `fleet --ray`, a path on the nodes (not checked here, where it may not exist)."""
    spec = getattr(args, "python", None)
    if spec is not None and (not spec.strip() or "\0" in spec):
        raise InputError("--python is empty: name an interpreter or environment on the nodes, or 'self'")
    if spec and os.sep in spec and not os.path.isabs(spec):  # the workers do not run from this directory
        spec = os.path.abspath(spec)
    return spec


def cmd_fleet(args: argparse.Namespace) -> int:
    from cudoctor.fleet import analysis

    if args.paths:
        if getattr(args, "python", None):
            raise InputError(
                "--python names the environment each node checks: not with aggregate (reports say theirs)"
            )
        if args.paths[0] != "aggregate" or args.ray:
            raise InputError(
                "use either: cudoctor fleet --ray ADDRESS, or: cudoctor fleet aggregate PATH ..."
            )
        if len(args.paths) < 2:
            raise InputError("fleet aggregate needs report files or folders")
        reports = analysis.load_reports(args.paths[1:])
    elif args.ray:
        from cudoctor.fleet import ray_runner

        progress = ray_runner.print_progress if sys.stderr.isatty() else None
        reports = ray_runner.run(
            args.ray,
            probe=args.probe,
            timeout=args.timeout,
            request_gpus=not args.no_gpu_request,
            progress=progress,
            python=_fleet_python(args),
        )
    else:
        raise InputError("say where the nodes are: --ray ADDRESS, or aggregate PATH ...")
    result = analysis.analyse(reports)
    sys.stdout.write(render.emit("fleet", args.format, result))
    bad = (
        result.outliers
        or result.failed
        or any(f["severity"] == "error" for g in result.groups for f in g.findings)
    )
    return 1 if bad else 0
