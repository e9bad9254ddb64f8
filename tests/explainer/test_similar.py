"""Similar solved reports: the nearest public threads, never the held-out one, each with its source."""

from __future__ import annotations

import json
from pathlib import Path

from cudoctor.explainer import corpus, similar, tokens
from tests.conftest import cudoctor


def test_every_shipped_report_names_a_public_source_and_a_cause() -> None:
    reports = corpus.load()
    assert len(reports) >= 650
    assert all(r.source.startswith("http") and r.causes for r in reports)


def test_a_report_finds_itself_first_unless_its_thread_is_excluded() -> None:
    reports = corpus.load()
    index = similar.shipped()
    case = next(r for r in reports if r.id == "jax-unable-to-load-cudnn-pip-install")
    toks = tokens.tokens(case.log, case.context)
    assert similar.nearest(index, toks, k=1)[0].report.id == case.id
    held = similar.nearest(index, toks, k=5, exclude=frozenset({case.thread}))
    assert held and all(h.report.thread != case.thread for h in held)
    assert held[0].score <= similar.nearest(index, toks, k=1)[0].score


def test_thread_keys_ignore_fragments_and_trailing_slashes() -> None:
    assert corpus.thread("https://github.com/a/b/issues/1#issuecomment-9") == corpus.thread(
        "https://github.com/a/b/issues/1/"
    )


def test_votes_share_the_similarity_of_the_nearest_reports() -> None:
    r1 = corpus.Report("a", "https://x/1", "", {}, ("gpu-oom",), "")
    r2 = corpus.Report("b", "https://x/2", "", {}, ("cudnn-mismatch", "gpu-oom"), "")
    votes = similar.votes([similar.Hit(r1, 0.6), similar.Hit(r2, 0.4)])
    assert list(votes) == ["gpu-oom", "cudnn-mismatch"]
    assert abs(votes["gpu-oom"] - 0.8 / similar.VOTE_K) < 1e-9  # 0.6 whole + 0.4 at half


def test_explain_shows_the_closest_solved_reports_and_nothing_when_none_is_close(tmp_path: Path) -> None:
    log = tmp_path / "jax.log"
    log.write_text(
        "CUDA backend failed to initialize: Unable to load cuDNN. Is it installed? "
        "(Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)\n"
    )
    doc = json.loads(cudoctor(["explain", str(log), "--no-live", "--format", "json"]).stdout)
    assert doc["similar"], doc
    first = doc["similar"][0]
    assert first["source"].startswith("https://") and "cudnn-mismatch" in first["causes"]
    assert first["score"] >= similar.SHOW_AT and first["resolution"]
    text = cudoctor(["explain", str(log), "--no-live"]).stdout
    assert "Similar solved reports:" in text and first["source"] in text
    log.write_text("epoch 1 loss 0.25\nepoch 2 loss 0.21\n")
    doc = json.loads(cudoctor(["explain", str(log), "--no-live", "--format", "json"]).stdout)
    assert doc["similar"] == [] and doc["causes"] == []


def test_a_pasted_line_that_resembles_a_solved_report_is_explained(tmp_path: Path) -> None:
    """A log of one line without an error word, pasted as the error (vLLM's advice after its bfloat16 check)."""
    log = tmp_path / "pasted.log"
    log.write_text(
        "You can use float16 instead by explicitly setting the`dtype` flag in CLI, for example: --dtype=half\n"
    )
    doc = json.loads(cudoctor(["explain", str(log), "--no-live", "--format", "json"]).stdout)
    assert doc["causes"] and doc["causes"][0]["id"] == "dtype-mismatch" and doc["root"]["error_looking"]
    log.write_text("epoch 3 loss 0.19 (use float16 to halve memory)\n")  # nothing like a solved report
    assert json.loads(cudoctor(["explain", str(log), "--no-live", "--format", "json"]).stdout)["causes"] == []
