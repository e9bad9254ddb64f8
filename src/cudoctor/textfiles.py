"""Text as Windows writes it: UTF-16 files (PowerShell 5's `>` and Out-File) and UTF-8 with a BOM.

Shared by the log scanner and the report and facts readers, which otherwise take UTF-8.
"""

from __future__ import annotations

import json
from typing import Any


def utf16_encoding(head: bytes) -> str | None:
    """'utf-16' for bytes that start with a UTF-16 byte-order mark, 'utf-16-le' for text without
    one whose every other byte is NUL (ASCII written as UTF-16LE), else None."""
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "utf-16"
    odd = head[1::2]
    if len(odd) >= 8 and odd.count(0) >= 0.9 * len(odd) and head[0::2].count(0) == 0:
        return "utf-16-le"
    return None


def decode(raw: bytes, errors: str = "replace") -> str:
    """A whole file's text: UTF-16 where it is that, else UTF-8 (a leading BOM dropped)."""
    return raw.decode(utf16_encoding(raw[:512]) or "utf-8-sig", errors)


MAX_JSON_DEPTH = 64  # cudoctor's own documents nest 6 levels; facts files 1
MAX_JSON_DIGITS = 100  # a number longer than this is no fact of a machine


class JSONInputError(ValueError):
    """JSON from outside that cudoctor will not read: one line, no traceback."""


def load_json(text: str | bytes) -> Any:
    """json.loads for what a person or another machine gives cudoctor: invalid JSON, nesting
    deeper than MAX_JSON_DEPTH and numbers longer than MAX_JSON_DIGITS raise JSONInputError with
    one line (never a RecursionError, nor Python's error for int() of a long string)."""
    try:
        data = json.loads(text, parse_int=_int, parse_float=_float)
    except RecursionError:
        raise JSONInputError(f"nested deeper than {MAX_JSON_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise JSONInputError(f"not valid JSON ({exc.msg} at line {exc.lineno})") from None
    _check_depth(data)
    return data


def _int(text: str) -> int:
    if len(text) > MAX_JSON_DIGITS:
        raise JSONInputError(f"a number of {len(text)} digits")
    return int(text)


def _float(text: str) -> float:
    if len(text) > MAX_JSON_DIGITS:
        raise JSONInputError(f"a number of {len(text)} characters")
    return float(text)


def _check_depth(data: Any) -> None:
    stack = [(data, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise JSONInputError(f"nested deeper than {MAX_JSON_DEPTH} levels")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
