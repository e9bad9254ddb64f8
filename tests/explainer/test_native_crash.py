"""Native crashes: a framework's own library taken from LD_LIBRARY_PATH (a libtorch for C++
work), and explain on segmentation faults and SIGFPE (round 17 of the blind corpus).

The broken layout is real: torch from this venv, and stand-in libtorch_cpu.so / libc10.so built
by gcc in a temporary directory put first on LD_LIBRARY_PATH, which makes `import torch` fail.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cudoctor.explainer import rank
from cudoctor.facts import packages
from cudoctor.model import Severity
from cudoctor.paths import is_under
from tests.checks.helpers import SHM_64_MIB, torch_cuda
from tests.conftest import build_shared_lib, cudoctor, finding_ids, needs_gcc, run_check, stated
from tests.explainer.helpers import explain_text, top

TORCH_DIR = packages.find_package_dir(sys.path, "torch")
needs_torch = pytest.mark.skipif(TORCH_DIR is None, reason="needs torch installed")


def _env(ld_library_path: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    if ld_library_path is not None:
        env["LD_LIBRARY_PATH"] = ld_library_path
    return env


def _json(args: list[str], env: dict[str, str], stdin: bytes | None = None) -> dict[str, Any]:
    out = cudoctor([*args, "--format", "json"], env=env, stdin=stdin)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def _import_torch(env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    """`import torch` in a child with this environment: does the layout really break it?"""
    return subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True, timeout=120)


def _own_lib_findings(env: dict[str, str]) -> list[dict[str, Any]]:
    doc = _json(["check"], env)
    return [f for f in doc["findings"] if f["id"] == "own-library-shadowed"]


@pytest.fixture(scope="module")
def foreign_libtorch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory like an unpacked libtorch/lib: libtorch_cpu.so and libc10.so of another build."""
    lib = tmp_path_factory.mktemp("libtorch") / "lib"
    lib.mkdir()
    for soname in ("libtorch_cpu.so", "libc10.so"):
        build_shared_lib(lib / soname, "int other_build = 1;\n", f"-Wl,-soname,{soname}")
    return lib


@needs_torch
@needs_gcc
def test_libtorch_on_ld_library_path_breaks_import_and_check_names_it(foreign_libtorch: Path) -> None:
    env = _env(str(foreign_libtorch))
    imported = _import_torch(env)
    assert imported.returncode != 0  # the layout is really broken: undefined symbol or a crash
    hits = _own_lib_findings(env)
    assert len(hits) == 1 and hits[0]["severity"] == "error" and hits[0]["cause"] == "multiple-toolkits"
    assert str(foreign_libtorch) in hits[0]["title"] and "1 more of its own libraries" in hits[0]["title"]
    assert hits[0]["fix"][0].startswith(f"Remove {foreign_libtorch} from LD_LIBRARY_PATH")
    assert any("libtorch_cpu.so" in e and "via LD_LIBRARY_PATH" in e for e in hits[0]["evidence"])
    assert _own_lib_findings(_env(None)) == []


@needs_torch
@needs_gcc
def test_a_segfault_log_on_that_machine_is_explained_by_the_shadowing_copy(foreign_libtorch: Path) -> None:
    doc = _json(
        ["explain", "-"],
        _env(str(foreign_libtorch)),
        stdin=b">>> import torch\nSegmentation fault (core dumped)\n",
    )
    first = doc["causes"][0]
    assert doc["root"]["line"] == 2 and first["id"] == "multiple-toolkits"
    assert first["fix"][0].startswith(f"Remove {foreign_libtorch}")  # the machine's fact before generic steps


@needs_torch
@needs_gcc
def test_the_real_import_error_of_that_layout_is_explained_by_it(foreign_libtorch: Path) -> None:
    env = _env(str(foreign_libtorch))
    imported = _import_torch(env)
    assert imported.returncode != 0
    doc = _json(["explain", "-"], env, stdin=imported.stderr)
    assert doc["causes"][0]["id"] == "multiple-toolkits", imported.stderr[-500:]
    assert doc["causes"][0]["fix"][0].startswith(f"Remove {foreign_libtorch}")


@needs_torch
@needs_gcc
def test_a_foreign_libc10_in_ld_preload_breaks_import_and_check_names_the_preload(
    foreign_libtorch: Path,
) -> None:
    preloaded = foreign_libtorch / "libc10.so"
    env = {**_env(None), "LD_PRELOAD": str(preloaded)}
    imported = _import_torch(env)
    assert imported.returncode != 0 and b"undefined symbol" in imported.stderr
    hits = _own_lib_findings(env)
    assert len(hits) == 1 and hits[0]["severity"] == "error"
    assert f"libc10.so from {preloaded} (LD_PRELOAD)" in hits[0]["title"]
    assert hits[0]["fix"][0].startswith(f"Remove {preloaded} from LD_PRELOAD")
    assert not any(
        "LD_LIBRARY_PATH" in step for step in hits[0]["fix"]
    )  # nothing about a path it does not use
    doc = _json(["explain", "-"], env, stdin=imported.stderr)
    assert doc["causes"][0]["id"] == "multiple-toolkits", imported.stderr[-500:]
    assert doc["causes"][0]["fix"][0].startswith(f"Remove {preloaded} from LD_PRELOAD")


