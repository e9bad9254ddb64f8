"""Strings a regular expression matches, enumerated from its parse tree: every alternative, each
optional part present and absent, each repeat at its minimum and one more, each literal of a
class (else one representative character). Bounded, deterministic, and enough to show an alternative that no literal
anchor of a signature covers (the scanner's prefilter would hide every line it matches)."""

from __future__ import annotations

import itertools
import re
from typing import Any

try:  # Python 3.11+
    from re import _constants as c
    from re import _parser as parser
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as c  # type: ignore[no-redef]
    import sre_parse as parser  # type: ignore[no-redef]

LIMIT = 200
CATEGORY_CHAR = {
    c.CATEGORY_DIGIT: "0",
    c.CATEGORY_WORD: "a",
    c.CATEGORY_SPACE: " ",
    c.CATEGORY_NOT_DIGIT: "a",
    c.CATEGORY_NOT_WORD: " ",
    c.CATEGORY_NOT_SPACE: "a",
}


def samples(pattern: str) -> list[str]:
    """Up to LIMIT strings that `pattern` may match (check each with the regex: a representative
    character can fall outside a negated class)."""
    return _sequence(list(parser.parse(pattern, re.I)))


def unanchored(regex: re.Pattern[str], anchors: tuple[str, ...]) -> list[str]:
    """The samples `regex` matches that hold none of the (lowercase) anchors: lines the scanner's
    prefilter would hide from it."""
    return [
        text
        for text in samples(regex.pattern)
        if regex.search(text) and not any(a in text.lower() for a in anchors)
    ]


def _sequence(items: list[tuple[Any, Any]]) -> list[str]:
    outs = [""]
    for op, av in items:
        outs = [o + p for o in outs for p in _options(op, av)][:LIMIT]
    return outs


def _options(op: Any, av: Any) -> list[str]:
    if op is c.LITERAL:
        return [chr(av)]
    if op is c.NOT_LITERAL:
        return ["b" if av == ord("a") else "a"]
    if op is c.IN:
        return _class_chars(av)
    if op is c.BRANCH:
        return [s for branch in av[1] for s in _sequence(list(branch))]
    if op is c.SUBPATTERN:
        return _sequence(list(av[-1]))
    if op in (c.MAX_REPEAT, c.MIN_REPEAT):
        low, high, sub = av
        inner = _sequence(list(sub))[:3]
        counts = sorted({low, low + 1}) if high > low else [low]
        return ["".join(p) for n in counts for p in itertools.product(inner, repeat=n)][:12]
    if op is c.ANY:
        return ["x"]
    return [""]  # anchors (^, $, \b), lookarounds, back-references


def _class_chars(av: list[tuple[Any, Any]]) -> list[str]:
    """Each literal of a class (the parser folds GEMM|GEMV into GEM[MV]), else one representative."""
    if av and av[0][0] is c.NEGATE:
        banned = {chr(a) for o, a in av if o is c.LITERAL}
        return [next(ch for ch in "x_ 0" if ch not in banned)]
    literals = [chr(a) for o, a in av if o is c.LITERAL]
    if literals:
        return literals[:8]
    op, a = av[0]
    if op is c.RANGE:
        return [chr(a[0])]
    return [CATEGORY_CHAR.get(a, "a")]
