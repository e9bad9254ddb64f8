"""Learned evidence: a cause distribution for a log excerpt from a model trained on the shipped
corpus of solved reports and on every signature's examples.

The model is a naive Bayes over document frequencies: for each cause, how many of its training
documents hold each token. A query scores each cause by the idf-weighted log-likelihood of its
tokens, averaged over the tokens the model knows, and a softmax turns the scores into a
distribution. Counts (not weights) are what ships, so training is counting and a held-out fold is
the same code on fewer documents (tools/cv_explain.py). Trained by tools/train_explain_model.py;
the file is stamped with the corpus and signatures it came from (a test keeps the two in step).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import gzip
import json
import math
import os
from collections.abc import Iterable, Mapping
from typing import Any

PATH = os.path.join(os.path.dirname(os.path.dirname(__file__)), "knowledge", "explain_model.json.gz")
ALPHA = 0.1  # smoothing
PRIOR = 0.3  # how much a cause's share of the training documents counts
SCALE = 4.0  # softmax sharpness over per-token average scores
MIN_DF = 2  # a token seen in one document cannot generalise; it is not shipped
BLEND = 0.5  # the regression's share of the distribution, where the model has one


class ModelError(Exception):
    """The model file is missing, unreadable, or not a model (the message is one line)."""


@dataclasses.dataclass
class Model:
    classes: list[str]
    docs: list[int]  # training documents per cause
    totals: list[int]  # token occurrences (one per document) per cause
    df: dict[str, int]  # documents holding each token
    counts: dict[str, dict[int, int]]  # token -> cause index -> documents of that cause holding it
    stamp: str = ""
    # the logistic regression beside the counts (explainer/fit.py): token -> cause index -> weight
    weights: dict[str, dict[int, float]] = dataclasses.field(default_factory=dict)
    bias: list[float] = dataclasses.field(default_factory=list)

    @property
    def n(self) -> int:
        return sum(self.docs)


def train(docs: Iterable[tuple[Iterable[str], str]], stamp: str = "", min_df: int = 1) -> Model:
    """Count (tokens, cause) documents; each token counts once per document."""
    classes: dict[str, int] = {}
    per_class: list[int] = []
    totals: list[int] = []
    df: collections.Counter[str] = collections.Counter()
    counts: dict[str, dict[int, int]] = collections.defaultdict(dict)
    for toks, cause in docs:
        ci = classes.setdefault(cause, len(classes))
        if ci == len(per_class):
            per_class.append(0)
            totals.append(0)
        seen = set(toks)
        per_class[ci] += 1
        totals[ci] += len(seen)
        df.update(seen)
        for t in seen:
            row = counts[t]
            row[ci] = row.get(ci, 0) + 1
    keep = {t for t, d in df.items() if d >= min_df}
    return Model(
        classes=list(classes),
        docs=per_class,
        totals=totals,
        df={t: df[t] for t in keep},
        counts={t: counts[t] for t in keep},
        stamp=stamp,
    )


def scores(model: Model, toks: Iterable[str]) -> dict[str, float]:
    """Each cause's average idf-weighted log-likelihood per known token, plus its prior."""
    n = model.n
    vocab = len(model.df) or 1
    known = [t for t in set(toks) if model.df.get(t)]
    weight = sum(math.log(n / model.df[t]) for t in known) or 1.0
    out = {}
    for ci, cause in enumerate(model.classes):
        total = model.totals[ci] + ALPHA * vocab
        s = 0.0
        for t in known:
            s += math.log(n / model.df[t]) * math.log((model.counts[t].get(ci, 0) + ALPHA) / total)
        out[cause] = s / weight + PRIOR * math.log(model.docs[ci] / n) / max(1, len(known))
    return out


def _softmax(raw: Mapping[str, float], scale: float = 1.0) -> dict[str, float]:
    top = max(raw.values())
    exp = {c: math.exp(scale * (s - top)) for c, s in raw.items()}
    z = sum(exp.values())
    return {c: e / z for c, e in exp.items()}


def regression(model: Model, toks: Iterable[str]) -> dict[str, float]:
    """The logistic regression's probabilities (empty when the model has none)."""
    if not model.bias:
        return {}
    z = list(model.bias)
    for t in set(toks):
        for ci, w in model.weights.get(t, {}).items():
            z[ci] += w
    return _softmax(dict(zip(model.classes, z, strict=True)))


def distribution(model: Model, toks: Iterable[str]) -> dict[str, float]:
    """Cause -> probability, best first: the naive Bayes and the regression averaged (BLEND); empty
    when the excerpt holds no token the model knows."""
    toks = list(toks)
    if not any(model.df.get(t) for t in toks):
        return {}
    probs = _softmax(scores(model, toks), SCALE)
    lr = regression(model, toks)
    if lr:
        probs = {c: (1 - BLEND) * p + BLEND * lr[c] for c, p in probs.items()}
    return dict(sorted(probs.items(), key=lambda kv: -kv[1]))


def to_json(model: Model) -> dict[str, Any]:
    return {
        "format": 2,
        "stamp": model.stamp,
        "bias": model.bias,
        "weights": {t: sorted(model.weights[t].items()) for t in sorted(model.weights)},
        "classes": model.classes,
        "docs": model.docs,
        "totals": model.totals,
        "tokens": {t: [model.df[t], sorted(model.counts[t].items())] for t in sorted(model.df)},
    }


def from_json(data: Mapping[str, Any]) -> Model:
    try:
        if data.get("format") not in (1, 2):
            raise ModelError(f"unknown model format {data.get('format')!r}")
        tokens = data["tokens"]
        return Model(
            classes=[str(c) for c in data["classes"]],
            docs=[int(d) for d in data["docs"]],
            totals=[int(t) for t in data["totals"]],
            df={t: int(v[0]) for t, v in tokens.items()},
            counts={t: {int(ci): int(k) for ci, k in v[1]} for t, v in tokens.items()},
            stamp=str(data.get("stamp", "")),
            weights={t: {int(ci): float(w) for ci, w in v} for t, v in data.get("weights", {}).items()},
            bias=[float(b) for b in data.get("bias", [])],
        )
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise ModelError(f"not a cudoctor model: {exc!r}") from None


def save(model: Model, path: str | None = None) -> None:
    path = path or PATH
    text = json.dumps(to_json(model), separators=(",", ":"), sort_keys=True)
    with gzip.GzipFile(path, "wb", mtime=0) as fh:  # mtime 0: the same model gives the same bytes
        fh.write(text.encode("utf-8"))


def load(path: str | None = None) -> Model:
    """The shipped model (or the one at `path`); raises ModelError with one line when it cannot be read."""
    return _load(path or PATH)


@functools.cache
def _load(path: str) -> Model:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, EOFError, ValueError) as exc:
        raise ModelError(f"{os.path.basename(path)}: {exc}") from None
    if not isinstance(data, dict):
        raise ModelError(f"{os.path.basename(path)}: not a cudoctor model")
    return from_json(data)
