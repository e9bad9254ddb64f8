"""`cudoctor causes [ID]` (issue 42): every cause listed, one cause explained from the same data the checks,
the signatures and the shipped corpus hold, any id the tool prints read as its cause, unknown ids refused."""

from __future__ import annotations

import json

from cudoctor import knowledge
from cudoctor.checks import all_checks
from cudoctor.explainer import corpus, signatures
from tests.conftest import cudoctor


def test_causes_lists_every_cause_with_its_title_in_text_and_json() -> None:
    out = cudoctor(["causes"])
    assert out.returncode == 0, out.stderr
    lines = {line.split()[0]: line for line in out.stdout.splitlines() if line.strip()}
    for cid, row in knowledge.causes().items():
        assert cid in lines and lines[cid].endswith(row["title"]), cid
    doc = json.loads(cudoctor(["causes", "--format", "json"]).stdout)
    assert doc == [{"id": c, "title": r["title"], "why": r["why"]} for c, r in knowledge.causes().items()]


def test_gpu_oom_shows_checks_signatures_fixes_references_and_solved_reports() -> None:
    out = cudoctor(["causes", "gpu-oom"])
    assert out.returncode == 0, out.stderr
    text = out.stdout
    row = knowledge.cause("gpu-oom")
    assert text.startswith(f"gpu-oom: {row['title']}\n")
    checks = [c.id for c in all_checks() if c.cause == "gpu-oom"]
    assert checks and all(f"    {c}: " in text for c in checks)
    naming = [s for s in signatures.load() if "gpu-oom" in s.causes]
    assert f"cudoctor explain: {len(naming)} log signature(s) name it" in text
    page = json.loads(cudoctor(["causes", "gpu-oom", "--format", "json"]).stdout)
    assert page["signatures"]["ids"] == sorted(s.id for s in naming)
    firsts = {" ".join(s.examples[0].split()) for s in naming}
    assert page["signatures"]["messages"] and set(page["signatures"]["messages"]) <= firsts
    assert all(f"    - {m}" in text for m in page["signatures"]["messages"] if len(m) < 90)
    assert page["fix"] == row["fix"] and "1. See who holds memory: nvidia-smi" in text
    assert page["signatures"]["fix"], "steps from the signatures' fix"
    assert page["references"] == row["references"] and all(f"  {u}\n" in text for u in row["references"])
    confirmed = [r.source for r in corpus.load() if r.causes[0] == "gpu-oom"]
    shown = [r["source"] for r in page["reports"]["shown"]]
    assert shown and shown == confirmed[: len(shown)] and all(f"  {s}\n" in text for s in shown)
    assert all(r["resolution"] for r in page["reports"]["shown"])


def test_a_finding_check_or_signature_id_is_read_as_its_cause_and_says_so() -> None:
    out = cudoctor(["causes", "cpu-only-torch"])
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(
        "(cpu-only-torch is a finding of the check cpu-only-build, whose cause is cpu-only-build)\n"
    )
    assert "\ncpu-only-build: The installed framework is a CPU-only build\n" in out.stdout
    page = json.loads(cudoctor(["causes", "toolkit-needs-newer-driver", "--format", "json"]).stdout)
    assert (page["id"], page["asked"]) == ("driver-too-old", "toolkit-needs-newer-driver")
    assert json.loads(cudoctor(["causes", "gpu-memory-held", "--format", "json"]).stdout)["id"] == "gpu-oom"
    sig = json.loads(cudoctor(["causes", "gpu-oom/torch-out-of-memory", "--format", "json"]).stdout)
    assert sig["id"] == "gpu-oom" and "log signature" in sig["note"]


def test_an_unknown_id_exits_2_with_one_line_naming_the_nearest() -> None:
    out = cudoctor(["causes", "gpu-om"])
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("cudoctor: error: unknown cause")
    assert "did you mean gpu-oom" in out.stderr
    far = cudoctor(["causes", "zzqqxx"])
    assert far.returncode == 2 and far.stderr.count("\n") == 1 and "did you mean" not in far.stderr


def test_help_teaches_with_examples_and_exit_statuses() -> None:
    out = cudoctor(["causes", "--help"])
    assert out.returncode == 0
    assert "cudoctor causes gpu-oom" in out.stdout and "exit status: 0 shown, 2 an unknown id" in out.stdout
    assert "causes" in cudoctor(["--help"]).stdout
