"""What the learned model is trained on: every solved report of the shipped corpus (its log and
stated facts, labelled with its confirmed cause) and every signature example (labelled with the
signature's strongest cause). A held-out report's thread leaves with it, and so does every
signature example copied from its log or citing its thread, so a cross-validated figure never
counts a case the model has seen in any form.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from cudoctor.explainer import corpus, learned, signatures, tokens

GITHUB = re.compile(r"github\.com/([^/\s]+/[^/\s]+)/(?:issues|pull|discussions)/(\d+)", re.I)


def signature_examples() -> list[tuple[str, str, str]]:
    """(example line, the signature's strongest cause, its source) for every signature with causes."""
    out = []
    for sig in signatures.load():
        if not sig.causes or sig.is_context:
            continue
        cause = max(sig.causes.items(), key=lambda kv: kv[1])[0]
        out += [(ex, cause, sig.source) for ex in sig.examples if ex.strip()]
    return out


def cites(source: str, report: corpus.Report) -> bool:
    """Whether a signature's source names the report's thread (its URL, or owner/repo#N)."""
    src = source.lower()
    if report.thread in src:
        return True
    m = GITHUB.search(report.source)
    return m is not None and f"{m.group(1)}#{m.group(2)}".lower() in src


def example_taints(text: str, source: str, held_out: corpus.Report) -> bool:
    """Whether a signature example (or the signature it belongs to) came from the held-out report:
    copied from its log, or citing its thread."""
    return text.strip() in held_out.log or cites(source, held_out)


def docs(
    reports: Iterable[corpus.Report],
    examples: Iterable[tuple[str, str, str]],
    held_out: corpus.Report | None = None,
) -> list[tuple[list[str], str]]:
    """Token documents with their cause, without anything from the held-out report's thread."""
    out = []
    for r in reports:
        if held_out is not None and r.thread == held_out.thread:
            continue
        out.append((tokens.tokens(r.log, r.context), r.causes[0]))
    for text, cause, source in examples:
        if held_out is not None and example_taints(text, source, held_out):
            continue
        out.append((tokens.tokens(text), cause))
    return out


def stamp() -> str:
    """The digest of everything the model is trained on: the corpus and the signatures."""
    data = b""
    for path in signatures.files():  # in the order they are read: names and contents
        with open(path, "rb") as fh:
            data += os.path.basename(path).encode() + b"\0" + fh.read()
    return corpus.stamp(data)


def train_both(documents: list[tuple[list[str], str]], stamp: str = "") -> learned.Model:
    """The counts and, beside them, the logistic regression over the same shipped tokens (needs numpy
    and scipy: training only)."""
    from cudoctor.explainer import fit

    model = learned.train(documents, stamp=stamp, min_df=learned.MIN_DF)
    model.weights, model.bias = fit.fit(documents, sorted(model.df), model.classes)
    return model


def train_shipped(regression: bool = True) -> learned.Model:
    documents = docs(corpus.load(), signature_examples())
    if regression:
        return train_both(documents, stamp())
    return learned.train(documents, stamp=stamp(), min_df=learned.MIN_DF)
