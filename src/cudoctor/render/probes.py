"""A table of probe results (formatting only)."""

from __future__ import annotations

from typing import Any


def throughput_text(rec: dict[str, Any]) -> str:
    t = rec.get("tflops")
    if t is None:
        return "-"
    text = f"{t * 1000:.1f} GFLOP/s" if t < 1 else f"{t:.1f} TFLOP/s"
    if rec.get("pct_of_peak") is not None:
        text += f" ({rec['pct_of_peak']:.0f}% of {rec['peak_tflops']:g})"
    return text


def _fmt_sustained(rec: dict[str, Any]) -> str:
    """Sustained TFLOP/s with the SM clock and NVML's limiting reasons after it (GPU rows only)."""
    t = rec.get("sustained_tflops")
    if t is None:
        return "-"
    text = f"{t:.1f}" + (
        f" ({rec['sustained_pct_of_peak']:.0f}%)" if rec.get("sustained_pct_of_peak") else ""
    )
    clocks = rec.get("clocks") or {}
    if clocks.get("sm_mhz"):
        limits = [r["name"] for r in clocks.get("reasons") or [] if r["kind"] in ("cap", "slowdown")]
        text += f" SM {clocks['sm_mhz']}/{clocks.get('max_sm_mhz')} MHz" + (
            f" {','.join(limits)}" if limits else ""
        )
    return text


def table(results: list[dict[str, Any]]) -> list[str]:
    rows = [("framework", "device", "dtype", "rel. error", "ok", "n", "throughput", "sustained")]
    for r in results:
        if r.get("status") != "ok":
            diag = (r.get("diagnosis") or {}).get("cause", "")
            rows.append(
                (
                    r["framework"],
                    "-",
                    "-",
                    "-",
                    "FAILED",
                    "-",
                    f"{r.get('status')}: {r.get('detail')}" + (f" -> {diag}" if diag else ""),
                    "-",
                )
            )
            continue
        for rec in r.get("results") or []:
            err = rec.get("rel_err")
            flips = rec.get("stress_mismatches")
            ok = "yes" if rec.get("correct") else ("NO (repeat differs)" if flips else "NO")
            rows.append(
                (
                    r["framework"],
                    str(rec["device"]),
                    rec["dtype"],
                    f"{err:.1e}" if err is not None else "-",
                    ok,
                    str(rec.get("n", "-")),
                    throughput_text(rec),
                    _fmt_sustained(rec),
                )
            )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    for r in results:
        info = r.get("info") or {}
        for m in info.get("memory") or []:
            lines.append(
                f"{r['framework']} {m['device']}: {m['allocatable_gib']} GiB allocatable of {m['free_gib']} GiB free ({m['total_gib']} GiB total)"
            )
        if info.get("memory_growth"):
            growth = ", ".join(f"{k}: {'on' if v else 'off'}" for k, v in info["memory_growth"].items())
            lines.append(
                f"tensorflow memory growth: {growth} (TF_FORCE_GPU_ALLOW_GROWTH={info.get('TF_FORCE_GPU_ALLOW_GROWTH')})"
            )
    return lines
