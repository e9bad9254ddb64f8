"""Try, for real on a GPU machine, the cheap fixes cudoctor proposes (environment variables, settings,
launch options): each trial runs a small program broken, then the same program with the fix applied,
and runs `cudoctor explain` on the broken run's output to show what cudoctor proposes there.

    PYTHONPATH=src python3 bench/gpu_fixes.py OUTDIR [--budget 240] [--only a,b] [--list] [--dry-run]

Runs from the repository root with the machine's own python3 (the one holding torch / jax / cupy);
cudoctor is taken from src/ (no install). Standard library only in this process; the trial programs
import the frameworks. Writes, per trial, OUTDIR/fixes/<trial>/:
  program.py     the program the runs execute (for torchrun: each rank's program)
  broken.txt     the broken run: command line, environment changes, exit status and wall time on top,
                 then stdout and stderr merged (first and last 100 KB when longer than 200 KB)
  fixed.txt      the same run with the fix applied (fixed_<variant>.txt for a second fix)
  explain.json   `python -m cudoctor explain broken.txt --format json` (PYTHONPATH=src, live facts of
                 the machine, run with the broken run's environment changes applied, as in the shell
                 that ran it; --explain-clean-env runs it without them)
and OUTDIR/fixes/summary.json (rewritten after every run, so a run killed at its limit keeps what was
done): per trial the exit status and wall time of each run, the fix tried, whether it worked (the fixed
run exits 0, the broken one did not, and the broken output shows the expected failure), whether the
tried fix is among the steps explain proposes (and under which cause), and notes.

Without a GPU (no nvidia-smi GPU and no /dev/nvidiaN) each trial is recorded as "skipped: no GPU", and
explain runs once on a canned recording (tests/fixtures/gpu/h100/broken/bad_ordinal.txt) to show the
explain step works; --force runs the trials anyway (to test this script on a CPU-only machine).

Trial `launch-blocking-locates-fault` is a diagnosis step, not a fix: both runs fail; it "worked" when
the run with CUDA_LAUNCH_BLOCKING=1 reports the error at the indexing line (plain_run_misleading says
whether the plain run reported it elsewhere).

Order: the cheap and most telling trials first, torchrun (the slowest, and the one that may hang) last.
Each run has its own timeout (--run-timeout, 40 s), each trial a total (--trial-timeout, 90 s), and no
trial starts with less than --min-left (10 s) of --budget left. Every run's process group is killed
after it ends, so no torchrun rank outlives its trial.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import mmap
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable
CAP = 200_000  # bytes of output kept per run (first and last half)
# Settings the trials change: taken out of the base environment so every broken run starts clean.
MANAGED = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_LAUNCH_BLOCKING",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "XLA_FLAGS",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "XLA_CLIENT_MEM_FRACTION",
    "XLA_PYTHON_CLIENT_ALLOCATOR",
    "NCCL_DEBUG",
)
CANNED = os.path.join(ROOT, "tests", "fixtures", "gpu", "h100", "broken", "bad_ordinal.txt")

# ---------------------------------------------------------------------------------------------- programs

JAX_THEN_TORCH = """\
import jax
import jax.numpy as jnp

x = jnp.ones(1024)
x.block_until_ready()  # JAX's GPU client starts here and (by default) preallocates 75% of the GPU
print("jax", jax.__version__, "devices:", jax.devices(), flush=True)

import torch

free, total = torch.cuda.mem_get_info()
print(f"after JAX: {free / 2**30:.1f} GiB free of {total / 2**30:.1f} GiB", flush=True)
n = int(total * 0.40)
y = torch.empty(n, dtype=torch.uint8, device="cuda")  # 40% of the GPU for torch
print(f"torch got {n / 2**30:.1f} GiB", flush=True)
"""

TORCH_VISIBLE = """\
import torch

print("torch", torch.__version__, "is_available:", torch.cuda.is_available(), "device_count:", torch.cuda.device_count(), flush=True)
x = torch.zeros(1, device="cuda")
print("ok:", x, flush=True)
"""

TORCH_ALLOC = """\
import torch

print("torch", torch.__version__, flush=True)
x = torch.zeros(1 << 20, device="cuda")  # the first CUDA allocation reads PYTORCH_CUDA_ALLOC_CONF
torch.cuda.synchronize()
expandable = sorted({str(s.get("is_expandable")) for s in torch.cuda.memory_snapshot()})
print("allocated", x.numel() * 4, "bytes; reserved", torch.cuda.memory_reserved(), "expandable:", expandable, flush=True)
"""

TORCH_INDEX = """\
import time

import torch

x = torch.arange(10, device="cuda", dtype=torch.float32)
i = torch.tensor([20], device="cuda")
torch.cuda.synchronize()
y = x[i]  # FAULT: index 20 of a 10-element tensor (a device-side assert)
time.sleep(0.5)  # the kernel has certainly failed by now; the error waits for the next CUDA call
w = torch.ones(64, 64, device="cuda")
z = w @ w
print(z.sum().item(), y, flush=True)
"""

JAX_MATMUL = """\
import jax
import jax.numpy as jnp

