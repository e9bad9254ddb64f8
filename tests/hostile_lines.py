"""Lines crafted to make a backtracking regular expression slow: for a pattern and the literal
anchors that let a line reach it, long runs of the characters its classes take (letters, words
with spaces, dotted numbers, paths, ...) around an anchor, and prefixes of strings it matches
repeated up to a line's length. A pattern that is linear in the line stays near a millisecond on
every one of them; one that backtracks (an unanchored `\\S*X`, a lazy `.*?` per occurrence) takes
tens. Used by tests/explainer/test_pattern_time.py and `python bench/run.py patterns`."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence

from tests import regex_samples

LENGTH = 2000  # the characters of a line the scanner keeps and matches (scan.KEEP_LINE)
UNITS = ("a", "a ", "a.", "1.", "/a", "-a", " ", "a_", "A:", "(a", "'a", "0x1", "a\t", "\\a", "a,")


def _run(unit: str, length: int) -> str:
    return (unit * (length // len(unit) + 1))[:length]


def lines(regex: re.Pattern[str], anchors: Sequence[str], examples: Sequence[str] = ()) -> Iterator[str]:
    """Crafted lines for one pattern: each fits in LENGTH characters plus one anchor."""
    hooks = list(anchors[:3]) or [""]
    for hook in hooks:
        for unit in UNITS:
            run = _run(unit, LENGTH)
            yield run + hook
            yield hook + run
            yield run[: LENGTH // 2] + hook + run[: LENGTH // 2]
        if hook:
            yield _run(hook, LENGTH)
    matching = [e[:400] for e in examples[:4]] or regex_samples.samples(regex.pattern)[:4]
    for text in matching:
        for cut in {len(text) // 4, len(text) // 2, 3 * len(text) // 4, len(text) - 1}:
            if cut > 0:
                yield _run(text[:cut], LENGTH) + hooks[0]


def worst(regex: re.Pattern[str], anchors: Sequence[str], examples: Sequence[str] = ()) -> tuple[float, str]:
    """The slowest crafted line for a pattern: (seconds of one search, the line). A search over a
    millisecond is timed again and its fastest run kept: a busy machine's preemption is not the
    pattern's cost (a backtracking one is slow every time)."""
    slowest, line_of = 0.0, ""
    for line in lines(regex, anchors, examples):
        took = _timed(regex, line)
        if took > 0.001:
            took = min(took, *(_timed(regex, line) for _ in range(4)))
        if took > 0.004:  # still slow: on a loaded machine, retry between the other processes' slices
            for _ in range(20):
                time.sleep(0.002)
                took = min(took, _timed(regex, line))
        if took > slowest:
            slowest, line_of = took, line
    return slowest, line_of


def _timed(regex: re.Pattern[str], line: str) -> float:
    start = time.perf_counter()
    regex.search(line)
    return time.perf_counter() - start
