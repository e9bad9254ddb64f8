"""cudoctor beside the peer doctors on seven real layouts (issue 45): which tool finds what, and how fast.

    python bench/side_by_side.py                  # build every layout, run every tool, print the table
    python bench/side_by_side.py --only ptxas-not-bin,healthy --no-peers
    python bench/side_by_side.py --keep           # keep the layouts (their directory is printed)

Each layout is built in a temporary directory from real parts: venvs made with `python3 -m venv`,
packages from PyPI with pip (jax and jaxlib, JAX's CUDA 12 plugin and PJRT wheels, torch 2.13.0 CPU,
triton, NVIDIA's CUDA 11.8 compiler wheel for a real ptxas 11.8). Wheels are cached under
~/.cache/cudoctor-bench/wheels, so a rerun installs offline. There is no GPU here: a layout that needs
one (CUDA_VISIBLE_DEVICES naming a GPU that is not there) states it with `--facts`, which only
cudoctor reads.

cudoctor runs as `cudoctor check --python <the layout's python> --format json` with the layout's
environment; a cell shows the finding ids it expected (or, for the healthy layout, every error and
warning: there should be none). Each peer is installed into a venv of its own and run by the layout's
Python with its own site-packages last on sys.path, so it looks at the layout, not at itself. A peer
cell shows the first line of its output that is not in its output for the healthy layout and that
names what is broken (the layout's keywords), or "nothing"; log lines a framework prints when a peer
imports it (glog's "I0000 00:00:..." lines) are not the peer's and are left out. Seconds are each
command's wall time.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "cudoctor-bench", "wheels")
JAX = ["jax==0.10.2", "jaxlib==0.10.2"]
PLUGIN = "jax-cuda12-plugin==0.10.2"
TORCH = "torch==2.13.0"
TRITON = "triton==3.9.0"
NVCC11 = "nvidia-cuda-nvcc-cu11==11.8.89"
PEERS = {  # name: (requirement, its console script's entry point, arguments)
    "env-doctor": ("env-doctor==0.3.5", "env_doctor.cli:main", ["check"]),
    "cuda-doctor": ("cuda-doctor==0.2.0", "cuda_doctor.cli:main", ["diagnose"]),
    "gpu-doctor": ("gpu-doctor==1.0.0", "gpu_doctor.__main__:main", ["--check"]),
    "mlenvdoctor": ("mlenvdoctor==0.1.6", "mlenvdoctor.cli:app", ["diagnose"]),
}
TIMEOUT = 180


@dataclasses.dataclass
class Layout:
    name: str
    what: str
    venv: str  # key of the venv it runs in
    env: dict[str, str]  # added to the base environment (PATH is prepended)
    expect: tuple[str, ...]  # cudoctor finding ids, any of which finds it; () for the healthy layout
    keywords: str  # what a peer's line must name to count as finding it
    facts: dict[str, str] | None = None


def sh(cmd: Sequence[str], env: dict[str, str] | None = None, timeout: float = 1800) -> None:
    done = subprocess.run(list(cmd), capture_output=True, text=True, env=env, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")


def pip_install(python: str, reqs: Sequence[str], *extra: str) -> None:
    """Install from the wheel cache; download into it first what it lacks."""
    os.makedirs(CACHE, exist_ok=True)
    offline = [python, "-m", "pip", "install", "-q", "--no-index", "--find-links", CACHE, *extra, *reqs]
    try:
        sh(offline)
    except RuntimeError:
        deps = ["--no-deps"] if "--no-deps" in extra else []
        sh([python, "-m", "pip", "download", "-q", "-d", CACHE, *deps, *reqs])
        sh(offline)


def make_venv(where: str, reqs: Sequence[str], no_deps: Sequence[str] = ()) -> str:
    sh(["python3", "-m", "venv", where])
    python = os.path.join(where, "bin", "python")
    if reqs:
        pip_install(python, reqs)
    if no_deps:
        pip_install(python, no_deps, "--no-deps")
    return python


def site_packages(python: str) -> str:
    out = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def build(base: str, names: set[str]) -> tuple[list[Layout], dict[str, str]]:
    """The layouts and the venvs they run in (venv key -> its python)."""
    tools, target = os.path.join(base, "my-tools"), os.path.join(base, "pythonpath")
    nvcc11 = os.path.join(base, "nvcc-cu11")
    layouts = [
        Layout(
            "ptxas-not-bin",
            "a CUDA 11.8 ptxas in a dir not named bin, first on PATH, JAX CUDA 12 plugin",
            "jax",
            {"PATH": tools},
            ("ptxas-too-old",),
            r"ptxas",
        ),
        Layout(
            "plugin-no-pjrt",
            "jax-cuda12-plugin without the jax-cuda12-pjrt it requires",
            "nopjrt",
            {},
            ("requirements-unmet",),
            r"pjrt",
        ),
        Layout(
            "jax-cuda-libs-missing",
            "JAX's CUDA 12 plugin without NVIDIA's CUDA library wheels",
            "jax",
            {},
            ("lib-missing-cudart", "lib-missing-cublas", "lib-missing-cudnn"),
            r"cudart|cublas|cudnn|cuda.{0,20}librar",
        ),
        Layout(
            "torch-broken-pythonpath",
            "a torch without libtorch_cpu.so first on PYTHONPATH",
            "torch",
            {"PYTHONPATH": target},
            ("broken-torch",),
            r"libtorch|torch.{0,40}(broken|missing|fail|error)",
        ),
        Layout(
            "cvd-no-such-gpu",
            "CUDA_VISIBLE_DEVICES=3 on a machine with one A100 (stated)",
            "jax",
            {"CUDA_VISIBLE_DEVICES": "3"},
            ("cuda-visible-devices-bad-index",),
            r"CUDA_VISIBLE_DEVICES|visible",
            {"gpu": "A100", "driver": "550.54.15"},
        ),
        Layout(
            "triton-ptxas-old",
            "TRITON_PTXAS_PATH naming a CUDA 11.8 ptxas beside triton 3.9.0 (ptxas 12.9)",
            "torch",
            {"TRITON_PTXAS_PATH": os.path.join(tools, "ptxas")},
            ("triton-ptxas-too-old",),
            r"ptxas|triton",
        ),
        Layout("healthy", "torch 2.13.0 CPU and triton 3.9.0, nothing broken", "torch", {}, (), r"$^"),
    ]
    layouts = [lay for lay in layouts if not names or lay.name in names]
    wanted = {lay.venv for lay in layouts} | {"torch"}  # torch: every peer's healthy baseline
    pythons: dict[str, str] = {}
    if "jax" in wanted:
        pythons["jax"] = make_venv(os.path.join(base, "venv-jax"), [*JAX, PLUGIN])
    if "nopjrt" in wanted:
        pythons["nopjrt"] = make_venv(os.path.join(base, "venv-nopjrt"), JAX, [PLUGIN])
    pythons["torch"] = make_venv(os.path.join(base, "venv-torch"), [TORCH, TRITON])
    if any(lay.name in ("ptxas-not-bin", "triton-ptxas-old") for lay in layouts):
        pip_install(sys.executable, [NVCC11], "--no-deps", "--target", nvcc11)
        os.makedirs(tools, exist_ok=True)
        shutil.copy(os.path.join(nvcc11, "nvidia", "cuda_nvcc", "bin", "ptxas"), os.path.join(tools, "ptxas"))
    if any(lay.name == "torch-broken-pythonpath" for lay in layouts):
        pip_install(sys.executable, [TORCH], "--no-deps", "--target", target)
        os.remove(os.path.join(target, "torch", "lib", "libtorch_cpu.so"))
    return layouts, pythons


def base_env(home: str) -> dict[str, str]:
    """This environment less cudoctor's own venv and any active environment or Python setting."""
    drop = (
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "PYTHONPATH",
        "PYTHONHOME",
        "CUDA_VISIBLE_DEVICES",
        "CUDOCTOR_PYTHON",
    )
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith(("TRITON_", "XLA_"))}
    own = os.path.dirname(sys.executable)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and p != own)
    env["CUDOCTOR_DB"] = os.path.join(home, "cudoctor.db")
    return env


