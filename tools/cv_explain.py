#!/usr/bin/env python3
"""Held-out figures for `cudoctor explain` over the shipped corpus (threads held out, never a report alone).

    python tools/cv_explain.py [--show-misses] [--only ID,...] [--folds 10] [--by thread|round]

For each report, everything from its thread is held out: the learned model (naive Bayes and logistic
regression, as shipped) is trained per fold of threads (--folds, 10) without the fold's reports and
without the signature examples copied from their logs or citing them; the similar-report search skips
the thread; and, for the "signatures held out" rows, the matches of every
signature one of whose examples was copied from the report's log or whose source cites its thread
are dropped (the signature was written for that case, so it does not count as generalising to it).
With --by round, a whole gathering round is held out instead of a thread (the reports of one `rNN-` prefix:
the model is trained without its round's fold, the search skips every thread of the round, and every signature
written from any of its reports is dropped); only the rounds' reports are scored (the 312 early rows with
descriptive ids always train). A round is one topic gathered at one time, so this is the figure nearest to
what a blind round scores. In-sample rows are printed beside them. Stated facts only (no live facts), like
shared/eval/score_explain.py. Figures: top1 (confirmed cause first), top3, none (no cause at all).
"""

from __future__ import annotations

import argparse
import collections
import io
import os
import re
import sys
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))

from cudoctor.explainer import (
    command,
    corpus,
    evidence,
    learned,
    logfacts,
    rank,
    scan,
    signatures,
    similar,
    tokens,
    training,
)
from cudoctor.facts.stated import from_stated


class Tally:
    def __init__(self) -> None:
        self.top1 = self.top3 = self.none = self.n = 0
        self.misses: list[str] = []
        self.shown = self.first_right = 0  # similar reports: any shown; the first carries the cause

    def similar(self, case: corpus.Report, hits: list[similar.Hit]) -> None:
        if hits:
            self.shown += 1
            self.first_right += case.causes[0] in hits[0].report.causes

    def add(self, case: corpus.Report, ranked: list[str]) -> None:
        truth = case.causes[0]
        self.n += 1
        self.top1 += bool(ranked) and ranked[0] == truth
        self.top3 += truth in ranked[:3]
        self.none += not ranked
        if not ranked or ranked[0] != truth:
            self.misses.append(f"{case.id}: want {truth}, got {ranked[:3]}")

    def line(self, name: str) -> str:
        n = self.n or 1
        text = f"{name:44s} top1={self.top1 / n:.3f} top3={self.top3 / n:.3f} none={self.none / n:.3f} n={self.n}"
        if self.shown:
            text += f" similar_shown={self.shown / n:.3f} first_similar_right={self.first_right / n:.3f}"
        return text


def tainted_signatures(case: corpus.Report) -> set[str]:
    return {
        sig.id
        for sig in signatures.load()
        if any(training.example_taints(ex, sig.source, case) for ex in sig.examples if ex.strip())
        or training.cites(sig.source, case)
    }


def explain_ids(case: corpus.Report, drop: set[str], ev: evidence.Evidence | None) -> list[str]:
    result = scan.scan(io.BytesIO(case.log.encode("utf-8")))
    result.matches = [m for m in result.matches if m.sig.id not in drop]
    hint = command.guess_framework(result, case.context)
    snap = logfacts.fill(from_stated(case.context, hint), result.facts, hint)
    exp = rank.explain(result, snap, other=str(case.context.get("other", "")), learned=ev)
    return [c.id for c in exp.causes[:5]]


ROUND = re.compile(r"(r\d+[a-z]?)-")


def round_of(report: corpus.Report) -> str:
    """The gathering round a report came from (its id's `rNN-` prefix), or "" for the early rows."""
    m = ROUND.match(report.id)
    return m.group(1) if m else ""


def group_of(report: corpus.Report) -> str:
    """What is held out together: the report's round under --by round, else its thread."""
    return (BY_ROUND and round_of(report)) or report.thread


BY_ROUND = False
HELD = "thread"  # what the printed rows say is held out


def fold_of(report: corpus.Report, folds: int) -> int:
    """A report's fold, by its thread (or its round, --by round): a group is held out together."""
    return zlib.crc32(group_of(report).encode("utf-8")) % folds


