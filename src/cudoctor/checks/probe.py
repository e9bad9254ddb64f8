"""Probe results (facts from live GEMMs) turned into findings: failures, wrong numbers, low speed."""

from __future__ import annotations

from typing import Any

from cudoctor.checks import check, finding
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "Probes"
SLOW_PCT = 30.0


@check("probe-failed", "library-bug", LAYER, requires=("probe.results",))
def probe_failed(snap: Snapshot) -> list[Finding]:
    """A framework's GEMM probe crashed, hung, ran out of memory or raised; explain names the cause."""
    out = []
    for r in snap.value("probe.results") or []:
        if r.get("status") == "ok":
            continue
        diag: dict[str, Any] = r.get("diagnosis") or {}
        cause = diag.get("cause") or ("no-gpu-visible" if r.get("status") == "timeout" else "library-bug")
        what = {
            "timeout": "hung and was killed",
            "killed": f"was killed by {r.get('signal')}",
            "failed": "failed",
        }.get(str(r.get("status")), "failed")
        evidence = (
            [f"exit: {r.get('detail')}"]
            + ([f"root error: {diag['root']}"] if diag.get("root") else [])
            + [line for line in str(r.get("stderr_tail", "")).strip().splitlines()[-3:]]
        )
        out.append(
            finding(
                f"probe-failed-{r['framework']}",
                cause,
                Severity.ERROR,
                f"The {r['framework']} GEMM probe {what}" + _diagnosis_title(diag),
                LAYER,
                evidence=evidence,
                fix=list(diag.get("fix") or []),
                confidence="possible" if _is_guess(diag) else "likely",
                subject=r["framework"] if r["framework"] != "numpy" else "",
            )
        )
    return out


GUESS_BELOW = 0.65  # explain's confidence under which the message alone does not settle the cause


def _is_guess(diag: dict[str, Any]) -> bool:
    return float(diag.get("confidence") or 0.0) < GUESS_BELOW


def _diagnosis_title(diag: dict[str, Any]) -> str:
    """': <cause title>', or ': perhaps <cause title>' when the message alone (a bare segfault)
    says little of its cause."""
    title = str(diag.get("title") or "")
    if not title:
        return ""
    return f": perhaps {title[0].lower()}{title[1:]}" if _is_guess(diag) else f": {title}"


@check("probe-wrong-result", "hardware-fault", LAYER, requires=("probe.results",))
def probe_wrong_result(snap: Snapshot) -> list[Finding]:
    """A GEMM result is off by more than its dtype's tolerance, or differs between identical runs."""
    out = []
    for r in snap.value("probe.results") or []:
        for rec in r.get("results") or []:
            if rec.get("correct", True):
                continue
            gpu = "cuda" in str(rec.get("device")) or "gpu" in str(rec.get("device")).lower()
            flips = rec.get("stress_mismatches")
            what = (
                f"{flips} of the repeated products differed bit for bit"
                if flips
                else f"relative error {rec.get('rel_err'):.2e} > tolerance {rec.get('tolerance')}"
            )
            out.append(
                finding(
                    f"probe-wrong-{r['framework']}-{rec['dtype']}",
                    "hardware-fault" if gpu else "library-bug",
                    Severity.ERROR,
                    f"{r['framework']} {rec['dtype']} GEMM on {rec['device']} gives wrong numbers: {what}",
                    LAYER,
                    evidence=[
                        f"{k} = {rec.get(k)}"
                        for k in ("rel_err", "tolerance", "stress_mismatches", "n")
                        if rec.get(k) is not None
                    ],
                    fix=[
                        "Run a hardware diagnostic: dcgmi diag -r 3 (GPU) and check nvidia-smi -q -d ECC"
                        if gpu
                        else "Try another BLAS build (pip install --force-reinstall numpy) and report the numbers"
                    ],
                )
            )
    return out


