"""Live GEMM probes, one isolated child per framework, that cannot take the tool down.

Each child (`python child.py` run from /, own process group, timeout, killed as a group) imports one
framework, checks a small product per device and dtype against float64 and times a larger one.
A crash, a hang, an exception or an out-of-memory becomes a result whose stderr goes through
explain; an asynchronous CUDA error is re-run once with CUDA_LAUNCH_BLOCKING=1.
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from cudoctor import knowledge, model, runner
from cudoctor.facts import packages

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child.py")
FRAMEWORKS = ("numpy", *model.FRAMEWORKS)  # NumPy too: the CPU BLAS beside them
DIST_NAMES = {
    "numpy": ("numpy",),
    "torch": ("torch",),
    "tensorflow": ("tensorflow", "tensorflow-cpu", "tensorflow-gpu"),
    "jax": ("jaxlib",),
    "cupy": (),
}
ASYNC_HINT = re.compile(r"asynchronously reported|CUDA_LAUNCH_BLOCKING", re.I)

# settle_s / sustained_s: GPU only (idle before the burst; how long the sustained figure runs).
DEFAULTS: dict[str, Any] = {
    "check_n": 256,
    "cpu_n": 1024,
    "gpu_n": 8192,
    "min_time": 0.3,
    "stress": 0,
    "settle_s": 1.0,
    "sustained_s": 1.0,
}


def installed(sys_path: Sequence[str] | None = None) -> list[str]:
    """Frameworks of FRAMEWORKS installed for this interpreter (dist-info scan, no import)."""
    dists, _ = packages.scan(sys.path if sys_path is None else sys_path)
    names = {d.name for d in dists}
    out = [fw for fw in FRAMEWORKS if any(n in names for n in DIST_NAMES[fw])]
    if any(n.startswith("cupy") for n in names):
        out.append("cupy") if "cupy" not in out else None
    return out


def run_probe(
    framework: str,
    timeout: float = 120.0,
    env: dict[str, str] | None = None,
    python: str | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    """Run one framework's probe child with `python` (default: cudoctor's own interpreter) and return
    its result (never raises for the child's failures)."""
    cfg = dict(DEFAULTS, framework=framework, **overrides)
    child_env = dict(os.environ if env is None else env)
    child_env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    start = time.perf_counter()
    # Not `-I`: the probe must import what the user's programs import (PYTHONPATH, user site);
    # the child runs from / so a stray module in the current directory cannot shadow anything.
    res = runner.run(
        [python or sys.executable, "-X", "faulthandler", CHILD, json.dumps(cfg)],
        timeout=timeout,
        env=child_env,
    )
    out = _result(framework, res, time.perf_counter() - start)
    if (
        out["status"] != "ok"
        and ASYNC_HINT.search(out.get("stderr_tail", ""))
        and "CUDA_LAUNCH_BLOCKING" not in child_env
    ):
        blocking = run_probe(
            framework, timeout, dict(child_env, CUDA_LAUNCH_BLOCKING="1"), python, **overrides
        )
        out["rerun_with_launch_blocking"] = blocking
        if blocking.get("diagnosis"):
            out["diagnosis"] = blocking["diagnosis"]
    return out


def _result(framework: str, res: runner.RunResult, wall: float) -> dict[str, Any]:
    payload = runner.last_sentinel_line(res.stdout)
    out: dict[str, Any] = {"framework": framework, "wall_s": round(wall, 3), "returncode": res.returncode}
    if payload is not None and res.returncode == 0:
        data = json.loads(payload)
        out.update(
            status="ok",
            info=data["info"],
            results=[evaluate(r) for r in data["results"]],
            child_s=round(data["child_s"], 3),
        )
        return out
    if res.error.startswith("timed out"):
        status = "timeout"
    elif res.signal_name:
        status = "killed"
    else:
        status = "failed"
    tail = (res.stderr or res.stdout)[-4000:]
    out.update(
        status=status, detail=res.describe(), signal=res.signal_name or None, stderr_tail=tail, results=[]
    )
    out["diagnosis"] = diagnose(tail)
    return out


def diagnose(text: str) -> dict[str, Any] | None:
    """The top cause explain finds in a failed probe's output, or None."""
    if not text.strip():
        return None
    from cudoctor.explainer import rank, scan
    from cudoctor.model import Snapshot

    exp = rank.explain(scan.scan(io.BytesIO(text.encode("utf-8", "replace"))), Snapshot())
    if exp.root is None or not exp.causes:
        return None
    top = rank.cause_json(exp.causes, 0)
    return {
        "cause": top["id"],
        "title": knowledge.cause(top["id"])["title"],
        "confidence": top["confidence"],
        "root": exp.root.text,
        "line": exp.root.line,
        "fix": top["fix"][:3],
    }


def peak_for(name: str | None, dtype: str) -> tuple[float, str] | None:
    if not name:
        return None
    for row in knowledge.table("probe")["peak"]:
        if re.search(row["match"], name, re.I) and dtype in row:
            return float(row[dtype]), row["name"]
    return None


def clock_reasons(mask: int) -> list[dict[str, str]]:
    """NVML's clock-event reason mask as [{name, kind}] (knowledge/probe.toml [[clock_event_reason]])."""
    rows = knowledge.table("probe")["clock_event_reason"]
    return [{"name": r["name"], "kind": r["kind"]} for r in rows if mask & int(r["bit"])]


def evaluate(rec: dict[str, Any]) -> dict[str, Any]:
    """Add tolerance, pass/fail, throughput and percentage of the datasheet peak to one result."""
    tol = knowledge.table("probe")["tolerance"].get(rec["dtype"])
    err = rec.get("rel_err")
    rec["tolerance"] = tol
    rec["correct"] = bool(tol is not None and err is not None and err <= tol)
    if rec.get("seconds") and rec.get("n"):
        rec["tflops"] = round(2 * rec["n"] ** 3 / rec["seconds"] / 1e12, 4)
        peak = peak_for(rec.get("name"), rec["dtype"])
        if peak:
            rec["peak_tflops"], rec["peak_of"] = peak
            rec["pct_of_peak"] = round(100 * rec["tflops"] / peak[0], 1)
        if rec.get("sustained_seconds"):
            rec["sustained_tflops"] = round(2 * rec["n"] ** 3 / rec["sustained_seconds"] / 1e12, 4)
            if peak:
                rec["sustained_pct_of_peak"] = round(100 * rec["sustained_tflops"] / peak[0], 1)
    if isinstance(rec.get("clocks"), dict) and "reasons_mask" in rec["clocks"]:
        rec["clocks"]["reasons"] = clock_reasons(int(rec["clocks"]["reasons_mask"]))
    if rec.get("stress_mismatches"):
        rec["correct"] = False
    return rec


def run_all(
    frameworks: Sequence[str],
    timeout: float = 120.0,
    progress: Callable[[dict[str, Any]], None] | None = None,
    python: str | None = None,
    **overrides: Any,
) -> list[dict[str, Any]]:
    """Probe each framework in turn (sequentially, so timings do not disturb each other), each child
    run by `python` (default: cudoctor's own interpreter)."""
    results = []
    for fw in frameworks:
        result = run_probe(fw, timeout=timeout, python=python, **overrides)
        results.append(result)
        if progress is not None:
            progress(result)
    return results