def layout_env(lay: Layout, python: str, base: dict[str, str]) -> dict[str, str]:
    env = {**base, **{k: v for k, v in lay.env.items() if k != "PATH"}}
    first = [lay.env["PATH"]] if "PATH" in lay.env else []
    env["PATH"] = os.pathsep.join([*first, os.path.dirname(python), base["PATH"]])  # the venv activated
    env["VIRTUAL_ENV"] = os.path.dirname(os.path.dirname(python))
    return env


def timed(cmd: Sequence[str], env: dict[str, str]) -> tuple[str, float, int]:
    t0 = time.perf_counter()
    try:
        done = subprocess.run(list(cmd), capture_output=True, text=True, env=env, timeout=TIMEOUT)
        out, rc = done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired:
        out, rc = f"timed out after {TIMEOUT} s", -1
    return out, time.perf_counter() - t0, rc


def run_cudoctor(lay: Layout, python: str, env: dict[str, str], home: str) -> tuple[str, float, bool]:
    cmd = [sys.executable, "-m", "cudoctor", "check", "--python", python, "--format", "json"]
    if lay.facts:
        facts = os.path.join(home, f"{lay.name}.facts.json")
        with open(facts, "w", encoding="utf-8") as fh:
            json.dump(lay.facts, fh)
        cmd += ["--facts", facts]
    out, secs, _ = timed(cmd, env)
    try:
        doc = json.loads(out[out.index("{") :])
    except ValueError:
        return "cudoctor failed: " + out.strip()[-80:], secs, False
    loud = [f["id"] for f in doc["findings"] if f["severity"] in ("error", "warning")]
    if not lay.expect:
        return ("nothing" if not loud else ", ".join(sorted(set(loud)))), secs, not loud
    hit = [i for i in lay.expect if i in loud]
    return (", ".join(hit) if hit else "nothing"), secs, bool(hit)


