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


def _node_task(probe: bool, delay_s: float) -> dict[str, Any]:
    """Runs on the node: collect a live snapshot (and probes), return it as JSON."""
    import socket

    from cudoctor.facts import collect_live
    from cudoctor.model import known

    if delay_s:
        time.sleep(delay_s)
    snap = collect_live()
    if probe:
        from cudoctor import probe as probes

        snap.add(known("probe.results", probes.run_all(probes.installed()), "cudoctor probe"))
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
) -> list[NodeReport]:
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
                probe, delay_s
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
                data = ray.get(ref)
                rep = NodeReport(names[node_id], "ok", data["snapshot"], node_id=node_id)
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


def print_progress(rep: NodeReport) -> None:
    print(f"  {rep.node}: {rep.status}", file=sys.stderr, flush=True)
