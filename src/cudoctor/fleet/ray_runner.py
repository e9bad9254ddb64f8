"""One cudoctor task on every alive node of a Ray cluster (hard node affinity), results gathered.

Ray is an optional extra (`pip install cudoctor[fleet]`) imported only here. Every node needs
cudoctor importable by its workers (same environment, or runtime_env={"pip": ["cudoctor"]}).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import Any

from cudoctor.fleet.analysis import NodeReport
from cudoctor.inputs import InputError


def _node_task(probe: bool, delay_s: float, python: str | None = None) -> dict[str, Any]:
    """Runs on the node: collect a live snapshot (and probes) of the Python environment `python`
    names there (default: as `cudoctor check` chooses on that node), return it as JSON; a Python
    that cannot be asked there is that node's one-line error."""
    import os
    import socket

    from cudoctor.commands import probe_fact
    from cudoctor.facts import collect_live, tool_timeout
    from cudoctor.facts.target import TargetError, choose

    if delay_s:
        time.sleep(delay_s)
    env = dict(os.environ)
    try:
        target = choose(python, env, 2 * tool_timeout(env))
    except TargetError as exc:
        return {"host": socket.gethostname(), "error": str(exc)}
    snap = collect_live(env, target=target)
    if probe:
        snap.add(probe_fact([], 0, 180.0, target))
    return {"host": socket.gethostname(), "snapshot": snap.to_json()}


def _names(nodes: list[dict[str, Any]]) -> dict[str, str]:
    """NodeID -> a readable name: the host name, made unique with the node IP or id when needed."""
    hosts = [str(n.get("NodeManagerHostname") or n.get("NodeManagerAddress")) for n in nodes]
    names = {}
    for n, host in zip(nodes, hosts, strict=True):
        name = (
            host if hosts.count(host) == 1 else f"{host}/{n.get('NodeManagerAddress')}:{str(n['NodeID'])[:8]}"
        )
        names[n["NodeID"]] = name
    return names


def run(
    address: str,
    probe: bool = False,
    timeout: float = 300.0,
    request_gpus: bool = True,
    progress: Callable[[NodeReport], None] | None = None,
    delay_s: float = 0.0,
    python: str | None = None,
) -> list[NodeReport]:
    """Check every alive node; `python`: the Python environment to check on each (a path there, or
    "self": the workers' own; default: as `cudoctor check` chooses on that node)."""
    try:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    except ImportError:
        raise InputError("Ray is not installed: pip install 'cudoctor[fleet]'") from None
    started_here = not ray.is_initialized()
    if started_here:
        try:
            ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise InputError(f"cannot connect to the Ray cluster at {address}: {exc}") from None
    try:
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        names = _names(nodes)
        task = ray.remote(_node_task)
        refs = {}
        for n in nodes:
            gpus = float((n.get("Resources") or {}).get("GPU", 0)) if request_gpus else 0.0
            strategy = NodeAffinitySchedulingStrategy(node_id=n["NodeID"], soft=False)
            ref = task.options(scheduling_strategy=strategy, num_cpus=0, num_gpus=gpus, max_retries=0).remote(
                probe, delay_s, python
            )
            refs[ref] = n["NodeID"]
        return _gather(ray, refs, names, timeout, progress)
    finally:
        if started_here:
            ray.shutdown()


def _gather(
    ray: Any,
    refs: dict[Any, str],
    names: dict[str, str],
    timeout: float,
    progress: Callable[[NodeReport], None] | None,
) -> list[NodeReport]:
    out: list[NodeReport] = []
    pending = list(refs)
    deadline = time.monotonic() + timeout
    while pending:
        done, pending = ray.wait(pending, num_returns=1, timeout=max(0.0, deadline - time.monotonic()))
        if not done:
            break
        for ref in done:
            node_id = refs[ref]
            try:
                rep = _report(ray.get(ref), names[node_id], node_id)
            except Exception as exc:  # node died, worker crashed, task failed: a result, not a crash
                rep = NodeReport(
                    names[node_id],
                    "failed",
                    None,
                    f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}",
                    node_id,
                )
            out.append(rep)
            if progress:
                progress(rep)
    for ref in pending:
        ray.cancel(ref, force=True)
        rep = NodeReport(
            names[refs[ref]],
            "timeout",
            None,
            f"no answer within {timeout:g} s (node busy, GPUs held by other jobs, or hung)",
            refs[ref],
        )
        out.append(rep)
        if progress:
            progress(rep)
    return out


def _report(data: dict[str, Any], name: str, node_id: str) -> NodeReport:
    """A node's answer: its snapshot, or why its Python could not be asked."""
    if "error" in data:
        return NodeReport(name, "failed", None, str(data["error"]), node_id)
    return NodeReport(name, "ok", data["snapshot"], node_id=node_id)


def print_progress(rep: NodeReport) -> None:
    print(f"  {rep.node}: {rep.status}", file=sys.stderr, flush=True)
