"""`cudoctor explain` as a command: output formats, stdin, gzip and UTF-16 logs, exit status, bad input,
facts files and reports from another machine, and the corpus bars it holds."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cudoctor.explainer import command, corpus, scan
from tests.conftest import ROOT, SHARED, cudoctor
from tests.explainer.helpers import ASYNC


def test_cli_json_contract(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(ASYNC)
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"gpu": "A100", "framework_version": "torch 2.5.1+cu124"}))
    out = cudoctor(["explain", str(log), "--facts", str(facts), "--no-live", "--format", "json"])
    assert out.returncode == 1, out.stderr
    doc = json.loads(out.stdout)
    assert doc["root"]["line"] == 2 and "Assertion" in doc["root"]["text"]
    first = doc["causes"][0]
    assert (
        set(first) >= {"id", "confidence", "title", "evidence", "fix"}
        and first["id"] == "illegal-memory-access"
    )
    assert 0 < first["confidence"] <= 1 and first["fix"]


def test_cli_reads_stdin_and_gzip(tmp_path: Path) -> None:
    out = cudoctor(
        ["explain", "-", "--no-live", "--format", "json"],
        stdin=b"AssertionError: Torch not compiled with CUDA enabled\n",
    )
    assert json.loads(out.stdout)["causes"][0]["id"] == "cpu-only-build"
    gz = tmp_path / "log.gz"
    with gzip.open(gz, "wb") as fh:
        fh.write(b"noise\n" * 1000 + b"RuntimeError: CUDA error: out of memory\n")
    doc = json.loads(cudoctor(["explain", str(gz), "--no-live", "--format", "json"]).stdout)
    assert doc["root"]["line"] == 1001 and doc["causes"][0]["id"] == "gpu-oom"


UTF16_LOG = 'Traceback (most recent call last):\r\n  File "C:\\Users\\Zoë\\x.py", line 1\r\nRuntimeError: CUDA error: out of memory\r\n'


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_a_utf16_log_as_windows_powershell_writes_it_is_read(tmp_path: Path, encoding: str) -> None:
    log = tmp_path / "run.log"
    log.write_bytes(
        ("\ufeff" if encoding == "utf-16-be" else "").encode(encoding) + UTF16_LOG.encode(encoding)
    )
    doc = json.loads(cudoctor(["explain", str(log), "--no-live", "--format", "json"]).stdout)
    assert doc["root"]["line"] == 3 and doc["causes"][0]["id"] == "gpu-oom"
    piped = cudoctor(["explain", "-", "--no-live"], stdin=log.read_bytes())
    assert piped.returncode == 1 and b"Root error (line 3)" in piped.stdout


def test_utf16_across_odd_chunk_boundaries_and_inside_gzip(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(scan, "CHUNK", 4097)  # cuts code units (and the é's two bytes) in half
    text = "naïve progress ✓ 10%\n" * 3000 + "RuntimeError: CUDA error: out of memory\n"
    gz = tmp_path / "run.log.gz"
    gz.write_bytes(gzip.compress(text.encode("utf-16")))
    stream = scan.open_log(str(gz))
    try:
        result = scan.scan(stream)
    finally:
        stream.close()
    assert {(m.line, m.sig.id) for m in result.matches} == {
        (3001, "gpu-oom/cuda-error-out-of-memory"),
        (3001, "gpu-oom/cuda-runtime-error-out-of-memory"),  # the precise one, which replaces it when ranked
    }
    assert result.lines == 3001 and "naïve progress ✓" in result.tail[0][1]
    # a real binary (NUL bytes, no UTF-16 shape) is still refused
    binary = tmp_path / "a.bin"
    binary.write_bytes(bytes(range(256)) * 40)
    assert "binary file" in cudoctor(["explain", str(binary)]).stderr


def test_exit_status_says_whether_the_log_holds_an_error(tmp_path: Path) -> None:
    cases = {
        "RuntimeError: CUDA error: out of memory\n": 1,  # a known error
        "ValueError: the frobnicator exploded\n": 1,  # an error no signature knows is still an error
        "epoch 1 loss 0.3\nepoch 2 loss 0.2\n": 0,
        "I tensorflow/core/platform/cpu_feature_guard.cc:210] This TensorFlow binary is optimized to use "
        "available CPU instructions in performance-critical operations.\n": 0,  # only a harmless notice
    }
    for text, status in cases.items():
        log = tmp_path / "t.log"
        log.write_text(text)
        out = cudoctor(["explain", str(log), "--no-live"])
        assert out.returncode == status, (text, out.stdout)
        if text.startswith("ValueError"):
            assert out.stdout.startswith("No known GPU/BLAS error signature matched")


def test_cli_text_and_markdown(tmp_path: Path) -> None:
    log = tmp_path / "t.log"
    log.write_text("RuntimeError: mat1 and mat2 shapes cannot be multiplied (1x32768 and 25088x512)\n")
    text = cudoctor(["explain", str(log), "--no-live"]).stdout
    assert "Root error (line 1)" in text and "shape-mismatch" in text and "fix 1:" in text
    md = cudoctor(["explain", str(log), "--no-live", "--format", "markdown"]).stdout
    assert md.startswith("## cudoctor explain") and "### 1." in md


def test_text_lists_a_signature_fix_once_and_each_cause_its_own(tmp_path: Path) -> None:
    log = tmp_path / "t.log"
    log.write_text("RuntimeError: GET was unable to find an engine to execute this computation\n")
    doc = json.loads(cudoctor(["explain", str(log), "--no-live", "--format", "json"]).stdout)
    shared = next(s for s in doc["causes"][0]["fix"] if s.startswith("If the right cuDNN is loaded"))
    assert all(shared in c["fix"] for c in doc["causes"])  # JSON keeps every cause's full list
    text = cudoctor(["explain", str(log), "--no-live"]).stdout
    md = cudoctor(["explain", str(log), "--no-live", "--format", "markdown"]).stdout
    assert text.count(shared) == 1 and md.count(shared) == 1
    # the lower causes show their own first step instead, and the root line is not repeated as evidence
    dtype = next(c for c in doc["causes"] if c["id"] == "dtype-mismatch")
    assert dtype["fix"][1].startswith("Cast one operand") and dtype["fix"][1] in text
    assert "evidence: line 1:" not in text


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: None, "does not exist"),
        (lambda p: p.mkdir(), "is a directory"),
        (lambda p: p.write_bytes(b""), "is empty"),
        (lambda p: p.write_bytes(b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 4096), "binary"),
    ],
    ids=["missing", "directory", "empty", "binary"],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, make, message: str) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "input.log"
    make(target)
    out = cudoctor(["explain", str(target), "--no-live"])
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and message in out.stderr and "Traceback" not in out.stderr


def test_bad_facts_file_is_exit_2(tmp_path: Path) -> None:
    log = tmp_path / "l.log"
    log.write_text("CUDA out of memory\n")
    bad = tmp_path / "facts.json"
    bad.write_text("{not json")
    out = cudoctor(["explain", str(log), "--facts", str(bad), "--no-live"])
    assert out.returncode == 2 and "not valid JSON" in out.stderr


def test_a_facts_file_with_keys_cudoctor_does_not_know_is_refused_with_the_nearest_ones(
    tmp_path: Path,
) -> None:
    """Issue 40, point 3: {"gpu_name": "A100", "framework": "torch 1.7.0+cu101"} used to pass silently."""
    bad = tmp_path / "facts.json"
    bad.write_text(json.dumps({"gpu_name": "A100", "framework": "torch 1.7.0+cu101"}))
    log = tmp_path / "run.log"
    log.write_text("CUDA out of memory\n")
    for argv in (
        ["check", "--facts", str(bad), "--no-live"],
        ["explain", str(log), "--facts", str(bad), "--no-live"],
    ):
        out = cudoctor(argv)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert "'gpu_name' (did you mean 'gpu'?)" in out.stderr
        assert "'framework' (did you mean 'framework_version'?)" in out.stderr
    # a bare 'cuda' has two meanings: the one installed and the one the build uses (it suggested 'cudnn')
    bad.write_text(json.dumps({"cuda": "11.8"}))
    out = cudoctor(["check", "--facts", str(bad), "--no-live"])
    assert "'cuda' (did you mean 'system_cuda' or 'framework_cuda'?)" in out.stderr, out.stderr
    bad.write_text(json.dumps({"gpu": ["A100", "A100"]}))
    out = cudoctor(["check", "--facts", str(bad), "--no-live"])
    assert out.returncode == 2 and "'gpu' must be text or a number" in out.stderr
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"gpu": "A100", "driver": 470.82, "framework_version": "torch 1.7.0+cu101"}))
    assert cudoctor(["check", "--facts", str(good), "--no-live"]).returncode in (0, 1)


def test_huge_line_without_newline_is_scanned_in_pieces(tmp_path: Path) -> None:
    path = tmp_path / "oneline.log"
    with open(path, "wb") as fh:
        for _ in range(24):
            fh.write(b"x" * (1 << 20))
        fh.write(b" RuntimeError: CUDA error: device-side assert triggered")
    out = cudoctor(["explain", str(path), "--no-live", "--format", "json"])
    doc = json.loads(out.stdout)
    assert doc["causes"][0]["id"] == "illegal-memory-access" and doc["stats"]["lines"] == 1
    assert len(doc["root"]["text"]) <= scan.KEEP_LINE


EXTRA_CORPUS = [os.path.join(corpus.HERE, name) for name in corpus.EXTRA]


def test_the_dev_corpus_scored_through_the_cli_holds_its_bar() -> None:
    """shared/eval/score_explain.py runs the real CLI once per report (the contract other tools use)."""
    corpus = os.path.join(SHARED, "corpus", "dev.jsonl")
    scorer = os.path.join(SHARED, "eval", "score_explain.py")
    if not os.path.exists(corpus) or not os.path.exists(scorer):
        pytest.skip("shared/ is not next to this checkout")
    out = subprocess.run(
        [sys.executable, scorer, corpus, "--cmd", f"{sys.executable} -m cudoctor"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
    )
    summary = dict(kv.split("=") for kv in out.stdout.strip().splitlines()[-1].split())
    assert float(summary["top1"]) >= 0.80 and float(summary["top3"]) >= 0.95, out.stdout


def test_the_shipped_corpus_holds_its_in_sample_bar() -> None:
    """Every shipped report, explained in process as `explain --facts --no-live` would (in-sample: the
    regression bar, not a measure of generalisation; tools/cv_explain.py gives that). The reports before
    round 116 hold the bar they have held since issue 38 (0.90); the rounds since, harder and labelled by
    what fixed them, stood at 0.81 in-sample when session 39 joined them and at 0.82 / 0.97 (565 reports)
    when session 41 joined rounds 156-164: each group holds its own bar, so a harder round joined does not
    move the earlier one's. Rounds 224-240 (157 reports, session 46: bindings, RL stacks, ComfyUI nodes, most
    fixed by a library's release) stood at 0.71 / 0.92 when joined, rounds 116-223 at 0.81 / 0.97."""
    rows = [
        json.loads(line)
        for path in EXTRA_CORPUS
        for line in Path(path).read_text(encoding="utf-8").splitlines()
        if line
    ]
    hits: list[
        tuple[int, bool, bool]
    ] = []  # (the group: before 116, 116-223, 224 on; first right; in the first three)
    for row in rows:
        ids = [c["id"] for c in command.explain_stated(row["log"], row.get("context") or {})["causes"]]
        m = re.match(r"r(\d+)", row["id"])
        n = int(m.group(1)) if m else 0
        group = 0 if n < 116 else 1 if n < 224 else 2
        hits.append((group, bool(ids) and ids[0] == row["causes"][0], row["causes"][0] in ids[:3]))
    for group, top1_bar, top3_bar in ((0, 0.90, 0.0), (1, 0.80, 0.95), (2, 0.70, 0.90)):
        mine = [h for h in hits if h[0] == group]
        top1, top3 = sum(h[1] for h in mine), sum(h[2] for h in mine)
        assert top1 / len(mine) >= top1_bar and top3 / len(mine) >= top3_bar, (group, top1, top3, len(mine))


