"""Record, on a real GPU machine, everything cudoctor's tests replay. One command, one tarball.

    python3 bench/gpu_record.py OUTDIR        # e.g. on the lent device: python3 bench/gpu_record.py $OUT

Runs from the repository root with the machine's own python3 (the one holding torch / jax /
cupy); cudoctor itself is taken from src/ (no install needed). Writes OUTDIR/gpu_record.tar.gz
holding one file per recording, and OUTDIR/summary.txt. Nothing here invents output: every
file is what a command printed, with its command line, exit status and wall time on top.

What it records (each step has its own timeout; one failing step never stops the others):
  nvidia-smi (table, -q, -q -x), the NVML probe cudoctor runs, `cudoctor check` (text -v and
  JSON), `cudoctor probe --format json` (torch bf16 8192^3 throughput with CUDA events),
  `python -m torch.utils.collect_env` and its time next to `cudoctor check`'s, and the real
  error text of deliberately broken runs: GPU hidden with CUDA_VISIBLE_DEVICES=, an allocation
  larger than the card (at once and block by block), dtype, shape and device mismatches, a bad
  device ordinal, an out-of-range index (device-side assert), a kernel writing out of bounds
  before a cuBLAS call, a kernel built only for sm_80, JAX without ptxas on PATH, CuPy's
  out-of-memory and hidden GPU, cuDNN / cuBLAS hidden from the loader, `cudoctor check` with
  the GPU hidden, then `cudoctor explain` on each broken run. triton's do_bench gives a second
  bf16 8192^3 figure beside the probe's.

Phases run most precious first under one budget (GPU_RECORD_BUDGET_S, default 540 s); the
tarball is rewritten after each phase, so a command killed at its limit still returns them.
GPU_RECORD_PHASES=probe,extras runs only those phases (machine, probe, broken, extras);
GPU_RECORD_BROKEN=name,name only those broken runs (a HIDDEN_RUNS name brings the hidden-library runs).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable
ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"), PYTHONUNBUFFERED="1")
CUDOCTOR = [PY, "-m", "cudoctor"]

FIND_LIBS = (
    "ldconfig -p | grep -E 'libcublasLt|libcudnn.so'; echo LD_LIBRARY_PATH=$LD_LIBRARY_PATH; "
    "find / -xdev \\( -name 'libcublasLt.so*' -o -name 'libcudnn.so*' \\) 2>/dev/null"
)
# Which GEMM paths torch's deterministic mode refuses without CUBLAS_WORKSPACE_CONFIG (torch 2.11
# ran torch.mm with it empty): each op in turn, the error kept, cuBLAS forced last.
DETERMINISTIC_PATHS = """
import torch
torch.use_deterministic_algorithms(True)
print('preferred_blas_library', torch.backends.cuda.preferred_blas_library())
a = torch.randn(64, 64, device='cuda'); h = torch.randn(1024, 1024, device='cuda', dtype=torch.bfloat16)
ops = [('mm float32 64', lambda: torch.mm(a, a)), ('mm bfloat16 1024', lambda: h @ h),
       ('linear with bias', lambda: torch.nn.functional.linear(a, a, a[0])),
       ('bmm', lambda: torch.bmm(a[None], a[None])), ('matmul float64', lambda: a.double() @ a.double())]
for blas in ('default', 'cublas'):
    if blas == 'cublas':
        torch.backends.cuda.preferred_blas_library('cublas')
    for name, op in ops:
        try:
            op(); torch.cuda.synchronize(); print(blas, name, 'ok')
        except RuntimeError as exc:
            print(blas, name, 'raised:', str(exc).splitlines()[0][:300])
