"""Collect a live Snapshot: every collector runs concurrently, results are stored in order.

A collector that raises becomes an `error` fact naming it; the others still run. Nothing in
this package imports a framework or initialises CUDA in cudoctor's own process.
"""

from __future__ import annotations

import datetime
import os
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait

from cudoctor.facts import (
    caches,
    companions,
    driver,
    driverlibs,
    frameworks,
    host,
    kernel_log,
    limits,
    loader,
    markers,
    network,
    packages,
    toolkits,
    xlaflags,
)
from cudoctor.facts.target import Target, self_target
from cudoctor.model import Fact, Snapshot, failed, known

Collector = Callable[[], list[Fact]]


def _packages(
    sys_path: Sequence[str],
    ldcache: dict[str, list[str]],
    env: Mapping[str, str],
    marker_env: Mapping[str, str] | None = None,
    interpreter: str | None = None,
) -> list[Fact]:
    """Packages, pins and framework builds of the environment `sys_path` belongs to; `marker_env` and
    `interpreter` are that environment's (default: cudoctor's own)."""
    dists, problems = packages.scan(sys_path)
    ld = loader.for_process(env, ldcache, interpreter)
    marker_env = dict(markers.environment() if marker_env is None else marker_env)
    installed = {d.name: d.version for d in dists}
    facts = [known("python.packages", installed, "dist-info scan")]
    broken = [d.error for d in dists if d.error] + problems
    facts.append(known("python.package_problems", broken, "dist-info scan"))
    facts.append(known("python.pins", packages.pins(dists), "dist-info Requires-Dist"))
    wheel_pins = packages.wheel_pins(dists, marker_env)
    facts.append(known("python.cuda_wheel_pins", wheel_pins, "dist-info Requires-Dist"))
    requirements = packages.gpu_requirements(dists, marker_env)
    facts.append(known("python.requirements", requirements, "dist-info Requires-Dist"))
    nvidia = [d.to_json() for d in dists if d.name.startswith(("nvidia-", "cuda-"))]
    facts.append(known("python.nvidia_wheels", nvidia, "dist-info scan"))
    facts += frameworks.framework_facts(sys_path, dists, ld)
    facts.append(companions.collect(sys_path, installed))
    return facts


def tool_timeout(env: Mapping[str, str]) -> float:
    """Seconds any one external tool (ptxas --version, the NVML probe) may take: CUDOCTOR_TIMEOUT, default 5."""
    try:
        return max(0.1, float(env.get("CUDOCTOR_TIMEOUT", "5")))
    except ValueError:
        return 5.0


def _toolkits(env: Mapping[str, str], sys_path: Sequence[str]) -> list[Fact]:
    found = toolkits.collect_toolkits(env, sys_path, timeout=tool_timeout(env))
    asked = {
        toolkits.follow_wrapper(tk["ptxas"]): tk["ptxas_version"]
        for tk in found
        if tk.get("ptxas") and tk.get("ptxas_version")
    }
    for tk in found:  # a toolkit's own nvcc is of the toolkit's version (its cuda.h / version.json)
        if tk.get("nvcc") and tk.get("version"):
            version = str(tk["version"])
            answer = {"version": version, "release": version, "read_from": tk.get("version_source", "")}
            asked.setdefault(toolkits.follow_wrapper(tk["nvcc"]), answer)
    return [
        known("cuda.toolkits", found, "dirs, env, PATH, wheels"),
        known("cuda.path_tools", toolkits.path_tools(env), "env:PATH"),
        known(
            "cuda.run_tools",
            toolkits.run_tools(env, tool_timeout(env), asked, packages.find_package_dir(sys_path, "triton")),
            "PATH, CUDA_HOME, CUDA_PATH, CUDA_DIR, XLA_FLAGS, TRITON_PTXAS_PATH, triton: <tool> --version",
        ),
    ]


def _ldcache_fact(ldcache: dict[str, list[str]], how: str) -> Fact:
    cuda_like = {
        k: v
        for k, v in ldcache.items()
        if k.startswith(("libcud", "libcublas", "libnccl", "libnvidia-ml", "libnvJitLink", "libnvrtc"))
    }
    if not how.startswith("cmd:"):
        return failed("loader.ldcache", "ldconfig", how)
    return known("loader.ldcache", cuda_like, how)


def collect_live(
    env: Mapping[str, str] | None = None, sys_path: Sequence[str] | None = None, target: Target | None = None
) -> Snapshot:
    """This machine's facts, for the Python environment `target` (default: cudoctor's own; `sys_path`
    replaces its sys.path)."""
    env = dict(os.environ if env is None else env)
    target = self_target() if target is None else target
    sys_path = list(target.sys_path if sys_path is None else sys_path)
    interpreter = None if target.is_self else target.executable
    snap = Snapshot(
        origin="live", created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    )
    t0 = time.perf_counter()
    ldcache, how = loader.read_ldcache()
    snap.timings_ms["ldcache"] = (time.perf_counter() - t0) * 1000
    collectors: list[tuple[str, Collector]] = [
        (
            "driver",
            lambda: [
                *driver.collect_driver(ldcache, timeout=2 * tool_timeout(env)),
                *driverlibs.collect(env, ldcache, interpreter),
            ],
        ),
        ("toolkits", lambda: _toolkits(env, sys_path)),
        ("packages", lambda: _packages(sys_path, ldcache, env, target.markers, interpreter)),
        (
            "host",
            lambda: [
                *host.collect_host(env, target.python_fact()),
                target.fact(),
                limits.process_limits(),
                caches.jit_caches(env),
                network.interfaces(),
                network.ib_devices(),
                kernel_log.xid_events(timeout=tool_timeout(env)),
            ],
        ),
        ("xla_flags", lambda: [xlaflags.collect(env, sys_path)]),
        (
            "cpu_runtimes",
            lambda: [known("cpu.runtime_libs", host.cpu_runtime_libs(sys_path), "package files")],
        ),
    ]
    snap.add(_ldcache_fact(ldcache, how))
    with ThreadPoolExecutor(max_workers=len(collectors)) as pool:
        futures = [(name, pool.submit(_timed, fn)) for name, fn in collectors]
        _say_if_slow(futures)
        for name, fut in futures:
            _store(snap, name, fut)
    return snap


def _say_if_slow(futures: list[tuple[str, Future[tuple[list[Fact], float]]]], after_s: float = 5.0) -> None:
    """On a terminal, tell the person what cudoctor is still waiting for after `after_s` seconds."""
    if not sys.stderr.isatty():
        return
    wait([f for _, f in futures], timeout=after_s)
    slow = [name for name, f in futures if not f.done()]
    if slow:
        print(
            f"cudoctor: still waiting for {', '.join(slow)} (each external tool is bounded by CUDOCTOR_TIMEOUT)...",
            file=sys.stderr,
            flush=True,
        )


def _timed(fn: Collector) -> tuple[list[Fact], float]:
    t0 = time.perf_counter()
    return fn(), (time.perf_counter() - t0) * 1000


def _store(snap: Snapshot, name: str, fut: Future[tuple[list[Fact], float]]) -> None:
    try:
        facts, ms = fut.result()
    except Exception as exc:  # a collector bug must not take the tool down
        snap.add(
            failed(f"collector.{name}", name, f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}")
        )
        return
    snap.timings_ms[name] = ms
    for fact in facts:
        snap.add(fact)
