"""`cudoctor fleet --ray ... --python PATH`: the Python environment each node checks (issue 46).

The node task runs here in-process (what a Ray worker runs), then on a real local Ray cluster of two
nodes; the environments are real venvs from the interpreters pyenv has here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cudoctor.fleet import analysis, ray_runner
from tests.conftest import cudoctor
from tests.facts.test_target_python import make_venv, need


@pytest.fixture(scope="module")
def env39(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(need("3.9"), tmp_path_factory.mktemp("fleet") / "train")


def test_the_node_task_checks_the_named_environment(env39: Path) -> None:
    data = ray_runner._node_task(False, 0.0, str(env39))
    target = data["snapshot"]["facts"]["host.target"]["value"]
    assert target["prefix"] == str(env39) and target["chosen_by"] == "--python"
    assert data["snapshot"]["facts"]["host.python"]["value"]["version"].startswith("3.9.")


def test_the_node_default_is_chosen_as_on_one_machine(env39: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDOCTOR_PYTHON", raising=False)
    monkeypatch.setenv("VIRTUAL_ENV", str(env39))
    target = ray_runner._node_task(False, 0.0)["snapshot"]["facts"]["host.target"]["value"]
    assert target["chosen_by"] == "VIRTUAL_ENV" and target["prefix"] == str(env39)
    monkeypatch.setenv("CUDOCTOR_PYTHON", "self")
    assert ray_runner._node_task(False, 0.0)["snapshot"]["facts"]["host.target"]["value"]["self"] is True


def test_a_python_a_node_cannot_ask_is_that_nodes_one_line_error(tmp_path: Path) -> None:
    data = ray_runner._node_task(False, 0.0, str(tmp_path / "nope" / "python"))
    rep = ray_runner._report(data, "node-7", "abc")
    assert rep.status == "failed" and rep.snapshot is None
    assert rep.error.endswith("nope/python: no such file") and "\n" not in rep.error


def test_a_node_checking_another_environment_stands_out(env39: Path) -> None:
    own = ray_runner._node_task(False, 0.0, "self")["snapshot"]
    other = ray_runner._node_task(False, 0.0, str(env39))["snapshot"]
    reports = [analysis.NodeReport(f"n{i}", "ok", own) for i in range(3)]
    reports.append(analysis.NodeReport("n9", "ok", other))
    (outlier,) = analysis.analyse(reports).outliers
    assert outlier["node"] == "n9"
    assert {
        "fact": "python env",
        "value": str(env39),
        "majority": own["facts"]["host.target"]["value"]["prefix"],
    } in outlier["differences"]


def test_fleet_python_bad_input_is_one_line_exit_2(tmp_path: Path) -> None:
    out = cudoctor(["fleet", "aggregate", str(tmp_path), "--python", "/usr/bin/python3"])
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "not with aggregate" in out.stderr
    out = cudoctor(["fleet", "--ray", "auto", "--python", " "])
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "--python is empty" in out.stderr


@pytest.fixture
def cluster() -> Iterator[Any]:
    pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    c.add_node(num_cpus=1)
    c.wait_for_nodes()
    try:
        yield c
    finally:
        c.shutdown()


def test_every_node_of_a_real_ray_cluster_checks_the_named_environment(
    cluster: Any, env39: Path, tmp_path: Path
) -> None:
    reports = ray_runner.run(cluster.address, probe=True, timeout=240, request_gpus=False, python=str(env39))
    assert len(reports) == 2 and {r.status for r in reports} == {"ok"}, [r.error for r in reports]
    for rep in reports:
        assert rep.snapshot is not None
        facts = rep.snapshot["facts"]
        assert facts["host.target"]["value"]["prefix"] == str(env39)
        assert facts["probe.results"]["value"] == []  # nothing to probe in a bare venv: not cudoctor's numpy
    broken = ray_runner.run(
        cluster.address, timeout=240, request_gpus=False, python=os.fspath(tmp_path / "nope")
    )
    assert {r.status for r in broken} == {"failed"} and all("no such file" in r.error for r in broken)
    assert json.dumps(analysis.analyse(reports).to_json())  # one group, JSON-ready