@pytest.mark.parametrize(
    ("path", "directory", "inside"),
    [
        ("/venv/lib/site-packages/torch/lib/libc10.so", "/venv/lib/site-packages", True),
        ("/venv/lib/site-packages", "/venv/lib/site-packages/", True),
        ("/venv/lib/site-packages2/libc10.so", "/venv/lib/site-packages", False),
        ("/venv/lib/site-packages/../../opt/libc10.so", "/venv/lib/site-packages", False),
        ("/opt/libc10.so", "", False),
    ],
)
def test_is_under_compares_whole_path_components(path: str, directory: str, inside: bool) -> None:
    assert is_under(path, directory) is inside


@needs_torch
def test_the_same_build_elsewhere_on_the_path_is_only_a_warning(tmp_path: Path) -> None:
    assert TORCH_DIR is not None
    shutil.copy(os.path.join(TORCH_DIR, "lib", "libc10.so"), tmp_path / "libc10.so")
    env = _env(str(tmp_path))
    imported = _import_torch(env)
    assert imported.returncode == 0, imported.stderr  # an identical copy does no harm today
    hits = _own_lib_findings(env)
    assert [h["severity"] for h in hits] == ["warning"] and "same size" in hits[0]["title"]


def _torch(own_elsewhere: dict[str, Any] | None) -> dict[str, Any]:
    info: dict[str, Any] = {"version": "2.5.1", "build": "cpu", "location": "/site/torch", "libs": {}}
    if own_elsewhere is not None:
        info["own_libs_elsewhere"] = own_elsewhere
    return info


def test_own_library_check_from_stated_facts() -> None:
    copy = {
        "path": "/opt/libtorch/lib/libc10.so",
        "via": "LD_LIBRARY_PATH",
        "candidates": [],
        "own": "/site/torch/lib/libc10.so",
        "sizes": [900, 1525128],
    }
    hit = run_check("own-library-shadowed", stated({}, framework__torch=_torch({"libc10.so": copy})))
    assert finding_ids(hit) == ["own-library-shadowed"] and hit.findings[0].severity is Severity.ERROR
    assert hit.findings[0].fix[0].startswith("Remove /opt/libtorch/lib from LD_LIBRARY_PATH")
    assert run_check("own-library-shadowed", stated({}, framework__torch=_torch({}))).findings == ()
    older_snapshot = run_check("own-library-shadowed", stated({}, framework__torch=_torch(None)))
    assert older_snapshot.outcome == "ok" and older_snapshot.findings == ()
    assert run_check("own-library-shadowed", stated({})).outcome == "unknown"


# ---------------------------------------------------------------- explain: crash lines
def test_a_real_error_before_the_segfault_stays_the_root() -> None:
    log = (
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "terminate called after throwing an instance of 'c10::Error'\n"
        "Segmentation fault (core dumped)\n"
    )
    exp = explain_text(log, {})
    assert exp.root is not None and exp.root.line == 1 and top(exp)[0] == "illegal-memory-access"


def test_a_bare_segfault_points_at_two_copies_first_and_says_how_to_find_the_frame() -> None:
    exp = explain_text(">>> import torch\nSegmentation fault (core dumped)\n", {})
    assert [c.id for c in exp.causes[:3]] == ["multiple-toolkits", "library-bug", "env-path-misconfig"]
    fixes = rank.cause_json(exp.causes, 0)["fix"]
    assert fixes[0].startswith("If it works with LD_LIBRARY_PATH unset")
    assert any("python -X faulthandler" in f for f in fixes)


def test_sigfpe_is_a_library_defect_with_the_h20_cublas_fix() -> None:
    exp = explain_text("Floating point exception (core dumped)\n", {"gpu": "NVIDIA H20"})
    assert top(exp)[0] == "library-bug"
    assert any("nvidia-cublas-cu12" in f for f in rank.cause_json(exp.causes, 0)["fix"])


def test_a_crash_in_numpys_c_api_refines_the_segfault() -> None:
    log = (
        "Program received signal SIGSEGV, Segmentation fault.\n"
        "0x00007fffdfeb7fc0 in PyArray_API () from /home/u/.local/lib/python2.7/site-packages/numpy/core/multiarray.so\n"
    )
    exp = explain_text(log, {})
    assert exp.root is not None and exp.root.line == 2
    assert [c.id for c in exp.causes[:2]] == ["library-bug", "binary-incompatible"]


@pytest.mark.parametrize(
    ("line", "signature"),
    [
        ("Aborted (core dumped)", "library-bug/aborted"),
        ("Aborted", "library-bug/aborted"),
        ("run.sh: line 3: 48211 Aborted                 python train.py", "library-bug/aborted"),
        ("Fatal Python error: Aborted", "library-bug/aborted"),
        ("Bus error (core dumped)", "shm-exhausted/bus-error"),
    ],
)
def test_a_process_killed_by_a_signal_is_a_root_error(line: str, signature: str) -> None:
    assert rank.looks_like_error(line)
    out = cudoctor(
        ["explain", "-", "--no-live", "--format", "json"], stdin=f"epoch 1 done\n{line}\n".encode()
    )
    assert out.returncode == 1, out.stderr
    root = json.loads(out.stdout)["root"]
    assert (root["line"], root["signature"]) == (2, signature)


