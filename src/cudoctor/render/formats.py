"""One interface for every output (issue 42): each kind of document names the formats it can be shown
in, with one renderer per format, and commands print `emit(kind, fmt, document, **options)`.

The table below is the one source of truth: argparse takes each command's `--format` choices and
default from it, and a kind/format pair it does not name is a ValueError (a programming error; argparse
has refused what a user can type). Renderers are "module:function" names imported on first use, so
`cudoctor check` never loads explain's or HTML's renderers. A renderer takes the document plus the
options it names and returns the whole output; it formats and decides nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple


class Renderer(NamedTuple):
    target: str  # "module:function"
    options: tuple[str, ...] = ()  # the keyword options of emit() it takes


class Kind(NamedTuple):
    formats: Mapping[str, Renderer]  # in the order --format lists them
    default: str = "text"
    shared: frozenset[str] = frozenset()  # made to be pasted elsewhere: redacted unless --no-redact


_REPORT_JSON = Renderer("cudoctor.render.documents:report_json_text")  # a Report as check --format json
_REPORT_MARKDOWN = Renderer("cudoctor.render.documents:report_markdown")
_JSON = Renderer("cudoctor.render.documents:dumps")  # a document that is already JSON data

KINDS: dict[str, Kind] = {
    # a Report (check, and check --probe)
    "check": Kind(
        {
            "text": Renderer("cudoctor.render.text:check_report", ("verbose",)),
            "json": _REPORT_JSON,
            "markdown": _REPORT_MARKDOWN,
        },
        shared=frozenset({"markdown"}),
    ),
    # explainer.command.to_json's document, with `facts_used`
    "explain": Kind(
        {
            "text": Renderer("cudoctor.render.explanation:text", ("verbose",)),
            "json": _JSON,
            "markdown": Renderer("cudoctor.render.explanation:to_markdown"),
        }
    ),
    # a Report to share (cudoctor report), its log's explanation in extra["log"]
    "report": Kind(
        {"markdown": _REPORT_MARKDOWN, "json": _REPORT_JSON, "html": Renderer("cudoctor.render.html:page")},
        default="markdown",
        shared=frozenset({"markdown", "json", "html"}),
    ),
    # a Report of the probe checks alone
    "probe": Kind(
        {
            "text": Renderer("cudoctor.render.text:probe_report"),
            "json": _REPORT_JSON,
            "markdown": _REPORT_MARKDOWN,
        }
    ),
    # store.Entry rows, newest first
    "snapshot-list": Kind(
        {
            "text": Renderer("cudoctor.render.snapshots:listing_text"),
            "json": Renderer("cudoctor.render.snapshots:listing_json"),
        }
    ),
    # a Report of a saved snapshot; the text heads it with its store.Entry
    "snapshot-show": Kind(
        {"text": Renderer("cudoctor.render.snapshots:shown_text", ("entry",)), "json": _REPORT_JSON}
    ),
    # {"a", "b", **diff.Diff.to_json()}
    "diff": Kind({"text": Renderer("cudoctor.render.diff:text"), "json": _JSON}),
    # fleet.analysis.FleetResult
    "fleet": Kind(
        {"text": Renderer("cudoctor.render.fleet:text"), "json": Renderer("cudoctor.render.fleet:as_json")}
    ),
    # check --all-envs: {"schema", "root", "note", "envs", "odd_ones"}
    "all-envs": Kind({"text": Renderer("cudoctor.render.envs:text"), "json": _JSON}),
    # causes_command.listing(); the Markdown is the whole reference (docs/causes.md), each cause's page
    # from `describe`
    "causes": Kind(
        {
            "text": Renderer("cudoctor.render.causes:listing_text"),
            "json": Renderer("cudoctor.render.causes:as_json"),
            "markdown": Renderer("cudoctor.render.causes:reference", ("describe",)),
        }
    ),
    # causes_command.describe(ID)
    "cause": Kind(
        {
            "text": Renderer("cudoctor.render.causes:page_text"),
            "json": Renderer("cudoctor.render.causes:as_json"),
            "markdown": Renderer("cudoctor.render.causes:page_markdown"),
        }
    ),
}


def _kind(kind: str) -> Kind:
    try:
        return KINDS[kind]
    except KeyError:
        raise ValueError(
            f"no renderers for a document of kind {kind!r} (known: {', '.join(KINDS)})"
        ) from None


def _spec(kind: str, fmt: str) -> Renderer:
    formats = _kind(kind).formats
    try:
        return formats[fmt]
    except KeyError:
        raise ValueError(f"{kind} has no {fmt!r} output (it has: {', '.join(formats)})") from None


def choices(kind: str) -> tuple[str, ...]:
    """The formats `kind` can be shown in, in the order --format lists them."""
    return tuple(_kind(kind).formats)


def default(kind: str) -> str:
    return _kind(kind).default


def redacts(kind: str, fmt: str) -> bool:
    """Whether this output is made to be shared, so the command redacts it unless told not to."""
    _spec(kind, fmt)
    return fmt in _kind(kind).shared


def renderer(kind: str, fmt: str) -> Callable[..., str]:
    """The function that shows a `kind` document as `fmt` (imported now)."""
    import importlib

    module, _, name = _spec(kind, fmt).target.partition(":")
    fn: Callable[..., str] = getattr(importlib.import_module(module), name)
    return fn


def emit(kind: str, fmt: str, document: Any, **options: Any) -> str:
    """The whole output of `document` as `fmt`. Options are those the kind's renderers name (verbose,
    entry, describe); each renderer gets the ones it takes, and an option none of them takes is an error."""
    spec = _spec(kind, fmt)
    known = {name for r in _kind(kind).formats.values() for name in r.options}
    if set(options) - known:
        raise ValueError(f"{kind} renderers take no option {', '.join(sorted(set(options) - known))}")
    taken = {name: value for name, value in options.items() if name in spec.options}
    return renderer(kind, fmt)(document, **taken)
