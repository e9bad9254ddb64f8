#!/usr/bin/env python3
"""Record `cudoctor run -- CMD` and `pytest --cudoctor` on a real GPU machine, for tests to replay.

    PYTHONPATH=src python bench/gpu_run_record.py OUT_DIR

Each case is a small real program (a training step that runs out of memory, a loss fed a label past
the number of classes, mixed dtypes in a GEMM, no visible GPU, a JAX allocation too large, a CuPy device
past the ones there, and one that succeeds) run under `python -m cudoctor run --json-out`. For each the
command, its stdout and stderr as `cudoctor run` passed them on, the status and the JSON explanation are
written to OUT_DIR/<case>/. A pytest file with a passing GPU test and a failing one runs under
`pytest --cudoctor` (the plugin loaded with -p, since the package is not installed there). Used once on
an H100 (tests/fixtures/gpu/h100/run/README.md); tests/gpu/test_run_recordings.py replays the outputs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

CASES = {
    "torch-oom": (
        "import torch\n"
        "print('step 1: allocating activations', flush=True)\n"
        "x = torch.empty(400 * 2**30, dtype=torch.uint8, device='cuda')\n",
        {},
    ),
    "torch-label-past-classes": (
        "import torch, torch.nn.functional as F\n"
        "logits = torch.randn(4, 10, device='cuda')\n"
        "target = torch.tensor([0, 3, 12, 1], device='cuda')\n"
        "loss = F.cross_entropy(logits, target)\n"
        "print(loss.item())\n",
        {},
    ),
    "torch-mixed-dtype-gemm": (
        "import torch\n"
        "a = torch.randn(64, 64, device='cuda', dtype=torch.float16)\n"
        "b = torch.randn(64, 64, device='cuda', dtype=torch.float32)\n"
        "print(torch.mm(a, b).sum().item())\n",
        {},
    ),
    "torch-no-visible-gpu": (
        "import torch\nprint('cuda available:', torch.cuda.is_available(), flush=True)\n"
        "x = torch.zeros(8, device='cuda')\n",
        {"CUDA_VISIBLE_DEVICES": ""},
    ),
    "jax-oom": (
        "import jax, jax.numpy as jnp\nprint(jax.devices(), flush=True)\nx = jnp.ones((120 * 2**30,), dtype=jnp.float32)\nprint(x.sum())\n",
        {},
    ),
    "cupy-device-past-the-ones-there": (
        "import cupy\nprint('devices:', cupy.cuda.runtime.getDeviceCount(), flush=True)\ncupy.cuda.Device(7).use()\nx = cupy.zeros(8)\n",
        {},
    ),
    "torch-training-succeeds": (
        "import torch\n"
        "model = torch.nn.Linear(256, 10).cuda()\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for step in range(5):\n"
        "    x = torch.randn(64, 256, device='cuda'); y = torch.randint(0, 10, (64,), device='cuda')\n"
        "    loss = torch.nn.functional.cross_entropy(model(x), y)\n"
        "    opt.zero_grad(); loss.backward(); opt.step()\n"
        "    print(f'step {step} loss {loss.item():.4f}', flush=True)\n",
        {},
    ),
}

PYTEST_FILE = """
import torch

def test_gemm_on_the_gpu():
    a = torch.randn(32, 32, device="cuda")
    assert torch.allclose(a @ torch.eye(32, device="cuda"), a)

def test_label_past_the_classes():
    logits = torch.randn(4, 10, device="cuda")
    target = torch.tensor([0, 3, 12, 1], device="cuda")
    torch.nn.functional.cross_entropy(logits, target).item()
"""


def main() -> int:
    out = sys.argv[1] if len(sys.argv) > 1 else "gpu-run"
    os.makedirs(out, exist_ok=True)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env0 = {
        **os.environ,
        "PYTHONPATH": os.path.join(root, "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, (code, extra) in CASES.items():
            script = os.path.join(tmp, f"{name}.py")
            with open(script, "w") as fh:
                fh.write(code)
            case = os.path.join(out, name)
            os.makedirs(case, exist_ok=True)
            why = os.path.join(case, "why.json")
            argv = [sys.executable, "-m", "cudoctor", "run", "--json-out", why, "--", sys.executable, script]
            t0 = time.time()
            p = subprocess.run(argv, capture_output=True, env={**env0, **extra}, timeout=300)
            for fname, data in (
                ("stdout.txt", p.stdout),
                ("stderr.txt", p.stderr),
                ("program.py", code.encode()),
            ):
                with open(os.path.join(case, fname), "wb") as fh:
                    fh.write(data)
            with open(os.path.join(case, "run.json"), "w") as fh:
                json.dump({"env": extra, "status": p.returncode, "wall_s": round(time.time() - t0, 1)}, fh)
            print(f"{name}: status {p.returncode} in {time.time() - t0:.1f} s", flush=True)
        test_file = os.path.join(tmp, "test_gpu_cudoctor.py")
        with open(test_file, "w") as fh:
            fh.write(PYTEST_FILE)
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "cudoctor.pytest_plugin",
                "--cudoctor",
                "-q",
                "-p",
                "no:cacheprovider",
                test_file,
            ],
            capture_output=True,
            env=env0,
            cwd=tmp,
            timeout=300,
        )
        case = os.path.join(out, "pytest-cudoctor")
        os.makedirs(case, exist_ok=True)
        with open(os.path.join(case, "stdout.txt"), "wb") as fh:
            fh.write(p.stdout)
        with open(os.path.join(case, "stderr.txt"), "wb") as fh:
            fh.write(p.stderr)
        with open(
            os.path.join(case, "test_gpu_cudoctor.py.txt"), "w"
        ) as fh:  # not collected where it is kept
            fh.write(PYTEST_FILE)
        with open(os.path.join(case, "run.json"), "w") as fh:
            json.dump({"status": p.returncode}, fh)
        print(f"pytest --cudoctor: status {p.returncode}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
