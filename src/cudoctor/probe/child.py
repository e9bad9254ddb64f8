"""The probe child: imports one framework, runs GEMMs per device and dtype, prints one JSON line.

Run as a script (`python -X faulthandler child.py CONFIG_JSON`, cwd /), never imported by cudoctor. It must
not import cudoctor: it may run in another interpreter. Every check compares against a float64
product of the same inputs computed with numpy; timing uses CUDA events on GPUs.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time

SENTINEL = "@@CUDOCTOR@@"
T0 = time.perf_counter()


def rel_err(c, ref):  # type: ignore[no-untyped-def]
    import numpy as np

    c = np.asarray(c, dtype=np.float64)
    denom = float(np.linalg.norm(ref)) or 1.0
    if not np.all(np.isfinite(c)):
        return float("inf")
    return float(np.linalg.norm(c - ref) / denom)


def inputs(n):  # type: ignore[no-untyped-def]
    import numpy as np

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    return a, b, a @ b


def timed(fn, min_time):  # type: ignore[no-untyped-def]
    """Median seconds per call over repeated windows (host timer; fn must synchronise)."""
    fn()
    samples = []
    start = time.perf_counter()
    while len(samples) < 3 or (time.perf_counter() - start < min_time and len(samples) < 50):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    samples.sort()
    return samples[len(samples) // 2]


def stress_mismatches(run, first, count):  # type: ignore[no-untyped-def]
    import numpy as np

    bad = 0
    for _ in range(count):
        bad += int(not np.array_equal(np.asarray(run()), first))
    return bad


def gpu_timing(window, cfg, pci_bus_id):  # type: ignore[no-untyped-def]
    """Burst and sustained seconds per product on a GPU, and the clocks NVML reports after the sustained part.

    `window(calls)` runs `calls` products back to back and returns seconds per product. The burst (after
    `settle_s` idle, 3 warm-ups, median of 3 windows of 10) is what the chip does at its boost clock; the
    sustained figure (windows for `sustained_s`) is what it holds under its power and thermal limits: an
    H100 at 700 W reaches its power cap within about 0.1 s of bf16 GEMMs (bench/gpu_gemm_clocks.py)."""
    time.sleep(cfg["settle_s"])
    window(3)
    burst = sorted(window(10) for _ in range(3))[1]
    samples = []
    deadline = time.perf_counter() + cfg["sustained_s"]
    while len(samples) < 3 or (time.perf_counter() < deadline and len(samples) < 200):
        samples.append(window(10))
    samples.sort()
    out = {"seconds": burst, "sustained_seconds": samples[len(samples) // 2]}
    clocks = nvml_clocks(pci_bus_id)
    if clocks:
        out["clocks"] = clocks
    return out


def nvml_clocks(pci_bus_id):  # type: ignore[no-untyped-def]
    """SM clock, power and the clock-event reason mask of one GPU from NVML; None without nvidia-ml-py,
    {"error": ...} when NVML cannot answer (so a recording shows why)."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        h = _nvml_handle(pynvml, pci_bus_id)
        if h is None:
            return {"error": "which NVML device this is is unknown (no PCI bus id, several GPUs)"}
        reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        return {
            "sm_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
            "max_sm_mhz": pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM),
            "power_w": round(pynvml.nvmlDeviceGetPowerUsage(h) / 1000, 1),
            "power_limit_w": round(pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000, 1),
            "temperature_c": pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
            "reasons_mask": (reasons or pynvml.nvmlDeviceGetCurrentClocksThrottleReasons)(h),
        }
    except Exception as exc:  # NVML missing or refusing: the clocks stay unknown, the reason is kept
        return {"error": f"{type(exc).__name__}: {exc}"}


def _nvml_handle(pynvml, pci_bus_id):  # type: ignore[no-untyped-def]
    """NVML's handle for the device: by PCI bus id (NVML orders devices by PCI, CUDA by speed and
    CUDA_VISIBLE_DEVICES), or the only GPU there is."""
    if pci_bus_id:
        return pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id)
    if pynvml.nvmlDeviceGetCount() == 1:
        return pynvml.nvmlDeviceGetHandleByIndex(0)
    return None


