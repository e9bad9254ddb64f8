"""`cudoctor explain`: read the log, build the facts, rank the causes, print the result."""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from cudoctor import textfiles
from cudoctor.explainer import benign, evidence, logfacts, rank, scan
from cudoctor.facts.stated import KEYS as stated_keys
from cudoctor.fixes import scope
from cudoctor.inputs import InputError, build_snapshot
from cudoctor.model import Snapshot

if TYPE_CHECKING:
    from cudoctor.facts.target import Target

VENDORED_XLA = re.compile(r"external/org_tensorflow/\S*")
FRAMEWORK_HINTS = (
    ("torch", re.compile(r"\btorch\b|pytorch|THC|c10|aten/|cublasGemm|cuDNN version incompatibility", re.I)),
    (
        "tensorflow",
        re.compile(r"tensorflow|stream_executor|\bkeras\b|\[Op:|Failed to get convolution algorithm", re.I),
    ),
    ("jax", re.compile(r"\bjax(lib)?\b|XlaRuntimeError|jax_plugins|\bjax_\w+", re.I)),
    ("cupy", re.compile(r"\bcupy\b|Jitify", re.I)),
)


def guess_framework(result: scan.ScanResult, stated: Mapping[str, object] | None = None) -> str | None:
    """The framework the log names most; else the one the stated framework_version names (one of the four,
    or another CUDA library such as CTranslate2 or Paddle); else the one the rest of the facts name."""
    text = "\n".join([m.text for m in result.matches] + [t for _, t in result.tail])
    # jaxlib vendors XLA from TensorFlow's tree and logs its paths as external/org_tensorflow/...;
    # TensorFlow's own logs never carry that prefix
    text = VENDORED_XLA.sub(" jaxlib ", text)
    stated = stated or {}
    named = str(stated.get("framework_version") or "")
    other = scope.framework_from_log(named)  # 'faster-whisper 1.0.0 (ctranslate2 4.x)' beside torch in prose
    if (
        other
        and not any(rx.search(text) for _, rx in FRAMEWORK_HINTS)
        and not any(rx.search(named) for _, rx in FRAMEWORK_HINTS)
    ):
        return other
    for source in (text, named, " ".join(str(v) for v in stated.values())):
        counts = {name: len(rx.findall(source)) for name, rx in FRAMEWORK_HINTS}
        best = max(counts.items(), key=lambda kv: kv[1])
        if best[1]:
            return best[0]
    return None


def _progress_printer(path: str) -> Callable[[int], None] | None:
    """A stderr progress line for big files when a person is watching, else None."""
    if path == "-" or not sys.stderr.isatty():
        return None
    try:
        total = os.path.getsize(path)
    except OSError:
        return None
    if total < 64 << 20:
        return None

    def show(done: int) -> None:
        end = "\n" if done >= total else ""
        sys.stderr.write(
            f"\rscanning {path}: {min(100, done * 100 // total)}% ({done >> 20} of {total >> 20} MiB){end}"
        )
        sys.stderr.flush()

    return show


def run_scan(path: str) -> scan.ScanResult:
    try:
        stream = scan.open_log(path)
    except scan.LogError as exc:
        raise InputError(str(exc)) from None
    try:
        result = scan.scan(stream, progress=_progress_printer(path))
    except scan.LogError as exc:
        raise InputError(f"{path}: {exc}") from None
    except scan.READ_ERRORS as exc:
        raise InputError(f"cannot read {path}: {scan.read_error(exc)}") from None
    finally:
        if path != "-":
            stream.close()
    if result.bytes == 0:
        raise InputError(f"{'standard input' if path == '-' else path} is empty: nothing to explain")
    return result


def _stated(facts_path: str | None) -> dict[str, Any]:
    """The facts file as the person wrote it (build_snapshot has already refused a bad one)."""
    if not facts_path:
        return {}
    try:
        with open(facts_path, encoding="utf-8") as fh:
            data = textfiles.load_json(fh.read())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def similar_json(exp: rank.Explanation) -> list[dict[str, Any]]:
    """The solved public reports most like this log, close enough to show."""
    if exp.learned is None:
        return []
    return [
        {
            "source": h.report.source,
            "causes": list(h.report.causes),
            "resolution": h.report.resolution,
            "score": h.score,
            "id": h.report.id,
        }
        for h in exp.learned.shown(exp.causes[0].id if exp.causes else None)
    ]