def test_an_error_looking_line_without_a_signature_is_named_and_exits_1() -> None:
    line = "Trace/breakpoint trap (core dumped)"
    assert rank.looks_like_error(line)
    out = cudoctor(["explain", "-", "--no-live"], stdin=f"epoch 1 done\n{line}\n".encode())
    assert out.returncode == 1  # an error no signature knows is still an error (0 means none found)
    assert out.stdout.decode().startswith(
        f"No known GPU/BLAS error signature matched; last error-looking line (2): {line}"
    )


def test_a_bare_abort_says_the_reason_is_printed_before_it() -> None:
    exp = explain_text("epoch 3\nAborted (core dumped)\n", {})
    assert top(exp)[:2] == ["library-bug", "multiple-toolkits"]
    assert "terminate called after throwing" in rank.cause_json(exp.causes, 0)["fix"][0]
    # the message before the abort names the cause: it is the root, not the abort
    bad_alloc = "terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc\nAborted (core dumped)\n"
    assert explain_text(bad_alloc, {}).root.sig.id == "host-oom/std-bad-alloc"


def test_a_bus_error_in_a_container_with_small_shm_gets_this_machines_fact_first() -> None:
    from cudoctor.explainer import scan

    snap = stated({}, framework__torch=torch_cuda(), host__shm=SHM_64_MIB, host__container="docker")
    exp = rank.explain(scan.scan(io.BytesIO(b"Epoch 1\nBus error (core dumped)\n")), snap)
    assert top(exp)[0] == "shm-exhausted"
    assert exp.causes[0].findings and exp.causes[0].findings[0].id == "shared-memory-small"
    without = explain_text("Epoch 1\nBus error (core dumped)\n", {})
    assert (
        top(without)[0] == "shm-exhausted"
        and "df -h /dev/shm" in rank.cause_json(without.causes, 0)["fix"][0]
    )


@pytest.mark.parametrize(
    "line",
    [
        "Epoch 2/2 - loss: 0.12",
        "saved checkpoint to ./aborted_runs/ckpt.pt",
        "Aborted training at epoch 3: loss is NaN, restoring the last checkpoint",
    ],
)
def test_ordinary_lines_are_not_taken_for_crashes(line: str) -> None:
    assert not rank.looks_like_error(line)


# ---------------------------------------------------------------- explain: C++ aborts (round 18)
BAD_ALLOC = "[i] Creating the model...\nterminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc\nAborted\n"
LOCALE_CLASH = (
    "*** Error in `python3': free(): invalid pointer: 0x00007f98524c1b80 ***\n"
    "======= Backtrace: =========\n"
    "/lib/x86_64-linux-gnu/libc.so.6(cfree+0x4c)[0x7f98642a953c]\n"
    "/usr/local/lib/python3.6/site-packages/torch/lib/libshm.so(_ZNSt6locale5_Impl16_M_install_facetEPKNS_2idEPKNS_5facetE+0x142)[0x7f985225b802]\n"
)


def test_std_bad_alloc_is_host_memory_first() -> None:
    exp = explain_text(BAD_ALLOC, {})
    assert exp.root is not None and exp.root.line == 2 and top(exp)[0] == "host-oom"
    assert "binary-incompatible" in top(exp)


def test_a_cuda_error_in_what_stays_a_cuda_error() -> None:
    log = "terminate called after throwing an instance of 'c10::Error'\n  what():  CUDA error: initialization error\n"
    assert top(explain_text(log, {}))[0] == "cuda-after-fork"


def test_a_bad_free_with_a_locale_frame_names_the_library_that_carries_libstdcxx() -> None:
    exp = explain_text(LOCALE_CLASH, {})
    assert (
        exp.root is not None and exp.root.line == 4
    )  # the frame names the culprit; the free() line does not
    assert top(exp)[:2] == ["library-bug", "multiple-toolkits"]
    fixes = rank.cause_json(exp.causes, 0)["fix"]
    assert fixes[0].startswith(
        "/usr/local/lib/python3.6/site-packages/torch/lib/libshm.so carries its own copy of libstdc++"
    )
    bare = explain_text(LOCALE_CLASH.splitlines()[0] + "\n", {})
    assert top(bare)[:2] == ["library-bug", "multiple-toolkits"]
    assert rank.cause_json(bare.causes, 0)["fix"][0].startswith("glibc's allocator stopped the process")


def test_a_real_error_before_a_bad_free_at_exit_stays_the_root() -> None:
    log = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\nfree(): invalid pointer\nAborted (core dumped)\n"
    exp = explain_text(log, {})
    assert exp.root is not None and exp.root.line == 1 and top(exp)[0] == "gpu-oom"
