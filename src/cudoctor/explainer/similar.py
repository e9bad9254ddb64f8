"""The solved public reports most like a log: TF-IDF cosine over normalised tokens (explainer/tokens.py)
of each report's log excerpt and stated facts, against the root error, the lines around it and the
facts of the log being explained.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import math
from collections.abc import Iterable, Sequence

from cudoctor.explainer import corpus, tokens

SHOW_AT = 0.15  # below this cosine a report is not like this log: nothing is shown (cross-validated: docs/explain.md)
# a log of a few lines with no error in its words is explained as a solved report only when one is this close:
# healthy training lines ('epoch 1 loss 0.25') come within 0.40 of a solved NaN-loss report, a pasted advice
# line that is the error (vLLM's --dtype=half) within 0.69 of its reports; cross-validation moves by none at 0.25
EXCERPT_AT = 0.4
VOTE_K = 5  # reports whose causes vote


@dataclasses.dataclass(frozen=True)
class Hit:
    report: corpus.Report
    score: float


@dataclasses.dataclass
class Index:
    reports: Sequence[corpus.Report]
    idf: dict[str, float]
    postings: dict[str, list[tuple[int, float]]]  # token -> (report index, weight in its unit vector)


def _weights(toks: Iterable[str], idf: dict[str, float]) -> dict[str, float]:
    tf = collections.Counter(t for t in toks if t in idf)
    w = {t: (1.0 + math.log(f)) * idf[t] for t, f in tf.items()}
    norm = math.sqrt(sum(v * v for v in w.values())) or 1.0
    return {t: v / norm for t, v in w.items()}


def report_tokens(report: corpus.Report) -> list[str]:
    return tokens.tokens(report.log, report.context)


def build(reports: Sequence[corpus.Report]) -> Index:
    docs = [report_tokens(r) for r in reports]
    df = collections.Counter(t for d in docs for t in set(d))
    n = len(docs)
    idf = {t: math.log((n + 1) / (d + 1)) + 1.0 for t, d in df.items()}
    postings: dict[str, list[tuple[int, float]]] = collections.defaultdict(list)
    for i, d in enumerate(docs):
        for t, w in _weights(d, idf).items():
            postings[t].append((i, w))
    return Index(reports, idf, dict(postings))


@functools.cache
def shipped() -> Index:
    """The index over the shipped corpus (raises corpus.CorpusError when it cannot be read)."""
    return build(corpus.load())


def nearest(
    index: Index, toks: Iterable[str], k: int = 3, exclude: frozenset[str] = frozenset()
) -> list[Hit]:
    """The k reports most like these tokens, best first; reports from the threads in `exclude` are
    never returned (a case held out must not find itself)."""
    acc: dict[int, float] = collections.defaultdict(float)
    for t, w in _weights(toks, index.idf).items():
        for i, dw in index.postings.get(t, ()):
            acc[i] += w * dw
    ranked = sorted(acc.items(), key=lambda kv: -kv[1])
    hits: list[Hit] = []
    for i, s in ranked:
        report = index.reports[i]
        if exclude and report.thread in exclude:
            continue
        hits.append(Hit(report, round(s, 3)))
        if len(hits) == k:
            break
    return hits


def votes(hits: Sequence[Hit]) -> dict[str, float]:
    """Cause -> the similarity of the nearest reports that confirm it (first causes count whole, later
    ones half), over VOTE_K: five close reports that agree give a strong vote, one distant report a
    weak one."""
    acc: dict[str, float] = collections.defaultdict(float)
    for h in hits[:VOTE_K]:
        for j, cause in enumerate(h.report.causes):
            acc[cause] += h.score * (1.0 if j == 0 else 0.5)
    return dict(sorted(((c, v / VOTE_K) for c, v in acc.items()), key=lambda kv: -kv[1]))