# ---------------------------------------------------------------- frameworks
def numpy_probe(cfg):  # type: ignore[no-untyped-def]
    import numpy as np

    out = []
    a, b, ref = inputs(cfg["check_n"])
    for dtype in ("float64", "float32"):
        x, y = a.astype(dtype), b.astype(dtype)
        rec = {"device": "cpu", "dtype": dtype, "rel_err": rel_err(x @ y, ref)}
        n = cfg["cpu_n"]
        rng = np.random.default_rng(1)
        ta, tb = rng.standard_normal((n, n)).astype(dtype), rng.standard_normal((n, n)).astype(dtype)
        rec["seconds"] = timed(lambda ta=ta, tb=tb: ta @ tb, cfg["min_time"])
        rec["n"] = n
        if cfg["stress"]:
            first = ta @ tb
            rec["stress_mismatches"] = stress_mismatches(lambda ta=ta, tb=tb: ta @ tb, first, cfg["stress"])
        out.append(rec)
    return {"version": np.__version__}, out


def torch_probe(cfg):  # type: ignore[no-untyped-def]
    import torch

    devices = (
        ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
        if torch.cuda.is_available()
        else ["cpu"]
    )
    info = {"version": torch.__version__, "cuda": torch.version.cuda, "devices": devices}
    a, b, ref = inputs(cfg["check_n"])
    out = []
    for dev in devices:
        gpu = dev.startswith("cuda")
        dtypes = (
            ["float64", "float32", "tf32", "float16", "bfloat16"]
            if gpu
            else ["float64", "float32", "bfloat16"]
        )
        if gpu:
            info.setdefault("gpus", []).append(
                {
                    "device": dev,
                    "name": torch.cuda.get_device_name(dev),
                    "cc": "{}.{}".format(*torch.cuda.get_device_capability(dev)),
                }
            )
        if gpu:
            info.setdefault("memory", []).append(_torch_memory(torch, dev))
        for dtype in dtypes:
            out.append(_torch_one(torch, dev, dtype, a, b, ref, cfg))
    return info, out


def _torch_memory(torch, dev):  # type: ignore[no-untyped-def]
    """How much of the free memory can really be allocated, in 1 GiB blocks (released after)."""
    free, total = torch.cuda.mem_get_info(dev)
    blocks, got = [], 0
    try:
        while got + (1 << 30) <= free:
            blocks.append(torch.empty(1 << 30, dtype=torch.uint8, device=dev))
            got += 1 << 30
    except RuntimeError:
        pass
    finally:
        del blocks
        torch.cuda.empty_cache()
    return {
        "device": dev,
        "free_gib": round(free / 2**30, 2),
        "total_gib": round(total / 2**30, 2),
        "allocatable_gib": round(got / 2**30, 2),
    }


