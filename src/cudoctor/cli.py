"""Command line: argument parsing and wiring only; every decision lives in the layers below."""

from __future__ import annotations

import argparse
import errno
import os
import sys
import textwrap
from collections.abc import Callable, Sequence

from cudoctor import __version__, render
from cudoctor.inputs import InputError

EPILOG_CHECK = textwrap.dedent("""\
    examples:
      cudoctor check                       this machine, layer by layer
      cudoctor check -v                    every fact and where it came from
      cudoctor check --format json         a versioned JSON document (schema, snapshot, findings)
      cudoctor check --format markdown     a report to paste into a bug tracker
      cudoctor check --python ~/envs/train/bin/python
                                           another Python environment than cudoctor's own (default:
                                           the active one); --python self: cudoctor's own
      cudoctor check --all-envs            every conda env and venv under the current directory, in one table
      cudoctor check --facts user.json --no-live
                                           diagnose someone else's machine from stated facts, e.g.
                                           {"gpu": "A100", "framework_version": "tensorflow-gpu 1.13.1", "system_cuda": "10.0"}

    exit status: 0 nothing wrong, 1 errors found, 2 cudoctor could not do its job.
    """)

EPILOG_RUN = textwrap.dedent("""\
    examples:
      cudoctor run -- python train.py --epochs 3
      cudoctor run --json-out why.json -- torchrun --nproc-per-node 2 train.py

    The command's output comes through as it is printed (on a terminal through a pseudo-terminal, so
    colours and progress bars stay; in a pipe byte for byte) and cudoctor keeps its first 1 MiB and last
    32 MiB. If the command fails, cudoctor explains what it printed, with this machine's facts, on stderr
    after it; on success it adds nothing. Ctrl-C, SIGTERM and SIGHUP go to the command.
    exit status: the command's own; 128+N if a signal N killed it; 127 if it cannot be found; 2 without
    a command.
    """)

EPILOG_EXPLAIN = textwrap.dedent("""\
    examples:
      cudoctor explain train.log           the root error of a log and its ranked causes
      python train.py 2>&1 | cudoctor explain -
      cudoctor explain issue.txt --facts facts.json --no-live --format json
                                           a log from another machine, with the facts its owner stated

    The log may be any size (streamed), gzip-compressed, UTF-16 (what Windows PowerShell's > writes),
    with colours, timestamps and rank prefixes; this machine's facts are used unless --no-live is
    given. Lines known to be harmless (TensorFlow's plugin and CPU notices, a missing TensorRT, ...)
    are never taken for the error; -v says why each is harmless.
    exit status: 0 no error found, 1 an error was found (a known one, or a line that reads like one),
    2 unreadable input.
    """)


EPILOG_PROBE = textwrap.dedent("""\
    Each framework runs in its own child process (started from /, own process group, timeout): a
    crash, a hang or an out-of-memory becomes a result, explained like a log, and the others
    still run. Results are checked against float64 (per-dtype tolerances) and throughput is
    compared with the GPU's datasheet peak. On a GPU the peak is compared with a burst (after 1 s
    idle, 3 warm-ups, CUDA events for torch); a sustained figure follows, with the SM clock and
    what lowers it (power cap, thermal slowdown) read from NVML when nvidia-ml-py is installed.

    examples:
      cudoctor probe                       every installed framework, every device it sees
      cudoctor probe --framework torch --stress 20
      cudoctor check --probe --format json probe results become facts the checks use
    exit status: 0 every probe passed, 1 a probe failed or gave wrong numbers, 2 bad arguments.
    """)


EPILOG_FLEET = textwrap.dedent("""\
    examples:
      cudoctor fleet --ray auto            one task per alive node (hard node affinity), grouped
      cudoctor fleet --ray auto --probe --format json
      srun cudoctor check --format json > reports/$(hostname).json; cudoctor fleet aggregate reports/
    Every node needs cudoctor importable by its Ray workers; Ray comes with pip install 'cudoctor[fleet]'.
    exit status: 0 one configuration and every node answered, 1 outliers, errors or silent nodes, 2 bad input.
    """)

