"""`cudoctor explain`: read the log, build the facts, rank the causes, build the document it prints
(render/explanation.py formats it)."""

from __future__ import annotations

import argparse
import io
import os
import re
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from cudoctor import knowledge, render, textfiles
from cudoctor.explainer import benign, evidence, logfacts, rank, scan
from cudoctor.facts.stated import KEYS as stated_keys
from cudoctor.fixes import scope
from cudoctor.inputs import InputError, build_snapshot
from cudoctor.model import Snapshot
from cudoctor.render.explanation import shows_error

if TYPE_CHECKING:
    from cudoctor.facts.target import Target

VENDORED_XLA = re.compile(r"external/org_tensorflow/\S*")
FRAMEWORK_HINTS = (
    (
        "torch",
        re.compile(
            r"\btorch\b|pytorch|libtorch|THC|c10|aten/|cublasGemm|cuDNN version incompatibility"
            r"|TORCH_USE_CUDA_DSA|CUDA kernel errors might be asynchronously reported"  # torch's own CUDA error advice
            r"|RuntimeError: (?:CUDA|cuDNN|CUBLAS) error: ",  # torch's C10_CUDA_CHECK / AT_CUDNN_CHECK wording
            re.I,
        ),
    ),
    (
        "tensorflow",
        # its device names as it prints them: PhysicalDevice(name='/physical_device:GPU:0'), /job:localhost/...
        re.compile(
            r"tensorflow|stream_executor|\bkeras\b|\[Op:|Failed to get convolution algorithm|/physical_device:"
            r"|/job:localhost/replica:",
            re.I,
        ),
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
    # an application built on one of them (knowledge/applications.toml), unless another CUDA library is named
    everything = text + "\n" + " ".join(str(v) for v in stated.values())
    if scope.framework_from_log(everything) is None:
        return knowledge.application_framework(everything)
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
    """The solved public reports most like this log, close enough to show; none for a log that holds
    nothing to explain."""
    if exp.learned is None or not exp.causes:
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
            "error_looking": exp.summary is not None
            or rank.looks_like_error(text)
            or rank.pasted_excerpt(exp.scan, exp.root_fallback, exp.learned),
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
    sys.stdout.write(render.emit("explain", args.format, doc, verbose=args.verbose))
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


def explain_file(path: str, snap: Snapshot) -> dict[str, Any]:
    """A log file explained with the facts of `snap` (cudoctor report --log: the report's own facts)."""
    result = run_scan(path)
    hint = guess_framework(result)
    return to_json(_explained(result, snap, {}, hint), hint)