def fold_models(
    reports: tuple[corpus.Report, ...],
    report_toks: list[tuple[corpus.Report, list[str]]],
    example_toks: list[tuple[str, str, str, list[str]]],
    folds: int,
) -> dict[int, learned.Model]:
    """One model per fold (counts and regression, as shipped), trained without that fold's threads and
    without the signature examples copied from or citing any of them."""
    models = {}
    for f in range(folds):
        held = [r for r in reports if fold_of(r, folds) == f]
        docs = [(t, r.causes[0]) for r, t in report_toks if fold_of(r, folds) != f]
        docs += [
            (t, cause)
            for text, cause, source, t in example_toks
            if not any(training.example_taints(text, source, h) for h in held)
        ]
        models[f] = training.train_both(docs)
        print(f"... fold {f + 1}/{folds} trained", file=sys.stderr)
    return models


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--show-misses", action="store_true")
    ap.add_argument(
        "--folds",
        type=int,
        default=10,
        help="folds of threads for the learned model (its regression takes seconds to fit, so not one per "
        "report); the similar-report search still leaves out only the report's own thread (default 10)",
    )
    ap.add_argument("--only", default="", help="comma-separated report ids")
    ap.add_argument(
        "--by",
        choices=("thread", "round"),
        default="thread",
        help="hold out each report's thread (default) or its whole gathering round (the figure nearest a blind round)",
    )
    ap.add_argument(
        "--blind",
        metavar="FILE",
        help="score the shipped model, corpus and signatures on reports they never held (a JSONL file "
        "in the corpus format) instead of cross-validating",
    )
    args = ap.parse_args()
    if args.blind:
        return blind(args.blind, args.show_misses)
    global BY_ROUND
    BY_ROUND = args.by == "round"
    global HELD
    HELD = args.by
    reports = corpus.load()
    only = {x for x in args.only.split(",") if x}
    cases = [r for r in reports if (not only or r.id in only) and (not BY_ROUND or round_of(r))]
    members: dict[str, list[corpus.Report]] = collections.defaultdict(list)
    for r in reports:
        members[group_of(r)].append(r)
    dropped: dict[str, set[str]] = {}
    examples = training.signature_examples()
    report_toks = [(r, tokens.tokens(r.log, r.context)) for r in reports]
    example_toks = [(text, cause, source, tokens.tokens(text)) for text, cause, source in examples]
    index = similar.build(reports)
    full_model = training.train_shipped()
    models = fold_models(reports, report_toks, example_toks, args.folds)
    tallies: dict[str, Tally] = collections.defaultdict(Tally)
    started = time.monotonic()
    for i, case in enumerate(cases, 1):
        model = models[fold_of(case, args.folds)]
        result = scan.scan(io.BytesIO(case.log.encode("utf-8")))
        group = members[group_of(case)]
        held = evidence.gather(result, case.context, model, index, frozenset(r.thread for r in group))
        seen = evidence.gather(result, case.context, full_model, index)
        tallies[f"learned alone, {HELD} held out"].add(case, list(held.distribution)[:5])
        tallies[f"similar reports alone, {HELD} held out"].add(case, list(similar.votes(held.hits))[:5])
        if group_of(case) not in dropped:
            dropped[group_of(case)] = set().union(*(tainted_signatures(r) for r in group))
        drop = dropped[group_of(case)]
        tallies["signatures (in-sample)"].add(case, explain_ids(case, set(), None))
        tallies["signatures + learned (in-sample)"].add(case, explain_ids(case, set(), seen))
        tallies["signatures in-sample + learned held out"].add(case, explain_ids(case, set(), held))
        tallies["signatures held out"].add(case, explain_ids(case, drop, None))
        ids = explain_ids(case, drop, held)
        tallies["signatures + learned, all held out"].add(case, ids)
        tallies["signatures + learned, all held out"].similar(case, held.shown(ids[0] if ids else None))
        if i % 50 == 0:
            print(f"... {i}/{len(cases)} in {time.monotonic() - started:.0f} s", file=sys.stderr)
    for name, tally in tallies.items():
        print(tally.line(name))
        if args.show_misses:
            for miss in tally.misses:
                print(f"    {miss}")
    return 0


def blind(path: str, show_misses: bool) -> int:
    """explain as shipped (stated facts only) on unseen reports: causes, root line, similar reports."""
    import json

    with open(path, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    tally, roots, root_hits = Tally(), 0, 0
    for row in rows:
        case = corpus._row(row)
        doc = command.explain_stated(case.log, case.context)  # what the CLI prints with --no-live
        tally.add(case, [c["id"] for c in doc["causes"]])
        tally.shown += bool(doc["similar"])
        tally.first_right += bool(doc["similar"]) and case.causes[0] in doc["similar"][0]["causes"]
        if row.get("root_line"):
            roots += 1
            got = (doc["root"] or {}).get("text", "").strip()
            want = row["root_line"].strip()
            root_hits += bool(got) and (want in got or got in want)
    print(
        tally.line(f"blind: {os.path.basename(path)}") + (f" root={root_hits / roots:.3f}" if roots else "")
    )
    if show_misses:
        for miss in tally.misses:
            print(f"    {miss}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