print("jax", jax.__version__, "devices:", jax.devices(), flush=True)
a = jnp.ones((64, 64))
print("sum:", float((a @ a).sum()), flush=True)
"""

# Fragmentation in PyTorch's caching allocator is free space inside a segment that is still partly in
# use: whole free segments are given back and the request retried, so separate allocations never
# fragment. Hence one 1 GiB segment, carved into 64 MiB blocks of which every other is freed: 512 MiB
# free in 64 MiB holes, and a 128 MiB request that cannot grow the pool past the process's limit.
# With expandable_segments:True the free pages of the holes are unmapped and the segment grows instead.
TORCH_FRAGMENT = """\
import sys

import torch

MiB = 1 << 20
total = torch.cuda.get_device_properties(0).total_memory
limit = 1120 * MiB  # 1 GiB + 96 MiB for this process (set_per_process_memory_fraction)
torch.cuda.set_per_process_memory_fraction(limit / total, 0)
big = torch.empty(1024 * MiB, dtype=torch.uint8, device="cuda")
del big  # one 1 GiB segment, cached and free
blocks = [torch.empty(64 * MiB, dtype=torch.uint8, device="cuda") for _ in range(16)]  # carved out of it
del blocks[::2]  # every other block freed: 512 MiB free, in 64 MiB holes
torch.cuda.synchronize()
expandable = sorted({str(s.get("is_expandable")) for s in torch.cuda.memory_snapshot()})
print(
    f"limit {limit / MiB:.0f} MiB; allocated {torch.cuda.memory_allocated() / MiB:.0f} MiB, "
    f"reserved {torch.cuda.memory_reserved() / MiB:.0f} MiB; expandable segments: {expandable}; asking for 128 MiB",
    flush=True,
)
t = torch.empty(128 * MiB, dtype=torch.uint8, device="cuda")  # REQUEST
torch.cuda.synchronize()
print(f"got 128 MiB; reserved now {torch.cuda.memory_reserved() / MiB:.0f} MiB", flush=True)
if "--expect-oom" in sys.argv:
    print("NOT REPRODUCED: the 128 MiB request succeeded, no fragmentation out-of-memory here", flush=True)
    sys.exit(3)
"""

NCCL_RANK = """\
import datetime
import os

import torch
import torch.distributed as dist

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
torch.cuda.set_device(0)  # every rank on GPU 0 (the mistake: it should be LOCAL_RANK)
dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=25))
t = torch.ones(4, device="cuda:0") * (rank + 1)
dist.all_reduce(t)  # NCCL's communicator is made here
torch.cuda.synchronize()
print(f"rank {rank}/{world}: all_reduce -> {t.tolist()}", flush=True)
dist.destroy_process_group()
"""

JAX_BIG = """\
import jax
import jax.numpy as jnp

print("jax", jax.__version__, "devices:", jax.devices(), flush=True)
x = jnp.ones((1 << 30,), jnp.float32)  # 4 GiB
x.block_until_ready()
print(f"allocated {x.nbytes / 2**30:.1f} GiB", flush=True)
"""

CUPY_DEVICE = """\
import sys

import cupy

print("cupy", cupy.__version__, "devices:", cupy.cuda.runtime.getDeviceCount(), flush=True)
cupy.cuda.Device(int(sys.argv[1])).use()
x = cupy.zeros(4) + 1
print("sum:", float(x.sum()), flush=True)
"""

# CUDA initialised in the parent, then used in a worker forked from it (argv[1]: fork or spawn).
TORCH_FORK = """\
import multiprocessing as mp
import sys

import torch


def work(i):
    return float(torch.ones(4, device="cuda").sum()) + i


if __name__ == "__main__":
    method = sys.argv[1]
    print("torch", torch.__version__, "start method:", method, flush=True)
    torch.zeros(1, device="cuda")  # CUDA initialised in the parent
    with mp.get_context(method).Pool(2) as pool:
        print("results:", pool.map(work, [0, 1]), flush=True)
"""

CUPY_FORK = """\
import multiprocessing as mp
import sys

import cupy


def work(i):
    return float(cupy.ones(4).sum()) + i


if __name__ == "__main__":
    method = sys.argv[1]
    print("cupy", cupy.__version__, "start method:", method, flush=True)
    cupy.zeros(1)  # CUDA initialised in the parent
    with mp.get_context(method).Pool(2) as pool:
        print("results:", pool.map(work, [0, 1]), flush=True)
"""

# Flash attention forced (sdpa_kernel) on inputs of the dtype in argv[1].
TORCH_SDPA = """\
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

dtype = getattr(torch, sys.argv[1])
q = torch.randn(2, 8, 256, 64, device="cuda", dtype=dtype)
print("torch", torch.__version__, "q", tuple(q.shape), q.dtype, flush=True)
with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
    out = F.scaled_dot_product_attention(q, q, q, is_causal=True)
torch.cuda.synchronize()
print("flash attention ok:", tuple(out.shape), out.dtype, flush=True)
"""

# An 8 GiB allocation under a per-process memory fraction (argv[1]).
TORCH_MEMFRAC = """\
import sys

import torch