def to_json(exp: rank.Explanation, framework: str | None = None) -> dict[str, Any]:
    root: dict[str, Any] | None = None
    if exp.root is not None:
        root = {
            "line": exp.root.line,
            "text": exp.root.text,
            "signature": exp.root.sig.id,
            "rank": exp.root.rank,
        }
    elif exp.root_fallback is not None:
        line, text = exp.root_fallback
        root = {
            "line": line,
            "text": text,
            "signature": None,
            "rank": None,
            "error_looking": exp.summary is not None or rank.looks_like_error(text),
        }
        if exp.summary is not None:
            root["summary"] = {
                "id": exp.summary.id,
                "title": exp.summary.title,
                "why": exp.summary.why,
                "find": list(exp.summary.find),
            }
    return {
        "schema": 1,
        "root": root,
        "causes": [
            rank.cause_json(exp.causes, i, framework, exp.plan) for i in range(min(5, len(exp.causes)))
        ],
        "matches": [
            {"line": m.line, "signature": m.sig.id, "text": m.text[:500], "captures": m.captures}
            for m in exp.matches[:200]
        ],
        "similar": similar_json(exp),
        "apart": [
            {"id": f.id, "cause": f.cause, "severity": f.severity.value, "title": f.title}
            for f in exp.apart
            if f.severity.value != "info"
        ],
        "notes": [exp.learned.note] if exp.learned is not None and exp.learned.note else [],
        "benign": benign.to_json(exp.scan.benign),
        "stats": {
            "lines": exp.scan.lines,
            "bytes": exp.scan.bytes,
            "engine": exp.scan.engine,
            "matches_by_signature": dict(exp.scan.counts),
            "facts_from_log": {k: {"line": n, "value": v} for k, (n, v) in exp.scan.facts.items()},
        },
    }


def new_steps(causes: list[dict[str, Any]]) -> list[list[str]]:
    """Each cause's fix steps less those an earlier cause already lists (a signature's shared
    `fix` steps are attached to every cause it allows; a reader needs them once)."""
    seen: set[str] = set()
    out = []
    for c in causes:
        out.append([s for s in c["fix"] if s not in seen])
        seen.update(c["fix"])
    return out


def _first_listing(causes: list[dict[str, Any]], step: str) -> int:
    """The number (from 1) of the first cause whose steps include this one."""
    return next(i for i, c in enumerate(causes, 1) if step in c["fix"])


def _root_evidence(root: dict[str, Any] | None) -> str | None:
    return f"line {root['line']}: {root['text'][:300]}" if root and root.get("signature") else None


def _summary_text(root: dict[str, Any]) -> list[str]:
    """A launcher's summary line: what it is, and where the worker's own error is."""
    summary = root["summary"]
    return [
        f"No known GPU/BLAS error signature matched; line {root['line']} is {summary['title']}, not the error itself.",
        f"   line {root['line']}: {root['text'][:300]}",
        f"   why: {summary['why']}",
        *(f"   find {i}: {step}" for i, step in enumerate(summary["find"], 1)),
    ]


def to_text(doc: dict[str, Any], verbose: bool) -> str:
    out = []
    root = doc["root"]
    if root and root.get("signature"):
        out.append(f"Root error (line {root['line']}): {root['text'][:400]}")
    elif root and root.get("summary"):
        out += _summary_text(root)
    elif root and root.get("error_looking", True):
        out.append(
            f"No known GPU/BLAS error signature matched; last error-looking line ({root['line']}): {root['text'][:400]}"
        )
    elif root:
        out.append(f"No error found in this log; its last line ({root['line']}): {root['text'][:400]}")
    elif doc["benign"]:
        out.append("No error found: every line here that looks like one is a known harmless message.")
    else:
        out.append("No known GPU/BLAS error signature matched.")
    if doc["causes"] and not shows_error(root):
        out += ["", FACTS_ONLY_HEADING]
    shown_root = _root_evidence(root)
    for i, (c, steps) in enumerate(zip(doc["causes"], new_steps(doc["causes"]), strict=True), 1):
        out.append("")
        out.append(f"{i}. {c['title']}  [{c['id']}, confidence {c['confidence']:.2f}]")
        if verbose or i == 1:
            out.append(f"   why: {c['why']}")
        evidence = c["evidence"] if verbose else [e for e in c["evidence"] if e != shown_root][:3]
        for e in evidence:
            out.append(f"   evidence: {e}")
        for j, step in enumerate(steps[: None if verbose else (3 if i == 1 else 1)], 1):
            out.append(f"   fix {j}: {step}")
        if c["fix"] and not steps:
            out.append(f"   fix: the steps under {_first_listing(doc['causes'], c['fix'][0])} above")
        refs = c.get("references") or []
        if refs and (verbose or i == 1):
            out.append(f"   see: {' '.join(refs[: None if verbose else 2])}")
    out += _apart_text(doc.get("apart", []))
    out += _similar_text(doc["similar"])
    out += [f"note: {n}" for n in doc["notes"]]
    out += _benign_text(doc["benign"], full=verbose or not root)
    if (doc["benign"] or root) and not shows_error(root):
        out += ["", RERUN_HINT]
    if verbose:
        out.append("")
        out.append(
            f"scanned {doc['stats']['lines']} lines ({doc['stats']['bytes']} bytes) with {doc['stats']['engine']}; matches: {doc['stats']['matches_by_signature']}"
        )
    return "\n".join(out) + "\n"


