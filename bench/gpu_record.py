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
  larger than the card, dtype and device mismatches, an out-of-range index (device-side
  assert), cuDNN / cuBLAS hidden from the loader, then `cudoctor explain` on each of those.
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
}
HIDE_LIBS = ("libcudnn.so.9", "libcublasLt.so.13", "libcublasLt.so.12")
HIDDEN_RUNS = {
    "torch_lib_hidden": "import torch; print(torch.ones(64, 64, device='cuda') @ torch.ones(64, 64, device='cuda'))",
    "torch_conv_cudnn_hidden": "import torch; c = torch.nn.Conv2d(3, 8, 3).cuda(); print(c(torch.ones(1, 3, 32, 32, device='cuda')).sum())",
    "jax_lib_hidden": "import jax, jax.numpy as jnp; print(jax.devices()); print(jnp.ones((64, 64)) @ jnp.ones((64, 64)))",
}


def step(out: str, name: str, argv: list[str], timeout: float, env: dict[str, str] | None = None) -> dict:
    start = time.perf_counter()
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
    probe = step(out, "probe_json.step.txt", [*CUDOCTOR, "probe", "--format", "json", "--stress", "3"], 420)
    raw(out, "probe.json", probe["stdout"])
    done += [xml, check, probe]
    for i in range(3):
        done.append(step(out, f"time_check_{i}.txt", [*CUDOCTOR, "check", "--format", "json"], 120))
        done.append(step(out, f"time_collect_env_{i}.txt", [PY, "-m", "torch.utils.collect_env"], 120))
    return done


def record_broken(out: str) -> list[dict]:
    done = []
    for name, (env_line, code) in BROKEN.items():
        env = dict(ENV)
        if env_line:
            key, _, value = env_line.partition("=")
            env[key] = value
        done.append(step(out, f"broken_{name}.txt", [PY, "-c", code], 120, env))
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
    """Move the cuDNN / cuBLASLt files the frameworks load out of every site-packages (restored after)."""
    import site

    moved = []
    for base in {*site.getsitepackages(), site.getusersitepackages()}:
        for dirpath, _, files in os.walk(os.path.join(base, "nvidia")):
            for f in files:
                if f in HIDE_LIBS:
                    src = os.path.join(dirpath, f)
                    dst = os.path.join(tmp, f"{len(moved)}_{f}")
                    shutil.move(src, dst)
                    moved.append((src, dst))
    return moved


def explain_each(out: str, broken: list[dict]) -> list[dict]:
    done = []
    for b in broken:
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
    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "gpu_record")
        os.makedirs(out)
        steps = record_machine(out)
        broken = record_broken(out)
        steps += broken + explain_each(out, broken)
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
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