# Recorded on this project's CPU machine (jax 0.10.2) by bench/gpu_record.py: jax.devices('gpu')
JAX_NO_GPU_BACKEND = """\
  File "/work/main/.venv/lib/python3.11/site-packages/jax/_src/xla_bridge.py", line 954, in _get_backend_uncached
    platform = canonicalize_platform(platform)
               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/work/main/.venv/lib/python3.11/site-packages/jax/_src/xla_bridge.py", line 758, in canonicalize_platform
    raise RuntimeError(f"Unknown backend: '{platform}' requested, but no "
RuntimeError: Unknown backend: 'gpu' requested, but no platforms that are instances of gpu are present. Platforms present are: cpu
"""


def test_generic_fixes_keep_only_the_framework_the_log_names(tmp_path: Path) -> None:
    log = tmp_path / "jax.log"
    log.write_text(JAX_NO_GPU_BACKEND)
    doc = json.loads(cudoctor(["explain", str(log), "--no-live", "--format", "json"]).stdout)
    # the signature and the learned stage put the CPU-only build and the hidden GPU first and second
    assert {c["id"] for c in doc["causes"][:2]} == {"cpu-only-build", "no-gpu-visible"}
    top = next(c for c in doc["causes"] if c["id"] == "cpu-only-build")
    assert any(f.startswith("JAX:") for f in top["fix"])
    assert not any(f.startswith(("PyTorch:", "TensorFlow")) for f in top["fix"])
    # without a framework named, every framework's fix stays
    log.write_text(JAX_NO_GPU_BACKEND.splitlines()[-1] + "\n")
    doc = json.loads(cudoctor(["explain", str(log), "--no-live", "--format", "json"]).stdout)
    assert any(f.startswith("PyTorch:") for f in doc["causes"][0]["fix"])


