"""cudoctor fleet on a real local multi-node Ray cluster, and aggregate over report files."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cudoctor.facts import collect_live
from cudoctor.fleet import analysis
from tests.conftest import cudoctor

BAD_LIB = "/opt/old-module/cuda-11.8/lib64"


@pytest.fixture
def cluster() -> Iterator[tuple[Any, Any]]:
    pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    c.add_node(num_cpus=1)
    odd = c.add_node(num_cpus=1, num_gpus=1, env_vars={"LD_LIBRARY_PATH": BAD_LIB})
    c.wait_for_nodes()
    try:
        yield c, odd
    finally:
        c.shutdown()


def test_odd_node_is_named_on_a_real_ray_cluster(cluster: tuple[Any, Any]) -> None:
    from cudoctor.fleet import ray_runner

    c, odd = cluster
    reports = ray_runner.run(c.address, timeout=180)
    assert len(reports) == 3 and {r.status for r in reports} == {"ok"}
    result = analysis.analyse(reports)
    assert [len(g.nodes) for g in result.groups] == [2, 1]
    (outlier,) = result.outliers
    assert odd.node_id[:8] in outlier["node"]
    assert outlier["differences"] == [{"fact": "$LD_LIBRARY_PATH", "value": BAD_LIB, "majority": "(not set)"}]
    assert "env-ld-library-path-missing" in [f["id"] for f in result.groups[1].findings]


def test_a_node_that_dies_during_the_run_is_reported(cluster: tuple[Any, Any]) -> None:
    from cudoctor.fleet import ray_runner

    c, odd = cluster
    box: dict[str, Any] = {}
    runner = threading.Thread(
        target=lambda: box.setdefault("reports", ray_runner.run(c.address, timeout=60, delay_s=6.0))
    )
    runner.start()
    time.sleep(3.0)  # tasks are placed and sleeping (delay 6 s) when the node goes away
    c.remove_node(odd)
    runner.join(timeout=120)
    reports = {r.node_id: r for r in box["reports"]}
    assert reports[odd.node_id].status in ("failed", "timeout") and reports[odd.node_id].error
    assert sorted(r.status for nid, r in reports.items() if nid != odd.node_id) == ["ok", "ok"]


def _write(path: Path, env: dict[str, str]) -> None:
    path.write_text(json.dumps({"schema": 1, "snapshot": collect_live(env=env).to_json()}))


def test_aggregate_reports_from_files(tmp_path: Path) -> None:
    base = {"PATH": os.environ["PATH"]}
    for name in ("node-01", "node-02", "node-03"):
        _write(tmp_path / f"{name}.json", base)
    _write(tmp_path / "node-17.json", dict(base, LD_LIBRARY_PATH=BAD_LIB))
    (tmp_path / "node-99.json").write_text('{"snapshot": {"facts": ')
    result = analysis.analyse(
        analysis.load_reports([str(tmp_path)])
    )  # one host wrote them all: named by file
    assert [len(g.nodes) for g in result.groups] == [3, 1]
    assert result.outliers[0]["text"] == f"node-17: $LD_LIBRARY_PATH {BAD_LIB} where 3 node(s) have (not set)"
    assert [f.node for f in result.failed] == ["node-99"] and "unreadable" in result.failed[0].error


def test_fleet_cli(tmp_path: Path) -> None:
    base = {"PATH": os.environ["PATH"]}
    _write(tmp_path / "a.json", base)
    _write(tmp_path / "b.json", base)
    out = cudoctor(["fleet", "aggregate", str(tmp_path), "--format", "json"])
    doc = json.loads(out.stdout)
    assert out.returncode == 0 and doc["nodes"] == 2 and len(doc["groups"]) == 1 and doc["outliers"] == []
    assert cudoctor(["fleet"]).returncode == 2
    assert cudoctor(["fleet", "aggregate"]).returncode == 2
    missing = cudoctor(["fleet", "aggregate", str(tmp_path / "nope")])
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_a_node_whose_interfaces_the_setting_misses_stands_out(tmp_path: Path) -> None:
    """The same GLOO_SOCKET_IFNAME everywhere, and one node whose card is named differently."""
    env = {"PATH": os.environ["PATH"], "GLOO_SOCKET_IFNAME": "ens5"}
    for name, card in (("node-01", "ens5"), ("node-02", "ens5"), ("node-03", "ens5"), ("node-17", "ens6")):
        snap = collect_live(env=env).to_json()
        snap["facts"]["host.net_interfaces"] = {
            "status": "known",
            "value": [
                {"name": "lo", "ipv4": True, "ipv6": True},
                {"name": card, "ipv4": True, "ipv6": False},
            ],
            "source": "test",
        }
        (tmp_path / f"{name}.json").write_text(json.dumps({"schema": 1, "snapshot": snap}))
    result = analysis.analyse(analysis.load_reports([str(tmp_path)]))
    assert [len(g.nodes) for g in result.groups] == [3, 1]
    (outlier,) = result.outliers
    assert outlier["differences"] == [
        {"fact": "interfaces $GLOO_SOCKET_IFNAME selects", "value": "none", "majority": "ens5"}
    ]
    assert "socket-ifname-unmatched" in [f["id"] for f in result.groups[1].findings]
    assert "socket-ifname-unmatched" not in [f["id"] for f in result.groups[0].findings]


def test_a_node_whose_determinism_setting_differs_stands_out(tmp_path: Path) -> None:
    """A deterministic job fails only on the node where CUBLAS_WORKSPACE_CONFIG lost its colon."""
    base = {"PATH": os.environ["PATH"], "CUBLAS_WORKSPACE_CONFIG": ":4096:8"}
    for name in ("node-01", "node-02", "node-03"):
        _write(tmp_path / f"{name}.json", base)
    _write(tmp_path / "node-17.json", dict(base, CUBLAS_WORKSPACE_CONFIG="4096:8"))
    result = analysis.analyse(analysis.load_reports([str(tmp_path)]))
    (outlier,) = result.outliers
    assert outlier["differences"] == [
        {"fact": "$CUBLAS_WORKSPACE_CONFIG", "value": "4096:8", "majority": ":4096:8"}
    ]