FACTS_ONLY_HEADING = "Problems found on this machine (from its facts; the log does not show them failing):"


def shows_error(root: dict[str, Any] | None) -> bool:
    """Whether the log holds an error: a known signature or a line that reads like one."""
    if root is None:
        return False
    return bool(root.get("signature")) or bool(root.get("error_looking", True))


RERUN_HINT = (
    "If your program failed, its error is not in this log. Capture all of its output "
    "(python train.py 2>&1 | tee run.log) and run: cudoctor explain run.log"
)


APART_HEADING = "Also in the facts, but not what this log points to (not ranked):"


def _apart_text(apart: list[dict[str, Any]]) -> list[str]:
    """Findings of the facts whose causes the log does not name: true of that machine, listed apart."""
    if not apart:
        return []
    return ["", APART_HEADING] + [f"- {a['title']}  [{a['id']}]" for a in apart[:8]]


def _similar_text(similar: list[dict[str, Any]]) -> list[str]:
    """The solved reports most like this log: how close, what the cause was, what fixed it, where."""
    if not similar:
        return []
    out = ["", "Similar solved reports:"]
    for s in similar:
        out.append(f"- {s['score']:.2f}  {', '.join(s['causes'])}: {s['resolution'][:300]}")
        out.append(f"    {s['source']}")
    return out


def _benign_text(hits: list[dict[str, Any]], full: bool) -> list[str]:
    """Known harmless lines: one summary line, or each kind with why it is harmless."""
    if not hits:
        return []
    if not full:
        titles = "; ".join(h["title"] for h in hits)
        return ["", f"Ignored known harmless lines ({titles}); -v says why."]
    out = ["", "Known harmless lines:"]
    for h in hits:
        more = f" (+{h['seen'] - 1} more like it)" if h["seen"] > 1 else ""
        out.append(f"- line {h['line']}{more}: {h['title']}")
        out.append(f"    {h['text'][:200]}")
        out.append(f"    harmless: {h['why']}")
        if h["matters"]:
            out.append(f"    matters: {h['matters']}")
    return out


def to_markdown(doc: dict[str, Any]) -> str:
    root = doc["root"]
    lines = ["## cudoctor explain", ""]
    if root and root.get("summary"):
        summary = root["summary"]
        lines += [
            f"**No known error signature matched**: line {root['line']} is {summary['title']}, not the error itself.",
            "",
        ]
        lines += ["```", root["text"], "```", "", summary["why"], "", "To find it:", ""]
        lines += [f"{i}. {step}" for i, step in enumerate(summary["find"], 1)] + [""]
    elif root and shows_error(root):
        lines += [f"**Root error** (line {root['line']}):", "", "```", root["text"], "```", ""]
    else:
        lines += ["No error found in this log.", ""]
    if doc["causes"] and not shows_error(root):
        lines += [f"**{FACTS_ONLY_HEADING}**", ""]
    for i, (c, steps) in enumerate(zip(doc["causes"], new_steps(doc["causes"]), strict=True), 1):
        lines += [f"### {i}. {c['title']} (`{c['id']}`, confidence {c['confidence']:.2f})", "", c["why"], ""]
        lines += ["Evidence:", ""] + [f"- `{e}`" for e in c["evidence"]] + [""]
        if steps:
            lines += ["Fix:", ""] + [f"{j}. {s}" for j, s in enumerate(steps, 1)] + [""]
        elif c["fix"]:
            lines += [f"Fix: the steps under {_first_listing(doc['causes'], c['fix'][0])} above.", ""]
        if c.get("references"):
            lines += ["See: " + ", ".join(f"<{r}>" for r in c["references"]), ""]
    if doc.get("apart"):
        lines += [f"**{APART_HEADING}**", ""] + [f"- {a['title']} (`{a['id']}`)" for a in doc["apart"]] + [""]
    if doc["similar"]:
        lines += ["### Similar solved reports", ""]
        lines += [
            f"- [{s['source']}]({s['source']}) ({s['score']:.2f}, `{', '.join(s['causes'])}`): {s['resolution']}"
            for s in doc["similar"]
        ] + [""]
    if doc["benign"]:
        lines += ["### Known harmless lines", ""]
        lines += [f"- line {h['line']}: {h['title']}. {h['why']}" for h in doc["benign"]] + [""]
    if not shows_error(root) and (doc["benign"] or root):
        lines += [RERUN_HINT, ""]
    if doc.get("facts_used"):
        lines += [f"_{facts_line(doc['facts_used'])}_", ""]
    return "\n".join(lines)


