"""Facts files and pasted reports under hostile content (issue 44, points 6 and 9), and a fuzz
run over both: `check --facts F --no-live`, `explain LOG --facts F`, `check --from REPORT`."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cudoctor.facts.stated import KEYS
from tests.conftest import ROOT
from tests.hostile.contract import run, write

REPORTS = Path(ROOT) / "tests" / "fixtures" / "reports"
PASTED = sorted(p for p in REPORTS.iterdir() if p.suffix in (".txt", ".xml"))


def test_a_100000_digit_compute_capability_is_read_at_once(tmp_path: Path) -> None:
    """It took more than 30 s in versions.cc_tuple."""
    facts = write(tmp_path / "f.json", json.dumps({"compute_capability": "9" * 100_000}))
    proc = subprocess.run(
        [sys.executable, "-m", "cudoctor", "check", "--facts", facts, "--no-live"],
        capture_output=True,
        text=True,
        timeout=20,
        cwd=ROOT,
    )
    assert proc.returncode in (0, 1, 2) and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested deeper than"),
        ('{"gpu": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested deeper than"),
        ('{"driver": ' + "9" * 4400 + "}", "a number of 4400 digits"),
        ('{"driver": 1e' + "9" * 5000 + "}", "a number of"),
    ],
    ids=["deep-list", "deep-value", "4400-digit-int", "5000-digit-exponent"],
)
def test_a_facts_file_too_deep_or_with_huge_numbers_is_refused_in_one_line(
    tmp_path: Path, content: str, said: str
) -> None:
    facts = write(tmp_path / "f.json", content)
    for argv in (["check", "--facts", facts, "--no-live"], ["explain", "--facts", facts, "--no-live", facts]):
        outcome = run(argv)
        assert outcome.status == 2 and said in outcome.err, outcome.err


def test_a_20000_digit_version_in_a_pasted_collect_env_is_read(tmp_path: Path) -> None:
    text = (REPORTS / "collect_env_windows_titan_rtx.txt").read_text(encoding="utf-8", errors="replace")
    text = text.replace("PyTorch version: ", "PyTorch version: 2." + "1" * 20_000 + ".", 1)
    text += "\nNvidia driver version: 5" + "3" * 5000 + ".1\nCUDA runtime version: 1" + "2" * 5000 + "\n"
    outcome = run(["check", "--from", write(tmp_path / "env.txt", text), "--format", "json"])
    assert outcome.status in (0, 1)


# ------------------------------------------------------------------ fuzzing: stated facts

_VALUES = st.one_of(
    st.text(max_size=300),
    st.integers(min_value=-(10**80), max_value=10**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.builds(lambda d, n: d * n, st.sampled_from(["9", "1.", "sm_", "cu12", "12.4 "]), st.integers(1, 5000)),
    st.sampled_from(
        ["A100", "RTX 4090", "sm_120", "8.6", "torch 2.1.0+cu121", "tensorflow-gpu 1.13.1", "550.54"]
    ),
    st.lists(st.integers(), max_size=3),
)


@given(st.dictionaries(st.sampled_from([*KEYS, "gpu_name", "x"]), _VALUES, max_size=8))
def test_any_facts_file_is_checked_or_refused_in_one_line(facts: dict[str, object]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = write(Path(folder) / "facts.json", json.dumps(facts))
        outcome = run(["check", "--facts", path, "--no-live", "--format", "json", "--no-record"])
        if outcome.status != 2:
            assert isinstance(outcome.json(), dict)
        log = write(Path(folder) / "x.log", "RuntimeError: CUDA error: no kernel image is available\n")
        run(["explain", "--facts", path, "--no-live", log])


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
        max_leaves=40,
    )
)
def test_any_json_document_as_facts_is_refused_or_read(doc: object) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = write(Path(folder) / "facts.json", json.dumps(doc))
        run(["check", "--facts", path, "--no-live", "--no-record"])


# ------------------------------------------------------------------ fuzzing: pasted reports


def _mutated(text: str, seed: int) -> str:
    """A real report, damaged as a paste can be: lines dropped, cut, repeated; numbers made huge."""
    rng = random.Random(seed)
    lines = text.splitlines()
    for _ in range(rng.randint(1, 6)):
        if not lines:
            break
        i = rng.randrange(len(lines))
        action = rng.choice(["drop", "cut", "repeat", "digits", "garble", "swap"])
        if action == "drop":
            del lines[i]
        elif action == "cut":
            lines[i] = lines[i][: rng.randint(0, len(lines[i]))]
        elif action == "repeat":
            lines[i:i] = [lines[i]] * rng.randint(1, 50)
        elif action == "digits":
            lines[i] = "".join(c * rng.choice([1, 1, 5000]) if c.isdigit() else c for c in lines[i])
        elif action == "garble":
            lines[i] = "".join(rng.choice("<>/&;:=\x00\x1b[]{}.9") for _ in range(rng.randint(1, 200)))
        else:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


@given(st.sampled_from(PASTED), st.integers(0, 2**32))
def test_any_damaged_pasted_report_is_checked_or_refused_in_one_line(report: Path, seed: int) -> None:
    text = _mutated(report.read_text(encoding="utf-8", errors="replace"), seed)
    with tempfile.TemporaryDirectory() as folder:
        run(["check", "--from", write(Path(folder) / report.name, text), "--format", "json", "--no-record"])
