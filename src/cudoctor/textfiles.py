"""Text as Windows writes it: UTF-16 files (PowerShell 5's `>` and Out-File) and UTF-8 with a BOM.

Shared by the log scanner and the report and facts readers, which otherwise take UTF-8.
"""

from __future__ import annotations


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