def _torch_one(torch, dev, dtype, a, b, ref, cfg):  # type: ignore[no-untyped-def]
    gpu = dev.startswith("cuda")
    tdt = getattr(torch, "float32" if dtype == "tf32" else dtype)
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    rec = {"device": dev, "dtype": dtype}
    x, y = torch.tensor(a, dtype=tdt, device=dev), torch.tensor(b, dtype=tdt, device=dev)
    rec["rel_err"] = rel_err((x @ y).double().cpu().numpy(), ref)
    n = cfg["gpu_n"] if gpu else (cfg["cpu_n"] if dtype in ("float32", "float64") else cfg["cpu_n"] // 2)
    ta, tb = torch.randn(n, n, device=dev).to(tdt), torch.randn(n, n, device=dev).to(tdt)
    out = torch.empty(n, n, device=dev, dtype=tdt)
    if gpu:
        window = functools.partial(_cuda_event_window, torch, lambda: torch.matmul(ta, tb, out=out))
        rec.update(gpu_timing(window, cfg, _torch_pci_bus_id(torch, dev)))
        rec["name"] = torch.cuda.get_device_name(dev)
    else:
        rec["seconds"] = timed(lambda: torch.matmul(ta, tb, out=out), cfg["min_time"])
    rec["n"] = n
    if cfg["stress"]:
        first = torch.matmul(ta, tb).float().cpu().numpy()
        rec["stress_mismatches"] = stress_mismatches(
            lambda: torch.matmul(ta, tb).float().cpu().numpy(), first, cfg["stress"]
        )
    torch.backends.cuda.matmul.allow_tf32 = False
    return rec


def _cuda_event_window(torch, fn, calls):  # type: ignore[no-untyped-def]
    """Seconds per call over `calls` back-to-back calls, from CUDA events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / calls / 1000


def _torch_pci_bus_id(torch, dev):  # type: ignore[no-untyped-def]
    p = torch.cuda.get_device_properties(dev)
    return f"{p.pci_domain_id:08x}:{p.pci_bus_id:02x}:{p.pci_device_id:02x}.0"


def tensorflow_probe(cfg):  # type: ignore[no-untyped-def]
    import tensorflow as tf

    devices = [d.name for d in tf.config.list_logical_devices() if d.device_type in ("CPU", "GPU")]
    info = {"version": tf.__version__, "devices": devices, "gpu_build": tf.test.is_built_with_cuda()}
    gpus = tf.config.list_physical_devices("GPU")
    info["memory_growth"] = {g.name: tf.config.experimental.get_memory_growth(g) for g in gpus}
    info["TF_FORCE_GPU_ALLOW_GROWTH"] = os.environ.get("TF_FORCE_GPU_ALLOW_GROWTH")
    a, b, ref = inputs(cfg["check_n"])
    out = []
    for dev in devices:
        gpu = "GPU" in dev
        for dtype in ["float64", "float32"] + (["float16", "bfloat16"] if gpu else ["bfloat16"]):
            with tf.device(dev):
                x, y = tf.constant(a, dtype=dtype), tf.constant(b, dtype=dtype)
                rec = {
                    "device": dev,
                    "dtype": dtype,
                    "rel_err": rel_err(tf.cast(tf.matmul(x, y), tf.float64).numpy(), ref),
                }
                n = (
                    cfg["gpu_n"]
                    if gpu
                    else (cfg["cpu_n"] if dtype in ("float32", "float64") else cfg["cpu_n"] // 2)
                )
                ta = tf.random.normal((n, n), dtype=tf.float32)
                ta = tf.cast(ta, dtype)
                rec["seconds"] = timed(lambda ta=ta: tf.matmul(ta, ta).numpy(), cfg["min_time"])
                rec["n"] = n
            out.append(rec)
    return info, out


def _host_window(fn, sync=None, calls=10):  # type: ignore[no-untyped-def]
    """Seconds per call over `calls` calls queued back to back, one synchronisation at the end (host timer;
    without `sync`, the last result's block_until_ready)."""
    start = time.perf_counter()
    for _ in range(calls):
        last = fn()
    if sync is None:
        last.block_until_ready()
    else:
        sync()
    return (time.perf_counter() - start) / calls


def jax_probe(cfg):  # type: ignore[no-untyped-def]
    import jax

    jax.config.update("jax_enable_x64", True)

    info = {"version": jax.__version__, "devices": [str(d) for d in jax.devices()]}
    a, b, ref = inputs(cfg["check_n"])
    out = []
    for dev in jax.devices():
        for label, dtype, precision in _jax_rows(dev.platform == "gpu"):
            out.append(_jax_one(jax, dev, label, dtype, precision, (a, b, ref), cfg))
    return info, out


def _jax_rows(gpu):  # type: ignore[no-untyped-def]
    """(row label, dtype, matmul precision). float32 is asked for at HIGHEST: JAX's DEFAULT precision
    runs a float32 product in TF32 on Ampere and newer GPUs, which is the 'tf32' row."""
    rows = [("float64", "float64", "highest"), ("float32", "float32", "highest")]
    if gpu:
        rows.append(("tf32", "float32", "default"))
    rows.append(("bfloat16", "bfloat16", "default"))
    return rows + ([("float16", "float16", "default")] if gpu else [])


def _jax_one(jax, dev, label, dtype, precision, check, cfg):  # type: ignore[no-untyped-def]
    import jax.numpy as jnp

    a, b, ref = check
    gpu = dev.platform == "gpu"
    mm = jax.jit(functools.partial(jnp.matmul, precision=precision))
    x, y = jax.device_put(jnp.asarray(a, dtype=dtype), dev), jax.device_put(jnp.asarray(b, dtype=dtype), dev)
    rec = {"device": str(dev), "dtype": label, "rel_err": rel_err(mm(x, y).astype(jnp.float64), ref)}
    if label == "tf32":
        rec["precision"] = "default"
    if gpu:
        rec["name"] = dev.device_kind
    n = cfg["gpu_n"] if gpu else (cfg["cpu_n"] if dtype in ("float32", "float64") else cfg["cpu_n"] // 2)
    ta = jax.device_put(jax.random.normal(jax.random.key(1), (n, n), dtype=dtype), dev)
    if gpu:
        rec.update(gpu_timing(functools.partial(_host_window, lambda: mm(ta, ta), None), cfg, None))
    else:
        rec["seconds"] = timed(lambda: mm(ta, ta).block_until_ready(), cfg["min_time"])
    rec["n"] = n
    if cfg["stress"]:
        first = mm(ta, ta)
        rec["stress_mismatches"] = stress_mismatches(lambda: mm(ta, ta), first, cfg["stress"])
    return rec


def cupy_probe(cfg):  # type: ignore[no-untyped-def]
    import cupy as cp

    info = {"version": cp.__version__, "devices": cp.cuda.runtime.getDeviceCount()}
    a, b, ref = inputs(cfg["check_n"])
    out = []
    for i in range(info["devices"]):
        name = cp.cuda.runtime.getDeviceProperties(i)["name"]
        with cp.cuda.Device(i):
            for dtype in ("float64", "float32", "float16"):
                out.append(_cupy_one(cp, i, dtype, (a, b, ref), cfg))
                out[-1]["name"] = name.decode() if isinstance(name, bytes) else str(name)
    return info, out


def _cupy_one(cp, i, dtype, check, cfg):  # type: ignore[no-untyped-def]
    a, b, ref = check
    x, y = cp.asarray(a, dtype=dtype), cp.asarray(b, dtype=dtype)
    rec = {"device": f"cuda:{i}", "dtype": dtype, "rel_err": rel_err(cp.asnumpy(x @ y), ref)}
    n = cfg["gpu_n"]
    ta = cp.random.default_rng(1).standard_normal((n, n), dtype="float64").astype(dtype)
    window = functools.partial(_host_window, lambda: ta @ ta, cp.cuda.Device().synchronize)
    rec.update(gpu_timing(window, cfg, cp.cuda.runtime.deviceGetPCIBusId(i)))
    rec["n"] = n
    if cfg["stress"]:
        first = cp.asnumpy(ta @ ta)
        rec["stress_mismatches"] = stress_mismatches(lambda: cp.asnumpy(ta @ ta), first, cfg["stress"])
    return rec


PROBES = {
    "numpy": numpy_probe,
    "torch": torch_probe,
    "tensorflow": tensorflow_probe,
    "jax": jax_probe,
    "cupy": cupy_probe,
}


def main() -> int:
    cfg = json.loads(sys.argv[1])
    if cfg.get("memory_limit_mb"):
        import resource

        limit = int(cfg["memory_limit_mb"]) << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if cfg.get("inject"):
        exec(cfg["inject"], {})  # tests: a crash, a hang or an allocation, run for real
    import importlib

    name = cfg["framework"]
    t_import = time.perf_counter()
    import numpy  # noqa: F401 - the reference products need it

    importlib.import_module(name)
    import_s = time.perf_counter() - t_import
    info, results = PROBES[name](cfg)
    info["import_s"] = round(import_s, 3)
    payload = {"framework": name, "info": info, "results": results, "child_s": time.perf_counter() - T0}
    print(SENTINEL + json.dumps(payload, default=str), flush=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.exit(main())
