"""fleet aggregate over bad report folders (issue 44, point 11) and a fuzz run over report files."""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.hostile.contract import run, write

GOOD: dict[str, Any] = {
    "schema": 1,
    "snapshot": {
        "schema": 1,
        "facts": {
            "host.name": {"status": "known", "value": "node-a", "source": "test"},
            "driver.version": {"status": "known", "value": "550.54.15", "source": "test"},
            "gpu.devices": {
                "status": "known",
                "value": [{"index": 0, "name": "NVIDIA A100"}],
                "source": "test",
            },
        },
    },
    "findings": [],
}


def _folder(tmp: Path, reports: dict[str, Any]) -> str:
    for name, doc in reports.items():
        write(tmp / f"{name}.json", doc if isinstance(doc, str) else json.dumps(doc))
    return str(tmp)


def _named(host: str) -> dict[str, Any]:
    doc = copy.deepcopy(GOOD)
    doc["snapshot"]["facts"]["host.name"]["value"] = host
    return doc


@pytest.mark.parametrize(
    "bad",
    [
        {"schema": 1, "snapshot": {"facts": {"driver.version": 1}}, "findings": []},
        "[" * 100_000 + "]" * 100_000,
        {**GOOD, "schema": 999},
        {**GOOD, "schema": -1},
        {**GOOD, "schema": "2"},
        {**GOOD, "schema": None},
        {**GOOD, "schema": True},
    ],
    ids=[
        "fact-not-an-object",
        "deep",
        "schema-999",
        "schema-minus-1",
        "schema-text",
        "schema-null",
        "schema-true",
    ],
)
def test_a_bad_report_is_named_and_skipped_and_the_rest_aggregated(tmp_path: Path, bad: Any) -> None:
    folder = _folder(tmp_path, {"a": _named("node-a"), "b": _named("node-b"), "bad": bad})
    outcome = run(["fleet", "aggregate", folder])
    assert outcome.status == 1  # a report that could not be read is a node that did not answer
    assert "bad: failed" in outcome.out and "node-a" in outcome.out and "node-b" in outcome.out


_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=10), kids, max_size=4),
    max_leaves=20,
)


@given(
    st.dictionaries(
        st.sampled_from(["host.name", "driver.version", "gpu.devices", "python.packages", "frameworks", "x"]),
        st.one_of(
            _VALUE,
            st.fixed_dictionaries(
                {"status": st.sampled_from(["known", "absent", "bogus", 1]), "value": _VALUE}
            ),
        ),
        max_size=5,
    ),
    st.one_of(st.just(1), _VALUE),
)
def test_any_report_folder_is_aggregated_or_refused_in_one_line(facts: dict[str, Any], schema: Any) -> None:
    with tempfile.TemporaryDirectory() as folder:
        doc = {"schema": schema, "snapshot": {"schema": 1, "facts": facts}, "findings": []}
        path = _folder(Path(folder), {"good": _named("node-a"), "fuzz": doc})
        run(["fleet", "aggregate", path])
        run(["fleet", "aggregate", path, "--format", "json"])
