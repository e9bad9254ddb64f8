"""Where a Snapshot comes from: this machine, a saved snapshot, facts a person stated.

Every bad input raises `InputError` with a one-line message; the CLI turns it into exit 2.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from cudoctor import textfiles
from cudoctor.model import Snapshot

if TYPE_CHECKING:
    from cudoctor.facts.target import Target


class InputError(Exception):
    """cudoctor cannot do its job with the input it was given (exit status 2)."""


def read_json_file(path: str, what: str) -> Any:
    if path == "-":
        raise InputError(f"{what} cannot be read from standard input here; give a file")
    if os.path.isdir(path):
        raise InputError(f"{what} {path} is a directory, not a file")
    try:
        with open(path, "rb") as fh:
            text = textfiles.decode(fh.read(), errors="strict")
    except FileNotFoundError:
        raise InputError(f"{what} {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {what} {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        return textfiles.load_json(text)
    except textfiles.JSONInputError as exc:
        raise InputError(f"{what} {path}: {exc}") from None


def load_stated(path: str, framework_hint: str | None = None) -> Snapshot:
    import difflib  # only where a near match is wanted

    from cudoctor.facts.stated import KEYS, from_stated  # its tables load only when facts are stated

    data = read_json_file(path, "facts file")
    if not isinstance(data, dict):
        raise InputError(f"facts file {path} must hold a JSON object with keys such as {', '.join(KEYS[:4])}")
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        named = []
        for key in unknown:
            near = _by_word(key) or difflib.get_close_matches(key, KEYS, n=1, cutoff=0.5)
            guess = " or ".join(repr(k) for k in near)
            named.append(f"{key!r}" + (f" (did you mean {guess}?)" if near else ""))
        raise InputError(
            f"facts file {path}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(named)}; "
            f"the keys are {', '.join(KEYS)}"
        )
    for key, value in data.items():
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise InputError(
                f"facts file {path}: {key!r} must be text or a number as a person writes it "
                f'("{key}": "..."), not {type(value).__name__}'
            )
    return from_stated(data, framework_hint)


def _by_word(key: str) -> list[str]:
    """'gpu_name' -> gpu, 'framework' -> framework_version: a known key that is a word of the unknown one;
    'cuda' -> system_cuda or framework_cuda: the known keys the unknown one is the last word of."""
    from cudoctor.facts.stated import KEYS

    words = set(key.lower().replace("-", "_").split("_"))
    first = [k for k in KEYS if k in words or k.split("_")[0] in words][:1]
    return first or sorted((k for k in KEYS if k.split("_")[-1] == key.lower()), reverse=True)


def load_snapshot(path: str) -> Snapshot:
    """A saved snapshot, a `cudoctor check --format json` document, or any report that
    `check --from` reads (collect_env, nvidia-smi -q text or XML, pip list, conda list)."""
    if not _starts_like_json(path):
        from cudoctor.importers import load_report

        return load_report(path)
    data = read_json_file(path, "snapshot")
    if isinstance(data, dict) and isinstance(data.get("snapshot"), dict):
        data = data["snapshot"]  # a whole `cudoctor check --format json` document
    try:
        return Snapshot.from_json(data)
    except ValueError as exc:
        raise InputError(f"{path}: {exc}") from None


def _starts_like_json(path: str) -> bool:
    """True unless the file is readable and its first character is not '{' (errors are left to the reader)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(256).lstrip()
    except OSError:
        return True
    return not head or head.startswith(b"{")


def build_snapshot(
    facts: str | None,
    snapshot: str | None,
    live: bool,
    framework_hint: str | None = None,
    target: Target | None = None,
) -> Snapshot:
    """Stated facts win over a saved snapshot, which wins over this machine's live facts (of the
    Python environment `target`, default cudoctor's own)."""
    layers: list[Snapshot] = []
    if facts:
        layers.append(load_stated(facts, framework_hint))
    if snapshot:
        layers.append(load_snapshot(snapshot))
    if live:
        from cudoctor.facts import collect_live

        layers.append(collect_live(target=target))
    if not layers:
        return Snapshot(origin="none")
    snap = layers[0]
    for more in layers[1:]:
        snap = snap.merged_with(more)
    return snap