def explain_stated(log: str, stated: Mapping[str, Any]) -> dict[str, Any]:
    """What `cudoctor explain LOG --facts STATED --no-live --format json` prints, computed in this process
    (corpus scoring in the tests and tools/cv_explain.py)."""
    return explain_text(log, stated, live=False)


def _explained(
    result: scan.ScanResult, snap: Snapshot, stated: Mapping[str, Any], hint: str | None, live: bool = False
) -> rank.Explanation:
    """The facts the log states about itself filled in, the learned stage gathered, the causes ranked;
    `live`: this machine's facts are in, and its findings the log does not point to are set apart."""
    snap = logfacts.fill(snap, result.facts, hint)
    found = evidence.gather(result, {k: v for k, v in stated.items() if k in stated_keys})
    other = str(stated.get("other", ""))
    return rank.explain(result, snap, other=other, learned=found, framework=hint, set_apart=live)


def run_explain(args: argparse.Namespace) -> int:
    if getattr(args, "python", None) and args.no_live:
        raise InputError("--python names the environment whose facts count: not with --no-live")
    result = run_scan(args.log)
    stated = _stated(args.facts)
    hint = guess_framework(result, stated)
    snap, used = _facts_for(result, args, hint)
    doc = to_json(_explained(result, snap, stated, hint, live=used["this_machine"]), hint)
    doc["facts_used"] = used
    if args.format == "json":
        sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")
    elif args.format == "markdown":
        sys.stdout.write(to_markdown(doc))
    else:
        sys.stdout.write(to_text(doc, args.verbose))
        line = facts_line(doc["facts_used"])
        if line:
            sys.stdout.write("\n" + line + "\n")
    return 1 if shows_error(doc["root"]) else 0  # an unknown error line is still an error


def _facts_for(
    result: scan.ScanResult, args: argparse.Namespace, hint: str | None
) -> tuple[Snapshot, dict[str, Any]]:
    """Stated facts, a saved snapshot, the log's own, and this machine's only when the log comes from it."""
    snap: Snapshot = build_snapshot(args.facts, args.snapshot, live=False, framework_hint=hint)
    used = _facts_used(result, stated=bool(args.facts), snapshot=bool(args.snapshot))
    if args.no_live:
        used["left_out_because"] = ["--no-live"]
        return snap, used
    from cudoctor.commands import target_for

    target = target_for(args)  # --python, else as `check` chooses; one that cannot be asked: exit 2
    return _with_this_machine(result, snap, used, stated=bool(args.facts or args.snapshot), target=target)


def _facts_used(
    result: scan.ScanResult, stated: bool, snapshot: bool, left_out: list[str] | None = None
) -> dict[str, Any]:
    """Whose facts ranked the causes (JSON `facts_used`); this machine's are added by _with_this_machine."""
    return {
        "stated": stated,
        "snapshot": snapshot,
        "log": sorted(result.facts),
        "this_machine": False,
        "left_out_because": left_out or [],
    }


def _with_this_machine(
    result: scan.ScanResult, snap: Snapshot, used: dict[str, Any], stated: bool, target: Target | None = None
) -> tuple[Snapshot, dict[str, Any]]:
    """This machine's facts, of the Python environment `target` (default: cudoctor's own), added to
    `snap` when the log comes from this machine (explainer/whose.py); `used["python"]` says which."""
    from cudoctor.explainer import whose
    from cudoctor.facts import collect_live
    from cudoctor.facts.target import self_target

    target = self_target() if target is None else target
    live = collect_live(target=target)
    used["python"] = target.summary()
    differ = whose.differences({k: v for k, (_, v) in result.facts.items()}, evidence.excerpt(result), live)
    if differ:
        used["left_out_because"] = differ
        return snap, used
    used["this_machine"] = True
    return (snap.merged_with(live) if stated else live), used