@check("probe-slow", "hardware-fault", LAYER, requires=("probe.results",))
def probe_slow(snap: Snapshot) -> list[Finding]:
    """A GPU GEMM reaches less than 30% of the datasheet peak (clocks throttled, power capped, shared GPU)."""
    out = []
    for r in snap.value("probe.results") or []:
        for rec in r.get("results") or []:
            pct = rec.get("pct_of_peak")
            if pct is None or pct >= SLOW_PCT:
                continue
            out.append(
                finding(
                    f"probe-slow-{r['framework']}-{rec['dtype']}",
                    "hardware-fault",
                    Severity.WARNING,
                    f"{r['framework']} {rec['dtype']} GEMM on {rec.get('name') or rec['device']} reaches {rec['tflops']:.1f} TFLOP/s, {pct:.0f}% of the {rec.get('peak_of')} peak ({rec.get('peak_tflops')})",
                    LAYER,
                    evidence=[f"n = {rec.get('n')}", f"seconds per product = {rec.get('seconds')}"],
                    fix=[
                        "nvidia-smi -q -d PERFORMANCE,CLOCK,POWER,TEMPERATURE  (look for throttle reasons)",
                        "nvidia-smi (another process may be using the GPU)",
                    ],
                )
            )
    return out


@check("probe-clocks-limited", "hardware-fault", LAYER, requires=("probe.results",))
def probe_clocks_limited(snap: Snapshot) -> list[Finding]:
    """A GPU lowers its clocks under the probe's sustained GEMMs: a thermal or hardware slowdown (the GPU
    protecting itself: a warning), or its power cap with sustained speed under 90% of the burst (info:
    normal for a board at full tensor-core load, and where a lowered power limit shows)."""
    worst: dict[str, tuple[str, dict[str, Any]]] = {}
    for r in snap.value("probe.results") or []:
        for rec in r.get("results") or []:
            if not isinstance(rec.get("clocks"), dict) or not rec.get("sustained_tflops"):
                continue
            key = str(rec.get("name") or rec["device"])
            held = worst.get(key)
            if held is None or _ratio(rec) < _ratio(held[1]):
                worst[key] = (r["framework"], rec)
    return [f for key, (fw, rec) in worst.items() if (f := _clock_finding(key, fw, rec)) is not None]


def _ratio(rec: dict[str, Any]) -> float:
    return float(rec["sustained_tflops"]) / float(rec.get("tflops") or rec["sustained_tflops"])


def _clock_finding(gpu: str, framework: str, rec: dict[str, Any]) -> Finding | None:
    clocks = rec["clocks"]
    kinds = {r["kind"] for r in clocks.get("reasons") or []}
    speed = (
        f"{framework} {rec['dtype']} GEMMs run at {rec['tflops']:.0f} TFLOP/s in a burst and "
        f"{rec['sustained_tflops']:.0f} sustained, SM clock {clocks.get('sm_mhz')} of {clocks.get('max_sm_mhz')} MHz"
    )
    evidence = [
        f"clocks after the sustained GEMMs: {clocks.get('sm_mhz')} MHz SM, {clocks.get('power_w')} W of "
        f"{clocks.get('power_limit_w')} W, {clocks.get('temperature_c')} C",
        "NVML clock-event reasons: " + (", ".join(r["name"] for r in clocks.get("reasons") or []) or "none"),
    ]
    slowdowns = [r["name"] for r in clocks.get("reasons") or [] if r["kind"] == "slowdown"]
    if slowdowns:
        return finding(
            f"probe-clocks-limited-{rec['device']}",
            "hardware-fault",
            Severity.WARNING,
            f"{gpu} slows down to protect itself ({', '.join(slowdowns)}): {speed}",
            LAYER,
            evidence=evidence,
            fix=[
                "nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER  (which slowdown is active, and the temperatures)",
                "Check the cooling: fans, airflow, a blocked heatsink, the room; then run dcgmi diag -r 3",
            ],
        )
    if "cap" in kinds and _ratio(rec) < 0.9:
        return finding(
            f"probe-clocks-limited-{rec['device']}",
            "hardware-fault",
            Severity.INFO,
            f"{gpu} holds its {clocks.get('power_limit_w')} W power limit under sustained GEMMs: {speed}. "
            "Normal for this board at full load; the burst figure is the one compared with the datasheet",
            LAYER,
            evidence=evidence,
            fix=[
                "nvidia-smi -q -d POWER  (a 'Current Power Limit' below the 'Default Power Limit' costs sustained speed)"
            ],
            generic_fixes=False,
        )
    return None