frac = float(sys.argv[1])
torch.cuda.set_per_process_memory_fraction(frac, 0)
total = torch.cuda.get_device_properties(0).total_memory
print(f"torch {torch.__version__}: memory fraction {frac} of {total / 2**30:.1f} GiB", flush=True)
x = torch.empty(8 << 30, dtype=torch.uint8, device="cuda")  # 8 GiB
torch.cuda.synchronize()
print("allocated 8 GiB", flush=True)
"""

# A half-precision FFT of a signal whose length (argv[1]) is or is not a power of two.
TORCH_FFT_HALF = """\
import sys

import torch

n = int(sys.argv[1])
x = torch.randn(16, n, device="cuda", dtype=torch.float16)
print("torch", torch.__version__, "rfft of float16 length", n, flush=True)
y = torch.fft.rfft(x)
torch.cuda.synchronize()
print("rfft ok", tuple(y.shape), y.dtype, flush=True)
"""

# A triton kernel whose dot operand (BLOCK x BLOCK float16, argv[1]) needs more shared memory than the
# GPU has at 512 (512 KiB against 227 KiB on Hopper), and fits at 64. At 256 it ran on an H200 (session
# 38): Hopper's wgmma reads one operand from registers, so one 128 KiB block in shared memory fits.
TRITON_BLOCK = """\
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def square(a_ptr, c_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + r[:, None] * BLOCK + r[None, :])
    tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], tl.dot(a, a))


