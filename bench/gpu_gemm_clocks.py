"""bf16 8192^3 through torch on a GPU: a short burst against sustained load, with the SM clock, power
and clock-event reasons NVML reports after each timed window. Needs a GPU (torch + nvidia-ml-py).

    python3 bench/gpu_gemm_clocks.py [SECONDS]     # sustained part lasts SECONDS (default 8)

Why it exists: the probe's bf16 figure on an H100 (72% of the datasheet peak) was under what a
short burst gives (about 80%). This shows whether the clock drops under load and which limit
NVML names for it, so the probe's timing window can be chosen on evidence. Random operands only:
constant data draws less power and runs faster than real data.
"""

from __future__ import annotations

import sys
import time

import pynvml
import torch

N = 8192
REASONS = {
    0x1: "gpu-idle",
    0x2: "applications-clocks",
    0x4: "sw-power-cap",
    0x8: "hw-slowdown",
    0x10: "sync-boost",
    0x20: "sw-thermal",
    0x40: "hw-thermal",
    0x80: "hw-power-brake",
    0x100: "display-clocks",
}


def state(handle: object) -> str:
    sm = pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
    watts = pynvml.nvmlDeviceGetPowerUsage(handle) / 1000
    temp = pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU)
    get = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
    mask = (get or pynvml.nvmlDeviceGetCurrentClocksThrottleReasons)(handle)
    names = ",".join(n for bit, n in REASONS.items() if mask & bit) or "none"
    return f"sm={sm:4d} MHz  {watts:5.0f} W  {temp:3d} C  reasons={names}"


def window(fn: object, calls: int) -> float:
    """Seconds per call over `calls` back-to-back calls, from CUDA events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()  # type: ignore[operator]
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / calls / 1000


def tflops(seconds: float) -> float:
    return 2 * N**3 / seconds / 1e12


def burst(label: str, fn: object, handle: object) -> None:
    for _ in range(3):
        fn()  # type: ignore[operator]
    torch.cuda.synchronize()
    per_call = window(fn, 10)
    print(f"{label:34s} {tflops(per_call):6.1f} TFLOP/s   after: {state(handle)}", flush=True)


def sustained(fn: object, seconds: float, handle: object) -> None:
    t0 = time.perf_counter()
    while (elapsed := time.perf_counter() - t0) < seconds:
        per_call = window(fn, 30)
        print(f"  t={elapsed:5.2f} s  {tflops(per_call):6.1f} TFLOP/s   {state(handle)}", flush=True)


def main(argv: list[str]) -> int:
    seconds = float(argv[0]) if argv else 8.0
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    max_sm = pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)
    limit = pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000
    print(f"{torch.cuda.get_device_name()}  max SM clock {max_sm} MHz  power limit {limit:.0f} W")
    print(f"idle: {state(handle)}")
    a = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(N, N, device="cuda", dtype=torch.bfloat16)
    burst("burst a @ b (3 warm-up, 10 timed)", lambda: a @ b, handle)
    burst("burst matmul(out=)", lambda: torch.matmul(a, b, out=out), handle)
    print(f"sustained a @ b, windows of 30 calls, {seconds:.0f} s:")
    sustained(lambda: a @ b, seconds, handle)
    time.sleep(5)
    print(f"after 5 s idle: {state(handle)}")
    burst("burst again after 5 s idle", lambda: a @ b, handle)
    z = torch.zeros(N, N, device="cuda", dtype=torch.bfloat16)
    burst("burst on zeros (for comparison)", lambda: z @ z, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
