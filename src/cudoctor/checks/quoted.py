"""An error quoted in the stated facts ("other": "RuntimeError: The NVIDIA driver on your system is too old
(found version 11040)"): the explainer reads it before the checks run (cudoctor.quoted fills the fact
`stated.quoted_error` where one of its signatures that name their cause matched), and this check reports
the cause it names, beside what the stated versions show."""

from __future__ import annotations

from cudoctor.checks import ANY_CAUSE, check, finding
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "Quoted errors"


@check("quoted-error", ANY_CAUSE, LAYER, requires=("stated.quoted_error",))
def quoted_error(snap: Snapshot) -> list[Finding]:
    """An error message quoted in the stated facts names its cause (a signature that names it matched), and
    no check on the stated versions found that cause already."""
    said = snap.value("stated.quoted_error") or {}
    if not said.get("cause"):
        return []
    return [
        finding(
            "quoted-error",
            str(said["cause"]),
            Severity.ERROR,
            f"The error quoted in the facts: {str(said['text'])[:200]}",
            LAYER,
            evidence=[f"quoted: {said['text']}", f"signature {said['signature']}: {said['title']}"],
            fix=list(said.get("fix") or []),
            confidence="likely",
        )
    ]
