"""An error a person quoted in the facts they state ("other": "RuntimeError: cuDNN version mismatch: PyTorch
was compiled against 7102 but linked against 7600"): `cudoctor check --facts` reads it through explain's
signatures, so a stated check says what the quoted message names as well as what the stated versions
show. Only signatures that name their cause count (specificity 3), and only a cause no check on the
stated facts found already; the result is the fact `stated.quoted_error`, which the check quoted-error
reports (checks/quoted.py)."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from cudoctor.model import Severity, Snapshot, known

if TYPE_CHECKING:
    from cudoctor.explainer import rank

QUOTED_KEYS = ("stated.other", "stated.container")


def quoted_text(snap: Snapshot) -> str:
    """What the stated facts quote: the free text, and the stated framework versions as written."""
    parts = [str(snap.value(k) or "") for k in QUOTED_KEYS]
    parts += [
        str(v.value.get("stated") or "")
        for k, v in snap.facts.items()
        if k.startswith("framework.") and isinstance(v.value, dict)
    ]
    return "\n".join(p for p in parts if p.strip())


def fill(snap: Snapshot) -> Snapshot:
    """`snap` with the fact stated.quoted_error where its stated text quotes an error that names its cause
    (nothing is read where no free text was stated: a live snapshot costs one lookup per key)."""
    if all(snap.value(k) is None for k in QUOTED_KEYS) or snap.value("stated.quoted_error") is not None:
        return snap
    text = quoted_text(snap)
    if not text:
        return snap
    from cudoctor.explainer import rank, scan

    result = scan.scan(io.BytesIO(text.encode("utf-8", "replace")))
    exp = rank.explain(result, snap)
    named = _named(exp)
    if named is None:
        return snap
    line, by = named
    cause = exp.causes[0].id
    if any(f.cause == cause and f.severity is not Severity.INFO for f in exp.findings):
        return snap  # the stated versions show it already
    if cause == "driver-too-old" and any(
        f.cause == "no-gpu-visible" and f.severity is Severity.ERROR for f in exp.findings
    ):
        return snap  # no GPU reaches the program (another vendor's, a Windows without WSL GPU support): CUDA
        # calls the driver it cannot find insufficient, and the facts say why
    doc = rank.cause_json(exp.causes, 0, plan=exp.plan)
    said = {
        "cause": cause,
        "text": line,
        "signature": by,
        "title": doc["title"],
        "fix": doc["fix"][:4],
    }
    snap.add(known("stated.quoted_error", said, "stated (the error quoted, as explain reads it)"))
    return snap


def _only_error(exp: rank.Explanation) -> bool:
    return len({m.line for m in exp.matches if not m.sig.is_context}) == 1


NAMES_ITS_CAUSE = 0.8  # a reader's weight from which what a line names is its cause (a cuDNN built vs loaded)


def _named(exp: rank.Explanation) -> tuple[str, str] | None:
    """(the quoted line, what read it) where the quoted error names its cause: a signature that names it
    (specificity 3), or with no signature a reader of two versions the line compares (compiled against and
    loaded, a symbol's release and the library loaded) or of the library that could not be loaded, giving
    that cause most of its weight; None otherwise."""
    from cudoctor.explainer import readers

    if not exp.causes:
        return None
    if exp.root is not None:
        sig = exp.root.sig
        # a line whose one cause is certain but that a log can print after an earlier, more specific error
        # (specificity 2: JAX's 'a CUDA-enabled jaxlib is not installed' after a CUDA plugin's failure) names
        # its cause where it is the only error quoted
        alone = sig.specificity == 2 and max(sig.causes.values(), default=0) >= 1.0 and _only_error(exp)
        return (exp.root.text, sig.id) if sig.specificity >= 3 or alone else None
    if exp.root_fallback is None:
        return None
    text = exp.root_fallback[1]
    for reading in readers.read_line(text):
        cause, weight = max(reading.causes.items(), key=lambda kv: kv[1])
        # both versions stated ('compiled against 7102 but linked against 7600'), not a hedge ('Possibly
        # insufficient driver version: 390.77')
        compared = {"compiled", "loaded"} <= reading.facts.keys() or "symbol_cuda" in reading.facts
        named = reading.reader == "soname"  # a library named as the one that could not be loaded
        if (compared or named) and weight >= NAMES_ITS_CAUSE and cause == exp.causes[0].id:
            return text, f"reader {reading.reader}"
    return None