def explain_text(
    text: str, stated: Mapping[str, Any], live: bool, target: Target | None = None
) -> dict[str, Any]:
    """What `cudoctor explain` prints as JSON for a text (the Python API's cudoctor.explain): the same
    steps, with this machine's facts (of the environment `target`, default cudoctor's own) when `live`
    and the text comes from this machine."""
    from cudoctor.facts.stated import from_stated

    result = scan.scan(io.BytesIO(text.encode("utf-8", "replace")))
    hint = guess_framework(result, stated)
    snap = from_stated(stated, hint)
    used = _facts_used(result, stated=bool(stated), snapshot=False, left_out=[] if live else ["live=False"])
    if live:
        snap, used = _with_this_machine(result, snap, used, stated=bool(stated), target=target)
    doc = to_json(_explained(result, snap, stated, hint, live=used["this_machine"]), hint)
    doc["facts_used"] = used
    return doc


def facts_line(used: dict[str, Any] | None) -> str:
    """One line saying whose facts ranked the causes."""
    if not used:
        return ""
    whose = [
        name
        for name, on in (
            ("this machine's", used["this_machine"]),
            ("stated", used["stated"]),
            ("the saved snapshot's", used["snapshot"]),
            ("the log's own", bool(used["log"])),
        )
        if on
    ]
    python = used.get("python")
    if used["this_machine"] and isinstance(python, dict):  # which environment "this machine's" describes
        whose[0] = f"this machine's ({_python_words(python)})"
    line = "Facts used: " + (", ".join(whose) if whose else "none")
    if used["left_out_because"] and used["left_out_because"] != ["--no-live"]:
        line += "; this machine's left out, the log comes from another: " + "; ".join(
            used["left_out_because"]
        )
    return line


def _python_words(python: Mapping[str, Any]) -> str:
    """'Python 3.9.18 at /home/u/envs/train, the active environment: VIRTUAL_ENV'."""
    from cudoctor.facts.target import CHOSEN_BY, SELF

    how = str(python.get("chosen_by") or "")
    how = CHOSEN_BY[SELF] if python.get("self") and how == SELF else CHOSEN_BY.get(how, how)
    return f"Python {python.get('version')} at {python.get('prefix') or python.get('executable')}, {how}"


def explain_output(
    text: str, live: bool = True, target: Target | None = None
) -> tuple[dict[str, Any], Snapshot]:
    """What `explain -` prints for a program's output, with this machine's facts of the Python
    environment `target` (default: cudoctor's own) when `live` (cudoctor run)."""
    result = scan.scan(io.BytesIO(text.encode("utf-8", "replace")))
    hint = guess_framework(result)
    snap: Snapshot = build_snapshot(None, None, live=live, framework_hint=hint, target=target)
    doc = to_json(_explained(result, snap, {}, hint, live=live), hint)
    if live and target is not None:
        doc["python"] = target.summary()
    return doc, snap


def to_brief(doc: dict[str, Any], causes: int = 3, steps: int = 2) -> str:
    """A few lines after a failed run: the root error, the first causes with their first steps."""
    root = doc["root"]
    if not shows_error(root) and not doc["causes"]:
        return ""
    lines = []
    if root and shows_error(root):
        lines.append(f"cudoctor: root error (line {root['line']}): {root['text'][:300]}")
    for i, c in enumerate(doc["causes"][:causes], 1):
        lines.append(f"cudoctor: {i}. {c['title']} [{c['id']}, confidence {c['confidence']:.2f}]")
        lines += [f"     fix: {s}" for s in c["fix"][:steps]]
    if doc["similar"]:
        s = doc["similar"][0]
        lines.append(f"cudoctor: most similar solved report ({s['score']:.2f}): {s['source']}")
    return "\n".join(lines) + "\n"


def explain_file(path: str, snap: Snapshot) -> dict[str, Any]:
    """A log file explained with the facts of `snap` (cudoctor report --log: the report's own facts)."""
    result = run_scan(path)
    hint = guess_framework(result)
    return to_json(_explained(result, snap, {}, hint), hint)
