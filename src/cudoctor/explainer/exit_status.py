"""The exit-status reader: how a process ended, read by table (knowledge/exit_status.toml) whatever the
form the line prints it in.

A POSIX signal by name (SIGILL, <Signals.SIGILL: 4>), by number after the word "signal", as an exit
status 128+N or a return code -N after words that say it is one ("exit code 132", "exitcode: -4",
"returncode=-4"), or in a shell's own words at the start of a line ("Illegal instruction (core dumped)",
"zsh: illegal hardware instruction  python x.py"); a Windows exception status by name, in hex, as the
exit code a console prints for it (signed or not), or in Python faulthandler's words; a Windows system
error a failed call returns ("[WinError 126]", a loader's "Error code 193"). A bare number is never read:
"exit code 1" or "return code 139" without a signal's number range or words is left alone.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Any

from cudoctor import knowledge

EXIT_WORDS = (
    r"(?:exit(?:ed)?(?:[ _]with)?[ _]?(?:code|status|value)|exitcode|exit_code|return(?:ed)?[ _]?(?:code|status)"
    r"|returncode|status code|terminated with code)"
)


@dataclasses.dataclass(frozen=True)
class Ending:
    name: str
    meaning: str
    causes: dict[str, float]
    how: str  # the form it was read in: "SIGILL", "exit status 132", "0xC000001D", ...


@dataclasses.dataclass(frozen=True)
class _Table:
    by_name: dict[str, dict[str, Any]]  # SIGILL / STATUS_ILLEGAL_INSTRUCTION -> row
    by_signal: dict[int, dict[str, Any]]
    by_status: dict[int, dict[str, Any]]
    by_winerror: dict[int, dict[str, Any]]
    errnos: list[dict[str, Any]]
    texts: re.Pattern[str]
    text_of: dict[str, dict[str, Any]]  # lower-case shell / faulthandler words -> row


def _causes(row: dict[str, Any], signals: dict[str, dict[str, Any]]) -> dict[str, float]:
    if "causes" in row:
        return dict(row["causes"])
    return dict(signals[row["signal"]]["causes"])


@functools.cache
def _table() -> _Table:
    data = knowledge.table("exit_status")
    signals = {row["name"]: row for row in data["signal"]}
    by_name: dict[str, dict[str, Any]] = {}
    text_of: dict[str, dict[str, Any]] = {}
    for row in data["signal"]:
        by_name[row["name"]] = row
        text_of.update({t.lower(): row for t in row["texts"]})
    by_status: dict[int, dict[str, Any]] = {}
    for row in data["ntstatus"]:
        row = {**row, "causes": _causes(row, signals)}
        by_name[row["name"]] = row
        by_status[row["code"]] = row
        if "faulthandler" in row:
            text_of[f"windows fatal exception: {row['faulthandler']}"] = row
    shell = "|".join(
        re.escape(t) for t in sorted(text_of, key=len, reverse=True) if not t.startswith("windows")
    )
    faults = "|".join(re.escape(t) for t in sorted(text_of) if t.startswith("windows"))
    texts = re.compile(
        # bash: "Illegal instruction (core dumped)", "./run.sh: line 3: 4123 Killed   python x.py";
        # zsh: "zsh: illegal hardware instruction  python x.py" (a quoted line's backticks or quotes
        # aside); faulthandler anywhere on the line
        rf"^\s*[`'\"]?(?:zsh: |\S+: line \d+: +\d+ +|\[\d+\]\+? +)?({shell})(?: *\(core dumped\))?[`'\".]?(?: {{2,}}\S.*)?\s*$"
        rf"|\b({faults})\b"
        # Python's words for a child's signal ("DataLoader worker (pid 123) is killed by signal: Killed",
        # "Fatal Python error: Segmentation fault")
        rf"|(?:\bby signal:? |Fatal Python error: )({shell})\b"
        # gcc's driver on a compiler process that died ("c++: fatal error: Killed signal terminated program cc1plus")
        rf"|\b({shell}) signal terminated program\b",
        re.I,
    )
    winerrors = {row["code"]: row for row in data.get("winerror", [])}
    for row in data.get("errno", []):
        by_name[row["name"]] = row
    return _Table(
        by_name,
        {row["number"]: row for row in data["signal"]},
        by_status,
        winerrors,
        data.get("errno", []),
        texts,
        text_of,
    )


NAME = re.compile(r"\b(SIG[A-Z]{2,5}|STATUS_[A-Z_]+|E[A-Z]{3,12})\b")
SIGNAL_NUMBER = re.compile(r"\bsignal[\s:=#(]{1,3}(\d{1,2})\b(?!\.\d)", re.I)
EXIT_NUMBER = re.compile(rf"\b{EXIT_WORDS}\s*[:=]?\s*(-?\d{{1,10}})\b(?!\.\d)", re.I)
HEX_STATUS = re.compile(r"\b0x(c0000[0-9a-f]{3})\b", re.I)
DECIMAL_STATUS = re.compile(r"(?<![\w.])(-10737\d{5}|32212\d{5})(?![\w.])")
WINERROR = re.compile(
    r"\bWinError\s?(\d{1,5})\b|\bload\b.{0,200}?\bError code (\d{1,5})\b|\bLoadLibrary(?:Ex)?\w* failed with error (\d{1,5})\b",
    re.I,
)


def read(line: str) -> list[Ending]:
    """Every way the line says how a process ended, once per ending."""
    t = _table()
    found: dict[str, Ending] = {}

    def add(row: dict[str, Any] | None, how: str) -> None:
        if row is not None and row["name"] not in found:
            found[row["name"]] = Ending(row["name"], row["meaning"], dict(row["causes"]), how)

    for m in NAME.finditer(line):
        add(t.by_name.get(m.group(1)), m.group(1))
    for m in SIGNAL_NUMBER.finditer(line):
        add(t.by_signal.get(int(m.group(1))), f"signal {m.group(1)}")
    for m in EXIT_NUMBER.finditer(line):
        n = int(m.group(1))
        if -64 < n < 0:
            add(t.by_signal.get(-n), f"return code {n}")
        elif 128 < n < 192:
            add(t.by_signal.get(n - 128), f"exit status {n} (128 + {n - 128})")
        elif n >= 1 << 31 or n < -(1 << 30):
            add(t.by_status.get(n & 0xFFFFFFFF), f"exit code {n} ({n & 0xFFFFFFFF:#X})")
    for m in HEX_STATUS.finditer(line):
        add(t.by_status.get(int(m.group(1), 16)), f"0x{m.group(1).upper()}")
    for m in DECIMAL_STATUS.finditer(line):
        n = int(m.group(1)) & 0xFFFFFFFF
        add(t.by_status.get(n), f"{m.group(1)} ({n:#X})")
    for m in WINERROR.finditer(line):
        code = next(g for g in m.groups() if g)
        add(t.by_winerror.get(int(code)), f"Windows error {code}")
    low = line.lower()
    for row in t.errnos:  # a POSIX error: its number beside its text, or after 'errno'
        text, n = row["text"].lower(), row["code"]
        if re.search(
            rf"\[errno {n}\]|\berrno:? {n}\b|{re.escape(text)} \({n}\)|\({n}\) {re.escape(text)}", low
        ):
            add(row, f"errno {n}")
    for m in t.texts.finditer(line):
        said = next(g for g in m.groups() if g)
        add(t.text_of.get(said.lower()), said.strip())
    return list(found.values())