def test_explain_reads_another_machines_nvidia_smi_report_as_its_facts(tmp_path: Path) -> None:
    """`--snapshot` takes an nvidia-smi -q report: a GPU in Exclusive_Process held by another
    process turns 'busy or unavailable' into that GPU, that process and the command that frees it."""
    log = tmp_path / "busy.log"
    log.write_text("RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable\n")
    real = Path(ROOT) / "tests" / "fixtures" / "reports" / "nvidia_smi_q_t4_exclusive_mps.txt"
    held = tmp_path / "t4_held_by_python.txt"  # the real report, its MPS server swapped for a job
    held.write_text(real.read_text().replace("nvidia-cuda-mps-server", "python"))

    def causes(report: Path) -> list[dict]:
        out = cudoctor(["explain", str(log), "--snapshot", str(report), "--no-live", "--format", "json"])
        assert out.returncode == 1, out.stderr
        return json.loads(out.stdout)["causes"]

    first = causes(held)[0]
    assert first["id"] == "no-gpu-visible"
    assert any("Exclusive_Process" in e and "pid 25384 (python)" in e for e in first["evidence"])
    assert first["fix"][0].startswith("sudo nvidia-smi -i 0 -c DEFAULT")
    # Under MPS the same mode is the intended setup: no compute-mode evidence, no such fix.
    mps = causes(real)[0]
    assert not any("Exclusive_Process" in e for e in mps["evidence"])
    assert not any("-c DEFAULT" in f for f in mps["fix"])


