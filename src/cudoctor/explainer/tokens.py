"""Normalised tokens of a log excerpt and its facts: what the learned model and the similar-report
search compare, so that two reports of one failure look alike whatever their numbers, paths and
versions.

Numbers become `<num>` (short ones, such as a status code or a CUDA major, stay as they are),
hexadecimal addresses `<hex>`, dotted versions `<ver>`; words are lowercased; adjacent pairs are
kept as `a_b` (so "out of memory" is more than three common words); a stated fact's words carry a
`ctx:` prefix so "windows" in the facts and "windows" in the log count apart (the GPU, its compute
capability and the driver are left out).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping

TOKEN = re.compile(r"0x[0-9a-f]+|\d+(?:\.\d+)+|\d+|[a-z_][a-z0-9_]*")
STOP = frozenset(
    [
        "the",
        "a",
        "an",
        "to",
        "of",
        "in",
        "is",
        "it",
        "and",
        "or",
        "for",
        "on",
        "at",
        "this",
        "that",
        "be",
        "was",
        "with",
        "as",
        "by",
        "from",
        "are",
        "not",
        "no",
    ]
)
# The GPU and driver a report names say which machine, not which failure: the checks read them against
# the knowledge tables; as words they would only teach that people with new GPUs have problems.
FACT_KEYS_LEFT_OUT = frozenset({"gpu", "compute_capability", "driver"})
MAX_TEXT = 20_000  # characters of one excerpt looked at: the excerpt is the root error's context, never a log


def _norm(token: str) -> str:
    if token.startswith("0x"):
        return "<hex>"
    if token[0].isdigit():
        if "." in token:
            return "<ver>"
        return token if len(token) <= 2 else "<num>"
    return token


def words(text: str) -> list[str]:
    return [_norm(t) for t in TOKEN.findall(text[:MAX_TEXT].lower())]


def tokens(text: str, facts: Mapping[str, object] | None = None) -> list[str]:
    """Unigrams without stop words, adjacent pairs (one of them not a stop word), and the facts' words."""
    seq = words(text)
    out = [t for t in seq if t not in STOP]
    out += [f"{a}_{b}" for a, b in itertools.pairwise(seq) if a not in STOP or b not in STOP]
    for key, value in (facts or {}).items():
        if key not in FACT_KEYS_LEFT_OUT:
            out += [f"ctx:{t}" for t in words(str(value))]
    return out


def excerpt(lines: Iterable[tuple[int, str]], limit: int = 120) -> str:
    """One text from numbered lines, each line once, in log order, at most `limit` lines."""
    seen: dict[int, str] = {}
    for n, text in lines:
        seen.setdefault(n, text)
    return "\n".join(seen[n] for n in sorted(seen)[-limit:])