block = int(sys.argv[1])
a = torch.ones(block, block, device="cuda", dtype=torch.float16)
c = torch.empty(block, block, device="cuda", dtype=torch.float32)
print("triton", triton.__version__, "BLOCK", block, flush=True)
square[(1,)](a, c, BLOCK=block, num_warps=8)
torch.cuda.synchronize()
print("ok", float(c[0, 0]), flush=True)
"""

# ---------------------------------------------------------------------------------------------- trials


@dataclass
class Run:
    """One run: argv with {py} {prog} {port} {bad_index} {bad_cupy} filled in, and environment changes
    (None unsets a variable); a key or value may be {memfrac} or {bad_xla_flag}."""

    argv: list[str]
    env: dict[str, str | None] = field(default_factory=dict)


@dataclass
class Trial:
    name: str
    why: str  # why the broken run fails
    needs: tuple[str, ...]  # Python modules the programs import
    program: str
    broken: Run
    fixes: list[tuple[str, Run]]  # (variant label, run); the first is fixed.txt
    fix: str  # the fix tried, in words
    expect: str  # regex the broken output must match (the stated failure)
    needles: tuple[str, ...]  # strings in explain's fix steps that mean the tried fix is proposed
    kind: str = "fix"  # or "diagnosis"


PLAIN = ["{py}", "{prog}"]


def _torchrun(n: int) -> list[str]:
    return [
        "{py}",
        "-m",
        "torch.distributed.run",
        "--nnodes=1",
        f"--nproc_per_node={n}",
        "--master_addr=127.0.0.1",
        "--master_port={port}",
        "{prog}",
    ]


TRIALS = [
    Trial(
        "jax-prealloc-starves-torch",
        "JAX preallocates 75% of the GPU when its client starts; torch in the same process then asks for 40%",
        ("jax", "torch"),
        JAX_THEN_TORCH,
        Run(PLAIN),
        [
            ("", Run(PLAIN, {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"})),
            ("mem-fraction", Run(PLAIN, {"{memfrac}": ".3"})),
        ],
        "XLA_PYTHON_CLIENT_PREALLOCATE=false (variant: a memory fraction of .3)",
        r"OutOfMemoryError|out of memory",
        ("XLA_PYTHON_CLIENT_PREALLOCATE=false", "MEM_FRACTION"),
    ),
    Trial(
        "visible-devices-bad-index",
        "CUDA_VISIBLE_DEVICES names a GPU index the machine does not have, so no GPU is visible",
        ("torch",),
        TORCH_VISIBLE,
        Run(PLAIN, {"CUDA_VISIBLE_DEVICES": "{bad_index}"}),
        [
            ("", Run(PLAIN, {"CUDA_VISIBLE_DEVICES": "0"})),
            ("unset", Run(PLAIN, {"CUDA_VISIBLE_DEVICES": None})),
        ],
        "CUDA_VISIBLE_DEVICES=0 (variant: unset)",
        r"No CUDA GPUs are available|invalid device ordinal|no CUDA-capable device",
        ("CUDA_VISIBLE_DEVICES",),
    ),
    Trial(
        "alloc-conf-bad-key",
        "PYTORCH_CUDA_ALLOC_CONF written key=value instead of key:value",
        ("torch",),
        TORCH_ALLOC,
        Run(PLAIN, {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments=True"}),
        [("", Run(PLAIN, {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}))],
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        r"Unrecognized|allocator config|ConfigTokenizer|CachingAllocator",
        ("expandable_segments:True", "key:value"),
    ),
    Trial(
        "alloc-conf-misspelt-key",
        "PYTORCH_CUDA_ALLOC_CONF with a misspelt key (expandible_segments)",
        ("torch",),
        TORCH_ALLOC,
        Run(PLAIN, {"PYTORCH_CUDA_ALLOC_CONF": "expandible_segments:True"}),
        [("", Run(PLAIN, {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}))],
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        r"Unrecognized|allocator config|ConfigTokenizer|CachingAllocator",
        ("expandable_segments:True", "key:value"),
    ),
    Trial(
        "alloc-conf-lowercase-true",
        "PYTORCH_CUDA_ALLOC_CONF with true in lower case (torch wants True)",
        ("torch",),
        TORCH_ALLOC,
        Run(PLAIN, {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:true"}),
        [("", Run(PLAIN, {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}))],
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        r"Expected 'True' or 'False'|ConfigTokenizer|Unrecognized|CachingAllocator",
        ("expandable_segments:True", "capitalised"),
    ),
    Trial(
        "launch-blocking-locates-fault",
        "an out-of-range index fails in a kernel; the error is reported at a later CUDA call",
        ("torch",),
        TORCH_INDEX,
        Run(PLAIN),
        [("", Run(PLAIN, {"CUDA_LAUNCH_BLOCKING": "1"}))],
        "CUDA_LAUNCH_BLOCKING=1 (a diagnosis step: the error should then point at the indexing line)",
        r"device-side assert",
        ("CUDA_LAUNCH_BLOCKING=1",),
        kind="diagnosis",
    ),
    Trial(
        "xla-flags-unknown",
        "XLA_FLAGS holds a flag this jaxlib does not define, and XLA aborts at start",
        ("jax",),
        JAX_MATMUL,
        Run(PLAIN, {"XLA_FLAGS": "{bad_xla_flag}"}),
        [("", Run(PLAIN, {"XLA_FLAGS": None}))],
        "drop the unknown flag (XLA_FLAGS unset)",
        r"Unknown flags? in XLA_FLAGS",
        ("XLA_FLAGS",),
    ),
    Trial(
        "torch-oom-fragmentation",
        "512 MiB free in 64 MiB holes of one segment, a 128 MiB request, and a 1120 MiB per-process limit",
        ("torch",),
        TORCH_FRAGMENT,
        Run([*PLAIN, "--expect-oom"]),
        [("", Run(PLAIN, {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}))],
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        r"OutOfMemoryError|out of memory",
        ("expandable_segments:True",),
    ),
    Trial(
        "jax-no-prealloc-oom",
        "JAX capped at 2% of the GPU (on demand) asked for a 4 GiB array",
        ("jax",),
        JAX_BIG,
        Run(PLAIN, {"XLA_PYTHON_CLIENT_PREALLOCATE": "false", "{memfrac}": ".02"}),
        [("", Run(PLAIN, {"XLA_PYTHON_CLIENT_PREALLOCATE": "false", "{memfrac}": ".5"}))],
        "a larger memory fraction (.5 instead of .02)",
        r"RESOURCE_EXHAUSTED|[Oo]ut of memory",
        ("MEM_FRACTION",),
    ),
    Trial(
        "cupy-bad-device",
        "CuPy asked for a device index the machine does not have",
        ("cupy",),
        CUPY_DEVICE,
        Run([*PLAIN, "{bad_cupy}"]),
        [("", Run([*PLAIN, "0"]))],
        "use device 0 (cupy.cuda.Device(0): a code change, the program's argument)",
        r"invalid device ordinal|cudaErrorInvalidDevice",
        ("Device(0)", "device index", "ordinal", "CUDA_VISIBLE_DEVICES"),
    ),
    Trial(
        "two-ranks-one-gpu",
        "torchrun starts two NCCL ranks that both use cuda:0",
        ("torch",),
        NCCL_RANK,
        Run(_torchrun(2), {"NCCL_DEBUG": "WARN"}),
        [("", Run(_torchrun(1), {"NCCL_DEBUG": "WARN"}))],
        "torchrun --nproc_per_node=1 (one rank per GPU)",
        r"Duplicate GPU|ncclInvalidUsage|invalid usage|NCCL error",
        ("nproc_per_node", "one process per GPU"),
    ),
    Trial(
        "torch-cuda-after-fork",
        "CUDA is initialised in the parent, then used in multiprocessing workers started by fork",
        ("torch",),
        TORCH_FORK,
        Run([*PLAIN, "fork"]),
        [("", Run([*PLAIN, "spawn"]))],
        "the spawn start method (multiprocessing.get_context('spawn'))",
        r"Cannot re-initialize CUDA in forked subprocess",
        ("spawn",),
    ),
    Trial(
        "cupy-cuda-after-fork",
        "CuPy initialises CUDA in the parent, then workers forked from it use CuPy",
        ("cupy",),
        CUPY_FORK,
        Run([*PLAIN, "fork"]),
        [("", Run([*PLAIN, "spawn"]))],
        "the spawn start method (multiprocessing.get_context('spawn'))",
        r"cudaErrorInitializationError|initialization error|CUDA_ERROR_NOT_INITIALIZED",
        ("spawn",),
    ),
    Trial(
        "sdpa-flash-float32",
        "flash attention forced with sdpa_kernel on float32 inputs (flash takes float16 and bfloat16 only)",
        ("torch",),
        TORCH_SDPA,
        Run([*PLAIN, "float32"]),
        [("", Run([*PLAIN, "bfloat16"]))],
        "bfloat16 inputs (a code change: the program's argument)",
        r"No available kernel",
        ("bfloat16", "float16", "half"),
    ),
    Trial(
        "torch-memory-fraction-oom",
        "torch.cuda.set_per_process_memory_fraction(0.01) then an 8 GiB allocation",
        ("torch",),
        TORCH_MEMFRAC,
        Run([*PLAIN, "0.01"]),
        [("", Run([*PLAIN, "0.5"]))],
        "a larger per-process memory fraction (0.5; a code change: the program's argument)",
        r"OutOfMemoryError|out of memory",
        ("set_per_process_memory_fraction", "memory fraction"),
    ),
    Trial(
        "cufft-half-not-power-of-two",
        "a float16 FFT of length 100 (cuFFT takes half precision for power-of-two lengths only)",
        ("torch",),
        TORCH_FFT_HALF,
        Run([*PLAIN, "100"]),
        [("", Run([*PLAIN, "128"]))],
        "a power-of-two length (128: pad the signal; a code change)",
        r"powers? of two",
        ("power of two", "powers of two", "float32"),
    ),
    Trial(
        "triton-block-shared-memory",
        "a triton dot of two 512x512 float16 blocks needs more shared memory than the GPU has",
        ("torch", "triton"),
        TRITON_BLOCK,
        Run([*PLAIN, "512"]),
        [("", Run([*PLAIN, "64"]))],
        "a smaller BLOCK (64; a code change: the program's argument)",
        r"OutOfResources|out of resource",
        ("BLOCK", "block size", "num_stages"),
    ),
    Trial(
        "jax-allocator-unknown",
        "XLA_PYTHON_CLIENT_ALLOCATOR names an allocator JAX does not have",
        ("jax",),
        JAX_MATMUL,
        Run(PLAIN, {"XLA_PYTHON_CLIENT_ALLOCATOR": "bogus"}),
        [("", Run(PLAIN, {"XLA_PYTHON_CLIENT_ALLOCATOR": None}))],
        "XLA_PYTHON_CLIENT_ALLOCATOR unset",
        r"[Aa]llocator|Unknown|[Ii]nvalid",
        ("XLA_PYTHON_CLIENT_ALLOCATOR",),
    ),
    Trial(
        "jax-mem-fraction-over-one",
        "the JAX memory fraction set above 1 (1.5 of the GPU)",
        ("jax",),
        JAX_MATMUL,
        Run(PLAIN, {"{memfrac}": "1.5"}),
        [("", Run(PLAIN, {"{memfrac}": ".5"}))],
        "a fraction below 1 (.5)",
        r"RESOURCE_EXHAUSTED|[Oo]ut of memory|[Ff]raction|[Ii]nvalid",
        ("MEM_FRACTION",),
    ),
]

# ---------------------------------------------------------------------------------------------- machine


def gpus() -> list[str]:
    """GPU lines from nvidia-smi -L, or /dev/nvidiaN device nodes when nvidia-smi is missing."""
    try:
        res = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
        found = [ln.strip() for ln in res.stdout.splitlines() if ln.startswith("GPU ")]
        if found or res.returncode == 0:
            return found
    except (OSError, subprocess.SubprocessError):
        pass
    return sorted(p for p in glob.glob("/dev/nvidia*") if re.fullmatch(r"/dev/nvidia\d+", p))


def gpu_memory() -> str:
    try:
        res = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,memory.used,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=15,
        )
        return res.stdout.strip() or res.stderr.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unknown ({exc})"


def _package_dir(name: str) -> str | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return next(iter(spec.submodule_search_locations))


def mem_fraction_name(notes: list[str]) -> str:
    """XLA_PYTHON_CLIENT_MEM_FRACTION when the installed jaxlib still reads it, else XLA_CLIENT_MEM_FRACTION."""
    d = _package_dir("jaxlib")
    text = ""
    if d:
        try:
            with open(os.path.join(d, "xla_client.py"), encoding="utf-8") as fh:
                text = fh.read()
        except OSError:
            pass
    names = [n for n in ("XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_CLIENT_MEM_FRACTION") if f"'{n}'" in text]
    notes.append(f"jaxlib/xla_client.py reads: {', '.join(names) or 'neither name (file not read)'}")
    return (
        "XLA_PYTHON_CLIENT_MEM_FRACTION"
        if "XLA_PYTHON_CLIENT_MEM_FRACTION" in names or not names
        else names[0]
    )


def bad_xla_flag(notes: list[str]) -> str:
    """--xla_gpu_graph_level=0 when no jaxlib / JAX plugin library defines it, else a made-up flag.

    A defined flag's name sits in the library as a C string of its own (NUL on both sides); the bare
    name may also appear in a proto's list of reserved field names, which does not define a flag."""
    libs = []
    for name in ("jaxlib", "jax_plugins"):
        d = _package_dir(name)
        if d:
            libs += glob.glob(os.path.join(d, "**", "*.so*"), recursive=True)
    defined, mentioned = [], []
    for lib in libs:
        try:
            with open(lib, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
                if m.find(b"\0xla_gpu_graph_level\0") >= 0:
                    defined.append(os.path.basename(lib))
                elif m.find(b"xla_gpu_graph_level") >= 0:
                    mentioned.append(os.path.basename(lib))
        except (OSError, ValueError):
            continue
    notes.append(
        f"xla_gpu_graph_level in {len(libs)} jaxlib/jax_plugins libraries: defined in {defined or 'none'}, "
        f"named otherwise in {mentioned or 'none'}"
    )
    if libs and not defined:
        return "--xla_gpu_graph_level=0"
    return "--xla_gpu_does_not_exist=1"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ---------------------------------------------------------------------------------------------- running


class Ctx:
    """Values filled into the trials' runs, each found once when first needed (notes say how)."""

    def __init__(self, n_gpus: int) -> None:
        self.n_gpus = n_gpus
        self.notes: list[str] = []
        self.found: dict[str, str] = {}

    def _once(self, key: str) -> str:
        if key not in self.found:
            self.found[key] = mem_fraction_name(self.notes) if key == "memfrac" else bad_xla_flag(self.notes)
        return self.found[key]

    def fill(self, text: str, prog: str) -> str:
        for key in ("memfrac", "bad_xla_flag"):
            if "{" + key + "}" in text:
                text = text.replace("{" + key + "}", self._once(key))
        if "{port}" in text:
            text = text.replace("{port}", str(free_port()))
        return (
            text.replace("{py}", PY)
            .replace("{prog}", prog)
            .replace("{bad_index}", str(max(self.n_gpus, 1)))
            .replace("{bad_cupy}", str(max(self.n_gpus, 1) + 2))
        )

    def resolve(self, run: Run, prog: str) -> tuple[list[str], dict[str, str | None]]:
        argv = [self.fill(a, prog) for a in run.argv]
        env = {self.fill(k, prog): (None if v is None else self.fill(v, prog)) for k, v in run.env.items()}
        return argv, env


def base_env() -> dict[str, str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    for k in MANAGED:
        env.pop(k, None)
    return env


def shell_line(argv: list[str], changes: dict[str, str | None]) -> str:
    unset = [f"-u {k}" for k, v in changes.items() if v is None]
    sets = [f"{k}={shlex.quote(v)}" for k, v in changes.items() if v is not None]
    prefix = (["env", *unset] if unset else []) + sets
    return " ".join([*prefix, *map(shlex.quote, argv)])


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _capped(path: str) -> str:
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        if size <= CAP:
            data = fh.read()
            return data.decode("utf-8", "replace")
        head = fh.read(CAP // 2)
        fh.seek(size - CAP // 2)
        tail = fh.read()
    cut = f"\n[... {size - CAP} bytes of output cut here by gpu_fixes.py ...]\n"
    return head.decode("utf-8", "replace") + cut + tail.decode("utf-8", "replace")


RUNNING: list[int] = []  # the process group of the run under way (killed if this script is terminated)


def _on_term(signum: int, frame: object) -> None:
    for pgid in RUNNING:
        _kill_group(pgid)
    sys.exit(128 + signum)


def execute(argv: list[str], env: dict[str, str], timeout: float, work: str) -> tuple[int | str, float, str]:
    """Run argv in its own process group, stdout and stderr merged into a file; the whole group is
    killed on timeout, after the run (torchrun's ranks never outlive it) and when this script is
    terminated."""
    log = os.path.join(work, "run.log")
    start = time.perf_counter()
    with open(log, "wb") as fh:
        try:
            proc = subprocess.Popen(
                argv, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=ROOT, start_new_session=True
            )
        except OSError as exc:
            return "not-run", 0.0, str(exc)
        RUNNING.append(proc.pid)
        rc: int | str
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            proc.wait()
            rc = "timeout"
        finally:
            _kill_group(proc.pid)
            RUNNING.remove(proc.pid)
    wall = round(time.perf_counter() - start, 3)
    return rc, wall, _capped(log)


def write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def last_frame_line(output: str, prog: str) -> int | None:
    lines = re.findall(rf'File "{re.escape(prog)}", line (\d+)', output)
    return int(lines[-1]) if lines else None


def explain_digest(text: str, needles: tuple[str, ...]) -> dict:
    """Root, causes and where (if anywhere) explain's fix steps name the fix tried."""
    try:
        doc = json.loads(text)
    except ValueError:
        return {"parsed": False}
    causes = doc.get("causes") or []
    found = []
    for rank, cause in enumerate(causes, 1):
        for step in cause.get("fix") or []:
            hit = [n for n in needles if n.lower() in step.lower()]
            if hit:
                found.append({"rank": rank, "cause": cause.get("id"), "needle": hit[0], "step": step})
    root = doc.get("root") or {}
    return {
        "parsed": True,
        "root": {"signature": root.get("signature"), "text": root.get("text")},
        "causes": [{"id": c.get("id"), "confidence": c.get("confidence")} for c in causes],
        "fix_proposed": bool(found),
        "fix_steps_naming_it": found,
    }


class Recorder:
    def __init__(self, dest: str, args: argparse.Namespace, machine: dict) -> None:
        self.dest = dest
        self.args = args
        self.start = time.perf_counter()
        self.deadline = self.start + args.budget
        self.summary: dict = {"meta": machine, "trials": {}}

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def say(self, name: str, what: str) -> None:
        print(f"[{self.elapsed():6.1f}s] {name:32s} {what}", flush=True)

    def save(self) -> None:
        self.summary["meta"]["elapsed_s"] = round(self.elapsed(), 1)
        tmp = os.path.join(self.dest, "summary.json.tmp")
        write(tmp, json.dumps(self.summary, indent=1) + "\n")
        os.replace(tmp, os.path.join(self.dest, "summary.json"))

    def explain(self, log: str, out_json: str, changes: dict[str, str | None], timeout: float) -> dict:
        env = dict(base_env(), PYTHONPATH=os.path.join(ROOT, "src"))
        if not self.args.explain_clean_env:
            for k, v in changes.items():
                if v is None:
                    env.pop(k, None)
                else:
                    env[k] = v
        argv = [PY, "-m", "cudoctor", "explain", log, "--format", "json"]
        start = time.perf_counter()
        try:
            res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
            rc: int | str = res.returncode
            stdout, stderr = res.stdout, res.stderr
        except subprocess.TimeoutExpired as exc:
            rc, stdout, stderr = "timeout", _text(exc.stdout), _text(exc.stderr)
        except OSError as exc:
            rc, stdout, stderr = "not-run", "", str(exc)
        write(out_json, stdout)
        if stderr.strip():
            write(out_json.replace(".json", ".stderr.txt"), stderr)
        return {
            "rc": rc,
            "wall_s": round(time.perf_counter() - start, 3),
            "command": shell_line(argv, {"PYTHONPATH": env["PYTHONPATH"]}),
            "env": "the broken run's changes" if not self.args.explain_clean_env else "clean",
            "stdout": stdout,
        }

    def run_trial(self, t: Trial, ctx: Ctx, tmp: str) -> None:
        entry: dict = {"kind": t.kind, "why_broken": t.why, "fix_tried": t.fix, "notes": []}
        self.summary["trials"][t.name] = entry
        missing = [m for m in t.needs if importlib.util.find_spec(m) is None]
        if not ctx.n_gpus and not self.args.force:
            entry["status"] = "skipped: no GPU"
        elif missing:
            entry["status"] = f"skipped: {', '.join(missing)} not installed"
        elif self.deadline - time.perf_counter() < self.args.min_left:
            entry["status"] = "skipped: budget spent"
        if "status" in entry:
            self.say(t.name, entry["status"])
            self.save()
            return
        entry["status"] = "running"
        folder = os.path.join(self.dest, t.name)
        os.makedirs(folder, exist_ok=True)
        work = os.path.join(tmp, t.name)
        os.makedirs(work, exist_ok=True)
        prog = os.path.join(work, "program.py")
        write(prog, t.program)
        write(os.path.join(folder, "program.py"), t.program)
        self.save()
        if ctx.n_gpus:
            entry["gpu_memory_before"] = gpu_memory()
        trial_deadline = min(self.deadline, time.perf_counter() + self.args.trial_timeout)
        outputs: dict[str, str] = {}
        runs = [("broken", t.broken), *((f"fixed_{label}" if label else "fixed", r) for label, r in t.fixes)]
        for label, spec in runs:
            left = trial_deadline - time.perf_counter()
            if left < 2:
                entry[label] = {"rc": "skipped (deadline)", "wall_s": 0.0}
                self.say(t.name, f"{label:18s} skipped (deadline)")
                continue
            argv, changes = ctx.resolve(spec, prog)
            env = base_env()
            for k, v in changes.items():
                if v is None:
                    env.pop(k, None)
                else:
                    env[k] = v
            rc, wall, output = execute(argv, env, min(self.args.run_timeout, left), work)
            outputs[label] = output
            line = shell_line(argv, changes)
            write(
                os.path.join(folder, f"{label}.txt"),
                f"# {line}\n# env changes: {json.dumps(changes)}\n# exit: {rc}  wall_s: {wall}\n"
                f"# ---- stdout and stderr merged\n{output}",
            )
            entry[label] = {"rc": rc, "wall_s": wall, "command": line, "env_changes": changes}
            self.say(t.name, f"{label:18s} rc={rc!s:8s} {wall:7.2f} s")
            self.summary["meta"]["resolved"] = {**ctx.found, "notes": ctx.notes}
            if label == "broken":
                entry["broken_as_expected"] = rc != 0 and bool(re.search(t.expect, output))
                left = self.deadline - time.perf_counter()
                if left > 3:
                    ex = self.explain(
                        os.path.join(folder, "broken.txt"),
                        os.path.join(folder, "explain.json"),
                        changes,
                        min(60.0, left),
                    )
                    entry["explain"] = {k: v for k, v in ex.items() if k != "stdout"}
                    entry["explain"].update(explain_digest(ex["stdout"], t.needles))
                    self.say(
                        t.name,
                        f"{'explain':18s} rc={ex['rc']!s:8s} {ex['wall_s']:7.2f} s  "
                        f"fix proposed: {entry['explain'].get('fix_proposed')}",
                    )
            self.save()
        self._judge(t, entry, outputs, prog)
        entry["status"] = "done"
        self.say(t.name, f"worked: {entry.get('worked')}")
        self.save()

    def _judge(self, t: Trial, entry: dict, outputs: dict[str, str], prog: str) -> None:
        broken_rc = entry.get("broken", {}).get("rc")
        if t.kind == "diagnosis":
            fault = next(i for i, ln in enumerate(t.program.splitlines(), 1) if "# FAULT" in ln)
            at = {label: last_frame_line(out, prog) for label, out in outputs.items()}
            entry["fault_line"] = fault
            entry["reported_at_line"] = at
            entry["worked"] = at.get("fixed") == fault  # the run with the diagnosis setting names the real op
            entry["plain_run_misleading"] = at.get("broken") != fault
            if at.get("broken") == fault:
                entry["notes"].append("the plain run already reported the error at the indexing line")
            return
        expected = bool(entry.get("broken_as_expected"))
        for label in outputs:
            if label.startswith("fixed"):
                fixed_rc = entry[label]["rc"]
                entry[label]["worked"] = fixed_rc == 0 and broken_rc not in (0, None) and expected
        entry["worked"] = bool(entry.get("fixed", {}).get("worked"))
        if broken_rc == 0:
            entry["notes"].append("the broken run did not fail: the failure was not reproduced")
        elif not expected and "broken" in outputs:
            entry["notes"].append(f"the broken run failed, but not with the expected text ({t.expect})")


def _text(b: bytes | str | None) -> str:
    return b.decode("utf-8", "replace") if isinstance(b, bytes) else (b or "")


# ---------------------------------------------------------------------------------------------- main


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("outdir", nargs="?", help="results go to OUTDIR/fixes/")
    p.add_argument("--budget", type=float, default=240.0, help="seconds for the whole script (default 240)")
    p.add_argument("--run-timeout", type=float, default=40.0, help="seconds one run may take (default 40)")
    p.add_argument(
        "--trial-timeout", type=float, default=90.0, help="seconds one trial's runs may take (default 90)"
    )
    p.add_argument(
        "--min-left", type=float, default=10.0, help="start no trial with less budget left (default 10)"
    )
    p.add_argument("--only", default="", help="comma-separated trial names")
    p.add_argument("--list", action="store_true", help="list the trials and exit")
    p.add_argument("--dry-run", action="store_true", help="print each run's command line and exit")
    p.add_argument("--force", action="store_true", help="run the trials even where no GPU is found")
    p.add_argument(
        "--explain-clean-env",
        action="store_true",
        help="run explain without the broken run's environment changes",
    )
    args = p.parse_args(argv)
    names = [n for n in args.only.split(",") if n]
    unknown = [n for n in names if n not in {t.name for t in TRIALS}]
    if unknown:
        p.error(f"unknown trial(s): {', '.join(unknown)} (see --list)")
    trials = [t for t in TRIALS if not names or t.name in names]
    if args.list:
        for t in TRIALS:
            print(f"{t.name:32s} [{t.kind}] {t.why}\n{'':32s} fix: {t.fix}")
        return 0
    if args.dry_run:
        ctx = Ctx(len(gpus()))
        for t in trials:
            prog = f"<{t.name}/program.py>"
            print(f"== {t.name} [{t.kind}]: {t.why}")
            for label, spec in [
                ("broken", t.broken),
                *((f"fixed_{lb}" if lb else "fixed", r) for lb, r in t.fixes),
            ]:
                print(f"  {label:18s} {shell_line(*ctx.resolve(spec, prog))}")
        for n in ctx.notes:
            print(f"note: {n}")
        return 0
    if not args.outdir:
        p.error("OUTDIR is needed (or --list / --dry-run)")
    dest = os.path.join(os.path.abspath(args.outdir), "fixes")
    os.makedirs(dest, exist_ok=True)
    found = gpus()
    machine = {
        "python": PY,
        "python_version": sys.version.split()[0],
        "gpus": found,
        "gpu_memory": gpu_memory() if found else "",
        "base_env_removed": {k: os.environ[k] for k in MANAGED if k in os.environ},
        "budget_s": args.budget,
        "run_timeout_s": args.run_timeout,
        "trial_timeout_s": args.trial_timeout,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    signal.signal(signal.SIGTERM, _on_term)
    rec = Recorder(dest, args, machine)
    rec.say("machine", f"{len(found)} GPU(s): {'; '.join(found) or 'none'}")
    rec.save()
    ctx = Ctx(len(found))
    with tempfile.TemporaryDirectory(prefix="gpu_fixes_") as tmp:
        if (not found or args.force) and os.path.exists(CANNED):
            folder = os.path.join(dest, "_explain_selftest")
            os.makedirs(folder, exist_ok=True)
            ex = rec.explain(CANNED, os.path.join(folder, "explain.json"), {}, 60.0)
            digest = explain_digest(ex["stdout"], ("CUDA_VISIBLE_DEVICES",))
            machine["explain_selftest"] = {"file": os.path.relpath(CANNED, ROOT), "rc": ex["rc"], **digest}
            rec.say("explain self-test", f"rc={ex['rc']} root={digest.get('root')}")
            rec.save()
        for t in trials:
            try:
                rec.run_trial(t, ctx, tmp)
            except Exception as exc:  # one trial's defect never stops the others
                rec.summary["trials"].setdefault(t.name, {})["status"] = f"error in gpu_fixes.py: {exc!r}"
                rec.say(t.name, f"error in gpu_fixes.py: {exc!r}")
                rec.save()
    worked = [n for n, e in rec.summary["trials"].items() if e.get("worked")]
    rec.say("done", f"{len(worked)} of {len(trials)} worked: {', '.join(worked) or 'none'}")
    rec.save()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