"""
BROKEN = {
    "hidden_gpu": ("CUDA_VISIBLE_DEVICES=", "import torch; torch.zeros(1).cuda()"),
    "alloc_too_large": ("", "import torch; torch.empty(1 << 40, dtype=torch.uint8, device='cuda')"),
    "dtype_mismatch": (
        "",
        "import torch; a = torch.ones(64, 64, device='cuda'); "
        "b = torch.ones(64, 64, device='cuda', dtype=torch.float16); torch.mm(a, b)",
    ),
    "device_mismatch": ("", "import torch; torch.mm(torch.ones(8, 8, device='cuda'), torch.ones(8, 8))"),
    "index_out_of_range": (
        "",
        "import torch; x = torch.arange(10, device='cuda'); "
        "i = torch.tensor([20], device='cuda'); y = x[i]; torch.cuda.synchronize(); print(y)",
    ),
    "index_out_of_range_then_gemm": (
        "",
        "import torch; e = torch.nn.Embedding(10, 64).cuda(); "
        "h = e(torch.tensor([20], device='cuda')); w = torch.ones(64, 64, device='cuda'); "
        "print((h @ w).sum().item())",
    ),
    "jax_alloc_too_large": (
        "",
        "import jax.numpy as jnp; x = jnp.ones((1 << 38,), jnp.float32); x.block_until_ready()",
    ),
    "jax_hidden_gpu": ("CUDA_VISIBLE_DEVICES=", "import jax; print(jax.devices('gpu'))"),
    # deterministic mode: CUBLAS_WORKSPACE_CONFIG empty, then written with a leading space
    # (torch compares the exact text ':4096:8' / ':16:8')
    "deterministic_cublas_unset": (
        "CUBLAS_WORKSPACE_CONFIG=",
        "import torch; torch.use_deterministic_algorithms(True); "
        "a = torch.ones(64, 64, device='cuda'); print(torch.mm(a, a).sum().item())",
    ),
    "deterministic_cublas_loose": (
        "CUBLAS_WORKSPACE_CONFIG= :4096:8",
        "import torch; torch.use_deterministic_algorithms(True); "
        "a = torch.ones(64, 64, device='cuda'); print(torch.mm(a, a).sum().item())",
    ),
    "deterministic_cublas_really_unset": ("-CUBLAS_WORKSPACE_CONFIG", DETERMINISTIC_PATHS),
    "deterministic_cublas_empty_paths": ("CUBLAS_WORKSPACE_CONFIG=", DETERMINISTIC_PATHS),
    "shape_mismatch": (
        "",
        "import torch; torch.mm(torch.ones(2, 3, device='cuda'), torch.ones(4, 5, device='cuda'))",
    ),
    "bad_ordinal": ("", "import torch; torch.zeros(1, device='cuda:7')"),
    # memory filled block by block, as a training run does: the message then names what PyTorch holds
    "oom_accumulate": (
        "",
        "import torch\nkeep = []\nwhile True: keep.append(torch.empty(1 << 30, dtype=torch.uint8, device='cuda'))",
    ),
    "cupy_alloc_too_large": ("", "import cupy; cupy.empty(1 << 40, dtype=cupy.uint8)"),
    "cupy_hidden_gpu": ("CUDA_VISIBLE_DEVICES=", "import cupy; print(cupy.zeros(4) + 1)"),
    # a kernel writing far out of bounds: the sticky error then surfaces in the next cuBLAS call
    "illegal_address_then_gemm": (
        "",
        "import cupy, torch\n"
        "k = cupy.RawKernel(r'extern \"C\" __global__ void k(float* p) { p[1ull << 40] = 1.0f; }', 'k')\n"
        "a = torch.ones(256, 256, device='cuda'); p = cupy.from_dlpack(a)\n"
        "k((1,), (1,), (p,))\n"
        "print((a @ a).sum().item())",
    ),
    "jax_no_ptxas_on_path": (
        "PATH=/usr/bin:/bin",
        "import jax.numpy as jnp; print((jnp.ones((64, 64)) @ jnp.ones((64, 64))).sum())",
    ),
    # cuSOLVER's own refusals as torch words them: a matrix that is not positive-definite, and NaN input
    "cholesky_not_positive_definite": (
        "",
        "import torch; print(torch.linalg.cholesky(-torch.eye(4, device='cuda')))",
    ),
    "eigh_nan": (
        "",
        "import torch; print(torch.linalg.eigh(torch.full((64, 64), float('nan'), device='cuda')))",
    ),
    "svd_nan": (
        "",
        "import torch; print(torch.linalg.svd(torch.full((64, 64), float('nan'), device='cuda')))",
    ),
    # a device-side assert raised on purpose (torch._assert_async), then the next CUDA call
    "assert_async": (
        "",
        "import torch; torch._assert_async(torch.tensor(0, device='cuda')); torch.cuda.synchronize()",
    ),
    # a kernel storing a float at an odd address, and a launch of 4096 threads in one block (limit 1024)
    "cupy_misaligned_address": (
        "",
        "import cupy\n"
        "k = cupy.RawKernel(r'extern \"C\" __global__ void k(char* p) { *(float*)(p + 1) = 1.0f; }', 'k')\n"
        "p = cupy.zeros(16, dtype=cupy.uint8); k((1,), (1,), (p,)); cupy.cuda.runtime.deviceSynchronize()",
    ),
    "cupy_block_too_large": (
        "",
        "import cupy\n"
        "k = cupy.RawKernel(r'extern \"C\" __global__ void k(float* p) { p[threadIdx.x] = 1.0f; }', 'k')\n"
        "p = cupy.zeros(4096, dtype=cupy.float32); k((1,), (4096,), (p,)); cupy.cuda.runtime.deviceSynchronize()",
    ),
    # a convolution over more than 2^31 elements (8 GiB of float16 in, as much out)
    "conv_over_int32_elements": (
        "",
        "import torch; x = torch.ones(1, 4, 32768, 32768, device='cuda', dtype=torch.half); "
        "c = torch.nn.Conv2d(4, 4, 3, padding=1).cuda().half(); y = c(x); torch.cuda.synchronize(); print(y.shape)",
    ),
    # a host sync (.item()) inside CUDA graph capture, as torch.compile's reduce-overhead mode meets it
    "graph_capture_sync": (
        "",
        "import torch; g = torch.cuda.CUDAGraph(); x = torch.ones(4, device='cuda'); s = torch.cuda.Stream()\n"
        "with torch.cuda.stream(s):\n    with torch.cuda.graph(g):\n        y = x * 2; print(y.sum().item())",
    ),
}
# A kernel built only for sm_80 machine code (no PTX), launched on a Hopper GPU.
NO_KERNEL_IMAGE = r"""
#include <cstdio>
__global__ void k(float* p) { p[0] = 1.0f; }
int main() {
  float* p; cudaMalloc(&p, 4); k<<<1, 1>>>(p);
  cudaError_t e = cudaGetLastError();
  printf("launch: %s: %s\n", cudaGetErrorName(e), cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
"""
HIDE_LIBS = ("libcudnn.so.9", "libcublasLt.so.13", "libcublasLt.so.12")
HIDDEN_RUNS = {
    "torch_lib_hidden": "import torch; print(torch.ones(64, 64, device='cuda') @ torch.ones(64, 64, device='cuda'))",
    "torch_conv_cudnn_hidden": "import torch; c = torch.nn.Conv2d(3, 8, 3).cuda(); print(c(torch.ones(1, 3, 32, 32, device='cuda')).sum())",
    "jax_lib_hidden": "import jax, jax.numpy as jnp; print(jax.devices()); print(jnp.ones((64, 64)) @ jnp.ones((64, 64)))",
}


# An independent figure for the probe's bf16 number: triton's do_bench (CUDA events, median), random data.
DO_BENCH = (
    "import torch, triton; n = 8192; a = torch.randn(n, n, device='cuda', dtype=torch.bfloat16); "
    "b = torch.randn(n, n, device='cuda', dtype=torch.bfloat16); "
    "ms = triton.testing.do_bench(lambda: a @ b, warmup=200, rep=2000, return_mode='median'); "
    "print(f'bf16 {n}^3 median {ms:.4f} ms = {2 * n**3 / ms / 1e9:.1f} TFLOP/s on', torch.cuda.get_device_name())"
)

DEADLINE = [float("inf")]  # perf_counter() after which steps are skipped (set by main)


def step(out: str, name: str, argv: list[str], timeout: float, env: dict[str, str] | None = None) -> dict:
    start = time.perf_counter()
    if start >= DEADLINE[0]:
        print(f"{name:40s} skipped (deadline)", flush=True)
        return {"name": name, "exit": "skipped", "wall_s": 0.0, "stdout": ""}
    timeout = min(timeout, max(DEADLINE[0] - start, 1.0))
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env or ENV, cwd=ROOT)
        rc, stdout, stderr = res.returncode, res.stdout, res.stderr
    except subprocess.TimeoutExpired as exc:
        rc, stdout, stderr = "timeout", _text(exc.stdout), _text(exc.stderr)
    except OSError as exc:
        rc, stdout, stderr = "not-run", "", str(exc)
    wall = round(time.perf_counter() - start, 3)
    with open(os.path.join(out, name), "w", encoding="utf-8") as fh:
        fh.write(
            f"# {' '.join(argv)}\n# exit: {rc}  wall_s: {wall}\n# ---- stdout\n{stdout}\n# ---- stderr\n{stderr}"
        )
    print(f"{name:40s} exit={rc!s:8s} {wall:8.2f} s", flush=True)
    return {"name": name, "exit": rc, "wall_s": wall, "stdout": stdout}


def _text(b: bytes | str | None) -> str:
    return b.decode("utf-8", "replace") if isinstance(b, bytes) else (b or "")


def raw(out: str, name: str, text: str) -> None:
    with open(os.path.join(out, name), "w", encoding="utf-8") as fh:
        fh.write(text)


def record_machine(out: str) -> list[dict]:
    sys.path.insert(0, os.path.join(ROOT, "src"))
    from cudoctor.facts.driver import NVML_PROBE

    done = [
        step(out, "uname.txt", ["uname", "-a"], 10),
        step(out, "nvidia_smi.txt", ["nvidia-smi"], 30),
        step(out, "nvidia_smi_q.txt", ["nvidia-smi", "-q"], 30),
        step(out, "pip_list.txt", [PY, "-m", "pip", "list"], 60),
        step(out, "nvml_probe.txt", [PY, "-I", "-c", NVML_PROBE], 30),
    ]
    xml = step(out, "nvidia_smi_q_x.step.txt", ["nvidia-smi", "-q", "-x"], 30)
    raw(out, "nvidia_smi_q_x.xml", xml["stdout"])
    done.append(step(out, "check_v.txt", [*CUDOCTOR, "check", "-v"], 120))
    check = step(out, "check_json.step.txt", [*CUDOCTOR, "check", "--format", "json"], 120)
    raw(out, "check.json", check["stdout"])
    done += [xml, check]
    return done


def record_probe(out: str) -> list[dict]:
    probe = step(out, "probe_json.step.txt", [*CUDOCTOR, "probe", "--format", "json", "--stress", "3"], 300)
    raw(out, "probe.json", probe["stdout"])
    return [probe, step(out, "bf16_do_bench.txt", [PY, "-c", DO_BENCH], 60)]


def record_extras(out: str) -> list[dict]:
    hidden = dict(ENV, CUDA_VISIBLE_DEVICES="")
    done = [step(out, "check_hidden_gpu_json.txt", [*CUDOCTOR, "check", "--format", "json"], 120, hidden)]
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "k.cu")
        raw(tmp, "k.cu", NO_KERNEL_IMAGE)
        exe = os.path.join(tmp, "k")
        nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
        gencode = "-gencode=arch=compute_80,code=sm_80"
        done.append(step(out, "nvcc_sm80_build.txt", [nvcc, gencode, src, "-o", exe], 120))
        done.append(step(out, "broken_no_kernel_image.txt", [exe], 30))
    for i in range(3):
        done.append(step(out, f"time_check_{i}.txt", [*CUDOCTOR, "check", "--format", "json"], 120))
        done.append(step(out, f"time_collect_env_{i}.txt", [PY, "-m", "torch.utils.collect_env"], 120))
    return done


def record_broken(out: str) -> list[dict]:
    done = []
    only = {n for n in os.environ.get("GPU_RECORD_BROKEN", "").split(",") if n}
    for name, (env_line, code) in BROKEN.items():
        if only and name not in only:
            continue
        env = dict(ENV)
        if env_line.startswith("-"):  # "-NAME": the variable unset
            env.pop(env_line[1:], None)
        elif env_line:
            key, _, value = env_line.partition("=")
            env[key] = value
        done.append(step(out, f"broken_{name}.txt", [PY, "-c", code], 120, env))
    if only and not only & set(HIDDEN_RUNS):
        return done
    done.append(step(out, "libraries_found.txt", ["sh", "-c", FIND_LIBS], 60))
    with tempfile.TemporaryDirectory() as tmp:
        moved = _hide_libraries(tmp)
        raw(out, "hidden_libraries.txt", "\n".join(f"{a} -> {b}" for a, b in moved) + "\n")
        try:
            for name, code in HIDDEN_RUNS.items():
                done.append(step(out, f"broken_{name}.txt", [PY, "-c", code], 120))
        finally:
            for original, parked in moved:
                shutil.move(parked, original)
    return done


def _hide_libraries(tmp: str) -> list[tuple[str, str]]:
    """Move the cuDNN / cuBLASLt files the frameworks load out of every site-packages and every folder
    the loader's cache or the CUDA toolkit names (restored after)."""
    import glob
    import site

    roots = [os.path.join(b, "nvidia") for b in {*site.getsitepackages(), site.getusersitepackages()}]
    roots += [*glob.glob("/usr/local/cuda*/"), "/usr/lib/x86_64-linux-gnu"]
    roots += [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    moved: list[tuple[str, str]] = []
    for root in roots:
        for dirpath, _, files in os.walk(root):
            for f in files:
                src = os.path.join(dirpath, f)
                if f in HIDE_LIBS and os.path.lexists(src):
                    dst = os.path.join(tmp, f"{len(moved)}_{f}")
                    shutil.move(src, dst)
                    moved.append((src, dst))
    return moved


def explain_each(out: str, steps: list[dict]) -> list[dict]:
    done = []
    for b in steps:
        if not b["name"].startswith("broken_") or b["exit"] == "skipped":
            continue
        log = os.path.join(out, b["name"])
        done.append(
            step(
                out,
                "explain_" + b["name"].replace(".txt", ".json"),
                [*CUDOCTOR, "explain", log, "--format", "json"],
                60,
            )
        )
    return done


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    dest = os.path.abspath(argv[0])
    os.makedirs(dest, exist_ok=True)
    DEADLINE[0] = time.perf_counter() + float(os.environ.get("GPU_RECORD_BUDGET_S", "540"))
    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "gpu_record")
        os.makedirs(out)
        steps: list[dict] = []
        # Most precious first; the tarball is rewritten after each phase, so a kill keeps what was done.
        phases = os.environ.get("GPU_RECORD_PHASES", "machine,probe,broken,extras").split(",")
        for phase in (record_machine, record_probe, record_broken, record_extras):
            if phase.__name__.removeprefix("record_") not in phases:
                continue
            steps += phase(out)
            _pack(out, dest, steps)
        steps += explain_each(out, steps)
        _pack(out, dest, steps)
    return 0


def _pack(out: str, dest: str, steps: list[dict]) -> None:
    summary = [f"{s['name']:44s} exit={s['exit']!s:8s} {s['wall_s']:8.2f} s" for s in steps]
    raw(out, "summary.txt", "\n".join(summary) + "\n")
    raw(
        out,
        "steps.json",
        json.dumps([{k: v for k, v in s.items() if k != "stdout"} for s in steps], indent=1),
    )
    with tarfile.open(os.path.join(dest, "gpu_record.tar.gz"), "w:gz") as tar:
        tar.add(out, arcname="gpu_record")
    shutil.copy(os.path.join(out, "summary.txt"), os.path.join(dest, "summary.txt"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
