"""Small, forgiving version helpers (no dependency on `packaging`)."""

from __future__ import annotations

import re

# a version's parts have at most 18 digits: longer runs of digits are not versions (and a run of
# thousands of them must cost neither time nor Python's limit on int() of long strings)
_NUM = re.compile(r"(?<!\d)\d{1,18}(?:\.\d{1,18}(?!\d))*(?!\d)")

Version = tuple[int, ...]


def parse(text: str | None) -> Version | None:
    """First dotted number in `text`: '2.5.1+cu124' -> (2, 5, 1); None when there is none."""
    if not text:
        return None
    m = _NUM.search(str(text))
    return tuple(int(p) for p in m.group(0).split(".")) if m else None


LARGE = 10**18  # what a number of more than 18 digits in a report or a log is read as


def integer(digits: str) -> int:
    """int() for digits read from text a person gives cudoctor: a run of more than 18 digits is read
    as LARGE (never Python's error for int() of a long string, nor its quadratic time)."""
    text = digits.strip()
    sign = -1 if text.startswith("-") else 1
    significant = text.lstrip("+-").lstrip("0")  # Python's limit counts leading zeros too
    return sign * LARGE if len(significant) > 18 else sign * int(significant or "0")


def fmt(v: Version | None) -> str:
    return ".".join(str(p) for p in v) if v else "?"


def major_minor(text: str | None) -> Version | None:
    v = parse(text)
    if v is None:
        return None
    return (v[0], v[1] if len(v) > 1 else 0)


def cmp(a: Version, b: Version) -> int:
    """Compare padding with zeros: (12,) == (12, 0)."""
    n = max(len(a), len(b))
    pa = a + (0,) * (n - len(a))
    pb = b + (0,) * (n - len(b))
    return (pa > pb) - (pa < pb)


def at_least(a: Version, b: Version) -> bool:
    return cmp(a, b) >= 0


def in_range(v: Version, low: str, high: str) -> bool:
    """low <= v <= high, comparing only as many parts as each bound gives ('2.1'-'2.3' holds 2.3.1)."""
    lo = parse(low)
    hi = parse(high)
    if lo is None or hi is None:
        return False
    return cmp(v[: len(lo)], lo) >= 0 and cmp(v[: len(hi)], hi) <= 0


def cuda_from_int(value: int) -> str:
    """12040 -> '12.4' (the encoding cudaDriverGetVersion and 'found version' use)."""
    return f"{value // 1000}.{(value % 1000) // 10}"


def cudnn_from_int(value: str | None) -> str | None:
    """cuDNN's integer version: 8401 -> '8.4.1' (before 9: major*1000), 90100 -> '9.1.0'."""
    if not value or not value.isascii() or not value.isdigit() or len(value) > 9:
        return None
    n = int(value)
    major, rest = (n // 10000, n % 10000) if n >= 90000 else (n // 1000, n % 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


def cuda_from_variant(tag: str) -> str | None:
    """'cu124' -> '12.4', 'cu118' -> '11.8', 'cu90' -> '9.0', 'cu130' -> '13.0'."""
    m = re.fullmatch(r"cu(\d{2,3})", tag.strip().lower())
    if not m:
        return None
    digits = m.group(1)
    if len(digits) == 2:
        return f"{digits[0]}.{digits[1]}"
    major = digits[:-1] if digits[0] == "1" else digits[0]
    return f"{major}.{digits[len(major) :] or '0'}"


# TensorFlow 1.x's device line: 'major: 3 minor: 0 memoryClockRate(GHz): 0.797'
TF_CC = re.compile(r"\bmajor:\s*(\d{1,2})\s*,?\s*minor:\s*(\d)\b")


def cc_tuple(cc: str | None) -> Version | None:
    """'8.6' or 'sm_86' or '86' -> (8, 6); '12.0'/'sm_120' -> (12, 0); 'major: 3 minor: 0' -> (3, 0)."""
    if not cc:
        return None
    text = str(cc).strip().lower()
    if len(text) > 64:  # '8.6', 'sm_90a', 'NVIDIA H100 (9.0)': never long
        return None
    m = re.search(r"(?<!\d)(\d{1,3})\.(\d{1,3})(?!\d)", text) or TF_CC.search(text)
    if m:
        return (int(m.group(1)), int(m.group(2)))
    m = re.search(r"(?:sm_|compute_|(?<!\d))(\d{2,3})[af]?$", text)
    if m:
        digits = m.group(1)
        return (int(digits[:-1]), int(digits[-1]))
    return None


def cc_str(cc: Version) -> str:
    return f"{cc[0]}.{cc[1]}"


_CLAUSE = re.compile(r"^\s*(===|==|!=|~=|>=|<=|>|<)\s*([\w.*+!-]+)\s*$")


def satisfies(version: str, spec: str) -> bool | None:
    """Does `version` meet a PEP 440 specifier such as '==2.13.0' or '>=0.4.27,<=0.4.30'?
    Compares release numbers only (a local tag like '+cu121' is ignored); None: cannot tell."""
    have = parse(version)
    if have is None:
        return None
    for clause in filter(str.strip, spec.split(",")):
        m = _CLAUSE.match(clause)
        want = parse(m.group(2)) if m else None
        if m is None or want is None:
            return None
        op, wildcard = m.group(1), m.group(2).endswith(".*")
        c = cmp(have[: len(want)] if wildcard else have, want)
        ok = {
            "==": c == 0,
            "===": c == 0,
            "!=": c != 0,
            ">=": c >= 0,
            "<=": c <= 0,
            ">": c > 0,
            "<": c < 0,
            "~=": c >= 0 and cmp(have[: len(want) - 1], want[:-1]) == 0,
        }[op]
        if not ok:
            return False
    return True


def floor(spec: str) -> tuple[str, str] | None:
    """The lowest version a specifier accepts and how it asks for it: '==12.4.127' ->
    ('==', '12.4.127'); '<10.0,>=9.8' -> ('>=', '9.8'); '<13' -> None."""
    floors: list[tuple[str, str]] = []
    for clause in (c.strip() for c in spec.split(",")):
        for op in ("==", ">=", "~=", ">"):
            if clause.startswith(op) and not clause.startswith("==="):
                value = clause[len(op) :].strip()
                if parse(value) and not value.endswith("*"):
                    floors.append(("==" if op == "==" else ">=", value))
                break
    return max(floors, key=lambda f: parse(f[1]) or ()) if floors else None
