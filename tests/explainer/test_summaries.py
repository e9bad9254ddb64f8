"""Launchers' summaries of a worker that failed (knowledge/summaries.toml): with no signature matched,
explain names the summary and says where the worker's own error is. torchrun's is made for real here
with the installed torch; the DeepSpeed and accelerate lines are their launchers' own wording."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudoctor.explainer import summaries
from tests import regex_samples
from tests.conftest import cudoctor, explained, first

DEEPSPEED = "[2023-06-01 12:00:00,000] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', 'train.py'] exits with return code = {code}\n"
ACCELERATE = "subprocess.CalledProcessError: Command '['/opt/conda/bin/python', 'train.py']' returned non-zero exit status 1.\n"


def test_the_table_validates_and_every_alternative_holds_an_anchor() -> None:
    assert summaries.validate() == []
    assert [
        text for entry in summaries.load() for text in regex_samples.unanchored(entry.regex, entry.anchors)
    ] == []


def failing_torchrun_job(folder: Path, *options: str) -> str:
    """What torchrun printed (stdout and stderr) for a one-process job whose script raised ValueError."""
    torchrun = Path(sys.executable).with_name("torchrun")
    if not torchrun.exists():
        pytest.skip("torchrun is not installed beside this Python")
    script = folder / "train.py"
    script.write_text("raise ValueError('bad config')\n")
    done = subprocess.run(
        [str(torchrun), "--standalone", "--nproc_per_node=1", *options, str(script)],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert done.returncode != 0 and "ChildFailedError" in done.stderr
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def torchrun_failure(tmp_path_factory: pytest.TempPathFactory) -> str:
    """--redirects=3 keeps the worker's traceback out of torchrun's own output, as a pasted tail does."""
    return failing_torchrun_job(tmp_path_factory.mktemp("job"), "--redirects=3")


def test_torchruns_summary_alone_points_at_the_workers_output(torchrun_failure: str) -> None:
    exp = explained(torchrun_failure)
    assert exp.root is None and exp.summary is not None and exp.summary.id == "torchrun-child-failed"
    assert exp.causes == []
    assert exp.root_fallback is not None and "ChildFailedError" in exp.root_fallback[1]


def test_the_cli_says_the_error_is_elsewhere_and_exits_1(tmp_path: Path, torchrun_failure: str) -> None:
    log = tmp_path / "run.log"
    log.write_text(torchrun_failure)
    text = cudoctor(["explain", str(log), "--no-live"])
    assert (
        text.returncode == 1
        and "is torchrun's summary of a worker that failed, not the error itself" in text.stdout
    )
    assert "--log-dir logs --redirects 3 --tee 3" in text.stdout
    doc = json.loads(cudoctor(["explain", str(log), "--no-live", "--format", "json"]).stdout)
    assert doc["root"]["summary"]["id"] == "torchrun-child-failed" and doc["causes"] == []
    assert "To find it:" in cudoctor(["explain", str(log), "--no-live", "--format", "markdown"]).stdout


def test_a_workers_own_error_above_the_summary_is_the_root() -> None:
    exp = explained(
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total "
        "capacity of 79.15 GiB of which 1.02 GiB is free.\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
    )
    assert exp.root is not None and exp.summary is None and first(exp)["id"] == "gpu-oom"


@pytest.mark.parametrize(
    ("log", "summary"),
    [
        (DEEPSPEED.format(code=1), "deepspeed-launcher-return-code"),
        (ACCELERATE, "python-subprocess-failed"),
    ],
)
def test_other_launchers_summaries_are_named(log: str, summary: str) -> None:
    exp = explained(log)
    assert exp.summary is not None and exp.summary.id == summary


def test_a_worker_killed_with_sigkill_is_memory_not_a_summary() -> None:
    """microsoft/DeepSpeed#4181: the -9 return code names its cause itself."""
    exp = explained(DEEPSPEED.format(code=-9))
    assert exp.root is not None and exp.summary is None and first(exp)["id"] == "host-oom"
    assert "offload" in str(first(exp)["why"])


@pytest.fixture(scope="module")
def torchrun_full_output(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The same job without --redirects: the worker's traceback comes first, then torchrun's summary."""
    out = failing_torchrun_job(tmp_path_factory.mktemp("job"))
    assert "ValueError: bad config" in out
    return out


def test_the_workers_own_exception_above_the_summary_is_the_root(torchrun_full_output: str) -> None:
    exp = explained(torchrun_full_output)
    assert exp.summary is None and exp.root_fallback is not None
    assert (
        exp.root_fallback[1] == "ValueError: bad config"
    )  # not torchrun's own 'raise ChildFailedError(' frame


def test_an_exception_after_the_summary_is_left_to_the_usual_choice() -> None:
    exp = explained(DEEPSPEED.format(code=1) + "KeyboardInterrupt\n")
    assert exp.summary is None and exp.root_fallback == (2, "KeyboardInterrupt")
