#!/usr/bin/env python3
"""Write docs/causes.md from the data `cudoctor causes` shows (causes.toml, checks, signatures, corpus),
and the list of every check in docs/check.md.

    python tools/gen_causes_doc.py           # writes docs/causes.md and docs/check.md's list
    python tools/gen_causes_doc.py --check   # exit 1 if either is stale

Run it after changing a cause, a check's cause, a signature or the shipped corpus (a test fails while
docs/causes.md and the data disagree).
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "src"))

from cudoctor import causes_command  # noqa: E402


def main(argv: list[str]) -> int:
    path = os.path.join(ROOT, causes_command.DOC)
    text = causes_command.docs_markdown()
    check_path = os.path.join(ROOT, causes_command.CHECK_DOC)
    with open(check_path, encoding="utf-8") as fh:
        check_page = fh.read()
    check_text = causes_command.with_checks(check_page)
    if "--check" in argv:
        with open(path, encoding="utf-8") as fh:
            fresh = fh.read() == text and check_page == check_text
        print(f"docs are {'up to date' if fresh else 'stale: run python tools/gen_causes_doc.py'}")
        return 0 if fresh else 1
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    with open(check_path, "w", encoding="utf-8") as fh:
        fh.write(check_text)
    print(f"wrote {causes_command.DOC} ({text.count(chr(10))} lines, {text.count(chr(10) + '## ')} causes)")
    print(f"wrote {causes_command.CHECK_DOC}'s list of checks")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
