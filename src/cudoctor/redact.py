"""Redaction for anything meant to be shared: secrets, home and user names, host name, GPU ids.

User names are only replaced inside home-directory paths (/home/NAME, /Users/NAME,
C:\\Users\\NAME) and directories named after the user (TorchInductor's /tmp/torchinductor_NAME),
never as bare words: replacing every "root" in a report breaks it.
"""

from __future__ import annotations

import getpass
import os
import platform
import re
from typing import Any

SECRET_KEY = re.compile(
    r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|AUTH", re.I
)
URL_CREDS = re.compile(r"((?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://)([^/\s:@]+(?::[^/\s@]*)?)@", re.I)
GPU_ID = re.compile(r"\b(GPU|MIG)-[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}\b", re.I)
HOME_PATHS = re.compile(r"(/home/|/Users/|[A-Za-z]:\\Users\\|[/\\]torchinductor_)([^/\\\s:\"']+)")
SERIAL_KEYS = re.compile(r"^(serial|serial_number|uuid|gpu_uuid|board_serial)$", re.I)
REDACTED = "<redacted>"


class Redactor:
    def __init__(self, home: str | None = None, host: str | None = None, user: str | None = None) -> None:
        self.home = (home if home is not None else os.path.expanduser("~")).rstrip("/")
        self.host = host if host is not None else platform.node()
        try:
            self.user = user if user is not None else getpass.getuser()
        except (KeyError, OSError):
            self.user = ""

    def text(self, s: str) -> str:
        if self.host and s.strip() == self.host:  # a host name field, however short ('vm', 'n1')
            return "<host>"
        s = URL_CREDS.sub(lambda m: f"{m.group(1)}{REDACTED}@", s)
        s = GPU_ID.sub(lambda m: f"{m.group(1)}-{REDACTED}", s)
        if self.home and self.home not in ("/", "") and len(self.home) > 1:
            s = re.sub(rf"{re.escape(self.home)}(?=/|\b|$)", "~", s)
        s = HOME_PATHS.sub(lambda m: f"{m.group(1)}<user>", s)
        if self.host and len(self.host) >= 4:  # inside a text, a short name could be any word ('gpu')
            s = re.sub(rf"\b{re.escape(self.host)}\b", "<host>", s)
        elif self.host:  # a short one where a text names a host: user@vm, vm:~$, [vm]
            s = re.sub(rf"(?<=@){re.escape(self.host)}\b|\b{re.escape(self.host)}(?=:~|:/)", "<host>", s)
        return s

    def data(self, obj: Any, key: str = "") -> Any:
        if isinstance(obj, dict):
            return {k: self._value(k, v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self.data(v, key) for v in obj]
        if isinstance(obj, str):
            return self.text(obj)
        return obj

    def _value(self, key: str, value: Any) -> Any:
        if (
            isinstance(value, (str, int))
            and (SECRET_KEY.search(key) or SERIAL_KEYS.match(key))
            and value not in ("", None)
        ):
            return REDACTED
        return self.data(value, key)


def redact(obj: Any) -> Any:
    """Redact a JSON-able structure (or a string) for sharing."""
    return Redactor().data(obj)