def test_a_lower_cause_whose_steps_were_all_listed_above_points_at_them(tmp_path: Path) -> None:
    log = tmp_path / "t.log"
    log.write_text("RuntimeError: cutlassF: no kernel found to launch!\n")
    text = cudoctor(["explain", str(log), "--no-live"]).stdout
    assert text.count("no bfloat16 kernels") == 1
    assert "[arch-unsupported, confidence" in text and "fix: the steps under 1 above" in text
    md = cudoctor(["explain", str(log), "--no-live", "--format", "markdown"]).stdout
    assert "Fix: the steps under 1 above." in md
    # a lower cause with steps of its own lists them and no pointer
    other = tmp_path / "o.log"
    other.write_text("RuntimeError: GET was unable to find an engine to execute this computation\n")
    assert "the steps under" not in cudoctor(["explain", str(other), "--no-live"]).stdout


def test_tensorflows_own_device_names_say_the_log_is_tensorflows() -> None:
    """tensorflow/tensorflow#62375 (blind set 67): the log is only TF's device list, the version stated bare
    ('2.14') on native Windows: TensorFlow 2.14 there is a CPU build, and the steps are TensorFlow's (WSL2)."""
    import io

    from cudoctor.explainer import scan
    from cudoctor.explainer.command import explain_stated, guess_framework

    log = "GPU []\n[PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')]"
    assert guess_framework(scan.scan(io.BytesIO(log.encode()))) == "tensorflow"
    doc = explain_stated(log, {"os": "Windows 10", "framework_version": "2.14", "gpu": "nvidia GTX 1060 6GB"})
    first = doc["causes"][0]
    assert first["id"] == "cpu-only-build" and any("WSL2" in s for s in first["fix"])
    assert not any("download.pytorch.org" in s for c in doc["causes"] for s in c["fix"])