def run_peer(name: str, peer_site: str, python: str, env: dict[str, str]) -> tuple[list[str], float]:
    _, entry, args = PEERS[name]
    module, func = entry.split(":")
    code = (
        f"import sys; sys.path.append({peer_site!r}); sys.argv = [{name!r}, *{args!r}]; "
        f"from {module} import {func}; sys.exit({func}())"
    )
    out, secs, _ = timed([python, "-c", code], {**env, "COLUMNS": "200", "NO_COLOR": "1"})
    return [_normal(line) for line in out.splitlines() if line.strip() and not GLOG.match(line)], secs


# a framework's own log line (JAX / XLA / TensorFlow print "I0000 00:00:... cudart_stub.cc:31] Could not find
# cuda drivers" when a peer imports them): the framework's words, not the peer's diagnosis
GLOG = re.compile(r"^\s*[IWEF]\d{4} \d\d:\d\d:\d\d")


def _normal(line: str) -> str:
    """A line with paths, numbers of seconds and box drawing taken out, to compare across layouts."""
    line = re.sub(r"/tmp/[^\s'\"]*", "<tmp>", line)
    line = re.sub(r"\d+(\.\d+)?\s*(s|ms|sec)\b", "<t>", line)
    return re.sub(r"[│╭╮╰╯─━┃┏┓┗┛|]+", " ", line).strip()


def install_peers(base: str) -> dict[str, str]:
    """peer name -> its site-packages, or a reason it is not there."""
    sites = {}
    for name, (req, _, _) in PEERS.items():
        where = os.path.join(base, f"peer-{name}")
        try:
            sites[name] = site_packages(make_venv(where, [req]))
        except (RuntimeError, subprocess.SubprocessError) as e:
            sites[name] = "does not install: " + str(e).strip().splitlines()[-1][:60]
    return sites


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", default="", help="comma-separated layout names (default: all seven)")
    p.add_argument("--no-peers", action="store_true", help="run cudoctor alone")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = p.parse_args(argv)
    home = tempfile.mkdtemp(prefix="cudoctor-side-by-side-")
    try:
        t0 = time.perf_counter()
        layouts, pythons = build(home, {n for n in args.only.split(",") if n})
        peers = {} if args.no_peers else install_peers(home)
        print(f"built in {time.perf_counter() - t0:.0f} s under {home}", file=sys.stderr)
        return report(layouts, pythons, peers, home)
    finally:
        if args.keep:
            print(f"kept {home}", file=sys.stderr)
        else:
            shutil.rmtree(home, ignore_errors=True)


def report(layouts: list[Layout], pythons: dict[str, str], peers: dict[str, str], home: str) -> int:
    base = base_env(home)
    healthy_env = layout_env(Layout("", "", "torch", {}, (), ""), pythons["torch"], base)
    baseline = {
        n: set(run_peer(n, s, pythons["torch"], healthy_env)[0])
        for n, s in peers.items()
        if s.startswith("/")
    }
    rows, found, broken, silent = [], 0, 0, True
    for lay in layouts:
        env = layout_env(lay, pythons[lay.venv], base)
        cell, secs, ok = run_cudoctor(lay, pythons[lay.venv], env, home)
        row = [lay.name, f"{cell} ({secs:.1f} s)"]
        if lay.expect:
            broken, found = broken + 1, found + ok
        else:
            silent = ok
        for name, site in peers.items():
            if not site.startswith("/"):
                row.append(site)
                continue
            lines, psecs = run_peer(name, site, pythons[lay.venv], env)
            new = [ln for ln in lines if ln not in baseline[name] and re.search(lay.keywords, ln, re.I)]
            row.append(f"{new[0][:70] if new else 'nothing'} ({psecs:.1f} s)")
        rows.append(row)
    head = ["layout", "cudoctor", *peers]
    print("| " + " | ".join(head) + " |\n|" + " --- |" * len(head))
    for row in rows:
        print("| " + " | ".join(c.replace("|", "/") for c in row) + " |")
    print()
    for lay in layouts:
        print(f"- {lay.name}: {lay.what}")
    print(
        f"\ncudoctor found {found} of {broken} broken layouts; healthy layout silent: {'yes' if silent else 'no'}"
    )
    return 0 if found == broken and silent else 1


if __name__ == "__main__":
    sys.exit(main())