EPILOG_CAUSES = textwrap.dedent("""\
    examples:
      cudoctor causes                      every cause id with its title
      cudoctor causes gpu-oom              what it means, the checks and log signatures that find it,
                                           typical messages, fixes, references, solved public reports
      cudoctor causes cpu-only-torch       a finding, check or signature id: the page of its cause
      cudoctor causes --format json        id, title and why of every cause (with an ID: the whole page)
      cudoctor causes --format markdown    docs/causes.md (python tools/gen_causes_doc.py writes it)

    The cause ids are those every finding of check and every ranked cause of explain carries.
    exit status: 0 shown, 2 an unknown id (the nearest known ids are named).
    """)


def bounded(kind: type[int] | type[float], low: float, high: float) -> Callable[[str], float]:
    """An argparse type: a number of `kind` from `low` to `high` (NaN, inf and 10**30 are refused)."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(
                f"{text!r} is not {'a whole number' if kind is int else 'a number'}"
            ) from None
        if not low <= value <= high:  # False for NaN as well
            raise argparse.ArgumentTypeError(f"{text[:30]!r} is not between {low:g} and {high:g}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cudoctor",
        description="Tells you why GPU and BLAS work fails (TensorFlow, PyTorch, JAX, CuPy) and what fixes it.",
    )
    parser.add_argument("--version", action="version", version=f"cudoctor {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    chk = sub.add_parser(
        "check",
        help="check this machine (or stated facts) layer by layer",
        epilog=EPILOG_CHECK,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _source_args(chk, "check")
    chk.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show every fact with its source, and checks that could not decide",
    )
    chk.add_argument(
        "--list-checks", action="store_true", help="list every check id with what it looks for, then exit"
    )
    chk.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="ID",
        help="run only this check, or show only this finding (a check id or any id the output shows; repeatable, or a,b)",
    )
    chk.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="ID",
        help="skip this check or this finding (any id the output shows; repeatable, or a,b)",
    )
    chk.add_argument(
        "--probe", action="store_true", help="also run the live GEMM probes (see cudoctor probe)"
    )
    _python_arg(chk)
    chk.add_argument(
        "--all-envs",
        action="store_true",
        help="check every conda env and every venv under the current directory: one table of envs x layers",
    )
    chk.add_argument(
        "--from",
        dest="from_file",
        metavar="FILE",
        help="check someone else's report: cudoctor JSON, collect_env, nvidia-smi or nvidia-smi -q (text/XML), cupy.show_config(), jax.print_environment_info(), pip list, conda list",
    )
    chk.add_argument(
        "--since",
        metavar="REF",
        help="show what changed since a snapshot: good, latest, an id, a label or a file",
    )
    chk.add_argument(
        "--db", metavar="PATH", help="snapshot database (default: $CUDOCTOR_DB or the user data dir)"
    )
    chk.add_argument(
        "--no-record", action="store_true", help="do not record a clean run as the last known good snapshot"
    )
    chk.add_argument(
        "--no-redact",
        action="store_true",
        help="keep home paths, user and host names, GPU UUIDs in --format markdown",
    )

    snp = sub.add_parser(
        "snapshot",
        help="save, list and show snapshots of this machine (SQLite, user data dir)",
        epilog="exit status: 0 done, 2 an unknown snapshot or an unreadable database.",
    )
    snp_sub = snp.add_subparsers(dest="action", metavar="ACTION", required=True)
    s_save = snp_sub.add_parser("save", help="save a snapshot of this machine")
    s_save.add_argument("--label", help="a name to find it by later")
    _python_arg(s_save)
    s_list = snp_sub.add_parser("list", help="list saved snapshots, newest first")
    s_list.add_argument(
        "--limit", type=bounded(int, 1, 10**9), default=50, help="newest N snapshots (default 50)"
    )
    _format_arg(s_list, "snapshot-list", described=False)
    s_show = snp_sub.add_parser("show", help="show one snapshot with the findings it gives")
    s_show.add_argument("ref", metavar="ID|LABEL", help="an id, a label, good or latest")
    _format_arg(s_show, "snapshot-show", described=False)
    _python_arg(s_show, "whose last known good `good` names")
    for sp in (s_save, s_list, s_show):
        sp.add_argument(
            "--db", metavar="PATH", help="snapshot database (default: $CUDOCTOR_DB or the user data dir)"
        )

    dif = sub.add_parser(
        "diff",
        help="what changed between two snapshots (ids, labels, files, good, now)",
        epilog="exit status: 0 nothing new that is an error (changes alone do not fail), 1 a new error-level "
        "finding appeared, 2 bad input.",
    )
    dif.add_argument("a", help="before: an id, a label, good, latest, now, or a report file")
    dif.add_argument("b", help="after (same choices)")
    dif.add_argument("--db", metavar="PATH", help="snapshot database")
    _format_arg(dif, "diff", described=False)
    _python_arg(dif, "that `now` collects and whose last known good `good` names")

    rep = sub.add_parser(
        "report",
        epilog="exit status: 0 no errors found, 1 the report holds error-level findings (as check), 2 bad input.",
        help="a report to share: Markdown for an issue, JSON, or a self-contained HTML page (redacted)",
    )
    _source_args(rep, "report")
    rep.add_argument(
        "--from", dest="from_file", metavar="FILE", help="report on someone else's report file instead"
    )
    rep.add_argument("--probe", action="store_true", help="include live GEMM probe results (and their chart)")
    _python_arg(rep)
    rep.add_argument(
        "--no-redact", action="store_true", help="keep home paths, user and host names, GPU UUIDs and secrets"
    )
    rep.add_argument("-o", "--out", metavar="FILE", help="write to FILE instead of standard output")
    rep.add_argument(
        "--log",
        metavar="FILE",
        help="also explain this log with the report's facts (Markdown and JSON; e.g. what cudoctor run --save kept)",
    )

    flt = sub.add_parser(
        "fleet",
        help="check every node of a cluster (Ray) or a folder of reports, and name the odd ones out",
        epilog=EPILOG_FLEET,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    flt.add_argument(
        "paths",
        nargs="*",
        metavar="aggregate PATH",
        help="'aggregate' then report files or folders of *.json (cudoctor check --format json), instead of --ray",
    )
    flt.add_argument("--ray", metavar="ADDRESS", help="a Ray cluster: auto, or ray://host:10001 / host:6379")
    flt.add_argument("--probe", action="store_true", help="also run the GEMM probes on every node")
    flt.add_argument(
        "--timeout",
        type=bounded(float, 1, 86400),
        default=300.0,
        metavar="S",
        help="seconds to wait for all nodes (default 300)",
    )
    flt.add_argument(
        "--no-gpu-request",
        action="store_true",
        help="do not reserve the nodes' GPUs for the check task (busy clusters)",
    )
    _format_arg(flt, "fleet", described=False)
    _python_arg(flt, "to check on every node (a path there; default: as cudoctor check chooses on that node)")

    prb = sub.add_parser(
        "probe",
        help="run small GEMMs per framework, device and dtype; check the numbers; measure speed",
        epilog=EPILOG_PROBE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    prb.add_argument(
        "--framework",
        action="append",
        default=[],
        choices=["numpy", "torch", "tensorflow", "jax", "cupy"],
        help="probe only this framework (repeatable; default: every one installed)",
    )
    prb.add_argument(
        "--stress",
        type=bounded(int, 0, 100_000),
        default=0,
        metavar="N",
        help="repeat each timed GEMM N times and compare results bit for bit",
    )
    prb.add_argument(
        "--timeout",
        type=bounded(float, 1, 86400),
        default=180.0,
        metavar="S",
        help="seconds one framework's probe may take (default 180)",
    )
    _format_arg(prb, "probe")
    _python_arg(prb)

    exp = sub.add_parser(
        "explain",
        help="find the root error in a log or traceback and rank its causes",
        epilog=EPILOG_EXPLAIN,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    exp.add_argument("log", help="log file, or - for standard input")
    _source_args(exp, "explain")
    _python_arg(exp, "whose facts count when the log comes from this machine")
    exp.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show every matched line and the reasoning behind each rank",
    )

    run = sub.add_parser(
        "run",
        help="run a command, show its output as it comes, and explain it if it fails",
        usage="cudoctor run [--no-live] [--python PATH] [--json-out FILE] [--save] [--db PATH] -- CMD [ARGS...]",
        epilog=EPILOG_RUN,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("--no-live", action="store_true", help="explain without this machine's facts")
    _python_arg(run, "whose facts explain a failure")
    run.add_argument(
        "--json-out",
        metavar="FILE",
        help="also write the explanation (and the command's status) as JSON to FILE",
    )
    run.add_argument(
        "--save",
        action="store_true",
        help="on failure, keep the output (a .log beside the snapshot database) and a snapshot of this machine",
    )
    run.add_argument(
        "--db",
        metavar="PATH",
        help="snapshot database for --save (default: $CUDOCTOR_DB or the user data dir)",
    )
    run.add_argument(
        "cmd", nargs=argparse.REMAINDER, metavar="CMD", help="the command and its arguments, after --"
    )

    cau = sub.add_parser(
        "causes",
        help="what a cause means, how cudoctor finds it, what fixes it (all causes without an ID)",
        epilog=EPILOG_CAUSES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cau.add_argument("id", nargs="?", metavar="ID", help="a cause id, or a check, finding or signature id")
    _format_arg(cau, "causes")  # a cause's page ("cause") has the same formats
    return parser


def _python_arg(p: argparse.ArgumentParser, what: str = "to inspect") -> None:
    p.add_argument(
        "--python",
        metavar="PATH",
        help=f"the Python environment {what}: an interpreter, an environment directory, or 'self' for "
        "cudoctor's own (default: $CUDOCTOR_PYTHON, else the active VIRTUAL_ENV or CONDA_PREFIX, else the "
        "python3 first on PATH)",
    )


def _format_arg(p: argparse.ArgumentParser, kind: str, described: bool = True) -> None:
    """--format, its choices and default those of the renderers of `kind` (render/formats.py)."""
    default = render.default(kind)
    p.add_argument(
        "--format",
        choices=render.choices(kind),
        default=default,
        help=f"output format (default: {default})" if described else None,
    )


def _source_args(p: argparse.ArgumentParser, kind: str) -> None:
    p.add_argument(
        "--facts",
        metavar="FACTS.json",
        help="facts a person stated (keys: gpu, compute_capability, driver, framework_version, framework_cuda, system_cuda, cudnn, os, python, container, other)",
    )
    p.add_argument(
        "--snapshot",
        metavar="FILE",
        help="use a saved snapshot, a `cudoctor check --format json` document, or another machine's report (nvidia-smi or nvidia-smi -q text/XML, collect_env, cupy.show_config(), jax.print_environment_info(), pip list, conda list)",
    )
    p.add_argument("--no-live", action="store_true", help="do not mix in this machine's facts")
    _format_arg(p, kind)


def cmd_check(args: argparse.Namespace) -> int:
    from cudoctor.checks import all_checks
    from cudoctor.commands import snapshot_for
    from cudoctor.fixes import checked
    from cudoctor.model import Report

    if args.list_checks:
        from cudoctor.checks import FINDING_IDS

        for c in all_checks():
            print(f"{c.id:32s} [{c.cause}] {' '.join(c.doc.split(chr(10) * 2)[0].split())}")
            also = [pattern for pattern, chk in FINDING_IDS.items() if chk == c.id]
            if also:
                print(f"{'':32s}   findings it reports under other ids: {', '.join(also)}")
        return 0
    from cudoctor.checks import check_of, split_ids

    bad = [i for i in split_ids(args.only + args.ignore) if check_of(i) is None]
    if bad:
        raise InputError(
            f"unknown check or finding id(s): {', '.join(bad)} (cudoctor check --list-checks lists them)"
        )
    if args.all_envs:
        from cudoctor.allenvs import check_all

        return check_all(args)
    snap = snapshot_for(args)
    report = Report(snap, checked(snap, only=args.only, ignore=args.ignore))
    if args.only or args.ignore:  # a partial run says so, and is never remembered as a good machine
        report.extra["partial"] = f"{len(report.results)} of {len(all_checks())} checks run"
        args.no_record = True
    if args.since:
        from cudoctor.commands import db_path, resolve
        from cudoctor.diff import diff

        since_name, before = resolve(args.since, db_path(args), args)
        report.extra["since"] = {"ref": since_name, **diff(before, snap).to_json()}
    from cudoctor.commands import record_good, redacted

    shown = redacted(report) if render.redacts("check", args.format) and not args.no_redact else report
    sys.stdout.write(render.emit("check", args.format, shown, verbose=args.verbose))
    record_good(report, args)
    return report.exit_code


def cmd_probe(args: argparse.Namespace) -> int:
    from cudoctor.checks import all_checks
    from cudoctor.checks.probe import LAYER
    from cudoctor.commands import probe_fact
    from cudoctor.fixes import checked
    from cudoctor.model import Report, Snapshot

    if args.stress < 0 or args.timeout <= 0:
        raise InputError("--stress must be >= 0 and --timeout > 0")
    from cudoctor.commands import target_for

    target = target_for(args)
    snap = Snapshot(origin="live")
    snap.add(target.fact())
    snap.add(probe_fact(args.framework, args.stress, args.timeout, target))
    probe_checks = [c.id for c in all_checks() if c.layer == LAYER]
    report = Report(snap, checked(snap, only=probe_checks))
    sys.stdout.write(render.emit("probe", args.format, report))
    return report.exit_code


def cmd_run(args: argparse.Namespace) -> int:
    from cudoctor.runcommand import run_and_explain

    return run_and_explain(args)


def cmd_causes(args: argparse.Namespace) -> int:
    from cudoctor.causes_command import run_causes

    return run_causes(args)


def cmd_explain(args: argparse.Namespace) -> int:
    from cudoctor.explainer.command import run_explain

    return run_explain(args)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    if sys.stdout is None:
        return _fail("standard output is closed: nothing could be shown (redirect it, e.g. > out.txt)")
    try:
        from cudoctor import commands

        handlers = {"check": cmd_check, "explain": cmd_explain, "probe": cmd_probe, "run": cmd_run}
        handlers["causes"] = cmd_causes
        handlers.update(
            snapshot=commands.cmd_snapshot,
            diff=commands.cmd_diff,
            report=commands.cmd_report,
            fleet=commands.cmd_fleet,
        )
        status = handlers[args.command](args)
        sys.stdout.flush()
        return status
    except InputError as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        return _fail("interrupted")
    except BrokenPipeError:  # the reader went away (| head): not an error of cudoctor's
        _drop_stdout()
        return 0
    except OSError as exc:  # the output could not be written (a full disk, /dev/full), or a file read
        writing = exc.filename is None and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
        what = "cannot write the output" if writing else "cannot go on"
        _drop_stdout()
        where = f" ({exc.filename})" if exc.filename else ""
        return _fail(f"{what}: {exc.strerror or exc}{where}")
    except (RecursionError, MemoryError) as exc:
        return _fail(f"the input is too deeply nested or too large to read ({type(exc).__name__})")
    except Exception as exc:  # a defect: one line for the user, the traceback on request
        if os.environ.get("CUDOCTOR_DEBUG"):
            raise
        return _fail(
            f"internal error ({type(exc).__name__}: {str(exc)[:200]}); please report it with the command "
            "line, and CUDOCTOR_DEBUG=1 to show the traceback"
        )


def _fail(message: str) -> int:
    try:
        print(f"cudoctor: error: {message}", file=sys.stderr)
    except (OSError, AttributeError):  # stderr closed as well: the exit status says it
        pass
    return 2


def _drop_stdout() -> None:
    """Whatever is still buffered for stdout can no longer be written: send it nowhere, so Python's
    flush at exit does not print a traceback of its own."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
