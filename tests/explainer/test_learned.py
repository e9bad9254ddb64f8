"""The learned stage: training is counting, the shipped model is the one its data gives, and a
missing or damaged model file leaves explain working on its signatures."""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
from pathlib import Path

import pytest

from cudoctor.explainer import corpus, evidence, learned, scan, similar, tokens, training
from tests.conftest import cudoctor


def test_a_cause_whose_documents_share_the_tokens_wins() -> None:
    docs = [
        (tokens.tokens("CUDA out of memory. Tried to allocate 2.00 GiB"), "gpu-oom"),
        (tokens.tokens("RuntimeError: CUDA out of memory while allocating"), "gpu-oom"),
        (tokens.tokens("no kernel image is available for execution on the device"), "arch-unsupported"),
        (tokens.tokens("no kernel image for this GPU sm_86"), "arch-unsupported"),
    ]
    model = learned.train(docs)
    dist = learned.distribution(model, tokens.tokens("torch: CUDA out of memory. Tried to allocate 20 MiB"))
    assert next(iter(dist)) == "gpu-oom" and abs(sum(dist.values()) - 1.0) < 1e-9
    dist = learned.distribution(model, tokens.tokens("error: no kernel image is available"))
    assert next(iter(dist)) == "arch-unsupported"
    assert learned.distribution(model, tokens.tokens("zzz qqq")) == {}  # nothing it knows: no answer


def test_numbers_paths_and_versions_are_normalised() -> None:
    a = tokens.tokens("Tried to allocate 1024.00 MiB at 0x7f3a2c000000 (torch 2.1.0)")
    b = tokens.tokens("Tried to allocate 2048.00 MiB at 0x7f00aa000000 (torch 1.13.1)")
    assert a == b
    assert "ctx:windows" in tokens.tokens("x", {"os": "Windows 11"})


def test_the_shipped_model_is_the_one_its_corpus_and_signatures_give() -> None:
    """Adding a report or a signature example without retraining fails here: run
    python tools/train_explain_model.py."""
    shipped = learned.load()
    assert shipped.stamp == training.stamp(), "retrain: python tools/train_explain_model.py"
    fresh = training.train_shipped()
    counts = ("classes", "docs", "totals", "tokens", "stamp")
    assert {k: learned.to_json(fresh)[k] for k in counts} == {k: learned.to_json(shipped)[k] for k in counts}
    # the regression is fitted numerically: another BLAS may move a weight in its last digit
    assert shipped.weights.keys() == fresh.weights.keys()
    drift = max(
        abs(w - shipped.weights[t].get(c, 0.0)) for t, row in fresh.weights.items() for c, w in row.items()
    )
    assert drift < 0.01


def test_the_regression_changes_the_distribution_it_is_blended_into() -> None:
    """The shipped model carries both halves, and the regression's probabilities count."""
    shipped = learned.load()
    assert shipped.bias and shipped.weights
    toks = tokens.tokens("RuntimeError: CUDA error: no kernel image is available for execution on the device")
    both = learned.distribution(shipped, toks)
    counts_only = learned.distribution(dataclasses.replace(shipped, weights={}, bias=[]), toks)
    assert next(iter(both)) == "arch-unsupported"
    assert both != counts_only


def test_a_round_trip_through_json_keeps_the_model() -> None:
    model = learned.train([(["a", "b"], "gpu-oom"), (["a", "c"], "host-oom")], stamp="s")
    again = learned.from_json(json.loads(json.dumps(learned.to_json(model))))
    assert learned.distribution(again, ["a", "b"]) == learned.distribution(model, ["a", "b"])
    with pytest.raises(learned.ModelError):
        learned.from_json({"format": 3})


def _scan(text: str) -> scan.ScanResult:
    return scan.scan(io.BytesIO(text.encode()))


def test_a_damaged_or_missing_model_leaves_a_one_line_note(tmp_path: Path) -> None:
    bad = tmp_path / "model.json.gz"
    bad.write_bytes(b"not gzip at all")
    with pytest.raises(learned.ModelError) as err:
        learned.load(str(bad))
    assert "\n" not in str(err.value)
    with pytest.raises(learned.ModelError):
        learned.load(str(tmp_path / "absent.json.gz"))
    with gzip.open(tmp_path / "list.json.gz", "wt") as fh:
        fh.write("[1, 2]")
    with pytest.raises(learned.ModelError):
        learned.load(str(tmp_path / "list.json.gz"))


def test_explain_without_its_model_or_corpus_still_ranks_on_signatures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "run.log"
    log.write_text("RuntimeError: CUDA error: no kernel image is available for execution on the device\n")
    healthy = json.loads(cudoctor(["explain", str(log), "--no-live", "--format", "json"]).stdout)
    assert healthy["notes"] == [] and healthy["causes"][0]["id"] == "arch-unsupported"

    (tmp_path / "model.json.gz").write_bytes(b"\x1f\x8b broken")
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "dev.jsonl").write_text("{not json\n")
    monkeypatch.setattr(learned, "PATH", str(tmp_path / "model.json.gz"))
    monkeypatch.setattr(corpus, "HERE", str(tmp_path / "corpus"))
    corpus.load.cache_clear()
    similar.shipped.cache_clear()
    try:
        ev = evidence.gather(_scan(log.read_text()))
    finally:
        corpus.load.cache_clear()
        similar.shipped.cache_clear()
    assert ev.distribution == {} and ev.hits == []
    assert ev.note is not None and "\n" not in ev.note
    assert "learned stage is unavailable" in ev.note and "similar-reports stage is unavailable" in ev.note
