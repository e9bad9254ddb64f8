"""How a torch release reads PYTORCH_CUDA_ALLOC_CONF: the options it would refuse when CUDA starts,
read from the rows of torch_alloc_conf.toml (which release knows which key, how each value is read).

`problems(value, version, variable)` reads a whole setting; `key_problem(key, version, variable)`
says why a release refuses one key (the check and explain share the wording)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from cudoctor import versions
from cudoctor.knowledge import table

Version = versions.Version


@dataclasses.dataclass(frozen=True)
class Problem:
    text: str  # what the release refuses and why
    fix: str  # the step that makes it read


def rows() -> list[dict[str, Any]]:
    return list(table("torch_alloc_conf")["key"])


def key_row(name: str) -> dict[str, Any] | None:
    return next((row for row in rows() if row["name"] == name), None)


def variables() -> list[dict[str, Any]]:
    return list(table("torch_alloc_conf")["variable"])


def reads(since: str, version: Version | None) -> bool | None:
    """Whether a release reads what came in `since` (None when the release is unknown)."""
    floor = versions.parse(since)
    if version is None or floor is None:
        return None
    return versions.at_least(version, floor)


def key_problem(key: str, version: Version | None, variable: str) -> Problem | None:
    """Why this release refuses `key`: too old for it, too new for it, or no release knows it."""
    row = key_row(key)
    if row is None:
        return _unknown_key(key, version, variable)
    release = f"torch {versions.fmt(version)}"
    if reads(row["since"], version) is False:
        return Problem(
            f"{release} does not know {key} (it came in torch {row['since']})",
            f"Remove {key} from {variable}, or upgrade torch to {row['since']} or newer",
        )
    if "until" in row and reads(row["until"], version):
        return Problem(
            f"{release} no longer knows {key} (torch {row['until']} dropped it)",
            f"Remove {key} from {variable}",
        )
    return None


def key_history(key: str) -> str | None:
    """Which releases know a key, in words ('came in torch 2.1'); None for a key no release knows."""
    row = key_row(key)
    if row is None:
        return None
    if "until" in row:
        return f"{key} was read by torch {row['since']} up to {row['until']}, which dropped it"
    return f"{key} came in torch {row['since']}: an older torch refuses it"


def _unknown_key(key: str, version: Version | None, variable: str) -> Problem:
    import difflib  # only where a near match is wanted

    if "=" in key:
        name, _, value = key.partition("=")
        return Problem(
            f"{key!r} is written with '=', and torch reads key:value pairs",
            f"export {variable}={name.strip()}:{value.strip()}",
        )
    if re.fullmatch(r"[A-Za-z]", key):
        return Problem(
            f"{key!r} is not an option: the variable holds something else (a Windows path reads as "
            f"'{key}' then ':'), not allocator options",
            f"Set {variable} to options such as expandable_segments:True, or unset it "
            "(Windows: System Properties > Environment Variables; check what set it)",
        )
    near = difflib.get_close_matches(key, [row["name"] for row in rows()], n=1, cutoff=0.75)
    if near:
        return Problem(
            f"{key!r} is not an option of any torch release (did you mean {near[0]}?)",
            f"Write {near[0]} instead of {key} in {variable}",
        )
    return Problem(
        f"{key!r} is not an option of any torch release",
        f"Correct or remove {key} in {variable}; the options are {', '.join(known_keys(version))}",
    )


def known_keys(version: Version | None) -> list[str]:
    """The keys a release knows (every current one when the release is unknown)."""
    return [
        row["name"]
        for row in rows()
        if reads(row["since"], version) is not False
        and not ("until" in row and reads(row["until"], version) is not False)
    ]


def problems(value: str, version: Version | None, variable: str) -> list[Problem]:
    """What a release would refuse in `value` (the whole setting), in the order torch reads it."""
    commas_only = reads(table("torch_alloc_conf")["syntax_commas_since"], version)
    out = []
    if commas_only and re.search(r"[^\s,:\[]\s+[^\s,:\]]", value.strip()):
        out.append(
            Problem(
                "its options are separated by spaces; from torch 2.0 only commas separate them",
                f"export {variable}='" + re.sub(r"\s*[\s,]\s*", ",", value.strip()) + "'",
            )
        )
        return out
    for key, val in _items(value, commas_only is False):
        problem = key_problem(key, version, variable)
        if problem is None and val is None:
            problem = Problem(f"{key!r} has no value", f"Write it {key}:<value> in {variable}, or remove it")
        if problem is None and val is not None:
            problem = _value_problem(key, val, variable)
        if problem is not None:
            out.append(problem)
    return out


def _items(value: str, spaces_separate: bool) -> list[tuple[str, str | None]]:
    """(key, value) pairs; value None where an item has no ':'. Commas inside [...] stay in the value."""
    text = value if spaces_separate else value.replace(" ", "")
    parts, depth, item = [], 0, ""
    for ch in text:
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if (ch == "," or (spaces_separate and ch.isspace())) and depth <= 0:
            parts.append(item)
            item = ""
        else:
            item += ch
    parts.append(item)
    out: list[tuple[str, str | None]] = []
    for part in (p.strip() for p in parts):
        if part:
            key, sep, val = part.partition(":")
            out.append((key.strip(), val.strip().lstrip(":") if sep else None))
    return out


def _value_problem(key: str, val: str, variable: str) -> Problem | None:
    row = key_row(key)
    if row is None:
        return None
    kind = row["value"]
    if kind == "bool" and val not in ("True", "False"):
        return Problem(
            f"{key}:{val} must be True or False, capitalised as in Python",
            f"Write {key}:{val.strip().capitalize() if val.lower() in ('true', 'false') else 'True'} in {variable}",
        )
    if kind == "choice" and val not in row["values"]:
        return Problem(
            f"{key}:{val} must be one of " + ", ".join(row["values"]) + " (case matters)",
            f"Write {key}:{row['values'][0]} (or {row['values'][-1]}) in {variable}",
        )
    if kind == "int":
        return _int_problem(row, val, variable)
    if kind == "fraction":
        return _fraction_problem(row, val, variable)
    return None


def _int_problem(row: dict[str, Any], val: str, variable: str) -> Problem | None:
    key = row["name"]
    if not re.fullmatch(r"\d+", val):
        return Problem(
            f"{key}:{val} is not a whole number", f"Write {key} as a whole number (no unit) in {variable}"
        )
    if int(val) < row.get("min", 0):
        return Problem(
            f"{key}:{val} is below the smallest value torch accepts, {row['min']}",
            f"Write {key}:{row['min']} or more in {variable}",
        )
    return None


def _fraction_problem(row: dict[str, Any], val: str, variable: str) -> Problem | None:
    key = row["name"]
    try:
        number = float(val)
    except ValueError:
        return Problem(f"{key}:{val} is not a number", f"Write {key} as a fraction such as 0.8 in {variable}")
    low, high = row["low"], row["high"]
    inside = low <= number <= high if row.get("closed") else low < number < high
    if not inside:
        brackets = "[]" if row.get("closed") else "()"
        return Problem(
            f"{key}:{val} is outside {brackets[0]}{low:g}, {high:g}{brackets[1]}",
            f"Write {key} as a fraction such as 0.8 in {variable}",
        )
    return None
