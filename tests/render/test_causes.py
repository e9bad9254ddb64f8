"""docs/causes.md and the renderers of `cudoctor causes` (issue 42): the page is generated from the data the
command shows, so it cannot go stale unnoticed; every cause id is documented; renderers only format."""

from __future__ import annotations

import glob
import os
from typing import Any

from cudoctor import causes_command, knowledge
from cudoctor.render import causes as render
from tests.conftest import ROOT


def test_docs_causes_md_is_what_the_data_gives() -> None:
    with open(os.path.join(ROOT, causes_command.DOC), encoding="utf-8") as fh:
        on_disk = fh.read()
    assert on_disk == causes_command.docs_markdown(), (
        "docs/causes.md is stale: run python tools/gen_causes_doc.py"
    )


def test_docs_check_md_lists_every_check_by_layer() -> None:
    from cudoctor.checks import all_checks

    with open(os.path.join(ROOT, causes_command.CHECK_DOC), encoding="utf-8") as fh:
        on_disk = fh.read()
    assert on_disk == causes_command.with_checks(on_disk), (
        "docs/check.md is stale: run python tools/gen_causes_doc.py"
    )
    listed = on_disk.partition(causes_command.CHECKS_BEGIN)[2]
    assert all(f"| `{c.id}` | {c.cause} |" in listed for c in all_checks())
    assert "### GPU & driver" in listed and "### CPU BLAS" in listed


def test_every_cause_id_is_documented() -> None:
    docs = ""
    for path in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        with open(path, encoding="utf-8") as fh:
            docs += fh.read()
    for cid in knowledge.causes():
        assert f"\n## {cid}\n" in docs and f"](#{cid})" in docs, cid


def _page(**changes: Any) -> dict[str, Any]:
    page: dict[str, Any] = {
        "id": "gpu-oom",
        "asked": "gpu-oom",
        "note": "",
        "title": "Not enough free GPU memory",
        "why": "Memory ran out.",
        "checks": [],
        "signatures": {"count": 0, "primary": 0, "ids": [], "messages": [], "fix": []},
        "fix": ["Use less of it: --share below <free>/<total>"],
        "references": ["https://example.org/oom"],
        "reports": {"count": 0, "confirmed": 0, "shown": []},
    }
    return {**page, **changes}


def test_renderers_format_what_they_are_given() -> None:
    bare = render.page_text(_page())
    assert "no check reports it" in bare and "no log signature names it" in bare
    assert "Solved reports" not in bare and bare.startswith("gpu-oom: Not enough free GPU memory\n")
    md = render.page_markdown(
        _page(signatures={**_page()["signatures"], "count": 1, "messages": ["a `b` c"]})
    )
    assert "&lt;free>/&lt;total>" in md and "- `` a `b` c ``" in md and "<https://example.org/oom>" in md
    noted = render.page_text(_page(note="gpu-memory-held is a check; its findings carry the cause gpu-oom"))
    assert noted.startswith("(gpu-memory-held is a check")
