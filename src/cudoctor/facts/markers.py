"""PEP 508 environment markers ('platform_system == "Linux" and python_version < "3.13"'),
evaluated for this interpreter without importing `packaging` (not a dependency of cudoctor).

Extras cannot be known after the fact: pip does not record which extras were asked for. A
requirement under an extra ('extra == "and-cuda"') is taken to hold; the caller only uses it
when the package it names is installed, which is what installing the extra would have done.
"""

from __future__ import annotations

import os
import platform
import re
import sys
from collections.abc import Callable, Mapping

from cudoctor import versions

VERSION_VARS = {"python_version", "python_full_version", "implementation_version"}
_TOKEN = re.compile(
    r"""\s*(?:(?P<str>'[^']*'|"[^"]*")|(?P<op>===|==|!=|<=|>=|~=|<|>|not\s+in\b|in\b)"""
    r"""|(?P<paren>[()])|(?P<word>[A-Za-z_][A-Za-z0-9_.]*))"""
)


_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}


class MarkerError(ValueError):
    pass


def environment() -> dict[str, str]:
    """The marker variables of the running interpreter."""
    impl = sys.implementation
    return {
        "os_name": os.name,
        "sys_platform": sys.platform,
        "platform_system": platform.system(),
        "platform_machine": platform.machine(),
        "platform_release": platform.release(),
        "platform_python_implementation": platform.python_implementation(),
        "python_version": "{}.{}".format(*sys.version_info[:2]),
        "python_full_version": platform.python_version(),
        "implementation_name": impl.name,
        "implementation_version": "{}.{}.{}".format(*impl.version[:3]),
    }


def holds(marker: str, env: Mapping[str, str]) -> bool | None:
    """Whether `marker` is true in `env`; None when it cannot be read (the caller skips it)."""
    try:
        tokens = _tokens(marker)
        value, rest = _or(tokens, env)
    except MarkerError:
        return None
    return value if not rest else None


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text.rstrip()):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise MarkerError(f"cannot read marker at {text[pos:]!r}")
        kind = m.lastgroup or ""
        out.append((kind, " ".join((m.group(kind) or "").split())))
        pos = m.end()
    return out


Tokens = list[tuple[str, str]]


def _or(tokens: Tokens, env: Mapping[str, str]) -> tuple[bool, Tokens]:
    return _chain(tokens, env, "or", _and)


def _and(tokens: Tokens, env: Mapping[str, str]) -> tuple[bool, Tokens]:
    return _chain(tokens, env, "and", _atom)


def _chain(
    tokens: Tokens,
    env: Mapping[str, str],
    word: str,
    operand: Callable[[Tokens, Mapping[str, str]], tuple[bool, Tokens]],
) -> tuple[bool, Tokens]:
    """operand (word operand)*, where `word` is 'and' or 'or' (and binds tighter: _or chains _and)."""
    value, tokens = operand(tokens, env)
    while tokens and tokens[0] == ("word", word):
        right, tokens = operand(tokens[1:], env)
        value = (value or right) if word == "or" else (value and right)
    return value, tokens


def _atom(tokens: Tokens, env: Mapping[str, str]) -> tuple[bool, Tokens]:
    if tokens[:1] == [("paren", "(")]:
        value, rest = _or(tokens[1:], env)
        if rest[:1] != [("paren", ")")]:
            raise MarkerError("unbalanced parentheses")
        return value, rest[1:]
    if len(tokens) < 3 or tokens[1][0] != "op":
        raise MarkerError("expected <variable> <op> <value>")
    (lkind, left), (_, op), (rkind, right) = tokens[:3]
    if "word" in (lkind, rkind) and "extra" in (left, right):
        return True, tokens[3:]
    return _compare(_value(lkind, left, env), op, _value(rkind, right, env), left, right), tokens[3:]


def _value(kind: str, text: str, env: Mapping[str, str]) -> str:
    if kind == "str":
        return text[1:-1]
    if kind == "word" and text in env:
        return env[text]
    raise MarkerError(f"unknown marker variable {text!r}")


def _compare(left: str, op: str, right: str, lname: str, rname: str) -> bool:
    if op == "in":
        return left in right
    if op == "not in":
        return left not in right
    if lname in VERSION_VARS or rname in VERSION_VARS:
        have, spec = (left, op + right) if lname in VERSION_VARS else (right, _FLIP.get(op, op) + left)
        verdict = versions.satisfies(have, spec)
        if verdict is not None:
            return verdict
    if op in ("==", "==="):
        return left == right
    if op == "!=":
        return left != right
    raise MarkerError(f"cannot compare {left!r} {op} {right!r}")
