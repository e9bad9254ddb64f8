"""bf16 8192^3 through torch on a GPU: a short burst against sustained load, with the SM clock, power
and clock-event reasons NVML reports after each timed window. Needs a GPU (torch + nvidia-ml-py).

    python3 bench/gpu_gemm_clocks.py [SECONDS]     # sustained part lasts SECONDS (default 8)

Why it exists: the probe's bf16 figure on an H100 (72% of the datasheet peak) was under what a
short burst gives (about 80%). This shows whether the clock drops under load and which limit
NVML names for it, so the probe's timing window can be chosen on evidence. Random operands only:
constant data draws less power and runs faster than real data.
"""

from __future__ import annotations

import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))
from cudoctor.probe import child, clock_reasons  # the probe's own NVML reading and timer

N = 8192


def state() -> str:
    """The GPU's SM clock, power, temperature and clock-event reasons, as the probe reads them."""
    c = child.nvml_clocks(None)
    if not c or "error" in c:
        return f"clocks unknown ({(c or {}).get('error', 'no nvidia-ml-py')})"
    names = ",".join(r["name"] for r in clock_reasons(c["reasons_mask"])) or "none"
    return f"sm={c['sm_mhz']:4d} MHz  {c['power_w']:5.0f} W  {c['temperature_c']:3d} C  reasons={names}"


def window(fn: object, calls: int) -> float:
    """Seconds per call over `calls` back-to-back calls, from CUDA events (the probe's own window)."""
    return float(child._cuda_event_window(torch, fn, calls))


def tflops(seconds: float) -> float:
    return 2 * N**3 / seconds / 1e12


def burst(label: str, fn: object) -> None:
    for _ in range(3):
        fn()  # type: ignore[operator]
    torch.cuda.synchronize()
    per_call = window(fn, 10)
    print(f"{label:34s} {tflops(per_call):6.1f} TFLOP/s   after: {state()}", flush=True)


def sustained(fn: object, seconds: float) -> None:
    t0 = time.perf_counter()
    while (elapsed := time.perf_counter() - t0) < seconds:
        per_call = window(fn, 30)
        print(f"  t={elapsed:5.2f} s  {tflops(per_call):6.1f} TFLOP/s   {state()}", flush=True)


def main(argv: list[str]) -> int:
    seconds = float(argv[0]) if argv else 8.0
    c = child.nvml_clocks(None) or {}
    print(
        f"{torch.cuda.get_device_name()}  max SM clock {c.get('max_sm_mhz')} MHz  power limit {c.get('power_limit_w')} W"
    )
    print(f"idle: {state()}")
    a = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(N, N, device="cuda", dtype=torch.bfloat16)
    burst("burst a @ b (3 warm-up, 10 timed)", lambda: a @ b)
    burst("burst matmul(out=)", lambda: torch.matmul(a, b, out=out))
    print(f"sustained a @ b, windows of 30 calls, {seconds:.0f} s:")
    sustained(lambda: a @ b, seconds)
    time.sleep(5)
    print(f"after 5 s idle: {state()}")
    burst("burst again after 5 s idle", lambda: a @ b)
    z = torch.zeros(N, N, device="cuda", dtype=torch.bfloat16)
    burst("burst on zeros (for comparison)", lambda: z @ z)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
